"""`oracle`: the bound. Knows each session's future (Belady's analogue) and keeps, within a budget,
what the agent will need again.

Not a policy anyone can run: it reads the recorded assistant messages ahead of the replay. It is
the lower bound the loss columns are read against ("how few recall misses can any policy have at
this budget?"), reported as the bound and never starred.

What it knows. Before a session's first message the engine hands it the recorded session
(`foresee(session)`, the engine's hook for bounds). From it the oracle learns, with the loss
meter's own extraction rules (`ctxsim.loss.identifiers`), the identifiers each later request will
need (`needs`: what a recall miss is counted on) and the identifiers each message holds (`holds`:
what makes an identifier present in the context).

What it does, before each request:

1. Within the budget (the prompt, fixed head included, at most `budget` tokens): nothing. Content
   kept verbatim loses nothing and can still be reduced later.
2. Over it: it folds the oldest items (a tool call always with its results, so no result is left
   without its call nor a call without its result) into one inserted `summary` note until the prompt
   is down to `fold_to` of the budget (fewer, larger folds: fewer cache rewrites), or everything that
   may be folded is. The note holds exactly the identifiers the folded items held that a request from this one
   on will need and that no item left in the context holds; nothing else. Folded items the future
   never needs simply leave. A note of an earlier fold is folded again like any item.
3. Only when everything that may be folded is folded and the note still does not fit are
   identifiers left out of it: a knapsack over the tokens left, each identifier worth the misses
   losing it costs (the requests that need it before a recorded message brings it back), exact by
   dynamic programming for small capacities, by value per token otherwise; ties to the farthest
   next use.

Why it is a bound. Under the model the loss meter counts by (an identifier is present when some
item in the context holds it; a miss is a needed identifier no item holds), steps 1 and 2 lose
nothing the future needs: while the needed identifiers fit in one note beside what may not be
touched (the head and pinned messages), the oracle has no misses at all, so none more than any
policy. Step 3 is the only place it can lose, and only at budgets below the fixed head, the pinned
messages and that note: there a policy keeps some set of identifiers in at most as many tokens,
and the oracle keeps the most valuable set that fits (exact per request; across requests this is
generalised caching, which has no exact fast solution: the property test in
tests/test_oracle.py tries to beat it with every registered policy). Pinned messages (and the
calls of pinned results) are never touched, as for every policy.

Budget. `budget` is tokens (an integer: 50000, 50k) or a fraction of the window (0.6, 60%);
none: the window. The sweep and `ctxsim tune` set it as they set other policies' budgets.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxsim.errors import CtxsimError
from ctxsim.history import Item
from ctxsim.model import Message, Session
from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Drop, Edit, Summarize, View

NOTE_HEAD = "[kept for later]"
DP_CELLS = 400_000  # identifiers x capacity tokens up to which the knapsack is solved exactly


@dataclass(frozen=True)
class OracleParams:
    budget: int | float | None = field(default=None, metadata=field_doc(
        "per-request context at most this: tokens (50000, 50k) or a fraction of the window (0.6, 60%); "
        "none: the window"))
    fold_to: float = field(default=0.8, metadata=field_doc(
        "over the budget, fold down to this fraction of it: fewer, larger folds (fewer cache rewrites), "
        "never a miss more (a fold loses nothing while the note fits)"))

    def __post_init__(self) -> None:
        b = self.budget
        if isinstance(b, bool):
            raise ValueError("budget must be tokens or a fraction of the window")
        if isinstance(b, int) and b <= 0:
            raise ValueError("budget must be a positive number of tokens")
        if isinstance(b, float) and not 0 < b <= 1:
            raise ValueError("a budget given as a fraction of the window must be above 0 and at most 1 (100%)")
        if not 0 < self.fold_to <= 1:
            raise ValueError("fold_to must be above 0 and at most 1")

    def tokens(self, window: int) -> int:
        b = self.budget
        if b is None:
            return window
        if isinstance(b, float):
            return int(b * window)
        return b


Holds = Callable[[Message], frozenset[str]]


@dataclass
class Foresight:
    """What the oracle knows of one session: per identifier, the session indices of the requests that
    need it (sorted) and of the recorded messages that hold it (sorted)."""

    requests: list[int]  # session index of each request (its recorded assistant message), in order
    needed_at: dict[str, list[int]]
    held_at: dict[str, list[int]]

    @classmethod
    def of(cls, session: Session, holds: Holds, needs: Callable[[Session], dict[int, frozenset[str]]]) -> Foresight:
        requests = [i for i, m in enumerate(session.messages) if m.role == "assistant"]
        needed_at: dict[str, list[int]] = {}
        for origin, ids in sorted(needs(session).items()):
            for x in ids:
                needed_at.setdefault(x, []).append(origin)
        held_at: dict[str, list[int]] = {}
        for origin, message in enumerate(session.messages):
            for x in holds(message):
                if x in needed_at:
                    held_at.setdefault(x, []).append(origin)
        return cls(requests, needed_at, held_at)

    def next_need(self, x: str, now: int) -> int | None:
        """The first request at or after session index `now` that needs `x`."""
        at = self.needed_at.get(x)
        if not at:
            return None
        k = bisect_left(at, now)
        return at[k] if k < len(at) else None

    def worth(self, x: str, now: int) -> int:
        """The misses losing `x` now costs: the requests from `now` on that need it before a recorded
        message (arriving after `now`) holds it again."""
        at = self.needed_at.get(x, [])
        start = bisect_left(at, now)
        held = self.held_at.get(x, [])
        k = bisect_right(held, now)
        until = held[k] if k < len(held) else None
        end = len(at) if until is None else bisect_right(at, until)
        return max(0, end - start)


def default_rules(session: Session | None = None) -> tuple[Holds, Callable[[Session], dict[int, frozenset[str]]]]:
    """The loss meter's rules (ctxsim.loss): what a message holds, what each request needs. With `session`,
    its recorded messages' identifiers come from its index (worked out once), others are extracted."""
    from ctxsim.loss.identifiers import message_identifiers

    index = session_index(session) if session is not None else None

    def holds(message: Message) -> frozenset[str]:
        known = index.of(message) if index is not None else None
        return frozenset(message_identifiers(message) if known is None else known)

    return holds, needs_of


