"""`cline`: a Cline (or Roo Code, its fork) task folder: `ui_messages.json` beside
`api_conversation_history.json` (and `task_metadata.json`).

The reader is given `ui_messages.json` (or the folder holding it) and reads its sibling files:

- `api_conversation_history.json` is the conversation as sent: Anthropic-style messages
  (text, image, tool_use, tool_result blocks; older Cline puts its XML tool calls in the text).
  Each assistant message is one response; Cline stores the whole history, even where it sent
  less (below).
- `ui_messages.json` holds each request's usage, inside the JSON string of its
  `say: api_req_started` entry: `tokensIn`, `tokensOut`, `cacheWrites`, `cacheReads`, `cost`,
  sometimes `cancelReason` (streaming_failed, user_cancelled) and, in Roo Code, `apiProtocol`.
  The n-th request entry goes with the n-th assistant message. What `tokensIn` means depends on
  the provider: with Anthropic (and Roo's `apiProtocol: anthropic`) it is the uncached input
  only, so the prompt is `tokensIn + cacheReads + cacheWrites`; with OpenAI-style providers it
  already includes the cache (unless the cache counts exceed it: then they are added); some
  routers record 0 (then the prompt size is unknown: the request keeps no usage). The notes say
  which convention was assumed. `cost` is the request's recorded cost; their sum (with the
  deleted requests', below) the session's recorded total.
- The model: `modelInfo` on the assistant messages (newer Cline), else `task_metadata.json`'s
  `model_usage`, else unknown (pass --model).

Context management as recorded: Cline's truncation keeps the full history on disk and sends
it without `conversationHistoryDeletedRange` [start, end] (carried by the ui messages): a new
range starts a new session (continuing the last) with a `compaction` event and the kept
messages. `deleted_api_reqs` (requests whose messages Cline removed, their usage summed) is a
compaction event with those counts; Roo Code's `condense_context` (its LLM summary) is a
compaction event, and its messages tagged `condenseParent` are not sent after the summary.
Times: a response at the last ui message of its request, the messages that led to a request
at that request's start.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import IO, Any

from ctxsim._support.redact import quoted
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._node import Node, kind_of
from ctxsim.formats._session import SessionBuilder, frozen, restated
from ctxsim.formats._sniff import head_text, sniff_json_head
from ctxsim.formats._source import Source
from ctxsim.formats._usage import recorded_usd, split_model
from ctxsim.formats.anthropic_messages import assistant_message, user_messages
from ctxsim.model import Message, Session, Usage

NAME = "cline"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
EXCLUSIVE_PROVIDERS = {"anthropic", "bedrock", "vertex", "claude-code"}

ABOUT = {
    "reads": "a Cline or Roo Code task folder: ui_messages.json (usage per request) with "
             "api_conversation_history.json (the conversation) and task_metadata.json (the model)",
    "location": "VS Code globalStorage: .../globalStorage/saoudrizwan.claude-dev/tasks/<task id>/ (Cline), "
                ".../globalStorage/rooveterinaryinc.roo-cline/tasks/<task id>/ (Roo Code); ~/.cline/data/tasks/ "
                "for the Cline CLI",
    "records": "each request's tokensIn, tokensOut, cacheWrites, cacheReads and cost, cancelled requests; the "
               "whole conversation as Anthropic-style messages; truncation ranges (conversationHistoryDeletedRange),"
               " deleted requests' usage, Roo's condense events",
    "cannot_know": "the system prompt and tool definitions (rebuilt per request, not saved); what tokensIn means "
                   "for a provider that is not recorded (assumed per provider, said in the notes); the prompt size "
                   "of requests through routers that record tokensIn 0; times of tool results",
    "checked": "Cline 3.x task folders (ui_messages.json with api_conversation_history.json), ui_messages.json "
               "alone, and the conversation file with newer Cline's per-message metrics (ClineStorageMessage); Roo "
               "Code's fields",
}

# Where `ctxsim inspect` with no path looks (ctxsim.discover): VS Code's globalStorage on Linux and macOS
# (Cline, Roo Code), and the Cline CLI's folder.
_GLOBAL_STORAGE = ("~/.config/Code/User/globalStorage", "~/Library/Application Support/Code/User/globalStorage")
DISCOVERY = {"folders": (*(f"{base}/{ext}/tasks" for base in _GLOBAL_STORAGE
                           for ext in ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")),
                         "~/.cline/data/tasks"),
             "files": "*/ui_messages.json"}


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return 0
    return int(value)


def _load(path: str, source: Source) -> Node | None:
    """A sibling JSON file of the task folder as a Node (None if absent)."""
    if not os.path.exists(path):
        return None
    sibling = Source(path, source.skip_bad_lines)
    with open(path, "rb") as stream:
        return sibling.document(stream)


class _Request:
    def __init__(self, body: dict[str, Any], ts: str | None, deleted: Any) -> None:
        self.body = body
        self.ts = ts
        self.end_ts = ts
        self.deleted = tuple(deleted) if isinstance(deleted, list) and len(deleted) == 2 and all(
            isinstance(v, int) for v in deleted) else None


def _is_history(node: Node) -> bool:
    """An api_conversation_history.json (messages with a role) rather than ui_messages.json (ts, type)."""
    first = node.value[0] if isinstance(node.value, list) and node.value else None
    return isinstance(first, dict) and "role" in first and "type" not in first


def covered_by(path: str) -> str | None:
    """The ui_messages.json that reads this api_conversation_history.json with it, if there is one."""
    if os.path.basename(path) != HISTORY:
        return None
    ui = os.path.join(os.path.dirname(path), UI)
    return ui if os.path.exists(ui) else None


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    given = source.document(stream)
    if not isinstance(given.value, list):
        raise given.fail(f"expected Cline's ui_messages.json (an array of messages), got {kind_of(given.value)}")
    folder = os.path.dirname(os.path.abspath(source.path)) if source.path != "-" else "."
    task_id = os.path.basename(folder) or "cline"
    ui: Node | None = given
    if _is_history(given):  # the conversation file: its ui messages beside it, if any, give the accounting
        history_node: Node | None = given
        ui = _load(os.path.join(folder, UI), source) if source.path != "-" else None
        if ui is not None and not isinstance(ui.value, list):
            raise ui.fail(f"expected an array of messages, got {kind_of(ui.value)}")
    else:
        history_node = _load(os.path.join(folder, HISTORY), source) if source.path != "-" else None
    if history_node is not None and not isinstance(history_node.value, list):
        raise history_node.fail(f"expected an array of messages, got {kind_of(history_node.value)}")
    metadata = _load(os.path.join(folder, "task_metadata.json"), source) if source.path != "-" else None

    requests: list[_Request] = []
    deleted_events: list[tuple[int, str | None, dict[str, Any]]] = []  # (before request n, ts, counts)
    condenses: list[tuple[int, str | None]] = []
    first_ts: str | None = None
    skipped: dict[str, int] = {}
    deleted_range: Any = None
    ui_model: dict[str, Any] | None = None
    for entry in ui.items() if ui is not None else ():
        if not entry.is_obj():
            raise entry.fail("must be a Cline message (an object with ts and type)")
        ts = entry.ts("ts")
        say = entry.get("say")
        if isinstance(entry.get("modelInfo"), dict):  # newer Cline: {modelId, providerId, mode} on ui messages
            ui_model = entry.get("modelInfo")
        if isinstance(entry.get("conversationHistoryDeletedRange"), list):
            deleted_range = entry.get("conversationHistoryDeletedRange")
        if say == "api_req_started":
            body = _body(entry)
            requests.append(_Request(body, ts, deleted_range))
        elif say == "deleted_api_reqs":
            deleted_events.append((len(requests), ts, _body(entry)))
        elif say == "condense_context":
            condenses.append((len(requests), ts))
        else:
            if first_ts is None and not requests and say == "text":
                first_ts = ts
            if requests and ts is not None:
                requests[-1].end_ts = ts
            if entry.get("type") not in ("say", "ask"):
                skipped[str(entry.get("type"))] = skipped.get(str(entry.get("type")), 0) + 1

    if history_node is None:
        return _accounting_only(task_id, requests, first_ts, metadata, ui_model, source)
    # the conversation, with each message's index in the history
    items: list[tuple[int, Node]] = []
    for i, m in enumerate(history_node.items()):
        if not m.is_obj():
            raise m.fail(f"must be a message (an object), got {kind_of(m.value)}")
        items.append((i, m))
    model_id, provider_id = _model(items, metadata, ui_model)
    provider, model, exclusive_default = _provider(model_id, provider_id)
    assumed: dict[str, int] = {}
    unknown_input = 0
    cancelled: dict[str, int] = {}
    total_cost = Decimal(0)
    costs = 0
    assistants = [k for k, (_, m) in enumerate(items) if m.get("role") == "assistant" and not m.get("isSummary")]
    if ui is None:
        source.note(f"no {UI} beside it: each request's usage and cost are the metrics on its response")
    elif len(assistants) != len(requests):
        source.note(f"{len(requests)} request entries for {len(assistants)} responses: paired in order")
    header = {"source": NAME, "model": model, "provider": provider, "ts": first_ts}
    builders: list[SessionBuilder] = []
    builder: SessionBuilder | None = None
    converted: dict[int, list[Message]] = {}  # history index -> its canonical messages (made once)
    active: set[str] = set()  # Roo: condense ids whose summary has been sent
    signature: tuple[Any, ...] | None = None  # (deleted range, active condense ids): what a request leaves out
    added = 0  # history messages before this index are in the current session
    pending_deleted = list(deleted_events)

    def messages_of(index: int, default_ts: str | None) -> list[Message]:
        if index not in converted:
            node = items[index][1]
            ts = node.ts("ts") or default_ts
            role = node.get("role")
            if node.get("isSummary") and role in ("user", "assistant"):  # Roo's condense summary
                text = assistant_message(node, ts).content if role == "assistant" else "\n".join(
                    m.content for m in user_messages(node, ts))
                out = [Message("summary", text, ts=ts)]
            elif role == "user":
                out = user_messages(node, ts)
            elif role == "assistant":
                out = [assistant_message(node, ts)]
            else:
                skipped[f"role {quoted(role)}"] = skipped.get(f"role {quoted(role)}", 0) + 1
                out = []
            converted[index] = out
        return converted[index]

    def left_out(index: int, rng: tuple[int, int] | None) -> bool:
        parent = items[index][1].get("condenseParent")
        return (rng is not None and rng[0] <= index <= rng[1]) or (isinstance(parent, str) and parent in active)

    for n, k in enumerate(assistants):
        req = requests[n] if n < len(requests) else None
        body = req.body if req is not None else {}
        start_ts = first_ts if n == 0 and first_ts is not None else (req.ts if req is not None else None)
        rng = req.deleted if req is not None else None
        for index in range(added, k):  # summaries sent with this request take effect now
            node = items[index][1]
            if node.get("isSummary") and isinstance(node.get("condenseId"), str):
                active.add(node.get("condenseId"))
        now = (rng, frozenset(active))
        if builder is None or now != signature:
            previous = builder
            builder = SessionBuilder(task_id if previous is None else f"{task_id}/part-{len(builders) + 1}", **header)
            builders.append(builder)
            if previous is not None:
                builder.extra["continues"] = previous.id
                fields: dict[str, Any] = {"recorded": True}
                if rng != (signature[0] if signature else None):
                    fields.update(truncation=True, deleted_range=list(rng) if rng else None)
                if signature is not None and frozenset(active) != signature[1]:
                    fields["condense_context"] = True
                builder.event("compaction", start_ts, **fields)
                for index in range(added):  # what the agent still sends: the kept history, restated
                    if not left_out(index, rng):
                        for message in messages_of(index, start_ts):
                            builder.add(restated(message) if message.role == "assistant" else message)
            signature = now
        while pending_deleted and pending_deleted[0][0] <= n:
            _, ts, counts = pending_deleted.pop(0)
            builder.event("compaction", ts, recorded=True, deleted_api_reqs=True,
                          **{key: _int(counts.get(key)) for key in ("tokensIn", "tokensOut", "cacheWrites",
                                                                    "cacheReads")})
        for index in range(added, k):
            if not left_out(index, rng):
                for message in messages_of(index, first_ts if index == 0 else start_ts):
                    builder.add(message)
        added = k + 1
        usage = None
        if req is not None:
            usage, convention = _usage(body, exclusive_default)
            if convention:
                assumed[convention] = assumed.get(convention, 0) + 1
            elif usage is None and _int(body.get("tokensOut")):
                unknown_input += 1
            reason = body.get("cancelReason")
            if isinstance(reason, str):
                cancelled[reason] = cancelled.get(reason, 0) + 1
            cost = recorded_usd(body.get("cost"), text_too=True)
            if cost is not None:
                total_cost += cost
                costs += 1
                if usage is not None:
                    usage = Usage(usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, 0,
                                  usage.output_tokens, extra=frozen({**usage.extra, "cost_usd": format(cost, "f")}))
        node = items[k][1]
        if usage is None and isinstance(node.get("metrics"), dict):
            usage, cost = _metrics(node.child("metrics"))
            if cost is not None:
                total_cost += cost
                costs += 1
        end_ts = node.ts("ts") or (req.end_ts if req is not None else None)
        info = node.get("modelInfo")
        own = split_model(info["modelId"])[1] if isinstance(info, dict) and isinstance(info.get("modelId"), str) \
            else None
        answer = assistant_message(node, end_ts, usage, own or model,
                            {"cancel_reason": body.get("cancelReason")} if body.get("cancelReason") else None)
        converted[k] = [answer]
        builder.add(answer)
    if builder is not None:
        for _, ts, counts in pending_deleted:
            builder.event("compaction", ts, recorded=True, deleted_api_reqs=True,
                          **{key: _int(counts.get(key)) for key in ("tokensIn", "tokensOut", "cacheWrites",
                                                                    "cacheReads")})
    deleted_cost = sum((recorded_usd(counts.get("cost"), text_too=True) or Decimal(0)
                        for _, _, counts in deleted_events), Decimal(0))
    if builders and (costs or deleted_events):
        builders[0].extra["recorded_totals"] = {"requests": len(requests),
                                                "cost_usd": format(total_cost + deleted_cost, "f")}
    out = [b.build() for b in builders]
    notes = []
    for convention, n in sorted(assumed.items()):
        notes.append(f"{n} request(s): {convention}")
    for note in notes:
        source.note(note)
    if unknown_input:
        source.note(f"{unknown_input} request(s) recorded tokensIn 0 (a router that does not report input): "
                    "their prompt size is unknown, so they keep no usage")
    if cancelled:
        source.note("cancelled requests: " + ", ".join(f"{n} {r}" for r, n in sorted(cancelled.items())))
    if condenses:
        source.note(f"{len(condenses)} condense_context entr(y/ies): Roo Code's own summary; the messages it "
                    "replaced (condenseParent) are not sent after it")
    if deleted_events:
        source.note(f"{len(deleted_events)} deleted_api_reqs entr(y/ies): requests whose messages Cline removed; "
                    "their usage is in the recorded totals, not in any request")
    if skipped:
        source.note("skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    return out


def _provider(model_id: str | None, provider_id: str | None) -> tuple[str | None, str | None, bool]:
    """(provider, model, whether tokensIn excludes the cache by default) from Cline's model and provider ids."""
    provider, model = split_model(model_id)
    if provider_id:
        provider = {"anthropic": "anthropic", "bedrock": "anthropic", "vertex": "google" if model_id and
                    "gemini" in model_id else "anthropic", "openai": "openai", "openai-native": "openai",
                    "gemini": "google", "deepseek": "deepseek"}.get(provider_id, provider)
    exclusive = (provider_id in EXCLUSIVE_PROVIDERS) if provider_id else (provider == "anthropic")
    return provider, model, exclusive


