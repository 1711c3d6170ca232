"""`ctxsim sweep` across a corpus: 2 workers against 1, a Dask LocalCluster against the pool, memory.

Prints, measured in this one run:

1. 8 policies over 200 small synthetic sessions (20-40 turns each, tool output scaled down), with
   the Parquet dataset and the tables written: the time on one process divided by the time with
   `--jobs 2` (target >= 1.7 on a machine with 2 free cores; a busy machine shows less);
2. the same sweep on a Dask LocalCluster (2 worker processes): are its tables (summary.csv,
   sessions.csv, manifest.json) and its Parquet files byte-identical to the process pool's?
   (target: yes); its time, cluster start included, beside;
3. the peak memory (largest resident set of any process of the sweep, from the kernel's
   accounting of the finished children) of `ctxsim sweep --jobs 2` over 2,000 sessions divided
   by that over 200 (target <= 1.5: a worker holds one session at a time, the parent the
   cells' small summaries, never rows). The 2,000 are the 200 ten times over, each copy with a
   session id of its own (so another digest, other cells, all the work again: nothing is shared
   between traces); 3 policies, to keep it to a few minutes.

Usage: python benchmarks/bench_sweep.py [--sessions 200] [--big 2000] [--no-dask] [--no-memory]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICIES = ["none", "clear", "compact", "clear+compact", "truncate", "mask", "recent", "claude-code"]
MEMORY_POLICIES = "none,clear,compact"


def make_corpus(folder: Path, sessions: int) -> Path:
    from ctxsim.formats import native
    from ctxsim.synth import synthesize

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(sessions):
        trace = synthesize("coding", turns=20 + i % 21, seed=i, output_scale=0.25)
        with open(folder / f"s{i:05d}.jsonl", "w", encoding="utf-8") as out:
            native.write(trace, out)
    return folder


def copies(base: Path, folder: Path, times: int) -> Path:
    """`times` copies of every session of `base`, each with a session id (and so a digest) of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(base.glob("*.jsonl")):
        head, _, rest = path.read_bytes().partition(b"\n")
        header = json.loads(head)
        for k in range(times):
            header["id"] = f"{header.get('id', path.stem)}-copy{k}"
            (folder / f"{path.stem}-{k}.jsonl").write_bytes(json.dumps(header).encode() + b"\n" + rest)
    return folder


CPU = {"s": 0.0}  # CPU seconds (this process and its finished children) of the last sweep_once


def sweep_once(corpus: Path, out: Path, jobs: int | None, cluster: str | None = None) -> float:
    from ctxsim.commands.sweep import run_sweep
    from ctxsim.replay.api import Options

    before = os.times()
    start = time.perf_counter()
    run_sweep([str(corpus)], POLICIES, None, Options(jobs=1), None, out, jobs, cluster)
    seconds = time.perf_counter() - start
    after = os.times()
    CPU["s"] = sum(after[:4]) - sum(before[:4])
    return seconds


def same_tree(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all(filecmp.cmp(a / f, b / f, shallow=False) for f in files_a)


def peak_rss_mib(corpus: Path, out: Path) -> tuple[float, float]:
    """Peak RSS of the largest process of `ctxsim sweep -j 2` (a fresh wrapper reads RUSAGE_CHILDREN), and time."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t, code)")
    command = [sys.executable, "-c", probe, str(Path(sys.executable).parent / "ctxsim"), "sweep", str(corpus),
               "--policies", MEMORY_POLICIES, "-j", "2", "-o", str(out)]
    kib, seconds, code = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    if code != "0":
        raise SystemExit(f"ctxsim sweep failed (exit {code})")
    return int(kib) / 1024, float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--big", type=int, default=2000)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    from ctxsim._support.parallel import available_cores

    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-sweep-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        corpus = make_corpus(root / "corpus", args.sessions)
        size = sum(p.stat().st_size for p in corpus.iterdir())
        print(f"corpus: {args.sessions} sessions, {size / 2**20:.1f} MiB, made in {time.perf_counter() - start:.1f} s; "
              f"{len(POLICIES)} policies: {','.join(POLICIES)}; cores: {available_cores()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        warm = root / "warm"  # imports, the tokenizer's ranks, the price data: loaded before any timing
        warm.mkdir()
        for path in sorted(corpus.glob("*.jsonl"))[:2]:
            (warm / path.name).write_bytes(path.read_bytes())
        sweep_once(warm, root / "warm-out", 1)
        load = os.getloadavg()[0]
        one = sweep_once(corpus, root / "one", 1)
        cpu_one = CPU["s"]
        two = sweep_once(corpus, root / "two", 2)
        cpu_two = CPU["s"]
        print(f"1 worker: {one:.2f} s   2 workers: {two:.2f} s   speed-up: {one / two:.2f}x (target >= 1.7)")
        print(f"  CPU used: 1 worker {cpu_one:.2f} s, 2 workers {cpu_two:.2f} s (the same work, split); CPU the "
              f"2 workers got: {cpu_two / two:.2f} of 2 cores (load average before: {load:.1f}, after: "
              f"{os.getloadavg()[0]:.1f}: other processes on the machine take the rest)")
        print(f"1 worker and 2 workers byte-identical (tables, manifest, Parquet): "
              f"{'yes' if same_tree(root / 'one', root / 'two') else 'NO'}")
        if not args.no_dask:
            try:
                import distributed  # noqa: F401
            except ImportError:
                print("dask: skipped (pip install 'ctxsim[dask]')")
            else:
                dask = sweep_once(corpus, root / "dask", 2, "local")
                same = same_tree(root / "dask", root / "two")
                print(f"Dask LocalCluster (2 processes): {dask:.2f} s with its start; tables, manifest and Parquet "
                      f"byte-identical to the process pool: {'yes' if same else 'NO'}")
        if not args.no_memory:
            times = max(1, args.big // args.sessions)
            big = copies(corpus, root / "big", times)
            small_mib, small_s = peak_rss_mib(corpus, root / "mem-small")
            big_mib, big_s = peak_rss_mib(big, root / "mem-big")
            print(f"peak memory, policies {MEMORY_POLICIES}, --jobs 2: {args.sessions} sessions {small_mib:.0f} MiB "
                  f"({small_s:.1f} s), {args.sessions * times} sessions {big_mib:.0f} MiB ({big_s:.1f} s): "
                  f"ratio {big_mib / small_mib:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
