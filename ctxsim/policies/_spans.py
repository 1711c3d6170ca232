"""Units and spans: which messages can leave together (shared by the eviction policies).

A *unit* is an assistant message with tool calls plus all its tool results; every other message is
a unit of its own. Units are what can be dropped without leaving a result without its call (or a
call without its result). The functions read a policy's `View` (its `items`, `result_of`,
`holder_of`) and speak of positions in `view.items`; a policy turns the positions it chose into the
items its edits name (`picked`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, Protocol

from ctxsim.history import Item


class Items(Protocol):
    """What the span functions read: a policy's View (or, during the transition, a History)."""

    @property
    def items(self) -> Sequence[Item]: ...

    def result_of(self, call_id: str) -> Item | None: ...

    def holder_of(self, call_id: str) -> Item | None: ...

    def __len__(self) -> int: ...


def picked(view: Items, positions: Iterable[int]) -> tuple[Item, ...]:
    """The items at `positions` (in history order): what an edit names."""
    items = view.items
    return tuple(items[i] for i in sorted(positions))


def units(view: Items) -> list[int]:
    """For each position, the position of its unit's head. O(items)."""
    items = view.items
    head = list(range(len(items)))
    for i, item in enumerate(items):
        for call in item.message.tool_calls:
            result = view.result_of(call.id)
            if result is not None and result.alive and result.pos > i:
                head[result.pos] = i
    return head


def unit_head(view: Items, index: int) -> int:
    """`units(view)[index]`, without computing the units of the whole history."""
    item = view.items[index]
    call_id = item.message.tool_call_id
    if item.message.role == "tool" and call_id:
        holder = view.holder_of(call_id)
        if holder is not None and holder.alive and holder.pos < index and view.result_of(call_id) is item:
            return holder.pos
    return index


def unit_positions(view: Items, head: int) -> Iterator[int]:
    """The positions of the unit whose head is at `head`: the head, then its calls' live results after it
    (in the calls' order, not the positions')."""
    yield head
    for call in view.items[head].message.tool_calls:
        result = view.result_of(call.id)
        if result is not None and result.alive and result.pos > head:
            yield result.pos


def unit_members(view: Items, head: int) -> list[int]:
    """The positions of the unit whose head is at `head`, in order."""
    return sorted(unit_positions(view, head))


def unit_holds_pinned(view: Items, head: int) -> bool:
    """Whether the unit whose head is at `head` holds a pinned message (its members neither listed nor sorted)."""
    items = view.items
    return any(items[at].pinned for at in unit_positions(view, head))


def protected_units(view: Items, head: Sequence[int]) -> set[int]:
    """Units holding a pinned message: never dropped."""
    return {head[i] for i, item in enumerate(view.items) if item.pinned}


def close_drop(view: Items, drop: Iterable[int], snap: Literal["drop", "keep"],
               head: Sequence[int] | None = None) -> list[int]:
    """Positions to drop so that no unit is split and no pinned unit is touched.

    `snap="drop"`: a unit goes when any of its messages was chosen (cuts snap
    outward, keeping less). `snap="keep"`: a unit goes only when all of them were.
    Without `head`, only the units of the chosen positions are looked at.
    """
    chosen = set(drop)
    if head is None:
        items = view.items
        out: list[int] = []
        for h in sorted({unit_head(view, i) for i in chosen}):
            members = unit_members(view, h)
            if any(items[i].pinned for i in members):
                continue
            if snap == "drop" or all(i in chosen for i in members):
                out.extend(members)
        return sorted(out)
    safe = protected_units(view, head)
    groups: dict[int, list[int]] = {}
    for i, h in enumerate(head):
        groups.setdefault(h, []).append(i)
    out = []
    for h, idx in groups.items():
        if h in safe:
            continue
        hit = [i in chosen for i in idx]
        if (any(hit) if snap == "drop" else all(hit)):
            out.extend(idx)
    return sorted(out)


def head_tail_drop(view: Items, keep_first: int, keep_last: int) -> list[int]:
    """Drop everything but the first `keep_first` and the newest `keep_last`, unit-safe."""
    n = len(view)
    middle = range(min(keep_first, n), max(n - keep_last, min(keep_first, n)))
    return close_drop(view, middle, "drop")


def runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted indices -> [start, end) runs of consecutive ones."""
    out: list[tuple[int, int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out
