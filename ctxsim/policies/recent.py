"""`recent`: keep the first K messages and the newest ones, drop the middle.

Source: OpenHands `RecentEventsCondenser` (reference/providers-and-products.md B.8:
`keep_first=1`, `max_events=100`). Once the history holds more than
`keep_first + keep_last` messages, the first `keep_first` and the newest
`keep_last` are kept and everything between is dropped, without a marker (the
defaults, 1 and 99, are OpenHands' 100 events). The window then slides
with every new message, so from that point every request rewrites the cached
prefix just after the head.

A tool call and its results move together: a result whose call falls in the
dropped span is dropped too (the kept tail shrinks) and a head that ends on a
call whose results are dropped gives the call up (the head shrinks), the way
yoagent's `safe_tail_start` / `safe_head_end` snap a cut. Pinned messages, and
the calls of pinned results, are never dropped.

This module also holds the span helpers the other eviction policies share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxsim.history import Edit, History, Splice
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register


# ---------------------------------------------------------------- shared helpers


def units(history: History) -> list[int]:
    """For each history index, the index of its unit's head.

    A unit is an assistant message with tool calls plus all its tool results;
    every other message is a unit of its own. Units are what can be dropped
    without leaving a result without its call (or a call without its result).
    """
    items = history.items
    where = {id(item): i for i, item in enumerate(items)}
    head = list(range(len(items)))
    for i, item in enumerate(items):
        for call in item.message.tool_calls:
            result = history.result_of(call.id)
            if result is not None:
                j = where.get(id(result))
                if j is not None and j > i:
                    head[j] = i
    return head


def protected_units(history: History, head: Sequence[int]) -> set[int]:
    """Units holding a pinned message: never dropped."""
    return {head[i] for i, item in enumerate(history.items) if item.pinned}


def close_drop(history: History, drop: Iterable[int], snap: Literal["drop", "keep"],
               head: Sequence[int] | None = None) -> list[int]:
    """Indices to drop so that no unit is split and no pinned unit is touched.

    `snap="drop"`: a unit goes when any of its messages was chosen (cuts snap
    outward, keeping less). `snap="keep"`: a unit goes only when all of them were.
    """
    head = units(history) if head is None else head
    chosen = set(drop)
    safe = protected_units(history, head)
    members: dict[int, list[int]] = {}
    for i, h in enumerate(head):
        members.setdefault(h, []).append(i)
    out: list[int] = []
    for h, idx in members.items():
        if h in safe:
            continue
        hit = [i in chosen for i in idx]
        if (any(hit) if snap == "drop" else all(hit)):
            out.extend(idx)
    return sorted(out)


def drop_splices(indices: Iterable[int]) -> tuple[Splice, ...]:
    """Contiguous runs of indices as dropping splices."""
    runs: list[Splice] = []
    start = prev = None
    for i in sorted(set(indices)):
        if start is None:
            start = prev = i
        elif i == prev + 1:  # type: ignore[operator]
            prev = i
        else:
            runs.append(Splice(start, prev + 1))  # type: ignore[operator]
            start = prev = i
    if start is not None:
        runs.append(Splice(start, prev + 1))  # type: ignore[operator]
    return tuple(runs)


def head_tail_drop(history: History, keep_first: int, keep_last: int) -> list[int]:
    """Drop everything but the first `keep_first` and the newest `keep_last`, unit-safe."""
    n = len(history)
    middle = range(min(keep_first, n), max(n - keep_last, min(keep_first, n)))
    return close_drop(history, middle, "drop")


# ---------------------------------------------------------------- the policy


@dataclass(frozen=True)
class RecentParams:
    keep_first: int = field(default=1, metadata=field_doc("messages kept at the head (the task)"))
    keep_last: int = field(default=99, metadata=field_doc(
        "newest messages kept; keep_first + keep_last is OpenHands' max_events (100)"))

    def __post_init__(self) -> None:
        if self.keep_first < 0 or self.keep_last < 1:
            raise ValueError("keep_first must be >= 0 and keep_last >= 1")


class RecentPolicy:
    name = "recent"

    def __init__(self, params: RecentParams) -> None:
        self.params = params

    def decide(self, ctx: Context) -> Sequence[Edit]:
        p = self.params
        n = len(ctx.history)
        if n <= p.keep_first + p.keep_last:
            return ()
        drop = head_tail_drop(ctx.history, p.keep_first, p.keep_last)
        if not drop:
            return ()
        return (Edit("drop", drop_splices(drop), f"kept first {p.keep_first} and newest messages, "
                                                 f"dropped {len(drop)} of {n}"),)


register(PolicyInfo(
    "recent", RecentParams, RecentPolicy,
    "OpenHands RecentEventsCondenser (keep_first=1, max_events=100)",
    "keep the first K and the newest messages, drop the middle", __name__))
