"""Readers: the same tiny session in every format, each reader's own features, several inputs,
detection, malformed lines and bad input (exit 2 with file:line, never a traceback), convert.

Expected values are written by hand from the fixtures (tests/fixtures/make_fixtures.py says what
each fixture holds); none is copied from a reader's output.
"""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import CtxsimError, TraceError
from ctxsim.formats import FileReport, formats, locate, read_trace, read_traces
from ctxsim.model import Message, ToolCall, Usage
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "tiny"
FILE = "def total(x):\n    return round(x, 2)\n"

# The canonical tiny session, by hand (see make_fixtures.py).
TINY_MESSAGES = (
    Message("user", "Fix the rounding bug in invoice.py", ts="2026-01-13T16:56:01Z"),
    Message("assistant", "Reading the file.", ts="2026-01-13T16:56:03Z",
            tool_calls=(ToolCall("call_1", "read_file", {"path": "invoice.py"}),),
            usage=Usage(1200, 0, 0, 0, 30)),
    Message("tool", FILE, ts="2026-01-13T16:56:04Z", tool_call_id="call_1", name="read_file"),
    Message("assistant", "Fixed: use Decimal.", ts="2026-01-13T16:56:06Z", usage=Usage(1300, 1024, 0, 0, 12)),
)
TINY_FILES = {
    "claude-code": "claude-code.jsonl",
    "codex": "codex.jsonl",
    "openai-chat": "openai-chat.json",
    "anthropic-messages": "anthropic-messages.jsonl",
    "swe-agent": "swe-agent.traj",
    "mini-swe-agent": "mini-swe-agent.traj.json",
    "openhands": "openhands.json",
    "native": "native.jsonl",
    "gemini-cli": "gemini-cli.json",
    "cline": "cline/ui_messages.json",
    "otel-genai": "otel-genai.json",  # any-agent's AgentTrace; the OTLP export: test_readers_new.py
    "aider": "aider.chat.history.md",
}
# What a format cannot carry, so the comparison leaves it out.
NO_PER_MESSAGE_TS = {"anthropic-messages", "swe-agent", "aider"}  # one time per exchange, or none at all
NO_USAGE = {"swe-agent"}  # run totals only
NO_TOOL_CALLS = {"aider"}  # edits are text blocks; the files aider adds are not in the history
NO_CALL_IDS_NOR_TEXT_BESIDE_CALLS = {"otel-genai"}  # any-agent logs a call's name and arguments only
ROUNDED_USAGE = {"aider"}  # "1.0k cache hit": compared within the recorded rounding, then left out


def project(message: Message, fmt: str) -> Message:
    out = replace(message, model=None)
    if fmt in NO_PER_MESSAGE_TS:
        out = replace(out, ts=None)
    if fmt in NO_USAGE | ROUNDED_USAGE:
        out = replace(out, usage=None)
    if fmt in NO_TOOL_CALLS:
        out = replace(out, tool_calls=())
    if fmt in NO_CALL_IDS_NOR_TEXT_BESIDE_CALLS:
        if out.tool_calls:
            out = replace(out, content="", tool_calls=tuple(replace(c, id="call") for c in out.tool_calls))
        if out.tool_call_id:
            out = replace(out, tool_call_id="call")
    return out


def project_all(messages: tuple[Message, ...], fmt: str) -> tuple[Message, ...]:
    kept = [m for m in messages if not (fmt in NO_TOOL_CALLS and m.role == "tool")]
    return tuple(project(m, fmt) for m in kept)


def assert_within_rounding(got: tuple[Message, ...], expected: tuple[Message, ...]) -> None:
    """Rounded usage (aider) holds the true counts within its recorded rounding, field by field."""
    pairs = list(zip([m for m in got if m.role == "assistant"], [m for m in expected if m.role == "assistant"],
                     strict=True))
    for g, e in pairs:
        assert g.usage is not None and e.usage is not None and g.usage.extra["estimated"] is True
        rounding = g.usage.extra["rounding_tokens"]
        for field_name in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"):
            assert abs(getattr(g.usage, field_name) - getattr(e.usage, field_name)) <= rounding[field_name], field_name


