"""`server_compact`: past the trigger, the whole conversation becomes one compaction block.

The session (policy_story): each output is 40,000 characters (about 10,000 chars4 tokens), so the
prompt passes the API's smallest trigger, 50,000, at request 6 (u and five turns).
"""

from __future__ import annotations

from policy_story import events, play, prompts, story

BIG = "y" * 40_000


def test_the_whole_history_becomes_one_summary_of_the_modelled_size():
    trace = story(9, output=lambda n: BIG)
    assert prompts(trace)[4] <= 50_000 < prompts(trace)[5]
    run, probe = play(trace, "server_compact:trigger=50000,summary_tokens=3500")
    assert probe.seen[5] == ["u", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4"]
    assert probe.seen[6] == ["S"]  # the newest turn's result too: the server summarises everything
    assert probe.seen[7] == ["S", "a6", "r6"]
    assert events(run)[0] == (6, "compact", "server compaction of 11 messages")
    # The compaction iteration is metered as its own request: it reads the whole prompt (and the
    # instructions) and writes the 3,500-token block.
    side = next(r for r in run.rows if r.kind == "summarize")
    request6 = next(r for r in run.rows if r.kind == "request" and r.request == 6)
    assert side.request == 6 and side.output_tokens == 3_500
    assert side.input_tokens > prompts(trace)[5]
    assert request6.input_tokens < 5_000  # the request itself is answered on the compacted context


def test_pause_after_compaction_keeps_the_newest_turn():
    run, probe = play(story(9, output=lambda n: BIG), "server_compact:trigger=50000,pause_after_compaction=true")
    assert probe.seen[6] == ["S", "a5", "r5"]
    assert events(run)[0] == (6, "compact", "server compaction of 9 messages")
