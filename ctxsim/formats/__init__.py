"""Trace-format readers: one module per format, each registering itself here.

The module file uses underscores, the registry and `--format` name hyphens
(`claude_code.py` registers `claude-code`). Third-party readers come through the
`ctxsim.formats` entry-point group.

Besides the registry this module holds what every reader shares:

- `read_traces`: several inputs (files, directories searched recursively, `-`
  for stdin, gzip by magic bytes) read into one Trace, each file by the format
  its first bytes show unless `--format` says otherwise;
- `Source`: one input being read; it decodes JSONL lines, collects malformed
  ones (an error listing them, or skipped with `skip_bad_lines`) and turns
  wrong shapes into `file:line: what is wrong`;
- `Node`: typed access to a decoded JSON value that fails with the file, line
  and JSON path of the bad field;
- `SessionBuilder`: assembles a canonical Session and keeps the native
  format's invariants (a tool result follows its call, ids are unique), so that
  every reader's output converts to native JSONL and reads back;
- usage normalisation (Anthropic's exclusive counts, OpenAI-style inclusive
  ones) and image-size estimates.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import re
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import IO, Any

from ctxsim._support.collector import gc_paused
from ctxsim.registry import Registry
from ctxsim.errors import CtxsimError, TraceError, did_you_mean
from ctxsim._support.fileio import Limits, input_limits
from ctxsim.model import Event, Message, Session, ToolCall, Trace, Usage, format_ts, parse_ts


@dataclass(frozen=True)
class FormatInfo:
    name: str
    description: str
    # Returns None when the first bytes look like this format, else the reason they don't.
    sniff: Callable[[bytes], str | None]
    module: str
    # Reads a path; None: through `read_traces` with this format (every reader with `parse`).
    read: Callable[[str], Trace] | None = None
    # Reads an open input with options (skip_bad_lines ...); None: only `read(path)` is available.
    parse: Callable[[IO[bytes], Source], list[Session]] | None = None
    # Joins the sessions of several files of this format (e.g. a subagent file to its parent).
    link: Callable[[list[Session]], list[Session]] | None = None

    def load(self, path: str) -> Trace:
        return self.read(path) if self.read is not None else read_traces([path], self.name)


_REGISTRY: Registry[FormatInfo] = Registry("format", __name__, "ctxsim.formats")


def register(info: FormatInfo) -> None:
    _REGISTRY.add(info.name, info, info.module)


def formats() -> dict[str, FormatInfo]:
    return _REGISTRY.all()


SNIFF_BYTES = 65536
BOM = b"\xef\xbb\xbf"
BAD_LINES_SHOWN = 8


def detect(path: str, head: bytes) -> FormatInfo:
    """The format whose sniffer accepts these first bytes; else an error naming each refusal."""
    head = head.removeprefix(BOM)
    reasons = []
    for info in formats().values():
        try:
            why = info.sniff(head)
        except Exception as exc:  # a third-party sniffer must not crash detection
            why = f"its sniffer failed ({type(exc).__name__})"
        if why is None:
            return info
        reasons.append(f"{info.name}: {why}")
    raise CtxsimError(f"{path}: unknown trace format; tried " + "; ".join(reasons))


# ---------------------------------------------------------------- reading inputs


@dataclass
class FileReport:
    """What reading one input found besides its sessions."""

    path: str
    format: str
    sessions: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _MessageBudget:
    """`--max-messages` over one `read_traces` call: every reader counts each message it adds."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.path = ""


_budget: _MessageBudget | None = None


def count_message(line: int | None, n: int = 1) -> None:
    """Count `n` messages read (at `line` of the file being read); over `--max-messages`, the error."""
    budget = _budget
    if budget is not None:
        budget.count += n
        if budget.count > budget.limit:
            raise TraceError(budget.path, line, f"more than --max-messages ({budget.limit:,}) messages; pass a "
                                                "larger --max-messages to read this trace")


def read_trace(path: str, fmt: str | None = None) -> Trace:
    """Read one trace (a file, a directory, `-`) with the named format, or the one its first bytes show."""
    return read_traces([path], fmt)


def read_traces(paths: Iterable[str], fmt: str | None = None, skip_bad_lines: bool = False,
                report: list[FileReport] | None = None, limits: Limits | None = None) -> Trace:
    """Read every input into one Trace: sessions in input order, directories searched recursively.

    `fmt` forces one format for every file; otherwise each file's first bytes pick its reader.
    Malformed lines are an error that lists them unless `skip_bad_lines`; what was skipped is
    appended to `report` (one FileReport per file read). `limits` (default: those in force,
    `ctxsim._support.fileio.input_limits()`) bound a line, an input and the messages of the whole trace.
    """
    global _budget
    limits = limits or input_limits()
    outer = _budget
    _budget = outer or _MessageBudget(limits.max_messages)
    try:
        return _read_traces(list(paths), fmt, skip_bad_lines, report, limits)
    finally:
        _budget = outer


