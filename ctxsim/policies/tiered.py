"""`tiered`: yoagent's three-level compaction with the adaptive headroom target.

Source: yoagent `src/context.rs` 0.15-0.21 (`compact_messages`, `effective_target_ratio`)
and the replay loop of `tests/context_cache_test.rs` (reference/yoagent-context.md
sections 2.3-2.5 and 3.2). With `budget = max_context_tokens - system_prompt_tokens`
and the message history's estimated size `total`:

- `total <= budget`: nothing happens;
- level 1: every tool result is cut to its tool's line cap (head+tail, idempotent);
  done if that brings `total` to the budget;
- level 2: every assistant message older than the last `keep_recent` messages (the
  boundary pulled back to a turn start) becomes a user message
  "[Summary] <its text, if at most 200 bytes>" and its tool results are dropped;
  user messages stay. Done if `total` reaches the target;
- level 3: the smallest middle span after the first `keep_first` messages is
  replaced by a constant marker, so that `total` reaches the target, never
  cutting into the last `keep_recent` messages;
- if that still does not fit (or there is no middle to cut), the longest tail
  that fits the target is kept behind the marker: yoagent's `keep_within_budget`,
  which can drop the task itself. ctxsim logs that path as a "cliff" event.

The target is `floor(budget * ratio)` with f32 arithmetic, as yoagent computes it
(0.7 as f32 gives 68,879 for a 98,400 budget). The ratio adapts to the session:
`min((budget - turns * growth) / budget, compact_target_ratio)`, floored at
`min_headroom_ratio` (0.15 in 0.15-0.21, 0.30 since 0.22), where growth is the mean
over the session of how much the history grew between one compaction point and
the next (after the previous compaction). The growth state lives in the policy
and restarts with every session.

`compact_at` chooses when compaction runs: `request` (before every model request,
as yoagent's agent loop does) or `turn_end` (on the history up to the end of the
last turn, leaving user messages that arrived since for the next pass; this is
what yoagent's replay test measures, where compaction runs right after a turn's
tool results are appended and before the next turn's user message).

Pinned messages (and the calls of pinned results) are never summarised or dropped;
yoagent has no such notion, so this only matters for traces with pins.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import Literal, NamedTuple

from ctxsim.model import Message
from ctxsim.model import written as new_message
from ctxsim.params import TRIGGERS, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies._spans import picked, unit_head, unit_holds_pinned
from ctxsim.policies.base import NO_TAGS, Change, Drop, Edit, Insert, Item, Replace, Summarize, View
from ctxsim.policies.truncate import LineCaps

COMPACTION_MARKER = "[Context compacted: earlier messages removed to fit the context window]"
SUMMARY_TEXT_BYTES = 200  # longer assistant texts are left out of a level-2 summary
MIN_RATIO = 0.05  # compaction_target clamps the ratio to [0.05, 1.0]


def f32(x: float) -> float:
    """Round a double to the nearest IEEE single, as a Rust `as f32` cast does."""
    try:
        single: float = struct.unpack("f", struct.pack("f", x))[0]
        return single
    except OverflowError:
        return math.copysign(math.inf, x)


@dataclass(frozen=True)
class TieredParams:
    max_context_tokens: int | None = field(default=None, metadata=field_doc(
        "compaction budget before the reserve; none: 80% of the window (yoagent from_context_window)"))
    system_prompt_tokens: int = field(default=4_000, metadata=field_doc(
        "reserved for the system prompt: budget = max_context_tokens - this"))
    count_prefix: bool = field(default=False, metadata=field_doc(
        "reserve the counted tools+system instead of system_prompt_tokens (the agent loop's calibration)"))
    keep_recent: int = field(default=10, metadata=field_doc("messages at the tail never summarised or dropped"))
    keep_first: int = field(default=2, metadata=field_doc("messages kept at the head by level 3"))
    tool_output_max_lines: int = field(default=200, metadata=field_doc("level-1 line cap on tool output"))
    exempt_tools: tuple[str, ...] = field(default=("read_file",), metadata=field_doc(
        "tools level 1 never truncates (yoagent overrides read_file to no cap)"))
    max_lines_overrides: tuple[str, ...] = field(default=(), metadata=field_doc(
        "per-tool caps as TOOL=LINES or TOOL=none"))
    compact_target_ratio: float = field(default=0.7, metadata=field_doc(
        "lossy levels reduce to budget x this (an f32); a ceiling when headroom is on"))
    compact_headroom_turns: int | None = field(default=30, metadata=field_doc(
        "leave room for this many turns at the observed growth; none or 0: fixed ratio"))
    min_headroom_ratio: float = field(default=0.15, metadata=field_doc(
        "floor of the adaptive ratio (yoagent MIN_HEADROOM_RATIO: 0.15, 0.30 since 0.22)"))
    compact_at: Literal["request", "turn_end"] = field(default="request", metadata=field_doc(
        "request: before every request (agent loop); turn_end: up to the last turn's end (replay test)"))

    def __post_init__(self) -> None:
        LineCaps.of(self.tool_output_max_lines, self.exempt_tools, self.max_lines_overrides)
        if self.max_context_tokens is not None and self.max_context_tokens < 0:
            raise ValueError("max_context_tokens must not be negative")
        if min(self.system_prompt_tokens, self.keep_recent, self.keep_first) < 0:
            raise ValueError("system_prompt_tokens, keep_recent and keep_first must not be negative")
        if self.compact_headroom_turns is not None and self.compact_headroom_turns < 0:
            raise ValueError("compact_headroom_turns must not be negative")
        if not 0 <= self.min_headroom_ratio <= 1:
            raise ValueError("min_headroom_ratio must be in [0, 1]")


@dataclass(slots=True)
class Written:
    """A message a compaction writes: a level-1 cut (`kind` "cut") or a level-2 summary ("summary") of
    the history item at `source`, or the level-3 marker ("marker", no source)."""

    message: Message
    tokens: int
    kind: str
    source: int | None = None
    pinned = False  # never (a class attribute: read like an Item's)


class Entry(NamedTuple):
    """A message of a working copy of the history.

    `at` is the history item it stands for, its position (None for a summary or marker a
    compaction wrote); `same` says the item is unchanged (a truncated result is not).
    Never changed once made: a tuple, which a compaction makes (one per message it
    looks at) in C, `_entries`.
    """

    at: int | None
    item: Item | Written
    same: bool = True

    @property
    def message(self) -> Message:
        return self.item.message

    @property
    def tokens(self) -> int:
        return self.item.tokens


_summary = partial(tuple.__new__, Summarize)  # Summarize((items, message, call, tokens, tags, origin))
_entry = partial(tuple.__new__, Entry)  # Entry((at, item, same)) without the NamedTuple's own __new__
_entry_tokens = attrgetter("item.tokens")


def _entries(items: Sequence[Item], start: int) -> list[Entry]:
    """Entries for `items`, the history's from `start` on, unchanged."""
    return list(map(_entry, zip(range(start, start + len(items)), items, repeat(True))))


