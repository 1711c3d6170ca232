"""What a trace recorded as billed, and how far the unmanaged replay (`none`) is from it.

Every cost ctxsim prints rests on `none` being what the provider billed, so every replay and
compare table carries a `recorded` row beside it: the requests that recorded usage, their
prompt (inclusive input), cache reads and writes, output and peak prompt, priced with
genai-prices from the recorded usage (each request at its own model and time), and, where the
log keeps one, the trace's own cost (`Session.extra["recorded_totals"]["cost_usd"]`, else the
per-request `Usage.extra["cost_usd"]`, both decimal strings).

A session that kept only run totals (SWE-agent's `model_stats`) gives a row from those totals
when no request of the trace recorded usage; reads, writes and peak are then unknown.

`none` is compared over the same requests (the rows whose `recorded_input_tokens` is set), so a
trace with usage on only part of its requests is compared like for like. It is "off the bill"
when its cost or its input differs by more than `WARN_SHARE` (3 %); the trace's own cost is
flagged when ctxsim's price differs from it by more than `OWN_COST_SHARE` (5 %).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ctxsim.model import Session, Trace

WARN_SHARE = Decimal("0.03")
OWN_COST_SHARE = Decimal("0.05")
PER_REQUEST = "per-request usage"
RUN_TOTALS = "run totals"


@dataclass(frozen=True)
class Recorded:
    """The recorded bill of a trace (what the provider reported), priced by ctxsim."""

    source: str  # PER_REQUEST or RUN_TOTALS
    requests: int  # requests the figures cover
    requests_total: int  # requests (responses) in the trace
    input_tokens: int
    cache_read_tokens: int | None  # None: the log does not say (run totals)
    cache_write_tokens: int | None
    cache_write_1h_tokens: int | None
    output_tokens: int
    peak_context_tokens: int | None
    cost_usd: Decimal  # genai-prices from the recorded usage
    unpriced_requests: int = 0
    own_cost_usd: Decimal | None = None  # the trace's own cost, where it records one
    own_cost_sessions: int = 0  # sessions whose own cost is known (and that the row covers)
    sessions: int = 0  # sessions the row covers
    own_priced_usd: Decimal | None = None  # ctxsim's price of those same sessions
    estimated_outputs: int = 0  # responses whose streaming-placeholder output count the calibration estimated
    logged_cost_usd: Decimal | None = None  # with those outputs as logged (what `inspect` shows); None: none estimated

    @property
    def own_cost_error(self) -> Decimal | None:
        """ctxsim's price relative to the trace's own cost (priced / own - 1)."""
        if self.own_cost_usd is None or not self.own_cost_usd or self.own_priced_usd is None:
            return None
        return self.own_priced_usd / self.own_cost_usd - 1

    @property
    def own_cost_flagged(self) -> bool:
        error = self.own_cost_error
        return error is not None and abs(error) > OWN_COST_SHARE

    def to_json(self) -> dict[str, Any]:
        error = self.own_cost_error
        return {
            "source": self.source, "requests": self.requests, "requests_total": self.requests_total,
            "input_tokens": self.input_tokens, "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens, "cache_write_1h_tokens": self.cache_write_1h_tokens,
            "output_tokens": self.output_tokens, "peak_context_tokens": self.peak_context_tokens,
            "cost_usd": str(self.cost_usd), "unpriced_requests": self.unpriced_requests,
            "own_cost_usd": None if self.own_cost_usd is None else str(self.own_cost_usd),
            "own_cost_sessions": self.own_cost_sessions, "sessions": self.sessions,
            "own_priced_usd": None if self.own_priced_usd is None else str(self.own_priced_usd),
            "own_cost_error": None if error is None else f"{error:.6f}",
            "own_cost_flagged": self.own_cost_flagged,
            "estimated_outputs": self.estimated_outputs,
            "logged_cost_usd": None if self.logged_cost_usd is None else str(self.logged_cost_usd),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recorded:
        own, priced = data.get("own_cost_usd"), data.get("own_priced_usd")
        return cls(
            data["source"], int(data["requests"]), int(data["requests_total"]), int(data["input_tokens"]),
            data.get("cache_read_tokens"), data.get("cache_write_tokens"), data.get("cache_write_1h_tokens"),
            int(data["output_tokens"]), data.get("peak_context_tokens"), Decimal(data["cost_usd"]),
            int(data.get("unpriced_requests") or 0), None if own is None else Decimal(own),
            int(data.get("own_cost_sessions") or 0), int(data.get("sessions") or 0),
            None if priced is None else Decimal(priced), int(data.get("estimated_outputs") or 0),
            None if data.get("logged_cost_usd") is None else Decimal(data["logged_cost_usd"]))


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        out = Decimal(str(value))
    except InvalidOperation:
        return None
    return out if out.is_finite() and out >= 0 else None


def own_cost(session: Session) -> Decimal | None:
    """The session's own recorded cost: its run total, else the sum of its requests' costs."""
    totals = session.extra.get("recorded_totals") or {}
    total = _decimal(totals.get("cost_usd")) if isinstance(totals, dict) else None
    if total is not None:
        return total
    found = [_decimal(m.usage.extra.get("cost_usd")) for m in session.messages
             if m.role == "assistant" and m.usage is not None and m.usage.extra.get("cost_usd") is not None]
    costs = [c for c in found if c is not None]
    return sum(costs, Decimal(0)) if costs else None


class _Pricers:
    """One Pricer per (provider, model); the replay's pricer where a model has no price."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self.memo: dict[tuple[str, str], Any] = {}

    def get(self, provider: str | None, model: str | None) -> Any:
        from ctxsim.errors import CtxsimError
        from ctxsim.pricing.prices import Pricer

        if not model:
            return self.fallback
        key = (provider or "", model)
        if key not in self.memo:
            try:
                self.memo[key] = Pricer(provider or "", model)
            except CtxsimError:
                self.memo[key] = self.fallback
        return self.memo[key]


