"""`ctxsim tune`: search a policy family's parameters on one or many traces for the cheapest setting
that loses no more than the user allows.

Each trial is one setting of the family's space (ctxsim.tune.space), replayed on every trace with
the loss meter watching (ctxsim.loss): per trial the open-loop cost, the cost with re-fetches (every
recall miss whose source was a tool result charged as a re-read), the recall misses, the peak
context. A trial *overflows* when any request of any trace holds more than the limit: the budget
when `--budget` is given, else the window minus the output reserve. The oracle (policies/oracle.py)
runs at the same limit on every trace: its misses are the bound no setting can beat.

The recommendation is the cheapest trial (cost with re-fetches; then fewer misses; then the earlier
trial) that never overflows and whose misses are at most `max_misses` (default: the fewest any
trial that never overflows reaches). The Pareto front is taken over the trials that never overflow:
a trial is on it when no other is at least as good on both cost with re-fetches and misses and
better on one.

The traces are read, calibrated and counted once (one Replayer and one loss index each); the trials
run on the process pool (`_support.parallel.run_ordered`: results in trial order, so the output is
the same for any `--jobs`). Same traces, family, budget, trials and seed: byte-identical outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ctxsim.errors import CtxsimError, ParameterError
from ctxsim.loss.refetch import ASSUMPTION as REFETCH_ASSUMPTION
from ctxsim.tune.space import concrete, settings, shown


@dataclass
class Target:
    """One trace, ready for any number of runs."""

    path: str
    trace: Any  # ctxsim.model.Trace
    replayer: Any  # ctxsim.replay.engine.Replayer
    window: int
    limit: int  # a request's context must stay at most this: the budget, else the window minus the reserve
    index: Any  # the loss meter's per-trace identifier index


@dataclass(frozen=True)
class Measured:
    """One policy on the traces, summed (overflow: on any trace)."""

    cost_usd: Decimal
    refetch_cost_usd: Decimal  # the cost with re-fetches
    misses: int
    distinct: int  # distinct identifiers missed (per trace, summed)
    refetches: int  # misses whose source was a tool result
    peak_context_tokens: int
    over: bool
    events: int

    @staticmethod
    def total(parts: Sequence[Measured]) -> Measured:
        return Measured(sum((p.cost_usd for p in parts), Decimal(0)),
                        sum((p.refetch_cost_usd for p in parts), Decimal(0)),
                        sum(p.misses for p in parts), sum(p.distinct for p in parts),
                        sum(p.refetches for p in parts), max((p.peak_context_tokens for p in parts), default=0),
                        any(p.over for p in parts), sum(p.events for p in parts))


@dataclass
class Trial:
    number: int  # 1-based, in the order tried
    setting: dict[str, Any]
    params: list[dict[str, Any]]  # the concrete values on each trace
    measured: Measured | None = None
    error: str | None = None  # a setting the policy refuses at this budget (e.g. server_compact under 50k)

    @property
    def label(self) -> str:
        return shown(self.setting)


@dataclass
class Outcome:
    family: str
    how: str  # grid or random, and how many
    trials: list[Trial]
    bound: Measured  # the oracle at the same limit
    max_misses: int | None  # as given (None: the fewest a feasible trial reaches)
    allowed: int | None  # the misses the recommendation may have
    front: list[int]  # indices into trials, by misses then cost
    recommended: int | None  # index into trials
    targets: list[Target] = field(repr=False, default_factory=list)

    def feasible(self) -> list[int]:
        return [i for i, t in enumerate(self.trials) if t.measured is not None and not t.measured.over]


# ---------------------------------------------------------------- reading the traces


def load_targets(paths: Sequence[str], options: Any, fmt: str | None, budget: Any | None) -> list[Target]:
    """Read, calibrate (as compare does) and count every trace once; the limit each trial is held to."""
    from ctxsim.formats import read_traces
    from ctxsim.policies import make_policy
    from ctxsim.policies.spec import Choice
    from ctxsim.replay import runner
    from ctxsim.replay.plan import replay_tasks

    counters: dict[str, Any] = {}
    out: list[Target] = []
    for path in paths:
        trace = read_traces([path], fmt, skip_bad_lines=options.skip_bad_lines)
        opts = options
        if opts.calibrate:
            trace, opts, _ = runner.calibrate(trace, opts)
        [(_, _, replayer)] = replay_tasks(trace, [Choice("none", make_policy("none"))], opts, (), counters=counters)
        window = replayer.resolved.window
        reserve = replayer.setup.output_reserve
        if budget is None:
            limit = window - reserve
            if limit <= 0:
                raise CtxsimError(f"{path}: the output reserve ({reserve:,}) leaves nothing of the "
                                  f"{window:,}-token window; give --budget or a smaller --reserve")
        else:
            limit = budget.resolve(window)
            if limit <= 0:
                raise CtxsimError(f"{path}: --budget {budget.label} of a {window:,}-token window is 0 tokens")
        out.append(Target(path, trace, replayer, window, limit, runner.loss_index(trace)))
    return out


# ---------------------------------------------------------------- measuring one run


def measure(target: Target, policy: Any, progress: Callable[[int], None] | None = None) -> Measured:
    """Replay `policy` on `target` with a fresh loss meter watching; its re-fetches priced."""
    from ctxsim.replay import runner

    run = runner.run(target.replayer, policy, target.index, progress=progress)
    loss = run.loss
    assert loss is not None
    peak = run.totals.peak_context_tokens
    return Measured(run.totals.cost_usd, run.totals.cost_usd + loss.refetch_cost_usd, loss.recall_misses,
                    loss.distinct_identifiers, len(loss.refetches), peak, peak > target.limit, run.totals.events)


# ---------------------------------------------------------------- the search


def _policy(family: str, values: dict[str, Any]) -> Any:
    from ctxsim.policies import make_policy

    return make_policy(family, values)


def prepare(family: str, trials: int, seed: int, targets: Sequence[Target]) -> tuple[list[Trial], str]:
    """The trials, each with its concrete values per trace; a setting the policy refuses keeps its error."""
    chosen, how = settings(family, trials, seed)
    out = []
    for number, setting in enumerate(chosen, 1):
        params = [concrete(setting, t.limit) for t in targets]
        trial = Trial(number, setting, params)
        for values in params:
            try:
                _policy(family, values)
            except ParameterError as exc:
                trial.error = str(exc).split(": ", 1)[-1]
                break
        out.append(trial)
    return out, how


def run_trials(family: str, trials: list[Trial], targets: Sequence[Target], jobs: int | None,
               progress: Callable[[int], None] | None = None) -> Measured:
    """Measure every valid trial on every trace, and the oracle at the same limits; the oracle's total."""
    from ctxsim._support.parallel import at_most, plan_jobs, run_ordered

    cells: list[tuple[int, int]] = [(-1, j) for j in range(len(targets))]  # -1: the oracle
    cells += [(i, j) for i, t in enumerate(trials) if t.error is None for j in range(len(targets))]
    requests = [sum(s.requests for s in t.trace.sessions) for t in targets]

    def task(k: int) -> Measured:
        i, j = cells[k]
        policy = _policy("oracle", {"budget": targets[j].limit}) if i < 0 else _policy(family, trials[i].params[j])
        return measure(targets[j], policy)

    def done(k: int, run_result: Measured) -> None:
        if progress is not None:
            progress(requests[cells[k][1]])

    with at_most(jobs):
        workers = plan_jobs(jobs, len(cells), sum(requests[j] for _, j in cells))
        # the longest traces first, so that no long run starts last and runs alone
        order = sorted(range(len(cells)), key=lambda k: (-requests[cells[k][1]], k))
        results = run_ordered(task, len(cells), workers, done, order)
    per_trial: dict[int, list[Measured]] = {}
    for (i, _), result in zip(cells, results, strict=True):
        per_trial.setdefault(i, []).append(result)
    for i, parts in per_trial.items():
        if i >= 0:
            trials[i].measured = Measured.total(parts)
    return Measured.total(per_trial[-1])


