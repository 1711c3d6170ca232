"""The readers of issue 14 (gemini-cli, cline, otel-genai, aider) and the newer Codex and
mini-swe-agent formats: each one's own features, liberal reading, recorded costs, the Gemini cache
default, and `ctxsim formats` with the README table generated from it.

Expected values are written by hand from the fixtures (tests/fixtures/make_fixtures.py says what each
holds); none is copied from a reader's output.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, formats, read_traces
from ctxsim.model import Usage

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "tiny"
FILE = "def total(x):\n    return round(x, 2)\n"


def read(path: Path | str, fmt: str | None = None):  # type: ignore[no-untyped-def]
    report: list[FileReport] = []
    trace = read_traces([str(path)], fmt, report=report)
    notes = [n for r in report for n in r.notes]
    return trace, notes, [r for r in report if r.format]


def run_cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


# ---------------------------------------------------------------- gemini-cli


def test_gemini_usage_adds_tool_prompt_to_input_and_thoughts_to_output():
    trace, _, _ = read(FIXTURES / "gemini-cli")
    (session,) = trace.sessions
    assert session.id == "feat-gemini" and session.model == "gemini-2.5-flash" and session.provider == "google"
    first = session.messages[1]
    # input 2,000 + tool-use prompt 10; output 20 + thoughts 40; cached 1,500 is a part of the input
    assert first.usage == Usage(2010, 1500, 0, 0, 60)
    assert first.usage.extra["reasoning_tokens"] == 40
    # thought summaries are not sent back: kept beside the message, not as its thinking
    assert first.thinking is None and first.extra["thought_summaries"] == "Running: run pytest"
    # the failed call's result follows it, as an error, with the call's own time
    tool = session.messages[2]
    assert (tool.role, tool.tool_call_id, tool.content, tool.is_error, tool.ts) == (
        "tool", "run-1", "exit code 1", True, "2026-01-13T16:56:04Z")


def test_gemini_jsonl_rewind_drops_the_rewound_exchange_and_info_is_not_sent():
    trace, notes, _ = read(FIXTURES / "gemini-cli")
    (session,) = trace.sessions
    assert [(m.role, m.content) for m in session.messages if m.role != "tool"] == [
        ("user", "Run the tests."), ("assistant", ""), ("user", "Fix it."), ("assistant", "Fixed.")]
    assert session.requests == 2  # "It fails on rounding." was rewound away
    assert any("1 rewind" in n for n in notes) and any("1 info" in n for n in notes)


def test_gemini_unknown_message_types_are_skipped_and_counted(tmp_path: Path):
    doc = json.loads((TINY / "gemini-cli.json").read_text())
    doc["messages"].insert(1, {"id": "x", "timestamp": doc["startTime"], "type": "hologram", "content": "?"})
    doc["messages"].insert(1, {"id": "y", "content": "no type"})
    path = tmp_path / "session-2.json"
    path.write_text(json.dumps(doc))
    trace, notes, _ = read(path)
    assert trace.sessions[0].requests == 2 and any("1 hologram" in n and "1 untyped" in n for n in notes)


def test_gemini_single_document_and_single_line_read_the_same(tmp_path: Path):
    doc = json.loads((TINY / "gemini-cli.json").read_text())
    one_line = tmp_path / "session-1.json"
    one_line.write_text(json.dumps(doc))
    assert read(one_line)[0].sessions[0].messages == read(TINY / "gemini-cli.json")[0].sessions[0].messages


def test_gemini_implicit_cache_is_prefix_with_the_models_minimum_from_data():
    from ctxsim.caching import model_rules, rules
    from ctxsim.replay.engine import default_cache

    google = rules()["google"]
    assert google["source"].startswith("https://ai.google.dev/") and google["checked"]
    before, after = 1_767_225_600.0, 1_796_083_200.0  # 2026-01-01, 2026-12-01: the table changed 2026-10-13
    assert model_rules("google", "gemini-2.5-pro", before)["min_tokens"] == 2048
    assert model_rules("google", "gemini-2.5-flash-lite", before)["min_tokens"] == 1024
    assert model_rules("google", "gemini-2.5-flash-lite", after)["min_tokens"] == 2048
    assert default_cache("google", "gemini-2.5-pro", before) == "prefix:min_tokens=2048"
    assert default_cache("google", "gemini-2.5-flash", before) == "prefix:min_tokens=1024"
    assert default_cache("google", "gemini-2.5-flash", after) == "prefix:min_tokens=2048"
    assert default_cache("google", "gemini-3.5-flash", after) == "prefix:min_tokens=4096"
    assert default_cache("openai", "gpt-4o") == "openai"


def test_gemini_replay_reads_no_cache_below_the_minimum_and_reads_above_it():
    """Two requests sharing a prefix: 2.5 Pro (minimum 4,096) reads nothing of a ~1k-token prefix;
    2.5 Flash (minimum 1,024) reads it."""
    from ctxsim.policies import parse_policy
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    trace = read(TINY / "gemini-cli.json")[0]
    big = "word " * 1000  # 5,000 characters: ~1,250 tokens with chars4
    session = trace.sessions[0]
    session = replace(session, messages=(replace(session.messages[0], content=big), *session.messages[1:]))
    trace = replace(trace, sessions=(session,))
    reads = {}
    for model in ("gemini-2.5-pro", "gemini-2.5-flash"):
        replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup(model=model))
        rows = replayer.run(parse_policy("none")).rows
        reads[model] = [r.cache_read_tokens for r in rows]
    assert reads["gemini-2.5-pro"] == [0, 0]
    assert reads["gemini-2.5-flash"][0] == 0 and reads["gemini-2.5-flash"][1] >= 1024


# ---------------------------------------------------------------- codex 0.10x


def test_codex_0104_counts_each_request_once_and_skips_the_all_zero_recount():
    trace, notes, _ = read(FIXTURES / "codex-0104")
    usages = [m.usage for s in trace.sessions for m in s.messages if m.role == "assistant"]
    # five distinct running totals, each written twice or more; the all-zero recount is not one
    assert usages == [Usage(1000, 0, 0, 0, 40), Usage(1100, 1024, 0, 0, 30), Usage(1200, 1024, 0, 0, 8),
                      Usage(600, 0, 0, 0, 6), Usage(700, 512, 0, 0, 3)]
    assert any("3 repeated token count" in n for n in notes)
    assert any("1 token count(s) with an all-zero last usage" in n for n in notes)


def test_codex_0104_compacted_then_context_compacted_is_one_compaction_and_alone_is_another():
    trace, _, _ = read(FIXTURES / "codex-0104")
    first, second, third = trace.sessions
    assert second.extra["continues"] == first.id and third.extra["continues"] == second.id
    assert [e.name for s in trace.sessions for e in s.events] == ["compaction", "compaction"]
    assert second.events[0].fields["pre_tokens"] == 1200
    # the session continues from the replacement history: the user message, then the encrypted summary
    assert [m.role for m in second.messages] == ["user", "summary", "user", "assistant"]
    assert second.messages[1].extra["encrypted"] is True
    # the lone context_compacted: Codex's own rebuild (the human messages, then the summary)
    assert [(m.role, m.content) for m in third.messages[:3]] == [
        ("user", "Patch it."), ("user", "And the docs?"), ("summary", "")]


def test_codex_0104_web_search_and_apply_patch_are_tool_calls_and_phase_is_kept():
    trace, _, _ = read(FIXTURES / "codex-0104")
    first = trace.sessions[0]
    search, patch, done = [m for m in first.messages if m.role == "assistant"]
    assert [(c.id, c.name, c.arguments) for c in search.tool_calls] == [
        ("ws_1", "web_search", {"type": "search", "query": "decimal rounding"})]
    assert search.extra["phase"] == "commentary" and done.extra["phase"] == "final_answer"
    assert [(c.id, c.name) for c in patch.tool_calls] == [("p1", "apply_patch")]
    assert first.messages[3].role == "tool" and first.messages[3].content == "Done!"


# ---------------------------------------------------------------- mini-swe-agent


def test_mini_swe_agent_11_exit_skipped_failed_call_and_served_model_noted():
    trace, notes, _ = read(FIXTURES / "mini-swe-agent" / "features-11.traj.json")
    (session,) = trace.sessions
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]  # no `exit`
    assert session.model == "deepseek-chat"  # configured
    assert {m.model for m in session.messages if m.role == "assistant"} == {"deepseek-v4-flash"}  # served
    assert session.messages[1].thinking == "Read it first."
    assert session.messages[1].usage == Usage(1200, 0, 0, 0, 30)  # completion_tokens_details null is fine
    assert dict(session.extra["recorded_totals"]) == {"requests": 3, "cost_usd": "0.0021"}
    assert any("1 of role 'exit'" in n for n in notes)
    assert any("api_calls counts 3" in n and "1 call(s) left no response" in n for n in notes)
    assert any("deepseek-v4-flash" in n and "deepseek-chat" in n for n in notes)
    # each response's own cost as a decimal string
    assert [m.usage.extra["cost_usd"] for m in session.messages if m.usage] == ["0.0033", "0.0001"]


def test_mini_swe_agent_1_text_mode_openrouter_cost_and_created_time():
    trace, _, _ = read(FIXTURES / "mini-swe-agent" / "text-mode.traj.json")
    (session,) = trace.sessions
    assert session.model == "claude-sonnet-4" and session.provider == "anthropic"  # openrouter/anthropic/...
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[2].extra["tool"] == "bash"  # an observation, sent as a user message
    assert session.messages[0].ts is None and session.messages[1].ts == "2026-01-13T16:56:03Z"  # created only
    last = session.messages[3]
    assert last.usage == Usage(1600, 1400, 0, 0, 25)
    assert last.usage.extra["cost_usd"] == "0.0075" and last.usage.extra["reasoning_tokens"] == 10
    assert dict(session.extra["recorded_totals"]) == {"requests": 2, "cost_usd": "0.0123"}


# ---------------------------------------------------------------- cline


def test_cline_tiny_is_anthropic_exclusive_and_says_so():
    trace, notes, files = read(TINY / "cline")
    assert [f.format for f in files] == ["cline"]  # the conversation file is not read twice
    (session,) = trace.sessions
    assert session.provider == "anthropic" and session.model == "claude-sonnet-4-5-20250929"
    # tokensIn 276 + cacheReads 1,024 = 1,300
    assert [m.usage for m in session.messages if m.usage] == [Usage(1200, 0, 0, 0, 30), Usage(1300, 1024, 0, 0, 12)]
    assert any("tokensIn is the uncached input (Anthropic)" in n for n in notes)
    assert [m.usage.extra["cost_usd"] for m in session.messages if m.usage] == ["0.00405", "0.00131"]
    assert dict(session.extra["recorded_totals"]) == {"requests": 2, "cost_usd": "0.00536"}


def test_cline_openai_provider_router_zero_cancel_deleted_requests_and_truncation():
    trace, notes, files = read(FIXTURES / "cline")
    assert [f.format for f in files] == ["cline"]
    before, after = trace.sessions
    assert before.model == "gpt-4.1" and before.provider == "openai"  # task_metadata.json
    # OpenAI-style: tokensIn already holds the cache
    assert [m.usage for m in before.messages if m.role == "assistant"] == [
        Usage(900, 0, 0, 0, 40), Usage(1000, 800, 0, 0, 5), None]  # the router's tokensIn 0: unknown
    assert before.messages[3].extra["cancel_reason"] == "user_cancelled"
    deleted = [e for e in before.events if e.fields.get("deleted_api_reqs")]
    # logged after the second request, before the resumption message the third one sent
    assert [(e.position, e.fields["tokensIn"], e.fields["tokensOut"]) for e in deleted] == [(4, 5000, 300)]
    # the deleted requests' cost is in the task's total, in no request
    assert dict(before.extra["recorded_totals"]) == {"requests": 4, "cost_usd": "0.0217"}
    # conversationHistoryDeletedRange [2, 3]: the last request was sent without messages 2 and 3
    assert after.extra["continues"] == before.id
    assert [(e.name, e.position, e.fields["deleted_range"]) for e in after.events] == [("compaction", 0, [2, 3])]
    assert [m.role for m in after.messages] == ["user", "summary", "user", "summary", "user", "assistant"]
    assert not any("Response interrupted" in m.content or FILE in m.content for m in after.messages)
    assert after.messages[-1].usage == Usage(700, 512, 0, 0, 12)
    assert any("tokensIn includes the cache" in n for n in notes)
    assert any("tokensIn 0" in n for n in notes) and any("1 user_cancelled" in n for n in notes)


def test_cline_roo_api_protocol_decides_the_convention(tmp_path: Path):
    folder = tmp_path / "task"
    shutil.copytree(TINY / "cline", folder)
    ui = json.loads((folder / "ui_messages.json").read_text())
    for entry in ui:
        if entry.get("say") == "api_req_started":
            body = json.loads(entry["text"])
            body["apiProtocol"] = "openai"  # Roo Code: an OpenAI-compatible endpoint
            entry["text"] = json.dumps(body)
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    session = read(folder)[0].sessions[0]
    # tokensIn 276 now includes the cache, but 1,024 read exceeds it: the cache is added after all
    assert [m.usage for m in session.messages if m.usage] == [Usage(1200, 0, 0, 0, 30), Usage(1300, 1024, 0, 0, 12)]
    body_cached = [json.loads(e["text"]) for e in ui if e.get("say") == "api_req_started"]
    assert [b["tokensIn"] for b in body_cached] == [1200, 276]


def test_roo_condense_summary_replaces_its_messages_in_a_new_session(tmp_path: Path):
    """Roo Code keeps condensed messages on disk, tagged `condenseParent`; after the summary
    (`isSummary`, its `condenseId`) the agent sends the summary instead of them."""
    folder = tmp_path / "roo-task"
    shutil.copytree(TINY / "cline", folder)
    api = json.loads((folder / "api_conversation_history.json").read_text())
    ui = json.loads((folder / "ui_messages.json").read_text())
    for m in api:
        m["condenseParent"] = "c1"
    api.append({"role": "assistant", "content": [{"type": "text", "text": "Summary: read invoice.py."}],
                "isSummary": True, "condenseId": "c1"})
    api.append({"role": "user", "content": [{"type": "text", "text": "And the tests?"}]})
    api.append({"role": "assistant", "content": [{"type": "text", "text": "Added."}]})
    ui.append({"ts": ui[-1]["ts"] + 1000, "type": "say", "say": "condense_context",
               "contextCondense": {"cost": 0.01, "prevContextTokens": 1300, "newContextTokens": 40}})
    body = {"request": "And the tests?", "tokensIn": 60, "tokensOut": 4, "cacheWrites": 0, "cacheReads": 0,
            "cost": 0.0002}
    ui.append({"ts": ui[-1]["ts"] + 1000, "type": "say", "say": "api_req_started", "text": json.dumps(body)})
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    trace, notes, _ = read(folder)
    first, second = trace.sessions
    assert first.requests == 2 and [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant"]
    assert second.extra["continues"] == first.id
    assert [(e.name, e.position, e.fields.get("condense_context")) for e in second.events] == [("compaction", 0, True)]
    # the condensed messages are gone: the summary (not a request) and the new prompt are sent
    assert [(m.role, m.content) for m in second.messages] == [
        ("summary", "Summary: read invoice.py."), ("user", "And the tests?"), ("assistant", "Added.")]
    assert second.messages[-1].usage == Usage(60, 0, 0, 0, 4)
    assert any("condense_context" in n for n in notes)


def test_cline_model_from_ui_messages_and_per_response(tmp_path: Path):
    """Newer Cline puts modelInfo on the ui messages; a task that switched models keeps each response's."""
    folder = tmp_path / "task"
    shutil.copytree(TINY / "cline", folder)
    api = json.loads((folder / "api_conversation_history.json").read_text())
    api[1].pop("modelInfo")
    api[3]["modelInfo"] = {"modelId": "claude-haiku-4-5-20251001", "providerId": "anthropic", "mode": "act"}
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    session = read(folder)[0].sessions[0]
    assert session.model == "claude-haiku-4-5-20251001"
    assert [m.model for m in session.messages if m.role == "assistant"] == ["claude-haiku-4-5-20251001"] * 2
    for m in api:
        m.pop("modelInfo", None)
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    ui = json.loads((folder / "ui_messages.json").read_text())
    ui[1]["modelInfo"] = {"modelId": "gpt-4.1", "providerId": "openai", "mode": "act"}
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    trace, notes, _ = read(folder)
    assert (trace.sessions[0].model, trace.sessions[0].provider) == ("gpt-4.1", "openai")
    # OpenAI-style now: tokensIn 276 is below its 1,024 cache read, so the cache is added
    assert any("below its cache counts" in n for n in notes)


