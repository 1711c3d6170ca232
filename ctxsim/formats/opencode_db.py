"""`opencode-db`: OpenCode sessions from its SQLite store (`~/.local/share/opencode/opencode.db`).

Newer OpenCode keeps what its storage folder held in one database (its Drizzle schema,
session/session.sql.ts): `session (id, project_id, parent_id, slug, directory, title, version, ...,
time_created, time_updated)`, `message (id, session_id, time_created, time_updated, data)` and
`part (id, message_id, session_id, time_created, time_updated, data)`, where `data` is the JSON of the
message's info (without its id and sessionID) or of the part (without its ids): the same objects as
`opencode export` and the storage folder's files. Messages and parts are in id order (OpenCode's ids
grow with time).

The mapping and the usage are the `opencode` reader's (ctxsim/formats/opencode.py says how): each
`step-finish` part's tokens and cost is one request's; a session with a `parent_id` is a subagent's,
linked to its parent. Every session in the file is read.
"""

from __future__ import annotations

import json
import sqlite3
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._source import Source
from ctxsim.formats._sqlite import read_only, rows, sniff_tables
from ctxsim.formats.opencode import session_of
from ctxsim.model import Session

NAME = "opencode-db"

ABOUT = {
    "reads": "OpenCode sessions from its SQLite store opencode.db (every session in it, subagent sessions linked "
             "to their parent)",
    "location": "~/.local/share/opencode/opencode.db ($OPENCODE_DATA_DIR replaces ~/.local/share/opencode)",
    "records": "every message and part with times; per step (request) tokens {input, output, reasoning, cache "
               "read and write} and its cost; tool calls with their input, output and status; subagent sessions "
               "(parent_id)",
    "cannot_know": "the system prompt and tool definitions (not saved); what a compaction sent",
    "checked": "OpenCode's SQLite schema from its source (session.sql.ts: session, message and part tables with "
               "JSON data), 2026",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"env": "OPENCODE_DATA_DIR", "folders": ("~/.local/share/opencode",), "files": "opencode.db"}

_TABLES = {"session": (b"project_id", b"directory"), "message": (b"session_id", b"data"),
           "part": (b"message_id", b"data")}


def _data(row: sqlite3.Row, table: str, source: Source, skipped: dict[str, int], **ids: Any) -> Node | None:
    try:
        value = json.loads(row["data"])
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        skipped[f"{table} rows whose data is not a JSON object"] = \
            skipped.get(f"{table} rows whose data is not a JSON object", 0) + 1
        return None
    return Node({**value, **ids}, source, None, (table, str(row["id"])))


def _info(row: sqlite3.Row, source: Source) -> Node:
    keys = set(row.keys())
    info: dict[str, Any] = {"id": str(row["id"]), "time": {"created": row["time_created"]}}
    for key, column in (("parentID", "parent_id"), ("directory", "directory"), ("title", "title"),
                        ("version", "version"), ("projectID", "project_id")):
        if column in keys and isinstance(row[column], str) and row[column]:
            info[key] = row[column]
    return Node(info, source, None, ("session", str(row["id"])))


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    out = []
    skipped: dict[str, int] = {}
    with read_only(source.path) as db:
        parts: dict[str, list[Node]] = {}
        for row in rows(db, "SELECT id, message_id, data FROM part ORDER BY message_id, id"):
            part = _data(row, "part", source, skipped, id=str(row["id"]))
            if part is not None:
                parts.setdefault(str(row["message_id"]), []).append(part)
        messages: dict[str, list[tuple[Node, list[Node]]]] = {}
        for row in rows(db, "SELECT id, session_id, data FROM message ORDER BY session_id, id"):
            message = _data(row, "message", source, skipped, id=str(row["id"]), sessionID=str(row["session_id"]))
            if message is not None:
                messages.setdefault(str(row["session_id"]), []).append((message, parts.pop(str(row["id"]), [])))
        for row in rows(db, "SELECT * FROM session ORDER BY time_created, id"):
            out.extend(session_of(_info(row, source), messages.pop(str(row["id"]), []), source))
    if parts or messages:
        skipped["messages and parts of sessions not in the file"] = sum(map(len, messages.values())) + sum(
            map(len, parts.values()))
    if skipped:
        source.note("skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    return out


def sniff(head: bytes) -> str | None:
    return sniff_tables(head, "OpenCode", _TABLES)


register(FormatInfo(name=NAME, description="OpenCode sessions (its SQLite store, ~/.local/share/opencode/"
                    "opencode.db)", sniff=sniff, module=__name__, parse=parse))
