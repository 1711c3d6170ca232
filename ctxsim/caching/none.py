"""`none`: no prompt caching; every prompt token is billed as fresh input."""

from __future__ import annotations

from dataclasses import dataclass

from ctxsim.caching import CacheInfo, CacheResult, register
from ctxsim.history import History


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
