"""`openai`: automatic prefix caching as OpenAI documents it.

The longest prefix shared with a still-live earlier request is read, once the
prompt is at least `min_tokens` (1,024), in `step_tokens` (128) increments above
the minimum. Entries expire after `idle_s` without use and `max_s` after they
were written (in-memory retention), or after 24 hours with extended retention.
No write premium before GPT-5.6; from GPT-5.6 writes are billed (as 5-minute
writes). The cached prefix runs into the previous response (`reads_response`): the
next request, which sends that response back, reads into it. Rules per model in data.toml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ctxsim.caching import CacheInfo, CacheResult, model_rules, register
from ctxsim.history import History
from ctxsim.params import field_doc

MAX_ENTRIES = 16


@dataclass(frozen=True)
class OpenAIParams:
    retention: Literal["in_memory", "24h"] = field(default="in_memory", metadata=field_doc(
        "prompt_cache_retention: in-memory (idle expiry, 1 h cap) or extended 24 h"))
    min_tokens: int | None = field(default=None, metadata=field_doc("override the model's minimum"))
    step_tokens: int | None = field(default=None, metadata=field_doc("override the hit granularity"))


@dataclass(slots=True)
class _Entry:
    boundary: int  # items of the history this prefix covers
    created_s: float | None
    used_s: float | None


class OpenAICache:
    name = "openai"

    def __init__(self, params: OpenAIParams, model: str | None) -> None:
        self.params = params
        self.model = model
        self._entries: list[_Entry] = []
        self._rules: dict | None = None

    def _rule(self, ts_s: float | None) -> dict:
        if self._rules is None:
            self._rules = model_rules("openai", self.model, ts_s)
        return self._rules

    def edited(self, boundary: int) -> None:
        for entry in self._entries:
            if entry.boundary > boundary:
                entry.boundary = boundary

    def _live(self, entry: _Entry, ts_s: float | None, rule: dict[str, float]) -> bool:
        if ts_s is None or entry.used_s is None or entry.created_s is None:
            return True
        if self.params.retention == "24h":
            return ts_s - entry.created_s <= rule["extended_s"]
        return ts_s - entry.used_s <= rule["idle_s"] and ts_s - entry.created_s <= rule["max_s"]

    def request(self, history: History, ts_s: float | None) -> tuple[CacheResult, CacheResult]:
        """(with the trace's timing, with a cache that never expires)."""
        rule = self._rule(ts_s)
        minimum = self.params.min_tokens if self.params.min_tokens is not None else rule["min_tokens"]
        step = self.params.step_tokens if self.params.step_tokens is not None else rule["step_tokens"]
        best: _Entry | None = None  # longest live prefix
        best_warm: _Entry | None = None  # longest prefix, expired or not
        for entry in self._entries:
            if best_warm is None or entry.boundary > best_warm.boundary:
                best_warm = entry
            if (best is None or entry.boundary > best.boundary) and self._live(entry, ts_s, rule):
                best = entry
        prompt = history.prompt_tokens
        n = len(history)
        results = []
        for chosen in (best, best_warm):
            read = 0
            if chosen is not None and prompt >= minimum:
                shared = history.prefix_tokens(min(chosen.boundary, n))
                if shared >= minimum:
                    read = minimum + (shared - minimum) // step * step
            write = prompt - read if rule["writes"] and prompt >= minimum else 0
            results.append(CacheResult(read_tokens=read, write_tokens=write))
        if best is not None:
            best.used_s = ts_s
        # the entry covers the prompt, and the response after it where the provider caches that too: the next
        # request's read runs into the previous response (an edit before it cuts the entry back: `edited`)
        self._entries.append(_Entry(n + 1 if rule.get("reads_response") else n, ts_s, ts_s))
        if len(self._entries) > MAX_ENTRIES:
            self._entries.sort(key=lambda e: e.boundary)
            del self._entries[0]
        return results[0], results[1]


register(CacheInfo("openai", OpenAIParams, OpenAICache,
                   "OpenAI automatic prompt caching (guide and cookbook; data.toml)", __name__))
