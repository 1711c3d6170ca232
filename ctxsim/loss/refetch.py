"""Re-fetches priced: what re-reading the tool results a policy lost would have cost.

Open-loop replay cannot know what the agent would have done once an identifier it needed was
gone; it can bound it. For a tool result whose misses weigh a whole identifier (`kinds.REFETCH_WEIGHTS`;
each source once, until the policy next removes or stubs a tool result: `meter.LossMeter`), the agent
would have called that tool again: one extra turn that sends the request's prompt again (read from
the cache), writes the re-read to the cache as new input (sized as the product's read tool re-reads:
`observed.Detector.reread_tokens`), and outputs a short call (`CALL_OUTPUT_TOKENS`). Priced
at the request's own session's model and time; added to the open-loop cost as "cost with
re-fetches".
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ctxsim.pricing.prices import Bill

CALL_OUTPUT_TOKENS = 50  # the tool call the agent would have written to fetch the result again
ASSUMPTION = ("re-fetch estimate: a tool result is re-read once what the policy made it lose weighs a whole identifier "
              "(a path, error, URL or command; two symbols or quoted strings; numbers and units nothing), each result "
              "once until the policy next removes a tool result, never a write's or an edit's; each re-read costs one "
              "extra turn: the request's prompt again at the cache-read price, the re-read written to the cache, sized "
              "as the product's read tool re-reads (one usual slice of a file, capped by the result; other results "
              f"whole), {CALL_OUTPUT_TOKENS} output tokens for the call; a bound on what the agent would have done, "
              "not a replay of it")


def price(run: Any, replayer: Any) -> Decimal:
    """The re-fetches of `run` (its `loss` report) priced; sets `loss.refetch_cost_usd` and returns it."""
    from ctxsim.model import parse_ts

    loss = run.loss
    total = Decimal(0)
    if loss.refetches:
        rows = {r.request: r for r in run.rows if r.kind == "request"}
        sessions = {s.id: s for s in replayer.trace.sessions}
        for f in loss.refetches:
            row = rows.get(f.request)
            if row is None:
                continue
            session = sessions.get(f.session)
            pricer = replayer.pricers.session(session) if session is not None else replayer.pricer
            prompt = max(0, row.input_tokens)  # a calibration's overhead can size a prompt below zero: never a refund
            ts_s = parse_ts(row.ts) if row.ts else None
            total += pricer.cost(Bill(prompt + f.tokens, prompt, f.tokens, 0, CALL_OUTPUT_TOKENS), ts_s)
    loss.refetch_cost_usd = total
    return total


__all__ = ["ASSUMPTION", "CALL_OUTPUT_TOKENS", "price"]