def recorded_of(trace: Trace, fallback: Any = None) -> Recorded | None:
    """The recorded bill of `trace`; None when it recorded no usage at all (no row, no claim).

    `fallback` (a Pricer) prices requests whose own model has no price (or names none).
    """
    bill = RecordedSum(fallback)
    for session in trace.sessions:
        bill.add(session)
    return bill.result()


class RecordedSum:
    """`recorded_of` added up session by session (a trace read as a stream): `add` each session in order,
    then `result()` is what `recorded_of` of the whole trace is. Holds sums, not sessions."""

    def __init__(self, fallback: Any = None) -> None:
        self.pricers = _Pricers(fallback)
        self.total = 0  # every request of the trace
        # per request (the messages' usage)
        self.requests = self.inputs = self.reads = self.writes = self.writes_1h = self.outputs = 0
        self.peak = self.unpriced = self.estimated = 0
        self.cost = self.logged = Decimal(0)
        self.covered: list[tuple[Decimal | None, Decimal]] = []  # (session's own cost, ctxsim's price of it)
        # else the sessions' recorded run totals
        self.run_requests = self.run_inputs = self.run_outputs = self.run_unpriced = 0
        self.run_cost = Decimal(0)
        self.run_covered: list[tuple[Decimal | None, Decimal]] = []

    def add(self, session: Session) -> None:
        from ctxsim.pricing.prices import Bill

        self.total += session.requests
        mine = Decimal(0)
        seen = False
        for m in session.messages:
            if m.role != "assistant" or m.usage is None or m.usage.input_tokens <= 0:
                continue
            u = m.usage
            seen = True
            self.requests += 1
            self.inputs += u.input_tokens
            self.reads += u.cache_read_tokens
            self.writes += u.cache_write_tokens
            self.writes_1h += u.cache_write_1h_tokens
            self.outputs += u.output_tokens
            self.peak = max(self.peak, u.input_tokens)
            pricer = self.pricers.get(session.provider, m.model or session.model)
            if pricer is None:
                self.unpriced += 1
                continue
            priced = pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                      u.cache_write_1h_tokens, u.output_tokens), m.ts_s if m.ts else None)
            mine += priced
            logged = u.extra.get("output_recorded") if u.extra.get("output_estimated") else None
            if isinstance(logged, int):  # a placeholder estimated: the bill as logged beside it
                self.estimated += 1
                priced = pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                          u.cache_write_1h_tokens, logged), m.ts_s if m.ts else None)
            self.logged += priced
        own = own_cost(session) if seen else None
        if seen:
            self.covered.append((own, mine))
            self.cost += mine
        if self.requests:  # the run totals are used only when no message recorded usage
            self.run_covered.clear()
            return
        totals = session.extra.get("recorded_totals") or {}
        if not isinstance(totals, dict) or totals.get("input_tokens") is None:
            return
        sent, received = int(totals["input_tokens"]), int(totals.get("output_tokens") or 0)
        calls = int(totals.get("requests") or session.requests)
        self.run_requests += calls
        self.run_inputs += sent
        self.run_outputs += received
        pricer = self.pricers.get(session.provider, session.model)
        priced = Decimal(0)
        if pricer is None:
            self.run_unpriced += calls
        else:
            priced = pricer.cost(Bill(sent, output_tokens=received), None)
        self.run_cost += priced
        self.run_covered.append((own_cost(session), priced))

    def result(self) -> Recorded | None:
        if self.requests:
            return Recorded(PER_REQUEST, self.requests, self.total, self.inputs, self.reads, self.writes,
                            self.writes_1h, self.outputs, self.peak, self.cost, self.unpriced, *_own(self.covered),
                            estimated_outputs=self.estimated, logged_cost_usd=self.logged if self.estimated else None)
        if not self.run_covered:
            return None
        return Recorded(RUN_TOTALS, self.run_requests, self.total, self.run_inputs, None, None, None,
                        self.run_outputs, None, self.run_cost, self.run_unpriced, *_own(self.run_covered))


