"""`recent`: keep the first K messages and the newest ones, drop the middle (OpenHands' condenser).

The stories (see stories.py): u, then turns a<n> r<n> of about 100 tokens each.
"""

from __future__ import annotations

from stories import acted, labels, spied, story, told, told_with

from ctxsim.policies.base import Drop
from ctxsim.policies.recent import REFERENCE


def test_once_past_first_plus_last_the_window_slides_one_turn_a_request():
    """keep_first=1, keep_last=4: request 4 is the first with more than 5 messages (u + 3 turns = 7);
    the newest 4 are a2 r2 a3 r3, so the middle a1 r1 goes. From then on every request holds 7 and
    drops the oldest turn after the task."""
    run, probe = told(story(6), "recent:keep_first=1,keep_last=4")
    assert probe.seen[3] == ["u", "a1", "r1", "a2", "r2"]  # 5: nothing to do
    assert probe.seen[4] == ["u", "a2", "r2", "a3", "r3"]
    assert probe.seen[7] == ["u", "a5", "r5", "a6", "r6"]
    assert acted(run) == [(4, "drop", 2), (5, "drop", 2), (6, "drop", 2), (7, "drop", 2)]
    assert run.events[0].note == "kept first 1 and newest messages, dropped 2 of 7"


def test_a_cut_through_a_turn_takes_the_whole_turn():
    """keep_last=5 at request 4: the newest 5 are r1 a2 r2 a3 r3, but r1 cannot stay without its call
    a1, which is in the middle: the cut snaps outward and both go (the tail keeps 4)."""
    _, probe = told(story(4), "recent:keep_first=1,keep_last=5")
    assert probe.seen[4] == ["u", "a2", "r2", "a3", "r3"]


def test_a_pinned_result_and_its_call_stay():
    """r2 is pinned (its tool is pinned): at request 5 the middle is a2 r2 a3; a2 r2 stay, as a unit
    holding a pinned message; a3 goes with its result r3, though r3 was among the newest."""
    trace = story(6, tool=lambda n: "notes_read" if n == 2 else "bash")
    _, probe = told(trace, "recent:keep_first=1,keep_last=3", pin_tools=("notes_read",))
    assert probe.seen[4] == ["u", "a2", "r2!", "a3", "r3"]
    assert probe.seen[5] == ["u", "a2", "r2!", "a4", "r4"]


def test_the_edit_names_the_dropped_items():
    """decide returns one `drop` edit; its Drop names the items themselves, the engine finds where they are."""
    _, _, spy = spied(story(4), "recent:keep_first=1,keep_last=4")
    (edit,) = spy.edits[4]
    assert edit.kind == "drop" and len(edit.changes) == 1 and isinstance(edit.changes[0], Drop)
    assert labels(edit.changes[0].items) == ["a1", "r1"]


def test_the_reference_drops_the_same():
    trace = story(6, tool=lambda n: "notes_read" if n == 2 else "bash")
    run, probe = told(trace, "recent:keep_first=1,keep_last=3", pin_tools=("notes_read",))
    plain, plain_probe = told_with(REFERENCE, "recent:keep_first=1,keep_last=3", trace, pin_tools=("notes_read",))
    assert plain_probe.seen == probe.seen and acted(plain) == acted(run)
