"""Terminal output of a run: summary, per-request context, events.

Tables are built once as plain data; on a terminal they print with rich, when
piped as aligned plain text (stable bytes, no colour codes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from ctxsim.replay.meter import Totals
from ctxsim.replay.run import RunResult, recorded_gap, recorded_of_result
from ctxsim.reports._table import TableData as TableData  # named here too: the renderers take it from here


def money(value: Decimal) -> str:
    if value < Decimal("0.1"):  # small amounts keep four decimals, so they do not all read $0.00
        return f"${value.quantize(Decimal('0.0001'), ROUND_HALF_EVEN)}"
    if value >= 100:
        return f"${value.quantize(Decimal(1), ROUND_HALF_EVEN):,}"
    return f"${value.quantize(Decimal('0.01'), ROUND_HALF_EVEN):,}"


def pct(value: float) -> str:
    return f"{value * 100:.2f}%"


def _first(value: int | None) -> str:
    return "never" if value is None else f"request {value:,}"


MAX_LABEL = 22


def column_names(result: RunResult) -> tuple[list[str], list[str]]:
    """Short unique column names, and legend lines for the ones that had to be shortened."""
    names: list[str] = []
    legend: list[str] = []
    for i, run in enumerate(result.runs, start=1):
        label = run.policy.get("label") or run.policy["name"]
        if len(label) <= MAX_LABEL and label not in names:
            names.append(label)
        else:
            short = f"{run.policy.get('preset') or run.policy['name']} #{i}"
            names.append(short)
            legend.append(f"{short} = {label}")
    return names, legend


MAX_EVENTS = 25


def summary(result: RunResult) -> TableData:
    runs = result.runs
    metrics: list[tuple[str, Callable[[Totals], str]]] = [
        ("requests", lambda t: f"{t.requests:,}"),
        ("input tokens, all requests", lambda t: f"{t.input_tokens:,}"),
        ("peak context", lambda t: f"{t.peak_context_tokens:,}"),
        ("p95 context", lambda t: f"{t.p95_context_tokens:,}"),
        ("tokens prefilled fresh", lambda t: f"{t.fresh_prefill_tokens:,}"),
        ("cache read", lambda t: f"{t.cache_read_tokens:,}"),
        ("cache write 5m", lambda t: f"{t.cache_write_tokens:,}"),
        ("cache write 1h", lambda t: f"{t.cache_write_1h_tokens:,}"),
        ("uncached input", lambda t: f"{t.uncached_tokens:,}"),
        ("output tokens", lambda t: f"{t.output_tokens:,}"),
        ("hit rate (read / input)", lambda t: pct(t.hit_rate)),
        ("rewrites (prefix broken)", lambda t: f"{t.rewrites:,}"),
        ("cost without caching", lambda t: money(t.cost_nocache_usd)),
        ("cost with caching (warm)", lambda t: money(t.cost_warm_usd)),
        ("... with the trace's real gaps", lambda t: money(t.cost_usd)),
        ("first over 128k", lambda t: _first(t.first_over.get("128k"))),
        ("first over 200k", lambda t: _first(t.first_over.get("200k"))),
        ("first over window - reserve", lambda t: _first(t.first_over.get("window-reserve"))),
        ("policy events", lambda t: f"{t.events:,}"),
    ]
    rows = [[label] + [fmt(run.totals) for run in runs] for label, fmt in metrics]
    headers = [""] + column_names(result)[0]
    rec = recorded_of_result(result)
    if rec is not None:  # what was really billed, beside the replays
        headers.append(recorded_label(rec))
        for row, value in zip(rows, recorded_column(rec), strict=True):
            row.append(value)
    if runs and all(getattr(run, "loss", None) is not None for run in runs):  # ctxsim.loss
        from ctxsim.reports._loss import summary_rows

        rows += [row + (["-"] if rec is not None else []) for row in summary_rows(result)]
    return TableData("summary", headers, rows)


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def recorded_cost_cell(rec: Any) -> str:
    """The recorded cost as ctxsim priced it, with the trace's own cost beside it where it records one."""
    text = money(rec.cost_usd)
    if rec.own_cost_usd is not None:
        text += f" (trace {money(rec.own_cost_usd)}{' !' if rec.own_cost_flagged else ''})"
    return text


