"""`goose`: Goose (Block) sessions, from its SQLite store (`~/.local/share/goose/sessions/sessions.db`).

Goose's schema (session_manager.rs, schema version 9): `sessions (id, name, description, session_type,
working_dir, created_at, updated_at, extension_data, total_tokens, input_tokens, output_tokens,
accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens, schedule_id, recipe_json,
user_recipe_values_json, provider_name, model_config_json, ...)` and `messages (id, message_id,
session_id, role, content_json, created_timestamp, timestamp, tokens, metadata_json)`. `content_json` is
a list of Goose's MessageContent, tagged by `type`: `text` {text}, `image`, `thinking` {thinking},
`redactedThinking`, `toolRequest` {id, toolCall: {status: success, value: {name, arguments}} or
{status: error, error}}, `toolResponse` {id, toolResult: {status: success, value: {content: [...],
isError}} or {status: error, error}}, and UI-only kinds (actionRequired, toolConfirmationRequest,
frontendToolRequest, systemNotification). `metadata_json` {userVisible, agentVisible}: a message the
agent does not see (agentVisible false) was not sent to the model and is skipped.

What the reader maps: every session in the file, messages in id order; an `assistant` message is one
response (text, thinking, tool requests); a `user` message's tool responses are tool messages and its
text the user message.

Usage: Goose keeps no per-request usage. The `sessions` row keeps the totals over the session's
requests (`accumulated_input_tokens`, `accumulated_output_tokens`, as Goose's provider reported them,
the cache not split out) and the last request's (`input_tokens`, `output_tokens`); no cost.
"""

from __future__ import annotations

import json
import sqlite3
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._session import SessionBuilder, arguments_of
from ctxsim.formats._source import Source
from ctxsim.formats._sqlite import columns_of, read_only, rows, sniff_tables
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall, format_ts, parse_ts

NAME = "goose"