def _is_result(e: Entry) -> bool:
    return e.message.role == "tool"


def _opens_calls(e: Entry) -> bool:
    return e.message.role == "assistant" and bool(e.message.tool_calls)


class _Seq:
    """A working copy of history[:end]: runs of unchanged history items and lists of entries, in order.

    Length, tokens before a position and slicing cost O(parts) (a run of unchanged items is one part,
    its tokens read from the history's running sums), so a long unchanged prefix costs nothing.
    """

    def __init__(self, view: View, parts: Sequence[tuple[int, int] | list[Entry]]) -> None:
        self.view = view
        self.parts: list[tuple[int, int] | list[Entry]] = []
        self._starts = [0]  # position of each part
        self._tokens = [0]  # tokens before each part
        self._inner: dict[int, list[int]] = {}  # part number -> running tokens within a list part
        for given in parts:
            part = given
            if isinstance(part, tuple):
                a, b = part
                if a >= b:
                    continue
                last = self.parts[-1] if self.parts else None
                if isinstance(last, tuple) and last[1] == a:
                    a = last[0]  # runs that meet are one run
                    self.parts.pop()
                    self._starts.pop()
                    self._tokens.pop()
                size, tokens = b - a, view.prefix_tokens(b) - view.prefix_tokens(a)
                part = (a, b)
            else:
                if not part:
                    continue
                size, tokens = len(part), sum(map(_entry_tokens, part))
            self.parts.append(part)
            self._starts.append(self._starts[-1] + size)
            self._tokens.append(self._tokens[-1] + tokens)

    def __len__(self) -> int:
        return self._starts[-1]

    @property
    def total(self) -> int:
        return self._tokens[-1]

    def _part(self, k: int) -> int:
        return bisect_right(self._starts, k) - 1

    def __getitem__(self, k: int) -> Entry:
        p = self._part(k)
        part, offset = self.parts[p], k - self._starts[p]
        if isinstance(part, tuple):
            index = part[0] + offset
            return Entry(index, self.view.items[index])
        return part[offset]

    def tokens_before(self, k: int) -> int:
        if k >= len(self):
            return self.total
        p = self._part(k)
        part, offset = self.parts[p], k - self._starts[p]
        if isinstance(part, tuple):
            inside = self.view.prefix_tokens(part[0] + offset) - self.view.prefix_tokens(part[0])
        else:
            sums = self._inner.get(p)
            if sums is None:
                sums = self._inner[p] = [0]
                for e in part:
                    sums.append(sums[-1] + e.tokens)
            inside = sums[offset]
        return self._tokens[p] + inside

    def slice(self, a: int, b: int) -> list[tuple[int, int] | list[Entry]]:
        """The parts holding positions [a, b)."""
        out: list[tuple[int, int] | list[Entry]] = []
        b = min(b, len(self))
        if a >= b:
            return out
        for p in range(self._part(a), len(self.parts)):
            start = self._starts[p]
            if start >= b:
                break
            part = self.parts[p]
            lo, hi = max(a, start) - start, min(b, self._starts[p + 1]) - start
            out.append((part[0] + lo, part[0] + hi) if isinstance(part, tuple) else part[lo:hi])
        return out

    def entries(self, a: int, b: int) -> Iterator[Entry]:
        for part in self.slice(a, b):
            if isinstance(part, tuple):
                items = self.view.items
                for index in range(*part):
                    yield Entry(index, items[index])
            else:
                yield from part

    def spans(self, end: int) -> list[tuple[int, int, tuple[Written, ...]]]:
        """What turns history[:end] into this copy: (start, end, what is written there) for each
        span of the history that changes (unchanged items keep their places)."""
        out: list[tuple[int, int, tuple[Written, ...]]] = []
        cursor = 0  # next history index not yet accounted for
        pending: list[Written] = []
        for part in self.parts:
            if isinstance(part, tuple):  # a run of unchanged items, like entries part[0] .. part[1]-1
                if part[0] > cursor or pending:
                    out.append((cursor, part[0], tuple(pending)))
                    pending = []
                cursor = part[1]
                continue
            for e in part:
                if e.at is None or not e.same:
                    pending.append(e.item)  # type: ignore[arg-type]
                    continue
                if e.at > cursor or pending:
                    out.append((cursor, e.at, tuple(pending)))
                    pending = []
                cursor = e.at + 1
        if cursor < end or pending:
            out.append((cursor, end, tuple(pending)))
        return out