def _metrics(metrics: Node) -> tuple[Usage | None, Decimal | None]:
    """Newer Cline's per-message metrics {tokens: {prompt, completion, cached}, cost}: the prompt includes the
    cached part (cache writes are not recorded)."""
    tokens = metrics.obj("tokens")
    cost = recorded_usd(metrics.get("cost"), text_too=True)
    if tokens is None:
        return None, cost
    prompt, cached, output = (_int(tokens.get(k)) for k in ("prompt", "cached", "completion"))
    if not (prompt or output):
        return None, cost
    usage = Usage(max(prompt, cached), cached, 0, 0, output,
                  extra=frozen({"cost_usd": format(cost, "f")} if cost is not None else {}))
    return usage, cost


def _accounting_only(task_id: str, requests: list[_Request], first_ts: str | None, metadata: Node | None,
                     ui_model: dict[str, Any] | None, source: Source) -> list[Session]:
    """ui_messages.json alone (the file people share): every request's usage and cost, the conversation unknown."""
    provider, model, exclusive_default = _provider(*_model([], metadata, ui_model))
    builder = SessionBuilder(task_id, source=NAME, model=model, provider=provider, ts=first_ts)
    builder.extra["conversation_unknown"] = (f"only Cline's {UI} was given: it records each request's usage and "
                                             f"cost, not the conversation ({HISTORY})")
    assumed: dict[str, int] = {}
    total_cost = Decimal(0)
    for req in requests:
        usage, convention = _usage(req.body, exclusive_default)
        if convention:
            assumed[convention] = assumed.get(convention, 0) + 1
        cost = recorded_usd(req.body.get("cost"), text_too=True)
        if cost is not None:
            total_cost += cost
            if usage is not None:
                usage = Usage(usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, 0,
                              usage.output_tokens, extra=frozen({**usage.extra, "cost_usd": format(cost, "f")}))
        builder.add(Message("assistant", "", ts=req.end_ts, usage=usage, model=model,
                            extra=frozen({"no_items_logged": True})))
    builder.extra["recorded_totals"] = {"requests": len(requests), "cost_usd": format(total_cost, "f")}
    source.note(f"no {HISTORY} beside it: the accounting of {len(requests)} request(s) only; the conversation "
                "is unknown, so it cannot be replayed")
    for convention, n in sorted(assumed.items()):
        source.note(f"{n} request(s): {convention}")
    return [builder.build()] if requests else []