def _read_traces(paths: list[str], fmt: str | None, skip_bad_lines: bool, report: list[FileReport] | None,
                 limits: Limits) -> Trace:
    from ctxsim._support.fileio import read_stdin

    if not paths:
        raise CtxsimError("no trace given")
    table = formats()
    if fmt is not None and fmt not in table:
        raise CtxsimError(f"unknown format {fmt!r}{did_you_mean(fmt, table)}; known: {', '.join(table)}")
    files: list[tuple[str, bytes | None]] = []  # (path, whole content for stdin)
    for path in paths:
        if path == "-":
            files.append((path, read_stdin(limits)))
        elif os.path.isdir(path):
            found, ignored = _scan_directory(path, fmt, limits)
            if not found:
                raise CtxsimError(f"{path}: no trace files found in this directory"
                                  + (f" for format {fmt}" if fmt else "")
                                  + (f" ({len(ignored)} other file(s), e.g. {ignored[0][0]}: {ignored[0][1]})"
                                     if ignored else ""))
            files.extend((f, None) for f in found)
            if report is not None:
                report.extend(FileReport(f, "", notes=[why]) for f, why in ignored)
        else:
            files.append((path, None))
    per_format: dict[str, list[Session]] = {}
    order: list[tuple[str, list[Session]]] = []
    digests = []
    reports = report if report is not None else []
    with gc_paused():  # parsing makes many small objects and no cycles
        for path, data in files:
            if _budget is not None:
                _budget.path = path
            info, sessions, digest, file_report = _read_one(path, data, fmt, skip_bad_lines, limits)
            reports.append(file_report)
            digests.append(digest)
            order.append((info.name, sessions))
            per_format.setdefault(info.name, []).extend(sessions)
    # let each format join sessions across its files (subagents to parents)
    linked: dict[int, Session] = {}
    for name, sessions in per_format.items():
        link = table[name].link
        if link is not None and sessions:
            for old, new in zip(sessions, link(list(sessions)), strict=True):
                linked[id(old)] = new
    out: list[Session] = []
    for _, sessions in order:
        out.extend(linked.get(id(s), s) for s in sessions)
    out = _unique_ids(out)
    stems = [_stem(p) for p, _ in files]
    name = stems[0] if len(stems) == 1 else (_stem(paths[0]) if len(paths) == 1 else f"{stems[0]}+{len(stems) - 1}")
    digest = digests[0] if len(digests) == 1 else "sha256:" + hashlib.sha256(
        "\n".join(digests).encode()).hexdigest()
    return Trace(name=name, sessions=tuple(out), digest=digest)


def _stem(path: str) -> str:
    base = path.rstrip("/").rsplit("/", 1)[-1]
    return base.split(".", 1)[0] or "trace" if base not in ("-", "") else "stdin"


def _unique_ids(sessions: list[Session]) -> list[Session]:
    seen: dict[str, int] = {}
    out = []
    for s in sessions:
        n = seen.get(s.id, 0)
        seen[s.id] = n + 1
        out.append(s if n == 0 else replace(s, id=f"{s.id}-{n + 1}"))
    return out


def _scan_directory(root: str, fmt: str | None, limits: Limits | None = None
                    ) -> tuple[list[str], list[tuple[str, str]]]:
    """Trace files under `root` (recursively, sorted): those a format accepts by their first bytes;
    and the other files, with why they were left out (FileReport entries with no format). `limits`:
    the command's (`input_limits()`) unless given."""
    limits = limits if limits is not None else input_limits()
    found: list[str] = []
    ignored: list[tuple[str, str]] = []
    table = formats()
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                head = _head(path, limits)
            except (CtxsimError, *_READ_ERRORS) as exc:
                ignored.append((path, f"cannot read it ({exc})"))
                continue
            if not head.strip():
                ignored.append((path, "empty"))
                continue
            if fmt is not None:
                why = table[fmt].sniff(head)
                if why is None:
                    found.append(path)
                else:
                    ignored.append((path, f"not {fmt}: {why}"))
                continue
            try:
                detect(path, head)
            except CtxsimError:
                ignored.append((path, "not a trace format ctxsim reads"))
                continue
            found.append(path)
    return found, ignored


MAX_FIRST_LINE = 1 << 23  # read on (up to 8 MiB) until the first line is whole
_READ_ERRORS = (OSError, EOFError, zlib.error)


def _head(path: str, limits: Limits | None = None) -> bytes:
    from ctxsim._support.fileio import open_input

    stream = open_input(path, limits)
    try:
        head = stream.read(SNIFF_BYTES)
        while b"\n" not in head and len(head) < MAX_FIRST_LINE:
            more = stream.read(SNIFF_BYTES)
            if not more:
                break
            head += more
        return head
    finally:
        stream.close()


def _read_one(path: str, data: bytes | None, fmt: str | None, skip_bad_lines: bool, limits: Limits
              ) -> tuple[FormatInfo, list[Session], str, FileReport]:
    table = formats()
    if data is not None:  # stdin, already decompressed (`read_stdin`)
        cut = data.find(b"\n", SNIFF_BYTES - 1)
        head = data[:max(SNIFF_BYTES, cut + 1 if 0 <= cut < MAX_FIRST_LINE else SNIFF_BYTES)]
    else:
        try:
            head = _head(path, limits)
        except _READ_ERRORS as exc:
            raise TraceError(path, None, f"cannot read the file ({exc})") from None
    if not head.strip():
        raise TraceError(path, None, "empty trace: the file has no records")
    if fmt is not None:
        info = table[fmt]
    else:
        try:
            info = detect(path, head)
        except CtxsimError as unknown:
            if path.endswith((".jsonl", ".jsonl.gz", ".ndjson")) or path == "-":
                # The native reader names the exact line and field; keep that, and list the refusals.
                try:
                    return _read_with(table["native"], path, data, skip_bad_lines, limits)
                except TraceError as exc:
                    tried = str(unknown).split("; tried ", 1)[-1]
                    raise TraceError(exc.path, exc.line, f"{exc.message} (as native JSONL; no other format "
                                     f"matched: {tried})") from None
            raise
    return _read_with(info, path, data, skip_bad_lines, limits)


def _read_with(info: FormatInfo, path: str, data: bytes | None, skip_bad_lines: bool, limits: Limits
               ) -> tuple[FormatInfo, list[Session], str, FileReport]:
    from ctxsim._support.fileio import open_input

    stream: IO[bytes] = io.BytesIO(data) if data is not None else open_input(path, limits)
    file_report = FileReport(path, info.name)
    try:
        if info.parse is None:
            try:
                if info.name == "native":
                    sessions, digest = _read_native(stream, path, skip_bad_lines, file_report, limits)
                else:
                    trace = info.load(path)
                    sessions, digest = list(trace.sessions), trace.digest
            except _READ_ERRORS as exc:
                raise TraceError(path, None, f"cannot read the file ({exc})") from None
            except RecursionError:
                raise TraceError(path, None, "JSON nested too deeply") from None
        else:
            hashing = _HashingStream(stream)
            source = Source(path, skip_bad_lines, limits.max_line_bytes)
            try:
                sessions = info.parse(io.BufferedReader(hashing, 1 << 16), source)
            except _READ_ERRORS as exc:
                raise TraceError(path, None, f"cannot read the file ({exc})") from None
            except RecursionError:
                raise TraceError(path, None, "JSON nested too deeply") from None
            source.finish()
            file_report.skipped_lines = [line for line, _ in source.bad_lines]
            file_report.notes = list(source.notes)
            digest = hashing.digest
            if not sessions:
                raise TraceError(path, None, "no sessions found: the file holds no messages this reader knows")
    finally:
        if data is None:
            stream.close()
    file_report.sessions = len(sessions)
    return info, sessions, digest, file_report


