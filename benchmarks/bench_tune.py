"""`ctxsim tune` and the oracle: what they cost, measured in this one run.

Prints:

1. `ctxsim tune` of clear (16 trials + the oracle) on the shipped long session at a 50k budget:
   the time on one process divided by the time with `--jobs 2`, and whether the outputs (table,
   TOML, JSON, PNG, CSV) are byte-identical (they must be);
2. one metered replay of `oracle:budget=50k` against one of `clear:trigger=50k` on the same trace
   (the oracle's `relative_cost`);
3. `ctxsim sweep` of 4 policies over 20 synthetic sessions with the loss columns against
   `--no-loss`: what metering every cell adds.

Usage: python benchmarks/bench_tune.py [--trace traces/long-session.jsonl]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(args: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from ctxsim.cli import main; main()", *args], capture_output=True,
                          text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ctxsim {' '.join(args)} failed: {done.stderr.strip()}")
    return took, done.stdout


def tune_pool(trace: str, work: Path) -> None:
    outs = {}
    times = {}
    for jobs in (1, 2):
        out = work / f"j{jobs}" / "clear.toml"
        out.parent.mkdir()
        times[jobs], text = timed(["tune", trace, "--family", "clear", "--budget", "50k", "--trials", "16",
                                   "--jobs", str(jobs), "-o", str(out)])
        files = {p.name: p.read_bytes() for p in sorted(out.parent.iterdir())}
        outs[jobs] = (text, files)
    same = outs[1] == outs[2]
    print(f"1. tune clear, 16 trials + oracle, {Path(trace).name} at 50k: --jobs 1 {times[1]:.1f} s, "
          f"--jobs 2 {times[2]:.1f} s: ratio {times[1] / times[2]:.2f}; outputs identical: {'yes' if same else 'NO'}")


def oracle_cost(trace: str) -> None:
    from ctxsim.formats import read_traces
    from ctxsim.loss import TraceIndex, metered_run
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    t = read_traces([trace])
    replayer = Replayer(t, MessageSizer(TokenCounter(get_tokenizer("o200k_base"))), Setup())
    index = TraceIndex().prime(t.sessions)
    took = {}
    for spec in ("clear:trigger=50k", "oracle:budget=50k", "clear:trigger=50k", "oracle:budget=50k"):
        policy = resolve([spec])[0].policy
        start = time.perf_counter()
        run = metered_run(replayer, policy, index=index)
        took[spec] = time.perf_counter() - start  # the second of each: warm
        misses = run.loss.recall_misses
    print(f"2. one metered replay of {Path(trace).name}: clear {took['clear:trigger=50k']:.2f} s, oracle "
          f"{took['oracle:budget=50k']:.2f} s: ratio {took['oracle:budget=50k'] / took['clear:trigger=50k']:.2f} "
          f"(oracle misses {misses})")


def sweep_loss(work: Path) -> None:
    from ctxsim.formats import native
    from ctxsim.synth import synthesize

    corpus = work / "corpus"
    corpus.mkdir()
    for i in range(20):
        with open(corpus / f"s{i:03d}.jsonl", "w", encoding="utf-8") as out:
            native.write(synthesize("coding", turns=30 + i, seed=i, output_scale=0.5), out)
    args = ["sweep", str(corpus), "--policies", "clear,compact,mask", "--budgets", "40k", "--jobs", "1"]
    plain, _ = timed([*args, "--no-loss"])
    metered, _ = timed(args)
    print(f"3. sweep of 4 policies over 20 sessions: --no-loss {plain:.1f} s, with the loss columns {metered:.1f} s: "
          f"+{(metered / plain - 1) * 100:.0f} %")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(ROOT / "traces" / "long-session.jsonl"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tune_pool(args.trace, work)
        oracle_cost(args.trace)
        sweep_loss(work)


if __name__ == "__main__":
    main()
