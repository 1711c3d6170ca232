"""`openhands`: OpenHands event streams (a trajectory export: a JSON array of events; or the
evaluation `output.jsonl`, one instance with its `history` per line).

What the reader maps:

- the user's `message` actions become user messages (`image_urls` counted as images); a
  `system` action, where logged, is the system prompt and its tools;
- an agent action with `tool_call_metadata` belongs to one LLM response
  (`model_response.id`); a response that produced several actions is one assistant
  message (its text and every tool call it made), its `usage` counted once: the same
  metadata repeated on later actions and on the observations is not counted again. Usage
  follows litellm: `prompt_tokens` includes the cache read (`cache_read_input_tokens`) and
  write (`cache_creation_input_tokens`). Newer files' `llm_metrics.token_usages` fill in a
  response whose metadata lacks usage;
- an agent `message` / `finish` / `think` action without metadata is a response with no usage
  logged (a request all the same);
- an observation caused by a tool-call action is that call's result (its content, with the
  command's prefix/suffix lines when logged; for a file edit what the model is sent, the editor's
  output, not the diff the log keeps); other observations of agent actions are sent
  back as user messages; state changes and `null` observations are not sent and are skipped;
- `condensation` actions (the condenser) are compaction events; their summary, when
  logged, a `summary` message.
"""

from __future__ import annotations

from typing import IO, Any

from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._content import image_tokens, text_of
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import SessionBuilder, frozen, openai_tool_calls
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import any_usage, split_model
from ctxsim.model import Message, Session, ToolCall, Usage

NAME = "openhands"
SILENT_OBSERVATIONS = {"null", "agent_state_changed", "recall", "user_rejected", "condense"}
SILENT_ACTIONS = {"change_agent_state", "null", "recall", "system"}
TEXT_ACTIONS = {"message", "finish", "think", "reject", "delegate"}


def _images(block: Node) -> int:
    return image_tokens(block, "anthropic")


