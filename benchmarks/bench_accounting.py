"""Accounting across a corpus: `ctxsim inspect --by day` over 1, 20 and 200 Claude Code session files,
wall time and peak memory (RSS) of each run, beside ccusage's on the same fake home when it is installed
(`npm install -g ccusage`; skipped with a note otherwise), and `ctxsim --help` (target <= 0.2 s). With
`--before CHECKOUT` an earlier ctxsim is timed beside this one, in the same run.

On a loaded machine wall time mostly measures the wait for a core: CPU time (user + system) is printed
beside it, and its ratio. Each corpus starts with an empty price cache: the first run's CPU is printed
apart, the rest are best of --repeat.

The sessions are generated (Claude Code 2.1 lines, one user prompt, a tool call and its result of a few
KB per request, cache reads growing with the prompt), so the corpus is the same on every machine. With
--real, the real Claude Code 2.1.1 sample in ../shared/traces-real is also timed alone.

Memory is bounded by the largest session, not the corpus: the 200-file run's peak RSS over the 20-file
run's is printed (target: close to 1.0; the small per-request records are all that grows).

Usage: python benchmarks/bench_accounting.py [--requests 200] [--repeat 3] [--real] [--before CHECKOUT]
       [--sizes 1,20,200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REAL = Path(__file__).resolve().parents[2] / "shared" / "traces-real" / "claude-code" / \
    "mclaude-21e3c711-v211-web-main-with-subagent.jsonl"
HOUR = 3600


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def write_session(path: Path, n: int, requests: int, start: float) -> None:
    sid = f"bench-{n:05d}"
    lines = []
    parent = None
    prompt = 12_000
    t = start

    def env(kind: str, uuid: str, **more: object) -> dict:
        nonlocal parent
        line = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": f"/home/dev/proj{n % 7}",
                "sessionId": sid, "version": "2.1.1", "gitBranch": "main", "type": kind, "uuid": uuid,
                "timestamp": iso(t), **more}
        parent = uuid
        return line

    lines.append(env("user", f"{sid}-u", message={"role": "user", "content": "Make the test suite pass."}))
    for i in range(requests):
        t += 20 + (i * 37) % 90
        grow = 600 + (i * 131) % 2500
        usage = {"input_tokens": 4, "cache_creation_input_tokens": grow, "cache_read_input_tokens": prompt,
                 "cache_creation": {"ephemeral_5m_input_tokens": grow, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": 80 + i % 300, "service_tier": "standard"}
        prompt += grow
        lines.append(env("assistant", f"{sid}-a{i}", requestId=f"req_{sid}_{i}", message={
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{sid}_{i}", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Looking at the next file."},
                        {"type": "tool_use", "id": f"toolu_{sid}_{i}", "name": "Read",
                         "input": {"file_path": f"src/mod{i}.py"}}],
            "stop_reason": "tool_use", "usage": usage}))
        t += 1
        lines.append(env("user", f"{sid}-r{i}", message={"role": "user", "content": [
            {"tool_use_id": f"toolu_{sid}_{i}", "type": "tool_result",
             "content": f"def f{i}(x):\n    return x + {i}\n" * 120}]}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def fake_home(root: Path, files: int, requests: int) -> Path:
    home = root / f"home-{files}"
    for n in range(files):
        folder = home / ".claude" / "projects" / f"-home-dev-proj{n % 7}"
        write_session(folder / f"bench-{n:05d}.jsonl", n, requests, 1_767_225_600 + n * 4 * HOUR)
    return home


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one run, in a fresh child (its own
    getrusage)."""
    probe = ("import resource, subprocess, sys, time, json\n"
             "t = time.perf_counter()\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "w = time.perf_counter() - t\n"
             "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "sys.stderr.buffer.write(p.stderr)\n"
             "sys.stdout.buffer.write(json.dumps([w, r.ru_utime + r.ru_stime, r.ru_maxrss, "
             "p.returncode]).encode() + b'\\n' + p.stdout)\n")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, env=env, check=True).stdout
    head, _, body = out.partition(b"\n")
    wall, cpu, rss_kib, rc = json.loads(head)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {rc}")
    return wall, cpu, rss_kib / 1024, body


class Best:
    """The best wall and CPU time and the largest peak RSS over the repeats; the first run's apart."""

    def __init__(self) -> None:
        self.runs: list[tuple[float, float, float]] = []
        self.out = b""

    def add(self, run: tuple[float, float, float, bytes]) -> None:
        self.runs.append(run[:3])
        self.out = run[3]

    @property
    def wall(self) -> float:
        return min(r[0] for r in self.runs[1:] or self.runs)

    @property
    def cpu(self) -> float:
        return min(r[1] for r in self.runs[1:] or self.runs)

    @property
    def rss(self) -> float:
        return max(r[2] for r in self.runs[1:] or self.runs)

    @property
    def first(self) -> tuple[float, float]:
        return self.runs[0][:2]


