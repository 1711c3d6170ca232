"""How a recorded provider miss carries over to a policy's own prompts, and the cost range it leaves.

The log shows, at some requests, that the provider read less than the cache model says (a ceiling:
`ctxsim.analysis.cache_anchor`). It shows the miss for the recorded (unmanaged) prompt only: the
`none` replay's model read `reference` tokens where the provider read `ceiling`. A policy's replay
sends a different, often smaller, prompt and its model reads `own` tokens. What the provider would
have read of that prompt depends on why it missed, which the log cannot tell; two rules span it:

* `absolute`: the provider lost a fixed number of tokens of what it held (reference - ceiling), as
  when the newest entries were evicted: the policy reads max(0, own - (reference - ceiling));
* `share`: the provider served the same share of what it held (ceiling / reference), as when it
  served part of its cache (a best-effort implicit cache, a partial eviction across entries): the
  policy reads own x ceiling / reference.

For the `none` replay (own = reference) both give the recorded read. For a smaller prompt
(own < reference) the absolute rule reads less (the dearer end), the share rule more: the point
estimate is the share rule, and the absolute rule is the other end of the policy's cost range
(`cost_range_usd`). Before this, a policy's read was min(own, ceiling), which never binds once a
policy's prompt is below the recorded read: a provider that served half its cache at 30 requests
left `clear` 21 % and `compact` 27 % too cheap (issue 25).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Literal

Rule = Literal["share", "absolute"]
RULES: tuple[Rule, ...] = ("share", "absolute")
POINT: Rule = "share"  # the rule a row's cost uses; the other is the range's other end


def transferred_read(own: int, ceiling: int, reference: int | None, rule: Rule) -> int:
    """The tokens a policy's request reads where the model says `own` and the recorded prompt's model read
    `reference` but the provider read only `ceiling`. Without a reference (facts made before it was kept)
    the ceiling caps the read, as it always did."""
    ceiling = max(0, ceiling)
    if reference is None or reference <= ceiling:
        return min(own, ceiling)
    if rule == "absolute":
        return max(0, min(own, own - (reference - ceiling)))
    return min(own, -(-own * ceiling // reference))  # rounded up: the share's token of rounding on the cheap side


def cost_range(point_usd: Decimal, deltas_usd: Iterable[Decimal]) -> tuple[Decimal, Decimal]:
    """[low, high] of a cost whose requests each could have cost `delta` more (or less) under the other rule:
    each request takes its own cheaper and dearer end, so the range holds every mix of the rules."""
    low = high = point_usd
    for delta in deltas_usd:
        if delta < 0:
            low += delta
        else:
            high += delta
    return low, high
