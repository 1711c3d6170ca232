"""`mini-swe-agent`: mini-swe-agent trajectories (`*.traj.json`, format `mini-swe-agent-1.x`).

What the reader maps: `messages` in order. The first `system` message is the session's
system prompt; `user` messages (the task, and in text mode the observations, which carry
`<returncode>`) stay user messages; `tool` messages answer a call by `tool_call_id`.
Assistant messages carry the full provider response in `extra.response` (litellm's
ModelResponse dump): its `usage` is that request's usage (OpenAI style: `prompt_tokens`
includes `prompt_tokens_details.cached_tokens`; DeepSeek's hit count and litellm's Anthropic
cache fields are read too), its `model` the model, `created` or `extra.timestamp` (unix
seconds) the time. Tool calls come from the message's `tool_calls` (JSON-string arguments).
Run totals (`info.model_stats`: cost and call count) are kept as `recorded_totals`.
The legacy bare list of `{role, content}` messages is read by `openai-chat`.
"""

from __future__ import annotations

from typing import IO, Any

from ctxsim.formats import (
    FormatInfo, Node, SessionBuilder, Source, any_usage, frozen, image_tokens, openai_tool_calls, register,
    sniff_json_object_text, split_model, text_of,
)
from ctxsim.model import Message, Session

NAME = "mini-swe-agent"


def _images(block: Node) -> int:
    return image_tokens(block, "openai")


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    doc = source.document(stream)
    if not doc.is_obj():
        raise doc.fail("expected a mini-swe-agent trajectory object {info, messages}")
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    info = doc.obj("info")
    config_model = None
    if info is not None:
        config = info.obj("config")
        model_config = config.obj("model") if config is not None else None
        if model_config is not None:
            config_model = model_config.str("model_name")
    provider, model = split_model(config_model)
    builder = SessionBuilder(doc.str("instance_id") or stem, source=NAME, model=model, provider=provider)
    builder.extra["trajectory_format"] = doc.str("trajectory_format")
    for node in doc.list("messages", required=True):
        if not node.is_obj():
            raise node.fail("must be a message (an object with role and content)")
        role = node.str("role", required=True)
        extra_node = node.obj("extra")
        ts = extra_node.ts("timestamp") if extra_node is not None else None
        text, more = text_of(node.child("content"), _images)
        if role == "system" and not builder.messages and builder.header.get("system") is None:
            builder.header["system"] = text
            continue
        if role in ("system", "user"):
            builder.add(Message(role, text, ts=ts, extra_tokens=more))  # type: ignore[arg-type]
        elif role == "tool":
            call_id = node.str("tool_call_id", required=True)
            builder.add(Message("tool", text, ts=ts, tool_call_id=call_id, extra_tokens=more))
        elif role == "assistant":
            response = extra_node.obj("response") if extra_node is not None else None
            usage = None
            model_name = None
            if response is not None:
                usage_node = response.obj("usage")
                usage = any_usage(usage_node) if usage_node is not None else None
                _, model_name = split_model(response.str("model"))
                ts = ts or response.ts("created")
            calls = openai_tool_calls(node)
            extra: dict[str, Any] = {}
            if response is not None and response.str("id"):
                extra["response_id"] = response.str("id")
            builder.add(Message("assistant", text, ts=ts, thinking=node.str("reasoning_content"),
                                tool_calls=tuple(calls), usage=usage, model=model_name or model, extra_tokens=more,
                                extra=frozen(extra)))
        else:
            raise node.fail(f"unknown role {role!r} (expected system, user, assistant or tool)", "role")
    if not builder.header.get("model"):
        name = next((m.model for m in builder.messages if m.model), None)
        builder.header["model"] = name
        builder.header["provider"] = builder.header.get("provider") or split_model(name)[0]
    if info is not None:
        stats = info.obj("model_stats")
        if stats is not None:
            cost = stats.number("instance_cost")
            builder.extra["recorded_totals"] = {k: v for k, v in {
                "requests": stats.count("api_calls"), "cost_usd": str(cost) if cost is not None else None}.items()
                if v is not None}
        if info.str("exit_status"):
            builder.extra["exit_status"] = info.str("exit_status")
    return [builder.build()]


def sniff(head: bytes) -> str | None:
    text, refusal = sniff_json_object_text(head)
    if refusal:
        return refusal
    if '"mini-swe-agent' in text[:4000]:
        return None
    if '"messages"' in text and '"model_stats"' in text and '"info"' in text:
        return None
    return "no trajectory_format 'mini-swe-agent-...' (or info.model_stats with messages) in the first bytes"


register(FormatInfo(name=NAME, description="mini-swe-agent trajectories (messages with each provider response)",
                    sniff=sniff, module=__name__, parse=parse))