def _body(entry: Node) -> dict[str, Any]:
    text = entry.get("text")
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _usage(body: dict[str, Any], exclusive_default: bool) -> tuple[Usage | None, str | None]:
    """The request's usage in the inclusive convention, and the convention assumed (None: no usage)."""
    tokens_in = _int(body.get("tokensIn"))
    out = _int(body.get("tokensOut"))
    writes = _int(body.get("cacheWrites"))
    reads = _int(body.get("cacheReads"))
    if not (tokens_in or out or writes or reads):
        return None, None
    protocol = body.get("apiProtocol")
    exclusive = protocol == "anthropic" if protocol in ("anthropic", "openai") else exclusive_default
    if tokens_in == 0 and reads + writes == 0:
        return None, None  # a router that records no input
    if exclusive:
        convention = ("tokensIn is the uncached input (Anthropic" + (" protocol" if protocol else "") +
                      "): prompt = tokensIn + cacheReads + cacheWrites")
        return Usage(tokens_in + reads + writes, reads, writes, 0, out), convention
    if reads + writes > tokens_in:
        return Usage(tokens_in + reads + writes, reads, writes, 0, out), \
            "tokensIn below its cache counts: taken as the uncached input and the cache added"
    return Usage(tokens_in, reads, writes, 0, out), "tokensIn includes the cache (OpenAI-style provider)"


