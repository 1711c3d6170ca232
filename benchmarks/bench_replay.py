"""Replay cost against the tokenizing floor, and growth with trace length.

Prints ratios measured in this one run (never a gate):

* replay / tokenize-once: `replay --policy none` end to end (read, count, replay, meter, price)
  divided by reading the same file and counting each distinct text once. Target <= 1.3.
* 2,400 / 600 turns: replay time ratio for 4x the turns. Linear is 4; target <= 4.6.

Usage: python benchmarks/bench_replay.py [--turns 2400] [--small 600] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from ctxsim._support.fileio import atomic_write
from ctxsim.formats import native, read_trace
from ctxsim.replay.api import replay_trace
from ctxsim.synth import synthesize
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer


def write_trace(folder: Path, turns: int) -> Path:
    path = folder / f"synth-{turns}.jsonl"
    with atomic_write(path) as out:
        native.write(synthesize("coding", turns=turns, seed=0), out)  # type: ignore[arg-type]
    return path


def tokenize_once(path: Path) -> float:
    start = time.perf_counter()
    trace = read_trace(str(path))
    sizer = MessageSizer(TokenCounter(get_tokenizer("o200k_base")))
    for session in trace.sessions:
        sizer.prime(session)
    return time.perf_counter() - start


def replay_none(path: Path) -> float:
    start = time.perf_counter()
    result = replay_trace(str(path), ["none"])
    seconds = time.perf_counter() - start  # with the result in hand (freeing it is not part of replay)
    del result
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2400)
    parser.add_argument("--small", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    get_tokenizer("o200k_base")  # load the ranks outside the timings
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = write_trace(folder, args.turns)
        small = write_trace(folder, args.small)
        # Interleaved, so that a slow spell of the machine falls on all three alike; best of each.
        tok_big = rep_big = rep_small = math.inf
        for _ in range(args.repeat):
            tok_big = min(tok_big, tokenize_once(big))
            rep_big = min(rep_big, replay_none(big))
            rep_small = min(rep_small, replay_none(small))
        print(f"trace: {args.turns} turns, {big.stat().st_size / 1e6:.2f} MB; {args.small} turns, "
              f"{small.stat().st_size / 1e6:.2f} MB (best of {args.repeat})")
        print(f"read + tokenize each distinct text once ({args.turns} turns): {tok_big:.3f} s")
        print(f"replay --policy none ({args.turns} turns):                   {rep_big:.3f} s")
        print(f"replay --policy none ({args.small} turns):                    {rep_small:.3f} s")
        print(f"ratio replay / tokenize-once: {rep_big / tok_big:.2f}  (target <= 1.3)")
        print(f"ratio {args.turns} / {args.small} turns: {rep_big / rep_small:.2f}  (linear = "
              f"{args.turns / args.small:.1f}, target <= 4.6)")


if __name__ == "__main__":
    main()
