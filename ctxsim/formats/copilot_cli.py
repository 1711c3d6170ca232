"""`copilot-cli`: GitHub Copilot CLI session event logs (`~/.copilot/session-state/<session id>/events.jsonl`;
older versions `~/.copilot/session-state/<session id>.jsonl`).

One event a line, `{type, data, id, timestamp, parentId}` (the event types of the Copilot SDK's
`session-events` schema). What the reader maps:

- `session.start`: the session id, start time, the CLI version (`copilotVersion`) and the folder;
  `session.model_change` the model of the responses that follow;
- `user.message`: a user message: `transformedContent` (what was sent to the model) when logged,
  else `content`;
- `assistant.message`: one model response: `content`, `reasoningText` (as thinking),
  `toolRequests[] {toolCallId, name, arguments}` the calls; `outputTokens` its output count;
- `tool.execution_complete`: the result of a call (`result.content`, or `error.message` when
  `success` is false);
- `session.compaction_complete`: a compaction (its `summaryContent` the summary the session goes
  on from, `preCompactionTokens` the size before);
- `session.shutdown` (one per process lifetime: a resumed session has several): `modelMetrics`
  `{model: {requests: {count}, usage: {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}}}`,
  summed as the session's recorded totals.

Usage: Copilot CLI writes each request's usage (`assistant.usage`) as an ephemeral event that is not
saved, so a request's prompt size is not in the log: the responses keep no usage, their output
counts are kept in each message's extra, and the shutdown totals are the session's accounting.
Events of a sub-agent (`agentId`, or `parentToolCallId` on its messages) are skipped and counted.
Other event types (session.info, hooks, permissions ...) are not sent to the model: skipped and counted.
"""

from __future__ import annotations

import json
from typing import IO, Any

from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node
from ctxsim.formats._session import SessionBuilder, arguments_of, frozen
from ctxsim.formats._sniff import sniff_jsonl_records
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, ToolCall

NAME = "copilot-cli"
TOTALS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")

ABOUT = {
    "reads": "GitHub Copilot CLI session event logs (events.jsonl: session.start, user.message, assistant.message, "
             "tool.execution_complete, session.compaction_complete, session.shutdown ...)",
    "location": "~/.copilot/session-state/<session id>/events.jsonl (older: ~/.copilot/session-state/<id>.jsonl)",
    "records": "every user message (as sent), response (text, reasoning, tool requests, output tokens) and tool "
               "result with times; compactions with their summary; per process lifetime the usage totals per model "
               "(requests, input, output, cache reads and writes)",
    "cannot_know": "each request's prompt size and cache use (Copilot CLI does not save its per-request usage "
                   "events): the totals are the session's; the system prompt and tool definitions; cost in dollars "
                   "(Copilot bills premium requests)",
    "checked": "GitHub Copilot CLI 0.0.3xx-0.0.40x events.jsonl (the event types of github/copilot-sdk's "
               "session-events schema)",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover).
DISCOVERY = {"folders": ("~/.copilot/session-state",), "files": "**/*.jsonl"}


