"""`clear_thinking`: drop the thinking of older assistant turns, Anthropic's `clear_thinking_20251015`.

Source: Anthropic context editing (reference/providers-and-products.md B.1). The thinking of the
newest `keep` assistant turns that have thinking stays; every older assistant message loses its
thinking (the message stays, with its text and tool calls). `keep=all` keeps every turn's
thinking, which makes the policy a no-op (the API's choice when the cache matters more than the
space). The default is 1, the older documented default (the latest doc makes it model-specific:
"all" on Opus 4.5+ / Sonnet 4.6+, the last turn elsewhere). The edit is made only when there is
thinking to clear; it rewrites the cached prefix from the first cleared message. A "thinking turn"
here is one assistant message with thinking (one model request); a pinned message is never
edited and does not count among the kept turns.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ctxsim.history import Edit, History, Item, Splice
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register

TAG = "thinking_cleared"


@dataclass(frozen=True)
class ClearThinkingParams:
    keep: int | Literal["all"] = field(default=1, metadata=field_doc(
        "newest assistant turns whose thinking is kept (an int >= 1, or all)"))

    def __post_init__(self) -> None:
        if self.keep != "all" and (not isinstance(self.keep, int) or self.keep < 1):
            raise ValueError("keep must be at least 1, or all")


class ClearThinkingPolicy:
    name = "clear_thinking"

    def __init__(self, params: ClearThinkingParams) -> None:
        self.params = params

    def decide(self, ctx: Context) -> Sequence[Edit]:
        keep = self.params.keep
        if keep == "all":
            return ()
        history = ctx.history
        mark = _MARKS.get(history)
        kept: list[Item] = []
        splices: list[Splice] = []
        # Newest first, down to where the previous decision left everything older without thinking
        # (cleared, or never had any): work per request is what changed, not the whole history.
        for i in range(len(history) - 1, -1, -1):
            item = history.items[i]
            message = item.message
            if message.role == "assistant" and message.thinking and not item.pinned:
                if len(kept) < keep:
                    kept.append(item)
                else:
                    new = history.item(replace(message, thinking=None), origin=item.origin,
                                       tags=item.tags | {TAG}, cleared=item.cleared, inserted=item.inserted)
                    splices.append(Splice(i, i + 1, (new,)))
            if item is mark or TAG in item.tags:
                break
        if len(history):
            # Next time, stop at the oldest thinking kept now (it may have to go then), else at the newest item.
            _MARKS[history] = kept[-1] if kept else history.items[-1]
        if not splices:
            return ()
        return (Edit("clear_thinking", tuple(reversed(splices)),
                     f"cleared the thinking of {len(splices)} assistant turns"),)


_MARKS: weakref.WeakKeyDictionary[History, Item] = weakref.WeakKeyDictionary()


register(PolicyInfo(
    "clear_thinking", ClearThinkingParams, ClearThinkingPolicy,
    "Anthropic clear_thinking_20251015 (context editing)",
    "drop the thinking of all but the newest N assistant turns", __name__))