_INDEXES: dict[int, tuple[Session, Any]] = {}  # the last few sessions' identifier indexes: oracle runs share them
_SHARED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()  # indexes callers hold (share)


def share(index: Any) -> None:
    """Use the sessions' indexes of `index` (a ctxsim.loss.TraceIndex the caller built for the loss meter)
    instead of building them again: kept only while the caller keeps `index`."""
    for entry in index.sessions.values():
        _SHARED[id(entry.session)] = entry


def session_index(session: Session) -> Any:
    """The loss meter's index of `session` (ctxsim.loss.index.SessionIndex), built once per session."""
    from ctxsim.loss.index import SessionIndex

    shared = _SHARED.get(id(session))
    if shared is not None and shared.session is session:
        return shared
    hit = _INDEXES.get(id(session))
    if hit is not None and hit[0] is session:
        return hit[1]
    if len(_INDEXES) >= 4:  # a few sessions: memory stays bounded by the largest ones
        _INDEXES.clear()
    index = SessionIndex.build(session)
    _INDEXES[id(session)] = (session, index)
    return index


def needs_of(session: Session) -> dict[int, frozenset[str]]:
    """What the loss meter checks at each request (by the session index of its recorded assistant message):
    the identifiers that message uses which an earlier user or tool message held, less those of the
    system prompt and tool definitions (never removed)."""
    from ctxsim.loss.index import SOURCE_ROLES

    index = session_index(session)
    seen: set[str] = set()
    out: dict[int, frozenset[str]] = {}
    for origin, message in enumerate(session.messages):
        ids = index.ids[origin]
        if message.role == "assistant":
            out[origin] = frozenset(x for x in ids if x in seen and x not in index.always)
        elif message.role in SOURCE_ROLES:
            seen.update(ids)
    return out


