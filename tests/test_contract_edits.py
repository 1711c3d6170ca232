"""The contract's item-named edits (policies.base) and the observe hook, as the engine applies them.

Each case is small enough to check by hand: the same stub written by position (the old splices) and
by item (`Replace`) must meter identically; observers are told of every append and every splice.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from helpers import T0, replay, session_of, turn_messages

from ctxsim.history import Edit as Spliced
from ctxsim.history import PolicyViolation, Splice
from ctxsim.model import Message, format_ts
from ctxsim.policies import NoParams
from ctxsim.policies.base import Drop, Edit, Insert, Replace, Summarize, Truncate, View


def trace(turns: int = 6):
    messages = [Message("user", "start", ts=format_ts(T0))]
    for n in range(1, turns + 1):
        messages += turn_messages(n, "read_file", f"line {n}\n" * 200, T0 + 10 * n)
    return session_of(messages)


class StubOldest:
    """At request 4, stubs the first tool result: by position (`by_item=False`) or by item."""

    name = "stub"
    params = NoParams()

    def __init__(self, by_item: bool) -> None:
        self.by_item = by_item

    def decide(self, view: View) -> Sequence[object]:
        if view.request != 4:
            return ()
        item = next(it for it in view.items if it.message.role == "tool")
        message = item.message.with_content("[cleared]")
        if self.by_item:
            return (Edit("clear", (Replace(item, message),), "cleared 1"),)
        new = view.history.item(message, origin=item.origin, cleared=True)
        return (Spliced("clear", (Splice(item.pos, item.pos + 1, (new,)),), "cleared 1"),)


def test_replace_by_item_meters_like_the_splice_by_position():
    old, new = replay(trace(), StubOldest(False)), replay(trace(), StubOldest(True))
    assert [r.input_tokens for r in new.rows] == [r.input_tokens for r in old.rows]
    assert [r.cache_read_tokens for r in new.rows] == [r.cache_read_tokens for r in old.rows]
    assert [(e.request, e.kind, e.note, e.tokens_before, e.tokens_after) for e in new.events] == \
           [(e.request, e.kind, e.note, e.tokens_before, e.tokens_after) for e in old.events]
    assert new.events[0].tokens_after < new.events[0].tokens_before  # the stub freed something


class Recorder:
    name = "recorder"
    params = NoParams()

    def __init__(self, change: str) -> None:
        self.change = change
        self.told: list[tuple[int, int]] = []  # (removed, added) per call
        self.starts = 0

    def start(self) -> None:
        self.starts += 1

    def observe(self, removed, added) -> None:
        self.told.append((len(removed), len(added)))
        assert all(item.alive for item in added) and not any(item.alive for item in removed)

    def decide(self, view: View):
        if view.request != 3:
            return ()
        results = [it for it in view.items if it.message.role == "tool"]
        first = results[0]
        holder = view.holder_of(first.message.tool_call_id or "")
        assert holder is not None
        if self.change == "drop":
            return (Drop((holder, first)),)
        if self.change == "summarize":
            return (Summarize((holder, first), Message("user", "summary")),)
        if self.change == "truncate":
            return (Truncate(first, first.message.with_content("line 1")),)
        return (Insert(Message("user", "note"), before=holder),)


@pytest.mark.parametrize(("change", "kind", "told"), [("drop", "drop", (2, 0)), ("summarize", "compact", (2, 1)),
                                              ("truncate", "truncate", (1, 1)), ("insert", "insert", (0, 1))])
def test_observe_is_told_of_appends_and_of_each_splice(change, kind, told):
    policy = Recorder(change)
    run = replay(trace(), policy)
    appends = sum(1 for t in policy.told if t == (0, 1))
    messages = len(trace().sessions[0].messages)
    edits = [t for t in policy.told if t != (0, 1)] or [told]  # an insert looks like an append
    assert appends == messages + (1 if change == "insert" else 0)
    assert edits == [told]
    assert [e.kind for e in run.events] == [kind]
    assert policy.starts == 1


class Bad:
    name = "bad"
    params = NoParams()

    def __init__(self, what: str) -> None:
        self.what = what
        self.kept = None

    def decide(self, view: View):
        results = [it for it in view.items if it.message.role == "tool"]
        if view.request == 2 and self.what == "dead":
            self.kept = results[0]
            return (Truncate(results[0], results[0].message.with_content("x")),)
        if view.request == 3 and self.what == "dead":
            return (Drop((self.kept,)),)  # replaced at request 2: no longer in the history
        if view.request == 3 and self.what == "orphan":
            holder = view.holder_of(results[0].message.tool_call_id or "")
            return (Drop((holder,)),)  # its result stays: an orphan
        if view.request == 3 and self.what == "twice":
            return (Drop((results[0], results[0])),)
        return ()


@pytest.mark.parametrize(("what", "message"), [("dead", "not in the history"), ("orphan", "orphan"),
                                          ("twice", "twice")])
def test_the_engine_refuses_an_edit_that_breaks_the_contract(what, message):
    with pytest.raises(PolicyViolation, match=message):
        replay(trace(), Bad(what))


def test_with_content_is_replace_with_the_text_and_the_extra_tokens_it_carried() -> None:
    """`Message.with_content` copies the slots itself (faster than the frozen init): every field but the
    text (and a user or tool message's extra_tokens) is the original's, as `dataclasses.replace` gives."""
    import dataclasses

    from ctxsim.model import ToolCall, Usage

    full = Message("assistant", "old", ts="2026-01-01T00:00:00Z", thinking="t", tool_calls=(ToolCall("c", "bash"),),
                   tool_call_id=None, name="n", is_error=True, usage=Usage(input_tokens=3), model="m",
                   extra_tokens=9, extra={"k": 1}, line=7)
    for role in ("assistant", "tool", "user"):
        message = dataclasses.replace(full, role=role)
        copy = message.with_content("new")
        expected = dataclasses.replace(message, content="new", extra_tokens=9 if role == "assistant" else 0)
        assert copy == expected
        for f in dataclasses.fields(Message):  # compare=False fields too (extra, line)
            assert getattr(copy, f.name) == getattr(expected, f.name), f.name
        assert message.content == "old"  # the original is untouched


def test_written_is_the_init_with_role_text_and_time() -> None:
    """`model.written` (what tiered's summaries and markers are made with) is `Message(role, text, ts=ts)`,
    field for field, the defaults of every other field included."""
    import dataclasses

    from ctxsim.model import written

    for ts in (None, "2026-01-01T00:00:00Z"):
        made, expected = written("user", "[Summary] x", ts), Message("user", "[Summary] x", ts=ts)
        for f in dataclasses.fields(Message):
            assert getattr(made, f.name) == getattr(expected, f.name), f.name
        assert made == expected and hash(made) == hash(expected)
