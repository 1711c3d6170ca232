"""Eviction policies: truncate, tiered, zones, scored, mask, recent, amortized.

Each fires at its trigger and not before; none orphans a tool result (the engine
raises PolicyViolation if one does) or edits a pinned message; truncation is
idempotent; scored never evicts tier 0; replays are deterministic. Expected
numbers are hand-checked in the comments (chars4 tokens, 4 tokens of framing a message).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import T0, Capture, SpecStages, replay, session_of, turn_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxsim.errors import ParameterError
from ctxsim.history import History
from ctxsim.model import Message, Session, ToolCall, Trace, format_ts
from ctxsim.policies import Context, NoParams, Stages, parse_policy, policies
from ctxsim.policies.scored import register_scorer, tiers
from ctxsim.policies.tiered import COMPACTION_MARKER
from ctxsim.policies.truncate import split_lines, truncate_text
from ctxsim.policies.zones import SummarySizer
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer, blocks


def lines(n: int, tag: str = "l") -> str:
    return "\n".join(f"{tag}{i}" for i in range(n))


class Recorder:
    """A last stage that edits nothing and keeps the history each request saw."""

    name = "recorder"
    params: Any = NoParams()

    def __init__(self) -> None:
        self.seen: list[list[Message]] = []

    def decide(self, ctx: Context) -> tuple:
        self.seen.append([item.message for item in ctx.history.items])
        return ()


def with_recorder(spec: str) -> tuple[Stages, Recorder]:
    rec = Recorder()
    return Stages(spec.split(":")[0], (parse_policy(spec), rec)), rec


def history_of(messages: list[Message], pinned: set[int] = frozenset()) -> tuple[History, MessageSizer]:
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")))
    history = History(0, sizer.message, blocks)
    for i, m in enumerate(messages):
        history.append(history.item(m, i, pinned=i in pinned))
    return history, sizer


def context(history: History, sizer: MessageSizer, window: int = 200_000) -> Context:
    return Context(history, 1, window, sizer.message)


def decided(policy: Any, history: History, sizer: MessageSizer) -> tuple:
    """The policy's edits at one request, as the engine resolves them into splices of the history."""
    from ctxsim.replay.engine import resolve_edit

    return tuple(resolve_edit(history, edit, policy.name) for edit in policy.decide(context(history, sizer)))


def tool_turn(n: int, output: str, tool: str = "bash", text: str | None = None) -> list[Message]:
    call = ToolCall(f"c{n}", tool, {"n": n})
    return [Message("assistant", text if text is not None else f"step {n}", tool_calls=(call,)),
            Message("tool", output, tool_call_id=f"c{n}", name=tool)]


# ---------------------------------------------------------------- truncate


def test_head_tail_truncation_charges_the_marker():
    out = truncate_text(lines(300), 200)
    got = split_lines(out)
    # keep = 200 - 3 = 197, head = 98, tail = 99, omitted = 300 - 197 = 103
    assert len(got) == 200
    assert got[:98] == [f"l{i}" for i in range(98)]
    assert got[98:101] == ["", "[... 103 lines truncated ...]", ""]
    assert got[101:] == [f"l{i}" for i in range(201, 300)]
    assert truncate_text(out, 200) == out
    assert truncate_text(lines(200), 200) == lines(200)


def test_tiny_caps_keep_the_first_lines_only():
    assert truncate_text(lines(10), 4) == lines(4)
    # cap 5: keep 2 -> head 1, tail 1, 8 omitted
    assert truncate_text(lines(10), 5) == "l0\n\n[... 8 lines truncated ...]\n\nl9"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab \r\t.[]", max_size=6), max_size=80),
       st.sampled_from(["\n", "\r\n"]), st.booleans(), st.integers(min_value=1, max_value=40))
def test_truncation_is_idempotent(parts, newline, trailing, cap):
    text = newline.join(parts) + (newline if trailing else "")
    once = truncate_text(text, cap)
    assert truncate_text(once, cap) == once
    assert len(split_lines(once)) <= cap
    if len(split_lines(text)) <= cap:
        assert once == text


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=1, max_value=12))
def test_truncation_is_idempotent_on_any_text(text, cap):
    once = truncate_text(text, cap)
    assert truncate_text(once, cap) == once