def ctxsim_command(checkout: Path | None) -> list[str]:
    """The installed `ctxsim`, or (`--before`) the ctxsim of another checkout run by this Python."""
    if checkout is None:
        return [shutil.which("ctxsim") or sys.exit("ctxsim is not on PATH (pip install -e .)")]
    code = f"import sys; sys.path.insert(0, {str(checkout)!r}); from ctxsim.cli import main; main()"
    return [sys.executable, "-c", code]


def compiled(checkout: Path) -> None:
    """Byte-compile a checkout's package, as an install does (PYTHONDONTWRITEBYTECODE would make every run
    compile every module it imports again)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "ctxsim")], check=True,
                   capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200, help="requests per generated session")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--real", action="store_true", help="also time the real Claude Code 2.1.1 sample alone")
    ap.add_argument("--before", type=Path, help="a checkout of an earlier ctxsim, timed beside this one "
                                               "(git worktree add /tmp/before COMMIT)")
    ap.add_argument("--sizes", default="1,20,200", help="generated corpora: files per corpus")
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    ours_cmd = ctxsim_command(None)
    before_cmd = ctxsim_command(args.before) if args.before else None
    ccusage = shutil.which("ccusage")
    for checkout in (here, args.before):
        if checkout is not None:
            compiled(checkout)
    inspect = ["inspect", "--by", "day", "--json", "--skip-bad-lines", "--source", "claude-code"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        cases = [(f"{n} file(s) x {args.requests} requests", fake_home(root, n, args.requests))
                 for n in map(int, args.sizes.split(","))]
        if args.real and REAL.exists():
            home = root / "home-real"
            (home / ".claude" / "projects" / "-home-dev-web").mkdir(parents=True)
            shutil.copy(REAL, home / ".claude" / "projects" / "-home-dev-web" / REAL.name)
            cases.insert(0, ("real 2.1.1 sample (1 file)", home))
        cases.insert(0, ("ctxsim --help", root))
        for label, home in cases:
            # a fresh home each: its price cache (~/.cache/ctxsim/prices) is empty at the first run
            env = {**os.environ, "HOME": str(home), "TZ": "UTC"}
            for name in ("CLAUDE_CONFIG_DIR", "XDG_CACHE_HOME", "CTXSIM_PRICE_CACHE", "PYTHONDONTWRITEBYTECODE"):
                env.pop(name, None)
            args_of = ["--help"] if label == "ctxsim --help" else inspect
            ours, before, theirs = Best(), Best(), Best()
            for _ in range(args.repeat + 1):  # interleaved, so that a slow spell falls on all alike
                ours.add(measure([*ours_cmd, *args_of], env))
                if before_cmd:
                    before.add(measure([*before_cmd, *args_of], env))  # an earlier ctxsim has no price cache
                if ccusage and label != "ctxsim --help":
                    theirs.add(measure([ccusage, "daily", "--json", "--offline"], env))
            row = [label, f"{ours.wall:.2f}", f"{ours.cpu:.2f}", f"{ours.first[1]:.2f}", f"{ours.rss:.0f}"]
            if before_cmd:
                row += [f"{before.wall:.2f}", f"{before.cpu:.2f}", f"{before.rss:.0f}"]
            if label == "ctxsim --help":
                rows.append(row)  # padded below
                continue
            totals = json.loads(ours.out)["totals"]
            row += [f"{totals['input_tokens']:,}", totals["cost_usd"]]
            if ccusage:
                t = json.loads(theirs.out).get("totals", {})
                their_input = sum(int(t.get(k, 0)) for k in ("inputTokens", "cacheCreationTokens", "cacheReadTokens"))
                row += [f"{theirs.wall:.2f}", f"{theirs.cpu:.2f}", f"{theirs.rss:.0f}",
                        f"{ours.wall / theirs.wall:.2f}", f"{ours.cpu / theirs.cpu:.2f}",
                        f"{ours.rss / theirs.rss:.2f}",
                        f"{their_input:,}", f"{t.get('totalCost', 0):.4f}"]
            rows.append(row)
    head = ["corpus", "ctxsim s", "CPU s", "1st CPU s", "MiB"]
    if before_cmd:
        head += ["before s", "before CPU s", "before MiB"]
    head += ["input tokens", "cost USD"]
    if ccusage:
        head += ["ccusage s", "CPU s", "MiB", "time ratio", "CPU ratio", "memory ratio", "ccusage input", "ccusage USD"]
    rows = [r + [""] * (len(head) - len(r)) for r in rows]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)))
    print(f"\nbest of {args.repeat} after a first run (its CPU in '1st CPU s': an empty price cache, genai-prices "
          f"imported); interleaved; CPU = user + system of the process and its children; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end")
    by = {r[0].split(" ")[0]: float(r[4]) for r in rows if r[0][0].isdigit()}
    if "20" in by and "200" in by:
        print(f"peak RSS, 200 files / 20 files: {by['200'] / by['20']:.2f} (bounded by the largest session: ~1)")
    if not ccusage:
        print("note: ccusage is not installed (npm install -g ccusage): only ctxsim's own figures are shown")

if __name__ == "__main__":
    main()
