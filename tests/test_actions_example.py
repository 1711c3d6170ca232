"""docs/github-actions-ctxsim.yml works as written: its install step names extras that exist, and its
replay, diff and report steps run (here, with this checkout's ctxsim standing in for both venvs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "github-actions-ctxsim.yml"


def _steps() -> dict[str, dict]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    jobs = doc["jobs"]
    assert len(jobs) == 1
    return {step.get("name", ""): step for step in next(iter(jobs.values()))["steps"]}


def test_the_install_step_names_extras_that_exist() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    install = next(s for name, s in _steps().items() if name.startswith("Install ctxsim"))["run"]
    named = re.findall(r"-e '(?:base|new)\[([^\]]+)\]'", install)
    assert named, install
    for group in named:
        assert set(group.split(",")) <= extras, (group, extras)


def test_the_replay_diff_and_report_steps_run(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    steps = _steps()
    env_block = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["env"]
    for side in ("base", "new"):
        (tmp_path / side / "traces").mkdir(parents=True)
        shutil.copy(ROOT / "traces" / "billing-session.jsonl", tmp_path / side / "traces")
        (tmp_path / side / ".ctxsim").mkdir()
        specs = "none\nclear:trigger=30000,keep=3  # the gate's policy\n" if side == "base" else \
            "# tighter on this side\nnone\nclear:trigger=20000,keep=3\n"
        (tmp_path / side / ".ctxsim" / "policies.txt").write_text(specs, encoding="utf-8")
        shim = tmp_path / f"venv-{side}" / "bin" / "ctxsim"
        shim.parent.mkdir(parents=True)
        shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from ctxsim.cli import main; main()' \"$@\"\n",
                        encoding="utf-8")
        shim.chmod(0o755)
    (tmp_path / "out" / "base").mkdir(parents=True)
    (tmp_path / "out" / "new").mkdir(parents=True)
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    env = {**os.environ, **{k: str(v) for k, v in env_block.items()}, "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary), "PYTHONPATH": str(ROOT)}
    for name in ("Replay the trace under each side's policies", "Diff (exit 1 on a regression past the gate)",
                 "Write the pull request's report bundle (charts, tables, report.md)"):
        script = steps[name]["run"]
        done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=False, timeout=600)
        assert done.returncode == 0, (name, done.stderr)
    assert (tmp_path / "out" / "base" / "run.json").is_file() and (tmp_path / "out" / "new" / "run.json").is_file()
    status = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").split())
    assert status["status"] in ("0", "1")  # a gate verdict, not a usage error (2)
    diff = (tmp_path / "out" / "diff.md").read_text(encoding="utf-8")
    assert "clear" in diff and diff == summary.read_text(encoding="utf-8")
    report = tmp_path / "out" / "report"
    assert (report / "report.md").is_file() and (report / "run.json").is_file()
