"""`ctxsim tune`: the cheapest setting of a policy family that loses no more than allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ctxsim.cli import app, guarded
from ctxsim.commands._options import (
    CacheOpt,
    CacheTtlOpt,
    CalibrateOpt,
    ForceOpt,
    FormatOpt,
    FramingOpt,
    JobsOpt,
    ModelOpt,
    ProviderOpt,
    ReserveOpt,
    SkipBadOpt,
    TokenizerOpt,
    WindowOpt,
    options,
)
from ctxsim.errors import CtxsimError

TUNE_HELP = """Search a policy family's parameters for the cheapest setting that loses no more than allowed.

Every trial (a setting of the family's parameter space: the whole grid when it has at most --trials
points, else --trials points drawn with --seed) is replayed on every TRACE with the loss meter
watching. Shown: the Pareto front of cost with re-fetches against recall misses, the oracle's bound
at the same limit, and the recommended setting: the cheapest (with re-fetches) that never lets a
request's context pass the limit (--budget, else the window minus --reserve) and has at most
--max-misses recall misses (default: the fewest any such trial has).

Thresholds in the space are fractions of the limit, so one space fits every window. The
recommendation is printed as a policy file (TOML, `--policy FILE.toml#NAME` loads it back) and,
for clear and server_compact, as Anthropic `context_management` JSON. With -o FILE.toml: the
policy file there, and beside it FILE.context_management.json (where expressible), FILE.pareto.png
and FILE.trials.csv (every trial).
"""


def _outputs(output: str) -> dict[str, Path]:
    from ctxsim._support.fileio import output_path

    path = output_path(output)
    if path.suffix.lower() != ".toml":
        raise CtxsimError(f"-o {output}: tune writes a policy file: give FILE.toml (the chart, CSV and JSON are "
                          "written beside it)")
    stem = path.with_suffix("")
    return {"toml": path, "json": Path(f"{stem}.context_management.json"), "png": Path(f"{stem}.pareto.png"),
            "csv": Path(f"{stem}.trials.csv")}


@app.command(help=TUNE_HELP)
@guarded
def tune(
    traces: Annotated[list[str], typer.Argument(help="Trace files, folders (recursive) and globs.")],
    family: Annotated[str, typer.Option(
        "--family", help="The policy family to tune: clear, compact, server_compact, tiered, scored, zones, mask, "
                         "recent, truncate.")],
    budget: Annotated[str | None, typer.Option(
        help="The limit every request's context must stay within: tokens (50k) or a fraction of the window "
             "(60%). Default: the window minus --reserve.")] = None,
    max_misses: Annotated[int | None, typer.Option(
        "--max-misses", help="Recall misses the recommendation may have, all traces together. Default: the fewest "
                             "any trial that stays within the limit has.")] = None,
    trials: Annotated[int, typer.Option(help="Settings to try (the whole grid when it is smaller).")] = 40,
    seed: Annotated[int, typer.Option(help="Seed of the random draw of settings.")] = 0,
    every: Annotated[bool, typer.Option("--all", help="Show every trial, not only the Pareto front.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the Pareto front (every trial with --all), the oracle's bound and the recommendation "
                       "(its policy file and context_management) as JSON on stdout.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal (default: the "
                                                      "least useful left out to fit, named in a note).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every note (default on a terminal: at most 3 "
                                                                  "lines of them).")] = False,
    output: Annotated[str | None, typer.Option(
        "-o", "--output", help="FILE.toml: the recommended policy file; the chart, CSV and JSON beside it.")]
    = None,
    force: ForceOpt = False,
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
) -> None:
    from ctxsim.tune.space import space_of

    space_of(family)  # an unknown family fails before any work
    if trials < 1:
        raise CtxsimError(f"--trials must be at least 1, got {trials}")
    if max_misses is not None and max_misses < 0:
        raise CtxsimError(f"--max-misses must not be negative, got {max_misses}")
    if seed < 0:
        raise CtxsimError(f"--seed must not be negative, got {seed}")
    limit = None
    if budget is not None:
        from ctxsim.replay.budgets import AS_WRITTEN, parse_budgets

        try:
            parsed = parse_budgets(budget)
        except CtxsimError as exc:
            raise CtxsimError(str(exc).replace("--budgets:", "--budget:", 1)) from None
        if len(parsed) != 1 or parsed[0] is AS_WRITTEN:
            raise CtxsimError(f"--budget: give one budget, tokens (50k) or a fraction of the window (60%); "
                              f"got {budget!r}")
        limit = parsed[0]
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, jobs)
    from ctxsim.replay.inputs import expand_inputs

    paths = expand_inputs(traces, fmt)
    files = _outputs(output) if output is not None else None
    if files is not None:  # refused before the work, not after it
        from ctxsim._support.fileio import check_output

        for path in files.values():
            check_output(path, paths, force)
    from ctxsim.reports._progress import progress_bar
    from ctxsim.tune import outputs as tune_out
    from ctxsim.tune import search as tuning

    targets = tuning.load_targets(paths, opts, fmt, limit)
    chosen, how = tuning.prepare(family, trials, seed, targets)
    with progress_bar(tuning.cells_of(chosen, targets), f"tuning {family}: {len(chosen)} trial(s)") as advance:
        outcome = tuning.tune(targets, family, chosen, how, max_misses, opts.jobs, advance)
    label = limit.label if limit is not None else None
    from ctxsim.loss.compaction import scored_on

    # the recommendation weighs the loss meter: how it scored where these traces record a product's compaction
    meter, meter_note = scored_on([t.trace for t in targets], opts.tokenizer or "o200k_base")
    if as_json:
        import json

        data = tune_out.outcome_json(outcome, label, seed, every)
        if meter is not None:
            data = {**data, "loss_meter": meter}
        typer.echo(json.dumps(data, indent=1, sort_keys=True))
        if files is not None:
            _write(files, outcome, label, seed, force)
        return
    from ctxsim.reports._screen import show

    notes = [*tune_out.notes(outcome, label), *([meter_note] if meter_note else [])]
    show(None, [tune_out.table(outcome, every)], notes, wide=wide, verbose=verbose)
    toml = tune_out.toml_text(outcome, label, seed)
    cm, why = tune_out.context_management(outcome)
    if toml is not None:
        typer.echo("")
        typer.echo(f"recommended, as a policy file (--policy FILE.toml#{tune_out.policy_name(outcome)}):")
        typer.echo(toml.rstrip("\n"))
    if cm is not None:
        typer.echo("")
        typer.echo("recommended, as Anthropic context_management (the request's context_management field):")
        typer.echo(tune_out.json_text(cm).rstrip("\n"))
    elif toml is not None:
        typer.echo(f"note: no context_management JSON: {why}")
    if files is not None:
        _write(files, outcome, label, seed, force)


def _write(files: dict[str, Path], outcome: Any, label: str | None, seed: int, force: bool) -> None:
    """The policy file, context_management JSON (where expressible), chart and trials CSV (-o)."""
    from ctxsim._support.fileio import atomic_write
    from ctxsim.tune import outputs as tune_out

    toml = tune_out.toml_text(outcome, label, seed)
    cm, _ = tune_out.context_management(outcome)
    written = []
    if toml is not None:
        with atomic_write(files["toml"], force=force) as f:
            f.write(toml)
        written.append(files["toml"])
    if cm is not None:
        with atomic_write(files["json"], force=force) as f:
            f.write(tune_out.json_text(cm))
        written.append(files["json"])
    with atomic_write(files["png"], "wb", force=force) as f:
        f.write(tune_out.chart(outcome, label))
    with atomic_write(files["csv"], force=force) as f:
        f.write(tune_out.trials_csv(outcome))
    written += [files["png"], files["csv"]]
    for path in written:
        typer.echo(f"wrote {path}", err=True)