class _Reader:
    def __init__(self, source: Source) -> None:
        self.source = source
        self.builder: SessionBuilder | None = None
        self.header: dict[str, Any] = {"source": NAME}
        self.session_id: str | None = None
        self.model: str | None = None
        self.skipped: dict[str, int] = {}
        self.totals: dict[str, int] = {}
        self.requests = 0
        self.shutdowns = 0

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def session(self) -> SessionBuilder:
        if self.builder is None:
            stem = self.source.path.rsplit("/", 1)[-1].split(".", 1)[0]
            if stem == "events":  # <session id>/events.jsonl
                stem = self.source.path.rsplit("/", 2)[-2] if self.source.path.count("/") else stem
            self.builder = SessionBuilder(self.session_id or stem, **self.header)
        return self.builder

    def event(self, node: Node) -> None:
        kind = node.string("type") or ""
        data = node.obj("data") or Node({}, node.source, node.line, (*node.path, "data"))
        ts = node.ts("timestamp")
        if node.get("agentId") or data.get("parentToolCallId"):
            self.skip("sub-agent events")
            return
        if kind == "session.start":
            self.session_id = self.session_id or data.string("sessionId")
            self.header["ts"] = data.ts("startTime") or ts
            model = data.string("selectedModel")
            if model:
                self.model = model
            if self.builder is not None and self.session_id:
                self.builder.id = self.session_id
            builder = self.session()
            context = data.obj("context")
            extra = {"copilot_version": data.string("copilotVersion"),
                     "cwd": context.string("cwd") if context else None}
            builder.extra.update({k: v for k, v in extra.items() if v})
        elif kind == "session.model_change":
            self.model = data.string("newModel") or self.model
        elif kind == "user.message":
            text = data.string("transformedContent") or data.string("content") or ""
            self.session().add(Message("user", text, ts=ts, line=node.line))
        elif kind == "assistant.message":
            calls = []
            for request in data.array("toolRequests"):
                if not request.is_obj():
                    raise request.fail("must be a tool request (an object)")
                call_id = request.string("toolCallId", required=True) or ""
                calls.append(ToolCall(call_id, request.string("name") or "unknown",
                                      arguments_of(request.get("arguments"))))
            output = data.count("outputTokens")
            model = split_model(data.string("model") or self.model)[1]
            self.session().add(Message("assistant", data.string("content") or "", ts=ts,
                                       thinking=data.string("reasoningText") or None, tool_calls=tuple(calls),
                                       model=model, line=node.line,
                                       extra=frozen({"output_tokens": output} if output is not None else None)))
        elif kind == "tool.execution_complete":
            call_id = data.string("toolCallId", required=True) or ""
            ok = data.get("success") is not False
            result = data.obj("result")
            error = data.get("error")
            if ok and result is not None:
                text = result.string("content") or ""
            elif isinstance(error, dict):
                text = str(error.get("message") or json.dumps(error, ensure_ascii=False))
            else:
                text = str(error or (result.string("content") if result else "") or "")
            self.session().add(Message("tool", text, ts=ts, tool_call_id=call_id, is_error=not ok, line=node.line))
        elif kind == "session.compaction_complete":
            if data.get("success") is False:
                self.skip("failed compactions")
                return
            builder = self.session()
            builder.event("compaction", ts, pre_tokens=data.count("preCompactionTokens"))
            summary = data.string("summaryContent")
            if summary:
                builder.add(Message("summary", summary, ts=ts, line=node.line))
        elif kind == "session.shutdown":
            self.shutdowns += 1
            metrics = data.obj("modelMetrics")
            for model in (metrics.value if metrics is not None else {}):
                entry = metrics.obj(model) if metrics is not None else None
                if entry is None:
                    continue
                requests = entry.obj("requests")
                self.requests += (requests.count("count") if requests else None) or 0
                usage = entry.obj("usage")
                for key in TOTALS:
                    self.totals[key] = self.totals.get(key, 0) + ((usage.count(key) if usage else None) or 0)
        else:
            self.skip(kind or "untyped")

    def sessions(self) -> list[Session]:
        builder = self.builder
        if builder is None or not builder.messages:
            return []
        model = next((m.model for m in builder.messages if m.model), None) or self.model
        builder.header["model"] = model
        builder.header["provider"] = split_model(model)[0]
        if self.shutdowns:
            t = self.totals
            builder.extra["recorded_totals"] = {
                "requests": self.requests, "input_tokens": t.get("inputTokens", 0),
                "output_tokens": t.get("outputTokens", 0), "cache_read_tokens": t.get("cacheReadTokens", 0),
                "cache_write_tokens": t.get("cacheWriteTokens", 0)}
            self.source.note(f"{self.shutdowns} session.shutdown total(s) summed: {self.requests} request(s); "
                             "per-request usage is not saved by Copilot CLI")
        else:
            self.source.note("no session.shutdown totals (the session did not end, or crashed): no usage recorded")
        if self.skipped:
            self.source.note("skipped events not sent to the model: " + ", ".join(
                f"{n} {k}" for k, n in sorted(self.skipped.items())))
        if builder.orphans:
            self.source.note(f"{builder.orphans} tool result(s) without their call kept as user messages")
        return [builder.build()]


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    reader = _Reader(source)
    for node in source.jsonl(stream):
        if not isinstance(node.value.get("type"), str):
            source.bad(node.line, "field 'type' is missing or not a string (every event has one)")
            continue
        reader.event(node)
    return reader.sessions()


def sniff(head: bytes) -> str | None:
    records, refusal = sniff_jsonl_records(head, 10)
    if refusal:
        return refusal
    for record in records:
        kind = record.get("type")
        if isinstance(kind, str) and "." in kind and isinstance(record.get("data"), dict) and "parentId" in record \
                and kind.split(".", 1)[0] in ("session", "user", "assistant", "tool"):
            return None
    return "no Copilot CLI events ({type: session.start|user.message|..., data, id, parentId}) in the first lines"


register(FormatInfo(name=NAME, description="GitHub Copilot CLI session events "
                    "(~/.copilot/session-state/*/events.jsonl)", sniff=sniff, module=__name__, parse=parse))
