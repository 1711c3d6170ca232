"""`ctxsim compare`: one trace, many policies (x providers), one table."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ctxsim.cli import app, default_trace, guarded
from ctxsim.commands._loss_options import (
    IncludeContentOpt,
    LossOpt,
    MaxMissesOpt,
    MissMarginOpt,
    ProbeAtOpt,
    ProbeOpt,
    ProbesOpt,
    with_loss,
)
from ctxsim.commands._options import (
    CacheOpt,
    CacheTtlOpt,
    CalibrateOpt,
    ForceOpt,
    FormatOpt,
    FramingOpt,
    JobsOpt,
    JsonOpt,
    MaxInputBytesOpt,
    MaxLineBytesOpt,
    MaxMessagesOpt,
    ModelOpt,
    ProviderOpt,
    ReserveOpt,
    SkipBadOpt,
    TokenizerOpt,
    WindowOpt,
    options,
    set_limits,
    spec_files,
    totals_json,
)
from ctxsim.commands._output import RUN_KINDS, option_help
from ctxsim.commands.sweep import SinceOpt, TimezoneOpt, UntilOpt
from ctxsim.errors import CtxsimError
from ctxsim.replay.defaults import COMPARE_POLICIES

DEFAULT_POLICIES = ",".join(COMPARE_POLICIES)  # one list with the Python API's ctxsim.compare()



def subagents_beside(trace: str) -> list[str]:
    """A note when a Claude Code session file has its subagents' files beside it (`<session>/subagents/`): this
    replay leaves them out, `inspect` counts them."""
    from pathlib import Path

    path = Path(trace)
    folder = path.with_suffix("") / "subagents"
    found = sorted(folder.glob("*.jsonl")) if path.suffix == ".jsonl" and folder.is_dir() else []
    if not found:
        return []
    note = (f"{len(found)} subagent file(s) beside this session ({folder}/) are not in this replay (`inspect` counts "
            "them in the bill); compare each one on its own to see them")
    return [note]


def _policy_names(incomplete: str) -> list[str]:
    from ctxsim.commands._complete import policy_names

    return policy_names(incomplete)

@app.command()
@guarded
def compare(
    traces: Annotated[list[str] | None, typer.Argument(
        help="Trace file or folder, any supported format; several traces (files, folders of several, globs): "
             "a corpus compare, one row per policy across them (as `ctxsim sweep`). Default: the shipped sample "
             "trace.")] = None,
    policies: Annotated[list[str] | None, typer.Option(
        "--policies", "--policy", "-p", autocompletion=_policy_names,
        help="Comma-separated policy specs, presets, A+B pipelines or policy files, repeatable; `none` is always "
             f"added as the baseline. Default: {DEFAULT_POLICIES}.", show_default=False)] = None,
    providers: Annotated[str | None, typer.Option(
        help="Comma-separated providers (PROVIDER or PROVIDER:MODEL) to price every policy under.")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    cache: CacheOpt = None,
    cache_ttl: CacheTtlOpt = None,
    window: WindowOpt = None,
    reserve: ReserveOpt = 20_000,
    framing: FramingOpt = None,
    calibrate: CalibrateOpt = True,
    skip_bad_lines: SkipBadOpt = False,
    fmt: FormatOpt = None,
    jobs: JobsOpt = None,
    as_json: JsonOpt = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every note (default on a terminal: at most 3 "
                                                                  "lines of them).")] = False,
    output: Annotated[str | None, typer.Option("-o", "--output", help=option_help(
        RUN_KINDS, "A path with no suffix is a bundle folder; any other suffix is refused. Several traces: "
                   "DIR/ (the sweep folder, resumable), .json, .csv or .md."))] = None,
    image_base_url: Annotated[str | None, typer.Option(
        "--image-base-url", help="-o DIR: the URL the bundle's charts will be served under (e.g. where CI uploads "
                                 "it); report.md shows them as images from there, else leaves them out with a "
                                 "note.")] = None,
    force: ForceOpt = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    tz: TimezoneOpt = None,
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
    loss: LossOpt = True,
    probe: ProbeOpt = None,
    probes: ProbesOpt = None,
    probe_at: ProbeAtOpt = None,
    max_misses: MaxMissesOpt = None,
    miss_margin: MissMarginOpt = None,
    include_content: IncludeContentOpt = False,
) -> None:
    """Replay one trace under several policies and compare cost, cache and context side by side."""
    from ctxsim.policies.spec import split_list
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._compare_table import compare_table
    from ctxsim.reports._terminal import lines_out, plain, rich_table

    given = [DEFAULT_POLICIES] if policies is None else policies
    specs = [spec for text in given for spec in split_list(text)]
    if not specs:
        raise CtxsimError(f"--policies {','.join(given)!r} names no policy to compare (e.g. --policies clear,compact)")
    if not any(s.split(":", 1)[0] == "none" for s in specs):
        specs.insert(0, "none")
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, jobs)
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    opts = with_loss(opts, loss, probe, probes, probe_at, max_misses, miss_margin, include_content)
    from ctxsim.replay.inputs import is_corpus
    from ctxsim.replay.sweep_dates import date_range

    dates = date_range(since, until, tz)
    if traces and is_corpus(traces, fmt):  # several traces: the sweep engine, the policies as written
        from ctxsim.commands.sweep import corpus_compare

        if providers:
            raise CtxsimError("--providers takes one trace; for several, run one compare per provider")
        if opts.probes is not None or max_misses is not None or include_content:
            raise CtxsimError("--probe, --probes, --max-misses and --include-content take one trace (loss is metered "
                              "per trace): run one compare per trace")
        from ctxsim.commands._output import decide
        from ctxsim.commands.sweep import SWEEP_KINDS

        out = None if output is None else decide(output, "compare of several traces", SWEEP_KINDS)
        return corpus_compare(traces, specs, opts, fmt, out, as_json, force, dates)
    if dates is not None:
        raise CtxsimError("--since/--until pick sessions across several traces (a folder, a glob, several files); "
                          "for one trace, run it alone")
    trace = traces[0] if traces else None
    provider_list = [p.strip() for p in providers.split(",") if p.strip()] if providers else []
    source = trace or default_trace()
    out = None
    if output is not None:  # refused before the work, not after it
        from ctxsim.commands._output import check_run, decide

        out = decide(output, "compare", RUN_KINDS, plain="json")
        check_run(out, [source, *spec_files(specs)], force)
    from ctxsim.reports import check_image_base_url

    check_image_base_url(image_base_url)
    result = replay_trace(source, specs, fmt=fmt, options=opts, providers=provider_list, show_progress=True)
    written: list[str] = []
    if out is not None:
        from ctxsim.commands._output import write_run

        written = [str(p) for p in write_run(result, out, force, image_base_url)]
    if as_json:
        typer.echo(json.dumps(totals_json(result), indent=1, sort_keys=True))
    else:
        from ctxsim.reports._compare_table import fit
        from ctxsim.reports._terminal import head_lines

        table = compare_table(result)
        say = lines_out()
        terminal = sys.stdout.isatty()
        heads = head_lines(result)
        for line in heads if not terminal else [h for h in heads if not h.startswith("note: ")]:
            say(line)
        left_out: list[str] = []
        if terminal:
            from rich.console import Console

            console = Console()
            if not wide:
                table, left_out = fit(table, console.width - 4, border=3)
            console.print(rich_table(table))
        else:
            if not wide:
                import shutil

                table, left_out = fit(table, shutil.get_terminal_size((80, 24)).columns)
            typer.echo(table.title)
            typer.echo(plain(table))
        from ctxsim.reports._loss import terminal_notes
        from ctxsim.reports._terminal import column_names

        notes = [f"{len(left_out)} more column(s) with --wide or --json: {', '.join(left_out)}"] if left_out else []
        notes += [*subagents_beside(source), *column_names(result)[1], result.manifest["assumption"]]
        loss_lines = terminal_notes(result)
        notes += [line.removeprefix("note: ") for line in loss_lines if line.startswith("note: ")]
        if terminal:  # the notes said above the table by a pipe come after it here, all kept to 3 lines
            from ctxsim.reports._screen import terminal_notes as kept

            cut = notes[:1] if left_out else []
            notes = kept(cut + [h.removeprefix("note: ") for h in heads if h.startswith("note: ")] + notes[len(cut):],
                         console.width, verbose)
        for line in notes:
            say(f"note: {line}")
        for line in loss_lines:  # the probes' table, whole
            if not line.startswith("note: "):
                say(line)
    for path in written:
        typer.echo(f"wrote {path}", err=True)

