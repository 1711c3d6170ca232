"""The live message history the engine replays, and the edits policies return.

The history keeps running sums (tokens and content blocks up to each message)
so that a request's size, and the size of any prefix, is known without
walking the history. An edit leaves the sums before it as they are and marks
the rest stale; they are recomputed, from there on, only when a prefix past the
edit is read (a policy that evicts at every request and a cache model that
reads only prefixes before the edit never pay for it). The totals stay current.
Policies never mutate the history: they return `Edit`s, and the engine applies
them here, checking the invariants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any, NamedTuple, cast

from ctxsim.composition import HEAD, category
from ctxsim.errors import CtxsimError
from ctxsim.model import Message, ToolCall


class PolicyViolation(CtxsimError):
    """A policy asked for an edit that breaks an invariant."""


@dataclass(slots=True, eq=False)
class Item:
    """One message as it stands in the live history."""

    message: Message
    tokens: int
    blocks: int
    origin: int  # index in the session's messages, -1 for text a policy inserted
    pinned: bool = False
    cleared: bool = False  # replaced by a stub
    inserted: bool = False  # a summary or marker a policy wrote
    alive: bool = True
    tags: frozenset[str] = frozenset()
    pos: int = -1  # its index in the live history, kept current by the History (O(1) look-ups)


class Splice(NamedTuple):
    """Replace history[start:end] with `new` (empty `new` drops the span). A NamedTuple: the engine makes
    one per item an edit names, and a tuple is made in a third of a frozen dataclass's time."""

    start: int
    end: int
    new: tuple[Item, ...] = ()


@dataclass(frozen=True, slots=True)
class SideCall:
    """A model request a policy makes for itself (e.g. to summarise), metered as its own row."""

    kind: str  # e.g. "summarize"
    input_tokens: int  # what it read: the summarised text plus instructions
    output_tokens: int  # what it wrote: the summary
    note: str = ""
    cache_read_tokens: int = 0  # of input_tokens, read from the prompt cache (a call that shares the prompt's prefix)
    cache_write_tokens: int = 0  # of input_tokens, written to the cache (5-minute)


