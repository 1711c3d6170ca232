"""Cline tasks shared in part (issue 30): ui_messages.json alone gives the accounting and refuses a replay;
api_conversation_history.json with newer Cline's per-message metrics is recognised and its metrics read; a task
folder holding both is read once. Fixtures: tests/fixtures/make_reader_fixtures.py (values by hand there)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import FileReport, detect, read_trace, read_traces

READERS = Path(__file__).parent / "fixtures" / "readers"
UI_ONLY = READERS / "cline-ui-only" / "1772445601000" / "ui_messages.json"
METRICS = READERS / "cline-metrics" / "1772445601000" / "api_conversation_history.json"
TINY = Path(__file__).parent / "fixtures" / "tiny" / "cline"


def usages(path: Path) -> list[tuple[int, int, int, int, str | None]]:
    session = read_trace(str(path)).sessions[0]
    return [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens,
             m.usage.extra.get("cost_usd")) for m in session.messages if m.role == "assistant" and m.usage]


def test_ui_messages_alone_gives_every_requests_usage_and_cost_with_the_conversation_unknown():
    session = read_trace(str(UI_ONLY)).sessions[0]
    assert session.requests == 3
    assert usages(UI_ONLY) == [(2000, 0, 800, 40, "0.0072"), (2060, 1900, 150, 30, "0.0016125"),
                               (2062, 2050, 0, 20, "0.000951")]
    assert session.model == "claude-sonnet-4-5-20250929" and session.provider == "anthropic"
    assert "conversation" in session.extra["conversation_unknown"]
    assert session.extra["recorded_totals"] == {"requests": 3, "cost_usd": "0.0097635"}
    assert all(m.content == "" for m in session.messages)  # no text was made up


def test_ui_messages_alone_replay_says_it_cannot_in_one_line_exit_2():
    result = CliRunner().invoke(app, ["replay", str(UI_ONLY), "-p", "none"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot replay" in lines[0] and "api_conversation_history.json" in lines[0]
    assert "Traceback" not in result.output


def test_history_with_metrics_is_recognised_as_cline_and_its_metrics_read():
    assert detect(str(METRICS), METRICS.read_bytes()[:65536]).name == "cline"
    assert usages(METRICS) == [(3000, 0, 0, 60, "0.00435"), (3400, 2900, 0, 25, "0.0012375")]
    session = read_trace(str(METRICS)).sessions[0]
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.model == "gpt-5" and session.provider == "openai"
    assert sum(Decimal(u[4] or 0) for u in usages(METRICS)) == Decimal("0.0055875")


def test_a_task_folder_with_both_files_is_read_once_from_its_ui_messages():
    reports: list[FileReport] = []
    trace = read_traces([str(TINY)], report=reports)
    assert len(trace.sessions) == 1
    assert any("read with ui_messages.json beside it" in n for r in reports for n in r.notes)
    # the conversation file given alone, its ui messages beside it: the same accounting as the folder
    alone = read_trace(str(TINY / "api_conversation_history.json")).sessions[0]
    assert [m.usage for m in alone.messages] == [m.usage for m in trace.sessions[0].messages]
