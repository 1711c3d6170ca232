"""`kimi-cli`: Kimi CLI wire logs (`~/.kimi/sessions/<group>/<session id>/wire.jsonl`).

The first line is `{type: "metadata", protocol_version}`; every other line is one wire message
`{timestamp, message: {type, payload}}` as Kimi CLI sent it to its UI (its `kimi_cli.wire.types`).
What the reader maps, in the order written:

- `TurnBegin {user_input}` and `SteerInput {user_input}`: a user message (a string, or content parts);
- `StepBegin {n}`: a new model response (one request); its `ContentPart`s (`{type: text, text}`,
  `{type: think, think}`) are its text and thinking, concatenated in order (a part streamed in
  pieces reads whole), its `ToolCall {id, function: {name, arguments}}` its calls (a following
  `ToolCallPart {arguments_part}` continues the last call's arguments);
- `StatusUpdate {token_usage}`: the usage of the current step's response;
- `ToolResult {tool_call_id, return_value: {is_error, output, message}}`: a tool result;
- `CompactionBegin`: a compaction (its summary is kept in `context.jsonl`, not in the wire log:
  the event is marked, the summary's size unknown);
- a sub-agent's events (`SubagentEvent`) and the events not sent to the model (`TurnEnd`, hooks,
  MCP loading, approvals, notifications ...) are skipped and counted.

Usage (`token_usage`, kosong's `TokenUsage`): `input_other` is the input outside the cache, so the
prompt is `input_other + input_cache_read + input_cache_creation`; `output` the output. The model
and cost are not in the wire log.
"""

from __future__ import annotations

import json
from typing import IO

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "kimi-cli"

ABOUT = {
    "reads": "Kimi CLI wire logs (wire.jsonl: a metadata line, then TurnBegin, StepBegin, ContentPart, ToolCall, "
             "ToolResult, StatusUpdate ... messages)",
    "location": "~/.kimi/sessions/<group>/<session id>/wire.jsonl",
    "records": "every user input, each step's text, thinking and tool calls, tool results, and per step the token "
               "usage (input outside the cache, cache reads and writes, output); compaction points",
    "cannot_know": "the system prompt and tool definitions; the model and cost (not in the wire log); a "
                   "compaction's summary (kept in context.jsonl)",
    "checked": "Kimi CLI wire protocol 1.x (the message types of kimi_cli.wire.types and its wire file)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.kimi/sessions",), "files": "*/*/wire.jsonl"}


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text")) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "" if value is None else json.dumps(value, ensure_ascii=False)


class _Step:
    def __init__(self, ts: str | None, line: int | None) -> None:
        self.ts = ts
        self.line = line
        self.text: list[str] = []
        self.think: list[str] = []
        self.calls: list[list[str]] = []  # [id, name, arguments so far]
        self.usage: Usage | None = None

    def message(self) -> Message:
        calls = tuple(ToolCall(i, n or "unknown", arguments_of(a) if a else {}) for i, n, a in self.calls)
        return Message("assistant", "".join(self.text), ts=self.ts, thinking="".join(self.think) or None,
                       tool_calls=calls, usage=self.usage, line=self.line)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0]
    if stem == "wire" and source.path.count("/"):
        stem = source.path.rsplit("/", 2)[-2]  # <session id>/wire.jsonl
    builder = SessionBuilder(stem, source=NAME)
    items: list[Message | _Step] = []
    step: _Step | None = None
    skipped: dict[str, int] = {}
    compactions = 0
    for node in source.jsonl(stream):
        if node.get("type") == "metadata":
            version = node.string("protocol_version")
            if version:
                builder.extra["wire_protocol_version"] = version
            continue
        message = node.obj("message")
        if message is None:
            skipped["lines without a message"] = skipped.get("lines without a message", 0) + 1
            continue
        kind = message.string("type") or ""
        payload = message.obj("payload") or Node({}, source, node.line, (*node.path, "payload"))
        ts = node.ts("timestamp")  # unix seconds
        if builder.header.get("ts") is None and ts:
            builder.header["ts"] = ts
        if kind in ("TurnBegin", "SteerInput"):
            step = None
            items.append(Message("user", _text(payload.get("user_input")), ts=ts, line=node.line))
        elif kind == "StepBegin":
            step = _Step(ts, node.line)
            items.append(step)
        elif kind == "ContentPart" and step is not None:
            part_kind = payload.get("type")
            if part_kind == "text":
                step.text.append(payload.string("text") or "")
            elif part_kind == "think":
                step.think.append(payload.string("think") or "")
            else:
                skipped[f"{part_kind} parts"] = skipped.get(f"{part_kind} parts", 0) + 1
        elif kind == "ToolCall" and step is not None:
            function = payload.obj("function")
            name = function.string("name") if function else None
            arguments = function.get("arguments") if function else None
            step.calls.append([payload.string("id", required=True) or "", name or "",
                               arguments if isinstance(arguments, str) else ""])
        elif kind == "ToolCallPart" and step is not None and step.calls:
            step.calls[-1][2] += payload.string("arguments_part") or ""
        elif kind == "StatusUpdate":
            usage = payload.obj("token_usage")
            if usage is not None and step is not None:
                other = usage.count("input_other") or 0
                read = usage.count("input_cache_read") or 0
                write = usage.count("input_cache_creation") or 0
                output = usage.count("output") or 0
                if other or read or write or output:
                    step.usage = Usage(other + read + write, read, write, 0, output)
        elif kind == "ToolResult":
            value = payload.obj("return_value")
            body = value.get("output") if value else None
            text = _text(body) or (value.string("message") if value else None) or ""
            items.append(Message("tool", text, ts=ts, tool_call_id=payload.string("tool_call_id", required=True),
                                 is_error=bool(value and value.get("is_error")), line=node.line))
        elif kind == "CompactionBegin":
            compactions += 1
            items.append(Message("summary", "", ts=ts, line=node.line))
        else:
            skipped[kind or "untyped"] = skipped.get(kind or "untyped", 0) + 1
    for item in items:
        if isinstance(item, _Step):
            if item.text or item.think or item.calls or item.usage is not None:
                builder.add(item.message())  # else a step interrupted before anything came back
        elif item.role == "summary":
            builder.event("compaction", item.ts)
        else:
            builder.add(item)
    if compactions:
        source.note(f"{compactions} compaction(s): their summaries are in context.jsonl, not in the wire log "
                    "(marked, size unknown)")
    if skipped:
        source.note("skipped (not sent to the model): " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    if builder.orphans:
        source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
    return [builder.build()] if builder.messages else []


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 5)
    if refusal:
        return refusal
    for record in records:
        message = record.get("message")
        if record.get("type") == "metadata" and "protocol_version" in record:
            return None
        if isinstance(message, dict) and isinstance(message.get("payload"), dict) and message.get("type") in (
                "TurnBegin", "StepBegin", "ContentPart", "StatusUpdate", "ToolCall", "ToolResult"):
            return None
    return "no Kimi CLI wire lines ({type: metadata, protocol_version} or {timestamp, message: {type, payload}})"


register(FormatInfo(name=NAME, description="Kimi CLI wire logs (~/.kimi/sessions/*/*/wire.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
