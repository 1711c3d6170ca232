"""Accounting across a corpus: what the recorded requests cost, grouped by day, week, month,
session, project, model or 5-hour billing block, read file by file.

Memory is bounded by the largest session, not the corpus: each file is read, reduced to one
small `Charge` per recorded response (times, tokens, cost; no messages) and dropped before the
next. A response that appears in two files (Claude Code copies them into resumed sessions and
subagent files) counts once, by its request and message ids, as in the readers' `link`.

Times are grouped in one explicit zone (`--timezone`, default UTC so that the same files give the
same output anywhere; ccusage uses the machine's local zone). Sessions are named by their project
and start time in that zone. Billing blocks are global (one account's plan): a block starts at its
first request's hour, floored, lasts 5 hours, and the first request after it ends starts the next.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ctxsim.analysis.inspect import Prices, Totals, totals_of
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, read_traces
from ctxsim.model import Session, Trace
from ctxsim.pricing.prices import Bill

if TYPE_CHECKING:
    from ctxsim.analysis.file_index import Entry, Index

KEYS = ("day", "week", "month", "session", "project", "model", "block")
BLOCK_S = 5 * 3600


@dataclass(slots=True)
class Charge:
    """One recorded response, reduced to what accounting needs."""

    ts_s: float | None
    session: str  # the logical session's key (its parts and subagents fold into it)
    project: str
    source: str
    model: str
    has_usage: bool
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = None


def zone(name: str | None) -> tzinfo:
    if not name or name.upper() == "UTC":
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CtxsimError(f"--timezone: unknown time zone {name!r} (an IANA name such as Europe/Paris, or UTC)") \
            from None


def parse_day(text: str, option: str) -> date:
    t = text.strip()
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(t, fmt).date()
        except ValueError:
            pass
    raise CtxsimError(f"{option} must be a date YYYY-MM-DD or YYYYMMDD, got {text!r}")


# ---------------------------------------------------------------- projects


def _escaped(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def project_of(path: str, session: Session, source: str, home: str | None = None) -> str:
    """The project a session belongs to, as each product files it."""
    extra = session.extra
    cwd = extra.get("cwd")
    if isinstance(cwd, str) and cwd:
        return re.split(r"[\\/]", cwd.rstrip("/\\"))[-1] or cwd  # POSIX or Windows paths
    if source == "gemini-cli" and extra.get("project_hash"):
        return f"gemini:{str(extra['project_hash'])[:12]}"
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    if source == "claude-code" and "projects" in parts:
        i = len(parts) - 1 - parts[::-1].index("projects")
        if i + 1 < len(parts) - 1:
            folder = parts[i + 1]
            home_escaped = _escaped((home or "").rstrip("/")) if home else ""
            if home_escaped and folder.startswith(home_escaped + "-"):
                return folder[len(home_escaped) + 1:]
            return folder.lstrip("-") or folder
    if source == "cline":
        return f"task {parts[-2]}" if len(parts) > 1 else "task"
    return parts[-2] if len(parts) > 1 else "."


def _logical(session: Session) -> str:
    extra = session.extra
    for key in ("claude_session_id", "codex_session_id"):
        if extra.get(key):
            return f"{key[:-11]}:{extra[key]}"
    return session.id.split("/part-")[0].split("/agent-")[0]


# ---------------------------------------------------------------- reading


def charges_of(trace: Trace, path: str, source: str, prices: Prices, seen: set[int],
               home: str | None) -> Iterator[Charge]:
    for digest, charge in file_charges(trace, path, source, prices, home):
        if digest is not None:
            if digest in seen:
                continue  # a copy of a response counted in another file
            seen.add(digest)
        if charge is not None:
            yield charge


def file_charges(trace: Trace, path: str, source: str, prices: Prices,
                 home: str | None) -> Iterator[tuple[int | None, Charge | None]]:
    """Each recorded response's (id digest or None, charge); the charge is None for a response the reader
    marked as a copy of one counted elsewhere (its digest still marks it seen)."""
    for session in trace.sessions:
        project = project_of(path, session, source, home)
        key = _logical(session)
        for m in session.messages:
            if m.role != "assistant":
                continue
            ids = (m.extra.get("request_id"), m.extra.get("message_id"))
            digest = None
            if ids != (None, None) and m.usage is not None:
                # 8 bytes of a hash, not the id strings: the set lives as long as the corpus read
                digest = int.from_bytes(hashlib.blake2b(f"{ids[0]}\0{ids[1]}".encode(), digest_size=8).digest(), "big")
            if m.extra.get("copy_of_counted_response"):
                yield digest, None
                continue
            model = sys.intern(m.model or session.model or "unknown")  # one string per model, not per request
            c = Charge(m.ts_s if m.ts else None, key, project, source, model, m.usage is not None)
            u = m.usage
            if u is not None:
                c.input_tokens, c.cache_read_tokens = u.input_tokens, u.cache_read_tokens
                c.cache_write_tokens, c.cache_write_1h_tokens = u.cache_write_tokens, u.cache_write_1h_tokens
                c.output_tokens = u.output_tokens
                pricer = prices.get(session.provider, m.model or session.model)
                if pricer is not None:
                    c.cost_usd = pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                                  u.cache_write_1h_tokens, u.output_tokens), c.ts_s)
            yield digest, c


@dataclass
class Corpus:
    charges: list[Charge]
    files: int
    sessions: int
    notes: list[str]
    reports: list[FileReport] = field(default_factory=list)
    breaks: list[Any] = field(default_factory=list)  # cache_breaks.Break, sessions named by logical key
    index_read: int = 0  # files read from the trace (an index in use)
    index_served: int = 0  # files served from the index


def read_file(path: str, fmt: str | None, skip_bad_lines: bool, home: str | None) -> Entry:
    """What the accounting takes from one file (its own price lookups: entries are read alone)."""
    from ctxsim.analysis.cache_breaks import breaks_of
    from ctxsim.analysis.file_index import Entry

    prices = Prices()
    mine: list[FileReport] = []
    trace = read_traces([path], fmt, skip_bad_lines, mine)
    reports: list[FileReport] = []
    notes: list[str] = []
    for r in mine:
        if r.format:
            reports.append(FileReport(r.path, r.format, r.sessions, list(r.skipped_lines), []))
            notes.extend(f"{r.path}: {n}" for n in r.notes)
    source = next((r.format for r in mine if r.format), fmt or "?")
    charges = list(file_charges(trace, path, source, prices, home))
    found = breaks_of(trace, {s.id: _logical(s) for s in trace.sessions}, prices)
    return Entry(source, len(trace.sessions), reports, notes, prices.notes, charges, found)


def read_corpus(inputs: Iterable[tuple[str, str | None]], skip_bad_lines: bool = False,
                home: str | None = None, index: Index | None = None) -> Corpus:
    """Read each (path, format or None) one at a time into small charges; the trace is dropped after each.
    With an index, a file unchanged since it was last read is served from it instead (file_index)."""
    found: list[Any] = []
    seen: set[int] = set()
    charges: list[Charge] = []
    files = sessions = 0
    notes: list[str] = []
    price_notes: dict[str, None] = {}
    reports: list[FileReport] = []
    for path, fmt in inputs:
        entry = None
        stamp = index.stamp_of(path) if index is not None and path != "-" else None
        if stamp is not None and index is not None:
            entry = index.get(path, fmt, skip_bad_lines, home, stamp, decoded_entry)
        if entry is None:
            entry = read_file(path, fmt, skip_bad_lines, home)
            if stamp is not None and index is not None:
                index.put(path, fmt, skip_bad_lines, home, stamp, entry)
        files += len(entry.reports)
        reports.extend(entry.reports)
        notes.extend(entry.notes)
        price_notes.update(dict.fromkeys(entry.price_notes))
        sessions += entry.sessions
        for digest, charge in entry.charges:
            if digest is not None:
                if digest in seen:
                    continue  # a copy of a response counted in another file
                seen.add(digest)
            if charge is not None:
                charges.append(charge)
        found.extend(entry.breaks)
        del entry
    return Corpus(charges, files, sessions, list(price_notes) + notes, reports, found,
                  index.read if index else 0, index.served if index else 0)


def cache_breaks(corpus: Corpus, tz: tzinfo, since: date | None, until: date | None) -> list[Any]:
    """The corpus's cache breaks inside the dates, sessions named as in the tables."""
    from dataclasses import replace

    from ctxsim.model import parse_ts

    names = session_names(corpus.charges, tz)
    out = []
    for b in corpus.breaks:
        if since is not None or until is not None:
            if not b.ts:
                continue
            d = local(parse_ts(b.ts), tz).date()
            if (since is not None and d < since) or (until is not None and d > until):
                continue
        out.append(replace(b, session=names.get(b.session, b.session)))
    return out


