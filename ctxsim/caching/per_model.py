"""A session that switches models mid-way: one cache per model, as the providers keep them.

A provider's prompt cache belongs to one model: a request to another model cannot read what the first
one cached, even for the same prompt (Anthropic's prompt-caching docs: caches are isolated per model;
OpenAI's and Gemini's are per model too). A recorded Claude Code session that switched from Opus 4.6
to Haiku 4.5 mid-session shows it: the first Haiku request read nothing and wrote its whole 39,413-token
prompt, the next read it all; back on Opus, the session read Opus's own entries (issue 25,
traces-real/claude-code, the opus-to-haiku sample). The replay kept one cache for the session, so the
switched request read the other model's prefix.

`PerModel` keeps one cache model per model id, built by the session's cache spec for that model (its
own minimum cacheable length), and answers each request from the cache of the model the engine says
the request goes to (`use`); an edit of the history reaches every model's cache. Its `pending` answers
are the current cache's (a best-effort or facts wrapper inside it).
"""

from __future__ import annotations

from collections.abc import Callable

from ctxsim.caching import CacheModel, CacheResult
from ctxsim.history import History


class PerModel:
    """One cache model per model id; `use(model)` before each request picks the one it reads."""

    def __init__(self, build: Callable[[str], CacheModel], first: str) -> None:
        self._build = build
        self._caches: dict[str, CacheModel] = {first: build(first)}
        self._current = first
        inner = self._caches[first]
        self.name = inner.name
        self.params = inner.params

    def use(self, model: str) -> None:
        if model not in self._caches:
            self._caches[model] = self._build(model)
        self._current = model

    @property
    def pending(self) -> tuple[CacheResult, ...]:
        return getattr(self._caches[self._current], "pending", ())

    def request(self, history: History, ts_s: float | None) -> CacheResult | tuple[CacheResult, CacheResult]:
        return self._caches[self._current].request(history, ts_s)

    def edited(self, boundary: int) -> None:
        for cache in self._caches.values():
            cache.edited(boundary)
