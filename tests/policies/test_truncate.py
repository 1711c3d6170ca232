"""`truncate`: a tool output longer than its tool's line cap keeps its head and tail lines.

The session (policy_story): turn n's output has 100 * n lines, so with max_lines=150 the first
output fits and every later one is cut to exactly 150 lines: its first 73, a marker of three lines
(blank, `[... N lines truncated ...]`, blank) and its last 74. `read_file` pages itself and is exempt by default.
"""

from __future__ import annotations

from policy_story import events, play, same_as_reference, story

from ctxsim.policies import truncate
from ctxsim.policies.truncate import line_count


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(100 * n))


def test_on_append_an_output_is_cut_as_it_arrives():
    run, probe = play(story(3, output=lines), "truncate:max_lines=150")
    # r2 arrives after request 2 and before request 3: the cut is logged at the request it arrives for.
    assert events(run) == [(3, "truncate", "bash output cut to 150 lines"),
                           (4, "truncate", "bash output cut to 150 lines")]
    r1, r2 = probe.items[3][2].message.content, probe.items[3][4].message.content
    assert line_count(r1) == 100 and line_count(r2) == 150
    assert r2.startswith("line 0\n") and "\nline 72\n\n[... 53 lines truncated ...]\n\nline 126\n" in r2
    assert r2.endswith("\nline 199")  # 200 lines: 73 + 74 kept, 53 dropped


def test_retroactively_each_over_long_output_is_cut_once_before_a_request():
    run, probe = play(story(3, output=lines), "truncate:max_lines=150,on_append=false")
    assert events(run) == [(3, "truncate", "truncated 1 tool results"), (4, "truncate", "truncated 1 tool results")]
    assert [line_count(it.message.content) for it in probe.items[4] if it.message.role == "tool"] == [100, 150, 150]


def test_read_file_is_exempt_and_overrides_set_a_tool_its_own_cap():
    trace = story(3, output=lines, tool=lambda n: "read_file" if n == 2 else "bash")
    run, probe = play(trace, "truncate:max_lines=150,overrides=[bash=50]")
    assert [line_count(it.message.content) for it in probe.items[4] if it.message.role == "tool"] == [50, 200, 50]
    assert [e[2] for e in events(run)] == ["bash output cut to 50 lines"] * 2


def test_the_plain_reference_makes_the_same_edits():
    run = same_as_reference(truncate, "truncate:max_lines=150,on_append=false", story(5, output=lines))
    assert len(events(run)) == 4
