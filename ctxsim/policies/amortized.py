"""`amortized`: OpenHands' amortized forgetting, halve the history when it is full.

Source: OpenHands `AmortizedForgettingCondenser` (reference/providers-and-products.md B.8:
`max_size=100`, `keep_first=1`; constraint `keep_first < max_size // 2`). When the
history holds more than `max_size` messages, the first `keep_first` and the newest
`max_size // 2 - keep_first` are kept and the rest is forgotten, with no summary
(the `llm` condenser does the same cut and summarises the forgotten span). The
history then grows back for about `max_size / 2` requests before the next cut, so
the cached prefix is rebuilt only once per cut: forgetting is amortised.

Tool calls and their results move together, as in `recent`; pinned messages stay.

With `summarize` it is the OpenHands Software Agent SDK's `LLMSummarizingCondenser` (reference B.8:
`max_size=240`, `keep_first=2`): the forgotten span (the previous summary in it) becomes one summary
message after the head, so the tail is `max_size // 2 - keep_first - 1`; the summarising request reads
the forgotten span alone, uncached (a separate LLM call). `max_tokens` (and `window_cap`: the agent
model's window as the cap, the SDK's default) also condenses when the prompt passes that many tokens,
forgetting enough to get under half of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies._spans import close_drop
from ctxsim.policies.base import Drop, Edit, Item, View
from ctxsim.summarizers import TurnClock


@dataclass(frozen=True)
class AmortizedParams:
    max_size: int = field(default=100, metadata=field_doc(
        "condense once the history holds more than this many messages (OpenHands events)"))
    keep_first: int = field(default=1, metadata=field_doc("messages always kept at the head (the task)"))
    summarize: bool = field(default=False, metadata=field_doc(
        "summarise the forgotten span into one message (OpenHands SDK LLMSummarizingCondenser)"))
    summary_tokens: int | None = field(default=None, metadata=field_doc(
        "with summarize: the summary's size (else 5% of its input, 500 to 2,000)"))
    max_tokens: int | None = field(default=None, metadata=field_doc(
        "also condense when the prompt passes this many tokens, to under half of it"))
    window_cap: bool = field(default=False, metadata=field_doc(
        "also condense when the prompt passes the window (the SDK's cap: the model's max input tokens)"))

    def __post_init__(self) -> None:
        if self.max_size < 2 or self.keep_first < 0:
            raise ValueError("max_size must be >= 2 and keep_first >= 0")
        if self.keep_first >= self.max_size // 2:
            raise ValueError("keep_first must be smaller than max_size // 2")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be positive")


class AmortizedPolicy:
    name = "amortized"

    def __init__(self, params: AmortizedParams) -> None:
        self.params = params
        self._clock = TurnClock()
        self.summarizer = None
        if params.summarize:
            from ctxsim.summarizers import make_summarizer

            self.summarizer = make_summarizer("llm", summary_tokens=params.summary_tokens)

    def start(self) -> None:
        self._clock = TurnClock()

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        self._clock.observe(removed, added)

    def _cap(self, view: View) -> int | None:
        p = self.params
        caps = [c for c in (p.max_tokens, view.window if p.window_cap else None) if c is not None]
        return min(caps) if caps else None

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        n = len(view)
        cap = self._cap(view)
        over_tokens = cap is not None and view.prompt_tokens > cap
        if n <= p.max_size and not over_tokens:
            return ()
        target = p.max_size // 2
        keep_last = target - p.keep_first - (1 if p.summarize else 0)
        if over_tokens and cap is not None:  # the newest messages that fit under half the cap, after the head
            budget = cap // 2 - view.prefix_tokens(min(p.keep_first, n))
            fit = 0
            while fit < n - p.keep_first and budget - view.items[n - 1 - fit].tokens >= 0:
                budget -= view.items[n - 1 - fit].tokens
                fit += 1
            keep_last = min(keep_last, fit)
        drop = middle_units(view, p.keep_first, max(keep_last, 0))
        if not drop:
            return ()
        if self.summarizer is None:
            return (Edit("forget", (Drop(tuple(drop)),), f"forgot {len(drop)} of {n} messages (keep {target})"),)
        from ctxsim.policies.compact import summarise_items

        summary = summarise_items(view, self.summarizer, self._clock, drop, "",
                                  note=f"condensation of {len(drop)} messages")
        calls = (summary.call,) if summary.call else ()
        return (Edit("condense", (summary.replacing(drop),), f"condensed {len(drop)} of {n} messages", calls),)


def middle_units(view: View, keep_first: int, keep_last: int) -> list[Item]:
    """Every item but the first `keep_first` and the newest `keep_last`, whole units only: a call and
    its results go together (a cut inside a unit moves outward, dropping it whole), and a unit that
    holds a pinned message stays whole. O(the middle)."""
    n = len(view)
    start = min(keep_first, n)
    return [view.items[i] for i in close_drop(view, range(start, max(n - keep_last, start)), "drop")]


register(PolicyInfo(
    "amortized", AmortizedParams, AmortizedPolicy,
    "OpenHands AmortizedForgettingCondenser (max_size=100, keep_first=1); SDK LLMSummarizingCondenser (summarize)",
    "past max_size messages keep the first K and the newest half, drop (or summarise) the rest", __name__,
    weight=1.2))
