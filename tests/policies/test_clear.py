"""`clear`: past the trigger, every tool result but the newest `keep` becomes a stub.

The session: six turns, each reading a file of about 1,000 tokens (see policy_story). The trigger is
set to the prompt of request 3, so request 4 is the first that passes it.
"""

from __future__ import annotations

from policy_story import events, play, prompts, same_as_reference, story

from ctxsim.policies import clear


def test_past_the_trigger_all_but_the_newest_two_results_are_stubbed():
    trace = story(6)
    trigger = prompts(trace)[2]  # request 3: u a1 r1 a2 r2
    run, probe = play(trace, f"clear:trigger={trigger},keep=2")
    assert probe.seen[3] == ["u", "a1", "r1", "a2", "r2"]  # at the trigger, not past it: nothing cleared
    # Request 4 holds three results: r1 goes, the newest two stay. Each later request stubs one more.
    assert probe.seen[4] == ["u", "a1", "r1~", "a2", "r2", "a3", "r3"]
    assert probe.seen[7] == ["u", "a1", "r1~", "a2", "r2~", "a3", "r3~", "a4", "r4~", "a5", "r5", "a6", "r6"]
    assert events(run) == [(k, "clear", "cleared 1 tool results") for k in (4, 5, 6, 7)]
    # The stub keeps the call (tool and argument) and says how big the output was: 1,000 tokens of
    # text (4,000 characters, chars4) and 4 of the message's framing.
    stub = probe.items[4][2].message.content
    assert stub == "[tool output cleared: bash(f1.py) returned 1,004 tokens; run it again if you need it.]"


def test_clear_at_least_waits_until_the_stubs_free_enough():
    trace = story(6)
    trigger = prompts(trace)[2]
    # One stub frees about 980 tokens: with clear_at_least=1500 the policy waits for two stale results.
    run, probe = play(trace, f"clear:trigger={trigger},keep=2,clear_at_least=1500")
    assert events(run) == [(5, "clear", "cleared 2 tool results"), (7, "clear", "cleared 2 tool results")]
    assert probe.seen[6][:8] == ["u", "a1", "r1~", "a2", "r2~", "a3", "r3", "a4"]


def test_excluded_tools_are_never_cleared():
    trace = story(5, tool=lambda n: "notes_read" if n == 1 else "bash")
    trigger = prompts(trace)[2]
    _, probe = play(trace, f"clear:trigger={trigger},keep=1,exclude_tools=[notes_read]")
    assert probe.seen[5] == ["u", "a1", "r1", "a2", "r2~", "a3", "r3~", "a4", "r4"]


def test_the_plain_reference_makes_the_same_edits():
    for spec in ("clear:trigger=2000,keep=2", "clear:trigger=2000,keep=1,clear_at_least=1500",
                 "clear:trigger=3,trigger_type=tool_uses,keep=1,clear_tool_inputs=true"):
        run = same_as_reference(clear, spec, story(8))
        assert events(run)  # it acted, so the comparison means something
