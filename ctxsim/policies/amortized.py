"""`amortized`: OpenHands' amortized forgetting, halve the history when it is full.

Source: OpenHands `AmortizedForgettingCondenser` (reference/providers-and-products.md B.8:
`max_size=100`, `keep_first=1`; constraint `keep_first < max_size // 2`). When the
history holds more than `max_size` messages, the first `keep_first` and the newest
`max_size // 2 - keep_first` are kept and the rest is forgotten, with no summary
(the `llm` condenser does the same cut and summarises the forgotten span). The
history then grows back for about `max_size / 2` requests before the next cut, so
the cached prefix is rebuilt only once per cut: forgetting is amortised.

Tool calls and their results move together, as in `recent`; pinned messages stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Drop, Edit, Item, View


@dataclass(frozen=True)
class AmortizedParams:
    max_size: int = field(default=100, metadata=field_doc(
        "condense once the history holds more than this many messages (OpenHands events)"))
    keep_first: int = field(default=1, metadata=field_doc("messages always kept at the head (the task)"))

    def __post_init__(self) -> None:
        if self.max_size < 2 or self.keep_first < 0:
            raise ValueError("max_size must be >= 2 and keep_first >= 0")
        if self.keep_first >= self.max_size // 2:
            raise ValueError("keep_first must be smaller than max_size // 2")


class AmortizedPolicy:
    name = "amortized"

    def __init__(self, params: AmortizedParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        n = len(view)
        if n <= p.max_size:
            return ()
        target = p.max_size // 2
        drop = middle_units(view, p.keep_first, target - p.keep_first)
        if not drop:
            return ()
        return (Edit("forget", (Drop(tuple(drop)),), f"forgot {len(drop)} of {n} messages (keep {target})"),)


def middle_units(view: View, keep_first: int, keep_last: int) -> list[Item]:
    """Every item but the first `keep_first` and the newest `keep_last`, whole units only: a call and
    its results go together (a cut inside a unit moves outward, dropping it whole), and a unit that
    holds a pinned message stays whole. O(the middle)."""
    items = view.items
    n = len(items)
    heads = {_unit_head(view, i) for i in range(min(keep_first, n), max(n - keep_last, min(keep_first, n)))}
    out: set[int] = set()
    for head in heads:
        members = _unit_members(view, head)
        if not any(items[i].pinned for i in members):
            out.update(members)
    return [items[i] for i in sorted(out)]


def _unit_head(view: View, index: int) -> int:
    """The position of the message that heads item `index`'s unit (its call's holder, for a result)."""
    item = view.items[index]
    call_id = item.message.tool_call_id
    if item.message.role == "tool" and call_id:
        holder = view.holder_of(call_id)
        if holder is not None and holder.alive and holder.pos < index and view.result_of(call_id) is item:
            return holder.pos
    return index


def _unit_members(view: View, head: int) -> list[int]:
    """The positions of the unit headed at `head`: it and the live results of its calls, in order."""
    out = [head]
    for call in view.items[head].message.tool_calls:
        result = view.result_of(call.id)
        if result is not None and result.alive and result.pos > head:
            out.append(result.pos)
    return sorted(out)


register(PolicyInfo(
    "amortized", AmortizedParams, AmortizedPolicy,
    "OpenHands AmortizedForgettingCondenser (max_size=100, keep_first=1)",
    "past max_size messages keep the first K and the newest half, drop the rest", __name__))
