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
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxsim.history import Edit, History, Item, Splice
from ctxsim.model import Message
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register
from ctxsim.policies.recent import EditWatch, unit_head, unit_members
from ctxsim.policies.truncate import LineCaps

COMPACTION_MARKER = "[Context compacted: earlier messages removed to fit the context window]"
SUMMARY_TEXT_BYTES = 200  # longer assistant texts are left out of a level-2 summary
MIN_RATIO = 0.05  # compaction_target clamps the ratio to [0.05, 1.0]


def f32(x: float) -> float:
    """Round a double to the nearest IEEE single, as a Rust `as f32` cast does."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
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
class Entry:
    """A message of a working copy of the history.

    `index` is the history item it stands for (None for an inserted summary or
    marker); `same` says the item is unchanged (a truncated result is not).
    Never changed once made (not frozen only because a compaction makes one per
    message it looks at, and a frozen dataclass takes three times as long to make).
    """

    index: int | None
    item: Item
    same: bool = True

    @property
    def message(self) -> Message:
        return self.item.message

    @property
    def tokens(self) -> int:
        return self.item.tokens


def _is_result(e: Entry) -> bool:
    return e.message.role == "tool"


def _opens_calls(e: Entry) -> bool:
    return e.message.role == "assistant" and bool(e.message.tool_calls)


class _Seq:
    """A working copy of history[:end]: runs of unchanged history items and lists of entries, in order.

    Length, tokens before a position and slicing cost O(parts) (a run of unchanged items is one part,
    its tokens read from the history's running sums), so a long unchanged prefix costs nothing.
    """

    def __init__(self, history: History, parts: Sequence[tuple[int, int] | list[Entry]]) -> None:
        self.history = history
        self.parts: list[tuple[int, int] | list[Entry]] = []
        self._starts = [0]  # position of each part
        self._tokens = [0]  # tokens before each part
        self._inner: dict[int, list[int]] = {}  # part number -> running tokens within a list part
        for part in parts:
            if isinstance(part, tuple):
                a, b = part
                if a >= b:
                    continue
                if self.parts and isinstance(self.parts[-1], tuple) and self.parts[-1][1] == a:
                    a = self.parts.pop()[0]  # runs that meet are one run
                    self._starts.pop()
                    self._tokens.pop()
                size, tokens = b - a, history.prefix_tokens(b) - history.prefix_tokens(a)
                part = (a, b)
            else:
                if not part:
                    continue
                size, tokens = len(part), sum(e.tokens for e in part)
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
            return Entry(index, self.history.items[index])
        return part[offset]

    def tokens_before(self, k: int) -> int:
        if k >= len(self):
            return self.total
        p = self._part(k)
        part, offset = self.parts[p], k - self._starts[p]
        if isinstance(part, tuple):
            inside = self.history.prefix_tokens(part[0] + offset) - self.history.prefix_tokens(part[0])
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
                items = self.history.items
                for index in range(*part):
                    yield Entry(index, items[index])
            else:
                yield from part

    def splices(self, end: int) -> tuple[Splice, ...]:
        """The splices that turn history[:end] into this copy (unchanged items keep their places)."""
        out: list[Splice] = []
        cursor = 0  # next history index not yet accounted for
        pending: list[Item] = []
        for part in self.parts:
            if isinstance(part, tuple):  # a run of unchanged items, like entries part[0] .. part[1]-1
                if part[0] > cursor or pending:
                    out.append(Splice(cursor, part[0], tuple(pending)))
                    pending = []
                cursor = part[1]
                continue
            for e in part:
                if e.index is None or not e.same:
                    pending.append(e.item)
                    continue
                if e.index > cursor or pending:
                    out.append(Splice(cursor, e.index, tuple(pending)))
                    pending = []
                cursor = e.index + 1
        if cursor < end or pending:
            out.append(Splice(cursor, end, tuple(pending)))
        return tuple(out)


@dataclass
class Compaction:
    entries: _Seq
    level: str  # "none", "truncate", "summarize", "drop", "cliff"


class _Units:
    """Unit heads and protection (a unit holding a pinned message) of history items, looked up on demand."""

    def __init__(self, history: History) -> None:
        self.history = history
        self._head: dict[int, int] = {}
        self._safe: dict[int, bool] = {}

    def head(self, index: int) -> int:
        h = self._head.get(index)
        if h is None:
            h = self._head[index] = unit_head(self.history, index)
        return h

    def protected(self, index: int) -> bool:
        h = self.head(index)
        safe = self._safe.get(h)
        if safe is None:
            items = self.history.items
            safe = self._safe[h] = any(items[i].pinned for i in unit_members(self.history, h))
        return safe


class TieredPolicy:
    """yoagent's compaction, applied only to the part of the history a compaction can still change.

    After a compaction the history's front is settled: user messages (the level-2 summaries among
    them), markers and the protected units, their results within the caps. Levels 1 and 2 leave
    such items as they are, so a compaction works on what follows them (the turns since the last
    summarising and the recent ones); the settled front counts by the history's running sums, and
    level 3 and the cliff search their cut by bisection. A request under the budget costs O(1).
    The settled front is forgotten (the next compaction looks at the whole history) when another
    stage dropped or inserted messages (see `EditWatch`); when it replaced some one for one (stubs,
    masks), the front stays settled up to the first of them.
    """

    name = "tiered"
    relative_cost = 2.2  # replay time against `none`: see replay_weight

    def __init__(self, params: TieredParams) -> None:
        self.params = params
        self.caps = LineCaps.of(params.tool_output_max_lines, params.exempt_tools, params.max_lines_overrides)
        self._ratio = f32(params.compact_target_ratio)
        self._floor = f32(params.min_headroom_ratio)
        self._session: weakref.ref[History] | None = None
        self._last_total: int | None = None
        self._growth_sum = 0
        self._samples = 0
        self._settled = 0  # this many items at the front of the history are settled
        self._watch = EditWatch()

    # ------------------------------------------------------------ yoagent's arithmetic
    def budget(self, ctx: Context) -> int:
        p = self.params
        top = p.max_context_tokens if p.max_context_tokens is not None else ctx.window * 80 // 100
        reserve = ctx.history.base_tokens if p.count_prefix else p.system_prompt_tokens
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

    # ------------------------------------------------------------ the replay hook
    def _reset_if_new(self, history: History) -> None:
        if self._session is None or self._session() is not history:
            self._session = weakref.ref(history)
            self._last_total = None
            self._growth_sum = 0
            self._samples = 0
            self._settled = 0

    def scope_end(self, history: History) -> int:
        end = len(history)
        if self.params.compact_at == "turn_end":
            while end > 0 and history.items[end - 1].message.role == "user":
                end -= 1
        return end

    def decide(self, ctx: Context) -> Sequence[Edit]:
        history = ctx.history
        self._reset_if_new(history)
        end = self.scope_end(history)
        if end == 0:
            return ()
        live = history.prefix_tokens(end) - history.base_tokens
        if self._last_total is not None:
            self._samples += 1
            self._growth_sum += max(0, live - self._last_total)
        budget = self.budget(ctx)
        self._last_total = live
        if live <= budget:
            return ()
        ratio = self.effective_ratio(self.growth, budget)
        target = self.target(budget, ratio)
        found = self._watch.changes(history)
        if found is None:  # new to us, or another stage dropped or inserted messages: nothing is settled
            self._settled = 0
        elif found[1]:  # items other stages replaced one for one: settled only up to the first of them
            self._settled = min(self._settled, *(new.pos for _, new in found[1].values()))
        result = self.compact(ctx, end, budget, target)
        after = result.entries.total
        self._last_total = after
        splices = result.entries.splices(end)
        self._watch.expect(history, splices)
        self._settled = self._settled_after(result.entries, history)
        if not splices:
            return ()
        note = (f"level {result.level}: {end} -> {len(result.entries)} messages, {live:,} -> {after:,} tokens "
                f"(budget {budget:,}, target {target:,}, ratio {ratio:.4f}, growth {self.growth:.1f}/turn)")
        return (Edit(result.level, splices, note),)

    # ------------------------------------------------------------ compact_messages
    def _settles(self, units: _Units, index: int | None, item: Item) -> bool:
        """Levels 1 and 2 leave `item` (standing for history item `index`, None for one a compaction
        wrote) as it is, whatever follows it."""
        role = item.message.role
        if role != "assistant" and role != "tool":
            return True
        if index is None or not units.protected(index):
            return False
        return role == "assistant" or item.pinned or self.caps.cut(item.message) is None

    def _settled_after(self, result: _Seq, history: History) -> int:
        """How many items at the front of `result` (the history once our edit is applied) are settled."""
        units = _Units(history)
        count = 0
        for part in result.parts:
            if isinstance(part, tuple):
                if part[1] > self._settled:  # not known to be settled: the next compaction looks
                    return count + max(0, self._settled - part[0])
                count += part[1] - part[0]
                continue
            for e in part:
                if not self._settles(units, e.index, e.item):
                    return count
                count += 1
        return count

    def compact(self, ctx: Context, end: int, budget: int, target: int) -> Compaction:
        history = ctx.history
        units = _Units(history)
        settled = min(self._settled, end)
        items = history.items
        while settled < end and self._settles(units, settled, items[settled]):
            settled += 1
        self._settled = settled
        region = list(map(Entry, range(settled, end), items[settled:end]))
        entries = _Seq(history, [(0, settled), region])
        if entries.total <= budget:
            return Compaction(entries, "none")
        truncated = region  # level 1 changes only tool results; a copy once it changes one
        for k, e in enumerate(region):
            if e.item.message.role == "tool":
                new = self._truncated(ctx, e)
                if new is not e:
                    if truncated is region:
                        truncated = region.copy()
                    truncated[k] = new
        level1 = entries if truncated is region else _Seq(history, [(0, settled), truncated])
        if level1.total <= budget:
            return Compaction(level1, "truncate")
        level2 = self._summarize(ctx, level1, settled, units)
        if level2.total <= target:
            return Compaction(level2, "summarize")
        return self._drop_middle(ctx, level2, target, units)

    def _truncated(self, ctx: Context, e: Entry) -> Entry:
        if e.item.pinned:
            return e
        new = self.caps.cut(e.message)
        if new is None:
            return e
        return Entry(e.index, ctx.history.item(new, origin=e.item.origin), same=False)

    def _summarize(self, ctx: Context, entries: _Seq, settled: int, units: _Units) -> _Seq:
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
        late = {units.head(e.index) for e in entries.entries(boundary, n) if e.index is not None and _is_result(e)}

        protected, head = units.protected, units.head

        def kept(e: Entry) -> bool:  # a tool result level 2 must keep: pinned, or its call is kept
            return e.index is not None and (protected(e.index) or head(e.index) in late)

        history = ctx.history
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
                out.append(Entry(None, history.item(
                    Message("user", "[Summary] " + summary_of(m), ts=m.ts), origin=e.item.origin, inserted=True)))
                i += 1
                while i < size and work[i].item.message.role == "tool":
                    r = work[i].index  # its own results go with it: their unit is not guarded
                    if r is not None and head(r) != e.index and kept(work[i]):
                        break
                    i += 1
                continue
            if role == "tool" and not kept(e):
                i += 1
                continue
            out.append(e)
            i += 1
        return _Seq(history, [(0, settled), out, *entries.slice(boundary, n)])

    def _marker(self, ctx: Context, ts: str | None) -> Entry:
        return Entry(None, ctx.history.item(Message("user", COMPACTION_MARKER, ts=ts), inserted=True))

    def _drop_middle(self, ctx: Context, entries: _Seq, target: int, units: _Units) -> Compaction:
        p = self.params
        n = len(entries)
        head_end = min(p.keep_first, n)
        while head_end > 0 and _opens_calls(entries[head_end - 1]):
            head_end -= 1
        max_cut = max(n - p.keep_recent, 0)
        if head_end >= max_cut:
            return self._keep_within(ctx, entries, target, units)
        marker = self._marker(ctx, entries[head_end].message.ts)
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
        spared = [e for e in entries.entries(head_end, cut) if e.index is not None and units.protected(e.index)]
        result = _Seq(ctx.history, [*entries.slice(0, head_end), [marker, *spared], *entries.slice(cut, n)])
        if result.total > target:
            cliff = self._keep_within(ctx, result, target, units)
            return cliff if cliff.level == "cliff" else Compaction(result, "drop")
        return Compaction(result, "drop")

    def _keep_within(self, ctx: Context, entries: _Seq, budget: int, units: _Units) -> Compaction:
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
        spared = [e for e in entries.entries(0, start) if e.index is not None and units.protected(e.index)]
        marker = self._marker(ctx, entries[0].message.ts)
        return Compaction(_Seq(ctx.history, [[marker, *spared], *entries.slice(start, n)]), "cliff")


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
    "truncate tool output, then summarise old turns, then drop the middle, to an adaptive target", __name__))
