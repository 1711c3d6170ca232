"""`qwen-code`: Qwen Code chat records (`~/.qwen/projects/<project folder>/chats/<session id>.jsonl`).

One `ChatRecord` a line: `{uuid, parentUuid, sessionId, timestamp, type, subtype?, cwd, version,
message?, usageMetadata?, model?, toolCallResult?, systemPayload?}`. The records form a tree by
`uuid` / `parentUuid` (a rewind goes back to an earlier record): the conversation read is the
current branch, from the last record back to the root (records off it are counted in the notes).
What the reader maps:

- `user` records: the user message (`message` is Gemini `Content {role, parts}`: text parts joined,
  inline images counted at a fixed size); `assistant` records: one model response (its text parts,
  `thought` parts as thinking, `functionCall` parts as calls `{id, name, args}`) with its
  `usageMetadata` and `model`; `tool_result` records: the `functionResponse` parts, each the result
  of its call;
- `system` records with `subtype: chat_compression`: a compaction; the next session part starts
  from `systemPayload.compressedHistory` (the summary turns and the kept tail, as Qwen Code sends
  them); other system records (telemetry, titles, slash commands ...) are not sent: skipped, counted;
- a sub-agent's records (`isSidechain`) are skipped and counted.

Usage (`usageMetadata`, Gemini's field names): `promptTokenCount` is the whole prompt (the cached
part included), `cachedContentTokenCount` the cache read, the output `candidatesTokenCount` plus
`thoughtsTokenCount` (the reasoning) unless `totalTokenCount` shows the candidates already hold it.
Cost is not recorded.
"""

from __future__ import annotations

import json
from typing import IO, Any

from ctxsim.formats import IMAGE_FALLBACK_TOKENS, FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "qwen-code"
TYPES = ("user", "assistant", "tool_result", "system")

ABOUT = {
    "reads": "Qwen Code chat records JSONL (user, assistant, tool_result and system records linked by uuid and "
             "parentUuid; Gemini-style message parts and usageMetadata)",
    "location": "~/.qwen/projects/<project folder>/chats/<session id>.jsonl",
    "records": "every message with its time as sent (Content parts); per response the model and usageMetadata "
               "(prompt, cached, candidates, thoughts); tool results; chat compressions with the history kept",
    "cannot_know": "the system prompt and tool definitions (not saved); cache writes and cost (not recorded)",
    "checked": "Qwen Code 0.x chat records (QwenLM/qwen-code's ChatRecord: uuid tree, chat_compression records)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.qwen/projects",), "files": "*/chats/*.jsonl"}


def _usage(meta: Node) -> Usage | None:
    prompt = meta.count("promptTokenCount") or 0
    cached = min(meta.count("cachedContentTokenCount") or 0, prompt)
    candidates = meta.count("candidatesTokenCount") or 0
    thoughts = meta.count("thoughtsTokenCount") or 0
    total = meta.count("totalTokenCount")
    if not (prompt or candidates or thoughts):
        return None
    output = candidates if thoughts and total == prompt + candidates else candidates + thoughts
    extra = {"reasoning_tokens": thoughts} if thoughts else {}
    return Usage(prompt, cached, 0, 0, output, extra=frozen(extra))


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return str(response[key])
        return json.dumps(response, ensure_ascii=False, separators=(",", ":"))
    return response if isinstance(response, str) else ""


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.skipped: dict[str, int] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def content(self, content: Node, ts: str | None, line: int | None, role: str,
                usage: Usage | None = None, model: str | None = None) -> list[Message]:
        """A Gemini Content's messages: a response (role model) or a user turn with its tool results."""
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        images = 0
        for n, part in enumerate(content.array("parts")):
            if not part.is_obj():
                continue
            if isinstance(part.get("text"), str):
                (thinking if part.get("thought") else texts).append(part.get("text"))
            elif isinstance(call := part.get("functionCall"), dict):
                calls.append(ToolCall(str(call.get("id") or f"call-{line}-{n}"), str(call.get("name") or "unknown"),
                                      arguments_of(call.get("args"))))
            elif isinstance(response := part.get("functionResponse"), dict):
                results.append(Message("tool", _response_text(response.get("response")), ts=ts,
                                       tool_call_id=str(response.get("id") or ""), name=response.get("name"),
                                       line=line))
            elif "inlineData" in part or "fileData" in part:
                images += IMAGE_FALLBACK_TOKENS
            else:
                self.skip("unknown parts")
        if role == "model":
            return [Message("assistant", "\n".join(texts), ts=ts, thinking="\n".join(thinking) if thinking else None,
                            tool_calls=tuple(calls), usage=usage, model=model, extra_tokens=images, line=line)]
        out = list(results)
        if texts or images or not results:
            out.append(Message("user", "\n".join(texts), ts=ts, extra_tokens=images, line=line))
        return out


