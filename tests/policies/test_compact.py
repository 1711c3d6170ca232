"""`compact`: past the trigger, one summary replaces everything but the newest `keep_recent` messages.

The session (policy_story): each turn adds about 1,000 tokens. The trigger is the prompt of request 4,
so request 5 is the first past it; its context u a1 r1 .. a4 r4 keeps a4 r4 and the other seven messages
become one summary `S` (seed 000's extractive summary: marker lines, offline, so no side call).
"""

from __future__ import annotations

from policy_story import events, play, prompts, story


def test_the_old_part_becomes_one_summary_and_the_newest_messages_stay():
    trace = story(8)
    trigger = prompts(trace)[3]
    run, probe = play(trace, f"compact:trigger={trigger},compact_above=0,keep_recent=2,clear_at_least=0")
    assert probe.seen[4] == ["u", "a1", "r1", "a2", "r2", "a3", "r3"]
    assert probe.seen[5] == ["S", "a4", "r4"]
    assert probe.seen[6] == ["S", "a4", "r4", "a5", "r5"]
    # The summary is larger than `u`, so two turns later (S and three turns) the prompt passes the trigger
    # again, and the summary is summarised with the turns after it.
    assert events(run) == [(5, "compact", "compacted 7 messages"), (7, "compact", "compacted 5 messages"),
                           (9, "compact", "compacted 5 messages")]
    assert probe.seen[7] == ["S", "a6", "r6"]
    summary = probe.items[9][0].message.content
    assert "fix the failing test" in summary  # the task survives both compactions
    assert all(r.kind == "request" for r in run.rows)  # extractive: no summarising request is metered


def test_the_cut_never_separates_a_result_from_its_call():
    trace = story(8)
    trigger = prompts(trace)[3]
    _, probe = play(trace, f"compact:trigger={trigger},compact_above=0,keep_recent=1,clear_at_least=0")
    assert probe.seen[5] == ["S", "a4", "r4"]  # keep_recent=1 would keep r4 alone: the cut moves back to a4


def test_too_little_to_summarise_means_no_compaction():
    trace = story(8)
    trigger = prompts(trace)[3]
    run, _ = play(trace, f"compact:trigger={trigger},compact_above=0,keep_recent=2,clear_at_least=100000")
    assert events(run) == []


def test_an_llm_summary_is_a_metered_side_call_of_the_modelled_size():
    trace = story(8)
    trigger = prompts(trace)[3]
    run, probe = play(trace, f"compact:trigger={trigger},compact_above=0,keep_recent=2,clear_at_least=0,"
                             "summarizer=llm,summary_tokens=300")
    side = [r for r in run.rows if r.kind == "summarize"]
    assert [r.request for r in side] == [5, 7, 9] and {r.output_tokens for r in side} == {300}
    assert probe.items[5][0].tokens == 304  # sized by the model: 300, and 4 of the message's framing