def run_cli(*args: str, stdin: bytes | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), input=stdin)


def replay_rows(trace, policy="none"):  # type: ignore[no-untyped-def]
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    return replayer.run(parse_policy(policy)).rows


# ---------------------------------------------------------------- registry and detection


def test_every_format_is_registered_with_its_hyphenated_name():
    table = formats()
    assert set(TINY_FILES) <= set(table)
    for name in TINY_FILES:
        assert table[name].module.endswith(name.replace("-", "_"))


@pytest.mark.parametrize("fmt", sorted(TINY_FILES))
def test_each_fixture_is_detected_as_its_own_format_only(fmt):
    head = (TINY / TINY_FILES[fmt]).read_bytes()[:65536]
    accepted = [name for name, info in formats().items() if info.sniff(head) is None]
    assert accepted == [fmt]


@pytest.mark.parametrize("fmt", sorted(TINY_FILES))
def test_the_same_tiny_session_reads_to_the_same_canonical_trace(fmt):
    report: list[FileReport] = []
    trace = read_traces([str(TINY / TINY_FILES[fmt])], report=report)
    assert report[0].format == fmt
    assert len(trace.sessions) == 1
    got = project_all(trace.sessions[0].messages, fmt)
    assert got == project_all(TINY_MESSAGES, fmt)
    if fmt in ROUNDED_USAGE:
        assert_within_rounding(trace.sessions[0].messages, TINY_MESSAGES)
    assert trace.sessions[0].requests == 2


def test_tiny_session_replays_the_same_in_every_format_with_full_fields():
    """Formats that carry timestamps and usage give identical replays (rows) of the tiny session."""
    reference = None
    for fmt, name in TINY_FILES.items():
        if fmt in NO_PER_MESSAGE_TS | NO_USAGE | NO_TOOL_CALLS | NO_CALL_IDS_NOR_TEXT_BESIDE_CALLS | ROUNDED_USAGE:
            continue
        trace = read_traces([str(TINY / name)])
        session = replace(trace.sessions[0], id="s", model="gpt-4o", provider="openai", system=None, tools=(),
                          source=None, window=None)
        session = replace(session, messages=tuple(replace(m, model=None) for m in session.messages))
        rows = [replace(r, session="s") for r in replay_rows(replace(trace, sessions=(session,)))]
        if reference is None:
            reference = rows
        assert rows == reference, fmt


# ---------------------------------------------------------------- claude-code


