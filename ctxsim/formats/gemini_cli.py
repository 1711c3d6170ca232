"""`gemini-cli`: Gemini CLI saved chats (`~/.gemini/tmp/<project hash>/chats/session-*.json`).

Two shapes of the same `ConversationRecord`:

- one JSON object `{sessionId, projectHash, startTime, lastUpdated, messages[]}` (up to early 2026);
- the append-only `.jsonl` (since 2026-04): a metadata line, then one message record a line,
  `{"$set": {...}}` metadata updates (one carrying `messages` is a checkpoint: the whole history
  again) and `{"$rewindTo": "<message id>"}` markers, which cut the history back to (and without)
  that message. A message is written again under the same `id` when it changes (a response once its
  tool calls have finished, with their results): the later line replaces the earlier one in its
  place, so each message is counted once, in its last version.

What the reader maps: a `user` message is a user message (its content a string or Gemini
`Part`s: text parts joined, inline images counted at Gemini's 258 tokens each); a `gemini`
message is one model response: its `content` the text, `thoughts[]` (summaries: subject and
description) kept as `thought_summaries` in the message's extra, not as thinking (Gemini CLI
leaves thought parts out of the history it sends back, so a replay must not carry them),
`toolCalls[]` the calls (`id`, `name`, `args`), and each call's
`result` (`functionResponse.response.output` or `.error`) the tool result that follows it.
`info`, `error` and `warning` messages are shown to the user only: skipped and counted.

Usage (`tokens`): `input` is Gemini's `promptTokenCount` (the cached part included),
`cached` its `cachedContentTokenCount`, `output` the candidates, `thoughts` the thinking
tokens (billed as output), `tool` the tool-use prompt (billed as input), and
`total = input + output + thoughts + tool`. So the inclusive prompt is `input + tool`, the
output `output + thoughts` (`reasoning_tokens` the thoughts).
"""

from __future__ import annotations

import json
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "gemini-cli"
GEMINI_IMAGE_TOKENS = 258  # an image up to 384 px a side (ai.google.dev "image understanding" docs)
SILENT_TYPES = {"info", "error", "warning"}

ABOUT = {
    "reads": "Gemini CLI saved chats: one ConversationRecord JSON, or the newer append-only JSONL "
             "(metadata line, message lines, $set updates, $rewindTo markers)",
    "location": "~/.gemini/tmp/<project hash>/chats/session-*.json (session-*.jsonl since 2026-04)",
    "records": "every user and gemini message with its time; per response tokens {input, output, cached, "
               "thoughts, tool, total}, the model, thought summaries, tool calls with their results",
    "cannot_know": "the system prompt and tool definitions (not saved); the requests Gemini CLI makes outside "
                   "the chat (next-speaker checks, loop detection, compression summaries); the full thoughts "
                   "(only summaries); cost (not recorded)",
    "checked": "Gemini CLI saved chats of 2025 (a public chat, JSON) and the JSONL of 2026-04 on (Gemini CLI's "
               "chatRecordingService: messages rewritten under their id, $set checkpoints, $rewindTo)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.gemini/tmp",), "files": "*/chats/session-*.json*"}


def _parts(node: Node) -> tuple[str, int]:
    """A PartListUnion (a string, a Part or an array of them) as text, plus tokens for images."""
    value = node.value
    if value is None:
        return "", 0
    if isinstance(value, str):
        return value, 0
    items = node.items() if isinstance(value, list) else [node]
    texts: list[str] = []
    extra = 0
    for part in items:
        v = part.value
        if isinstance(v, str):
            texts.append(v)
        elif not isinstance(v, dict):
            raise part.fail("must be a Part (an object) or a string")
        elif isinstance(v.get("text"), str):
            if not v.get("thought"):
                texts.append(v["text"])
        elif "inlineData" in v or "fileData" in v:
            extra += GEMINI_IMAGE_TOKENS
        elif isinstance(v.get("functionResponse"), dict):
            texts.append(_response_text(v["functionResponse"]))
        else:
            texts.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(t for t in texts if t), extra


def _response_text(response: dict[str, Any]) -> str:
    body = response.get("response")
    if isinstance(body, dict):
        for key in ("output", "error"):
            if isinstance(text := body.get(key), str):
                return text
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return body if isinstance(body, str) else ""


