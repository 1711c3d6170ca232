"""`compact`: a rolling summary replaces the old part of the history.

Source: seed 000's ContextManager._compact with its Budget (trigger 30,000, compact_above 20,000,
keep_recent 10, clear_at_least 10,000) and ExtractiveSummarizer; seed 003's checkpoint at 70-80%
of the window (`compact_at`); the window-relative triggers of Claude Code (`headroom_tokens`), Codex
(`compact_at=0.9`, recent user messages kept: `keep_user_tokens`) and Gemini CLI
(`compact_at=0.5`, newest 30% kept: `keep_fraction`, a second verifying call: `verify`), from
reference/providers-and-products.md B.4-B.6.

When it fires. The threshold comes from, in order of precedence: `headroom_tokens` (fire when the prompt
passes window - headroom_tokens), else `compact_at` (fire when it passes that fraction of the window),
else the seed's pair: `trigger` (the policy runs once the prompt passes it) and `compact_above`
(it compacts only if, after the earlier stages of a pipeline, the prompt is still above this).
With `headroom_tokens` or `compact_at` set, both of the pair take the window-relative value: compact
only if the prompt is still past it after the earlier stages. `trigger` is meant to be checked
on the prompt as it stood before any stage ran (seed 000 checks it before clearing); the engine
does not tell a stage that size yet, so it is checked on the prompt the stage sees unless the
Context offers `prompt_before_tokens`.

What it does. The newest `keep_recent` messages (or, with `keep_fraction`, the newest messages
holding at most that fraction of the history's tokens) stay verbatim. The cut moves back so that
no kept tool result loses the assistant message holding its call. Everything older is replaced by
one `summary` message, except pinned messages, which keep their place (and so do the assistant
message holding a pinned result's call and that call's other results); with `keep_user_tokens`
the newest older user messages up to that many tokens stay too. If the summarised part holds
fewer than `clear_at_least` tokens, or the summary would not be smaller, nothing happens: the
edit rewrites the cached prefix and must pay for itself.

The summarising request is metered as a side call (kind "summarize"): input = the summarised
messages plus the instruction prompt, output = the summary. The summary ends with the current
notes when a `notes` stage keeps a notes file for the session (`include_notes`).

The products' own rules (the presets in ctxsim/presets set them, each with its source):
`trigger_on=last_response` checks the threshold on the last response's total, the count a product has
before it sends the next request (Claude Code's preTokens, Codex's total_tokens); `window_tokens` is
the window the product sizes its threshold by (Claude Code: 200k unless the 1M variant); `keep_answers`
keeps the assistant's final answers and developer messages beside the user messages (Codex's rebuilt
history); `reattach=claude-code` puts back what Claude Code re-attaches after the summary (its newest
files read, todo list and plan: ctxsim.policies._reattach); `summarizer_call` says how the summarising
request is sent and billed (the span alone uncached; the whole prompt uncached, its cached prefix read,
or all written to the cache); `at_request` compacts before one given request (a manual /compact).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxsim.model import Message, ToolCall
from ctxsim.params import TRIGGERS, Same, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Change, Edit, Insert, Item, SideCall, Summarize, View
from ctxsim.summarizers import Summarizer, TurnClock, make_summarizer, run_summarizer
from ctxsim.summarizers.extractive import Block
from ctxsim.summarizers.llm import INSTRUCTIONS

SUMMARY_TAGS = frozenset({"summary"})
MODELLED = "modelled"  # the tag of a summary a (simulated) model wrote: the loss meter credits it what models keep


# ---------------------------------------------------------------- helpers shared by summarising policies

def prompt_before(view: View) -> int:
    """The prompt size before this request's stages ran, when the engine says; else as it stands now."""
    before = getattr(view, "prompt_before_tokens", None)
    return before if isinstance(before, int) else view.prompt_tokens


def group_of(view: View, index: int) -> list[int]:
    """The tool-use group of an item: an assistant message with calls and the results of those calls."""
    item = view.items[index]
    holder = item
    if item.message.role == "tool":
        found = view.holder_of(item.message.tool_call_id or "")
        if found is None or not found.alive:
            return [index]
        holder = found
    if not holder.message.tool_calls:
        return [index]
    out = [holder.pos]
    for call in holder.message.tool_calls:
        result = view.result_of(call.id)
        if result is not None and result.alive:
            out.append(result.pos)
    return out