def test_cline_without_its_conversation_file_says_so(tmp_path: Path):
    folder = tmp_path / "task"
    folder.mkdir()
    shutil.copy(TINY / "cline" / "ui_messages.json", folder)
    # the accounting alone is read (issue 30: test_readers_cline.py); what needs the conversation says why not
    result = run_cli("inspect", str(folder / "ui_messages.json"))
    assert result.exit_code == 0 and "no api_conversation_history.json beside it" in result.output
    result = run_cli("replay", str(folder / "ui_messages.json"), "-p", "none")
    assert result.exit_code == 2
    assert "api_conversation_history.json" in result.output and "Traceback" not in result.output


def test_cline_unknown_ui_entries_and_roles_are_skipped_not_fatal(tmp_path: Path):
    folder = tmp_path / "task"
    shutil.copytree(TINY / "cline", folder)
    ui = json.loads((folder / "ui_messages.json").read_text())
    ui.insert(1, {"ts": ui[0]["ts"], "type": "hologram", "say": "x"})
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    trace, notes, _ = read(folder)
    assert trace.sessions[0].requests == 2 and any("1 hologram" in n for n in notes)


# ---------------------------------------------------------------- otel-genai


def test_otlp_export_of_the_tiny_session_reads_and_replays_like_codex():
    from ctxsim.policies import parse_policy
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    otlp, _, files = read(FIXTURES / "otel-genai" / "tiny-otlp.json")
    codex = read(TINY / "codex.jsonl")[0]
    assert files[0].format == "otel-genai"
    (session,) = otlp.sessions
    assert session.system == "You are a careful coding agent." and session.model == "gpt-4o-2024-08-06"
    assert tuple(replace(m, model=None) for m in session.messages) == tuple(
        replace(m, model=None) for m in codex.sessions[0].messages)

    def rows(trace):  # type: ignore[no-untyped-def]
        s = replace(trace.sessions[0], id="s", model="gpt-4o", provider="openai", system=None, source=None,
                    window=None, messages=tuple(replace(m, model=None) for m in trace.sessions[0].messages))
        replayer = Replayer(replace(trace, sessions=(s,)), MessageSizer(TokenCounter(get_tokenizer("chars4"))),
                            Setup())
        return replayer.run(parse_policy("none")).rows

    assert rows(otlp) == rows(codex)