class _HashingStream(io.RawIOBase):
    """A read-only stream that hashes what passes through it."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner
        self._hash = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._inner.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._hash.update(data)
        return n

    @property
    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


def _read_native(stream: IO[bytes], path: str, skip_bad_lines: bool, file_report: FileReport, limits: Limits
                 ) -> tuple[list[Session], str]:
    """Native JSONL through its own reader; malformed lines listed first (or skipped when asked)."""
    reading = NativeSessions(stream, path, skip_bad_lines, file_report, limits)
    sessions = list(reading)
    return sessions, reading.digest


class NativeSessions:
    """The sessions of a native JSONL stream, read line by line and given out one at a time (memory: the
    session being read, not the file). Malformed lines are collected as they pass (`Source`): at the end they
    are an error listing them unless skipped, and that error comes before any error the native reader found
    in a record (the rest of the file is still read for them). `digest` (SHA-256 of every byte) once read."""

    def __init__(self, stream: IO[bytes], path: str, skip_bad_lines: bool, file_report: FileReport,
                 limits: Limits | None = None, *, budget: bool = False, close: bool = False) -> None:
        """`limits` (default: those in force) bound a line (an over-long one is never held whole, `HashingReader`)
        and, with `budget` (a stream read on its own, not within `read_traces`), the messages of the file;
        `close`: the stream is closed once read."""
        from ctxsim._support.fileio import HashingReader

        limits = limits or input_limits()
        self.path = path
        self.file_report = file_report
        self._stream = stream
        self._close = close
        self._source = Source(path, skip_bad_lines, limits.max_line_bytes, strict=True)
        self._reader = HashingReader(stream, limits.max_line_bytes)
        self._budget = _MessageBudget(limits.max_messages) if budget else None
        if self._budget is not None:
            self._budget.path = path
        self.digest: str | None = None

    def _records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        source = self._source
        decode = source.decode
        for number, line in enumerate(self._reader, start=1):
            if line is None:  # over --max-line-bytes: a malformed line, never held whole
                source.bad_lines.append((number, source.too_long()))
            elif line.strip():
                record = decode(line, number)
                if record is not None:
                    yield number, record

    def _count(self, line: int | None) -> None:
        budget = self._budget
        assert budget is not None
        budget.count += 1
        if budget.count > budget.limit:
            raise TraceError(budget.path, line, f"more than --max-messages ({budget.limit:,}) messages; pass a "
                                                "larger --max-messages to read this trace")

    def __iter__(self) -> Iterator[Session]:
        from ctxsim.formats import native

        records = self._records()
        count = self._count if self._budget is not None else count_message
        try:
            try:
                yield from native.iter_sessions(records, self.path, count)
            except TraceError:
                for _ in records:  # the malformed lines after it, listed first as before
                    pass
                self._source.finish()
                raise
            self._source.finish()
        except _READ_ERRORS as exc:
            raise TraceError(self.path, None, f"cannot read the file ({exc})") from None
        finally:
            if self._close:
                self._stream.close()
        self.file_report.skipped_lines = [line for line, _ in self._source.bad_lines]
        self.digest = self._reader.digest


@dataclass
class SessionStream:
    """One native trace file read as a stream of sessions (`stream_trace`): sessions in file order, their ids
    made unique as `read_traces` makes them; `digest` and `report` are complete once the sessions are."""

    name: str
    reading: NativeSessions
    report: FileReport

    def __iter__(self) -> Iterator[Session]:
        seen: dict[str, int] = {}
        for session in self.reading:
            n = seen.get(session.id, 0)
            seen[session.id] = n + 1
            yield session if n == 0 else replace(session, id=f"{session.id}-{n + 1}")
        self.report.sessions = sum(seen.values())

    def first_window(self) -> int | None:
        """The `window` of the first session header that has one (None: none has), found by a scan of the
        file that decodes only the lines that can be such a header (a second read, not a second parse)."""
        from ctxsim._support.fileio import open_input

        stream = open_input(self.reading.path)
        try:
            for line in stream:
                if b'"window"' in line and b'"session"' in line:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("type") == "session" and record.get("window"):
                        window = record["window"]
                        return window if isinstance(window, int) and not isinstance(window, bool) else None
        except _READ_ERRORS:
            return None  # the reading itself says what is wrong
        finally:
            stream.close()
        return None

    @property
    def digest(self) -> str:
        if self.reading.digest is None:
            raise CtxsimError(f"{self.reading.path}: the digest is known once every session is read")
        return self.reading.digest


def stream_trace(path: str, fmt: str | None = None, skip_bad_lines: bool = False, *,
                 unless_usage: bool = False) -> SessionStream | None:
    """`path` as a stream of sessions when it is one native JSONL file (by `fmt` or by its first bytes);
    None otherwise (a folder, stdin, another format: read it whole with `read_traces`). The stream reads what
    `read_traces([path], fmt, skip_bad_lines)` reads, in the same order, one session at a time, under the
    same limits (a line, the input, `--max-messages`). `unless_usage`: None too when the file may record
    usage (`may_record_usage`): a calibration needs the whole trace."""
    from ctxsim._support.fileio import open_input

    if path == "-" or os.path.isdir(path) or (fmt is not None and fmt != "native"):
        return None
    try:
        head = _head(path)
    except (CtxsimError, *_READ_ERRORS):
        return None  # read_traces says what is wrong
    if not head.strip():
        return None
    if fmt is None:
        try:
            if detect(path, head).name != "native":
                return None
        except CtxsimError:
            return None
    if unless_usage and may_record_usage(path):
        return None
    report = FileReport(path, "native")
    stream = open_input(path)
    reading = NativeSessions(stream, path, skip_bad_lines, report, budget=True, close=True)
    return SessionStream(_stem(path), reading, report)


# The JSON string "usage", each letter as itself or as its \u escape (a key may be spelt so: "\u0075sage").
_USAGE_KEY = re.compile(rb'"(?:u|\\u0075)(?:s|\\u0073)(?:a|\\u0061)(?:g|\\u0067)(?:e|\\u0065)"')
_USAGE_KEY_BYTES = 2 + 5 * 6


def may_record_usage(path: str) -> bool:
    """Whether a native file may hold a message's `usage`, by a scan of its bytes (no parse): False only when
    the string "usage" appears nowhere, however it is spelt; unsure (a read error) is True."""
    from ctxsim._support.fileio import open_input

    try:
        stream = open_input(path)
        try:
            tail = b""
            while True:
                chunk = stream.read(1 << 20)
                if not chunk:
                    return False
                window = tail + chunk
                if _USAGE_KEY.search(window) is not None:
                    return True
                tail = window[-(_USAGE_KEY_BYTES - 1):]
        finally:
            stream.close()
    except (CtxsimError, *_READ_ERRORS):
        return True


# ---------------------------------------------------------------- one input


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


class Source:
    """One input being read: decodes lines, collects malformed ones, reports wrong shapes.

    A lone UTF-16 surrogate (`"\\ud800"`: valid JSON, not valid Unicode, so no later step
    could encode it) is replaced by U+FFFD and counted in the notes; with `strict` (the native
    format) its line is malformed instead.
    """

    def __init__(self, path: str, skip_bad_lines: bool = False, max_line_bytes: int | None = None,
                 strict: bool = False) -> None:
        self.path = path
        self.skip_bad_lines = skip_bad_lines
        self.max_line_bytes = max_line_bytes if max_line_bytes is not None else input_limits().max_line_bytes
        self.strict = strict
        self.bad_lines: list[tuple[int, str]] = []  # (line, what is wrong)
        self.notes: list[str] = []
        self.text: str | None = None  # a whole-document input, for locating fields
        self.surrogates = 0
        self.surrogate_lines: list[int] = []

    def too_long(self) -> str:
        return f"line longer than --max-line-bytes ({self.max_line_bytes:,} bytes)"

    # -- JSONL
    def decode(self, raw: bytes, number: int) -> dict[str, Any] | None:
        """One JSONL line as an object, or None (recorded as malformed)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_lines.append((number, f"invalid UTF-8 at byte {exc.start} of the line"))
            return None
        if number == 1:
            text = text.removeprefix("\ufeff")
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            self.bad_lines.append((number, f"broken JSON: {exc.msg} at column {exc.colno}"))
            return None
        except RecursionError:
            self.bad_lines.append((number, "JSON nested too deeply"))
            return None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            self.bad_lines.append((number, f"broken JSON: {exc}"))
            return None
        if not isinstance(record, dict):
            self.bad_lines.append((number, f"expected a JSON object, got {kind_of(record)}"))
            return None
        if _SURROGATE_ESCAPE.search(raw) is not None:
            found = replace_surrogates(record)
            if found and self.strict:
                self.bad_lines.append((number, LONE_SURROGATE))
                return None
            if found:
                self.surrogates += found
                self.surrogate_lines.append(number)
        return record

    def jsonl(self, stream: IO[bytes]) -> Iterator[Node]:
        """Every well-formed line as a Node; blank lines skipped, malformed ones collected."""
        from ctxsim._support.fileio import read_lines

        for number, raw in enumerate(read_lines(stream, self.max_line_bytes), start=1):
            if raw is None:
                self.bad_lines.append((number, self.too_long()))
                continue
            if not raw.strip():
                continue
            record = self.decode(raw, number)
            if record is not None:
                yield Node(record, self, number)

    def finish(self) -> None:
        """After reading: malformed lines are an error that lists them, unless they are skipped."""
        if self.surrogates:
            lines = self.surrogate_lines
            where = (f" on line{'s' if len(lines) != 1 else ''} " + ", ".join(map(str, lines[:BAD_LINES_SHOWN]))
                     + (", ..." if len(lines) > BAD_LINES_SHOWN else "")) if lines else ""
            self.note(f"replaced {self.surrogates:,} lone UTF-16 surrogate(s) (not valid Unicode) with U+FFFD{where}")
            self.surrogates = 0
        if not self.bad_lines:
            return
        lines = [n for n, _ in self.bad_lines]
        shown = ", ".join(str(n) for n in lines[:BAD_LINES_SHOWN]) + (", ..." if len(lines) > BAD_LINES_SHOWN else "")
        count = f"{len(lines)} malformed line{'s' if len(lines) != 1 else ''} ({shown})"
        if self.skip_bad_lines:
            self.notes.insert(0, f"skipped {count}")
            return
        first, why = self.bad_lines[0]
        raise TraceError(self.path, first, f"{why}; {count}; pass --skip-bad-lines to skip them and read the rest")

    def bad(self, line: int | None, message: str) -> None:
        """A record of the wrong shape: skipped with `skip_bad_lines` (when it has a line), else an error."""
        if self.skip_bad_lines and line is not None and self.text is None:
            self.bad_lines.append((line, message))
            return
        if self.bad_lines and not self.skip_bad_lines:
            self.finish()
        raise TraceError(self.path, line, message)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def any_json(self, stream: IO[bytes]) -> tuple[list[Node], bool]:
        """A whole JSON document (one Node, True) or JSONL (its line Nodes, False), told apart by parsing."""
        raw = stream.read()
        text = raw.lstrip()
        if text.startswith(b"{"):
            first, _, rest = text.partition(b"\n")
            try:
                json.loads(first)
                whole_line = True
            except (ValueError, RecursionError):
                whole_line = False
            if whole_line and (not rest.strip() or rest.lstrip().startswith(b"{")):
                return list(self.jsonl(io.BytesIO(raw))), False
        return [self.document(io.BytesIO(raw))], True

    # -- whole documents
    def document(self, stream: IO[bytes]) -> Node:
        raw = stream.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise TraceError(self.path, line, f"invalid UTF-8 at byte {exc.start}") from None
        if not text.strip():
            raise TraceError(self.path, None, "empty trace: the file has no records")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            what = "truncated JSON" if "\n" not in text[exc.pos:].rstrip() else "broken JSON"
            raise TraceError(self.path, exc.lineno, f"{what}: {exc.msg} at column {exc.colno}") from None
        except RecursionError:
            raise TraceError(self.path, None, "JSON nested too deeply") from None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise TraceError(self.path, None, f"broken JSON: {exc}") from None
        if _SURROGATE_ESCAPE.search(raw) is not None:
            self.surrogates += replace_surrogates(value)
        self.text = text
        return Node(value, self, None)


