"""Validation: replay a trace with no policy and compare each request with what it recorded.

The replay uses the trace's own provider, model and cache model (policy `none` with the
provider's rules, see `calibrate.ProviderReasoningRule`), first calibrated by
`calibrate.calibration` (the one calibration replay and compare use too) unless asked not to.
Per request it compares the simulated prompt, cache read and cache write with the recorded
usage; errors are relative to the recorded prompt, so a request that read nothing from the
cache still has a finite error. Recorded costs bill an estimate where the log holds only a
streaming placeholder output count. Where the cache cannot be known from the log, the cost is
a range (`cost_range_usd`) and the report says whether the bill lies inside it. For the
requests that differ most it says what the log shows about why (a cache kept warm outside the
log, a provider-side cache miss, a compaction whose summarising call is not logged, a prompt
that shrank with no compaction logged, a re-anchored gap, an image whose size is estimated).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from ctxsim.analysis.cache_breaks import span
from ctxsim.analysis.calibrate import KEEPS_THINKING, TAG, Calibration, ProviderReasoningRule, replay_none
from ctxsim.analysis.calibrate import calibration as calibrate_trace
from ctxsim.analysis.growth import GROWTH_MODEL
from ctxsim.caching import model_rules
from ctxsim.errors import CtxsimError
from ctxsim.model import Message, Session, Trace
from ctxsim.pricing.prices import Bill
from ctxsim.replay.engine import Setup
from ctxsim.tokens import TokenCounter, get_tokenizer, label

__all__ = [
    "KEEPS_THINKING",
    "TAG",
    "ProviderReasoningRule",
    "RequestCheck",
    "Validation",
    "quantile",
    "validate",
    "validation_tables",
]


@dataclass
class RequestCheck:
    request: int
    session: str
    index: int
    ts: str | None
    recorded_input_tokens: int
    simulated_input_tokens: int
    recorded_cache_read_tokens: int
    simulated_cache_read_tokens: int
    recorded_cache_write_tokens: int
    simulated_cache_write_tokens: int
    recorded_cost_usd: Decimal
    simulated_cost_usd: Decimal
    reasons: list[str] = field(default_factory=list)
    output_estimated: bool = False  # the recorded output count was a streaming placeholder: estimated
    anchor_tokens: int = 0  # tokens the log is missing, re-anchored just before this request

    @property
    def prompt_error(self) -> float:
        return (self.simulated_input_tokens - self.recorded_input_tokens) / self.recorded_input_tokens

    @property
    def read_error(self) -> float:
        return (self.simulated_cache_read_tokens - self.recorded_cache_read_tokens) / self.recorded_input_tokens

    @property
    def write_error(self) -> float:
        return (self.simulated_cache_write_tokens - self.recorded_cache_write_tokens) / self.recorded_input_tokens

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["recorded_cost_usd"] = str(self.recorded_cost_usd)
        out["simulated_cost_usd"] = str(self.simulated_cost_usd)
        out["prompt_error"] = round(self.prompt_error, 6)
        out["read_error"] = round(self.read_error, 6)
        out["write_error"] = round(self.write_error, 6)
        return out


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (q in 0..1) of absolute values; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(abs(v) for v in values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@dataclass
class Validation:
    trace: str
    provider: str
    model: str
    cache_model: str
    tokenizer: str
    calibrated: bool
    calibration: Calibration | None
    requests: int  # all requests replayed
    checks: list[RequestCheck]
    rules: list[str] = field(default_factory=list)
    cost_range_usd: tuple[Decimal, Decimal] | None = None  # what the log cannot tell about the cache
    session_cost_ranges: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)

    def _sum(self, key: str) -> int:
        return sum(getattr(c, key) for c in self.checks)

    @property
    def recorded_hit_rate(self) -> float:
        total = self._sum("recorded_input_tokens")
        return self._sum("recorded_cache_read_tokens") / total if total else 0.0

    @property
    def simulated_hit_rate(self) -> float:
        total = self._sum("simulated_input_tokens")
        return self._sum("simulated_cache_read_tokens") / total if total else 0.0

    def stats(self, which: str) -> dict[str, float]:
        values = [getattr(c, f"{which}_error") for c in self.checks]
        return {"median": quantile(values, 0.5), "p90": quantile(values, 0.9), "max": quantile(values, 1.0)}

    @property
    def recorded_cost(self) -> Decimal:
        return sum((c.recorded_cost_usd for c in self.checks), Decimal(0))

    @property
    def simulated_cost(self) -> Decimal:
        return sum((c.simulated_cost_usd for c in self.checks), Decimal(0))

    @property
    def recorded_in_range(self) -> bool | None:
        if self.cost_range_usd is None:
            return None
        return self.cost_range_usd[0] <= self.recorded_cost <= self.cost_range_usd[1]

    def worst(self, n: int = 10, by: str = "prompt") -> list[RequestCheck]:
        return sorted(self.checks, key=lambda c: (-abs(getattr(c, f"{by}_error")), c.request))[:n]

    def to_json(self, worst: int = 10) -> dict[str, Any]:
        rec_cost, sim_cost = self.recorded_cost, self.simulated_cost
        return {
            "trace": self.trace, "provider": self.provider, "model": self.model, "cache_model": self.cache_model,
            "tokenizer": self.tokenizer, "calibrated": self.calibrated, "provider_rules": self.rules,
            "calibration": self.calibration.to_json() if self.calibration else None,
            "requests": self.requests, "requests_with_usage": len(self.checks),
            "totals": {
                key: {"recorded": self._sum(f"recorded_{key}_tokens"),
                      "simulated": self._sum(f"simulated_{key}_tokens")}
                for key in ("input", "cache_read", "cache_write")
            },
            "hit_rate": {"recorded": round(self.recorded_hit_rate, 6), "simulated": round(self.simulated_hit_rate, 6),
                         "error_points": round((self.simulated_hit_rate - self.recorded_hit_rate) * 100, 4)},
            "cost_usd": {"recorded": str(rec_cost), "simulated": str(sim_cost),
                         "error": round(float((sim_cost - rec_cost) / rec_cost), 6) if rec_cost else None,
                         "range": [str(v) for v in self.cost_range_usd] if self.cost_range_usd else None,
                         "recorded_in_range": self.recorded_in_range},
            "outputs_estimated": sum(1 for c in self.checks if c.output_estimated),
            "missing": self.calibration.missing_report if self.calibration else None,
            "per_request_error": {k: {s: round(v, 6) for s, v in self.stats(k).items()}
                                  for k in ("prompt", "read", "write")},
            "worst": [c.to_json() for c in self.worst(worst)],
            "unmatched_cache": [c.to_json() for c in self.worst(worst, "read") if abs(c.read_error) > 0.05],
        }


def validate(trace: Trace, tokenizer: str = "o200k_base", calibrate: bool = True,
             calibration: Calibration | None = None, *, mode: str = "fit", reports: Any = None) -> Validation:
    """Replay `trace` under `none` with its own provider and model, and compare with its usage.

    Calibrated (`ctxsim.analysis.calibrate.calibration`, `mode` fit or priors; `reports`: the readers'
    FileReports, so skipped lines re-anchor) unless `calibrate` is false; the provider's rules
    apply either way. Recorded costs use the estimated output of placeholder counts.
    """
    counter = TokenCounter(get_tokenizer(tokenizer))
    if not any(m.usage is not None for s in trace.sessions for m in s.messages if m.role == "assistant"):
        raise CtxsimError(f"{trace.name}: no request in this trace recorded its usage per request; "
                          "there is nothing to validate against (inspect shows what it recorded)")
    cal = None
    replayed = trace
    framing = None
    setup = Setup()
    if calibrate:
        cal = calibration or calibrate_trace(trace, tokenizer, counter, mode=mode, reports=reports)
        replayed = cal.apply(trace, counter)
        framing = cal.framing()
        setup = cal.setup(setup)
    replayer, run, rule, per_session = replay_none(replayed, counter, framing, setup)
    rules = []
    if rule is not None and rule.dropped_tokens:
        rules.append(f"provider rule: reasoning of turns before the latest user message dropped "
                     f"({rule.dropped_tokens:,} tokens taken out of the prompt)")
    checks: list[RequestCheck] = []
    ttl = _ttl(replayer.resolved.provider, replayer.resolved.model_id)
    for session, requests in zip(replayed.sessions, per_session, strict=True):
        hidden = cal.prefix_of(session) if cal is not None else None
        context = _SessionFacts(session, hidden, rule is not None)
        by_position = {r.position: r for r in requests}
        for position, message in enumerate(session.messages):
            context.see(message)
            if message.role != "assistant":
                continue
            row = by_position[position].row
            usage = message.usage
            if usage is None or usage.input_tokens <= 0:
                context.after_request(message, None)
                continue
            ts_s = message.ts_s
            recorded_cost = replayer.pricer_for(session, message).cost(
                Bill(usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.cache_write_1h_tokens,
                     usage.output_tokens), ts_s)
            check = RequestCheck(
                request=row.request, session=session.id, index=row.index, ts=message.ts,
                recorded_input_tokens=usage.input_tokens, simulated_input_tokens=row.input_tokens,
                recorded_cache_read_tokens=usage.cache_read_tokens, simulated_cache_read_tokens=row.cache_read_tokens,
                recorded_cache_write_tokens=usage.cache_write_tokens + usage.cache_write_1h_tokens,
                simulated_cache_write_tokens=row.cache_write_tokens + row.cache_write_1h_tokens,
                recorded_cost_usd=recorded_cost, simulated_cost_usd=row.cost_usd,
                output_estimated=bool(usage.extra.get("output_estimated")),
                anchor_tokens=context.anchor_tokens,
            )
            check.reasons = context.reasons(check, message, ttl)
            checks.append(check)
            context.after_request(message, check)
    r = replayer.resolved
    return Validation(trace.name, r.provider, r.model_id, r.cache.name, label(counter.tokenizer), cal is not None,
                      cal, len([x for x in run.rows if x.kind == "request"]), checks, rules,
                      cal.cost_range_usd if cal else None, dict(cal.session_cost_ranges) if cal else {})


def _ttl(provider: str, model: str) -> float | None:
    try:
        rules = model_rules(provider, model)
    except KeyError:
        return None
    return rules.get("ttl_5m_s") or rules.get("idle_s")


class _SessionFacts:
    """What the log shows around each request of one session: gaps, new messages, compactions."""

    def __init__(self, session: Session, hidden_prefix: int | None, reasoning_rule: bool) -> None:
        self.session = session
        self.hidden_prefix = hidden_prefix
        self.reasoning_rule = reasoning_rule
        self.compacted = any(e.name == "compaction" for e in session.events)
        self.call_logged = bool(session.extra.get("compaction_call_session"))  # Claude Code's acompact file
        self.previous: RequestCheck | None = None
        self.previous_ts: float | None = None  # when the previous request was sent
        self.input_ts: float | None = None  # the latest message before this request
        self.new_messages: list[Message] = []
        self.anchor_tokens = 0  # counted tokens re-anchored in the new messages
        self.anchor_reason = ""
        self.reasoning_tokens = 0  # hidden reasoning sent back so far
        self.index = 0

    def see(self, message: Message) -> None:
        if message.extra.get("anchor_tokens") and message.role != "assistant":
            self.anchor_tokens += int(message.extra["anchor_tokens"])
            self.anchor_reason = str(message.extra.get("anchor", "gap"))
        if message.role != "assistant":
            self.new_messages.append(message)
            if message.ts:
                self.input_ts = message.ts_s

    def request_ts(self, message: Message) -> float | None:
        """When a request was sent: the latest message before it, as the engine takes it."""
        return self.input_ts if self.input_ts is not None else (message.ts_s if message.ts else None)

    def after_request(self, message: Message, check: RequestCheck | None) -> None:
        self.index += 1
        self.reasoning_tokens += int(message.extra.get("reasoning_tokens", 0) or 0) if message.thinking is not None \
            else 0
        if check is not None:
            self.previous = check
        sent = self.request_ts(message)
        self.previous_ts = sent if sent is not None else self.previous_ts
        self.new_messages = []
        # a response's own anchor (an unexplained growth spread over it) is first sent with the next request
        self.anchor_tokens = int(message.extra.get("anchor_tokens", 0) or 0)
        if self.anchor_tokens:
            self.anchor_reason = str(message.extra.get("anchor", "gap"))

    def reasons(self, check: RequestCheck, message: Message, ttl: float | None) -> list[str]:
        out = []
        rec_read, sim_read = check.recorded_cache_read_tokens, check.simulated_cache_read_tokens
        ts = self.request_ts(message)
        gap = ts - self.previous_ts if ts is not None and self.previous_ts is not None else None
        first = self.index == 0
        if first and self.compacted:
            out.append("first request after the agent's own compaction (the summarising call is "
                       + ("logged in its own file: the compaction's, not this request's)" if self.call_logged
                          else "not logged)"))
        if first and rec_read > 0:
            out.append(f"first request of its session, yet {rec_read:,} tokens came from the cache: that prefix "
                       "(system prompt and tools) was cached before this log starts"
                       + (" (the replay reads it warm, as recorded)" if sim_read >= rec_read else ""))
        if gap is not None and ttl is not None and gap > ttl and rec_read > sim_read:
            out.append(f"{span(gap)} since the previous request, past the {span(ttl)} cache lifetime, yet "
                       f"{rec_read:,} tokens were read: kept warm outside this log")
        prev = self.previous
        if message.extra.get("total_reset"):
            out.append("the running token total reset here: a new agent process sent this request (a resumed "
                       "session), its hidden instructions may differ")
        if prev is not None:
            if check.recorded_input_tokens < prev.recorded_input_tokens and not first:
                drop = prev.recorded_input_tokens - check.recorded_input_tokens
                human = [m for m in self.new_messages if m.role == "user" and not m.extra.get("injected")]
                why = f"the recorded prompt fell by {drop:,} tokens with no compaction in the log"
                if human and self.reasoning_tokens:
                    why += (f"; at a new user turn the provider drops earlier turns' reasoning "
                            f"({self.reasoning_tokens:,} tokens so far)"
                            + (", which the provider rule models" if self.reasoning_rule
                               else ", which the replay keeps"))
                out.append(why)
            grew = check.recorded_input_tokens >= prev.recorded_input_tokens
            if rec_read > sim_read and rec_read > prev.recorded_input_tokens:
                out.append(f"the recorded read ({rec_read:,}) is more than the previous request's whole prompt "
                           f"({prev.recorded_input_tokens:,}): the provider cached part of the previous response "
                           "too; the simulation caches prompts only")
            short = sim_read - rec_read
            if short > 0.05 * check.recorded_input_tokens and (gap is None or ttl is None or gap <= ttl):
                when = f"{span(gap)} after the previous request" if gap is not None else "soon after"
                if self.hidden_prefix and rec_read <= self.hidden_prefix:
                    out.append(f"{when}, the recorded cache read stopped at {rec_read:,} tokens, inside the hidden "
                               f"prefix (~{self.hidden_prefix:,} tokens the log does not show): that part changed or "
                               "the provider missed its cache; the log cannot tell which")
                elif grew:
                    out.append(f"{when}, the recorded cache read fell to {rec_read:,} though the prompt only grew: "
                               "the provider missed its own cache")
        if check.anchor_tokens and self.anchor_reason == GROWTH_MODEL:
            out.append(f"the growth model adds {check.anchor_tokens:,} counted tokens the log misses before this "
                       "request (fitted on earlier requests, not on this one)")
        elif check.anchor_tokens:
            out.append(f"re-anchored here ({self.anchor_reason}): the log misses {check.anchor_tokens:,} counted "
                       "tokens before this request; reported, not fitted")
        if check.output_estimated:
            out.append("its recorded output count was a streaming placeholder; billed at an estimate from the "
                       "logged content")
        images = sum(m.extra_tokens - int(m.extra.get("anchor_tokens", 0) or 0) for m in self.new_messages)
        if images:
            out.append(f"{images:,} tokens of images or documents in the new messages, estimated from their size")
        if message.extra.get("output_from_parent"):
            out.append("output taken from the parent's copy of this subagent response")
        return out


# ---------------------------------------------------------------- text


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def validation_tables(v: Validation, worst: int = 10) -> tuple[list[Any], list[str]]:
    from ctxsim.reports._terminal import TableData

    out = []
    cal = v.calibration
    if cal is not None:
        prefixes = ", ".join(f"{g} {p:,} tokens ({cal.group_requests.get(g, 0)} requests)"
                             for g, p in cal.group_prefix_tokens.items())
        how = {"fit": "fitted", "fit+prior overhead": "fitted (overhead from the priors)",
               "priors": "priors"}.get(cal.source, cal.source)
        rows = [["scale and overhead from", how + (" (fell back: " + (cal.fallback_reason or "") + ")"
                                                  if cal.fell_back else "")],
                ["token scale (billed per counted token)", f"{cal.scale:.4f}"],
                ["per-message overhead", f"{cal.message_tokens} tokens"],
                ["hidden prefix (median per group)", prefixes or "-"]]
        if cal.fitted_scale is not None and cal.source != "fit":
            fitted = cal.fitted_message_tokens
            rows.append(["rejected fit", f"scale {cal.fitted_scale:.4f}, overhead "
                         + (f"{fitted:.1f}" if fitted is not None else "undefined")])
        if cal.prior is not None:
            p = cal.prior
            rows.append(["prior bounds", (f"scale {p.scale_low}-{p.scale_high}, overhead {p.message_tokens_low}-"
                                          f"{p.message_tokens_high} ({p.tokenizer} vs {p.provider}, {p.date})")])
        missing = cal.missing_report
        if cal.anchors:
            rows.append(["re-anchored (tokens the log misses)", ", ".join(
                f"{reason}: {e['anchors']} x, {e['tokens']:+,} tokens" for reason, e in missing["by_reason"].items())])
        if missing["reattached_after_compaction_tokens"]:
            rows.append(["re-attached after a compaction (not in the log)",
                         (f"{missing['reattached_after_compaction_tokens']:,} tokens over "
                          f"{len([v for v in cal.reattached_tokens.values() if v])} part(s)")])
        if cal.placeholder_outputs:
            rows.append(["output counts estimated", f"{len(cal.placeholder_outputs)} streaming placeholder(s)"])
        if cal.cache_facts:  # the provider's recorded cache behaviour the model cannot produce (cache_anchor)
            from ctxsim.analysis.cache_anchor import counts

            ceilings, floors, fresh = counts(cal.cache_facts)
            moved = cal.cache_facts_moved
            rows.append(["recorded cache facts (for every policy)",
                         (f"{ceilings} read ceiling(s) ({moved.get('down', 0):,} tokens), {floors} floor(s) "
                         f"({moved.get('up', 0):,} tokens), {fresh} uncached tail(s) "
                         f"({moved.get('unwritten', 0):,} tokens)")])
        out.append(TableData(
            f"calibration ({cal.mode}: on {cal.requests_used} recorded requests"
            + (f", {cal.requests_excluded} only anchor their segment" if cal.requests_excluded else "")
            + "; --no-calibrate replays raw)", ["", "value"], rows, left=2))
    rec = {k: v._sum(f"recorded_{k}_tokens") for k in ("input", "cache_read", "cache_write")}
    sim = {k: v._sum(f"simulated_{k}_tokens") for k in ("input", "cache_read", "cache_write")}

    def err(a: int, b: int) -> str:
        return _pct((b - a) / a) if a else "-"

    rc, sc = v.recorded_cost, v.simulated_cost
    out.append(TableData("totals over the requests with recorded usage", ["", "recorded", "simulated", "error"], [
        ["prompt tokens", f"{rec['input']:,}", f"{sim['input']:,}", err(rec["input"], sim["input"])],
        ["cache read", f"{rec['cache_read']:,}", f"{sim['cache_read']:,}", err(rec["cache_read"], sim["cache_read"])],
        ["cache write", f"{rec['cache_write']:,}", f"{sim['cache_write']:,}",
         err(rec["cache_write"], sim["cache_write"])],
        ["hit rate", f"{v.recorded_hit_rate * 100:.2f}%", f"{v.simulated_hit_rate * 100:.2f}%",
         f"{(v.simulated_hit_rate - v.recorded_hit_rate) * 100:+.2f} pt"],
        ["cost", f"${rc:,.4f}", f"${sc:,.4f}", _pct(float((sc - rc) / rc)) if rc else "-"],
        *([["cost range (cache the log cannot tell)", "inside" if v.recorded_in_range else "outside",
            f"${v.cost_range_usd[0]:,.4f} - ${v.cost_range_usd[1]:,.4f}", ""]] if v.cost_range_usd else []),
    ]))
    rows = []
    for key, name in (("prompt", "prompt size"), ("read", "cache read"), ("write", "cache write")):
        s = v.stats(key)
        rows.append([name, f"{s['median'] * 100:.2f}%", f"{s['p90'] * 100:.2f}%", f"{s['max'] * 100:.2f}%"])
    out.append(TableData(f"per-request |simulated - recorded| / recorded prompt ({len(v.checks)} requests)",
                         ["", "median", "p90", "max"], rows))

    def listing(title: str, checks: list[RequestCheck], key: str) -> list[Any]:
        table = TableData(title, ["#", "session", "req", "prompt rec", "prompt sim", "error", "read rec", "read sim"],
                          [[f"{c.request:,}", c.session[-12:], f"{c.index:,}", f"{c.recorded_input_tokens:,}",
                            f"{c.simulated_input_tokens:,}", _pct(getattr(c, f"{key}_error")),
                            f"{c.recorded_cache_read_tokens:,}", f"{c.simulated_cache_read_tokens:,}"]
                           for c in checks], left=2)
        why = TableData("why (what the log shows about these requests)", ["#", "reason"],
                        [[f"{c.request:,}", reason] for c in checks for reason in c.reasons], left=2)
        return [table, why] if why.rows else [table]

    if worst:
        out += listing(f"worst {worst} requests by prompt error", v.worst(worst), "prompt")
        misses = [c for c in v.worst(worst, "read") if abs(c.read_error) > 0.05]
        if misses:
            out += listing("cache reads the simulation does not match (error above 5% of the prompt)", misses,
                           "read")
    notes = [f"replayed: policy none, {v.provider} {v.model}, cache model {v.cache_model}, tokenizer {v.tokenizer}"
             + ("" if v.calibrated else " (raw: not calibrated)")]
    notes += v.rules
    if cal is not None:
        notes += list(cal.notes)
    notes.append("errors are relative to the recorded prompt of each request; hit rate = cache read / prompt")
    return out, notes
