"""`ctxsim replay`: one trace, one or more policies, every request metered."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ctxsim.cli import app, default_trace, fail, guarded


@app.command()
@guarded
def replay(
    trace: Annotated[Optional[str], typer.Argument(help="Trace file (native JSONL); default: the shipped sample.")] = None,
    policy: Annotated[Optional[list[str]], typer.Option("--policy", "-p", help="NAME[:k=v,...]; repeat to compare.")] = None,
    provider: Annotated[Optional[str], typer.Option(help="Provider to price as (default: the trace's).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model to price as (default: the trace's).")] = None,
    tokenizer: Annotated[str, typer.Option(help="o200k_base (exact), cl100k_base (exact), chars4, bytes4.")] = "o200k_base",
    cache: Annotated[Optional[str], typer.Option(help="Cache model NAME[:k=v]: anthropic, openai, prefix, none.")] = None,
    cache_ttl: Annotated[Optional[str], typer.Option("--cache-ttl", help="Anthropic cache TTL: 5m or 1h.")] = None,
    window: Annotated[Optional[int], typer.Option(help="Context window in tokens (default: trace, then model).")] = None,
    reserve: Annotated[int, typer.Option(help="Output reserve in tokens, for the overflow line.")] = 20_000,
    every: Annotated[Optional[int], typer.Option(help="Show every k-th request in the context table.")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="Trace format (default: detected).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print totals as JSON for machines.")] = False,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the run artefact (run.json).")] = None,
) -> None:
    """Replay a trace request by request under one or more policies and meter every request."""
    from ctxsim.api import replay_trace
    from ctxsim.render.terminal import emit

    if cache_ttl is not None and cache_ttl not in ("5m", "1h"):
        fail(f"--cache-ttl must be 5m or 1h, got {cache_ttl!r}")
    if window is not None and window <= 0:
        fail("--window must be positive")
    if every is not None and every <= 0:
        fail("--every must be positive")
    result = replay_trace(
        trace or default_trace(), policy or ["none"], provider=provider, model=model, tokenizer=tokenizer,
        cache=cache, cache_ttl=cache_ttl, window=window, reserve=reserve, fmt=fmt,
    )
    if output is not None:
        result.save(output)
    if as_json:
        summary = {"manifest": result.manifest,
                   "runs": [{"policy": r.policy, "totals": r.totals.to_json()} for r in result.runs]}
        typer.echo(json.dumps(summary, indent=1, sort_keys=True))
    else:
        emit(result, sys.stdout, every, sys.stdout.isatty())
    if output is not None:
        typer.echo(f"wrote {output}", err=True)


