"""`zones`: the three-zone budget of seed 004 (green, yellow, red, plus critical).

Source: seed 004 ("Context Window Budgeting Strategies", Three-Zone Enforcement).
Before every request the prompt's share of the window picks a zone:

- green, below `yellow_at` (70 %): nothing is done;
- yellow, up to `red_at` (85 %): light compression: the oldest `yellow_fraction`
  (20 %) of the history is replaced by one extractive summary (the first line of
  each message, earlier summaries kept whole), and of the memory chunks only the
  newest `yellow_memory` (3) stay. A summary takes at most `summary_max_share`
  (20 %) of the window: past that its oldest lines go first, as a model condensing
  a summary would (the seed budgets 20-40 % of the window for memory, past
  summaries included). Without the cap a long session's summary keeps every line it
  ever took in: 95,000 tokens after 2,400 synthetic turns, and yellow at every
  request after 4,800;
- red, up to `critical_at` (95 %): aggressive pruning: only pinned and system
  messages, the last `red_keep_turns` (3) turns and the newest tool result stay,
  and one memory chunk;
- critical, above: the seed's code handles it like red; `critical_keep_turns` lets
  it cut deeper.

The seed's compressor summarises with a cheap model, so the summary is metered as
a side request (input: the summarised messages plus `instruction_tokens`; output:
the summary). Memory chunks are the results of `memory_tools` (retrieval tools);
one beyond the limit becomes a stub, its call kept. A turn is an assistant message
with the user messages just before it and its tool results; a call and its
results are always kept or dropped together. The zones have no hysteresis: a
prompt that stays yellow is compressed again at every request, as in the seed.

`PlainZones` (the module's REFERENCE) decides the same, counting each summary whole: the only state
`zones` keeps is `SummarySizer`'s memo of summary lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ctxsim.model import Message
from ctxsim.params import TRIGGERS, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies._spans import Items, close_drop, picked, units
from ctxsim.policies.base import NO_TAGS, Change, Drop, Edit, Replace, SideCall, Summarize, View
from ctxsim.policies.truncate import first_line
from ctxsim.tokens.bpe import SPLIT_PATTERNS

SUMMARY_HEAD = "[Summary of {count} earlier messages]"
MEMORY_STUB = "[memory chunk dropped: {tool} returned {tokens:,} tokens]"


@dataclass(frozen=True)
class ZonesParams:
    window: int | None = field(default=None, metadata=field_doc("tokens the shares refer to; none: the replay window"))
    yellow_at: float = field(default=0.70, metadata=field_doc("share of the window where yellow starts"))
    red_at: float = field(default=0.85, metadata=field_doc("share of the window where red starts"))
    critical_at: float = field(default=0.95, metadata=field_doc("share of the window where critical starts"))
    yellow_fraction: float = field(default=0.2, metadata=field_doc("oldest share of the history summarised in yellow"))
    red_keep_turns: int = field(default=3, metadata=field_doc("last turns kept in red"))
    critical_keep_turns: int = field(default=3, metadata=field_doc("last turns kept in critical (the seed: as red)"))
    memory_tools: tuple[str, ...] = field(default=(), metadata=field_doc("tools whose results are memory chunks"))
    yellow_memory: int = field(default=3, metadata=field_doc("memory chunks kept in yellow (newest first)"))
    red_memory: int = field(default=1, metadata=field_doc("memory chunks kept in red and critical"))
    instruction_tokens: int = field(default=200, metadata=field_doc("summarising prompt's instructions, metered"))
    line_chars: int = field(default=160, metadata=field_doc("characters of each message's first line in a summary"))
    summary_max_share: float | None = field(default=0.2, metadata=field_doc(
        "most of the window a summary takes; past it its oldest lines go (none: no cap)"))

    def __post_init__(self) -> None:
        if not 0 < self.yellow_at < self.red_at < self.critical_at <= 1.5:
            raise ValueError("need 0 < yellow_at < red_at < critical_at")
        if not 0 < self.yellow_fraction <= 1:
            raise ValueError("yellow_fraction must be in (0, 1]")
        if min(self.red_keep_turns, self.critical_keep_turns, self.yellow_memory, self.red_memory,
               self.instruction_tokens) < 0 or self.line_chars < 1:
            raise ValueError("counts must not be negative")
        if self.window is not None and self.window < 1:
            raise ValueError("window must be positive")
        if self.summary_max_share is not None and not 0 < self.summary_max_share <= 1:
            raise ValueError("summary_max_share must be in (0, 1]")


def turn_starts(view: Items) -> list[int]:
    """Index where each turn starts: an assistant message, pulled back over the user messages before it."""
    items = view.items
    out = []
    for i, item in enumerate(items):
        if item.message.role != "assistant":
            continue
        j = i
        while j > 0 and items[j - 1].message.role == "user":
            j -= 1
        out.append(j)
    return out


def summary_parts(messages: Sequence[Message], line_chars: int) -> tuple[list[str], dict[int, str]]:
    """The parts of `summary_text`, its head line first (the text is "\n".join of them), and where it took
    over the body of an earlier summary (the text after its head line): part number -> that summary's text.
    """
    parts = [""]  # the head, written once the count is known
    bodies: dict[int, str] = {}
    count = 0
    for m in messages:
        if m.role == "summary":  # kept whole, as one block of lines (not split: it can be long)
            text = m.content
            cut = text.find("\n")
            head = text if cut < 0 else text[:cut]
            number = head[len("[Summary of "):-len(" earlier messages]")]
            if head == SUMMARY_HEAD.format(count=number) and number.isdigit():
                count += int(number)
                if cut >= 0:
                    bodies[len(parts)] = text
                    parts.append(text[cut + 1:])
            else:
                count += 1
                parts.append(text)
            continue
        count += 1
        first = first_line(m.content)
        label = f"{m.role} ({m.name})" if m.name else m.role
        calls = ", ".join(c.name for c in m.tool_calls) if m.tool_calls else ""
        if calls:
            label += f" [calls {calls}]"
        parts.append(f"- {label}: {first[:line_chars]}".rstrip())
    parts[0] = SUMMARY_HEAD.format(count=count)
    return parts, bodies


def summary_text(messages: Sequence[Message], line_chars: int) -> str:
    """Extractive summary: earlier summaries whole, then the first line of every other message."""
    return "\n".join(summary_parts(messages, line_chars)[0])


# The split patterns (tiktoken's, for o200k_base and cl100k_base) under which a text's token count is the sum
# of the counts of its pieces when it is cut just after a newline that a "-" follows: no pre-token reaches
# across such a cut (a newline only ever continues a pre-token with more newlines, "/" or whitespace). The
# same two patterns the long-text counter's cut rule was checked for.
_ADDITIVE_AT_NEWLINE_DASH = SPLIT_PATTERNS


@dataclass(frozen=True, slots=True)
class _Pieces:
    """A text as `text.split("\n-")` cuts it, reduced to what SummarySizer counts.

    `first` and `last` are the first and the last piece (`last` is None when there is only one piece);
    `middle` is the tokens of the pieces between, each counted as "-" + piece + "\n".
    """

    first: str
    middle: int = 0
    last: str | None = None


class SummarySizer:
    """`ctx.size(message)` for a summary, counting each of its "- ..." lines once per session.

    A summary keeps the lines of the earlier ones, so it grows through the session; counting it whole
    at every compression would count the same lines again and again. With an exact BPE tokenizer whose
    count adds up across a newline followed by "-" (see _ADDITIVE_AT_NEWLINE_DASH), the text is counted
    piece by piece, each distinct piece once; otherwise (other tokenizers, scaled framing) whole.

    Given the parts `summary_parts` made, the whole text is never split: the pieces of a join follow from
    those of its parts (`_joined`), and the body of the summary sized last is remembered as its pieces.
    So when a summary takes the previous one over, only its new lines are split and looked up: O(new
    lines) per compression, not O(the summary).
    """

    def __init__(self) -> None:
        self._counter: object = None
        self._pieces: dict[str, int] = {}  # a middle piece p -> tokens of "-" + p + "\n"
        self._last: tuple[str, _Pieces] | None = None  # the text of the summary sized last, its body's pieces
        self._pieced = False  # the message sized last was counted piece by piece

    def __call__(self, ctx: View, message: Message, parts: Sequence[str] | None = None,
                 bodies: Mapping[int, str] | None = None) -> int:
        """The message's tokens; `parts` and `bodies` as `summary_parts` returns them for its text, if known."""
        self._pieced = False
        sizer = getattr(ctx.size, "__self__", None)
        counter = getattr(sizer, "counter", None)
        framing = getattr(sizer, "framing", None)
        encoding = getattr(getattr(counter, "tokenizer", None), "_encoding", None)
        if (getattr(encoding, "_pat_str", None) not in _ADDITIVE_AT_NEWLINE_DASH or framing is None
                or not framing.unscaled or message.thinking or message.tool_calls or message.extra_tokens):
            return ctx.size(message)
        if counter is not self._counter:
            self._counter, self._pieces, self._last = counter, {}, None
        count: Callable[[str], int] = counter.count  # type: ignore[union-attr]
        if parts is None or bodies is None:
            whole = self._split(message.content)
        else:
            body: _Pieces | None = None
            start = 1  # parts[start:k] are split together (message lines: short, and new)
            for k, source in sorted(bodies.items()):
                if k > start:
                    body = self._joined(body, self._split("\n".join(parts[start:k])))
                known = self._last  # the body of the summary sized last is known; another one is split
                pieces = known[1] if known is not None and known[0] is source else self._split(parts[k])
                body = self._joined(body, pieces)
                start = k + 1
            if start < len(parts):
                body = self._joined(body, self._split("\n".join(parts[start:])))
            whole = self._split(parts[0])
            if body is not None:
                whole = self._joined(whole, body)
                self._last = (message.content, body)
        if whole.last is None:
            return ctx.size(message)
        total = count(whole.first + "\n") + whole.middle + count("-" + whole.last)
        self._pieced = True
        return ctx.size(message.with_content("")) + total

    def trimmed(self, ctx: View, message: Message, tokens: int, cap: int) -> tuple[Message, int]:
        """`message` (the summary this sizer sized last, `tokens`) without its oldest "- ..." entries, the
        fewest that bring it within `cap` tokens (the newest entry always stays); the message and its tokens.

        Counted piece by piece, an entry dropped takes its own count with it: O(entries dropped), and
        the body remembered for the next summary is cut the same way. Otherwise by bisection.
        """
        text = message.content
        start = text.find("\n-")  # the head ends here; each entry follows a "\n-"
        if tokens <= cap or start < 0 or text.find("\n-", start + 2) < 0:
            return message, tokens
        if not self._pieced:
            return self._bisected(ctx, message, cap, start)
        total, pos, first = tokens, start, -1
        while total > cap and (after := text.find("\n-", pos + 2)) >= 0:
            dropped = self._middle(text[pos + 2:after])
            first = dropped if first < 0 else first
            total -= dropped
            pos = after
        trimmed = message.with_content(text[:start] + text[pos:])
        known = self._last
        self._last = None
        if known is not None and known[0] is text and known[1].last is not None and text.find("\n") == start:
            # The body (after the head line) was "-" + e1, e2 .. e(l-1) as middles, el; it is now
            # "-" + e(k+1), e(k+2) .. e(l-1), el: the middles lose e2 .. e(k+1).
            after = text.find("\n-", pos + 2)
            if after < 0:
                body = _Pieces(text[pos + 1:])
            else:
                kept_first = text[pos + 2:after]
                lost = (tokens - total) - first + self._middle(kept_first)
                body = _Pieces("-" + kept_first, known[1].middle - lost, known[1].last)
            self._last = (trimmed.content, body)
        return trimmed, total

    def _bisected(self, ctx: View, message: Message, cap: int, start: int) -> tuple[Message, int]:
        """`trimmed` for a count that does not add up piece by piece: the fewest oldest entries to drop."""
        text = message.content
        cuts = [start]  # where the text goes on after dropping 0, 1, .. entries (the newest always stays)
        while (after := text.find("\n-", cuts[-1] + 2)) >= 0:
            cuts.append(after)

        def cut(k: int) -> Message:
            return message.with_content(text[:start] + text[cuts[k]:])

        low, high = 0, len(cuts) - 1
        while low < high:  # fewer tokens the more entries go
            mid = (low + high) // 2
            if ctx.size(cut(mid)) <= cap:
                high = mid
            else:
                low = mid + 1
        trimmed = cut(low)
        self._last = None
        return trimmed, ctx.size(trimmed)

    def _middle(self, piece: str) -> int:
        """Tokens of a middle piece, "-" + piece + "\n"."""
        n = self._pieces.get(piece)
        if n is None:
            n = self._pieces[piece] = self._counter.count("-" + piece + "\n")  # type: ignore[attr-defined]
        return n

    def _split(self, text: str) -> _Pieces:
        """The pieces of a text, each middle piece counted on its own (the memo serves a text seen again)."""
        pieces = text.split("\n-")
        if len(pieces) == 1:
            return _Pieces(text)
        return _Pieces(pieces[0], sum(map(self._middle, pieces[1:-1])), pieces[-1])

    def _joined(self, a: _Pieces | None, b: _Pieces) -> _Pieces:
        """The pieces of a + "\n" + b (b when there is no a).

        "\n-" cannot overlap itself, so the cuts of the join are those of a, those of b, and one at the
        joining newline when b starts with "-".
        """
        if a is None:
            return b
        if b.first.startswith("-"):  # a cut at the join: a's last piece becomes a middle one
            inner = b.first[1:]
            first, middle = a.first, (0 if a.last is None else a.middle + self._middle(a.last))
            if b.last is None:
                return _Pieces(first, middle, inner)
            return _Pieces(first, middle + self._middle(inner) + b.middle, b.last)
        if a.last is None:  # a's only piece and b's first are one piece
            return _Pieces(a.first + "\n" + b.first, b.middle, b.last)
        if b.last is None:
            return _Pieces(a.first, a.middle, a.last + "\n" + b.first)
        return _Pieces(a.first, a.middle + self._middle(a.last + "\n" + b.first) + b.middle, b.last)


