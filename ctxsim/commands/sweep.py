"""`ctxsim sweep`: traces x policies x budgets across a corpus, on a process pool or a Dask cluster.

Also the corpus case of `ctxsim compare DIR|GLOB...` (one budget: the policies as written).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
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
    ModelOpt,
    ProviderOpt,
    ReserveOpt,
    SkipBadOpt,
    TokenizerOpt,
    WindowOpt,
    options,
)
from ctxsim.errors import CtxsimError

DEFAULT_POLICIES = "none,clear,compact,clear+compact,truncate,mask,recent,claude-code"

SWEEP_HELP = """Replay every trace under every policy at every budget: one table across the corpus.

TRACES are files, folders (searched recursively) and globs; each trace file is replayed on its own,
each (trace, policy, budget) cell with a fresh policy. `none` is always run: the baseline of every
saving.

A budget is tokens (50000, 50k) or a fraction of each trace's window (60%, 0.6). What it sets,
stage by stage (in pipelines and presets too, replacing what the spec wrote there):
clear: trigger (input_tokens triggers); compact: trigger and compact_above (compact_at and
headroom_tokens cleared); server_compact: trigger; scored: budget; tiered: max_context_tokens;
zones: window; oracle (the bound): budget. Policies with none of these (none, truncate, mask, recent, hierarchical,
amortized, notes, clear_thinking) run once, budget `-`. The replay window itself is not changed: "over window"
counts sessions whose context passed the real window minus --reserve.

Every cell is loss-metered (--no-loss: not): recall misses (identifiers a recorded answer uses that
an earlier user or tool message held and the policy's context no longer holds), distinct
identifiers missed, re-fetches (misses whose source was a tool result, re-read once) and the cost
with re-fetches, per session and summed per policy.

With -o DIR: DIR/manifest.json (version, policies and their effective parameters, budgets, price
data, inputs with digests), DIR/summary.csv, DIR/sessions.csv and the Parquet dataset
DIR/cells/trace=ID/PART.parquet (per-request rows, partitioned by trace). Running again into the
same DIR skips every cell already there (same trace digest, policy, budget and options) and
completes a half-done one.
"""


@contextmanager
def _progress(total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A bar with an ETA on stderr, only on a terminal, after half a second (as render.progress does)."""
    from ctxsim.reports._progress import is_terminal

    if total <= 0 or not is_terminal(sys.stderr):
        def unseen(n: int = 1) -> None:
            """No terminal, or nothing to do: no bar."""

        yield unseen
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), console=Console(file=sys.stderr, force_terminal=True),
                   transient=True, auto_refresh=False)
    task = bar.add_task(description, total=total)
    start = time.monotonic()
    state = {"started": False}

    def advance(n: int = 1) -> None:
        bar.advance(task, n)
        if not state["started"] and time.monotonic() - start >= 0.5:
            state["started"] = True
            bar.start()
        if state["started"]:
            bar.refresh()

    try:
        yield advance
    finally:
        if state["started"]:
            bar.stop()


def _check_out_dir(out: Path, inputs: Sequence[str]) -> None:
    from ctxsim.replay.sweep import SCHEMA

    if out.exists() and not out.is_dir():
        raise CtxsimError(f"{out}: exists and is not a folder; -o takes the sweep's output folder")
    if out.is_dir() and any(out.iterdir()):
        manifest = out / "manifest.json"
        try:
            schema = json.loads(manifest.read_text(encoding="utf-8")).get("schema")
        except (OSError, ValueError, AttributeError):
            schema = None
        if schema != SCHEMA:
            raise CtxsimError(f"{out}: not empty and not a sweep output (no {SCHEMA} manifest.json); "
                              "choose another -o folder")
    root = os.path.realpath(out)
    for path in inputs:
        if os.path.realpath(path).startswith(root + os.sep):
            raise CtxsimError(f"{path}: an input inside the output folder {out}; choose another -o folder")


