"""`EditWatch`: how a policy not yet on the contract learns what changed since it last decided.

Transitional: it reads the history's log and journal (`History.log`, `journal_from`, `follow`), which
go once no policy uses them; a policy on the contract (policies.base) keeps its state from
`observe(removed, added)` instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxsim.composition import category
from ctxsim.history import History, Item, Splice


class EditWatch:
    """Whether a session's history is still as a policy's own edits left it.

    A policy that keeps state between requests calls `expect` once it has decided (with the edits
    it returns, which the engine applies as they are), and `changes` before its next decision.
    `changes` reads what was appended meanwhile (from `history.log`, O(new)) and what other stages
    replaced one for one (stubs, masks, thinking cleared: from the history's journal, O(edits
    since)), and checks the number of messages, their tokens and the tokens by composition column
    against the history. It returns the appended items and the replacements, or None when the
    history is new to the policy or another stage dropped, inserted or otherwise changed
    messages: the policy then starts over from the history. A copy of a message with the same
    size and column spliced in some other way (e.g. the pinned copy `notes` makes) does not show.
    """

    def __init__(self) -> None:
        self._history: History | None = None
        self._seen = 0
        self._journal = 0  # the journal position after the policy's own edits
        self._expect: tuple[int, int, dict[str, int]] | None = None

    def changes(self, history: History) -> tuple[list[Item], dict[int, tuple[Item, Item]]] | None:
        """(the items appended since, each as it stands now; {id(old): (old, new)} for the items
        other stages replaced one for one), or None (start over). An item appended and then
        replaced is given as its replacement."""
        expect, self._expect = self._expect, None
        if history is not self._history or expect is None:
            self._history, self._seen = history, len(history.log)
            return None
        log = history.log
        new = log[self._seen:]
        self._seen = len(log)
        count, tokens, comp = expect
        entries = history.journal_from(self._journal)
        if entries is None:
            return None
        replaced: dict[int, tuple[Item, Item]] = {}  # id(item replaced first) -> (it, its latest replacement)
        latest: dict[int, int] = {}  # id(a replacement) -> id(the item it stands for)
        for removed, added in entries:
            if len(removed) != len(added):
                return None
            for old, item in zip(removed, added):
                first = latest.pop(id(old), id(old))
                replaced[first] = (replaced[first][0] if first in replaced else old, item)
                latest[id(item)] = first
                tokens += item.tokens - old.tokens
                key = category(old)
                comp[key] = comp.get(key, 0) - old.tokens
                key = category(item)
                comp[key] = comp.get(key, 0) + item.tokens
        appended = []
        for item in new:
            tokens += item.tokens
            key = category(item)
            comp[key] = comp.get(key, 0) + item.tokens
            if id(item) in replaced:  # appended, then replaced
                item = replaced.pop(id(item))[1]
            elif not item.alive:
                return None
            appended.append(item)
        if len(history) != count + len(new) or history.message_tokens != tokens or history.composition != comp:
            return None
        return appended, replaced

    def expect(self, history: History, splices: Sequence[Splice] = ()) -> None:
        """The history will be as it is now, with `splices` applied."""
        count, tokens, comp = len(history), history.message_tokens, dict(history.composition)
        items = history.items
        for s in splices:
            for item in items[s.start:s.end]:
                comp[category(item)] -= item.tokens
                tokens -= item.tokens
                count -= 1
            for item in s.new:
                key = category(item)
                comp[key] = comp.get(key, 0) + item.tokens
                tokens += item.tokens
                count += 1
        self._history, self._seen, self._expect = history, len(history.log), (count, tokens, comp)
        self._journal = history.journal_end + len(splices)  # its own splices are journalled next
        history.follow(self, self._journal)
