"""What a policy loses: recall misses, their re-fetch cost, probes (issue 13).

- `identifiers`: the extraction rules (what counts as an identifier), in one module;
- `index`: the identifiers of every recorded message, once per trace, shared by all runs;
- `meter`: `LossMeter`, an observer of the engine's edits that finds the misses;
- `refetch`: the misses' re-reads priced ("cost with re-fetches");
- `probes`: facts that must survive, checked at chosen requests and at the end;
- `verdict`: the miss allowance a starred policy must keep within.

`metered_run` replays one policy with a fresh meter and returns the run with `run.loss` set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxsim.loss.index import TraceIndex

SCHEMA = "ctxsim.loss/1"


def metered_run(replayer: Any, policy: Any, progress: Callable[[int], None] | None = None,
                index: TraceIndex | None = None, probes: Any = None) -> Any:
    """`replayer.run(policy)` with a loss meter observing it; the run's `loss` set and its re-fetches priced."""
    from ctxsim.loss.meter import LossMeter
    from ctxsim.loss.refetch import price

    meter = LossMeter(index if index is not None else TraceIndex(), replayer.trace.sessions, probes)
    run = replayer.run(policy, progress, observers=(meter,))
    run.loss = meter.finish()
    price(run, replayer)
    return run


__all__ = ["SCHEMA", "TraceIndex", "metered_run"]