def run_sweep(traces: Sequence[str], policy_specs: Sequence[str], budgets_text: str | None, opts: Any,
              fmt: str | None, out: Path | None, jobs: int | None, cluster: str | None, dates: Any = None) -> Any:
    from ctxsim._support.parallel import available_cores
    from ctxsim.replay.budgets import parse_budgets
    from ctxsim.replay.inputs import expand_inputs
    from ctxsim.replay.sweep import execute, plan
    from ctxsim.replay.sweep_report import load_report

    budgets = parse_budgets(budgets_text)
    if out is not None:
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise CtxsimError(f"-o {out}: a sweep's output is a Parquet dataset, which needs pyarrow: "
                              "pip install 'ctxsim[parquet]'")
        _check_out_dir(out, expand_inputs(traces, fmt))
    p = plan(traces, policy_specs, budgets, opts, fmt, None if out is None else str(out), dates)
    if p.left_out:
        shown = "; ".join(f"{path} ({why})" for path, why in p.left_out[:3])
        more = f"; and {len(p.left_out) - 3:,} more (all in manifest.json)" if len(p.left_out) > 3 else ""
        typer.echo(f"note: {len(p.left_out):,} file(s) in the folders left out: {shown}{more}", err=True)
    if p.skipped:
        typer.echo(f"note: {p.skipped} cell(s) already in {out}: skipped", err=True)
    if out is not None and not (out / "manifest.json").exists():  # marks the folder as a sweep's, for a resume
        from ctxsim._support.fileio import atomic_write
        from ctxsim.replay.sweep import SCHEMA

        with atomic_write(out / "manifest.json") as f:
            f.write(json.dumps({"schema": SCHEMA, "complete": False,
                                "note": "a sweep under way or interrupted: run it again to complete it"}) + "\n")
    pending = sum(len(t.cells) for t in p.tasks)
    workers = jobs if jobs is not None else (available_cores() if cluster is None else 0)
    with _progress(pending, f"sweeping {pending} cell(s)") as advance:
        execute(p, workers, cluster, advance)
    report = load_report(p)
    if out is not None:
        _write_outputs(report, out)
    return report


