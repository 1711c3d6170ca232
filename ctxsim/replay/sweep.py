"""Corpus replay: traces x policies x budgets, each cell a fresh policy on one trace file.

A *cell* is (trace file, policy spec, budget, options). The sweep reads each trace file where
the worker stands (a path, never a pickled trace), replays it under every pending cell of that
file with a fresh policy each, writes those cells' per-request rows to one Parquet file of the
run's dataset (`cells/trace=<id>/<part>.parquet`, the cells' summaries in its metadata) and sends
back only the summaries (per-session totals). The parent aggregates the summaries into the
tables; it never holds rows.

Each trace file is replayed on its own: a file holding several sessions replays them one after
the other as `replay` does, and a Claude Code subagent file is a trace of its own (not linked to
its parent's Task call, as it is when both are read together).

Budgets (ctxsim.replay.budgets). A budget is absolute (`50k`, `120000`) or a fraction of the trace's window (`60%`,
`0.6`; the window the replay resolves: `--window`, else the trace's, else the model's). What it
sets depends on the policy family, stage by stage (a pipeline or a preset gets it in every stage
that has one; it replaces what the spec or the preset wrote there). Each policy declares what a budget
sets in its own registration (`PolicyInfo.budget`, beside the policy); the manifest lists them
(`budget_params`). Today:

    clear           trigger (when trigger_type is input_tokens)
    compact         trigger and compact_above (compact_at and headroom_tokens cleared)
    server_compact  trigger
    scored          budget
    tiered          max_context_tokens
    zones           window (the tokens its zone shares refer to)
    oracle          budget (the bound: every request's context at most that)

A policy with no such stage (none, truncate, mask, recent, hierarchical, amortized, notes,
clear_thinking) has no token threshold for a budget to move: it runs once per trace, shown with
budget `-`. The replay's window is never changed by a budget, so "sessions over the window" is
always measured against the real window minus the output reserve. `none` is always run (budget
`-`): it is the baseline every saving is measured against.

Resuming. A cell's id is a digest of the trace's content digest, the policy's label and
effective parameters, the budget, the options, the ctxsim version and the price data: a cell
already in a finished Parquet file of its trace's folder is not run again (its summary is read
back from the file's metadata); a file cut short is ignored and its cells run again. The manifest and the
tables depend only on the inputs, so a resumed run, a run on a process pool and a run on a Dask cluster
write the same bytes.

Loss columns. Every cell's run is metered by the loss meter (ctxsim.loss: `metered_run`, one
identifier index per trace shared by the trace's cells). `LOSS_METERS` turns a metered run into
per-session columns, which land in every cell summary (per session) and, summed, in the tables:
`recall_misses`, `distinct_identifiers` (distinct per session, summed), `refetches`,
`refetch_cost_usd` and `cost_with_refetch_usd` (the open-loop cost plus the re-fetches: the
assumption, `loss.refetch.ASSUMPTION`, is in the manifest). Another meter may append its own
function `(run, trace) -> {session_id: {column: value}}`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ctxsim import __version__
from ctxsim.errors import CtxsimError
from ctxsim.replay.budgets import AS_WRITTEN, NO_BUDGET, Budget, takes_budget, with_budget
from ctxsim.replay.inputs import expand_inputs

SCHEMA = "ctxsim.sweep/1"
CELLS_META_KEY = b"ctxsim.cells"
LOSS_SCHEMA = "ctxsim.loss/1"  # the loss columns' rules (ctxsim.loss.SCHEMA): part of every cell's id
OVERFLOW = "window-reserve"

# The loss columns: each function gets (PolicyRun, Replayer), the run metered (`run.loss`) by that replayer
# (`replayer.trace` is the trace), and returns {session_id: {column: int | Decimal}}.
LossMeter = Callable[[Any, Any], dict[str, dict[str, Any]]]


def recall_columns(run: Any, replayer: Any) -> dict[str, dict[str, Any]]:
    """The loss meter's report of a run, per session: misses, distinct identifiers, re-fetches and their cost
    (priced as `loss.refetch.price` prices a whole run, on each session's own rows)."""
    from types import SimpleNamespace

    from ctxsim.loss.meter import LossReport
    from ctxsim.loss.refetch import price

    loss = run.loss
    if loss is None:
        return {}
    rows: dict[str, list[Any]] = {}
    for row in run.rows:
        rows.setdefault(row.session, []).append(row)
    misses: dict[str, list[Any]] = {}
    for m in loss.misses:
        misses.setdefault(m.session, []).append(m)
    refetches: dict[str, list[Any]] = {}
    for f in loss.refetches:
        refetches.setdefault(f.session, []).append(f)
    out: dict[str, dict[str, Any]] = {}
    for session in replayer.trace.sessions:
        sid = session.id
        own = refetches.get(sid, [])
        mine = rows.get(sid, [])
        cost = price(SimpleNamespace(loss=LossReport(refetches=own), rows=mine), replayer) if own else Decimal(0)
        lost = misses.get(sid, [])
        out[sid] = {"recall_misses": len(lost), "distinct_identifiers": len({m.identifier for m in lost}),
                    "refetches": len(own), "refetch_cost_usd": cost,
                    "cost_with_refetch_usd": sum((r.cost_usd for r in mine), Decimal(0)) + cost}
    return out


LOSS_METERS: list[LossMeter] = [recall_columns]


# ---------------------------------------------------------------- inputs


def file_digest(path: str) -> str:
    """SHA-256 of the bytes a reader sees (gzip undone): the same as the read trace's digest."""
    from ctxsim._support.fileio import open_input

    h = hashlib.sha256()
    stream = open_input(path)
    try:
        while chunk := stream.read(1 << 20):
            h.update(chunk)
    except OSError as exc:
        raise CtxsimError(f"{path}: cannot read the file ({exc})") from None
    finally:
        stream.close()
    return "sha256:" + h.hexdigest()


def trace_id(path: str, digest: str) -> str:
    """The dataset partition of a trace: its file stem and the start of its content digest."""
    stem = os.path.basename(path.rstrip("/")).split(".", 1)[0] or "trace"
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stem)[:60]
    return f"{safe}-{digest.split(':', 1)[-1][:12]}"


