"""`mask`: the outputs of all but the newest `keep` tool-calling turns become placeholders.

The session (policy_story): each turn calls a tool whose output is 50 lines. With keep=2 the context
of request k holds turns 1..k-1, so from request 4 on the turn three back is masked, one per request.
"""

from __future__ import annotations

from policy_story import events, play, same_as_reference, story

from ctxsim.policies import mask

FIFTY_LINES = "".join(f"line {i}\n" for i in range(50))


def test_outputs_older_than_the_newest_turns_become_placeholders():
    run, probe = play(story(6, output=lambda n: FIFTY_LINES), "mask:keep=2")
    assert probe.seen[3] == ["u", "a1", "r1", "a2", "r2"]  # two turns: none is old yet
    assert probe.seen[4] == ["u", "a1", "r1~", "a2", "r2", "a3", "r3"]
    assert probe.seen[7] == ["u", "a1", "r1~", "a2", "r2~", "a3", "r3~", "a4", "r4~", "a5", "r5", "a6", "r6"]
    assert probe.items[4][2].message.content == "Old environment output: (50 lines omitted)"
    # The agent's own messages and the calls stay: only outputs change, each once.
    assert events(run) == [(k, "mask", "masked 1 tool outputs older than 2 turns") for k in (4, 5, 6, 7)]


def test_excluded_tools_keep_their_outputs():
    trace = story(5, output=lambda n: FIFTY_LINES, tool=lambda n: "read_file" if n % 2 else "bash")
    _, probe = play(trace, "mask:keep=1,exclude_tools=[read_file]")
    assert probe.seen[6] == ["u", "a1", "r1", "a2", "r2~", "a3", "r3", "a4", "r4~", "a5", "r5"]


def test_the_plain_reference_makes_the_same_edits():
    for spec in ("mask:keep=2", "mask:keep=0", "mask:keep=3,placeholder=[{tool}: {tokens} tokens]"):
        run = same_as_reference(mask, spec, story(7, output=lambda n: FIFTY_LINES))
        assert events(run)