def recorded_label(rec: Any) -> str:
    """`recorded`, or `recorded, est.` when estimates stand in for streaming-placeholder output counts (a line
    above the tables gives both bills)."""
    return "recorded, est." if rec.estimated_outputs else "recorded"


def recorded_column(rec: Any) -> list[str]:
    """The `recorded` column of the summary, in the order of its metrics."""
    read, w5, w1 = rec.cache_read_tokens, rec.cache_write_tokens, rec.cache_write_1h_tokens
    known = read is not None and w5 is not None and w1 is not None
    return [
        f"{rec.requests:,}", f"{rec.input_tokens:,}", _tokens(rec.peak_context_tokens), "-",
        _tokens(rec.input_tokens - read) if read is not None else "-", _tokens(read), _tokens(w5), _tokens(w1),
        _tokens(rec.input_tokens - read - w5 - w1) if known else "-", f"{rec.output_tokens:,}",
        pct(read / rec.input_tokens) if read is not None and rec.input_tokens else "-", "-", "-", "-",
        recorded_cost_cell(rec), "-", "-", "-", "-",
    ]


def head_lines(result: RunResult) -> list[str]:
    """Lines said above the tables: the calibration used, `none` off the bill, the trace's own cost."""
    from ctxsim.replay.recorded import (
        calibration_line,
        calibration_notes,
        coverage_line,
        estimated_line,
        gap_line,
        own_cost_line,
        warning,
    )

    out = []
    if not any(row.kind == "request" for run in result.runs for row in run.rows):
        out.append("note: nothing to replay: the trace holds no model request (no assistant message), so every "
                   "figure below is zero")
    line = calibration_line(result.manifest)
    if line:
        out.append(line)
        out.extend(f"note: {n}" for n in calibration_notes(result.manifest))
    pair = recorded_gap(result)
    if pair is not None:
        rec, g = pair
        out.append(warning(rec, g) or gap_line(g))
        said = predicted_line(result.manifest)
        if said:
            out.append(said)
    rec = recorded_of_result(result)
    out.extend(line for line in ((coverage_line(rec), estimated_line(rec), own_cost_line(rec)) if rec is not None
                                 else ()) if line)
    return out


def context_rows(result: RunResult, every: int) -> TableData:
    base = result.runs[0].rows
    picked = [i for i, row in enumerate(base) if row.kind == "request" and
              (row.request == 1 or row.request % every == 0 or i == len(base) - 1)]
    by_request = [{row.request: row for row in run.rows if row.kind == "request"} for run in result.runs]
    rows = []
    for i in picked:
        number = base[i].request
        cells = [f"{number:,}"]
        for table in by_request:
            row = table.get(number)
            cells.append(f"{row.context_tokens:,}" if row else "")
        rows.append(cells)
    return TableData(f"context per request (every {every})", ["request"] + column_names(result)[0], rows)


