"""`ctxsim replay`: one trace, one or more policies, every request metered."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from ctxsim.cli import app, default_trace, fail, guarded
from ctxsim.commands._options import (
    CacheOpt, CacheTtlOpt, CalibrateOpt, FormatOpt, FramingOpt, JobsOpt, JsonOpt, ModelOpt, OutputOpt, ProviderOpt,
    ReserveOpt, SkipBadOpt, TokenizerOpt, TraceArg, WindowOpt, options, totals_json,
)


@app.command()
@guarded
def replay(
    trace: TraceArg = None,
    policy: Annotated[Optional[list[str]], typer.Option(
        "--policy", "-p", help="NAME[:k=v,...], a preset, A+B (pipeline), FILE.toml[#name] or an Anthropic "
        "context_management FILE.json; repeat to replay several.")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = None,
    cache: CacheOpt = None,
    cache_ttl: CacheTtlOpt = None,
    window: WindowOpt = None,
    reserve: ReserveOpt = 20_000,
    framing: FramingOpt = None,
    calibrate: CalibrateOpt = False,
    skip_bad_lines: SkipBadOpt = False,
    every: Annotated[Optional[int], typer.Option(help="Show every k-th request in the context table.")] = None,
    fmt: FormatOpt = None,
    jobs: JobsOpt = None,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Replay a trace request by request under one or more policies and meter every request."""
    from ctxsim.api import replay_trace
    from ctxsim.render.terminal import emit

    if every is not None and every <= 0:
        fail("--every must be positive")
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, jobs)
    result = replay_trace(trace or default_trace(), policy or ["none"], fmt=fmt, options=opts, show_progress=True,
                          stream=True)  # a native file: one session at a time
    if output is not None:
        result.save(output)
    if as_json:
        typer.echo(json.dumps(totals_json(result), indent=1, sort_keys=True))
    else:
        emit(result, sys.stdout, every, sys.stdout.isatty())
    if output is not None:
        typer.echo(f"wrote {output}", err=True)
