"""`claude-code`: Claude Code session JSONL (`~/.claude/projects/<cwd>/<session>.jsonl`).

What the reader maps:

- One API response is logged over several `assistant` lines (one content block each) that
  share `requestId` and `message.id` and repeat `usage`. They become one assistant message;
  its usage comes from the response's final line (input and cache counts are the same on
  every line; `output_tokens` is a streaming placeholder on the early lines, so the largest
  is kept). When even that is a placeholder (1-9 tokens and no line with a `stop_reason`),
  the usage is flagged `extra["output_placeholder"]` and counted in the notes. A response
  key seen again later in the file is a copy and is not counted again.
- Anthropic's exclusive usage becomes the inclusive convention: the prompt is
  `input + cache_creation + cache_read`; the 5-minute / 1-hour split of the writes is kept.
- `tool_use` blocks become tool calls, `tool_result` blocks tool messages (their text and
  images: what was sent; `toolUseResult` is never sent and is not counted), `thinking` is kept.
- `compact_boundary` (a compaction the agent did) ends the session: the agent's history
  restarts from the summary, so what follows is a new session that starts with a
  `compaction` event and the `isCompactSummary` message as a `summary` message (linked by
  `continues`). Replaying it under `none` then follows what the agent actually sent.
- Sidechain (subagent) lines, in their own file or inline, are their own session, linked to
  the parent's Task call by `agentId` when both are read; the parent's copy of the subagent's
  final usage (`toolUseResult.usage`) is never counted as a parent request, but it repairs
  the subagent's last response when that was logged only as a placeholder.
- `attachment` lines (2.1.x: context Claude Code renders into the next request as system reminders:
  hook output, @-mentioned or edited files, reminders) are content that was sent: the text they
  carry becomes a `user` message marked `extra["attachment"]` (its type), placed after the tool
  results of the open response; an attachment with no text is counted in the notes (its rendering
  is not in the log).
- An `acompact` sidechain (2.1.3x and later write the summarising call of an automatic compaction to
  `subagents/agent-acompact-*.jsonl` beside the session) is not a subagent: it is linked to the
  compaction it wrote (`extra["compaction_call"]`, the compacted part in `extra["compaction_of"]`,
  and the part after the compaction names it in `extra["compaction_call_session"]`), so that its
  cost is the compaction's. When the session's compactions are not in the files read it stays a
  sidechain marked `compaction_call`, linked to none.
- Synthetic error messages (`<synthetic>` model), `queue-operation`, `file-history-snapshot`,
  `progress`, title `summary` lines and other housekeeping are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import IO, Any

from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import IMAGE_FALLBACK_TOKENS, image_tokens, text_of
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import SessionBuilder, frozen
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.formats._usage import usage_anthropic
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "claude-code"
HOUSEKEEPING = {"queue-operation", "file-history-snapshot", "progress", "summary", "custom-title", "ai-title",
                "last-prompt", "tag"}
# `attachment` lines are context Claude Code sends inside the next request as <system-reminder> text (hook
# output, an @-mentioned or edited file, todo and plan reminders...): the text they carry under these keys is
# replayed as a user message marked `extra["attachment"]`; the fixed wording around it is not in the log.
ATTACHMENT_TEXT_KEYS = ("content", "text", "snippet", "stdout", "additionalContext", "prompt")
ATTACHMENT_DEPTH = 4
LINE_TYPES = {"user", "assistant", "system", "attachment"} | HOUSEKEEPING
PLACEHOLDER_MAX_OUTPUT = 9  # early streaming lines log 1-9 output tokens and no stop_reason


@dataclass
class Response:
    """An assistant response being assembled from its lines."""

    key: tuple[str, str] | None
    line: int
    ts: str | None
    model: str | None
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    extra_tokens: int = 0
    stopped: bool = False  # a line of it carried a stop_reason: its output count is final

    def merge_usage(self, usage: Usage | None) -> None:
        if usage is None:
            return
        if self.usage is None:
            self.usage = usage
            return
        # the later line is the final one; the output count only grows while streaming
        self.usage = replace(usage, output_tokens=max(usage.output_tokens, self.usage.output_tokens))

    def message(self) -> Message:
        extra: dict[str, Any] = {}
        if self.key is not None:
            extra["request_id"], extra["message_id"] = self.key
        usage = self.usage
        if usage is not None and not self.stopped and 0 < usage.output_tokens <= PLACEHOLDER_MAX_OUTPUT:
            # the last line still holds a streaming placeholder: flagged, estimated by the calibration
            usage = replace(usage, extra={**usage.extra, "output_placeholder": True})
        return Message(
            role="assistant", content="\n".join(self.texts), ts=self.ts,
            thinking="\n".join(self.thinking) if self.thinking else None, tool_calls=tuple(self.calls),
            usage=usage, model=self.model, extra_tokens=self.extra_tokens, extra=frozen(extra), line=self.line,
        )


class _Stream:
    """One conversation (main or one sidechain) inside a file; a compaction starts its next session."""

    def __init__(self, base_id: str, extra: dict[str, Any]) -> None:
        self.base_id = base_id
        self.base_extra = extra
        self.done: list[SessionBuilder] = []
        self.parts = 1
        self.builder = self._new(base_id)
        self.builder.extra.update(extra)
        self.response: Response | None = None
        self.waiting: list[Message] = []  # results logged after the open response, added after it
        self.context: list[Message] = []  # attachments: added after the results, before the next message
        self.subagents: dict[str, dict[str, Any]] = {}

    @staticmethod
    def _new(session_id: str) -> SessionBuilder:
        return SessionBuilder(session_id, source=NAME, provider="anthropic")

    def flush(self, context: bool = True) -> None:
        if self.response is not None:
            self.builder.add(self.response.message())
            self.response = None
        for message in self.waiting:
            self.builder.add(message)
        self.waiting = []
        if context:
            for message in self.context:
                self.builder.add(message)
            self.context = []

    def add(self, message: Message) -> None:
        if self.response is not None and message.role == "tool":
            self.waiting.append(message)
            return
        self.flush(context=message.role != "tool")  # never between a call's results
        self.builder.add(message)

    def compaction(self, ts: str | None, fields: dict[str, Any]) -> None:
        self.flush()
        previous = self.builder
        self.done.append(previous)
        self.parts += 1
        self.builder = self._new(f"{self.base_id}/part-{self.parts}")
        self.builder.extra.update(self.base_extra)
        self.builder.extra["continues"] = previous.id
        self.builder.event("compaction", ts, **fields)

    def sessions(self) -> list[Session]:
        self.flush()
        builders = [*self.done, self.builder]
        out = []
        for b in builders:
            if not b.messages and not b.events:
                continue
            model = next((m.model for m in b.messages if m.model), None)
            b.header["model"] = model
            if self.subagents and b is builders[0]:
                b.extra["subagents"] = self.subagents
            out.append(b.build())
        return out


def _is_sidechain(node: Node) -> bool:
    return node.get("isSidechain") is True


def _is_prompt(node: Node) -> bool:
    """A user line that is a prompt (not tool results, not a summary or injected text)."""
    if node.get("isCompactSummary") is True or node.get("isMeta") is True:
        return False
    message = node.value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return isinstance(content, str)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    streams: dict[str, _Stream] = {}
    order: list[str] = []
    seen_keys: set[tuple[str, str]] = set()
    session_id: str | None = None
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or "claude-code"
    counts = {"synthetic": 0, "copies": 0, "unknown": 0, "forks": 0, "attachments": 0, "attachments_empty": 0}

    def stream_for(node: Node) -> _Stream:
        nonlocal session_id
        sid = node.string("sessionId") or session_id or stem
        session_id = session_id or sid
        if _is_sidechain(node):
            agent = node.string("agentId") or "sidechain"
            key = f"{sid}/agent-{agent}"
            extra: dict[str, Any] = {"claude_session_id": sid, "agent_id": agent, "sidechain": True}
        else:
            key = sid
            extra = {"claude_session_id": sid}
        if key not in streams:
            version = node.string("version")
            if version:
                extra["cli_version"] = version
            cwd = node.value.get("cwd")
            if isinstance(cwd, str) and cwd:
                extra["cwd"] = cwd  # the project folder (accounting groups by it)
            streams[key] = _Stream(key, extra)
            order.append(key)
        return streams[key]

    seen_uuids: set[str] = set()
    last_uuid: dict[bool, str] = {}  # per main / sidechain: the uuid of the latest line
    for node in source.jsonl(stream):
        kind = node.value.get("type")
        if not isinstance(kind, str):
            source.bad(node.line, "field 'type' is missing or not a string (every Claude Code line has one)")
            continue
        if kind in HOUSEKEEPING:
            continue
        if kind == "attachment":
            _attachment(node, stream_for, counts)
            continue
        if kind not in ("user", "assistant", "system"):
            counts["unknown"] += 1
            continue
        uuid, parent = node.value.get("uuid"), node.value.get("parentUuid")
        side = _is_sidechain(node)
        if (kind == "user" and isinstance(parent, str) and parent in seen_uuids and parent != last_uuid.get(side)
                and _is_prompt(node)):
            counts["forks"] += 1  # a rewind: the prompt continues from an earlier message
        if isinstance(uuid, str):
            seen_uuids.add(uuid)
            last_uuid[side] = uuid
        try:
            if kind == "system":
                _system(node, stream_for)
            elif kind == "assistant":
                _assistant(node, stream_for, seen_keys, counts)
            else:
                _user(node, stream_for)
        except TraceError as exc:
            source.bad(node.line, exc.message)
    if counts["synthetic"]:
        source.note(f"ignored {counts['synthetic']} synthetic error message(s) (model <synthetic>, no usage)")
    if counts["copies"]:
        source.note(f"{counts['copies']} line(s) repeat a response already read; counted once")
    if counts["forks"]:
        source.note(f"{counts['forks']} rewind(s): a prompt continues from an earlier message; the abandoned "
                    "branch stays in the history, in file order (its requests were real and are counted)")
    if counts["attachments"]:
        source.note(f"{counts['attachments']} attachment line(s) (context Claude Code sends as system reminders): "
                    "their text replayed as user context")
    if counts["attachments_empty"]:
        source.note(f"{counts['attachments_empty']} attachment line(s) carry no text (their rendering is not in the "
                    "log): not replayed")
    if counts["unknown"]:
        source.note(f"ignored {counts['unknown']} line(s) of types this reader does not know")
    sessions: list[Session] = []
    for key in order:
        sessions.extend(streams[key].sessions())
    placeholders = sum(1 for s in sessions for m in s.messages if m.usage is not None
                       and m.usage.extra.get("output_placeholder"))
    if placeholders:
        source.note(f"{placeholders} response(s) end with a streaming placeholder output count (1-"
                    f"{PLACEHOLDER_MAX_OUTPUT} tokens, no stop reason): flagged; the calibration estimates them")
    return sessions


def _system(node: Node, stream_for: Any) -> None:
    subtype = node.get("subtype")
    if subtype == "compact_boundary":
        meta = node.obj("compactMetadata")
        fields = {}
        if meta is not None:
            fields = {"pre_tokens": meta.count("preTokens"), "post_tokens": meta.count("postTokens"),
                      "trigger": meta.string("trigger"), "duration_ms": meta.count("durationMs")}
        stream_for(node).compaction(node.ts("timestamp"), fields)
    elif subtype == "microcompact_boundary":
        meta = node.obj("microcompactMetadata")
        s = stream_for(node)
        s.flush()
        s.builder.event("microcompact", node.ts("timestamp"),
                        pre_tokens=meta.count("preTokens") if meta else None,
                        tokens_saved=meta.count("tokensSaved") if meta else None,
                        trigger=meta.string("trigger") if meta else None)


def _assistant(node: Node, stream_for: Any, seen: set[tuple[str, str]], counts: dict[str, int]) -> None:
    message = node.obj("message", required=True)
    assert message is not None
    model = message.string("model")
    if model == "<synthetic>" or node.get("isApiErrorMessage") is True:
        counts["synthetic"] += 1
        return
    mid = message.string("id")
    rid = node.string("requestId")
    key = (rid or "", mid or "") if (mid or rid) else None
    usage_node = message.obj("usage")
    usage = usage_anthropic(usage_node) if usage_node is not None else None
    ts = node.ts("timestamp")
    content = message.child("content")
    blocks = [content] if isinstance(content.value, str) else (content.items() if content.value is not None else [])
    part = Response(key, node.line or 0, ts, model)
    for block in blocks:  # checked in full before anything is merged
        assistant_block(block, part)
    s = stream_for(node)
    if key is not None and s.response is not None and s.response.key == key:
        response = s.response
    elif key is not None and key in seen:
        counts["copies"] += 1
        return
    else:
        s.flush()
        response = s.response = Response(key, node.line or 0, ts, model)
        if key is not None:
            seen.add(key)
    response.merge_usage(usage)
    if message.get("stop_reason"):
        response.stopped = True
    known = {c.id for c in response.calls}
    fresh_calls = [c for c in part.calls if c.id not in known]
    repeated = len(part.calls) - len(fresh_calls) + sum(t in response.texts for t in part.texts if t) + sum(
        t in response.thinking for t in part.thinking)
    if repeated and not fresh_calls and all(t in response.texts for t in part.texts) and all(
            t in response.thinking for t in part.thinking):
        counts["copies"] += 1  # the same block logged again
        return
    response.texts += part.texts
    response.thinking += part.thinking
    response.calls += fresh_calls
    response.extra_tokens += part.extra_tokens


def assistant_block(block: Node, response: Response) -> None:
    v = block.value
    if isinstance(v, str):
        response.texts.append(v)
        return
    if not isinstance(v, dict):
        raise block.fail(f"must be a content block (an object), got {kind_of(v)}")
    kind = v.get("type")
    if kind == "text":
        response.texts.append(block.string("text") or "")
    elif kind == "thinking":
        text = block.string("thinking")
        if text:
            response.thinking.append(text)
    elif kind == "redacted_thinking":
        pass  # encrypted: its size cannot be known from the log
    elif kind == "tool_use":
        call_id = block.string("id", required=True)
        name = block.string("name", required=True)
        response.calls.append(ToolCall(call_id, name, v.get("input")))  # type: ignore[arg-type]
    elif kind == "image":
        response.extra_tokens += image_tokens(block, "anthropic")
    else:  # server tool use and its results: sent back as they are
        response.texts.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")))


def _images(block: Node) -> int:
    return image_tokens(block, "anthropic")


def _attachment_text(value: Any, depth: int = 0) -> list[str]:
    """The texts an attachment carries under ATTACHMENT_TEXT_KEYS, nested up to ATTACHMENT_DEPTH objects."""
    out: list[str] = []
    if depth > ATTACHMENT_DEPTH:
        return out
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                if key in ATTACHMENT_TEXT_KEYS and item:
                    out.append(item)
            else:
                out.extend(_attachment_text(item, depth + 1))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str) and item and depth:
                out.append(item)
            else:
                out.extend(_attachment_text(item, depth + 1))
    return out


def _attachment(node: Node, stream_for: Any, counts: dict[str, int]) -> None:
    body = node.get("attachment")
    kind = body.get("type") if isinstance(body, dict) else None
    texts = _attachment_text(body) if isinstance(body, dict) else []
    if not texts:
        counts["attachments_empty"] += 1
        return
    counts["attachments"] += 1
    extra = {"attachment": kind if isinstance(kind, str) else "unknown", "meta": True}
    message = Message("user", "\n".join(texts), ts=node.ts("timestamp"), extra=frozen(extra), line=node.line)
    s = stream_for(node)
    s.context.append(message)


def _user(node: Node, stream_for: Any) -> None:
    message = node.obj("message", required=True)
    assert message is not None
    ts = node.ts("timestamp")
    content = message.child("content")
    extra: dict[str, Any] = {}
    if node.get("isMeta") is True:
        extra["meta"] = True
    out: list[Message] = []
    if node.get("isCompactSummary") is True:
        text, more = text_of(content, _images)
        out.append(Message("summary", text, ts=ts, extra_tokens=more, line=node.line))
    elif isinstance(content.value, list):
        texts: list[str] = []
        more_tokens = 0
        for block in content.items():
            v = block.value
            kind = v.get("type") if isinstance(v, dict) else None
            if kind == "tool_result":
                call_id = block.string("tool_use_id", required=True)
                text, more = text_of(block.child("content"), _images)
                out.append(Message("tool", text, ts=ts, tool_call_id=call_id, is_error=block.boolean("is_error"),
                                   extra_tokens=more, line=node.line))
            elif kind == "document":
                src = block.obj("source")
                if src is not None and src.get("type") == "text":
                    texts.append(src.string("data") or "")
                else:
                    more_tokens += IMAGE_FALLBACK_TOKENS  # a PDF: its size is not knowable here
            else:
                text, more = text_of(Node([v], block.source, block.line, block.path[:-1]), _images)
                if text or kind in (None, "text"):
                    texts.append(text)
                more_tokens += more
        if texts or more_tokens:
            out.append(Message("user", "\n".join(texts), ts=ts, extra_tokens=more_tokens, extra=frozen(extra),
                               line=node.line))
    else:
        text, more = text_of(content, _images)
        out.append(Message("user", text, ts=ts, extra_tokens=more, extra=frozen(extra), line=node.line))
    result = node.get("toolUseResult")
    s = stream_for(node)
    if isinstance(result, dict) and isinstance(result.get("agentId"), str):
        call_id = next((m.tool_call_id for m in out if m.role == "tool"), None)
        entry: dict[str, Any] = {"tool_call_id": call_id}
        usage = result.get("usage")
        if isinstance(usage, dict):
            try:
                u = usage_anthropic(Node(usage, node.source, node.line, ("toolUseResult", "usage")))
            except TraceError:  # a summary copy: never worth failing the read for
                u = None
            if u is not None:
                entry["final_usage"] = {"input_tokens": u.input_tokens, "cache_read_tokens": u.cache_read_tokens,
                                        "cache_write_tokens": u.cache_write_tokens,
                                        "cache_write_1h_tokens": u.cache_write_1h_tokens,
                                        "output_tokens": u.output_tokens}
        s.subagents[result["agentId"]] = entry
    for m in out:
        if m.role == "summary":
            s.flush()
        s.add(m)


COMPACTION_AGENT = "acompact"  # the agentId prefix of a compaction's summarising call (2.1.3x on)


def _epoch(ts: str | None) -> float | None:
    from ctxsim.model import parse_ts

    try:
        return parse_ts(ts) if ts else None
    except ValueError:
        return None


def link_compaction_calls(sessions: list[Session]) -> list[Session]:
    """Each `acompact` sidechain linked to the compaction it wrote: the first compaction of its Claude Code
    session logged at or after its last line (the boundary is written once the summary is back), else the
    nearest before it. A compaction takes one call."""
    calls = [s for s in sessions if str(s.extra.get("agent_id") or "").startswith(COMPACTION_AGENT)]
    if not calls:
        return sessions
    parts = []  # (time of its compaction, the part the compaction starts)
    for s in sessions:
        event = next((e for e in s.events if e.name == "compaction"), None)
        if event is not None and s.extra.get("continues") and not s.extra.get("sidechain"):
            parts.append((_epoch(event.ts), s))
    updated: dict[str, dict[str, Any]] = {}
    taken: set[str] = set()
    for call in calls:
        extra = updated.setdefault(call.id, dict(call.extra))
        extra["compaction_call"] = True
        end = max((t for t in (m.ts_s if m.ts else None for m in call.messages) if t is not None), default=None)
        own = [(t, p) for t, p in parts if p.extra.get("claude_session_id") == call.extra.get("claude_session_id")
               and p.id not in taken]
        if end is None or not own:
            continue
        later = [(t, p) for t, p in own if t is not None and t >= end]
        earlier = [(t, p) for t, p in own if t is not None and t < end]
        chosen = min(later, key=lambda tp: (tp[0], tp[1].id))[1] if later else \
            max(earlier, key=lambda tp: (tp[0], tp[1].id))[1] if earlier else None
        if chosen is None:
            continue
        taken.add(chosen.id)
        extra["compaction_of"] = chosen.extra.get("continues")
        updated.setdefault(chosen.id, dict(chosen.extra))["compaction_call_session"] = call.id
    return [replace(s, extra=frozen(updated[s.id])) if s.id in updated else s for s in sessions]


def link(sessions: list[Session]) -> list[Session]:
    """Link subagent sessions to the parent's Task call and compaction calls to their compaction; repair a
    placeholder final output; count a response that appears in two files once."""
    sessions = link_compaction_calls(sessions)
    parents: dict[str, tuple[Session, dict[str, Any]]] = {}
    for s in sessions:
        for agent, entry in (s.extra.get("subagents") or {}).items():
            parents[agent] = (s, entry)
    seen: set[tuple[str, str]] = set()
    out = []
    for s in sessions:
        messages = list(s.messages)
        changed = False
        for i, m in enumerate(messages):
            key = (m.extra.get("request_id"), m.extra.get("message_id"))
            if m.role != "assistant" or key == (None, None) or m.usage is None:
                continue
            if key in seen:
                messages[i] = replace(m, usage=None, extra=frozen({**m.extra, "copy_of_counted_response": True}))
                changed = True
            seen.add(key)  # type: ignore[arg-type]
        extra = dict(s.extra)
        agent = extra.get("agent_id")
        if agent in parents:
            parent, entry = parents[agent]
            extra["parent_session"] = parent.id
            extra["parent_tool_call_id"] = entry.get("tool_call_id")
            final = entry.get("final_usage")
            last = next((j for j in range(len(messages) - 1, -1, -1) if messages[j].role == "assistant"), None)
            if final and last is not None and messages[last].usage is not None:
                u = messages[last].usage
                assert u is not None
                same_prompt = (u.input_tokens, u.cache_read_tokens) == (final["input_tokens"],
                                                                        final["cache_read_tokens"])
                if same_prompt and final["output_tokens"] > u.output_tokens:
                    repaired = {k: v for k, v in u.extra.items() if k != "output_placeholder"}
                    messages[last] = replace(messages[last], usage=replace(u, output_tokens=final["output_tokens"],
                                                                           extra=repaired),
                                             extra=frozen({**messages[last].extra, "output_from_parent": True}))
                    changed = True
            out.append(replace(s, messages=tuple(messages), extra=frozen(extra)))
        else:
            out.append(replace(s, messages=tuple(messages)) if changed else s)
    return out


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 20)
    if refusal:
        return refusal
    if any(isinstance(r.get("message"), dict) and "parts" in r["message"] for r in records):
        return "Gemini-style message parts ({role, parts}): Qwen Code's chat records (qwen-code)"
    for record in records:
        kind = record.get("type")
        if ((kind in ("user", "assistant", "system") and "message" in record) or kind == "system") \
                and ("sessionId" in record or "uuid" in record or "parentUuid" in record):
            return None
        if kind in ("queue-operation", "file-history-snapshot") and ("sessionId" in record or "snapshot" in record):
            return None
        if kind == "summary" and "leafUuid" in record:
            return None
    return "no Claude Code lines (type user/assistant/system with sessionId, uuid and message) in the first lines"


ABOUT = {
    "reads": "Claude Code session JSONL: one line per message part, subagent (sidechain) files, compactions",
    "location": "~/.claude/projects/<escaped project path>/<session id>.jsonl (subagents: agent-*.jsonl, or "
                "<session id>/subagents/ in newer versions)",
    "records": "every message with its time; per API response the model and Anthropic usage (input, cache read, "
               "5-minute and 1-hour cache writes, output), split over several lines; compaction boundaries with "
               "the summary and the tokens before; subagent sessions; 2.1.3x on: an automatic compaction's "
               "summarising call (subagents/agent-acompact-*.jsonl), linked to its compaction",
    "cannot_know": "the system prompt and tool definitions (not logged); the compaction call's own usage before "
                   "2.1.3x; what the product re-attaches after a compaction (files, todo list, plan); "
                   "the last response of a file cut short (placeholder output counts); cost (not recorded)",
    "checked": "Claude Code 2.0.72, 2.1.1, 2.1.39 and 2.1.49 session files (public sessions), 2.1.x subagent files",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover): CLAUDE_CONFIG_DIR (a comma-separated list of
# config folders) replaces the two defaults, as in Claude Code and ccusage.
DISCOVERY = {"env": "CLAUDE_CONFIG_DIR", "env_suffix": "projects",
             "folders": ("~/.config/claude/projects", "~/.claude/projects"), "files": "**/*.jsonl"}

register(FormatInfo(name=NAME, description="Claude Code session JSONL (~/.claude/projects/*/*.jsonl), subagent files",
                    sniff=sniff, module=__name__, parse=parse, link=link))