def _write_outputs(report: Any, out: Path, per_session: bool = True) -> None:
    from ctxsim._support.fileio import atomic_write
    from ctxsim.replay.sweep_report import csv_text

    with atomic_write(out / "summary.csv") as f:
        f.write(csv_text(*report.policy_rows()))
    with atomic_write(out / "sessions.csv") as f:
        f.write(csv_text(*report.session_rows()))
    with atomic_write(out / "manifest.json") as f:
        f.write(json.dumps(report.manifest(), indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _money(text: str) -> str:
    from ctxsim.reports._terminal import money

    value = Decimal(text)
    return ("-" if value < 0 else "") + money(abs(value))


# The policy table's columns most worth keeping first when it must fit a terminal (the rest with --wide).
POLICY_KEEP = ("policy", "cost", "vs none", "cost w/ re-fetch", "misses", "budget", "over window", "peak context",
               "saving", "re-fetches", "events", "summarizer", "requests", "sessions", "distinct", "re-fetch cost")


def policy_table(report: Any) -> Any:
    from ctxsim.reports._fit import FitTable

    headers, rows = report.policy_rows()
    loss = [h for h in headers if h.startswith("loss_")]
    out = []
    for r in rows:
        d = dict(zip(headers, r, strict=True))
        out.append([d["policy"], d["budget"], f"{int(d['sessions']):,}", f"{int(d['requests']):,}",
                    _money(d["cost_usd"]), _money(d["saving_usd"]),
                    "baseline" if d["policy"] == report.baseline_label() else
                    (d["saving_pct"] + "%" if d["saving_pct"] != "n/a" else "n/a"),
                    f"{int(d['sessions_over_window']):,}", f"{int(d['peak_context_tokens']):,}",
                    _money(d["summarizer_cost_usd"]), f"{int(d['events']):,}"] + [_loss_cell(c, d[c]) for c in loss])
    return FitTable(f"policies across {len(report.plan.inputs):,} trace(s) (costs per the traces' timing)",
                    ["policy", "budget", "sessions", "requests", "cost", "saving", "vs none", "over window",
                     "peak context", "summarizer", "events"] + [LOSS_HEADERS.get(c, c) for c in loss], out, left=2,
                    keep=POLICY_KEEP, minimum=16)


LOSS_HEADERS = {"loss_recall_misses": "misses", "loss_distinct_identifiers": "distinct", "loss_refetches": "re-fetches",
                "loss_refetch_cost_usd": "re-fetch cost", "loss_cost_with_refetch_usd": "cost w/ re-fetch"}


def _loss_cell(column: str, text: str) -> str:
    if text == "":
        return "-"
    if column.endswith("_usd"):
        return _money(text)
    value = Decimal(text)
    return f"{int(value):,}" if value == int(value) else text


def session_table(report: Any) -> Any:
    from ctxsim.reports._terminal import TableData

    headers, rows = report.session_rows()
    out = []
    for r in rows:
        d = dict(zip(headers, r, strict=True))
        out.append([d["trace"], d["session"], d["policy"], d["budget"], d["requests"], _money(d["cost_usd"]),
                    _money(d["saving_usd"]), _money(d["recorded_cost_usd"]) if d["recorded_cost_usd"] else "-",
                    f"{int(d['peak_context_tokens']):,}",
                    f"request {d['first_overflow_request']}" if d["first_overflow_request"] else "never"]
                   + [_loss_cell(c, d[c]) for c in SESSION_LOSS if c in d])
    return TableData("per session", ["trace", "session", "policy", "budget", "requests", "cost", "saving",
                                     "recorded", "peak context", "first overflow", *_session_loss_headers(headers)],
                     out, left=4)


SESSION_LOSS = ("loss_recall_misses", "loss_cost_with_refetch_usd")  # the per-session table's loss columns


def _session_loss_headers(headers: list[str]) -> list[str]:
    return [LOSS_HEADERS[c] for c in SESSION_LOSS if c in headers]


def json_data(report: Any, per_session: bool) -> dict[str, Any]:
    headers, rows = report.policy_rows()
    data = {"manifest": report.manifest(), "policies": [dict(zip(headers, r, strict=True)) for r in rows]}
    if per_session:
        sh, srows = report.session_rows()
        data["sessions"] = [dict(zip(sh, r, strict=True)) for r in srows]
    return data


def notes(report: Any) -> list[str]:
    priced, total, cost, replayed = report.recorded()
    if priced:
        out = [(f"recorded bill of the {priced:,} of {total:,} session(s) whose logged usage is all priced: "
                f"{_money(str(cost))}; none's replay of the same sessions: {_money(str(replayed))}")]
    else:
        out = [f"none of the {total:,} session(s) recorded priced usage: no recorded bill to show"]
    out += list(report.notes()) + report.date_notes() + [
        "open-loop replay: the agent's recorded outputs are replayed unchanged whatever the policy does"]
    if any(h.startswith("loss_") for h in report.policy_rows()[0]):
        from ctxsim.loss.refetch import ASSUMPTION

        out += [("recall misses: identifiers a recorded answer uses that an earlier user or tool message held and the "
                 "policy's context no longer holds (ctxsim/loss/identifiers.py)"), ASSUMPTION]
    return out


def emit(report: Any, per_session: bool, as_json: bool, wide: bool = False, verbose: bool = False) -> None:
    """The tables on stdout, fitted to the terminal unless `wide` (`reports._screen`), or --json."""
    if as_json:
        typer.echo(json.dumps(json_data(report, per_session), indent=1, sort_keys=True))
        return
    from ctxsim.reports._screen import show

    tables = [policy_table(report)] + ([session_table(report)] if per_session else [])
    show(None, tables, notes(report), wide=wide, verbose=verbose)


SinceOpt = Annotated[str | None, typer.Option(
    help="Only the sessions that started on or after this date (YYYY-MM-DD or YYYYMMDD, in --timezone); the rest "
         "are skipped and counted in the notes.")]
UntilOpt = Annotated[str | None, typer.Option(help="Only the sessions that started on or before this date.")]
TimezoneOpt = Annotated[str | None, typer.Option(
    "--timezone", help="IANA time zone the --since/--until days are in (default UTC).")]


# What `sweep -o` (and `compare` of several traces) writes, by the output's suffix.
SWEEP_KINDS: dict[str, str] = {
    "bundle": "the sweep folder: manifest.json, summary.csv, sessions.csv, the Parquet cells; resumable",
    "json": "the tables as --json prints them", "csv": "the policy table", "md": "the policy table",
}


def write_file_output(report: Any, out: Any, per_session: bool, force: bool, title: str) -> None:
    """`-o X.json|X.csv|X.md`: the tables in one file (the folder output is written by run_sweep)."""
    from ctxsim.commands._output import markdown_tables, write_text
    from ctxsim.replay.sweep_report import csv_text

    if out.kind == "json":
        content = json.dumps(json_data(report, per_session), indent=1, sort_keys=True) + "\n"
    elif out.kind == "csv":
        content = csv_text(*report.policy_rows())
    else:
        tables = [policy_table(report)] + ([session_table(report)] if per_session else [])
        content = markdown_tables(title, tables, notes(report))
    write_text(out, content, force)
    typer.echo(f"wrote {out.path}", err=True)


def _start(traces: Sequence[str], out: Any, force: bool) -> Path | None:
    """The sweep folder to write (None for a file output, checked here before the work, or none)."""
    if out is None:
        return None
    if out.is_bundle:
        folder: Path = out.path
        return folder
    from ctxsim.commands._output import check

    check(out, list(traces), force)
    return None



def _policy_names(incomplete: str) -> list[str]:
    from ctxsim.commands._complete import policy_names

    return policy_names(incomplete)

@app.command(help=SWEEP_HELP)
@guarded
def sweep(
    traces: Annotated[list[str], typer.Argument(help="Trace files, folders (recursive) and globs.")],
    policies: Annotated[str, typer.Option(
        autocompletion=_policy_names,
        help="Comma-separated policy specs, presets, A+B pipelines or policy files; `none` is always added.")]
    = DEFAULT_POLICIES,
    budgets: Annotated[str | None, typer.Option(
        help="Comma-separated budgets: tokens (50k) or fractions of the window (60%); default: the policies as "
             "written.")] = None,
    output: Annotated[str | None, typer.Option(
        "-o", "--output", help="Write here, as the suffix says: DIR/ or a path with no suffix (the output folder: "
                               "manifest, tables, Parquet dataset; resumable), .json (the tables as --json prints "
                               "them), .csv or .md (the policy table). Default: none.")]
    = None,
    force: ForceOpt = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    tz: TimezoneOpt = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", help="Processes (this one included) on the local pool; with --cluster local, its workers "
                             "(2 by default). Default: one per core.")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="Run the cells on a Dask cluster: a scheduler ADDRESS (tcp://host:8786), or `local` for a "
             "LocalCluster of worker processes. Needs the dask extra; traces and -o must be on paths the "
             "workers see.")] = None,
    per_session: Annotated[bool, typer.Option("--per-session", help="Also a table per session.")] = False,
    loss: Annotated[bool, typer.Option(
        "--loss/--no-loss", help="Meter recall misses and their re-fetch cost in every cell (the loss columns).")]
    = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the tables as JSON.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however wide the terminal (default: the "
                                                      "least useful left out to fit, named in a note).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every note (default on a terminal: at most 3 "
                                                                  "lines of them).")] = False,
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
) -> None:
    from ctxsim.policies.spec import split_list

    if jobs is not None and jobs < 1:
        raise CtxsimError(f"--jobs must be at least 1, got {jobs}")
    opts = options(provider, model, tokenizer, cache, cache_ttl, window, reserve, framing, calibrate,
                   skip_bad_lines, 1)
    from ctxsim.commands._output import decide
    from ctxsim.replay.sweep_dates import date_range

    dates = date_range(since, until, tz)
    out = None if output is None else decide(output, "sweep", SWEEP_KINDS)
    folder = _start(traces, out, force)
    import dataclasses

    opts = dataclasses.replace(opts, loss=loss)
    report = run_sweep(traces, split_list(policies), budgets, opts, fmt, folder, jobs, cluster, dates)
    emit(report, per_session, as_json, wide, verbose)
    if folder is not None:
        typer.echo(f"wrote {folder}/ (manifest.json, summary.csv, sessions.csv, cells/)", err=True)
    elif out is not None:
        write_file_output(report, out, per_session, force, f"sweep of {len(report.plan.inputs):,} trace(s)")


def corpus_compare(traces: Sequence[str], specs: Sequence[str], opts: Any, fmt: str | None, out: Any,
                   as_json: bool, force: bool = False, dates: Any = None) -> None:
    """`ctxsim compare` on several traces: the sweep engine with one budget (the policies as written).
    `out`: what -o decided (`_output.decide` with SWEEP_KINDS), or None."""
    import dataclasses

    jobs = opts.jobs
    folder = _start(traces, out, force)
    report = run_sweep(traces, specs, None, dataclasses.replace(opts, jobs=1), fmt, folder, jobs, None, dates)
    emit(report, False, as_json)
    if folder is not None:
        typer.echo(f"wrote {folder}/ (manifest.json, summary.csv, sessions.csv, cells/)", err=True)
    elif out is not None:
        write_file_output(report, out, False, force, f"compare of {len(report.plan.inputs):,} trace(s)")
