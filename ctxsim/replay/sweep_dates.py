"""`--since/--until/--timezone` for the commands that replay many sessions (`sweep`, `compare DIR|GLOB...`).

A session is in the range when the day it started (its first timed message, else the session's own
time), in `--timezone`, is on or after `--since` and on or before `--until`. A session is replayed
whole or not at all (a policy needs the history from the start), so the unit is the session, not the
request as in `inspect`. Sessions outside the range, and sessions with no time to tell, are skipped
and counted in the notes. The dates are parsed as `inspect` parses them (`analysis.accounting`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from ctxsim.errors import CtxsimError


@dataclass(frozen=True)
class DateRange:
    since: str | None  # ISO date, inclusive
    until: str | None  # ISO date, inclusive
    timezone: str  # an IANA name, or UTC

    def to_json(self) -> dict[str, str | None]:
        return {"since": self.since, "until": self.until, "timezone": self.timezone}

    def describe(self) -> str:
        parts = ([f"--since {self.since}"] if self.since else []) + ([f"--until {self.until}"] if self.until else [])
        return " ".join(parts) + f" ({self.timezone})"


def date_range(since: str | None, until: str | None, tz: str | None) -> DateRange | None:
    """The options as a range (None when neither date is given); one-line errors as inspect gives them."""
    from ctxsim.analysis.accounting import parse_day, tz_name, zone

    if since is None and until is None:
        if tz is not None:
            zone(tz)  # an unknown zone is an error even when nothing uses it
        return None
    first = parse_day(since, "--since") if since else None
    last = parse_day(until, "--until") if until else None
    if first and last and first > last:
        raise CtxsimError(f"--since {first} is after --until {last}")
    return DateRange(first.isoformat() if first else None, last.isoformat() if last else None, tz_name(zone(tz)))


def started(session: Any) -> float | None:
    """When the session started (unix seconds): its first timed message, else its own time; None if untimed."""
    from ctxsim.model import parse_ts

    for m in session.messages:
        if m.ts:
            try:
                return parse_ts(m.ts)
            except ValueError:
                continue
    if getattr(session, "ts", None):
        try:
            return parse_ts(session.ts)
        except ValueError:
            return None
    return None


def in_range(trace: Any, dates: DateRange) -> tuple[Any, int, int]:
    """(the trace with only the sessions in range, how many were outside it, how many had no time)."""
    from datetime import date, datetime

    from ctxsim.analysis.accounting import zone

    tz = zone(dates.timezone)
    first = date.fromisoformat(dates.since) if dates.since else None
    last = date.fromisoformat(dates.until) if dates.until else None
    kept, outside, untimed = [], 0, 0
    for session in trace.sessions:
        ts = started(session)
        if ts is None:
            untimed += 1
            continue
        day = datetime.fromtimestamp(ts, tz=UTC).astimezone(tz).date()
        if (first is None or day >= first) and (last is None or day <= last):
            kept.append(session)
        else:
            outside += 1
    if not outside and not untimed:
        return trace, 0, 0
    return dataclasses.replace(trace, sessions=tuple(kept)), outside, untimed
