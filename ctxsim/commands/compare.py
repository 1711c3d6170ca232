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

DEFAULT_POLICIES = ("none,clear,compact,clear+compact,truncate,tiered,mask,recent,zones,scored,hierarchical,"
                    "claude-code,codex")


@app.command()
@guarded
def compare(
    traces: Annotated[list[str] | None, typer.Argument(
        help="Trace file or folder, any supported format; several traces (files, folders of several, globs): "
             "a corpus compare, one row per policy across them (as `ctxsim sweep`). Default: the shipped sample "
             "trace.")] = None,
    policies: Annotated[list[str] | None, typer.Option(
        "--policies", "--policy", "-p",
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
        for line in head_lines(result):
            say(line)
        left_out: list[str] = []
        if sys.stdout.isatty():
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
        from ctxsim.reports._terminal import column_names

        if left_out:
            say(f"note: {len(left_out)} more column(s) with --wide or --json: {', '.join(left_out)}")
        for line in column_names(result)[1]:
            say(f"note: {line}")
        say(f"note: {result.manifest['assumption']}")
        from ctxsim.reports._loss import terminal_notes

        for line in terminal_notes(result):
            say(line)
    for path in written:
        typer.echo(f"wrote {path}", err=True)

