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

from ctxsim.composition import category
from ctxsim.history import Edit, History, Item, Splice
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
    head = list(range(len(items)))
    for i, item in enumerate(items):
        for call in item.message.tool_calls:
            result = history.result_of(call.id)
            if result is not None and result.alive and result.pos > i:
                head[result.pos] = i
    return head


def unit_head(history: History, index: int) -> int:
    """`units(history)[index]`, without computing the units of the whole history."""
    item = history.items[index]
    call_id = item.message.tool_call_id
    if item.message.role == "tool" and call_id:
        holder = history.holder_of(call_id)
        if holder is not None and holder.alive and holder.pos < index and history.result_of(call_id) is item:
            return holder.pos
    return index


def unit_members(history: History, head: int) -> list[int]:
    """The indices of the unit whose head is at `head`, in order."""
    out = [head]
    for call in history.items[head].message.tool_calls:
        result = history.result_of(call.id)
        if result is not None and result.alive and result.pos > head:
            out.append(result.pos)
    return sorted(out)


def protected_units(history: History, head: Sequence[int]) -> set[int]:
    """Units holding a pinned message: never dropped."""
    return {head[i] for i, item in enumerate(history.items) if item.pinned}


def close_drop(history: History, drop: Iterable[int], snap: Literal["drop", "keep"],
               head: Sequence[int] | None = None) -> list[int]:
    """Indices to drop so that no unit is split and no pinned unit is touched.

    `snap="drop"`: a unit goes when any of its messages was chosen (cuts snap
    outward, keeping less). `snap="keep"`: a unit goes only when all of them were.
    Without `head`, only the units of the chosen indices are looked at.
    """
    chosen = set(drop)
    if head is None:
        items = history.items
        out: list[int] = []
        for h in sorted({unit_head(history, i) for i in chosen}):
            members = unit_members(history, h)
            if any(items[i].pinned for i in members):
                continue
            if snap == "drop" or all(i in chosen for i in members):
                out.extend(members)
        return sorted(out)
    safe = protected_units(history, head)
    groups: dict[int, list[int]] = {}
    for i, h in enumerate(head):
        groups.setdefault(h, []).append(i)
    out = []
    for h, idx in groups.items():
        if h in safe:
            continue
        hit = [i in chosen for i in idx]
        if (any(hit) if snap == "drop" else all(hit)):
            out.extend(idx)
    return sorted(out)


def runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted indices -> [start, end) runs of consecutive ones."""
    out: list[tuple[int, int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def replace_with(indices: Iterable[int], new: Item) -> tuple[Splice, ...]:
    """Splices that drop `indices` and put `new` where the first of them was."""
    spans = runs(indices)
    return tuple(Splice(s, e, (new,) if k == 0 else ()) for k, (s, e) in enumerate(spans))


def drop_splices(indices: Iterable[int]) -> tuple[Splice, ...]:
    """Contiguous runs of indices as dropping splices."""
    return tuple(Splice(start, end) for start, end in runs(set(indices)))


def head_tail_drop(history: History, keep_first: int, keep_last: int) -> list[int]:
    """Drop everything but the first `keep_first` and the newest `keep_last`, unit-safe."""
    n = len(history)
    middle = range(min(keep_first, n), max(n - keep_last, min(keep_first, n)))
    return close_drop(history, middle, "drop")


class EditWatch:
    """Whether a session's history is still as a policy's own edits left it.

    A policy that keeps state between requests calls `expect` once it has decided (with the edits
    it returns, which the engine applies as they are), and `changes` before its next decision.
    `changes` reads what was appended meanwhile (from `history.log`, O(new)) and what other stages
    replaced one for one (stubs, masks, thinking cleared: from the history's journal, O(edits
    since)), and checks the number of messages, their tokens and the tokens by composition column
    against the history. It returns the appended items and the replacements, or None when the
    history is new to the policy or another stage dropped, inserted or otherwise changed
    messages: the policy then starts over from the history. A copy of a message with the same
    size and column spliced in some other way (e.g. the pinned copy `notes` makes) does not show.
    """

    def __init__(self) -> None:
        self._history: History | None = None
        self._seen = 0
        self._journal = 0  # the journal position after the policy's own edits
        self._expect: tuple[int, int, dict[str, int]] | None = None

    def changes(self, history: History) -> tuple[list[Item], dict[int, tuple[Item, Item]]] | None:
        """(the items appended since, each as it stands now; {id(old): (old, new)} for the items
        other stages replaced one for one), or None (start over). An item appended and then
        replaced is given as its replacement."""
        expect, self._expect = self._expect, None
        if history is not self._history or expect is None:
            self._history, self._seen = history, len(history.log)
            return None
        log = history.log
        new = log[self._seen:]
        self._seen = len(log)
        count, tokens, comp = expect
        entries = history.journal_from(self._journal)
        if entries is None:
            return None
        replaced: dict[int, tuple[Item, Item]] = {}  # id(item replaced first) -> (it, its latest replacement)
        latest: dict[int, int] = {}  # id(a replacement) -> id(the item it stands for)
        for removed, added in entries:
            if len(removed) != len(added):
                return None
            for old, item in zip(removed, added):
                first = latest.pop(id(old), id(old))
                replaced[first] = (replaced[first][0] if first in replaced else old, item)
                latest[id(item)] = first
                tokens += item.tokens - old.tokens
                key = category(old)
                comp[key] = comp.get(key, 0) - old.tokens
                key = category(item)
                comp[key] = comp.get(key, 0) + item.tokens
        appended = []
        for item in new:
            tokens += item.tokens
            key = category(item)
            comp[key] = comp.get(key, 0) + item.tokens
            if id(item) in replaced:  # appended, then replaced
                item = replaced.pop(id(item))[1]
            elif not item.alive:
                return None
            appended.append(item)
        if len(history) != count + len(new) or history.message_tokens != tokens or history.composition != comp:
            return None
        return appended, replaced

    def expect(self, history: History, splices: Sequence[Splice] = ()) -> None:
        """The history will be as it is now, with `splices` applied."""
        count, tokens, comp = len(history), history.message_tokens, dict(history.composition)
        items = history.items
        for s in splices:
            for item in items[s.start:s.end]:
                comp[category(item)] -= item.tokens
                tokens -= item.tokens
                count -= 1
            for item in s.new:
                key = category(item)
                comp[key] = comp.get(key, 0) + item.tokens
                tokens += item.tokens
                count += 1
        self._history, self._seen, self._expect = history, len(history.log), (count, tokens, comp)
        self._journal = history.journal_end + len(splices)  # its own splices are journalled next
        history.follow(self, self._journal)


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
    relative_cost = 2.1  # replay time against `none`: see replay_weight

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
