"""Claude Code-like caching the log does not show (issue 17, part 3), one fixture each:

- a warm first request: the product's sessions share their system prompt and tools, so a session's
  first request reads a prefix another session cached (the log records the read): the replay reads it
  too (caching.WarmStart), and the cost range's high end is the cold start;
- a layered hidden prefix: Claude Code's prompt is system prompt + tools / project context /
  conversation (code.claude.com prompt-caching docs; reference B.5). When earlier turns' thinking is
  dropped at a new user turn, the provider rewrites from the last live entry before the change: the
  system breakpoint. The recorded read stops there, inside the hidden prefix; the calibration takes that
  stop as the system layer and replays the rest of the prefix as context after the system breakpoint.

The recorded usage is made by ctxsim's own engine on the true, layered prompt, then the hidden parts
are taken out of the log, so every expected number is derived, not typed in.
"""

from __future__ import annotations

from dataclasses import replace

from ctxsim.analysis.calibrate import calibration
from ctxsim.analysis.validate import validate
from ctxsim.caching import CacheResult, WarmStart, cache_spec
from ctxsim.history import History
from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0
SYSTEM_LAYER, CONTEXT = 3_000, 5_000  # billed tokens: tools + system prompt, then project context
SCALE, OVERHEAD = 1.25, 12
STEPS = 7


def _log_messages(turns: int) -> list[Message]:
    out: list[Message] = []
    t = T0
    for k in range(1, turns + 1):
        out.append(Message("user", "abcd" * (60 * k), ts=format_ts(t)))
        for step in range(STEPS + 1):  # a request per tool call, then the answer: over 20 blocks a turn, so the
            t += 20  # 20-block lookback cannot reach back to the first messages' entry at the next user turn
            call = (ToolCall(f"c{k}-{step}", "Read", {"path": f"f{k}{step}.py"}),) if step < STEPS else ()
            out.append(Message("assistant", "wxyz" * 30, ts=format_ts(t), thinking="t" * (200 + 40 * k),
                               tool_calls=call))
            if call:
                t += 5
                out.append(Message("tool", "line\n" * (80 + 10 * step), ts=format_ts(t), tool_call_id=call[0].id,
                                   name="Read"))
        t += 100  # the user reads the answer, then types the next turn
    return out


def layered(turns: int = 6) -> Trace:
    """The log (no system prompt, no project context) with the usage the layered prompt was billed."""
    log = _log_messages(turns)
    counted_context = round(CONTEXT / SCALE) - OVERHEAD
    truth = Session(id="s", source="claude-code", model="claude-sonnet-4-5", provider="anthropic",
                    system_tokens=SYSTEM_LAYER, tools_tokens=0,
                    messages=(Message("system", "", extra_tokens=counted_context, extra={"pinned": True}), *log))
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")),
                         Framing(message_tokens=OVERHEAD, tool_call_tokens=0, tool_result_tokens=0, scale=SCALE))
    run = Replayer(Trace("truth", (truth,)), sizer, Setup(cache="anthropic", provider_rules=True)).run(
        parse_policy("none"))
    rows = iter(r for r in run.rows if r.kind == "request")
    billed = []
    for m in log:
        if m.role == "assistant":
            r = next(rows)
            billed.append(replace(m, usage=Usage(r.input_tokens, r.cache_read_tokens, r.cache_write_tokens, 0, 40)))
        else:
            billed.append(m)
    return Trace("layered", (Session(id="s", source="claude-code", model="claude-sonnet-4-5", provider="anthropic",
                                     messages=tuple(billed)),))


def test_reads_stopping_inside_the_hidden_prefix_give_the_system_layer():
    trace = layered()
    reads = [m.usage.cache_read_tokens for m in trace.sessions[0].messages if m.usage]
    assert SYSTEM_LAYER in reads[1:]  # the fixture does break at the system breakpoint at a user turn
    cal = calibration(trace, "chars4")
    assert abs(cal.scale - SCALE) < 0.01 and cal.message_tokens == OVERHEAD
    assert abs(cal.prefix_of(trace.sessions[0]) - (SYSTEM_LAYER + CONTEXT)) <= 16
    assert cal.system_layer_tokens == {"s": SYSTEM_LAYER}
    result = validate(trace, "chars4", calibration=cal)
    rec_write = sum(c.recorded_cache_write_tokens for c in result.checks)
    sim_write = sum(c.simulated_cache_write_tokens for c in result.checks)
    assert abs(sim_write - rec_write) <= 0.01 * rec_write
    # without the layer (the whole hidden prefix before the system breakpoint) the breaks write far less
    flat = validate(trace, "chars4", calibration=replace(cal, system_layer_tokens={}, context_tokens={}))
    flat_write = sum(c.simulated_cache_write_tokens for c in flat.checks)
    assert flat_write < rec_write - CONTEXT  # each break misses the context's rewrite


