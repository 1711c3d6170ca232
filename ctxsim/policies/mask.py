"""`mask`: observation masking, JetBrains' "Complexity Trap" baseline.

Source: Lindenbauer et al., "The Complexity Trap" (arXiv 2508.21433;
reference/providers-and-products.md D.1): the tool outputs of the newest M = 10
turns stay verbatim and every older one is replaced by a short placeholder; the
agent's own messages and the calls are kept. The paper ran it in SWE-agent, whose
history processor writes "Old environment output" placeholders; OpenHands'
`ObservationMaskingCondenser` is the same idea counted in events (B.8).

A turn is an assistant message that calls tools. The window slides every turn, so
each request masks one more output and the cached prefix breaks at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import NO_TAGS, Edit, Item, Replace, View
from ctxsim.policies.truncate import line_count

DEFAULT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"

_alive = attrgetter("alive")


def _all_alive(holders: list[Item | None]) -> bool:
    """Every one of the holders is there and alive."""
    return None not in holders and all(map(_alive, holders))


@dataclass(frozen=True)
class MaskParams:
    keep: int = field(default=10, metadata=field_doc(
        "newest tool-calling turns whose outputs stay verbatim (the paper's M = 10)"))
    placeholder: str = field(default=DEFAULT_PLACEHOLDER, metadata=field_doc(
        "text that replaces an older output; fields {lines} {tokens} {tool}"))
    exclude_tools: tuple[str, ...] = field(default=(), metadata=field_doc("tools whose outputs are never masked"))

    def __post_init__(self) -> None:
        if self.keep < 0:
            raise ValueError("keep must not be negative")
        try:
            self.placeholder.format(lines=0, tokens=0, tool="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"placeholder may use only {{lines}} {{tokens}} {{tool}}: {exc}") from None


class MaskPolicy:
    """Keeps, per session, the turns that are not yet old, learning new ones from `observe`.

    A turn is identified by its call ids, so a copy of its assistant message another stage spliced
    in (thinking cleared, inputs cleared) is still the same turn, and its outputs are looked up by
    call id, so a copy of one (a truncated output) is what gets masked. Each request walks only the
    newest `keep` turns and what arrived since the last request; a turn's outputs are judged once,
    when it becomes old (an output that arrives after that, as it arrives). Nothing walks the whole
    history: a request costs O(keep + new messages + outputs masked). An output judged then and not
    masked (pinned, excluded, already a stub, or equal to its placeholder) is not judged again: no
    stage turns a stub or a pinned message back into a plain one.
    """

    name = "mask"

    def __init__(self, params: MaskParams) -> None:
        self.params = params
        self.start()

    def start(self) -> None:
        self._recent: list[str] = []  # first call id of each turn not yet old, oldest first
        self._old: set[str] = set()  # call ids of the turns already old (their outputs were judged)
        self._late: list[str] = []  # call ids of outputs that arrived after their turn was judged old

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        if removed:
            return  # a splice: its items stand for ones already seen (or are summaries, markers)
        for item in added:
            if item.inserted:
                continue  # a marker a stage put in, not a message of the session
            m = item.message
            if m.role == "assistant" and m.tool_calls:
                self._recent.append(m.tool_calls[0].id)
            elif m.role == "tool" and m.tool_call_id in self._old:
                self._late.append(m.tool_call_id)

    @staticmethod
    def _turn(view: View, call_id: str) -> Item | None:
        """The live assistant message holding the turn's calls (whatever stage last rewrote it)."""
        holder = view.holder_of(call_id)
        return holder if holder is not None and holder.alive else None

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        recent = self._recent
        holder_of = view.holder_of
        keep = p.keep
        # The newest `keep` live turns stay; every turn before them in `recent` has just become old.
        j = len(recent) - keep
        if keep and j >= 0 and _all_alive(list(map(holder_of, recent[j:]))):  # as usual: the newest are live
            live, dead = keep, False
        else:
            j, live, dead = len(recent), 0, False
            while j > 0 and live < keep:
                j -= 1
                if self._turn(view, recent[j]) is not None:
                    live += 1
                else:
                    dead = True
        kept = [first for first in recent[j:] if self._turn(view, first) is not None] if dead else recent[j:]
        self._recent = kept
        if live < keep:  # at most `keep` turns in the context: none is old
            return ()
        if not j and not self._late:  # no turn has just become old, no output arrived late
            return ()
        results: list[Item] = []
        result_of = view.result_of
        for first in recent[:j]:
            holder = self._turn(view, first)
            if holder is None:
                continue
            for call in holder.message.tool_calls:
                self._old.add(call.id)
                result = result_of(call.id)
                if result is not None and result.alive:
                    results.append(result)
        if self._late:
            boundary = self._turn(view, kept[0]).pos if kept else len(view)  # type: ignore[union-attr]
            waiting = []
            for call_id in self._late:
                holder = view.holder_of(call_id)
                result = view.result_of(call_id)
                if holder is None or not holder.alive or result is None or not result.alive:
                    continue
                if holder.pos < boundary:
                    results.append(result)
                else:
                    waiting.append(call_id)  # its turn is among the newest again (others were dropped)
            self._late = waiting
        if len(results) > 1:
            results.sort(key=_position)
        masks = []
        for item in results:
            if item.cleared or item.pinned:
                continue
            m = item.message
            if m.name in p.exclude_tools:
                continue
            text = placeholder(p, item)
            if text == m.content:
                continue
            masks.append(Replace(item, m.with_content(text), tags=NO_TAGS))
        if not masks:
            return ()
        return (Edit("mask", tuple(masks), f"masked {len(masks)} tool outputs older than {p.keep} turns"),)


def placeholder(p: MaskParams, item: Item) -> str:
    """The text that stands for an old tool output."""
    m = item.message
    return p.placeholder.format(lines=line_count(m.content), tokens=item.tokens, tool=m.name or "tool")


def _position(item: Item) -> int:
    return item.pos


class MaskReference:
    """`mask` from scratch: at every request, the tool outputs of every turn before the newest `keep`
    (a turn: an assistant message that calls tools) become placeholders. No state; what `MaskPolicy`
    must match, edit for edit."""

    name = "mask"

    def __init__(self, params: MaskParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        turns = [item for item in view.items if item.message.role == "assistant" and item.message.tool_calls]
        if len(turns) <= p.keep:
            return ()
        boundary = turns[-p.keep].pos if p.keep else len(view)
        masks = []
        for item in view.items:
            m = item.message
            holder = view.holder_of(m.tool_call_id or "") if m.role == "tool" else None
            if holder is None or holder.pos >= boundary or item.cleared or item.pinned or m.name in p.exclude_tools:
                continue
            text = placeholder(p, item)
            if text != m.content:
                masks.append(Replace(item, m.with_content(text), tags=NO_TAGS))
        if not masks:
            return ()
        return (Edit("mask", tuple(masks), f"masked {len(masks)} tool outputs older than {p.keep} turns"),)


REFERENCE = MaskReference

register(PolicyInfo(
    "mask", MaskParams, MaskPolicy,
    "JetBrains 'The Complexity Trap' observation masking (M=10); SWE-agent LastNObservations",
    "replace tool outputs older than the newest M turns with a placeholder", __name__,
    space={"keep": (1, 2, 3, 5, 8, 10, 15, 20, 30)}, weight=2.3))