# A JSON escape of a UTF-16 surrogate; json.loads joins a valid pair into one character, so
# a surrogate left in the decoded text was alone.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")
LONE_SURROGATE = "a string holds a lone UTF-16 surrogate escape (e.g. \\ud800): not valid Unicode"


def replace_surrogates(value: Any) -> int:
    """Replace, in place, every lone surrogate in the strings (keys too) of a decoded JSON value
    by U+FFFD; how many there were. A bare string cannot change in place: callers pass containers."""
    count = 0
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for i, v in enumerate(item):
                if isinstance(v, str):
                    if _LONE.search(v):
                        item[i], n = _LONE.subn("\ufffd", v)
                        count += n
                elif isinstance(v, (dict, list)):
                    stack.append(v)
            continue
        bad_keys = False
        for k, v in item.items():
            if isinstance(v, str):
                if _LONE.search(v):
                    item[k], n = _LONE.subn("\ufffd", v)
                    count += n
            elif isinstance(v, (dict, list)):
                stack.append(v)
            bad_keys = bad_keys or _LONE.search(k) is not None
        if bad_keys:
            pairs = list(item.items())
            item.clear()
            for k, v in pairs:
                new, n = _LONE.subn("\ufffd", k)
                count += n
                item[new] = v
    return count


def locate(text: str, path: tuple[Any, ...]) -> int | None:
    """Line (1-based) where the value at `path` starts in the JSON `text`; None if it cannot be found."""
    decoder = json.JSONDecoder()
    ws = " \t\n\r"
    pos = 0
    n = len(text)

    def skip(p: int) -> int:
        while p < n and text[p] in ws:
            p += 1
        return p

    def value_then(p: int, sep: str) -> tuple[Any, int] | None:
        """The JSON value at `p` and where the next one starts, past `sep`; None if the text is not so."""
        try:
            value, p = decoder.raw_decode(text, p)
        except ValueError:
            return None
        p = skip(p)
        if p >= n or text[p] != sep:
            return None
        return value, skip(p + 1)

    pos = skip(pos)
    for step in path:
        if pos >= n:
            return None
        if isinstance(step, int) and text[pos] == "[":
            pos = skip(pos + 1)
            for _ in range(step):
                got = value_then(pos, ",")
                if got is None:
                    return None
                pos = got[1]
        elif isinstance(step, str) and text[pos] == "{":
            pos = skip(pos + 1)
            while True:
                if pos >= n or text[pos] != '"':
                    return None
                got = value_then(pos, ":")
                if got is None:
                    return None
                key, pos = got
                if key == step:
                    break
                got = value_then(pos, ",")
                if got is None:
                    return None
                pos = got[1]
        else:
            return None
    return text.count("\n", 0, pos) + 1


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


