"""`deepseek`: DeepSeek's context caching on disk, as DeepSeek documents it.

On by default for every request: a request reads the longest prefix it shares with what earlier
requests left on disk, counted from token 0, in whole storage units (`unit_tokens`: 64; content
shorter than one unit is not cached). A request's prompt and its response are both kept (units
are persisted at the end of the user input and at the end of the model output), so the next
request of an agent loop reads into the previous response. No write premium, no storage fee;
entries are cleared only after hours to days (no TTL within a session). Rules in data.toml; the
usage fields (`prompt_cache_hit_tokens`, always a multiple of 64 in real logs) confirm the unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ctxsim.caching import CacheInfo, CacheResult, model_rules, register
from ctxsim.history import History
from ctxsim.params import field_doc


@dataclass(frozen=True)
class DeepSeekParams:
    unit_tokens: int | None = field(default=None, metadata=field_doc("override the storage unit (64 tokens)"))
    into_response: bool = field(default=True, metadata=field_doc(
        "the previous response is cached too (read by the next request)"))


class DeepSeekCache:
    name = "deepseek"

    def __init__(self, params: DeepSeekParams, model: str | None) -> None:
        self.params = params
        self.model = model
        self._previous: int | None = None  # items of the previous request
        self._valid = 0  # of those and the response after them, the items still unchanged
        self._unit: int | None = params.unit_tokens

    def edited(self, boundary: int) -> None:
        self._valid = min(self._valid, boundary)

    def request(self, history: History, ts_s: float | None) -> CacheResult:
        if self._unit is None:
            self._unit = int(model_rules("deepseek", self.model, ts_s)["unit_tokens"])
        n = len(history)
        read = 0
        if self._previous is not None:
            reach = self._previous + (1 if self.params.into_response else 0)
            shared = history.prefix_tokens(min(self._valid, reach, n))
            read = shared // self._unit * self._unit if self._unit > 0 else shared
        self._previous, self._valid = n, n + 1  # the response is appended at position n
        return CacheResult(read_tokens=min(read, history.prompt_tokens))


def _factory(params: DeepSeekParams, model: str | None) -> DeepSeekCache:
    if params.unit_tokens is not None and params.unit_tokens < 1:
        from ctxsim.errors import ParameterError

        raise ParameterError("cache model deepseek: unit_tokens must be at least 1")
    return DeepSeekCache(params, model)


register(CacheInfo("deepseek", DeepSeekParams, _factory,
                   "DeepSeek context caching on disk: 64-token units from token 0, reads into the previous "
                   "response, no TTL within a session (kv_cache guide, 2024 announcement; data.toml)", __name__))
