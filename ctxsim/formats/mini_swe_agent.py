"""`mini-swe-agent`: mini-swe-agent trajectories (`*.traj.json`, formats `mini-swe-agent-1` and `-1.1`).

What the reader maps: `messages` in order. The first `system` message is the session's
system prompt; `user` messages (the task, and in text mode the observations, which carry
`<returncode>`) stay user messages; `tool` messages answer a call by `tool_call_id`.
Assistant messages carry the full provider response in `extra.response` (litellm's
ModelResponse dump): its `usage` is that request's usage (OpenAI style: `prompt_tokens`
includes `prompt_tokens_details.cached_tokens`; DeepSeek's hit count and litellm's Anthropic
cache fields are read too), its `model` the model, `created` or `extra.timestamp` (unix
seconds) the time. Tool calls come from the message's `tool_calls` (JSON-string arguments).
Run totals (`info.model_stats`: cost and call count) are kept as `recorded_totals`; a
response's own cost (`extra.cost`, or OpenRouter's `usage.cost`) as its usage's `cost_usd`.

Format `mini-swe-agent-1` (text mode) has the actions in bash blocks of the assistant text,
observations as user messages (tagged `tool: bash`), OpenRouter usage with `usage.cost`, and
only `response.created` as time. Format `mini-swe-agent-1.1` has tool calls, `reasoning_content`
(the thinking), `completion_tokens_details` that may be null, and a final `exit` message (the
submission) that was never sent to the model: skipped and counted in the notes, like any role
this reader does not know. The responses may name a served model other than the configured
one (kept per message; the session keeps the configured one, and the notes say so); `api_calls`
may count a failed call that left no response (the notes say how many).
The legacy bare list of `{role, content}` messages is read by `openai-chat`.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import IO, Any

from ctxsim._support.redact import quoted
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, frozen, openai_tool_calls
from ctxsim.formats._sniff import sniff_json_object_text
from ctxsim.formats._source import Source
from ctxsim.formats._usage import any_usage, split_model
from ctxsim.model import Message, Session, Usage

NAME = "mini-swe-agent"


def _images(block: Node) -> int:
    return image_tokens(block, "openai")


def _cost(value: Any) -> str | None:
    """A recorded cost (a number) as a decimal string; None when absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        cost = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    return format(cost, "f") if cost.is_finite() and cost >= 0 else None


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
            config_model = model_config.string("model_name")
    provider, model = split_model(config_model)
    builder = SessionBuilder(doc.string("instance_id") or stem, source=NAME, model=model, provider=provider)
    builder.extra["trajectory_format"] = doc.string("trajectory_format")
    skipped: dict[str, int] = {}
    served: set[str] = set()
    for node in doc.array("messages", required=True):
        if not node.is_obj():
            raise node.fail("must be a message (an object with role and content)")
        role = node.string("role", required=True)
        extra_node = node.obj("extra")
        ts = extra_node.ts("timestamp") if extra_node is not None else None
        text, more = text_of(node.child("content"), _images)
        if role == "system" and not builder.messages and builder.header.get("system") is None:
            builder.header["system"] = text
            continue
        if role in ("system", "user"):
            tagged = frozen({"tool": "bash"}) if role == "user" and "<returncode>" in text else frozen(None)
            builder.add(Message(role, text, ts=ts, extra_tokens=more, extra=tagged))  # type: ignore[arg-type]
        elif role == "tool":
            call_id = node.string("tool_call_id", required=True)
            builder.add(Message("tool", text, ts=ts, tool_call_id=call_id, extra_tokens=more))
        elif role == "assistant":
            response = extra_node.obj("response") if extra_node is not None else None
            usage = None
            model_name = None
            if response is not None:
                usage_node = response.obj("usage")
                usage = any_usage(usage_node) if usage_node is not None else None
                _, model_name = split_model(response.string("model"))
                ts = ts or response.ts("created")
                if usage is not None and usage_node is not None:
                    details = usage_node.obj("completion_tokens_details")  # may be null
                    reasoning = details.count("reasoning_tokens") if details is not None else None
                    cost = _cost(extra_node.get("cost") if extra_node is not None else None) or _cost(
                        usage_node.get("cost"))
                    more_usage = {**usage.extra, **({"reasoning_tokens": reasoning} if reasoning else {}),
                                  **({"cost_usd": cost} if cost is not None else {})}
                    if more_usage:
                        usage = Usage(usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                                      usage.cache_write_1h_tokens, usage.output_tokens, extra=frozen(more_usage))
            if model_name and model and model_name != model:
                served.add(model_name)
            calls = openai_tool_calls(node)
            extra: dict[str, Any] = {}
            if response is not None and response.string("id"):
                extra["response_id"] = response.string("id")
            builder.add(Message("assistant", text, ts=ts, thinking=node.string("reasoning_content"),
                                tool_calls=tuple(calls), usage=usage, model=model_name or model, extra_tokens=more,
                                extra=frozen(extra)))
        else:
            skipped[role or "?"] = skipped.get(role or "?", 0) + 1  # `exit`: the submission, never sent
    if not builder.header.get("model"):
        name = next((m.model for m in builder.messages if m.model), None)
        builder.header["model"] = name
        builder.header["provider"] = builder.header.get("provider") or split_model(name)[0]
    if info is not None:
        stats = info.obj("model_stats")
        if stats is not None:
            cost = _cost(stats.get("instance_cost"))
            api_calls = stats.count("api_calls")
            builder.extra["recorded_totals"] = {k: v for k, v in {
                "requests": api_calls, "cost_usd": cost}.items() if v is not None}
            answered = sum(1 for m in builder.messages if m.role == "assistant")
            if api_calls is not None and api_calls > answered:
                source.note(f"api_calls counts {api_calls}, the log holds {answered} responses: "
                            f"{api_calls - answered} call(s) left no response (failed calls)")
        if info.string("exit_status"):
            builder.extra["exit_status"] = info.string("exit_status")
    if skipped:
        source.note("skipped messages never sent to the model: " + ", ".join(
            f"{n} of role {quoted(r)}" for r, n in sorted(skipped.items())))
    if served:
        source.note(f"the responses name a served model ({', '.join(sorted(served))}) other than the configured "
                    f"{model}; each request is priced as its response names it")
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


ABOUT = {
    "reads": "mini-swe-agent trajectories (*.traj.json, trajectory_format mini-swe-agent-1 and -1.1)",
    "location": "the run's output directory: <output>/<instance id>/<instance id>.traj.json (batch), or the "
                "path given to mini -o",
    "records": "every message; per response the full provider response (litellm usage with the cache, the "
               "served model, creation time) and its cost; run totals (cost, API calls)",
    "cannot_know": "times of text-mode observations (format 1 keeps only response.created); tool definitions; "
                   "failed calls (counted in api_calls, no response logged); cache writes for providers that "
                   "do not report them",
    "checked": "mini-swe-agent 2.3.0 trajectories (format 1.1, a public trajectory) and format 1",
}

register(FormatInfo(name=NAME, description="mini-swe-agent trajectories (messages with each provider response)",
                    sniff=sniff, module=__name__, parse=parse))
