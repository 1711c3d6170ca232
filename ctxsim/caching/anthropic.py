"""`anthropic`: explicit-breakpoint prompt caching as Anthropic documents it.

Breakpoints (default: the end of tools + system, and the last message, as
agents place them; at most 4) mark prefixes to cache. For each breakpoint the
service looks back up to `lookback_blocks` content blocks for the longest
prefix it has cached and still live; that prefix is read (0.1x), and the
prompt from there to the last breakpoint is written (1.25x for a 5-minute
TTL, 2x for 1 hour). A prefix shorter than the model's minimum cacheable
length is neither written nor read. A read refreshes the entry's TTL; TTLs run
on the trace's wall clock (`ts`). Rules per model in data.toml.
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from ctxsim.caching import NOTHING, CacheInfo, CacheResult, CacheSpec, model_rules, register, rules
from ctxsim.errors import ParameterError
from ctxsim.history import History
from ctxsim.model import Session
from ctxsim.params import field_doc

POSITIONS = ("system", "last", "previous", "middle")
MAX_ENTRIES = 64


@dataclass(frozen=True)
class AnthropicParams:
    ttl: Literal["5m", "1h"] = field(default="5m", metadata=field_doc("cache_control TTL of every breakpoint"))
    breakpoints: tuple[str, ...] = field(default=("system", "last"), metadata=field_doc(
        "where cache_control goes: system (end of tools+system), last, previous (second-to-last "
        "message), middle (halfway through the messages)"))
    min_tokens: int | None = field(default=None, metadata=field_doc("override the model's minimum"))
    lookback_blocks: int | None = field(default=None, metadata=field_doc("override the 20-block lookback"))

    def __post_init__(self) -> None:
        unknown = [b for b in self.breakpoints if b not in POSITIONS]
        if unknown:
            raise ValueError(f"unknown breakpoint position {unknown[0]!r}; known: {', '.join(POSITIONS)}")
        if not self.breakpoints or len(self.breakpoints) > 4:
            raise ValueError("between 1 and 4 breakpoints (Anthropic allows at most 4)")


class AnthropicCache:
    name = "anthropic"

    def __init__(self, params: AnthropicParams, model: str | None) -> None:
        self.params = params
        self.model = model
        self._entries: dict[int, float | None] = {}  # boundary (items covered) -> when it expires
        self._bounds: list[int] = []  # the entries' boundaries, sorted
        self._rules: dict | None = None
        self._resolved: tuple[int, int, float] | None = None
        self._usual = params.breakpoints in (("system", "last"), ("last", "system"))  # what agents do
        self._hour = params.ttl == "1h"

    def _rule(self, ts_s: float | None) -> dict:
        if self._rules is None:
            self._rules = model_rules("anthropic", self.model, ts_s)
        return self._rules

    def edited(self, boundary: int) -> None:
        cut = bisect_right(self._bounds, boundary)
        for b in self._bounds[cut:]:
            del self._entries[b]
        del self._bounds[cut:]

    def _positions(self, n: int) -> list[int]:
        """The breakpoints' positions for a prompt of `n` messages (`request` places the usual two itself)."""
        points = set()
        for name in self.params.breakpoints:
            if name == "system":
                points.add(0)
            elif name == "last":
                points.add(n)
            elif name == "previous":
                points.add(max(n - 1, 0))
            elif name == "middle":
                points.add(n // 2)
        return sorted(points)

    def _settings(self, ts_s: float | None) -> tuple[int, int, float]:
        """Minimum cacheable tokens, lookback blocks and TTL: resolved once per session."""
        if self._resolved is None:
            rule = self._rule(ts_s)
            p = self.params
            self._resolved = (
                p.min_tokens if p.min_tokens is not None else rule["min_tokens"],
                p.lookback_blocks if p.lookback_blocks is not None else rule["lookback_blocks"],
                rule["ttl_1h_s"] if p.ttl == "1h" else rule["ttl_5m_s"],
            )
        return self._resolved

    def request(self, history: History, ts_s: float | None) -> tuple[CacheResult, CacheResult]:
        """(with the trace's timing, with a cache that never expires): one walk for both."""
        minimum, lookback, ttl_s = self._settings(ts_s)
        n = len(history)
        prefix = history.prefix_tokens
        head = history.base_tokens > 0  # nothing to cache before the first message without one
        if self._usual:
            positions = [0] if head and prefix(0) >= minimum else []
            if n and prefix(n) >= minimum:
                positions.append(n)
        else:
            positions = [p for p in self._positions(n) if prefix(p) >= minimum and (p > 0 or head)]
        if not positions:
            return NOTHING, NOTHING
        hit = warm_hit = -1
        hits: list[int] = []
        bounds = self._bounds
        entries = self._entries
        blocks = history.prefix_blocks
        for p in positions:
            top = blocks(p)
            warm_found = False
            for k in range(bisect_right(bounds, p) - 1, -1, -1):
                b = bounds[k]
                if top - blocks(b) > lookback:
                    break
                if not warm_found:
                    warm_found = True
                    if b > warm_hit:
                        warm_hit = b
                expires = entries[b]
                if ts_s is None or expires is None or ts_s <= expires:
                    hits.append(b)
                    if b > hit:
                        hit = b
                    break
        expiry = None if ts_s is None else ts_s + ttl_s
        for b in hits:  # a read refreshes the TTL
            entries[b] = expiry
        last = positions[-1]
        last_tokens = prefix(last)
        real = self._result(prefix, hit, last, last_tokens)
        warm = real if warm_hit == hit else self._result(prefix, warm_hit, last, last_tokens)
        for p in positions:  # written, or refreshed: a position past the hit was written again
            if p not in entries:
                insort(bounds, p)
                entries[p] = expiry
            elif p > hit:
                entries[p] = expiry
        if len(bounds) > MAX_ENTRIES:  # forget the oldest prefixes but the first (tools + system)
            for b in bounds[1 : len(bounds) - MAX_ENTRIES + 1]:
                del entries[b]
            del bounds[1 : len(bounds) - MAX_ENTRIES + 1]
        return real, warm


    def _result(self, prefix: Callable[[int], int], found: int, last: int, last_tokens: int) -> CacheResult:
        """Read the prefix up to `found` (-1: none), write the rest up to the last breakpoint."""
        read = prefix(found) if found >= 0 else 0
        written = last_tokens - read if last > found else 0
        return CacheResult(read, 0, written) if self._hour else CacheResult(read, written, 0)


_FAMILY_FIRST = re.compile(r"claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?!\d)")  # claude-opus-4-6[-date]
_VERSION_FIRST = re.compile(r"claude-(\d+)(?:-(\d))?-([a-z]+)")  # claude-3-7-sonnet (2024-25 names)


def claude_family(model: str) -> tuple[str, tuple[int, int]] | None:
    """(family, (major, minor)) of a Claude model id, None when it names none. Ids as providers and routers
    spell them: `claude-opus-4-6`, `claude-sonnet-4-5-20250929`, `claude-opus-4.6`, `anthropic/claude-sonnet-4.6`,
    `us.anthropic.claude-opus-4-6-v1:0`, `claude-opus-4-6@20260205`, `claude-sonnet-4-6[1m]`,
    `claude-3-7-sonnet-latest`."""
    text = model.lower().replace(".", "-")
    found = _FAMILY_FIRST.search(text)
    if found is not None:
        return found.group(1), (int(found.group(2)), int(found.group(3) or 0))
    old = _VERSION_FIRST.search(text)
    if old is not None:
        return old.group(3), (int(old.group(1)), int(old.group(2) or 0))
    return None


def keeps_thinking(model: str) -> bool:
    """Whether requests to `model` keep earlier turns' thinking in the prompt (data.toml [anthropic.thinking])."""
    table = rules()["anthropic"]["thinking"]
    found = claude_family(model)
    if found is None:
        return False
    family, version = found
    if family in table["keeps_always"]:
        return True
    since = table["keeps_from"].get(family)
    if since is None:
        return False
    major, _, minor = since.partition(".")
    return version >= (int(major), int(minor or 0))


def recorded_ttl(session: Session) -> Literal["5m", "1h"] | None:
    """The TTL the product asked for, as the session's recorded writes show it: "1h" where most of the tokens it
    wrote were billed as 1-hour writes, "5m" where most were 5-minute ones, None where it recorded no write.

    The TTL is the client's choice (`cache_control.ttl`), not the provider's: Claude Code writes every entry with
    a 1-hour TTL for some accounts and a 5-minute one for others, and a replay that writes 5-minute entries
    bills the writes at 1.25x where the provider billed 2x (a Claude Code session of 1-hour writes came out
    11 % too cheap), and expires entries the product kept. The product would have asked for the same TTL for a
    policy's prompts, so the session's TTL is used for every policy (prompt-caching docs: "1-hour cache
    duration"; usage.cache_creation.ephemeral_1h_input_tokens)."""
    five = hour = 0
    for message in session.messages:
        usage = message.usage
        if usage is not None:
            five += usage.cache_write_tokens
            hour += usage.cache_write_1h_tokens
    if not five and not hour:
        return None
    return "1h" if hour > five else "5m"


# a session's extra under this key: the TTL its fitted requests showed ("5m", "1h" or None: no write among them),
# set where a replay must not learn it from the rest of the log (validate --predict: analysis/calibrate `apply`)
FITTED_TTL_KEY = "fitted_cache_ttl"


def session_spec(spec: CacheSpec, session: Session) -> CacheSpec:
    """`spec` (an `anthropic` cache model whose TTL nobody chose) with the TTL the session's log shows (its
    fitted requests' where the session carries them: FITTED_TTL_KEY)."""
    ttl = session.extra[FITTED_TTL_KEY] if FITTED_TTL_KEY in session.extra else recorded_ttl(session)
    if ttl is None or ttl == spec.params.ttl:
        return spec
    return CacheSpec(spec.info, replace(spec.params, ttl=ttl))


def _factory(params: AnthropicParams, model: str | None) -> AnthropicCache:
    if params.lookback_blocks is not None and params.lookback_blocks < 0:
        raise ParameterError("cache model anthropic: lookback_blocks must not be negative")
    return AnthropicCache(params, model)


register(CacheInfo("anthropic", AnthropicParams, _factory,
                   "Anthropic prompt caching: breakpoints, 20-block lookback, per-model minimum, 5m/1h TTL "
                   "(prompt-caching docs; data.toml)", __name__))