# ---------------------------------------------------------------- grouping


def local(ts_s: float, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC).astimezone(tz)


def filtered(charges: list[Charge], tz: tzinfo, since: date | None, until: date | None) -> tuple[list[Charge], int]:
    """The charges inside [since, until] (local dates, inclusive), and how many had no time to filter on."""
    if since is None and until is None:
        return charges, 0
    out, untimed = [], 0
    for c in charges:
        if c.ts_s is None:
            untimed += 1
            continue
        d = local(c.ts_s, tz).date()
        if (since is None or d >= since) and (until is None or d <= until):
            out.append(c)
    return out, untimed


def blocks(charges: list[Charge]) -> dict[int, float]:
    """id(charge) -> its 5-hour block's start (unix seconds): global over every session."""
    out: dict[int, float] = {}
    start: float | None = None
    for ts_s, c in sorted(((c.ts_s, c) for c in charges if c.ts_s is not None), key=lambda pair: pair[0]):
        if start is None or ts_s >= start + BLOCK_S:
            start = ts_s - ts_s % 3600  # the hour, floored (UTC hours; zones are whole or half hours)
        out[id(c)] = start
    return out


def session_names(charges: list[Charge], tz: tzinfo) -> dict[str, str]:
    """Logical session key -> "project YYYY-MM-DD HH:MM" (its first request, local), unique."""
    first: dict[str, tuple[float, str]] = {}
    for c in charges:
        t = c.ts_s if c.ts_s is not None else float("inf")
        if c.session not in first or t < first[c.session][0]:
            first[c.session] = (t, c.project)
    names: dict[str, str] = {}
    used: dict[str, int] = defaultdict(int)
    for key, (t, project) in sorted(first.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0])):
        name = f"{project} {local(t, tz):%Y-%m-%d %H:%M}" if t != float("inf") else f"{project} (no time)"
        used[name] += 1
        names[key] = name if used[name] == 1 else f"{name} #{used[name]}"
    return names


