"""`ctxsim replay`: one trace, one or more policies, every request metered."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ctxsim.cli import app, default_trace, fail, guarded
from ctxsim.commands._loss_options import IncludeContentOpt, ProbeAtOpt, ProbeOpt, ProbesOpt, with_loss
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
    TraceArg,
    WindowOpt,
    options,
    set_limits,
    spec_files,
    totals_json,
)
from ctxsim.commands._output import RUN_KINDS, option_help

ReplayOutputOpt = Annotated[str | None, typer.Option("-o", "--output", help=option_help(
    RUN_KINDS, "A path with no suffix is a bundle folder (an existing file, FIFO or device: the run artefact); "
               "any other suffix is refused."))]



def _policy_names(incomplete: str) -> list[str]:
    from ctxsim.commands._complete import policy_names

    return policy_names(incomplete)

@app.command()
@guarded
def replay(
    trace: TraceArg = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", autocompletion=_policy_names,
        help="NAME[:k=v,...], a preset, A+B (pipeline), FILE.toml[#name] or an Anthropic "
        "context_management FILE.json; repeat, or separate with commas, to replay several.")] = None,
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
    every: Annotated[int | None, typer.Option(help="Show every k-th request in the context table.")] = None,
    fmt: FormatOpt = None,
    jobs: JobsOpt = None,
    as_json: JsonOpt = False,
    output: ReplayOutputOpt = None,
    force: ForceOpt = False,
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
    loss: Annotated[bool, typer.Option(
        "--loss/--no-loss", help="Meter recall misses (identifiers a later answer uses that the policy removed) and "
                                 "their re-fetch cost (off by default here; on in compare).")] = False,
    probe: ProbeOpt = None,
    probes: ProbesOpt = None,
    probe_at: ProbeAtOpt = None,
    include_content: IncludeContentOpt = False,
) -> None:
    """Replay a trace request by request under one or more policies and meter every request."""
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._terminal import emit

    if every is not None and every <= 0:
        fail("--every must be positive")
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, jobs)
    from ctxsim.policies.spec import split_list

    specs = [spec for text in policy or ["none"] for spec in split_list(text)]
    if not specs:
        fail(f"--policy {','.join(policy or [])!r} names no policy to replay (e.g. --policy clear)")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    opts = with_loss(opts, loss, probe, probes, probe_at, include_content=include_content)
    source = trace or default_trace()
    out = None
    if output is not None:  # refused before the work, not after it
        from ctxsim.commands._output import check_run, decide

        out = decide(output, "replay", RUN_KINDS, plain="json")
        check_run(out, [source, *spec_files(specs)], force)
    result = replay_trace(source, specs, fmt=fmt, options=opts, show_progress=True,
                          stream=True)  # a native file: one session at a time
    written = []
    if out is not None:
        from ctxsim.commands._output import write_run

        written = write_run(result, out, force)
    if as_json:
        typer.echo(json.dumps(totals_json(result), indent=1, sort_keys=True))
    else:
        emit(result, sys.stdout, every, sys.stdout.isatty())
    for path in written:
        typer.echo(f"wrote {path}", err=True)
