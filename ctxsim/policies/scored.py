"""`scored`: priority-scored eviction with protected tiers.

Source: seed 004 ("Context Window Budgeting Strategies", Priority Queuing): every
item gets a tier from 0 (protected, never evicted) to 4 (purgeable) and a score

    score = tier_bias[tier] + recency_weight * recency + relevance_weight * relevance

(biases 100 / 10 / 5 / 1 / 0.1, weights 3 and 2); when the prompt is over the
budget, the lowest-scored items go first until it fits.

How ctxsim assigns the seed's tiers to messages:

- 0, protected: pinned and system messages, the first user message (the task),
  the latest user message (the current sub-task) and the newest turn (what the
  model is about to read);
- 1, high: the other messages of the last `recent_turns` turns, and user messages
  (the user's decisions);
- 2, medium: tool results and summaries;
- 3, low: assistant messages (intermediate reasoning);
- 4, purgeable: assistant messages without tool calls of at most `filler_tokens`.

Recency is the position normalised to 0..1 (newest 1). Relevance compares an item
with the latest user message through a named scorer: `lexical` (share of the
message's words the item contains; the default), `jaccard`, or `constant` (0.5,
the seed's default). A tool call and its results are evicted together, scored
with their most protected tier, so no result is left without its call.

`PlainScored` (the module's REFERENCE) is that definition, scored from scratch at every request;
`ScoredPolicy` makes the same choices scoring only the units that can be the lowest, and the
reference-equality test (tests/policies) holds it to that.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from ctxsim._support.memo import IdentityMemo
from ctxsim.model import Message
from ctxsim.params import TRIGGERS, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies._spans import Items
from ctxsim.policies.base import Drop, Edit, Item, View

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

Scorer = Callable[[frozenset[str], frozenset[str]], float]


def words(text: str) -> frozenset[str]:
    if not text.isascii():
        # WORD matches ASCII only, so any other character just separates words, as "?" does;
        # lowering the ASCII text then gives the same words, lowered, at C speed.
        text = text.encode("ascii", "replace").decode("ascii")
    return frozenset(WORD.findall(text.lower()))


def text_of(message: Message) -> str:
    """The text relevance reads: the content, the thinking and each call's name and arguments."""
    if message.tool_calls or message.thinking:
        calls = [f"{c.name} {c.arguments_json}" for c in message.tool_calls]
        return " ".join([message.content, message.thinking or "", *calls])
    return message.content  # joining would only add a separator


def _alive(item: Item) -> bool:
    return item.alive


def _lexical(query: frozenset[str], doc: frozenset[str]) -> float:
    return len(query & doc) / len(query) if query else 0.0


def _jaccard(query: frozenset[str], doc: frozenset[str]) -> float:
    union = query | doc
    return len(query & doc) / len(union) if union else 0.0


def _constant(query: frozenset[str], doc: frozenset[str]) -> float:
    return 0.5


SCORERS: dict[str, Scorer] = {"lexical": _lexical, "jaccard": _jaccard, "constant": _constant}


def register_scorer(name: str, scorer: Scorer) -> None:
    """Add a relevance scorer (query words, item words) -> 0..1, selectable by `relevance=NAME`."""
    if name in SCORERS and SCORERS[name] is not scorer:
        raise ValueError(f"relevance scorer {name!r} is already registered")
    SCORERS[name] = scorer


