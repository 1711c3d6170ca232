"""Loss metering (ctxsim.loss) on a compare of 8 policies: what it adds, and how it grows with the trace.

Prints, measured in this one run (best of `--repeat`, interleaved so a slow spell of the machine falls
on both alike; every compare starts as a fresh process would, with nothing classified yet: the extraction
rules' memos, which live as long as the process, are emptied first):

- the time of a compare of the 8 policies of bench_compare on the 2,400-turn synthetic trace with loss
  metering (the identifier index built once, a meter observing every run) divided by the same compare
  without it. Target <= 1.30. Both in one process (`-j 1`) and on one process per core (where the index
  is built on a process of its own while this one counts the trace's tokens); the best of the repeats,
  and their medians (a slow spell of a shared machine moves the best less than the median);
- the loss metering's own time (metered minus plain compare, one process) on the 2,400-turn trace
  divided by the same on a 600-turn one: 4x the turns, linear is 4.0;
- the time to build the identifier index alone (the extraction, once per trace);
- the same in CPU seconds (this process and the workers it waited for), and the load average: on a shared
  machine the wall times swing with the others' load, the CPU far less.

Usage: python benchmarks/bench_loss.py [--turns 2400] [--small 600] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench_compare import POLICIES
from bench_replay import write_trace

from ctxsim.api import Options, replay_choices
from ctxsim.formats import read_trace
from ctxsim.loss import TraceIndex, identifiers
from ctxsim.policies.spec import resolve
from ctxsim.tokens import get_tokenizer


def compare_once(path: Path, loss: bool, jobs: int | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and of the workers it waited for) of one compare."""
    identifiers.forget()  # as a fresh process: no chunk, line or quote classified by an earlier repeat
    before = os.times()
    start = time.perf_counter()
    trace = read_trace(str(path))
    result = replay_choices(trace, str(path), resolve(POLICIES), Options(jobs=jobs, loss=loss))
    seconds = time.perf_counter() - start
    after = os.times()
    if loss:
        assert all(run.loss is not None for run in result.runs)
    del result
    return seconds, sum(after[:4]) - sum(before[:4])


def index_once(path: Path) -> float:
    trace = read_trace(str(path))
    identifiers.forget()
    start = time.perf_counter()
    TraceIndex().prime(trace.sessions)
    return time.perf_counter() - start


def measure(path: Path, repeat: int, parallel: bool) -> dict[str, float]:
    """Best of `repeat` of each (wall; `KEY cpu`: CPU; `KEY median`: the median wall), interleaved."""
    best: dict[str, float] = {}
    walls: dict[str, list[float]] = {}

    def keep(key: str, seconds: tuple[float, float]) -> None:
        best[key] = min(best.get(key, math.inf), seconds[0])
        best[f"{key} cpu"] = min(best.get(f"{key} cpu", math.inf), seconds[1])
        walls.setdefault(key, []).append(seconds[0])
        best[f"{key} median"] = statistics.median(walls[key])

    for _ in range(repeat):
        keep("plain", compare_once(path, False, 1))
        keep("loss", compare_once(path, True, 1))
        if parallel:
            keep("plain_par", compare_once(path, False, None))
            keep("loss_par", compare_once(path, True, None))
        best["index"] = min(best.get("index", math.inf), index_once(path))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--small", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    get_tokenizer("o200k_base")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        big_path = write_trace(Path(tmp), args.turns)
        small_path = write_trace(Path(tmp), args.small)
        for loss in (False, True):  # untimed: the modules each side imports once per process
            compare_once(small_path, loss, 1)
        big = measure(big_path, args.repeat, True)
        small = measure(small_path, args.repeat, False)
    load_after = os.getloadavg()
    print(f"load average (1 min) {load[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} cores")
    print(f"compare of {len(POLICIES)} policies, {args.turns} turns (best of {args.repeat}):")
    for label, key in (("one process: ", ""), ("one per core:", "_par")):
        plain, metered = big[f"plain{key}"], big[f"loss{key}"]
        plain_median, metered_median = big[f"plain{key} median"], big[f"loss{key} median"]
        print(f"  {label} plain {plain:.3f} s, loss-metered {metered:.3f} s, ratio {metered / plain:.3f} "
              f"(target <= 1.30); medians {plain_median:.3f} s / {metered_median:.3f} s, "
              f"ratio {metered_median / plain_median:.3f}")
    print(f"  CPU (this process and its workers): one process {big['plain cpu']:.3f} s / {big['loss cpu']:.3f} s, "
          f"ratio {big['loss cpu'] / big['plain cpu']:.3f}; one per core {big['plain_par cpu']:.3f} s / "
          f"{big['loss_par cpu']:.3f} s, ratio {big['loss_par cpu'] / big['plain_par cpu']:.3f}")
    print(f"  identifier index alone (extraction, once per trace): {big['index']:.3f} s")
    added_big = big["loss"] - big["plain"]
    added_small = small["loss"] - small["plain"]
    print(f"loss metering's own time (one process): {args.turns} turns {added_big:.3f} s, {args.small} turns "
          f"{added_small:.3f} s, ratio {added_big / added_small:.2f} (linear = {args.turns / args.small:.1f}); "
          f"index alone {big['index']:.3f} s / {small['index']:.3f} s, ratio {big['index'] / small['index']:.2f}")
    cpu_big = big["loss cpu"] - big["plain cpu"]
    cpu_small = small["loss cpu"] - small["plain cpu"]
    print(f"loss metering's own CPU (one process): {cpu_big:.3f} s / {cpu_small:.3f} s, "
          f"ratio {cpu_big / cpu_small:.2f}")
    print(f"whole compare, loss-metered: {big['loss']:.3f} s / {small['loss']:.3f} s, "
          f"ratio {big['loss'] / small['loss']:.2f}; plain {big['plain']:.3f} s / {small['plain']:.3f} s, "
          f"ratio {big['plain'] / small['plain']:.2f}")


if __name__ == "__main__":
    main()