def auto_every(requests: int, lines: int = 15) -> int:
    """A round step that shows about `lines` rows."""
    raw = max(1, requests // lines)
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if step >= raw:
            return step
    return raw


def plain(table: TableData) -> str:
    widths = [max(len(h), *(len(r[c]) for r in table.rows)) if table.rows else len(h)
              for c, h in enumerate(table.headers)]
    lines = []
    for cells in [table.headers, *table.rows]:
        parts = [cell.ljust(widths[c]) if c < table.left else cell.rjust(widths[c]) for c, cell in enumerate(cells)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def lines_out() -> Callable[[str], None]:
    """How a command prints a line of prose: on a terminal wrapped at words to its width (a warning in bold),
    elsewhere as it is, one line each (what a pipe or a file gets stays byte for byte)."""
    if not sys.stdout.isatty():
        return lambda line: print(line)
    console = Console(soft_wrap=False)
    return lambda line: prose(console, line)


def prose(console: Console, line: str) -> None:
    """One line of prose on a rich console: wrapped at words, a warning in bold, never read as markup."""
    console.print(line, style="bold" if line.startswith("warning") else None, highlight=False, markup=False)


def rich_table(table: TableData) -> Table:
    out = Table(title=table.title, title_justify="left", header_style="bold")
    for c, header in enumerate(table.headers):
        if c < table.left:  # labels wrap at words when the terminal is narrow
            out.add_column(header, justify="left")
        else:  # a number is never cut: its column keeps its widest cell
            widest = max([len(header), *(len(row[c]) for row in table.rows)])
            out.add_column(header, justify="right", no_wrap=True, min_width=widest)
    for row in table.rows:
        out.add_row(*row)
    return out


def emit(result: RunResult, out: TextIO, every: int | None, terminal: bool) -> None:
    m = result.manifest
    head = (f"trace {m['trace']['name']}: {m['trace']['sessions']} session(s), {m['trace']['messages']:,} messages; "
            f"{m['provider']} {m['model']}, window {m['window']:,}; tokenizer {m['tokenizer']}; "
            f"cache model {m['cache_model']['name']}; prices {m['prices']}")
    tables = [summary(result)]
    requests = result.runs[0].totals.requests if result.runs else 0
    if requests:
        tables.append(context_rows(result, every or auto_every(requests)))
    names, legend = column_names(result)
    events = []
    for name, run in zip(names, result.runs, strict=True):
        shown = run.events if len(run.events) <= MAX_EVENTS else run.events[:MAX_EVENTS]
        events += [f"  {name}: {e.text()}" for e in shown]
        if len(run.events) > len(shown):
            events.append(f"  {name}: ... and {len(run.events) - len(shown):,} more (all in -o run.json)")
    from ctxsim.reports._loss import notes as loss_notes
    from ctxsim.reports._loss import retention_rows

    notes = [*legend, m["assumption"], *loss_notes(result), *m.get("provider_rules", []), *m.get("price_notes", [])]
    retention = retention_rows(result)
    if retention:
        events += ["", "facts still in the managed context (probes; yes/no at the end, kept/checked at --probe-at):",
                   *("  " + line for line in retention)]
    above = head_lines(result)
    if terminal:
        console = Console(file=out, force_terminal=True)
        console.print(head, style="dim", highlight=False)
        for line in above:
            prose(console, line)
        from ctxsim.reports._fit import fit_whole_labels

        tables, cut = fit_whole_labels(tables, console.width)
        if cut:
            notes.insert(0, cut)
        for table in tables:
            console.print(rich_table(table))
        console.print("[bold]events[/bold]" if events else "[bold]events[/bold]: none")
        for line in events:
            console.print(line, highlight=False, markup=False)
        for note in notes:
            console.print(f"note: {note}", style="dim", highlight=False, markup=False)
        return
    print(head, file=out)
    for line in above:
        print(line, file=out)
    for table in tables:
        print(f"\n{table.title}", file=out)
        print(plain(table), file=out)
    print("\nevents" + ("" if events else ": none"), file=out)
    for line in events:
        print(line, file=out)
    print(file=out)
    for note in notes:
        print(f"note: {note}", file=out)


def totals_line(totals: Totals) -> str:
    return (f"{totals.requests:,} requests, peak {totals.peak_context_tokens:,} tokens, "
            f"hit rate {pct(totals.hit_rate)}, cost {money(totals.cost_usd)}")


def predicted_line(manifest: dict[str, Any]) -> str | None:
    """The line said beside `none` against the bill (replay, compare): its predicted error; None without one."""
    entry = manifest.get("calibration")
    block = entry.get("predicted") if isinstance(entry, dict) else None
    if not isinstance(block, dict):
        return None
    error = block.get("cost_error")
    cost = "-" if error is None else f"{error * 100:+.2f}%"
    return (f"none predicted (fitted on the first {block['fit_on']:.0%} of each session, no recorded cache fact; "
            f"scored on the other {block['scored_requests']:,} requests): cost {cost}, prompt error median "
            f"{block['prompt_error_median'] * 100:.2f}%, p90 {block['prompt_error_p90'] * 100:.2f}%, hit rate "
            f"{block['hit_rate_simulated'] * 100:.2f}% against {block['hit_rate_recorded'] * 100:.2f}% billed")