@dataclass(frozen=True)
class ScoredParams:
    budget: int | None = field(default=None, metadata=field_doc(
        "evict until the prompt fits this many tokens; none: budget_fraction of the window"))
    budget_fraction: float = field(default=0.8, metadata=field_doc(
        "budget as a share of the window when budget is none"))
    tier_bias: tuple[float, ...] = field(default=(100.0, 10.0, 5.0, 1.0, 0.1), metadata=field_doc(
        "score bias of tiers 0..4 (seed 004)"))
    recency_weight: float = field(default=3.0, metadata=field_doc("weight of recency (0 oldest .. 1 newest)"))
    relevance_weight: float = field(default=2.0, metadata=field_doc("weight of relevance to the current sub-task"))
    relevance: str = field(default="lexical", metadata=field_doc(
        "relevance scorer: lexical, jaccard, constant (or one added with register_scorer)"))
    recent_turns: int = field(default=3, metadata=field_doc("last turns that are tier 1"))
    filler_tokens: int = field(default=12, metadata=field_doc(
        "assistant messages without tool calls up to this size are tier 4"))

    def __post_init__(self) -> None:
        if len(self.tier_bias) != 5:
            raise ValueError("tier_bias needs five values, for tiers 0..4")
        if self.relevance not in SCORERS:
            raise ValueError(f"unknown relevance scorer {self.relevance!r}; known: {', '.join(sorted(SCORERS))}")
        if self.budget is not None and self.budget < 0:
            raise ValueError("budget must not be negative")
        if not 0 < self.budget_fraction <= 1:
            raise ValueError("budget_fraction must be in (0, 1]")
        if self.recent_turns < 0 or self.filler_tokens < 0:
            raise ValueError("recent_turns and filler_tokens must not be negative")


# ---------------------------------------------------------------- the definition, from scratch


def tiers(view: Items, recent_turns: int, filler_tokens: int) -> list[int]:
    """The seed's tier (0..4) of every message, as `scored` assigns them."""
    items = view.items
    n = len(items)
    answers = [i for i, it in enumerate(items) if it.message.role == "assistant"]
    last_turn = answers[-1] if answers else n  # the newest turn: what the model is about to read
    recent_from = answers[-min(recent_turns, len(answers))] if recent_turns and answers else n
    users = [i for i, it in enumerate(items) if it.message.role == "user"]
    task_and_subtask = {users[0], users[-1]} if users else set()
    out = []
    for i, item in enumerate(items):
        m = item.message
        if item.pinned or m.role == "system" or i in task_and_subtask or i >= last_turn:
            out.append(0)
        elif i >= recent_from or m.role == "user":
            out.append(1)
        elif m.role in ("tool", "summary"):
            out.append(2)
        elif m.role == "assistant" and not m.tool_calls and item.tokens <= filler_tokens:
            out.append(4)
        else:
            out.append(3)
    return out


def eviction_note(dropped: int, by_tier: Iterable[int], budget: int, total: int) -> str:
    return (f"evicted {dropped} messages (tiers {', '.join(map(str, sorted(set(by_tier))))}) to fit {budget:,} tokens"
            + ("" if total <= budget else f"; still {total:,}: the rest is protected"))


