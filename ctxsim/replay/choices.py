"""The replay of a trace already read: every choice (x provider) on one process or several, each run labelled
with its choice and set-up, into one run artefact (`replay_choices`, `run_result`). What reads a trace and
says what the runs mean (`api`) and what checks a product's own compactions (`analysis.preset_check`,
`loss.compaction`) both call it; it calls neither."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxsim._support.collector import gc_paused
from ctxsim._support.parallel import aside, at_most, plan_jobs, run_ordered
from ctxsim.model import Trace
from ctxsim.params import as_dict
from ctxsim.policies.spec import Choice
from ctxsim.replay import runner
from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.plan import Options, ReplayTask, heaviest_first, replay_tasks
from ctxsim.replay.recorded import RecordedSum
from ctxsim.replay.run import RunResult, add_recorded_gap, manifest, recorded_block
from ctxsim.tokens import label


def replay_choices(trace: Trace, path: str, choices: Sequence[Choice], options: Options,
                   providers: Sequence[str] = (),
                   progress: Callable[[int], None] | None = None) -> RunResult:
    """Replay `trace` under every choice (x provider); one token memo per tokenizer."""
    with gc_paused(), at_most(options.jobs):
        return _replay_all(trace, path, choices, options, providers, progress)


def _replay_all(trace: Trace, path: str, choices: Sequence[Choice], options: Options,
                providers: Sequence[str], progress: Callable[[int], None] | None) -> RunResult:
    requests = sum(s.requests for s in trace.sessions)
    runs = len(choices) * max(1, len(providers))  # as many as `replay_tasks` makes
    jobs = plan_jobs(options.jobs, runs, requests * runs)
    metered = options.loss or options.probes is not None  # the identifiers of every message: once, before the runs
    built: Callable[[], list[tuple[Any, ...]]] | None = None
    if metered and jobs > 1:  # on several processes: built in one of them while this one counts the tokens
        from ctxsim.loss import TraceIndex

        built = aside(lambda: TraceIndex().built(trace.sessions), jobs)
    tasks = replay_tasks(trace, choices, options, providers)
    index = runner.loss_index(trace, built() if built is not None else None) if metered else None

    def task(i: int) -> tuple[PolicyRun, list[str]]:
        choice, _, replayer = tasks[i]
        run = runner.run(replayer, choice.policy, index, options.probes, progress if jobs == 1 else None)
        return run, sorted(replayer.pricer.notes)

    def done(i: int, result: tuple[PolicyRun, list[str]]) -> None:
        if progress is not None and jobs > 1:  # a worker's run arrives whole
            progress(requests)

    return run_result(tasks, run_ordered(task, len(tasks), jobs, done, heaviest_first(tasks)), path, options=options)


def run_result(tasks: list[ReplayTask], results: Sequence[tuple[PolicyRun, list[str]]], path: str,
               recorded: RecordedSum | None = None, options: Options | None = None) -> RunResult:
    """The run artefact of finished tasks: each run labelled with its choice and set-up, price notes joined.
    `recorded`: the recorded bill added up as the sessions streamed (else it is the replayed trace's)."""
    notes: set[str] = set()
    runs: list[PolicyRun] = []
    for (choice, provider, replayer), (run, run_notes) in zip(tasks, results, strict=True):
        notes.update(run_notes)
        run.policy["label"] = choice.label if provider is None else f"{choice.label} @ {provider}"
        if choice.preset is not None:
            run.policy["preset"] = choice.preset.name
        r = replayer.resolved
        run.policy["setup"] = {
            "provider": r.provider, "model": r.model_id, "window": r.window,
            "tokenizer": label(replayer.sizer.counter.tokenizer),
            "cache_model": {"name": r.cache.name, "params": as_dict(r.cache.params)},
            "framing": as_dict(replayer.sizer.framing),
        }
        runs.append(run)
    result = RunResult(manifest(tasks[0][2], path), runs)
    result.manifest["price_notes"] = sorted(notes)
    if recorded is not None:
        first = tasks[0][2]
        result.manifest["recorded"] = recorded_block(recorded.result(), first.trace, first.pricer)
    add_recorded_gap(result)
    if options is not None and any(run.loss is not None for run in runs):
        from ctxsim.loss.verdict import manifest_entry

        result.manifest["loss"] = manifest_entry(options)
    return result


__all__ = ["replay_choices", "run_result"]
