"""`ctxsim inspect`: what a trace recorded (usage, cost, context, composition), no simulation."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._options import MaxInputBytesOpt, MaxLineBytesOpt, MaxMessagesOpt, set_limits

if TYPE_CHECKING:
    from ctxsim.formats import FileReport
    from ctxsim.model import Trace

TracesArg = Annotated[list[str], typer.Argument(
    help="Trace files or directories (searched recursively); '-' reads stdin; .gz is fine.")]
FormatOpt = Annotated[str | None, typer.Option("--format", help="Trace format for every input (default: detected per "
                                                                   "file): a name `ctxsim formats list` shows.")]
SkipOpt = Annotated[bool, typer.Option("--skip-bad-lines", help="Skip malformed lines (and say how many) instead of "
                                                                 "stopping at them.")]
TokenizerOpt = Annotated[str, typer.Option(help="Tokenizer for the composition counts.")]
IncludeContentOpt = Annotated[bool, typer.Option(
    "--include-content", help="Also show the start of the largest tool results, secrets redacted (API keys, "
    "tokens, private keys, passwords in URLs); without it no trace text is shown, only sizes, tools and ids.")]


def read_inputs(traces: list[str], fmt: str | None, skip_bad_lines: bool) -> tuple[Trace, list[FileReport]]:
    """Read every input; print what was skipped to stderr. Shared by inspect, convert and validate."""
    from ctxsim.formats import read_traces

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
    traces: Annotated[list[str] | None, typer.Argument(
        help="Trace files or directories (searched recursively); '-' reads stdin; .gz is fine. None: the "
             "sessions found where the agents keep them (`ctxsim formats list` shows where).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
    by: Annotated[str | None, typer.Option(
        "--by", help="Account by day, week, month, session, project, model or block (5-hour billing blocks), "
                     "reading file by file (no composition or timeline).")] = None,
    since: Annotated[str | None, typer.Option(help="Only requests on or after this date (YYYY-MM-DD or "
                                                      "YYYYMMDD, in --timezone).")] = None,
    until: Annotated[str | None, typer.Option(help="Only requests on or before this date.")] = None,
    tz: Annotated[str | None, typer.Option("--timezone", help="IANA time zone for days, weeks, blocks and "
                                                                 "session names (default UTC; ccusage uses local).")]
    = None,
    source: Annotated[str | None, typer.Option(help="With no path: only this product's sessions (a format name, "
                                                       "e.g. claude-code, codex, gemini-cli, cline).")] = None,
    breaks: Annotated[bool, typer.Option("--breaks", help="List every cache break with its cause and what it "
                                                          "re-billed, totals per cause.")] = False,
    fmt: FormatOpt = None,
    skip_bad_lines: SkipOpt = False,
    tokenizer: TokenizerOpt = "o200k_base",
    timeline: Annotated[bool, typer.Option("--timeline/--no-timeline", help="Show the per-request timeline.")] = True,
    largest: Annotated[int, typer.Option(help="How many of the largest tool results to list.")] = 10,
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
    include_content: IncludeContentOpt = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal (default: text "
                                                      "columns shortened, then the least useful left out, to "
                                                      "fit).")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Read every file again: neither use nor update the "
                                                              "accounting index in the cache folder.")] = False,
) -> None:
    """What a trace recorded, no simulation: requests, tokens, cost, hit rate, context, composition, timeline;
    with --by, --since/--until, --breaks or no path: accounting across every session, file by file."""
    from ctxsim.analysis.accounting import KEYS

    if by is not None and by not in KEYS:
        fail(f"--by must be one of {', '.join(KEYS)}, got {by!r}")
    if largest < 0:
        fail("--largest must not be negative")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    if source is not None and traces:
        fail("--source picks among the sessions found with no path; give either paths or --source")
    if not traces or by or since or until or breaks or tz:
        account(traces or [], as_json, by, since, until, tz, source, breaks, fmt, skip_bad_lines, not no_cache)
        return
    from ctxsim.analysis.inspect import inspect_trace, tables

    trace, report = read_inputs(traces, fmt, skip_bad_lines)
    insp = inspect_trace(trace, report, tokenizer, largest, include_content)
    if as_json:
        from ctxsim.analysis.cache_breaks import breaks_json, breaks_of

        data = insp.to_json(None)
        data["cache_breaks"] = breaks_json(breaks_of(trace))
        typer.echo(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False))
        return
    print_tables(*tables(insp, None, timeline), title=f"inspect {insp.trace}", fit=not wide)


def account(traces: list[str], as_json: bool, by: str | None, since: str | None, until: str | None,
            tz: str | None, source: str | None, breaks: bool, fmt: str | None, skip_bad_lines: bool,
            cached: bool = True) -> None:
    """The accounting path: every input read one file at a time into small per-request records (a file
    unchanged since the last run served from the accounting index unless not `cached`)."""
    from ctxsim.analysis import accounting as acc
    from ctxsim.analysis.cache_breaks import breaks_json, breaks_tables
    from ctxsim.analysis.file_index import Index

    zone = acc.zone(tz)
    first = acc.parse_day(since, "--since") if since else None
    last = acc.parse_day(until, "--until") if until else None
    if first and last and first > last:
        fail(f"--since {first} is after --until {last}")
    if traces:
        inputs = acc.expand(traces, fmt)
    else:
        from ctxsim.discover import discovered_files

        inputs = [(path, fmt or name) for path, name in discovered_files(source)]
    corpus = acc.read_corpus(inputs, skip_bad_lines, acc.home_of(), Index.open(cached))
    for r in corpus.reports:
        if r.skipped_lines:
            typer.echo(f"ctxsim: {r.path}: skipped {len(r.skipped_lines)} malformed line(s)", err=True)
    charges, untimed = acc.filtered(corpus.charges, zone, first, last)
    found = acc.cache_breaks(corpus, zone, first, last)
    title = "inspect " + (f"{len(traces)} input(s)" if traces else f"the sessions found ({source or 'every source'})")
    if as_json:
        data = acc.report_json(corpus, charges, by, zone, first, last, untimed)
        data["cache_breaks"] = breaks_json(found)
        typer.echo(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False))
        return
    tables, notes = acc.report_tables(corpus, charges, by, zone, first, last, untimed)
    if breaks:
        tables += breaks_tables(found)
    print_tables(tables, notes, title=title)


def print_tables(tables, notes, title: str, fit: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The tables on stdout (rich on a terminal, plain text piped); with `fit`, each cut to the terminal's
    width (`reports._fit`: text shortened first, then columns left out, said in a note)."""
    from ctxsim.reports._terminal import plain, rich_table

    out = sys.stdout
    terminal = out.isatty()
    if terminal:
        from rich.console import Console

        console = Console(file=out)
    if fit:
        import shutil

        from ctxsim.reports._fit import FitTable, fit_columns

        width = console.width if terminal else shutil.get_terminal_size((80, 24)).columns
        fitted, cut = [], []
        for table in tables:
            if isinstance(table, FitTable):  # the tables that opted in (not the label-value totals)
                shown, left_out = fit_columns(table, width, *((3, 1) if terminal else (2, -2)))
            else:
                shown, left_out = table, []
            fitted.append(shown)
            if left_out:
                cut.append(f"{shown.title.split(' (')[0]}: {', '.join(left_out)}")
        tables = fitted
        if cut:
            notes = [*notes, f"left out to fit {width} columns (--wide or --json shows them): {'; '.join(cut)}"]
    if terminal:
        console.print(title, style="bold", highlight=False, markup=False)
        for table in tables:
            console.print(rich_table(table))
        for note in notes:
            console.print(f"note: {note}", style="dim", highlight=False, markup=False)
        return
    print(title, file=out)
    for table in tables:
        if fit:  # the title wrapped to the width too (rich wraps its own)
            import textwrap

            print("\n" + "\n".join(textwrap.wrap(table.title, width) or [""]), file=out)
            print(plain(table), file=out)
            continue
        print(f"\n{table.title}", file=out)
        print(plain(table), file=out)
    print(file=out)
    for note in notes:
        print(f"note: {note}", file=out)