class PlainScored:
    """The reference: every unit scored from scratch at every request over the budget.

    A unit is a message, or a call with its results (they leave together, scored with their most
    protected tier); tier-0 units stay. Units leave lowest (score, position) first until the prompt
    fits.
    """

    name = "scored"

    def __init__(self, params: ScoredParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        budget = p.budget if p.budget is not None else int(view.window * p.budget_fraction)
        total = view.prompt_tokens
        if total <= budget:
            return ()
        items = view.items
        n = len(items)
        tier = tiers(view, p.recent_turns, p.filler_tokens)
        unit: dict[int, list[int]] = {}  # the position of a unit's head -> its members' positions
        for i, item in enumerate(items):
            m = item.message
            holder = view.holder_of(m.tool_call_id or "") if m.role == "tool" else None
            attached = holder is not None and holder.pos < i and view.result_of(m.tool_call_id or "") is item
            unit.setdefault(holder.pos if attached else i, []).append(i)  # type: ignore[union-attr]
        users = [it for it in items if it.message.role == "user"]
        query = words(text_of(users[-1].message)) if users else frozenset()
        relevance = SCORERS[p.relevance]
        ranked = []
        for head, members in unit.items():
            t = min(tier[i] for i in members)
            if t == 0:
                continue
            doc = frozenset().union(*(words(text_of(items[i].message)) for i in members))
            recency = head / (n - 1) if n > 1 else 1.0
            score = p.tier_bias[t] + p.recency_weight * recency + p.relevance_weight * relevance(query, doc)
            ranked.append((score, head, t, members))
        evicted = []
        for _score, _head, t, members in sorted(ranked):
            if total <= budget:
                break
            evicted.append((t, members))
            total -= sum(items[i].tokens for i in members)
        if not evicted:
            return ()
        drop = sorted(i for _, members in evicted for i in members)
        return (Edit("evict", (Drop(tuple(items[i] for i in drop)),),
                     eviction_note(len(drop), (t for t, _ in evicted), budget, total)),)


# ---------------------------------------------------------------- the same choices, incrementally

BUILTIN_SCORERS = frozenset({"lexical", "jaccard", "constant"})  # relevance always in 0..1


@dataclass(eq=False, slots=True)
class _Unit:
    """A unit (an item, or a call with its results) the policy has looked at."""

    head: Item
    members: tuple[Item, ...]
    size: int
    doc: frozenset[str] | None = None  # words of the members, once needed
    query: frozenset[str] | None = None  # the query `relevance` was computed for
    relevance: float = 0.0
    filed: bool = False  # kept in a tier list (a unit older than the recent turns)
    alive: bool = True  # False once evicted


class ScoredPolicy:
    """`PlainScored`'s choices, scoring only the units that can be the lowest.

    A unit older than the last `recent_turns` turns (and not the first or latest user message)
    has a fixed tier; such units are *filed*, in one list per tier, in history order. Within a tier
    the score is at least `tier_bias + recency_weight * recency`, which grows with the position,
    so the lists are merged lowest bound first and a unit's relevance is computed only when its
    bound is below the scores still to beat. The units of the recent turns are rebuilt every
    request but wait in the heap under their bound too. Under the budget it files what left the
    recent turns all the same, so that the first request over the budget does not file the whole
    history at once.

    What changed since the last decision comes from `observe`: the messages appended, and the
    ones another stage replaced one for one (stubs, masks, thinking cleared), which are put in place
    in the units holding them (`_follow`). Anything else (another stage dropped or inserted
    messages, a tool result arrived for an old call, a turn counted as recent was evicted) makes
    the lists be rebuilt from the view once. With weights or a relevance scorer that could make a
    score fall below its bound (negative weights, a scorer not built in), every unit is scored.
    """

    name = "scored"

    def __init__(self, params: ScoredParams) -> None:
        self.params = params
        p = params
        self._bounded = (p.relevance in BUILTIN_SCORERS and p.recency_weight >= 0 and p.relevance_weight >= 0
                         and all(math.isfinite(x) for x in (*p.tier_bias, p.recency_weight, p.relevance_weight)))
        self._tracking = False  # told of every change since the session's start (else: rebuild each time)
        self.start()
        self._tracking = False
        self._items: Sequence[Item] = ()
        self._reset(())

    # ------------------------------------------------------------ what changed (the engine tells)
    def start(self) -> None:
        self._tracking = True
        self._stale = True  # the lists are rebuilt at the first decision
        self._count = 0  # items in the history
        self._appended: list[Item] = []  # since the last decision, each as it stands now
        self._where: dict[int, int] = {}  # id(an appended item) -> its place in _appended
        self._replaced: dict[int, tuple[Item, Item]] = {}  # id(item replaced first) -> (it, its latest copy)
        self._latest: dict[int, int] = {}  # id(a copy) -> id(the item it stands for)
        self._own: set[int] = set()  # ids of the items our last edit drops
        self._words: IdentityMemo[Item, tuple[str, frozenset[str]]] = IdentityMemo()  # item -> text, words
        self._texts: dict[str, frozenset[str]] = {}  # text -> words, for the items in _words

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        at = self._count
        self._count += len(added) - len(removed)
        if self._stale:
            return
        if not removed and len(added) == 1 and added[0].pos == at and not added[0].inserted:  # appended
            self._where[id(added[0])] = len(self._appended)
            self._appended.append(added[0])
        elif not added and removed and id(removed[0]) in self._own:  # our own eviction (only we name those)
            self._own.difference_update(map(id, removed))
        elif len(removed) == len(added):  # replaced one for one
            for old, new in zip(removed, added, strict=True):
                k = self._where.pop(id(old), None)
                if k is not None:  # appended, then replaced: given as the copy
                    self._appended[k] = new
                    self._where[id(new)] = k
                    continue
                first = self._latest.pop(id(old), id(old))
                self._replaced[first] = (self._replaced[first][0] if first in self._replaced else old, new)
                self._latest[id(new)] = first
        else:
            self._stale = True

    def _changes(self, view: View) -> tuple[list[Item], list[tuple[Item, Item]]] | None:
        """(appended, replaced) since the last decision, or None when the lists must be rebuilt."""
        new, replaced = self._appended, list(self._replaced.values())
        stale = self._stale or not self._tracking or self._count != len(view)
        self._appended, self._where, self._replaced, self._latest, self._own = [], {}, {}, {}, set()
        self._stale = False
        return None if stale else (new, replaced)

    # ------------------------------------------------------------ words
    def _item_words(self, item: Item) -> frozenset[str]:
        hit = self._words.get(item)
        if hit is not None:
            return hit[1]
        text = text_of(item.message)
        # Tool outputs recur (the same file read again): their words are found once.
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = words(text)
        self._words.put(item, (text, found))
        return found

    def budget(self, view: View) -> int:
        p = self.params
        return p.budget if p.budget is not None else int(view.window * p.budget_fraction)

    # ------------------------------------------------------------ what the policy keeps per session
    def _reset(self, items: Sequence[Item]) -> None:
        """Start over from the view's items (the words of the items still there are kept)."""
        self._words.keep(_alive)
        self._texts = dict(self._words.values())
        self._done: Item | None = None  # the last item whose unit was filed (or found never evictable)
        self._lists: dict[int, list[_Unit]] = {1: [], 2: [], 3: [], 4: []}  # filed units by tier, history order
        self._filed: dict[int, _Unit] = {}  # id(item) -> the live filed unit it is a member of
        self._front = dict.fromkeys(self._lists, 0)  # before this index every unit of the list is evicted
        self._dead = dict.fromkeys(self._lists, 0)  # evicted units still in the list
        self._first_user = next((it for it in items if it.message.role == "user"), None)
        self._last_user = next((it for it in reversed(items) if it.message.role == "user"), None)

    def _sync(self, view: View) -> bool:
        """Learn what changed since the last decision; False when the lists must be rebuilt."""
        found = self._changes(view)
        if found is None or not self._bounded:
            return False
        new, replaced = found
        if replaced and not self._follow(replaced):
            return False
        done = self._done
        if done is not None and not done.alive:
            return False
        for item in new:
            m = item.message
            if m.role == "tool" and done is not None:
                holder = view.holder_of(m.tool_call_id or "")
                if holder is not None and holder.pos <= done.pos:
                    return False  # a result for a call already filed: its unit changed
            elif m.role == "user":
                before, self._last_user = self._last_user, item
                if self._first_user is None:
                    self._first_user = item
                elif before is not None and before is not self._first_user and done is not None \
                        and before.pos <= done.pos and not self._file_user(before):
                    return False
        return True

    def _file(self, unit: _Unit) -> _Unit:
        for it in unit.members:
            self._filed[id(it)] = unit
        return unit

    def _follow(self, replaced: Iterable[tuple[Item, Item]]) -> bool:
        """Put the items other stages replaced one for one (stubs, masks) in place of the old ones
        in what the policy keeps; False when a replacement could change a unit or a tier (the
        lists are then rebuilt). A replacement keeps its position, role, call ids, result id and
        pin, and, as the seed's tiers go, its tier: the lists stay in order."""
        filler = self.params.filler_tokens
        for old, new in replaced:
            a, b = old.message, new.message
            if (a.role != b.role or old.pinned != new.pinned or a.tool_call_id != b.tool_call_id
                    or [c.id for c in a.tool_calls] != [c.id for c in b.tool_calls]
                    or (a.role == "assistant" and not a.tool_calls
                        and (old.tokens <= filler) != (new.tokens <= filler))):
                return False
            if old is self._first_user:
                self._first_user = new
            if old is self._last_user:
                self._last_user = new
            if old is self._done:
                self._done = new
            unit = self._filed.pop(id(old), None)
            if unit is not None:
                if unit.head is old:
                    unit.head = new
                unit.members = tuple(new if it is old else it for it in unit.members)
                unit.size = sum(it.tokens for it in unit.members)
                unit.doc = unit.query = None  # its relevance, worked out again when needed
                self._filed[id(new)] = unit
        return True

    def _file_user(self, item: Item) -> bool:
        """File a user message that stopped being the latest (it was passed over as protected)."""
        if not item.alive or item.message.tool_calls:
            return False
        if item.pinned:
            return True  # tier 0 for good
        tier1 = self._lists[1]
        if tier1 and tier1[-1].head.pos > item.pos:
            return False
        tier1.append(self._file(_Unit(item, (item,), item.tokens, filed=True)))
        return True

    # ------------------------------------------------------------ units and tiers
    def _static_tier(self, item: Item) -> int:
        """The seed's tier of an item older than the recent turns."""
        m = item.message
        if item.pinned or m.role == "system" or item is self._first_user or item is self._last_user:
            return 0
        if m.role == "user":
            return 1
        if m.role in ("tool", "summary"):
            return 2
        if m.role == "assistant" and not m.tool_calls and item.tokens <= self.params.filler_tokens:
            return 4
        return 3

    def _tier(self, item: Item, last_turn: int, recent_from: int) -> int:
        """The seed's tier of an item, the newest turn (from `last_turn`) and the recent ones (from
        `recent_from`) included."""
        t = self._static_tier(item)
        if t and item.pos >= last_turn:
            return 0
        if t and item.pos >= recent_from:
            return 1
        return t

    @staticmethod
    def _attached(view: View, item: Item) -> bool:
        """A tool result that belongs to the unit of an earlier call."""
        m = item.message
        if m.role != "tool":
            return False
        holder = view.holder_of(m.tool_call_id or "")
        return (holder is not None and holder.alive and holder.pos < item.pos
                and view.result_of(m.tool_call_id or "") is item)

    @staticmethod
    def _members(view: View, item: Item) -> tuple[Item, ...]:
        out = [item]
        for call in item.message.tool_calls:
            result = view.result_of(call.id)
            if result is not None and result.alive and result.pos > item.pos:
                out.append(result)
        return tuple(out)

    def _relevance(self, unit: _Unit, query: frozenset[str]) -> float:
        """The unit's relevance to `query`, kept until the query changes."""
        if unit.query is not query:
            scorer = SCORERS[self.params.relevance]
            if scorer is _lexical and query:
                # The same share, counted member by member: the union of a tool output's words
                # with its call's costs more than meeting the few query words in each.
                hits: set[str] = set()
                for it in unit.members:
                    hits |= query & self._item_words(it)
                unit.relevance = len(hits) / len(query)
            else:
                if unit.doc is None:
                    unit.doc = frozenset().union(*(self._item_words(it) for it in unit.members))
                unit.relevance = scorer(query, unit.doc)
            unit.query = query
        return unit.relevance

    # ------------------------------------------------------------ deciding
    @property
    def _history(self) -> Sequence[Item]:
        """The live items as of the last decision (what the policy's state is bounded by)."""
        return self._items

    def decide(self, view: View) -> Sequence[Edit]:
        self._items = view.items
        budget = self.budget(view)
        total = view.prompt_tokens
        if total <= budget:
            if self._bounded:
                self._keep_up(view)
            else:
                self._changes(view)
            return ()
        if not self._sync(view):
            self._reset(view.items)
        chosen = self._choose(view, total, budget)
        if chosen is None:  # something the lists did not follow: rebuild them and choose again
            self._reset(view.items)
            chosen = self._choose(view, total, budget)
            assert chosen is not None
        evicted, total = chosen
        if not evicted:
            return ()
        dropped = sorted((it for unit, _ in evicted for it in unit.members), key=attrgetter("pos"))
        self._own = {id(it) for it in dropped}
        done = self._done
        while done is not None and id(done) in self._own:  # the last filed item goes: the one before it is filed
            done = view.items[done.pos - 1] if done.pos > 0 else None
        self._done = done
        filed = self._filed
        for unit, _ in evicted:
            unit.alive = False
            if unit.filed:
                for it in unit.members:
                    del filed[id(it)]
        return (Edit("evict", (Drop(tuple(dropped)),),
                     eviction_note(len(dropped), (t for _, t in evicted), budget, total)),)

    def _recent_turns(self, view: View) -> tuple[int, int]:
        """Where the newest turn (tier 0) and the recent turns (tier 1) start."""
        p = self.params
        items = view.items
        n = len(items)
        last_turn = recent_from = n
        found = 0
        want = max(p.recent_turns, 1)
        for i in range(n - 1, -1, -1):
            if items[i].message.role == "assistant":
                found += 1
                if found == 1:
                    last_turn = i
                if p.recent_turns and found <= p.recent_turns:
                    recent_from = i
                if found == want:
                    break
        return last_turn, recent_from

    def _file_older(self, view: View, zone: int) -> int | None:
        """File the units that left the recent turns (before `zone`) since the last request; the
        index where filing stopped, or None when the lists went past `zone` (rebuild them)."""
        items = view.items
        done = self._done
        start = done.pos + 1 if done is not None else 0
        if start > zone:
            return None
        i = start
        while i < zone:
            item = items[i]
            if not self._attached(view, item):
                members = self._members(view, item)
                if max(it.pos for it in members) >= zone:
                    break
                tier = min(self._static_tier(it) for it in members)
                if tier:
                    self._lists[tier].append(self._file(_Unit(item, members, sum(it.tokens for it in members),
                                                              filed=True)))
            self._done = item
            i += 1
        return i

    def _keep_up(self, view: View) -> None:
        """Under the budget: file what left the recent turns, so that the request that goes over
        does not file the whole history at once (the cost of a request stays bounded)."""
        if not self._sync(view):
            self._reset(view.items)
        last_turn, recent_from = self._recent_turns(view)
        if self._file_older(view, min(last_turn, recent_from)) is None:
            self._reset(view.items)
            self._file_older(view, min(last_turn, recent_from))

    def _choose(self, view: View, total: int, budget: int) -> tuple[list[tuple[_Unit, int]], int] | None:
        """The units to evict, lowest (score, position) first, and the prompt after; None: rebuild."""
        p = self.params
        items = view.items
        n = len(items)
        last_turn, recent_from = self._recent_turns(view)
        i = self._file_older(view, min(last_turn, recent_from) if self._bounded else 0)
        if i is None:
            return None
        # The recent units (and, without the bound, all of them). With the bound, a unit enters the
        # heap keyed by its bound and is scored when that key reaches the top, then pushed back: a
        # score is never below its bound, so units still leave in (score, position) order.
        query = self._item_words(self._last_user) if self._last_user is not None else frozenset()
        bias, weight, rel_weight = p.tier_bias, p.recency_weight, p.relevance_weight
        heap: list[tuple[float, int, int, _Unit, bool]] = []  # (score or bound, position, tier, unit, scored)
        for j in range(i, n):
            item = items[j]
            if self._attached(view, item):  # scored with its call
                continue
            members = self._members(view, item)
            tier = 4
            for it in members:
                tier = min(tier, self._tier(it, last_turn, recent_from))
            if tier:
                unit = _Unit(item, members, sum(it.tokens for it in members))
                # The score's first two terms, in the order of the seed's sum (tier bias + recency term,
                # then + relevance term), so that score = bound + relevance term to the last bit.
                bound = bias[tier] + weight * (j / (n - 1) if n > 1 else 1.0)
                if self._bounded:
                    heap.append((bound, j, tier, unit, False))
                else:
                    heap.append((bound + rel_weight * self._relevance(unit, query), j, tier, unit, True))
        heapq.heapify(heap)
        # The filed units: the tier lists merged lowest bound first (ties: lowest tier), each unit
        # checked, scored and moved to the heap while its bound is not above the heap's lowest key.
        # The units taken are those with a bound up to the last score evicted, whichever order the
        # heap scores its entries in, so the check below sees the same units as scoring eagerly.
        lists, front = self._lists, self._front
        for t, units_t in lists.items():
            if self._dead[t] * 2 > len(units_t) - front[t]:
                lists[t] = [u for u in units_t[front[t]:] if u.alive]
                front[t], self._dead[t] = 0, 0
            elif front[t] * 2 > len(units_t):  # the evicted front outgrew the rest: let it go (memory stays
                del units_t[: front[t]]  # bounded by the history, not by the session)
                front[t] = 0
        bounds: list[tuple[float, int, int]] = []  # (bound of a list's next unit, tier, its index), a heap
        for t, units_t in lists.items():
            k = front[t]
            while k < len(units_t) and not units_t[k].alive:
                k += 1
            self._dead[t] -= k - front[t]
            front[t] = k
            if k < len(units_t):
                bounds.append((bias[t] + weight * (units_t[k].head.pos / (n - 1) if n > 1 else 1.0), t, k))
        heapq.heapify(bounds)
        evicted: list[tuple[_Unit, int]] = []
        heappush, heappop = heapq.heappush, heapq.heappop
        while total > budget:
            while bounds and (not heap or heap[0][0] >= bounds[0][0]):
                bound, t, k = bounds[0]
                units_t = lists[t]
                unit = units_t[k]
                for it in unit.members:
                    if not it.alive:
                        return None  # an item edited behind the lists' back
                rel = unit.relevance if unit.query is query else self._relevance(unit, query)
                heappush(heap, (bound + rel_weight * rel, unit.head.pos, t, unit, True))
                k += 1
                while k < len(units_t) and not units_t[k].alive:
                    k += 1
                if k < len(units_t):
                    recency = units_t[k].head.pos / (n - 1) if n > 1 else 1.0
                    heapq.heapreplace(bounds, (bias[t] + weight * recency, t, k))
                else:
                    heappop(bounds)
            if not heap:
                break
            key, pos, t, unit, scored = heappop(heap)
            if not scored:  # a recent unit's bound: score it and let it compete again
                heappush(heap, (key + rel_weight * self._relevance(unit, query), pos, t, unit, True))
                continue
            evicted.append((unit, t))
            total -= unit.size
        for unit, t in evicted:
            if unit.filed:
                self._dead[t] += 1
        return evicted, total


REFERENCE = PlainScored

register(PolicyInfo(
    "scored", ScoredParams, ScoredPolicy,
    "seed 004 priority queuing: tiers 0-4, score = tier bias + 3 x recency + 2 x relevance",
    "evict the lowest-scored messages until the prompt fits the budget; tier 0 never", __name__,
    budget=lambda params, tokens: {"budget": tokens},
    space={
        "budget": TRIGGERS,
        "recent_turns": (1, 2, 3, 5, 8),
        "recency_weight": (1.0, 3.0, 6.0),
        "relevance_weight": (0.0, 2.0, 4.0),
    },
    weight=7.4))