def test_no_stop_inside_the_prefix_no_layer():
    trace = layered(turns=1)  # one turn: no user turn drops thinking, no break
    cal = calibration(trace, "chars4")
    assert cal.system_layer_tokens == {}


def _history(tokens: int) -> History:
    history = History(tokens, lambda m: 0, lambda m: 1)
    return history


def test_warm_start_moves_the_first_request_and_the_cold_ones_after_a_gap():
    inner = cache_spec("anthropic").build("claude-sonnet-4-5")
    cold = cache_spec("anthropic").build("claude-sonnet-4-5")
    warm = WarmStart(inner, 2_000)
    history = _history(5_000)
    cold_real, _ = cold.request(history, T0)
    real, _ = warm.request(history, T0)
    assert cold_real == CacheResult(0, 5_000, 0)
    assert real == CacheResult(2_000, 3_000, 0)  # read instead of written, the prompt unchanged
    assert warm.request(history, T0 + 10) == cold.request(history, T0 + 10)  # later requests: the model's own
    # after an idle gap past the 5-minute TTL the model's entries are cold, but the product kept its shared
    # layer warm: the layer is read, the rest written
    assert cold.request(history, T0 + 900)[0] == CacheResult(0, 5_000, 0)
    assert warm.request(history, T0 + 900)[0] == CacheResult(2_000, 3_000, 0)
    big = WarmStart(cache_spec("anthropic").build("claude-sonnet-4-5"), 9_000)
    assert big.request(_history(5_000), T0)[0] == CacheResult(5_000, 0, 0)  # never more than the prompt


def test_a_recorded_warm_first_read_is_replayed_and_the_cold_start_is_the_high_end():
    trace = layered(turns=2)
    session = trace.sessions[0]
    messages = list(session.messages)
    first = next(i for i, m in enumerate(messages) if m.usage)
    u = messages[first].usage
    messages[first] = replace(messages[first], usage=replace(u, cache_read_tokens=2_000,
                                                               cache_write_tokens=u.cache_write_tokens - 2_000))
    trace = replace(trace, sessions=(replace(session, messages=tuple(messages)),))
    result = validate(trace, "chars4")
    check = result.checks[0]
    assert check.simulated_cache_read_tokens == 2_000 == check.recorded_cache_read_tokens
    low, high = result.cost_range_usd
    assert low <= result.simulated_cost < high


# ---------------------------------------------------------------- attachment lines are content that was sent


def _line(kind: str, uuid: str, second: int, **more: object) -> str:
    import json

    record = {"type": kind, "uuid": uuid, "sessionId": "S", "version": "2.1.20",
              "timestamp": f"2026-01-13T16:56:{second:02d}Z", **more}
    return json.dumps(record)


def test_claude_code_attachment_text_is_replayed_after_the_tool_results(tmp_path):
    from ctxsim.formats import FileReport, read_traces

    usage = {"input_tokens": 10, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0,
             "output_tokens": 20}
    file_text = "def total(lines):\n    return sum(l.amount for l in lines)\n" * 20
    lines = [
        _line("user", "u1", 0, message={"role": "user", "content": "fix the totals"}),
        _line("assistant", "a1", 2, requestId="r1", message={
            "id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use", "usage": usage,
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}]}),
        # an @-mentioned file and a hook's output, logged before the tool result they travel with
        _line("attachment", "at1", 3, attachment={"type": "file", "filename": "b.py",
                                                  "content": {"type": "text", "file": {"content": file_text}}}),
        _line("attachment", "at2", 3, attachment={"type": "deferred_tools_delta", "added": 2}),
        _line("user", "u2", 4, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py contents"}]}),
        _line("attachment", "at3", 5, attachment={"type": "hook_success", "hookName": "PostToolUse",
                                                  "content": "lint: 0 problems"}),
        _line("assistant", "a2", 7, requestId="r2", message={
            "id": "m2", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
            "usage": {**usage, "cache_read_input_tokens": 3000, "input_tokens": 400},
            "content": [{"type": "text", "text": "done"}]}),
    ]
    path = tmp_path / "S.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reports: list[FileReport] = []
    trace = read_traces([str(path)], None, True, reports)
    roles = [(m.role, m.extra.get("attachment")) for m in trace.sessions[0].messages]
    assert roles == [("user", None), ("assistant", None), ("tool", None), ("user", "file"),
                     ("user", "hook_success"), ("assistant", None)]
    sent = trace.sessions[0].messages
    assert sent[3].content == file_text and sent[4].content == "lint: 0 problems"
    notes = " ".join(n for r in reports for n in r.notes)
    assert "2 attachment line(s)" in notes and "1 attachment line(s) carry no text" in notes
