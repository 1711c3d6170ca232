"""`llm`: a model writes the summary. For replay, a size model stands in for the model.

Source: seed 000's LLMSummarizer (a client call with an instruction prompt, the notes appended
after the model's text) and seed 003's guidance on summary size (5-20k tokens compressed into
500-1,000). A replay cannot call a model (it is offline and must be deterministic), so the
summarising policies use `SimulatedLLMSummarizer`: it decides how many tokens the model would
write (`SummarySize`: a fixed `summary_tokens`, or `summary_ratio` of the input clamped to
[min_tokens, max_tokens]) and writes a deterministic placeholder of about that size whose body is
the extractive summary (the facts a model following `INSTRUCTIONS` is asked to keep). The policy
sizes the summary message by the model, not by the placeholder text.

`LLMSummarizer` with `AnthropicSummaryClient` or `OpenAISummaryClient` is what a live run would
use; the SDKs are not imported here (pass a constructed `anthropic.Anthropic()` or
`openai.OpenAI()` client), and nothing in ctxsim's replay or tests calls them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ctxsim.model import Message, ToolCall
from ctxsim.summarizers.extractive import NOTES_LINE, ExtractiveSummarizer

INSTRUCTIONS = """\
Write a working summary of the agent session above so that the agent can carry on from it \
without the original messages.
Keep, word for word where you can:
- the task as the user first stated it, and every instruction or correction the user gave later \
(one USER: line each, with its turn);
- each decision taken and why (one DECISION: line each);
- work still open (TODO: lines; leave out anything since marked DONE:);
- exact error messages and the approaches that failed (ERROR: lines), so they are not retried;
- every file path that was read or changed, with what last happened to it (FILE: lines).
Leave out tool output the agent can fetch again. Do not add anything that is not in the session."""

FILLER = "[model prose]"


class SummaryClient(Protocol):
    """One model request: instructions plus a transcript in, the summary text out."""

    def complete(self, instructions: str, transcript: str, max_tokens: int) -> str: ...


class AnthropicSummaryClient:
    """Adapter for an `anthropic.Anthropic` client (Messages API)."""

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model

    def complete(self, instructions: str, transcript: str, max_tokens: int) -> str:
        response = self.client.messages.create(
            model=self.model,
            max_tokens=max_tokens,
            system=instructions,
            messages=[{"role": "user", "content": transcript}],
        )
        return "".join(getattr(block, "text", "") for block in response.content
                       if getattr(block, "type", "text") == "text")


class OpenAISummaryClient:
    """Adapter for an `openai.OpenAI` client (Chat Completions API)."""

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.model = model

    def complete(self, instructions: str, transcript: str, max_tokens: int) -> str:
        response = self.client.chat.completions.create(
            model=self.model,
            max_completion_tokens=max_tokens,
            messages=[{"role": "system", "content": instructions}, {"role": "user", "content": transcript}],
        )
        return response.choices[0].message.content or ""


def transcript(messages: Sequence[Message], turns: Sequence[int | None] | None = None) -> str:
    """The span as plain text for a summarising request: one block per message."""
    blocks = []
    for i, m in enumerate(messages):
        turn = turns[i] if turns is not None else None
        label = m.role if m.role != "tool" else f"tool result {m.name or ''}".rstrip()
        head = f"[{label}, turn {turn}]" if turn is not None else f"[{label}]"
        parts = [m.content] if m.content else []
        for call in m.tool_calls:
            parts.append(f"(calls {call.name} {call.arguments_json})")
        blocks.append(head + " " + "\n".join(parts))
    return "\n\n".join(blocks)


class LLMSummarizer:
    """A live summarizer: asks a model through a `SummaryClient`; the notes are appended after."""

    name = "llm"

    def __init__(self, client: SummaryClient, instructions: str = INSTRUCTIONS, max_tokens: int = 2_000) -> None:
        self.client = client
        self.instructions = instructions
        self.max_tokens = max_tokens

    def summarize(self, messages: Sequence[Message], notes: str = "", *,
                  turns: Sequence[int | None] | None = None,
                  calls: Mapping[str, ToolCall] | None = None) -> str:
        text = self.client.complete(self.instructions, transcript(messages, turns), self.max_tokens)
        return f"{text.strip()}\n\n{NOTES_LINE}\n{notes.strip() or '(empty)'}"


@dataclass(frozen=True)
class SummarySize:
    """How long a model's summary is: `summary_tokens` if set, else `ratio` of the input within [min, max]."""

    summary_tokens: int | None = None
    ratio: float = 0.05
    min_tokens: int = 500
    max_tokens: int = 2_000

    def __post_init__(self) -> None:
        if self.summary_tokens is not None and self.summary_tokens < 1:
            raise ValueError("summary_tokens must be at least 1")
        if not 0 < self.ratio <= 1:
            raise ValueError("summary_ratio must be in (0, 1]")
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise ValueError("summary sizes need 1 <= summary_min_tokens <= summary_max_tokens")

    def output_tokens(self, input_tokens: int) -> int:
        if self.summary_tokens is not None:
            return self.summary_tokens
        return min(self.max_tokens, max(self.min_tokens, round(input_tokens * self.ratio)))


class SimulatedLLMSummarizer:
    """Offline stand-in for a model summary: the size comes from `SummarySize`, the text is a placeholder.

    The placeholder is the extractive summary (header, marker lines, notes) cut or padded to
    about `chars_per_token` characters per modelled token; it is deterministic.
    """

    name = "llm"

    def __init__(self, size: SummarySize | None = None, *, max_errors: int = 5, max_files: int = 12,
                 chars_per_token: int = 4) -> None:
        self.size = size or SummarySize()
        self.extractive = ExtractiveSummarizer(max_errors=max_errors, max_files=max_files)
        self.chars_per_token = chars_per_token

    def output_tokens(self, input_tokens: int) -> int:
        return self.size.output_tokens(input_tokens)

    def summarize(self, messages: Sequence[Message], notes: str = "", *,
                  turns: Sequence[int | None] | None = None,
                  calls: Mapping[str, ToolCall] | None = None,
                  target_tokens: int | None = None) -> str:
        body = self.extractive.summarize(messages, notes, turns=turns, calls=calls)
        if target_tokens is None:
            return body
        return fit(body, target_tokens * self.chars_per_token)


def fit(text: str, chars: int) -> str:
    """`text` cut at a line boundary, or padded with filler lines, to about `chars` characters."""
    lines = text.split("\n")
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > chars and out:
            break
        out.append(line)
        used += len(line) + 1
    while used + len(FILLER) + 1 <= chars:
        out.append(FILLER)
        used += len(FILLER) + 1
    return "\n".join(out)