def test_truncate_on_append_fires_above_the_cap_only():
    policy = parse_policy("truncate")
    at_cap = Message("tool", lines(200), tool_call_id="c1", name="bash")
    assert policy.on_append(None, at_cap) is None  # 200 lines: within the cap
    over = policy.on_append(None, Message("tool", lines(201), tool_call_id="c1", name="bash"))
    assert over is not None and over.kind == "truncate"
    assert len(split_lines(over.message.content)) == 200
    assert policy.on_append(None, Message("tool", lines(900), tool_call_id="c1", name="read_file")) is None
    assert policy.on_append(None, Message("user", lines(900))) is None
    assert policy.decide(None) == ()  # on-append mode never edits history


def test_truncate_overrides_are_strict():
    policy = parse_policy("truncate:overrides=[bash=50,search=none]")
    cut = policy.on_append(None, Message("tool", lines(80), tool_call_id="c", name="bash"))
    assert len(split_lines(cut.message.content)) == 50
    assert policy.on_append(None, Message("tool", lines(900), tool_call_id="c", name="search")) is None
    for bad in ("truncate:overrides=[bash]", "truncate:overrides=[bash=0]", "truncate:overrides=[bash=1,bash=2]",
                "truncate:overrides=[read_file=10]", "truncate:max_lines=0", "truncate:overrides=[=5]"):
        with pytest.raises(ParameterError):
            parse_policy(bad)


def test_retroactive_truncation_cuts_each_long_result_once():
    messages = []
    for n, size in enumerate([5, 12, 3, 40], start=1):
        messages += turn_messages(n, "bash", lines(size, "a line of output "), T0 + 10 * n, "go" if n == 1 else None)
    run = replay(session_of(messages), "truncate:on_append=false,max_lines=10")
    cuts = [e for e in run.events if e.kind == "truncate"]
    # request k sees results 1..k-1: result 2 (12 lines) is cut at request 3, result 4 (40 lines) at request 5
    assert [e.request for e in cuts] == [3, 5]
    assert all(e.tokens_after < e.tokens_before for e in cuts)


# ---------------------------------------------------------------- tiered


def growing_trace(turns: int = 14, size: int = 30, users_every: int = 0) -> Trace:
    messages: list[Message] = []
    for n in range(1, turns + 1):
        user = "Fix the invoice rounding." if n == 1 else (f"also look at {n}" if users_every and n % users_every == 0
                                                            else None)
        messages += turn_messages(n, "bash", lines(size, f"out{n}-"), T0 + 10 * n, user)
    return session_of(messages)


def test_tiered_fires_only_past_the_budget():
    trace = growing_trace()
    naive = replay(trace, "none")
    limit = naive.rows[5].context_tokens  # request 6's prompt; request 7 is the first above it
    spec = f"tiered:max_context_tokens={limit},count_prefix=true,keep_recent=4"
    run = replay(trace, spec)
    compactions = [e for e in run.events if e.policy == "tiered"]
    assert compactions and compactions[0].request == 7
    assert run.rows[5].context_tokens == limit  # untouched up to the budget
    assert all(r.context_tokens <= limit for r in run.rows)


def test_level_two_summarises_old_turns_and_keeps_the_recent_ones():
    trace = growing_trace(turns=10)
    naive = replay(trace, "none")
    # the fixed 0.7 ratio (headroom off): the summaries alone reach the target
    spec = (f"tiered:max_context_tokens={naive.rows[-1].context_tokens - 1},count_prefix=true,keep_recent=4,"
            "compact_headroom_turns=0")
    policy, rec = with_recorder(spec)
    run = replay(trace, policy)
    event = next(e for e in run.events if e.policy == "tiered")
    assert event.kind == "summarize"
    final = rec.seen[-1]
    # request 11 holds user + 10 turns (21 messages); boundary 21 - 4 = 17 (assistant 9): turns 1-8 summarised
    assert [m.content for m in final[:3]] == ["Fix the invoice rounding.", "[Summary] turn 1: calling bash",
                                              "[Summary] turn 2: calling bash"]
    assert all(m.role != "tool" for m in final[:9])
    assert [m.role for m in final[-4:]] == ["assistant", "tool", "assistant", "tool"]
    assert len(final) == 1 + 8 + 4