def test_anyagent_cost_per_call_and_calls_matched_to_tool_spans_by_name():
    trace, _, _ = read(TINY / "otel-genai.json")
    (session,) = trace.sessions
    assert session.extra["trace_id"] == "1f2e3d4c5b6a79880123456789abcdef"  # any-agent's integer id, in hex
    call = session.messages[1].tool_calls[0]
    assert session.messages[2].tool_call_id == call.id and session.messages[2].content == FILE
    # input_cost + output_cost: 0.003 + 0.0003, 0.00197 + 0.00012
    assert [m.usage.extra["cost_usd"] for m in session.messages if m.usage] == ["0.0033", "0.00209"]


def test_otel_child_agent_is_a_subagent_session_and_cache_kept_apart_is_added():
    trace, notes, _ = read(FIXTURES / "otel-genai" / "subagents.jsonl")
    parent, child = trace.sessions
    assert child.extra["parent_session"] == parent.id == "0af7651916cd43dd8448eb211c80319c"
    assert child.extra["agent_name"] == "finder" and parent.extra["agent_name"] == "coordinator"
    assert parent.provider == "anthropic"  # gen_ai.system
    assert [m.usage for m in parent.messages if m.usage] == [Usage(3000, 0, 0, 0, 20)]
    # prompt_tokens 10 with 1,800 read and 200 written: the counts were kept apart, so 2,010 in all
    assert [m.usage for m in child.messages if m.usage] == [Usage(2010, 1800, 200, 0, 7)]
    assert any("above their input" in n for n in notes) and any("1 embeddings" in n for n in notes)


