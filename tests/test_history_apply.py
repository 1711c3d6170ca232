"""History.apply's two ways of splicing (in place for a few splices, one rebuild past the first for many)
leave the same history: the items, their positions, the running sums, the composition and what
observers are told; and the View reads the history's own items and look-ups."""

from __future__ import annotations

import random

import pytest

from ctxsim.history import Edit, History, Item, PolicyViolation, Splice
from ctxsim.model import Message, ToolCall
from ctxsim.policies import truncate
from ctxsim.policies.base import View


def _history(n: int) -> History:
    history = History(100, lambda m: 3 + len(m.content), lambda m: 1)
    for i in range(n):
        if i % 5 == 1:  # a call, its result next
            message = Message("assistant", f"call {i}", tool_calls=(ToolCall(f"c{i}", "read", {"path": f"f{i}"}),))
        elif i % 5 == 2:
            message = Message("tool", f"result {i - 1}", tool_call_id=f"c{i - 1}", name="read")
        else:
            message = Message("user" if i % 2 else "assistant", f"text {i}")
        history.append(history.item(message, i))
    return history


def _splices(history: History, rng: random.Random, count: int) -> list[Splice]:
    """Non-overlapping splices of user/plain-assistant items only (a call and its result never split)."""
    plain = [i for i, it in enumerate(history.items) if not it.message.tool_calls and it.message.role != "tool"]
    chosen = sorted(rng.sample(plain, count))
    out = []
    for pos in chosen:
        kind = rng.choice(["drop", "replace", "insert", "two"])
        if kind == "drop":
            out.append(Splice(pos, pos + 1))
        elif kind == "insert":
            out.append(Splice(pos, pos, (history.item(Message("user", f"marker {pos}"), inserted=True),)))
        else:
            width = 1 if kind == "replace" else 2
            new = tuple(history.item(Message("user", f"new {pos} {k}"), pos) for k in range(width))
            out.append(Splice(pos, pos + 1, new))
    rng.shuffle(out)  # apply sorts them
    return out


def _state(history: History) -> tuple[object, ...]:
    items = history.items
    return ([it.message for it in items], [it.pos for it in items], [it.alive for it in items],
            [history.prefix_tokens(b) for b in range(len(items) + 1)],
            [history.prefix_blocks(b) for b in range(len(items) + 1)],
            history.prompt_tokens, dict(history.composition))


@pytest.mark.parametrize("seed", range(6))
def test_many_splices_leave_the_history_a_splice_at_a_time_does(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(9, 30)  # past the in-place limit: the rebuild
    one, each = _history(200), _history(200)
    splices = _splices(one, rng, count)
    applied = one.apply(Edit("test", tuple(splices)), "test")
    # the same splices one by one, last first (what apply does in place), on a twin history
    told: list[tuple[list[Item], tuple[Item, ...]]] = []
    touched = 0
    for s in sorted(splices, key=lambda s: s.start, reverse=True):
        twin = tuple(each.item(it.message, it.origin, it.tokens, inserted=it.inserted) for it in s.new)
        part = each.apply(Edit("test", (Splice(s.start, s.end, twin),)), "test")
        told.extend(part.spliced)
        touched += part.messages
    assert _state(one) == _state(each)
    assert applied.messages == touched
    assert applied.first_index == min(s.start for s in splices)
    told.reverse()
    assert [([i.message for i in r], [i.message for i in a]) for r, a in applied.spliced] == \
        [([i.message for i in r], [i.message for i in a]) for r, a in told]
    assert all(not it.alive for r, _ in applied.spliced for it in r)


def test_many_splices_touching_a_pinned_message_are_refused_before_any_is_applied() -> None:
    history = _history(60)
    history.items[40].pinned = True
    before = _state(history)
    splices = tuple(Splice(i, i + 1) for i in range(0, 60, 5))  # 12 of them, 40 among them
    with pytest.raises(PolicyViolation, match="pinned message"):
        history.apply(Edit("test", splices), "test")
    assert _state(history) == before


def test_view_reads_the_history_itself() -> None:
    history = _history(20)
    view = View(history, 1, 1000, lambda m: 1)
    assert view.items is history.items
    assert view.result_of("c1") is history.items[2] and view.holder_of("c1") is history.items[1]
    assert view.result_of("nope") is None and view.holder_of("nope") is None
    history.apply(Edit("drop", (Splice(1, 3),)), "test")  # the call and its result leave
    assert view.result_of("c1") is None and len(view) == 18


def test_truncate_observes_only_when_it_cuts_retroactively() -> None:
    on_append = truncate.TruncatePolicy(truncate.TruncateParams())
    later = truncate.TruncatePolicy(truncate.TruncateParams(on_append=False))
    assert not hasattr(on_append, "observe")  # the engine then never calls it
    assert hasattr(later, "observe")
