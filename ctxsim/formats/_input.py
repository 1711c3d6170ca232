"""Reading inputs: `read_traces` reads files, directories (searched recursively), `-` for stdin and gzip
(by its magic bytes, `open_input`) into one Trace, each file by the format its first bytes show unless
`--format` says otherwise, every one through its reader's `parse`; `FileReport` says what each file held
besides its sessions; `--max-messages` is counted over the whole call."""

from __future__ import annotations

import hashlib
import io
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import IO, Any

from ctxsim._support.collector import gc_paused
from ctxsim._support.fileio import Limits, input_limits
from ctxsim.errors import CtxsimError, TraceError, did_you_mean
from ctxsim.formats import SNIFF_BYTES, FormatInfo, detect, formats
from ctxsim.formats._plausible import plausible_models
from ctxsim.formats._source import Source
from ctxsim.model import Session, Trace


@dataclass
class FileReport:
    """What reading one input found besides its sessions."""

    path: str
    format: str
    sessions: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class MessageBudget:
    """`--max-messages` over one reading (a `read_traces` call, a stream): every reader counts each message."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.path = ""

    def add(self, line: int | None, n: int = 1) -> None:
        """Count `n` messages read (at `line` of the file being read); over the limit, the error."""
        self.count += n
        if self.count > self.limit:
            raise TraceError(self.path, line, f"more than --max-messages ({self.limit:,}) messages; pass a "
                                              "larger --max-messages to read this trace")


_budget: MessageBudget | None = None


def count_message(line: int | None, n: int = 1) -> None:
    """Count `n` messages read (at `line` of the file being read); over `--max-messages`, the error."""
    budget = _budget
    if budget is not None:
        budget.add(line, n)


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
    _budget = outer or MessageBudget(limits.max_messages)
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
            found, ignored = scan_directory(path, fmt, limits)
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
            info, sessions, digest, file_report = read_one(path, data, fmt, skip_bad_lines, limits)
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
    stems = [stem(p) for p, _ in files]
    name = stems[0] if len(stems) == 1 else (stem(paths[0]) if len(paths) == 1 else f"{stems[0]}+{len(stems) - 1}")
    digest = digests[0] if len(digests) == 1 else "sha256:" + hashlib.sha256(
        "\n".join(digests).encode()).hexdigest()
    return Trace(name=name, sessions=tuple(out), digest=digest)


def stem(path: str) -> str:
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


def scan_directory(root: str, fmt: str | None, limits: Limits | None = None
                   ) -> tuple[list[str], list[tuple[str, str]]]:
    """Trace files under `root` (recursively, sorted): those a format accepts by their first bytes;
    and the other files, with why they were left out (FileReport entries with no format). `limits`:
    the command's (`input_limits()`) unless given."""
    limits = limits if limits is not None else input_limits()
    found: list[str] = []
    ignored: list[tuple[str, str]] = []
    infos: dict[str, FormatInfo] = {}
    table = formats()
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            try:
                head = head_of(path, limits)
            except (CtxsimError, *READ_ERRORS) as exc:
                ignored.append((path, f"cannot read it ({exc})"))
                continue
            if not head.strip():
                ignored.append((path, "empty"))
                continue
            if fmt is not None:
                why = table[fmt].sniff(head)
                if why is None:
                    found.append(path)
                    infos[path] = table[fmt]
                else:
                    ignored.append((path, f"not {fmt}: {why}"))
                continue
            try:
                infos[path] = detect(path, head)
            except CtxsimError:
                ignored.append((path, "not a trace format ctxsim reads"))
                continue
            found.append(path)
    kept = []
    for path in found:
        covered = infos[path].covered_by
        other = covered(path) if covered is not None else None
        if other is not None and other in infos:
            ignored.append((path, f"read with {os.path.basename(other)} beside it"))
        else:
            kept.append(path)
    return kept, ignored


MAX_FIRST_LINE = 1 << 23  # read on (up to 8 MiB) until the first line is whole
READ_ERRORS = (OSError, EOFError, zlib.error)
# A JSONL input no sniffer accepts is read as the pinned native format, whose reader names the exact
# line and field that is wrong (the message then lists every format's refusal too).
JSONL_FALLBACK = "native"


def head_of(path: str, limits: Limits | None = None) -> bytes:
    """The first bytes of `path` (decompressed), read on until its first line is whole (up to MAX_FIRST_LINE)."""
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


def read_one(path: str, data: bytes | None, fmt: str | None, skip_bad_lines: bool, limits: Limits
             ) -> tuple[FormatInfo, list[Session], str, FileReport]:
    """One file (or stdin's `data`) read by `fmt` or the format its first bytes show: its format, sessions,
    digest and report."""
    table = formats()
    if data is not None:  # stdin, already decompressed (`read_stdin`)
        cut = data.find(b"\n", SNIFF_BYTES - 1)
        head = data[:max(SNIFF_BYTES, cut + 1 if 0 <= cut < MAX_FIRST_LINE else SNIFF_BYTES)]
    else:
        try:
            head = head_of(path, limits)
        except READ_ERRORS as exc:
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
                try:
                    return _read_with(table[JSONL_FALLBACK], path, data, skip_bad_lines, limits)
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
        if info.parse is None:  # a (third-party) reader of paths only
            try:
                trace = info.load(path)
            except READ_ERRORS as exc:
                raise TraceError(path, None, f"cannot read the file ({exc})") from None
            except RecursionError:
                raise TraceError(path, None, "JSON nested too deeply") from None
            sessions, digest = list(trace.sessions), trace.digest
        else:
            hashing = HashingStream(stream)
            source = Source(path, skip_bad_lines, limits.max_line_bytes, strict=info.strict)
            try:
                sessions = info.parse(io.BufferedReader(hashing, 1 << 16), source)
            except READ_ERRORS as exc:
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
    sessions = plausible_models(sessions, file_report.notes)
    file_report.sessions = len(sessions)
    return info, sessions, digest, file_report


class HashingStream(io.RawIOBase):
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

