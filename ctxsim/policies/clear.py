"""`clear`: tool-result clearing, Anthropic's `clear_tool_uses_20250919` semantics.

Source: Anthropic context editing (reference/providers-and-products.md B.1) and
seed 000's `_clear_tool_results`. Once the prompt passes `trigger` (input tokens,
or tool uses in the context), every tool result but the newest `keep` is
replaced by a stub that keeps the call (tool and arguments) and the first error
line of the output. Excluded tools are never cleared. When the clearing would
free fewer than `clear_at_least` tokens it is not done at all: every edit
rewrites the cached prefix from that point, so a small gain costs more in cache
writes than it saves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from operator import is_
from typing import Literal, NamedTuple

from ctxsim._support.memo import IdentityMemo
from ctxsim.model import Message, ToolCall
from ctxsim.params import TRIGGERS, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import NO_TAGS, Edit, Item, Replace, View

ERROR_LINE = re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b: [^\n\]]+")
ERROR_HINT = re.compile(r"(?:Error|Exception): ")  # what every ERROR_LINE match holds
DEFAULT_STUB = "[tool output cleared: {tool}({args}) returned {tokens:,} tokens; run it again if you need it.{error}]"
# Named stub texts; `stub=NAME` picks one, any other value is a template itself. `ctxkit` is the
# exact text seed 000 writes, so the ctxkit preset's requests have the seed's sizes.
STUBS = {
    "default": DEFAULT_STUB,
    "ctxkit": "[cleared: {tool}({args}) returned {tokens:,} tokens. Call it again if you need it.{error}]",
}


@dataclass(frozen=True)
class ClearParams:
    trigger: int = field(default=100_000, metadata=field_doc("clear once the context passes this (see trigger_type)"))
    trigger_type: Literal["input_tokens", "tool_uses"] = field(
        default="input_tokens", metadata=field_doc("what trigger counts: prompt tokens or tool uses in context"))
    keep: int = field(default=3, metadata=field_doc("newest tool uses always kept verbatim"))
    clear_at_least: int = field(default=0, metadata=field_doc("skip the clearing unless it frees this many tokens"))
    exclude_tools: tuple[str, ...] = field(default=(), metadata=field_doc("tools whose results are never cleared"))
    clear_tool_inputs: bool = field(default=False, metadata=field_doc("also clear the calls' arguments"))
    stub: str = field(default="default", metadata=field_doc(
        "text that replaces a result: a name (default, ctxkit) or a template with {tool} {args} {tokens} {error}"))

    def __post_init__(self) -> None:
        if self.keep < 0 or self.trigger < 0 or self.clear_at_least < 0:
            raise ValueError("trigger, keep and clear_at_least must not be negative")


def error_lines(text: str) -> Iterator[str]:
    """The ERROR_LINE matches of a text, in order.

    A match never crosses a newline and always holds ERROR_HINT, so only the lines holding the hint
    are matched (each line once, within the whole text, so the word boundary at its start reads the
    same newline). Most tool outputs hold no hint and cost one scan in C.
    """
    end = 0
    for hint in ERROR_HINT.finditer(text):
        at = hint.start()
        if at < end:
            continue  # on the line just matched
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        for match in ERROR_LINE.finditer(text, start, end):
            yield match.group(0)


def first_error(text: str) -> str | None:
    return next(error_lines(text), None)


def short_args(call: ToolCall | None) -> str:
    if call is None:
        return ""
    args = call.arguments
    if isinstance(args, dict) and len(args) == 1:
        (value,) = args.values()
        if isinstance(value, str):
            return value[:200]
    return call.arguments_json[:200]


class Stub(NamedTuple):
    """The stub of one tool result: its message and size."""

    message: Message
    tokens: int


def stub_of(p: ClearParams, view: View, item: Item) -> Stub:
    """The stub that takes a tool result's place: the call (tool and arguments) and the first error line."""
    m = item.message
    call = view.call_of(m.tool_call_id)
    error = first_error(m.content)
    template = STUBS.get(p.stub, p.stub)
    text = template.format(tool=m.name or (call.name if call else "tool"), args=short_args(call),
                           tokens=item.tokens, error=f" First error: {error}" if error else "")
    message = m.with_content(text)
    return Stub(message, view.size(message))


def without_inputs(view: View, stale: Sequence[Item]) -> list[tuple[Item, Message]]:
    """The assistant messages holding the calls of `stale` results, with those calls' arguments emptied
    (each holder once, in the order its first stale result comes)."""
    holders: dict[int, tuple[Item, set[str]]] = {}
    for item in stale:
        holder = view.holder_of(item.message.tool_call_id or "")
        call = view.call_of(item.message.tool_call_id)
        if holder is not None and call is not None and call.arguments:
            holders.setdefault(holder.pos, (holder, set()))[1].add(call.id)
    out = []
    for holder, ids in holders.values():
        calls = tuple(replace(c, arguments={}) if c.id in ids else c for c in holder.message.tool_calls)
        out.append((holder, replace(holder.message, tool_calls=calls)))
    return out