class _Reader:
    def __init__(self, source: Source, session_id: str, model: str | None) -> None:
        self.source = source
        provider, name = split_model(model)
        self.builder = SessionBuilder(session_id, source=NAME, model=name, provider=provider)
        self.responses: set[str] = set()
        self.call_of_action: dict[int, str] = {}  # action event id -> tool call id
        self.agent_actions: set[int] = set()
        self.metric_usage: dict[str, Usage] = {}

    def _usage_from_metrics(self, event: Node) -> None:
        metrics = event.obj("llm_metrics")
        if metrics is None:
            return
        for entry in metrics.array("token_usages"):
            if not entry.is_obj():
                continue
            rid = entry.string("response_id")
            if rid and rid not in self.metric_usage:
                self.metric_usage[rid] = any_usage(entry)

    def event(self, event: Node) -> None:
        if not event.is_obj():
            raise event.fail(f"must be an event (an object), got {kind_of(event.value)}")
        self._usage_from_metrics(event)
        ts = event.ts("timestamp")
        eid = event.value.get("id")
        source = event.string("source")
        action = event.string("action")
        observation = event.string("observation")
        if action is not None:
            self.action(event, eid, source, action, ts)
        elif observation is not None:
            self.observation(event, observation, ts)

    def action(self, event: Node, eid: Any, source: str | None, action: str, ts: str | None) -> None:
        args = event.obj("args")
        if action == "system":
            if args is not None:
                self.builder.header["system"] = args.string("content")
                tools = args.get("tools")
                if isinstance(tools, list):
                    self.builder.header["tools"] = [t for t in tools if isinstance(t, dict)]
            return
        if action == "condensation":
            summary = args.string("summary") if args is not None else None
            self.builder.event("compaction", ts, condenser=True,
                               forgotten=len(args.array("forgotten_event_ids")) if args is not None else None)
            if summary:
                self.builder.add(Message("summary", summary, ts=ts, line=event.line))
            return
        if source == "user":
            if action == "message":
                text = (args.string("content") if args is not None else None) or event.string("message") or ""
                images = len(args.array("image_urls")) if args is not None else 0
                self.builder.add(Message("user", text, ts=ts, extra_tokens=images * 1600, line=event.line))
            return
        if source != "agent" or action in SILENT_ACTIONS:
            return
        if isinstance(eid, int):
            self.agent_actions.add(eid)
        meta = event.obj("tool_call_metadata")
        if meta is not None:
            response = meta.obj("model_response")
            call_id = meta.string("tool_call_id")
            if isinstance(eid, int) and call_id:
                self.call_of_action[eid] = call_id
            rid = response.string("id") if response is not None else None
            if rid is None or rid in self.responses:
                return  # the rest of a response already read
            self.responses.add(rid)
            self.builder.add(self._response(response, meta, ts, event))  # type: ignore[arg-type]
            return
        if action in TEXT_ACTIONS:
            text = ""
            if args is not None:
                text = args.string("content") or args.string("final_thought") or args.string("thought") or ""
            text = text or event.string("message") or ""
            # newer files attach llm_metrics to the event an LLM call produced: its unread usage is this one's
            rid = next((r for r in reversed(list(self.metric_usage)) if r not in self.responses), None)
            if rid is not None:
                self.responses.add(rid)
                self.builder.add(Message("assistant", text, ts=ts, usage=self.metric_usage[rid],
                                         model=self.builder.header.get("model"), extra=frozen({"response_id": rid}),
                                         line=event.line))
                return
            self.builder.add(Message("assistant", text, ts=ts, model=self.builder.header.get("model"),
                                     extra=frozen({"usage_not_logged": True}), line=event.line))

    def _response(self, response: Node, meta: Node, ts: str | None, event: Node) -> Message:
        choices = response.array("choices")
        text = ""
        calls: list[ToolCall] = []
        thinking = None
        if choices:
            message = choices[0].obj("message")
            if message is not None:
                text, _ = text_of(message.child("content"))
                thinking = message.string("reasoning_content")
                calls.extend(openai_tool_calls(message))
        if not calls and meta.string("tool_call_id"):
            calls.append(ToolCall(meta.string("tool_call_id") or "", meta.string("function_name") or "tool", None))
        usage_node = response.obj("usage")
        rid = response.string("id") or ""
        usage = any_usage(usage_node) if usage_node is not None else self.metric_usage.get(rid)
        _, model = split_model(response.string("model"))
        if model and not self.builder.header.get("model"):
            provider, _ = split_model(response.string("model"))
            self.builder.header["model"] = model
            self.builder.header["provider"] = self.builder.header.get("provider") or provider
        return Message("assistant", text, ts=ts, thinking=thinking, tool_calls=tuple(calls), usage=usage,
                       model=model, extra=frozen({"response_id": rid}), line=event.line)

    def observation(self, event: Node, observation: str, ts: str | None) -> None:
        if observation in SILENT_OBSERVATIONS:
            return
        cause = event.value.get("cause")
        if not isinstance(cause, int) or isinstance(cause, bool):
            return  # no action caused it
        if event.string("source") == "user" or cause not in self.agent_actions:
            return  # not the answer to something the model did
        content = event.string("content") or ""
        extras = event.obj("extras")
        if observation == "edit" and extras is not None:
            content = _edit_text(content, extras)
        meta = extras.obj("metadata") if extras is not None else None
        if meta is not None:
            prefix, suffix = meta.string("prefix") or "", meta.string("suffix") or ""
            content = f"{prefix}{content}{suffix}"
        call_id = self.call_of_action.get(cause)
        if call_id:
            self.builder.add(Message("tool", content, ts=ts, tool_call_id=call_id, line=event.line))
        else:
            self.builder.add(Message("user", content, ts=ts, extra=frozen({"observation": observation}),
                                     line=event.line))

    def finish(self) -> Session:
        if self.metric_usage:  # metrics logged after their response

            messages = []
            for m in self.builder.messages:
                rid = m.extra.get("response_id")
                if m.role == "assistant" and m.usage is None and rid in self.metric_usage:
                    messages.append(Message(m.role, m.content, ts=m.ts, thinking=m.thinking, tool_calls=m.tool_calls,
                                            usage=self.metric_usage[rid], model=m.model, extra=m.extra, line=m.line))
                else:
                    messages.append(m)
            self.builder.messages = messages
        return self.builder.build()


