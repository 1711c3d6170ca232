"""`opencode`: OpenCode sessions, as `opencode export` writes them or as its storage folder keeps them.

Two shapes of the same data (OpenCode's `Session.Info`, and each message's `info` with its `parts`):

- `opencode export <session id>`: one JSON object `{info, messages: [{info, parts}], todos}`;
- the storage folder (`~/.local/share/opencode/storage`, or `$OPENCODE_DATA_DIR/storage`):
  `session/<project id>/<session id>.json` (the session's info; the file this reader is given),
  `message/<session id>/<message id>.json` (each message's info) and `part/<message id>/<part id>.json`
  (its parts). Messages and parts are in id order (OpenCode's ids grow with time).

What the reader maps: a `user` message's `text` parts are the user message (its `file` parts are
skipped and counted: OpenCode sends a text file's content as a synthetic text part beside it). An
`assistant` message is one or more requests: each `step-start` ... `step-finish` run of its parts is
one response (`text` its text, `reasoning` its thinking, each `tool` part a call `{callID, tool,
state.input}` whose `state.output` or `state.error` is the tool result that follows), with the
`step-finish` part's `tokens` and `cost`; a message without step parts is one response with the
message's own `tokens` and `cost`.

Usage (`tokens {input, output, reasoning, cache: {read, write}}`): OpenCode stores `input` without
the cache (it subtracts the cached part for the providers that include it), so the prompt is
`input + cache.read + cache.write`; `reasoning` is billed as output beside `output` (OpenCode's own
cost does so), so the output is `output + reasoning`. `cost` (USD) is OpenCode's recorded cost.
A session with a `parentID` is a subagent's (OpenCode's task tool): linked to its parent.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen
from ctxsim.formats._sniff import sniff_json_object_text
from ctxsim.formats._source import Source
from ctxsim.formats._usage import recorded_usd, split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "opencode"

ABOUT = {
    "reads": "OpenCode sessions: `opencode export` JSON ({info, messages: [{info, parts}]}) or the storage "
             "folder's session files (with the message and part files they point to)",
    "location": "~/.local/share/opencode/storage/session/<project id>/<session id>.json, messages under "
                "storage/message/, parts under storage/part/ ($OPENCODE_DATA_DIR replaces ~/.local/share/opencode)",
    "records": "every message and part with times; per step (request) tokens {input, output, reasoning, cache "
               "read and write} and its cost; tool calls with their input, output and status; subagent sessions "
               "(parentID)",
    "cannot_know": "the system prompt and tool definitions (not saved); what a compaction sent (the newer "
                   "SQLite store, opencode.db, is read by the `opencode-db` format)",
    "checked": "OpenCode 1.1 (`opencode export` and the JSON storage folder, from its source: export.ts, Session and "
               "MessageV2 types); not its SQLite store",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"env": "OPENCODE_DATA_DIR", "env_suffix": "storage", "folders": ("~/.local/share/opencode/storage",),
             "files": "session/*/*.json"}


def _usage(tokens: Node, cost: Any) -> Usage | None:
    cache = tokens.obj("cache")
    read = (cache.count("read") if cache else None) or 0
    write = (cache.count("write") if cache else None) or 0
    uncached = tokens.count("input") or 0
    output = tokens.count("output") or 0
    reasoning = tokens.count("reasoning") or 0
    if not (uncached or read or write or output or reasoning):
        return None  # a step that failed before the provider answered
    extra: dict[str, Any] = {"reasoning_tokens": reasoning} if reasoning else {}
    recorded = recorded_usd(cost)
    if recorded is not None:
        extra["cost_usd"] = format(recorded, "f")
    return Usage(uncached + read + write, read, write, 0, output + reasoning, extra=frozen(extra))


class _Reader:
    def __init__(self, source: Source, builder: SessionBuilder) -> None:
        self.source = source
        self.builder = builder
        self.skipped: dict[str, int] = {}
        self.cost = Decimal(0)
        self.costs = 0

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def message(self, info: Node, parts: list[Node]) -> None:
        role = info.string("role")
        time = info.obj("time")
        ts = time.ts("created") if time else None
        if role == "user":
            texts = []
            for part in parts:
                kind = part.string("type")
                if kind == "text" and not part.get("ignored"):
                    texts.append(part.string("text") or "")
                else:
                    self.skip(f"user {kind} part")
            self.builder.add(Message("user", "\n".join(t for t in texts if t), ts=ts))
            return
        if role != "assistant":
            self.skip(f"role {role!r}")
            return
        _, model = split_model(info.string("modelID"))
        end = (time.ts("completed") if time else None) or ts
        steps: list[list[Node]] = []
        finishes: list[Node | None] = []
        current: list[Node] = []
        for part in parts:
            kind = part.string("type")
            if kind == "step-start":
                if current:
                    steps.append(current)
                    finishes.append(None)
                current = []
            elif kind == "step-finish":
                steps.append(current)
                finishes.append(part)
                current = []
            else:
                current.append(part)
        if current or not steps:
            steps.append(current)
            finishes.append(None)
        stepped = any(f is not None for f in finishes)
        for n, (step, finish) in enumerate(zip(steps, finishes, strict=True)):
            usage = None
            if finish is not None and (tokens := finish.obj("tokens")) is not None:
                usage = _usage(tokens, finish.get("cost"))
            elif not stepped and n == len(steps) - 1 and (tokens := info.obj("tokens")) is not None:
                usage = _usage(tokens, info.get("cost"))  # no step parts: the message's own count
            self.response(step, usage, model, end if n == len(steps) - 1 else ts)
        if info.get("summary") is True:
            self.skip("compaction summary response (kept as a response)")

    def response(self, parts: list[Node], usage: Usage | None, model: str | None, ts: str | None) -> None:
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for part in parts:
            kind = part.string("type")
            if kind == "text":
                texts.append(part.string("text") or "")
            elif kind == "reasoning":
                thinking.append(part.string("text") or "")
            elif kind == "tool":
                call_id = part.string("callID") or part.string("id") or f"call-{len(calls)}"
                name = part.string("tool") or "unknown"
                state = part.obj("state")
                calls.append(ToolCall(call_id, name, arguments_of(state.get("input") if state else None)))
                status = state.string("status") if state else None
                if status in ("completed", "error"):
                    body = state.get("output") if status == "completed" else state.get("error")  # type: ignore[union-attr]
                    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
                    times = state.obj("time") if state else None
                    results.append(Message("tool", text, ts=(times.ts("end") if times else None) or ts,
                                           tool_call_id=call_id, name=name, is_error=status == "error"))
                else:
                    self.skip(f"tool call never finished ({status})")
            else:
                self.skip(f"{kind} part")
        if usage is not None and "cost_usd" in usage.extra:
            self.cost += Decimal(usage.extra["cost_usd"])
            self.costs += 1
        if not (texts or thinking or calls) and usage is None:
            return  # an empty step (cancelled before anything came back)
        self.builder.add(Message("assistant", "\n".join(t for t in texts if t), ts=ts,
                                 thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls),
                                 usage=usage, model=model))
        for result in results:
            self.builder.add(result)


def session_of(info: Node, messages: list[tuple[Node, list[Node]]], source: Source) -> list[Session]:
    """One OpenCode session from its info and its messages' (info, parts), however stored (opencode_db reads it)."""
    session_id = info.string("id") or source.path.rsplit("/", 1)[-1].split(".", 1)[0]
    time = info.obj("time")
    builder = SessionBuilder(session_id, source=NAME, ts=time.ts("created") if time else None)
    for key, name in (("directory", "cwd"), ("title", "title"), ("version", "opencode_version"),
                      ("projectID", "project_id")):
        if isinstance(value := info.get(key), str) and value:
            builder.extra[name] = value
    if isinstance(parent := info.get("parentID"), str) and parent:
        builder.extra["parent_session"] = parent
    reader = _Reader(source, builder)
    providers = []
    for message_info, parts in messages:
        if not message_info.is_obj():
            raise message_info.fail(f"must be a message's info (an object), got {kind_of(message_info.value)}")
        if isinstance(provider := message_info.get("providerID"), str):
            providers.append(provider)
        reader.message(message_info, parts)
    model = next((m.model for m in builder.messages if m.model), None)
    provider = split_model(model)[0]
    if providers:
        provider = {"anthropic": "anthropic", "openai": "openai", "google": "google", "google-vertex": "google",
                    "deepseek": "deepseek", "amazon-bedrock": "anthropic"}.get(providers[-1], provider)
    builder.header.update(model=model, provider=provider)
    if reader.costs:
        builder.extra["recorded_totals"] = {"requests": builder_requests(builder), "cost_usd": format(reader.cost, "f")}
    if reader.skipped:
        source.note("skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    if builder.orphans:
        source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
    return [builder.build()] if builder.messages else []


def builder_requests(builder: SessionBuilder) -> int:
    return sum(1 for m in builder.messages if m.role == "assistant")


def _json_files(folder: str) -> list[str]:
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".json"))


