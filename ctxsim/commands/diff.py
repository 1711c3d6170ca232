"""`ctxsim diff BASE.json NEW.json`: compare two runs; exit 1 when a gated metric regresses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ctxsim.cli import app, guarded
from ctxsim.commands._options import ForceOpt

DIFF_KINDS = {"md": "the Markdown diff", "json": "the diff as --json prints it"}


@app.command()
@guarded
def diff(
    base: Annotated[Path, typer.Argument(help="The reference run artefact (e.g. main's run.json).")],
    new: Annotated[Path, typer.Argument(help="The run to judge (e.g. the pull request's run.json).")],
    fail_above: Annotated[str | None, typer.Option(
        "--fail-above", help="Exit 1 when a gated metric gets worse by more than this percentage (5% or 5).")] = None,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m", help="Metric(s) to gate on (repeat or comma-separate): cost, cost_warm, cost_nocache, "
                               "peak, p95, hit_rate, warm_hit_rate, input, fresh, output, rewrites, "
                               "summarize_cost, recall_misses, probes_lost. Default: cost.")] = None,
    output: Annotated[str | None, typer.Option(
        "-o", "--output", help="Also write the diff here, as the suffix says: .md (the Markdown diff, for a PR "
                               "comment) or .json (as --json prints it); any other suffix is refused.")] = None,
    md: Annotated[bool, typer.Option("--md", help="Print Markdown on stdout instead of the table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the diff as JSON for machines.")] = False,
    force: ForceOpt = False,
) -> None:
    """Diff two runs (cost, peak context, hit rate ...) as a table or Markdown; gate with --fail-above."""
    from ctxsim.reports import diff as diffs
    from ctxsim.reports import write_file
    from ctxsim.reports._common import load_run, signed_pct
    from ctxsim.reports._terminal import plain, rich_table

    out = None
    if output is not None:
        from ctxsim._support.fileio import check_output
        from ctxsim.commands._output import decide

        out = decide(output, "diff", DIFF_KINDS)
        check_output(out.text, [base, new], force)
    threshold = diffs.parse_threshold(fail_above) if fail_above is not None else None
    metrics = diffs.parse_metrics(metric or ["cost"])
    result = diffs.diff(load_run(base), load_run(new), metrics, threshold)
    text = diffs.markdown(result)
    if out is not None:
        write_file(out.path, text if out.kind == "md" else
                   json.dumps(diffs.to_json(result), indent=1, sort_keys=True) + "\n", force)
    if as_json:
        typer.echo(json.dumps(diffs.to_json(result), indent=1, sort_keys=True))
    elif md:
        typer.echo(text, nl=False)
    else:
        table = diffs.table(result)
        if sys.stdout.isatty():
            from rich.console import Console

            Console().print(rich_table(table))
        else:
            typer.echo(table.title)
            typer.echo(plain(table))
        for warning in result.warnings:
            typer.echo(f"warning: {warning}")
    if output is not None:
        typer.echo(f"wrote {output}", err=True)
    if threshold is not None:  # only a gate marks regressions
        for pair, change in result.regressions:
            typer.echo(f"ctxsim: regression: {pair.title}: {change.metric.title} {change.metric.fmt(change.base)} "
                       f"-> {change.metric.fmt(change.new)} ({signed_pct(change.rel)}), over the "
                       f"{diffs.percent_text(threshold)} gate", err=True)
    if result.failed:
        raise typer.Exit(1)