def test_level_three_drops_the_middle_behind_a_constant_marker():
    # 40 short turns: a summary (12 tokens) is 40% of a turn (about 30), so a 0.3 target needs level 3
    trace = growing_trace(turns=40, size=3)
    spec = ("tiered:max_context_tokens=1000,count_prefix=true,keep_recent=4,compact_headroom_turns=0,"
            "compact_target_ratio=0.3")
    policy, rec = with_recorder(spec)
    run = replay(trace, policy)
    (event,) = [e for e in run.events if e.policy == "tiered"]
    # budget 1000 - 10 (system) = 990, target floor(990 x f32(0.3)) = 297; request 34 is the first over
    assert (event.request, event.kind) == (34, "drop")
    assert event.tokens_after - 10 <= 297 < event.tokens_before
    after = rec.seen[33]
    assert after[0].content == "Fix the invoice rounding."
    assert after[1].content.startswith("[Summary] turn 1")  # keep_first = 2
    assert after[2].content == COMPACTION_MARKER
    assert [m.role for m in after[-4:]] == ["assistant", "tool", "assistant", "tool"]


def test_keep_within_budget_is_reported_as_a_cliff():
    trace = growing_trace(turns=6, size=60)
    # keep_recent larger than the history: no middle to cut, so the tail-that-fits path runs
    run = replay(trace, "tiered:max_context_tokens=500,system_prompt_tokens=0,keep_recent=50")
    cliffs = [e for e in run.events if e.kind == "cliff"]
    assert cliffs, "the keep_within_budget path must be logged as a cliff"
    policy, rec = with_recorder("tiered:max_context_tokens=500,system_prompt_tokens=0,keep_recent=50")
    replay(trace, policy)
    collapsed = rec.seen[cliffs[0].request - 1]
    assert collapsed[0].content == COMPACTION_MARKER
    assert "Fix the invoice rounding." not in [m.content for m in collapsed]  # the cliff loses the task