def changes_of(view: View, spans: Sequence[tuple[int, int, tuple[Written, ...]]]) -> tuple[Change, ...]:
    """The spans `_Seq.spans` gives, as edits naming items: a cut result is replaced by its cut; a
    summary takes the place of its assistant message and of what the span drops after it, up to the
    next message written (one splice a summary); the marker takes the place of what is dropped from
    where it stands to the next message written; what is left is dropped."""
    items = view.items
    out: list[Change] = []
    drop: list[int] = []
    for start, end, written in spans:
        cursor = start
        # upto[k]: where the next message written after the k-th one stands (its source), else the span's end
        upto = [end] * len(written)
        following = end
        for k in range(len(written) - 1, -1, -1):
            upto[k] = following
            src = written[k].source
            if src is not None:
                following = src
        last = len(written) - 1
        for k, w in enumerate(written):
            source = w.source
            if source is None:  # the marker
                if upto[k] > cursor:
                    out.append(Summarize(tuple(items[cursor:upto[k]]), w.message, tokens=w.tokens))
                else:
                    out.append(Insert(w.message, items[upto[k]] if upto[k] < len(items) else None, w.tokens))
                cursor = upto[k]
                continue
            drop.extend(range(cursor, source))
            item = items[source]
            if w.kind == "cut":  # a fresh copy: not a stub, no tags
                out.append(Replace(item, w.message, w.tokens, tags=NO_TAGS, cleared=False))
                cursor = source + 1
            else:  # the summary of an assistant message, and what goes after it (the marker, if next, takes that)
                stop = upto[k] if k == last or written[k + 1].source is not None else source + 1
                # Summarize(items, message, tokens=, origin=), made in C: one per summary, thousands a replay
                out.append(_summary((tuple(items[source:stop]), w.message, None, w.tokens, NO_TAGS, item.origin)))
                cursor = stop
        drop.extend(range(cursor, end))
    if drop:
        out.append(Drop(picked(view, drop)))
    return tuple(out)