def _load(path: str, source: Source) -> Node:
    sibling = Source(path, source.skip_bad_lines)
    with open(path, "rb") as stream:
        return sibling.document(stream)


def _from_storage(info: Node, source: Source) -> list[tuple[Node, list[Node]]]:
    """A storage folder's session file: its messages and their parts, read from the folders beside it."""
    session_id = info.string("id", required=True) or ""
    storage = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(source.path))))
    out = []
    for path in _json_files(os.path.join(storage, "message", session_id)):
        message = _load(path, source)
        message_id = message.string("id") or os.path.basename(path)[:-5]
        parts = [_load(p, source) for p in _json_files(os.path.join(storage, "part", message_id))]
        out.append((message, sorted(parts, key=lambda p: str(p.get("id") or ""))))
    out.sort(key=lambda m: str(m[0].get("id") or ""))
    if not out:
        source.note(f"no messages under {os.path.join(storage, 'message', session_id)} (an empty session, or "
                    "one kept in OpenCode's SQLite store: read opencode.db, the `opencode-db` format)")
    return out


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    doc = source.document(stream)
    if not doc.is_obj():
        raise doc.fail(f"expected an OpenCode session (an object), got {kind_of(doc.value)}")
    if "messages" in doc:  # `opencode export`
        info = doc.obj("info", required=True)
        assert info is not None
        messages = []
        for entry in doc.array("messages", required=True):
            if not entry.is_obj():
                raise entry.fail("must be {info, parts}")
            message = entry.obj("info", required=True)
            assert message is not None
            messages.append((message, entry.array("parts")))
        return session_of(info, messages, source)
    if source.path == "-":
        raise doc.fail("an OpenCode storage session file read from stdin: its messages are in the folders beside "
                       "it (give the file's path, or an `opencode export`)")
    return session_of(doc, _from_storage(doc, source), source)


def sniff(head: bytes) -> str | None:
    text, why = sniff_json_object_text(head)
    if why is not None:
        return why
    compact = "".join(text.split())
    if '"info":{' in compact and '"messages":[' in compact and '"parts":[' in compact and '"sessionID":' in compact:
        return None  # opencode export
    if '"id":"ses_' in compact and '"projectID":' in compact and '"directory":' in compact and '"time":{' in compact \
            and '"messages":' not in compact:
        return None  # a storage folder's session info
    return "no OpenCode session keys ({info, messages: [{info, parts}]} or {id: ses_..., projectID, directory})"


register(FormatInfo(name=NAME, description="OpenCode sessions (`opencode export` JSON, ~/.local/share/opencode/"
                    "storage/session/*/*.json)", sniff=sniff, module=__name__, parse=parse))
