"""`ctxsim inspect`: what a trace recorded (usage, cost, context, composition), no simulation."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._options import MaxInputBytesOpt, MaxLineBytesOpt, MaxMessagesOpt, set_limits

TracesArg = Annotated[list[str], typer.Argument(
    help="Trace files or directories (searched recursively); '-' reads stdin; .gz is fine.")]
FormatOpt = Annotated[Optional[str], typer.Option("--format", help="Trace format for every input (default: detected per "
                                                                   "file): a name `ctxsim formats list` shows.")]
SkipOpt = Annotated[bool, typer.Option("--skip-bad-lines", help="Skip malformed lines (and say how many) instead of "
                                                                 "stopping at them.")]
TokenizerOpt = Annotated[str, typer.Option(help="Tokenizer for the composition counts.")]
IncludeContentOpt = Annotated[bool, typer.Option(
    "--include-content", help="Also show the start of the largest tool results, secrets redacted (API keys, "
    "tokens, private keys, passwords in URLs); without it no trace text is shown, only sizes, tools and ids.")]


def read_inputs(traces: list[str], fmt: str | None, skip_bad_lines: bool):  # type: ignore[no-untyped-def]
    """Read every input; print what was skipped to stderr. Shared by inspect, convert and validate."""
    from ctxsim.formats import FileReport, read_traces

    everything: list[FileReport] = []
    trace = read_traces(traces, fmt, skip_bad_lines, everything)
    report = [f for f in everything if f.format]
    ignored = [f for f in everything if not f.format]
    if ignored:
        first = ignored[0]
        typer.echo(f"ctxsim: ignored {len(ignored)} file(s) that are not traces (first: {first.path}: "
                   f"{first.notes[0]})", err=True)
    for f in report:
        if f.skipped_lines:
            shown = ", ".join(str(n) for n in f.skipped_lines[:8]) + (", ..." if len(f.skipped_lines) > 8 else "")
            typer.echo(f"ctxsim: {f.path}: skipped {len(f.skipped_lines)} malformed line(s) ({shown})", err=True)
    return trace, report


@app.command("inspect")
@guarded
def inspect_command(
    traces: TracesArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
    by: Annotated[Optional[str], typer.Option("--by", help="Also group the totals by day, session or model.")] = None,
    fmt: FormatOpt = None,
    skip_bad_lines: SkipOpt = False,
    tokenizer: TokenizerOpt = "o200k_base",
    timeline: Annotated[bool, typer.Option("--timeline/--no-timeline", help="Show the per-request timeline.")] = True,
    largest: Annotated[int, typer.Option(help="How many of the largest tool results to list.")] = 10,
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
    include_content: IncludeContentOpt = False,
) -> None:
    """What a trace recorded, no simulation: requests, tokens, cost, hit rate, context, composition, timeline."""
    from ctxsim.inspect import GROUPINGS, inspect_trace, tables

    if by is not None and by not in GROUPINGS:
        fail(f"--by must be one of {', '.join(GROUPINGS)}, got {by!r}")
    if largest < 0:
        fail("--largest must not be negative")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    trace, report = read_inputs(traces, fmt, skip_bad_lines)
    insp = inspect_trace(trace, report, tokenizer, largest, include_content)
    if as_json:
        typer.echo(json.dumps(insp.to_json(by), indent=1, sort_keys=True, ensure_ascii=False))
        return
    print_tables(*tables(insp, by, timeline), title=f"inspect {insp.trace}")


def print_tables(tables, notes, title: str) -> None:  # type: ignore[no-untyped-def]
    from ctxsim.render.terminal import plain, rich_table

    out = sys.stdout
    if out.isatty():
        from rich.console import Console

        console = Console(file=out)
        console.print(title, style="bold", highlight=False, markup=False)
        for table in tables:
            console.print(rich_table(table))
        for note in notes:
            console.print(f"note: {note}", style="dim", highlight=False, markup=False)
        return
    print(title, file=out)
    for table in tables:
        print(f"\n{table.title}", file=out)
        print(plain(table), file=out)
    print(file=out)
    for note in notes:
        print(f"note: {note}", file=out)
