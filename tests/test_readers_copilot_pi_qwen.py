"""Copilot CLI events, Pi session trees, Qwen Code records, Amp threads, Kimi CLI wire logs (issue 30). Fixtures:
tests/fixtures/make_reader_fixtures.py (values by hand there)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.discover import discovered_files
from ctxsim.formats import detect, read_trace

READERS = Path(__file__).parent / "fixtures" / "readers"
COPILOT_HOME = READERS / "copilot-home"
PI_HOME = READERS / "pi-home"


def only(found: list[tuple[str, str]]) -> Path:
    assert len(found) == 1
    return Path(found[0][0])


def test_copilot_events_are_found_read_and_keep_the_shutdown_totals():
    path = only(discovered_files("copilot-cli", {"HOME": str(COPILOT_HOME)}))
    assert detect(str(path), path.read_bytes()[:65536]).name == "copilot-cli"
    session = read_trace(str(path)).sessions[0]
    assert session.id == "9f0c2e57-3b1a-4c5e-8d7f-0a1b2c3d4e5f"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[0].content.endswith("Why does a.py fail?")  # as sent (transformedContent)
    assert session.messages[1].tool_calls[0].id == "toolu_vrtx_01"
    assert session.messages[2].is_error and "ZeroDivisionError" in session.messages[2].content
    assert [m.extra.get("output_tokens") for m in session.messages if m.role == "assistant"] == [25, 12]
    assert all(m.usage is None for m in session.messages)  # Copilot CLI does not save per-request usage
    assert session.extra["recorded_totals"] == {"requests": 2, "input_tokens": 4000, "output_tokens": 37,
                                                "cache_read_tokens": 2500, "cache_write_tokens": 1200}
    assert session.model == "claude-sonnet-4.5"


def test_pi_session_is_pi_not_native_and_reads_the_current_branch_with_its_compaction():
    path = only(discovered_files("pi", {"HOME": str(PI_HOME)}))
    assert detect(str(path), path.read_bytes()[:65536]).name == "pi"
    first, second = read_trace(str(path)).sessions
    usages = [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens,
               m.usage.extra["cost_usd"]) for s in (first, second) for m in s.messages if m.usage]
    # the abandoned branch (u2 -> a3) is left out; the response kept across the compaction is not counted again
    assert usages == [(2000, 0, 1100, 40, "0.007425"), (2090, 2000, 80, 20, "0.00123"),
                      (2122, 2080, 30, 9, "0.0009075"), (700, 0, 0, 6, "0.00219")]
    assert [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [e.name for e in second.events] == ["compaction"] and second.events[0].fields["pre_tokens"] == 2131
    assert [m.role for m in second.messages] == ["summary", "user", "summary", "user", "assistant"]
    assert second.extra["continues"] == first.id == "0193a7b2-5c4d-7e6f-8a9b-0c1d2e3f4a5b"


def test_pi_coding_agent_dir_replaces_the_default_folder():
    env = {"HOME": "/nonexistent", "PI_CODING_AGENT_DIR": str(PI_HOME / ".pi" / "agent")}
    assert len(discovered_files("pi", env)) == 1


def test_a_pi_file_without_its_header_is_one_line_exit_2(tmp_path: Path):
    lines = (PI_HOME / ".pi" / "agent" / "sessions").glob("*/*.jsonl")
    body = next(lines).read_text(encoding="utf-8").splitlines()[1:]
    bad = tmp_path / "headless.jsonl"
    bad.write_text("\n".join(body) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["inspect", str(bad), "--format", "pi"])
    assert result.exit_code == 2 and f"{bad}:1:" in result.output and "Traceback" not in result.output


QWEN_HOME = READERS / "qwen-home"


def test_qwen_code_records_are_qwen_not_claude_code_and_read_on_the_current_branch():
    path = only(discovered_files("qwen-code", {"HOME": str(QWEN_HOME)}))
    assert detect(str(path), path.read_bytes()[:65536]).name == "qwen-code"
    first, second = read_trace(str(path)).sessions
    usages = [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.output_tokens)
              for s in (first, second) for m in s.messages if m.usage]
    # thoughts (12) are outside the candidates (total = prompt + candidates + thoughts); the rewound aX is left out
    assert usages == [(5000, 0, 42), (5100, 4900, 20), (800, 0, 10)]
    assert [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant"]
    assert first.messages[1].thinking == "Let me look." and first.messages[1].tool_calls[0].id == "call_1"
    assert first.messages[2].tool_call_id == "call_1" and first.messages[2].content == "x = 1\n"
    assert [e.fields["pre_tokens"] for e in second.events] == [5120]
    assert [m.role for m in second.messages] == ["user", "summary", "user", "assistant"]


AMP_HOME = READERS / "amp-home"


def test_amp_thread_is_amp_not_anthropic_messages_and_keeps_each_responses_usage():
    path = only(discovered_files("amp", {"HOME": str(AMP_HOME)}))
    assert detect(str(path), path.read_bytes()[:65536]).name == "amp"
    session = read_trace(str(path)).sessions[0]
    assert session.id == "T-019b9d03-62e3-772f-9780-3e637f90eaec"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens)
            for m in session.messages if m.usage] == [(3008, 0, 3000, 45), (3162, 3000, 150, 30)]
    assert session.messages[2].tool_call_id == "toolu_01A" and "2.675" in session.messages[2].content
    assert session.messages[1].thinking == "Open it." and session.provider == "anthropic"


KIMI_HOME = READERS / "kimi-home"


def test_kimi_wire_log_steps_are_requests_with_their_usage_and_streamed_pieces_joined():
    path = only(discovered_files("kimi-cli", {"HOME": str(KIMI_HOME)}))
    assert detect(str(path), path.read_bytes()[:65536]).name == "kimi-cli"
    session = read_trace(str(path)).sessions[0]
    assert session.id == "0b7c9e2d-1111-4a2b-8c3d-5e6f7a8b9c0d"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    first = session.messages[1]
    assert first.content == "Let me check." and first.thinking == "Read the file."
    assert first.tool_calls[0].id == "ReadFile:0" and first.tool_calls[0].arguments == {"path": "a.py"}
    assert [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.output_tokens)
            for m in session.messages if m.usage] == [(1500, 0, 40), (1560, 1500, 15)]
    assert session.messages[0].ts == "2026-03-02T10:00:01Z"  # unix seconds