def test_claude_code_merges_split_lines_and_counts_each_response_once():
    report: list[FileReport] = []
    trace = read_traces([str(FIXTURES / "claude-code" / "feat-main.jsonl")], report=report)
    main, _after = trace.sessions
    assert [m.role for m in main.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    first = main.messages[1]
    # three lines of one response: thinking, text and the Task call in one message
    assert first.thinking == "Check the CI log first." and first.content == "Delegating the log search."
    assert [c.name for c in first.tool_calls] == ["Task"]
    # exclusive 10 + 0 read + 9,000 written -> inclusive 9,010; output from the final line (140, not 3)
    assert first.usage == Usage(9010, 0, 9000, 0, 140)
    # the synthetic error is not a request; the repeated copy of msg_B is not counted again
    assert main.messages[3].usage == Usage(9320, 9000, 300, 0, 60)
    assert [c.id for c in main.messages[3].tool_calls] == ["toolu_read"]
    assert any("synthetic" in n for n in report[0].notes) and any("counted once" in n for n in report[0].notes)
    # an image of 150 x 100 px: 15,000 / 750 = 20 tokens
    assert main.messages[0].content == "Why is CI red?" and main.messages[0].extra_tokens == 20


def test_claude_code_compaction_starts_a_new_session_with_summary_and_event():
    trace = read_traces([str(FIXTURES / "claude-code" / "feat-main.jsonl")])
    main, after = trace.sessions
    assert after.extra["continues"] == main.id
    assert [(e.name, e.position, e.fields["pre_tokens"]) for e in after.events] == [("compaction", 0, 9800)]
    assert [m.role for m in after.messages] == ["summary", "assistant"]
    assert after.messages[0].content.startswith("This session is being continued")
    assert after.messages[1].usage == Usage(2030, 0, 2000, 0, 25)


def test_claude_code_subagent_is_its_own_session_linked_to_the_parent():
    trace = read_traces([str(FIXTURES / "claude-code")])
    by_id = {s.id: s for s in trace.sessions}
    sub = by_id["feat-main/agent-feat01"]
    assert sub.extra["parent_session"] == "feat-main" and sub.extra["parent_tool_call_id"] == "toolu_task"
    # the last response was logged as a placeholder (output 1); the parent's copy says 250
    assert sub.messages[-1].usage == Usage(4105, 4000, 100, 0, 250)
    # the parent never counts the subagent's usage: 3 requests there, 2 in the subagent
    assert [s.requests for s in trace.sessions] == [2, 2, 1]
    alone = read_traces([str(FIXTURES / "claude-code" / "agent-feat01.jsonl")])
    assert alone.sessions[0].messages[-1].usage.output_tokens == 1  # nothing to repair it from


def test_claude_code_malformed_lines_are_listed_or_skipped(tmp_path: Path):
    lines = (TINY / "claude-code.jsonl").read_text().splitlines()
    broken = [lines[0], lines[1][:-7], lines[2], lines[3], "{not json", lines[4], lines[5], lines[6], '{"type": "us']
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(broken) + "\n")
    with pytest.raises(TraceError) as caught:
        read_traces([str(path)])
    assert caught.value.line == 2
    assert "3 malformed lines (2, 5, 9)" in str(caught.value) and "--skip-bad-lines" in str(caught.value)
    report: list[FileReport] = []
    trace = read_traces([str(path)], skip_bad_lines=True, report=report)
    assert report[0].skipped_lines == [2, 5, 9]
    # line 2 was the user prompt: both responses remain
    assert [m.role for m in trace.sessions[0].messages] == ["assistant", "tool", "assistant"]
    result = run_cli("inspect", str(path), "--skip-bad-lines", "--json")
    assert result.exit_code == 0, result.output
    assert "skipped 3 malformed line(s) (2, 5, 9)" in result.stderr
    assert json.loads(result.stdout)["totals"]["requests"] == 2


# ---------------------------------------------------------------- codex


def test_codex_usage_per_request_survives_repeats_rate_limits_and_a_reset():
    report: list[FileReport] = []
    trace = read_traces([str(FIXTURES / "codex")], report=report)
    first, _second = trace.sessions
    assert first.model == "gpt-5.1-codex" and first.window == 200000 and first.system == "You are Codex."
    usages = [m.usage for s in trace.sessions for m in s.messages if m.role == "assistant"]
    # by hand from the four last_token_usage values; the repeated and info:null counts add nothing
    assert [(u.input_tokens, u.cache_read_tokens, u.output_tokens) for u in usages] == [
        (1000, 0, 50), (1200, 1024, 30), (1300, 1152, 20), (400, 0, 5)]
    assert any("reset 1 time" in n for n in report[0].notes)
    assert first.messages[-1].extra["total_reset"] is True


def test_codex_maps_items_to_messages_calls_and_results():
    trace = read_traces([str(FIXTURES / "codex")])
    first = trace.sessions[0]
    assert [m.role for m in first.messages] == ["user", "user", "assistant", "tool", "assistant", "tool", "tool",
                                                "assistant"]
    assert first.messages[0].extra["injected"] is True
    r1 = first.messages[2]
    assert r1.thinking == "**Listing**" and r1.extra_tokens == 40  # hidden reasoning sent back
    assert r1.tool_calls == (ToolCall("c1", "shell", {"command": ["ls"]}),)
    r2 = first.messages[4]
    assert [(c.id, c.name, c.arguments) for c in r2.tool_calls] == [
        ("c2", "apply_patch", "*** Begin Patch\n*** End Patch"), ("c3", "shell", "not json {")]
    assert [(m.tool_call_id, m.content) for m in first.messages[5:7]] == [("c2", "Done!"), ("c3", "error: bad args")]


