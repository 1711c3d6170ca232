"""The calibration's cache side: the provider's recorded cache behaviour, as ceilings and floors.

The calibrated `none` replay predicts each request's cache read with the provider's cache model.
Where the trace recorded the read and the two part in a way the model cannot produce, the
recorded read is taken as the provider's fact (issue 17, cause 6; replayed by
`ctxsim.caching.recorded.RecordedFacts`, for `none` and for every policy):

* ceiling: the recorded read is below the model's by more than `tolerance` (a break: a provider
  miss, an eviction, a best-effort implicit cache, a hidden-prefix change the log does not show);
  `none` reads what was recorded; a policy's prompt loses the same share of its model read, or the
  same number of tokens (`ctxsim.caching.transfer`: the two ends of its cost range), for which the
  fact keeps the model's own read at that request (its reference).
* floor: the recorded read is above the model's by more than `tolerance` and within what the
  session sent before (the previous request's recorded prompt and response): the prefix was kept
  warm past the model's TTL (requests the log does not contain) or the cache ran into the previous
  response; the request reads at least what was recorded, within what it still shares.
* fresh: on a request that recorded cache writes, the recorded uncached input (neither read nor
  written) is above the model's by more than `tolerance`: the last breakpoint sat before the end
  of the prompt; the request writes that much less (sends it fresh).

The model's read is compared in billed tokens: scaled by the previous request's recorded over
replayed prompt, so a prompt-size error (the fit's business) is not taken for a cache break.
A session part's first request is the warm start's (`Calibration.warm_start_tokens`), not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MIN_TOLERANCE_TOKENS = 128  # OpenAI's hit granularity; DeepSeek's is 64
TOLERANCE_SHARE = 0.01  # of the request's recorded prompt

# request number -> (ceiling, floor, fresh, reference): `reference` is the model's own read at a ceiling (the
# `none` replay's, in replay tokens), from which a policy's replay transfers the miss (caching/recorded.py)
Facts = dict[int, tuple[int | None, ...]]


def tolerance(prompt_tokens: int) -> float:
    return max(MIN_TOLERANCE_TOKENS, TOLERANCE_SHARE * prompt_tokens)


def session_facts(requests: Sequence[Any]) -> Facts:
    """One session part's ceilings and floors, from its replayed requests (calibrate.Request) and their usage."""
    out: Facts = {}
    previous = None
    for r in requests:
        u = r.recorded.usage
        if u is None or u.input_tokens <= 0:
            continue
        ceiling = floor = fresh = reference = None
        slack = tolerance(u.input_tokens)
        if previous is not None and previous.row.input_tokens > 0:
            before = previous.recorded.usage
            model = r.row.cache_read_tokens * before.input_tokens / previous.row.input_tokens  # in billed tokens
            read = u.cache_read_tokens
            if read < model - slack:
                ceiling = read
                reference = r.row.cache_read_tokens
            elif read > model + slack and read <= before.input_tokens + before.output_tokens + slack:
                floor = read
        written = u.cache_write_tokens + u.cache_write_1h_tokens
        if written > 0:
            uncached = u.input_tokens - u.cache_read_tokens - written
            if uncached > _uncached(r.row) + slack:
                fresh = uncached
        if ceiling is not None or floor is not None or fresh is not None:
            out[r.index] = (ceiling, floor, fresh, reference)
        previous = r
    return out


def recorded_facts(sessions: Sequence[Any], per_session: Sequence[Sequence[Any]]) -> dict[str, Facts]:
    """Per session part with any: its ceilings and floors (see the module docstring)."""
    out = {}
    for session, requests in zip(sessions, per_session, strict=True):
        facts = session_facts(requests)
        if facts:
            out[session.id] = facts
    return out


def _uncached(row: Any) -> int:
    return int(row.input_tokens - row.cache_read_tokens - row.cache_write_tokens - row.cache_write_1h_tokens)


def moved_tokens(before: Sequence[Sequence[Any]], after: Sequence[Sequence[Any]],
                 facts: Mapping[str, Facts]) -> dict[str, int]:
    """Tokens the facts moved, the replay without them against with: cache reads down (ceilings) and up
    (floors), and writes sent fresh instead (fresh tails, net of what the reads moved)."""
    down = up = unwritten = 0
    for old, new in zip(before, after, strict=True):
        for a, b in zip(old, new, strict=True):
            fact = facts.get(a.session, {}).get(a.index)
            if fact is None:
                continue
            delta = b.row.cache_read_tokens - a.row.cache_read_tokens
            down += max(0, -delta)
            up += max(0, delta)
            if fact[2] is not None:  # a fresh tail (a provider that writes: the reads moved to writes, not here)
                unwritten += max(0, _uncached(b.row) - _uncached(a.row))
    return {"down": down, "up": up, "unwritten": unwritten}


def counts(facts: Mapping[str, Mapping[int, Sequence[int | None]]]) -> tuple[int, int, int]:
    """(requests with a ceiling, with a floor, with a fresh tail)."""
    values = [v for f in facts.values() for v in f.values()]
    return tuple(sum(1 for v in values if v[i] is not None) for i in range(3))  # type: ignore[return-value]


def note(facts: Mapping[str, Mapping[int, Sequence[int | None]]], moved: Mapping[str, int]) -> str | None:
    """validate's and replay's line on the recorded cache facts; None when there are none."""
    ceilings, floors, fresh = counts(facts)
    if not ceilings and not floors and not fresh:
        return None
    parts = []
    if ceilings:
        parts.append(f"{ceilings} request(s) read less from the cache than the model (a provider miss, an eviction "
                     f"or a change the log does not show): capped at the recorded read, the miss carried to "
                     f"each policy's own prompt as the same share or the same tokens (its cost range), "
                     f"{moved.get('down', 0):,} tokens read moved to writes or fresh input")
    if floors:
        parts.append(f"{floors} request(s) read more than the model, within what the session had sent (kept warm "
                     f"by requests the log does not hold, or read into the previous response): read at least as "
                     f"recorded, {moved.get('up', 0):,} tokens")
    if fresh:
        parts.append(f"{fresh} request(s) sent more of the prompt uncached than the model (the last cache breakpoint "
                     f"before the prompt's end): written that much less, {moved.get('unwritten', 0):,} tokens")
    return "recorded cache facts: " + "; ".join(parts) + " (the cost range's low end is the model without them)"


def to_json(facts: Mapping[str, Mapping[int, Sequence[int | None]]], moved: Mapping[str, int]) -> dict[str, Any]:
    ceilings, floors, fresh = counts(facts)
    return {"ceilings": ceilings, "floors": floors, "fresh": fresh, "moved_down_tokens": moved.get("down", 0),
            "moved_up_tokens": moved.get("up", 0), "unwritten_tokens": moved.get("unwritten", 0),
            "by_session": {sid: {str(k): list(v) for k, v in sorted(f.items())} for sid, f in facts.items()}}
