"""The `compare` table: one row per policy (x provider), relative to `none`."""

from __future__ import annotations

from decimal import Decimal

from ctxsim.replay.meter import Totals
from ctxsim.replay.run import RunResult, none_run, recorded_of_result
from ctxsim.reports._terminal import TableData, column_names, money, pct, recorded_cost_cell, recorded_label

OVERFLOW = "window-reserve"


def overflows(t: Totals) -> bool:
    return t.first_over.get(OVERFLOW) is not None


def cheapest(result: RunResult) -> int | None:
    """Index of the starred run: with loss metered, `loss.verdict.starred` (the cheapest with re-fetches within the
    miss allowance); else the cheapest (real-gap cost) that never passes the window minus the reserve."""
    from ctxsim.loss.verdict import starred, weighs_loss

    if weighs_loss(result):
        return starred(result)
    best = None
    for i, run in enumerate(result.runs):
        if overflows(run.totals):
            continue
        if best is None or run.totals.cost_usd < result.runs[best].totals.cost_usd:
            best = i
    return best


def baseline(result: RunResult, i: int) -> Totals | None:
    """The `none` run with the same provider as run i."""
    provider = result.runs[i].policy.get("setup", {}).get("provider")
    for run in result.runs:
        if run.policy["name"] == "none" and run.policy.get("setup", {}).get("provider") == provider:
            return run.totals
    return None


def change(new: Decimal | int, old: Decimal | int) -> str:
    if not old:
        return "n/a"
    value = (Decimal(new) - Decimal(old)) / Decimal(old) * 100
    return f"{value:+.1f}%"


def compare_table(result: RunResult) -> TableData:
    names, _ = column_names(result)
    best = cheapest(result)
    headers = ["policy", "requests", "input tokens", "peak", "p95", "fresh prefill", "hit rate", "rewrites",
               "cost no cache", "cost cached", "cost real gaps", "vs none", "summarizer", "first overflow",
               "events"]
    from ctxsim.reports._loss import LOSS_HEADERS, loss_cells, summarizer_cell

    loss = all(run.loss is not None for run in result.runs) and bool(result.runs)
    if loss:
        headers[12:12] = LOSS_HEADERS
    rows = []
    for i, (name, run) in enumerate(zip(names, result.runs, strict=True)):
        t = run.totals
        base = baseline(result, i)
        first = t.first_over.get(OVERFLOW)
        rows.append([
            name + (" *" if i == best else ""),
            f"{t.requests:,}", f"{t.input_tokens:,}", f"{t.peak_context_tokens:,}", f"{t.p95_context_tokens:,}",
            f"{t.fresh_prefill_tokens:,}", pct(t.hit_rate), f"{t.rewrites:,}",
            money(t.cost_nocache_usd), money(t.cost_warm_usd), money(t.cost_usd),
            "baseline" if base is t else (change(t.cost_usd, base.cost_usd) if base is not None else "n/a"),
            money(t.summarize_cost_usd) if t.summarize_requests else "-",
            "never" if first is None else f"request {first:,}", f"{t.events:,}",
        ])
        if loss:
            rows[-1][0] = name + (" (bound)" if run.policy["name"] == "oracle" else "") + (" *" if i == best else "")
            rows[-1][12:12] = loss_cells(run)
            rows[-1][-3] = summarizer_cell(run)
    row = recorded_row(result)
    if row is not None:
        if loss:
            row[12:12] = ["-"] * len(LOSS_HEADERS)
        rows.append(row)
    if loss:
        return TableData("policies compared (* = recommended, see notes; costs per the trace's timing)",
                         headers, rows)
    return TableData("policies compared (* = cheapest that never overflows; costs per the trace's timing)",
                     headers, rows)


# The columns kept first when the table must fit a narrow terminal (the rest with --wide).
PRIORITY = ("policy", "cost real gaps", "vs none", "misses", "peak", "hit rate", "first overflow", "events", "p95",
            "input tokens", "fresh prefill", "cost cached", "cost no cache", "rewrites", "requests", "summarizer",
            "cost w/ re-fetch", "distinct ids", "miss tokens", "re-fetches")


def fit(table: TableData, width: int, border: int = 2) -> tuple[TableData, list[str]]:
    """The table cut to the most useful columns that fit `width` characters (columns keep their order; a
    column is kept only when every more useful one is);
    the names of the columns left out. `border` is what each column costs beyond its text (2 plain, 3 rich)."""
    sizes = [max(len(h), *(len(r[c]) for r in table.rows)) if table.rows else len(h)
             for c, h in enumerate(table.headers)]
    chosen: set[int] = set()
    used = 0
    for name in PRIORITY:
        if name not in table.headers:
            continue
        c = table.headers.index(name)
        if used + sizes[c] + border > width and chosen:
            break  # the less useful go first: none after it is kept in its place
        chosen.add(c)
        used += sizes[c] + border
    keep = sorted(chosen)
    left_out = [h for c, h in enumerate(table.headers) if c not in chosen]
    return TableData(table.title, [table.headers[c] for c in keep], [[r[c] for c in keep] for r in table.rows],
                     table.left), left_out


def recorded_row(result: RunResult) -> list[str] | None:
    """The `recorded` row: what was really billed (None when the trace recorded no usage)."""
    rec = recorded_of_result(result)
    if rec is None:
        return None
    base = none_run(result)
    unknown = "-"
    fresh = f"{rec.input_tokens - rec.cache_read_tokens:,}" if rec.cache_read_tokens is not None else unknown
    hit = pct(rec.cache_read_tokens / rec.input_tokens) if rec.cache_read_tokens is not None and rec.input_tokens \
        else unknown
    return [
        recorded_label(rec), f"{rec.requests:,}", f"{rec.input_tokens:,}",
        f"{rec.peak_context_tokens:,}" if rec.peak_context_tokens is not None else unknown, unknown, fresh, hit,
        unknown, unknown, unknown, recorded_cost_cell(rec),
        change(rec.cost_usd, base.totals.cost_usd) if base is not None else "n/a", unknown, unknown, unknown,
    ]