def _own(covered: list[tuple[Decimal | None, Decimal]]) -> tuple[Decimal | None, int, int, Decimal | None]:
    """(own cost, sessions that record it, sessions covered, ctxsim's price of those sessions)."""
    known = [(c, priced) for c, priced in covered if c is not None]
    if not known:
        return None, 0, len(covered), None
    return (sum((c for c, _ in known), Decimal(0)), len(known), len(covered),
            sum((p for _, p in known), Decimal(0)))


# ---------------------------------------------------------------- none against the bill


@dataclass(frozen=True)
class Gap:
    """`none` over the recorded requests, against the recorded bill."""

    requests: int
    input_tokens: int
    cost_usd: Decimal
    peak_context_tokens: int
    input_error: Decimal | None  # none / recorded - 1
    cost_error: Decimal | None

    @property
    def off(self) -> bool:
        return any(e is not None and abs(e) > WARN_SHARE for e in (self.input_error, self.cost_error))

    def to_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "input_tokens": self.input_tokens, "cost_usd": str(self.cost_usd),
                "peak_context_tokens": self.peak_context_tokens,
                "input_error": None if self.input_error is None else f"{self.input_error:.6f}",
                "cost_error": None if self.cost_error is None else f"{self.cost_error:.6f}",
                "off_by_more_than_3pct": self.off}


def _ratio(new: Decimal | int, old: Decimal | int) -> Decimal | None:
    return Decimal(new) / Decimal(old) - 1 if old else None


def gap(recorded: Recorded, rows: list[Any], totals: Any) -> Gap:
    """`none`'s rows (and totals) against the recorded bill, over the requests that recorded usage."""
    if recorded.source == PER_REQUEST:
        mine = [r for r in rows if r.kind == "request" and r.recorded_input_tokens is not None
                and r.recorded_input_tokens > 0]
        inputs = sum(r.input_tokens for r in mine)
        cost = sum((r.cost_usd for r in mine), Decimal(0))
        peak = max((r.context_tokens for r in mine), default=0)
        count = len(mine)
    else:
        inputs, cost, peak, count = totals.input_tokens, totals.cost_usd, totals.peak_context_tokens, totals.requests
    return Gap(count, inputs, cost, peak, _ratio(inputs, recorded.input_tokens), _ratio(cost, recorded.cost_usd))


