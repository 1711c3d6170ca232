"""`prefix`: the idealised cache yoagent's replay and seed 000's meter use.

A request reads from the cache whatever prefix it shares with the previous
request, at message granularity: no minimum (unless `min_tokens` is set), no
TTL, no breakpoints. The rest is uncached input; with `writes` it is billed as a
cache write instead (seed 000 writes every non-read input token at 1.25x).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxsim.caching import CacheInfo, CacheResult, register
from ctxsim.history import History
from ctxsim.params import field_doc


@dataclass(frozen=True)
class PrefixParams:
    min_tokens: int = field(default=0, metadata=field_doc("shared prefixes shorter than this are not read"))
    writes: bool = field(default=False, metadata=field_doc("bill the non-read input as cache writes"))


class PrefixCache:
    name = "prefix"

    def __init__(self, params: PrefixParams, model: str | None) -> None:
        self.params = params
        self._valid: int | None = None  # items of the previous request still unchanged

    def edited(self, boundary: int) -> None:
        if self._valid is not None:
            self._valid = min(self._valid, boundary)

    def request(self, history: History, ts_s: float | None) -> CacheResult:
        prompt = history.prompt_tokens
        if self._valid is None:
            read = 0
        else:
            read = history.prefix_tokens(min(self._valid, len(history)))
            if read < self.params.min_tokens:
                read = 0
        self._valid = len(history)
        rest = prompt - read
        return CacheResult(read_tokens=read, write_tokens=rest if self.params.writes else 0)


register(CacheInfo("prefix", PrefixParams, PrefixCache,
                   "idealised previous-request prefix (yoagent replay test; seed 000 Meter)", __name__))
