"""The product presets as the products' own pipelines (issue 26), checked compaction by compaction.

Fixtures: tests/recorded_fixtures.py writes a Claude Code session and a Codex rollout that recorded
their own compaction (request k sends about prefix + 100 + (step + 8) (k - 1) chars4 tokens); this
file adds a Claude Code 2.1.3x `acompact` summarising-call file beside the session.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from recorded_fixtures import _claude, claude_code_compaction, codex_compaction, stamp
from typer.testing import CliRunner

from ctxsim.analysis import preset_check, preset_corpus
from ctxsim.cli import app
from ctxsim.formats import read_traces
from ctxsim.history import History, Item, SideCall
from ctxsim.model import Message, ToolCall
from ctxsim.policies import parse_policy
from ctxsim.policies.base import Insert, Summarize, View
from ctxsim.policies.compact import CompactPolicy
from ctxsim.presets import claude_code, codex, presets
from ctxsim.pricing.prices import Bill, Pricer

runner = CliRunner()
SONNET = "claude-sonnet-4-5-20250929"


def _check(path: Path) -> preset_check.CompactionCheck:
    (c,) = preset_check.check(read_traces([str(path)]), "chars4")
    return c


# ---------------------------------------------------------------- the presets' rules


def test_claude_code_is_one_compaction_stage_at_its_own_200k_window() -> None:
    (stage,) = [parse_policy(s) for s in presets()["claude-code"].stages]
    assert isinstance(stage, CompactPolicy)  # no clearing stage before it: the product did not clear
    p = stage.params
    assert (p.window_tokens, p.headroom_tokens, p.summary_tokens, p.reattach, p.keep_recent) == \
        (200_000, 45_000, 5_258, "claude-code", 0)
    # the threshold follows the product's window, not the 1M genai-prices lists for Opus 4.6
    assert stage.thresholds(p.window_tokens or 1_000_000) == (155_000, 155_000)
    from ctxsim.policies.spec import resolve

    one_m = resolve(["claude-code:window_tokens=1000000"])[0].policy
    assert isinstance(one_m, CompactPolicy) and one_m.params.window_tokens == 1_000_000
    assert one_m.thresholds(one_m.params.window_tokens)[0] == 955_000


def test_claude_code_versions_pick_threshold_and_summarising_call() -> None:
    assert claude_code.for_version("2.1.5")[0] == "claude-code"
    assert claude_code.for_version("2.1.39")[0] == "claude-code:summarizer_call=cached"
    assert claude_code.for_version("2.1.190")[0] == "claude-code:summarizer_call=written"
    spec, headroom, _ = claude_code.for_version("2.1.230")
    assert headroom == 33_000 and spec == "claude-code:headroom_tokens=33000,summarizer_call=written"


def test_codex_threshold_is_a_share_of_the_recorded_usable_window() -> None:
    (stage,) = [parse_policy(s) for s in presets()["codex"].stages]
    assert isinstance(stage, CompactPolicy)
    # 210,000 of the 258,400-token usable window a 0.104 rollout records (95% of 272,000)
    assert abs(stage.thresholds(258_400)[0] - 210_000) <= 50
    assert stage.params.keep_answers and stage.params.summarizer_call == "cached"
    assert codex.for_version("0.40.0")[0] == "codex:compact_at=0.9"


# ---------------------------------------------------------------- the compact stage's new rules, on a history


def _history(messages: list[Message]) -> tuple[History, View]:
    def size(m: Message) -> int:  # a fixed, hand-checkable size
        return 4 + len(m.content) // 4

    history = History(1_000, size, lambda m: 1)
    for i, m in enumerate(messages):
        history.append(Item(m, size(m), 1, i))
    return history, View(history, request=len(messages), window=200_000, size=size)


def _reads(n: int, body: int) -> list[Message]:
    out = [Message("user", "task")]
    for i in range(n):
        call = ToolCall(f"c{i}", "Read", {"file_path": f"src/f{i % 6}.py"})
        out += [Message("assistant", "", tool_calls=(call,)), Message("tool", "x" * body, tool_call_id=f"c{i}",
                                                                       name="Read")]
    todo = ToolCall("t", "TodoWrite", {"todos": [{"content": "ship it", "status": "pending"}]})
    out += [Message("assistant", "", tool_calls=(todo,)), Message("tool", "ok", tool_call_id="t", name="TodoWrite"),
            Message("assistant", "reading done")]
    return out


def test_claude_code_reattaches_newest_files_capped_and_the_todo_list() -> None:
    # 8 reads of 6 distinct files, each result 4 + 30,000 tokens: 5 files re-attached at 5,000 tokens each
    _, view = _history(_reads(8, 120_000))
    policy = CompactPolicy(parse_policy(presets()["claude-code"].stages[0]).params)  # type: ignore[attr-defined]
    policy.params = policy.params.__class__(**{**policy.params.__dict__, "at_request": view.request})
    (edit,) = policy.decide(view)
    summary, back = edit.changes
    assert isinstance(summary, Summarize) and isinstance(back, Insert)
    todo_tokens = view.size(Message("user", json.dumps({"todos": [{"content": "ship it", "status": "pending"}]},
                                                       sort_keys=True))) - view.size(Message("user", ""))
    assert back.tokens == view.size(Message("user", "")) + 5 * 5_000 + todo_tokens
    assert "5 file(s)" in back.message.content and "f7" not in back.message.content  # paths only: f0-f5
    assert summary.tokens == view.size(Message("summary", "")) + 5_258


def test_summarising_call_billed_from_the_cache_costs_a_third() -> None:
    _, view = _history([*_reads(3, 4_000), Message("user", "next " * 400)])
    base = parse_policy("compact:trigger=100,compact_above=100,keep_recent=0,clear_at_least=0,summarizer=llm,"
                        "summary_tokens=500")
    cached = parse_policy("compact:trigger=100,compact_above=100,keep_recent=0,clear_at_least=0,summarizer=llm,"
                          "summary_tokens=500,summarizer_call=cached")
    (plain,) = base.decide(view)[0].calls  # type: ignore[attr-defined]
    (call,) = cached.decide(view)[0].calls  # type: ignore[attr-defined]
    assert plain.cache_read_tokens == 0 and plain.input_tokens < view.prompt_tokens  # the span alone
    last_answer = max(i for i, it in enumerate(view.items) if it.message.role == "assistant")
    assert call.input_tokens > view.prompt_tokens and call.cache_read_tokens == view.prefix_tokens(last_answer)
    assert call.cache_write_tokens == call.input_tokens - call.cache_read_tokens
    # the engine prices it as the call says: reads at the cache price
    from ctxsim.replay.engine import Replayer

    pricer = Pricer("anthropic", "claude-sonnet-4-5")
    row = Replayer._side_row(None, 1, _session(), call, None, None, 200_000, pricer)  # type: ignore[arg-type]
    assert row.cost_usd == pricer.cost(Bill(call.input_tokens, call.cache_read_tokens, call.cache_write_tokens,
                                            output_tokens=500), None)
    assert row.cost_nocache_usd == pricer.cost(Bill(call.input_tokens, output_tokens=500), None) > row.cost_usd


def _session():  # type: ignore[no-untyped-def]
    from ctxsim.model import Session

    return Session("s")


def test_codex_rebuilt_history_keeps_final_answers_and_developer_messages() -> None:
    call = ToolCall("c1", "shell", {"cmd": "ls"})
    messages = [Message("system", "developer rules"), Message("user", "first ask"),
                Message("assistant", "", tool_calls=(call,)), Message("tool", "a\n" * 4_000, tool_call_id="c1"),
                Message("assistant", "done: the answer"), Message("user", "second ask"),
                Message("assistant", "working " * 300)]
    _, view = _history(messages)
    spec = "compact:trigger=100,compact_above=100,keep_recent=0,keep_user_tokens=20000,clear_at_least=0,summarizer=llm"
    users_only = parse_policy(spec).decide(view)[0].changes[0]  # type: ignore[attr-defined]
    with_answers = parse_policy(spec + ",keep_answers=true").decide(view)[0].changes[0]  # type: ignore[attr-defined]
    gone = {m.message.content for m in users_only.items}
    assert "first ask" not in gone and "done: the answer" in gone and "developer rules" in gone
    kept_gone = {m.message.content for m in with_answers.items}
    assert {"first ask", "second ask", "done: the answer", "developer rules"}.isdisjoint(kept_gone)
    assert any(m.message.tool_calls for m in with_answers.items)  # a call and its result are summarised


# ---------------------------------------------------------------- compaction by compaction, product beside preset


def test_claude_code_compaction_side_by_side(tmp_path: Path) -> None:
    c = _check(claude_code_compaction(tmp_path / "cc.jsonl", version="2.1.5"))
    product, preset = c.product_side, c.preset_side
    # the product's side as its log has it: request 9's prompt, request 10's (the head, the summary's 40, a paste),
    # the summary's counted tokens, no logged summarising call
    assert product.prompt_before == 3_100 + 8 * 20_008 and product.prompt_after == 3_040 + 20_000
    assert product.summarizer_cost_usd is None and product.summary_tokens and product.summary_tokens < 40
    assert product.cost_after_usd is not None and product.cost_after_usd > 0
    assert preset.summary_tokens == 5_258 and preset.summarizer_cost_usd is not None
    # the same request's prompt, replayed (the fixture's counts are chars4 exact, calibration within a few tokens)
    assert product.after_request == preset.after_request == 9 and preset.prompt_before is not None
    assert abs(preset.prompt_before - product.prompt_before) <= 10
    # 2.1.5 is metered as the whole prompt, uncached: its price at Sonnet 4.5's rates
    pricer = Pricer("anthropic", SONNET)
    assert preset.prompt_before is not None
    calls = preset.summarizer_cost_usd
    assert calls > pricer.cost(Bill(preset.prompt_before, output_tokens=5_258), None)  # + the instructions
    entry = preset_check.compaction_entry(c)
    assert set(entry) == {"product", "preset"}
    keys = {"after_request", "prompt_before", "prompt_after", "summary_tokens", "summarizer_cost_usd", "cost_after_usd"}
    assert set(entry["product"]) == keys == set(entry["preset"])


def test_tool_results_are_compacted_not_cleared_and_files_come_back(tmp_path: Path) -> None:
    c = _check(claude_code_compaction(tmp_path / "cct.jsonl", tools=True))
    assert c.preset_clear_request is None and c.preset_request is not None  # no clearing stage: it compacts
    assert c.preset_side.after_request is not None and c.product_side.after_request is not None
    assert abs(c.preset_side.after_request - c.product_side.after_request) <= 1
    # the 5 newest files read (20,000 tokens each) come back at 5,000 each beside the 5,258-token summary
    assert c.preset_side.prompt_after is not None
    assert c.preset_side.prompt_after > 25_000 + 5_258


def acompact(path: Path, session: Path, version: str = "2.1.39", read: int = 163_172, write: int = 20_100,
             output: int = 5_300) -> Path:
    """A Claude Code 2.1.3x summarising call, as a sidechain file `agent-acompact-*.jsonl` beside the session: its
    compaction prompt and one response ten seconds before the boundary, reading `read` tokens from the cache (the
    last request's prompt and answer, as the product's 2.1.3x logs show it: nearly all of its prompt) and writing
    `write` (what came since: in the fixture a 20,000-token paste)."""
    lines = [json.loads(x) for x in session.read_text().splitlines()]
    boundary = next(x for x in lines if x.get("subtype") == "compact_boundary")
    ts = boundary["timestamp"]  # DAY + "MM:SS.000Z"
    second = int(ts[14:16]) * 60 + int(ts[17:19]) - 10
    agent = {"isSidechain": True, "agentId": "acompact-5e1f"}
    out = [_claude("user", "k1", None, second, version, **agent, message={
        "role": "user", "content": "Your task is to create a detailed summary of the conversation so far."}),
        _claude("assistant", "k2", "k1", second + 8, version, **agent, requestId="req_k", message={
            "model": SONNET, "id": "msg_k", "type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "<summary>the user pasted logs</summary>"}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                      "output_tokens": output}})]
    assert stamp(second).endswith("Z")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in out), encoding="utf-8")
    return path


def test_acompact_file_is_the_compactions_summarising_call(tmp_path: Path) -> None:
    session = claude_code_compaction(tmp_path / "cc.jsonl", version="2.1.39")
    call = acompact(tmp_path / "cc" / "subagents" / "agent-acompact-5e1f.jsonl", session)
    trace = read_traces([str(session), str(call)])
    (linked,) = [s for s in trace.sessions if s.extra.get("compaction_call")]
    after = next(s for s in trace.sessions if s.extra.get("continues"))
    assert linked.extra["compaction_of"] == after.extra["continues"]
    assert after.extra["compaction_call_session"] == linked.id
    # inspect: not a subagent; its cost is the compaction's
    data = json.loads(runner.invoke(app, ["inspect", str(session), str(call), "--json"]).stdout)
    assert data["subagents"] == 0 and data["compaction_calls"]["sessions"] == 1
    cost = Pricer("anthropic", SONNET).cost(Bill(163_172 + 20_100 + 3, 163_172, 20_100, output_tokens=5_300), None)
    assert Decimal(data["compaction_calls"]["cost_usd"]) == cost
    text = runner.invoke(app, ["inspect", str(session), str(call), "--wide"]).stdout
    assert "summarising call of #1's compaction" in text and "1 summarising call(s) logged" in text
    # validate and the preset check: the product's summarising call is the logged one, beside the preset's
    data = json.loads(runner.invoke(app, ["validate", str(session), str(call), "--tokenizer", "chars4", "--json",
                                          "--worst", "20"]).stdout)
    (entry,) = data["compactions"]
    assert Decimal(entry["product"]["summarizer_cost_usd"]) == cost and entry["product"]["summary_tokens"] == 5_300
    reasons = [r for check in data["worst"] for r in check["reasons"]]
    assert any("the summarising call is logged in its own file" in r for r in reasons)
    # 2.1.39 bills the preset's call from the cache too: within a few cents of the logged one, where metering
    # it uncached (2.1.5's rule) costs about three times as much
    preset_cost = Decimal(entry["preset"]["summarizer_cost_usd"])
    assert abs(preset_cost - cost) / cost < Decimal("0.25")
    old = _check(claude_code_compaction(tmp_path / "old.jsonl", version="2.1.5")).preset_side.summarizer_cost_usd
    assert old is not None and old > 2 * preset_cost


def test_codex_compaction_at_the_product_request(tmp_path: Path) -> None:
    c = _check(codex_compaction(tmp_path / "cx.jsonl", version="0.104.0", window=258_400))
    # 258,400 x 0.8127 = 210,002: request 10 (about 230k) is past it, request 9 (about 205k) is not
    assert c.threshold_tokens == int(258_400 * 0.8127) and c.threshold_request == 11 and c.recorded_request == 11
    assert c.preset_side.after_request in (9, 10) and c.product_side.after_request == 10


def test_manual_compaction_is_replayed_where_the_user_asked(tmp_path: Path) -> None:
    path = claude_code_compaction(tmp_path / "m.jsonl", before=4)  # 63k: far below any threshold
    path.write_text(path.read_text().replace('"trigger": "auto"', '"trigger": "manual"'))
    c = _check(path)
    assert c.trigger == "manual" and c.preset.endswith("at_request=5")
    assert c.preset_side.after_request == c.product_side.after_request == 4


# ---------------------------------------------------------------- presets check over a corpus


def test_presets_check_one_line_per_product_and_version(tmp_path: Path) -> None:
    claude_code_compaction(tmp_path / "a.jsonl", version="2.1.5")
    claude_code_compaction(tmp_path / "b.jsonl", version="2.1.5", step=19_000)
    codex_compaction(tmp_path / "c.jsonl", version="0.104.0", window=258_400)
    args = ["presets", "check", str(tmp_path), "--tokenizer", "chars4", "--json"]
    first = runner.invoke(app, args).stdout
    assert runner.invoke(app, args).stdout == first  # same input, same bytes
    data = json.loads(first)
    lines = {(x["product"], x["version"]): x for x in data["lines"]}
    assert set(lines) == {("claude-code", "2.1.5"), ("codex", "0.104.0")}
    assert lines[("claude-code", "2.1.5")]["compactions"] == 2 and lines[("codex", "0.104.0")]["auto"] == 1
    assert len(data["compactions"]) == 3
    for entry in data["compactions"]:
        m = preset_corpus.Measured.of(
            preset_check.Side(**{k: _num(v) for k, v in entry["product"].items()}),
            preset_check.Side(**{k: _num(v) for k, v in entry["preset"].items()}))
        assert m.offset is not None and abs(m.offset) <= 2
    worst = lines[("codex", "0.104.0")]["request_offset"]["worst"]
    assert worst == data["compactions"][2]["preset"]["after_request"] - data["compactions"][2]["product"][
        "after_request"]
    text = runner.invoke(app, ["presets", "check", str(tmp_path), "--tokenizer", "chars4"]).stdout
    assert "product presets against the products' own compactions" in text and "codex" in text


def _num(value: object) -> object:
    return Decimal(value) if isinstance(value, str) else value


def test_side_calls_default_to_uncached() -> None:
    call = SideCall("summarize", 1_000, 100)
    assert (call.cache_read_tokens, call.cache_write_tokens) == (0, 0)


# ---------------------------------------------------------------- Gemini CLI, Cline, OpenHands, server-side compaction


def test_gemini_cli_threshold_by_date() -> None:
    from ctxsim.presets import gemini_cli

    assert gemini_cli.for_date("2025-10-01T09:00:00Z")[:2] == ("gemini-cli:compact_at=0.7", 0.7)
    assert gemini_cli.for_date("2025-11-05")[:2] == ("gemini-cli:compact_at=0.2", 0.2)
    assert gemini_cli.for_date("2025-11-20")[:2] == ("gemini-cli", 0.5) == gemini_cli.for_date(None)[:2]
    (stage,) = [parse_policy(s) for s in presets()["gemini-cli"].stages]
    assert isinstance(stage, CompactPolicy) and stage.params.keep_fraction == 0.3 and stage.params.verify


def test_cline_condenses_at_three_quarters_from_the_cached_prompt() -> None:
    (stage,) = [parse_policy(s) for s in presets()["cline"].stages]
    assert isinstance(stage, CompactPolicy) and stage.thresholds(200_000) == (150_000, 150_000)
    assert (stage.params.trigger_on, stage.params.summarizer_call) == ("last_response", "cached")


def test_openhands_sdk_condenser_summarises_the_forgotten_middle() -> None:
    messages = [Message("user", "the task " * 40)]
    for i in range(12):
        messages += [Message("assistant", f"step {i} " * 200), Message("user", f"more {i} " * 200)]
    _, view = _history(messages)  # 25 messages
    policy = parse_policy("amortized:max_size=20,keep_first=2,summarize=true,summary_tokens=300")
    (edit,) = policy.decide(view)
    (change,) = edit.changes
    assert isinstance(change, Summarize) and change.tokens == view.size(Message("summary", "")) + 300
    # head 2, tail 20 // 2 - 2 - 1 = 7: the 16 between are summarised, the call reading them alone
    assert [it.pos for it in change.items] == list(range(2, 18))
    (call,) = edit.calls or (change.call,)  # type: ignore[assignment]
    assert call is not None and call.output_tokens == 300 and call.cache_read_tokens == 0
    # the token cap (the window here 200,000; max_tokens lower): forget to under half of it
    capped = parse_policy("amortized:max_size=240,keep_first=2,summarize=true,max_tokens=8000").decide(view)
    (forgot,) = capped[0].changes  # type: ignore[attr-defined]
    last = forgot.items[-1]
    left = view.prefix_tokens(2) + sum(it.tokens for it in view.items[last.pos + 1:])
    assert view.prompt_tokens > 8_000 and forgot.items[0].pos == 2
    assert left <= 4_000 < left + last.tokens  # as many of the newest as fit under half the cap
    assert parse_policy("amortized:max_size=240,keep_first=2").decide(view) == ()  # the V0 rule: no cap


def test_server_compaction_iteration_reads_the_cached_prefix() -> None:
    _, view = _history([*_reads(30, 8_000), Message("user", "go on " * 200)])
    cached = parse_policy("server_compact:trigger=50000").decide(view)
    fresh = parse_policy("server_compact:trigger=50000,iteration_cache=uncached").decide(view)
    (call,), (plain,) = cached[0].calls, fresh[0].calls  # type: ignore[attr-defined]
    assert call.input_tokens == plain.input_tokens > view.prompt_tokens and plain.cache_read_tokens == 0
    last = max(i for i, it in enumerate(view.items) if it.message.role == "assistant")
    assert call.cache_read_tokens == view.prefix_tokens(last) > 50_000
    assert call.cache_write_tokens == call.input_tokens - call.cache_read_tokens
    (stage,) = [parse_policy(s) for s in presets()["openai-responses"].stages]
    assert stage.params.trigger == 200_000  # type: ignore[attr-defined]


def test_idle_clear_after_an_hour_keeps_the_newest_five() -> None:
    from ctxsim.model import Session, Trace, format_ts
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    t0 = 1_767_000_000.0
    messages = [Message("user", "task", ts=format_ts(t0))]
    for i in range(8):
        name = "Read" if i != 3 else "TodoWrite"  # not a compactable tool: never cleared
        call = ToolCall(f"c{i}", name, {"file_path": f"f{i}.py"})
        ts = format_ts(t0 + 10 * i + 5)
        messages += [Message("assistant", "", tool_calls=(call,), ts=ts),
                     Message("tool", f"contents {i} " * 50, tool_call_id=f"c{i}", name=name, ts=ts)]
    # the next request comes 61 minutes after the last answer (the previous ones 10 seconds apart)
    messages += [Message("assistant", "all read", ts=format_ts(t0 + 100)),
                 Message("user", "back again", ts=format_ts(t0 + 100 + 61 * 60)),
                 Message("assistant", "ok", ts=format_ts(t0 + 101 + 61 * 60))]
    trace = Trace("idle", (Session("s", messages=tuple(messages)),))
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    run = replayer.run(parse_policy("idle_clear"))
    (event,) = [e for e in run.events if e.kind == "clear"]
    assert event.request == 10 and event.messages == 2  # 7 Read results, the newest 5 kept
    late = replayer.run(parse_policy("idle_clear:gap_minutes=62"))
    assert not [e for e in late.events if e.kind == "clear"]
    (stage, _) = resolve_stages("claude-code-microcompact")
    assert stage.name == "idle_clear"


def resolve_stages(spec: str) -> tuple:  # type: ignore[type-arg]
    from ctxsim.policies.spec import resolve

    return tuple(resolve([spec])[0].policy.stages)  # type: ignore[attr-defined]
