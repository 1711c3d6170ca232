"""The library entry points the CLI calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxsim._support.collector import gc_paused
from ctxsim._support.parallel import aside, at_most, plan_jobs, run_ordered
from ctxsim.engine import DEFAULT_RESERVE, PolicyRun, Replayer, Setup
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, read_traces
from ctxsim.formats.native import SessionStream
from ctxsim.model import Session, Trace
from ctxsim.params import as_dict
from ctxsim.policies import Policy
from ctxsim.policies.spec import Choice, resolve
from ctxsim.recorded import RecordedSum, calibration_entry, not_calibrated
from ctxsim.run import RunResult, add_recorded_gap, manifest, recorded_block
from ctxsim.tokens import DEFAULT, TokenCounter, get_tokenizer, label
from ctxsim.tokens.counting import Framing, MessageSizer

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1", "google": "gemini-2.5-pro",
                  "deepseek": "deepseek-chat"}


@dataclass(frozen=True)
class Options:
    """What the command line fixes for every run; None leaves it to the preset, then the trace."""

    provider: str | None = None
    model: str | None = None
    tokenizer: str | None = None
    cache: str | None = None
    cache_ttl: str | None = None
    window: int | None = None
    reserve: int = DEFAULT_RESERVE
    framing: Framing | None = None
    hidden_prefix_tokens: int = 0
    calibrate: bool = False  # fit the hidden prefix and tokenizer scale from the recorded usage first
    provider_rules: bool = True  # the provider drops earlier turns' reasoning as validate models it
    skip_bad_lines: bool = False
    jobs: int | None = None  # worker processes for the runs; None: one per core when the work is big enough
    loss: bool = False  # meter recall misses and re-fetches (ctxsim.loss) in every run
    probes: object = None  # ctxsim.loss.probes.ProbeSet checked in every run (loss metering on)
    loss_settings: tuple[tuple[str, object], ...] = ()  # the verdict's allowance (--max-misses, --miss-margin)
    include_content: bool = False  # the miss list shows identifiers (redacted) instead of digests


def _setup_for(choice: Choice, options: Options) -> tuple[str, Framing | None, Setup]:
    preset = choice.preset
    tokenizer = options.tokenizer or (preset.tokenizer if preset else None) or DEFAULT
    framing = options.framing or (preset.framing if preset else None)
    setup = Setup(
        provider=options.provider or (preset.provider if preset else None),
        model=options.model or (preset.model if preset else None),
        window=options.window or (preset.window if preset else None),
        output_reserve=options.reserve,
        cache=options.cache or (preset.cache if preset else None),
        cache_ttl=options.cache_ttl,
        pin_tools=preset.pin_tools if preset else (),
        hidden_prefix_tokens=options.hidden_prefix_tokens,
        provider_rules=options.provider_rules,
    )
    return tokenizer, framing, setup


def replay_choices(trace: Trace, path: str, choices: Sequence[Choice], options: Options,
                   providers: Sequence[str] = (),
                   progress: Callable[[int], None] | None = None) -> RunResult:
    """Replay `trace` under every choice (x provider); one token memo per tokenizer."""
    with gc_paused(), at_most(options.jobs):
        return _replay_all(trace, path, choices, options, providers, progress)


# About how long a replay under each policy takes against one under `none` (measured with
# benchmarks/bench_compare.py), by policy name; a policy not named here weighs 1. Only the order
# matters: a compare hands the heaviest runs to worker processes first. A scheduling hint of the
# runner's, not part of the policy contract.
REPLAY_WEIGHTS: dict[str, float] = {
    "scored": 7.4, "clear": 2.8, "hierarchical": 2.6, "mask": 2.3, "compact": 2.2, "tiered": 2.2, "zones": 2.2,
    "recent": 2.1, "oracle": 2.0, "server_compact": 1.9, "notes": 1.5, "truncate": 1.3, "amortized": 1.2,
}


def replay_weight(policy: Policy) -> float:
    """About how long a replay under `policy` takes against one under `none`: REPLAY_WEIGHTS, summed over
    a pipeline's stages."""
    stages = getattr(policy, "stages", None)
    if stages:
        return sum(replay_weight(stage) for stage in stages)
    return REPLAY_WEIGHTS.get(policy.name, 1.0)


