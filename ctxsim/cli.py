"""The `ctxsim` command line: parse, call the library, print. No simulation here."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, ParamSpec

import typer

from ctxsim.errors import CtxsimError

P = ParamSpec("P")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Replay recorded LLM-agent traces under context-management policies and meter what they cost.",
    pretty_exceptions_enable=False,
)
policies_app = typer.Typer(help="List the context-management policies and their parameters.", no_args_is_help=True)
app.add_typer(policies_app, name="policies")

DEFAULT_TRACE = "billing-session.jsonl"


def guarded(command: Callable[P, None]) -> Callable[P, None]:
    """Bad input or usage: one line on stderr, exit code 2, never a traceback."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except CtxsimError as exc:
            _fail(str(exc))

    return run


def _fail(message: str) -> None:
    typer.echo(f"ctxsim: error: {message}", err=True)
    raise typer.Exit(2)


def default_trace() -> str:
    here = Path(__file__).resolve().parent
    for folder in (here.parent / "traces", Path.cwd() / "traces"):
        candidate = folder / DEFAULT_TRACE
        if candidate.is_file():
            return str(candidate)
    _fail(f"no TRACE given and the default sample traces/{DEFAULT_TRACE} is not found; pass a trace file")
    raise AssertionError


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
        _fail(f"--cache-ttl must be 5m or 1h, got {cache_ttl!r}")
    if window is not None and window <= 0:
        _fail("--window must be positive")
    if every is not None and every <= 0:
        _fail("--every must be positive")
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


@app.command()
@guarded
def synth(
    turns: Annotated[int, typer.Option(help="Agent turns (model requests) to generate.")] = 60,
    seed: Annotated[int, typer.Option(help="Random seed; same seed, same bytes.")] = 0,
    profile: Annotated[str, typer.Option(help="coding (realistic session) or yoagent (yoagent's replay workload).")] = "coding",
    tool_mix: Annotated[Optional[str], typer.Option(help="coding: tool=weight,... e.g. read_file=3,bash=1.")] = None,
    output_scale: Annotated[Optional[float], typer.Option(help="coding: scale tool output sizes.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write here (default: stdout).")] = None,
) -> None:
    """Write a synthetic session in the native format."""
    from ctxsim.formats import native
    from ctxsim.synth import synthesize

    options: dict[str, object] = {}
    if tool_mix:
        mix: dict[str, float] = {}
        for part in tool_mix.split(","):
            name, eq, weight = part.partition("=")
            try:
                mix[name.strip()] = float(weight)
            except ValueError:
                _fail(f"--tool-mix: expected tool=weight, got {part!r}")
            if not eq:
                _fail(f"--tool-mix: expected tool=weight, got {part!r}")
        options["tool_mix"] = mix
    if output_scale is not None:
        options["output_scale"] = output_scale
    trace = synthesize(profile, turns=turns, seed=seed, **options)
    if output is None:
        native.write(trace, sys.stdout)
        return
    from ctxsim.fileio import atomic_write

    with atomic_write(output) as out:
        native.write(trace, out)  # type: ignore[arg-type]
    typer.echo(f"wrote {output}: {sum(len(s.messages) for s in trace.sessions):,} messages", err=True)


@policies_app.command("list")
@guarded
def policies_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered policy with its source."""
    from ctxsim.policies import policies

    table = policies()
    if as_json:
        typer.echo(json.dumps({n: {"summary": i.summary, "source": i.source} for n, i in table.items()}, indent=1))
        return
    width = max(len(n) for n in table)
    for name, info in table.items():
        typer.echo(f"{name.ljust(width)}  {info.summary}  [{info.source}]")


@policies_app.command("show")
@guarded
def policies_show(name: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """A policy's parameters, their types, defaults and meaning."""
    from ctxsim.params import describe
    from ctxsim.policies import policies

    table = policies()
    if name not in table:
        _fail(f"unknown policy {name!r}; known: {', '.join(table)}")
    info = table[name]
    params = describe(info.params)
    if as_json:
        typer.echo(json.dumps({"name": name, "source": info.source, "summary": info.summary,
                               "params": params}, indent=1, default=list))
        return
    typer.echo(f"{name}: {info.summary}\nsource: {info.source}\nparameters:")
    for p in params:
        typer.echo(f"  {p['name']} ({p['type']}, default {p['default']!r}): {p['doc']}")


def main() -> None:
    try:
        app()
    except CtxsimError as exc:
        typer.echo(f"ctxsim: error: {exc}", err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
