"""The loss meter: what a policy removed that the recorded agent later needed (recall misses).

A `LossMeter` is a `policies.base.Observer`: the engine tells it of every append and every applied
splice, exactly as it tells a policy, and calls `requested(number, message, edits)` after the stages
of a request decided and before the recorded assistant `message` is appended. From these alone
(no rescanning of the history) it keeps, per session:

- `live[x]`: how many live items hold identifier x, as the recorded messages appended so far hold
  it (`SessionIndex.uses`: worked out once per trace, shared by every run) plus what this run's
  edits changed (`put[x] - taken[x]`: items put in counted up, removed items counted down). A stub, a
  truncation or a summary that still holds it counts: a policy's copy of a recorded message (a stub, a truncation)
  holds those of the original's identifiers it still contains as text; a text a policy wrote from several (a
  summary, a marker) is extracted when it appears (line by line when long, each line once);
- `source[x]`: the latest user or tool message (its session index) whose recorded text held x
  (in the index too);
- `gone[x]`: the last edit (request, stage, event kind) that removed an item holding x: when x's
  count is zero, that is the edit that took it there.

At request k, an identifier the recorded assistant message uses is a *miss* when it came earlier
from a user or tool message, no live item holds it, and it is not in the system prompt or tool
definitions (`index.SessionIndex.always`); one missed inside another from the same message at the
same request (`conftest.py` in `tests/conftest.py`) counts once, as the longer. Under `none` nothing
is removed, so there is none.

Re-fetches (open-loop cannot know what the agent would have done; this bounds it): a tool result
(not a write's or an edit's: `observed.refetchable`) is re-read once its misses weigh a whole
identifier (`kinds.REFETCH_WEIGHTS`: a path, an error, a URL, a command; two symbols; a name inside
another missed at the same request adds nothing), sized as the product's read tool re-reads it
(`observed.reread_tokens`); a source is re-read once, and again only after the policy next removes
or stubs a tool result (the re-read copy would have gone the same way). A summary a (simulated)
model wrote (tagged `modelled`) holds, besides its text's identifiers, the share of what the agent
had used that product summaries keep (`kinds.kept_by_summary`). Bare numbers, units and what a
redaction marker hides are never in the vocabulary (`index`), so never a miss.
`refetch.price` prices them. Work per request: proportional to what was appended and edited and to
the identifiers the request's message uses.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import ge, sub
from typing import Any

from ctxsim.history import Item
from ctxsim.loss.identifiers import extract, extract_by_line, identifiers_of_lines, message_identifiers
from ctxsim.loss.index import SOURCE_ROLES, SessionIndex, TraceIndex, count
from ctxsim.loss.kinds import kept_by_summary, refetch_weight
from ctxsim.loss.observed import refetchable, reread_tokens
from ctxsim.model import Message, Session
from ctxsim.policies.compact import MODELLED

DERIVED_TEXT_CHARS = 2_000  # a text a policy wrote longer than this is extracted line by line
LINE_MEMO_ENTRIES = 200_000  # a session's lines of long texts policies wrote, with the identifiers counted of each
BULK = 4  # an edit removing this many items or more has their identifiers counted down together
STUBS = True  # an edit replacing one recorded message by a copy counts down only what the copy dropped
CARRY = True  # a long text a policy wrote that carries a removed one forward reads only its new lines
ARRIVAL = "arrival"  # the event kind of a removal made as the message arrived (truncated on append)


@dataclass(frozen=True, slots=True)
class Removal:
    request: int
    stage: str
    kind: str


@dataclass(frozen=True, slots=True)
class Miss:
    request: int  # the request that needed it (1-based over the run)
    session: str
    identifier: str
    source: int  # the session index of the user or tool message it came from
    role: str
    tool: str | None
    source_tokens: int  # that message's size as it arrived in the history
    removed: Removal | None  # the edit that removed it (None: not known)


@dataclass(frozen=True, slots=True)
class Refetch:
    request: int
    session: str
    source: int
    tool: str | None
    tokens: int


@dataclass
class LossReport:
    """One run's loss: every miss and re-fetch, and the probe checks (probes.ProbeSet)."""

    misses: list[Miss] = field(default_factory=list)
    refetches: list[Refetch] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)  # per probe: {"probe", "at": {request: bool}}
    refetch_cost_usd: Any = None  # Decimal once priced (refetch.price)

    @property
    def recall_misses(self) -> int:
        return len(self.misses)

    @property
    def distinct_identifiers(self) -> int:
        return len({m.identifier for m in self.misses})

    @property
    def miss_source_tokens(self) -> int:
        """Tokens of the distinct messages the missed identifiers came from."""
        sources = {(m.session, m.source): m.source_tokens for m in self.misses}
        return sum(sources.values())

    @property
    def probes_lost(self) -> int | None:
        """Probes not in the managed context at the end (None: no probes)."""
        if not self.probes:
            return None
        return sum(1 for p in self.probes if not p["end"])


