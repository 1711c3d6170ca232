"""`droid`: Factory's Droid CLI sessions (`~/.factory/sessions/<encoded project path>/<session id>.jsonl`).

Droid is closed source; this is its session file as third-party readers of it document it (session
browsers and usage trackers). One JSONL file a session: a first `{type: "session_start", id, title,
sessionTitle, owner, version, cwd}` line, then `{type: "message", id, timestamp, parentId?, message:
{role, content}}` lines whose content is Anthropic-style blocks (`text`, `thinking`, `tool_use` in an
assistant message; `text` and `tool_result` in a user one). Beside it, `<session id>.settings.json`
keeps the session's settings: `model`, `providerLock`, and `tokenUsage {inputTokens, outputTokens,
cacheCreationTokens, cacheReadTokens, thinkingTokens}` summed over the session's requests.

What the reader maps: each assistant message line is one response (text, thinking, tool calls); a user
line's tool results are tool messages and its text the user message; lines of other types are skipped
and counted. Usage: Droid keeps no per-request usage; the settings file's totals are the session's
recorded totals (`input_tokens` the whole prompts: inputTokens plus the cache reads and writes;
`output_tokens` the output plus thinking), with the cache split beside them. No cost is recorded.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import text_of
from ctxsim.formats._node import kind_of
from ctxsim.formats._session import SessionBuilder, arguments_of
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall

NAME = "droid"

ABOUT = {
    "reads": "Factory Droid CLI sessions: the session's JSONL (session_start, then message lines of Anthropic-style "
             "content) with the <session id>.settings.json beside it (model and token totals)",
    "location": "~/.factory/sessions/<project path with / as ->/<session id>.jsonl (older Droid: directly under "
                "~/.factory/sessions/), <session id>.settings.json beside it",
    "records": "every user and assistant message with its time; text, thinking, tool calls with their input and "
               "results; per session the model and its token totals (input, output, cache reads and writes, "
               "thinking)",
    "cannot_know": "per-request usage (not saved: requests are counted, their tokens are not known); cost; the "
                   "system prompt and tool definitions",
    "checked": "Droid's session files as third-party readers document them (session browsers, usage trackers "
               "reading settings.json tokenUsage), 2025-2026; not checked against Droid's own code (closed)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.factory/sessions",), "files": "**/*.jsonl"}


def _settings(path: str, source: Source) -> dict[str, Any]:
    if path == "-" or not path.endswith(".jsonl"):
        return {}
    sibling = path[: -len(".jsonl")] + ".settings.json"
    if not os.path.isfile(sibling):
        source.note("no settings file beside the session (no model or token totals)")
        return {}
    try:
        with open(sibling, encoding="utf-8") as stream:
            value = json.load(stream)
    except (OSError, ValueError, RecursionError) as exc:
        source.note(f"the settings file beside the session cannot be read ({type(exc).__name__}): no token totals")
        return {}
    return value if isinstance(value, dict) else {}


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    settings = _settings(source.path, source)
    model = settings.get("model") if isinstance(settings.get("model"), str) else None
    builder: SessionBuilder | None = None
    skipped: dict[str, int] = {}

    def skip(what: str) -> None:
        skipped[what] = skipped.get(what, 0) + 1

    for record in source.jsonl(stream):
        if not record.is_obj():
            raise record.fail(f"expected a Droid session line (an object), got {kind_of(record.value)}")
        kind = record.string("type")
        if kind == "session_start":
            if builder is None:
                builder = SessionBuilder(record.string("id") or os.path.basename(source.path).split(".", 1)[0],
                                         source=NAME)
                for key, name in (("cwd", "cwd"), ("sessionTitle", "title"), ("title", "title")):
                    if isinstance(value := record.get(key), str) and value and name not in builder.extra:
                        builder.extra[name] = value
            continue
        if kind != "message":
            skip(f"{kind} lines")
            continue
        if builder is None:
            raise record.fail("a message before the session_start line (not a Droid session file)")
        message = record.obj("message", required=True)
        assert message is not None
        ts = record.ts("timestamp")
        role = message.string("role")
        content = message.get("content")
        blocks = [b for b in message.array("content") if b.is_obj()] if isinstance(content, list) else []
        if role == "assistant":
            texts, thinking, calls = [], [], []
            for block in blocks:
                block_kind = block.string("type")
                if block_kind == "text":
                    texts.append(block.string("text") or "")
                elif block_kind == "thinking":
                    thinking.append(block.string("thinking") or "")
                elif block_kind == "tool_use":
                    calls.append(ToolCall(block.string("id") or "", block.string("name") or "unknown",
                                          arguments_of(block.get("input"))))
                else:
                    skip(f"assistant {block_kind} blocks")
            if isinstance(content, str):
                texts.append(content)
            builder.add(Message("assistant", "\n".join(t for t in texts if t), ts=ts,
                                thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls),
                                model=split_model(model)[1] if model else None, line=record.line))
        elif role == "user":
            texts = [content] if isinstance(content, str) else []
            for block in blocks:
                block_kind = block.string("type")
                if block_kind == "text":
                    texts.append(block.string("text") or "")
                elif block_kind == "tool_result":
                    body = block.get("content")
                    text = text_of(block.child("content"))[0] if body is not None else ""
                    builder.add(Message("tool", text, ts=ts, tool_call_id=block.string("tool_use_id") or "",
                                        is_error=block.get("is_error") is True, line=record.line))
                else:
                    skip(f"user {block_kind} blocks")
            if any(texts):
                builder.add(Message("user", "\n".join(t for t in texts if t), ts=ts, line=record.line))
        else:
            skip(f"{role} messages")
    if builder is None:
        return []
    builder.header.update(ts=next((m.ts for m in builder.messages if m.ts), None),
                          model=split_model(model)[1] if model else None,
                          provider=split_model(model)[0] if model else None)
    usage = settings.get("tokenUsage")
    if isinstance(usage, dict):
        read, write = _count(usage, "cacheReadTokens"), _count(usage, "cacheCreationTokens")
        builder.extra["recorded_totals"] = {
            "requests": sum(1 for m in builder.messages if m.role == "assistant"),
            "input_tokens": _count(usage, "inputTokens") + read + write,
            "output_tokens": _count(usage, "outputTokens") + _count(usage, "thinkingTokens"),
            "cache_read_tokens": read, "cache_write_tokens": write}
    if skipped:
        source.note("skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    if builder.orphans:
        source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
    return [builder.build()] if builder.messages else []


def sniff(head: bytes) -> str | None:
    records, why = sniff_jsonl_records(head, 3)
    if why is not None:
        return why
    if records and records[0].get("type") == "session_start" and "owner" in records[0] and "cwd" in records[0]:
        return None
    return "no Droid session_start line {type: session_start, id, owner, cwd} first"


register(FormatInfo(name=NAME, description="Factory Droid CLI sessions (~/.factory/sessions/*/*.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
