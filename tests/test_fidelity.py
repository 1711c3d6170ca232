"""The calibration's causes of error, one small fixture each (issue 17).

Every recorded prompt here is made by hand from a stated rule, counted with chars4 (a token is
4 characters, rounded up), so the fitted values and the anchors can be checked exactly:

    recorded_k = PREFIX + SCALE * (sum over what is sent before request k of (text tokens + OVERHEAD))
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from ctxsim.analysis.calibrate import calibration, token_prior, with_provider_rules
from ctxsim.analysis.validate import validate, validation_tables
from ctxsim.formats import FileReport, read_traces
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import parse_policy

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z
PREFIX, SCALE, OVERHEAD = 4_000, 1.25, 12


def billed(tokens: int) -> int:
    value = SCALE * (tokens + OVERHEAD)
    assert value == int(value)
    return int(value)


# ---------------------------------------------------------------- thinking dropped at a user turn


def thinking_trace(model: str = "claude-sonnet-4-5") -> Trace:
    """Six turns: a user message (100*k tokens), a response with thinking (40*k tokens, growing) and an
    answer of 40 tokens. Claude Sonnet 4.5 strips earlier turns' thinking, so no request is billed for
    any of it: recorded_k counts the users and the answers only."""
    messages = []
    sent = 0
    for k in range(1, 7):
        user = 100 * k
        messages.append(Message("user", "abcd" * user, ts=format_ts(T0 + 60 * k)))
        sent += billed(user)
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(T0 + 60 * k + 5), thinking="t" * (160 * k),
                                usage=Usage(PREFIX + sent, 0, 0, 0, 40 + 40 * k)))
        sent += billed(40)  # the answer stays; its thinking is dropped at the next user message
    return Trace("thinking", (Session(id="t", source="synthetic", model=model, provider="anthropic",
                                      messages=tuple(messages)),))


def test_the_fit_sees_thinking_dropped_at_a_user_turn_and_does_not_bend_the_scale():
    cal = calibration(thinking_trace(), "chars4")
    assert cal.source == "fit" and not cal.fell_back
    assert cal.scale == pytest.approx(SCALE, abs=1e-6) and cal.message_tokens == OVERHEAD
    assert cal.session_prefix_tokens == {"t": PREFIX} and cal.anchors == ()
    result = validate(thinking_trace(), "chars4", calibration=cal)
    assert [c.simulated_input_tokens for c in result.checks] == [c.recorded_input_tokens for c in result.checks]
    assert result.rules and "dropped" in result.rules[0]


def test_the_replay_policy_carries_the_provider_rule():
    policy, rule = with_provider_rules(parse_policy("none"), "anthropic", "claude-sonnet-4-5")
    assert rule is not None and policy.name == "none" and policy.stages == (rule,)  # type: ignore[attr-defined]
    kept, none_rule = with_provider_rules(parse_policy("none"), "anthropic", "claude-opus-4-5", ("claude-opus-4-5",))
    assert none_rule is None and kept.name == "none"  # Opus 4.5 keeps earlier thinking: nothing to drop
    # the trace's models unknown (the engine's rule): there, deciding per request's model
    _, unknown = with_provider_rules(parse_policy("none"), "anthropic", "claude-opus-4-5")
    assert unknown is not None and unknown.active


# ---------------------------------------------------------------- a degenerate fit falls back


def degenerate_trace() -> Trace:
    """The log shows five times what was billed (a reader counting content twice over, say): the bill grows
    by a fifth of each counted user message, a least-squares scale of ~0.2 per counted token. (A bill that
    grows by far more than the log explains is not a degenerate fit: it re-anchors, see below.)"""
    messages = []
    sent = 0
    for k in range(1, 7):
        messages.append(Message("user", "abcd" * (400 + 40 * k * k), ts=format_ts(T0 + 10 * k)))
        sent += 400 + 40 * k * k
        messages.append(Message("assistant", "ok", ts=format_ts(T0 + 10 * k + 1),
                                usage=Usage(PREFIX + sent // 5, 0, 0, 0, 5)))
        sent += 1
    return Trace("degenerate", (Session(id="d", source="synthetic", model="claude-sonnet-4-5", provider="anthropic",
                                        messages=tuple(messages)),))


def test_a_fit_outside_the_priors_bounds_falls_back_to_the_priors_and_says_so():
    prior = token_prior("chars4", "anthropic")
    cal = calibration(degenerate_trace(), "chars4")
    assert cal.fell_back and cal.source == "priors"
    assert cal.fitted_scale is not None
    # a fifth of the counted text: below the bounds (the scale alone, overhead at the prior, is too)
    assert cal.fitted_scale == pytest.approx(0.2, abs=0.01)
    assert not prior.scale_low <= cal.fitted_scale <= prior.scale_high
    assert cal.anchors == ()  # the bill grew less than the log: nothing the log misses
    assert (cal.scale, cal.message_tokens) == (prior.scale, prior.message_tokens)
    assert "outside the priors' bounds" in (cal.fallback_reason or "")
    data = cal.to_json()
    assert data["fell_back"] is True and data["prior"]["source"] == prior.source
    result = validate(degenerate_trace(), "chars4")
    tables, _ = validation_tables(result, 0)
    shown = [row for t in tables for row in t.rows]
    assert any("fell back" in str(row) for row in shown)


def test_the_hidden_prefix_is_never_larger_than_the_first_prompt():
    cal = calibration(degenerate_trace(), "chars4")
    first = degenerate_trace().sessions[0].messages[1].usage
    assert first is not None and 0 <= cal.session_prefix_tokens["d"] <= first.input_tokens


# ---------------------------------------------------------------- Claude Code lines


def cc_line(kind: str, n: int, ts: float, **fields) -> dict:  # type: ignore[no-untyped-def]
    line = {"type": kind, "sessionId": "s1", "uuid": f"{kind[0]}{n}", "parentUuid": None, "version": "2.1.1",
            "timestamp": format_ts(ts)}
    line.update(fields)
    return line


def cc_user(n: int, text: str, ts: float) -> dict:  # type: ignore[no-untyped-def]
    return cc_line("user", n, ts, message={"role": "user", "content": text})


def cc_assistant(n: int, text: str, ts: float, prompt: int, output: int,  # type: ignore[no-untyped-def]
                 stop: str | None = "end_turn") -> dict:
    return cc_line("assistant", n, ts, requestId=f"req_{n}", message={
        "model": "claude-sonnet-4-5-20250929", "id": f"msg_{n}", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": text}], "stop_reason": stop,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": prompt - 10, "cache_read_input_tokens": 0,
                  "output_tokens": output}})


def write_jsonl(path: Path, lines: list) -> None:  # type: ignore[type-arg]
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")


GAP_TOKENS = 400  # the user message on the broken line: sent, but not readable in the log


def skipped_line_session(path: Path) -> None:
    """Seven requests; between requests 3 and 4 a line is broken (a user message of 400 tokens the
    provider did receive): from request 4 on, every recorded prompt carries billed(400) = 515 more."""
    lines: list = []  # type: ignore[type-arg]
    sent = 0
    for k in range(1, 8):
        if k == 4:
            lines.append('{"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "broken')
            sent += billed(GAP_TOKENS)
        user = 60 * k
        lines.append(cc_user(k, "abcd" * user, T0 + 60 * k))
        sent += billed(user)
        lines.append(cc_assistant(k, "wxyz" * 40, T0 + 60 * k + 5, PREFIX + sent, 40))
        sent += billed(40)
    write_jsonl(path, lines)


def test_a_skipped_line_re_anchors_the_replay_and_is_reported_as_missing_tokens(tmp_path: Path):
    path = tmp_path / "gap.jsonl"
    skipped_line_session(path)
    reports: list[FileReport] = []
    trace = read_traces([str(path)], None, True, reports)
    assert reports[0].skipped_lines == [7]
    cal = calibration(trace, "chars4", reports=reports)
    assert cal.scale == pytest.approx(SCALE, abs=1e-6) and cal.message_tokens == OVERHEAD  # not bent by the gap
    assert [(a.request, a.tokens, a.reason) for a in cal.anchors] == [(4, billed(GAP_TOKENS), "skipped lines")]
    assert cal.missing_tokens == billed(GAP_TOKENS) == 515
    assert cal.to_json()["missing"]["by_reason"] == {"skipped lines": {"anchors": 1, "tokens": 515}}
    result = validate(trace, "chars4", reports=reports)
    assert result.stats("prompt")["max"] == 0.0
    fourth = result.checks[3]
    assert fourth.anchor_tokens > 0 and any("re-anchored" in r for r in fourth.reasons)
    # without the report the line is not known to be skipped, but the bill grew by 895 where the log's new
    # messages explain 288 at the prior (1.0 x (240 + 40 + 4 x 2)): re-anchored as an unexplained growth
    # of the same 515, spread over what arrived since request 3 (its answer and the user message)
    blind = validate(trace, "chars4")
    assert blind.calibration is not None
    assert [(a.request, a.tokens, a.reason) for a in blind.calibration.anchors] == [(4, 515, "unexplained growth")]
    # (412 counted tokens over two messages, each scaled and rounded on its own: within a token)
    assert all(abs(c.simulated_input_tokens - c.recorded_input_tokens) <= 1 for c in blind.checks)
    assert blind.checks[3].anchor_tokens == round(515 / SCALE)


# ---------------------------------------------------------------- placeholder output counts


def placeholder_session(path: Path) -> None:
    """Three responses. Response 2 is logged only by its streaming lines: output 3, no stop reason,
    its text 400 characters (100 tokens). Response 3 is a real 5-token answer with a stop reason."""
    lines = [cc_user(1, "abcd" * 100, T0), cc_assistant(1, "wxyz" * 40, T0 + 5, 5_000, 300),
             cc_user(2, "abcd" * 100, T0 + 60), cc_assistant(2, "wxyz" * 100, T0 + 65, 5_300, 3, stop=None),
             cc_user(3, "abcd" * 100, T0 + 120), cc_assistant(3, "done", T0 + 125, 5_600, 5)]
    write_jsonl(path, lines)


def test_a_placeholder_output_count_is_flagged_estimated_and_counted(tmp_path: Path):
    path = tmp_path / "ph.jsonl"
    placeholder_session(path)
    reports: list[FileReport] = []
    trace = read_traces([str(path)], None, False, reports)
    outputs = [m.usage for m in trace.sessions[0].messages if m.role == "assistant"]
    flags = [bool(u.extra.get("output_placeholder")) for u in outputs]  # type: ignore[union-attr]
    assert flags == [False, True, False]
    assert any("placeholder" in n for n in reports[0].notes)
    cal = calibration(trace, "chars4")
    assert cal.placeholder_outputs == (("s1", 2),)
    applied = cal.apply(trace)
    second = [m for m in applied.sessions[0].messages if m.role == "assistant"][1]
    assert second.usage is not None and second.usage.extra["output_estimated"] is True
    assert second.usage.extra["output_recorded"] == 3
    assert second.usage.output_tokens == round(100 * cal.scale + cal.message_tokens * (cal.scale - 1))
    result = validate(trace, "chars4")
    assert [c.output_estimated for c in result.checks] == [False, True, False]
    assert result.to_json()["outputs_estimated"] == 1
    assert any("placeholder" in r for r in result.checks[1].reasons)


# ---------------------------------------------------------------- a first request reading a warm prefix


def warm_first_trace() -> Trace:
    """Four requests, 5-minute cache, list prices. The first request read its whole 4,000-token prefix
    from a cache another session warmed: the log cannot say that would happen again."""
    messages = []
    sent = 0
    previous = 0
    for k in range(1, 5):
        user = 100 * k
        messages.append(Message("user", "abcd" * user, ts=format_ts(T0 + 30 * k)))
        sent += billed(user)
        prompt = PREFIX + sent
        read = PREFIX if k == 1 else previous
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(T0 + 30 * k + 2),
                                usage=Usage(prompt, read, prompt - read, 0, 40)))
        previous = prompt
        sent += billed(40)
    return Trace("warm", (Session(id="w", source="synthetic", model="claude-sonnet-4-5", provider="anthropic",
                                  messages=tuple(messages)),))


def test_a_warm_first_read_is_a_cost_range_with_the_bill_inside():
    result = validate(warm_first_trace(), "chars4")
    assert result.stats("prompt")["max"] == 0.0
    # the replay reads the prefix at the first request as the log recorded (WarmStart), so it is the bill
    assert result.checks[0].recorded_cache_read_tokens == PREFIX == result.checks[0].simulated_cache_read_tokens
    assert result.simulated_cost == result.recorded_cost
    assert result.cost_range_usd is not None
    low, high = result.cost_range_usd
    assert low == result.simulated_cost < high  # high: another run of the session may find the prefix cold
    assert low <= result.recorded_cost <= high and result.recorded_in_range
    # the high end writes the prefix at the first request: 4,000 tokens at 5-minute write (3.75 per MTok)
    # instead of read (0.30), Sonnet 4.5 list prices
    assert high - low == Decimal(PREFIX) * (Decimal("3.75") - Decimal("0.30")) / 1_000_000
    data = result.to_json()
    assert data["cost_usd"]["recorded_in_range"] is True and len(data["cost_usd"]["range"]) == 2
    cal = result.calibration
    assert cal is not None and cal.cost_range_usd == result.cost_range_usd
    assert cal.warm_start_tokens == {"w": PREFIX}  # what the log shows was warm, for a cache that can start so
    assert cal.session_cost_ranges["w"] == result.cost_range_usd


def test_priors_mode_fits_nothing_and_anchors_on_the_first_request():
    cal = calibration(thinking_trace(), "chars4", mode="priors")
    prior = token_prior("chars4", "anthropic")
    assert cal.source == "priors" and not cal.fell_back and cal.fitted_scale is None
    assert (cal.scale, cal.message_tokens) == (prior.scale, prior.message_tokens)
    result = validate(thinking_trace(), "chars4", calibration=cal)
    assert result.checks[0].prompt_error == 0.0  # the first request is the anchor
    with pytest.raises(ValueError, match="unknown calibration mode 'guess'"):
        calibration(thinking_trace(), "chars4", mode="guess")


# ---------------------------------------------------------------- a drop nothing in the log explains; no usage


def test_a_prompt_drop_the_log_does_not_explain_re_anchors_down():
    """Request 4's recorded prompt is 2,000 tokens below request 3's though the log only grew (the
    product dropped something it does not log): re-anchored there, reported, scale not bent."""
    messages = []
    sent = 0
    for k in range(1, 8):
        user = 60 * k
        messages.append(Message("user", "abcd" * user, ts=format_ts(T0 + 30 * k)))
        sent += billed(user)
        if k == 4:
            sent -= 2_000 + billed(60 * 3)  # request 4 is 2,000 below request 3 although the log grew
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(T0 + 30 * k + 2),
                                usage=Usage(PREFIX + sent, 0, 0, 0, 40)))
        sent += billed(40)
    trace = Trace("drop", (Session(id="p", source="synthetic", model="claude-sonnet-4-5", provider="anthropic",
                                   messages=tuple(messages)),))
    cal = calibration(trace, "chars4")
    assert cal.scale == pytest.approx(SCALE, abs=1e-6) and cal.message_tokens == OVERHEAD
    assert [(a.request, a.tokens, a.reason) for a in cal.anchors] == [(4, -(2_000 + billed(180)), "unexplained drop")]
    assert cal.missing_report["dropped_tokens"] == 2_000 + billed(180) and cal.missing_tokens == 0
    assert validate(trace, "chars4", calibration=cal).stats("prompt")["max"] == 0.0


def test_a_session_without_usage_takes_its_products_prefix_prior():
    """A Claude Code subagent whose responses logged no usage, beside a main session that did."""
    main = thinking_trace().sessions[0]
    sub = Session(id="sub", source="claude-code", model="claude-sonnet-4-5", provider="anthropic",
                  messages=(Message("user", "abcd" * 10), Message("assistant", "ok")), extra={"agent_id": "x"})
    cal = calibration(Trace("mixed", (main, sub)), "chars4")
    assert cal.session_prefix_tokens["sub"] == 6_000  # the claude-code subagent prior (it shows no system prompt)
    assert any("sub: no recorded usage" in n for n in cal.notes)


def test_a_microcompaction_the_log_records_re_anchors_with_its_name():
    """Claude Code's microcompact clears old tool output inside a session part: the log records the
    event, the none replay keeps the output, so the replay re-anchors there (by the event's name)."""
    from ctxsim.model import Event

    trace = thinking_trace(model="claude-opus-4-5")  # keeps thinking: every response's thinking is billed
    session = trace.sessions[0]
    messages = list(session.messages)
    for i in range(7, len(messages), 2):  # from request 4 on, 1,500 tokens fewer were sent
        u = messages[i].usage
        assert u is not None
        messages[i] = Message("assistant", messages[i].content, ts=messages[i].ts, thinking=messages[i].thinking,
                              usage=Usage(u.input_tokens - 1_500, 0, 0, 0, u.output_tokens))
    event = Event("microcompact", position=6, ts=messages[6].ts)
    trace = Trace("mc", (Session(id="t", source="synthetic", model="claude-opus-4-5", provider="anthropic",
                                 messages=tuple(messages), events=(event,)),))
    cal = calibration(trace, "chars4")
    assert [(a.request, a.reason) for a in cal.anchors] == [(4, "microcompact in the log")]


def test_an_openai_cache_that_runs_into_the_response_is_inside_the_range():
    """gpt-5, three requests 2 s apart: the recorded reads run into the previous response (prompt +
    output), the replay caches prompts only. The low end of the range allows it."""
    messages = []
    sent = previous = 0
    for k in range(1, 4):
        messages.append(Message("user", "abcd" * (1_000 * k), ts=format_ts(T0 + 2 * k)))
        sent += 1_000 * k + 4
        read = 0 if k == 1 else previous
        messages.append(Message("assistant", "wxyz" * 100, ts=format_ts(T0 + 2 * k + 1),
                                usage=Usage(PREFIX + sent, read, 0, 0, 100)))
        previous = PREFIX + sent + 100
        sent += 100 + 4
    trace = Trace("oa", (Session(id="o", source="synthetic", model="gpt-5", provider="openai",
                                 messages=tuple(messages)),))
    result = validate(trace, "chars4", mode="priors")
    assert result.cost_range_usd is not None
    low, high = result.cost_range_usd
    assert low < result.simulated_cost <= high
    assert result.recorded_cost < result.simulated_cost and result.recorded_in_range


def test_context_re_attached_after_a_compaction_is_reported_not_fitted():
    """Part 2 continues part 1 after the product compacted: its first request carries the summary (in
    the log) and 2,000 tokens of re-read files (not in the log), on top of the same hidden prefix."""
    from ctxsim.model import Event

    part1 = thinking_trace(model="claude-opus-4-5").sessions[0]
    first = part1.messages[1].usage
    assert first is not None
    messages = []
    sent = 0
    summary = Message("summary", "s" * 800, ts=format_ts(T0 + 1_000))
    sent += billed(200)
    messages.append(summary)
    for k in range(1, 5):
        messages.append(Message("user", "abcd" * (52 * k), ts=format_ts(T0 + 1_000 + 60 * k)))
        sent += billed(52 * k)
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(T0 + 1_000 + 60 * k + 5),
                                usage=Usage(PREFIX + 2_000 + sent, 0, 0, 0, 40)))
        sent += billed(40)
    part2 = Session(id="t/part-2", source="synthetic", model="claude-opus-4-5", provider="anthropic",
                    messages=tuple(messages), events=(Event("compaction", 0, ts=summary.ts),),
                    extra={"continues": "t"})
    # part 1 recorded with its thinking kept (Opus 4.5): rebuild its prompts by the same rule
    p1 = []
    sent = 0
    for m in part1.messages:
        if m.role == "assistant":
            p1.append(Message("assistant", m.content, ts=m.ts, thinking=m.thinking,
                              usage=Usage(PREFIX + sent, 0, 0, 0, 40)))
            sent += billed(40 + len(m.thinking or "") // 4)
        else:
            sent += billed(len(m.content) // 4)
            p1.append(m)
    trace = Trace("c", (Session(id="t", source="synthetic", model="claude-opus-4-5", provider="anthropic",
                                messages=tuple(p1)), part2))
    cal = calibration(trace, "chars4")
    assert cal.scale == pytest.approx(SCALE, abs=1e-6) and cal.message_tokens == OVERHEAD
    assert cal.session_prefix_tokens == {"t": PREFIX, "t/part-2": PREFIX + 2_000}
    assert cal.reattached_tokens == {"t/part-2": 2_000}
    assert cal.missing_report["reattached_after_compaction_tokens"] == 2_000
    assert validate(trace, "chars4", calibration=cal).stats("prompt")["max"] == 0.0
