"""The identifiers of every recorded message of a trace, worked out once and shared by every policy's run.

`TraceIndex.of(session)` gives a `SessionIndex`: the identifiers of each message (by its index in
the session), a look-up by message identity (the engine hands the meter the recorded assistant
message itself), and the identifiers always in the prompt (the system prompt and the tool
definitions, which no policy removes). Built on first use per session and kept; the runs of a
compare run in forked workers, which inherit an index built before the fork. A compare on several
processes builds it in one of its own while this one counts the trace's tokens (`built` there,
`adopt` here: only what was worked out travels, not the sessions).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

from ctxsim.loss.identifiers import extract, extract_many, identifiers_of_lines, message_text
from ctxsim.loss.kinds import discounted, has_marker, redacted_identifiers
from ctxsim.model import Message, Session

SOURCE_ROLES = ("user", "tool")  # where an identifier the agent later needs may come from

try:  # `count(counter, items)`: each item counted up by one, in C (what Counter.update does, less its type checks)
    from collections import _count_elements as count  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - another Python than CPython
    def count(mapping: dict[str, int], items: Iterable[str]) -> None:
        get = mapping.get
        for x in items:
            mapping[x] = get(x, 0) + 1


def _held(parts: list[str], lines: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The identifiers of a text of lines `parts`, from its lines' (`lines`: the identifiers kept of each)."""
    some = list(filter(None, map(lines.__getitem__, parts)))
    if not some:
        return ()
    if len(some) == 1:
        return some[0]
    return tuple(dict.fromkeys(chain.from_iterable(some)))


