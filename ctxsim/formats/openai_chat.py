"""`openai-chat`: OpenAI Chat Completions message lists, with usage where it was logged.

Accepted shapes (one JSON document, or JSONL with one exchange per line):

- a conversation: `{"messages": [...], "model": ..., "tools": [...]}` or a bare array of
  messages; an assistant message may carry its request's `usage` (and `model`, `created`)
  inline, as loggers that store the final conversation do;
- logged exchanges: `{"request": {"model", "messages", "tools"}, "response": {chat.completion}}`,
  an array of them or one per JSONL line. Each request's messages extend the conversation;
  the response's first choice is the assistant message and its `usage` that request's.

Messages: `system`/`developer` before the first other message become the session's system
prompt (later ones: system messages); `user`; `assistant` with `tool_calls` (JSON-string
arguments decoded), legacy `function_call`, and `reasoning_content` as thinking; `tool` with
`tool_call_id`; legacy `function` results matched to the last `function_call`. Content is a
string, null, or an array of text / image parts (images counted by OpenAI's tile rule).
Usage: `prompt_tokens` includes `prompt_tokens_details.cached_tokens`; OpenAI reports no
cache writes (DeepSeek's `prompt_cache_hit_tokens` and litellm's Anthropic fields are read too).
"""

from __future__ import annotations

from typing import IO, Any

from ctxsim._support.redact import quoted
from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node
from ctxsim.formats._session import Conversation, arguments_of, frozen, openai_tool_calls
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import any_usage, split_model
from ctxsim.model import Message, Session, ToolCall

NAME = "openai-chat"
ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


def _images(block: Node) -> int:
    return image_tokens(block, "openai")


class _Messages:
    """Converts OpenAI messages, remembering legacy function calls to match their results."""

    def __init__(self) -> None:
        self.last_function_call: str | None = None
        self.function_calls = 0

    def system_prefix(self, nodes: list[Node]) -> tuple[str | None, list[Node]]:
        texts = []
        i = 0
        while i < len(nodes) and nodes[i].is_obj() and nodes[i].get("role") in ("system", "developer"):
            texts.append(text_of(nodes[i].child("content"))[0])
            i += 1
        return ("\n\n".join(texts) if texts else None), nodes[i:]

    def convert(self, node: Node, ts: str | None = None) -> Message:
        if not node.is_obj():
            raise node.fail("must be a message (an object with role and content)")
        role = node.string("role", required=True)
        if role not in ROLES:
            raise node.fail(f"unknown role {quoted(role)} (expected one of {', '.join(sorted(ROLES))})", "role")
        text, more = text_of(node.child("content"), _images)
        when = node.ts("ts") or node.ts("timestamp") or node.ts("created") or ts
        if role in ("system", "developer"):
            return Message("system", text, ts=when, extra_tokens=more, line=node.line)
        if role == "user":
            return Message("user", text, ts=when, extra_tokens=more, line=node.line)
        if role == "tool":
            call_id = node.string("tool_call_id", required=True)
            return Message("tool", text, ts=when, tool_call_id=call_id, name=node.string("name"), extra_tokens=more,
                           line=node.line)
        if role == "function":
            call_id = self.last_function_call or "function-call"
            return Message("tool", text, ts=when, tool_call_id=call_id, name=node.string("name"), line=node.line)
        calls = openai_tool_calls(node)
        legacy = node.obj("function_call")
        if legacy is not None:
            self.function_calls += 1
            self.last_function_call = f"function-call-{self.function_calls}"
            calls.append(ToolCall(self.last_function_call, legacy.string("name", required=True) or "",
                                  arguments_of(legacy.get("arguments"))))
        usage_node = node.obj("usage")
        usage = any_usage(usage_node) if usage_node is not None else None
        thinking = node.string("reasoning_content") or node.string("reasoning")
        return Message("assistant", text, ts=when, thinking=thinking or None, tool_calls=tuple(calls), usage=usage,
                       model=node.string("model"), extra_tokens=more, line=node.line)


def _conversation(doc: Node, conv: Conversation, messages_node: list[Node], convert: _Messages,
                  tools: list[Any] | None, model: str | None) -> None:
    system, rest = convert.system_prefix(messages_node)
    conv.exchange([convert.convert(m) for m in rest], None, system, tools)
    if model and not conv.header.get("model"):
        conv.header["model"] = model


