"""Observed re-fetches: what an agent really fetched again after its product compacted or cleared.

A product compaction is a natural experiment: after it the agent worked from the summary, and
whatever it needed again it fetched again. For every compaction a log records (the reader ends
the session there and the next part `continues` it with a `compaction` event) and every product
clearing it shows inside a session (a `microcompact` event), `observe` lists the tool calls after
it whose *target* the context held before it: a file read (or written) again, an identical command
or search run again, a URL fetched again; each target once (its first re-fetch), with the tokens of
the result the agent got back.

Which tools read, which arguments name the target and how a slice is given differ by product:
a `Detector` per product says it, one module per product in this package, each registering its
own (`register`); `detector(source)` gives the session's (a generic one for other sources). The
detectors also say how big a re-read usually is (`Detector.reread_tokens`), which the loss meter
uses to size its predicted re-fetches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxsim.model import Message, Session, ToolCall
from ctxsim.registry import Registry

KINDS = ("file", "search", "command", "url")


@dataclass(frozen=True, slots=True)
class Target:
    """What a tool call fetched: `kind` (one of `KINDS`) and `key` (a path, a search, a command, a URL)."""

    kind: str
    key: str
    sliced: bool = False  # a part of it (offset/limit, a line range, head/tail)
    reads: bool = True  # False: the call changed it (an edit, a write): the context held it, it is no re-fetch

    def same(self, other: Target) -> bool:
        """The same thing fetched: equal keys, or for files one path the other's tail (relative and absolute)."""
        if self.kind != other.kind:
            return False
        if self.key == other.key:
            return True
        if self.kind != "file":
            return False
        a, b = self.key, other.key
        return a.endswith("/" + b) or b.endswith("/" + a)


@dataclass(frozen=True)
class Detector:
    """How one product's tools read: `target(call)` names what a call fetched (None: nothing to fetch again)."""

    product: str  # the trace source it reads (`Session.source`)
    target: Callable[[ToolCall], Target | None]
    slice_tokens: int  # the usual size of one read slice (the read tool's default window, in tokens)
    read_tools: frozenset[str] = frozenset()  # tools whose result is a file's text (a re-read is a slice of it)
    write_tools: frozenset[str] = frozenset()  # tools that change something: their result is no re-fetch
    module: str = ""

    def reread_tokens(self, tool: str | None, source_tokens: int) -> int:
        """The tokens the agent would get back re-fetching a result of `tool` that held `source_tokens`: a file read
        again is re-read as one usual slice, capped by what the source held; any other result is re-run whole.
        Never negative."""
        held = max(0, int(source_tokens))
        if tool is not None and tool in self.read_tools:
            return min(held, self.slice_tokens)
        return held


_REGISTRY: Registry[Detector] = Registry("re-fetch detector", __name__, "ctxsim.loss.observed")


def register(detector: Detector) -> None:
    _REGISTRY.add(detector.product, detector, detector.module)


def detectors() -> dict[str, Detector]:
    return _REGISTRY.all()


def detector(source: str | None) -> Detector:
    """The detector of a trace source; the generic one (shell commands, common read tools) for any other."""
    found = detectors()
    return found.get(source or "", found["generic"])


_BY_SOURCE: dict[str | None, Detector] = {}


def _of(source: str | None) -> Detector:
    found = _BY_SOURCE.get(source)
    if found is None:
        found = _BY_SOURCE[source] = detector(source)
    return found


def reread_tokens(source: str | None, tool: str | None, source_tokens: int) -> int:
    """`Detector.reread_tokens` of the detector of `source` (looked up once per source)."""
    return _of(source).reread_tokens(tool, source_tokens)


def refetchable(source: str | None, tool: str | None) -> bool:
    """Whether a result of `tool` is one an agent fetches again (not a write's or an edit's acknowledgement)."""
    return tool not in _of(source).write_tools


@dataclass(frozen=True, slots=True)
class Refetch:
    """A tool call after the boundary whose target the context held before it."""

    message: int  # its assistant message's index in the part after the boundary
    tool: str
    target: Target
    tokens: int  # of the result the agent got back


