"""Building sessions: `SessionBuilder` assembles one canonical Session and keeps the native format's
invariants (a tool result follows its call, call ids are unique), so that every reader's output converts
to native JSONL and reads back; `Conversation` builds sessions from logged request/response exchanges;
tool calls as providers log them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ctxsim.formats._input import count_message
from ctxsim.formats._node import Node
from ctxsim.model import Event, Message, Session, ToolCall

_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping)) if mapping else _NO_EXTRA


class SessionBuilder:
    """Collects one session's messages and events, keeping the native format's invariants.

    A tool result whose call is not open in this session (its call was lost or is in another
    session) becomes a user message with the same text, so nothing sent is lost and the
    session still converts to valid native JSONL; a tool-call id used twice gets a suffix.
    """

    def __init__(self, session_id: str, /, **header: Any) -> None:
        self.id = session_id
        self.header = header
        self.extra: dict[str, Any] = {}
        self.messages: list[Message] = []
        self.events: list[Event] = []
        self._open: dict[str, str] = {}  # call id -> tool name
        self._used: set[str] = set()
        self._renamed: dict[str, str] = {}
        self.orphans = 0

    def __len__(self) -> int:
        return len(self.messages)

    def call_id(self, call_id: str) -> str:
        """The id to use for a new call (unique in this session; an empty id gets one)."""
        call_id = call_id or "call"
        if call_id not in self._used:
            return call_id
        n = 2
        while f"{call_id}#{n}" in self._used:
            n += 1
        return f"{call_id}#{n}"

    def add(self, message: Message) -> Message:
        if message.role == "tool":
            wanted = message.tool_call_id or ""
            actual = self._renamed.get(wanted, wanted)
            if actual in self._open:
                name = message.name or self._open[actual]
                del self._open[actual]
                message = replace(message, tool_call_id=actual, name=name)
            else:
                self.orphans += 1
                extra = dict(message.extra)
                extra["orphan_tool_result"] = wanted
                message = replace(message, role="user", tool_call_id=None, is_error=False, extra=frozen(extra))
        if message.tool_calls:
            calls = []
            for original in message.tool_calls:
                call = original
                new_id = self.call_id(call.id)
                if new_id != call.id:
                    self._renamed[call.id] = new_id
                    call = replace(call, id=new_id)
                if not call.name:  # the native format needs a name; the log did not say
                    call = replace(call, name="unknown")
                self._used.add(call.id)
                self._open[call.id] = call.name
                calls.append(call)
            message = replace(message, tool_calls=tuple(calls))
        if message.role != "assistant" and message.usage is not None:
            message = replace(message, usage=None)
        count_message(message.line)
        self.messages.append(message)
        return message

    def replace_last(self, message: Message) -> None:
        """Swap the last message for an updated copy (an assistant response that grew)."""
        old = self.messages.pop()
        count_message(old.line, -1)
        for call in old.tool_calls:
            self._open.pop(call.id, None)
            self._used.discard(call.id)
        self.add(message)

    def event(self, name: str, ts: str | None = None, **fields: Any) -> None:
        self.events.append(Event(name, len(self.messages), ts, frozen({k: v for k, v in fields.items()
                                                                        if v is not None})))

    def build(self) -> Session:
        h = self.header
        return Session(
            id=self.id, source=h.get("source"), model=h.get("model"), provider=h.get("provider"),
            window=h.get("window"), system=h.get("system"), tools=tuple(frozen(t) for t in h.get("tools") or ()),
            system_tokens=h.get("system_tokens"), tools_tokens=h.get("tools_tokens"), ts=h.get("ts"),
            messages=tuple(self.messages), events=tuple(self.events), has_header=True,
            extra=frozen({k: v for k, v in self.extra.items() if v is not None}),
        )


def arguments_of(value: Any) -> Any:
    """Tool-call arguments as a provider logs them (often a JSON string) to an object where possible."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("{", "[")):
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return value
        return value
    return value


def openai_tool_calls(node: Node) -> list[ToolCall]:
    """An OpenAI-style message's `tool_calls` ({id, function: {name, arguments}}), each checked."""
    calls = []
    for call in node.array("tool_calls"):
        if not call.is_obj():
            raise call.fail("must be a tool call (an object)")
        function = call.obj("function", required=True)
        assert function is not None
        calls.append(ToolCall(call.string("id", required=True) or "", function.string("name", required=True) or "",
                              arguments_of(function.get("arguments"))))
    return calls


def message_key(message: Message) -> tuple[Any, ...]:
    """What `Conversation` compares messages by (a request restating the history matches it so)."""
    return (message.role, message.content.strip(), tuple(c.id for c in message.tool_calls), message.tool_call_id)


class Conversation:
    """Sessions from logged exchanges: each request's message list, then its response.

    A request whose messages extend the conversation so far adds only the new ones, then the
    response (one assistant message with its usage). A request that does not extend it (the
    agent rewrote its history: a compaction, a fresh start) begins a new session; the history
    it restates keeps its user and tool messages, and restated assistant messages become
    `summary` messages (they were not requests of this session: a request is a response the
    log holds).
    """

    def __init__(self, base_id: str, **header: Any) -> None:
        self.base_id = base_id
        self.header = header
        self.builders: list[SessionBuilder] = []
        self.keys: list[tuple[Any, ...]] = []
        self.system: str | None = None
        self.tools: list[Any] | None = None

    def _new(self, system: str | None, tools: list[Any] | None, reason: str | None, ts: str | None) -> SessionBuilder:
        previous = self.builders[-1] if self.builders else None
        sid = self.base_id if previous is None else f"{self.base_id}/part-{len(self.builders) + 1}"
        builder = SessionBuilder(sid, **{**self.header, "system": system, "tools": tools})
        if previous is not None:
            builder.extra["continues"] = previous.id
            if reason:
                builder.event(reason, ts, inferred=True)
        self.builders.append(builder)
        self.keys = []
        self.system, self.tools = system, tools
        return builder

    def exchange(self, request: list[Message], response: Message | None, system: str | None = None,
                 tools: list[Any] | None = None) -> None:
        builder = self.builders[-1] if self.builders else None
        keys = [message_key(m) for m in request]
        n = len(self.keys)
        extends = builder is not None and keys[:n] == self.keys and system == self.system and (
            tools is None or self.tools is None or tools == self.tools)
        if builder is None:
            builder = self._new(system, tools, None, None)
            fresh = request
        elif extends:
            fresh = request[n:]
        else:
            ts = (request[-1].ts if request else None) or (response.ts if response else None)
            shorter = sum(len(m.content) for m in request) < sum(len(m.content) for m in builder.messages)
            builder = self._new(system, tools, "compaction" if shorter else "history_rewritten", ts)
            fresh = [m if m.role != "assistant" else restated(m) for m in request]
        for message in fresh:
            builder.add(message)
        self.keys.extend(keys[n:] if extends else keys)
        if response is not None:
            builder.add(response)
            self.keys.append(message_key(response))

    def sessions(self) -> list[Session]:
        return [b.build() for b in self.builders if b.messages or b.events]


def restated(message: Message) -> Message:
    """An assistant message a request restates (it was not a request of this session), as a `summary`."""
    text = message.content
    if message.tool_calls:
        calls = "\n".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in message.tool_calls)
        text = f"{text}\n{calls}" if text else calls
    return Message("summary", text, ts=message.ts, extra_tokens=message.extra_tokens,
                   extra=frozen({**message.extra, "restated_assistant": True}), line=message.line)