def _usage(tokens: Node) -> Usage:
    prompt = tokens.count("input") or 0
    tool = tokens.count("tool") or 0
    cached = min(tokens.count("cached") or 0, prompt + tool)
    output = tokens.count("output") or 0
    thoughts = tokens.count("thoughts") or 0
    extra = {"reasoning_tokens": thoughts} if thoughts else {}
    return Usage(prompt + tool, cached, 0, 0, output + thoughts, extra=frozen(extra))


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.skipped: dict[str, int] = {}

    def messages(self, record: Node) -> list[Message]:
        """The canonical messages of one MessageRecord (a response and its tool results)."""
        kind = record.string("type") or "untyped"
        ts = record.ts("timestamp")
        if kind == "user":
            text, extra = _parts(record.child("content"))
            return [Message("user", text, ts=ts, extra_tokens=extra)]
        if kind != "gemini":  # info, error, warning (shown to the user only), or a type this reader does not know
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
            return []
        text, extra = _parts(record.child("content"))
        thoughts = []
        for thought in record.array("thoughts"):
            if thought.is_obj():
                subject, description = thought.string("subject") or "", thought.string("description") or ""
                thoughts.append(f"{subject}: {description}" if subject and description else subject or description)
        calls: list[ToolCall] = []
        results: list[Message] = []
        for n, call in enumerate(record.array("toolCalls")):
            if not call.is_obj():
                raise call.fail("must be a tool call (an object)")
            call_id = call.string("id") or f"{record.string('id') or 'call'}-{n}"
            name = call.string("name", required=True) or ""
            calls.append(ToolCall(call_id, name, arguments_of(call.get("args"))))
            result = call.child("result")
            if result.value is None:
                continue  # a call that never ran (cancelled before execution): no result was sent
            body, more = _parts(result)
            status = call.string("status")
            results.append(Message("tool", body, ts=call.ts("timestamp") or ts, tool_call_id=call_id, name=name,
                                   is_error=status in ("error", "cancelled"), extra_tokens=more))
        tokens = record.obj("tokens")
        _, model = split_model(record.string("model"))
        # the thought summaries are shown, not sent back: Gemini CLI keeps thought parts out of the history
        response = Message("assistant", text, ts=ts, tool_calls=tuple(calls),
                           usage=_usage(tokens) if tokens is not None else None, model=model, extra_tokens=extra,
                           extra=frozen({"thought_summaries": "\n".join(thoughts)} if thoughts else None))
        return [response, *results]


def _keep(records: dict[str, Node], record: Node) -> int:
    """Add a message line under its id; one whose id an earlier line has replaces it in its place (1), as
    Gemini CLI's reader does: the JSONL writes a response again, whole, once its tool calls finish."""
    ident = record.get("id") if record.is_obj() else None
    key = ident if isinstance(ident, str) else f"\0{len(records)}"
    again = key in records
    records[key] = record
    return int(again)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    nodes, whole = source.any_json(stream)
    reader = _Reader(source)
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    header: dict[str, Any] = {}
    records: list[Node] = []
    rewinds = rewritten = 0
    if not whole and len(nodes) == 1 and isinstance(nodes[0].get("messages"), list):
        whole = True  # the whole chat on one line
    if whole:
        doc = nodes[0]
        if not doc.is_obj():
            raise doc.fail("expected a Gemini CLI chat {sessionId, messages}")
        header = {k: doc.get(k) for k in ("sessionId", "projectHash", "startTime") if doc.get(k) is not None}
        header["startTime"] = doc.ts("startTime")
        records = list(doc.array("messages", required=True))
    else:
        by_id: dict[str, Node] = {}
        for node in nodes:
            if "$rewindTo" in node:
                target = node.get("$rewindTo")
                if not isinstance(target, str) or target not in by_id:
                    source.note(f"a rewind to an unknown message ({str(target)[:40]}) was ignored")
                else:
                    keys = list(by_id)
                    by_id = {k: by_id[k] for k in keys[:keys.index(target)]}
                    rewinds += 1
            elif "$set" in node:
                update = node.obj("$set")
                if update is not None:
                    header.update({k: v for k, v in update.value.items() if k in ("sessionId", "startTime")})
                    if isinstance(update.get("messages"), list):  # a checkpoint: the history as it now is
                        by_id = {}
                        for item in update.array("messages"):
                            rewritten += _keep(by_id, item)
            elif "type" in node and ("content" in node or "toolCalls" in node or "tokens" in node):
                rewritten += _keep(by_id, node)
            elif "sessionId" in node and not by_id:
                header.update({k: node.get(k) for k in ("sessionId", "projectHash") if node.get(k) is not None})
                header["startTime"] = node.ts("startTime")
            else:
                reader.skipped["unknown line"] = reader.skipped.get("unknown line", 0) + 1
        records = list(by_id.values())
    builder = SessionBuilder(str(header.get("sessionId") or stem), source=NAME, provider="google",
                             ts=header.get("startTime"))
    if header.get("projectHash"):
        builder.extra["project_hash"] = header["projectHash"]
    for record in records:
        if not record.is_obj():
            raise record.fail("must be a message record (an object)")
        for message in reader.messages(record):
            builder.add(message)
    model = next((m.model for m in builder.messages if m.model), None)
    builder.header["model"] = model
    builder.header["provider"] = split_model(model)[0] or "google"
    if rewritten:
        source.note(f"{rewritten} message line(s) rewrote an earlier message under its id (a response written "
                    "again once its tool calls finished): each message counted once, its last version kept")
    if rewinds:
        source.note(f"{rewinds} rewind(s): the messages after each rewind point were dropped, as Gemini CLI does")
    if reader.skipped:
        source.note("skipped messages not sent to the model (shown to the user only, or of a type this reader "
                    "does not know): " + ", ".join(
            f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    if builder.orphans:
        source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
    return [builder.build()] if builder.messages else []


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    if shape == "none":
        return str(first)  # the reason
    if shape in ("jsonl", "single") and isinstance(first, dict) and "projectHash" in first and "sessionId" in first:
        return None
    text = head_text(head)[:4000]
    if '"projectHash"' in text and '"sessionId"' in text and '"messages"' in text:
        return None
    return "no Gemini CLI chat keys (sessionId, projectHash, messages) in the first bytes"


register(FormatInfo(name=NAME, description="Gemini CLI saved chats (~/.gemini/tmp/<hash>/chats/session-*.json)",
                    sniff=sniff, module=__name__, parse=parse))
