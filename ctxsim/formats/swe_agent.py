"""`swe-agent`: SWE-agent trajectories (`<instance>.traj`, one JSON object).

What the reader maps: `history` is the agent's message list. The first `system` message is
the session's system prompt; demonstrations (`is_demo`) stay as user messages (they are sent)
marked `demo`; `assistant` messages are the model's responses (their `tool_calls` in
function-calling versions); `tool` messages answer a call (`tool_call_ids`). In the text-mode
0.x versions an observation comes back as a `user` message: it stays one, tagged with the
command that produced it (`tool`), so composition reports can group it. Without a `history`
the `trajectory` steps are used (response, then observation).

Usage: SWE-agent records run totals only (`info.model_stats`: `tokens_sent`, `tokens_received`,
`api_calls`, `instance_cost`), kept as the session's `recorded_totals`; no request carries
usage. The model comes from `replay_config` (v1) or, in 0.x, from the run name in the path
(`gpt4` -> `gpt-4-1106-preview`, the model behind SWE-agent 0.x's `gpt4` name).
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from ctxsim._support.redact import quoted
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, frozen, openai_tool_calls
from ctxsim.formats._sniff import sniff_json_object_text
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session

NAME = "swe-agent"
# SWE-agent 0.x model short names (sweagent/agent/models.py of that era) and what they called.
SHORT_NAMES = {
    "gpt4": "gpt-4-1106-preview", "gpt4-0613": "gpt-4-0613", "gpt4-turbo": "gpt-4-turbo-2024-04-09",
    "gpt4o": "gpt-4o-2024-05-13", "gpt35": "gpt-3.5-turbo-1106", "gpt-4o-mini": "gpt-4o-mini",
    "claude-opus": "claude-3-opus-20240229", "claude-sonnet": "claude-3-sonnet-20240229",
    "claude-sonnet-3.5": "claude-3-5-sonnet-20240620", "claude-haiku": "claude-3-haiku-20240307",
    "claude2": "claude-2.0", "claude-2": "claude-2.0",
}


def _images(block: Node) -> int:
    return image_tokens(block, "openai")


def _model(doc: Node, path: str) -> str | None:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except (json.JSONDecodeError, RecursionError):
            config = None
    if isinstance(config, dict):
        agent = a if isinstance(a := config.get("agent"), dict) else {}
        model = agent.get("model") if isinstance(agent.get("model"), dict) else config.get("model")
        if isinstance(model, dict):
            name = model.get("name") or model.get("model_name")
            if isinstance(name, str):
                return SHORT_NAMES.get(name, name)
    parts = re.split(r"[/\\_.\-]+", path.lower())
    joined = path.lower()
    for short in sorted(SHORT_NAMES, key=len, reverse=True):
        if short in parts or f"{short}__" in joined:
            return SHORT_NAMES[short]
    return None


def _command(action: Any) -> str | None:
    if not isinstance(action, str) or not action.strip():
        return None
    return action.strip().split()[0]


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    doc = source.document(stream)
    if not doc.is_obj():
        raise doc.fail("expected a SWE-agent trajectory object {trajectory, history, info}")
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    model = _model(doc, source.path)
    provider, _ = split_model(model)
    info = doc.obj("info")
    builder = SessionBuilder(stem, source=NAME, model=model, provider=provider)
    if model is None:
        source.note("the model is not recorded (SWE-agent 0.x keeps it in the run directory name); pass --model")
    history = doc.array("history") if doc.get("history") is not None else None
    last_command: str | None = None
    if history:
        system_done = False
        for item in history:
            if not item.is_obj():
                raise item.fail("must be a message (an object with role and content)")
            role = item.string("role", required=True)
            text, more = text_of(item.child("content"), _images)
            extra: dict[str, Any] = {}
            if item.get("agent") and item.get("agent") != "primary":
                extra["agent"] = item.get("agent")
            if role == "system":
                if not system_done and not builder.messages:
                    builder.header["system"] = text
                    system_done = True
                else:
                    builder.add(Message("system", text, extra=frozen(extra)))
            elif role == "user":
                if item.get("is_demo") is True:
                    extra["demo"] = True
                elif last_command is not None:
                    extra["tool"] = last_command
                builder.add(Message("user", text, extra_tokens=more, extra=frozen(extra)))
                last_command = None
            elif role == "assistant":
                calls = openai_tool_calls(item)
                if item.get("thought") is not None and not isinstance(item.get("thought"), str):
                    raise item.fail("must be a string", "thought")
                builder.add(Message("assistant", text, tool_calls=tuple(calls), model=model, extra=frozen(extra)))
                last_command = _command(item.get("action")) if not calls else None
            elif role == "tool":
                ids = item.get("tool_call_ids")
                call_id = ids[0] if isinstance(ids, list) and ids and isinstance(ids[0], str) else item.string(
                    "tool_call_id")
                if not call_id:
                    raise item.fail("is missing (a tool message answers a call)", "tool_call_ids")
                builder.add(Message("tool", text, tool_call_id=call_id, extra_tokens=more, extra=frozen(extra)))
            else:
                raise item.fail(f"unknown role {quoted(role)} (expected system, user, assistant or tool)", "role")
    else:
        steps = doc.array("trajectory", required=True)
        for step in steps:
            if not step.is_obj():
                raise step.fail("must be a trajectory step (an object)")
            response = step.string("response") or ""
            observation = step.string("observation") or ""
            builder.add(Message("assistant", response, model=model))
            builder.add(Message("user", observation, extra=frozen({"tool": _command(step.get("action"))}
                                                                    if _command(step.get("action")) else {})))
    if info is not None:
        stats = info.obj("model_stats")
        if stats is not None:
            totals = {
                "requests": stats.count("api_calls"),
                "input_tokens": stats.count("tokens_sent"),
                "output_tokens": stats.count("tokens_received"),
                "cost_usd": str(stats.number("instance_cost")) if stats.number("instance_cost") is not None else None,
            }
            builder.extra["recorded_totals"] = {k: v for k, v in totals.items() if v is not None}
        status = info.string("exit_status")
        if status:
            builder.extra["exit_status"] = status
    if not builder.messages:
        raise doc.fail("holds no messages (empty history and trajectory)")
    return [builder.build()]


def sniff(head: bytes) -> str | None:
    text, refusal = sniff_json_object_text(head)
    if refusal:
        return refusal
    if '"trajectory_format"' in text[:3000]:
        return "a mini-swe-agent trajectory"
    if '"trajectory"' in text and ('"history"' in text or '"environment"' in text or '"observation"' in text):
        return None
    return "no SWE-agent keys (trajectory with history / observation) in the first bytes"


ABOUT = {
    "reads": "SWE-agent trajectories (<instance>.traj: history messages, trajectory steps, info)",
    "location": "trajectories/<user>/<run name>/<instance>/<instance>.traj (v1), <run dir>/<instance>.traj (0.x)",
    "records": "the agent's message history; run totals only (tokens sent and received, API calls, cost)",
    "cannot_know": "per-request usage and cache counts (only run totals); times; the model in 0.x "
                   "(from the run directory name)",
    "checked": "SWE-agent 0.x trajectories (a public trajectory) and 1.x",
}

register(FormatInfo(name=NAME, description="SWE-agent .traj trajectories (history messages; run totals only)",
                    sniff=sniff, module=__name__, parse=parse))