@dataclass
class SessionIndex:
    session: Session
    ids: list[tuple[str, ...]]  # per message, in session order: those some answer of the session uses
    by_message: dict[int, int]  # id(message) -> its index in the session
    always: frozenset[str]  # in the system prompt or the tool definitions: never removed
    uses: dict[int, tuple[tuple[str, int, int], ...]]  # request's message index -> (identifier, base count, source)
    vocabulary: frozenset[str] = frozenset()  # the identifiers some answer uses (`ids` holds only these)
    canon: dict[str, str] = field(default_factory=dict)  # each of the vocabulary -> itself (the one object kept of it)
    derived: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a text a policy wrote -> `kept` identifiers
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a line of a long text a policy wrote -> the same
    # `uses` by the identity of the request's recorded message, as columns: (identifiers, base counts, sources)
    checks: dict[int, tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    redacted: int = 0  # distinct texts holding a redaction marker: what they hid is unknown (no misses from it)

    def __post_init__(self) -> None:
        messages = self.session.messages
        self.checks = {id(messages[i]): (tuple(x for x, _, _ in entry), tuple(base for _, base, _ in entry),
                                         tuple(source for _, _, source in entry)) for i, entry in self.uses.items()}

    @classmethod
    def build(cls, session: Session, memo: dict[str, tuple[str, ...]] | None = None) -> SessionIndex:
        """`memo`: identifiers of answer texts already extracted (a text repeated is extracted once).

        The answers (assistant messages) are read first, in full: what they use is the vocabulary, and only it
        can ever be a miss. Every other message is read for the vocabulary only, line by line (no rule matches
        across a line, so a text's identifiers are its lines': `identifiers.extract_by_line`): each distinct line
        of the session is classified once and kept as the vocabulary's identifiers it holds (mostly none), so a
        tool result is a few look-ups of its lines. A message's identifiers keep `extract_by_line`'s order for
        these (what a message holds is a set: only the answers' order, which `uses` follows, is ever shown)."""
        memo = {} if memo is None else memo
        messages = session.messages
        head = [session.system or ""]
        if session.tools:
            head.append(json.dumps(list(session.tools), sort_keys=True, default=str))
        always = frozenset(extract("\n".join(head)))
        read = [message_text(m) for m in messages]
        answers = [i for i, m in enumerate(messages) if m.role == "assistant"]
        new = list(dict.fromkeys(read[i] for i in answers if read[i] not in memo))
        memo.update(zip(new, extract_many(new), strict=True))
        vocabulary = frozenset(chain.from_iterable(memo[read[i]] for i in answers)) - always
        # bare numbers and units never count (`kinds.discounted`), nor what a redaction marker hides
        hidden: set[str] = set()
        redacted = 0
        for text in dict.fromkeys(read):
            if has_marker(text):
                redacted += 1
                hidden |= redacted_identifiers(text)
        vocabulary = frozenset(x for x in vocabulary if x not in hidden and not discounted(x))
        # each identifier kept as one object, the vocabulary's: the meter's counts find it by identity (and their
        # tables stay a few hundred keys touched over and over, not copies of them all over the memory)
        canon = {x: x for x in vocabulary}
        one = canon.get
        # the other messages' texts: every line of them classified at once (each distinct line once), then each
        # text's identifiers put together from the vocabulary's identifiers of its lines (a text met again: split once;
        # the distinct lines in a set, sorted: the same order whatever the hash seed)
        others = {text: text.split("\n") for text in dict.fromkeys(
            text for text, m in zip(read, messages, strict=True) if m.role != "assistant")}
        fresh = sorted(set().union(*others.values()))
        lines = {line: tuple(filter(None, map(one, found))) if found else ()
                 for line, found in zip(fresh, identifiers_of_lines(fresh), strict=True)}
        held = {text: _held(parts, lines) for text, parts in others.items()}
        ids = [tuple(filter(None, map(one, memo[text]))) if m.role == "assistant" else held[text]
               for text, m in zip(read, messages, strict=True)]
        # Each request's identifiers that a user or tool message gave earlier, with how many recorded messages
        # before it hold each (the base of every run's live count) and the latest such source.
        counts: Counter[str] = Counter()
        source: dict[str, int] = {}
        uses: dict[int, tuple[tuple[str, int, int], ...]] = {}
        for i, m in enumerate(messages):
            found = ids[i]
            if m.role == "assistant" and found:
                entry = tuple((x, counts[x], source[x]) for x in found if x in source and x not in always)
                if entry:
                    uses[i] = entry
            count(counts, found)
            if m.role in SOURCE_ROLES:
                source.update(zip(found, repeat(i)))
        return cls(session, ids, {id(m): i for i, m in enumerate(messages)}, always, uses, vocabulary, canon,
                   redacted=redacted)

    def kept(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """`ids` cut down to those some answer of the session uses (the vocabulary's own objects)."""
        return tuple(filter(None, map(self.canon.get, ids)))

    def uses_of(self, message: Message) -> tuple[tuple[str, int, int], ...]:
        """What a recorded assistant message uses that came from an earlier user or tool message: (identifier,
        recorded messages before it holding it, the latest of those sources)."""
        i = self.by_message.get(id(message))
        return () if i is None else self.uses.get(i, ())

    def of(self, message: Message) -> tuple[str, ...] | None:
        """The identifiers of a recorded message of this session (None: not one of its messages)."""
        i = self.by_message.get(id(message))
        return None if i is None else self.ids[i]


@dataclass
class TraceIndex:
    """One per trace (or stream of sessions); `of` builds a session's index on first use."""

    sessions: dict[int, SessionIndex] = field(default_factory=dict)
    texts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # across sessions: a text repeated, once

    def of(self, session: Session) -> SessionIndex:
        index = self.sessions.get(id(session))
        if index is None or index.session is not session:
            if len(self.texts) > 100_000:
                self.texts.clear()
            index = self.sessions[id(session)] = SessionIndex.build(session, self.texts)
        return index

    def prime(self, sessions: Sequence[Session]) -> TraceIndex:
        for session in sessions:
            self.of(session)
        return self

    def forget(self, session: Session) -> None:
        self.sessions.pop(id(session), None)

    def built(self, sessions: Sequence[Session]) -> list[tuple[Any, ...]]:
        """What `prime(sessions)` worked out, without the sessions (to travel between processes):
        `adopt` makes the index of it again."""
        self.prime(sessions)
        out = []
        for session in sessions:
            index = self.of(session)
            out.append((index.ids, index.always, index.uses, index.vocabulary, index.canon, index.redacted))
        return out

    def adopt(self, sessions: Sequence[Session], built: list[tuple[Any, ...]]) -> TraceIndex:
        """The index `built(sessions)` gave (in another process), for these same sessions."""
        for session, (ids, always, uses, vocabulary, canon, redacted) in zip(sessions, built, strict=True):
            self.sessions[id(session)] = SessionIndex(session, ids, {id(m): i for i, m in enumerate(session.messages)},
                                                      always, uses, vocabulary, canon, redacted=redacted)
        return self


__all__ = ["SOURCE_ROLES", "SessionIndex", "TraceIndex", "count"]
