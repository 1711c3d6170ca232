"""`tiered`: yoagent's three-level compaction, to a target below the budget.

When the messages pass the budget (max_context_tokens - system_prompt_tokens): level 1 cuts every
tool output to its line cap (head and tail); done if that fits the budget. Level 2 turns every
assistant message before the last `keep_recent` messages into a user message "[Summary] <its text>"
and drops its results; user messages stay; done if that reaches the target (70 % of the budget
here: compact_headroom_turns=0 keeps the ratio fixed). Level 3 replaces the middle after the first
`keep_first` messages by a marker, the fewest messages that reach the target. The stories (see
stories.py): u, then turns a<n> r<n>; `S` is a summary or the marker.
"""

from __future__ import annotations

from stories import acted, labels, spied, story, told, told_with

from ctxsim.policies.base import Summarize
from ctxsim.policies.tiered import COMPACTION_MARKER, REFERENCE

FIXED = "system_prompt_tokens=0,compact_headroom_turns=0"


def twenty_lines(n: int) -> str:
    return "\n".join(f"line {i} of output {n}" for i in range(20))


def test_level_1_cuts_tool_output_to_its_line_cap_and_that_is_enough():
    """Each turn is ~117 tokens; request 12 is the first over 1,200. Cut to 6 lines (yoagent's cut:
    the first and the last two lines around a line saying what was left out), the 23 messages take 473
    tokens: done, nothing is summarised, and the cut results stay cut (requests 13 on fit the budget)."""
    spec = f"tiered:max_context_tokens=1200,{FIXED},keep_recent=4,tool_output_max_lines=6"
    run, probe = told(story(12, output=twenty_lines), spec)
    assert acted(run) == [(12, "truncate", 11)]
    assert run.events[0].tokens_before == 1318 and run.events[0].tokens_after == 483
    r1 = probe.items[13][2].message.content.split("\n")
    assert r1 == ["line 0 of output 1", "", "[... 17 lines truncated ...]", "", "line 18 of output 1",
                  "line 19 of output 1"]


def test_level_2_summarises_old_turns_in_one_line_each():
    """One-line outputs cannot be cut. At request 10 (1,080 tokens of messages, budget 1,000) the turns
    before the last 4 messages become summaries: a1 .. a7 each "[Summary] step n", r1 .. r7 gone.
    303 tokens: under the target (699)."""
    run, probe = told(story(14), f"tiered:max_context_tokens=1000,{FIXED},keep_recent=4")
    assert acted(run) == [(10, "summarize", 14)]
    assert probe.seen[10] == ["u", "S", "S", "S", "S", "S", "S", "S", "a8", "r8", "a9", "r9"]
    assert [it.message.content for it in probe.items[10][1:3]] == ["[Summary] step 1", "[Summary] step 2"]
    assert all(it.message.role == "user" for it in probe.items[10][1:8])


def test_level_3_puts_a_marker_in_place_of_the_middle():
    """Long user messages u1 and u3 stay through level 2, so at request 5 the summaries alone leave
    the messages over the target (489). Level 3 keeps the first message (u) and replaces what follows,
    up to the first cut whose tail fits, by the marker: a1's summary and u1 go."""
    trace = story(8, users={1: "also " * 120, 3: "and " * 150})
    run, probe, spy = spied(trace, f"tiered:max_context_tokens=700,{FIXED},keep_recent=4,keep_first=1")
    assert acted(run)[0] == (5, "drop", 5)
    assert spy.seen[5] == ["u", "a1", "r1", "u1", "a2", "r2", "a3", "r3", "u3", "a4", "r4"]
    assert probe.seen[5] == ["u", "S", "S", "a3", "r3", "u3", "a4", "r4"]
    marker, summary = (it.message.content for it in probe.items[5][1:3])
    assert marker == COMPACTION_MARKER and summary == "[Summary] step 2"
    # the edit names items: the marker takes the place of a1 r1 u1, a2's summary that of a2 and r2
    (edit,) = spy.edits[5]
    assert [(type(c), labels(c.items)) for c in edit.changes] == [
        (Summarize, ["a1", "r1", "u1"]), (Summarize, ["a2", "r2"])]
    assert edit.changes[1].origin == spy_origin(trace, "step 2")  # a summary keeps its message's place


def spy_origin(trace, text: str) -> int:
    return next(i for i, m in enumerate(trace.sessions[0].messages) if m.content == text)


def test_the_plain_version_compacts_the_same():
    trace = story(8, users={1: "also " * 120, 3: "and " * 150})
    spec = f"tiered:max_context_tokens=700,{FIXED},keep_recent=4,keep_first=1"
    run, probe = told(trace, spec)
    plain, plain_probe = told_with(REFERENCE, spec, trace)
    assert plain_probe.seen == probe.seen and plain.rows == run.rows and acted(plain) == acted(run)