MAX_TOKENS = 100_000_000


class Node:
    """A decoded JSON value and where it came from; typed getters fail with file:line and the field's path."""

    __slots__ = ("value", "source", "line", "path")

    def __init__(self, value: Any, source: Source, line: int | None, path: tuple[Any, ...] = ()) -> None:
        self.value = value
        self.source = source
        self.line = line  # the JSONL line; None inside a whole document (located on error)
        self.path = path

    # -- errors
    def where(self) -> int | None:
        if self.line is not None:
            return self.line
        if self.source.text is not None:
            return locate(self.source.text, self.path)
        return None

    def fail(self, message: str, key: Any = None) -> TraceError:
        path = self.path + ((key,) if key is not None else ())
        label = _dotted(path)
        text = f"field '{label}' {message}" if label else message
        line = self.line if self.line is not None else (
            locate(self.source.text, path) or locate(self.source.text, self.path) if self.source.text else None)
        return TraceError(self.source.path, line, text)

    # -- navigation
    def child(self, key: Any) -> Node:
        value = self.value.get(key) if isinstance(self.value, dict) else (
            self.value[key] if isinstance(self.value, list) and isinstance(key, int) and key < len(self.value)
            else None)
        return Node(value, self.source, self.line, self.path + (key,))

    def get(self, key: str, default: Any = None) -> Any:
        if isinstance(self.value, dict):
            value = self.value.get(key, default)
            return default if value is None else value
        return default

    def __contains__(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def _typed(self, key: str, kinds: tuple[type, ...], what: str, required: bool) -> Any:
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None:
            if required:
                raise self.fail("is missing", key)
            return None
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise self.fail(f"must be {what}, got {kind_of(value)}", key)
        return value

    def str(self, key: str, required: bool = False) -> str | None:
        return self._typed(key, (str,), "a string", required)

    def bool(self, key: str) -> bool:
        return bool(self._typed(key, (bool,), "true or false", False))

    def number(self, key: str) -> float | None:
        value = self._typed(key, (int, float), "a number", False)
        return None if value is None else float(value)

    def count(self, key: str, required: bool = False) -> int | None:
        value = self._typed(key, (int, float), "a non-negative integer", required)
        if value is None:
            return None
        if isinstance(value, float):
            if not value.is_integer():
                raise self.fail(f"must be an integer, got {value}", key)
            value = int(value)
        if value < 0:
            raise self.fail(f"must not be negative, got {value}", key)
        if value > MAX_TOKENS:
            raise self.fail(f"is absurd: {value:,} (limit {MAX_TOKENS:,})", key)
        return value

    def obj(self, key: str, required: bool = False) -> Node | None:
        value = self._typed(key, (dict,), "an object", required)
        return None if value is None else Node(value, self.source, self.line, self.path + (key,))

    def list(self, key: str, required: bool = False) -> list[Node]:
        value = self._typed(key, (list,), "an array", required)
        if value is None:
            return []
        return [Node(v, self.source, self.line, self.path + (key, i)) for i, v in enumerate(value)]

    def items(self) -> list[Node]:
        """The elements of this array (an error if it is not one)."""
        if not isinstance(self.value, list):
            raise self.fail(f"must be an array, got {kind_of(self.value)}")
        return [Node(v, self.source, self.line, self.path + (i,)) for i, v in enumerate(self.value)]

    def tools(self, key: str = "tools") -> list[dict[str, Any]] | None:
        """Tool definitions: an array of objects (or absent)."""
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None:
            return None
        out = []
        for item in self.list(key):
            if not item.is_obj():
                raise item.fail(f"must be a tool definition (an object), got {kind_of(item.value)}")
            out.append(item.value)
        return out

    def ts(self, key: str) -> str | None:
        """An ISO 8601 or unix-seconds timestamp, normalised to the native `...Z` form."""
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            raise self.fail(f"must be a timestamp, got {kind_of(value)}", key)
        if isinstance(value, (int, float)):
            try:
                seconds = float(value)
                if seconds > 1e11:  # milliseconds
                    seconds /= 1000
                return format_ts(seconds)
            except (ValueError, OverflowError) as exc:
                raise self.fail(f"is not a usable timestamp: {exc}", key) from None
        if not isinstance(value, str):
            raise self.fail(f"must be a timestamp, got {kind_of(value)}", key)
        try:
            return format_ts(parse_ts(value))
        except (ValueError, OverflowError) as exc:
            why = f" ({exc})" if "years" in str(exc) else ""
            raise self.fail(f"is not an ISO 8601 timestamp{why}: {value[:40]!r}", key) from None

    def is_obj(self) -> bool:
        return isinstance(self.value, dict)


# ---------------------------------------------------------------- text of content


def text_of(node: Node, images: Callable[[Node], int] | None = None) -> tuple[str, int]:
    """A content value (a string, or an array of text/image blocks) as text plus extra tokens for images.

    Blocks of an unknown kind count by their JSON text: what they are is not known, that they were
    sent is.
    """
    value = node.value
    if value is None:
        return "", 0
    if isinstance(value, str):
        return value, 0
    if isinstance(value, dict):
        value = [value]
        node = Node(value, node.source, node.line, node.path)
    if not isinstance(value, list):
        raise node.fail(f"must be a string or an array of content blocks, got {kind_of(value)}")
    parts: list[str] = []
    extra = 0
    for block in node.items():
        v = block.value
        if isinstance(v, str):
            parts.append(v)
            continue
        if not isinstance(v, dict):
            raise block.fail(f"must be a content block (an object), got {kind_of(v)}")
        kind = v.get("type")
        if isinstance(v.get("text"), str) and kind in (None, "text", "input_text", "output_text", "summary_text"):
            parts.append(v["text"])
        elif kind in ("image", "input_image", "image_url") or "image_url" in v:
            extra += images(block) if images else IMAGE_FALLBACK_TOKENS
        elif kind == "tool_result" or kind == "tool_use":
            raise block.fail(f"a {kind} block is not allowed here")
        elif isinstance(v.get("text"), str):
            parts.append(v["text"])
        elif isinstance(v.get("content"), (str, list)):
            inner, more = text_of(block.child("content"), images)
            parts.append(inner)
            extra += more
        else:
            parts.append(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts), extra


# ---------------------------------------------------------------- images

IMAGE_FALLBACK_TOKENS = 1_600  # an image whose size cannot be read: about a full-size Claude image


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first bytes of a PNG, JPEG, GIF or WebP image."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = int.from_bytes(data[24:27], "little") + 1
            h = int.from_bytes(data[27:30], "little") + 1
            return w, h
        if chunk == b"VP8 " and len(data) >= 30:
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L" and len(data) >= 25:
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = int.from_bytes(data[i + 2:i + 4], "big")
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + length
    return None


def _decode_head(b64: str, limit: int = 65536) -> bytes:
    head = b64[:limit]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (ValueError, TypeError):
        return b""


def anthropic_image_tokens(width: int, height: int) -> int:
    """Claude's documented estimate: pixels / 750, after scaling to at most 1568 px a side and ~1.15 MP."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)) if width * height else 1.0)
    w, h = width * scale, height * scale
    return max(1, math.ceil(w * h / 750))


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail tile rule: fit in 2048, shortest side to 768, 170 a 512-px tile plus 85."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def image_tokens(block: Node, provider: str) -> int:
    """Tokens of one image block (Anthropic `source`, OpenAI `image_url` / `input_image`)."""
    v = block.value if isinstance(block.value, dict) else {}
    data = ""
    source = v.get("source")
    if isinstance(source, dict) and isinstance(source.get("data"), str):
        data = source["data"]
    url = v.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
    size = image_size(_decode_head(data)) if data else None
    if size is None or not size[0] or not size[1]:
        return IMAGE_FALLBACK_TOKENS
    return anthropic_image_tokens(*size) if provider == "anthropic" else openai_image_tokens(*size)


# ---------------------------------------------------------------- usage

def usage_anthropic(node: Node) -> Usage:
    """Anthropic's exclusive usage (`input_tokens` excludes cache) in the inclusive convention."""
    uncached = node.count("input_tokens") or 0
    read = node.count("cache_read_input_tokens") or 0
    written = node.count("cache_creation_input_tokens") or 0
    split = node.obj("cache_creation")
    w5 = split.count("ephemeral_5m_input_tokens") if split else None
    w1 = split.count("ephemeral_1h_input_tokens") if split else None
    if w5 is None and w1 is None:
        w5, w1 = written, 0
    w5, w1 = w5 or 0, w1 or 0
    if w5 + w1 != written and written:
        w5 = max(written - w1, 0)  # trust the total; the split is a detail
    output = node.count("output_tokens") or 0
    return Usage(uncached + read + w5 + w1, read, w5, w1, output)


def usage_openai(node: Node) -> Usage:
    """OpenAI-style usage (prompt or input tokens include the cached ones), with the extras
    litellm and DeepSeek add. Counts that exceed the prompt are taken as exclusive and added."""
    prompt = node.count("prompt_tokens")
    if prompt is None:
        prompt = node.count("input_tokens") or 0
    output = node.count("completion_tokens")
    if output is None:
        output = node.count("output_tokens") or 0
    details = node.obj("prompt_tokens_details") or node.obj("input_tokens_details")
    read = (details.count("cached_tokens") if details else None) or 0
    read = max(read, node.count("cache_read_input_tokens") or 0, node.count("cached_input_tokens") or 0,
               node.count("prompt_cache_hit_tokens") or 0, node.count("cache_read_tokens") or 0)
    written = max(node.count("cache_creation_input_tokens") or 0, node.count("cache_write_tokens") or 0,
                  (details.count("cache_write_tokens") or 0) if details else 0)
    if read + written > prompt:  # the prompt count left the cache out: add it back
        prompt += read + written
    return Usage(prompt, read, written, 0, output)


def usage_native(node: Node) -> Usage:
    """Usage already in ctxsim's inclusive field names."""
    counts = {k: node.count(k) or 0 for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens",
                                                "cache_write_1h_tokens", "output_tokens")}
    cached = counts["cache_read_tokens"] + counts["cache_write_tokens"] + counts["cache_write_1h_tokens"]
    if cached > counts["input_tokens"]:
        raise node.fail(f"cache read + writes ({cached:,}) exceed input_tokens ({counts['input_tokens']:,})")
    return Usage(**counts)


