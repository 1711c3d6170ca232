"""Readers of SQLite session stores (issue 30): Crush, Goose, OpenCode's opencode.db; and Factory Droid.
Fixtures: tests/fixtures/make_sqlite_fixtures.py (rows written by hand there, in the product's own schema)."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.discover import discovered_files
from ctxsim.formats import FileReport, detect, read_traces
from ctxsim.replay.recorded import own_cost

READERS = Path(__file__).parent / "fixtures" / "readers"
CRUSH_PROJECT = READERS / "crush-project"


def only(found: list[tuple[str, str]]) -> str:
    assert len(found) == 1
    return found[0][0]


def test_crush_database_is_found_in_the_project_and_read_with_its_subagent(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(CRUSH_PROJECT)
    found = discovered_files("crush", {"HOME": "/nonexistent"})
    assert found == [("./.crush/crush.db", "crush")]
    path = CRUSH_PROJECT / ".crush" / "crush.db"
    before = path.read_bytes()
    assert detect(str(path), before[:65536]).name == "crush"
    report: list[FileReport] = []
    main, sub = read_traces([str(path)], report=report).sessions
    assert path.read_bytes() == before  # opened read-only
    assert [m.role for m in main.messages] == ["user", "assistant", "tool", "assistant"]
    assert main.messages[0].content == "Why does a.py fail?"  # the image part skipped
    call = main.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("toolu_01", "view", {"file_path": "a.py"})
    assert main.messages[1].thinking == "Read it first." and main.messages[1].ts == "2026-03-02T10:00:04Z"
    assert main.messages[2].tool_call_id == "toolu_01" and main.messages[2].content == "1/0\n"
    assert (main.model, main.provider) == ("claude-sonnet-4-5-20250929", "anthropic")
    assert main.extra["cwd"] == str(CRUSH_PROJECT)
    # no per-request usage; the session's own cost (Crush's includes its subagent's) and the last request's sizes
    assert all(m.usage is None for m in main.messages + sub.messages)
    assert main.extra["recorded_totals"] == {"requests": 2, "cost_usd": "0.0102", "cost_with_subagents_usd": "0.0123"}
    assert main.extra["last_request"] == {"prompt_tokens": 5230, "output_tokens": 88}
    assert own_cost(main) == Decimal("0.0102") and own_cost(sub) == Decimal("0.0021")  # 0.0123 less its subagent's
    assert sub.extra["parent_session"] == main.id == "s-main"
    assert [m.role for m in sub.messages] == ["user", "assistant"] and sub.model == "claude-haiku-4-5-20251001"
    notes = " ".join(n for r in report for n in r.notes)
    assert "1 user image_url parts" in notes and "1 system messages" in notes


def test_a_crush_database_from_stdin_or_damaged_is_one_line_exit_2(tmp_path: Path):
    source = CRUSH_PROJECT / ".crush" / "crush.db"
    runner = CliRunner()
    result = runner.invoke(app, ["inspect", "-", "--format", "crush"], input=source.read_bytes())
    assert result.exit_code == 2 and "cannot be read from stdin" in result.output
    assert "Traceback" not in result.output
    damaged = tmp_path / "crush.db"
    shutil.copy(source, damaged)
    damaged.write_bytes(source.read_bytes()[:100] + b"\x00" * 4000)
    result = runner.invoke(app, ["inspect", str(damaged), "--format", "crush"])
    assert result.exit_code == 2 and str(damaged) in result.output and "SQLite" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


GOOSE_HOME = READERS / "goose-home"


def test_goose_store_is_found_and_read_with_its_session_totals():
    path = Path(only(discovered_files("goose", {"HOME": str(GOOSE_HOME)})))
    assert detect(str(path), path.read_bytes()[:65536]).name == "goose"
    report: list[FileReport] = []
    (session,) = read_traces([str(path)], report=report).sessions
    assert session.id == "20260302_1" and session.extra["cwd"] == "/work/proj"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    call = session.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("toolu_01", "developer__shell", {"command": "python a.py"})
    assert session.messages[1].thinking == "Run it." and session.messages[1].ts == "2026-03-02T10:00:02Z"
    tool = session.messages[2]
    assert (tool.tool_call_id, tool.content, tool.is_error) == ("toolu_01", "ZeroDivisionError", True)
    assert (session.model, session.provider) == ("claude-sonnet-4-5", "anthropic")
    assert all(m.usage is None for m in session.messages)
    assert session.extra["recorded_totals"] == {"requests": 2, "input_tokens": 9100, "output_tokens": 140}
    assert session.extra["last_request"] == {"input_tokens": 4700, "output_tokens": 60}
    assert "1 messages the agent does not see" in " ".join(n for r in report for n in r.notes)


def test_goose_totals_are_priced_by_inspect_at_todays_rates():
    path = next((GOOSE_HOME / ".local/share/goose/sessions").glob("sessions.db"))
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    totals = json.loads(result.output)["totals"]
    # claude-sonnet-4-5: 9100 input at $3/M + 140 output at $15/M
    assert (totals["input_tokens"], totals["output_tokens"]) == (9100, 140)
    assert Decimal(str(totals["cost_usd"])) == Decimal("0.0294")


OPENCODE_DB_HOME = READERS / "opencode-db-home"


def test_opencode_database_reads_as_the_export_does_with_its_subagent():
    path = only(discovered_files("opencode-db", {"HOME": str(OPENCODE_DB_HOME)}))
    assert detect(path, Path(path).read_bytes()[:65536]).name == "opencode-db"
    report: list[FileReport] = []
    main, sub = read_traces([path], report=report).sessions
    exported = read_traces([str(READERS / "opencode" / "export-fix-rounding.json")]).sessions[0]
    assert main.id == exported.id and main.messages == exported.messages
    usages = [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens,
               m.usage.extra.get("cost_usd")) for s in (main, sub) for m in s.messages if m.usage]
    assert usages == [(3000, 0, 2000, 50, "0.01125"), (3080, 3000, 60, 15, "0.00141"), (3105, 3100, 0, 8, "0.001065"),
                      (1500, 0, 1200, 20, "0.0054")]
    assert sub.extra["parent_session"] == main.id and [m.role for m in sub.messages] == ["user", "assistant"]
    assert own_cost(main) == Decimal("0.013725")  # 0.01125 + 0.00141 + 0.001065 and own_cost(sub) == Decimal("0.0054")
    assert "1 message rows whose data is not a JSON object" in " ".join(n for r in report for n in r.notes)


def test_opencode_data_dir_finds_the_database_too():
    env = {"HOME": "/nonexistent", "OPENCODE_DATA_DIR": str(OPENCODE_DB_HOME / ".local" / "share" / "opencode")}
    assert [fmt for _, fmt in discovered_files("opencode-db", env)] == ["opencode-db"]


DROID_HOME = READERS / "droid-home"


def test_droid_session_is_found_and_read_with_the_totals_of_its_settings_file():
    path = only(discovered_files("droid", {"HOME": str(DROID_HOME)}))
    assert path.endswith("/-home-u-proj/4f1c9d2e-7a3b-4c5d-9e8f-0a1b2c3d4e5f.jsonl")
    assert detect(path, Path(path).read_bytes()[:65536]).name == "droid"
    report: list[FileReport] = []
    (session,) = read_traces([path], report=report).sessions
    assert session.id == "4f1c9d2e-7a3b-4c5d-9e8f-0a1b2c3d4e5f" and session.extra["cwd"] == "/home/u/proj"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    call = session.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("toolu_01", "Read", {"file_path": "/home/u/proj/a.py"})
    assert session.messages[1].thinking == "Read it." and session.messages[2].content == "1/0"
    assert (session.model, session.provider) == ("claude-sonnet-4-5-20250929", "anthropic")
    assert all(m.usage is None for m in session.messages)
    # whole prompts: 1200 uncached + 8000 read + 2500 written; output: 300 + 40 thinking
    assert session.extra["recorded_totals"] == {"requests": 2, "input_tokens": 11700, "output_tokens": 340,
                                                "cache_read_tokens": 8000, "cache_write_tokens": 2500}
    assert "1 todo_state lines" in " ".join(n for r in report for n in r.notes)


def test_a_droid_session_without_its_settings_file_reads_without_totals(tmp_path: Path):
    source = next((DROID_HOME / ".factory/sessions/-home-u-proj").glob("*.jsonl"))
    alone = tmp_path / source.name
    shutil.copy(source, alone)
    report: list[FileReport] = []
    (session,) = read_traces([str(alone)], report=report).sessions
    assert "recorded_totals" not in session.extra and session.model is None
    assert "no settings file beside the session" in " ".join(n for r in report for n in r.notes)
