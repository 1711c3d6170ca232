"""`ctxsim validate`: replay with no policy and compare each request with its recorded usage."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._found import OptionalTracesArg, SourceOpt, inputs
from ctxsim.commands._options import MaxInputBytesOpt, MaxLineBytesOpt, MaxMessagesOpt, set_limits
from ctxsim.commands.inspect import FormatOpt, SkipOpt, TokenizerOpt, print_tables, read_inputs


@app.command("validate")
@guarded
def validate_command(
    traces: OptionalTracesArg = None,
    calibrate: Annotated[bool, typer.Option("--calibrate/--no-calibrate", help="Fit the hidden prefix, the token "
                                            "scale and the per-message overhead first (default), or replay raw.")
                         ] = True,
    priors_only: Annotated[bool, typer.Option("--priors-only", help="Calibrate from the shipped priors only: no "
                                              "fit, each session part anchored on its first request.")] = False,
    worst: Annotated[int, typer.Option(help="How many of the worst requests to list.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    fmt: FormatOpt = None,
    source: SourceOpt = None,
    skip_bad_lines: SkipOpt = False,
    tokenizer: TokenizerOpt = "o200k_base",
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
) -> None:
    """Replay under none (own model, provider) and compare each request with its recorded usage; calibrated.
    With no path: the sessions found where the agents keep them (--source narrows it)."""
    from ctxsim.analysis.validate import validate, validation_tables

    if worst < 0:
        fail("--worst must not be negative")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    paths, fmt = inputs(traces, source, fmt)
    trace, reports = read_inputs(paths, fmt, skip_bad_lines)
    # the readers' reports say where lines were skipped: the replay re-anchors there
    result = validate(trace, tokenizer, calibrate, mode="priors" if priors_only else "fit", reports=reports)
    from ctxsim.analysis import preset_check

    checks = preset_check.check(trace, tokenizer)  # the product's own compactions against its preset
    if as_json:
        typer.echo(json.dumps({**result.to_json(worst), "preset_checks": [c.to_json() for c in checks],
                               "compactions": [preset_check.compaction_entry(c) for c in checks]},
                              indent=1, sort_keys=True, ensure_ascii=False))
        return
    tables, notes = validation_tables(result, worst)
    if checks:
        tables = [*tables, preset_check.table(checks), preset_check.sides_table(checks)]
        notes = [*notes, *preset_check.notes(checks)]
    print_tables(tables, notes, title=f"validate {result.trace}")