def _line_counts(lines: list[str], vocabulary: dict[str, str] | None,
                 memo: dict[str, tuple[str, ...]] | None = None) -> Counter[str]:
    """How many of `lines` (each occurrence) hold each identifier (those of `vocabulary` only, when given: each
    identifier -> the one object kept of it, `SessionIndex.canon`).
    `memo`: line -> the identifiers counted of it (for one vocabulary), filled in here; counted in C."""
    memo = {} if memo is None else memo
    held = list(map(memo.get, lines))
    if None in held:
        if len(memo) > LINE_MEMO_ENTRIES:
            memo.clear()
        fresh = list(dict.fromkeys(line for line, known in zip(lines, held, strict=True) if known is None))
        for line, found in zip(fresh, identifiers_of_lines(fresh), strict=True):
            memo[line] = found if vocabulary is None or not found else tuple(filter(None, map(vocabulary.get, found)))
        held = list(map(memo.__getitem__, lines))
    return Counter(chain.from_iterable(held))  # type: ignore[arg-type]


def _carried(old: str, old_counts: Counter[str], body: str, vocabulary: dict[str, str] | None,
             memo: dict[str, tuple[str, ...]] | None = None) -> Counter[str] | None:
    """`body`'s line counts from those of `old`'s lines after its first, when `body` opens with whole lines of it
    that run to its end (None otherwise): less the old lines before them, plus `body`'s lines after them."""
    cut = old.find("\n")
    if cut < 0:
        return None
    old_body = old[cut + 1:]
    end = body.find("\n")
    first = body if end < 0 else body[:end]
    for at in _line_starts(old_body, first):
        kept = len(old_body) - at
        if body.startswith(old_body[at:]) and (kept == len(body) or body[kept] == "\n"):
            counts = Counter(old_counts)
            if at:
                counts.subtract(_line_counts(old_body[:at - 1].split("\n"), vocabulary, memo))
            if kept < len(body):
                counts.update(_line_counts(body[kept + 1:].split("\n"), vocabulary, memo))
            return counts
    return None


def _line_starts(text: str, line: str, most: int = 4) -> Iterator[int]:
    """Where the first few lines of `text` that start with `line` start."""
    if text.startswith(line):
        yield 0
        most -= 1
    at = 0
    for _ in range(most):
        found = text.find("\n" + line, at)
        if found < 0:
            return
        at = found + 1
        yield at


def _copy_ids(message: Message, recorded: tuple[str, ...]) -> tuple[str, ...]:
    """The identifiers of a policy's copy of a recorded message (a stub, a truncation, thinking or inputs cleared):
    the original's (`recorded`) it still holds as text, a substring test each (no second extraction)."""
    text = message.content
    if message.tool_calls:
        text = "\n".join([text, *(call.arguments_json for call in message.tool_calls)])
    return tuple([x for x in recorded if x in text])


