"""Accounting across a corpus: `ctxsim inspect --by day` over 1, 20 and 200 Claude Code session files,
wall time and peak memory (RSS) of each run, beside ccusage's on the same fake home when it is installed
(`npm install -g ccusage`; skipped with a note otherwise).

The sessions are generated (Claude Code 2.1 lines, one user prompt, a tool call and its result of a few
KB per request, cache reads growing with the prompt), so the corpus is the same on every machine. With
--real, the real Claude Code 2.1.1 sample in ../shared/traces-real is also timed alone.

Memory is bounded by the largest session, not the corpus: the 200-file run's peak RSS over the 20-file
run's is printed (target: close to 1.0; the small per-request records are all that grows).

Usage: python benchmarks/bench_accounting.py [--requests 200] [--repeat 3] [--real]
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


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall seconds and peak RSS (MiB) of one run, in a fresh child (its own getrusage)."""
    probe = ("import resource, subprocess, sys, time, json\n"
             "t = time.perf_counter()\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "w = time.perf_counter() - t\n"
             "sys.stderr.buffer.write(p.stderr)\n"
             "sys.stdout.buffer.write(json.dumps([w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
             "p.returncode]).encode() + b'\\n' + p.stdout)\n")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, env=env, check=True).stdout
    head, _, body = out.partition(b"\n")
    wall, rss_kib, rc = json.loads(head)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {rc}")
    return wall, rss_kib / 1024, body


def best(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, float, bytes]:
    runs = [measure(cmd, env) for _ in range(repeat)]
    return min(r[0] for r in runs), max(r[1] for r in runs), runs[-1][2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200, help="requests per generated session")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--real", action="store_true", help="also time the real Claude Code 2.1.1 sample alone")
    args = ap.parse_args()
    ctxsim = shutil.which("ctxsim") or sys.exit("ctxsim is not on PATH (pip install -e .)")
    ccusage = shutil.which("ccusage")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        cases = [(f"{n} file(s) x {args.requests} requests", fake_home(root, n, args.requests)) for n in (1, 20, 200)]
        if args.real and REAL.exists():
            home = root / "home-real"
            (home / ".claude" / "projects" / "-home-dev-web").mkdir(parents=True)
            shutil.copy(REAL, home / ".claude" / "projects" / "-home-dev-web" / REAL.name)
            cases.insert(0, ("real 2.1.1 sample (1 file)", home))
        for label, home in cases:
            env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": "", "TZ": "UTC"}
            env.pop("CLAUDE_CONFIG_DIR")
            wall, rss, out = best([ctxsim, "inspect", "--by", "day", "--json", "--skip-bad-lines",
                                   "--source", "claude-code"], env, args.repeat)
            ours = json.loads(out)["totals"]
            row = [label, f"{wall:.2f}", f"{rss:.0f}", f"{ours['input_tokens']:,}", ours["cost_usd"]]
            if ccusage:
                c_wall, c_rss, c_out = best([ccusage, "daily", "--json", "--offline"], env, args.repeat)
                theirs = json.loads(c_out).get("totals", {})
                their_input = sum(int(theirs.get(k, 0)) for k in ("inputTokens", "cacheCreationTokens",
                                                                   "cacheReadTokens"))
                row += [f"{c_wall:.2f}", f"{c_rss:.0f}", f"{wall / c_wall:.2f}", f"{rss / c_rss:.2f}",
                        f"{their_input:,}", f"{theirs.get('totalCost', 0):.4f}"]
            rows.append(row)
    head = ["corpus", "ctxsim s", "ctxsim MiB", "input tokens", "cost USD"]
    if ccusage:
        head += ["ccusage s", "ccusage MiB", "time ratio", "memory ratio", "ccusage input", "ccusage USD"]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=False)))
    by = {r[0].split(" ")[0]: float(r[2]) for r in rows}
    if "20" in by and "200" in by:
        print(f"\npeak RSS, 200 files / 20 files: {by['200'] / by['20']:.2f} (bounded by the largest session: ~1)")
    if not ccusage:
        print("\nnote: ccusage is not installed (npm install -g ccusage): only ctxsim's own figures are shown")


if __name__ == "__main__":
    main()
