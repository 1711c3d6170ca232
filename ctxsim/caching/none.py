"""`none`: no prompt caching; every prompt token is billed as fresh input.

It is also the default for a model whose price data has no cache-read price at the trace's time
(a provider that bills no cached input caches none: mistral-small before its 2026 cache price),
unless the trace itself records cache reads (`unpriced_cache`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxsim.caching import CacheInfo, CacheResult, register
from ctxsim.history import History

if TYPE_CHECKING:
    from ctxsim.model import Trace
    from ctxsim.pricing.prices import Pricer


@dataclass(frozen=True)
class NoCacheParams:
    pass


class NoCache:
    name = "none"

    def __init__(self, params: NoCacheParams, model: str | None) -> None:
        self.params = params

    def request(self, history: History, ts_s: float | None) -> CacheResult:
        return CacheResult()

    def edited(self, boundary: int) -> None:
        pass


register(CacheInfo("none", NoCacheParams, NoCache, "no caching", __name__))


def unpriced_cache(trace: Trace, pricer: Pricer) -> bool:
    """True when `pricer`'s model has no cache-read price at the trace's first timestamp and no request
    of the trace recorded a cache read: such a replay gets no cache reads (the `none` cache model)."""
    first = next((m.ts_s for s in trace.sessions for m in s.messages if m.ts), None)
    if pricer.prices_cache_reads(first):
        return False
    return not any(m.usage is not None and m.usage.cache_read_tokens > 0 for s in trace.sessions for m in s.messages)