# ---------------------------------------------------------------- cells and tasks


@dataclass(frozen=True)
class CellSpec:
    cell: str  # id: digest of everything the result depends on
    spec: str  # what resolves to the policy (a spec string or a policy file)
    label: str
    budget: Budget


@dataclass(frozen=True)
class TraceTask:
    """One trace file and the cells still to run on it: small, picklable, no trace content."""

    path: str
    digest: str
    trace_id: str
    fmt: str | None
    options: Any  # ctxsim.replay.plan.Options
    cells: tuple[CellSpec, ...]
    out_dir: str | None  # where the Parquet files go; None: none written
    dates: Any = None  # sweep_dates.DateRange: only the sessions that started in it; None: every session


@dataclass(frozen=True)
class PolicyEntry:
    spec: str
    label: str
    effective: dict[str, Any]
    takes_budget: bool


def options_json(options: Any) -> dict[str, Any]:
    from ctxsim.params import as_dict

    out = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if f.name == "jobs":
            continue  # how many processes ran it is not part of the result
        if dataclasses.is_dataclass(value):
            value = as_dict(value)
        out[f.name] = value
    return out


def resolve_policies(specs: Sequence[str]) -> list[PolicyEntry]:
    """Every spec (policy, A+B pipeline, preset, policy file) to its labelled policies; `none` first if absent."""
    from ctxsim.policies import effective
    from ctxsim.policies.spec import resolve

    specs = list(specs)
    if not specs:
        raise CtxsimError("--policies names no policy (e.g. --policies clear,compact)")
    entries: list[PolicyEntry] = []
    for spec in specs:
        for choice in resolve([spec]):
            entries.append(PolicyEntry(spec, choice.label, effective(choice.policy), takes_budget(choice.policy)))
    if not any(e.effective["name"] == "none" for e in entries):
        entries.insert(0, PolicyEntry("none", "none", {"name": "none", "params": {}}, False))
    labels = [e.label for e in entries]
    for label in labels:
        if labels.count(label) > 1:
            raise CtxsimError(f"policy {label!r} given twice")
    return entries


