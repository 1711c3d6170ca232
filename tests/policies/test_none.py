"""`none`: the recorded history, unmanaged; the baseline every policy is compared with."""

from __future__ import annotations

from policy_story import events, play, prompts, story


def test_every_message_stays_and_the_prompt_only_grows():
    trace = story(4)
    run, probe = play(trace, "none")
    assert events(run) == []
    assert probe.seen[5] == ["u", "a1", "r1", "a2", "r2", "a3", "r3", "a4", "r4"]
    sizes = prompts(trace)
    assert sizes == sorted(sizes) and len(set(sizes)) == 5  # 4 turns + the last answer: 5 requests
    assert [r.input_tokens for r in run.rows] == sizes
