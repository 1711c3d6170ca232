"""Peak memory of `ctxsim replay` on a 24 MB and a 195 MB native trace: the streaming reader's point.

Both traces hold many synthetic sessions one after another (each with its `session` header), the same
largest session in both: the 195 MB one is about 8x longer. `replay` reads a native file one session at
a time, so its peak RSS should be about the same on both (target: within 1.5x); a reader that holds the
whole trace needs about 5x the file.

Each replay runs in a subprocess of its own (so that RUSAGE_CHILDREN is that replay's alone); the ratio is
measured in this one run, never a gate.

Usage: python benchmarks/bench_memory.py [--small-mb 24] [--big-mb 195] [--turns 2400] [--policy none]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxsim.formats import native
from ctxsim.synth import synthesize

DISTINCT = 4  # distinct sessions (seeds); the trace repeats them in turn up to its size

_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)
"""


def sessions(turns: int) -> list[bytes]:
    out = []
    for seed in range(DISTINCT):
        lines = native.iter_lines(synthesize("coding", turns=turns, seed=seed))
        out.append("".join(line + "\n" for line in lines).encode("utf-8"))
    return out


def build(path: Path, parts: list[bytes], megabytes: float) -> int:
    """Write sessions in turn until the file holds `megabytes` MB; the number of sessions."""
    size, count = 0, 0
    with open(path, "wb") as out:
        while size < megabytes * 1e6:
            part = parts[count % len(parts)]
            out.write(part)
            size += len(part)
            count += 1
    return count


def peak_rss_mb(trace: Path, policy: str, output: Path) -> tuple[float, float]:
    command = [sys.executable, "-c", "import sys; from ctxsim.cli import main; sys.argv[0] = 'ctxsim'; main()",
               "replay", str(trace), "-p", policy, "-o", str(output)]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    kilobytes, code = done.stdout.split()
    if code != "0":
        raise SystemExit(f"replay of {trace} failed (exit {code})")
    return int(kilobytes) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--small-mb", type=float, default=24)
    parser.add_argument("--big-mb", type=float, default=195)
    parser.add_argument("--turns", type=int, default=2400, help="turns of each synthetic session")
    parser.add_argument("--policy", default="none")
    args = parser.parse_args()
    parts = sessions(args.turns)
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-memory-") as tmp:
        folder = Path(tmp)
        peaks = []
        for name, megabytes in (("small", args.small_mb), ("big", args.big_mb)):
            trace = folder / f"{name}.jsonl"
            count = build(trace, parts, megabytes)
            peak, seconds = peak_rss_mb(trace, args.policy, folder / f"{name}.run.json")
            peaks.append(peak)
            print(f"{name}: {trace.stat().st_size / 1e6:,.1f} MB, {count} sessions of {args.turns} turns: "
                  f"replay -p {args.policy} peak RSS {peak:,.0f} MB in {seconds:.1f} s")
        print(f"peak RSS big / small: {peaks[1] / peaks[0]:.2f} (target <= 1.5; a whole-trace reader: about the "
              "ratio of the sizes)")


if __name__ == "__main__":
    main()