@dataclass
class Compaction:
    entries: _Seq
    level: str  # "none", "truncate", "summarize", "drop", "cliff"


class _Units:
    """Unit heads and protection (a unit holding a pinned message) of history items, looked up on demand."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._head: dict[int, int] = {}
        self._safe: dict[int, bool] = {}

    def head(self, index: int) -> int:
        h = self._head.get(index)
        if h is None:
            h = self._head[index] = unit_head(self.view, index)
        return h

    def protected(self, index: int) -> bool:
        h = self.head(index)
        safe = self._safe.get(h)
        if safe is None:
            safe = self._safe[h] = unit_holds_pinned(self.view, h)
        return safe


class TieredPolicy:
    """yoagent's compaction, applied only to the part of the history a compaction can still change.

    After a compaction the history's front is settled: user messages (the level-2 summaries among
    them), markers and the protected units, their results within the caps. Levels 1 and 2 leave
    such items as they are, so a compaction works on what follows them (the turns since the last
    summarising and the recent ones); the settled front counts by the history's running sums, and
    level 3 and the cliff search their cut by bisection. A request under the budget costs O(1).
    The settled front is forgotten (the next compaction looks at the whole history) when another
    stage dropped or inserted messages (`observe`); when it replaced some one for one (stubs,
    masks), the front stays settled up to the first of them. `PlainTiered` is the same compaction
    on plain lists, from scratch at every request.
    """

    name = "tiered"

    def __init__(self, params: TieredParams) -> None:
        self.params = params
        self.caps = LineCaps.of(params.tool_output_max_lines, params.exempt_tools, params.max_lines_overrides)
        self._ratio = f32(params.compact_target_ratio)
        self._floor = f32(params.min_headroom_ratio)
        self.start()
        self._tracking = False  # no start(): not told of changes, nothing is ever settled

    # ------------------------------------------------------------ yoagent's arithmetic
    def budget(self, view: View) -> int:
        p = self.params
        top = p.max_context_tokens if p.max_context_tokens is not None else view.window * 80 // 100
        reserve = view.base_tokens if p.count_prefix else p.system_prompt_tokens
        return max(top - reserve, 0)

    @property
    def growth(self) -> float:
        return self._growth_sum / self._samples if self._samples else 0.0

    def effective_ratio(self, growth: float, budget: int) -> float:
        """yoagent's `effective_target_ratio`, in f32."""
        turns = self.params.compact_headroom_turns
        if not turns or not math.isfinite(growth) or growth <= 0 or budget <= 0:
            return self._ratio
        derived = f32((budget - turns * growth) / budget)
        return max(min(derived, self._ratio), self._floor)

    @staticmethod
    def target(budget: int, ratio: float) -> int:
        """yoagent's `compaction_target`: floor(budget x clamp(ratio, 0.05, 1.0)), the ratio an f32."""
        r = ratio if math.isfinite(ratio) else 1.0
        r = min(max(r, f32(MIN_RATIO)), 1.0)
        return int(budget * r)

    # ------------------------------------------------------------ what changed (the engine tells)
    def start(self) -> None:
        self._tracking = True
        self._last_total: int | None = None  # the history's size after the previous decision
        self._growth_sum = 0
        self._samples = 0
        self._settled = 0  # this many items at the front of the history are settled
        self._count = 0  # items in the history
        self._stale = False  # another stage dropped or inserted messages since our last compaction
        self._first_replaced: int | None = None  # the first position another stage replaced one for one
        self._own: set[int] = set()  # ids of the items our last edit removes
        self._own_items: list[Item] = []  # those items, kept alive (their ids stay theirs)
        self._own_inserts = 0  # markers our last edit puts in without removing anything
        self._fits: dict[int, Message] = {}  # id -> message, of the results found within their caps (_cut)

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        if not removed:  # the commonest first: an append
            at = self._count
            self._count = at + len(added)
            if len(added) == 1:
                if self._own_inserts and added[0].inserted:  # our marker
                    self._own_inserts -= 1
                    return
                if added[0].pos == at:  # appended (or put at the end: past the settled front all the same)
                    return
            self._stale = True
            return
        self._count += len(added) - len(removed)
        if id(removed[0]) in self._own:  # our own edit (an item it names is in no other stage's)
            return
        if len(removed) == len(added):  # replaced one for one by another stage
            first = min(it.pos for it in added)
            self._first_replaced = first if self._first_replaced is None else min(self._first_replaced, first)
        else:
            self._stale = True

    def _settled_now(self, view: View) -> int:
        """How much of the front is still settled, given what other stages did since our last compaction."""
        if self._stale or not self._tracking or self._count != len(view):
            settled = 0
        elif self._first_replaced is not None:
            settled = min(self._settled, self._first_replaced)
        else:
            settled = self._settled
        self._stale, self._first_replaced = False, None
        return settled

    # ------------------------------------------------------------ the replay hook
    def scope_end(self, view: View) -> int:
        end = len(view)
        if self.params.compact_at == "turn_end":
            items = view.items
            while end > 0 and items[end - 1].message.role == "user":
                end -= 1
        return end

    def decide(self, view: View) -> Sequence[Edit]:
        end = self.scope_end(view)
        if end == 0:
            return ()
        live = view.prefix_tokens(end) - view.base_tokens
        if self._last_total is not None:
            self._samples += 1
            self._growth_sum += max(0, live - self._last_total)
        budget = self.budget(view)
        self._last_total = live
        if live <= budget:
            return ()
        ratio = self.effective_ratio(self.growth, budget)
        target = self.target(budget, ratio)
        self._settled = self._settled_now(view)
        result = self.compact(view, end, budget, target)
        after = result.entries.total
        self._last_total = after
        spans = result.entries.spans(end)
        self._settled = self._settled_after(result.entries, view)
        if not spans:
            return ()
        changes = changes_of(view, spans)
        # every item of a span goes (dropped, cut, summarised or under the marker): our splices name those alone
        items = view.items
        named: list[Item] = []
        for start, stop, _ in spans:
            named += items[start:stop]
        # held until our next edit, so that no other item can take one of their ids meanwhile: an edit of
        # another stage is then never taken for ours, and observe need not strike ours off one by one
        self._own_items = named
        self._own = set(map(id, named))
        self._own_inserts = sum(1 for change in changes if type(change) is Insert)
        note = (f"level {result.level}: {end} -> {len(result.entries)} messages, {live:,} -> {after:,} tokens "
                f"(budget {budget:,}, target {target:,}, ratio {ratio:.4f}, growth {self.growth:.1f}/turn)")
        return (Edit(result.level, changes, note),)

    # ------------------------------------------------------------ compact_messages
    def _settles(self, units: _Units, index: int | None, item: Item | Written) -> bool:
        """Levels 1 and 2 leave `item` (standing for history item `index`, None for one a compaction
        wrote) as it is, whatever follows it."""
        role = item.message.role
        if role != "assistant" and role != "tool":
            return True
        if index is None or not units.protected(index):
            return False
        return role == "assistant" or item.pinned or self.caps.cut(item.message) is None

    def _settled_after(self, result: _Seq, view: View) -> int:
        """How many items at the front of `result` (the history once our edit is applied) are settled."""
        units = _Units(view)
        count = 0
        for part in result.parts:
            if isinstance(part, tuple):
                if part[1] > self._settled:  # not known to be settled: the next compaction looks
                    return count + max(0, self._settled - part[0])
                count += part[1] - part[0]
                continue
            for e in part:
                if not self._settles(units, e.at, e.item):
                    return count
                count += 1
        return count

    def compact(self, view: View, end: int, budget: int, target: int) -> Compaction:
        units = _Units(view)
        settled = min(self._settled, end)
        items = view.items
        while settled < end and self._settles(units, settled, items[settled]):
            settled += 1
        self._settled = settled
        region = _entries(items[settled:end], settled)
        entries = _Seq(view, [(0, settled), region])
        if entries.total <= budget:
            return Compaction(entries, "none")
        truncated = region  # level 1 changes only tool results; a copy once it changes one
        for k, e in enumerate(region):
            if e.item.message.role == "tool":
                new = self._cut(view, e)
                if new is not e:
                    if truncated is region:
                        truncated = region.copy()
                    truncated[k] = new
        level1 = entries if truncated is region else _Seq(view, [(0, settled), truncated])
        if level1.total <= budget:
            return Compaction(level1, "truncate")
        level2 = self._summarize(view, level1, settled, units)
        if level2.total <= target:
            return Compaction(level2, "summarize")
        return self._drop_middle(view, level2, target, units)

    def _cut(self, view: View, e: Entry) -> Entry:
        """`_truncated`, remembering the results found within their caps: a result the history keeps
        is looked at again by every compaction that reaches it, and most need no cut."""
        message = e.item.message
        if self._fits.get(id(message)) is message:
            return e
        new = self._truncated(view, e)
        if new is e and not e.item.pinned:
            self._fits[id(message)] = message
        return new

    def _truncated(self, view: View, e: Entry) -> Entry:
        if e.item.pinned:
            return e
        new = self.caps.cut(e.message)
        if new is None:
            return e
        return Entry(e.at, Written(new, view.size(new), "cut", e.at), same=False)

    def _summarize(self, view: View, entries: _Seq, settled: int, units: _Units) -> _Seq:
        n = len(entries)
        keep_recent = self.params.keep_recent
        if n <= keep_recent:
            return entries
        boundary = n - keep_recent
        while 0 < boundary < n and _is_result(entries[boundary]):
            boundary -= 1
        if boundary == 0 or boundary <= settled:  # before the boundary everything is settled: kept as it is
            return entries
        # A call whose results sit past the boundary (a user message in between) is kept whole.
        late = {units.head(e.at) for e in entries.entries(boundary, n) if e.at is not None and _is_result(e)}

        protected, head = units.protected, units.head

        def kept(e: Entry) -> bool:  # a tool result level 2 must keep: pinned, or its call is kept
            return e.at is not None and (protected(e.at) or head(e.at) in late)

        out: list[Entry] = []
        work = list(entries.entries(settled, boundary))
        size = len(work)
        i = 0
        while i < size:
            e = work[i]
            m = e.item.message
            role = m.role
            # an assistant message not kept (its unit pinned, or its results past the boundary) is summarised
            if role == "assistant" and not kept(e):  # (an assistant message heads its own unit)
                summary = new_message("user", "[Summary] " + summary_of(m), m.ts)
                out.append(Entry(None, Written(summary, view.size(summary), "summary", e.at)))
                i += 1
                while i < size and work[i].item.message.role == "tool":
                    r = work[i].at  # its own results go with it: their unit is not guarded
                    if r is not None and head(r) != e.at and kept(work[i]):
                        break
                    i += 1
                continue
            if role == "tool" and not kept(e):
                i += 1
                continue
            out.append(e)
            i += 1
        return _Seq(view, [(0, settled), out, *entries.slice(boundary, n)])

    def _marker(self, view: View, ts: str | None) -> Entry:
        marker = Message("user", COMPACTION_MARKER, ts=ts)
        return Entry(None, Written(marker, view.size(marker), "marker"))

    def _drop_middle(self, view: View, entries: _Seq, target: int, units: _Units) -> Compaction:
        p = self.params
        n = len(entries)
        head_end = min(p.keep_first, n)
        while head_end > 0 and _opens_calls(entries[head_end - 1]):
            head_end -= 1
        max_cut = max(n - p.keep_recent, 0)
        if head_end >= max_cut:
            return self._keep_within(view, entries, target, units)
        marker = self._marker(view, entries[head_end].message.ts)
        fixed = entries.tokens_before(head_end) + marker.tokens
        total = entries.total
        # the first cut whose tail fits (the tail only shrinks as the cut moves on), else max_cut
        span = range(head_end, max_cut + 1)
        k = bisect_left(span, True, key=lambda i: fixed + total - entries.tokens_before(i) <= target)
        cut = span[k] if k < len(span) else max_cut
        while cut < n and _is_result(entries[cut]):
            cut += 1
        cut = max(cut, head_end)
        if cut == head_end:
            return Compaction(entries, "summarize")
        spared = [e for e in entries.entries(head_end, cut) if e.at is not None and units.protected(e.at)]
        result = _Seq(view, [*entries.slice(0, head_end), [marker, *spared], *entries.slice(cut, n)])
        if result.total > target:
            cliff = self._keep_within(view, result, target, units)
            return cliff if cliff.level == "cliff" else Compaction(result, "drop")
        return Compaction(result, "drop")

    def _keep_within(self, view: View, entries: _Seq, budget: int, units: _Units) -> Compaction:
        """yoagent's `keep_within_budget`: the longest tail that fits, behind the marker (the cliff)."""
        n = len(entries)
        if not n:
            return Compaction(entries, "summarize")
        # the longest tail whose tokens add up to at most the budget (the first start where the tail fits)
        total = entries.total
        start = min(bisect_left(range(n + 1), True, key=lambda s: total - entries.tokens_before(s) <= budget), n)
        while start < n and _is_result(entries[start]):
            start += 1
        if start == 0:
            return Compaction(entries, "summarize")
        spared = [e for e in entries.entries(0, start) if e.at is not None and units.protected(e.at)]
        marker = self._marker(view, entries[0].message.ts)
        return Compaction(_Seq(view, [[marker, *spared], *entries.slice(start, n)]), "cliff")


