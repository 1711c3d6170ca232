"""`ctxsim presets check`: the product presets against the compactions in the products' own logs."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ctxsim.cli import app, guarded
from ctxsim.commands._found import OptionalTracesArg, SourceOpt, inputs
from ctxsim.commands.inspect import FormatOpt, SkipOpt, TokenizerOpt, print_tables, read_inputs

presets_app = typer.Typer(help="Check the product presets against the products' own logs.", no_args_is_help=True)
app.add_typer(presets_app, name="presets")


@presets_app.command("check")
@guarded
def presets_check(
    traces: OptionalTracesArg = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the lines and every compaction as JSON.")] = False,
    fmt: FormatOpt = None,
    source: SourceOpt = None,
    skip_bad_lines: SkipOpt = False,
    tokenizer: TokenizerOpt = "o200k_base",
) -> None:
    """Every compaction the products recorded (Claude Code, Codex), replayed under the product's preset for
    its version: one line per product and version, how far the preset is from the product. With no path: the
    sessions found where the agents keep them (--source narrows it)."""
    from ctxsim.analysis import preset_corpus

    paths, fmt = inputs(traces, source, fmt)
    trace, _ = read_inputs(paths, fmt, skip_bad_lines)
    checks = preset_corpus.run(trace, tokenizer)
    lines = preset_corpus.summarise(checks)
    from ctxsim.loss import compaction as loss_check

    losses = loss_check.check(trace, tokenizer)  # the loss meter against the agents' re-fetches
    if as_json:
        typer.echo(json.dumps({**preset_corpus.to_json(checks, lines), "loss": loss_check.summary(losses)},
                              indent=1, sort_keys=True, ensure_ascii=False))
        return
    if not checks:
        typer.echo("no compaction by a product with a preset (claude-code, codex) in these sessions")
        return
    from ctxsim.analysis.preset_check import sides_table

    print_tables([preset_corpus.table(lines), sides_table(checks)], [*preset_corpus.notes(),
                                                                     loss_check.summary_line(losses)],
                 title=f"presets check ({len(checks)} compaction(s))")