def rendered(x: str) -> str:
    """How the note writes identifier `x` so that the extraction rules find it again: as it is, else as a
    call (`name(`), else quoted; as it is when nothing works (the property test would see that)."""
    from ctxsim.loss.identifiers import extract

    for form in (x, f"{x}(", f"`{x}`", f'"{x}"', f"'{x}'"):
        if x in extract(form):
            return form
    return x


def note_text(ids: Sequence[str]) -> str:
    """The note: a head line, then each identifier on a line of its own."""
    return NOTE_HEAD + "\n" + "\n".join(rendered(x) for x in ids)


class OraclePolicy:
    """See the module's text. State per session: its foresight and the request counter."""

    name = "oracle"
    bound = True  # reports show it as the bound, never as a choice (never starred)

    def __init__(self, params: OracleParams,
                 rules: tuple[Holds, Callable[[Session], dict[int, frozenset[str]]]] | None = None) -> None:
        self.params = params
        self._given = rules  # rules given (tests); else the loss meter's, per session
        self._rules = rules
        self._sight: Foresight | None = None
        self._request = 0  # requests of this session decided so far
        self._holds: dict[int, tuple[Message, frozenset[str]]] = {}  # id(message) -> (message, what it holds)

    # ------------------------------------------------------------ what the engine tells it
    def foresee(self, session: Session) -> None:
        if self._given is None:
            self._rules = default_rules(session)
        holds, needs = self._rules  # type: ignore[misc]
        self._sight = Foresight.of(session, holds, needs)
        self._request = 0
        self._holds = {}

    def _held(self, message: Message) -> frozenset[str]:
        hit = self._holds.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        assert self._rules is not None
        ids = self._rules[0](message)
        self._holds[id(message)] = (message, ids)
        return ids

    # ------------------------------------------------------------ deciding
    def decide(self, view: View) -> Sequence[Edit]:
        sight = self._sight
        if sight is None:
            raise CtxsimError("policy oracle: needs the session's future (the engine's foresee hook); "
                              "replay it through ctxsim's engine")
        index = self._request
        self._request += 1
        limit = self.params.tokens(view.window)
        prompt = view.prompt_tokens
        if prompt <= limit:
            return ()
        now = sight.requests[index] if index < len(sight.requests) else len(sight.requests)
        groups, fixed = self._groups(view)
        fixed_ids: set[str] = set()
        for item in fixed:
            fixed_ids.update(self._held(item.message))

        def needed(ids: frozenset[str]) -> set[str]:
            return {x for x in ids if x not in fixed_ids and sight.next_need(x, now) is not None}

        wanted = [needed(frozenset().union(*(self._held(i.message) for i in g))) for g in groups]
        elsewhere: Counter[str] = Counter()  # needed identifiers held by the groups not folded yet
        for ids in wanted:
            elsewhere.update(ids)
        folded: list[Item] = []
        folded_tokens = 0
        carried: set[str] = set()  # needed identifiers of the folded groups
        note: list[str] = []
        note_tokens = 0
        target = max(1, int(limit * self.params.fold_to))  # fold down to here: fewer, larger folds
        fits = False
        for group, ids in zip(groups, wanted, strict=True):
            folded.extend(group)
            folded_tokens += sum(i.tokens for i in group)
            carried |= ids
            elsewhere.subtract(ids)
            if prompt - folded_tokens > target:
                continue  # cannot fit yet, whatever the note: it is sized only when it might
            note = sorted(x for x in carried if elsewhere[x] <= 0)
            note_tokens = view.size(Message("summary", note_text(note))) if note else 0
            if prompt - folded_tokens + note_tokens <= target:
                fits = True
                break
        if not folded:
            return ()  # nothing may be touched: the budget is below the head and the pinned messages
        if not fits:  # everything folded: within the budget (if not the target), nothing is lost yet
            note = sorted(carried)
            fits = prompt - folded_tokens + (view.size(Message("summary", note_text(note))) if note else 0) <= limit
        if not fits:  # everything folded: keep what is worth most in the tokens left
            note = self._choose(view, sorted(carried), limit - (prompt - folded_tokens), now)
        dropped = len(carried) - len(note) if not fits else 0
        why = f"folded {len(folded)} message(s); kept {len(note)} identifier(s) needed later" + (
            f", left out {dropped} that did not fit" if dropped else "")
        if not note:
            return (Edit("drop", (Drop(tuple(folded)),), why),)
        message = Message("summary", note_text(note))
        return (Edit("compact", (Summarize(tuple(folded), message),), why),)

    def _groups(self, view: View) -> tuple[list[list[Item]], list[Item]]:
        """The items that may be folded, as groups that leave together (a call's holder and its results),
        oldest first; and those that may not (pinned, the holders of pinned results and their results)."""
        fixed_ids: set[int] = set()
        groups: list[list[Item]] = []
        grouped: set[int] = set()
        for item in view.items:
            if id(item) in grouped:
                continue
            members = [item]
            for call in item.message.tool_calls:
                if view.holder_of(call.id) is item:
                    result = view.result_of(call.id)
                    if result is not None:
                        members.append(result)
            grouped.update(id(m) for m in members)
            if any(m.pinned for m in members):  # a pinned result keeps its call: the group stays whole
                fixed_ids.update(id(m) for m in members)
                continue
            groups.append(members)
        fixed = [item for item in view.items if id(item) in fixed_ids]
        return groups, fixed

    def _choose(self, view: View, candidates: list[str], room: int, now: int) -> list[str]:
        """The identifiers to keep in a note of at most `room` tokens: most misses avoided."""
        sight = self._sight
        assert sight is not None
        frame = view.size(Message("summary", NOTE_HEAD + "\n"))
        space = room - frame
        if space <= 0 or not candidates:
            return []
        blank = view.size(Message("summary", ""))
        sizes = {x: max(1, view.size(Message("summary", rendered(x) + "\n")) - blank) for x in candidates}
        worth = {x: sight.worth(x, now) for x in candidates}
        far = {x: sight.next_need(x, now) or 0 for x in candidates}
        useful = [x for x in candidates if worth[x] > 0 and sizes[x] <= space]
        # ties: the nearest next use first (the farthest is given up first), then the name
        useful.sort(key=lambda x: (-worth[x] / sizes[x], far[x], x))
        if len(useful) * space <= DP_CELLS:
            chosen = _knapsack(useful, sizes, worth, space)
        else:
            chosen, used = [], 0
            for x in useful:
                if used + sizes[x] <= space:
                    chosen.append(x)
                    used += sizes[x]
        keep = sorted(chosen)
        while keep and view.size(Message("summary", note_text(keep))) > room:  # tokens are not quite additive
            keep.remove(min(keep, key=lambda x: (worth[x] / sizes[x], -far[x], x)))
        return keep


def _knapsack(items: list[str], sizes: dict[str, int], worth: dict[str, int], space: int) -> list[str]:
    """0/1 knapsack, exact: the most worth within `space`; among equals the earlier items (their order)."""
    best = [0] * (space + 1)
    take: list[bytearray] = []
    for x in items:
        s, w = sizes[x], worth[x]
        row = bytearray(space + 1)
        for c in range(space, s - 1, -1):
            if best[c - s] + w > best[c]:
                best[c] = best[c - s] + w
                row[c] = 1
        take.append(row)
    chosen = []
    c = space
    for k in range(len(items) - 1, -1, -1):
        if take[k][c]:
            chosen.append(items[k])
            c -= sizes[items[k]]
    return chosen


register(PolicyInfo(
    "oracle", OracleParams, OraclePolicy,
    "bound: Belady's farthest-next-use analogue on the identifiers the recorded future needs (issue 13)",
    "the bound: within a budget, keep exactly what later requests need (reads the future; never a choice)",
    __name__,
    budget=lambda params, tokens: {"budget": tokens}, weight=2.0))
