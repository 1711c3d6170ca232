"""`anthropic-messages`: Anthropic Messages API request/response JSON, as an API logger keeps it.

Accepted shapes: one exchange `{"request": {...}, "response": {...}}`, an array of them, one
per JSONL line, or a bare request `{"model", "system", "tools", "messages"}` (optionally with
its `response`). Each request's messages should extend the conversation so far; a request
that does not (the agent rewrote its history) starts a new session.

Mapping: `system` (a string or text blocks) is the session's system prompt and `tools` its tool
definitions. User content: text and images (sized by Claude's pixels / 750 rule) make a user
message; each `tool_result` block a tool message (string or block content, `is_error`).
Assistant content: `text`, `thinking` (kept), `tool_use` (a call). The response is the
request's assistant message; its `usage` is exclusive (`input_tokens` leaves the cache out)
and is turned into the inclusive convention, with the 5-minute / 1-hour write split.
"""

from __future__ import annotations

from typing import IO, Any

from ctxsim._support.redact import quoted
from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import Conversation, frozen
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import usage_anthropic
from ctxsim.formats.claude_code import Response, assistant_block
from ctxsim.model import Message, Session

NAME = "anthropic-messages"


def _images(block: Node) -> int:
    return image_tokens(block, "anthropic")


def _system(request: Node) -> str | None:
    node = request.child("system")
    if node.value is None:
        return None
    return text_of(node)[0]


def user_messages(node: Node, ts: str | None) -> list[Message]:
    content = node.child("content")
    if isinstance(content.value, str) or content.value is None:
        return [Message("user", content.value or "", ts=ts, line=node.line)]
    out: list[Message] = []
    texts: list[str] = []
    extra = 0
    for block in content.items():
        v = block.value
        if isinstance(v, dict) and v.get("type") == "tool_result":
            call_id = block.string("tool_use_id", required=True)
            text, more = text_of(block.child("content"), _images)
            out.append(Message("tool", text, ts=ts, tool_call_id=call_id, is_error=block.boolean("is_error"),
                               extra_tokens=more, line=node.line))
        else:
            text, more = text_of(Node([v], block.source, block.line, block.path[:-1]), _images)
            texts.append(text)
            extra += more
    if texts or extra:
        out.append(Message("user", "\n".join(texts), ts=ts, extra_tokens=extra, line=node.line))
    return out


def assistant_message(node: Node, ts: str | None, usage: Any = None, model: str | None = None,
               extra: dict[str, Any] | None = None) -> Message:
    content = node.child("content")
    response = Response(None, node.line or 0, ts, model)
    blocks = [content] if isinstance(content.value, str) else (content.items() if content.value is not None else [])
    for block in blocks:
        assistant_block(block, response)
    response.usage = usage
    message = response.message()
    return Message("assistant", message.content, ts=ts, thinking=message.thinking, tool_calls=message.tool_calls,
                   usage=usage, model=model, extra_tokens=message.extra_tokens, extra=frozen(extra or {}),
                   line=node.line)


def _messages(request: Node, ts: str | None) -> list[Message]:
    out: list[Message] = []
    for m in request.array("messages", required=True):
        if not m.is_obj():
            raise m.fail(f"must be a message (an object), got {kind_of(m.value)}")
        role = m.string("role", required=True)
        if role == "user":
            out.extend(user_messages(m, ts))
        elif role == "assistant":
            out.append(assistant_message(m, ts))
        else:
            raise m.fail(f"unknown role {quoted(role)} (the Messages API has user and assistant)", "role")
    return out


