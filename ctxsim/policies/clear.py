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
from typing import Literal

from ctxsim.history import Edit, History, Item, Splice
from ctxsim._support.memo import IdentityMemo
from ctxsim.model import ToolCall
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register

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


class ClearPolicy:
    """Keeps, per session, the tool results it may still clear, learning new ones from `history.log`.

    Under the trigger a request costs O(1); above it, O(results in the context); stubs are built
    once per result. Nothing walks the whole history.
    """

    name = "clear"
    relative_cost = 2.8  # replay time against `none`: see replay_weight

    def __init__(self, params: ClearParams) -> None:
        self.params = params
        self._history: History | None = None
        self._seen = 0  # how much of history.log has been looked at
        self._results: list[Item] = []  # tool results in arrival order (may include dead ones)
        self._stubs: IdentityMemo[Item, Item] = IdentityMemo()  # result -> its stub
        # The stale results of the last decision, and the running sum of what their stubs free:
        # a request usually adds one stale result to them, so the sum grows by one term.
        self._stale: list[Item] = []
        self._freed: list[int] = [0]

    def _sync(self, history: History) -> None:
        if history is not self._history:  # a new session: start over
            self._history, self._seen, self._results, self._stubs = history, 0, [], IdentityMemo()
            self._stale, self._freed = [], [0]
        log = history.log
        self._results.extend(it for it in log[self._seen:] if it.message.role == "tool")
        self._seen = len(log)
        results = []
        for item in self._results:
            if not item.alive:  # replaced by another stage (e.g. truncated)? follow its call to the copy
                item = history.result_of(item.message.tool_call_id or "")  # type: ignore[assignment]
                if item is None or not item.alive:
                    continue
            if item.cleared:  # a stub now: nothing left to clear (the tool_uses count takes stubs apart)
                continue
            results.append(item)
        self._results = results

    def _stub(self, history: History, item: Item) -> Item:
        known = self._stubs.get(item)
        if known is not None:
            return known
        p = self.params
        m = item.message
        call = history.call_of(m.tool_call_id)
        error = first_error(m.content)
        template = STUBS.get(p.stub, p.stub)
        text = template.format(tool=m.name or (call.name if call else "tool"), args=short_args(call),
                             tokens=item.tokens, error=f" First error: {error}" if error else "")
        stub = history.item(m.with_content(text), origin=item.origin, cleared=True)
        stub.alive = False  # until the engine splices it in
        return self._stubs.put(item, stub)

    def _stubs_free(self, history: History, stale: list[Item]) -> int:
        """Tokens the stubs of `stale` would free, extending the last sum when `stale` extends the last list."""
        known = self._stale
        if len(known) > len(stale) or not all(map(is_, known, stale)):
            known, self._freed = [], [0]
        sums = self._freed
        for item in stale[len(known):]:
            sums.append(sums[-1] + item.tokens - self._stub(history, item).tokens)
        self._stale = stale
        return sums[len(stale)]

    def decide(self, ctx: Context) -> Sequence[Edit]:
        p = self.params
        history = ctx.history
        if p.trigger_type == "input_tokens" and history.prompt_tokens <= p.trigger:
            return ()
        self._sync(history)
        if p.trigger_type == "tool_uses":
            stubs_in_context = sum(1 for stub in self._stubs.values() if stub.alive)
            if len(self._results) + stubs_in_context <= p.trigger:  # cleared uses still count
                return ()
        candidates = [it for it in self._results
                      if not it.cleared and not it.pinned and it.message.name not in p.exclude_tools]
        stale = candidates[: len(candidates) - p.keep] if p.keep else candidates
        if not stale:
            return ()
        if not p.clear_tool_inputs:  # what the stubs alone free decides; most requests stop here
            freed = self._stubs_free(history, stale)
            if freed < p.clear_at_least or freed <= 0:
                return ()
        splices: list[Splice] = []
        holders: dict[int, tuple[Item, set[str]]] = {}
        freed = 0
        for item in stale:
            new = self._stub(history, item)
            freed += item.tokens - new.tokens
            splices.append(Splice(item.pos, item.pos + 1, (new,)))
            if p.clear_tool_inputs:
                holder = history.holder_of(item.message.tool_call_id or "")
                call = history.call_of(item.message.tool_call_id)
                if holder is not None and call is not None and call.arguments:
                    holders.setdefault(holder.pos, (holder, set()))[1].add(call.id)
        for index, (holder, ids) in holders.items():
            calls = tuple(replace(c, arguments={}) if c.id in ids else c for c in holder.message.tool_calls)
            new = history.item(replace(holder.message, tool_calls=calls), origin=holder.origin, cleared=True)
            freed += holder.tokens - new.tokens
            splices.append(Splice(index, index + 1, (new,)))
        if freed < p.clear_at_least or freed <= 0:
            return ()
        return (Edit("clear", tuple(splices), f"cleared {len(stale)} tool results"),)


register(PolicyInfo(
    "clear", ClearParams, ClearPolicy,
    "Anthropic clear_tool_uses_20250919 (context editing); seed 000 ContextManager._clear_tool_results",
    "replace old tool results with stubs past a trigger, keeping the newest N", __name__))
