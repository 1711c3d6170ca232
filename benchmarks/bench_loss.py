"""Loss metering (ctxsim.loss) on a compare of 8 policies: what it adds, and how it grows with the trace.

Prints, measured in this one run (best of `--repeat`, interleaved so a slow spell of the machine falls
on both alike). Every compare runs in a fresh process, as `ctxsim compare` does: its modules imported and
a tiny compare run first, untimed, then the timed one read and replayed with nothing classified yet (the
extraction rules' memos emptied). One process running compare after compare is not what a user runs: the
heap an earlier compare leaves slows the next one's forked workers unevenly (measured: the per-core ratio
1.30-1.36 after one-process compares in the same process, 1.16 without them):

- the time of a compare of the 8 policies of bench_compare on the 2,400-turn synthetic trace with loss
  metering (the identifier index built once, a meter observing every run) divided by the same compare
  without it. Target <= 1.30. Both in one process (`-j 1`) and on one process per core (where the index
  is built on a process of its own while this one counts the trace's tokens); as the ratio of the bests
  of the repeats, and as the median of the repeats' ratios (each metered compare over the plain one run
  next to it: on a machine whose speed drifts, the steadier figure);
- the loss metering's own time (metered minus plain compare, one process) on the 2,400-turn trace
  divided by the same on a 600-turn one: 4x the turns, linear is 4.0;
- the time to build the identifier index alone (the extraction, once per trace);
- the same in CPU seconds (this process and the workers it waited for), and the load average: on a shared
  machine the wall times swing with the others' load, the CPU far less.

Usage: python benchmarks/bench_loss.py [--turns 2400] [--small 600] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _valgrind import available, instructions_of
from bench_compare import POLICIES
from bench_replay import write_trace

from ctxsim.formats import read_trace
from ctxsim.loss import TraceIndex, identifiers
from ctxsim.policies.spec import resolve
from ctxsim.replay.api import Options, replay_choices
from ctxsim.tokens import get_tokenizer


def one_argv(path: Path, loss: bool, jobs: int | None, *flags: str) -> list[str]:
    """The command that runs one compare in a fresh process (`--one`, `one`)."""
    return [sys.executable, __file__, "--one", str(path), str(int(loss)), str(jobs or 0), *flags]


def fresh(path: Path, loss: bool, jobs: int | None, *flags: str) -> dict[str, float]:
    """What `one` measured of a compare in a fresh process."""
    done = subprocess.run(one_argv(path, loss, jobs, *flags), check=True, capture_output=True, text=True)
    measured: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def compare_once(path: Path, loss: bool, jobs: int | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and of the workers it waited for) of one compare, in a fresh
    process."""
    measured = fresh(path, loss, jobs)
    return measured["wall"], measured["cpu"]


def one(path: Path, loss: bool, jobs: int | None, attribute: bool = False, tiny_only: bool = False) -> None:
    """`--one`: in this fresh process, a tiny compare untimed (imports, the tokenizer's ranks), then the timed one.
    `attribute`: the metering's own parts timed from inside too (`_attributed`); `tiny_only`: no timed compare
    (the baseline `--instructions` subtracts)."""
    get_tokenizer("o200k_base")
    with tempfile.TemporaryDirectory() as tmp:
        _timed(write_trace(Path(tmp), 8), loss, jobs)
    if tiny_only:
        return
    spent = _attributed() if attribute else {}
    measured: dict[str, float] = dict(zip(("wall", "cpu"), _timed(path, loss, jobs), strict=True))
    print(json.dumps({**measured, **spent}))


