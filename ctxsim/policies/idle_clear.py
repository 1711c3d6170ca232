"""`idle_clear`: clear old tool results after an idle gap, as Claude Code's time-based microcompact does.

Source: reference/providers-2026-update.md ("Claude Code: microcompact, time-based", from the leaked
source's `microCompact.ts` and `timeBasedMCConfig.ts`): when the gap since the last assistant message
is at least `gap_minutes` (default 60, the 1-hour cache TTL: the prompt cache is cold anyway, so
rewriting the prefix costs nothing extra), every result of a compactable tool but the newest `keep`
(default 5) becomes `[Old tool result content cleared]`. Compactable tools: FileRead, Shell, Grep, Glob,
WebSearch, WebFetch, FileEdit, FileWrite, named in transcripts Read, Bash, Grep, Glob, WebSearch,
WebFetch, Edit and Write. Which versions run it by default is not known (not seen in a transcript): the
`claude-code-microcompact` preset puts it before Claude Code's compaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import NO_TAGS, Edit, Item, Replace, View

TOOLS = ("Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write")
STUB = "[Old tool result content cleared]"


@dataclass(frozen=True)
class IdleClearParams:
    gap_minutes: float = field(default=60.0, metadata=field_doc(
        "clear when at least this many minutes passed since the last assistant message"))
    keep: int = field(default=5, metadata=field_doc("newest results of the listed tools kept"))
    tools: tuple[str, ...] = field(default=TOOLS, metadata=field_doc("the tools whose results may be cleared"))
    stub: str = field(default=STUB, metadata=field_doc("the text a cleared result becomes"))

    def __post_init__(self) -> None:
        if self.gap_minutes <= 0 or self.keep < 0:
            raise ValueError("gap_minutes must be positive and keep not negative")


class IdleClearPolicy:
    """Keeps the compactable results as they arrive (`observe`), so a request costs what arrived since the
    last one and a clearing what it clears: each result is cleared once."""

    name = "idle_clear"

    def __init__(self, params: IdleClearParams) -> None:
        self.params = params
        self._tools = set(params.tools)
        self._arrived: list[Item] = []  # tool results not yet sorted in
        self._results: list[Item] = []  # live, uncleared results of the listed tools, oldest first

    def start(self) -> None:
        self._arrived, self._results = [], []

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        if not removed:  # appended by the engine (a splice's copies are stubs or summaries)
            self._arrived.extend(item for item in added if item.message.role == "tool")

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        for item in self._arrived:
            call = view.call_of(item.message.tool_call_id)
            if (call.name if call is not None else item.message.name) in self._tools:
                self._results.append(item)
        self._arrived = []
        if view.ts_s is None:
            return ()
        items = view.items
        last = next((i for i in range(len(items) - 1, -1, -1) if items[i].message.role == "assistant"), None)
        answered = items[last].message.ts_s if last is not None and items[last].message.ts else None
        if answered is None or view.ts_s - answered < p.gap_minutes * 60:
            return ()
        live = [item for item in self._results if item.alive and not item.cleared and not item.pinned]
        old = live[:len(live) - p.keep] if p.keep else live
        self._results = live[len(old):]
        changes = [Replace(item, item.message.with_content(p.stub), tags=NO_TAGS) for item in old]
        if not changes:
            return ()
        minutes = (view.ts_s - answered) / 60
        return (Edit("clear", tuple(changes), f"cleared {len(changes)} old tool results after {minutes:.0f} idle "
                                              "minutes"),)


register(PolicyInfo(
    "idle_clear", IdleClearParams, IdleClearPolicy,
    "Claude Code time-based microcompact (leaked microCompact.ts; providers-2026-update.md)",
    "after an idle gap (cache cold) clear all but the newest tool results", __name__))
