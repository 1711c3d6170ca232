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
from ctxsim.policies._spans import close_drop
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
    n = len(view)
    start = min(keep_first, n)
    return [view.items[i] for i in close_drop(view, range(start, max(n - keep_last, start)), "drop")]


register(PolicyInfo(
    "amortized", AmortizedParams, AmortizedPolicy,
    "OpenHands AmortizedForgettingCondenser (max_size=100, keep_first=1)",
    "past max_size messages keep the first K and the newest half, drop the rest", __name__,
    weight=1.2))
