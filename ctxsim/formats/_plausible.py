"""Model names a reader took from a trace, kept only where they can be model ids.

A `model` field is echoed in tables, notes, run.json and error lines; a trace whose `model` holds a
credential or a command (a mangled or hostile log) must not carry it there. Every distinct name is
checked once (`redact.plausible_model`); a session whose names all pass is returned as it is, so the
check costs one set look-up a message.
"""

from __future__ import annotations

from dataclasses import replace

from ctxsim._support.redact import plausible_model
from ctxsim.model import Message, Session


def plausible_models(sessions: list[Session], notes: list[str]) -> list[Session]:
    """`sessions` with every model name that is not a plausible model id dropped (None: priced as
    unknown), and one note counting them; never the names themselves."""
    verdict: dict[str, bool] = {}

    def ok(name: str | None) -> bool:
        if name is None:
            return True
        known = verdict.get(name)
        if known is None:
            known = verdict[name] = plausible_model(name)
        return known

    dropped = 0
    out: list[Session] = []
    for session in sessions:
        bad = [i for i, m in enumerate(session.messages) if not ok(m.model)]
        if not bad and ok(session.model):
            out.append(session)
            continue
        messages = list(session.messages)
        for i in bad:
            messages[i] = _without_model(messages[i])
        dropped += len(bad) + (not ok(session.model))
        out.append(replace(session, messages=tuple(messages),
                           model=session.model if ok(session.model) else None))
    if dropped:
        notes.append(f"dropped {dropped} model name(s) that are not plausible model ids (not shown: a model "
                     "field holding a key or a command); those requests are priced as of an unknown model")
    return out


def _without_model(message: Message) -> Message:
    return replace(message, model=None)