def test_growth_state_restarts_with_each_session():
    session = growing_trace(turns=12, size=40).sessions[0]
    two = Trace("t", (session, Session(id="s2", system=session.system, messages=session.messages)))
    run = replay(two, "tiered:max_context_tokens=700,system_prompt_tokens=0,keep_recent=4")
    first = [(e.request, e.kind, e.note) for e in run.events if e.session == "s" and e.policy == "tiered"]
    second = [(e.request - run.totals.requests // 2, e.kind, e.note) for e in run.events
              if e.session == "s2" and e.policy == "tiered"]
    assert first and first == second  # same notes: same growth, ratio and target


# ---------------------------------------------------------------- zones


def zone_trace() -> Trace:
    messages: list[Message] = [Message("user", "Reconcile the ledger.", ts=format_ts(T0))]
    for n in range(1, 9):
        messages += tool_turn(n, "x" * 396)  # 396 chars = 99 tokens + 4 framing
    messages += tool_turn(9, "y" * 4000)  # a jump of ~1,000 tokens
    messages += tool_turn(10, "z" * 40)
    return session_of(messages)


def test_zones_green_until_seventy_percent_then_yellow():
    trace = zone_trace()
    naive = replay(trace, "none")
    k = 6  # request 6 sits at exactly 70% of this window
    window = int(naive.rows[k - 1].context_tokens / 0.70)
    assert naive.rows[k - 2].context_tokens / window < 0.70 <= naive.rows[k - 1].context_tokens / window
    run = replay(trace, f"zones:window={window}")
    events = [e for e in run.events if e.policy == "zones"]
    assert events[0].request == k and events[0].kind == "yellow"
    assert any(r.kind == "summarize" for r in run.rows)  # the summarising call is metered


def test_zones_red_keeps_the_last_three_turns_and_the_newest_result():
    trace = zone_trace()
    naive = replay(trace, "none")
    # request 10 jumps from well under 70% to 85..95% of this window
    window = int(naive.rows[9].context_tokens / 0.90)
    assert naive.rows[8].context_tokens / window < 0.70
    policy, rec = with_recorder(f"zones:window={window}")
    run = replay(trace, policy)
    first = next(e for e in run.events if e.policy == "zones")
    assert (first.request, first.kind) == (10, "red")
    kept = rec.seen[9]
    # the last three turns are 7, 8, 9 (request 10 holds turns 1..9); turn 9's result is the newest
    assert [m.tool_call_id for m in kept if m.role == "tool"] == ["c7", "c8", "c9"]
    assert kept[0].role == "assistant"


def test_zones_critical_and_thresholds_are_validated():
    trace = zone_trace()
    naive = replay(trace, "none")
    window = int(naive.rows[9].context_tokens / 0.97)
    run = replay(trace, f"zones:window={window},critical_keep_turns=1")
    first = next(e for e in run.events if e.policy == "zones")
    assert first.kind == "critical"
    with pytest.raises(ParameterError):
        parse_policy("zones:yellow_at=0.9,red_at=0.85")
    for share in ("0", "1.5", "-0.2"):
        with pytest.raises(ParameterError, match="summary_max_share"):
            parse_policy(f"zones:summary_max_share={share}")
    assert parse_policy("zones:summary_max_share=none").params.summary_max_share is None



FIRST_LINES = ["- a line that starts with a dash", "  indented, then spaces   ", "123 456 7890 numbers first",
               "caf\u00e9 na\u00efve \u00fcber \U0001f600", "---", "/src/app/billing/invoice.py:42",
               "ValueError: bad total", "\t\ttabs", "'s 're quotes", "x" * 300, "-", "a\r", "!!?? ..."]


class SummaryWatch(Capture):
    """Capture, also keeping every summary seen in a request's context, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: dict[int, Any] = {}

    def decide(self, ctx: Context):
        for item in ctx.history.items:
            if item.message.role == "summary":
                self.summaries.setdefault(id(item), item)
        return super().decide(ctx)


@pytest.mark.parametrize("tokenizer", ["o200k_base", "chars4"])
@pytest.mark.parametrize("cap", ["", ",summary_max_share=none"])
def test_zones_summaries_are_sized_exactly(cap, tokenizer):
    """zones counts its summaries piece by piece with o200k_base (each line once per session), whole
    with others; either way every summary it writes, the summaries that take earlier ones over and
    those cut to the cap too, has the size that counting its whole text gives. With the cap (20 % of
    the window) no summary passes it: the oldest lines go, as few as it takes; without it every line
    stays and the summaries outgrow it."""
    messages: list[Message] = [Message("user", "Reconcile the ledger.", ts=format_ts(T0))]
    for n in range(1, 61):
        first = FIRST_LINES[n % len(FIRST_LINES)]
        messages += tool_turn(n, first + "\n" + lines(20, f"o{n}-"), text=f"step {n}: {FIRST_LINES[-n % 5]}")
    trace = session_of(messages)
    naive = replay(trace, "none", tokenizer=tokenizer)
    window = int(max(r.context_tokens for r in naive.rows) / 2)  # yellow again and again
    watch = SummaryWatch()
    replay(trace, SpecStages("zones+watch", [f"zones:window={window}{cap}"], watch), tokenizer=tokenizer)
    summaries = list(watch.summaries.values())
    heads = [int(it.message.content.split()[2]) for it in summaries]  # "[Summary of N earlier messages]"
    assert len(summaries) >= 5 and heads[-1] > 2 * heads[0]  # later summaries took the earlier ones over
    sizer = MessageSizer(TokenCounter(get_tokenizer(tokenizer)))
    for item in summaries:
        assert item.tokens == sizer.message(item.message), item.message.content[:80]
    entries = [it.message.content.count("\n-") for it in summaries]  # one line per message summarised
    limit = int(window * 0.2)
    if cap:
        assert entries == heads and max(it.tokens for it in summaries) > limit
    else:
        assert max(it.tokens for it in summaries) <= limit
        assert any(e < h for e, h in zip(entries, heads, strict=True))  # the oldest lines went



@pytest.mark.parametrize("tokenizer", ["o200k_base", "chars4"])
def test_zones_cuts_the_fewest_oldest_lines_to_the_cap(tokenizer):
    """A summary over the cap loses its oldest entries, as few as bring it within the cap (one fewer and
    it would pass it), keeps its head and newest entry, and is sized as counting its text gives."""
    sizer = MessageSizer(TokenCounter(get_tokenizer(tokenizer)))
    ctx = Context(History(0, sizer.message, blocks), 1, 100_000, sizer.message)
    entries = [f"- {role}: {FIRST_LINES[n % len(FIRST_LINES)]} {n}" for n, role in
               enumerate(["user", "assistant [calls bash]", "tool (bash)"] * 20)]
    text = "[Summary of 60 earlier messages]\n" + "\n".join(entries)
    message = Message("summary", text)
    for cap in (10, 100, 400, sizer.message(message) - 1, sizer.message(message)):
        summary_size = SummarySizer()
        tokens = summary_size(ctx, message)
        assert tokens == sizer.message(message)
        cut, size = summary_size.trimmed(ctx, message, tokens, cap)
        assert size == sizer.message(cut)
        kept = cut.content.split("\n")
        assert kept[0] == "[Summary of 60 earlier messages]" and kept[1:] == entries[len(entries) - len(kept) + 1:]
        if cut is message:
            assert tokens <= cap
        elif len(kept) == 2:  # only the newest entry left
            assert size > cap or sizer.message(message.with_content("\n".join([kept[0], *entries[-2:]]))) > cap
        else:
            assert size <= cap
            one_more = "\n".join([kept[0], *entries[len(entries) - len(kept):]])
            assert sizer.message(message.with_content(one_more)) > cap


# ---------------------------------------------------------------- scored


def scored_history() -> tuple[History, MessageSizer]:
    messages = [Message("user", "Refactor the billing module.")]  # 0 task: tier 0
    messages += tool_turn(1, "alpha " * 100)  # 1-2: unit, tiers 3/2 -> 2, old, irrelevant
    messages += [Message("assistant", "ok")]  # 3: filler, tier 4
    messages += tool_turn(3, "parse_invoice " * 40)  # 4-5: unit, tier 2, relevant
    messages += [Message("user", "Now fix parse_invoice rounding.")]  # 6: latest user: tier 0
    messages += tool_turn(4, "beta " * 20)  # 7-8: newest turn: tier 0
    return history_of(messages)


def test_scored_tiers():
    history, _ = scored_history()
    assert tiers(history, recent_turns=1, filler_tokens=12) == [0, 3, 2, 4, 3, 2, 0, 0, 0]


def test_scored_evicts_the_lowest_scores_first_and_only_past_the_budget():
    history, sizer = scored_history()
    total = history.prompt_tokens
    filler = history.items[3].tokens
    unit1 = history.items[1].tokens + history.items[2].tokens
    assert parse_policy(f"scored:budget={total},recent_turns=1").decide(context(history, sizer)) == ()
    # one token over: the filler (tier 4) goes alone
    (edit,) = decided(parse_policy(f"scored:budget={total - 1},recent_turns=1"), history, sizer)
    assert [(s.start, s.end) for s in edit.splices] == [(3, 4)]
    # more: then the older, irrelevant tier-2 unit (5 + 3 x 1/8 + 2 x 0 < 5 + 3 x 4/8 + 2 x 1)
    (edit,) = decided(parse_policy(f"scored:budget={total - filler - 1},recent_turns=1"), history, sizer)
    assert [(s.start, s.end) for s in edit.splices] == [(1, 4)]
    assert total - filler - unit1 <= total - filler - 1


def test_scored_never_evicts_tier_zero():
    history, sizer = scored_history()
    (edit,) = decided(parse_policy("scored:budget=0,recent_turns=1"), history, sizer)
    dropped = {i for s in edit.splices for i in range(s.start, s.end)}
    assert dropped == {1, 2, 3, 4, 5}
    assert "protected" in edit.note


def test_scored_relevance_is_pluggable():
    register_scorer("test-alpha", lambda query, doc: 1.0 if "alpha" in doc else 0.0)
    history, sizer = scored_history()
    total = history.prompt_tokens
    filler = history.items[3].tokens
    spec = f"scored:budget={total - filler - 1},recent_turns=1,relevance=test-alpha,relevance_weight=10"
    (edit,) = decided(parse_policy(spec), history, sizer)
    assert [(s.start, s.end) for s in edit.splices] == [(3, 6)]  # now the newer unit goes first
    with pytest.raises(ParameterError):
        parse_policy("scored:relevance=nope")


# ---------------------------------------------------------------- mask, recent, amortized


def simple_trace(turns: int, size: int = 8) -> Trace:
    messages: list[Message] = []
    for n in range(1, turns + 1):
        messages += turn_messages(n, "bash", lines(size), T0 + 10 * n, "Start." if n == 1 else None)
    return session_of(messages)


def test_mask_keeps_ten_turns_then_masks_the_oldest():
    policy, rec = with_recorder("mask")
    run = replay(simple_trace(13), policy)
    masks = [e for e in run.events if e.kind == "mask"]
    # request k holds tool turns 1..k-1: the 11th turn appears at request 12
    assert masks[0].request == 12 and masks[0].note.startswith("masked 1 ")
    first_result = next(m for m in rec.seen[11] if m.role == "tool")
    assert first_result.content == "Old environment output: (8 lines omitted)"
    assert sum(1 for m in rec.seen[-1] if m.role == "tool" and not m.content.startswith("Old")) == 10


def test_recent_fires_past_first_plus_last_and_snaps_to_whole_turns():
    policy, rec = with_recorder("recent:keep_first=1,keep_last=5")
    run = replay(simple_trace(6), policy)
    drops = [e for e in run.events if e.kind == "drop"]
    # request k holds 1 + 2(k-1) messages: 7 > 6 first at request 4; the newest 5 start with
    # result 1, whose call is dropped, so it goes too: [user, a2, t2, a3, t3]
    assert drops[0].request == 4
    assert [m.role for m in rec.seen[3]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert rec.seen[3][1].tool_calls[0].id == "c2"


def test_amortized_halves_past_max_size():
    policy, rec = with_recorder("amortized:max_size=8,keep_first=1")
    run = replay(simple_trace(10), policy)
    forgets = [e for e in run.events if e.kind == "forget"]
    # 9 > 8 messages first at request 5: keep 1 + newest 3 = [t3, a4, t4] -> t3 orphaned, dropped
    # then 3 messages grow by 2 a request: 9 again at request 8
    assert [e.request for e in forgets][:2] == [5, 8]
    assert [m.role for m in rec.seen[4]] == ["user", "assistant", "tool"]
    with pytest.raises(ParameterError):
        parse_policy("amortized:max_size=8,keep_first=4")


# ---------------------------------------------------------------- invariants for every policy

AGGRESSIVE = [
    "truncate:on_append=false,max_lines=3",
    "truncate:max_lines=3",
    "tiered:max_context_tokens=1500,system_prompt_tokens=0,keep_recent=4",
    "tiered:max_context_tokens=1500,system_prompt_tokens=0,keep_recent=4,keep_first=3,compact_at=turn_end",
    "zones:window=2500",
    "zones:window=2500,memory_tools=[search]",
    "scored:budget=1200",
    "mask:keep=2",
    "recent:keep_last=7",
    "amortized:max_size=10",
]


def mixed_messages() -> list[Message]:
    msgs = [Message("user", "Fix the failing import. " + "ctx " * 30, ts=format_ts(T0))]
    msgs += tool_turn(1, "notes: keep the API stable\n" * 20, tool="notes_read")
    for n in range(2, 16):
        if n % 4 == 0:
            msgs.append(Message("user", f"also check module {n}"))
        if n == 7:
            msgs.append(Message("system", "Reminder: never touch the vendored folder."))
        if n % 5 == 0:  # two parallel calls
            calls = (ToolCall(f"c{n}a", "bash", {"n": n}), ToolCall(f"c{n}b", "search", {"q": n}))
            msgs.append(Message("assistant", f"step {n}", tool_calls=calls))
            msgs.append(Message("tool", lines(30, f"a{n}-"), tool_call_id=f"c{n}a", name="bash"))
            msgs.append(Message("tool", lines(12, f"b{n}-"), tool_call_id=f"c{n}b", name="search"))
        else:
            msgs += tool_turn(n, lines(10 + 7 * n, f"o{n}-"), tool="search" if n % 3 == 0 else "bash")
    return msgs


def test_every_eviction_policy_is_registered_with_a_source():
    table = policies()
    for name in ("truncate", "tiered", "zones", "scored", "mask", "recent", "amortized"):
        assert name in table and table[name].source


@pytest.mark.parametrize("spec", AGGRESSIVE)
def test_pins_survive_and_nothing_is_orphaned(spec):
    trace = session_of(mixed_messages())
    policy, rec = with_recorder(spec)
    run = replay(trace, policy, pin_tools=("notes_read",))  # PolicyViolation would raise here
    assert [e for e in run.events if e.policy == spec.split(":")[0]], f"{spec} never fired"
    notes = "notes: keep the API stable\n" * 20
    reminder = "Reminder: never touch the vendored folder."
    for seen in rec.seen:
        calls = {c.id for m in seen for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in seen if m.role == "tool")
        assert [m.content for m in seen if m.role == "tool" and m.name == "notes_read"] in ([], [notes])
    final = rec.seen[-1]
    assert notes in [m.content for m in final] and reminder in [m.content for m in final]


@pytest.mark.parametrize("spec", AGGRESSIVE)
def test_replays_are_deterministic(spec):
    trace = session_of(mixed_messages())
    a = replay(trace, spec, pin_tools=("notes_read",))
    b = replay(trace, spec, pin_tools=("notes_read",))
    assert a.rows == b.rows and a.events == b.events


@st.composite
def random_sessions(draw):
    msgs: list[Message] = [Message("user", "task " * draw(st.integers(1, 50)))]
    for n in range(1, draw(st.integers(1, 14)) + 1):
        if draw(st.booleans()) and draw(st.booleans()):
            msgs.append(Message("user", "more " * draw(st.integers(1, 20))))
        width = draw(st.integers(0, 2))
        tools = [draw(st.sampled_from(["bash", "notes_read", "search"])) for _ in range(width)]
        calls = tuple(ToolCall(f"c{n}-{j}", t, {"j": j}) for j, t in enumerate(tools))
        msgs.append(Message("assistant", "thinking " * draw(st.integers(0, 10)), tool_calls=calls))
        for call in calls:
            msgs.append(Message("tool", lines(draw(st.integers(0, 60))), tool_call_id=call.id, name=call.name))
    return session_of(msgs)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=random_sessions(), spec=st.sampled_from(AGGRESSIVE))
def test_random_sessions_keep_the_invariants(trace, spec):
    policy, rec = with_recorder(spec)
    replay(trace, policy, pin_tools=("notes_read",))
    for seen in rec.seen:
        calls = {c.id for m in seen for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in seen if m.role == "tool")


@pytest.mark.parametrize("spec", ["pipeline:stages=[clear_thinking|mask|scored:budget=40000]",
                                  "mask+scored:budget=30000",
                                  "clear:trigger=8000,keep=2,clear_at_least=1000+scored:budget=12000",
                                  "scored:budget=30000"])
def test_scored_following_other_stages_decides_as_starting_over(spec, monkeypatch):
    """scored patches what it keeps with the stubs other stages put in, and keeps its lists filed
    under the budget: the run is the same, byte for byte, as one that rebuilds from the history
    whenever another stage edited it and files only when over the budget."""
    from dataclasses import replace as dc_replace

    from ctxsim.policies.scored import ScoredPolicy
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.api import Options, replay_choices
    from ctxsim.synth import synthesize

    trace = synthesize("coding", turns=200, seed=5)
    trace = dc_replace(trace, sessions=tuple(dc_replace(s, messages=tuple(
        dc_replace(m, thinking=f"step {i}: read the output") if m.role == "assistant" else m
        for i, m in enumerate(s.messages))) for s in trace.sessions))
    followed: list[bool] = []
    follow = ScoredPolicy._follow

    def counted(self, replaced):  # type: ignore[no-untyped-def]
        followed.append(follow(self, replaced))
        return followed[-1]

    monkeypatch.setattr(ScoredPolicy, "_follow", counted)
    patched = replay_choices(trace, "t.jsonl", resolve([spec]), Options(jobs=1, tokenizer="chars4")).dumps()
    assert any(e.kind == "evict" for e in replay_choices(trace, "t.jsonl", resolve([spec]),
                                                         Options(jobs=1, tokenizer="chars4")).runs[0].events)
    if "mask" in spec or "clear:" in spec:
        assert any(followed), "the replacements were followed, not rebuilt from"
    monkeypatch.setattr(ScoredPolicy, "_follow", lambda self, replaced: False)  # rebuild instead
    monkeypatch.setattr(ScoredPolicy, "_keep_up", lambda self, history: None)  # file only when over
    assert replay_choices(trace, "t.jsonl", resolve([spec]), Options(jobs=1, tokenizer="chars4")).dumps() == patched