def front_of(trials: Sequence[Trial], among: Sequence[int]) -> list[int]:
    """The Pareto front (misses, cost with re-fetches) of the trials `among`, by misses then cost."""
    points = {i: (trials[i].measured.misses, trials[i].measured.refetch_cost_usd)  # type: ignore[union-attr]
              for i in among}
    out = [i for i, (m, c) in points.items()
           if not any(m2 <= m and c2 <= c and (m2 < m or c2 < c) for j, (m2, c2) in points.items() if j != i)]
    return sorted(out, key=lambda i: (points[i][0], points[i][1], i))


def recommend(trials: Sequence[Trial], among: Sequence[int], allowed: int | None) -> int | None:
    ok = [i for i in among if allowed is None or trials[i].measured.misses <= allowed]  # type: ignore[union-attr]
    if not ok:
        return None
    return min(ok, key=lambda i: (trials[i].measured.refetch_cost_usd, trials[i].measured.misses, i))  # type: ignore[union-attr]


def tune(targets: list[Target], family: str, chosen: list[Trial], how: str, max_misses: int | None,
         jobs: int | None = None, progress: Callable[[int], None] | None = None) -> Outcome:
    """Run the trials `prepare` made; the front and the recommendation."""
    bound = run_trials(family, chosen, targets, jobs, progress)
    feasible = [i for i, t in enumerate(chosen) if t.measured is not None and not t.measured.over]
    allowed = max_misses
    if allowed is None and feasible:
        allowed = min(chosen[i].measured.misses for i in feasible)  # type: ignore[union-attr]
    front = front_of(chosen, feasible)
    best = recommend(chosen, feasible, allowed)
    return Outcome(family, how, chosen, bound, max_misses, allowed, front, best, targets)


def cells_of(trials: Sequence[Trial], targets: Sequence[Target]) -> int:
    """The requests the search replays: for the progress bar."""
    valid = sum(1 for t in trials if t.error is None) + 1
    return valid * sum(sum(s.requests for s in t.trace.sessions) for t in targets)


__all__ = [
    "REFETCH_ASSUMPTION",
    "Measured",
    "Outcome",
    "Target",
    "Trial",
    "load_targets",
    "measure",
    "prepare",
    "run_trials",
    "tune",
]