def _branch(records: list[Node]) -> tuple[list[Node], int]:
    by_id = {r.get("uuid"): r for r in records if isinstance(r.get("uuid"), str)}  # all of them, else in order
    if not records or len(by_id) < len(records):
        return records, 0
    path: list[Node] = []
    seen: set[str] = set()
    node: Node | None = records[-1]
    while node is not None and node.get("uuid") not in seen:
        seen.add(node.get("uuid"))
        path.append(node)
        parent = node.get("parentUuid")
        node = by_id.get(parent) if isinstance(parent, str) else None
    if node is None and path[-1].get("parentUuid") not in (None, ""):
        return records, 0  # a parent outside the file (a cut or resumed file): read it in order
    path.reverse()
    return path, len(records) - len(path)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    reader = _Reader(source)
    records: list[Node] = []
    for node in source.jsonl(stream):
        if node.get("isSidechain") is True:
            reader.skip("sub-agent records")
        elif node.get("type") in TYPES:
            records.append(node)
        else:
            reader.skip(f"records of type {str(node.get('type'))[:30]!r}")
    branch, off = _branch(records)
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0]
    session_id = next((r.string("sessionId") for r in branch if r.string("sessionId")), None) or stem
    first = branch[0] if branch else None
    base: dict[str, Any] = {"source": NAME, "ts": first.ts("timestamp") if first else None}
    builders = [SessionBuilder(session_id, **base)]
    if first is not None:
        extra = {"cwd": first.string("cwd"), "qwen_code_version": first.string("version")}
        builders[0].extra.update({k: v for k, v in extra.items() if v})
    for record in branch:
        kind = record.get("type")
        ts = record.ts("timestamp")
        if kind == "system":
            payload = record.obj("systemPayload")
            if record.get("subtype") == "chat_compression" and payload is not None:
                previous = builders[-1]
                builder = SessionBuilder(f"{session_id}/part-{len(builders) + 1}", **base)
                builder.extra.update({k: v for k, v in previous.extra.items() if k != "continues"})
                builder.extra["continues"] = previous.id
                info = payload.obj("info")
                builder.event("compaction", ts, pre_tokens=info.count("originalTokenCount") if info else None)
                for kept in payload.array("compressedHistory"):
                    for message in reader.content(kept, ts, record.line, str(kept.get("role") or "user")):
                        # the kept history is sent again, not answered again: responses in it are no requests
                        builder.add(Message("summary", message.content, ts=ts, line=record.line)
                                    if message.role == "assistant" else message)
                builders.append(builder)
            else:
                reader.skip(f"system {record.get('subtype')} records")
            continue
        content = record.obj("message")
        if content is None:
            reader.skip(f"{kind} records without a message")
            continue
        if kind == "assistant":
            meta = record.obj("usageMetadata")
            usage = _usage(meta) if meta is not None else None
            messages = reader.content(content, ts, record.line, "model", usage,
                                      split_model(record.string("model"))[1])
        else:
            messages = reader.content(content, ts, record.line, "user")
        for m in messages:
            builders[-1].add(m)
    out = []
    for builder in builders:
        model = next((m.model for m in builder.messages if m.model), None)
        builder.header.update(model=model, provider=split_model(model)[0])
        if builder.messages or builder.events:
            out.append(builder.build())
    if off:
        source.note(f"{off} record(s) off the current branch (rewound) left out")
    if len(builders) > 1:
        source.note(f"{len(builders) - 1} chat compression(s): each part starts from the compressed history")
    if reader.skipped:
        source.note("skipped (not sent to the model): " + ", ".join(
            f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    return out


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 20)
    if refusal:
        return refusal
    for record in records:
        message = record.get("message")
        if record.get("type") in TYPES and "uuid" in record and "sessionId" in record and (
                (isinstance(message, dict) and isinstance(message.get("parts"), list))
                or record.get("type") == "tool_result" or "systemPayload" in record):
            return None
    return ("no Qwen Code chat records ({uuid, sessionId, type: user|assistant|tool_result|system, message: "
            "{parts}}) in the first lines")


register(FormatInfo(name=NAME, description="Qwen Code chat records (~/.qwen/projects/*/chats/*.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
