"""The policy contract: what a policy sees, what it may return, and how it learns of changes.

A policy is an object with a `name`, its `params`, and one required method:

    decide(view) -> Sequence[Edit | Change]

called before every model request. `view` is a read-only `View` of the live history (its
items in order, the call/result pairs, the prompt and prefix sizes, the request number and
the window). The policy answers with edits that *name items*, never positions:

    Drop(items)                      the items leave the prompt
    Replace(item, message)           a stub in the item's place (marked `cleared`)
    Truncate(item, message)          a shorter copy in the item's place
    Summarize(items, message, call)  the items leave; one summary takes the first one's place
    Insert(message, before)          a marker or note put before an item (at the end: None)

An `Edit(kind, changes, note)` groups changes into one logged event (`clear` replacing six
results is one event); a bare change is an event of its own, of kind `drop`, `clear`,
`truncate`, `compact` or `insert`. The engine works out the positions, applies the changes,
checks the invariants (no pinned message touched, no tool result left without its call, no
item named twice) and logs the events. A policy never changes the history itself.

Optional members the engine looks for:

- `observe(removed, added)`: called after every change to the history, whichever stage made
  it: an appended message is `observe((), (item,))`, an applied splice is the items it
  removed and those it put in their place (in order, already in the history). An
  incremental policy keeps its state from these calls alone, with no rescanning; the same hook
  serves any observer (the loss meter).
- `start()`: called before each session's first message: a policy forgets what it learnt of
  the previous session (observers passed to `Replayer.run` are started too).
- `requested(number, message, edits)`: an observer's hook (the loss meter's), called at each
  request after every stage decided and before the recorded assistant `message` is appended;
  `edits` lists the (stage name, event kind, splices applied) of the request's edits in order
  (the splices the observer was just told of, so it can name the edit that removed something).
  Only observers that have it cost anything.
- `foresee(session)`: called before `start()` with the recorded session: only a bound (the
  `oracle`) reads the future, which no real policy can.
- `on_append(view, message) -> Rewrite | None`: change a message as it is appended (tool
  output truncated on arrival).
- `stages`: a sequence of policies run in order, each seeing the earlier ones' edits (a
  pipeline).

Stages of one session that must share what they learnt (the notes file `notes` rebuilds, which
the summarising policies end their summaries with) keep it in `view.shared`, a dict that lives as
long as the session's history.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ctxsim.history import Item, Rewrite, SideCall
from ctxsim.model import Message, ToolCall

if TYPE_CHECKING:
    from ctxsim.history import History


# ---------------------------------------------------------------- what a policy sees


class View:
    """A read-only view of the live history before one request, valid during the call it is passed to.

    The engine keeps one view per stage and session and brings it up to date (`request`, `ts_s`,
    `prompt_before_tokens`) before each call: read it in the call, keep what you need from it, not it.

    Reading is O(1) except where said: `items` is the history's own list, not a copy (read it,
    never change it).
    """

    # `items` and the look-ups by call id are the history's own, bound once per view: a policy reads
    # them thousands of times a replay, and each read is then one step, not two calls.
    __slots__ = ("_history", "call_of", "holder_of", "items", "prompt_before_tokens", "request", "result_of", "size",
                 "ts_s", "window")
    items: Sequence[Item]  # the live items, in prompt order; `item.pos` is an item's index here
    result_of: Callable[[str], Item | None]  # the live tool result answering call `call_id`, if any
    holder_of: Callable[[str], Item | None]  # the live assistant item holding call `call_id`, if any
    call_of: Callable[[str | None], ToolCall | None]  # the call with this id, as the item holding it has it

    def __init__(self, history: History, request: int, window: int, size: Callable[[Message], int],
                 ts_s: float | None = None, prompt_before_tokens: int | None = None) -> None:
        self._history = history
        reads = history.reads
        if reads[0] is not history.items:  # the history's list was swapped for another (a test's counting list)
            reads = history.reads = history.bind_reads()
        self.items, self.result_of, self.holder_of, self.call_of = reads
        self.request = request  # 1-based within the run
        self.window = window
        self.size = size  # the token size of a message the policy might write
        self.ts_s = ts_s  # the request's time (epoch seconds) when the log has one
        self.prompt_before_tokens = prompt_before_tokens  # the prompt before any stage of this request acted

    @property
    def history(self) -> History:
        """The engine's own history, for the engine's tests and measuring probes; a policy reads the members
        below (what it may rely on), never this."""
        return self._history

    def __len__(self) -> int:
        return len(self.items)

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt: the fixed head (tools, system) and every item."""
        history = self._history
        return history.base_tokens + history._total_tokens

    @property
    def message_tokens(self) -> int:
        """The items alone, without the fixed head."""
        return self._history._total_tokens

    @property
    def base_tokens(self) -> int:
        """The fixed head of every request: tools and system prompt."""
        return self._history.base_tokens

    def prefix_tokens(self, boundary: int) -> int:
        """Prompt tokens before item `boundary` (the head included)."""
        return self._history.prefix_tokens(boundary)

    def pairs(self) -> Iterator[tuple[Item, ToolCall, Item | None]]:
        """(holder, call, result or None) for every call in the history, in order. O(items)."""
        holder_of, result_of = self.holder_of, self.result_of
        for item in self.items:
            for call in item.message.tool_calls:
                if holder_of(call.id) is item:
                    yield item, call, result_of(call.id)

    def turns(self) -> list[int]:
        """The positions where a user turn begins (a recorded user message). O(items)."""
        return [i for i, item in enumerate(self.items)
                if item.message.role == "user" and not item.inserted]

    @property
    def shared(self) -> dict[str, Any]:
        """What the stages of this session share, by a name each stage picks (`notes` keeps its notes
        file under "notes"): the same dict at every request and stage of the session, a new one for
        the next session. O(1)."""
        return self._history.shared