def protected(view: View, start: int, end: int) -> set[int]:
    """Indices in [start, end) a summary must not replace: pinned messages and their tool-use groups."""
    keep: set[int] = set()
    items = view.items
    for i in range(start, end):
        if items[i].pinned and i not in keep:
            keep.update(j for j in group_of(view, i) if start <= j < end)
    return keep


def safe_cut(view: View, cut: int) -> int:
    """Move `cut` back until no tool result at or after it has its call before it."""
    items = view.items
    cut = max(0, min(cut, len(items)))
    while 0 < cut < len(items) and items[cut].message.role == "tool":
        cut -= 1
    changed = True
    while changed and cut > 0:
        changed = False
        for i in range(cut, len(items)):
            m = items[i].message
            if m.role != "tool":
                continue
            holder = view.holder_of(m.tool_call_id or "")
            if holder is None:
                continue
            if holder.alive and holder.pos < cut:
                cut = holder.pos
                changed = True
                break
    return cut


def calls_for(view: View, items: Sequence[Item]) -> dict[str, ToolCall]:
    """The calls of the tool results among `items`, wherever their assistant message is."""
    out: dict[str, ToolCall] = {}
    for item in items:
        m = item.message
        if m.role == "tool" and m.tool_call_id:
            call = view.call_of(m.tool_call_id)
            if call is not None:
                out[call.id] = call
    return out


def text_tokens(view: View, text: str, role: str = "user") -> int:
    """Tokens of a text alone (without the per-message framing)."""
    return view.size(Message(role, text)) - view.size(Message(role, ""))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Summary:
    """A summary written, not yet in the history: `item` stands for it (its message, size and tags; a
    cascade of summaries reads it as one more part), `change` puts it in place of the summarised items."""

    item: Item
    call: SideCall | None  # None: an offline summarizer (extractive) makes no model request

    def replacing(self, items: Sequence[Item]) -> Summarize:
        """The change that puts this summary in place of `items` (its call metered by the Edit)."""
        return Summarize(tuple(items), self.item.message, tokens=self.item.tokens, tags=self.item.tags)


def summarise_items(view: View, summarizer: Summarizer, clock: TurnClock, items: Sequence[Item], notes: str,
                    instructions: str = INSTRUCTIONS, tags: frozenset[str] = SUMMARY_TAGS,
                    note: str = "") -> Summary:
    """Summarise `items` into one summary, with the side call that would write it."""
    messages = [it.message for it in items]
    turns = [clock.turn(it) for it in items]
    input_tokens = sum(it.tokens for it in items) + text_tokens(view, instructions)
    text, modelled = run_summarizer(summarizer, messages, notes, turns=turns, calls=calls_for(view, items),
                                    input_tokens=input_tokens)
    message = Message("summary", text)
    if modelled is None:  # written offline (extractive): nothing to meter
        tokens = layout_tokens(view, summarizer, message)
        return Summary(_standing(message, view.size(message) if tokens is None else tokens, tags), None)
    framing = view.size(Message("summary", ""))
    return Summary(_standing(message, framing + modelled, tags | {MODELLED}),
                   SideCall("summarize", input_tokens, modelled, note))


def _standing(message: Message, tokens: int, tags: frozenset[str]) -> Item:
    """An item that stands for a summary not yet in the history (the engine makes the real one)."""
    return Item(message, tokens, 0, -1, inserted=True, alive=False, tags=tags)


def _measure(view: View) -> tuple[object, Callable[[str], int], Callable[[int], int]] | None:
    """How the sizer counts a summary's text, as (key, measure of a piece, tokens of the pieces' sum), when
    that count adds up over the pieces of an extractive summary (cut after a newline, before a marker word):
    an exact BPE whose cuts there are exact (ctxsim.tokens.bpe), or chars4 / bytes4 (characters, bytes)."""
    sizer = getattr(view.size, "__self__", None)
    counter = getattr(sizer, "counter", None)
    framing = getattr(sizer, "framing", None)
    tokenizer = getattr(counter, "tokenizer", None)
    if counter is None or framing is None or not framing.unscaled:
        return None
    if getattr(tokenizer, "_known_split", False):
        return counter, counter.count, _same
    name = getattr(tokenizer, "name", None)
    if name == "chars4" and not getattr(tokenizer, "exact", True):
        return "chars", len, _quarter
    if name == "bytes4" and not getattr(tokenizer, "exact", True):
        return "bytes", _utf8_len, _quarter
    return None


