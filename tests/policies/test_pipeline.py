"""`pipeline`: stages run in order before each request, each seeing the earlier ones' edits.

Seed 000's order, clearing first and compacting only when clearing was not enough: `clear+compact`.
The session (policy_story): outputs of about 1,000 tokens. Both stages get the same trigger, the
prompt of request 4; compact also needs the prompt still above `compact_above` after clearing.
"""

from __future__ import annotations

from helpers import replay
from policy_story import events, play, prompts, story

from ctxsim.policies import parse_policy


def test_compact_runs_only_when_clearing_was_not_enough():
    trace = story(8)
    trigger = prompts(trace)[3]
    # compact_above high: clearing always brings the prompt under it, so compact never fires.
    run, _ = play(trace, f"clear:trigger={trigger},keep=2+compact:trigger={trigger},compact_above={trigger},"
                         "keep_recent=2,clear_at_least=0")
    assert {kind for _, kind, _ in events(run)} == {"clear"}
    # compact_above=0: at request 5 clearing runs first (r1 and r2 become stubs), then compact, which
    # reads the prompt as it was before clearing (prompt_before_tokens) and summarises what is old.
    run, probe = play(trace, f"clear:trigger={trigger},keep=2+compact:trigger={trigger},compact_above=0,"
                             "keep_recent=2,clear_at_least=0")
    assert events(run)[:2] == [(5, "clear", "cleared 2 tool results"), (5, "compact", "compacted 7 messages")]
    assert probe.seen[5] == ["S", "a4", "r4"]


def test_the_spec_forms_are_one_pipeline():
    trace = story(30)
    plus, _ = play(trace, "clear:trigger=20000+compact:trigger=20000")
    listed = replay(trace, parse_policy("pipeline:stages=[clear:trigger=20000|compact:trigger=20000]"))
    assert events(plus) == events(listed)
    assert {kind for _, kind, _ in events(plus)} == {"clear"}  # the stubs keep it under compact_above (20,000)