def test_otel_older_indexed_prompt_and_completion_attributes(tmp_path: Path):
    """OpenLLMetry-style flattened attributes (gen_ai.prompt.0.role ...), the deprecated usage names."""
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "openai.chat", "startTimeUnixNano": "1768323361000000000",
            "endTimeUnixNano": "1768323363000000000", "attributes": [
                {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                for k, v in {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                             "gen_ai.request.model": "gpt-4o-2024-08-06",
                             "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be careful.",
                             "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Fix the rounding bug.",
                             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Use Decimal.",
                             "gen_ai.usage.prompt_tokens": 120, "gen_ai.usage.completion_tokens": 4}.items()]}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (session,) = read(path)[0].sessions
    assert session.system == "Be careful."
    assert [(m.role, m.content) for m in session.messages] == [("user", "Fix the rounding bug."),
                                                                ("assistant", "Use Decimal.")]
    assert session.messages[1].usage == Usage(120, 0, 0, 0, 4) and session.messages[1].ts == "2026-01-13T16:56:03Z"


def test_otel_content_in_span_events_older_instrumentations(tmp_path: Path):
    """Older instrumentations log content as span events (gen_ai.user.message, gen_ai.choice)."""
    def kv(key: str, value: object) -> dict:
        return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}

    span = {"traceId": "ef" * 16, "spanId": "01" * 8, "name": "chat gpt-4o",
            "startTimeUnixNano": "1768323361000000000", "endTimeUnixNano": "1768323362000000000",
            "attributes": [kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-4o"),
                           kv("gen_ai.usage.input_tokens", 50), kv("gen_ai.usage.output_tokens", 3)],
            "events": [{"name": "gen_ai.user.message", "attributes": [kv("content", "Hello?")]},
                       {"name": "gen_ai.choice", "attributes": [kv("content", "Hi.")]}]}
    path = tmp_path / "events.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (session,) = read(path)[0].sessions
    assert [(m.role, m.content) for m in session.messages] == [("user", "Hello?"), ("assistant", "Hi.")]


