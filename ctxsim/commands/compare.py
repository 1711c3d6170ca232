"""`ctxsim compare`: one trace, many policies (x providers), one table."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer
from rich.console import Console

from ctxsim.cli import app, default_trace, guarded
from ctxsim.commands._options import (
    CacheOpt, CacheTtlOpt, CalibrateOpt, FormatOpt, FramingOpt, JobsOpt, JsonOpt, ModelOpt, OutputOpt, ProviderOpt,
    ReserveOpt, SkipBadOpt, TokenizerOpt, WindowOpt, options, totals_json,
)
from ctxsim.errors import CtxsimError

DEFAULT_POLICIES = ("none,clear,compact,clear+compact,truncate,tiered,mask,recent,zones,scored,hierarchical,"
                    "claude-code,codex")


@app.command()
@guarded
def compare(
    traces: Annotated[Optional[list[str]], typer.Argument(
        help="Trace file or folder, any supported format; several traces (files, folders of several, globs): "
             "a corpus compare, one row per policy across them (as `ctxsim sweep`). Default: the shipped sample "
             "trace.")] = None,
    policies: Annotated[str, typer.Option(
        help="Comma-separated policy specs, presets, A+B pipelines or policy files; `none` is always added "
             "as the baseline.")] = DEFAULT_POLICIES,
    providers: Annotated[Optional[str], typer.Option(
        help="Comma-separated providers (PROVIDER or PROVIDER:MODEL) to price every policy under.")] = None,
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
    fmt: FormatOpt = None,
    jobs: JobsOpt = None,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Replay one trace under several policies and compare cost, cache and context side by side."""
    from ctxsim.api import replay_trace
    from ctxsim.policyspec import split_list
    from ctxsim.render.compare import compare_table
    from ctxsim.render.terminal import plain, rich_table

    specs = split_list(policies)
    if not specs:
        raise CtxsimError(f"--policies {policies!r} names no policy to compare (e.g. --policies clear,compact)")
    if not any(s.split(":", 1)[0] == "none" for s in specs):
        specs.insert(0, "none")
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, jobs)
    from ctxsim.sweep import is_corpus

    if traces and is_corpus(traces, fmt):  # several traces: the sweep engine, the policies as written
        from ctxsim.commands.sweep import corpus_compare

        if providers:
            raise CtxsimError("--providers takes one trace; for several, run one compare per provider")
        return corpus_compare(traces, specs, opts, fmt, output, as_json)
    trace = traces[0] if traces else None
    provider_list = [p.strip() for p in providers.split(",") if p.strip()] if providers else []
    result = replay_trace(trace or default_trace(), specs, fmt=fmt, options=opts, providers=provider_list,
                           show_progress=True)
    written: list[str] = []
    if output is not None:
        written = [str(p) for p in _write(result, output)]
    if as_json:
        typer.echo(json.dumps(totals_json(result), indent=1, sort_keys=True))
    else:
        table = compare_table(result)
        if sys.stdout.isatty():
            needed = len(plain(table).splitlines()[0]) + 3 * len(table.headers) + 4
            Console(width=max(needed, Console().width)).print(rich_table(table))
        else:
            typer.echo(table.title)
            typer.echo(plain(table))
        from ctxsim.render.terminal import column_names

        for line in column_names(result)[1]:
            typer.echo(f"note: {line}")
        typer.echo(f"note: {result.manifest['assumption']}")
    for path in written:
        typer.echo(f"wrote {path}", err=True)


def _write(result, folder):  # type: ignore[no-untyped-def]
    """`-o FILE.json`: the run artefact alone; `-o DIR`: run.json and the whole report bundle."""
    if folder.suffix.lower() == ".json":
        result.save(folder)
        return [folder]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        from ctxsim.reports import write_bundle
    except ImportError:
        path = folder / "run.json"
        result.save(path)
        return [path]
    return write_bundle(result, folder)
