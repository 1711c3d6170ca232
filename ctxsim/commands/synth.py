"""`ctxsim synth`: synthetic sessions in the native format."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._options import ForceOpt


@app.command()
@guarded
def synth(
    turns: Annotated[int, typer.Option(help="Agent turns (model requests) to generate.")] = 60,
    seed: Annotated[int, typer.Option(help="Random seed; same seed, same bytes.")] = 0,
    profile: Annotated[str, typer.Option(
        help="coding (realistic session) or yoagent (yoagent's replay workload).")] = "coding",
    tool_mix: Annotated[str | None, typer.Option(help="coding: tool=weight,... e.g. read_file=3,bash=1.")] = None,
    output_scale: Annotated[float | None, typer.Option(help="coding: scale tool output sizes.")] = None,
    aside_rate: Annotated[float | None, typer.Option(help="coding: chance per turn of a user aside.")] = None,
    pause_rate: Annotated[float | None, typer.Option(help="coding: chance per turn of a 6-50 minute pause.")] = None,
    record_usage: Annotated[bool, typer.Option(
        "--record-usage", help="Record on every response the usage a provider would have billed (hidden prefix, "
        "tokenizer scale, framing, Anthropic cache reads/writes, occasional misses).")] = False,
    billing: Annotated[str | None, typer.Option(
        help="With --record-usage: k=v,... of hidden_tokens, token_scale, message_tokens, cold_rate.")] = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="The native JSONL file to write: "
                                                  "FILE.jsonl (or no suffix), '-' for stdout; any other "
                                                  "suffix is refused. Default: stdout.")] = None,
    force: ForceOpt = False,
) -> None:
    """Write a synthetic session in the native format."""
    from ctxsim.formats import native
    from ctxsim.synth import synthesize

    if output == "-":  # stdout, as convert -o - is
        output = None
    if output is not None:
        from ctxsim._support.fileio import check_output
        from ctxsim.commands._output import decide
        from ctxsim.commands.convert import TRACE_KINDS

        check_output(decide(output, "synth", TRACE_KINDS).text, [], force)
    options: dict[str, object] = {}
    if tool_mix:
        options["tool_mix"] = _numbers(tool_mix, "--tool-mix", "tool=weight")
    options.update({key: value for key, value in (("output_scale", output_scale), ("aside_rate", aside_rate),
                                                  ("pause_rate", pause_rate)) if value is not None})
    billed: dict[str, object] | None = None
    if billing and not record_usage:
        fail("--billing needs --record-usage")
    if record_usage:
        billed = dict(_numbers(billing or "", "--billing", "name=number", skip_empty=True))
    trace = synthesize(profile, turns=turns, seed=seed, billing=billed, **options)
    if output is None:
        native.write(trace, sys.stdout)
        return
    from ctxsim._support.fileio import atomic_write

    with atomic_write(output, force=force) as out:
        native.write(trace, out)
    typer.echo(f"wrote {output}: {sum(len(s.messages) for s in trace.sessions):,} messages", err=True)


def _numbers(text: str, option: str, shape: str, skip_empty: bool = False) -> dict[str, float]:
    """`a=1,b=2.5` as {name: number}; anything else one error naming the option and the piece."""
    out: dict[str, float] = {}
    for part in text.split(","):
        if skip_empty and not part.strip():
            continue
        name, eq, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            fail(f"{option}: expected {shape}, got {part!r}")
        if not eq:
            fail(f"{option}: expected {shape}, got {part!r}")
    return out