def test_otel_span_without_content_is_a_request_with_its_usage(tmp_path: Path):
    doc = json.loads((FIXTURES / "otel-genai" / "tiny-otlp.json").read_text())
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [a for a in span["attributes"] if "messages" not in a["key"]
                              and "instructions" not in a["key"]]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    session = read(path)[0].sessions[0]
    assert [m.usage for m in session.messages if m.role == "assistant"] == [
        Usage(1200, 0, 0, 0, 30), Usage(1300, 1024, 0, 0, 12)]
    assert all(m.extra.get("content_not_recorded") for m in session.messages if m.role == "assistant")


# ---------------------------------------------------------------- aider


def test_aider_rounded_reports_are_estimated_with_their_rounding():
    trace, notes, _ = read(FIXTURES / "aider" / "features.chat.history.md")
    first, second = trace.sessions
    assert first.model == "claude-sonnet-4-5-20250929" and first.provider == "anthropic"  # "Main model:"
    assert second.model == "gpt-4o" and second.ts == "2026-01-14T09:00:05Z"
    # "#### /add" is a command; "/ask why" keeps its text; two #### lines are one message
    assert [(m.role, m.content) for m in first.messages if m.role == "user"] == [
        ("user", "Fix the rounding bug.\nUse Decimal."), ("user", "why was it wrong?")]
    edit, answer = [m for m in first.messages if m.role == "assistant"]
    assert "<<<<<<< SEARCH" in edit.content and "Applied edit" not in edit.content
    # 12k sent (+-500), 2.1k cache write and 8.2k cache hit (+-50), 170 received (exact)
    assert edit.usage == Usage(12000, 8200, 2100, 0, 170)
    assert edit.usage.extra["estimated"] is True
    assert dict(edit.usage.extra["rounding_tokens"]) == {"input_tokens": 500, "cache_write_tokens": 50,
                                                        "cache_read_tokens": 50, "output_tokens": 0}
    assert answer.usage == Usage(2345, 0, 0, 0, 99)  # older aider: "2,345 sent", exact
    assert [edit.usage.extra["cost_usd"], answer.usage.extra["cost_usd"]] == ["0.02", "0.0081"]
    assert dict(first.extra["recorded_totals"]) == {"cost_usd": "0.03", "requests": 2}
    # a reply without a token report: a request whose usage is not known
    assert [m.usage for m in second.messages if m.role == "assistant"] == [None]
    assert any("1 aider command" in n for n in notes)


