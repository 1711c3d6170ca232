"""`server_compact`: Anthropic's server-side compaction, `compact_20260112`.

Source: Anthropic compaction (reference/providers-and-products.md B.2). When a request's input
passes `trigger` tokens (default 150,000; the API refuses less than 50,000), the server first
samples a summary of the whole conversation, then answers on the compacted context; on later
requests everything before the compaction block is dropped. In replay: the whole history (all
messages, the newest user turn and tool results included) is replaced by one `summary` message of
`summary_tokens` tokens, and the request is metered on the compacted context. The summarising
iteration is metered as its own row (kind "summarize"): input = the prompt as it stood (tools and
system included) plus the summary instructions (`instructions` when given, which replace the
default prompt), output = `summary_tokens` (default 3,500, the size of the doc's billing example;
the doc does not fix it). Pinned messages are never folded into the summary: they keep their
place after it, with their tool-use groups. With `pause_after_compaction` the API stops after the
compaction block and the client re-appends what it wants; here it keeps the newest turn (the last
assistant message and what followed it) verbatim after the summary.

Billing, as the providers bill it (reference providers-2026-update.md): Anthropic reports the
compaction as its own entry of `usage.iterations` (the top-level usage excludes it), and OpenAI's
Responses API compaction (`context_management: [{type: "compaction", compact_threshold}]`, or
`/responses/compact`) is billed like any call; in both the compaction reads the request's prompt, whose
prefix (the previous request's prompt) is in the prompt cache. So the summarising row reads
that prefix from the cache and writes the rest (`iteration_cache=cached`, the default);
`iteration_cache=uncached` meters it all fresh, as ctxsim did before.

The summary's text is a placeholder (an extractive summary cut or padded to about the modelled
size), so probes can still look for facts in it; its size is the modelled one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ctxsim.params import TRIGGERS, field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Edit, Item, SideCall, View
from ctxsim.policies.compact import current_notes, last_answer, protected, safe_cut, summarise_items, text_tokens
from ctxsim.summarizers import TurnClock
from ctxsim.summarizers.llm import SimulatedLLMSummarizer, SummarySize

MIN_TRIGGER = 50_000
DEFAULT_INSTRUCTIONS = (
    "You have been working on the task described at the start of this conversation. Write a summary "
    "of the conversation so far that would let you continue it: where the work stands, what to do "
    "next, and what you have learned. Put it inside <summary></summary>."
)


@dataclass(frozen=True)
class ServerCompactParams:
    trigger: int = field(default=150_000, metadata=field_doc(
        "compact when the request's input passes this many tokens (at least 50,000)"))
    summary_tokens: int = field(default=3_500, metadata=field_doc("size of the compaction block in tokens"))
    instructions: str | None = field(default=None, metadata=field_doc(
        "custom summary prompt; replaces the default one in the summarising input"))
    include_notes: bool = field(default=True, metadata=field_doc(
        "end the summary with the current notes kept by a notes stage"))
    iteration_cache: Literal["cached", "uncached"] = field(default="cached", metadata=field_doc(
        "the compaction iteration reads the prompt's cached prefix (the previous request's), as the provider bills "
        "it, or is metered uncached"))
    pause_after_compaction: bool = field(default=False, metadata=field_doc(
        "the client re-appends the newest turn after the compaction block: keep the messages since the "
        "last assistant message (with that message, for its tool calls) verbatim"))

    def __post_init__(self) -> None:
        if self.trigger < MIN_TRIGGER:
            raise ValueError(f"trigger must be at least {MIN_TRIGGER:,} input tokens (the API's minimum), "
                             f"got {self.trigger:,}")
        if self.summary_tokens < 1:
            raise ValueError("summary_tokens must be at least 1")


class ServerCompactPolicy:
    name = "server_compact"

    def __init__(self, params: ServerCompactParams) -> None:
        self.params = params
        self._clock = TurnClock()
        self.summarizer = SimulatedLLMSummarizer(SummarySize(summary_tokens=params.summary_tokens))

    def start(self) -> None:
        self._clock = TurnClock()

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        self._clock.observe(removed, added)

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        prompt = view.prompt_tokens
        if prompt <= p.trigger:
            return ()
        items = view.items
        end = len(items)
        if p.pause_after_compaction:
            end = next((i for i in range(len(items) - 1, -1, -1) if items[i].message.role == "assistant"), len(items))
            end = safe_cut(view, end)
        keep = protected(view, 0, end)
        old = [items[i] for i in range(end) if i not in keep]
        if not old:
            return ()
        instructions = p.instructions if p.instructions is not None else DEFAULT_INSTRUCTIONS
        notes = current_notes(view) if p.include_notes else ""
        summary = summarise_items(view, self.summarizer, self._clock, old, notes, instructions=instructions,
                                  note="compaction iteration")
        # The compaction iteration reads the whole request (tools and system too), not just the messages.
        total = prompt + text_tokens(view, instructions)
        read = 0
        if p.iteration_cache == "cached":
            last = last_answer(view)
            read = view.prefix_tokens(last) if last is not None else 0
        call = SideCall("summarize", total, p.summary_tokens, "compaction iteration", cache_read_tokens=read,
                        cache_write_tokens=total - read if read else 0)
        return (Edit("compact", (summary.replacing(old),), f"server compaction of {len(old)} messages", (call,)),)


register(PolicyInfo(
    "server_compact", ServerCompactParams, ServerCompactPolicy,
    "Anthropic compact_20260112 (server-side compaction)",
    "past a trigger, replace the whole conversation with one compaction summary", __name__,
    budget=lambda params, tokens: {"trigger": tokens},
    space={"trigger": TRIGGERS, "pause_after_compaction": (False, True)},
    weight=1.9,
    api_edit="compact_20260112"))
