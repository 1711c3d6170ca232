"""Synthetic traces: determinism, native round trip, the yoagent workload's spot facts, and
the coding profile's shape (markers, pauses, failing tests, size band)."""

from __future__ import annotations

import io
import itertools
import re

import pytest

from ctxsim.errors import CtxsimError
from ctxsim.formats import native
from ctxsim.model import Trace, parse_ts
from ctxsim.synth import PROFILES, synthesize, yoagent


def _native(trace: Trace) -> str:
    out = io.StringIO()
    native.write(trace, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def coding300() -> Trace:
    return synthesize("coding", turns=300, seed=0)


@pytest.fixture(scope="module")
def yo120() -> Trace:
    return synthesize("yoagent", turns=120)


# ---------------------------------------------------------------- both profiles


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_same_seed_same_bytes(profile: str) -> None:
    assert _native(synthesize(profile, turns=80, seed=7)) == _native(synthesize(profile, turns=80, seed=7))


def test_different_seed_different_coding_trace() -> None:
    assert _native(synthesize("coding", turns=40, seed=1)) != _native(synthesize("coding", turns=40, seed=2))


def test_default_profile_is_coding() -> None:
    assert _native(synthesize(turns=5)) == _native(synthesize("coding", turns=5, seed=0))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_native_round_trip(profile: str) -> None:
    trace = synthesize(profile, turns=120, seed=3)
    text = _native(trace)
    back = native.read_stream(io.BytesIO(text.encode("utf-8")), "x.jsonl")
    assert back.sessions == trace.sessions
    assert _native(back) == text  # and it writes back to the same bytes


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_tool_result_follows_its_call(profile: str) -> None:
    session = synthesize(profile, turns=150, seed=5).sessions[0]
    open_calls: dict[str, str] = {}
    seen: set[str] = set()
    for message in session.messages:
        for call in message.tool_calls:
            assert call.id not in seen, f"call id {call.id} used twice"
            seen.add(call.id)
            open_calls[call.id] = call.name
        if message.role == "tool":
            assert open_calls.pop(message.tool_call_id) == message.name
    assert not open_calls


# ---------------------------------------------------------------- the yoagent workload (section 3.1)


def _turn(session, n: int):
    """The assistant message and tool result of turn n."""
    for i, message in enumerate(session.messages):
        if message.role == "assistant" and message.tool_calls[0].id == f"tc-{n}":
            return message, session.messages[i + 1]
    raise AssertionError(f"no turn {n}")


def test_yoagent_header_and_shape(yo120: Trace) -> None:
    session = yo120.sessions[0]
    assert (session.id, session.source, session.window) == ("yoagent-t120", "yoagent-replay", 128_000)
    assert (session.model, session.provider, session.system, session.tools) == (
        "claude-sonnet-4-5", "anthropic", None, ())
    assert session.messages[0].role == "user" and session.messages[0].content == "Refactor the provider layer."
    assert all(m.ts is None for m in session.messages)
    for turns in (1, 4, 5, 9, 10, 120):
        assert len(synthesize("yoagent", turns=turns).sessions[0].messages) == 1 + 2 * turns + turns // 5


def test_yoagent_turn_1_is_bash_with_77_lines(yo120: Trace) -> None:
    assistant, result = _turn(yo120.sessions[0], 1)
    assert assistant.content == "Turn 1: inspecting the workspace before the next edit."
    call = assistant.tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("tc-1", "bash", {"arg": "target-1"})
    assert (result.tool_call_id, result.name, result.is_error) == ("tc-1", "bash", False)
    lines = result.content.split("\n")
    assert len(lines) == 40 + 37 == 77
    assert lines[0] == "turn 1 bash line 0: data data data data data data "
    assert len(lines[0].encode()) == 50
    assert lines[-1] == "turn 1 bash line 76: " + "data " * 6
    assert not result.content.endswith("\n")


def test_yoagent_tool_choice_and_sizes(yo120: Trace) -> None:
    session = yo120.sessions[0]
    _, read = _turn(session, 77)
    assert read.name == "read_file"
    assert len(read.content.split("\n")) == 500  # 100 + (77*53) % 1400 = 1381, capped at READ_CAP
    _, edit = _turn(session, 41)
    assert edit.name == "edit_file" and len(edit.content.split("\n")) == 1 + (41 * 3) % 4 == 4
    _, search = _turn(session, 96)
    assert search.name == "search" and len(search.content.split("\n")) == 10 + (96 * 17) % 120
    _, bash = _turn(session, 40)
    assert bash.name == "bash"
    _, edit76 = _turn(session, 76)
    assert edit76.name == "edit_file"
    _, read95 = _turn(session, 95)
    assert read95.name == "read_file"
    _, bash100 = _turn(session, 100)
    assert bash100.name == "bash"


def test_yoagent_user_messages_every_fifth_turn(yo120: Trace) -> None:
    session = yo120.sessions[0]
    users = [m.content for m in session.messages[1:] if m.role == "user"]
    assert users[:2] == ["Also check item 5 while you are there.", "Also check item 10 while you are there."]
    assert len(users) == 120 // 5
    # the aside comes before that turn's assistant message
    index = next(i for i, m in enumerate(session.messages) if m.content.startswith("Also check item 5 "))
    assert session.messages[index + 1].tool_calls[0].id == "tc-5"


def test_yoagent_read_cap_option() -> None:
    unbounded = synthesize("yoagent", turns=77, read_cap=None).sessions[0]
    assert len(unbounded.messages[-1].content.split("\n")) == 100 + (77 * 53) % 1400 == 1381
    small = synthesize("yoagent", turns=77, read_cap=120).sessions[0]
    assert len(small.messages[-1].content.split("\n")) == 120
    assert yoagent.line_count(78) == min(100 + (78 * 53) % 1400, 500)
    with pytest.raises(CtxsimError, match="read_cap"):
        synthesize("yoagent", turns=3, read_cap=0)


# ---------------------------------------------------------------- the coding profile


def test_coding_header(coding300: Trace) -> None:
    session = coding300.sessions[0]
    assert session.id == "synth-coding-s0-t300"
    assert (session.source, session.model, session.provider, session.window) == (
        "ctxsim-synth", "claude-sonnet-4-5", "anthropic", 200_000)
    assert session.ts == "2026-01-13T16:56:00Z"
    assert "DECISION:" in session.system and "TODO:" in session.system
    names = {tool["name"] for tool in session.tools}
    assert {"read_file", "edit_file", "run_tests", "bash", "search", "notes_write"} <= names
    assert all(tool["input_schema"]["type"] == "object" for tool in session.tools)


def test_coding_turn_structure(coding300: Trace) -> None:
    messages = coding300.sessions[0].messages
    assert messages[0].role == "user" and "BRL" in messages[0].content
    assistants = [m for m in messages if m.role == "assistant"]
    assert len(assistants) == 300
    assert all(1 <= len(m.tool_calls) <= 2 for m in assistants)
    assert assistants[0].tool_calls[0].id == "t1-c1"
    assert any(len(m.tool_calls) == 2 for m in assistants)
    asides = [m for m in messages[1:] if m.role == "user"]
    assert 5 <= len(asides) <= 60
    assert all(m.ts for m in messages)


def test_coding_markers(coding300: Trace) -> None:
    text = "\n".join(m.content for m in coding300.sessions[0].messages if m.role == "assistant")
    found = {kind: re.findall(rf"^{kind}: (.+)$", text, re.MULTILINE)
             for kind in ("DECISION", "TODO", "DONE", "ERROR", "FILE")}
    assert all(found.values()), {k: len(v) for k, v in found.items()}
    assert set(found["DONE"]) <= set(found["TODO"])  # DONE repeats an earlier TODO word for word
    assert any(re.search(r"\(last seen turn \d+\)$", line) for line in found["ERROR"])


def test_coding_failing_tests_are_errors(coding300: Trace) -> None:
    results = [m for m in coding300.sessions[0].messages if m.name == "run_tests"]
    failing = [m for m in results if m.is_error]
    assert failing and len(failing) < len(results)
    assert all(" failed" in m.content and "Error" in m.content for m in failing)
    assert any("AssertionError: expected Decimal('10.01'), got Decimal('10.00')" in m.content for m in failing)


def test_coding_timestamps_and_pauses(coding300: Trace) -> None:
    times = [parse_ts(m.ts) for m in coding300.sessions[0].messages]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0
    assert max(gaps) > 5 * 60  # at least one pause long enough for a 5-minute cache to go cold
    assert sorted(gaps)[len(gaps) // 2] < 60  # but normally seconds apart


def test_coding_text_is_utf8_with_some_non_ascii(coding300: Trace) -> None:
    text = _native(coding300)
    text.encode("utf-8")
    assert not text.isascii()
    assert sum(not c.isascii() for c in text) < len(text) / 1000  # mostly ASCII


def test_coding_size_band() -> None:
    # Calibrated: 600 turns write 1.9-2.7 MB (seeds 0-9); 2,400 turns about 7 MB.
    size = len(_native(synthesize("coding", turns=600, seed=0)).encode("utf-8"))
    assert 1_600_000 <= size <= 3_000_000, size


def test_coding_options() -> None:
    base = len(_native(synthesize("coding", turns=100, seed=4)))
    small = len(_native(synthesize("coding", turns=100, seed=4, output_scale=0.25)))
    assert small < base * 0.6
    only_reads = synthesize("coding", turns=30, seed=4, tool_mix={"read_file": 1.0}, parallel_rate=0.0)
    assert {m.name for m in only_reads.sessions[0].messages if m.role == "tool"} == {"read_file"}
    calm = synthesize("coding", turns=200, seed=4, pause_rate=0.0, long_pause_rate=0.0, aside_rate=0.0)
    messages = calm.sessions[0].messages
    assert sum(m.role == "user" for m in messages) == 1
    times = [parse_ts(m.ts) for m in messages]
    assert max(b - a for a, b in itertools.pairwise(times)) <= 60


@pytest.mark.parametrize(
    ("args", "options", "match"),
    [
        (("nope",), {"turns": 3}, "unknown synth profile 'nope'"),
        (("coding",), {"turns": 0}, "at least 1"),
        (("yoagent",), {"turns": -2}, "at least 1"),
        (("coding",), {"turns": "3"}, "integer"),
        (("coding",), {"turns": 3, "bogus": 1}, "unknown option bogus"),
        (("coding",), {"turns": 3, "output_scale": "big"}, "output_scale"),
        (("coding",), {"turns": 3, "output_scale": 0}, "output_scale"),
        (("coding",), {"turns": 3, "aside_rate": 1.5}, "aside_rate"),
        (("coding",), {"turns": 3, "tool_mix": {"telnet": 1.0}}, "telnet"),
        (("coding",), {"turns": 3, "tool_mix": {"read_file": 0}}, "positive"),
        (("yoagent",), {"turns": 3, "read_cap": 1.5}, "read_cap"),
    ],
)
def test_bad_arguments_raise(args: tuple, options: dict, match: str) -> None:
    with pytest.raises(CtxsimError, match=match):
        synthesize(*args, **options)
