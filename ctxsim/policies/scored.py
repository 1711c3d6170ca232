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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxsim.counting import arguments_text
from ctxsim.history import Edit, History, Item
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register
from ctxsim.policies.recent import drop_splices, protected_units, units

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

Scorer = Callable[[frozenset[str], frozenset[str]], float]


def words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in WORD.findall(text))


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


def tiers(history: History, recent_turns: int, filler_tokens: int) -> list[int]:
    """The seed's tier (0..4) of every message in the history."""
    items = history.items
    n = len(items)
    turn_starts = [i for i, it in enumerate(items) if it.message.role == "assistant"]
    last_turn = turn_starts[-1] if turn_starts else n
    if recent_turns and turn_starts:
        recent_from = turn_starts[-min(recent_turns, len(turn_starts))]
    else:
        recent_from = n
    users = [i for i, it in enumerate(items) if it.message.role == "user"]
    protected = {users[0], users[-1]} if users else set()
    out = []
    for i, item in enumerate(items):
        m = item.message
        if item.pinned or m.role == "system" or i in protected or i >= last_turn:
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


class ScoredPolicy:
    name = "scored"

    def __init__(self, params: ScoredParams) -> None:
        self.params = params
        self._words: dict[int, tuple[Item, frozenset[str]]] = {}

    def _item_words(self, item: Item) -> frozenset[str]:
        hit = self._words.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        m = item.message
        calls = [f"{c.name} {arguments_text(c.arguments)}" for c in m.tool_calls]
        text = " ".join([m.content, m.thinking or "", *calls])
        found = words(text)
        self._words[id(item)] = (item, found)
        return found

    def budget(self, ctx: Context) -> int:
        p = self.params
        return p.budget if p.budget is not None else int(ctx.window * p.budget_fraction)

    def scores(self, ctx: Context) -> tuple[list[int], dict[int, tuple[int, float]]]:
        """Unit heads, and for each evictable unit head: (tier, score)."""
        p = self.params
        history = ctx.history
        items = history.items
        n = len(items)
        tier = tiers(history, p.recent_turns, p.filler_tokens)
        head = units(history)
        users = [it for it in items if it.message.role == "user"]
        query = self._item_words(users[-1]) if users else frozenset()
        scorer = SCORERS[p.relevance]
        members: dict[int, list[int]] = {}
        for i, h in enumerate(head):
            members.setdefault(h, []).append(i)
        safe = protected_units(history, head)
        out: dict[int, tuple[int, float]] = {}
        for h, idx in members.items():
            t = min(tier[i] for i in idx)
            if t == 0 or h in safe:
                continue
            doc = frozenset().union(*(self._item_words(items[i]) for i in idx))
            recency = h / (n - 1) if n > 1 else 1.0
            score = p.tier_bias[t] + p.recency_weight * recency + p.relevance_weight * scorer(query, doc)
            out[h] = (t, score)
        return head, out

    def decide(self, ctx: Context) -> Sequence[Edit]:
        history = ctx.history
        budget = self.budget(ctx)
        total = history.prompt_tokens
        if total <= budget:
            return ()
        live = {id(it) for it in history.items}
        self._words = {k: v for k, v in self._words.items() if id(v[0]) in live}
        head, scored = self.scores(ctx)
        size: dict[int, int] = {}
        for i, h in enumerate(head):
            if h in scored:
                size[h] = size.get(h, 0) + history.items[i].tokens
        order = sorted(scored, key=lambda h: (scored[h][1], h))
        evicted: list[int] = []
        for h in order:
            if total <= budget:
                break
            evicted.append(h)
            total -= size[h]
        if not evicted:
            return ()
        chosen = set(evicted)
        drop = [i for i, h in enumerate(head) if h in chosen]
        by_tier = sorted({scored[h][0] for h in evicted})
        note = (f"evicted {len(drop)} messages (tiers {', '.join(map(str, by_tier))}) to fit {budget:,} tokens"
                + ("" if total <= budget else f"; still {total:,}: the rest is protected"))
        return (Edit("evict", drop_splices(drop), note),)


register(PolicyInfo(
    "scored", ScoredParams, ScoredPolicy,
    "seed 004 priority queuing: tiers 0-4, score = tier bias + 3 x recency + 2 x relevance",
    "evict the lowest-scored messages until the prompt fits the budget; tier 0 never", __name__))
