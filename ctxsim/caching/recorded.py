"""`RecordedFacts`: the provider's recorded cache behaviour, replayed on top of any cache model.

A cache model predicts what a request reads; where the trace recorded what the provider really
read, the two can part in ways no model of the log can produce (issue 17, cause 6):

* a break: the recorded read is below the model's within the cache lifetime, with nothing in the
  log changed (a provider miss, an eviction, Gemini's best-effort implicit cache, a hidden-prefix
  change the log does not show). The provider would have missed for any policy too: `none` reads
  the recorded read (the *ceiling*); a policy's own prompt reads what the miss transfers to it
  (`caching.transfer`: the same share of the model's read, or the same number of tokens less, the
  range's two ends; a fact without the model's reference read caps the read at the ceiling). What
  is no longer read is written where the provider bills writes at that request (Anthropic; OpenAI
  from GPT-5.6; `prefix` with writes), else sent uncached.
* a kept-warm prefix: the recorded read is above the model's, within what the session had sent
  before (its previous prompt and response): the product's requests the log does not contain kept
  it warm past the model's TTL (Claude Code does), or the provider's cache runs into the previous
  response (OpenAI-style). That request reads at least the recorded read (the *floor*), no more
  than the prefix this replay's history still shares with its previous request and response.
* an uncached tail: the recorded request sent more of its prompt fresh (neither read nor written)
  than the model's, on a provider that writes (Anthropic: the last breakpoint sat before the end of
  the prompt); that request writes that much less (*fresh*, the recorded uncached input), for
  every policy. The next request's recorded read then shows where the entry ended (a ceiling).

The facts come from the calibration (`analysis/cache_anchor.py`): per session part, request
number (1-based, in the session) -> (ceiling, floor, fresh; each None when not recorded), carried on the session's
`extra["cache_facts"]` and put around the session's cache model by the engine, next to
`WarmStart`. The cache model's own state is left as it is: what a capped request wrote is cached
after it, as the model already holds its whole prompt. Only the real answer changes; the warm one
(a cache that never goes cold: the cost range's low end) stays the model's own.

Not registered as a cache model: it wraps one (as WarmStart does) and cannot be chosen by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ctxsim.caching import CacheModel, CacheResult, warmed
from ctxsim.caching.transfer import POINT, Rule, transferred_read
from ctxsim.history import History

# Session.extra key: {request number: (ceiling, floor, fresh[, reference]), each int or None}
FACTS_KEY = "cache_facts"
Fact = tuple[int | None, int | None, int | None, int | None]


def capped(result: CacheResult, ceiling: int, writes: bool, hour: bool = False) -> CacheResult:
    """`result` reading at most `ceiling` tokens; the rest written (1-hour entries when `hour`) or sent fresh."""
    lost = result.read_tokens - ceiling
    if lost <= 0:
        return result
    if not writes:
        return CacheResult(ceiling, result.write_tokens, result.write_1h_tokens)
    if hour:
        return CacheResult(ceiling, result.write_tokens, result.write_1h_tokens + lost)
    return CacheResult(ceiling, result.write_tokens + lost, result.write_1h_tokens)


def unwritten(result: CacheResult, prompt: int, fresh: int) -> CacheResult:
    """`result` sending at least `fresh` tokens of the prompt uncached: taken from its writes (5-minute first)."""
    need = fresh - (prompt - result.read_tokens - result.write_tokens - result.write_1h_tokens)
    if need <= 0:
        return result
    from_5m = min(need, result.write_tokens)
    from_1h = min(need - from_5m, result.write_1h_tokens)
    return CacheResult(result.read_tokens, result.write_tokens - from_5m, result.write_1h_tokens - from_1h)


def _innermost(model: CacheModel) -> CacheModel:
    while hasattr(model, "inner"):
        model = model.inner
    return model


class RecordedFacts:
    """A cache model whose answers obey the requests' recorded ceilings and floors (module docstring)."""

    def __init__(self, inner: CacheModel, facts: Mapping[int, Sequence[int | None]], rule: Rule = POINT) -> None:
        self.inner = inner
        self.facts: dict[int, Fact] = {int(k): (v[0], v[1], v[2] if len(v) > 2 else None, v[3] if len(v) > 3 else None)
                                       for k, v in facts.items()}
        self.rule = rule
        self.other: Rule = "absolute" if rule == "share" else "share"
        # the latest request's other possible answers (under the other transfer rule; else the wrapped model's
        # own, a best-effort cache's ends); the engine prices them for the run's cost range (caching.transfer)
        self.pending: tuple[CacheResult, ...] = ()
        self.name = inner.name
        self.params = inner.params
        base = _innermost(inner)
        self._always_writes = base.name == "anthropic"  # Anthropic writes what a breakpoint's read misses
        self._hour = getattr(base.params, "ttl", None) == "1h"
        self._number = 0
        self._previous: int | None = None  # items of the previous request
        self._valid = 0  # of the previous request and its response, the items still unchanged
        self.moved_down = 0  # tokens a ceiling took out of the model's reads (this session)
        self.moved_up = 0  # tokens a floor added

    def edited(self, boundary: int) -> None:
        self._valid = min(self._valid, boundary)
        self.inner.edited(boundary)

    def request(self, history: History, ts_s: float | None) -> CacheResult | tuple[CacheResult, CacheResult]:
        answer = self.inner.request(history, ts_s)
        self._number += 1
        n = len(history)
        previous, valid = self._previous, self._valid
        self._previous, self._valid = n, n + 1  # the response is appended at position n
        self.pending = getattr(self.inner, "pending", ())
        fact = self.facts.get(self._number)
        if fact is None:
            return answer
        self.pending = ()  # the facts decide this request
        real, warm = (answer, answer) if isinstance(answer, CacheResult) else answer
        ceiling, floor, fresh, reference = fact
        now = self._obey(history, real, ceiling, floor, fresh, reference, previous, valid, self.rule)
        if ceiling is not None and reference is not None:
            other = self._obey(history, real, ceiling, floor, fresh, reference, previous, valid, self.other)
            self.pending = () if other == now else (other,)
        self.moved_down += max(0, real.read_tokens - now.read_tokens)
        self.moved_up += max(0, now.read_tokens - real.read_tokens)
        return now, warm

    def _obey(self, history: History, real: CacheResult, ceiling: int | None, floor: int | None, fresh: int | None,
              reference: int | None, previous: int | None, valid: int, rule: Rule) -> CacheResult:
        """The model's answer `real` made to obey one request's facts, a ceiling transferred under `rule`."""
        now = real
        if ceiling is not None:
            writes = self._always_writes or now.write_tokens > 0 or now.write_1h_tokens > 0
            read = transferred_read(now.read_tokens, ceiling, reference, rule)
            now = capped(now, read, writes, self._hour or (now.write_1h_tokens > 0 and not now.write_tokens))
        if floor is not None and previous is not None:
            shared = history.prefix_tokens(min(valid, previous + 1, len(history)))  # previous prompt and response
            now = warmed(now, history.prompt_tokens, min(floor, shared))
        if fresh is not None:
            now = unwritten(now, history.prompt_tokens, fresh)
        return now

    def __repr__(self) -> str:
        return f"RecordedFacts({self.inner!r}, {len(self.facts)} requests)"