def _replay_all(trace: Trace, path: str, choices: Sequence[Choice], options: Options,
                providers: Sequence[str], progress: Callable[[int], None] | None) -> RunResult:
    requests = sum(s.requests for s in trace.sessions)
    runs = len(choices) * max(1, len(providers))  # as many as `_tasks` makes
    jobs = plan_jobs(options.jobs, runs, requests * runs)
    metered = options.loss or options.probes is not None  # the identifiers of every message: once, before the runs
    built: Callable[[], list[tuple[Any, ...]]] | None = None
    if metered:
        from ctxsim.loss import TraceIndex
        from ctxsim.policies.oracle import share

        if jobs > 1:  # on several processes: built in one of them while this one counts the tokens (`_tasks`)
            built = aside(lambda: TraceIndex().built(trace.sessions), jobs)
    tasks = _tasks(trace, choices, options, providers)
    index = None
    if metered:
        index = TraceIndex().adopt(trace.sessions, built()) if built is not None else TraceIndex().prime(trace.sessions)
        share(index)  # an oracle (a run, or a stage of one) reads the same index, not one of its own

    def task(i: int) -> tuple[PolicyRun, list[str]]:
        choice, _, replayer = tasks[i]
        if index is not None:
            from ctxsim.loss import metered_run

            run = metered_run(replayer, choice.policy, progress if jobs == 1 else None, index, options.probes)
        else:
            run = replayer.run(choice.policy, progress if jobs == 1 else None)
        return run, sorted(replayer.pricer.notes)

    def done(i: int, result: tuple[PolicyRun, list[str]]) -> None:
        if progress is not None and jobs > 1:  # a worker's run arrives whole
            progress(requests)

    heaviest = sorted(range(len(tasks)), key=lambda i: -replay_weight(tasks[i][0].policy))
    return _result(tasks, run_ordered(task, len(tasks), jobs, done, heaviest), path, options=options)


_Task = tuple[Choice, "str | None", Replayer]


def _tasks(trace: Trace, choices: Sequence[Choice], options: Options, providers: Sequence[str],
           record: bool = True) -> list[_Task]:
    """A replayer per set-up (one token memo per tokenizer), a task per choice (x provider)."""
    counters: dict[str, TokenCounter] = {}
    replayers: dict[tuple, Replayer] = {}
    tasks: list[_Task] = []
    targets: list[tuple[str | None, str | None]] = [(None, None)]
    if providers:
        targets = []
        for entry in providers:
            name, _, given = entry.partition(":")
            if not given and name not in DEFAULT_MODELS and not options.model:
                raise CtxsimError(f"--providers: no default model for {name!r}; write {name}:MODEL")
            targets.append((name, given or options.model or DEFAULT_MODELS.get(name)))
    for provider, model in targets:
        for choice in choices:
            tokenizer, framing, setup = _setup_for(choice, options)
            if provider is not None:
                setup = replace(setup, provider=provider, model=model, cache=options.cache)
            key = (tokenizer, framing, setup)
            replayer = replayers.get(key)
            if replayer is None:  # counts the trace's texts (once per tokenizer) before any run starts
                counter = counters.get(tokenizer)
                if counter is None:
                    counter = counters[tokenizer] = TokenCounter(get_tokenizer(tokenizer))
                replayer = replayers[key] = Replayer(trace, MessageSizer(counter, framing), setup, record=record)
            tasks.append((choice, provider, replayer))
    return tasks


def _result(tasks: list[_Task], results: Sequence[tuple[PolicyRun, list[str]]], path: str,
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
    if opts.calibrate:
        from ctxsim.analysis.calibrate import calibrated

        trace, framing, setup, calibration = calibrated(trace, opts.tokenizer or DEFAULT, opts.framing,
                                                        Setup(hidden_prefix_tokens=opts.hidden_prefix_tokens),
                                                        reports=reports)  # skipped lines re-anchor the replay
        opts = replace(opts, framing=framing, hidden_prefix_tokens=setup.hidden_prefix_tokens)
    result = _replay(trace, path, choices, opts, providers, show_progress)
    result.manifest["calibration"] = calibration_entry(trace, calibration) if opts.calibrate else not_calibrated()
    if calibration is not None:  # the error `none` really has: fitted on each session's first half, scored on the rest
        from ctxsim.analysis.predict import manifest_entry

        result.manifest["calibration"]["predicted"] = manifest_entry(read, opts.tokenizer or DEFAULT, reports)
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
    from ctxsim.engine import trace_model
    from ctxsim.pricing import Pricer
    from ctxsim.recorded import UsageCount
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
        tasks = _tasks(head, choices, opts, (), record=False)
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
    result = _result(tasks, results, path, bill, options=opts)
    trace = result.manifest["trace"]
    trace["digest"], trace["sessions"], trace["messages"] = sessions.digest, count, messages
    if opts.calibrate and usage.requests >= MIN_REQUESTS:  # may_record_usage said there was none
        raise CtxsimError(f"{path}: internal error: a streamed replay found usage to calibrate on")
    result.manifest["calibration"] = usage.entry() if opts.calibrate else not_calibrated()
    return result


def _stream_loss(tasks: list[_Task], results: list[tuple[PolicyRun, list[str]]], meters: list) -> None:
    """The loss reports of a streamed replay, their re-fetches priced at the primary model (the sessions are gone)."""
    from ctxsim.loss.refetch import price

    for (_, _, replayer), (run, _), meter in zip(tasks, results, meters, strict=True):
        run.loss = meter.finish()
        price(run, replayer)


def _chain(held: list[Session], rest: Iterator[Session]) -> Iterator[Session]:
    while held:
        yield held.pop(0)
    yield from rest