class LossMeter:
    """Observe one run (a fresh meter per run); `report` holds what it found."""

    def __init__(self, index: TraceIndex, sessions: Sequence[Session] = (), probes: Any = None) -> None:
        self.index = index
        self._queue: list[Session] = list(sessions)  # the sessions to come, in order (start() takes the next)
        self.report = LossReport()
        self.probes = probes  # probes.ProbeSet or None
        self._probe_state = probes.state() if probes is not None else None
        self._s: SessionIndex | None = None
        self._number = 0  # the last request number seen
        self._memo: dict[str, tuple[str, ...]] = {}  # texts a policy wrote -> their identifiers (no session yet)
        self._lines: dict[str, tuple[str, ...]] = {}  # lines of long texts a policy wrote (no session yet)
        self._reset()

    def _reset(self) -> None:
        # live count of x = base count (recorded messages appended so far: SessionIndex.uses) + what the run's edits
        # (and rewrites on arrival) put in less what they took out: `put[x] - taken[x]` (each counted in C)
        self.put: Counter[str] = Counter()
        self.taken: Counter[str] = Counter()
        self.written: dict[int, tuple[Item, tuple[str, ...]]] = {}  # id(item) -> item a policy wrote, its identifiers
        self.bodies: dict[int, Counter[str]] = {}  # id(item) -> a long text's lines after its first holding each
        self.items: dict[int, Item] | None = {} if self._probe_state is not None else None  # every live item (probes)
        self.sizes: dict[int, int] = {}  # source session index -> tokens as it arrived
        self.gone: dict[str, list[Any]] = {}  # identifier -> [request, stage, kind] of the last edit removing it
        self._refs: list[tuple[int, list[Any]]] = []  # (splice ordinal, its removal record) of this request's edits
        self._splices = 0
        self._tool_removed = False  # this request's edits removed or stubbed a tool result
        self._refetched: set[int] = set()
        self._pending: dict[int, float] = {}  # source -> the weight of what it lost, not yet a re-fetch

    # ------------------------------------------------------------ the engine's calls
    def push(self, session: Session) -> None:
        """The next session to be replayed (a stream hands them over one at a time)."""
        self._queue.append(session)

    def start(self) -> None:
        self._s = self.index.of(self._queue.pop(0))
        self._reset()

    def _ids(self, item: Item, carried: Sequence[tuple[str, Counter[str]]] = ()) -> tuple[str, ...]:
        """The identifiers `item` holds; `carried`: (text, `bodies` entry) of the long texts a
        policy wrote that the same edit removed (a summary may carry one forward)."""
        message = item.message
        s = self._s
        if item.origin >= 0 and s is not None:
            own = s.of(message)
            return own if own is not None else _copy_ids(message, s.ids[item.origin])
        kept = s.kept if s is not None else tuple
        if message.tool_calls:
            return kept(message_identifiers(message))
        text = message.content
        if len(text) > DERIVED_TEXT_CHARS:
            return self._long(item, text, carried)
        memo = s.derived if s is not None else self._memo  # a short text a policy wrote: once for all the runs
        ids = memo.get(text)
        if ids is None:
            if len(memo) > 4096:
                memo.clear()
            ids = memo[text] = kept(extract(text))
        return ids

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        items = self.items
        if not removed and len(added) == 1 and not added[0].inserted:  # an append
            item = added[0]
            if items is not None:
                items[id(item)] = item
            origin = item.origin
            s = self._s
            if origin < 0 or s is None:
                return
            message = item.message
            if message.role in SOURCE_ROLES:
                self.sizes[origin] = max(0, item.tokens)  # a size is never negative
            if message is s.session.messages[origin]:  # as recorded: counted in the base counts already
                return
            # rewritten as it arrived (truncated): the rewrite's identifiers instead of the recorded ones
            recorded = s.ids[origin]
            ids = self._ids(item)
            self.written[id(item)] = (item, ids)
            count(self.taken, recorded)
            count(self.put, ids)
            kept = set(ids)
            arrival = [self._number + 1, "", ARRIVAL]
            self.gone.update((x, arrival) for x in recorded if x not in kept)
            return
        self._splices += 1
        ref: list[Any] = [self._number + 1, "", "edit"]  # filled in when the request is sent (`requested`)
        self._refs.append((self._splices, ref))
        written = self.written
        taken = self.taken
        gone = self.gone
        s = self._s
        if STUBS and len(removed) == 1 and len(added) == 1 and items is None and s is not None:  # clear, mask, tiered
            old, new = removed[0], added[0]
            origin = old.origin
            if origin >= 0 and new.origin == origin and old.message is s.session.messages[origin] \
                    and s.of(new.message) is None:
                # a recorded message replaced by a copy of it: the copy holds some of its identifiers (`_ids`), the
                # rest are counted down; every one of them was removed by this edit
                written.pop(id(old), None)
                recorded = s.ids[origin]
                ids = _copy_ids(new.message, recorded)
                written[id(new)] = (new, ids)
                if len(ids) != len(recorded):  # what the copy no longer holds counted down (`ids` is of `recorded`)
                    count(taken, recorded)
                    count(self.put, ids)
                if old.message.role == "tool":
                    self._tool_removed = True
                gone.update(zip(recorded, repeat(ref)))
                return
        retained: tuple[str, ...] = ()
        if any(MODELLED in item.tags for item in added):  # a model summary keeps some of what the agent had used
            retained = self._retained(removed)
        carried: list[tuple[str, Counter[str]]] = []  # the long texts a policy wrote that this edit removes
        if len(removed) >= BULK and s is not None:  # a compaction: the removed items' identifiers counted at once
            self._remove_many(removed, ref, carried)
            removed = ()
        for item in removed:
            if items is not None:
                items.pop(id(item), None)
            entry = written.pop(id(item), None)
            if entry is not None:
                ids = entry[1]
                body = self.bodies.pop(id(item), None)
                if body is not None:
                    carried.append((item.message.content, body))
            else:
                own = s.of(item.message) if s is not None else None
                if own is None:
                    continue
                ids = own
            if item.message.role == "tool":
                self._tool_removed = True
            count(taken, ids)
            gone.update(zip(ids, repeat(ref)))  # the last edit that removed x is the one that took it to zero
        put = self.put
        for item in added:
            if items is not None:
                items[id(item)] = item
            ids = self._ids(item, carried)
            if retained and MODELLED in item.tags:
                ids = tuple(dict.fromkeys(ids + retained))
            written[id(item)] = (item, ids)
            count(put, ids)

    def _retained(self, removed: Sequence[Item]) -> tuple[str, ...]:
        """What a model summary of `removed` keeps (`kinds.kept_by_summary`) of the identifiers they gave (a user or
        tool message, an earlier summary) that the agent had used in them (an answer or an earlier summary)."""
        s = self._s
        if s is None:
            return ()
        said: set[str] = set()
        given: dict[str, None] = {}
        for item in removed:
            entry = self.written.get(id(item))
            ids = entry[1] if entry is not None else s.of(item.message)
            if not ids:
                continue
            role = item.message.role
            if role in ("assistant", "summary"):
                said.update(ids)
            if role != "assistant":
                given.update(dict.fromkeys(ids))
        return tuple(x for x in given if x in said and kept_by_summary(x))

    def _long(self, item: Item, text: str, carried: Sequence[tuple[str, Counter[str]]]) -> tuple[str, ...]:
        """The identifiers of a long text a policy wrote (a summary that keeps earlier summaries' lines, zones',
        hierarchical's), line by line: no rule spans a line, so its identifiers are its lines' (each distinct line
        classified once, for all runs). Kept with it: how many of its lines after the first hold each identifier.
        A summary that carries a removed one forward (whole lines of the old one after its first, from some line
        to its end, open the new one after its first line: a rolling summary, its oldest lines dropped) starts
        from the old one's counts, less its dropped lines', plus its new lines': only those lines are read."""
        s = self._s
        vocabulary = s.canon if s is not None else None
        cut = text.find("\n")
        head, body = (text, "") if cut < 0 else (text[:cut], text[cut + 1:])
        counts: Counter[str] | None = None
        memo = s.lines if s is not None else self._lines
        if CARRY:
            for old, old_counts in carried:
                counts = _carried(old, old_counts, body, vocabulary, memo)
                if counts is not None:
                    break
        if counts is None:
            counts = _line_counts(body.split("\n"), vocabulary, memo)
        self.bodies[id(item)] = counts
        first = extract_by_line(head)
        if vocabulary is not None:
            first = tuple(filter(None, map(vocabulary.get, first)))
        return tuple(dict.fromkeys(chain(first, (x for x, n in counts.items() if n > 0))))

    def _remove_many(self, removed: Sequence[Item], ref: list[Any], carried: list[tuple[str, Counter[str]]]) -> None:
        """`observe`'s removals, many at once: the same counts and removal records, one update for all."""
        s = self._s
        assert s is not None
        items = self.items
        if items is not None:
            for key in map(id, removed):
                items.pop(key, None)
        by_message, ids = s.by_message, s.ids
        held: list[tuple[str, ...]] = []
        tool = self._tool_removed
        bodies = self.bodies
        for item, entry in zip(removed, map(self.written.pop, map(id, removed), repeat(None)), strict=True):
            if entry is not None:
                held.append(entry[1])
                body = bodies.pop(id(item), None)
                if body is not None:
                    carried.append((item.message.content, body))
            else:
                at = by_message.get(id(item.message))
                if at is None:
                    continue
                held.append(ids[at])
            if not tool and item.message.role == "tool":
                tool = True
        self._tool_removed = tool
        every = list(chain.from_iterable(held))
        count(self.taken, every)
        self.gone.update(zip(every, repeat(ref)))

    def requested(self, number: int, message: Message, edits: Sequence[tuple[str, str, int]]) -> None:
        """Request `number` is about to be sent; `message` is the recorded answer; `edits` the (stage,
        event kind, splices) of every edit this request's stages applied, in order."""
        self._number = number
        refs = self._refs
        if refs and len(edits) == 1 and len(refs) <= edits[0][2]:  # one edit made them all (splices 1..n of it)
            stage, kind = edits[0][0], edits[0][1]
            for _, ref in refs:
                ref[0], ref[1], ref[2] = number, stage, kind
            refs.clear()
        if refs:
            bounds: list[tuple[int, str, str]] = []
            total = 0
            for stage, kind, count in edits:
                total += count
                bounds.append((total, stage, kind))
            for ordinal, ref in self._refs:
                stage, kind = next(((st, k) for end, st, k in bounds if ordinal <= end), ("", "edit"))
                ref[0], ref[1], ref[2] = number, stage, kind
            self._refs.clear()
        self._splices = 0
        if self._tool_removed:
            self._refetched.clear()
            self._pending.clear()
            self._tool_removed = False
        s = self._s
        taken = self.taken
        if s is not None and taken:  # nothing taken out yet: every identifier the base counts hold is live
            check = s.checks.get(id(message))
            if check is not None:
                # x is missed when no live item holds it: base + put[x] - taken[x] <= 0 (worked out in C; seldom true;
                # taken[x] >= base first, which it needs, and which most often fails)
                xs, bases, origins = check
                took = list(map(taken.get, xs, repeat(0)))
                if any(map(ge, took, bases)) and any(map(ge, lost := list(
                        map(sub, took, map(self.put.get, xs, repeat(0)))), bases)):
                    found = [(x, o) for x, base, o, n in zip(xs, bases, origins, lost, strict=True) if n >= base]
                    if 1 < len(found) <= 256:  # `conftest.py` in `tests/conftest.py` from the same message: one miss
                        found = [(x, o) for x, o in found
                                 if not any(o == o2 and x != x2 and x in x2 for x2, o2 in found)]
                    # a name inside another missed at this request (a file name in its path) adds nothing to re-fetch
                    inner = {x for x, _ in found if any(x != x2 and x in x2 for x2, _ in found)} \
                        if 1 < len(found) <= 256 else ()
                    for x, origin in found:
                        self._miss(number, x, origin, s, x not in inner)
        if self._probe_state is not None and number in self.probes.at:
            self._probe_state.check(number, self._texts())

    def _miss(self, number: int, x: str, origin: int, s: SessionIndex, weighs: bool = True) -> None:
        m = s.session.messages[origin]
        tool = m.name if m.role == "tool" else None
        tokens = self.sizes.get(origin, 0)
        ref = self.gone.get(x)
        removal = Removal(ref[0], ref[1], ref[2]) if ref is not None else None
        self.report.misses.append(Miss(number, s.session.id, x, origin, m.role, tool, tokens, removal))
        if m.role == "tool" and origin not in self._refetched and refetchable(s.session.source, tool):
            # re-fetched once what it lost from that result weighs a whole identifier (`kinds.REFETCH_WEIGHTS`: a path,
            # an error, a URL, a command alone; two symbols or quoted strings)
            need = self._pending.get(origin, 0.0) + (refetch_weight(x) if weighs else 0.0)
            if need < 1.0:
                self._pending[origin] = need
                return
            self._pending.pop(origin, None)
            self._refetched.add(origin)
            # sized as the agent would fetch it again: the product's read tool re-reads one usual slice of a file
            self.report.refetches.append(Refetch(number, s.session.id, origin, tool,
                                                 reread_tokens(s.session.source, tool, tokens)))

    def _texts(self) -> list[str]:
        """The managed context's texts as they stand: the head (system, tools), then every live item's."""
        s = self._s
        out: list[str] = []
        if s is not None:
            out.append(s.session.system or "")
        for item in (self.items or {}).values():
            message = item.message
            out.append(message.content)
            for call in message.tool_calls:
                out.append(call.arguments_json)
        return out

    def finish(self) -> LossReport:
        """The report, the probes checked at the end of the run."""
        if self._probe_state is not None:
            self._probe_state.check(None, self._texts())
            self.report.probes = self._probe_state.results()
        return self.report


