"""Golden outputs: what `compare`, `sweep` and `tune` write for a fixed set of traces, to hold a refactor to.

A development tool, not a test: run it on a checkout before a change and on one after, into two folders,
and compare them (`diff -r BEFORE AFTER`: empty when the change kept every output byte-identical).

    python benchmarks/golden.py OUT [--quick]

For each trace (the shipped sample traces/billing-session.jsonl, the trace fixtures under tests/fixtures,
and the real transcripts of at most 1 MB in /work/shared/traces-real when that folder exists) it runs
`ctxsim compare` with every registered policy, every preset and a few pipelines, calibrated and with
`--no-calibrate`, writing the run artefact (`run.json`), then renders the CSV and the Markdown report (without
its charts) from it with `ctxsim report`; plus one `sweep --budgets` and one `tune --json` on the shipped
sample. Every command runs in this process, with `-j 1`. A trace that a command refuses leaves its one-line
error and exit code in `OUT/NAME.err`, so a refusal that changes is a difference too. `--quick` leaves the
real transcripts out.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared/traces-real")
PIPELINES = [
    "clear:trigger=30000,keep=3+compact:keep_recent=10",
    "mask+truncate",
    "clear_thinking+clear:trigger=20000",
]
SWEEP_POLICIES = "none,clear,compact,scored,tiered"
SWEEP_BUDGETS = "30k,60%"


def specs() -> list[str]:
    """Every registered policy (but `pipeline`, which needs its stages) and preset by name, then the pipelines."""
    from ctxsim.policies import policies
    from ctxsim.presets import presets

    names = sorted(name for name in policies() if name != "pipeline") + sorted(presets())  # pipelines below
    return names + PIPELINES


def traces(quick: bool) -> list[Path]:
    """The shipped sample, a fixture per format (tests/fixtures/tiny) and the other fixtures of tests/fixtures
    that are traces, and the real transcripts of at most 1 MB."""
    fixtures = ROOT / "tests" / "fixtures"
    found = [ROOT / "traces" / "billing-session.jsonl", fixtures / "tiny" / "cline"]
    for path in sorted(fixtures.rglob("*")):
        if path.is_file() and path.suffix in {".jsonl", ".json", ".traj", ".md"} and "cline" not in path.parts:
            found.append(path)
    if not quick and SHARED.is_dir():
        found.extend(p for p in sorted(SHARED.rglob("*"))
                     if p.is_file() and p.name != "README.md" and p.stat().st_size <= 1_000_000)
    return found


def shown(path: Path) -> str:
    """The path as the command gets it: relative to the checkout when inside it, so that the outputs of two
    checkouts name the same trace alike."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def label(path: Path) -> str:
    for base in (ROOT, SHARED):
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        return str(rel).replace(os.sep, "__")
    return path.name


def run(argv: list[str], out: Path, name: str, stdout: io.StringIO | None = None) -> bool:
    """One command, in this process (a process each would spend most of the time starting Python); its refusal
    (exit code and stderr) kept as NAME.err; True when it succeeded."""
    from ctxsim.cli import main as cli_main

    err = io.StringIO()
    sys.argv = ["ctxsim", *argv]
    code: int | str | None = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout or io.StringIO()):
        try:
            cli_main()
        except SystemExit as exc:
            code = exc.code
    if code not in (0, None):
        (out / f"{name}.err").write_text(f"exit {code}\n{err.getvalue()}")
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    os.chdir(ROOT)
    policies = ",".join(specs())
    (out / "specs.txt").write_text(policies.replace(",", "\n") + "\n")
    for trace in traces(args.quick):
        for calibrate in ("--calibrate", "--no-calibrate"):
            name = f"{label(trace)}{'' if calibrate == '--calibrate' else '.raw'}"
            run_json = out / f"{name}.run.json"
            argv = ["compare", shown(trace), "--policies", policies, calibrate, "-j", "1", "-o", str(run_json)]
            if not run(argv, out, name):
                continue
            run(["report", str(run_json), "-o", str(out / f"{name}.csv")], out, f"{name}.csv")
            run(["report", str(run_json), "--no-charts", "-o", str(out / f"{name}.md")], out, f"{name}.md")
    sample = ROOT / "traces" / "billing-session.jsonl"
    sweep = out / "sweep"
    run(["sweep", shown(sample), "--policies", SWEEP_POLICIES, "--budgets", SWEEP_BUDGETS, "-j", "1",
         "-o", f"{sweep}/"], out, "sweep")
    for parquet in sorted(sweep.rglob("*.parquet")):  # bytes hold the writer's version: compare the rows
        import pyarrow.parquet as pq

        parquet.with_suffix(".rows.txt").write_text(pq.read_table(parquet).to_pandas().to_csv(index=False))
        parquet.unlink()
    tuned = io.StringIO()
    run(["tune", shown(sample), "--family", "clear", "--trials", "6", "--seed", "1", "--json"], out, "tune", tuned)
    (out / "tune.json").write_text(tuned.getvalue())
    print(f"golden outputs in {out}: {sum(1 for _ in out.rglob('*'))} files")


if __name__ == "__main__":
    main()
