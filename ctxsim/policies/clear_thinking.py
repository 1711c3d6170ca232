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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Edit, Item, Replace, View

TAG = "thinking_cleared"


@dataclass(frozen=True)
class ClearThinkingParams:
    keep: int | Literal["all"] = field(default=1, metadata=field_doc(
        "newest assistant turns whose thinking is kept (an int >= 1, or all)"))

    def __post_init__(self) -> None:
        if self.keep != "all" and (not isinstance(self.keep, int) or self.keep < 1):
            raise ValueError("keep must be at least 1, or all")


class ClearThinkingPolicy:
    """Walks back from the newest message to where its previous decision left everything older without
    thinking (cleared, or never had any): the work per request is what changed, not the whole history."""

    name = "clear_thinking"

    def __init__(self, params: ClearThinkingParams) -> None:
        self.params = params
        self._mark: Item | None = None  # where the walk stops next time

    def start(self) -> None:
        self._mark = None

    def decide(self, view: View) -> Sequence[Edit]:
        keep = self.params.keep
        if keep == "all":
            return ()
        items = view.items
        mark = self._mark
        kept: list[Item] = []
        changes: list[Replace] = []
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            message = item.message
            if message.role == "assistant" and message.thinking and not item.pinned:
                if len(kept) < keep:
                    kept.append(item)
                else:
                    changes.append(Replace(item, replace(message, thinking=None), tags=item.tags | {TAG},
                                           cleared=item.cleared))
            if item is mark or TAG in item.tags:
                break
        if len(items):
            # Next time, stop at the oldest thinking kept now (it may have to go then), else at the newest item.
            self._mark = kept[-1] if kept else items[-1]
        if not changes:
            return ()
        return (Edit("clear_thinking", tuple(reversed(changes)),
                     f"cleared the thinking of {len(changes)} assistant turns"),)


class ClearThinkingReference:
    """`clear_thinking` from scratch: at every request, every assistant message with thinking but the
    newest `keep` loses it (pinned ones are left alone). What `ClearThinkingPolicy` must match."""

    name = "clear_thinking"

    def __init__(self, params: ClearThinkingParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        keep = self.params.keep
        if keep == "all":
            return ()
        thinking = [it for it in view.items if it.message.role == "assistant" and it.message.thinking and not it.pinned]
        changes = [Replace(item, replace(item.message, thinking=None), tags=item.tags | {TAG}, cleared=item.cleared)
                   for item in thinking[: max(0, len(thinking) - keep)]]
        if not changes:
            return ()
        return (Edit("clear_thinking", tuple(changes), f"cleared the thinking of {len(changes)} assistant turns"),)


REFERENCE = ClearThinkingReference

register(PolicyInfo(
    "clear_thinking", ClearThinkingParams, ClearThinkingPolicy,
    "Anthropic clear_thinking_20251015 (context editing)",
    "drop the thinking of all but the newest N assistant turns", __name__))