def _edit_text(content: str, extras: Node) -> str:
    """What the model is sent for a file edit (FileEditObservation.__str__), not the diff the log keeps in
    `content`: the editor's own output (`formatted_output_and_error`, before OpenHands PR 6671; after it
    `content` is that output), or for the LLM-based editor a line naming the new file."""
    output = extras.get("formatted_output_and_error")
    if isinstance(output, str):
        return output
    if extras.string("impl_source") == "oh_aci":
        return content
    if extras.get("prev_exist") is False:
        return f"[New file {extras.string('path') or ''} is created with the provided content.]\n"
    return content  # the diff (OpenHands shows it with a few context lines: about its size)


def _events_session(events: list[Node], source: Source, session_id: str, model: str | None) -> Session:
    reader = _Reader(source, session_id, model)
    for event in events:
        reader.event(event)
    return reader.finish()


def _instance(node: Node, source: Source, default_id: str) -> Session:
    metadata = node.obj("metadata")
    model = None
    if metadata is not None:
        llm = metadata.obj("llm_config")
        model = llm.string("model") if llm is not None else None
    sid = node.value.get("instance_id")
    return _events_session(node.array("history", required=True), source,
                           str(sid) if sid is not None else default_id, model)


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    stem = source.path.rsplit("/", 1)[-1].split(".", 1)[0] or NAME
    nodes, whole = source.any_json(stream)
    if not whole:
        sessions = []
        for node in nodes:
            try:
                sessions.append(_instance(node, source, f"{stem}-{node.line}"))
            except TraceError as exc:
                source.bad(node.line, exc.message)
        return sessions
    doc = nodes[0]
    if isinstance(doc.value, list):
        return [_events_session(doc.items(), source, stem, None)]
    if isinstance(doc.value, dict) and "history" in doc:
        return [_instance(doc, source, stem)]
    raise doc.fail("expected an array of events, or an instance {instance_id, history: [...]}")


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    text = head_text(head)
    if shape == "none":
        return str(first)  # the reason
    if shape == "jsonl":
        if isinstance(first, dict) and isinstance(first.get("history"), list) and "instance_id" in first:
            return None
        return "JSONL lines are not evaluation instances {instance_id, history}"
    stripped = text.lstrip()
    events = '"source"' in text and ('"action"' in text or '"observation"' in text)
    if stripped.startswith("[") and events and '"timestamp"' in text:
        return None
    if stripped.startswith("{") and '"history"' in text[:4000] and events and '"instance_id"' in text:
        return None
    return "no OpenHands events ({id, timestamp, source, action|observation}) in the first bytes"


ABOUT = {
    "reads": "OpenHands event streams (a trajectory export: a JSON array of events) and evaluation output.jsonl",
    "location": "~/.openhands/sessions/<id>/events/ (exported as a trajectory), or an evaluation run's output.jsonl",
    "records": "actions and observations with times; per LLM response litellm usage (cache read and write), "
               "condensation events; newer versions llm_metrics per event",
    "cannot_know": "the system prompt unless a system action is logged; condenser calls' usage; responses "
                   "that produced no action",
    "checked": "OpenHands 0.x trajectory exports (a public trajectory) and evaluation output.jsonl",
}

register(FormatInfo(name=NAME, description="OpenHands event streams (trajectory exports, evaluation output.jsonl)",
                    sniff=sniff, module=__name__, parse=parse))