__all__ = ["ARRIVAL", "LossMeter", "LossReport", "Miss", "Refetch", "Removal"]


# ---------------------------------------------------------------- run.json
DIGEST = re.compile(r"sha256:[0-9a-f]{12}/\d+")
MISS_COLUMNS = ("request", "session", "identifier", "source", "role", "tool", "source_tokens", "removed_request",
                "removed_stage", "removed_kind")
REFETCH_COLUMNS = ("request", "session", "source", "tool", "tokens")


def shown(identifier: str, content: bool) -> str:
    """An identifier as outputs show it: itself (secrets redacted) with --include-content, else a digest
    and its length (no trace content)."""
    if DIGEST.fullmatch(identifier):  # read back from a run.json written without content: shown as it was
        return identifier
    if content:
        from ctxsim._support.redact import redact

        return redact(identifier)
    import hashlib

    return f"sha256:{hashlib.sha256(identifier.encode('utf-8')).hexdigest()[:12]}/{len(identifier)}"


def to_json(report: LossReport, cost_usd: Any, content: bool) -> dict[str, Any]:
    from decimal import Decimal

    refetch = report.refetch_cost_usd if report.refetch_cost_usd is not None else Decimal(0)
    misses = [[m.request, m.session, shown(m.identifier, content), m.source, m.role, m.tool, m.source_tokens,
               m.removed.request if m.removed else None, m.removed.stage if m.removed else None,
               m.removed.kind if m.removed else None] for m in report.misses]
    distinct = report.distinct_identifiers
    return {
        "recall_misses": report.recall_misses,
        "distinct_identifiers": distinct,
        "miss_source_tokens": report.miss_source_tokens,
        "refetches": len(report.refetches),
        "refetch_tokens": sum(f.tokens for f in report.refetches),
        "refetch_cost_usd": str(refetch),
        "cost_with_refetch_usd": str(Decimal(cost_usd) + refetch),
        "probes": report.probes,
        "probes_lost": report.probes_lost,
        "misses": {"columns": list(MISS_COLUMNS), "values": [list(c) for c in zip(*misses, strict=True)] if misses
                   else [[] for _ in MISS_COLUMNS]},
        "refetch_list": {"columns": list(REFETCH_COLUMNS),
                         "values": [list(c) for c in zip(*[[f.request, f.session, f.source, f.tool, f.tokens]
                                                            for f in report.refetches], strict=True)]
                         if report.refetches
                         else [[] for _ in REFETCH_COLUMNS]},
    }


def from_json(data: dict[str, Any]) -> LossReport:
    from decimal import Decimal

    def rows(block: dict[str, Any]) -> list[dict[str, Any]]:
        names, values = block["columns"], block["values"]
        return [dict(zip(names, r, strict=True)) for r in zip(*values, strict=True)]

    misses = [Miss(r["request"], r["session"], r["identifier"], r["source"], r["role"], r["tool"], r["source_tokens"],
                   Removal(r["removed_request"], r["removed_stage"], r["removed_kind"])
                   if r["removed_request"] is not None else None) for r in rows(data["misses"])]
    refetches = [Refetch(r["request"], r["session"], r["source"], r["tool"], r["tokens"])
                 for r in rows(data["refetch_list"])]
    return LossReport(misses, refetches, list(data.get("probes") or []), Decimal(data["refetch_cost_usd"]))
