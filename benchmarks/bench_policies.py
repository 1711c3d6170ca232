"""Each policy's own replay CPU time on the 2,400-turn synthetic trace, optionally beside an older tree's.

Prints, per policy spec, the CPU seconds (time.process_time) of one replay of the trace, best of
`--repeat`, with the trace read and its texts counted outside the timing (one Replayer per process,
its token memo shared by the repeats, as a compare shares it across policies).

With `--against PATH` (a checkout of an older ctxsim, e.g. `git worktree add /tmp/old 954ad57`)
the same specs are timed in that tree too, INTERLEAVED: worker processes alternate between the two
trees (this one, the old one, this one, ...), each timing every spec `--per-process` times, so
that a busy spell of a shared machine falls on both alike; each spec's best over all the rounds is
printed with the ratio new / old (below 1.00: this tree is faster). A spec the old tree cannot
parse is shown as "-".

With `--instructions` (needs valgrind), each spec's replay is counted in machine instructions instead
(cachegrind's I refs, hash seed fixed): a process that replays the spec once to warm up and then R more
times, less one that only warms up, divided by R. The count does not move with the machine's load, so
two trees can be compared on a busy machine; it is not time (cache misses and branches are not in it),
so read it beside the timed table. A few minutes per spec and tree (the trace is read under valgrind).

Usage: python benchmarks/bench_policies.py [--turns 2400] [--repeat 5] [--per-process 2]
       [--policies 'none;clear;...'] [--against /tmp/old954] [--trace PATH] [--instructions]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _valgrind import available, instructions_of

# Every registered policy at its defaults (but the oracle, a bound that reads the future, and the
# pipeline, whose stages are given below) and three pipelines a compare runs.
POLICIES = ["none", "clear", "clear_thinking", "compact", "hierarchical", "mask", "notes", "recent", "scored",
            "server_compact", "tiered", "truncate", "zones", "amortized",
            "mask+scored", "truncate+tiered", "clear+compact"]
TREE = Path(__file__).resolve().parent.parent


def replayer_of(path: str) -> Any:
    """The trace read and its texts counted, in whichever ctxsim this interpreter imports."""
    from ctxsim.formats import read_traces
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    return Replayer(read_traces([path]), MessageSizer(TokenCounter(get_tokenizer("o200k_base"))), Setup())


def worker(path: str, reps: int, specs: list[str]) -> dict[str, float | None]:
    """Best-of-`reps` CPU seconds of one replay per spec, in whichever ctxsim this interpreter imports."""
    from ctxsim.policies.spec import resolve

    replayer = replayer_of(path)
    out: dict[str, float | None] = {}
    for spec in specs:
        try:
            resolve([spec])
        except Exception:  # a spec this tree does not know
            out[spec] = None
            continue
        replayer.run(resolve([spec])[0].policy)  # warm: the texts the policy writes are counted once
        best = math.inf
        for _ in range(reps):
            policy = resolve([spec])[0].policy
            gc.collect()
            start = time.process_time()
            replayer.run(policy)
            best = min(best, time.process_time() - start)
        out[spec] = best
    return out


def run_worker(tree: Path, path: str, reps: int, specs: list[str]) -> dict[str, float | None]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")  # the same dict and set layouts in every worker
    done = subprocess.run([sys.executable, __file__, "--worker", path, str(reps), ";".join(specs)],
                          env=env, check=True, capture_output=True, text=True, cwd=tree)
    result: dict[str, float | None] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def warm_then(path: str, spec: str, reps: int) -> None:
    """Replay `spec` once to warm up, then `reps` more times: what `--instructions` counts."""
    from ctxsim.policies.spec import resolve

    replayer = replayer_of(path)
    for _ in range(reps + 1):
        replayer.run(resolve([spec])[0].policy)


def instructions(tree: Path, path: str, spec: str, reps: int) -> int:
    """Machine instructions of one replay of `spec` in `tree`: (warm + reps) - (warm alone), over reps."""
    def count(n: int) -> int:
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
        return instructions_of([sys.executable, __file__, "--warm-then", path, spec, str(n)], env, str(tree))
    return (count(reps) - count(0)) // reps


def print_head(args: argparse.Namespace, path: str, what: str) -> None:
    """The trace and what is measured, then the columns' heads."""
    print(f"trace: {path if args.trace else f'{args.turns} synthetic turns'}; {what}")
    head = f"  {'policy':24s} {'this tree':>9s}"
    if args.against:
        head += f" {args.against!s:>12s}  new/old"
    print(head)


def instruction_table(args: argparse.Namespace, path: str, specs: list[str]) -> None:
    if not available():
        print("--instructions needs valgrind, which is not on this machine")
        return
    trees = [TREE] + ([args.against.resolve()] if args.against else [])
    print_head(args, path, "machine instructions of one replay "
               f"(cachegrind I refs, millions; warm + {args.per_process} replays less warm alone)")
    for spec in specs:
        counts = [instructions(tree, path, spec, args.per_process) for tree in trees]
        line = f"  {spec:24s} {counts[0] / 1e6:9.1f}"
        if args.against:
            line += f" {counts[1] / 1e6:12.1f}  {counts[0] / counts[1]:7.3f}"
        print(line, flush=True)


def best_of(runs: list[dict[str, float | None]], spec: str) -> float | None:
    times = [r[spec] for r in runs if r.get(spec) is not None]
    return min(times) if times else None  # type: ignore[type-var]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], int(sys.argv[3]), sys.argv[4].split(";"))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--warm-then":
        warm_then(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--trace", help="a trace to replay instead of a synthetic one")
    parser.add_argument("--repeat", type=int, default=5, help="worker processes per tree (rounds)")
    parser.add_argument("--per-process", type=int, default=2, help="replays per spec in each worker")
    parser.add_argument("--policies", default=";".join(POLICIES), help="specs separated by ';'")
    parser.add_argument("--against", type=Path, help="an older ctxsim checkout to time beside this one")
    parser.add_argument("--instructions", action="store_true",
                        help="count machine instructions under valgrind instead of timing (load-independent)")
    args = parser.parse_args()
    specs = args.policies.split(";")
    with tempfile.TemporaryDirectory() as tmp:
        if args.trace:
            path = args.trace
        else:
            from bench_replay import write_trace

            path = str(write_trace(Path(tmp), args.turns))
        if args.instructions:
            instruction_table(args, path, specs)
            return
        new: list[dict[str, float | None]] = []
        old: list[dict[str, float | None]] = []
        for _ in range(args.repeat):  # interleaved: new, old, new, old, ...
            new.append(run_worker(TREE, path, args.per_process, specs))
            if args.against:
                old.append(run_worker(args.against.resolve(), path, args.per_process, specs))
        print_head(args, path, f"CPU s of one replay, best of {args.repeat} x {args.per_process}; "
                   f"load average {os.getloadavg()[0]:.1f}")
        for spec in specs:
            mine = best_of(new, spec)
            line = f"  {spec:24s} {mine:9.4f}" if mine is not None else f"  {spec:24s} {'-':>9s}"
            if args.against:
                theirs = best_of(old, spec)
                if theirs is None or mine is None:
                    line += f" {'-':>12s}  {'-':>7s}"
                else:
                    line += f" {theirs:12.4f}  {mine / theirs:7.2f}"
            print(line)


if __name__ == "__main__":
    main()