ABOUT = {
    "reads": "Goose sessions: its SQLite store sessions.db (every session in it)",
    "location": "~/.local/share/goose/sessions/sessions.db (Goose's data folder; older Goose kept one JSONL "
                "file a session there, which Goose imports into the database)",
    "records": "every message with its time (seconds); text, thinking, tool requests with their arguments and "
               "responses; per session the input and output tokens summed over its requests and the last "
               "request's, the provider and model, the working folder",
    "cannot_know": "per-request usage and cache use (not saved: requests are counted, their tokens are not "
                   "known); cost (not recorded); the system prompt and tool definitions",
    "checked": "Goose's SQLite schema version 9 from its source (session_manager.rs, conversation/message.rs "
               "MessageContent), early 2026; not the older per-session JSONL files",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.local/share/goose/sessions",), "files": "sessions.db"}

_TABLES = {"sessions": (b"working_dir", b"accumulated_input_tokens"),
           "messages": (b"session_id", b"role", b"content_json")}


def _ts(value: Any) -> str | None:
    try:
        if isinstance(value, str) and value.strip():
            return format_ts(parse_ts(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return format_ts(value / 1000 if value > 1e11 else value)
    except ValueError:
        return None
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _str(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    return value if isinstance(value, str) else ""


def _ok(result: Any) -> tuple[Any, str | None]:
    """A Goose ToolResult: (value, None) on success, (None, the error) otherwise."""
    if not isinstance(result, dict):
        return None, "no result"
    if result.get("status") == "success":
        return result.get("value"), None
    error = result.get("error")
    return None, error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)


def _content_text(items: Any) -> str:
    texts = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif isinstance(item, dict):
            texts.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(texts)


class _Reader:
    def __init__(self, builder: SessionBuilder, model: str | None) -> None:
        self.builder = builder
        self.model = model
        self.skipped: dict[str, int] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def message(self, row: sqlite3.Row, has: set[str]) -> None:
        try:
            content = json.loads(row["content_json"] or "[]")
            meta = json.loads(row["metadata_json"]) if "metadata_json" in has and row["metadata_json"] else {}
        except (TypeError, ValueError):
            self.skip("messages whose content is not JSON")
            return
        if isinstance(meta, dict) and meta.get("agentVisible") is False:
            self.skip("messages the agent does not see")
            return
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        role = row["role"]
        ts = _ts(row["created_timestamp"])
        if role == "assistant":
            texts: list[str] = []
            thinking: list[str] = []
            calls: list[ToolCall] = []
            for block in blocks:
                kind = block.get("type")
                if kind == "text":
                    texts.append(_str(block, "text"))
                elif kind == "thinking":
                    thinking.append(_str(block, "thinking"))
                elif kind == "toolRequest":
                    value, error = _ok(block.get("toolCall"))
                    call: dict[str, Any] = value if isinstance(value, dict) else {}
                    name = str(call["name"]) if isinstance(call.get("name"), str) else "invalid_tool_call"
                    calls.append(ToolCall(str(block.get("id") or ""), name,
                                          arguments_of(call.get("arguments") if error is None else error)))
                else:
                    self.skip(f"assistant {kind} blocks")
            self.builder.add(Message("assistant", "\n".join(t for t in texts if t), ts=ts,
                                     thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls),
                                     model=self.model))
        elif role == "user":
            texts = []
            for block in blocks:
                kind = block.get("type")
                if kind == "text":
                    texts.append(_str(block, "text"))
                elif kind == "toolResponse":
                    value, error = _ok(block.get("toolResult"))
                    result = value if isinstance(value, dict) else {}
                    text = error if error is not None else _content_text(result.get("content"))
                    self.builder.add(Message("tool", text, ts=ts, tool_call_id=str(block.get("id") or ""),
                                             is_error=error is not None or result.get("isError") is True))
                else:
                    self.skip(f"user {kind} blocks")
            if any(texts):
                self.builder.add(Message("user", "\n".join(t for t in texts if t), ts=ts))
        else:
            self.skip(f"{role} messages")


def _session(session: sqlite3.Row, messages: list[sqlite3.Row], has: set[str], source: Source) -> Session | None:
    keys = set(session.keys())
    config: Any = None
    if "model_config_json" in keys and session["model_config_json"]:
        try:
            config = json.loads(session["model_config_json"])
        except ValueError:
            config = None
    model = config.get("model_name") if isinstance(config, dict) and isinstance(config.get("model_name"), str) \
        else None
    provider_name = session["provider_name"] if "provider_name" in keys else None
    builder = SessionBuilder(str(session["id"]), source=NAME, ts=_ts(session["created_at"]))
    name = (session["name"] if "name" in keys else None) or session["description"]
    if isinstance(name, str) and name:
        builder.extra["title"] = name
    if isinstance(cwd := session["working_dir"], str) and cwd:
        builder.extra["cwd"] = cwd
    if "session_type" in keys and isinstance(session["session_type"], str) and session["session_type"] != "user":
        builder.extra["session_type"] = session["session_type"]
    reader = _Reader(builder, split_model(model)[1] if model else None)
    for row in messages:
        reader.message(row, has)
    if not builder.messages:
        return None
    provider = {"anthropic": "anthropic", "openai": "openai", "google": "google", "gcp_vertex_ai": "google",
                "aws_bedrock": "anthropic"}.get(str(provider_name), split_model(model)[0] if model else None)
    builder.header.update(model=reader.model, provider=provider)
    totals: dict[str, Any] = {"requests": sum(1 for m in builder.messages if m.role == "assistant")}
    for key, column in (("input_tokens", "accumulated_input_tokens"), ("output_tokens", "accumulated_output_tokens")):
        if (value := _count(session[column])) is not None:
            totals[key] = value
    if len(totals) > 1:
        builder.extra["recorded_totals"] = totals
    last = {key: _count(session[key]) for key in ("input_tokens", "output_tokens")}
    if any(last.values()):
        builder.extra["last_request"] = last
    label = f"session {session['id']}: "
    if reader.skipped:
        source.note(label + "skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    if builder.orphans:
        source.note(label + f"{builder.orphans} tool result(s) without their call kept as user messages")
    return builder.build()


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    out = []
    with read_only(source.path) as db:
        has = columns_of(db, "messages")
        by_session: dict[str, list[sqlite3.Row]] = {}
        for row in rows(db, "SELECT * FROM messages ORDER BY id"):
            by_session.setdefault(str(row["session_id"]), []).append(row)
        for session in rows(db, "SELECT * FROM sessions ORDER BY created_at, id"):
            built = _session(session, by_session.pop(str(session["id"]), []), has, source)
            if built is not None:
                out.append(built)
        if by_session:
            source.note(f"skipped: {sum(map(len, by_session.values()))} message(s) of sessions not in the "
                        "sessions table")
    return out


def sniff(head: bytes) -> str | None:
    return sniff_tables(head, "Goose", _TABLES)


register(FormatInfo(name=NAME, description="Goose sessions (its SQLite store, ~/.local/share/goose/sessions/"
                    "sessions.db)", sniff=sniff, module=__name__, parse=parse))
