"""`codex`: OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

What the reader maps:

- `session_meta`: the session id, start time and, in newer versions, `base_instructions`
  (the system prompt). `turn_context` sets the model of the requests that follow.
- `response_item`s are the model-visible history. User and developer messages become
  user and system messages; `reasoning`, assistant `message`, `function_call`,
  `custom_tool_call` and `local_shell_call` items of one model response become one assistant
  message (the reasoning summary as `thinking`, calls with their JSON-string arguments
  decoded); `function_call_output` / `custom_tool_call_output` become tool results, matched
  to their call by `call_id`.
- `event_msg` `token_count` gives each request's usage: `last_token_usage` (the prompt is
  inclusive, `cached_input_tokens` a part of it, reasoning a part of output). The running
  `total_token_usage` is only used to drop a repeated event and to derive a missing `last`;
  it may reset inside a file (a resumed process) and nothing depends on it growing.
  Depending on the CLI version the event comes just before the response's items (0.40: one
  `turn_context` a request, then the count, then the items), just after them (0.10x: before the
  tool outputs) or after the tool outputs too (0.14x: one `turn_context` a user turn); each count
  goes to the adjacent response that has none: the open one, else the one closed by its tool
  outputs when nothing since (a `turn_context`, a user message, another response) says a new
  request began, else the next one.
- `compacted` (the agent's own compaction) ends the session: the next session starts with
  a `compaction` event, then the `replacement_history` when logged, else what Codex rebuilds
  (the first injected context, the recent user messages, the summary as a `summary` message).
- The hidden reasoning that a request sends back (encrypted) is not text in the log; its size is
  the `reasoning_output_tokens` of the response that made it, kept as the message's
  `extra_tokens` so the replayed prompt counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import IO, Any

from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.model import Message, Role, Session, ToolCall, Usage

NAME = "codex"
LINE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
OUTPUT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<INSTRUCTIONS>")
RECENT_USER_CHARS = 80_000  # Codex keeps about 20k tokens of recent user messages after compacting


def _images(block: Node) -> int:
    return image_tokens(block, "openai")


@dataclass
class _Response:
    line: int
    ts: str | None
    model: str | None
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    reasoning_tokens: int = 0
    phases: list[str] = field(default_factory=list)

    def message(self) -> Message:
        extra: dict[str, Any] = {}
        if self.usage is not None and self.usage.extra.get("reasoning_tokens"):
            extra["reasoning_tokens"] = self.usage.extra["reasoning_tokens"]
        if self.usage is not None and self.usage.extra.get("total_reset"):
            extra["total_reset"] = True
            self.usage = Usage(self.usage.input_tokens, self.usage.cache_read_tokens, 0, 0,
                               self.usage.output_tokens,
                               extra=frozen({k: v for k, v in self.usage.extra.items() if k != "total_reset"}))
        if not (self.texts or self.thinking or self.calls):
            extra["no_items_logged"] = True
        if self.phases:
            extra["phase"] = self.phases[-1]  # commentary (progress text) or final_answer
        hidden = self.usage.extra.get("reasoning_tokens", 0) if self.usage is not None and self.thinking else 0
        return Message("assistant", "\n".join(self.texts), ts=self.ts,
                       thinking="\n".join(self.thinking) if self.thinking else None, tool_calls=tuple(self.calls),
                       usage=self.usage, model=self.model, extra_tokens=hidden, extra=frozen(extra), line=self.line)


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or "codex"
        self.session_id: str | None = None
        self.header: dict[str, Any] = {"source": NAME, "provider": "openai"}
        self.builders: list[SessionBuilder] = []
        self.builder: SessionBuilder | None = None
        self.model: str | None = None
        self.current: _Response | None = None
        self.current_counted = False  # the current response already has its usage
        self.pending: tuple[Usage, str | None, int] | None = None  # a count waiting for its response
        self.last_totals: tuple[Any, Any] | None = None
        self.last_prompt = 0
        self.initial_context: list[Message] = []
        self.human: list[Message] = []
        self.aborted = 0
        self.resets = 0
        self.prev_total: Usage | None = None
        self.prev_total_raw: Any = None
        self.zero_counts = 0
        self.repeats = 0
        self.just_compacted = False  # no request since the last compaction
        self.event_builder: SessionBuilder | None = None  # a session a context_compacted event began
        # the last response closed without its count (its tool outputs came first), where it is in its session:
        # a count that comes next, before a turn_context, a user message or another response, is its own
        self.uncounted: tuple[_Response, SessionBuilder, int] | None = None
        self.late_counts = 0

    # -- sessions
    def _builder(self) -> SessionBuilder:
        if self.builder is None:
            self.builder = SessionBuilder(self.session_id or self.stem, **self.header)
            self.builders.append(self.builder)
        return self.builder

    def _add(self, message: Message) -> None:
        self.close()
        self._builder().add(message)

    def close(self) -> None:
        """Finish the current response (and a count that found no response: an empty one)."""
        if self.current is not None:
            builder = self._builder()
            builder.add(self.current.message())
            if self.current.usage is None:
                self.uncounted = (self.current, builder, len(builder.messages) - 1)
            self.current = None
            self.current_counted = False
        if self.pending is not None:
            usage, ts, line = self.pending
            self.pending = None
            self._builder().add(_Response(line, ts, self.model, usage=usage).message())

    # -- records
    def meta(self, node: Node) -> None:
        payload = node.obj("payload", required=True)
        assert payload is not None
        if self.session_id is not None:
            return  # a resumed or forked file repeats it
        self.session_id = payload.string("id") or self.stem
        self.header["ts"] = payload.ts("timestamp") or node.ts("timestamp")
        base = payload.get("base_instructions")
        if isinstance(base, dict):
            base = base.get("text")
        if isinstance(base, str) and base:
            self.header["system"] = base
        extra = {"codex_session_id": self.session_id, "cli_version": payload.string("cli_version"),
                 "originator": payload.string("originator"), "forked_from_id": payload.string("forked_from_id"),
                 "cwd": payload.string("cwd")}
        self._builder().extra.update({k: v for k, v in extra.items() if v})
        if self.builder is not None:
            self.builder.id = self.session_id
            self.builder.header.update(self.header)

    def turn_context(self, node: Node) -> None:
        payload = node.obj("payload", required=True)
        assert payload is not None
        self.uncounted = None  # a count after a turn_context is the next request's (0.40: one per request)
        model = payload.string("model")
        if model:
            self.model = model
            if not self.header.get("model"):
                self.header["model"] = model
                if self.builder is not None:
                    self.builder.header["model"] = model

    def item(self, node: Node) -> None:
        payload = node.obj("payload", required=True)
        assert payload is not None
        kind = payload.string("type", required=True)
        ts = node.ts("timestamp")
        if kind == "message":
            role = payload.string("role", required=True)
            text, extra_tokens = text_of(payload.child("content"), _images)
            if role == "assistant":
                response = self._response(node, ts)
                response.texts.append(text)
                phase = payload.string("phase")
                if phase:
                    response.phases.append(phase)
                return
            canonical: Role = "system" if role in ("developer", "system") else "user"
            extra = {"injected": True} if text.lstrip().startswith(INJECTED_PREFIXES) else {}
            message = Message(canonical, text, ts=ts, extra_tokens=extra_tokens, extra=frozen(extra), line=node.line)
            if canonical == "user" and not extra:
                self.human.append(message)
                self.uncounted = None
            elif not self.human and canonical in ("user", "system"):
                self.initial_context.append(message)
            self._add(message)
        elif kind == "reasoning":
            summary = payload.array("summary")
            texts = [s.string("text") or "" for s in summary if s.is_obj()]
            response = self._response(node, ts)
            if texts:
                response.thinking.append("\n".join(texts))
            elif payload.get("encrypted_content"):
                response.thinking.append("")
        elif kind == "function_call":
            call_id = payload.string("call_id") or payload.string("id")
            if not call_id:
                raise payload.fail("is missing", "call_id")
            name = payload.string("name", required=True)
            raw = payload.get("arguments")
            if raw is not None and not isinstance(raw, (str, dict)):
                raise payload.fail(f"must be a JSON string, got {type(raw).__name__}", "arguments")
            self._response(node, ts).calls.append(ToolCall(call_id, name or "", arguments_of(raw)))
        elif kind == "custom_tool_call":
            call_id = payload.string("call_id", required=True)
            name = payload.string("name", required=True)
            self._response(node, ts).calls.append(ToolCall(call_id or "", name or "", payload.get("input")))
        elif kind == "local_shell_call":
            call_id = payload.string("call_id") or payload.string("id")
            if not call_id:
                raise payload.fail("is missing", "call_id")
            self._response(node, ts).calls.append(ToolCall(call_id, "local_shell", payload.get("action")))
        elif kind == "web_search_call":
            # a hosted tool: the search runs on OpenAI's side and its results are not in the log
            call_id = payload.string("id") or payload.string("call_id") or f"web_search@{node.line}"
            self._response(node, ts).calls.append(ToolCall(call_id, "web_search", payload.get("action") or {}))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = payload.string("call_id", required=True)
            output = payload.child("output")
            if isinstance(output.value, dict) and "content" in output.value:
                output = output.child("content")
            text, extra_tokens = text_of(output, _images)
            self._add(Message("tool", text, ts=ts, tool_call_id=call_id, extra_tokens=extra_tokens, line=node.line))
        elif kind == "compaction":
            self.compaction(node, ts, None, None)
        # ghost_snapshot and unknown items: not sent to the model, ignored

    def _response(self, node: Node, ts: str | None) -> _Response:
        if self.current is None:
            self.uncounted = None
            self.current = _Response(node.line or 0, ts, self.model)
            if self.pending is not None:
                self.current.usage = self.pending[0]
                self.current_counted = True
                self.pending = None
        return self.current

    def event(self, node: Node) -> None:
        payload = node.obj("payload", required=True)
        assert payload is not None
        kind = payload.string("type", required=True)
        if kind == "token_count":
            self.token_count(node, payload)
        elif kind == "turn_aborted":
            self.aborted += 1
        elif kind == "context_compacted" and not self.just_compacted:
            # newer versions write it after the `compacted` record (the same compaction); alone, it
            # is a compaction whose replacement history Codex rebuilt without logging it
            self.compaction(node, node.ts("timestamp"), None, None)
            self.event_builder = self.builder

    def token_count(self, node: Node, payload: Node) -> None:
        info = payload.obj("info")
        if info is None:
            return  # rate limits only
        total = info.obj("total_token_usage")
        last = info.obj("last_token_usage")
        window = info.count("model_context_window")
        if window and not self.header.get("window"):
            self.header["window"] = window
            if self.builder is not None:
                self.builder.header["window"] = window
        key = (total.value if total else None, last.value if last else None)
        if last is not None and isinstance(last.value, dict) and not any(
                isinstance(v, (int, float)) and v for v in last.value.values()):
            self.zero_counts += 1  # written when the history is recomputed (before a compaction): no request
            return
        if key == self.last_totals or (total is not None and total.value == self.prev_total_raw):
            self.repeats += 1
            return  # the same event again (0.10x writes every count twice): the running total did not change
        self.last_totals = key
        self.prev_total_raw = total.value if total is not None else None
        previous = self.prev_total
        current = _usage(total) if total is not None else None
        reset = previous is not None and current is not None and current.input_tokens < previous.input_tokens
        self.resets += reset
        if last is not None:
            usage = _usage(last)
        elif current is not None:  # older files: the request is the growth of the running total
            usage = current
            if previous is not None and current.input_tokens >= previous.input_tokens:
                usage = Usage(current.input_tokens - previous.input_tokens,
                              max(current.cache_read_tokens - previous.cache_read_tokens, 0), 0, 0,
                              max(current.output_tokens - previous.output_tokens, 0))
                usage = Usage(usage.input_tokens, min(usage.cache_read_tokens, usage.input_tokens), 0, 0,
                              usage.output_tokens)
        else:
            return
        self.prev_total = current
        if reset:
            usage = Usage(usage.input_tokens, usage.cache_read_tokens, 0, 0, usage.output_tokens,
                          extra=frozen({**usage.extra, "total_reset": True}))
        self.last_prompt = usage.input_tokens
        self.just_compacted = False
        ts = node.ts("timestamp")
        if self.current is None and self.pending is None and self.uncounted is not None:
            # written after the response's tool outputs (0.14x): the count measures that response
            response, builder, index = self.uncounted
            self.uncounted = None
            response.usage = usage
            measured = response.message()
            builder.messages[index] = replace(builder.messages[index], usage=measured.usage, extra=measured.extra,
                                              extra_tokens=measured.extra_tokens)
            self.late_counts += 1
            return
        if self.current is not None and not self.current_counted:
            self.current.usage = usage
            self.current_counted = True
            self._builder().add(self.current.message())
            self.current = None
            self.current_counted = False
            return
        if self.current is not None:
            self._builder().add(self.current.message())
            self.current = None
            self.current_counted = False
        elif self.pending is not None:
            self.close()
        self.pending = (usage, ts, node.line or 0)

    def compaction(self, node: Node, ts: str | None, summary: str | None, history: list[Node] | None) -> None:
        self.close()
        self.just_compacted = True
        previous = self._builder()
        self.builder = None
        builder = self._builder()
        builder.id = f"{previous.id}/part-{len(self.builders)}"
        builder.extra.update({k: v for k, v in previous.extra.items() if k != "continues"})
        builder.extra["continues"] = previous.id
        builder.event("compaction", ts, pre_tokens=self.last_prompt or None)
        if history is not None:
            for item in history:
                if not item.is_obj():
                    raise item.fail("must be a response item (an object)")
                kind = item.get("type")
                if kind == "message":
                    text, more = text_of(item.child("content"), _images)
                    role = item.get("role")
                    canonical: Role = "system" if role in ("developer", "system") else (
                        "user" if role == "user" else "summary")
                    if summary and text.strip() == summary.strip():
                        canonical = "summary"  # the summary, as Codex puts it back in the history
                    builder.add(Message(canonical, text, ts=ts, extra_tokens=more, line=node.line))
                elif kind == "compaction":
                    builder.add(Message("summary", "", ts=ts, extra=frozen({"encrypted": True}), line=node.line))
            if summary and not any(m.role == "summary" for m in builder.messages):
                builder.add(Message("summary", summary, ts=ts, line=node.line))
            return
        for message in self.initial_context:
            builder.add(message)
        recent: list[Message] = []
        size = 0
        for message in reversed(self.human):
            size += len(message.content)
            if size > RECENT_USER_CHARS:
                break
            recent.append(message)
        for message in reversed(recent):
            builder.add(message)
        if summary is not None:
            builder.add(Message("summary", summary, ts=ts, line=node.line))
        else:
            builder.add(Message("summary", "", ts=ts, extra=frozen({"encrypted": True}), line=node.line))
            self.source.note("a remote compaction's summary is encrypted: its size is not in the log")

    def compacted(self, node: Node) -> None:
        payload = node.obj("payload", required=True)
        assert payload is not None
        summary = payload.string("message") or ""
        history = payload.array("replacement_history") if payload.get("replacement_history") is not None else None
        if self.event_builder is not None and self.event_builder is self.builder and self.just_compacted:
            # the context_compacted event came first: this record is the same compaction, with its history
            self.builders.remove(self.event_builder)
            self.builder = self.builders[-1] if self.builders else None
        self.event_builder = None
        self.compaction(node, node.ts("timestamp"), summary, history)

    def sessions(self) -> list[Session]:
        self.close()
        if self.aborted:
            self.source.note(f"{self.aborted} turn(s) aborted by the user")
        if self.late_counts:
            self.source.note(f"{self.late_counts} token count(s) written after their response's tool outputs "
                             "attached to that response")
        if self.repeats:
            self.source.note(f"{self.repeats} repeated token count(s) (the same running total again) counted once")
        if self.zero_counts:
            self.source.note(f"{self.zero_counts} token count(s) with an all-zero last usage (a history recount "
                             "before a compaction) are not requests")
        if self.resets:
            self.source.note(f"the running token total reset {self.resets} time(s) (a resumed process); "
                             "per-request counts are used")
        out = []
        for b in self.builders:
            if b.messages or b.events:
                b.header.setdefault("model", self.header.get("model"))
                if not b.header.get("model"):
                    b.header["model"] = self.header.get("model")
                b.header["window"] = b.header.get("window") or self.header.get("window")
                out.append(b.build())
        return out


def _usage(node: Node) -> Usage:
    prompt = node.count("input_tokens") or 0
    cached = min(node.count("cached_input_tokens") or 0, prompt)
    output = node.count("output_tokens") or 0
    reasoning = node.count("reasoning_output_tokens") or 0
    extra = {"reasoning_tokens": reasoning} if reasoning else {}
    return Usage(prompt, cached, 0, 0, output, extra=frozen(extra))


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    reader = _Reader(source)
    handlers = {"session_meta": reader.meta, "turn_context": reader.turn_context, "response_item": reader.item,
                "event_msg": reader.event, "compacted": reader.compacted}
    unknown = 0
    for node in source.jsonl(stream):
        kind = node.value.get("type")
        if not isinstance(kind, str):
            source.bad(node.line, "field 'type' is missing or not a string (every rollout line has one)")
            continue
        handler = handlers.get(kind)
        if handler is None:
            unknown += 1
            continue
        try:
            handler(node)
        except TraceError as exc:
            source.bad(node.line, exc.message)
    if unknown:
        source.note(f"ignored {unknown} line(s) of types this reader does not know")
    return reader.sessions()


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 10)
    if refusal:
        return refusal
    if any(record.get("type") in LINE_TYPES and "payload" in record for record in records):
        return None
    return "no rollout lines ({type: session_meta|response_item|event_msg|turn_context, payload}) in the first lines"


ABOUT = {
    "reads": "OpenAI Codex CLI and Desktop rollout JSONL (session_meta, response_item, event_msg, turn_context, "
             "compacted lines), 0.40 to 0.14x",
    "location": "$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl (CODEX_HOME defaults to ~/.codex; "
                "archived_sessions/ for archived ones)",
    "records": "the model-visible history with times; per request the last usage and the running total "
               "(input including the cache, cached input, output, reasoning); the context window; compactions "
               "with the summary and, in newer versions, the replacement history",
    "cannot_know": "cache writes (OpenAI bills none before GPT-5.6; not logged); the hidden reasoning sent back "
                   "(encrypted: sized by the response's reasoning tokens); a remote compaction's summary "
                   "(encrypted); cost (not recorded)",
    "checked": "Codex CLI 0.40.0 and Codex Desktop 0.104.0 rollouts (public sessions); the 0.14x order (each count "
               "after its response's tool outputs, one turn_context a user turn)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover): $CODEX_HOME replaces ~/.codex.
DISCOVERY = {"env": "CODEX_HOME", "env_suffix": "sessions", "folders": ("~/.codex/sessions",),
             "files": "**/rollout-*.jsonl"}

register(FormatInfo(name=NAME, description="OpenAI Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
