"""`amortized`: past `max_size` messages, keep the first `keep_first` and the newest half, forget the rest.

The session (policy_story) grows by two messages a turn. With max_size=6, keep_first=1 the policy keeps
max_size // 2 = 3 messages when it fires: `u` and the newest turn (a call and its result go together).
The history then grows back for two requests before the next cut: the cached prefix is rebuilt once per
cut, not at every request.
"""

from __future__ import annotations

from policy_story import events, play, story


def test_the_history_is_halved_when_it_passes_max_size():
    run, probe = play(story(8), "amortized:max_size=6,keep_first=1")
    assert probe.seen[3] == ["u", "a1", "r1", "a2", "r2"]
    assert probe.seen[4] == ["u", "a3", "r3"]  # 7 messages > 6: a1..r2 forgotten
    assert probe.seen[5] == ["u", "a3", "r3", "a4", "r4"]
    assert probe.seen[6] == ["u", "a5", "r5"]
    assert events(run) == [(k, "forget", "forgot 4 of 7 messages (keep 3)") for k in (4, 6, 8)]


def test_a_pinned_turn_is_never_forgotten():
    run, probe = play(story(5), "amortized:max_size=6,keep_first=1", pin_tools=("bash",))
    assert events(run) == [] and len(probe.seen[6]) == 11  # every unit holds a pinned result
