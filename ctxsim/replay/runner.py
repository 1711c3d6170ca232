"""The runner: what every command that replays does with a trace and its runs, written once.

`replay` and `compare` (`api.replay_trace`), the sweep's cells (`sweep.run_task`, on the process pool or a
Dask worker) and `tune`'s trials (`tune.search`) replay through these three steps; what to run, and on which
replayer, is the planner's (`replay.plan`):

- `calibrate`: fit the hidden prefix, the token scale and the framing on the usage the trace recorded, once
  per trace, and give the options every run on that trace takes;
- `loss_index`: the loss meter's identifier index of a trace, built once and shared by every run on it (the
  oracle, as a run or as a stage, reads the same one; forked workers inherit it);
- `run`: one policy on one replayer, loss-metered when an index is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxsim.loss import TraceIndex
    from ctxsim.model import Trace
    from ctxsim.policies import Policy
    from ctxsim.replay.engine import PolicyRun, Replayer
    from ctxsim.replay.plan import Options


def calibrate(trace: Trace, options: Options, reports: Sequence[Any] | None = None) -> tuple[Trace, Options, Any]:
    """The trace as the replay reads it, the options with the fitted framing and hidden prefix, and the fit
    (None when the trace recorded too little usage). `reports`: the files' skipped lines, which re-anchor it."""
    from ctxsim.analysis.calibrate import calibrated
    from ctxsim.replay.engine import Setup
    from ctxsim.tokens import DEFAULT

    trace, framing, setup, fit = calibrated(trace, options.tokenizer or DEFAULT, options.framing,
                                            Setup(hidden_prefix_tokens=options.hidden_prefix_tokens), reports=reports)
    return trace, replace(options, framing=framing, hidden_prefix_tokens=setup.hidden_prefix_tokens), fit


def loss_index(trace: Trace, built: Any = None) -> TraceIndex:
    """The identifier index of `trace`, shared with the oracle; `built`: its parts made in another process."""
    from ctxsim.loss import TraceIndex
    from ctxsim.policies.oracle import share

    index = TraceIndex().adopt(trace.sessions, built) if built is not None else TraceIndex().prime(trace.sessions)
    share(index)
    return index


def run(replayer: Replayer, policy: Policy, index: TraceIndex | None = None, probes: Any = None,
        progress: Callable[[int], None] | None = None) -> PolicyRun:
    """`policy` replayed by `replayer`; with an `index`, a loss meter (and the `probes`) watching it."""
    if index is None:
        return replayer.run(policy, progress)
    from ctxsim.loss import metered_run

    result: PolicyRun = metered_run(replayer, policy, progress, index, probes)
    return result
