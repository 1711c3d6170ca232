"""Cache breaks explained: every recorded request whose cache read fell short of what the
previous request left in the cache, with its cause as far as the log tells, and what it re-billed.

What the cache could hold is the previous request's whole prompt (its recorded input), or this
request's prompt where that is smaller. A request breaks when its recorded cache read is more than
`TOLERANCE_TOKENS` short of that (smaller shortfalls are where the agent put its breakpoint).
The cause, first that applies:

- `compaction`: a compaction event (the agent's own) lies between the two requests, or this is the
  first request of a session that continues a compacted one;
- `model switch`: the two requests name different models (caches are per model);
- `ttl`: the gap between them is past the cache lifetime: 5 minutes, or 1 hour once the session
  recorded 1-hour cache writes (validate uses the same lifetimes);
- `edit at message N`: the history changed before message N: a reader-recorded rewrite (Claude
  Code's microcompact) at N, or the prompt fell with no compaction (at a new user turn at N
  after recorded thinking: the provider drops earlier turns' thinking; else N is unknown);
- `provider miss`: nothing in the log explains it (the provider evicted the prefix, routed to
  another cache, or the hidden system prompt changed: the log cannot tell which).

Re-billed: the request's recorded bill (genai-prices at its model and time) minus the same bill
with the lost tokens read from the cache instead of written (1-hour writes first taken back, then
5-minute ones, then uncached input). Totals per cause.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from ctxsim.model import Message, Session, Trace
from ctxsim.pricing.prices import Bill, Pricer

TOLERANCE_TOKENS = 1024  # Anthropic's smallest cacheable prefix; OpenAI caches in 128-token steps past 1,024
TTL_5M_S = 300.0
TTL_1H_S = 3600.0
CAUSES = ("compaction", "model switch", "ttl", "edit", "provider miss")


@dataclass
class Break:
    session: str
    request: int  # 1-based within its session
    ts: str | None
    model: str | None
    cause: str  # one of CAUSES
    detail: str
    cacheable_tokens: int  # what the cache could have held for this request
    read_tokens: int
    lost_tokens: int
    rebilled_usd: Decimal | None  # None: the model has no price

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["rebilled_usd"] = None if self.rebilled_usd is None else str(self.rebilled_usd)
        return out


@dataclass
class _Last:
    input_tokens: int
    ts_s: float | None
    model: str | None
    wrote_1h: bool
    thinking: bool


def _human(m: Message) -> bool:
    return m.role == "user" and not m.extra.get("tool") and not m.extra.get("injected") \
        and not m.extra.get("is_meta")


def span(seconds: float | None) -> str:
    """A gap as people say it: 42s, 17 min, 2.5 h (validate's lines use it too)."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def rebilled(pricer: Pricer | None, m: Message, lost: int) -> Decimal | None:
    """The recorded bill minus the bill had `lost` more tokens been read from the cache."""
    if pricer is None or m.usage is None:
        return None
    u = m.usage
    back_1h = min(lost, u.cache_write_1h_tokens)
    back_5m = min(lost - back_1h, u.cache_write_tokens)
    back_uncached = min(lost - back_1h - back_5m, max(u.uncached_tokens, 0))
    moved = back_1h + back_5m + back_uncached
    ts = m.ts_s if m.ts else None
    actual = pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cache_write_1h_tokens,
                              u.output_tokens), ts)
    warm = pricer.cost(Bill(u.input_tokens, u.cache_read_tokens + moved, u.cache_write_tokens - back_5m,
                            u.cache_write_1h_tokens - back_1h, u.output_tokens), ts)
    return actual - warm


def breaks_of(trace: Trace, names: dict[str, str] | None = None, prices: Any = None) -> list[Break]:
    """Every cache break in the trace's sessions (a session continuing another carries its cache on)."""
    from ctxsim.analysis.inspect import Prices

    prices = prices or Prices()
    last_of: dict[str, _Last] = {}
    out: list[Break] = []
    for session in trace.sessions:
        name = (names or {}).get(session.id, session.id)
        out.extend(_session_breaks(session, name, last_of, prices))
    return out


