"""The planner: what a replay runs, before anything runs.

Every command that replays (`replay`, `compare`, the sweep's cells, `tune`'s trials) turns its policy
choices and options into tasks here: a task is one choice (x provider) on a `Replayer`, and tasks that
share a set-up (tokenizer, framing, provider, model, window, cache) share one replayer, so a trace's texts
are counted once per tokenizer before any run starts. The weights order the tasks for the worker
processes, the heaviest first. What each task does is the runner's (`replay.runner`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ctxsim.errors import CtxsimError
from ctxsim.policies import Policy
from ctxsim.policies.spec import Choice
from ctxsim.replay.engine import DEFAULT_RESERVE, Replayer, Setup
from ctxsim.tokens import DEFAULT, TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

if TYPE_CHECKING:
    from ctxsim.model import Trace

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1", "google": "gemini-2.5-pro",
                  "deepseek": "deepseek-chat"}

ReplayTask = tuple[Choice, "str | None", Replayer]


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


def setup_for(choice: Choice, options: Options) -> tuple[str, Framing | None, Setup]:
    """The tokenizer, framing and set-up of a choice: the options' where given, else its preset's."""
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


def replay_tasks(trace: Trace, choices: Sequence[Choice], options: Options, providers: Sequence[str],
                 record: bool = True, counters: dict[str, TokenCounter] | None = None) -> list[ReplayTask]:
    """A replayer per set-up (one token memo per tokenizer, `counters` when given), a task per choice
    (x provider)."""
    counters = {} if counters is None else counters
    replayers: dict[tuple, Replayer] = {}
    tasks: list[ReplayTask] = []
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
            tokenizer, framing, setup = setup_for(choice, options)
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


def replay_weight(policy: Policy) -> float:
    """About how long a replay under `policy` takes against one under `none` (each policy's `weight`, in its
    registration; measured with benchmarks/bench_compare.py), summed over a pipeline's stages. Only the
    order matters: the heaviest runs go to the worker processes first."""
    from ctxsim.policies import policies

    stages = getattr(policy, "stages", None)
    if stages:
        return sum(replay_weight(stage) for stage in stages)
    info = policies().get(policy.name)
    return 1.0 if info is None else info.weight


def heaviest_first(tasks: Sequence[ReplayTask]) -> list[int]:
    """The tasks' indexes, the heaviest first (ties in the given order)."""
    return sorted(range(len(tasks)), key=lambda i: -replay_weight(tasks[i][0].policy))
