"""`zones`: seed 004's three zones, picked by the prompt's share of the window before each request.

Green (under 70 %): nothing. Yellow (70-85 %): the oldest 20 % of the messages become one extractive
summary `S` (the first line of each, earlier summaries kept whole), metered as a side request; memory
chunks beyond the newest few become stubs. Red (85-95 %) and critical: only pinned and system
messages, the last turns and the newest tool result stay. No hysteresis: a prompt that stays yellow is
summarised again at every request. The stories (see stories.py): u, then turns a<n> r<n> of about
120 tokens each; window 1,000 tokens, so yellow from 700 and red from 850.
"""

from __future__ import annotations

from stories import acted, labels, spied, story, told, told_with

from ctxsim.policies.base import Replace, Summarize
from ctxsim.policies.zones import REFERENCE


def test_yellow_summarises_the_oldest_fifth_at_every_request_then_red_keeps_three_turns():
    """Request 7 holds 13 messages, 733 tokens: yellow. ceil(13 x 20 %) = 3, so u a1 r1 become S (a
    summary of 3 messages). Requests 8 and 9 are yellow again: S a2 r2, then S a3 r3, are summarised
    again (the new S holds the old one's lines). Request 10 (900 tokens) is red: the last 3 turns stay,
    the summary and older turns go."""
    run, probe = told(story(10), "zones:window=1000")
    assert acted(run) == [(7, "yellow", 3), (8, "yellow", 3), (9, "yellow", 3), (10, "red", 7)]
    assert probe.seen[6] == ["u", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4", "a5", "r5"]  # 614: green
    assert probe.seen[7] == ["S", "a2", "r2", "a3", "r3", "a4", "r4", "a5", "r5", "a6", "r6"]
    assert probe.seen[9] == ["S", "a4", "r4", "a5", "r5", "a6", "r6", "a7", "r7", "a8", "r8"]
    assert probe.seen[10] == ["a7", "r7", "a8", "r8", "a9", "r9"]
    (summary,) = [it for it in probe.items[8] if it.inserted]
    assert summary.message.content.split("\n") == [
        "[Summary of 5 earlier messages]", "- user: fix the failing test", "- assistant [calls bash]: step 1",
        "- tool (bash): " + "x" * 160, "- assistant [calls bash]: step 2", "- tool (bash): " + "x" * 160]
    # the summarising is a model request of its own: it reads the 3 messages and the instructions
    side = [(r.request, r.kind) for r in run.rows if r.kind != "request"]
    assert side == [(7, "summarize"), (8, "summarize"), (9, "summarize")]


def test_the_yellow_edit_is_one_summary_and_the_memory_stubs():
    """With memory_tools=[search] and yellow_memory=2, yellow at request 7 also stubs every search result
    but the newest 2 (r5, r6); their calls stay. One event: a Summarize of u a1 r1 and three Replaces."""
    spec = "zones:window=1000,memory_tools=[search],yellow_memory=2"
    run, probe, spy = spied(story(7, tool=lambda n: "search"), spec)
    assert probe.seen[7] == ["S", "a2", "r2~", "a3", "r3~", "a4", "r4~", "a5", "r5", "a6", "r6"]
    assert acted(run) == [(7, "yellow", 6)]
    (edit,) = spy.edits[7]
    summary, *stubs = edit.changes
    assert isinstance(summary, Summarize) and labels(summary.items) == ["u", "a1", "r1"]
    assert all(isinstance(s, Replace) for s in stubs) and labels([s.item for s in stubs]) == ["r2", "r3", "r4"]
    assert stubs[0].message.content == "[memory chunk dropped: search returned 104 tokens]"


def test_the_reference_counts_summaries_whole_and_decides_the_same():
    run, probe = told(story(10), "zones:window=1000")
    plain, plain_probe = told_with(REFERENCE, "zones:window=1000", story(10))
    assert plain_probe.seen == probe.seen and plain.rows == run.rows