def cell_id(digest: str, entry: PolicyEntry, budget: Budget, options: dict[str, Any], prices: str) -> str:
    key = json.dumps({"trace": digest, "label": entry.label, "policy": entry.effective, "budget": budget.to_json(),
                      "options": options, "ctxsim": __version__, "prices": prices, "loss": LOSS_SCHEMA},
                     sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def trace_folder(out_dir: str | os.PathLike[str], trace: str) -> Path:
    return Path(out_dir) / "cells" / f"trace={trace}"


def part_name(cells: Iterable[str]) -> str:
    """The file of one task's cells: named by their ids, so the same pending cells write the same file."""
    return hashlib.sha256("\n".join(sorted(cells)).encode()).hexdigest()[:20] + ".parquet"


# ---------------------------------------------------------------- the worker side


def run_task(task: TraceTask) -> list[str] | tuple[str, str]:
    """Run a trace's pending cells; the summaries as JSON text, in cell order; or ("error", message)."""
    try:
        return _run_task(task)
    except CtxsimError as exc:  # travels back as text: an exception class may not pickle across processes
        return ("error", str(exc))


def _run_task(task: TraceTask) -> list[str]:
    from ctxsim.formats import read_traces
    from ctxsim.policies.spec import Choice, resolve
    from ctxsim.replay.engine import resolve as resolve_setup

    opts = dataclasses.replace(task.options, jobs=1)
    trace = read_traces([task.path], task.fmt, skip_bad_lines=opts.skip_bad_lines)
    if trace.digest != task.digest:
        raise CtxsimError(f"{task.path}: the file changed while the sweep ran (digest {trace.digest[:19]}..., "
                          f"expected {task.digest[:19]}...)")
    skipped_sessions = None
    if task.dates is not None:  # --since/--until: the sessions that started in the range, counted
        from ctxsim.replay.sweep_dates import in_range

        trace, outside, untimed = in_range(trace, task.dates)
        skipped_sessions = {"outside_dates": outside, "untimed": untimed}
    calibration: Any = None
    if opts.calibrate:  # as every replay does
        from ctxsim.replay.runner import calibrate

        trace, opts, calibration = calibrate(trace, opts)
    from ctxsim.replay.plan import setup_for

    choices: list[Choice] = []
    budgets: list[int | None] = []
    for cell in task.cells:
        choice = next(c for c in resolve([cell.spec]) if c.label == cell.label)
        tokens = None
        if cell.budget.label != NO_BUDGET:
            window = cell.budget.tokens
            if window is None:
                window = resolve_setup(trace, setup_for(choice, opts)[2])[0].window
            tokens = cell.budget.resolve(window)
            assert tokens is not None
            if tokens <= 0:
                raise CtxsimError(f"{task.path}: budget {cell.budget.label} of a {window:,}-token window is 0 tokens")
            choice = Choice(choice.label, with_budget(choice.policy, tokens), choice.preset)
        choices.append(choice)
        budgets.append(tokens)
    result, losses = _metered(trace, task.path, choices, opts)
    recorded = _recorded(trace, result.manifest.get("provider"))
    out: list[str] = []
    tables = []
    for cell, tokens, run, loss in zip(task.cells, budgets, result.runs, losses, strict=True):
        summary = _summary(task, cell, tokens, run, result.manifest, recorded, trace, loss)
        if calibration is not None:
            summary["calibrated"] = True
        if skipped_sessions is not None:
            summary["skipped_sessions"] = skipped_sessions
        out.append(json.dumps(summary, sort_keys=True, separators=(",", ":")))
        if task.out_dir is not None:
            tables.append(_arrow_table(cell, tokens, run))
    if task.out_dir is not None:
        path = trace_folder(task.out_dir, task.trace_id) / part_name(c.cell for c in task.cells)
        _write_part(path, tables, out)
    return out


def _metered(trace: Any, path: str, choices: Sequence[Any], opts: Any) -> tuple[Any, list[dict[str, dict[str, Any]]]]:
    """`api.replay_choices` in this process, each run loss-metered unless `opts.loss` is off (one identifier
    index for the trace's cells); the run artefact and each run's loss columns per session (LOSS_METERS)."""
    from ctxsim._support.collector import gc_paused
    from ctxsim._support.parallel import at_most
    from ctxsim.replay import runner
    from ctxsim.replay.choices import run_result
    from ctxsim.replay.plan import replay_tasks

    with gc_paused(), at_most(1):
        tasks = replay_tasks(trace, choices, opts, ())
        if opts.loss:
            from ctxsim.loss.identifiers import forget

            forget()  # the identifier memos hold this trace's texts alone: memory flat in the corpus's size
        index = runner.loss_index(trace) if opts.loss else None  # an oracle cell reads the same index
        runs = []
        losses: list[dict[str, dict[str, Any]]] = []
        for choice, _, replayer in tasks:
            run = runner.run(replayer, choice.policy, index)
            runs.append((run, sorted(replayer.pricer.notes)))
            columns: dict[str, dict[str, Any]] = {}
            for meter in LOSS_METERS:
                for sid, values in meter(run, replayer).items():
                    columns.setdefault(sid, {}).update(values)
            losses.append(columns)
        return run_result(tasks, runs, path), losses


def _recorded(trace: Any, provider: str | None) -> dict[str, dict[str, Any]]:
    """What each session's log says it was billed: its requests that recorded usage, priced as logged."""
    from ctxsim.pricing.prices import Bill, Pricer

    pricers: dict[tuple[str, str], Any] = {}
    out: dict[str, dict[str, Any]] = {}
    for session in trace.sessions:
        cost = Decimal(0)
        with_usage = unpriced = 0
        for m in session.messages:
            if m.role != "assistant" or m.usage is None:
                continue
            with_usage += 1
            model = m.model or session.model
            key = (session.provider or provider or "", model or "")
            if key not in pricers:
                try:
                    pricers[key] = Pricer(*key) if model else None
                except CtxsimError:
                    pricers[key] = None
            pricer = pricers[key]
            if pricer is None:
                unpriced += 1
                continue
            u = m.usage
            cost += pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                     u.cache_write_1h_tokens, u.output_tokens), m.ts_s if m.ts else None)
        out[session.id] = {"requests_with_usage": with_usage, "unpriced_requests": unpriced,
                           "recorded_cost_usd": str(cost) if with_usage and not unpriced else None}
    return out