def test_codex_compaction_uses_the_replacement_history():
    trace = read_traces([str(FIXTURES / "codex")])
    after = trace.sessions[1]
    assert after.extra["continues"] == trace.sessions[0].id
    assert [(e.name, e.fields["pre_tokens"]) for e in after.events] == [("compaction", 1300)]
    assert [(m.role, m.content) for m in after.messages] == [
        ("user", "List the files."), ("summary", "Summary: listed two files."), ("user", "Thanks."),
        ("assistant", "Welcome.")]


def test_codex_count_before_its_items_is_the_older_order():
    trace = read_traces([str(TINY / "codex.jsonl")])  # 0.40: token_count precedes the response's items
    assistant = [m for m in trace.sessions[0].messages if m.role == "assistant"]
    assert [m.usage.input_tokens for m in assistant] == [1200, 1300]
    assert assistant[0].content == "Reading the file." and assistant[0].tool_calls[0].id == "call_1"


# ---------------------------------------------------------------- the other readers


def test_openai_chat_exchanges_extend_one_conversation_and_a_rewrite_starts_another(tmp_path: Path):
    def exchange(messages, answer, prompt, cached, created):  # type: ignore[no-untyped-def]
        return {"request": {"model": "gpt-4o", "messages": messages},
                "response": {"id": f"r{created}", "object": "chat.completion", "created": created, "model": "gpt-4o",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
                             "usage": {"prompt_tokens": prompt, "completion_tokens": 5,
                                       "prompt_tokens_details": {"cached_tokens": cached}}}}

    sys_msg = {"role": "system", "content": "Be brief."}
    q1, a1 = {"role": "user", "content": "Count to one, please. " * 3}, {"role": "assistant", "content": "1"}
    q2 = {"role": "user", "content": "Now to two."}
    lines = [exchange([sys_msg, q1], "1", 100, 0, 1768323360),
             exchange([sys_msg, q1, a1, q2], "2", 120, 100, 1768323365),
             exchange([sys_msg, {"role": "user", "content": "Summary: counted to two."}], "ok", 50, 0, 1768323370)]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    trace = read_traces([str(path)])
    first, second = trace.sessions
    assert first.system == "Be brief." and [m.content for m in first.messages] == [q1["content"], "1", "Now to two.",
                                                                                   "2"]
    assert [m.usage.cache_read_tokens for m in first.messages if m.role == "assistant"] == [0, 100]
    # the third request does not extend the conversation and is shorter: the agent compacted it
    assert second.events[0].name == "compaction" and second.extra["continues"] == first.id
    assert [m.content for m in second.messages] == ["Summary: counted to two.", "ok"]


def test_swe_agent_run_totals_and_text_mode_observations(tmp_path: Path):
    doc = {"environment": "swe_main", "trajectory": [{"action": "ls\n", "observation": "a.py", "response": "r",
                                                      "thought": "t", "state": "{}"}],
           "history": [{"role": "system", "content": "SYS", "agent": "primary"},
                       {"role": "user", "content": "demo", "is_demo": True, "agent": "primary"},
                       {"role": "user", "content": "task", "agent": "primary"},
                       {"role": "assistant", "content": "DISCUSSION\n```\nls\n```", "action": "ls\n",
                        "thought": "t", "agent": "primary"},
                       {"role": "user", "content": "a.py", "agent": "primary"}],
           "info": {"model_stats": {"total_cost": 0.5, "instance_cost": 0.5, "tokens_sent": 40000,
                                    "tokens_received": 300, "api_calls": 1}}}
    path = tmp_path / "gpt4__run" / "x-1.traj"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    session = read_traces([str(path)]).sessions[0]
    assert session.system == "SYS" and session.model == "gpt-4-1106-preview"  # 0.x name from the run folder
    assert session.messages[0].extra["demo"] is True and session.messages[-1].extra["tool"] == "ls"
    assert dict(session.extra["recorded_totals"]) == {"requests": 1, "input_tokens": 40000, "output_tokens": 300,
                                                      "cost_usd": "0.5"}


