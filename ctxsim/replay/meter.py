"""Per-request rows and run totals: what each request would have been billed.

A row holds the prompt (`input_tokens`, inclusive) and its parts (cache read,
5-minute and 1-hour writes, uncached), the output, the context size and its
headroom, and three costs: with no cache, with a cache that never goes cold,
and with the trace's real gaps between requests (caches that expired).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from decimal import Decimal
from functools import cache
from operator import attrgetter
from typing import Any, TypeVar

THRESHOLDS = (128_000, 200_000)
MONEY_FIELDS = ("cost_usd", "cost_warm_usd", "cost_nocache_usd")  # Decimal in a Row, text in JSON and columns
R = TypeVar("R")


@dataclass(slots=True)  # not frozen: a frozen init costs a setattr call per field, per request
class Row:
    request: int  # 1-based over the run (all sessions)
    session: str
    index: int  # 1-based request number within its session
    kind: str  # "request", or "summarize" for a policy's summarising call
    ts: str | None
    messages: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int
    uncached_tokens: int
    output_tokens: int
    context_tokens: int
    headroom_tokens: int
    shared_prefix_tokens: int
    rewrite: bool
    warm_cache_read_tokens: int
    cost_usd: Decimal
    cost_warm_usd: Decimal
    cost_nocache_usd: Decimal
    recorded_input_tokens: int | None = None
    recorded_cache_read_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in MONEY_FIELDS:
            out[key] = str(out[key])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Row:
        values = dict(data)
        for key in MONEY_FIELDS:
            values[key] = Decimal(values[key])
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


@cache
def field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def to_columns(records: Sequence[Any], cls: type) -> list[list[Any]]:
    """Records of `cls` (rows, events) as one list per field, money as text: how runs travel back
    from worker processes.

    Lists of ints and strings pickle in C; thousands of record objects and Decimals do not (this
    halves the time a run takes to send and to load; a frozen record unpickles field by field).
    """
    columns = []
    for name in field_names(cls):
        values = list(map(attrgetter(name), records))
        columns.append(list(map(str, values)) if name in MONEY_FIELDS else values)
    return columns


def from_columns(columns: list[list[Any]], cls: type[R]) -> list[R]:
    values = [list(map(Decimal, col)) if name in MONEY_FIELDS else col
              for name, col in zip(field_names(cls), columns, strict=True)]  # type: ignore[arg-type]  # a class is hashable; mypy sees type[R] as not
    return [cls(*record) for record in zip(*values, strict=True)]


@dataclass(frozen=True, slots=True)
class EventRecord:
    request: int
    session: str
    policy: str
    kind: str
    note: str
    messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def freed_tokens(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        if self.kind in ("threshold", "overflow"):
            return f"request {self.request}: {self.note}"
        return f"request {self.request}: {self.note} (-{self.freed_tokens:,})"


def percentile(values: list[int], q: float) -> int:
    """Nearest-rank percentile (q in 0..100); 0 for no values."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Totals:
    requests: int
    summarize_requests: int
    input_tokens: int
    fresh_prefill_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int
    uncached_tokens: int
    output_tokens: int
    hit_rate: float
    warm_hit_rate: float
    rewrites: int
    peak_context_tokens: int
    p95_context_tokens: int
    first_over: dict[str, int | None] = field(default_factory=dict)
    cost_usd: Decimal = Decimal(0)
    cost_warm_usd: Decimal = Decimal(0)
    cost_nocache_usd: Decimal = Decimal(0)
    summarize_cost_usd: Decimal = Decimal(0)
    events: int = 0
    # [low, high] where the run replayed recorded provider misses, transferred to this policy's prompts by
    # two rules the log cannot tell apart (caching.transfer); None where it replayed none
    cost_range_usd: tuple[Decimal, Decimal] | None = None

    @classmethod
    def of(cls, rows: list[Row], events: int, window: int, reserve: int) -> Totals:
        real = [r for r in rows if r.kind == "request"]
        contexts = [r.context_tokens for r in real]
        input_tokens = sum(r.input_tokens for r in rows)
        read = sum(r.cache_read_tokens for r in rows)
        warm_read = sum(r.warm_cache_read_tokens for r in rows)
        first_over: dict[str, int | None] = {}
        limits = [(f"{t // 1000}k", t) for t in THRESHOLDS] + [("window-reserve", window - reserve)]
        for label, limit in limits:
            first_over[label] = next((r.request for r in real if r.context_tokens > limit), None)
        return cls(
            requests=len(real),
            summarize_requests=len(rows) - len(real),
            input_tokens=input_tokens,
            fresh_prefill_tokens=input_tokens - read,
            cache_read_tokens=read,
            cache_write_tokens=sum(r.cache_write_tokens for r in rows),
            cache_write_1h_tokens=sum(r.cache_write_1h_tokens for r in rows),
            uncached_tokens=sum(r.uncached_tokens for r in rows),
            output_tokens=sum(r.output_tokens for r in rows),
            hit_rate=read / input_tokens if input_tokens else 0.0,
            warm_hit_rate=warm_read / input_tokens if input_tokens else 0.0,
            rewrites=sum(1 for r in real if r.rewrite),
            peak_context_tokens=max(contexts, default=0),
            p95_context_tokens=percentile(contexts, 95),
            first_over=first_over,
            cost_usd=sum((r.cost_usd for r in rows), Decimal(0)),
            cost_warm_usd=sum((r.cost_warm_usd for r in rows), Decimal(0)),
            cost_nocache_usd=sum((r.cost_nocache_usd for r in rows), Decimal(0)),
            summarize_cost_usd=sum((r.cost_usd for r in rows if r.kind != "request"), Decimal(0)),
            events=events,
        )

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, Decimal):
                out[key] = str(value)
        out["hit_rate"] = round(self.hit_rate, 6)
        out["warm_hit_rate"] = round(self.warm_hit_rate, 6)
        if self.cost_range_usd is None:
            del out["cost_range_usd"]  # no recorded misses replayed: the runs' JSON as before
        else:
            out["cost_range_usd"] = [str(v) for v in self.cost_range_usd]
        return out
