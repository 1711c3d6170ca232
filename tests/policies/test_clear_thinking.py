"""`clear_thinking`: every assistant message but the newest `keep` with thinking loses its thinking.

The session (policy_story, `thinking=True`): every assistant message thinks. The context of request k
holds a1..a<k-1>; with keep=1 each request from 3 on clears the thinking of the one before the newest.
"""

from __future__ import annotations

from policy_story import events, play, same_as_reference, story

from ctxsim.policies import clear_thinking


def thinks(probe, request: int) -> list[str]:
    return [f"a{it.message.tool_calls[0].id[1:]}" for it in probe.items[request]
            if it.message.role == "assistant" and it.message.thinking]


def test_only_the_newest_turns_keep_their_thinking():
    run, probe = play(story(5, thinking=True), "clear_thinking:keep=1")
    assert thinks(probe, 2) == ["a1"]
    assert thinks(probe, 3) == ["a2"]  # a1 lost its thinking at request 3; its text and call stay
    assert thinks(probe, 5) == ["a4"]
    assert events(run) == [(k, "clear_thinking", "cleared the thinking of 1 assistant turns") for k in (3, 4, 5, 6)]
    a1 = probe.items[5][1].message
    assert a1.content == "step 1" and a1.tool_calls[0].id == "c1"


def test_keep_all_is_a_no_op():
    run, probe = play(story(4, thinking=True), "clear_thinking:keep=all")
    assert events(run) == [] and thinks(probe, 5) == ["a1", "a2", "a3", "a4"]


def test_the_plain_reference_makes_the_same_edits():
    for spec in ("clear_thinking:keep=1", "clear_thinking:keep=3"):
        assert events(same_as_reference(clear_thinking, spec, story(7, thinking=True)))
