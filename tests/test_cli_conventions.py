"""The command-line conventions people expect: one-line usage errors, "did you mean", -p lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app

ROOT = Path(__file__).resolve().parent.parent
TRACE = str(ROOT / "traces" / "billing-session.jsonl")
runner = CliRunner()


def ctxsim(*args: str) -> subprocess.CompletedProcess[str]:
    """Through `main()`, as the installed command runs (CliRunner skips main's error handling)."""
    return subprocess.run([sys.executable, "-c", "from ctxsim.cli import main; main()", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("args", "expected"), [
    (["replay", "--bogus"], "ctxsim: error: No such option: --bogus"),
    (["frobnicate"], "ctxsim: error: No such command 'frobnicate'"),
    (["replay", "--window", "abc"], "ctxsim: error: Invalid value for '--window'"),
])
def test_usage_errors_are_one_line_with_where_to_look(args: list[str], expected: str) -> None:
    done = ctxsim(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), done.stderr
    assert "--help')" in lines[0] and "Traceback" not in done.stderr and done.stdout == ""


def test_no_command_prints_the_help() -> None:
    done = ctxsim()
    assert done.returncode == 0 and "Commands:" in done.stdout


@pytest.mark.parametrize(("args", "suggestion"), [
    (["replay", TRACE, "--policy", "clera"], "did you mean 'clear'"),
    (["replay", TRACE, "--policy", "cladue-code"], "did you mean 'claude-code'"),
    (["replay", TRACE, "--policy", "clear:triger=3"], "did you mean 'trigger'"),
    (["replay", TRACE, "--provider", "antropic"], "did you mean 'anthropic'"),
    (["replay", TRACE, "--model", "claude-sonet-4-5"], "did you mean 'claude-sonnet-4-5'"),
    (["replay", TRACE, "--tokenizer", "o200k"], "did you mean 'o200k_base'"),
    (["replay", TRACE, "--cache", "antropic"], "did you mean 'anthropic'"),
    (["inspect", TRACE, "--format", "natve"], "did you mean 'native'"),
])
def test_mistyped_names_get_a_suggestion(args: list[str], suggestion: str) -> None:
    done = runner.invoke(app, args)
    assert done.exit_code == 2
    assert suggestion in done.output, done.output


def test_far_off_names_get_no_suggestion() -> None:
    done = runner.invoke(app, ["replay", TRACE, "--policy", "zzzzzz"])
    assert done.exit_code == 2 and "did you mean" not in done.output


def _labels(args: list[str]) -> list[str]:
    done = runner.invoke(app, [*args, "--json", "--no-calibrate"])
    assert done.exit_code == 0, done.output
    return [r["policy"]["label"] for r in json.loads(done.stdout)["runs"]]


def test_policy_lists_repeat_and_split_on_both_commands() -> None:
    both = ["-p", "clear:trigger=30000,keep=3,mask", "-p", "compact"]
    assert _labels(["replay", TRACE, *both]) == ["clear:trigger=30000,keep=3", "mask", "compact"]
    assert _labels(["compare", TRACE, *both]) == ["none", "clear:trigger=30000,keep=3", "mask", "compact"]
    assert _labels(["compare", TRACE, "--policies", "clear", "--policy", "mask"]) == ["none", "clear", "mask"]


def test_shell_completion_completes_commands_and_options() -> None:
    env = {"COMP_WORDS": "ctxsim rep", "COMP_CWORD": "1", "_CTXSIM_COMPLETE": "complete_bash"}
    import os

    done = subprocess.run([sys.executable, "-c", ("import sys; sys.argv[0] = 'ctxsim'; from ctxsim.cli import main; "
                           "main()")], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.split() == ["replay", "report"], (done.stdout, done.stderr)
    assert "--install-completion" in ctxsim("--help").stdout
