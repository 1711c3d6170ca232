"""Gemini CLI's rewritten messages and Codex's count orders (issue 30): fixtures from
tests/fixtures/make_reader_fixtures.py, expected values by hand from what each fixture holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.formats import FileReport, read_trace, read_traces

READERS = Path(__file__).parent / "fixtures" / "readers"


def assistant_usage(path: Path) -> list[tuple[int, int, int]]:
    session = read_trace(str(path)).sessions[0]
    return [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.output_tokens) if m.usage else (-1, -1, -1)
            for m in session.messages if m.role == "assistant"]


def test_gemini_jsonl_message_rewritten_under_its_id_counts_once_in_its_last_version():
    path = READERS / "gemini-cli" / "session-rewrite.jsonl"
    session = read_trace(str(path)).sessions[0]
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    # the last version of each: g1 with its result and final tokens, g2 the whole answer
    assert assistant_usage(path) == [(1000, 0, 20), (1100, 1000, 6)]
    assert session.messages[2].content == "x = 1\n"
    assert session.messages[3].content == "x is 1."
    reports: list[FileReport] = []
    read_traces([str(path)], report=reports)
    assert any("2 message line(s) rewrote an earlier message" in n for n in reports[0].notes)


@pytest.mark.parametrize("order", ["0.40", "0.104", "0.14x"])
def test_codex_count_goes_to_the_response_it_measures_in_every_versions_order(order):
    path = READERS / "codex" / f"rollout-order-{order}.jsonl"
    session = read_trace(str(path)).sessions[0]
    responses = [m for m in session.messages if m.role == "assistant"]
    # r1 calls c1 and r2 calls c2 in every order; their counts are 1000 and 1400 prompt tokens
    assert [tuple(c.id for c in m.tool_calls) for m in responses] == [("c1",), ("c2",), (), ()]
    assert assistant_usage(path) == [(1000, 0, 50), (1400, 1000, 30), (1800, 1400, 20), (2000, 1792, 15)]
    assert responses[0].usage is not None and responses[0].usage.extra["reasoning_tokens"] == 10