class ZonesPolicy:
    name = "zones"

    def __init__(self, params: ZonesParams) -> None:
        self.params = params
        self._summary_size = SummarySizer()  # a memo of summary lines' sizes: the only state kept

    def zone(self, view: View) -> str:
        p = self.params
        window = p.window or view.window
        share = view.prompt_tokens / window if window else 0.0
        if share < p.yellow_at:
            return "green"
        if share < p.red_at:
            return "yellow"
        if share < p.critical_at:
            return "red"
        return "critical"

    def decide(self, view: View) -> Sequence[Edit]:
        zone = self.zone(view)
        if zone == "green":
            return ()
        if zone == "yellow":
            return self._yellow(view)
        keep = self.params.red_keep_turns if zone == "red" else self.params.critical_keep_turns
        return self._prune(view, zone, keep)

    # ------------------------------------------------------------ sizing a summary
    def summary_size(self, view: View, message: Message, parts: Sequence[str], bodies: Mapping[int, str]) -> int:
        return self._summary_size(view, message, parts, bodies)

    def summary_trimmed(self, view: View, message: Message, tokens: int, cap: int) -> tuple[Message, int]:
        return self._summary_size.trimmed(view, message, tokens, cap)

    # ------------------------------------------------------------ the zones
    def _memory_stubs(self, view: View, keep: int, skip: set[int]) -> list[Change]:
        """Stubs for the memory chunks past the newest `keep` (their calls stay)."""
        p = self.params
        if not p.memory_tools:
            return []
        items = view.items
        chunks = [i for i, it in enumerate(items)
                  if it.message.role == "tool" and it.message.name in p.memory_tools
                  and not it.cleared and not it.pinned and i not in skip]
        out: list[Change] = []
        for i in chunks[: max(len(chunks) - keep, 0)]:
            item = items[i]
            text = MEMORY_STUB.format(tool=item.message.name, tokens=item.tokens)
            out.append(Replace(item, item.message.with_content(text), tags=NO_TAGS))
        return out

    def _yellow(self, view: View) -> Sequence[Edit]:
        p = self.params
        items = view.items
        span = math.ceil(len(items) * p.yellow_fraction)
        # a call in the span takes its results with it, even past the span
        drop = close_drop(view, range(span), "drop")
        changes: list[Change] = []
        if len(drop) >= 2 or (drop and items[drop[0]].message.role != "summary"):
            messages = [items[i].message for i in drop]
            parts, bodies = summary_parts(messages, p.line_chars)
            message = Message("summary", "\n".join(parts), ts=messages[-1].ts)
            tokens = self.summary_size(view, message, parts, bodies)
            if p.summary_max_share is not None:
                window = p.window or view.window
                message, tokens = self.summary_trimmed(view, message, tokens, int(window * p.summary_max_share))
            read = sum(items[i].tokens for i in drop) + p.instruction_tokens
            call = SideCall("summarize", read, tokens, f"zones: summary of {len(drop)} messages")
            changes.append(Summarize(picked(view, drop), message, call, tokens))
        changes.extend(self._memory_stubs(view, p.yellow_memory, set(drop)))
        if not changes:
            return ()
        return (Edit("yellow", tuple(changes), f"yellow zone: summarised the oldest {len(drop)} messages"),)

    def _prune(self, view: View, zone: str, keep_turns: int) -> Sequence[Edit]:
        items = view.items
        n = len(items)
        starts = turn_starts(view)
        if not keep_turns:
            keep_from = n
        elif starts:
            keep_from = starts[-min(keep_turns, len(starts))]
        else:
            keep_from = 0
        keep = set(range(keep_from, n))
        newest_result = next((i for i in range(n - 1, -1, -1) if items[i].message.role == "tool"), None)
        head = units(view)
        if newest_result is not None:
            keep |= {i for i in range(n) if head[i] == head[newest_result]}
        for i, item in enumerate(items):
            if item.pinned or item.message.role == "system":
                keep.add(i)
        keep_heads = {head[i] for i in keep}
        drop = close_drop(view, [i for i in range(n) if head[i] not in keep_heads], "keep", head)
        changes: list[Change] = [Drop(picked(view, drop))] if drop else []
        changes.extend(self._memory_stubs(view, self.params.red_memory, set(drop)))
        if not changes:
            return ()
        note = f"{zone} zone: kept the last {keep_turns} turns, dropped {len(drop)} messages"
        return (Edit(zone, tuple(changes), note),)