_SHARED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def shared_of(history: Any) -> dict[str, Any]:
    """`View.shared` of the session that `history` replays (a test reading it after the run)."""
    own = getattr(history, "shared", None)  # an engine History keeps its own
    if isinstance(own, dict):
        return own
    board = _SHARED.get(history)
    if board is None:
        board = _SHARED[history] = {}
    return board


Context = View  # the name policies have used for what they see


# ---------------------------------------------------------------- what a policy returns
# The changes are NamedTuples (immutable, typed, compared by value, as frozen dataclasses were): a
# policy makes one per item it names, thousands a replay, and a tuple is made in half the time.


class Drop(NamedTuple):
    """The items leave the prompt (a call and its results must leave together)."""

    items: tuple[Item, ...]


class Replace(NamedTuple):
    """`message` takes `item`'s place, marked `cleared` (a stub). `tokens`: its size when the policy
    models it (else counted); `tags`: the new item's tags (None: the old item's); `pinned`: the new
    item is pinned (no later edit may touch it: `notes` pins the notes it reads back)."""

    item: Item
    message: Message
    tokens: int | None = None
    tags: frozenset[str] | None = None
    cleared: bool = True
    pinned: bool = False


class Truncate(NamedTuple):
    """A shorter copy of `item` in its place (it keeps the item's flags and tags)."""

    item: Item
    message: Message
    tokens: int | None = None


class Summarize(NamedTuple):
    """The items leave; `message` (a summary the policy wrote, marked `inserted`) takes the place of the
    first of them. `call`: the model request that wrote it, metered as its own row. `origin`: the
    session index the summary stands for (-1: none; `tiered`'s one-line stand-in for an assistant
    message keeps that message's, as the summarizers' turn numbers read it)."""

    items: tuple[Item, ...]
    message: Message
    call: SideCall | None = None
    tokens: int | None = None
    tags: frozenset[str] = frozenset()
    origin: int = -1


class Insert(NamedTuple):
    """`message` (marked `inserted`) put just before `before` (at the end when None)."""

    message: Message
    before: Item | None = None
    tokens: int | None = None
    tags: frozenset[str] = frozenset()


Change = Drop | Replace | Truncate | Summarize | Insert

NO_TAGS: frozenset[str] = frozenset()  # the tags of an item that has none (a stub's, a summary's)

DEFAULT_KIND: dict[type, str] = {Drop: "drop", Replace: "clear", Truncate: "truncate", Summarize: "compact",
                                 Insert: "insert"}


@dataclass(frozen=True, slots=True)
class Edit:
    """Changes logged as one event of `kind`. `calls`: model requests the operation made that no
    `Summarize` carries."""

    kind: str
    changes: tuple[Change, ...]
    note: str = ""
    calls: tuple[SideCall, ...] = ()


class Policy(Protocol):
    """Decides edits before each request (see the module's text for the optional members)."""

    name: str
    params: Any

    def decide(self, view: View) -> Sequence[Any]: ...


class Observer(Protocol):
    """Anything told of every change to the history (a policy's state, the loss meter).

    A stage that has nothing to follow in a session may set `observing = False` once its `foresee` or
    `start` has run: the engine then leaves it out of that session's calls (the provider's reasoning rule
    in a session with no reasoning to drop)."""

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None: ...


__all__ = [
    "DEFAULT_KIND",
    "Change",
    "Context",
    "Drop",
    "Edit",
    "Insert",
    "Item",
    "Observer",
    "Policy",
    "Replace",
    "Rewrite",
    "SideCall",
    "Summarize",
    "Truncate",
    "View",
    "shared_of",
]