def _session_breaks(session: Session, name: str, last_of: dict[str, _Last], prices: Any) -> list[Break]:
    out: list[Break] = []
    continues = session.extra.get("continues")
    prev = last_of.get(continues) if isinstance(continues, str) else None
    events = sorted(session.events, key=lambda e: e.position)
    compacted_at_start = any(e.name == "compaction" and e.position == 0 for e in events) and prev is not None
    wrote_1h = prev.wrote_1h if prev else False
    thinking = prev.thinking if prev else False
    since: list[tuple[int, Message]] = []  # (1-based position, message) since the previous request
    prev_position = 0
    index = 0
    for position, m in enumerate(session.messages):
        if m.role != "assistant":
            since.append((position + 1, m))
            continue
        index += 1
        u = m.usage
        model = m.model or session.model
        between = [e for e in events if prev_position <= e.position <= position and not (e.position == 0 and index == 1
                                                                                         and not compacted_at_start)]
        if u is not None and prev is not None:
            cacheable = min(prev.input_tokens, u.input_tokens)
            lost = cacheable - u.cache_read_tokens
            if lost > TOLERANCE_TOKENS:
                ts_s = m.ts_s if m.ts else None
                gap = ts_s - prev.ts_s if ts_s is not None and prev.ts_s is not None else None
                ttl = TTL_1H_S if wrote_1h else TTL_5M_S
                compaction = next((e for e in between if e.name == "compaction"), None)
                rewrite = next((e for e in between if e.name != "compaction"), None)
                turn = next((p for p, x in since if _human(x)), None)
                if compaction is not None or (index == 1 and compacted_at_start):
                    cause, detail = "compaction", "the agent compacted its history before this request"
                elif prev.model and model and prev.model != model:
                    cause, detail = "model switch", f"{prev.model} -> {model}"
                elif gap is not None and gap > ttl:
                    cause, detail = "ttl", (f"{span(gap)} since the previous request, past the "
                                            f"{span(ttl)} cache lifetime")
                elif rewrite is not None:
                    cause, detail = "edit", (f"edit at message {rewrite.position + 1}: the log records a "
                                             f"{rewrite.name} there")
                elif u.input_tokens < prev.input_tokens - TOLERANCE_TOKENS:
                    fell = prev.input_tokens - u.input_tokens
                    if turn is not None and thinking:
                        cause, detail = "edit", (f"edit at message {turn}: the prompt fell by {fell:,} tokens at a "
                                                 "new user turn; earlier turns' thinking is dropped there")
                    else:
                        cause, detail = "edit", (f"the prompt fell by {fell:,} tokens with no compaction recorded: "
                                                 "the history changed before this request (where, the log does "
                                                 "not tell)")
                else:
                    cause = "provider miss"
                    detail = ((f"{span(gap)} after the previous request, " if gap is not None else "")
                              + "the prompt only grew: nothing in the log explains it"
                              + (f" (the read stopped at {u.cache_read_tokens:,} tokens: a prefix such as the "
                                 "system prompt and tools stayed cached, what followed was evicted or changed "
                                 "unseen)" if u.cache_read_tokens else ""))
                pricer = prices.get(session.provider, model)
                out.append(Break(name, index, m.ts, model, cause, detail, cacheable, u.cache_read_tokens, lost,
                                 rebilled(pricer, m, lost)))
        if u is not None:
            wrote_1h = wrote_1h or u.cache_write_1h_tokens > 0
            prev = _Last(u.input_tokens, m.ts_s if m.ts else None, model, wrote_1h, thinking)
        if m.thinking:
            thinking = True
            if prev is not None:
                prev.thinking = True
        since = []
        prev_position = position + 1
    if prev is not None:
        last_of[session.id] = prev
    return out


def per_cause(breaks: list[Break]) -> dict[str, dict[str, Any]]:
    """cause -> {breaks, lost_tokens, rebilled_usd (None if any was unpriced and none priced)}, every cause listed."""
    out: dict[str, dict[str, Any]] = {c: {"breaks": 0, "lost_tokens": 0, "rebilled_usd": Decimal(0),
                                          "unpriced": 0} for c in CAUSES}
    for b in breaks:
        entry = out[b.cause]
        entry["breaks"] += 1
        entry["lost_tokens"] += b.lost_tokens
        if b.rebilled_usd is None:
            entry["unpriced"] += 1
        else:
            entry["rebilled_usd"] += b.rebilled_usd
    return out


def breaks_json(breaks: list[Break]) -> dict[str, Any]:
    causes = per_cause(breaks)
    total_usd = sum((c["rebilled_usd"] for c in causes.values()), Decimal(0))
    return {"breaks": [b.to_json() for b in breaks],
            "per_cause": {k: {**v, "rebilled_usd": str(v["rebilled_usd"])} for k, v in causes.items()},
            "total": {"breaks": len(breaks), "lost_tokens": sum(b.lost_tokens for b in breaks),
                      "rebilled_usd": str(total_usd)},
            "tolerance_tokens": TOLERANCE_TOKENS}


def breaks_tables(breaks: list[Break]) -> list[Any]:
    from ctxsim.analysis.inspect import num, usd
    from ctxsim.reports._fit import FitTable
    from ctxsim.reports._terminal import TableData

    timed = sorted(breaks, key=lambda b: (b.ts is None, b.ts or ""))  # in time order, the untimed last
    rows = [[(b.ts or "")[:16].replace("T", " "), b.session, b.cause, b.detail, num(b.request),
             usd(b.rebilled_usd), num(b.lost_tokens), num(b.cacheable_tokens), num(b.read_tokens)] for b in timed]
    causes = per_cause(breaks)
    total = sum((c["rebilled_usd"] for c in causes.values()), Decimal(0))
    summary = [[cause, num(v["breaks"]), num(v["lost_tokens"]),
                usd(v["rebilled_usd"]) + (f" ({v['unpriced']} unpriced)" if v["unpriced"] else "")]
               for cause, v in causes.items()]
    summary.append(["total", num(len(breaks)), num(sum(b.lost_tokens for b in breaks)), usd(total)])
    headers = ["time (UTC)", "session", "cause", "why", "req", "re-billed", "lost", "cacheable", "read"]
    return [FitTable("cache breaks in time order (a read short of the previous prompt by more than "
                     f"{TOLERANCE_TOKENS:,} tokens)", headers, rows, left=4, minimum=24,
                     keep=("time (UTC)", "session", "cause", "re-billed", "req", "lost", "why", "cacheable",
                           "read")),
            TableData("cache breaks per cause", ["cause", "breaks", "lost tokens", "re-billed"], summary, left=1)]