class ClearPolicy:
    """Keeps, per session, the tool results it may still clear, learning new ones from `observe`.

    Under the trigger a request costs O(1); above it, O(results in the context); stubs are built
    once per result. Nothing walks the whole history.
    """

    name = "clear"

    def __init__(self, params: ClearParams) -> None:
        self.params = params
        self.start()

    def start(self) -> None:
        self._new: list[Item] = []  # items appended since the last decision (tool results among them)
        self._results: list[Item] = []  # tool results in arrival order (may include dead ones)
        self._stubs: IdentityMemo[Item, Stub] = IdentityMemo()  # result -> its stub
        self._placed: list[Item] = []  # the stubs the engine put in (the tool_uses trigger counts them)
        self._writing: dict[int, Message] = {}  # id -> stub message, of the stubs returned last
        # The stale results of the last decision, and the running sum of what their stubs free:
        # a request usually adds one stale result to them, so the sum grows by one term.
        self._stale: list[Item] = []
        self._freed: list[int] = [0]

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        if not removed:  # appended (or a marker another stage put in); _sync keeps the tool results
            self._new += added
        elif self._writing:
            for item in added:
                if self._writing.get(id(item.message)) is item.message:
                    self._placed.append(item)

    def _sync(self, view: View) -> None:
        self._results.extend(item for item in self._new if item.message.role == "tool")
        self._new = []
        results = []
        for held in self._results:
            item: Item | None = held
            if not held.alive:  # replaced by another stage (e.g. truncated)? follow its call to the copy
                item = view.result_of(held.message.tool_call_id or "")
            if item is None or not item.alive:
                continue
            if item.cleared:  # a stub now: nothing left to clear (the tool_uses count takes stubs apart)
                continue
            results.append(item)
        self._results = results

    def _stub(self, view: View, item: Item) -> Stub:
        known = self._stubs.get(item)
        return known if known is not None else self._stubs.put(item, stub_of(self.params, view, item))

    def _stubs_free(self, view: View, stale: list[Item]) -> int:
        """Tokens the stubs of `stale` would free, extending the last sum when `stale` extends the last list."""
        known = self._stale
        if len(known) > len(stale) or not all(map(is_, known, stale)):
            known, self._freed = [], [0]
        sums = self._freed
        for item in stale[len(known):]:
            sums.append(sums[-1] + item.tokens - self._stub(view, item).tokens)
        self._stale = stale
        return sums[len(stale)]

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        if self._writing:
            self._writing = {}
        if p.trigger_type == "input_tokens" and view.prompt_tokens <= p.trigger:
            return ()
        self._sync(view)
        if p.trigger_type == "tool_uses":
            self._placed = [stub for stub in self._placed if stub.alive]
            if len(self._results) + len(self._placed) <= p.trigger:  # cleared uses still count
                return ()
        candidates = [it for it in self._results
                      if not it.cleared and not it.pinned and it.message.name not in p.exclude_tools]
        stale = candidates[: len(candidates) - p.keep] if p.keep else candidates
        if not stale:
            return ()
        if not p.clear_tool_inputs:  # what the stubs alone free decides; most requests stop here
            freed = self._stubs_free(view, stale)
            if freed < p.clear_at_least or freed <= 0:
                return ()
        changes: list[Replace] = []
        freed = 0
        for item in stale:
            stub = self._stub(view, item)
            freed += item.tokens - stub.tokens
            changes.append(Replace(item, stub.message, stub.tokens, NO_TAGS))
        if p.clear_tool_inputs:
            for holder, message in without_inputs(view, stale):
                tokens = view.size(message)
                freed += holder.tokens - tokens
                changes.append(Replace(holder, message, tokens, tags=NO_TAGS))
        if freed < p.clear_at_least or freed <= 0:
            return ()
        if p.trigger_type == "tool_uses":  # only that trigger counts the stubs in place (observe finds them)
            self._writing = {id(c.message): c.message for c in changes[:len(stale)]}
        return (Edit("clear", tuple(changes), f"cleared {len(stale)} tool results"),)


class ClearReference:
    """`clear` from scratch, as the module's text says it: at every request, every tool result in the
    context, with no state. What `ClearPolicy` must match, edit for edit (it is tested against this)."""

    name = "clear"

    def __init__(self, params: ClearParams) -> None:
        self.params = params

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        if p.trigger_type == "input_tokens" and view.prompt_tokens <= p.trigger:
            return ()
        results = [it for it in view.items if it.message.role == "tool"]
        if p.trigger_type == "tool_uses" and len(results) <= p.trigger:  # its stubs still count as uses
            return ()
        candidates = [it for it in results
                      if not it.cleared and not it.pinned and it.message.name not in p.exclude_tools]
        stale = candidates[: len(candidates) - p.keep] if p.keep else candidates
        changes = [Replace(item, stub_of(p, view, item).message, tags=NO_TAGS) for item in stale]
        if p.clear_tool_inputs:
            changes += [Replace(holder, message, tags=NO_TAGS) for holder, message in without_inputs(view, stale)]
        freed = sum(c.item.tokens - view.size(c.message) for c in changes)
        if not stale or freed < p.clear_at_least or freed <= 0:
            return ()
        return (Edit("clear", tuple(changes), f"cleared {len(stale)} tool results"),)


REFERENCE = ClearReference

register(PolicyInfo(
    "clear", ClearParams, ClearPolicy,
    "Anthropic clear_tool_uses_20250919 (context editing); seed 000 ContextManager._clear_tool_results",
    "replace old tool results with stubs past a trigger, keeping the newest N", __name__,
    budget=lambda params, tokens: {"trigger": tokens} if params.trigger_type == "input_tokens" else None,
    space={
        "trigger": TRIGGERS,
        "keep": (0, 1, 2, 3, 5, 8, 12),
        "clear_at_least": (0, 2_000, 5_000, 10_000, 20_000),
        "clear_tool_inputs": (False, True),
    },
    weight=2.8,
    api_edit="clear_tool_uses_20250919"))