class PlainTiered(TieredPolicy):
    """The reference: the same compaction on a plain list of the history's messages, worked out from
    scratch at every request over the budget (yoagent's arithmetic and growth are `TieredPolicy`'s)."""

    def decide(self, view: View) -> Sequence[Edit]:
        end = self.scope_end(view)
        if end == 0:
            return ()
        entries = [Entry(i, item) for i, item in enumerate(view.items[:end])]
        live = _tokens(entries)
        if self._last_total is not None:
            self._samples += 1
            self._growth_sum += max(0, live - self._last_total)
        budget = self.budget(view)
        self._last_total = live
        if live <= budget:
            return ()
        ratio = self.effective_ratio(self.growth, budget)
        target = self.target(budget, ratio)
        level, entries = self._levels(view, entries, budget, target)
        self._last_total = after = _tokens(entries)
        spans = _spans_of(entries, end)
        if not spans:
            return ()
        note = (f"level {level}: {end} -> {len(entries)} messages, {live:,} -> {after:,} tokens "
                f"(budget {budget:,}, target {target:,}, ratio {ratio:.4f}, growth {self.growth:.1f}/turn)")
        return (Edit(level, changes_of(view, spans), note),)

    def _levels(self, view: View, entries: list[Entry], budget: int, target: int) -> tuple[str, list[Entry]]:
        units = _Units(view)
        level1 = [self._truncated(view, e) if e.message.role == "tool" else e for e in entries]
        if _tokens(level1) <= budget:
            return "truncate", level1
        level2 = self._plain_summarize(view, level1, units)
        if _tokens(level2) <= target:
            return "summarize", level2
        n = len(level2)
        head_end = min(self.params.keep_first, n)
        while head_end > 0 and _opens_calls(level2[head_end - 1]):
            head_end -= 1
        max_cut = max(n - self.params.keep_recent, 0)
        if head_end >= max_cut:
            return self._plain_keep_within(view, level2, target, units) or ("summarize", level2)
        marker = self._marker(view, level2[head_end].message.ts)
        fixed = _tokens(level2[:head_end]) + marker.tokens
        # the first cut whose tail fits, else max_cut; then past any tool results
        cut = next((i for i in range(head_end, max_cut + 1) if fixed + _tokens(level2[i:]) <= target), max_cut)
        while cut < n and _is_result(level2[cut]):
            cut += 1
        if cut <= head_end:
            return "summarize", level2
        spared = [e for e in level2[head_end:cut] if e.at is not None and units.protected(e.at)]
        dropped = [*level2[:head_end], marker, *spared, *level2[cut:]]
        if _tokens(dropped) > target:
            return self._plain_keep_within(view, dropped, target, units) or ("drop", dropped)
        return "drop", dropped

    def _plain_summarize(self, view: View, entries: list[Entry], units: _Units) -> list[Entry]:
        """Level 2: each assistant message before the recent ones becomes a one-line summary, its results go."""
        n = len(entries)
        if n <= self.params.keep_recent:
            return entries
        boundary = n - self.params.keep_recent
        while 0 < boundary < n and _is_result(entries[boundary]):
            boundary -= 1
        if boundary == 0:
            return entries
        # a call whose results sit past the boundary (a user message in between) is kept whole
        late = {units.head(e.at) for e in entries[boundary:] if e.at is not None and _is_result(e)}

        def kept(e: Entry) -> bool:
            return e.at is not None and (units.protected(e.at) or units.head(e.at) in late)

        out: list[Entry] = []
        i = 0
        while i < boundary:
            e = entries[i]
            i += 1
            if e.message.role == "assistant" and not kept(e):
                summary = Message("user", "[Summary] " + summary_of(e.message), ts=e.message.ts)
                out.append(Entry(None, Written(summary, view.size(summary), "summary", e.at)))
                while i < boundary and _is_result(entries[i]):  # its own results go with it
                    r = entries[i].at
                    if r is not None and units.head(r) != e.at and kept(entries[i]):
                        break
                    i += 1
            elif not (e.message.role == "tool" and not kept(e)):
                out.append(e)
        return out + entries[boundary:]

    def _plain_keep_within(self, view: View, entries: list[Entry], budget: int,
                           units: _Units) -> tuple[str, list[Entry]] | None:
        """The cliff: the longest tail that fits, behind the marker (None when nothing would go)."""
        n = len(entries)
        start = next(s for s in range(n + 1) if _tokens(entries[s:]) <= budget)
        while start < n and _is_result(entries[start]):
            start += 1
        if start == 0:
            return None
        spared = [e for e in entries[:start] if e.at is not None and units.protected(e.at)]
        return "cliff", [self._marker(view, entries[0].message.ts), *spared, *entries[start:]]


