"""The identifiers of every recorded message of a trace, worked out once and shared by every policy's run.

`TraceIndex.of(session)` gives a `SessionIndex`: the identifiers of each message (by its index in
the session), a look-up by message identity (the engine hands the meter the recorded assistant
message itself), and the identifiers always in the prompt (the system prompt and the tool
definitions, which no policy removes). Built on first use per session and kept; the runs of a
compare run in forked workers, which inherit an index built before the fork.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

from ctxsim.loss.identifiers import extract, message_identifiers
from ctxsim.model import Message, Session

SOURCE_ROLES = ("user", "tool")  # where an identifier the agent later needs may come from


@dataclass
class SessionIndex:
    session: Session
    ids: list[tuple[str, ...]]  # per message, in session order: those some answer of the session uses
    by_message: dict[int, int]  # id(message) -> its index in the session
    always: frozenset[str]  # in the system prompt or the tool definitions: never removed
    uses: dict[int, tuple[tuple[str, int, int], ...]]  # request's message index -> (identifier, base count, source)
    vocabulary: frozenset[str] = frozenset()  # the identifiers some answer uses (`ids` holds only these)
    derived: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a text a policy wrote -> `kept` identifiers

    @classmethod
    def build(cls, session: Session, memo: dict[str, tuple[str, ...]] | None = None) -> SessionIndex:
        """`memo`: identifiers of message texts already extracted (a text repeated is extracted once)."""
        memo = {} if memo is None else memo
        ids = []
        for m in session.messages:
            if m.tool_calls or not m.content:
                ids.append(message_identifiers(m))
                continue
            found = memo.get(m.content)
            if found is None:
                found = memo[m.content] = message_identifiers(m)
            ids.append(found)
        head = [session.system or ""]
        if session.tools:
            head.append(json.dumps(list(session.tools), sort_keys=True, default=str))
        always = frozenset(extract("\n".join(head)))
        # Only what some answer uses can ever be a miss: every message's identifiers are cut down to those (the
        # runs then count nothing else)
        vocabulary = frozenset(x for m, found in zip(session.messages, ids, strict=True) if m.role == "assistant"
                               for x in found) - always
        ids = [tuple(filter(vocabulary.__contains__, found)) for found in ids]
        # Each request's identifiers that a user or tool message gave earlier, with how many recorded messages
        # before it hold each (the base of every run's live count) and the latest such source.
        counts: Counter[str] = Counter()
        source: dict[str, int] = {}
        uses: dict[int, tuple[tuple[str, int, int], ...]] = {}
        for i, m in enumerate(session.messages):
            found = ids[i]
            if m.role == "assistant" and found:
                entry = tuple((x, counts[x], source[x]) for x in found if x in source and x not in always)
                if entry:
                    uses[i] = entry
            counts.update(found)
            if m.role in SOURCE_ROLES:
                source.update(zip(found, repeat(i)))
        return cls(session, ids, {id(m): i for i, m in enumerate(session.messages)}, always, uses, vocabulary)

    def kept(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """`ids` cut down to those some answer of the session uses."""
        return tuple(filter(self.vocabulary.__contains__, ids))

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


__all__ = ["SOURCE_ROLES", "SessionIndex", "TraceIndex"]