def any_usage(node: Node) -> Usage:
    """Usage in whichever convention its field names show."""
    v = node.value if isinstance(node.value, dict) else {}
    if "cache_read_tokens" in v or "cache_write_tokens" in v or "cache_write_1h_tokens" in v:
        if "prompt_tokens" not in v:
            return usage_native(node)
    if "prompt_tokens" in v or "completion_tokens" in v or "prompt_tokens_details" in v or \
            "input_tokens_details" in v or "cached_input_tokens" in v:
        return usage_openai(node)
    if "cache_creation_input_tokens" in v or "cache_read_input_tokens" in v or "cache_creation" in v:
        return usage_anthropic(node)
    return usage_openai(node)


# ---------------------------------------------------------------- models and providers

_PROVIDER_PREFIXES = {
    "anthropic": "anthropic", "openai": "openai", "azure": "openai", "deepseek": "deepseek",
    "gemini": "google", "vertex_ai": "google", "google": "google", "mistral": "mistral", "groq": "groq",
    "bedrock": "anthropic",
}


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """(provider, model) from a model name, litellm-style prefixes (`anthropic/claude-...`) included."""
    if not model:
        return None, None
    name = model
    provider = None
    if "/" in name:
        prefix, rest = name.split("/", 1)
        provider = _PROVIDER_PREFIXES.get(prefix.lower())
        if prefix.lower() in ("openrouter", "together_ai", "litellm_proxy", "hosted_vllm") and "/" in rest:
            sub, rest2 = rest.split("/", 1)
            provider = _PROVIDER_PREFIXES.get(sub.lower())
            rest = rest2
        name = rest
    low = name.lower()
    if provider is None:
        if "claude" in low:
            provider = "anthropic"
        elif low.startswith(("gpt", "o1", "o3", "o4", "codex", "chatgpt", "text-")):
            provider = "openai"
        elif low.startswith("gemini"):
            provider = "google"
        elif low.startswith("deepseek"):
            provider = "deepseek"
    return provider, name


