"""`rendered`: an ideal prefix cache measured on the rendered request, byte by byte.

Source: yoagent's `tests/context_cache_test.rs` metric (reference/yoagent-context.md
sections 3.3-3.4). Each request's messages are rendered to one byte string
(`<user>`, `<assistant>`, `<text>`, `<tool_use id=.. name>` + JSON arguments,
`<tool_result id=..>`; no timestamps); the cache holds the previous request, and a
request reads from it the longest common byte prefix of the two strings: no
minimum length, no block size, no TTL, no write premium.

ctxsim meters tokens, so the shared bytes are turned into tokens of the request:
every message wholly inside the shared prefix counts its tokens, and the message
where the two strings part counts the share of its tokens that its shared bytes
are of its rendering (rounded down). The tools and system prompt (not rendered by
yoagent, unchanging in a replay) count as read from the second request on.
Over a run, `cache_read_tokens / input_tokens` is then the token-weighted twin of
yoagent's byte-weighted hit rate; `ByteLedger` below keeps the byte-weighted one.

The comparison starts where the history was last edited (everything before is the
same items), so an append-only request costs only its new messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim._support.memo import IdentityMemo
from ctxsim.caching import CacheInfo, CacheResult, register
from ctxsim.history import History, Item
from ctxsim.model import Message
from ctxsim.params import field_doc


def render(message: Message) -> bytes:
    """One message as yoagent's replay renders it into the request body."""
    role = message.role
    out: list[str] = []
    if role == "assistant":
        out.append("<assistant>")
    elif role == "tool":
        out.append(f"<tool_result id={message.tool_call_id or ''}{' error>' if message.is_error else '>'}")
    elif role == "system":
        out.append("<system>")
    else:  # user, and summaries (sent as user text)
        out.append("<user>")
    if message.thinking:
        out.append("<thinking>" + message.thinking)
    if message.content:
        out.append("<text>" + message.content)
    for call in message.tool_calls:
        out.append(f"<tool_use id={call.id} {call.name}>" + call.arguments_json)
    return "".join(out).encode("utf-8")


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class Divergence:
    """Where a request's rendering parts from the previous one's."""

    shared_bytes: int  # common prefix of the two renderings
    index: int  # message of the current request the prefix ends in (len(parts) if it covers all)
    offset: int  # bytes of that message inside the prefix


def diverge(prev: Sequence[bytes], tail: Sequence[bytes], start: int, start_bytes: int) -> Divergence:
    """Common prefix of two renderings that agree on their first `start` parts (`start_bytes` bytes).

    `prev` is the whole previous request; `tail` the current request's parts from
    `start` on.
    """
    shared = start_bytes
    pi, ti = start, 0
    po = to = 0  # offsets inside prev[pi] / tail[ti]
    while pi < len(prev) and ti < len(tail):
        a, b = prev[pi], tail[ti]
        if po == 0 and to == 0 and a == b:
            shared += len(a)
            pi += 1
            ti += 1
            continue
        m = min(len(a) - po, len(b) - to)
        k = common_prefix(a[po:po + m], b[to:to + m])
        shared += k
        if k < m:
            return Divergence(shared, start + ti, to + k)
        po += m
        to += m
        if po == len(a):
            pi, po = pi + 1, 0
        if to == len(b):
            ti, to = ti + 1, 0
    return Divergence(shared, start + ti, to)


def _render_item(item: Item) -> bytes:
    return render(item.message)


class Renderer:
    """Renders history items once each (memo by item identity)."""

    def __init__(self) -> None:
        self._memo: IdentityMemo[Item, bytes] = IdentityMemo()

    def __call__(self, item: Item) -> bytes:
        return self._memo.get_or(item, _render_item)

    def keep_only(self, items: Sequence[Item]) -> None:
        self._memo.keep_only(items)


@dataclass
class ByteLedger:
    """yoagent's byte-weighted metric over a run: sum of uncached and of request bytes, and rewrites."""

    request_bytes: int = 0
    uncached_bytes: int = 0
    rewrites: int = 0
    requests: int = 0
    per_request: list[tuple[int, int]] = field(default_factory=list)  # (request bytes, shared bytes)

    def add(self, total: int, shared: int, previous: int) -> None:
        self.requests += 1
        self.request_bytes += total
        self.uncached_bytes += total - shared
        if previous and shared < previous:
            self.rewrites += 1
        self.per_request.append((total, shared))

    @property
    def hit_rate(self) -> float:
        return 1 - self.uncached_bytes / self.request_bytes if self.request_bytes else 0.0


class RenderedTracker:
    """The previous request's rendering, and how much of it the next one shares."""

    def __init__(self) -> None:
        self.render = Renderer()
        self._parts: list[bytes] = []
        self._cum: list[int] = [0]  # _cum[i] = bytes of _parts[:i]
        self._valid: int | None = None  # parts of the previous request known unchanged
        self.seen = False

    def edited(self, boundary: int) -> None:
        if self._valid is not None:
            self._valid = min(self._valid, boundary)

    def request(self, items: Sequence[Item]) -> tuple[int, int, Divergence]:
        """(request bytes, previous request's bytes, divergence) for the request made of `items`."""
        parts, cum = self._parts, self._cum
        start = min(self._valid if self._valid is not None else 0, len(parts), len(items))
        tail = [self.render(item) for item in items[start:]]
        previous_total = cum[-1]
        where = diverge(parts, tail, start, cum[start]) if self.seen else Divergence(0, 0, 0)
        edited = start < len(parts)
        del parts[start:]
        del cum[start + 1:]
        for part in tail:
            parts.append(part)
            cum.append(cum[-1] + len(part))
        if edited:
            self.render.keep_only(items)
        self._valid = len(items)
        self.seen = True
        return cum[-1], previous_total, where


@dataclass(frozen=True)
class RenderedParams:
    fixed_head_cached: bool = field(default=True, metadata=field_doc(
        "count the tools and system prompt as read from the second request on (yoagent does not render them)"))


class RenderedCache:
    name = "rendered"

    def __init__(self, params: RenderedParams, model: str | None, ignore_ttl: bool = False) -> None:
        self.params = params
        self.tracker = RenderedTracker()
        self.ledger = ByteLedger()

    def edited(self, boundary: int) -> None:
        self.tracker.edited(boundary)

    def request(self, history: History, ts_s: float | None) -> CacheResult:
        first = not self.tracker.seen
        total, previous, where = self.tracker.request(history.items)
        self.ledger.add(total, where.shared_bytes if not first else 0, previous)
        if first:
            return CacheResult()
        items = history.items
        read = history.prefix_tokens(where.index)
        if not self.params.fixed_head_cached:
            read -= history.base_tokens
        if where.index < len(items) and where.offset:
            size = len(self.tracker.render(items[where.index]))
            read += items[where.index].tokens * where.offset // size
        return CacheResult(read_tokens=read)


register(CacheInfo("rendered", RenderedParams, RenderedCache,
                   "yoagent tests/context_cache_test.rs: byte prefix of the rendered request", __name__))
