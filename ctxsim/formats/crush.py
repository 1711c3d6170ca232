"""`crush`: Crush (Charm) sessions, from the SQLite database it keeps in each project (`.crush/crush.db`).

Crush's schema (its migrations under internal/db/migrations): `sessions (id, parent_session_id, title,
message_count, prompt_tokens, completion_tokens, cost, updated_at, created_at, summary_message_id, ...)`
and `messages (id, session_id, role, parts, model, created_at, updated_at, finished_at, provider,
is_summary_message)`, times in Unix milliseconds. `parts` is a JSON list of `{type, data}`: `text`
{text}, `reasoning` {thinking}, `tool_call` {id, name, input (JSON text)}, `tool_result` {tool_call_id,
name, content, is_error}, `finish` {reason}, `image_url` / `binary` (attachments).

What the reader maps: every session in the file with its messages in time order; a `user` message's
text parts are the user message (attachments skipped and counted), an `assistant` message is one
response (text, reasoning as thinking, tool calls), a `tool` message's results are tool messages.
A session with a `parent_session_id` (Crush's agent tool) is linked to its parent.

Usage: Crush keeps no per-request usage. Its `sessions` row keeps the cost summed over the session's
requests (a subagent session's cost is added to its parent's too: the reader takes it out again, so that
each session's recorded cost is its own requests' and the sum over sessions counts nothing twice) and,
in current versions, the last request's prompt (`prompt_tokens`, uncached + cache reads) and output
(`completion_tokens`), not sums: the cost is kept as the recorded total, the last request's sizes beside it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from decimal import Decimal
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._session import SessionBuilder, arguments_of
from ctxsim.formats._source import Source
from ctxsim.formats._sqlite import columns_of, read_only, rows, sniff_tables
from ctxsim.formats._usage import recorded_usd, split_model
from ctxsim.model import Message, Session, ToolCall, format_ts

NAME = "crush"

ABOUT = {
    "reads": "Crush sessions: the project's SQLite database (every session in it, subagent sessions linked "
             "to their parent)",
    "location": "<project>/.crush/crush.db (Crush's data directory, `--data-dir` or options.data_directory "
                "elsewhere); the projects Crush knows are listed in ~/.local/share/crush/projects.json",
    "records": "every message with its time and model; text, reasoning, tool calls with their input and results; "
               "per session its cost (summed; Crush adds subagents' to the parent's, taken out here) and the last "
               "request's prompt and output tokens",
    "cannot_know": "per-request usage (not saved: requests are counted, their tokens are not known); the system "
                   "prompt and tool definitions; what a summarisation dropped",
    "checked": "Crush's SQLite schema from its source (internal/db migrations and models.go, message/content.go "
               "parts, agent.go usage accounting), early 2026",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover): the current project's data directory.
DISCOVERY = {"folders": ("./.crush",), "files": "crush.db"}

_TABLES = {"sessions": (b"parent_session_id", b"prompt_tokens", b"cost"),
           "messages": (b"session_id", b"role", b"parts")}


def _ts(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    try:
        return format_ts(value / 1000 if value > 1e11 else value)  # ms; a trigger-touched time in seconds
    except ValueError:
        return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Reader:
    def __init__(self, builder: SessionBuilder) -> None:
        self.builder = builder
        self.skipped: dict[str, int] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def message(self, row: sqlite3.Row, has: set[str]) -> None:
        try:
            parts = json.loads(row["parts"] or "[]")
        except (TypeError, ValueError):
            self.skip("messages whose parts are not JSON")
            return
        if not isinstance(parts, list):
            self.skip("messages whose parts are not a list")
            return
        role = row["role"]
        ts = _ts(row["created_at"])
        kinds: list[tuple[Any, dict[str, Any]]] = [
            (p.get("type"), p["data"] if isinstance(p.get("data"), dict) else {}) for p in parts if isinstance(p, dict)]
        if role == "user":
            texts = []
            for kind, data in kinds:
                if kind == "text":
                    texts.append(_text(data.get("text")))
                else:
                    self.skip(f"user {kind} parts")
            self.builder.add(Message("user", "\n".join(t for t in texts if t), ts=ts))
        elif role == "assistant":
            texts, thinking, calls = [], [], []
            for kind, data in kinds:
                if kind == "text":
                    texts.append(_text(data.get("text")))
                elif kind == "reasoning":
                    thinking.append(_text(data.get("thinking")))
                elif kind == "tool_call":
                    raw = data.get("input")
                    try:
                        arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
                    except ValueError:
                        arguments = raw  # a call cut off mid-input: its text as sent
                    calls.append(ToolCall(_text(data.get("id")), _text(data.get("name")) or "unknown",
                                          arguments_of(arguments)))
                elif kind != "finish":
                    self.skip(f"assistant {kind} parts")
            model = row["model"] if isinstance(row["model"], str) and row["model"] else None
            if "is_summary_message" in has and row["is_summary_message"]:
                self.skip("summary responses (kept as responses)")
            self.builder.add(Message("assistant", "\n".join(t for t in texts if t), ts=_ts(
                row["finished_at"] if "finished_at" in has else None) or ts,
                thinking="\n".join(thinking) if thinking else None, tool_calls=tuple(calls),
                model=split_model(model)[1] if model else None))
        elif role == "tool":
            for kind, data in kinds:
                if kind == "tool_result":
                    self.builder.add(Message("tool", _text(data.get("content")), ts=ts,
                                             tool_call_id=_text(data.get("tool_call_id")),
                                             name=_text(data.get("name")) or None,
                                             is_error=data.get("is_error") is True))
                else:
                    self.skip(f"tool {kind} parts")
        else:
            self.skip(f"{role} messages")


def _session(session: sqlite3.Row, messages: list[sqlite3.Row], has: set[str], source: Source,
             children_cost: Decimal) -> Session | None:
    builder = SessionBuilder(str(session["id"]), source=NAME, ts=_ts(session["created_at"]))
    if isinstance(title := session["title"], str) and title:
        builder.extra["title"] = title
    folder = os.path.dirname(os.path.abspath(source.path))
    if os.path.basename(folder) == ".crush":  # the project's data directory: the project is its parent
        builder.extra["cwd"] = os.path.dirname(folder)
    if isinstance(parent := session["parent_session_id"], str) and parent:
        builder.extra["parent_session"] = parent
    reader = _Reader(builder)
    providers = []
    for row in messages:
        if "provider" in has and isinstance(row["provider"], str) and row["provider"]:
            providers.append(row["provider"])
        reader.message(row, has)
    if not builder.messages:
        return None
    model = next((m.model for m in builder.messages if m.model), None)
    provider = split_model(model)[0] if model else None
    if providers:
        provider = {"anthropic": "anthropic", "openai": "openai", "gemini": "google", "vertexai": "google",
                    "bedrock": "anthropic", "deepseek": "deepseek"}.get(providers[-1], provider)
    builder.header.update(model=model, provider=provider)
    requests = sum(1 for m in builder.messages if m.role == "assistant")
    cost = recorded_usd(session["cost"])
    if cost:
        totals = {"requests": requests, "cost_usd": format(cost, "f")}
        if children_cost and cost >= children_cost:  # Crush adds each subagent's cost to its parent's
            totals.update(cost_usd=format(cost - children_cost, "f"), cost_with_subagents_usd=format(cost, "f"))
        elif children_cost:
            source.note(f"session {session['id']}: its cost is below its subagents' (kept as recorded)")
        builder.extra["recorded_totals"] = totals
    last = {"prompt_tokens": session["prompt_tokens"], "output_tokens": session["completion_tokens"]}
    if any(isinstance(v, int) and v > 0 for v in last.values()):
        builder.extra["last_request"] = last
    name = f"session {session['id']}: "
    if reader.skipped:
        source.note(name + "skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(reader.skipped.items())))
    if builder.orphans:
        source.note(name + f"{builder.orphans} tool result(s) without their call kept as user messages")
    return builder.build()


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    out = []
    with read_only(source.path) as db:
        has = columns_of(db, "messages")
        sessions = rows(db, "SELECT * FROM sessions ORDER BY created_at, id")
        children: dict[str, Decimal] = {}
        for session in sessions:
            if isinstance(parent := session["parent_session_id"], str) and parent:
                children[parent] = children.get(parent, Decimal(0)) + (recorded_usd(session["cost"]) or Decimal(0))
        by_session: dict[str, list[sqlite3.Row]] = {}
        for row in rows(db, "SELECT * FROM messages ORDER BY created_at, rowid"):
            by_session.setdefault(str(row["session_id"]), []).append(row)
        for session in sessions:
            built = _session(session, by_session.pop(str(session["id"]), []), has, source,
                             children.get(str(session["id"]), Decimal(0)))
            if built is not None:
                out.append(built)
        if by_session:
            source.note(f"skipped: {sum(map(len, by_session.values()))} message(s) of sessions not in the "
                        "sessions table")
    return out


def sniff(head: bytes) -> str | None:
    return sniff_tables(head, "Crush", _TABLES)


register(FormatInfo(name=NAME, description="Crush sessions (the project's SQLite store, .crush/crush.db)",
                    sniff=sniff, module=__name__, parse=parse))
