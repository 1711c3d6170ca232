"""`ctxsim inspect`: what a trace recorded (usage, cost, context, composition), no simulation."""

from __future__ import annotations

import json
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
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Every note, as long as it is (default on a "
                                                                  "terminal: at most 3 lines of them).")]
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



def _by_keys(incomplete: str) -> list[str]:
    from ctxsim.commands._complete import by_keys

    return by_keys(incomplete)

@app.command("inspect")
@guarded
def inspect_command(
    traces: Annotated[list[str] | None, typer.Argument(
        help="Trace files or directories (searched recursively); '-' reads stdin; .gz is fine. None: the "
             "sessions found where the agents keep them (`ctxsim formats list` shows where).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON.")] = False,
    by: Annotated[str | None, typer.Option(
        "--by", autocompletion=_by_keys,
        help="Account by day, week, month, session, project, model or block (5-hour billing blocks), "
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
    verbose: VerboseOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="With no path: stop at the first malformed line of a "
                                                          "session file (default: skip them and count them).")]
    = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Read every file again: neither use nor update the "
                                                              "accounting index in the cache folder.")] = False,
) -> None:
    """What a trace recorded, no simulation: requests, tokens, cost, hit rate, context, composition, timeline;
    with --by, --since/--until, --breaks or no path: accounting across every session, file by file."""
    from ctxsim.analysis.accounting import KEYS

    if by is not None and by not in KEYS:
        from ctxsim.errors import did_you_mean

        fail(f"--by must be one of {', '.join(KEYS)}, got {by!r}{did_you_mean(by, KEYS)}")
    if largest < 0:
        fail("--largest must not be negative")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    if source is not None and traces:
        fail("--source picks among the sessions found with no path; give either paths or --source")
    if not traces or by or since or until or breaks or tz:
        if not traces and by is None and not breaks:  # a user's home: a daily table, like ccusage
            by = "day"
        skip = skip_bad_lines or (not traces and not strict)  # a user's home: one broken line stops nothing
        account(traces or [], as_json, by, since, until, tz, source, breaks, fmt, skip, wide, verbose, not no_cache)
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
    print_tables(*tables(insp, None, timeline), title=f"inspect {insp.trace}", fit=not wide, verbose=verbose)


def account(traces: list[str], as_json: bool, by: str | None, since: str | None, until: str | None,
            tz: str | None, source: str | None, breaks: bool, fmt: str | None, skip_bad_lines: bool,
            wide: bool = False, verbose: bool = False, cached: bool = True) -> None:
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
    skipped_lines(corpus.reports)
    charges, untimed = acc.filtered(corpus.charges, zone, first, last)
    found = acc.cache_breaks(corpus, zone, first, last)
    title = "inspect " + (f"{len(traces)} input(s)" if traces else f"the sessions found ({source or 'every source'})")
    if as_json:
        data = acc.report_json(corpus, charges, by, zone, first, last, untimed)
        data["cache_breaks"] = breaks_json(found)
        typer.echo(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False))
        return
    tables, notes = acc.report_tables(corpus, charges, by, zone, first, last, untimed)
    if by in ("session", "project") and tables:
        in_time_order(tables[0], charges, by, acc.session_names(charges, zone) if by == "session" else {})
    if breaks:
        tables += breaks_tables(found)
    print_tables(tables, notes, title=title, fit=not wide, verbose=verbose)


def in_time_order(table, charges, by: str, names: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """The rows of a --by session|project table (the total last) by when each began, the untimed last."""
    start: dict[str, float] = {}
    for c in charges:
        key = names.get(c.session, c.session) if by == "session" else c.project
        if c.ts_s is not None:
            start[key] = min(start.get(key, c.ts_s), c.ts_s)
    body, total = table.rows[:-1], table.rows[-1:]
    body.sort(key=lambda row: (row[0] not in start, start.get(row[0], 0.0), row[0]))
    table.rows = body + total


def skipped_lines(reports: list[FileReport]) -> None:
    """One line on stderr for every malformed line skipped: how many, in how many files, which files."""
    bad = [r for r in reports if r.skipped_lines]
    if not bad:
        return
    count = sum(len(r.skipped_lines) for r in bad)
    names = ", ".join(f"{r.path}:{r.skipped_lines[0]}" for r in bad[:3]) + (", ..." if len(bad) > 3 else "")
    typer.echo(f"ctxsim: skipped {count:,} malformed line(s) in {len(bad)} file(s) (--strict stops at the first): "
               f"{names}", err=True)


def print_tables(tables, notes, title: str, fit: bool = False, verbose: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The tables on stdout (rich on a terminal, plain text piped); with `fit`, each cut to the terminal's
    width (`reports._screen`: text shortened first, then the least useful columns left out, said in a note);
    on a terminal the notes are merged across files and kept short unless `verbose`."""
    from ctxsim.reports._screen import show

    show(title, tables, notes, wide=not fit, verbose=verbose)
