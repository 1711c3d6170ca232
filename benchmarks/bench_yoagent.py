"""yoagent's published prefix-cache replay table, against ctxsim's `yoagent` preset.

For 300 / 1,200 / 2,400 turns (and 2,400 with the 0.30 headroom floor of yoagent 0.22+)
it writes `ctxsim synth --profile yoagent --turns N` to a native trace file, reads it
back, replays it under the preset and prints, next to the figures yoagent's docs
publish (reference/yoagent-context.md sections 4.1 and 4.2):

* byte hit: yoagent's own metric, 1 - sum(uncached bytes) / sum(request bytes) over
  the rendered message history, measured by a probe stage;
* token hit: ctxsim's run total, cache_read_tokens / input_tokens (`rendered` cache);
* rewrites: requests whose message prefix changed (run total) and byte-level
  invalidations (probe);
* L2 / L3: compactions that stopped at level 2, and those that went to level 3
  (of which "cliff": yoagent's keep_within_budget fallback);
* the input-side dollar cost yoagent's test prints (bytes/4 tokens at DeepSeek and
  Anthropic prices), from the same byte ledger.

A second table replays the same traces with `tiered` compacting before every
request (yoagent's agent loop) instead of at each turn's end (its replay test), to
show how much that timing moves the figures.

Numbers are measured in this one run and never gate CI.

Usage: python benchmarks/bench_yoagent.py [--turns 300,1200,2400]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ctxsim._support.fileio import atomic_write
from ctxsim.formats import native, read_trace
from ctxsim.policies import parse_policy
from ctxsim.presets.yoagent import PRESET, PUBLISHED, BytesProbe, Stages, replay_yoagent, sizer
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.synth import synthesize

# yoagent's input-side cost, bytes/4 tokens at $/M (input, cached): DeepSeek (0.27, 0.07), Anthropic (3.00, 0.30);
# published in reference/yoagent-context.md 4.1 (and 4.2 for the 0.30 floor)
PRICES = {"deepseek": (0.27, 0.07), "anthropic": (3.00, 0.30)}
DOCS_COST = {(300, 0.15): (1.4985, 7.9347), (1200, 0.15): (5.7563, 30.8415), (2400, 0.15): (11.2566, 60.5804),
             (2400, 0.30): (11.3064, 60.7847)}


def byte_cost(total_bytes: int, uncached_bytes: int, price: tuple[float, float]) -> float:
    cached = (total_bytes - uncached_bytes) / 4
    return (cached * price[1] + uncached_bytes / 4 * price[0]) / 1e6


def header() -> str:
    line = (f"{'turns':>6} {'floor':>5} | {'docs hit':>8} {'byte hit':>9} {'token hit':>9} {'diff':>6} | "
            f"{'docs rw':>7} {'rewrites':>8} {'invalid.':>8} | {'L2':>3} {'L3':>3} {'cliff':>5} | {'secs':>5}")
    return line + "\n" + "-" * len(line)


def row(turns: int, floor: float, docs: tuple[float, int], byte_hit: float, token_hit: float, rewrites: int,
        invalidations: int, kinds: list[str], seconds: float) -> tuple[str, float]:
    docs_hit, docs_rewrites = docs
    diff = max(abs(byte_hit - docs_hit), abs(token_hit - docs_hit))
    l2, cliff = kinds.count("summarize"), kinds.count("cliff")
    l3 = kinds.count("drop") + cliff
    text = (f"{turns:>6} {floor:>5.2f} | {docs_hit:>7.2f}% {byte_hit:>8.3f}% {token_hit:>8.3f}% {diff:>6.3f} | "
            f"{docs_rewrites:>7} {rewrites:>8} {invalidations:>8} | {l2:>3} {l3:>3} {cliff:>5} | {seconds:>5.2f}")
    return text, diff


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", default="300,1200,2400", help="comma-separated session lengths")
    args = parser.parse_args()
    wanted = {int(t) for t in args.turns.split(",") if t.strip()}
    cases = [(key, value) for key, value in PUBLISHED.items() if key[0] in wanted]
    preset_rows, loop_rows, costs, worst = [], [], [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for (turns, floor), docs in cases:
            path = Path(tmp) / f"yoagent-{turns}.jsonl"
            with atomic_write(path) as out:
                native.write(synthesize("yoagent", turns=turns), out)  # type: ignore[arg-type]
            trace = read_trace(str(path))
            start = time.perf_counter()
            result = replay_yoagent(turns, floor, trace)
            seconds = time.perf_counter() - start
            totals = result.run.totals
            kinds = [e.kind for e in result.run.events if e.policy == "tiered"]
            text, diff = row(turns, floor, docs, 100 * result.byte_hit_rate, 100 * totals.hit_rate,
                             totals.rewrites, result.ledger.rewrites, kinds, seconds)
            preset_rows.append(text)
            worst = max(worst, diff)
            ledger = result.ledger
            deepseek, anthropic = (byte_cost(ledger.request_bytes, ledger.uncached_bytes, PRICES[k])
                                   for k in ("deepseek", "anthropic"))
            docs_cost = DOCS_COST[(turns, floor)]
            costs.append(f"{turns:>6} {floor:>5.2f} | DeepSeek ${deepseek:.4f} (docs ${docs_cost[0]:.4f}) | "
                         f"Anthropic ${anthropic:.4f} (docs ${docs_cost[1]:.4f})")
            # the same, compacting before every request
            probe = BytesProbe()
            stages = Stages("yoagent-loop", (parse_policy("truncate"),
                                             parse_policy(f"tiered:min_headroom_ratio={floor}"), probe))
            start = time.perf_counter()
            run = Replayer(trace, sizer(), Setup(cache=PRESET.cache, window=PRESET.window)).run(stages)
            seconds = time.perf_counter() - start
            kinds = [e.kind for e in run.events if e.policy == "tiered"]
            text, _ = row(turns, floor, docs, 100 * probe.ledger.hit_rate, 100 * run.totals.hit_rate,
                          run.totals.rewrites, probe.ledger.rewrites, kinds, seconds)
            loop_rows.append(text)
    print("yoagent preset (tiered compact_at=turn_end, as the replay test) vs yoagent docs")
    print(header())
    print("\n".join(preset_rows))
    print(f"largest hit-rate difference from the docs: {worst:.3f} points (tolerance 0.05)\n")
    print("input-side cost from the byte ledger (bytes/4 tokens), as yoagent prices it")
    print("\n".join(costs) + "\n")
    print("same traces, tiered compact_at=request (yoagent's agent loop timing), for comparison")
    print(header())
    print("\n".join(loop_rows))


if __name__ == "__main__":
    main()
