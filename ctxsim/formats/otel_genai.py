"""`otel-genai`: spans that follow the OpenTelemetry GenAI semantic conventions.

Two containers of the same spans:

- an OTLP JSON export (`{resourceSpans: [{resource, scopeSpans: [{scope, spans: [...]}]}]}`, as
  one document or one export request a line, as the collector's file exporter writes it):
  hex `traceId` / `spanId` / `parentSpanId`, `startTimeUnixNano` strings, attributes as
  `[{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue}}]`;
- any-agent's `AgentTrace` JSON (`{spans: [...], final_output}`): `context` / `parent` with
  integer ids, nanosecond `start_time` / `end_time`, attributes as a plain object.

What the reader maps: the spans of one trace id are one session; an `invoke_agent` span inside
another agent's span is a subagent (its own session, linked by `parent_session`). Model calls
are spans whose `gen_ai.operation.name` is chat, call_llm, text_completion or generate_content:
each one request, at its end time, with `gen_ai.usage.input_tokens` / `output_tokens` (or the
older `prompt_tokens` / `completion_tokens`), the cache read (`gen_ai.usage.cache_read.input_tokens`,
`..._cache_read_input_tokens`) and write (`gen_ai.usage.cache_creation.input_tokens`,
`..._cache_write_input_tokens`), which the conventions put inside the input (a log whose cache
counts exceed its input kept them apart: they are added, and the notes say so). The model is
`gen_ai.response.model`, else `gen_ai.request.model`. any-agent's `gen_ai.usage.input_cost` +
`output_cost` are the request's recorded cost.

The conversation: `gen_ai.input.messages` / `gen_ai.output.messages` (the parts schema:
text, tool_call, tool_call_response, reasoning), OpenAI-style message lists, the older
`gen_ai.prompt` / `gen_ai.completion` (JSON or indexed `gen_ai.prompt.0.role` ...), and
any-agent's `gen_ai.output` (text, or `[{tool.name, tool.args}]` calls). A model call that does
not log its input continues the conversation so far, with the results of the `execute_tool`
spans that ran since (`gen_ai.tool.call.result`, or any-agent's `gen_ai.output`), matched to
their call by `gen_ai.tool.call.id`, else by tool name.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import Conversation, arguments_of, frozen, message_key
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import MAX_TS_S, MIN_TS_S, Message, Session, ToolCall, Usage, format_ts

NAME = "otel-genai"
CHAT_OPERATIONS = {"chat", "call_llm", "text_completion", "generate_content", "completion"}
AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
PROVIDERS = {"gcp.gemini": "google", "gcp.vertex_ai": "google", "gcp.gen_ai": "google", "aws.bedrock": "anthropic",
             "az.ai.openai": "openai", "azure.ai.openai": "openai", "anthropic": "anthropic", "openai": "openai",
             "deepseek": "deepseek", "mistral_ai": "mistral", "groq": "groq"}

ABOUT = {
    "reads": "OpenTelemetry GenAI spans: an OTLP JSON export (one document, or one export request a line) "
             "or any-agent's AgentTrace JSON; many agent frameworks export these (OpenAI Agents SDK, "
             "LangChain / LangGraph, LlamaIndex, smolagents, Strands, any-agent)",
    "location": "wherever the exporter writes: an OTLP file exporter's .json / .jsonl, a collector's file "
                "output, any-agent's AgentTrace.model_dump_json()",
    "records": "one span per model call with its time, model and usage (input including the cache, output, "
               "cache read and write where the instrumentation sets them), tool spans with their results, "
               "agent spans (subagents); message content only when the instrumentation records it (opt-in); "
               "any-agent: each call's cost",
    "cannot_know": "message content the instrumentation did not capture (content capture is opt-in; then only "
                   "sizes in usage are known); the system prompt and tool definitions unless recorded; cache "
                   "counts from instrumentations that do not set them; calls made outside instrumented spans",
    "checked": "any-agent's AgentTrace (a public trace) and OTLP JSON exports of the OpenTelemetry GenAI conventions",
}


@dataclass
class _Span:
    trace: str
    span: str
    parent: str | None
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    line: int | None = None

    @property
    def operation(self) -> str:
        op = self.attrs.get("gen_ai.operation.name")
        if isinstance(op, str):
            return op
        return self.name.split(" ", 1)[0] if self.name else ""


def _ns(span: Node, key: str) -> int:
    """A span time in nanoseconds since the epoch (0: absent), range-checked where it is read: a time
    outside the years a timestamp can hold is refused naming the span's field, not met later."""
    value = span.value.get(key)
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, str):
        if not value.strip().isdigit():
            return 0
        value = int(value)
    if not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or not MIN_TS_S <= value / 1e9 < MAX_TS_S + 1:
        raise span.fail(f"is {_shown(value)} ns, outside the years 1-9999 a span time can hold", key)
    return int(value)


