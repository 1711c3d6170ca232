"""docs/github-actions-ctxsim.yml works copied unchanged into a repository that is not ctxsim: its install,
replay and diff steps run with bash in a scratch git repository (a traces/ folder, a base commit and a pull
request's commit that makes the session heavier), and the comment body it writes holds the diff's verdict
and report.md's Mermaid charts. The install step is not run here (it needs the network): this checkout's
ctxsim stands in for it, as a `ctxsim` command first on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "github-actions-ctxsim.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps() -> dict[str, dict]:
    jobs = _workflow()["jobs"]
    assert len(jobs) == 1
    return {step.get("name", ""): step for step in next(iter(jobs.values()))["steps"]}


def _trace(turns: int, output_chars: int) -> str:
    lines = [{"type": "session", "version": 1, "id": "team-session", "source": "hand", "model": "gpt-4o-2024-08-06",
              "provider": "openai", "system": "You are a careful coding agent."}]
    for i in range(turns):
        lines += [
            {"type": "message", "role": "user", "content": f"step {i}", "ts": f"2026-01-13T16:{10 + i:02d}:00Z"},
            {"type": "message", "role": "assistant", "content": "reading", "ts": f"2026-01-13T16:{10 + i:02d}:05Z",
             "tool_calls": [{"id": f"c{i}", "name": "read_file", "arguments": {"path": f"f{i}.py"}}]},
            {"type": "message", "role": "tool", "tool_call_id": f"c{i}", "name": "read_file",
             "content": f"line {i} " * output_chars, "ts": f"2026-01-13T16:{10 + i:02d}:07Z"},
        ]
    lines.append({"type": "message", "role": "assistant", "content": "done", "ts": "2026-01-13T17:00:00Z"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_the_workflow_is_self_contained() -> None:
    """What a team copies: installs from CTXSIM_PIP_SPEC (a pinned git tag), never from a checkout of ctxsim."""
    doc = _workflow()
    env = doc["env"]
    assert env["CTXSIM_PIP_SPEC"].startswith("ctxsim[parquet] @ git+https://") and "@v" in env["CTXSIM_PIP_SPEC"]
    triggers = doc[True] if True in doc else doc["on"]  # YAML 1.1 reads `on` as true
    assert triggers["pull_request"]["paths"] == [env["TRACES_DIR"] + "/**"]
    runs = "\n".join(s.get("run", "") for s in _steps().values())
    assert '"$CTXSIM_PIP_SPEC"' in runs and "-e ." not in runs and "path:" not in str(_steps()["Check out the pull "
                                                                                            "request (with history, "
                                                                                            "for the base's traces)"])
    comment = next(s for s in _steps().values() if "sticky-pull-request-comment" in str(s.get("uses")))
    assert comment["with"]["path"] == "out/comment.md"


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("git") is None, reason="needs bash and git")
def test_the_steps_run_in_a_team_repository(tmp_path: Path) -> None:
    repo = tmp_path / "agent"
    (repo / "traces").mkdir(parents=True)
    (repo / "README.md").write_text("an agent, not ctxsim\n", encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    (repo / "traces" / "session.jsonl").write_text(_trace(6, 200), encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "traces" / "session.jsonl").write_text(_trace(8, 600), encoding="utf-8")  # the PR: a heavier session
    _git(repo, "commit", "-q", "-am", "pr")

    bin_dir = tmp_path / "bin"  # the installed ctxsim: this checkout's, on PATH
    bin_dir.mkdir()
    (bin_dir / "ctxsim").write_text(f'#!/bin/sh\nexec {sys.executable} -m ctxsim "$@"\n', encoding="utf-8")
    (bin_dir / "ctxsim").chmod(0o755)
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    env = {**os.environ, **{k: str(v) for k, v in _workflow()["env"].items()}, "BASE_SHA": base_sha,
           "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "PYTHONPATH": str(ROOT),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    steps = _steps()
    assert steps["Install ctxsim"]["run"] == 'python -m pip install --quiet "$CTXSIM_PIP_SPEC"'
    for name in ("Replay the base's traces and the pull request's",
                 "Diff (exit 1 on a regression past the gate)"):
        done = subprocess.run(["bash", "-e", "-c", steps[name]["run"]], cwd=repo, env=env, capture_output=True,
                              text=True, check=False, timeout=120)
        assert done.returncode == 0, (name, done.stdout, done.stderr)

    status = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").split())
    assert status["status"] == "1"  # the heavier session costs more than 5% over the base: the gate fails
    comment = (repo / "out" / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("### ctxsim diff: ❌ cost regressed by more than 5%")
    assert comment.count("```mermaid") == 4  # the diff's two charts and report.md's two
    assert '    line "new clear:trigger=30000,keep=3" [' in comment and "### ctxsim: session" in comment
    assert "line 3 line 3" not in comment  # no trace text
    assert summary.read_text(encoding="utf-8") == comment