@dataclass(frozen=True, slots=True)
class Edit:
    """One logical operation of a policy, logged as one event.

    `splices` index the history as it stood when the policy decided; they
    must not overlap. `calls` are the model requests the operation needed.
    """

    kind: str  # e.g. "clear", "compact", "truncate"
    splices: tuple[Splice, ...]
    note: str = ""
    calls: tuple[SideCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A policy's change to a message as it is appended (e.g. truncating a tool output)."""

    message: Message
    kind: str
    note: str = ""


@dataclass(slots=True)
class Applied:
    kind: str
    note: str
    messages: int
    tokens_before: int
    tokens_after: int
    first_index: int
    # each splice as (the items it removed, the items it put in), in history order: what observers are told
    spliced: list[tuple[list[Item], tuple[Item, ...]]]


by_position = attrgetter("pos")  # sort key: an item's place in the live history
_start = attrgetter("start")
_SPLICED_IN_PLACE = 8  # edits of more splices rebuild the history past the first at once


def _pinned(policy: str, item: Item) -> PolicyViolation:
    return PolicyViolation(f"policy {policy}: edit touches pinned message (session index {item.origin})")



class History:
    def __init__(self, base_tokens: int, sizer: Callable[[Message], int], blocker: Callable[[Message], int]):
        self.base_tokens = base_tokens  # tools + system: the fixed head of every request
        self.items: list[Item] = []
        self._cum_tokens: list[int] = [0]  # _cum_tokens[i] = tokens of items[:i] for i <= _summed (the list ends there)
        self._cum_blocks: list[int] = [0]
        self._summed = 0  # the sums are current up to this boundary (all of them when it is len(items))
        self._total_tokens = 0  # tokens and blocks of all the items: always current
        self._total_blocks = 0
        # tokens and blocks of each item, beside `items`: the sums are rebuilt from these in C
        self._tokens: list[int] = []
        self._nblocks: list[int] = []
        self._size = sizer
        self._blocks = blocker
        self._holder: dict[str, Item] = {}  # tool call id -> assistant item holding it
        self._call: dict[str, ToolCall] = {}  # tool call id -> the call, as its holder has it
        self._result: dict[str, Item] = {}  # tool call id -> its result item
        # Tokens of the prompt by column (ctxsim.composition), the head (tools + system) included.
        self.composition: dict[str, int] = {HEAD: base_tokens}
        # What the stages of the session share (View.shared): made with the history, dropped with it.
        self.shared: dict[str, Any] = {}
        # What a policy's View reads, bound once: the items, the result and the holder of a call id.
        self.reads = self.bind_reads()

    def bind_reads(self) -> tuple[list[Item], Callable[[str], Item | None], Callable[[str], Item | None],
                                  Callable[[str | None], ToolCall | None]]:
        """The items and the look-ups by call id a View reads, as bound methods (`_call` holds exactly the
        ids `_holder` does, so the call of an id no item holds, or of None, is not found)."""
        call_of = cast("Callable[[str | None], ToolCall | None]", self._call.get)
        return self.items, self._result.get, self._holder.get, call_of

    # ------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.items)

    @property
    def message_tokens(self) -> int:
        return self._total_tokens

    @property
    def prompt_tokens(self) -> int:
        return self.base_tokens + self._total_tokens

    def prefix_tokens(self, boundary: int) -> int:
        """Prompt tokens up to (not including) item `boundary`, tools and system included."""
        if boundary > self._summed:
            if boundary == len(self.items):
                return self.base_tokens + self._total_tokens
            self._resum()
        return self.base_tokens + self._cum_tokens[boundary]

    def prefix_blocks(self, boundary: int) -> int:
        if boundary > self._summed:
            if boundary == len(self.items):
                return self._total_blocks
            self._resum()
        return self._cum_blocks[boundary]

    def holder_of(self, call_id: str) -> Item | None:
        return self._holder.get(call_id)

    def result_of(self, call_id: str) -> Item | None:
        return self._result.get(call_id)

    def call_of(self, call_id: str | None) -> ToolCall | None:
        """The call with this id, as the message holding it in the history has it (None when none does)."""
        return self._call.get(call_id or "")  # `_call` holds exactly the ids `_holder` does (bind_reads)

    # ------------------------------------------------------------ building
    def item(self, message: Message, origin: int = -1, tokens: int | None = None, **flags: object) -> Item:
        size = self._size(message) if tokens is None else tokens
        return Item(message, size, self._blocks(message), origin, **flags)  # type: ignore[arg-type]

    def made(self, message: Message, origin: int, tokens: int | None, pinned: bool, cleared: bool, inserted: bool,
             tags: frozenset[str]) -> Item:
        """`item` with every flag given, in Item's order (the engine's, once per item an edit puts in)."""
        return Item(message, self._size(message) if tokens is None else tokens, self._blocks(message), origin,
                    pinned, cleared, inserted, True, tags)

    def append(self, item: Item, column: str | None = None) -> None:
        """Add `item` at the end; `column` is its composition column when the caller knows it."""
        items = self.items
        item.pos = len(items)
        items.append(item)
        tokens = item.tokens
        blocks = item.blocks
        self._tokens.append(tokens)
        self._nblocks.append(blocks)
        self._total_tokens += tokens
        self._total_blocks += blocks
        if self._summed == item.pos:  # the sums are current: extend them (else they wait for a read)
            self._summed += 1
            self._cum_tokens.append(self._total_tokens)
            self._cum_blocks.append(self._total_blocks)
        message = item.message
        if message.tool_calls or message.role == "tool":  # what _index looks at
            self._index(item)
        key = column or category(item)
        comp = self.composition
        comp[key] = comp.get(key, 0) + tokens

    def _index(self, item: Item) -> None:
        for call in reversed(item.message.tool_calls):  # the first of two calls with one id wins, as in a scan
            self._holder[call.id] = item
            self._call[call.id] = call
        if item.message.role == "tool" and item.message.tool_call_id:
            self._result[item.message.tool_call_id] = item

    # ------------------------------------------------------------ editing
    def apply(self, edit: Edit, policy: str) -> Applied:
        """Apply one edit; returns what it did. Raises PolicyViolation on a bad edit."""
        items = self.items
        n = len(items)
        splices: Sequence[Splice] = edit.splices
        if len(splices) > 1:
            splices = sorted(splices, key=_start, reverse=True)
        last_start = n + 1
        for s in splices:
            if not 0 <= s.start <= s.end <= n:
                raise PolicyViolation(f"policy {policy}: edit span {s.start}:{s.end} outside the history")
            if s.end > last_start:
                raise PolicyViolation(f"policy {policy}: overlapping edit spans")
            last_start = s.start
        before = self.base_tokens + self._total_tokens
        removed: list[Item] = []
        added: list[Item] = []
        spliced: list[tuple[list[Item], tuple[Item, ...]]] = []
        in_place = True  # item for item (stubs): nothing moves
        touched = 0
        for start, end, new in splices:  # what each splice takes out, checked before anything changes (last first)
            old = items[start:end]
            for item in old:
                if item.pinned:
                    raise _pinned(policy, item)
            spliced.append((old, new))
            removed += old
            added += new
            if len(new) != end - start:
                in_place = False
            touched += max(end - start, len(new))
        tokens, nblocks = self._tokens, self._nblocks
        if len(splices) <= _SPLICED_IN_PLACE:
            for start, end, new in splices:
                items[start:end] = new
                if not new:
                    del tokens[start:end]
                    del nblocks[start:end]
                else:
                    tokens[start:end] = [item.tokens for item in new]
                    nblocks[start:end] = [item.blocks for item in new]
        else:  # many splices (a compaction's summaries): the history past the first is rebuilt once, not per splice
            first_start = splices[-1].start
            tail: list[Item] = []
            cursor = first_start
            for start, end, new in reversed(splices):  # in order
                tail += items[cursor:start]
                tail += new
                cursor = end
            tail += items[cursor:]
            items[first_start:] = tail
            tokens[first_start:] = [item.tokens for item in tail]
            nblocks[first_start:] = [item.blocks for item in tail]
        comp = self.composition
        less_tokens = less_blocks = 0
        for item in removed:
            item.alive = False
            comp[category(item)] -= item.tokens
            less_tokens += item.tokens
            less_blocks += item.blocks
        first = splices[-1].start if splices else len(items)  # sorted by start, last first
        more_tokens = more_blocks = 0
        index = self._index
        for item in added:
            item.alive = True
            if item.message.tool_calls or item.message.role == "tool":  # what _index looks at
                index(item)
            key = category(item)
            comp[key] = comp.get(key, 0) + item.tokens
            more_tokens += item.tokens
            more_blocks += item.blocks
        self._check_orphans(removed, added, policy)
        if in_place:
            for s in splices:
                for pos, item in enumerate(s.new, s.start):
                    item.pos = pos
        else:
            for pos, item in enumerate(items[first:], first):
                item.pos = pos
        self._total_tokens += more_tokens - less_tokens
        self._total_blocks += more_blocks - less_blocks
        if first < self._summed:  # the sums past the edit are stale: dropped until a read needs them
            self._summed = first
            del self._cum_tokens[first + 1:]
            del self._cum_blocks[first + 1:]
        spliced.reverse()  # applied last first: told first first
        return Applied(edit.kind, edit.note, touched, before, self.base_tokens + self._total_tokens, first, spliced)

    def _check_orphans(self, removed: Sequence[Item], added: Sequence[Item], policy: str) -> None:
        for item in removed:
            message = item.message
            for call in message.tool_calls:
                holder = self._holder.get(call.id)
                if holder is item:
                    del self._holder[call.id]
                    del self._call[call.id]
                    result = self._result.get(call.id)
                    if result is not None and result.alive:
                        raise PolicyViolation(
                            f"policy {policy}: removing the call {call.id!r} would orphan its tool result"
                        )
            if message.role == "tool" and message.tool_call_id and self._result.get(message.tool_call_id) is item:
                del self._result[message.tool_call_id]
        # A result a policy wrote (a stub, a truncation) must still have its call.
        for item in added:
            call_id = item.message.tool_call_id
            if item.message.role == "tool" and (call_id is None or call_id not in self._holder):
                raise PolicyViolation(f"policy {policy}: tool result {call_id!r} left without its call")

    def _resum(self) -> None:
        """Bring the stale sums up to date, from where the first edit since the last read began."""
        start = self._summed
        self._cum_tokens[start:] = accumulate(self._tokens[start:], initial=self._cum_tokens[start])
        self._cum_blocks[start:] = accumulate(self._nblocks[start:], initial=self._cum_blocks[start])
        self._summed = len(self.items)
