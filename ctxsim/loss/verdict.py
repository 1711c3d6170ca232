"""The verdict that weighs loss: which policy a compare stars, and the miss allowance it must keep within.

The starred policy is the cheapest by cost *with re-fetches* among the runs that

1. never pass the window minus the output reserve, and
2. have no more recall misses than their allowance: `--max-misses N` when given, else the misses of
   the `oracle` run at the same budget plus `--miss-margin` (default `DEFAULT_MARGIN`), else, when
   no oracle ran, the margin alone.

"The oracle at the same budget": among the oracle runs priced under the same provider, the one whose
peak context is the smallest at or above the run's own peak (it had at least the room the policy
used), else the one with the largest peak. An `oracle` run is the bound, reported and never starred.
Runs without loss data (an artefact written before loss metering) fall back to the cheapest that
never overflows, as before.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

DEFAULT_MARGIN = 5  # recall misses a starred policy may have beyond the oracle's (or in all, with no oracle)
ORACLE = "oracle"
OVERFLOW = "window-reserve"
RULE = ("starred: the cheapest with re-fetches that never passes the window minus the reserve and whose recall "
        "misses are within the allowance (--max-misses, else the oracle at the same budget plus --miss-margin, "
        "else the margin alone); the oracle is the bound and never starred")


def manifest_entry(options: Any) -> dict[str, Any]:
    """The manifest's `loss` block: how the loss was metered and judged (reports read it back)."""
    from ctxsim.loss import SCHEMA
    from ctxsim.loss.refetch import ASSUMPTION, CALL_OUTPUT_TOKENS

    settings = dict(options.loss_settings)
    return {
        "schema": SCHEMA,
        "include_content": bool(options.include_content),
        "max_misses": settings.get("max_misses"),
        "miss_margin": settings.get("miss_margin", DEFAULT_MARGIN),
        "refetch_assumption": ASSUMPTION,
        "refetch_call_output_tokens": CALL_OUTPUT_TOKENS,
        "verdict": RULE,
        "probe_at": sorted(options.probes.at) if options.probes is not None else [],
    }


def is_oracle(run: Any) -> bool:
    name: str | None = run.policy.get("name")
    return name == ORACLE


def misses(run: Any) -> int | None:
    recall: int | None = None if run.loss is None else run.loss.recall_misses
    return recall


def cost_with_refetch(run: Any) -> Decimal:
    loss = run.loss
    extra = loss.refetch_cost_usd if loss is not None and loss.refetch_cost_usd is not None else Decimal(0)
    cost: Decimal = run.totals.cost_usd + extra
    return cost


def _provider(run: Any) -> Any:
    return (run.policy.get("setup") or {}).get("provider")


def allowance(result: Any, i: int) -> int | None:
    """The most recall misses run i may have to be starred (None: no loss data)."""
    run = result.runs[i]
    if run.loss is None:
        return None
    entry = result.manifest.get("loss") or {}
    if entry.get("max_misses") is not None:
        return int(entry["max_misses"])
    margin = int(entry.get("miss_margin", DEFAULT_MARGIN))
    oracles = [r for r in result.runs if is_oracle(r) and r.loss is not None and _provider(r) == _provider(run)]
    if not oracles:
        return margin
    peak = run.totals.peak_context_tokens
    roomy = [r for r in oracles if r.totals.peak_context_tokens >= peak]
    bound = min(roomy, key=lambda r: r.totals.peak_context_tokens) if roomy else \
        max(oracles, key=lambda r: r.totals.peak_context_tokens)
    recall: int = bound.loss.recall_misses
    return recall + margin


def weighs_loss(result: Any) -> bool:
    return bool(result.runs) and all(run.loss is not None for run in result.runs)


def starred(result: Any) -> int | None:
    """Index of the starred run (None: none qualifies)."""
    best = None
    best_cost = None
    loss = weighs_loss(result)
    for i, run in enumerate(result.runs):
        if run.totals.first_over.get(OVERFLOW) is not None or is_oracle(run):
            continue
        if loss:
            limit = allowance(result, i)
            if limit is not None and run.loss.recall_misses > limit:
                continue
            cost = cost_with_refetch(run)
        else:
            cost = run.totals.cost_usd
        if best_cost is None or cost < best_cost:
            best, best_cost = i, cost
    return best


__all__ = ["DEFAULT_MARGIN", "RULE", "allowance", "cost_with_refetch", "is_oracle", "manifest_entry", "misses",
           "starred", "weighs_loss"]
