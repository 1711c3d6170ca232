"""`pi`: Pi coding agent session files (`~/.pi/agent/sessions/<folder>/<time>_<session id>.jsonl`).

One entry a line. The first is the session header `{type: "session", version, id, timestamp, cwd}`
(version 3 today); every other entry has an `id` and the `parentId` of the entry it follows, so a
session is a tree (the user can go back and branch). The conversation read is the current branch:
the path from the last entry back to the root; the entries of abandoned branches are counted in the
notes. What the reader maps:

- `message` entries carry one of Pi's agent messages: `user` (content a string or text / image
  blocks), `assistant` (content blocks `text`, `thinking`, `toolCall {id, name, arguments}`, with
  `provider`, `model`, `usage` and `stopReason`), `toolResult {toolCallId, toolName, content, isError}`
  (the tool result), `bashExecution {command, output}` (a command the user ran, sent as a user message
  unless `excludeFromContext`); other roles are skipped and counted;
- `custom_message` entries (an extension's message, sent as a user message) and `branch_summary`
  entries (the summary of the branch left, sent as context) become user messages;
- `compaction {summary, firstKeptEntryId, tokensBefore}` ends the session part: the next part
  starts with a `compaction` event, the summary, and the messages kept from `firstKeptEntryId` on;
- `model_change`, `thinking_level_change`, `label`, `session_info` and `custom` entries are not sent.

Usage (`usage {input, output, cacheRead, cacheWrite, totalTokens, cost {..., total}}`): Pi stores
`input` without the cache (it subtracts the cached part for the providers that include it), so the
prompt is `input + cacheRead + cacheWrite`; `output` includes the reasoning; `cost.total` is Pi's
recorded cost (USD).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import IO, Any

from ctxsim.errors import TraceError
from ctxsim.formats import IMAGE_FALLBACK_TOKENS, FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen, restated
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "pi"
NOT_SENT = {"model_change", "thinking_level_change", "label", "session_info", "custom"}

ABOUT = {
    "reads": "Pi coding agent session JSONL (version 1 to 3: a session header, then message, compaction, "
             "branch_summary, custom_message, model_change ... entries linked by id and parentId)",
    "location": "~/.pi/agent/sessions/<folder of the working directory>/<time>_<session id>.jsonl "
                "($PI_CODING_AGENT_DIR replaces ~/.pi/agent)",
    "records": "the session tree (the current branch is read); per response the model, usage {input, output, cache "
               "read and write} and its cost; tool calls with their results; compactions with the summary, the "
               "first kept entry and the size before",
    "cannot_know": "the system prompt and tool definitions (not saved); times of a response's parts",
    "checked": "Pi session files version 3 (pi-mono's session format: entries in a tree, compactions); versions 1-2 "
               "in order",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"env": "PI_CODING_AGENT_DIR", "env_suffix": "sessions", "folders": ("~/.pi/agent/sessions",),
             "files": "*/*.jsonl"}


def _text(node: Node) -> tuple[str, int]:
    """A content string or block list as text, plus tokens for images."""
    value = node.value
    if isinstance(value, str):
        return value, 0
    texts: list[str] = []
    images = 0
    for block in node.items() if isinstance(value, list) else []:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block.get("text"))
        elif kind == "image":
            images += IMAGE_FALLBACK_TOKENS
    return "\n".join(texts), images


def _usage(usage: Node) -> Usage | None:
    uncached = usage.count("input") or 0
    read = usage.count("cacheRead") or 0
    write = usage.count("cacheWrite") or 0
    output = usage.count("output") or 0
    if not (uncached or read or write or output):
        return None  # an aborted or failed request: no usage came back
    extra: dict[str, Any] = {}
    cost = usage.obj("cost")
    total = cost.get("total") if cost is not None else None
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        try:
            recorded = Decimal(repr(total) if isinstance(total, float) else str(total))
        except InvalidOperation:
            recorded = None
        if recorded is not None and recorded.is_finite() and recorded >= 0:
            extra["cost_usd"] = format(recorded, "f")
    return Usage(uncached + read + write, read, write, 0, output, extra=frozen(extra))


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.skipped: dict[str, int] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def messages(self, entry: Node) -> list[Message]:
        """The canonical messages of one entry on the branch (none for entries not sent to the model)."""
        kind = entry.get("type") if isinstance(entry.get("type"), str) else "untyped"
        ts = entry.ts("timestamp")
        if kind == "custom_message":
            text, images = _text(entry.child("content"))
            return [Message("user", text, ts=ts, extra_tokens=images, line=entry.line)]
        if kind == "branch_summary":
            return [Message("user", entry.string("summary") or "", ts=ts, line=entry.line,
                            extra=frozen({"branch_summary": True}))]
        if kind != "message":
            self.skip(f"{kind} entries" if kind in NOT_SENT else f"unknown entry type {kind!r}")
            return []
        message = entry.obj("message", required=True)
        assert message is not None
        role = message.string("role")
        if role == "user":
            text, images = _text(message.child("content"))
            return [Message("user", text, ts=ts, extra_tokens=images, line=entry.line)]
        if role == "assistant":
            texts, thinking, calls = [], [], []
            for block in message.array("content"):
                kind = block.get("type")
                if kind == "text":
                    texts.append(block.string("text") or "")
                elif kind == "thinking":
                    thinking.append(block.string("thinking") or "")
                elif kind == "toolCall":
                    calls.append(ToolCall(block.string("id", required=True) or "", block.string("name") or "unknown",
                                          arguments_of(block.get("arguments"))))
                else:
                    self.skip(f"assistant {kind} blocks")
            usage_node = message.obj("usage")
            usage = _usage(usage_node) if usage_node is not None else None
            stop = message.string("stopReason")
            return [Message("assistant", "\n".join(t for t in texts if t), ts=ts,
                            thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls), usage=usage,
                            model=split_model(message.string("model"))[1], line=entry.line,
                            extra=frozen({"stop_reason": stop} if stop in ("error", "aborted") else None))]
        if role == "toolResult":
            text, images = _text(message.child("content"))
            return [Message("tool", text, ts=ts, tool_call_id=message.string("toolCallId", required=True),
                            name=message.string("toolName"), is_error=message.get("isError") is True,
                            extra_tokens=images, line=entry.line)]
        if role == "bashExecution":
            if message.get("excludeFromContext"):
                self.skip("bash executions left out of the context")
                return []
            text = f"Ran `{message.string('command') or ''}`\n{message.string('output') or ''}"
            return [Message("user", text, ts=ts, line=entry.line, extra=frozen({"bash_execution": True}))]
        self.skip(f"{role} messages")
        return []


def _branch(entries: list[Node]) -> tuple[list[Node], int]:
    """The current branch (root to the last entry) and how many entries are off it."""
    by_id = {e.get("id"): e for e in entries if e.is_obj() and isinstance(e.get("id"), str)}
    if not entries:
        return [], 0
    if len(by_id) < len(entries) or not all("parentId" in e for e in entries):
        return entries, 0  # version 1 files: no tree, the entries in order
    path: list[Node] = []
    seen: set[str] = set()
    node: Node | None = entries[-1]
    while node is not None and node.get("id") not in seen:  # every id is a string here (by_id holds them all)
        seen.add(node.get("id"))
        path.append(node)
        parent = node.get("parentId")
        node = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return path, len(entries) - len(path)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    header: Node | None = None
    entries: list[Node] = []
    for node in source.jsonl(stream):
        if node.get("type") == "session" and header is None:
            header = node
        else:
            entries.append(node)
    if header is None:
        raise TraceError(source.path, 1, "no Pi session header ({type: session, version, id, timestamp, cwd})")
    session_id = header.string("id") or source.path.rsplit("/", 1)[-1].split(".", 1)[0]
    base = {"source": NAME, "ts": header.ts("timestamp")}
    reader = _Reader(source)
    branch, off = _branch(entries)
    builders = [SessionBuilder(session_id, **base)]
    cwd = header.string("cwd")
    if cwd:
        builders[0].extra["cwd"] = cwd
    if isinstance(header.get("parentSession"), str):
        builders[0].extra["forked_from"] = header.get("parentSession")
    sent: list[tuple[Any, list[Message]]] = []  # (entry id, its messages) of the current part, in order
    compactions = 0
    for entry in branch:
        if not entry.is_obj():
            raise entry.fail("must be a session entry (an object)")
        if entry.get("type") == "compaction":
            compactions += 1
            previous = builders[-1]
            builder = SessionBuilder(f"{session_id}/part-{len(builders) + 1}", **base)
            builder.extra.update({k: v for k, v in previous.extra.items() if k != "continues"})
            builder.extra["continues"] = previous.id
            builder.event("compaction", entry.ts("timestamp"), pre_tokens=entry.count("tokensBefore"))
            builder.add(Message("summary", entry.string("summary") or "", ts=entry.ts("timestamp"), line=entry.line))
            first_kept = entry.get("firstKeptEntryId")
            ids = [i for i, _ in sent]
            kept = sent[ids.index(first_kept):] if first_kept in ids else []
            for _, messages in kept:
                for message in messages:  # sent again, not made again: a kept response is no new request
                    builder.add(restated(message) if message.role == "assistant" else message)
            sent = list(kept)
            builders.append(builder)
            continue
        messages = reader.messages(entry)
        for message in messages:
            builders[-1].add(message)
        if messages:
            sent.append((entry.get("id"), messages))
    out = []
    for builder in builders:
        model = next((m.model for m in builder.messages if m.model), None)
        builder.header.update(model=model, provider=split_model(model)[0])
        if builder.messages or builder.events:
            out.append(builder.build())
    if off:
        source.note(f"{off} entr(y/ies) on abandoned branches of the session tree left out (the current branch "
                    "is read)")
    if compactions:
        source.note(f"{compactions} compaction(s): each continues with the summary and the kept messages")
    if reader.skipped:
        source.note("skipped (not sent to the model): " + ", ".join(
            f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    if any(b.orphans for b in builders):
        source.note(f"{sum(b.orphans for b in builders)} tool result(s) without their call kept as user messages")
    return out


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 5)
    if refusal:
        return refusal
    first = records[0] if records else {}
    if first.get("type") == "session" and "cwd" in first and "timestamp" in first and "id" in first \
            and not {"source", "model", "provider", "system"} & first.keys():
        return None
    return "no Pi session header ({type: session, version, id, timestamp, cwd}) on the first line"


register(FormatInfo(name=NAME, description="Pi coding agent sessions (~/.pi/agent/sessions/*/*.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