def _exchange(node: Node, conv: Conversation, convert: _Messages) -> None:
    request = node.obj("request", required=True)
    assert request is not None
    response = node.obj("response")
    messages = request.array("messages", required=True)
    system, rest = convert.system_prefix(messages)
    tools = request.tools()
    converted = [convert.convert(m) for m in rest]
    answer = None
    if response is not None:
        choices = response.array("choices", required=True)
        if not choices:
            raise response.fail("is empty: no choice to read", "choices")
        message = choices[0].obj("message", required=True)
        assert message is not None
        ts = response.ts("created") or node.ts("ts") or node.ts("timestamp")
        answer = convert.convert(message, ts)
        usage_node = response.obj("usage")
        model = response.string("model") or request.string("model")
        answer = Message("assistant", answer.content, ts=answer.ts or ts, thinking=answer.thinking,
                         tool_calls=answer.tool_calls, usage=any_usage(usage_node) if usage_node else answer.usage,
                         model=model, extra_tokens=answer.extra_tokens,
                         extra=frozen({"response_id": response.string("id")} if response.string("id") else {}),
                         line=node.line)
    model = request.string("model") or (response.string("model") if response is not None else None)
    if model and not conv.header.get("model"):
        provider, _ = split_model(model)
        conv.header["model"] = model
        conv.header["provider"] = conv.header.get("provider") or provider
    conv.exchange(converted, answer, system, tools)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    conv = Conversation(stem, source=NAME, provider=None, model=None)
    convert = _Messages()
    nodes, whole = source.any_json(stream)
    if not whole:
        for node in nodes:
            try:
                if "request" in node:
                    _exchange(node, conv, convert)
                elif "messages" in node:
                    _conversation(node, conv, node.array("messages"), convert, node.tools(), node.string("model"))
                else:
                    source.bad(node.line, "expected an exchange {request, response} or {messages: [...]}")
            except TraceError as exc:
                source.bad(node.line, exc.message)
    else:
        doc = nodes[0]
        value = doc.value
        if isinstance(value, list):
            items = doc.items()
            if items and all(i.is_obj() and "request" in i for i in items):
                for item in items:
                    _exchange(item, conv, convert)
            else:
                _conversation(doc, conv, items, convert, None, None)
        elif isinstance(value, dict) and "request" in value:
            _exchange(doc, conv, convert)
        elif isinstance(value, dict) and "messages" in value:
            _conversation(doc, conv, doc.array("messages", required=True), convert, doc.tools(), doc.string("model"))
        else:
            raise doc.fail("expected a message array, {messages: [...]} or {request, response} exchanges")
    model = conv.header.get("model") or next(
        (m.model for b in conv.builders for m in b.messages if m.model), None)
    provider, _ = split_model(model)
    for b in conv.builders:
        b.header["model"] = b.header.get("model") or model
        b.header["provider"] = b.header.get("provider") or provider or "openai"
    return conv.sessions()


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    text = head_text(head)
    if shape == "none":
        return str(first)  # the reason
    if shape == "jsonl":
        if isinstance(first, dict) and isinstance(first.get("request"), dict) and \
                "messages" in first["request"] and ("response" not in first or "choices" in (first["response"] or {})):
            return None
        if isinstance(first, dict) and isinstance(first.get("messages"), list) and "type" not in first:
            return None if _openai_messages(first["messages"]) else "its messages are not OpenAI chat messages"
        return "JSONL lines are not {request: {messages}, response: {choices}} exchanges"
    start = text.lstrip()[:1]
    markers = ('"tool_calls"', '"tool_call_id"', '"choices"', '"prompt_tokens"', '"function_call"')
    anthropic = ('"tool_use"', '"tool_result"', '"stop_reason"', '"input_schema"')
    if '"role"' not in text:
        return "no chat messages ('role' fields) in the first bytes"
    if any(m in text for m in anthropic) and not any(m in text for m in markers):
        return "content blocks look like Anthropic Messages (tool_use / tool_result)"
    if start == "[":
        if any(k in text[:20000] for k in ("<environment_details>", '"modelInfo"', '"conversationHistoryIndex"')):
            return "a Cline task's api_conversation_history.json: read its folder or ui_messages.json (cline)"
        if '"request"' in text[:200] and '"choices"' in text:
            return None
        if any(k in text for k in ('"trajectory"', '"observation"', '"source"')):
            return "an array of events, not chat messages"
        return None
    if '"messages"' in text[:2000] or '"request"' in text[:200]:
        if '"parts"' in text and '"sessionID"' in text and '"info"' in text:
            return "an OpenCode session export ({info, messages: [{info, parts}]}): opencode"
        if any(k in text[:3000] for k in ('"trajectory_format"', '"model_stats"', '"trajectory"')):
            return "an agent trajectory, not a chat log"
        return None
    return "not a chat message list or {messages: [...]} object"


def _openai_messages(messages: list[Any]) -> bool:
    return all(isinstance(m, dict) and m.get("role") in ROLES for m in messages[:5])


ABOUT = {
    "reads": "OpenAI Chat Completions message lists ({messages, tools, model}, a bare array, "
             "or request/response exchange logs)",
    "location": "wherever the agent or an API logger writes them",
    "records": "the messages, tool calls and results; usage and time only where the log kept the responses",
    "cannot_know": "per-request usage of a bare message list; times; which messages a request really sent "
                   "unless each request is logged",
    "checked": "OpenAI Chat Completions request and response shapes (fixtures)",
}

register(FormatInfo(name=NAME, description="OpenAI Chat Completions messages (+ usage), or request/response logs",
                    sniff=sniff, module=__name__, parse=parse))
