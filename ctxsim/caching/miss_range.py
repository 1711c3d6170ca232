"""The predicted cost's range: provider misses learned on the fitted requests, carried to the scored ones.

A prediction (`validate --predict`) replays the scored requests with the cache model alone: it cannot
know a provider miss before the bill that shows it. What it can know is how often the provider missed
on the requests it was fitted on: there, the calibration found ceilings (`analysis.cache_anchor`), each
with the model's own read (its reference). The share of the model's reads those misses took,
sum(reference - ceiling) / sum(model reads) over the fitted requests, is the session's learned miss
share. The scored requests' cost range is then:

* low: the model alone (no miss: what a provider that promises its hits bills at best);
* high: every scored request losing that share of its model read (the `share` transfer rule of
  `caching.transfer`), rewritten where the provider bills writes (Anthropic) or sent uncached;

plus, for a provider whose implicit cache promises no hit, the served-share range of
`caching.best_effort` on top. Both ends are priced at the trace's model (a request's own model is not
in validate's per-request figures; Claude models share their cache multipliers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from ctxsim.caching.best_effort import checks_span_usd


def lost_share(facts: Mapping[Any, Sequence[int | None]], fitted_reads: int) -> float:
    """The share of the model's reads the provider's recorded misses took on the fitted requests (0 to 1)."""
    lost = 0
    for fact in facts.values():
        ceiling = fact[0]
        reference = fact[3] if len(fact) > 3 else None
        if ceiling is not None and reference is not None and reference > ceiling:
            lost += reference - ceiling
    if fitted_reads <= 0:
        return 0.0
    return min(1.0, lost / fitted_reads)


def miss_span_usd(provider: str, model: str, checks: Iterable[Any], share: float) -> Decimal:
    """How much dearer the `checks` (validate's RequestCheck) had each lost `share` of its simulated read."""
    if share <= 0:
        return Decimal(0)
    from ctxsim.model import parse_ts
    from ctxsim.pricing.prices import Bill, Pricer

    pricer = Pricer(provider, model)
    writes = provider == "anthropic"
    total = Decimal(0)
    for c in checks:
        read = c.simulated_cache_read_tokens
        if not read:
            continue
        ts_s = parse_ts(c.ts) if c.ts else None
        prompt, written = c.simulated_input_tokens, c.simulated_cache_write_tokens
        lost = int(read * share)
        base = pricer.cost(Bill(prompt, read, written, 0, 0), ts_s)
        dear = pricer.cost(Bill(prompt, read - lost, written + (lost if writes else 0), 0, 0), ts_s)
        total += max(Decimal(0), dear - base)
    return total


def predicted_ranges(provider: str, model: str, point_by_session: Mapping[str, Decimal],
                     fitted: Mapping[str, Sequence[Any]], scored: Mapping[str, Sequence[Any]],
                     facts: Mapping[str, Mapping[int, Sequence[int | None]]]) -> dict[str, tuple[Decimal, Decimal]]:
    """Per session: [low, high] of the scored requests' predicted cost (module docstring). `fitted` and
    `scored`: each session's RequestChecks; `facts`: the fit part's calibration facts per session."""
    # a session with no fitted read of its own takes the trace's share (its other sessions' fitted requests)
    all_reads = sum(c.simulated_cache_read_tokens for cs in fitted.values() for c in cs)
    merged = {(sid, k): v for sid, f in facts.items() for k, v in f.items()}
    overall = lost_share(merged, all_reads)
    out: dict[str, tuple[Decimal, Decimal]] = {}
    for sid, point in point_by_session.items():
        checks = scored.get(sid, ())
        reads = sum(c.simulated_cache_read_tokens for c in fitted.get(sid, ()))
        share = lost_share(facts.get(sid, {}), reads) if reads else overall
        cheap, dear = checks_span_usd(provider, model, checks)
        out[sid] = (point + cheap, point + dear + miss_span_usd(provider, model, checks, share))
    return out