def test_openhands_counts_a_response_with_several_actions_once(tmp_path: Path):
    usage = {"prompt_tokens": 900, "completion_tokens": 20, "cache_read_input_tokens": 800,
             "cache_creation_input_tokens": 90, "prompt_tokens_details": {"cached_tokens": 800}}
    calls = [{"id": "t1", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}},
             {"id": "t2", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "pwd"}'}}]
    response = {"id": "R", "model": "anthropic/claude-sonnet-4-5-20250929", "usage": usage,
                "choices": [{"message": {"role": "assistant", "content": "Two commands.", "tool_calls": calls}}]}
    events = [{"id": 1, "timestamp": "2026-01-13T16:56:01", "source": "user", "action": "message",
               "args": {"content": "go"}}]
    for n, call in ((2, "t1"), (3, "t2")):
        meta = {"function_name": "execute_bash", "tool_call_id": call, "model_response": response,
                "total_calls_in_response": 2}
        events.append({"id": n, "timestamp": "2026-01-13T16:56:02", "source": "agent", "action": "run",
                       "tool_call_metadata": meta, "args": {"command": "ls"}})
    for n, cause, call in ((4, 2, "t1"), (5, 3, "t2")):
        meta = {"function_name": "execute_bash", "tool_call_id": call, "model_response": response,
                "total_calls_in_response": 2}
        events.append({"id": n, "timestamp": "2026-01-13T16:56:03", "source": "agent", "observation": "run",
                       "cause": cause, "tool_call_metadata": meta, "content": f"out {call}",
                       "extras": {"metadata": {"exit_code": 0, "suffix": "\n[exit 0]"}}})
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    session = read_traces([str(path)]).sessions[0]
    assert session.model == "claude-sonnet-4-5-20250929" and session.provider == "anthropic"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "tool"]
    assert session.messages[1].usage == Usage(900, 800, 90, 0, 20)  # litellm: the prompt includes the cache
    assert [m.content for m in session.messages[2:]] == ["out t1\n[exit 0]", "out t2\n[exit 0]"]


