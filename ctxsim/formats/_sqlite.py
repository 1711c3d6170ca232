"""SQLite session stores (Crush's crush.db, Goose's sessions.db, OpenCode's opencode.db): sniffing and reading.

Sniffing: the file's first bytes hold the SQLite header and, on the first pages, the schema table with each
table's `CREATE TABLE` text; a reader accepts the file when the tables (and columns) it needs are there.

Reading: the database is opened read-only (`file:...?mode=ro`, never written, never created), by path (a
database cannot be read from stdin); a file SQLite cannot read is a one-line error naming the file.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxsim.errors import TraceError

HEADER = b"SQLite format 3\x00"
_CREATE = re.compile(rb'CREATE TABLE\s+["`\[]?(\w+)["`\]]?\s*\(', re.IGNORECASE)


def sqlite_tables(head: bytes) -> tuple[dict[str, bytes], str | None]:
    """{table name: its CREATE TABLE text} found in a SQLite file's first bytes, or why it is not one."""
    if not head.startswith(HEADER):
        return {}, "not a SQLite database (no 'SQLite format 3' header)"
    tables: dict[str, bytes] = {}
    matches = list(_CREATE.finditer(head))
    for match, after in zip(matches, [*matches[1:], None], strict=True):
        # the table's text runs to the next CREATE TABLE at most (its columns are searched there)
        body = head[match.end():after.start() if after is not None else match.end() + 8192]
        tables.setdefault(match.group(1).decode("ascii", "replace"), body)
    return tables, None


def sniff_tables(head: bytes, product: str, wanted: Mapping[str, tuple[bytes, ...]]) -> str | None:
    """None when every wanted table is in the schema with the named columns; else why not."""
    tables, why = sqlite_tables(head)
    if why is not None:
        return why
    for table, columns in wanted.items():
        body = tables.get(table)
        if body is None:
            return f"a SQLite database without {product}'s {table!r} table"
        missing = [c.decode() for c in columns if not re.search(rb"\b" + re.escape(c) + rb"\b", body)]
        if missing:
            return f"a SQLite database whose {table!r} table lacks {product}'s column(s) {', '.join(missing)}"
    return None


@contextmanager
def read_only(path: str) -> Iterator[sqlite3.Connection]:
    """The database at `path`, opened read-only; a TraceError when it cannot be read."""
    if path == "-":
        raise TraceError(path, None, "a SQLite database cannot be read from stdin: give its path")
    uri = Path(path).absolute().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise TraceError(path, None, f"cannot open the SQLite database ({exc})") from None
    try:
        connection.row_factory = sqlite3.Row
        yield connection
    except sqlite3.Error as exc:
        raise TraceError(path, None, f"cannot read the SQLite database ({exc})") from None
    finally:
        connection.close()


def columns_of(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')}


def rows(connection: sqlite3.Connection, sql: str, *params: Any) -> list[sqlite3.Row]:
    return list(connection.execute(sql, params))