def _exchange(node: Node, conv: Conversation) -> None:
    request = node.obj("request", required=True) if "request" in node else node
    assert request is not None
    response = node.obj("response")
    ts = node.ts("ts") or node.ts("timestamp") or request.ts("ts")
    tools = request.tools()
    history = _messages(request, None)
    answer = None
    model = request.string("model")
    if response is not None:
        if response.get("type") == "error" or ("error" in response and "content" not in response):
            answer = None
        else:
            usage_node = response.obj("usage")
            model = response.string("model") or model
            answer = assistant_message(response, ts, usage_anthropic(usage_node) if usage_node else None, model,
                                {"response_id": response.string("id")} if response.string("id") else None)
    if history and ts and history[-1].ts is None:
        history[-1] = Message(history[-1].role, history[-1].content, ts=ts, thinking=history[-1].thinking,
                              tool_calls=history[-1].tool_calls, tool_call_id=history[-1].tool_call_id,
                              is_error=history[-1].is_error, extra_tokens=history[-1].extra_tokens,
                              line=history[-1].line)
    if model and not conv.header.get("model"):
        conv.header["model"] = model
    conv.exchange(history, answer, _system(request), tools)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    conv = Conversation(stem, source=NAME, provider="anthropic", model=None)
    nodes, whole = source.any_json(stream)
    if not whole:
        for node in nodes:
            try:
                _exchange(node, conv)
            except TraceError as exc:
                source.bad(node.line, exc.message)
    else:
        doc = nodes[0]
        if isinstance(doc.value, list):
            for item in doc.items():
                if not item.is_obj():
                    raise item.fail(f"must be an exchange (an object), got {kind_of(item.value)}")
                _exchange(item, conv)
        elif isinstance(doc.value, dict) and ("request" in doc or "messages" in doc):
            _exchange(doc, conv)
        else:
            raise doc.fail("expected {request, response} exchanges or a Messages API request")
    for b in conv.builders:
        b.header["model"] = conv.header.get("model")
    return conv.sessions()


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    if shape == "none":
        return str(first)  # the reason
    text = head_text(head)
    openai = ('"tool_calls"', '"tool_call_id"', '"choices"', '"prompt_tokens"', '"role": "tool"', '"role":"tool"')
    anthropic = ('"tool_use"', '"tool_result"', '"stop_reason"', '"input_schema"', '"cache_creation_input_tokens"',
                 '"type": "message"', '"type":"message"', '"claude-')
    if shape == "jsonl":
        request = first.get("request") if isinstance(first, dict) else None
        if not isinstance(request, dict) and isinstance(first, dict) and "messages" in first and "model" in first:
            request = first
        if not isinstance(request, dict) or "messages" not in request:
            return "JSONL lines are not {request: {messages}, response} exchanges"
    elif '"messages"' not in text:
        return "no 'messages' in the first bytes"
    if any(m in text for m in openai):
        return "OpenAI chat markers (tool_calls, choices, prompt_tokens)"
    if shape != "jsonl" and '"parts"' in text and '"sessionID"' in text and '"info"' in text:
        return "an OpenCode session export ({info, messages: [{info, parts}]}): opencode"
    if shape != "jsonl" and ('"id": "T-' in text[:4000] or '"id":"T-' in text[:4000]) and (
            '"messageId"' in text or '"toolUseID"' in text):
        return "an Amp thread ({id: T-..., messages with messageId}): amp"
    if not any(m in text for m in anthropic) and '"system"' not in text[:3000]:
        return "no Anthropic markers (content blocks, stop_reason, a top-level system)"
    if any(k in text[:3000] for k in ('"trajectory"', '"trajectory_format"', '"history"')):
        return "an agent trajectory, not an API log"
    return None


ABOUT = {
    "reads": "Anthropic Messages API requests and responses ({request, response} exchanges, JSON or JSONL)",
    "location": "wherever an API logger or proxy writes them",
    "records": "each request's system prompt, tools and messages, each response with Anthropic usage",
    "cannot_know": "requests the logger did not see; times unless the logger adds them",
    "checked": "the Anthropic Messages API request and response shapes (API logs and proxies; fixtures)",
}

register(FormatInfo(name=NAME, description="Anthropic Messages API request/response JSON (or JSONL) logs",
                    sniff=sniff, module=__name__, parse=parse))
