"""`compare` with 8 policies on the 2,400-turn trace, against the tokenizing floor.

Prints, measured in this one run: the time of `compare` (read, count each distinct text once,
replay and meter 8 policies) divided by the time to read the trace and tokenize each distinct
text once. Target <= 2.0. Also prints each policy's own replay time.

Usage: python benchmarks/bench_compare.py [--turns 2400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ctxsim.api import Options, replay_choices
from ctxsim.counting import MessageSizer
from ctxsim.engine import Replayer, Setup
from ctxsim.formats import read_trace
from ctxsim.policyspec import resolve
from ctxsim.tokens import TokenCounter, get_tokenizer

from bench_replay import tokenize_once, write_trace

POLICIES = ["none", "clear:trigger=30000,keep=3,clear_at_least=10000", "compact:trigger=60000",
            "truncate", "tiered", "mask", "scored", "zones"]


def compare_once(path: Path) -> float:
    start = time.perf_counter()
    trace = read_trace(str(path))
    replay_choices(trace, str(path), resolve(POLICIES), Options())
    return time.perf_counter() - start


def per_policy(path: Path) -> list[tuple[str, float]]:
    trace = read_trace(str(path))
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("o200k_base"))), Setup())
    out = []
    for choice in resolve(POLICIES):
        start = time.perf_counter()
        replayer.run(choice.policy)
        out.append((choice.label, time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    get_tokenizer("o200k_base")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_trace(Path(tmp), args.turns)
        floor = min(tokenize_once(path) for _ in range(args.repeat))
        total = min(compare_once(path) for _ in range(args.repeat))
        print(f"trace: {args.turns} turns, {path.stat().st_size / 1e6:.2f} MB (best of {args.repeat})")
        print(f"read + tokenize each distinct text once: {floor:.3f} s")
        print(f"compare, {len(POLICIES)} policies:              {total:.3f} s")
        print(f"ratio compare / tokenize-once: {total / floor:.2f}  (target <= 2.0)")
        for label, seconds in per_policy(path):
            print(f"  {label:50s} {seconds:.3f} s")


if __name__ == "__main__":
    main()