def _tokens(entries: Sequence[Entry]) -> int:
    return sum(e.tokens for e in entries)


def _spans_of(entries: Sequence[Entry], end: int) -> list[tuple[int, int, tuple[Written, ...]]]:
    """`_Seq.spans` for a plain list: the history spans that change, and what is written there."""
    out: list[tuple[int, int, tuple[Written, ...]]] = []
    cursor, pending = 0, list[Written]()
    for e in entries:
        if e.at is None or not e.same:
            pending.append(e.item)  # type: ignore[arg-type]
            continue
        if e.at > cursor or pending:
            out.append((cursor, e.at, tuple(pending)))
            pending = []
        cursor = e.at + 1
    if cursor < end or pending:
        out.append((cursor, end, tuple(pending)))
    return out


REFERENCE = PlainTiered


def summary_of(message: Message) -> str:
    """yoagent's one-line stand-in for an old assistant message."""
    text = message.content
    if text and len(text.encode("utf-8")) <= SUMMARY_TEXT_BYTES:
        return text
    if message.tool_calls:
        return f"[Assistant used {len(message.tool_calls)} tool(s)]"
    return "[Assistant response]"


register(PolicyInfo(
    "tiered", TieredParams, TieredPolicy,
    "yoagent src/context.rs 0.15-0.21 compact_messages L1-L3 + effective_target_ratio; context_cache_test replay",
    "truncate tool output, then summarise old turns, then drop the middle, to an adaptive target", __name__,
    budget=lambda params, tokens: {"max_context_tokens": tokens},
    space={
        "max_context_tokens": TRIGGERS,
        "keep_recent": (4, 6, 10, 16, 24),
        "tool_output_max_lines": (50, 100, 200, 400),
        "compact_target_ratio": (0.5, 0.6, 0.7, 0.8),
    },
    weight=2.2))
