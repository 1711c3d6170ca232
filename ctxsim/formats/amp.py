"""`amp`: Amp (Sourcegraph) threads (`~/.local/share/amp/threads/T-<uuid>.json`).

One JSON document a thread: `{v, id: "T-...", created (ms), title, env: {initial: {cwd, trees}},
messages: [...], usageLedger?}`. What the reader maps:

- a `user` message's `text` blocks are the user message and its `tool_result` blocks
  `{toolUseID, run: {status, result | progress}}` the results of the calls they name (`status`
  error, cancelled or rejected-by-user is an error);
- an `assistant` message is one model response: `text` blocks its text, `thinking` blocks its
  thinking, `tool_use` blocks `{id, name, input}` its calls, and its `usage`;
- `info` messages (a summary Amp shows, a thread handoff) are not sent as such: skipped, counted.

Usage (`usage {model, inputTokens, outputTokens, cacheCreationInputTokens, cacheReadInputTokens,
totalTokens}`, Anthropic's convention: `inputTokens` without the cache), so the prompt is
`inputTokens + cacheReadInputTokens + cacheCreationInputTokens`. Older threads keep the counts in
`usageLedger.events[] {toMessageId, model, tokens {input, output}}` instead: used for a response
that has no `usage`. Cost is not recorded (Amp bills credits).
"""

from __future__ import annotations

import json
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import SessionBuilder, arguments_of
from ctxsim.formats._sniff import sniff_json_object_text
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "amp"
ERRORS = {"error", "cancelled", "rejected-by-user"}

ABOUT = {
    "reads": "Amp threads (one JSON a thread: messages with Anthropic-style blocks, per response usage)",
    "location": "~/.local/share/amp/threads/T-<uuid>.json",
    "records": "every message (text, thinking, tool use and results); per response the model and usage (input, "
               "cache reads and writes, output); the thread's folder",
    "cannot_know": "the system prompt and tool definitions (not saved); cost in dollars (Amp bills credits); times "
                   "of messages without meta.sentAt",
    "checked": "Amp thread files as third-party readers document them (ccusage, session resumers): current "
               "messages[].usage and the older usageLedger",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.local/share/amp/threads",), "files": "T-*.json"}


def _usage(usage: Node) -> Usage | None:
    uncached = usage.count("inputTokens") or 0
    read = usage.count("cacheReadInputTokens") or 0
    write = usage.count("cacheCreationInputTokens") or 0
    output = usage.count("outputTokens") or 0
    if not (uncached or read or write or output):
        return None
    return Usage(uncached + read + write, read, write, 0, output)


def _result_text(run: Node | None) -> str:
    if run is None:
        return ""
    for key in ("result", "progress"):
        value = run.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("output"), str):
            return str(value["output"])
        if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
            return "\n".join(value)
        if value is not None:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return ""


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    doc = source.document(stream)
    if not doc.is_obj():
        raise doc.fail(f"expected an Amp thread {{id, messages}}, got {kind_of(doc.value)}")
    thread_id = doc.string("id") or source.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    builder = SessionBuilder(thread_id, source=NAME, ts=doc.ts("created"))
    env = doc.obj("env")
    initial = env.obj("initial") if env else None
    cwd = initial.string("cwd") if initial else None
    if cwd:
        builder.extra["cwd"] = cwd
    ledger: dict[Any, Node] = {}
    usage_ledger = doc.obj("usageLedger")
    for event in usage_ledger.array("events") if usage_ledger else []:
        if event.is_obj() and isinstance(event.get("toMessageId"), (int, str)):
            ledger[event.get("toMessageId")] = event
    skipped: dict[str, int] = {}
    for message in doc.array("messages", required=True):
        if not message.is_obj():
            raise message.fail("must be a message (an object)")
        role = message.string("role")
        meta = message.obj("meta")
        ts = meta.ts("sentAt") if meta else None
        if role == "assistant":
            texts, thinking, calls = [], [], []
            for block in message.array("content"):
                kind = block.get("type")
                if kind == "text":
                    texts.append(block.string("text") or "")
                elif kind == "thinking":
                    thinking.append(block.string("thinking") or "")
                elif kind == "tool_use":
                    calls.append(ToolCall(block.string("id", required=True) or "", block.string("name") or "unknown",
                                          arguments_of(block.get("input"))))
                else:
                    skipped[f"assistant {kind} blocks"] = skipped.get(f"assistant {kind} blocks", 0) + 1
            usage_node = message.obj("usage")
            usage = _usage(usage_node) if usage_node is not None else None
            model = usage_node.string("model") if usage_node is not None else None
            message_id = message.get("messageId")
            if usage is None and isinstance(message_id, (int, str)) and message_id in ledger:
                event = ledger[message_id]
                tokens = event.obj("tokens")
                if tokens is not None:
                    usage = _usage(Node({"inputTokens": tokens.get("input"), "outputTokens": tokens.get("output")},
                                        source, tokens.line, tokens.path))
                model = model or event.string("model")
            if ts is None and usage_node is not None:
                ts = usage_node.ts("timestamp")
            builder.add(Message("assistant", "\n".join(t for t in texts if t), ts=ts,
                                thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls),
                                usage=usage, model=split_model(model)[1], line=message.line))
        elif role == "user":
            texts = []
            for block in message.array("content"):
                kind = block.get("type")
                if kind == "text":
                    texts.append(block.string("text") or "")
                elif kind == "tool_result":
                    call_id = block.string("toolUseID") or block.string("tool_use_id") or ""
                    run = block.obj("run")
                    status = run.string("status") if run else None
                    builder.add(Message("tool", _result_text(run), ts=ts, tool_call_id=call_id,
                                        is_error=status in ERRORS, line=message.line))
                else:
                    skipped[f"user {kind} blocks"] = skipped.get(f"user {kind} blocks", 0) + 1
            if texts:
                builder.add(Message("user", "\n".join(texts), ts=ts, line=message.line))
        else:
            skipped[f"{role} messages"] = skipped.get(f"{role} messages", 0) + 1
    model = next((m.model for m in builder.messages if m.model), None)
    builder.header.update(model=model, provider=split_model(model)[0])
    if skipped:
        source.note("skipped (not sent to the model as such): " + ", ".join(
            f"{n} {k}" for k, n in sorted(skipped.items())))
    if builder.orphans:
        source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
    return [builder.build()] if builder.messages else []


def sniff(head: bytes) -> str | None:
    text, why = sniff_json_object_text(head)
    if why is not None:
        return why
    compact = "".join(text.split())
    if '"id":"T-' in compact and '"messages":[' in compact and ('"created":' in compact or '"v":' in compact):
        return None
    return "no Amp thread keys ({id: T-..., created, messages}) in the first bytes"


register(FormatInfo(name=NAME, description="Amp threads (~/.local/share/amp/threads/T-*.json)",
                    sniff=sniff, module=__name__, parse=parse))
