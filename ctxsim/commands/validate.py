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
    predict: Annotated[bool, typer.Option("--predict", help="Report the predicted score: calibrated on the first "
                                          "part of each session only (--fit-on), no recorded cache fact and no "
                                          "re-anchor from the requests it scores.")] = False,
    fit_on: Annotated[float, typer.Option("--fit-on", help="The share of each session's recorded requests the "
                                          "predicted score fits on (the rest are scored).")] = 0.5,
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
    from ctxsim.analysis.predict import predict as predicted
    from ctxsim.analysis.predict import prediction_table, score_blocks, split
    from ctxsim.analysis.validate import validate, validation_tables

    if worst < 0:
        fail("--worst must not be negative")
    if not 0.0 < fit_on < 1.0:
        fail(f"--fit-on must lie strictly between 0 and 1 (a share of each session's requests), not {fit_on:g}")
    if predict and not calibrate:
        fail("--predict calibrates on the first part of each session: it cannot be combined with --no-calibrate")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    paths, fmt = inputs(traces, source, fmt)
    trace, reports = read_inputs(paths, fmt, skip_bad_lines)
    # the readers' reports say where lines were skipped: the replay re-anchors there
    mode = "priors" if priors_only else "fit"
    result = validate(trace, tokenizer, calibrate, mode=mode, reports=reports)
    prediction = None
    if calibrate and (predict or any(split(trace, fit_on)[1].values())):  # the default shows both when it can
        prediction = predicted(trace, tokenizer, fit_on, mode=mode, reports=reports)
    blocks = score_blocks(result, prediction, trace)
    shown = prediction.validation if predict and prediction is not None else result
    from ctxsim.analysis import preset_check

    checks = preset_check.check(trace, tokenizer)  # the product's own compactions against its preset
    from ctxsim.loss import compaction as loss_check

    losses = loss_check.check(trace, tokenizer)  # what each lost: the agent's re-fetches beside the loss meter's
    if as_json:
        compactions = loss_check.entries(losses, [(c.session, preset_check.compaction_entry(c)) for c in checks])
        cleared = loss_check.clearings(trace, tokenizer)  # the product's own clearings: observed only
        typer.echo(json.dumps({**shown.to_json(worst), **blocks, "preset_checks": [c.to_json() for c in checks],
                               "compactions": compactions, **({"clearings": cleared} if cleared else {})},
                              indent=1, sort_keys=True, ensure_ascii=False))
        return
    tables, notes = validation_tables(shown, worst)
    tables = [prediction_table(blocks, result.calibrated), *tables]
    if predict:
        said = (f"predicted: the tables below score the {len(shown.checks)} requests after the first {fit_on:.0%} of "
                "each session; the calibration saw none of them")
        notes = [said, *notes]
    if checks:
        tables = [*tables, preset_check.table(checks), preset_check.sides_table(checks)]
        notes = [*notes, *preset_check.notes(checks)]
    if losses:
        tables, notes = [*tables, loss_check.table(losses)], [*notes, *loss_check.notes(losses)]
    print_tables(tables, notes, title=f"validate {result.trace}")
