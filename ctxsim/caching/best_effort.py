"""Best-effort implicit caching: a provider that may serve less than its cache holds, as a rate with a range.

Gemini's implicit cache and DeepSeek's disk cache promise no hit: a request reads the prefix it shares
with earlier ones only when the provider finds it (Gemini: "no cost saving guarantee"; DeepSeek: "best
effort", "not guaranteed to be 100 %"). The prefix model reads every shared prefix, which over-predicts
the reads of some sessions (a Gemini-served session: 97.8 % simulated against 86.0 % billed; a DeepSeek
one 97.5 % against 92.8 %) and matches others (the DeepSeek mini-swe-agent sample: within 0.2 points).
So the model's read is the point estimate, and the share of it the provider serves is a range learned
from recorded sessions (caching/data.toml `served_share`, dated and sourced per provider): each
request's read times the low share (the dearer end) and the high one (the cheaper end; at most 1, as
no provider serves more than the request shares) bound its cost.

`BestEffort` wraps a session's cache model (the engine puts it there, as it does `WarmStart`); its
`pending` answers are the two ends for the latest request, which the engine prices into the run's
`cost_range_usd` (`caching.transfer.cost_range`). `span_usd` gives the same two ends for one request
already replayed, for callers that hold its figures but not the run (validate's predicted score).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ctxsim.caching import CacheModel, CacheResult, model_rules
from ctxsim.history import History


@dataclass(frozen=True)
class ServedShare:
    low: float
    high: float
    source: str


def served_share(provider: str, model: str | None, on: float | None = None) -> ServedShare | None:
    """The share of the model's read a best-effort provider serves, as a range; None where it promises hits."""
    try:
        rule = model_rules(provider, model, on)
    except KeyError:
        return None
    share = rule.get("served_share")
    if not share:
        return None
    return ServedShare(float(share["low"]), float(share["high"]), str(share["source"]))


def _served(result: CacheResult, share: float, writes: bool) -> CacheResult:
    """`result` with `share` (at most 1: never more than the request shares) of its read served."""
    read = int(result.read_tokens * min(share, 1.0))
    if read == result.read_tokens:
        return result
    if writes:  # what is no longer read is written again
        return CacheResult(read, result.write_tokens + result.read_tokens - read, result.write_1h_tokens)
    return CacheResult(read, result.write_tokens, result.write_1h_tokens)


class BestEffort:
    """A cache model whose reads the provider serves in part: the model's answer, and its two ends pending."""

    def __init__(self, inner: CacheModel, share: ServedShare) -> None:
        self.inner = inner
        self.share = share
        self.name = inner.name
        self.params = inner.params
        self.pending: tuple[CacheResult, ...] = ()

    def edited(self, boundary: int) -> None:
        self.inner.edited(boundary)

    def request(self, history: History, ts_s: float | None) -> CacheResult | tuple[CacheResult, CacheResult]:
        answer = self.inner.request(history, ts_s)
        real = answer if isinstance(answer, CacheResult) else answer[0]
        writes = real.write_tokens > 0
        ends = (_served(real, self.share.low, writes), _served(real, self.share.high, writes))
        self.pending = tuple(end for end in ends if end != real)
        return answer

    def __repr__(self) -> str:
        return f"BestEffort({self.inner!r}, {self.share.low}-{self.share.high})"


def span_usd(pricer: Any, ts_s: float | None, prompt: int, read: int, output: int, share: ServedShare,
             ) -> tuple[Decimal, Decimal]:
    """(cheaper, dearer) change of one replayed request's cost had the provider served the high or the low
    share of its `read` (a provider that bills no writes: the rest is sent uncached). `pricer` is a
    ctxsim Pricer (its `cost(Bill, ts_s)`)."""
    from ctxsim.pricing.prices import Bill

    point = pricer.cost(Bill(prompt, read, 0, 0, output), ts_s)
    low = pricer.cost(Bill(prompt, int(read * min(share.high, 1.0)), 0, 0, output), ts_s) - point
    high = pricer.cost(Bill(prompt, int(read * min(share.low, 1.0)), 0, 0, output), ts_s) - point
    return min(low, Decimal(0)), max(high, Decimal(0))


def checks_span_usd(provider: str, model: str, checks: Any) -> tuple[Decimal, Decimal]:
    """(cheaper, dearer) change of the summed cost of replayed requests (validate's RequestCheck: simulated
    input and cache read, ts) had a best-effort provider served the high or the low share of each read;
    (0, 0) for a provider that promises hits. For validate's predicted `cost_range_usd`: point + each end."""
    from ctxsim.model import parse_ts
    from ctxsim.pricing.prices import Pricer

    low = high = Decimal(0)
    pricer = None
    for check in checks:
        ts_s = parse_ts(check.ts) if check.ts else None
        share = served_share(provider, model, ts_s)
        if share is None or not check.simulated_cache_read_tokens:
            continue
        pricer = pricer or Pricer(provider, model)
        cheap, dear = span_usd(pricer, ts_s, check.simulated_input_tokens, check.simulated_cache_read_tokens, 0,
                               share)
        low += cheap
        high += dear
    return low, high