def signed(value: Decimal | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def warning(recorded: Recorded, g: Gap) -> str | None:
    """The one line said above a table when `none` is more than 3 % off the recorded bill, else None."""
    if not g.off:
        return None
    return (f"warning: the unmanaged replay (none) is off the recorded bill by more than 3% "
            f"(cost {signed(g.cost_error)}, input {signed(g.input_error)} over {g.requests:,} recorded requests): "
            "savings below are relative to a baseline that does not match what was billed")


def gap_line(g: Gap) -> str:
    """`none` against the bill when it is within 3 %."""
    return (f"none against the recorded bill: cost {signed(g.cost_error)}, input {signed(g.input_error)} "
            f"over {g.requests:,} recorded requests (within 3%)")


def coverage_line(recorded: Recorded) -> str | None:
    """Said when the recorded row covers only part of the trace; None when it covers every request."""
    if recorded.source == RUN_TOTALS:
        return (f"the recorded row is the trace's run totals ({recorded.requests:,} calls): no per-request usage, so "
                "no cache reads, writes or peak")
    if recorded.requests < recorded.requests_total:
        return (f"the recorded row covers the {recorded.requests:,} of {recorded.requests_total:,} requests that "
                "recorded usage; none is compared over the same requests")
    return None


def estimated_line(recorded: Recorded) -> str | None:
    """Said when the recorded figure has estimates in place of streaming-placeholder output counts: both bills and
    their difference; None when nothing was estimated."""
    if not recorded.estimated_outputs or recorded.logged_cost_usd is None:
        return None
    diff = recorded.cost_usd - recorded.logged_cost_usd
    return (f"recorded, est.: {recorded.estimated_outputs:,} response(s) logged a streaming placeholder as their "
            f"output count; with the counted size of their content in its place the recorded bill is "
            f"${recorded.cost_usd:,.4f}, as logged (what inspect shows) ${recorded.logged_cost_usd:,.4f} "
            f"({'+' if diff >= 0 else '-'}${abs(diff):,.4f})")


def own_cost_line(recorded: Recorded) -> str | None:
    """The trace's own cost beside ctxsim's price, flagged over 5 %; None when the trace records none."""
    if recorded.own_cost_usd is None:
        return None
    part = (f" ({recorded.own_cost_sessions} of {recorded.sessions} sessions)"
            if recorded.own_cost_sessions != recorded.sessions else "")
    text = (f"the trace's own cost{part}: ${recorded.own_cost_usd:,.4f}; ctxsim priced its recorded usage at "
            f"${recorded.own_priced_usd or 0:,.4f} ({signed(recorded.own_cost_error)})")
    if recorded.own_cost_flagged:
        text += ": more than 5% apart (the price data may lag the provider, or the trace priced otherwise)"
    return text


# ---------------------------------------------------------------- calibration, said once


def calibration_entry(trace: Trace, calibration: Any) -> dict[str, Any]:
    """What run.json records of the calibration: the fit and its quality, or why there is none."""
    if calibration is not None:
        return {"applied": True, **calibration.to_json()}
    usage = UsageCount()
    for session in trace.sessions:
        usage.add(session)
    return usage.entry()


class UsageCount:
    """The requests that recorded usage, counted session by session (a trace read as a stream)."""

    def __init__(self) -> None:
        self.requests = 0  # assistant messages with usage
        self.excluded = 0  # of those, the first after a compaction (the fit leaves them out)

    def add(self, session: Session) -> None:
        compacted = any(e.name == "compaction" for e in session.events)
        index = 0
        for m in session.messages:
            if m.role != "assistant":
                continue
            index += 1
            if m.usage is not None and m.usage.input_tokens > 0:
                self.requests += 1
                self.excluded += compacted and index == 1  # its prompt holds a summary whose call is not logged

    def entry(self) -> dict[str, Any]:
        """`calibration_entry` when there was no fit."""
        from ctxsim.analysis.calibrate import MIN_REQUESTS

        n, excluded = self.requests, self.excluded
        usable = n - excluded
        if n == 0:
            reason = "no request recorded its usage: replayed with the default framing and no hidden prefix"
        elif usable < MIN_REQUESTS:
            reason = (f"too few points: {usable} usable request(s) with recorded usage"
                      + (f" (plus {excluded} first after a compaction, which the fit leaves out)" if excluded else "")
                      + f", {MIN_REQUESTS} needed for a fit")
        else:
            reason = f"no fit from the {usable} requests with usage (degenerate): replayed raw"
        return {"applied": False, "reason": reason, "requests_with_usage": n}


def not_calibrated() -> dict[str, Any]:
    return {"applied": False, "reason": "not asked (--no-calibrate): replayed raw"}


def calibration_line(manifest: dict[str, Any]) -> str | None:
    """One line on the calibration the run used (or why none), for the terminal; None when not recorded."""
    entry = manifest.get("calibration")
    if entry is None:
        return None
    if isinstance(entry, str):  # artefacts written before the entry was a dict
        return f"calibration: {entry}"
    if not entry.get("applied", "scale" in entry):
        return f"not calibrated: {entry.get('reason', 'no fit')}"
    # The prefix the replay really adds is per session part; one number only where they are all alike.
    parts = sorted(set((entry.get("session_prefix_tokens") or {}).values()))
    groups = entry.get("group_prefix_tokens") or {}
    prefix = f"{entry.get('hidden_prefix_tokens', 0):,}"
    if len(parts) > 1:
        prefix = f"{parts[0]:,}-{parts[-1]:,} (per session part)"
    elif parts:
        prefix = f"{parts[0]:,}"
    elif len(set(groups.values())) > 1:
        prefix += " (" + ", ".join(f"{g} {p:,}" for g, p in sorted(groups.items())) + ")"
    return (f"calibrated on {entry.get('requests_used', 0):,} recorded requests: hidden prefix {prefix} tokens, "
            f"scale {float(entry.get('scale', 1)):.4f}, overhead {entry.get('message_tokens', 0)} tokens/message"
            "; --no-calibrate replays raw")


def calibration_notes(manifest: dict[str, Any]) -> list[str]:
    """What the calibration said of the trace (breaks, fallbacks, anchors), one line each, below its line."""
    entry = manifest.get("calibration")
    if not isinstance(entry, dict) or not entry.get("applied", "scale" in entry):
        return []
    return [f"calibration: {n}" for n in entry.get("notes") or []]


def recorded_json(result: Any) -> dict[str, Any] | None:
    """The `recorded` entry of `--json`: the bill, `none` against it, and the lines said about them."""
    from ctxsim.replay.run import recorded_gap, recorded_of_result

    rec = recorded_of_result(result)
    if rec is None:
        return None
    pair = recorded_gap(result)
    g = pair[1] if pair is not None else None
    return {"totals": result.manifest["recorded"], "none": g.to_json() if g is not None else None,
            "warning": warning(rec, g) if g is not None else None, "own_cost": own_cost_line(rec)}


def own_cost_json(trace: Trace) -> dict[str, Any] | None:
    """For `inspect`: the trace's own cost beside ctxsim's price of the same sessions; None when it records none."""
    rec = recorded_of(trace)
    if rec is None or rec.own_cost_usd is None:
        return None
    error = rec.own_cost_error
    part = f", {rec.own_cost_sessions} of {rec.sessions} sessions" if rec.own_cost_sessions != rec.sessions else ""
    text = (f"${rec.own_cost_usd:,.4f} (ctxsim ${rec.own_priced_usd or 0:,.4f}, {signed(error)}{part})"
            + (" ! more than 5% apart" if rec.own_cost_flagged else ""))
    return {"own_cost_usd": str(rec.own_cost_usd),
            "priced_usd": None if rec.own_priced_usd is None else str(rec.own_priced_usd),
            "error": None if error is None else f"{error:.6f}", "flagged": rec.own_cost_flagged,
            "sessions": rec.own_cost_sessions, "text": text}
