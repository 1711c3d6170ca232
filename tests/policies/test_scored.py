"""`scored`: seed 004's priority queue. Over the budget, the lowest-scored units go first.

score = tier bias (tier 1: 10, 2: 5, 3: 1, 4: 0.1) + 3 x recency (position, 0 oldest .. 1 newest)
+ 2 x relevance (share of the latest user message's words the unit contains). A unit is a call with
its results (scored with its most protected tier: a call and result are tier 2) or one message.
Tier 0 never goes: the task `u`, the latest user message, pinned and system messages, the newest turn.
The stories (see stories.py): u, then turns a<n> r<n> of about 100 + 20 tokens each.
"""

from __future__ import annotations

from helpers import session_of
from stories import acted, labels, spied, story, told, told_with

from ctxsim.model import Message, ToolCall
from ctxsim.policies.scored import REFERENCE, tiers

PARSER = "the parser fails on nested lists " * 12  # r2's output: words of the latest user message


def relevant_story():
    return story(8, output=lambda n: PARSER if n == 2 else "x" * 400, users={4: "now make the parser faster"})


def test_the_oldest_irrelevant_turn_goes_first_and_relevance_keeps_an_old_one():
    """Budget 700; a turn is ~120 tokens, so from request 7 (743 tokens) one turn goes per request.
    At request 7 a1 r1 is the oldest (lowest recency) and irrelevant: it goes. At request 8 a2 r2 is the
    oldest, but r2 mentions "the" and "parser", 2 of the 5 words of u4 ("now make the parser faster"):
    2 x 0.4 = 0.8 outweighs its age, so a3 r3 goes instead, then a4 r4. The task u and the latest user
    message u4 are tier 0; the last two turns are tier 1 (recent_turns=2), out of reach here."""
    run, probe = told(relevant_story(), "scored:budget=700,recent_turns=2")
    assert acted(run) == [(7, "evict", 2), (8, "evict", 2), (9, "evict", 2)]
    assert probe.seen[6] == ["u", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4", "u4", "a5", "r5"]  # 624: fits
    assert probe.seen[7] == ["u", "a2", "r2", "a3", "r3", "a4", "r4", "u4", "a5", "r5", "a6", "r6"]
    assert probe.seen[8] == ["u", "a2", "r2", "a4", "r4", "u4", "a5", "r5", "a6", "r6", "a7", "r7"]
    assert probe.seen[9] == ["u", "a2", "r2", "u4", "a5", "r5", "a6", "r6", "a7", "r7", "a8", "r8"]
    assert run.events[0].note == "evicted 2 messages (tiers 2) to fit 700 tokens"


def test_a_filler_goes_first_and_alone_when_that_is_enough():
    """An assistant message without calls of at most 12 tokens ("ok") is tier 4 (bias 0.1): one that
    puts the prompt 4 tokens over the budget goes alone, however old the turns around it."""
    messages = [Message("user", "fix the failing test")]
    for n in range(1, 6):
        messages += [Message("assistant", f"step {n}", tool_calls=(ToolCall(f"c{n}", "bash", {}),)),
                     Message("tool", "x" * 400, tool_call_id=f"c{n}", name="bash")]
        if n == 1:
            messages.append(Message("assistant", "ok"))
    run, probe, spy = spied(session_of(messages), "scored:budget=600,recent_turns=2")
    assert spy.seen[7] == ["u", "a1", "r1", "ok", "a2", "r2", "a3", "r3", "a4", "r4", "a5", "r5"]  # 604 tokens
    assert probe.seen[7] == ["u", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4", "a5", "r5"]
    assert run.events[-1].note == "evicted 1 messages (tiers 4) to fit 600 tokens"
    (edit,) = spy.edits[7]
    assert labels(edit.changes[0].items) == ["ok"]  # a Drop naming the item


def test_tier_zero_stays_even_over_the_budget():
    """Budget 0: everything evictable goes at once; the task u and the newest turn stay, and the note
    says the prompt is still over."""
    run, probe = told(story(4), "scored:budget=0,recent_turns=1")
    assert probe.seen[3] == ["u", "a2", "r2"]
    assert probe.seen[5] == ["u", "a4", "r4"]
    assert run.events[0].note.endswith("still 138: the rest is protected")


def test_the_tiers_of_a_context():
    """tiers() names each message's tier: u 0; the older turns 3 (call) and 2 (result); the recent turn
    1; the newest turn 0."""
    _, probe = told(story(4), "none")
    items = probe.items[4]  # u a1 r1 a2 r2 a3 r3

    class Items:
        pass

    view = Items()
    view.items = items  # type: ignore[attr-defined]
    assert tiers(view, recent_turns=2, filler_tokens=12) == [0, 3, 2, 1, 1, 0, 0]


def test_the_plain_scorer_evicts_the_same():
    run, probe = told(relevant_story(), "scored:budget=700,recent_turns=2")
    plain, plain_probe = told_with(REFERENCE, "scored:budget=700,recent_turns=2", relevant_story())
    assert plain_probe.seen == probe.seen and acted(plain) == acted(run)
