"""Hypothesis properties of the engine and meter."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from helpers import T0, Capture, replay, session_of, turn_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxsim.history import Edit, History, Splice
from ctxsim.model import Message, ToolCall
from ctxsim.policies import Context, NoParams, Stages, parse_policy

TOOLS = ["read_file", "run_tests", "bash", "notes_read"]


@st.composite
def sessions(draw):
    n = draw(st.integers(min_value=1, max_value=25))
    messages = []
    ts = T0
    for i in range(1, n + 1):
        tool = draw(st.sampled_from(TOOLS))
        size = draw(st.integers(min_value=0, max_value=6000))
        error = draw(st.booleans())
        output = ("x" * size) + ("\nValueError: bad total" if error else "")
        user = draw(st.one_of(st.none(), st.text(min_size=1, max_size=40)))
        messages += turn_messages(i, tool, output, ts, user)
        ts += draw(st.sampled_from([5, 30, 200, 400, 4000]))
    return session_of(messages)


CACHES = st.sampled_from(["anthropic", "anthropic:ttl=1h", "openai", "prefix", "prefix:writes=true", "none"])
CLEARS = st.builds(
    lambda trig, keep, least, excl: f"clear:trigger={trig},keep={keep},clear_at_least={least}"
    + (",exclude_tools=[notes_read]" if excl else ""),
    st.integers(0, 20_000), st.integers(0, 4), st.integers(0, 3000), st.booleans())

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(trace=sessions(), cache=CACHES, clear=CLEARS)
def test_meter_parts_add_up_and_costs_are_non_negative(trace, cache, clear):
    for policy in ("none", clear):
        run = replay(trace, policy, cache=cache)
        for row in run.rows:
            parts = row.cache_read_tokens + row.cache_write_tokens + row.cache_write_1h_tokens + row.uncached_tokens
            assert parts == row.input_tokens
            assert min(row.cache_read_tokens, row.cache_write_tokens, row.cache_write_1h_tokens,
                       row.uncached_tokens) >= 0
            assert row.cost_usd >= 0 and row.cost_warm_usd >= 0 and row.cost_nocache_usd >= 0
            # A cache that never goes cold reads at least as much as the real one.
            assert row.warm_cache_read_tokens >= row.cache_read_tokens or cache.startswith("openai")


@SETTINGS
@given(trace=sessions(), clear=CLEARS)
def test_clearing_never_grows_a_request(trace, clear):
    naive = replay(trace, "none", cache="prefix")
    managed = replay(trace, clear, cache="prefix")
    assert len(naive.rows) == len(managed.rows)
    for a, b in zip(naive.rows, managed.rows, strict=False):
        assert b.input_tokens <= a.input_tokens


@SETTINGS
@given(trace=sessions(), clear=CLEARS)
def test_no_orphaned_tool_result(trace, clear):
    capture = Capture()  # checks, after the policy's edits, that every tool result has its call before it
    run = replay(trace, Stages("clear", (parse_policy(clear), capture)))
    assert capture.requests == len(run.rows)


@SETTINGS
@given(trace=sessions(), cache=CACHES, clear=CLEARS)
def test_totals_equal_the_sum_of_rows(trace, cache, clear):
    run = replay(trace, clear, cache=cache)
    rows, t = run.rows, run.totals
    assert t.requests == len(rows)
    assert t.input_tokens == sum(r.input_tokens for r in rows)
    assert t.cache_read_tokens == sum(r.cache_read_tokens for r in rows)
    assert t.cache_write_tokens + t.cache_write_1h_tokens == sum(
        r.cache_write_tokens + r.cache_write_1h_tokens for r in rows)
    assert t.output_tokens == sum(r.output_tokens for r in rows)
    assert t.fresh_prefill_tokens == t.input_tokens - t.cache_read_tokens
    assert t.cost_usd == sum((r.cost_usd for r in rows), Decimal(0))
    assert t.cost_nocache_usd == sum((r.cost_nocache_usd for r in rows), Decimal(0))
    assert t.peak_context_tokens == max(r.context_tokens for r in rows)
    assert t.rewrites == sum(r.rewrite for r in rows)
    assert t.events >= sum(1 for e in run.events if e.kind == "clear")


class Recount:
    """A stage checking that the running composition equals a count from scratch."""

    name = "recount"
    params = NoParams()

    def __init__(self):
        self.checked = 0

    def decide(self, ctx: Context):
        from ctxsim.composition import HEAD, snapshot

        running = {HEAD: ctx.history.base_tokens, **ctx.history.composition}
        assert {k: v for k, v in running.items() if v} == {k: v for k, v in snapshot(ctx.history).items() if v}
        self.checked += 1
        return ()


@SETTINGS
@given(trace=sessions(), clear=CLEARS)
def test_running_composition_matches_a_recount_and_sums_to_the_context(trace, clear):
    check = Recount()
    run = replay(trace, Stages("clear", (parse_policy(clear), check)))
    assert check.checked == len(run.rows)
    context = {r.request: r.context_tokens for r in run.rows if r.kind == "request"}
    comp = run.composition
    assert comp.requests == sorted(context)
    assert all(sum(row) == context[q] for q, row in zip(comp.requests, comp.tokens, strict=False))


# ---------------------------------------------------------------- the history's own bookkeeping
def _message(k: int, kind: str) -> Message:
    if kind == "call":
        return Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "bash", {"n": k}),))
    if kind == "result":
        return Message("tool", "out " * k, tool_call_id=f"c{k}", name="bash")
    return Message("user", "word " * k)


STEPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 30)),
    st.tuples(st.just("drop"), st.integers(0, 60), st.integers(0, 3)),
    st.tuples(st.just("replace"), st.integers(0, 60), st.integers(0, 30)),
), max_size=40)


@SETTINGS
@given(steps=STEPS)
def test_history_sums_positions_and_calls_match_a_recount(steps):
    """Whatever mix of appends, drops and one-for-one replacements, and whichever prefixes are read
    in between (the sums are brought up to date only when read past an edit): every prefix's tokens
    and blocks equal a recount, every item knows its place, and `call_of` finds what a scan finds."""
    history = History(7, lambda m: len(m.content) + 1, lambda m: 1 + len(m.tool_calls))
    k = 0

    def check() -> None:
        items = history.items
        assert [it.pos for it in items] == list(range(len(items)))
        for b in range(len(items) + 1):
            assert history.prefix_tokens(b) == 7 + sum(it.tokens for it in items[:b])
            assert history.prefix_blocks(b) == sum(it.blocks for it in items[:b])
        assert history.prompt_tokens == 7 + sum(it.tokens for it in items)
        for it in items:
            for call in it.message.tool_calls:
                assert history.call_of(call.id) is call
        assert history._call.keys() == history._holder.keys()  # nothing kept for calls no longer there

    for step in steps:
        items = history.items
        if step[0] == "append":
            k += 1
            # a call, then its result: never an orphan; a user message otherwise
            for kind in (("call", "result") if step[1] % 2 else ("user",)):
                history.append(history.item(_message(k, kind)))
        elif items:
            at = step[1] % len(items)
            if step[0] == "drop":  # a user message, or a call with its result
                item = items[at]
                if item.message.role == "user":
                    span = (at, at + 1)
                elif item.message.role == "assistant":
                    span = (at, at + 2)
                else:
                    span = (at - 1, at + 1)
                history.apply(Edit("drop", (Splice(*span),)), "test")
                for call in item.message.tool_calls:
                    assert history.call_of(call.id) is None
            else:
                old = items[at].message
                new = replace(old, content=old.content + "x" * step[2])
                history.apply(Edit("replace", (Splice(at, at + 1, (history.item(new),)),)), "test")
        if step[-1] % 2:  # read now (or let the stale sums wait for a later read)
            check()
    check()