def _attributed() -> dict[str, float]:
    """From now on in this process, the time spent building the index (\"index\") and in the meter's calls and the
    re-fetch pricing (\"meter\"), summed into the dict returned (a compare on one process: forked workers' time
    stays in them)."""
    from ctxsim.loss import meter, refetch

    spent = {"index": 0.0, "meter": 0.0}

    def timed(owner: object, name: str, key: str) -> None:
        inner = getattr(owner, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        setattr(owner, name, wrapper)

    timed(TraceIndex, "prime", "index")
    for name in ("start", "observe", "requested", "finish"):
        timed(meter.LossMeter, name, "meter")
    timed(refetch, "price", "meter")
    return spent


def instructions(path: Path, loss: bool | None) -> int:
    """Machine instructions of a compare on one process in a fresh process (None: the tiny compare alone, the
    baseline to subtract), under valgrind."""
    flags = ("--tiny-only",) if loss is None else ()
    return instructions_of(one_argv(path, bool(loss), 1, *flags), dict(os.environ, PYTHONHASHSEED="0"))


def _timed(path: Path, loss: bool, jobs: int | None) -> tuple[float, float]:
    identifiers.forget()  # nothing classified yet: the tiny compare's lines are not the trace's
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


PAIRS: dict[str, list[float]] = {}  # the last `measure`'s ratios, pair by pair


def measure(path: Path, repeat: int, parallel: bool) -> dict[str, float]:
    """Best of `repeat` of each (wall; `KEY cpu`: CPU), interleaved; `KEY pair`: the median over the repeats of
    the metered compare's time over the plain one's just before or after it (one pair, a few seconds apart: a
    machine whose speed drifts moves both alike, which the bests, taken minutes apart, need not)."""
    best: dict[str, float] = {}
    pairs: dict[str, list[float]] = {}

    def keep(key: str, seconds: tuple[float, float]) -> float:
        best[key] = min(best.get(key, math.inf), seconds[0])
        best[f"{key} cpu"] = min(best.get(f"{key} cpu", math.inf), seconds[1])
        return seconds[0]

    for n in range(repeat):
        for key, jobs in (("", 1), ("_par", None)) if parallel else (("", 1),):
            order = (False, True) if n % 2 == 0 else (True, False)  # which goes first, in turn
            walls = {loss: keep(f"{'loss' if loss else 'plain'}{key}", compare_once(path, loss, jobs))
                     for loss in order}
            pairs.setdefault(key, []).append(walls[True] / walls[False])
            best[f"loss{key} pair"] = statistics.median(pairs[key])
        best["index"] = min(best.get("index", math.inf), index_once(path))
    PAIRS.update(pairs)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--small", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--instructions", action="store_true",
                        help="also count machine instructions under valgrind (load-independent; a few minutes)")
    parser.add_argument("--one", nargs=3, metavar=("TRACE", "LOSS", "JOBS"), help=argparse.SUPPRESS)
    parser.add_argument("--attribute", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tiny-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(Path(args.one[0]), args.one[1] == "1", int(args.one[2]) or None, args.attribute, args.tiny_only)
        return
    get_tokenizer("o200k_base")
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        big_path = write_trace(Path(tmp), args.turns)
        small_path = write_trace(Path(tmp), args.small)
        big = measure(big_path, args.repeat, True)
        big_pairs = dict(PAIRS)
        small = measure(small_path, args.repeat, False)
        inside = [fresh(big_path, True, 1, "--attribute") for _ in range(3)]  # `_attributed`
        counted: dict[str, int] = {}
        if args.instructions and available():
            base = instructions(big_path, None)
            for size, path in (("big", big_path), ("small", small_path)):
                for loss in (False, True):
                    counted[f"{size} {'loss' if loss else 'plain'}"] = instructions(path, loss) - base
    load_after = os.getloadavg()
    print(f"load average (1 min) {load[0]:.2f} before, {load_after[0]:.2f} after, on {os.cpu_count()} cores")
    print(f"compare of {len(POLICIES)} policies, {args.turns} turns (best of {args.repeat}):")
    for label, key in (("one process: ", ""), ("one per core:", "_par")):
        plain, metered = big[f"plain{key}"], big[f"loss{key}"]
        print(f"  {label} plain {plain:.3f} s, loss-metered {metered:.3f} s, ratio of the bests "
              f"{metered / plain:.3f}, median ratio of pairs {big[f'loss{key} pair']:.3f} (target <= 1.30)")
        print(f"                 the pairs: {' '.join(f'{r:.3f}' for r in big_pairs[key])}")
    print(f"  CPU (this process and its workers): one process {big['plain cpu']:.3f} s / {big['loss cpu']:.3f} s, "
          f"ratio {big['loss cpu'] / big['plain cpu']:.3f}; one per core {big['plain_par cpu']:.3f} s / "
          f"{big['loss_par cpu']:.3f} s, ratio {big['loss_par cpu'] / big['plain_par cpu']:.3f}")
    print(f"  identifier index alone (extraction, once per trace): {big['index']:.3f} s")
    direct = sorted(inside, key=lambda m: m["wall"] / (m["wall"] - m["index"] - m["meter"]))[1]  # the median
    print(f"  timed from inside one metered compare (one process; the median of 3): the index {direct['index']:.3f} s "
          f"and the meter's calls {direct['meter']:.3f} s of {direct['wall']:.3f} s, ratio "
          f"{direct['wall'] / (direct['wall'] - direct['index'] - direct['meter']):.3f} to the compare without them "
          "(what they cost directly, measured in one run: a drift of the machine's speed moves both sides alike; "
          "not what they cost the rest by the caches they take)")
    if counted:
        ratio = counted["big loss"] / counted["big plain"]
        growth = (counted["big loss"] - counted["big plain"]) / (counted["small loss"] - counted["small plain"])
        print(f"  machine instructions (valgrind), one process: plain {counted['big plain'] / 1e9:.2f} G, "
              f"loss-metered {counted['big loss'] / 1e9:.2f} G, ratio {ratio:.3f} (target <= 1.30); the metering's "
              f"own, {args.turns} / {args.small} turns: {growth:.2f} (linear = {args.turns / args.small:.1f})")
    elif args.instructions:
        print("  --instructions needs valgrind, which is not on this machine")
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