# ---------------------------------------------------------------- building sessions

_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping)) if mapping else _NO_EXTRA


class SessionBuilder:
    """Collects one session's messages and events, keeping the native format's invariants.

    A tool result whose call is not open in this session (its call was lost or is in another
    session) becomes a user message with the same text, so nothing sent is lost and the
    session still converts to valid native JSONL; a tool-call id used twice gets a suffix.
    """

    def __init__(self, id: str, **header: Any) -> None:
        self.id = id
        self.header = header
        self.extra: dict[str, Any] = {}
        self.messages: list[Message] = []
        self.events: list[Event] = []
        self._open: dict[str, str] = {}  # call id -> tool name
        self._used: set[str] = set()
        self._renamed: dict[str, str] = {}
        self.orphans = 0

    def __len__(self) -> int:
        return len(self.messages)

    def call_id(self, call_id: str) -> str:
        """The id to use for a new call (unique in this session; an empty id gets one)."""
        call_id = call_id or "call"
        if call_id not in self._used:
            return call_id
        n = 2
        while f"{call_id}#{n}" in self._used:
            n += 1
        return f"{call_id}#{n}"

    def add(self, message: Message) -> Message:
        if message.role == "tool":
            wanted = message.tool_call_id or ""
            actual = self._renamed.get(wanted, wanted)
            if actual in self._open:
                name = message.name or self._open[actual]
                del self._open[actual]
                message = replace(message, tool_call_id=actual, name=name)
            else:
                self.orphans += 1
                extra = dict(message.extra)
                extra["orphan_tool_result"] = wanted
                message = replace(message, role="user", tool_call_id=None, is_error=False, extra=frozen(extra))
        if message.tool_calls:
            calls = []
            for call in message.tool_calls:
                new_id = self.call_id(call.id)
                if new_id != call.id:
                    self._renamed[call.id] = new_id
                    call = replace(call, id=new_id)
                if not call.name:  # the native format needs a name; the log did not say
                    call = replace(call, name="unknown")
                self._used.add(call.id)
                self._open[call.id] = call.name
                calls.append(call)
            message = replace(message, tool_calls=tuple(calls))
        if message.role != "assistant" and message.usage is not None:
            message = replace(message, usage=None)
        count_message(message.line)
        self.messages.append(message)
        return message

    def replace_last(self, message: Message) -> None:
        """Swap the last message for an updated copy (an assistant response that grew)."""
        old = self.messages.pop()
        count_message(old.line, -1)
        for call in old.tool_calls:
            self._open.pop(call.id, None)
            self._used.discard(call.id)
        self.add(message)

    def event(self, name: str, ts: str | None = None, **fields: Any) -> None:
        self.events.append(Event(name, len(self.messages), ts, frozen({k: v for k, v in fields.items()
                                                                        if v is not None})))

    def build(self) -> Session:
        h = self.header
        return Session(
            id=self.id, source=h.get("source"), model=h.get("model"), provider=h.get("provider"),
            window=h.get("window"), system=h.get("system"), tools=tuple(frozen(t) for t in h.get("tools") or ()),
            system_tokens=h.get("system_tokens"), tools_tokens=h.get("tools_tokens"), ts=h.get("ts"),
            messages=tuple(self.messages), events=tuple(self.events), has_header=True,
            extra=frozen({k: v for k, v in self.extra.items() if v is not None}),
        )


