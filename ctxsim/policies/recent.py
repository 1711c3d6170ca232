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

`PlainRecent` (the module's REFERENCE) is the same rule from the definition: every message grouped
with its unit, a unit dropped when any of it falls in the middle and none of it is pinned. (The
span helpers the eviction policies share live in `_spans`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies._spans import head_tail_drop, picked
from ctxsim.policies.base import Drop, Edit, View


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

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        n = len(view)
        if n <= p.keep_first + p.keep_last:
            return ()
        drop = head_tail_drop(view, p.keep_first, p.keep_last)  # the middle, snapped out to whole units
        if not drop:
            return ()
        return (Edit("drop", (Drop(picked(view, drop)),),
                     f"kept first {p.keep_first} and newest messages, dropped {len(drop)} of {n}"),)


class PlainRecent:
    """The reference: `recent` from the definition, grouping every message with its unit."""

    name = "recent"

    def __init__(self, params: RecentParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        items = view.items
        n = len(items)
        if n <= p.keep_first + p.keep_last:
            return ()
        first = min(p.keep_first, n)
        middle = set(range(first, max(n - p.keep_last, first)))
        unit: dict[int, list[int]] = {}  # position of a unit's head -> positions of its messages
        for i, item in enumerate(items):
            head = i
            holder = view.holder_of(item.message.tool_call_id or "") if item.message.role == "tool" else None
            if holder is not None and holder.pos < i and view.result_of(item.message.tool_call_id or "") is item:
                head = holder.pos  # a result goes with its call
            unit.setdefault(head, []).append(i)
        drop = [i for members in unit.values()
                if middle.intersection(members) and not any(items[m].pinned for m in members) for i in members]
        if not drop:
            return ()
        return (Edit("drop", (Drop(picked(view, drop)),),
                     f"kept first {p.keep_first} and newest messages, dropped {len(drop)} of {n}"),)


REFERENCE = PlainRecent

register(PolicyInfo(
    "recent", RecentParams, RecentPolicy,
    "OpenHands RecentEventsCondenser (keep_first=1, max_events=100)",
    "keep the first K and the newest messages, drop the middle", __name__,
    space={"keep_first": (1, 2, 4), "keep_last": (10, 20, 40, 60, 99, 150, 250)}, weight=2.1))
