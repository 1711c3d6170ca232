"""`notes`: the agent's bounded notes file, rebuilt from its notes_write calls, ends every summary.

The session (policy_story) with notes calls added after turns 1 and 2: each writes one entry to the
section "Plan", as seed 000's "section | entry" string or as structured arguments. A write that would
take the file past `max_tokens` is refused: its result becomes the error the agent would have seen.
"""

from __future__ import annotations

from helpers import T0
from policy_story import events, play, prompts, story

from ctxsim.model import Message, ToolCall, format_ts


def write(n: int, tool: str, arguments) -> tuple[Message, Message]:
    call = ToolCall(f"w{n}", tool, arguments)
    return (Message("assistant", "noting", ts=format_ts(T0 + 10 * n + 5), tool_calls=(call,)),
            Message("tool", "ok", ts=format_ts(T0 + 10 * n + 6), tool_call_id=f"w{n}", name=tool))


ENTRY = "round once at the total"


def test_writes_build_the_notes_and_the_summary_ends_with_them():
    extra = {1: write(1, "notes_write", "Plan | " + ENTRY),
             2: write(2, "notes_write", {"section": "Plan", "entry": "use Decimal"})}
    trace = story(6, extra=extra)
    trigger = prompts(trace)[5]
    run, probe = play(trace, f"notes+compact:trigger={trigger},compact_above=0,keep_recent=2,clear_at_least=0")
    compacted = next(k for k, kind, _ in events(run) if kind == "compact")
    summary = probe.items[compacted][0].message.content
    assert summary.endswith(f"Current notes:\n## Plan\n- {ENTRY}\n- use Decimal")


def test_a_write_past_the_bound_is_refused():
    extra = {1: write(1, "notes_write", "Plan | " + ENTRY), 2: write(2, "notes_write", "Plan | " + "e" * 80)}
    run, probe = play(story(3, extra=extra), "notes:max_tokens=20")
    # "## Plan\n- round once at the total" is 9 tokens (chars4); with the second entry it would be 30.
    assert [kind for _, kind, _ in events(run)] == ["notes_refused"]
    refused = next(it.message for it in probe.items[6] if it.message.tool_call_id == "w2")
    assert refused.content.startswith("error: the notes would pass 20 tokens") and refused.is_error
    assert probe.shared["notes"].text() == f"## Plan\n- {ENTRY}"  # the refused entry is not in the notes


def test_notes_read_results_are_pinned_so_no_later_stage_edits_them():
    extra = {1: (Message("assistant", "reading", ts=format_ts(T0 + 15), tool_calls=(ToolCall("n1", "notes_read", {}),)),
                 Message("tool", "## Plan\n- " + ENTRY, ts=format_ts(T0 + 16), tool_call_id="n1", name="notes_read"))}
    run, probe = play(story(5, extra=extra), "notes+clear:trigger=100,keep=1")
    # Request 2 is the notes-reading message; its result arrives for request 3, where notes pins it before
    # clear looks (stages run in order): clear, keeping the newest one result, never counts it among the
    # stale ones, and from request 4 on stubs every other result but the newest.
    assert [(k, kind) for k, kind, _ in events(run)][:2] == [(3, "pin"), (4, "clear")]
    final = probe.items[7]
    assert [it.message.name for it in final if it.pinned] == ["notes_read"]
    assert [it.message.tool_call_id for it in final if it.cleared] == ["c1", "c2", "c3", "c4"]
