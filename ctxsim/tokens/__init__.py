"""Tokenizers: exact offline BPE (o200k_base, cl100k_base) and labelled estimates.

Each tokenizer module registers itself here; the module name is the
`--tokenizer` value. `TokenCounter` adds the content-hash memo: every distinct
text is counted once, in batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ctxsim.errors import CtxsimError, did_you_mean
from ctxsim.registry import Registry
from ctxsim.tokens.redacted import split_markers


class Tokenizer(Protocol):
    name: str
    exact: bool

    def count_batch(self, texts: list[str]) -> list[int]: ...


@dataclass(frozen=True)
class TokenizerInfo:
    name: str
    exact: bool
    description: str
    factory: Callable[[], Tokenizer]
    module: str


_REGISTRY: Registry[TokenizerInfo] = Registry("tokenizer", __name__, "ctxsim.tokens")
_INSTANCES: dict[str, Tokenizer] = {}
DEFAULT = "o200k_base"


def register(info: TokenizerInfo) -> None:
    _REGISTRY.add(info.name, info, info.module)


def tokenizers() -> dict[str, TokenizerInfo]:
    return _REGISTRY.all()


def get_tokenizer(name: str = DEFAULT) -> Tokenizer:
    table = tokenizers()
    if name not in table:
        raise CtxsimError(f"unknown tokenizer {name!r}{did_you_mean(name, table)}; known: {', '.join(table)}")
    if name not in _INSTANCES:
        _INSTANCES[name] = table[name].factory()
    return _INSTANCES[name]


def label(tokenizer: Tokenizer) -> str:
    return tokenizer.name if tokenizer.exact else f"{tokenizer.name} (estimate)"


class TokenCounter:
    """Counts texts with a tokenizer, each distinct text once (memo keyed by content)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._memo: dict[str, int] = {"": 0}

    def prime(self, texts: Iterable[str]) -> None:
        """Count every not-yet-seen text in one batch call."""
        memo = self._memo
        todo = list(dict.fromkeys(t for t in texts if t not in memo))
        if todo:
            split = [split_markers(t) for t in todo]
            counts = self.tokenizer.count_batch([s for s, _ in split])
            for text, (_, marked), n in zip(todo, split, counts, strict=True):
                memo[text] = n + marked

    def count(self, text: str) -> int:
        """The text's tokens; a redacted marker counts as the text it replaced (tokens/redacted.py)."""
        n = self._memo.get(text)
        if n is None:
            rest, marked = split_markers(text)
            n = self._memo[text] = self.tokenizer.count_batch([rest])[0] + marked
        return n

    def forget(self) -> None:
        """Let go of every count kept (a stream of sessions: those already replayed are not met again)."""
        self._memo = {"": 0}

    @property
    def distinct_texts(self) -> int:
        return len(self._memo) - 1
