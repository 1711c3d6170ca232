"""How many tokens a message, the system prompt and the tool schemas take.

A message costs its texts (content, thinking, each tool call's name and JSON
arguments), counted by the tokenizer, plus framing: the role markers and
separators a chat format adds. Providers do not document the framing exactly;
the defaults follow seed 000 (4 tokens a message) and are configurable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ctxsim.model import Message, Session
from ctxsim.tokens import TokenCounter


@dataclass(frozen=True)
class Framing:
    """Tokens added around the counted texts."""

    message_tokens: int = 4  # every message: role markers and separators
    tool_call_tokens: int = 4  # each tool call inside an assistant message
    tool_result_tokens: int = 0  # extra on a tool result, beyond message_tokens
    count_tool_result_name: bool = False  # yoagent counts the tool name of a result
    count_call_name: bool = True
    count_call_arguments: bool = True  # seed 000 counts an assistant message's text only
    tool_schema_tokens: int = 8  # each tool definition, beyond its JSON
    scale: float = 1.0  # calibration: billed tokens per counted token (e.g. Claude's tokenizer vs o200k)


def blocks(message: Message) -> int:
    """Content blocks as Anthropic counts them for the cache lookback."""
    if message.role != "assistant":
        return 1
    n = (1 if message.content else 0) + (1 if message.thinking else 0) + len(message.tool_calls)
    return max(n, 1)


class MessageSizer:
    """Token size of messages, system prompt and tools, with a shared memo."""

    def __init__(self, counter: TokenCounter, framing: Framing | None = None) -> None:
        self.counter = counter
        self.framing = framing or Framing()

    def message(self, message: Message) -> int:
        f = self.framing
        count = self.counter.count
        n = f.message_tokens + count(message.content) + message.extra_tokens
        if message.thinking:
            n += count(message.thinking)
        for call in message.tool_calls:
            n += f.tool_call_tokens
            if f.count_call_arguments:
                n += count(call.arguments_json)
            if f.count_call_name:
                n += count(call.name)
        if message.role == "tool":
            n += f.tool_result_tokens
            if f.count_tool_result_name and message.name:
                n += count(message.name)
        if f.scale != 1.0:
            return round(n * f.scale)
        return n

    def system(self, session: Session) -> int:
        if session.system_tokens is not None:
            return session.system_tokens
        if session.system is None:
            return 0
        return self.framing.message_tokens + self.counter.count(session.system)

    def tools(self, session: Session) -> int:
        if session.tools_tokens is not None:
            return session.tools_tokens
        return sum(
            self.framing.tool_schema_tokens
            + self.counter.count(json.dumps(dict(tool), ensure_ascii=False, separators=(",", ":")))
            for tool in session.tools
        )

    def prime(self, session: Session) -> None:
        """Count every distinct text of the session in one batch."""
        texts: list[str] = []
        for message in session.messages:
            texts.append(message.content)
            if message.thinking:
                texts.append(message.thinking)
            for call in message.tool_calls:
                texts.append(call.name)
                texts.append(call.arguments_json)
            if message.role == "tool" and message.name:
                texts.append(message.name)
        if session.system:
            texts.append(session.system)
        self.counter.prime(texts)