@dataclass
class Observed:
    """The re-fetches after one boundary (a compaction or a product clearing)."""

    kind: str  # "compaction" or "clearing"
    session: str  # the part after it (a clearing: the session it happened in)
    held_targets: int  # distinct targets the context held before it
    refetches: list[Refetch] = field(default_factory=list)

    @property
    def refetch_tokens(self) -> int:
        return sum(r.tokens for r in self.refetches)

    def to_json(self) -> dict[str, Any]:
        by_kind: dict[str, int] = {}
        for r in self.refetches:
            by_kind[r.target.kind] = by_kind.get(r.target.kind, 0) + 1
        return {"refetches": len(self.refetches), "refetch_tokens": self.refetch_tokens,
                "sliced": sum(1 for r in self.refetches if r.target.sliced), "by_kind": dict(sorted(by_kind.items()))}


def arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as a mapping ({} when they are not one: a string that is no JSON object, redacted)."""
    value = call.arguments
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


def first(args: Mapping[str, Any], *names: str) -> str | None:
    """The first of `names` that holds a non-empty string."""
    for name in names:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def file_target(args: Mapping[str, Any], names: Sequence[str], slices: Sequence[str] = ("offset", "limit"),
                reads: bool = True) -> Target | None:
    path = first(args, *names)
    if path is None:
        return None
    return Target("file", path.removeprefix("./"),
                  any(args.get(s) not in (None, "", 0) for s in slices), reads)


def search_target(args: Mapping[str, Any], names: Sequence[str]) -> Target | None:
    parts = [f"{n}={args[n]}" for n in names if isinstance(args.get(n), (str, int, bool)) and args.get(n) != ""]
    return Target("search", " ".join(parts)) if parts else None


def _calls(messages: Sequence[Message]) -> Iterable[tuple[int, ToolCall]]:
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for call in m.tool_calls:
                yield i, call


def _results(messages: Sequence[Message]) -> dict[str, Message]:
    return {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}


def refetches(before: Sequence[Message], after: Sequence[Message], found: Detector,
              count: Callable[[list[str]], list[int]]) -> tuple[int, list[Refetch]]:
    """(distinct targets held before, the re-fetches after): each target once, at its first fetch after."""
    held: list[Target] = []
    for _, call in _calls(before):
        target = found.target(call)
        if target is not None and not any(target.same(h) for h in held):
            held.append(target)
    results = _results(after)
    out: list[tuple[int, ToolCall, Target]] = []
    done: list[Target] = []
    for i, call in _calls(after):
        target = found.target(call)
        if target is None or not target.reads or any(target.same(d) for d in done):
            continue  # an edit or a write is no re-fetch (a later read of the file still is)
        if any(target.same(h) for h in held):
            done.append(target)
            out.append((i, call, target))
    texts = [results[call.id].content if call.id in results else "" for _, call, _ in out]
    sizes = count(texts) if texts else []
    return len(held), [Refetch(i, call.name, target, max(0, n))
                       for (i, call, target), n in zip(out, sizes, strict=True)]


def observe(sessions: Sequence[Session], count: Callable[[list[str]], list[int]] | None = None) -> list[Observed]:
    """The re-fetches after every compaction and every product clearing the sessions record, in order."""
    if count is None:
        from ctxsim.tokens import get_tokenizer

        count = get_tokenizer("o200k_base").count_batch
    by_id: Mapping[str, Session] = {s.id: s for s in sessions}
    out: list[Observed] = []
    for session in sessions:
        found = detector(session.source)
        before = by_id.get(str(session.extra.get("continues") or ""))
        if before is not None and any(e.name == "compaction" for e in session.events):
            held, got = refetches(before.messages, after_summary(session.messages), found, count)
            out.append(Observed("compaction", session.id, held, got))
        for event in session.events:
            if event.name == "microcompact" and 0 < event.position < len(session.messages):
                held, got = refetches(session.messages[:event.position], session.messages[event.position:], found,
                                      count)
                out.append(Observed("clearing", session.id, held, got))
    return out


def after_summary(messages: Sequence[Message]) -> Sequence[Message]:
    """A part after a compaction without what the product put back (its summary, the rebuilt history): the
    messages from the one after the last summary before the first answer."""
    first_reply = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    last_summary = max((i for i, m in enumerate(messages[:first_reply]) if m.role == "summary"), default=-1)
    return messages[last_summary + 1:]


__all__ = [
    "KINDS",
    "Detector",
    "Observed",
    "Refetch",
    "Target",
    "after_summary",
    "arguments",
    "detector",
    "detectors",
    "file_target",
    "first",
    "observe",
    "refetches",
    "register",
    "search_target",
]