def _summary(task: TraceTask, cell: CellSpec, tokens: int | None, run: Any, manifest: dict[str, Any],
             recorded: dict[str, dict[str, Any]], trace: Any,
             loss: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    window = run.policy.get("setup", {}).get("window") or manifest["window"]
    limit = window - manifest["output_reserve"]
    sessions: dict[str, dict[str, Any]] = {}
    order: list[str] = [s.id for s in trace.sessions]
    for sid in order:
        sessions[sid] = {"session": sid, "requests": 0, "summarize_requests": 0, "input_tokens": 0,
                         "cache_read_tokens": 0, "output_tokens": 0, "peak_context_tokens": 0,
                         "first_overflow_request": None, "cost_usd": Decimal(0), "summarize_cost_usd": Decimal(0),
                         "events": 0, **recorded.get(sid, {})}
    for row in run.rows:
        s = sessions[row.session]
        s["input_tokens"] += row.input_tokens
        s["cache_read_tokens"] += row.cache_read_tokens
        s["output_tokens"] += row.output_tokens
        s["cost_usd"] += row.cost_usd
        if row.kind == "request":
            s["requests"] += 1
            s["peak_context_tokens"] = max(s["peak_context_tokens"], row.context_tokens)
            if s["first_overflow_request"] is None and row.context_tokens > limit:
                s["first_overflow_request"] = row.index
        else:
            s["summarize_requests"] += 1
            s["summarize_cost_usd"] += row.cost_usd
    for event in run.events:
        if event.session in sessions:
            sessions[event.session]["events"] += 1
    for sid, values in (loss or {}).items():
        sessions[sid].setdefault("loss", {}).update(values)
    for s in sessions.values():
        s["cost_usd"] = str(s["cost_usd"])
        s["summarize_cost_usd"] = str(s["summarize_cost_usd"])
        for key, value in list(s.get("loss", {}).items()):
            if isinstance(value, Decimal):
                s["loss"][key] = str(value)
    return {"schema": SCHEMA, "cell": cell.cell, "trace_id": task.trace_id, "digest": task.digest,
            "label": cell.label, "budget": cell.budget.label, "budget_tokens": tokens,
            "policy": {k: v for k, v in run.policy.items() if k != "label"}, "window": window,
            "output_reserve": manifest["output_reserve"], "price_notes": list(manifest.get("price_notes", [])),
            "totals": run.totals.to_json(), "sessions": [sessions[sid] for sid in order]}


def _arrow_table(cell: CellSpec, tokens: int | None, run: Any) -> Any:
    import pyarrow as pa

    from ctxsim.replay.meter import MONEY_FIELDS, Row, to_columns

    names = [f.name for f in dataclasses.fields(Row)]
    columns = to_columns(run.rows, Row)
    n = len(run.rows)
    data: dict[str, Any] = {  # the trace is the partition (`trace=<id>` folders), not a column
        "cell": pa.array([cell.cell] * n, pa.string()),
        "policy": pa.array([cell.label] * n, pa.string()),
        "budget": pa.array([cell.budget.label] * n, pa.string()),
        "budget_tokens": pa.array([tokens] * n, pa.int64()),
    }
    money = pa.decimal128(38, 18)
    for name, values in zip(names, columns, strict=True):
        if name in MONEY_FIELDS:  # exact: from the text of each Decimal (and 30x faster than from Decimals)
            data[name] = pa.array(values, pa.string()).cast(money)
        elif name == "rewrite":
            data[name] = pa.array(values, pa.bool_())
        elif name in ("session", "kind", "ts"):
            data[name] = pa.array(values, pa.string())
        else:
            data[name] = pa.array(values, pa.int64())
    return pa.table(data)


def _write_part(path: Path, tables: list[Any], summaries: list[str]) -> None:
    """One task's rows (all its cells), the cells' summaries in the file's metadata; written whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctxsim._support.fileio import atomic_write

    table = pa.concat_tables(tables)
    table = table.replace_schema_metadata({CELLS_META_KEY: ("[" + ",".join(summaries) + "]").encode()})
    with atomic_write(path, "wb") as out:
        pq.write_table(table, out, compression="zstd")


def read_parts(folder: Path) -> dict[str, str]:
    """cell id -> summary, from every finished file in a trace's folder (a file cut short is ignored: run again)."""
    import pyarrow.parquet as pq

    found: dict[str, str] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.parquet")):
        try:
            text = (pq.read_schema(path).metadata or {}).get(CELLS_META_KEY)
            summaries = json.loads(text) if text else []
        except (OSError, ValueError):
            continue
        for summary in summaries:
            found[summary["cell"]] = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return found


# ---------------------------------------------------------------- the parent side


@dataclass
class Plan:
    inputs: list[tuple[str, str, str]]  # (path, digest, trace id)
    policies: list[PolicyEntry]
    budgets: list[Budget]
    options: Any
    fmt: str | None
    cells: dict[tuple[int, str, str], str] = field(default_factory=dict)  # (input, label, budget) -> cell id
    tasks: list[TraceTask] = field(default_factory=list)
    done: dict[str, str] = field(default_factory=dict)  # cell id -> summary JSON (found in the output)
    skipped: int = 0
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (file, why): in the folders, not traces
    dates: Any = None  # sweep_dates.DateRange or None


def budgets_for(entry: PolicyEntry, budgets: Sequence[Budget]) -> list[Budget]:
    return list(budgets) if entry.takes_budget and budgets != [AS_WRITTEN] else [AS_WRITTEN]


def plan(paths: Sequence[str], specs: Sequence[str], budgets: Sequence[Budget], options: Any, fmt: str | None,
         out_dir: str | None, dates: Any = None) -> Plan:
    from ctxsim.policies.spec import resolve
    from ctxsim.pricing.prices import price_data_version

    entries = resolve_policies(specs)  # bad specs fail before any work, and so do bad absolute budgets
    left_out: list[tuple[str, str]] = []
    for entry in entries:
        for budget in budgets_for(entry, budgets):
            if budget.tokens is not None:
                with_budget(next(c for c in resolve([entry.spec]) if c.label == entry.label).policy, budget.tokens)
    files = expand_inputs(paths, fmt, left_out)
    prices = price_data_version()
    opts = options_json(options) | {"format": fmt} | ({"dates": dates.to_json()} if dates is not None else {})
    inputs = []
    for path in files:
        digest = file_digest(path)
        inputs.append((path, digest, trace_id(path, digest)))
    p = Plan(inputs, entries, list(budgets), options, fmt, left_out=sorted(set(left_out)), dates=dates)
    pending: dict[str, list[CellSpec]] = {}
    first_path: dict[str, tuple[str, str]] = {}
    existing: dict[str, dict[str, str]] = {}
    for i, (path, digest, tid) in enumerate(inputs):
        if out_dir is not None and tid not in existing:
            existing[tid] = read_parts(trace_folder(out_dir, tid))
        for entry in entries:
            for budget in budgets_for(entry, budgets):
                cid = cell_id(digest, entry, budget, opts, prices)
                p.cells[(i, entry.label, budget.label)] = cid
                if cid in p.done or any(c.cell == cid for c in pending.get(tid, ())):
                    continue
                if cid in existing.get(tid, {}):
                    p.done[cid] = existing[tid][cid]
                    p.skipped += 1
                    continue
                pending.setdefault(tid, []).append(CellSpec(cid, entry.spec, entry.label, budget))
                first_path.setdefault(tid, (path, digest))
    for tid, cells in pending.items():
        path, digest = first_path[tid]
        p.tasks.append(TraceTask(path, digest, tid, fmt, options, tuple(cells), out_dir, dates))
    return p


def execute(p: Plan, jobs: int, cluster: str | None = None,
            progress: Callable[[int], None] | None = None) -> None:
    """Run the plan's tasks (one process, a process pool, or a Dask cluster); fill `p.done`."""
    tasks = p.tasks
    if not tasks:
        return

    def take(task: TraceTask, result: list[str] | tuple[str, str]) -> None:
        if isinstance(result, tuple):
            raise CtxsimError(result[1])
        for cell, summary in zip(task.cells, result, strict=True):
            p.done[cell.cell] = summary
        if progress is not None:
            progress(len(task.cells))

    if cluster is not None:
        from ctxsim.replay.sweep_dask import run_on_cluster

        run_on_cluster(cluster, tasks, run_task, take, jobs)
        return
    from ctxsim._support.parallel import can_fork, run_ordered

    # the biggest files first, so that no long trace starts last and runs alone
    order = sorted(range(len(tasks)), key=lambda i: (-os.path.getsize(tasks[i].path) * len(tasks[i].cells), i))
    workers = max(1, min(jobs, len(tasks))) if can_fork() else 1

    def done(i: int, result: list[str] | tuple[str, str]) -> None:
        take(tasks[i], result)

    run_ordered(lambda i: run_task(tasks[i]), len(tasks), workers, done, order)


# ---------------------------------------------------------------- aggregation and tables


__all__ = ["LOSS_METERS", "Plan", "TraceTask", "execute", "plan", "run_task"]