def _same(n: int) -> int:
    return n


def _quarter(n: int) -> int:
    return -(-n // 4)


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def layout_tokens(view: View, summarizer: Summarizer, message: Message) -> int | None:
    """The tokens of an extractive summary the summarizer just wrote, sized piece by piece: the USER and
    DECISION lines it took over from the summary before keep that one's size, only the new lines are
    counted. So a compaction costs what is new, not the whole summary (which keeps every USER and DECISION
    line, as in seed 000, and so grows through a session). None: size it whole (another tokenizer, a scaled
    framing, or not the text the summarizer wrote last)."""
    layout = getattr(summarizer, "layout", None)
    if layout is None or layout.text is not message.content:
        return None
    measured = _measure(view)
    if measured is None:
        return None
    key, measure, tokens = measured
    total = sum(map(measure, layout.head))
    blocks = [b for b in (layout.users, layout.decisions) if b is not None]
    for block in blocks:
        total += _block_size(block, key, measure)
    total += sum(map(measure, layout.rest))
    # The tail starts with the newline of the blank line, and "...\n" + "\nCurrent notes:" is not a place
    # where the count adds up ("\n\n" is one pre-token): the last body line is counted with that newline,
    # the tail from the notes line on.
    last = layout.rest[-1] if layout.rest else _last_line(blocks[-1].text) if blocks else layout.head[-1]
    total += measure(last + "\n") - measure(last) + measure(layout.tail[1:])
    return view.size(Message("summary", "")) + tokens(total)


def _last_line(text: str) -> str:
    return text[text.rfind("\n", 0, len(text) - 1) + 1:]


def _block_size(block: Block, key: object, measure: Callable[[str], int]) -> int:
    size = block.sizes.get(key)
    if size is None:
        base = block.base
        if base is not None and key in base.sizes:
            size = base.sizes[key] + sum(map(measure, block.added))
        else:
            size = measure(block.text)
        block.sizes[key] = size
    block.base = None  # sized: its base is no longer needed
    return size


def current_notes(view: View) -> str:
    from ctxsim.policies.notes import notes_text

    return notes_text(view)


# ---------------------------------------------------------------- the policy

@dataclass(frozen=True)
class SummaryParams:
    """How a summarising policy writes its summaries (shared by compact and hierarchical)."""

    summarizer: Literal["extractive", "llm"] = field(default="extractive", metadata=field_doc(
        "extractive: marker lines, offline; llm: a simulated model summary sized by summary_*"))
    include_notes: bool = field(default=True, metadata=field_doc(
        "end the summary with the current notes kept by a notes stage"))
    summary_tokens: int | None = field(default=None, metadata=field_doc(
        "llm: fixed summary size in tokens (else summary_ratio of the input)"))
    summary_ratio: float = field(default=0.05, metadata=field_doc("llm: summary size as a fraction of its input"))
    summary_min_tokens: int = field(default=500, metadata=field_doc("llm: smallest summary"))
    summary_max_tokens: int = field(default=2_000, metadata=field_doc("llm: largest summary"))
    max_errors: int = field(default=5, metadata=field_doc("extractive: newest error lines kept"))
    max_files: int = field(default=12, metadata=field_doc("extractive: newest file paths kept"))


@dataclass(frozen=True)
class CompactParams(SummaryParams):
    trigger: int = field(default=30_000, metadata=field_doc(
        "the policy runs once the prompt passes this many tokens (seed 000 Budget.trigger)"))
    compact_above: int = field(default=20_000, metadata=field_doc(
        "compact only if the prompt, after earlier pipeline stages, is still above this"))
    compact_at: float | None = field(default=None, metadata=field_doc(
        "fraction of the window (e.g. 0.75) that replaces trigger and compact_above"))
    headroom_tokens: int | None = field(default=None, metadata=field_doc(
        "compact once the prompt passes window minus this many tokens; replaces trigger and compact_above"))
    keep_recent: int = field(default=10, metadata=field_doc("newest messages kept verbatim"))
    keep_fraction: float | None = field(default=None, metadata=field_doc(
        "instead of keep_recent: keep the newest messages holding at most this fraction of the history's tokens"))
    keep_user_tokens: int = field(default=0, metadata=field_doc(
        "also keep the newest older user messages, up to this many tokens (Codex keeps 20,000)"))
    clear_at_least: int = field(default=10_000, metadata=field_doc(
        "skip unless the summarised part holds at least this many tokens"))
    verify: bool = field(default=False, metadata=field_doc(
        "meter a second call that re-checks the summary (Gemini CLI's verification probe)"))
    trigger_on: Literal["prompt", "last_response"] = field(default="prompt", metadata=field_doc(
        "what the threshold is checked on: the prompt about to be sent, or the last response's total (its prompt "
        "and output, the count the products know before the next request: Claude Code, Codex)"))
    at_request: int | None = field(default=None, metadata=field_doc(
        "also compact before this request (1-based in the run) whatever the prompt: a manual /compact"))
    window_tokens: int | None = field(default=None, metadata=field_doc(
        "the window the product sizes its thresholds by (Claude Code: 200k unless the 1M variant), "
        "in place of the replay's window"))
    keep_answers: bool = field(default=False, metadata=field_doc(
        "with keep_user_tokens: also keep the assistant's final answers (messages with no tool call) and "
        "system/developer messages in that budget, as Codex's rebuilt history does"))
    reattach: Literal["none", "claude-code"] = field(default="none", metadata=field_doc(
        "what the product re-attaches after the summary: claude-code = its newest files read (5 x 5k), "
        "todo list and plan"))
    summarizer_call: Literal["span", "prompt", "cached", "written"] = field(default="span", metadata=field_doc(
        "the summarising request: span = the summarised messages, uncached; prompt = the whole prompt, "
        "uncached; cached = the whole prompt, its prefix read from the cache; written = the whole prompt "
        "written to the cache"))

    def __post_init__(self) -> None:
        if min(self.trigger, self.compact_above, self.keep_recent, self.keep_user_tokens, self.clear_at_least) < 0:
            raise ValueError("token counts and keep_recent must not be negative")
        if self.compact_at is not None and self.headroom_tokens is not None:
            raise ValueError("give compact_at or headroom_tokens, not both")
        if self.compact_at is not None and not 0 < self.compact_at <= 1:
            raise ValueError("compact_at must be a fraction of the window in (0, 1]")
        if self.headroom_tokens is not None and self.headroom_tokens < 0:
            raise ValueError("headroom_tokens must not be negative")
        if self.keep_fraction is not None and not 0 <= self.keep_fraction < 1:
            raise ValueError("keep_fraction must be in [0, 1)")
        if self.window_tokens is not None and self.window_tokens < 1:
            raise ValueError("window_tokens must be positive")


class CompactPolicy:
    name = "compact"

    def __init__(self, params: CompactParams) -> None:
        self.params = params
        p = params
        self._clock = TurnClock()
        self.summarizer = make_summarizer(
            p.summarizer, max_errors=p.max_errors, max_files=p.max_files, summary_tokens=p.summary_tokens,
            summary_ratio=p.summary_ratio, summary_min_tokens=p.summary_min_tokens,
            summary_max_tokens=p.summary_max_tokens)

    def start(self) -> None:
        self._clock = TurnClock()

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        self._clock.observe(removed, added)

    def thresholds(self, window: int) -> tuple[int, int]:
        """(trigger, compact_above) in tokens for this window."""
        p = self.params
        if p.headroom_tokens is not None:
            limit = window - p.headroom_tokens
            return limit, limit
        if p.compact_at is not None:
            limit = int(window * p.compact_at)
            return limit, limit
        return p.trigger, p.compact_above

    def cut(self, view: View) -> int:
        """Index of the first message kept verbatim (before moving it back over tool results)."""
        p = self.params
        n = len(view)
        if p.keep_fraction is None:
            return max(0, n - p.keep_recent)
        # The newest messages whose tokens add up to at most the budget: the kept tokens only grow as the
        # cut moves back, so the first cut that keeps within the budget is found by bisection on the sums.
        total, base = view.message_tokens, view.base_tokens
        budget = p.keep_fraction * total
        return bisect_left(range(n + 1), True, key=lambda cut: total - (view.prefix_tokens(cut) - base) <= budget)

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        trigger, above = self.thresholds(p.window_tokens or view.window)
        manual = p.at_request is not None and view.request == p.at_request
        if not manual and p.trigger_on == "last_response":
            if last_response_tokens(view) <= trigger:
                return ()
        elif not manual and (prompt_before(view) <= trigger or view.prompt_tokens <= above):
            return ()
        cut = self.cut(view)
        if view.prefix_tokens(cut) - view.base_tokens < p.clear_at_least:
            return ()  # even everything before the cut holds too little: no need to look at it
        cut = safe_cut(view, cut)
        keep = protected(view, 0, cut)
        if p.keep_user_tokens:
            budget = p.keep_user_tokens
            for i in range(cut - 1, -1, -1):
                item = view.items[i]
                if i not in keep and _kept_role(item, p.keep_answers):
                    if item.tokens > budget:
                        break
                    budget -= item.tokens
                    keep.add(i)
        items = [view.items[i] for i in range(cut) if i not in keep]
        if not items:
            return ()
        old_tokens = sum(it.tokens for it in items)
        if old_tokens < p.clear_at_least:
            return ()
        notes = current_notes(view) if p.include_notes else ""
        summary = summarise_items(view, self.summarizer, self._clock, items, notes,
                                  note=f"summary of {len(items)} messages")
        if summary.item.tokens >= old_tokens:
            return ()
        calls = [_billed(view, summary.call, p.summarizer_call)] if summary.call else []
        if p.verify and summary.call:
            calls.append(SideCall("summarize", summary.call.input_tokens + summary.call.output_tokens,
                                  summary.call.output_tokens, "verification of the summary"))
        changes: list[Change] = [summary.replacing(items)]
        if p.reattach == "claude-code":
            from ctxsim.policies import _reattach

            back = _reattach.claude_code(items, calls_for(view, items), lambda t: text_tokens(view, t))
            if back.tokens:
                message = Message("user", back.text())
                tokens = view.size(Message("user", "")) + back.tokens
                changes.append(Insert(message, view.items[cut] if cut < len(view.items) else None, tokens=tokens))
        return (Edit("compact", tuple(changes), f"compacted {len(items)} messages", tuple(calls)),)


def last_answer(view: View) -> int | None:
    """The position of the newest assistant message (the last request's answer), if any."""
    items = view.items
    return next((i for i in range(len(items) - 1, -1, -1) if items[i].message.role == "assistant"), None)


def last_response_tokens(view: View) -> int:
    """The last request's prompt and output as the provider counted them (the history up to its answer, that
    answer included): the count a product reads from the last usage before it sends the next request."""
    last = last_answer(view)
    return 0 if last is None else view.prefix_tokens(last + 1)


def _kept_role(item: Item, answers: bool) -> bool:
    """A message Codex's rebuilt history keeps verbatim: a user message; with `answers`, also an assistant
    final answer (no tool call) and a system / developer message."""
    m = item.message
    if m.role == "user":
        return True
    return answers and (m.role == "system" or (m.role == "assistant" and not m.tool_calls and bool(m.content)))


def _billed(view: View, call: SideCall, how: str) -> SideCall:
    """The summarising request as the product sends and bills it (`summarizer_call`): `span` leaves the span's
    call as it is; the others send the whole prompt (tools, system, every message) plus the instructions."""
    if how == "span":
        return call
    total = view.prompt_tokens + text_tokens(view, INSTRUCTIONS)
    if how == "prompt":
        return SideCall(call.kind, total, call.output_tokens, call.note)
    if how == "written":
        return SideCall(call.kind, total, call.output_tokens, call.note, cache_write_tokens=total)
    # cached: the last request's prompt (everything before its answer, the newest assistant message) is in the
    # cache and read; what came after it and the instructions are written
    last = last_answer(view)
    read = view.prefix_tokens(last) if last is not None else 0
    return SideCall(call.kind, total, call.output_tokens, call.note, cache_read_tokens=read,
                    cache_write_tokens=total - read)


register(PolicyInfo(
    "compact", CompactParams, CompactPolicy,
    "seed 000 ContextManager._compact + ExtractiveSummarizer/LLMSummarizer; seed 003 checkpoint at 0.70-0.80",
    "replace old messages with one summary past a trigger, keeping the newest verbatim", __name__,
    budget=lambda params, tokens: {"trigger": tokens, "compact_above": tokens, "compact_at": None,
                                     "headroom_tokens": None},
    space={
        "trigger": TRIGGERS,
        "compact_above": (Same("trigger"),),
        "keep_recent": (2, 4, 6, 10, 16, 24),
        "clear_at_least": (0, 5_000, 10_000, 20_000),
        "summarizer": ("extractive", "llm"),
    },
    weight=2.2))
