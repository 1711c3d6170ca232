"""`compare` with 8 policies on the 2,400-turn trace, against the tokenizing floor.

Prints, measured in this one run: the time of `compare` (read, count each distinct text once,
replay and meter 8 policies) divided by the time to read the trace and tokenize each distinct
text once. Target <= 2.0. `compare` runs the policies on one process per core (as the CLI does;
counting a big batch, in the floor too, is shared out the same way); the same ratio on one process
is printed beside it, and so is the ratio of a compare whose 8 policies never act (the engine, the
meter and the policies' checks at each request: the part of the ratio no policy's own work adds).
Also prints each policy's own replay time, and how it grows with the trace: its time on the
2,400-turn trace divided by its time on a 600-turn one (4x the turns: linear is 4.0; a policy that
walks the whole history on every request shows ~16).

CPU time is printed beside wall time, and the ratios in CPU: on a machine busier than its cores
the wall-time ratio grows with the load alone (compare's workers wait for a core more than the
floor does), as a 2.7 -> 3.9 "regression" once showed that CPU time and call counts did not.

A policy's time includes counting the texts it writes (stubs, summaries): each repeat starts
from a fresh token memo, primed with the trace's own texts outside the timing.

Usage: python benchmarks/bench_compare.py [--turns 2400] [--small 600] [--repeat 3] [--policies all]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_replay import tokenize_once, write_trace

from ctxsim._support.parallel import available_cores, plan_jobs
from ctxsim.formats import read_trace
from ctxsim.policies.spec import resolve
from ctxsim.replay.api import Options, replay_choices
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

POLICIES = ["none", "clear:trigger=30000,keep=3,clear_at_least=10000", "compact:trigger=60000",
            "truncate", "tiered", "mask", "scored", "zones"]
# The same families with triggers the trace never reaches: they never act, so their compare is the
# engine and meter, plus each policy's check at each request: the part of the ratio that no policy's
# own work adds.
IDLE = ["none", "clear:trigger=1000000000", "compact:trigger=1000000000", "truncate:max_lines=1000000",
        "tiered:max_context_tokens=1000000000", "recent:keep_last=1000000", "scored:budget=1000000000",
        "zones:window=1000000000"]
# Every other registered policy, for the growth check (`--policies all`); the window-relative
# ones get a spec that makes them act on the synthetic trace.
OTHERS = ["recent", "amortized", "hierarchical", "notes", "clear_thinking", "server_compact:trigger=60000",
          "truncate:on_append=false", "zones:window=60000", "scored:budget=30000", "ctxkit", "yoagent"]


def compare_once(path: Path, jobs: int | None = None, specs: list[str] = POLICIES) -> float:
    start = time.perf_counter()
    trace = read_trace(str(path))
    result = replay_choices(trace, str(path), resolve(specs), Options(jobs=jobs))
    seconds = time.perf_counter() - start  # with the result in hand (freeing it is not part of compare)
    del result
    return seconds


def with_cpu(measure: Callable[..., float], *args: object) -> tuple[float, float]:
    """(wall seconds `measure` reports, CPU seconds of this process and of the workers it waited for)."""
    before = os.times()
    seconds = measure(*args)
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])  # user + system, self and children
    return seconds, cpu


def per_policy(path: Path, specs: list[str], repeat: int) -> dict[str, tuple[float, float]]:
    """Best-of-`repeat` replay time of each policy (wall, CPU); every repeat starts from a fresh token memo."""
    trace = read_trace(str(path))
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("o200k_base"))), Setup())
        for choice in resolve(specs):
            start, cpu = time.perf_counter(), time.process_time()
            replayer.run(choice.policy)
            seconds = (time.perf_counter() - start, time.process_time() - cpu)
            old = best.get(choice.label, seconds)
            best[choice.label] = (min(seconds[0], old[0]), min(seconds[1], old[1]))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--small", type=int, default=600, help="turns of the trace for the growth check (0: skip)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--policies", choices=["compare", "all"], default="compare",
                        help="growth check over the 8 compare policies, or every registered one")
    args = parser.parse_args()
    get_tokenizer("o200k_base")
    specs = POLICIES + (OTHERS if args.policies == "all" else [])
    with tempfile.TemporaryDirectory() as tmp:
        path = write_trace(Path(tmp), args.turns)
        # Interleaved, so that a slow spell of the machine falls on all of them alike; best of each.
        floor = total = alone = idle = (math.inf, math.inf)
        for _ in range(args.repeat):
            floor = min(floor, with_cpu(tokenize_once, path))
            total = min(total, with_cpu(compare_once, path))
            alone = min(alone, with_cpu(compare_once, path, 1))
            idle = min(idle, with_cpu(compare_once, path, None, IDLE))
        requests = sum(s.requests for s in read_trace(str(path)).sessions)
        jobs = plan_jobs(None, len(POLICIES), requests * len(POLICIES))
        print(f"trace: {args.turns} turns, {path.stat().st_size / 1e6:.2f} MB (best of {args.repeat}; "
              f"{available_cores()} cores; load average {os.getloadavg()[0]:.1f})")
        print(f"read + tokenize each distinct text once: {floor[0]:.3f} s  (CPU {floor[1]:.3f} s)")
        print(f"compare, {len(POLICIES)} policies, {jobs} processes:  {total[0]:.3f} s  (CPU {total[1]:.3f} s, "
              "its workers' included)")
        print(f"compare, {len(POLICIES)} policies, 1 process (-j 1): {alone[0]:.3f} s  (CPU {alone[1]:.3f} s)")
        print(f"ratio compare / tokenize-once: {total[0] / floor[0]:.2f}  (target <= 2.0; one process: "
              f"{alone[0] / floor[0]:.2f}); beyond the floor: {total[0] - floor[0]:.3f} s")
        # What scheduling could still gain: the CPU compare spends beyond the floor's, spread over
        # every core with none idle, is the least time the runs can add.
        beyond = total[1] - floor[1]
        best = floor[0] + beyond / available_cores()
        print(f"CPU beyond the floor: {beyond:.3f} s; on {available_cores()} cores with none idle compare would "
              f"take {best:.3f} s, ratio {best / floor[0]:.2f}: below that only less CPU helps")
        print(f"compare, {len(IDLE)} policies that never act (engine, meter and the policies' checks): "
              f"{idle[0]:.3f} s (CPU {idle[1]:.3f} s), ratio {idle[0] / floor[0]:.2f}: the policies' work is the rest")
        print(f"CPU ratio compare / tokenize-once: {total[1] / floor[1]:.2f} (one process: {alone[1] / floor[1]:.2f}; "
              f"never acting: {idle[1] / floor[1]:.2f}): the work done, whatever else the machine runs")
        if os.getloadavg()[0] > available_cores():
            print(f"note: load average {os.getloadavg()[0]:.1f} on {available_cores()} cores: the wall-time ratios "
                  "above count the wait for a core (compare's workers wait more than the floor), the CPU ones do not")
        big = per_policy(path, specs, args.repeat)
        small = per_policy(write_trace(Path(tmp), args.small), specs, args.repeat) if args.small else {}
        print(f"  {'policy':50s} {args.turns:>7d} t    CPU" + (f" {args.small:>7d} t    CPU  ratio (CPU; linear = "
                                                                 f"{args.turns / args.small:.1f})" if small else ""))
        for label, (seconds, cpu) in big.items():
            line = f"  {label:50s} {seconds:7.3f} s {cpu:6.3f}"
            if label in small:
                line += f" {small[label][0]:7.3f} s {small[label][1]:6.3f}  {cpu / max(small[label][1], 1e-9):5.1f}"
            print(line)


if __name__ == "__main__":
    main()