def _shown(value: int | float) -> str:
    """A number as an error line quotes it: short, whatever its size."""
    return f"{value:.4g}" if isinstance(value, float) or abs(value) >= 10**12 else str(value)


def _otlp_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in value:
        values = value["arrayValue"].get("values") if isinstance(value["arrayValue"], dict) else None
        return [_otlp_value(v) for v in values or []]
    if "kvlistValue" in value:
        values = value["kvlistValue"].get("values") if isinstance(value["kvlistValue"], dict) else None
        return _otlp_attrs(values)
    return None


def _otlp_attrs(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = _otlp_value(item.get("value"))
    return out


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _id(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return format(value, "x")
    return str(value)


def _spans_otlp(doc: Node, line: int | None) -> list[_Span]:
    out: list[_Span] = []
    for resource in doc.array("resourceSpans"):
        for scope in resource.array("scopeSpans") or resource.array("instrumentationLibrarySpans"):
            for span in scope.array("spans"):
                if not span.is_obj():
                    raise span.fail("must be a span (an object)")
                v = span.value
                events = [(str(e.get("name") or ""), _otlp_attrs(e.get("attributes"))) for e in _list(v.get("events"))
                          if isinstance(e, dict)]
                out.append(_Span(_id(v.get("traceId")) or "trace", _id(v.get("spanId")) or str(len(out)),
                                 _id(v.get("parentSpanId")), str(v.get("name") or ""),
                                 _ns(span, "startTimeUnixNano"), _ns(span, "endTimeUnixNano"),
                                 _otlp_attrs(v.get("attributes")), events, line))
    return out


def _spans_anyagent(doc: Node) -> list[_Span]:
    out: list[_Span] = []
    for span in doc.array("spans", required=True):
        if not span.is_obj():
            raise span.fail("must be a span (an object)")
        v = span.value
        context = c if isinstance(c := v.get("context"), dict) else {}
        parent = p if isinstance(p := v.get("parent"), dict) else {}
        attrs = a if isinstance(a := v.get("attributes"), dict) else {}
        events = [(str(e.get("name") or ""), ea if isinstance(ea := e.get("attributes"), dict) else {})
                  for e in _list(v.get("events")) if isinstance(e, dict)]
        out.append(_Span(_id(context.get("trace_id")) or "trace", _id(context.get("span_id")) or str(len(out)),
                         _id(parent.get("span_id")), str(v.get("name") or ""), _ns(span, "start_time"),
                         _ns(span, "end_time"), dict(attrs), events))
    return out


def _json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and isinstance(block.get("content"), str):
                parts.append(block["content"])
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(json.dumps(block, ensure_ascii=False, separators=(",", ":")))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.unknown_roles = 0
        self.calls_made = 0

    def call_id(self, span: _Span, n: int) -> str:
        return f"{span.span}-{n}"

    def messages(self, raw: Any, span: _Span, ts: str | None) -> list[Message]:
        """A message list in the parts schema or OpenAI style, as canonical messages."""
        raw = _json(raw)
        if isinstance(raw, dict):
            raw = raw.get("messages") if isinstance(raw.get("messages"), list) else [raw]
        if not isinstance(raw, list):
            return [Message("user", _text(raw), ts=ts)] if raw else []
        out: list[Message] = []
        for n, m in enumerate(raw):
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            if "parts" in m and isinstance(m["parts"], list):
                texts, thinking, calls, results = [], [], [], []
                for k, part in enumerate(m["parts"]):
                    if not isinstance(part, dict):
                        continue
                    kind = part.get("type")
                    if kind == "text":
                        texts.append(_text(part.get("content")))
                    elif kind == "reasoning":
                        thinking.append(_text(part.get("content")))
                    elif kind == "tool_call":
                        calls.append(ToolCall(str(part.get("id") or self.call_id(span, n * 100 + k)),
                                              str(part.get("name") or ""), arguments_of(part.get("arguments"))))
                    elif kind == "tool_call_response":
                        results.append(Message("tool", _text(part.get("response") if "response" in part
                                                             else part.get("result")), ts=ts,
                                               tool_call_id=str(part.get("id") or "")))
                    else:
                        texts.append(_text(part.get("content")) if "content" in part else
                                     json.dumps(part, ensure_ascii=False, separators=(",", ":")))
                if results:
                    out.extend(results)
                    continue
                content = "\n".join(t for t in texts if t)
            else:
                content = _text(m.get("content"))
                thinking, calls = [], []
                for k, call in enumerate(_list(m.get("tool_calls"))):
                    if isinstance(call, dict):
                        fn = f if isinstance(f := call.get("function"), dict) else call
                        calls.append(ToolCall(str(call.get("id") or self.call_id(span, n * 100 + k)),
                                              str(fn.get("name") or ""), arguments_of(fn.get("arguments"))))
                if role == "tool":
                    out.append(Message("tool", content, ts=ts, tool_call_id=str(m.get("tool_call_id") or "")))
                    continue
            if role in ("system", "developer"):
                out.append(Message("system", content, ts=ts))
            elif role == "user" or role == "human":
                out.append(Message("user", content, ts=ts))
            elif role in ("assistant", "model", "ai"):
                out.append(Message("assistant", content, ts=ts, thinking="\n".join(thinking) or None,
                                   tool_calls=tuple(calls)))
            else:
                self.unknown_roles += 1
        return out

    def indexed(self, attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
        """OpenLLMetry's flattened `gen_ai.prompt.0.role` / `.content` attributes as a message list."""
        rows: dict[int, dict[str, Any]] = {}
        for key, value in attrs.items():
            if key.startswith(prefix + "."):
                rest = key[len(prefix) + 1:].split(".", 1)
                if len(rest) == 2 and rest[0].isdigit():
                    rows.setdefault(int(rest[0]), {})[rest[1]] = value
        if not rows:
            return None
        return [rows[i] for i in sorted(rows)]

    def request(self, span: _Span) -> tuple[list[Message] | None, str | None]:
        """The input messages a model call logged (None: not logged), and its system instructions."""
        a = span.attrs
        system = a.get("gen_ai.system_instructions")
        system_text = _text(_json(system)) if system is not None else None
        ts = format_ts(span.start_ns / 1e9) if span.start_ns else None
        for key in ("gen_ai.input.messages", "gen_ai.prompt", "gen_ai.request.messages", "llm.input_messages"):
            if a.get(key) is not None:
                return self.messages(a[key], span, ts), system_text
        rows = self.indexed(a, "gen_ai.prompt")
        if rows is not None:
            return self.messages(rows, span, ts), system_text
        events = [dict(attrs, role=name.split(".")[1]) for name, attrs in span.events
                  if name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message",
                              "gen_ai.tool.message")]
        if events:
            return self.messages(events, span, ts), system_text
        return None, system_text

    def response(self, span: _Span, model: str | None, usage: Usage | None) -> Message:
        a = span.attrs
        ts = format_ts(span.end_ns / 1e9) if span.end_ns else None
        out: list[Message] = []
        for key in ("gen_ai.output.messages", "gen_ai.completion"):
            if a.get(key) is not None:
                out = self.messages(a[key], span, ts)
                break
        else:
            rows = self.indexed(a, "gen_ai.completion")
            if rows is not None:
                out = self.messages([dict(r, role=r.get("role") or "assistant") for r in rows], span, ts)
            elif a.get("gen_ai.output") is not None:
                value = _json(a["gen_ai.output"])
                if isinstance(value, list) and value and all(isinstance(v, dict) and "tool.name" in v for v in value):
                    calls = tuple(ToolCall(self.call_id(span, k), str(v.get("tool.name") or ""),
                                           arguments_of(v.get("tool.args"))) for k, v in enumerate(value))
                    out = [Message("assistant", "", ts=ts, tool_calls=calls)]
                else:
                    out = [Message("assistant", _text(a["gen_ai.output"]) if isinstance(a["gen_ai.output"], str)
                                   else _text(value), ts=ts)]
            else:
                choices = [attrs for name, attrs in span.events if name == "gen_ai.choice"]
                if choices:
                    out = self.messages([dict(cm if isinstance(cm := c.get("message"), dict) else c,
                                              role="assistant") for c in choices], span, ts)
        replies = [m for m in out if m.role == "assistant"]
        text = "\n".join(m.content for m in replies if m.content)
        thinking = "\n".join(m.thinking for m in replies if m.thinking) or None
        calls = tuple(c for m in replies for c in m.tool_calls)
        extra = {} if out else {"content_not_recorded": True}
        return Message("assistant", text, ts=ts, thinking=thinking, tool_calls=calls, usage=usage, model=model,
                       extra=frozen(extra))


def _count(attrs: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and value >= 0:
            return int(value)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def _cost(attrs: dict[str, Any]) -> str | None:
    parts = [attrs.get("gen_ai.usage.input_cost"), attrs.get("gen_ai.usage.output_cost"),
             attrs.get("gen_ai.usage.cost")]
    total = Decimal(0)
    seen = False
    for value in parts:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                total += Decimal(repr(value))
                seen = True
            except InvalidOperation:
                continue
    return format(total, "f") if seen else None


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    nodes, whole = source.any_json(stream)
    spans: list[_Span] = []
    for node in nodes:
        if not node.is_obj():
            raise node.fail("expected OTLP JSON {resourceSpans} or an AgentTrace {spans}")
        if "resourceSpans" in node:
            spans.extend(_spans_otlp(node, None if whole else node.line))
        elif "spans" in node:
            spans.extend(_spans_anyagent(node))
        else:
            source.bad(node.line, "not an OTLP export request (no resourceSpans) nor an AgentTrace (no spans)")
    reader = _Reader(source)
    by_id = {s.span: s for s in spans}
    traces: dict[str, list[_Span]] = {}
    for span in spans:
        traces.setdefault(span.trace, []).append(span)

    def agent_of(span: _Span) -> _Span | None:
        seen = set()
        parent = by_id.get(span.parent) if span.parent else None
        while parent is not None and parent.span not in seen:
            seen.add(parent.span)
            if parent.operation in AGENT_OPERATIONS:
                return parent
            parent = by_id.get(parent.parent) if parent.parent else None
        return None

    out: list[Session] = []
    exclusive = 0
    unknown_ops: dict[str, int] = {}
    for trace_id, members in traces.items():
        members.sort(key=lambda s: (s.start_ns, s.end_ns))
        groups: dict[str | None, list[_Span]] = {}
        for span in members:
            if span.operation in AGENT_OPERATIONS:
                groups.setdefault(span.span, [])
                continue
            owner = agent_of(span)
            groups.setdefault(owner.span if owner else None, []).append(span)
        agents = {a: by_id[a] for a in groups if a is not None}
        # the top agent (no agent above it) and spans outside any agent share the trace's session
        top = [a for a, s in agents.items() if agent_of(s) is None]
        root_key = top[0] if len(top) == 1 else None
        if root_key is not None and None in groups:
            groups[root_key] = sorted(groups[root_key] + groups.pop(None), key=lambda s: (s.start_ns, s.end_ns))
        session_ids: dict[str | None, str] = {}
        for key in groups:
            if key is None or key == root_key:
                session_ids[key] = trace_id
            else:
                name = str(agents[key].attrs.get("gen_ai.agent.name") or "agent")
                session_ids[key] = f"{trace_id}/{name}-{key}"
        for key, group in groups.items():
            chats = [s for s in group if s.operation in CHAT_OPERATIONS]
            if not chats:
                continue
            for s in group:
                if s.operation not in CHAT_OPERATIONS and s.operation != "execute_tool":
                    unknown_ops[s.operation or "?"] = unknown_ops.get(s.operation or "?", 0) + 1
            first = chats[0].attrs
            model_name = first.get("gen_ai.response.model") or first.get("gen_ai.request.model")
            provider_attr = first.get("gen_ai.provider.name") or first.get("gen_ai.system")
            provider, model = split_model(model_name if isinstance(model_name, str) else None)
            provider = PROVIDERS.get(str(provider_attr).lower(), provider) if provider_attr else provider
            conv = Conversation(session_ids[key], source=NAME, model=model, provider=provider,
                                ts=format_ts(group[0].start_ns / 1e9) if group[0].start_ns else None)
            pending: list[Message] = []
            for span in group:
                if span.operation == "execute_tool":
                    pending.append(_tool_result(span))
                    continue
                if span.operation not in CHAT_OPERATIONS:
                    continue
                a = span.attrs
                inp = _count(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
                outp = _count(a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
                read = _count(a, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                              "gen_ai.usage.cached_tokens") or 0
                written = _count(a, "gen_ai.usage.cache_creation.input_tokens",
                                 "gen_ai.usage.cache_write_input_tokens",
                                 "gen_ai.usage.cache_creation_input_tokens") or 0
                usage = None
                if inp is not None or outp is not None:
                    prompt = inp or 0
                    if read + written > prompt:
                        prompt += read + written
                        exclusive += 1
                    extra: dict[str, Any] = {}
                    reasoning = _count(a, "gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")
                    if reasoning:
                        extra["reasoning_tokens"] = reasoning
                    cost = _cost(a)
                    if cost is not None:
                        extra["cost_usd"] = cost
                    usage = Usage(prompt, read, written, 0, outp or 0, extra=frozen(extra))
                served = a.get("gen_ai.response.model") or a.get("gen_ai.request.model")
                _, served_model = split_model(served if isinstance(served, str) else None)
                request, system = reader.request(span)
                response = reader.response(span, served_model or model, usage)
                if request is None:  # the conversation so far, then the tool results since
                    _continue(conv, _answer(conv, pending), response)
                else:
                    if system is None and request and request[0].role == "system":
                        system = request[0].content
                        request = request[1:]
                    conv.exchange(request, response, system=system if system is not None else conv.system)
                pending = []
            for session in conv.sessions():
                extra = dict(session.extra)
                extra["trace_id"] = trace_id
                if key is not None and key != root_key:
                    parent_key = agent_of(agents[key])
                    extra["parent_session"] = session_ids.get(parent_key.span, trace_id) if parent_key else trace_id
                if key is not None and isinstance(agents[key].attrs.get("gen_ai.agent.name"), str):
                    extra.setdefault("agent_name", agents[key].attrs["gen_ai.agent.name"])
                out.append(_with_extra(session, extra))
    if exclusive:
        source.note(f"{exclusive} call(s) logged cache counts above their input tokens: taken as kept apart "
                    "(Anthropic style) and added to the input")
    if reader.unknown_roles:
        source.note(f"skipped {reader.unknown_roles} message(s) of roles this reader does not know")
    if unknown_ops:
        source.note("spans of other operations not read: " + ", ".join(
            f"{n} {k}" for k, n in sorted(unknown_ops.items())))
    if not out and spans:
        source.note("no model-call spans (gen_ai.operation.name chat / call_llm / ...) found")
    return out


def _tool_result(span: _Span) -> Message:
    a = span.attrs
    value = a.get("gen_ai.tool.call.result")
    if value is None:
        value = a.get("gen_ai.output")
    if value is None:
        value = a.get("output.value")
    text = value if isinstance(value, str) else _text(value)
    ts = format_ts(span.end_ns / 1e9) if span.end_ns else None
    error = any(name == "exception" for name, _ in span.events)
    return Message("tool", text, ts=ts, tool_call_id=str(a.get("gen_ai.tool.call.id") or ""),
                   name=str(a.get("gen_ai.tool.name") or "") or None, is_error=error)


def _continue(conv: Conversation, fresh: list[Message], response: Message) -> None:
    """A call that logged no input: it sent the conversation so far and `fresh`; appended in place
    (comparing the whole history again at every call would grow with the square of its length)."""
    if not conv.builders:
        conv.exchange(fresh, response, system=conv.system)
        return
    builder = conv.builders[-1]
    for message in [*fresh, response]:
        builder.add(message)
        conv.keys.append(message_key(message))


def _answer(conv: Conversation, pending: list[Message]) -> list[Message]:
    """Tool results of spans that ran since the last call, matched to its open calls by id, else by name."""
    if not pending:
        return []
    last = next((m for m in reversed(conv.builders[-1].messages) if m.role == "assistant"), None) \
        if conv.builders else None
    calls = list(last.tool_calls) if last is not None else []
    out = []
    for result in pending:
        match = next((c for c in calls if c.id == result.tool_call_id), None) or next(
            (c for c in calls if c.name == result.name), None)
        if match is not None:
            calls.remove(match)
            out.append(Message("tool", result.content, ts=result.ts, tool_call_id=match.id, name=match.name,
                               is_error=result.is_error))
        else:
            out.append(result)
    return out


def _with_extra(session: Session, extra: dict[str, Any]) -> Session:
    from dataclasses import replace

    return replace(session, extra=frozen({k: v for k, v in extra.items() if v is not None}))


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    if shape == "none":
        return str(first)  # the reason
    text = head_text(head)
    if '"resourceSpans"' in text[:2000] and ('"gen_ai.' in text or '"scopeSpans"' in text):
        return None
    if text.lstrip().startswith("{") and '"spans"' in text[:200] and '"gen_ai.' in text:
        return None
    return ("no OpenTelemetry spans (resourceSpans, or an AgentTrace's spans with gen_ai.* attributes) "
            "in the first bytes")


register(FormatInfo(name=NAME, description="OpenTelemetry GenAI spans (OTLP JSON export, any-agent AgentTrace)",
                    sniff=sniff, module=__name__, parse=parse))
