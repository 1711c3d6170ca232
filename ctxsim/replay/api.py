"""The library entry points the CLI calls: read a trace, calibrate it, replay it (`choices`), say what it means."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ctxsim._support.collector import gc_paused
from ctxsim._support.parallel import at_most
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, read_traces
from ctxsim.formats.native import SessionStream
from ctxsim.model import Session, Trace
from ctxsim.policies.spec import Choice, resolve
from ctxsim.replay import runner
from ctxsim.replay.choices import replay_choices, run_result
from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.plan import Options, ReplayTask, replay_tasks
from ctxsim.replay.recorded import RecordedSum, calibration_entry, not_calibrated
from ctxsim.replay.run import RunResult


def replay_trace(path: str, policy_specs: Sequence[str], *, fmt: str | None = None,
                 providers: Sequence[str] = (), options: Options | None = None, show_progress: bool = False,
                 stream: bool = False, **kwargs: Any) -> RunResult:  # kwargs: Options' fields
    """Read `path`, replay it under every policy spec, return the run artefact.

    With `show_progress`, a progress bar is drawn on stderr when it is a terminal (never on stdout).
    With `stream`, a native JSONL file is read and replayed one session at a time (memory bounded by the
    largest session, not the file; the runs go one after the other in this process): the same artefact.
    """
    opts = options or Options(**kwargs)
    choices = resolve(policy_specs)  # bad specs fail before any work
    if not choices:
        raise CtxsimError("no policies to replay")
    if stream and not providers:
        from ctxsim.formats.native import stream_trace

        # A calibration fits on the whole trace: streamed only when there is nothing to fit (no usage).
        sessions = stream_trace(path, fmt, opts.skip_bad_lines, unless_usage=opts.calibrate)
        if sessions is not None:
            return _replay_stream(sessions, path, choices, opts, show_progress)
    reports: list[FileReport] = []
    trace = read_traces([path], fmt, skip_bad_lines=opts.skip_bad_lines, report=reports)
    calibration = None
    read = trace
    if opts.calibrate:  # skipped lines re-anchor the replay
        trace, opts, calibration = runner.calibrate(trace, opts, reports)
    result = _replay(trace, path, choices, opts, providers, show_progress)
    result.manifest["calibration"] = calibration_entry(trace, calibration) if opts.calibrate else not_calibrated()
    if calibration is not None:  # the error `none` really has: fitted on each session's first half, scored on the rest
        from ctxsim.analysis.predict import manifest_entry
        from ctxsim.tokens import DEFAULT

        result.manifest["calibration"]["predicted"] = manifest_entry(read, opts.tokenizer or DEFAULT, reports)
    if "loss" in result.manifest:  # the verdict weighs the loss meter: how it scored on this trace's own compactions
        from ctxsim.loss.compaction import scored_on
        from ctxsim.tokens import DEFAULT

        meter, said = scored_on([read], opts.tokenizer or DEFAULT)
        if meter is not None:  # only then: the artefact of a trace that recorded no compaction keeps its bytes
            result.manifest["loss"] = {**result.manifest["loss"], "meter_scored": meter, "meter_note": said}
    return result


def _replay(trace: Trace, path: str, choices: Sequence[Choice], opts: Options, providers: Sequence[str],
            show_progress: bool) -> RunResult:
    from ctxsim.reports._progress import progress_bar

    runs = len(choices) * max(1, len(providers))
    total = sum(s.requests for s in trace.sessions) * runs
    if not show_progress:
        return replay_choices(trace, path, choices, opts, providers)
    with progress_bar(total, f"replaying {runs} run(s)") as advance:
        return replay_choices(trace, path, choices, opts, providers, advance)


def _replay_stream(sessions: SessionStream, path: str, choices: Sequence[Choice], opts: Options,
                   show_progress: bool) -> RunResult:
    """`replay_choices` on a stream of sessions: each session is counted once per tokenizer, replayed under
    every choice, then let go. The replayers' set-up (provider, model, window) comes from the first sessions
    that name them, as `resolve` takes it from a whole trace: the sessions before those are held until then
    (usually none: the first session names them)."""
    from ctxsim.analysis.calibrate import MIN_REQUESTS
    from ctxsim.pricing.prices import Pricer
    from ctxsim.replay.engine import trace_model
    from ctxsim.replay.recorded import UsageCount
    from ctxsim.reports._progress import progress_bar

    stream = iter(sessions)
    held: list[Session] = []
    window = sessions.first_window()  # the window resolve would take: the first session's that has one
    for session in stream:
        held.append(session)
        if trace_model(Trace(sessions.name, tuple(held), "")) != (None, None):
            break
    # held: up to the first session naming the model or provider; an empty session after them carries the window
    head = Trace(sessions.name, tuple(held) + ((Session(id="", window=window),) if window else ()), "")
    runs = len(choices)
    with gc_paused(), at_most(opts.jobs), progress_bar(None, f"replaying {runs} run(s)",
                                                        enabled=None if show_progress else False) as advance:
        tasks = replay_tasks(head, choices, opts, (), record=False)
        replayers = list(dict.fromkeys(replayer for _, _, replayer in tasks))
        counters = list(dict.fromkeys(replayer.sizer.counter for replayer in replayers))
        states = [replayer.start() for _, _, replayer in tasks]
        meters: list = []
        if opts.loss or opts.probes is not None:
            from ctxsim.loss import TraceIndex
            from ctxsim.loss.meter import LossMeter

            index = TraceIndex()
            meters = [LossMeter(index, (), opts.probes) for _ in tasks]
            for state, meter in zip(states, meters, strict=True):
                state.observers = (meter,)
        first = tasks[0][2].pricer  # the bill's fallback price, as `manifest` takes it (a copy: its own notes)
        bill = RecordedSum(Pricer(first.provider, first.model))
        usage = UsageCount()
        count = messages = 0
        for session in _chain(held, stream):
            count += 1
            messages += len(session.messages)
            bill.add(session)
            usage.add(session)
            recorded = {id(replayer): replayer.recorded(session) for replayer in replayers}
            for meter in meters:
                meter.push(session)
            for (choice, _, replayer), state in zip(tasks, states, strict=True):
                replayer.run_session(session, recorded[id(replayer)], choice.policy, state, advance)
            del recorded
            for counter in counters:  # the next sessions hold other texts: keep no counts of this one's
                counter.forget()
            for replayer in replayers:
                replayer.forget()
            if meters:
                index.forget(session)
        held.clear()
        results = [(replayer.finish(choice.policy, state), sorted(replayer.pricer.notes))
                   for (choice, _, replayer), state in zip(tasks, states, strict=True)]
        if meters:
            _stream_loss(tasks, results, meters)
    result = run_result(tasks, results, path, bill, options=opts)
    trace = result.manifest["trace"]
    trace["digest"], trace["sessions"], trace["messages"] = sessions.digest, count, messages
    if opts.calibrate and usage.requests >= MIN_REQUESTS:  # may_record_usage said there was none
        raise CtxsimError(f"{path}: internal error: a streamed replay found usage to calibrate on")
    result.manifest["calibration"] = usage.entry() if opts.calibrate else not_calibrated()
    return result


def _stream_loss(tasks: list[ReplayTask], results: list[tuple[PolicyRun, list[str]]], meters: list) -> None:
    """The loss reports of a streamed replay, their re-fetches priced at the primary model (the sessions are gone)."""
    from ctxsim.loss.refetch import price

    for (_, _, replayer), (run, _), meter in zip(tasks, results, meters, strict=True):
        run.loss = meter.finish()
        price(run, replayer)


def _chain(held: list[Session], rest: Iterator[Session]) -> Iterator[Session]:
    while held:
        yield held.pop(0)
    yield from rest


__all__ = ["Options", "replay_choices", "replay_trace", "run_result"]  # Options: the planner's, named here too