def arguments_of(value: Any) -> Any:
    """Tool-call arguments as a provider logs them (often a JSON string) to an object where possible."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("{", "[")):
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return value
        return value
    return value


def openai_tool_calls(node: Node) -> list[ToolCall]:
    """An OpenAI-style message's `tool_calls` ({id, function: {name, arguments}}), each checked."""
    calls = []
    for call in node.list("tool_calls"):
        if not call.is_obj():
            raise call.fail("must be a tool call (an object)")
        function = call.obj("function", required=True)
        assert function is not None
        calls.append(ToolCall(call.str("id", required=True) or "", function.str("name", required=True) or "",
                              arguments_of(function.get("arguments"))))
    return calls


def sniff_json_head(head: bytes) -> tuple[str, Any]:
    """('jsonl', first record) / ('document', None) / ('none', reason) for a file's first bytes.

    A file that is one JSON object on one line is both; it is given as ('single', the object):
    JSONL readers take it as one line, whole-document readers as a document.
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        return "none", "no data in the first bytes"
    first_line = stripped.split("\n", 1)[0].strip()
    if first_line.startswith("{"):
        try:
            record = json.loads(first_line)
        except (json.JSONDecodeError, RecursionError):
            return "document", None
        if isinstance(record, dict):
            rest = stripped[len(first_line):].lstrip()
            if not rest:
                return "single", record
            if rest.startswith("{"):
                return "jsonl", record
            return "document", None
    if stripped.startswith(("{", "[")):
        return "document", None
    return "none", "not JSON (the first byte is not '{' or '[')"


def head_text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace")


def sniff_jsonl_records(head: bytes, lines: int) -> tuple[list[dict[str, Any]], str | None]:
    """The JSON objects among the first `lines` lines of a JSONL head, or why it is not JSONL."""
    shape, first = sniff_json_head(head)
    if shape not in ("jsonl", "single"):
        return [], "not JSONL" if shape == "document" else first
    records = []
    for raw in head.splitlines()[:lines]:
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # the head may cut its last line
        if isinstance(record, dict):
            records.append(record)
    return records, None


def sniff_json_object_text(head: bytes) -> tuple[str, str | None]:
    """The head of a single JSON-object document as text, or why it is not one."""
    shape, first = sniff_json_head(head)
    if shape not in ("document", "single"):
        return "", "not a single JSON document" if shape == "jsonl" else first
    text = head_text(head)
    if not text.lstrip().startswith("{"):
        return "", "not a JSON object"
    return text, None


__all__ = [
    "FormatInfo", "FileReport", "Node", "SessionBuilder", "Source", "TraceError", "any_usage", "anthropic_image_tokens",
    "arguments_of", "detect", "formats", "frozen", "image_size", "image_tokens", "locate", "openai_image_tokens",
    "read_trace", "read_traces", "register", "sniff_json_head", "sniff_json_object_text", "sniff_jsonl_records",
    "split_model", "text_of", "usage_anthropic",
    "usage_native", "usage_openai", "format_ts", "parse_ts", "ToolCall",
]


def _key(message: Message) -> tuple[Any, ...]:
    return (message.role, message.content.strip(), tuple(c.id for c in message.tool_calls), message.tool_call_id)


class Conversation:
    """Sessions from logged exchanges: each request's message list, then its response.

    A request whose messages extend the conversation so far adds only the new ones, then the
    response (one assistant message with its usage). A request that does not extend it (the
    agent rewrote its history: a compaction, a fresh start) begins a new session; the history
    it restates keeps its user and tool messages, and restated assistant messages become
    `summary` messages (they were not requests of this session: a request is a response the
    log holds).
    """

    def __init__(self, base_id: str, **header: Any) -> None:
        self.base_id = base_id
        self.header = header
        self.builders: list[SessionBuilder] = []
        self.keys: list[tuple[Any, ...]] = []
        self.system: str | None = None
        self.tools: list[Any] | None = None

    def _new(self, system: str | None, tools: list[Any] | None, reason: str | None, ts: str | None) -> SessionBuilder:
        previous = self.builders[-1] if self.builders else None
        sid = self.base_id if previous is None else f"{self.base_id}/part-{len(self.builders) + 1}"
        builder = SessionBuilder(sid, **{**self.header, "system": system, "tools": tools})
        if previous is not None:
            builder.extra["continues"] = previous.id
            if reason:
                builder.event(reason, ts, inferred=True)
        self.builders.append(builder)
        self.keys = []
        self.system, self.tools = system, tools
        return builder

    def exchange(self, request: list[Message], response: Message | None, system: str | None = None,
                 tools: list[Any] | None = None) -> None:
        builder = self.builders[-1] if self.builders else None
        keys = [_key(m) for m in request]
        n = len(self.keys)
        extends = builder is not None and keys[:n] == self.keys and system == self.system and (
            tools is None or self.tools is None or tools == self.tools)
        if builder is None:
            builder = self._new(system, tools, None, None)
            fresh = request
        elif extends:
            fresh = request[n:]
        else:
            ts = (request[-1].ts if request else None) or (response.ts if response else None)
            shorter = sum(len(m.content) for m in request) < sum(len(m.content) for m in builder.messages)
            builder = self._new(system, tools, "compaction" if shorter else "history_rewritten", ts)
            fresh = [m if m.role != "assistant" else _restated(m) for m in request]
        for message in fresh:
            builder.add(message)
        self.keys.extend(keys[n:] if extends else keys)
        if response is not None:
            builder.add(response)
            self.keys.append(_key(response))

    def sessions(self) -> list[Session]:
        return [b.build() for b in self.builders if b.messages or b.events]


def _restated(message: Message) -> Message:
    text = message.content
    if message.tool_calls:
        calls = "\n".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in message.tool_calls)
        text = f"{text}\n{calls}" if text else calls
    return Message("summary", text, ts=message.ts, extra_tokens=message.extra_tokens,
                   extra=frozen({**message.extra, "restated_assistant": True}), line=message.line)
