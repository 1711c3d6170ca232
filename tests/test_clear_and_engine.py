"""The `clear` policy's semantics and the engine's invariants, on hand-built sessions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from helpers import T0, replay, session_of, turn_messages

from ctxsim.errors import ParameterError
from ctxsim.history import Edit, PolicyViolation, Splice
from ctxsim.policies import parse_policy

BIG = "line of output\n" * 400  # 6,000 chars = 1,500 chars4 tokens


def coding_trace(turns: int = 8):
    messages = []
    for i in range(1, turns + 1):
        output = BIG + ("TypeError: unsupported operand type(s) for *: 'float' and 'Decimal'\n" if i == 2 else "")
        messages += turn_messages(i, "notes_read" if i == 1 else "run_tests", output, T0 + 10 * i,
                                  "Fix the rounding bug." if i == 1 else None)
    return session_of(messages)


def test_clear_keeps_newest_results_and_the_first_error():
    trace = coding_trace()
    run = replay(trace, "clear:trigger=5000,keep=3,exclude_tools=[notes_read]", cache="prefix")
    naive = replay(trace, "none", cache="prefix")
    clears = [e for e in run.events if e.kind == "clear"]
    assert clears, "clearing must fire once the context passes 5,000 tokens"
    first = clears[0]
    # Results are ~1,504 tokens each (6,000 chars / 4 + 4 framing). Request k holds results 1..k-1:
    # request 5 (4 results, ~6.1k) is the first above 5,000, but result 1 (notes_read) is excluded and
    # the newest 3 are kept, so there is nothing to clear until request 6, which clears result 2.
    assert first.request == 6 and first.note == "cleared 1 tool results"
    assert first.freed_tokens > 1400
    # After clearing, every later request is smaller than the unmanaged one.
    assert all(m.input_tokens < n.input_tokens for m, n in zip(run.rows[5:], naive.rows[5:], strict=False))


def test_stub_keeps_call_and_first_error_line():
    trace = coding_trace(6)
    policy = parse_policy("clear:trigger=1000,keep=1,exclude_tools=[notes_read]")

    captured = {}

    class Spy:
        name, params = policy.name, policy.params
        start, observe = policy.start, policy.observe  # what clear learns from (the contract's hooks)

        def decide(self, ctx):
            edits = policy.decide(ctx)
            for edit in edits:
                for change in edit.changes:
                    captured[change.message.tool_call_id] = change.message.content
            return edits

    replay(trace, Spy())
    stub = captured["c2"]
    assert "run_tests(src/f2.py)" in stub
    assert "TypeError: unsupported operand type(s) for *: 'float' and 'Decimal'" in stub
    assert "line of output" not in stub


def test_clear_at_least_blocks_small_gains():
    trace = coding_trace()
    run = replay(trace, "clear:trigger=5000,keep=3,clear_at_least=100000", cache="prefix")
    assert not [e for e in run.events if e.kind == "clear"]


def test_trigger_on_tool_uses():
    run = replay(coding_trace(), "clear:trigger=4,trigger_type=tool_uses,keep=2", cache="prefix")
    clears = [e for e in run.events if e.kind == "clear"]
    assert clears and clears[0].request == 6  # the 6th request is the first with 5 tool uses in context


def test_clear_tool_inputs_rewrites_the_call():
    run = replay(coding_trace(), "clear:trigger=5000,keep=3,clear_tool_inputs=true", cache="prefix")
    clears = [e for e in run.events if e.kind == "clear"]
    assert clears and clears[0].messages == 2 * int(clears[0].note.split()[1])


def test_rewrites_follow_edits():
    run = replay(coding_trace(), "clear:trigger=5000,keep=3", cache="prefix")
    clear_requests = {e.request for e in run.events if e.kind == "clear"}
    assert {r.request for r in run.rows if r.rewrite} == clear_requests


def test_unknown_and_bad_parameters_are_errors():
    with pytest.raises(ParameterError, match="unknown parameter 'trigerr'"):
        parse_policy("clear:trigerr=5")
    with pytest.raises(ParameterError, match="'keep' must be int"):
        parse_policy("clear:keep=many")
    with pytest.raises(ParameterError, match="'keep' must not be negative, got '-2'"):
        parse_policy("clear:keep=-2")
    with pytest.raises(ParameterError, match="unknown policy"):
        parse_policy("nonesuch")
    assert parse_policy("clear:trigger=30k").params.trigger == 30_000


@dataclass(frozen=True)
class _P:
    pass


class DropCalls:
    """A broken policy: drops the first assistant message but leaves its tool result."""

    name = "drop-calls"
    params = _P()

    def decide(self, ctx):
        for i, item in enumerate(ctx.history.items):
            if item.message.tool_calls:
                return [Edit("drop", (Splice(i, i + 1),))]
        return []


class TouchPinned:
    name = "touch-pinned"
    params = _P()

    def decide(self, ctx):
        for i, item in enumerate(ctx.history.items):
            if item.pinned:
                return [Edit("drop", (Splice(i, i + 1),))]
        return []


def test_engine_refuses_orphaning_edits():
    with pytest.raises(PolicyViolation, match="orphan"):
        replay(coding_trace(3), DropCalls())


def test_engine_refuses_edits_of_pinned_messages():
    with pytest.raises(PolicyViolation, match="pinned"):
        replay(coding_trace(3), TouchPinned(), pin_tools=("notes_read",))


def test_clear_follows_results_another_stage_replaced():
    """A result truncated retroactively by an earlier stage is still cleared (found through its call)."""
    trace = coding_trace(10)
    after_truncation = replay(trace, "truncate:on_append=false,max_lines=300+clear:trigger=2000,keep=2")
    alone = replay(trace, "clear:trigger=2000,keep=2")
    cleared = [e for e in after_truncation.events if e.kind == "clear"]
    assert cleared
    # The same results are cleared as without the truncation stage, so the last request is no bigger.
    assert sum(int(e.note.split()[1]) for e in cleared) == sum(
        int(e.note.split()[1]) for e in alone.events if e.kind == "clear")
    assert after_truncation.rows[-1].input_tokens <= alone.rows[-1].input_tokens
