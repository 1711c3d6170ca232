"""inspect (the recorded truth), calibrate (the fit) and validate (replay vs recorded).

Golden numbers are hand-computed from the fixtures (tests/fixtures/make_fixtures.py lists what
each holds) or from parameters chosen by hand for a synthetic trace; the comments show the sums.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.analysis.calibrate import fit
from ctxsim.analysis.inspect import inspect_trace
from ctxsim.analysis.validate import validate
from ctxsim.cli import app
from ctxsim.formats import read_traces
from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code"
TINY = FIXTURES / "tiny"
T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z


def run_cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


# ---------------------------------------------------------------- inspect


def test_inspect_totals_count_every_response_once():
    insp = inspect_trace(read_traces([str(CLAUDE)]), tokenizer="chars4")
    t = insp.totals
    # five responses: A, B, C in the main file (a synthetic error and a repeated copy not counted), S1, S2
    assert (t.requests, t.requests_with_usage) == (5, 5)
    # prompts 9,010 + 9,320 + 2,030 + 3,803 + 4,105 (exclusive input + writes + reads, per response)
    assert t.input_tokens == 28_268
    assert t.cache_read_tokens == 9_000 + 4_000
    assert t.cache_write_5m_tokens == 9_000 + 300 + 2_000 + 3_800 + 100 and t.cache_write_1h_tokens == 0
    assert t.uncached_tokens == 10 + 20 + 30 + 3 + 5
    assert t.output_tokens == 140 + 60 + 25 + 40 + 250  # S2's placeholder 1 repaired to 250 from the parent
    # Sonnet 4.5 list prices per MTok: 3 input, 3.75 write (5m), 0.30 read, 15 output:
    # 68 * 3 + 15,200 * 3.75 + 13,000 * 0.30 + 515 * 15 = 204 + 57,000 + 3,900 + 7,725 = 68,829 -> $0.068829
    assert t.cost_usd == Decimal("0.068829")
    assert t.peak_context_tokens == 9_320
    assert round(t.hit_rate, 6) == round(13_000 / 28_268, 6)
    assert insp.compactions == 1 and insp.subagents == 1 and insp.subagents_not_read == []


def test_inspect_says_when_a_subagent_file_is_missing():
    insp = inspect_trace(read_traces([str(CLAUDE / "feat-main.jsonl")]), tokenizer="chars4")
    assert insp.totals.requests == 3 and insp.subagents == 0
    assert insp.subagents_not_read == ["feat01"]
    assert any("subagent feat01" in n and "not counted" in n for n in insp.notes)


def test_inspect_composition_and_growth_by_hand():
    insp = inspect_trace(read_traces([str(TINY / "claude-code.jsonl")]), tokenizer="chars4")
    c = insp.composition
    # chars4 = ceil(chars / 4), plus 4 framing tokens a message and 4 a tool call:
    #   user  "Fix the rounding bug in invoice.py" (34 chars) 9 + 4 = 13, sent by 2 requests -> carried 26
    #   tool  the file (38 chars) 10 + 4 = 14, sent by request 2 -> carried 14
    #   assistant 1: "Reading the file." 5 + 4, call: 4 + "read_file" 3 + '{"path":"invoice.py"}' 6 = 22,
    #                sent by request 2 -> carried 22; assistant 2: "Fixed: use Decimal." 5 + 4 = 9, carried 0
    assert c.by_role["user"] == {"messages": 1, "tokens": 13, "carried": 26}
    assert c.by_role["tool"] == {"messages": 1, "tokens": 14, "carried": 14}
    assert c.by_role["assistant"] == {"messages": 2, "tokens": 31, "carried": 22}
    assert c.by_tool["read_file"] == {"calls": 1, "results": 1, "tokens": 14, "carried": 14}
    assert [r["tokens"] for r in c.largest_results] == [14]
    assert c.growth["max"] == 100  # recorded prompt 1,200 -> 1,300
    timeline = insp.requests
    assert [r.arrived for r in timeline] == [["user 13"], ["read_file result 14"]]
    assert [r.growth_tokens for r in timeline] == [None, 100]


def test_inspect_run_totals_only_trace():
    insp = inspect_trace(read_traces([str(TINY / "swe-agent.traj")]), tokenizer="chars4")
    t = insp.totals
    assert t.from_run_totals and t.requests == 2 and t.requests_with_usage == 0
    assert (t.input_tokens, t.output_tokens) == (2_500, 42)
    # gpt-4o-2024-08-06 at 2.50 / 10.00 per MTok: 2,500 * 2.5 + 42 * 10 = 6,670 -> $0.00667
    assert t.cost_usd == Decimal("0.00667")


def test_inspect_cli_json_and_grouping():
    result = run_cli("inspect", str(CLAUDE), "--json", "--by", "session", "--tokenizer", "chars4")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    groups = data["by"]["groups"]
    # --by reads file by file; a session's parts (after compaction) and its subagents fold into it, named by
    # project (the cwd) and start time
    assert {k: v["requests"] for k, v in groups.items()} == {"shop 2026-01-13 16:56": 5}
    assert data["totals"]["input_tokens"] == 28_268 and data["timezone"] == "UTC"
    whole = json.loads(run_cli("inspect", str(CLAUDE), "--json", "--tokenizer", "chars4").stdout)
    assert len(whole["timeline"]) == 5 and whole["totals"]["input_tokens"] == 28_268
    by_day = json.loads(run_cli("inspect", str(CLAUDE), "--json", "--by", "day", "--tokenizer", "chars4").stdout)
    assert list(by_day["by"]["groups"]) == ["2026-01-13"]
    text = run_cli("inspect", str(CLAUDE), "--by", "model", "--tokenizer", "chars4")
    assert text.exit_code == 0 and "claude-sonnet-4-5-20250929" in text.stdout and "28,268" in text.stdout
    full = run_cli("inspect", str(CLAUDE), "--tokenizer", "chars4", "--wide")  # every column, uncut
    assert "compaction (before: 9,800 tokens)" in full.stdout
    fitted = run_cli("inspect", str(CLAUDE), "--tokenizer", "chars4")  # 80 columns: the event still shown, cut
    assert "compaction (before: 9," in fitted.stdout
    bad = run_cli("inspect", str(CLAUDE), "--by", "fortnight")
    assert bad.exit_code == 2 and "--by must be one of day, week, month, session, project, model, block" in bad.stderr


# ---------------------------------------------------------------- calibration

MAIN_PREFIX, SUB_PREFIX, SCALE, OVERHEAD = 5_000, 3_000, 1.25, 12


def synthetic_trace(model: str = "claude-sonnet-4-5") -> Trace:
    """Recorded prompts made by hand from a known rule, counted with chars4:
    recorded_k = prefix + 1.25 * (text tokens before k + 12 * messages before k).
    User k says 400*k characters (100*k tokens), every answer 160 characters (40 tokens)."""
    sessions = []
    for sid, prefix, extra, turns in (("main", MAIN_PREFIX, {}, 9), ("sub", SUB_PREFIX, {"agent_id": "a1"}, 5)):
        messages = []
        text = count = 0
        for k in range(1, turns + 1):
            messages.append(Message("user", "abcd" * (100 * k), ts=format_ts(T0 + 10 * k)))
            text, count = text + 100 * k, count + 1
            recorded = prefix + SCALE * (text + OVERHEAD * count)
            assert recorded == int(recorded)
            messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(T0 + 10 * k + 1),
                                    usage=Usage(int(recorded), 0, 0, 0, 40)))
            text, count = text + 40, count + 1
        sessions.append(Session(id=sid, source="synthetic", model=model, provider="anthropic",
                                messages=tuple(messages), extra=extra))
    return Trace("synthetic", tuple(sessions))


def test_calibration_recovers_the_hand_chosen_scale_overhead_and_prefixes():
    cal = fit(synthetic_trace(), "chars4")
    assert cal is not None
    assert cal.scale == pytest.approx(SCALE, abs=1e-6)
    assert cal.message_tokens == OVERHEAD
    assert cal.group_prefix_tokens == {"synthetic:main": MAIN_PREFIX, "synthetic:subagent": SUB_PREFIX}
    assert cal.hidden_prefix_tokens == SUB_PREFIX  # the smallest; the main sessions carry the rest
    applied = cal.apply(synthetic_trace())
    assert [s.system_tokens for s in applied.sessions] == [MAIN_PREFIX - SUB_PREFIX, None]
    framing = cal.framing()
    assert (framing.scale, framing.message_tokens, framing.tool_call_tokens) == (SCALE, OVERHEAD, 0)
    assert cal.setup().hidden_prefix_tokens == SUB_PREFIX


def test_calibration_needs_three_recorded_requests():
    assert fit(read_traces([str(TINY / "claude-code.jsonl")]), "chars4") is None


# ---------------------------------------------------------------- validate


def test_validate_after_calibration_reproduces_the_rule_exactly():
    raw = validate(synthetic_trace(), "chars4", calibrate=False)
    calibrated = validate(synthetic_trace(), "chars4")
    assert raw.stats("prompt")["median"] > 0.5  # no prefix, no overhead: more than half the prompt missing
    assert calibrated.stats("prompt")["max"] == 0.0
    assert [c.simulated_input_tokens for c in calibrated.checks] == [c.recorded_input_tokens for c in calibrated.checks]


def test_validate_compares_each_request_and_explains_a_warm_first_read():
    trace = synthetic_trace()
    main = trace.sessions[0]
    first = main.messages[1]
    # the log says the first request read 5,000 tokens from the cache: cached before the log started
    warm = first.usage.input_tokens - 200
    messages = (main.messages[0], Message("assistant", first.content, ts=first.ts,
                                          usage=Usage(first.usage.input_tokens, 5_000, warm - 5_000, 0, 40)),
                *main.messages[2:])
    trace = Trace("t", (Session(id="main", source="synthetic", model=main.model, provider="anthropic",
                                messages=messages),))
    result = validate(trace, "chars4")
    check = result.checks[0]
    # the replay reads the recorded warm prefix at the first request (caching.WarmStart) and says why
    assert check.recorded_cache_read_tokens == 5_000 and check.simulated_cache_read_tokens == 5_000
    assert any("first request of its session" in r and "warm, as recorded" in r for r in check.reasons)
    data = result.to_json(3)
    assert data["requests_with_usage"] == 9 and len(data["worst"]) == 3
    assert data["hit_rate"]["recorded"] > 0


def openai_reasoning_trace() -> Trace:
    """Turn 1: a response that sends back 500 hidden reasoning tokens, a tool, a reply; turn 2: a new
    user message. OpenAI drops earlier turns' reasoning, so request 3's prompt is 500 tokens smaller."""
    usage = Usage(2000, 0, 0, 0, 10)
    messages = (
        Message("user", "a" * 400, ts=format_ts(T0)),
        Message("assistant", "", ts=format_ts(T0 + 1), thinking="", tool_calls=(ToolCall("c1", "ls", {}),),
                usage=usage, extra_tokens=500, extra={"reasoning_tokens": 500}),
        Message("tool", "b" * 400, ts=format_ts(T0 + 2), tool_call_id="c1", name="ls"),
        Message("assistant", "done", ts=format_ts(T0 + 3), usage=usage),
        Message("user", "c" * 40, ts=format_ts(T0 + 4)),
        Message("assistant", "again", ts=format_ts(T0 + 5), usage=usage),
    )
    return Trace("r", (Session(id="r", model="gpt-5", provider="openai", messages=messages),))


def test_validate_applies_the_provider_reasoning_rule():
    from ctxsim.policies import parse_policy
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    trace = openai_reasoning_trace()
    plain = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup()).run(parse_policy("none"))
    result = validate(trace, "chars4", calibrate=False)
    simulated = [c.simulated_input_tokens for c in result.checks]
    kept = [r.input_tokens for r in plain.rows]
    assert simulated[:2] == kept[:2]  # within turn 1 the reasoning is sent back
    assert kept[2] - simulated[2] == 500  # at turn 2 the provider drops it
    assert result.rules and "500 tokens" in result.rules[0]


def test_validate_on_the_claude_fixture_excludes_the_request_after_a_compaction():
    result = validate(read_traces([str(CLAUDE)]), "chars4")
    assert result.calibration is not None and result.calibration.requests_excluded == 1
    after = next(c for c in result.checks if c.session == "feat-main/part-2")
    assert any("compaction" in r for r in after.reasons)


def test_validate_cli(tmp_path: Path):
    native = tmp_path / "synthetic.jsonl"
    from ctxsim.formats import native as native_format

    with native.open("w") as out:
        native_format.write(synthetic_trace(), out)
    result = run_cli("validate", str(native), "--json", "--tokenizer", "chars4")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["calibration"]["scale"] == SCALE and data["per_request_error"]["prompt"]["max"] == 0
    raw = json.loads(run_cli("validate", str(native), "--json", "--tokenizer", "chars4", "--no-calibrate").stdout)
    assert raw["calibration"] is None and raw["per_request_error"]["prompt"]["median"] > 0.5
    text = run_cli("validate", str(native), "--tokenizer", "chars4", "--worst", "2")
    assert text.exit_code == 0 and "token scale" in text.stdout and "worst 2 requests" in text.stdout
    none = run_cli("validate", str(TINY / "swe-agent.traj"))
    assert none.exit_code == 2 and "nothing to validate against" in none.stderr


def test_calibrated_gives_what_a_replay_needs():
    from ctxsim.analysis.calibrate import calibrated
    from ctxsim.replay.engine import Setup

    trace, framing, setup, cal = calibrated(synthetic_trace(), "chars4", setup=Setup(window=100_000))
    assert cal is not None and setup.window == 100_000 and setup.hidden_prefix_tokens == SUB_PREFIX
    assert framing is not None and framing.scale == SCALE
    assert trace.sessions[0].system_tokens == MAIN_PREFIX - SUB_PREFIX
    plain = read_traces([str(TINY / "claude-code.jsonl")])
    assert calibrated(plain, "chars4")[1:] == (None, Setup(), None)  # too few requests: unchanged


def test_validate_cli_reports_the_calibrations_source_and_priors_only(tmp_path: Path):
    native = tmp_path / "synthetic.jsonl"
    from ctxsim.formats import native as native_format

    with native.open("w") as out:
        native_format.write(synthetic_trace(), out)
    data = json.loads(run_cli("validate", str(native), "--json", "--tokenizer", "chars4").stdout)
    cal = data["calibration"]
    assert (cal["source"], cal["fell_back"], cal["mode"]) == ("fit", False, "fit")
    assert cal["session_prefix_tokens"] == {"main": MAIN_PREFIX, "sub": SUB_PREFIX}
    assert data["missing"]["missing_tokens"] == 0 and data["cost_usd"]["range"] is not None
    priors = json.loads(run_cli("validate", str(native), "--json", "--tokenizer", "chars4", "--priors-only").stdout)
    assert (priors["calibration"]["source"], priors["calibration"]["mode"]) == ("priors", "priors")
    assert priors["calibration"]["fitted_scale"] is None
    assert priors["per_request_error"]["prompt"]["max"] > 0  # the priors' scale is not the hand-chosen 1.25
    text = run_cli("validate", str(native), "--tokenizer", "chars4", "--priors-only", "--worst", "0")
    assert text.exit_code == 0 and "scale and overhead from" in text.stdout and "priors" in text.stdout