def test_aider_real_file_name_and_bad_utf8(tmp_path: Path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text((TINY / "aider.chat.history.md").read_text())
    assert read(path)[0].sessions[0].requests == 2
    path.write_bytes(b"\n# aider chat started at 2026-01-13 16:56:00\n\n#### hi \xff\n")
    result = run_cli("inspect", str(path))
    assert result.exit_code == 2 and f"{path}:4:" in result.output and "UTF-8" in result.output


# ---------------------------------------------------------------- recorded costs beside priced ones


@pytest.mark.parametrize(("path", "costs"), [
    (TINY / "cline", ["0.00405", "0.00131"]),
    (TINY / "otel-genai.json", ["0.0033", "0.00209"]),
    (TINY / "mini-swe-agent.traj.json", ["0.0033", "0.0001"]),
    (TINY / "aider.chat.history.md", ["0.0033", "0.0019"]),
])
def test_recorded_per_request_costs_are_decimal_strings_in_usage_extra(path, costs):
    from decimal import Decimal

    session = read(path)[0].sessions[0]
    got = [m.usage.extra["cost_usd"] for m in session.messages if m.usage is not None]
    assert got == costs and all(isinstance(Decimal(c), Decimal) for c in got)


# ---------------------------------------------------------------- ctxsim formats and the README table


def test_formats_list_json_describes_every_registered_reader():
    result = run_cli("formats", "list", "--json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)
    assert set(table) == set(formats())
    for name, d in table.items():
        for key in ("reads", "location", "records", "cannot_know"):
            assert d[key] and d[key] != "not described", (name, key)


def test_formats_show_and_an_unknown_name():
    result = run_cli("formats", "show", "gemini-cli")
    assert result.exit_code == 0 and "~/.gemini/tmp/" in result.output and "what it cannot know:" in result.output
    shown = json.loads(run_cli("formats", "show", "aider", "--json").output)
    assert shown["name"] == "aider" and "rounded" in shown["cannot_know"]
    bad = run_cli("formats", "show", "nope")
    assert bad.exit_code == 2 and "unknown format 'nope'" in bad.output


def test_readme_format_table_is_the_generated_one():
    from ctxsim.commands.formats import readme_table
    from ctxsim.docs import README, with_table

    text = README.read_text(encoding="utf-8")
    assert with_table(text) == text, "README's format table is out of date: run python -m ctxsim.docs"
    assert readme_table() in text and readme_table().count("\n") == len(formats()) + 2


def test_the_docs_check_fails_on_a_stale_table(tmp_path: Path, monkeypatch):
    from ctxsim import docs

    stale = tmp_path / "README.md"
    stale.write_text(f"x\n{docs.START}\n| old |\n{docs.END}\ny\n")
    monkeypatch.setattr(docs, "README", stale)
    assert docs.main(["--check"]) == 1 and "| old |" in stale.read_text()
    assert docs.main([]) == 0 and docs.main(["--check"]) == 0 and "`gemini-cli`" in stale.read_text()


def test_new_fixtures_each_detected_by_their_own_reader_only():
    for path, fmt in [(FIXTURES / "gemini-cli" / "session-features.jsonl", "gemini-cli"),
                      (FIXTURES / "codex-0104" / "rollout-0104-features.jsonl", "codex"),
                      (FIXTURES / "otel-genai" / "subagents.jsonl", "otel-genai"),
                      (FIXTURES / "otel-genai" / "tiny-otlp.json", "otel-genai"),
                      (FIXTURES / "aider" / "features.chat.history.md", "aider"),
                      (FIXTURES / "cline" / "1768323361000" / "ui_messages.json", "cline")]:
        head = path.read_bytes()[:65536]
        assert [n for n, i in formats().items() if i.sniff(head) is None] == [fmt], path
    # Cline's conversation file is nobody's trace: it is read through its ui_messages.json
    head = (FIXTURES / "cline" / "1768323361000" / "api_conversation_history.json").read_bytes()
    assert [n for n, i in formats().items() if i.sniff(head) is None] == []


def test_bad_shapes_in_new_formats_are_file_line_errors(tmp_path: Path):
    path = tmp_path / "session-x.json"
    doc = json.loads((TINY / "gemini-cli.json").read_text())
    doc["messages"][1]["tokens"]["input"] = -3
    path.write_text(json.dumps(doc, indent=1))
    with pytest.raises(CtxsimError, match=r"session-x\.json:\d+: field 'messages\[1\]\.tokens\.input' must not be"):
        read_traces([str(path)])
