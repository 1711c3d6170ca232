"""Discovery: with no path, inspect reads the sessions where the products keep them (a fake home)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from session_makers import Step, claude_code, codex, gemini, unix
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.commands.formats import describe_formats
from ctxsim.discover import discover, discovery_specs

FIXTURES = Path(__file__).parent / "fixtures"
T = unix("2026-01-13T10:00:00Z")


def run(home: Path, *args: str, **env: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env={"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "",
                                                    **env})


def fake_home(home: Path) -> dict[str, int]:
    """Claude Code (both default folders), Codex, Gemini CLI and Cline sessions; source -> requests."""
    claude_code(home / ".claude/projects/-home-u-shop/s1.jsonl", "s1", "/home/u/shop", [Step(T), Step(T + 9)])
    claude_code(home / ".config/claude/projects/-home-u-web/s2.jsonl", "s2", "/home/u/web", [Step(T + 99)])
    codex(home / ".codex/sessions/2026/01/13/rollout-2026-01-13T10-00-00-x.jsonl", "x", "/home/u/api",
          [Step(T), Step(T + 5, read=900, uncached=200), Step(T + 9)])
    gemini(home / ".gemini/tmp/ab12/chats/session-2026-01-13T10-00-ab12.json", "g", "ab12" * 16, [Step(T)])
    (home / ".gemini/tmp/ab12/logs.json").write_text("[]")  # not a chat: not picked up
    tasks = home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"
    shutil.copytree(FIXTURES / "tiny" / "cline", tasks / "1768323361000")
    return {"claude-code": 3, "codex": 3, "gemini-cli": 1, "cline": 2}


def test_inspect_with_no_path_finds_every_product(tmp_path):
    expected = fake_home(tmp_path)
    result = run(tmp_path, "inspect", "--json", "--by", "model")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["files"] == 5 and data["totals"]["requests"] == sum(expected.values())
    for source, requests in expected.items():
        one = json.loads(run(tmp_path, "inspect", "--json", "--source", source).stdout)
        assert one["totals"]["requests"] == requests, source
    projects = json.loads(run(tmp_path, "inspect", "--json", "--by", "project").stdout)["by"]["groups"]
    assert {"shop", "web", "api", "gemini:ab12ab12ab12", "task 1768323361000"} <= set(projects)


def test_env_folders_replace_the_defaults(tmp_path):
    fake_home(tmp_path)
    one, two = tmp_path / "conf1", tmp_path / "conf2"
    claude_code(one / "projects/-p/a.jsonl", "a", "/p", [Step(T)])
    claude_code(two / "projects/-q/b.jsonl", "b", "/q", [Step(T), Step(T + 1)])
    found = {f.source: f for f in discover(environ={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": f"{one},{two}",
                                                    "CODEX_HOME": str(tmp_path / "nocodex")})}
    assert [p.folder for p in found["claude-code"].places] == [f"{one}/projects", f"{two}/projects"]
    assert len(found["claude-code"].files) == 2  # the ~/.claude ones are not read when the variable is set
    assert found["codex"].files == [] and not found["codex"].places[0].exists
    data = json.loads(run(tmp_path, "inspect", "--json", "--source", "claude-code",
                          CLAUDE_CONFIG_DIR=f"{one},{two}").stdout)
    assert data["totals"]["requests"] == 3


def test_formats_list_says_where_it_looked(tmp_path):
    fake_home(tmp_path)
    text = run(tmp_path, "formats", "list")
    assert text.exit_code == 0
    assert f"{tmp_path}/.claude/projects (default): 1 file(s)" in text.stdout
    assert f"{tmp_path}/.gemini/tmp (default): 1 file(s)" in text.stdout
    assert f"{tmp_path}/.cline/data/tasks (default): not found" in text.stdout
    data = json.loads(run(tmp_path, "formats", "list", "--json").stdout)
    assert data["codex"]["discovered"]["files"] == 1 and data["claude-code"]["discovered"]["files"] == 2


def test_no_sessions_is_a_clear_error(tmp_path):
    result = run(tmp_path, "inspect")
    assert result.exit_code == 2 and "no sessions found where the agents keep them" in result.stderr
    assert "Traceback" not in result.output
    bad = run(tmp_path, "inspect", "--source", "aider")
    assert bad.exit_code == 2 and "--source must be one of" in bad.stderr


def test_each_discovery_folder_is_in_its_readers_location_text():
    """One source of truth: the folders searched are the ones `formats show` tells the user about."""
    about = describe_formats()
    for name, spec in discovery_specs().items():
        text = about[name]["location"]
        for folder in spec["folders"]:
            tail = folder.rstrip("/").rsplit("/", 2)
            assert tail[-2] in text or tail[-1] in text, (name, folder)


# ---------------------------------------------------------------- validate and convert discover too (issue 16)
def test_validate_with_no_path_reads_the_sessions_found(tmp_path):
    expected = fake_home(tmp_path)
    every = run(tmp_path, "validate", "--json", "--no-calibrate")
    assert every.exit_code == 0, every.output
    assert "reading 5 session file(s) found" in every.stderr
    data = json.loads(every.stdout)
    assert data["requests"] == sum(expected.values())
    one = run(tmp_path, "validate", "--json", "--no-calibrate", "--source", "codex")
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["requests"] == expected["codex"] and "(codex)" in one.stderr
    both = run(tmp_path, "validate", str(tmp_path / ".codex"), "--source", "codex")
    assert both.exit_code == 2 and "give either paths or --source" in both.stderr


def test_convert_with_no_path_converts_the_sessions_found(tmp_path):
    from ctxsim.formats import read_traces

    expected = fake_home(tmp_path)
    out = tmp_path / "out" / "claude.jsonl"
    res = run(tmp_path, "convert", "--source", "claude-code", "-o", str(out))
    assert res.exit_code == 0, res.output
    trace = read_traces([str(out)], "native", False, [])
    assert sum(s.requests for s in trace.sessions) == expected["claude-code"]
    assert {s.id for s in trace.sessions} >= {"s1", "s2"}
    everything = tmp_path / "out" / "all.jsonl"
    assert run(tmp_path, "convert", "-o", str(everything)).exit_code == 0
    assert sum(s.requests for s in read_traces([str(everything)], "native", False, []).sessions) == \
        sum(expected.values())
    # a discovered log is an input too: converting onto it is refused, and so is a suffix it cannot write
    log = tmp_path / ".claude/projects/-home-u-shop/s1.jsonl"
    before = log.read_bytes()
    onto = run(tmp_path, "convert", "-o", str(log))
    assert onto.exit_code == 2 and "input" in onto.stderr and log.read_bytes() == before
    assert run(tmp_path, "convert", "-o", str(tmp_path / "x.json")).exit_code == 2


def test_validate_and_convert_with_nothing_found_say_where_they_looked(tmp_path):
    for args in (["validate"], ["convert", "-o", str(tmp_path / "x.jsonl")]):
        result = run(tmp_path, *args)
        assert result.exit_code == 2 and "no sessions found where the agents keep them" in result.stderr
        assert f"{tmp_path}/.claude/projects" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "x.jsonl").exists()
