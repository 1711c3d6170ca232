"""Prompt-cache models: one module per model, registered in that module.

A cache model sees each request as the live history stands (running prefix
sums) plus where the history was edited since; it answers how many prompt
tokens were read from the cache and how many written (5-minute and 1-hour).
The rules per provider and model are data (`data.toml`), with dates and sources.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from typing import Any, NamedTuple, Protocol

from ctxsim.errors import ParameterError, did_you_mean
from ctxsim.history import History
from ctxsim.params import build_params, split_spec
from ctxsim.registry import Registry


class CacheResult(NamedTuple):  # a tuple: made twice per request, and cheaper to make than a dataclass
    read_tokens: int = 0
    write_tokens: int = 0  # 5-minute TTL
    write_1h_tokens: int = 0


NOTHING = CacheResult()


class CacheModel(Protocol):
    """Answers, per request, what was read from and written to the cache.

    `request` returns either one CacheResult (a model without expiry: the warm answer is the
    same) or a pair (with the trace's real gaps, with a cache that never goes cold).
    """

    name: str
    params: Any

    def request(self, history: History, ts_s: float | None) -> CacheResult | tuple[CacheResult, CacheResult]: ...

    def edited(self, boundary: int) -> None:
        """The history changed from item `boundary` on; prefixes before it are intact."""


def warmed(result: CacheResult, prompt: int, tokens: int) -> CacheResult:
    """`result` with up to `tokens` of the prompt read instead of written (5-minute writes first) or sent fresh."""
    move = max(0, min(tokens, prompt) - result.read_tokens)
    if not move:
        return result
    from_5m = min(move, result.write_tokens)
    from_1h = min(move - from_5m, result.write_1h_tokens)
    return CacheResult(result.read_tokens + move, result.write_tokens - from_5m, result.write_1h_tokens - from_1h)


class WarmStart:
    """A cache model whose session starts with `tokens` of its prefix already cached by another session.

    The product's sessions share their system prompt and tools, so a session's first request can read
    them from a cache another session wrote (Claude Code and Codex both do; issue 17). Where the log
    records that read (the first request's recorded cache read), the replay's first request reads that
    much instead of writing it.

    The product keeps that shared layer warm for the whole session: after an idle gap longer than the
    TTL, where the model's own entries have expired, a later request still reads the shared layer (the
    recorded Claude Code sessions: after gaps of 6, 7 and 22 minutes under a 5-minute TTL, the provider
    read exactly the layer the first request had read, 12,997 and 11,439 tokens, and wrote the rest;
    issue 25). So any later request whose model read falls short of `tokens` reads that much of its
    prompt; the others are answered by the wrapped model unchanged.
    """

    def __init__(self, inner: CacheModel, tokens: int) -> None:
        self.inner = inner
        self.tokens = tokens
        self.name = inner.name
        self.params = inner.params

    def request(self, history: History, ts_s: float | None) -> CacheResult | tuple[CacheResult, CacheResult]:
        answer = self.inner.request(history, ts_s)
        prompt = history.prompt_tokens
        if isinstance(answer, CacheResult):
            return warmed(answer, prompt, self.tokens)
        real, warm = answer
        return warmed(real, prompt, self.tokens), warmed(warm, prompt, self.tokens)

    def edited(self, boundary: int) -> None:
        self.inner.edited(boundary)


@dataclass(frozen=True)
class CacheInfo:
    name: str
    params: type
    # factory(params, model id) -> a fresh cache model for one session
    factory: Callable[[Any, str | None], CacheModel]
    source: str
    module: str


_REGISTRY: Registry[CacheInfo] = Registry("cache model", __name__, "ctxsim.caching")


def register(info: CacheInfo) -> None:
    _REGISTRY.add(info.name, info, info.module)


def cache_models() -> dict[str, CacheInfo]:
    return _REGISTRY.all()


@dataclass(frozen=True)
class CacheSpec:
    """A cache model chosen by name with its parameters; builds one instance per session."""

    info: CacheInfo
    params: Any

    @property
    def name(self) -> str:
        return self.info.name

    def build(self, model: str | None) -> CacheModel:
        return self.info.factory(self.params, model)


def cache_spec(spec: str) -> CacheSpec:
    name, values = split_spec(spec)
    table = cache_models()
    if name not in table:
        raise ParameterError(f"unknown cache model {name!r}{did_you_mean(name, table)}; known: {', '.join(table)}")
    info = table[name]
    return CacheSpec(info, build_params(info.params, values, f"cache model {name}"))


@cache
def rules() -> dict[str, Any]:
    return tomllib.loads((files("ctxsim.caching") / "data.toml").read_text(encoding="utf-8"))


def model_rules(provider: str, model: str | None, on: float | None = None) -> dict[str, Any]:
    """Provider defaults overlaid with the longest-matching model entry (and its dated history)."""
    table = rules()[provider]
    out = {k: v for k, v in table.items() if k != "models"}
    best: Mapping[str, Any] | None = None
    for entry in table.get("models", ()):
        if model and model.lower().startswith(entry["match"]) and (
            best is None or len(entry["match"]) > len(best["match"])
        ):
            best = entry
    if best is not None:
        out.update({k: v for k, v in best.items() if k not in ("match", "history")})
        day = datetime.fromtimestamp(on, tz=UTC).date() if on is not None else None
        for change in best.get("history", ()):
            if day is None or day >= change["from"]:
                out.update({k: v for k, v in change.items() if k != "from"})
    return out