def group(charges: list[Charge], by: str, tz: tzinfo) -> dict[str, Totals]:
    if by not in KEYS:
        raise CtxsimError(f"--by must be one of {', '.join(KEYS)}, got {by!r}")
    names = session_names(charges, tz) if by == "session" else {}
    starts = blocks(charges) if by == "block" else {}
    groups: dict[str, list[Charge]] = defaultdict(list)
    calendar: dict[int, str] = {}  # a UTC quarter hour -> its day, week or month (offsets are whole quarters)
    for c in charges:
        ts_s = c.ts_s if c.ts_s is not None else 0.0  # read only where by time, after the check for None
        if by in ("day", "week", "month", "block") and c.ts_s is None:
            key = "no timestamp"
        elif by in ("day", "week", "month") and (quarter := int(ts_s // 900)) in calendar:
            key = calendar[quarter]
        elif by == "day":
            key = f"{local(ts_s, tz):%Y-%m-%d}"
        elif by == "week":
            d = local(ts_s, tz).date()
            monday = d - timedelta(days=d.weekday())
            key = f"{monday:%Y-%m-%d} (W{monday.isocalendar()[1]:02d})"
        elif by == "month":
            key = f"{local(ts_s, tz):%Y-%m}"
        elif by == "block":
            s = starts[id(c)]
            key = f"{local(s, tz):%Y-%m-%d %H:%M} - {local(s + BLOCK_S, tz):%H:%M}"
        elif by == "session":
            key = names[c.session]
        elif by == "project":
            key = c.project
        else:
            key = c.model
        if by in ("day", "week", "month") and c.ts_s is not None:
            calendar[int(ts_s // 900)] = key
        groups[key].append(c)
    if by == "block":  # chronological, as the keys read
        order = sorted(groups, key=lambda k: (k == "no timestamp", min(starts.get(id(c), 0.0) for c in groups[k])))
        return {k: totals(groups[k]) for k in order}
    return {k: totals(v) for k, v in sorted(groups.items())}


def totals(charges: Iterable[Charge]) -> Totals:
    return totals_of(charges)


def tz_name(tz: tzinfo) -> str:
    return "UTC" if tz is UTC else str(getattr(tz, "key", tz))


def report_json(corpus: Corpus, charges: list[Charge], by: str | None, tz: tzinfo, since: date | None,
                until: date | None, untimed: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "timezone": tz_name(tz), "since": since.isoformat() if since else None,
        "until": until.isoformat() if until else None, "files": corpus.files, "sessions": corpus.sessions,
        "requests_without_time_left_out": untimed, "totals": totals(charges).to_json(), "notes": corpus.notes,
    }
    if by:
        out["by"] = {"key": by, "groups": {k: v.to_json() for k, v in group(charges, by, tz).items()}}
    return out


def report_tables(corpus: Corpus, charges: list[Charge], by: str | None, tz: tzinfo, since: date | None,
                  until: date | None, untimed: int) -> tuple[list[Any], list[str]]:
    from ctxsim.analysis.inspect import num, usd
    from ctxsim.reports._terminal import TableData

    head = ["requests", "input", "write 5m", "write 1h", "read", "output", "hit rate", "cost"]

    def row(t: Totals) -> list[str]:
        return [num(t.requests), num(t.input_tokens), num(t.cache_write_5m_tokens), num(t.cache_write_1h_tokens),
                num(t.cache_read_tokens), num(t.output_tokens), f"{t.hit_rate * 100:.1f}%",
                usd(t.cost_usd) + (f" ({t.unpriced_requests} unpriced)" if t.unpriced_requests else "")]

    whole = totals(charges)
    out = []
    if by:
        groups = group(charges, by, tz)
        label = {"block": "5-hour block", "week": "week (Monday)"}.get(by, by)
        out.append(TableData(f"by {by} ({tz_name(tz)})", [label, *head],
                             [[k, *row(g)] for k, g in groups.items()] + [["total", *row(whole)]],
                             left=1))
    else:
        out.append(TableData(f"totals ({tz_name(tz)})", ["", *head], [["total", *row(whole)]], left=1))
    window = ("" if since is None and until is None
              else f"; from {since.isoformat() if since else 'the start'} "
                   f"to {until.isoformat() if until else 'the end'}")
    notes = [(f"{corpus.files} file(s), {corpus.sessions} session part(s) read one at a time; times in "
              f"{tz_name(tz)}{window}")]
    if untimed:
        notes.append(f"{untimed} request(s) with no time left out by --since/--until")
    notes += corpus.notes
    return out, notes


def expand(paths: list[str], fmt: str | None) -> list[tuple[str, str | None]]:
    """Each input as files (a directory searched as `read_traces` searches it), to read one at a time."""
    from ctxsim.formats import scan_directory

    out: list[tuple[str, str | None]] = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            found, ignored = scan_directory(path, fmt)
            if not found:
                raise CtxsimError(f"{path}: no trace files found in this directory"
                                  + (f" ({len(ignored)} other file(s), e.g. {ignored[0][0]}: {ignored[0][1]})"
                                     if ignored else ""))
            out.extend((f, fmt) for f in found)
        else:
            out.append((path, fmt))
    return out


def home_of(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("HOME") or os.path.expanduser("~")


def decoded_entry(data: dict[str, Any]) -> Entry:
    """An index entry from its JSON (analysis.file_index keeps the bytes, this module their meaning)."""
    import sys

    from ctxsim.analysis.cache_breaks import Break
    from ctxsim.analysis.file_index import Entry
    from ctxsim.formats import FileReport

    charges: list[tuple[int | None, Any]] = []
    for row in data["charges"]:
        if len(row) == 1:  # a response marked as a copy: its digest alone
            charges.append((row[0], None))
            continue
        d, ts_s, session, project, source, model, has_usage, i, cr, cw, cw1h, o, cost = row
        charges.append((d, Charge(ts_s, session, project, source, sys.intern(model), bool(has_usage), int(i), int(cr),
                                  int(cw), int(cw1h), int(o), None if cost is None else Decimal(cost))))
    breaks = [Break(**{**b, "rebilled_usd": None if b["rebilled_usd"] is None else Decimal(b["rebilled_usd"])})
              for b in data["breaks"]]
    reports = [FileReport(p, f, int(s), [int(n) for n in lines], [str(n) for n in notes])
               for p, f, s, lines, notes in data["reports"]]
    return Entry(str(data["source"]), int(data["sessions"]), reports, [str(n) for n in data["notes"]],
                 [str(n) for n in data["price_notes"]], charges, breaks)
