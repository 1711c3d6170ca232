"""Loss metering (ctxsim.loss) on a compare of 8 policies: what it adds, and how it grows with the trace.

Prints, measured in this one run (best of `--repeat`, interleaved so a slow spell of the machine falls
on both alike; every compare starts as a fresh process would, with nothing classified yet: the extraction
rules' memos, which live as long as the process, are emptied first):

- the time of a compare of the 8 policies of bench_compare on the 2,400-turn synthetic trace with loss
  metering (the identifier index built once, a meter observing every run) divided by the same compare
  without it. Target <= 1.30. Both in one process (`-j 1`) and on one process per core;
- the loss metering's own time (metered minus plain compare, one process) on the 2,400-turn trace
  divided by the same on a 600-turn one: 4x the turns, linear is 4.0;
- the time to build the identifier index alone (the extraction, once per trace).

Usage: python benchmarks/bench_loss.py [--turns 2400] [--small 600] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
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


def compare_once(path: Path, loss: bool, jobs: int | None) -> float:
    identifiers.forget()  # as a fresh process: no chunk, line or quote classified by an earlier repeat
    start = time.perf_counter()
    trace = read_trace(str(path))
    result = replay_choices(trace, str(path), resolve(POLICIES), Options(jobs=jobs, loss=loss))
    seconds = time.perf_counter() - start
    if loss:
        assert all(run.loss is not None for run in result.runs)
    del result
    return seconds


def index_once(path: Path) -> float:
    trace = read_trace(str(path))
    identifiers.forget()
    start = time.perf_counter()
    TraceIndex().prime(trace.sessions)
    return time.perf_counter() - start


def measure(path: Path, repeat: int, parallel: bool) -> dict[str, float]:
    best = {"plain": math.inf, "loss": math.inf, "plain_par": math.inf, "loss_par": math.inf, "index": math.inf}
    for _ in range(repeat):
        best["plain"] = min(best["plain"], compare_once(path, False, 1))
        best["loss"] = min(best["loss"], compare_once(path, True, 1))
        if parallel:
            best["plain_par"] = min(best["plain_par"], compare_once(path, False, None))
            best["loss_par"] = min(best["loss_par"], compare_once(path, True, None))
        best["index"] = min(best["index"], index_once(path))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--small", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    get_tokenizer("o200k_base")
    with tempfile.TemporaryDirectory() as tmp:
        big_path = write_trace(Path(tmp), args.turns)
        small_path = write_trace(Path(tmp), args.small)
        big = measure(big_path, args.repeat, True)
        small = measure(small_path, args.repeat, False)
    print(f"compare of {len(POLICIES)} policies, {args.turns} turns (best of {args.repeat}):")
    print(f"  one process:  plain {big['plain']:.3f} s, loss-metered {big['loss']:.3f} s, "
          f"ratio {big['loss'] / big['plain']:.3f} (target <= 1.30)")
    print(f"  one per core: plain {big['plain_par']:.3f} s, loss-metered {big['loss_par']:.3f} s, "
          f"ratio {big['loss_par'] / big['plain_par']:.3f} (target <= 1.30)")
    print(f"  identifier index alone (extraction, once per trace): {big['index']:.3f} s")
    added_big = big["loss"] - big["plain"]
    added_small = small["loss"] - small["plain"]
    print(f"loss metering's own time (one process): {args.turns} turns {added_big:.3f} s, {args.small} turns "
          f"{added_small:.3f} s, ratio {added_big / added_small:.2f} (linear = {args.turns / args.small:.1f}); "
          f"index alone {big['index']:.3f} s / {small['index']:.3f} s, ratio {big['index'] / small['index']:.2f}")
    print(f"whole compare, loss-metered: {big['loss']:.3f} s / {small['loss']:.3f} s, "
          f"ratio {big['loss'] / small['loss']:.2f}")


if __name__ == "__main__":
    main()