class PlainZones(ZonesPolicy):
    """The reference: the same zones, each summary counted whole and cut one oldest line at a time.

    `zones` keeps one thing between requests, a memo that counts a summary's lines once per session;
    here every summary is counted as the replay counts any message (`view.size`)."""

    def summary_size(self, view: View, message: Message, parts: Sequence[str], bodies: Mapping[int, str]) -> int:
        return view.size(message)

    def summary_trimmed(self, view: View, message: Message, tokens: int, cap: int) -> tuple[Message, int]:
        text = message.content
        start = text.find("\n-")  # the head ends here; each entry follows a "\n-"
        head, entries = text[:start], text[start:].split("\n-")[1:]
        if tokens <= cap or start < 0 or len(entries) < 2:
            return message, tokens
        while len(entries) > 1 and tokens > cap:  # the oldest entry goes; the newest always stays
            entries = entries[1:]
            message = message.with_content(head + "".join("\n-" + e for e in entries))
            tokens = view.size(message)
        return message, tokens


REFERENCE = PlainZones


register(PolicyInfo(
    "zones", ZonesParams, ZonesPolicy,
    "seed 004 three-zone enforcement (green <70%, yellow 70-85%, red 85-95%, critical)",
    "by share of the window: summarise the oldest 20% (yellow) or keep only the last 3 turns (red)", __name__,
    budget=lambda params, tokens: {"window": tokens},
    space={"window": TRIGGERS, "yellow_fraction": (0.1, 0.2, 0.3), "red_keep_turns": (1, 2, 3, 5)},
    weight=2.2))