def _model(items: list[tuple[int, Node]], metadata: Node | None, ui_model: dict[str, Any] | None
           ) -> tuple[str | None, str | None]:
    infos = [m.get("modelInfo") for _, m in reversed(items)] + [ui_model]
    for info in infos:
        if isinstance(info, dict) and isinstance(info.get("modelId"), str):
            provider = info.get("providerId")
            return info["modelId"], provider if isinstance(provider, str) else None
    if metadata is not None and metadata.is_obj():
        usage = metadata.get("model_usage")
        if isinstance(usage, list) and usage and isinstance(usage[-1], dict):
            last = usage[-1]
            model = last.get("model_id")
            provider = last.get("model_provider_id")
            return (model if isinstance(model, str) else None), (provider if isinstance(provider, str) else None)
    return None, None


def sniff(head: bytes) -> str | None:
    shape, first = sniff_json_head(head)
    if shape == "none":
        return str(first)  # the reason
    text = head_text(head)
    if not text.lstrip().startswith("["):
        return "not Cline's ui_messages.json (a JSON array)"
    compact = "".join(text.split())
    ui_head = compact[:6000]
    if '"ts":' in ui_head and ('"type":"say"' in ui_head or '"type":"ask"' in ui_head) and (
            '"say":' in ui_head or '"ask":' in ui_head):
        return None
    # api_conversation_history.json: Anthropic-style messages; only Cline adds modelInfo {modelId, providerId}
    # and metrics {tokens} to them
    if compact.startswith('[{"role":') and ('"modelInfo":{"modelId":' in compact or '"metrics":{"tokens":' in compact):
        return None
    return ("no Cline ui messages ({ts, type: say|ask, say|ask}) nor Cline's conversation (messages with modelInfo "
            "or metrics) in the first bytes")


register(FormatInfo(name=NAME, description="Cline / Roo Code task folders (ui_messages.json + "
                    "api_conversation_history.json)", sniff=sniff, module=__name__, parse=parse,
                    covered_by=covered_by))
