"""The library entry points the CLI calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ctxsim.collector import gc_paused
from ctxsim.counting import Framing, MessageSizer
from ctxsim.engine import DEFAULT_RESERVE, PolicyRun, Replayer, Setup
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, read_traces
from ctxsim.model import Trace
from ctxsim.parallel import at_most, plan_jobs, run_ordered
from ctxsim.params import as_dict
from ctxsim.policies import replay_weight
from ctxsim.policyspec import Choice, resolve
from ctxsim.run import RunResult, add_recorded_gap, manifest
from ctxsim.tokens import DEFAULT, TokenCounter, get_tokenizer, label

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


def _replay_all(trace: Trace, path: str, choices: Sequence[Choice], options: Options,
                providers: Sequence[str], progress: Callable[[int], None] | None) -> RunResult:
    counters: dict[str, TokenCounter] = {}
    replayers: dict[tuple, Replayer] = {}
    tasks: list[tuple[Choice, str | None, Replayer]] = []
    targets: list[tuple[str | None, str | None]] = [(None, None)]
    if providers:
        targets = []
        for entry in providers:
            name, _, model = entry.partition(":")
            if not model and name not in DEFAULT_MODELS and not options.model:
                raise CtxsimError(f"--providers: no default model for {name!r}; write {name}:MODEL")
            targets.append((name, model or options.model or DEFAULT_MODELS.get(name)))
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
                replayer = replayers[key] = Replayer(trace, MessageSizer(counter, framing), setup)
            tasks.append((choice, provider, replayer))
    requests = sum(s.requests for s in trace.sessions)
    jobs = plan_jobs(options.jobs, len(tasks), requests * len(tasks))

    def task(i: int) -> tuple[PolicyRun, list[str]]:
        choice, _, replayer = tasks[i]
        run = replayer.run(choice.policy, progress if jobs == 1 else None)
        return run, sorted(replayer.pricer.notes)

    def done(i: int, result: tuple[PolicyRun, list[str]]) -> None:
        if progress is not None and jobs > 1:  # a worker's run arrives whole
            progress(requests)

    heaviest = sorted(range(len(tasks)), key=lambda i: -replay_weight(tasks[i][0].policy))
    notes: set[str] = set()
    runs: list[PolicyRun] = []
    for (choice, provider, replayer), (run, run_notes) in zip(tasks, run_ordered(task, len(tasks), jobs, done,
                                                                                 heaviest)):
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
    add_recorded_gap(result)
    return result


def replay_trace(path: str, policy_specs: Sequence[str], *, fmt: str | None = None,
                 providers: Sequence[str] = (), options: Options | None = None, show_progress: bool = False,
                 **kwargs: object) -> RunResult:
    """Read `path`, replay it under every policy spec, return the run artefact.

    With `show_progress`, a progress bar is drawn on stderr when it is a terminal (never on stdout).
    """
    opts = options or Options(**kwargs)  # type: ignore[arg-type]
    choices = resolve(policy_specs)  # bad specs fail before any work
    if not choices:
        raise CtxsimError("no policies to replay")
    reports: list[FileReport] = []
    trace = read_traces([path], fmt, skip_bad_lines=opts.skip_bad_lines, report=reports)
    calibration = None
    if opts.calibrate:
        from ctxsim.calibrate import calibrated

        trace, framing, setup, calibration = calibrated(trace, opts.tokenizer or DEFAULT, opts.framing,
                                                        Setup(hidden_prefix_tokens=opts.hidden_prefix_tokens),
                                                        reports=reports)  # skipped lines re-anchor the replay
        opts = replace(opts, framing=framing, hidden_prefix_tokens=setup.hidden_prefix_tokens)
    result = _replay(trace, path, choices, opts, providers, show_progress)
    from ctxsim.recorded import calibration_entry, not_calibrated

    result.manifest["calibration"] = calibration_entry(trace, calibration) if opts.calibrate else not_calibrated()
    return result


def _replay(trace: Trace, path: str, choices: Sequence[Choice], opts: Options, providers: Sequence[str],
            show_progress: bool) -> RunResult:
    from ctxsim.render.progress import progress_bar

    runs = len(choices) * max(1, len(providers))
    total = sum(s.requests for s in trace.sessions) * runs
    if not show_progress:
        return replay_choices(trace, path, choices, opts, providers)
    with progress_bar(total, f"replaying {runs} run(s)") as advance:
        return replay_choices(trace, path, choices, opts, providers, advance)
