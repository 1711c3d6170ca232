"""Summarizers: turn a span of the history into the text of one `summary` message.

A summarizer is anything with `summarize(messages, notes, *, turns=None, calls=None) -> str`:

- `messages` are canonical `ctxsim.model.Message`s in history order (user, assistant, tool
  results, earlier summaries);
- `notes` is the current text of the agent's notes file (seed 000's NotesFile), appended to the
  summary so it survives the compaction ("" when no notes are kept);
- `turns[i]` is the turn (request number within the session) of `messages[i]`, or None when it
  is not known (a summary a policy wrote carries its turn range in its header instead);
- `calls` maps a tool call id to its `ToolCall`, for results whose call is not in `messages`
  (a summarizer also pairs results with the calls it finds among `messages`).

A summarizer that models the size of what an LLM would write (rather than writing the real text)
also has `output_tokens(input_tokens) -> int` (the `SizeModel` protocol); policies then size the
summary message by that model instead of counting its placeholder text.

Two kinds, chosen by the `summarizer` parameter of the summarising policies:
`extractive` (deterministic, offline, seed 000's ExtractiveSummarizer semantics) and `llm`
(a simulated model summary of a configurable size; `ctxsim.summarizers.llm` also holds the
client adapters a live run would use).

`TurnClock` gives every history item its turn number; a summarising policy keeps one per session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

from ctxsim.history import Item
from ctxsim.model import Message, ToolCall

SummarizerName = Literal["extractive", "llm"]


class Summarizer(Protocol):
    def summarize(self, messages: Sequence[Message], notes: str = "", *,
                  turns: Sequence[int | None] | None = None,
                  calls: Mapping[str, ToolCall] | None = None) -> str: ...


@runtime_checkable
class SizeModel(Protocol):
    """How many tokens a (simulated) model summary of `input_tokens` tokens would take."""

    def output_tokens(self, input_tokens: int) -> int: ...


class TurnClock:
    """The turn of each message the engine appended: turn k is the k-th request of the session.

    An assistant message is the turn it answers; a tool result belongs to its call's turn; a user
    message belongs to the turn it prompts (the next request). Items a policy inserted (origin -1)
    have no turn here. A policy keeps one clock per session (a new one at `start`) and hands it
    what the engine tells its `observe`: the clock reads the appended items alone (a splice's
    copies keep their original's turn), so keeping it in step costs what arrived.
    """

    def __init__(self) -> None:
        self._turn: dict[int, int] = {}  # session index (Item.origin) -> turn
        self._assistants = 0

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        if removed:  # a splice: its items are copies of appended ones, or summaries (no turn)
            return
        for item in added:
            if item.origin < 0 or item.origin in self._turn:
                continue
            role = item.message.role
            if role == "assistant":
                self._assistants += 1
                turn = self._assistants
            elif role == "user":
                turn = self._assistants + 1
            else:
                turn = max(self._assistants, 1)
            self._turn[item.origin] = turn

    def turn(self, item: Item) -> int | None:
        return self._turn.get(item.origin) if item.origin >= 0 else None

    @property
    def requests(self) -> int:
        """Assistant messages (answered requests) seen so far."""
        return self._assistants


def make_summarizer(kind: SummarizerName, *, max_errors: int = 5, max_files: int = 12,
                    summary_tokens: int | None = None, summary_ratio: float = 0.05,
                    summary_min_tokens: int = 500, summary_max_tokens: int = 2_000) -> Summarizer:
    """The summarizer a policy's parameters name."""
    from ctxsim.summarizers.extractive import ExtractiveSummarizer
    from ctxsim.summarizers.llm import SimulatedLLMSummarizer, SummarySize

    if kind == "extractive":
        return ExtractiveSummarizer(max_errors=max_errors, max_files=max_files)
    if kind == "llm":
        size = SummarySize(summary_tokens, summary_ratio, summary_min_tokens, summary_max_tokens)
        return SimulatedLLMSummarizer(size, max_errors=max_errors, max_files=max_files)
    raise ValueError(f"unknown summarizer {kind!r}; known: extractive, llm")


def run_summarizer(summarizer: Summarizer, messages: Sequence[Message], notes: str, *,
                   turns: Sequence[int | None] | None, calls: Mapping[str, ToolCall] | None,
                   input_tokens: int) -> tuple[str, int | None]:
    """The summary text, and its size in tokens when the summarizer models it (else None: count the text)."""
    if isinstance(summarizer, SizeModel):
        target = summarizer.output_tokens(input_tokens)
        text = summarizer.summarize(messages, notes, turns=turns, calls=calls,
                                    target_tokens=target)  # type: ignore[call-arg]
        return text, target
    return summarizer.summarize(messages, notes, turns=turns, calls=calls), None


__all__ = [
    "SizeModel",
    "Summarizer",
    "SummarizerName",
    "TurnClock",
    "make_summarizer",
    "run_summarizer",
]
