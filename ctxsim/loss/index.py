"""The identifiers of every recorded message of a trace, worked out once and shared by every policy's run.

`TraceIndex.of(session)` gives a `SessionIndex`: the identifiers of each message (by its index in
the session), a look-up by message identity (the engine hands the meter the recorded assistant
message itself), and the identifiers always in the prompt (the system prompt and the tool
definitions, which no policy removes). Built on first use per session and kept; the runs of a
compare run in forked workers, which inherit an index built before the fork.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.loss.identifiers import extract, message_identifiers
from ctxsim.model import Message, Session

SOURCE_ROLES = ("user", "tool")  # where an identifier the agent later needs may come from


@dataclass
class SessionIndex:
    session: Session
    ids: list[tuple[str, ...]]  # per message, in session order
    by_message: dict[int, int]  # id(message) -> its index in the session
    always: frozenset[str]  # in the system prompt or the tool definitions: never removed

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
        return cls(session, ids, {id(m): i for i, m in enumerate(session.messages)}, always)

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
