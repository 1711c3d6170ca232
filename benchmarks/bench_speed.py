"""Issue 31's ratios in one run: start-up, accounting cold and warm, one session, the status line, beside
ccusage (when installed: `npm install -g ccusage@20.0.24`; skipped with a note otherwise) and, with
`--before CHECKOUT`, an earlier ctxsim (`git archive COMMIT | tar -x -C /tmp/before`).

The fake home is built here from the real Claude Code samples in ../shared/traces-real/claude-code
(skipped with a note when they are absent): `--files` copies, each with its own session, request and
message ids (so no response is a copy of another's) in one of seven project folders.

Every figure is one whole process (start-up included) measured from outside by a fresh child's
`getrusage`: CPU = user + system, wall, peak RSS. The commands are interleaved (A, B, C, A, B, C, ...) so a
slow spell of the shared machine falls on all alike; medians of `--repeat` runs; the load average is
printed. On a busy machine wall time mostly measures the wait for a core: read the CPU columns.

Rows: `--version`, `--help`; `inspect --by day --json` of one session and of the whole home, cold
(`--no-cache`: every file read) and warm (the accounting index filled by a first run, nothing changed);
`statusline` warm (nothing appended) and after one appended response. ccusage runs `daily --json
--offline` on the same home (one session: a home holding that file alone).

Usage: python benchmarks/bench_speed.py [--files 200] [--repeat 3] [--before CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# ../shared beside the checkout (a worktree's may sit one folder deeper)
SAMPLES = next((p / "shared" / "traces-real" / "claude-code" for p in Path(__file__).resolve().parents[1:4]
                if (p / "shared" / "traces-real" / "claude-code").is_dir()),
               Path(__file__).resolve().parents[2] / "shared" / "traces-real" / "claude-code")


def fake_home(root: Path, files: int) -> tuple[Path, Path]:
    """A home with `files` varied copies of the samples; and a home holding the largest sample alone."""
    samples = sorted(SAMPLES.glob("*.jsonl"))
    home = root / "home"
    for i in range(files):
        sample = samples[i % len(samples)]
        data = sample.read_bytes()
        for old, new in ((b'"requestId":"req_', b'"requestId":"req_%dx' % i), (b'"id":"msg_', b'"id":"msg_%dx' % i),
                         (b'"sessionId":"', b'"sessionId":"%d-' % i)):
            data = data.replace(old, new)
        folder = home / ".claude" / "projects" / f"-home-dev-proj{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:04d}-{sample.name}").write_bytes(data)
    one = root / "one"
    largest = max(samples, key=lambda p: p.stat().st_size)
    (one / ".claude" / "projects" / "-home-dev-web").mkdir(parents=True)
    shutil.copy(largest, one / ".claude" / "projects" / "-home-dev-web" / largest.name)
    return home, one


PROBE = ("import json, resource, subprocess, sys, time\n"
         "stdin = open(sys.argv[1], 'rb') if sys.argv[1] else subprocess.DEVNULL\n"
         "t = time.perf_counter()\n"
         "p = subprocess.run(sys.argv[2:], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
         "w = time.perf_counter() - t\n"
         "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "sys.stdout.buffer.write(json.dumps([w, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024, p.returncode])"
         ".encode() + b'\\n' + p.stdout)\n")


def measure(cmd: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float, float, bytes]:
    """Wall s, CPU s and peak RSS MiB of one run of `cmd`, in a fresh child, and what it printed."""
    out = subprocess.run([sys.executable, "-c", PROBE, stdin, *cmd], capture_output=True, env=env, check=True).stdout
    head, _, body = out.partition(b"\n")
    wall, cpu, rss, code = json.loads(head)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}")
    return wall, cpu, rss, body


class Runs:
    def __init__(self) -> None:
        self.runs: list[tuple[float, float, float]] = []
        self.out = b""

    def add(self, run: tuple[float, float, float, bytes]) -> None:
        self.runs.append(run[:3])
        self.out = run[3]

    def median(self, i: int) -> float:
        return statistics.median(r[i] for r in self.runs)


def ctxsim_of(checkout: Path | None, entry: str = "ctxsim.cli") -> list[str]:
    """The installed `ctxsim`, or a checkout's run by this Python through its entry module (`ctxsim.cli`
    before ctxsim.__main__ answered `--version` and `statusline` itself)."""
    if checkout is None:
        return [shutil.which("ctxsim") or sys.exit("ctxsim is not on PATH (pip install -e .)")]
    code = f"import sys; sys.path.insert(0, {str(checkout)!r}); from {entry} import main; main()"
    return [sys.executable, "-c", code]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="a checkout of an earlier ctxsim, timed beside this one")
    ap.add_argument("--ours", type=Path, help="time this checkout (a copy of the tree, say) instead of the "
                                             "installed ctxsim")
    args = ap.parse_args()
    if not SAMPLES.is_dir():
        print(f"note: skipped: the real Claude Code samples are not here ({SAMPLES})")
        return
    ours = ctxsim_of(args.ours, "ctxsim.__main__")
    before = ctxsim_of(args.before) if args.before else None
    for checkout in (args.ours, args.before):
        if checkout is not None:  # byte-compiled, as an install is
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "ctxsim")], check=True)
    ccusage = shutil.which("ccusage")
    inspect = ["inspect", "--by", "day", "--json", "--skip-bad-lines", "--source", "claude-code"]
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home, one = fake_home(root, args.files)
        size_mb = sum(p.stat().st_size for p in home.rglob("*.jsonl")) / 1e6

        def env_of(h: Path) -> dict[str, str]:
            env = {**os.environ, "HOME": str(h), "TZ": "UTC"}
            for name in ("CLAUDE_CONFIG_DIR", "XDG_CACHE_HOME", "CTXSIM_PRICE_CACHE", "CTXSIM_INDEX",
                         "PYTHONDONTWRITEBYTECODE"):
                env.pop(name, None)
            return env

        transcript = next((home / ".claude" / "projects").rglob("*spotter*.jsonl"))
        status_in = root / "status.json"
        status_in.write_text(json.dumps({"session_id": "x", "transcript_path": str(transcript),
                                         "model": {"id": "claude-opus-4-1"}}), encoding="utf-8")
        for h in (home, one):  # fill the price caches and the index: the warm rows read them
            subprocess.run([*ours, *inspect], env=env_of(h), capture_output=True, check=True)
        subprocess.run([*ours, "statusline"], env=env_of(home), stdin=status_in.open("rb"), capture_output=True,
                       check=True)
        cases: list[tuple[str, Path, list[str], str, bool]] = [
            # label, home, ctxsim args, stdin file, compare with ccusage
            ("--version", root, ["--version"], "", False),
            ("--help", root, ["--help"], "", False),
            ("1 session, cold", one, [*inspect, "--no-cache"], "", True),
            (f"{args.files} files ({size_mb:.0f} MB), cold", home, [*inspect, "--no-cache"], "", True),
            (f"{args.files} files, warm (unchanged)", home, inspect, "", True),
            ("statusline, warm", home, ["statusline"], str(status_in), False),
        ]
        for label, h, argv, stdin, vs_ccusage in cases:
            env = env_of(h)
            mine, old, theirs = Runs(), Runs(), Runs()
            before_argv = [a for a in argv if a != "--no-cache"]  # an earlier ctxsim has no index to skip
            for _ in range(args.repeat):
                mine.add(measure([*ours, *argv], env, stdin))
                if before and argv != ["statusline"]:
                    old.add(measure([*before, *before_argv], env, stdin))
                if ccusage and vs_ccusage:
                    theirs.add(measure([ccusage, "daily", "--json", "--offline"], env))
            row = [label, f"{mine.median(1):.3f}", f"{mine.median(0):.3f}", f"{mine.median(2):.0f}"]
            row += [f"{old.median(1):.3f}", f"{old.median(0):.3f}", f"{old.median(2):.0f}",
                    f"{mine.median(1) / old.median(1):.2f}"] if old.runs else ["-"] * 4
            row += [f"{theirs.median(1):.3f}", f"{theirs.median(0):.3f}", f"{theirs.median(2):.0f}",
                    f"{mine.median(1) / theirs.median(1):.2f}", f"{mine.median(2) / theirs.median(2):.2f}"] \
                if theirs.runs else ["-"] * 5
            if argv and argv[0] == "inspect":
                totals = json.loads(mine.out)["totals"]
                row.append(f"{totals['cost_usd']}")
                if theirs.runs:
                    row.append(f"{json.loads(theirs.out).get('totals', {}).get('totalCost', 0):.4f}")
            elif argv == ["statusline"]:
                row.append(mine.out.decode().strip())
            rows.append(row)
    head = ["case", "CPU s", "wall s", "MiB", "before CPU", "before wall", "before MiB", "CPU / before",
            "ccusage CPU", "ccusage wall", "ccusage MiB", "CPU / ccusage", "MiB / ccusage", "ctxsim USD"]
    if ccusage:
        head.append("ccusage USD")
    width = max(len(r) for r in [head, *rows])
    rows = [r + [""] * (width - len(r)) for r in rows]
    head += [""] * (width - len(head))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(width)]
    for r in [head, *rows]:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    load = os.getloadavg()
    print(f"\nmedians of {args.repeat} interleaved runs; whole processes (start-up included); CPU = user + system; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores at the end")
    if not ccusage:
        print("note: ccusage is not installed (npm install -g ccusage@20.0.24): its columns are left empty")
    if not before:
        print("note: no --before checkout: its columns are left empty")


if __name__ == "__main__":
    main()