def test_anthropic_messages_bare_request_and_mini_swe_agent_model_prefix(tmp_path: Path):
    request = {"model": "claude-haiku-4-5", "system": [{"type": "text", "text": "S"}],
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    session = read_traces([str(path)], "anthropic-messages").sessions[0]
    assert session.system == "S" and [m.content for m in session.messages] == ["hi"]
    mini = read_traces([str(TINY / "mini-swe-agent.traj.json")]).sessions[0]
    assert mini.provider == "openai" and mini.model == "gpt-4o-2024-08-06"  # "openai/" prefix split off
    assert dict(mini.extra["recorded_totals"]) == {"requests": 2, "cost_usd": "0.00337"}


# ---------------------------------------------------------------- inputs


def test_several_files_a_directory_stdin_and_gzip(tmp_path: Path):
    both = read_traces([str(TINY / "codex.jsonl"), str(TINY / "claude-code.jsonl")])
    assert [s.source for s in both.sessions] == ["codex", "claude-code"]
    everything = read_traces([str(TINY)])
    assert len(everything.sessions) == len(TINY_FILES)  # every file of the folder, each by its format
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    shutil.copy(TINY / "openhands.json", nested / "events.json")
    (tmp_path / "notes.txt").write_text("not a trace\n")
    found = read_traces([str(tmp_path)])
    assert [s.source for s in found.sessions] == ["openhands"]  # recursive; the text file is not a trace
    gz = tmp_path / "codex.jsonl.gz"
    gz.write_bytes(gzip.compress((TINY / "codex.jsonl").read_bytes()))
    assert read_traces([str(gz)]).sessions[0].messages == read_trace(str(TINY / "codex.jsonl")).sessions[0].messages
    result = run_cli("inspect", "-", "--json", stdin=(TINY / "swe-agent.traj").read_bytes())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["totals"]["input_tokens"] == 2500


def test_format_override_and_detection_failure_say_what_was_tried(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, not a trace\n")
    with pytest.raises(CtxsimError) as caught:
        read_traces([str(path)])
    message = str(caught.value)
    for name in ("claude-code", "codex", "openai-chat", "anthropic-messages", "swe-agent", "mini-swe-agent",
                 "openhands", "native"):
        assert f"{name}: " in message
    assert "not JSON" in message
    with pytest.raises(TraceError) as wrong:
        read_traces([str(TINY / "codex.jsonl")], "claude-code")
    assert "no sessions found" in str(wrong.value)
    with pytest.raises(CtxsimError, match="unknown format 'nope'"):
        read_traces([str(TINY / "codex.jsonl")], "nope")


def test_locate_finds_the_line_of_a_nested_field():
    text = '{\n "a": [\n  {"x": 1},\n  {\n   "y": "z"\n  }\n ]\n}\n'
    assert locate(text, ("a", 1, "y")) == 5
    assert locate(text, ("a", 0)) == 3
    assert locate(text, ("missing",)) is None


# ---------------------------------------------------------------- bad input

CLAUDE = (TINY / "claude-code.jsonl").read_text().splitlines()
CODEX = (TINY / "codex.jsonl").read_text().splitlines()


def _swap(lines: list[str], index: int, change) -> str:  # type: ignore[no-untyped-def]
    record = json.loads(lines[index])
    change(record)
    out = list(lines)
    out[index] = json.dumps(record)
    return "\n".join(out) + "\n"


def _doc(name: str, change) -> str:  # type: ignore[no-untyped-def]
    value = json.loads((TINY / name).read_text())
    change(value)
    return json.dumps(value, indent=1)


BAD = [
    # (id, format, file name, text, line, what the message says); each line was checked by hand against
    # the written file (the line holding the changed value, or the start of the object missing a key)
    ("claude truncated", "claude-code", "s.jsonl", "\n".join(CLAUDE)[:-40] + "\n", 7, "broken JSON"),
    ("claude content type", "claude-code", "s.jsonl",
     _swap(CLAUDE, 2, lambda r: r["message"].__setitem__("content", 5)), 3, "'message.content' must be an array"),
    ("claude usage type", "claude-code", "s.jsonl",
     _swap(CLAUDE, 2, lambda r: r["message"]["usage"].__setitem__("input_tokens", "12")), 3,
     "'message.usage.input_tokens' must be a non-negative integer, got a string"),
    ("claude no message", "claude-code", "s.jsonl", _swap(CLAUDE, 1, lambda r: r.pop("message")), 2,
     "'message' is missing"),
    ("codex truncated", "codex", "r.jsonl", "\n".join(CODEX[:5]) + "\n" + CODEX[5][:30] + "\n", 6, "broken JSON"),
    ("codex payload shape", "codex", "r.jsonl", _swap(CODEX, 1, lambda r: r.__setitem__("payload", "x")), 2,
     "'payload' must be an object"),
    ("codex negative count", "codex", "r.jsonl",
     _swap(CODEX, 4, lambda r: r["payload"]["info"]["last_token_usage"].__setitem__("input_tokens", -3)), 5,
     "must not be negative"),
    ("codex call without id", "codex", "r.jsonl", _swap(CODEX, 6, lambda r: r["payload"].pop("call_id")), 7,
     "'payload.call_id' is missing"),
    ("openai truncated", "openai-chat", "c.json", (TINY / "openai-chat.json").read_text()[:300], 15,
     "truncated JSON"),
    ("openai messages type", "openai-chat", "c.json", _doc("openai-chat.json", lambda d: d.__setitem__(
        "messages", {"role": "user"})), 3, "'messages' must be an array"),
    ("openai role missing", "openai-chat", "c.json", _doc("openai-chat.json", lambda d: d["messages"][2].pop(
        "role")), 13, "'messages[2].role' is missing"),
    ("openai usage type", "openai-chat", "c.json", _doc("openai-chat.json", lambda d: d["messages"][2]["usage"]
                                                         .__setitem__("prompt_tokens", [1])), 27,
     "'messages[2].usage.prompt_tokens' must be a non-negative integer, got an array"),
    ("anthropic block type", "anthropic-messages", "a.jsonl", "\n".join(
        [json.dumps(dict(json.loads((TINY / "anthropic-messages.jsonl").read_text().splitlines()[0]),
                         request={"model": "m", "messages": [{"role": "user", "content": [5]}]}))]) + "\n", 1,
     "'request.messages[0].content[0]' must be a content block"),
    ("anthropic role", "anthropic-messages", "a.jsonl", json.dumps(
        {"request": {"model": "m", "messages": [{"role": "robot", "content": "x"}]}}) + "\n", 1,
     "unknown role 'robot'"),
    ("swe truncated", "swe-agent", "t.traj", (TINY / "swe-agent.traj").read_text()[:500], 24, "truncated JSON"),
    ("swe history item", "swe-agent", "t.traj", _doc("swe-agent.traj", lambda d: d["history"].__setitem__(
        2, "assistant says hi")), 32, "'history[2]' must be a message"),
    ("swe role missing", "swe-agent", "t.traj", _doc("swe-agent.traj", lambda d: d["history"][1].pop("role")), 26,
     "'history[1].role' is missing"),
    ("mini messages type", "mini-swe-agent", "m.traj.json", _doc("mini-swe-agent.traj.json", lambda d: d.__setitem__(
        "messages", "none")), 18, "'messages' must be an array"),
    ("mini usage type", "mini-swe-agent", "m.traj.json", _doc(
        "mini-swe-agent.traj.json",
        lambda d: d["messages"][2]["extra"]["response"]["usage"].__setitem__("completion_tokens", "many")), 72,
     "'messages[2].extra.response.usage.completion_tokens' must be a non-negative integer"),
    ("openhands event type", "openhands", "e.json", _doc("openhands.json", lambda d: d.__setitem__(1, 7)), 13,
     "'[1]' must be an event"),
    ("openhands usage type", "openhands", "e.json", _doc("openhands.json", lambda d: d[3]["tool_call_metadata"][
        "model_response"]["usage"].__setitem__("prompt_tokens", -1)), 73, "must not be negative"),
]


@pytest.mark.parametrize(("name", "fmt", "filename", "text", "line", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_exits_2_with_file_line_and_what_is_wrong(tmp_path: Path, name, fmt, filename, text, line,
                                                            message):
    path = tmp_path / filename
    path.write_text(text)
    for command in ("inspect", "convert"):
        args = [command, str(path), "--format", fmt] + (["-o", str(tmp_path / "out.jsonl")] if command == "convert"
                                                        else [])
        result = run_cli(*args)
        assert result.exit_code == 2, (name, result.output)
        assert isinstance(result.exception, SystemExit)
        assert f"{path}:{line}:" in result.stderr, result.stderr
        assert message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "out.jsonl").exists()


def test_detected_formats_report_bad_input_the_same_way(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text(_swap(CLAUDE, 2, lambda r: r["message"]["usage"].__setitem__("output_tokens", 1.5)))
    result = run_cli("inspect", str(path))
    assert result.exit_code == 2 and f"{path}:3:" in result.stderr and "must be an integer" in result.stderr


def test_empty_and_missing_inputs(tmp_path: Path):
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert "empty trace" in run_cli("inspect", str(empty)).stderr
    result = run_cli("inspect", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2 and "no such file" in result.stderr
    folder = tmp_path / "nothing"
    folder.mkdir()
    result = run_cli("validate", str(folder))
    assert result.exit_code == 2 and "no trace files found" in result.stderr


# ---------------------------------------------------------------- convert


@pytest.mark.parametrize("inputs", [[str(TINY / n)] for n in sorted(TINY_FILES.values())]
                         + [[str(FIXTURES / "claude-code")], [str(FIXTURES / "codex")]]
                         + [[str(FIXTURES / d)] for d in ("gemini-cli", "codex-0104", "mini-swe-agent", "cline",
                                                          "otel-genai", "aider")],
                         ids=lambda p: Path(p[0]).name)
def test_convert_then_replay_equals_replaying_the_original(tmp_path: Path, inputs):
    out = tmp_path / "native.jsonl"
    result = run_cli("convert", *inputs, "-o", str(out))
    assert result.exit_code == 0, result.output
    original = read_traces(inputs)
    converted = read_trace(str(out))
    assert converted.sessions == original.sessions
    for policy in ("none", "clear:trigger=1000,keep=1"):
        assert replay_rows(converted, policy) == replay_rows(original, policy)


# ---------------------------------------------------------------- nothing crashes

KINDS = [None, 7, -2, 2.5, "text", "", [], {}, [3], {"k": 1}, True]


def _paths(value, path=()):  # type: ignore[no-untyped-def]
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


@pytest.mark.parametrize("fmt", sorted(set(TINY_FILES) - {"native", "aider"}))  # aider: Markdown, not JSON
def test_values_of_the_wrong_type_anywhere_give_an_error_not_a_crash(tmp_path: Path, fmt):
    """Every field of the tiny fixture, in turn, replaced by a value of another type (fixed choices):
    the reader either reads it or says what is wrong (CtxsimError); never anything else."""
    import random

    name = TINY_FILES[fmt]
    rng = random.Random(fmt)
    lines = name.endswith(".jsonl")
    records = [json.loads(line) for line in (TINY / name).read_text().splitlines()] if lines else \
        [json.loads((TINY / name).read_text())]
    targets = [(i, p) for i, r in enumerate(records) for p in _paths(r) if p]
    path = tmp_path / name
    if path.parent != tmp_path:  # a folder format (cline): its other files beside the mutated one
        shutil.copytree(TINY / name.split("/")[0], path.parent)
    errors = 0
    for index, target in targets:
        mutated = json.loads(json.dumps(records))
        holder = mutated[index]
        for step in target[:-1]:
            holder = holder[step]
        holder[target[-1]] = rng.choice(KINDS)
        path.write_text("\n".join(json.dumps(r) for r in mutated) + "\n" if lines else json.dumps(mutated[0]))
        try:
            trace = read_traces([str(path)], fmt)
            from ctxsim.analysis.inspect import inspect_trace

            inspect_trace(trace, tokenizer="chars4")
        except CtxsimError as exc:
            errors += 1
            assert str(exc).startswith(str(path))  # noqa: PT017  a replacement may or may not be refused
    assert errors > 0  # some replacements must be refused


def test_claude_code_notes_a_rewind(tmp_path: Path):
    lines = (TINY / "claude-code.jsonl").read_text().splitlines()
    rewind = json.loads(lines[1])
    rewind.update(uuid="u9", parentUuid="u1", timestamp="2026-01-13T16:57:00.000Z")
    rewind["message"] = {"role": "user", "content": "Actually, check totals.py instead."}
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines, json.dumps(rewind)]) + "\n")
    report: list[FileReport] = []
    trace = read_traces([str(path)], report=report)
    assert any("1 rewind" in n for n in report[0].notes)
    assert trace.sessions[0].messages[-1].content == "Actually, check totals.py instead."
