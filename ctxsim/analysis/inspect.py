"""Inspect: what a trace recorded, with no simulation.

Every response counts once (the readers merge split lines and drop repeated copies): its
recorded usage gives the requests, input, cache writes (5-minute and 1-hour), cache reads,
output, the cost from genai-prices at the request's own time, the hit rate and the context
sizes (a request's context is its whole prompt). Sessions that only recorded run totals
(SWE-agent) count from those totals, and say so.

Composition is counted (the recorded usage has no breakdown): each message's tokens by role
and by tool, both as they stand in the last request's context and "carried" (tokens times
the requests that sent them, i.e. each part's share of all prompt tokens sent), the largest
tool results, and the growth of the recorded prompt from one request to the next.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC
from decimal import Decimal
from typing import Any

from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport
from ctxsim.model import Message, Session, Trace
from ctxsim.pricing.prices import Bill, Pricer, price_data_version
from ctxsim.replay.meter import percentile

GROUPINGS = ("day", "session", "model")
TIMELINE_ROWS = 200  # longer timelines show every k-th request in text (all of them in --json)


@dataclass
class Request:
    """One recorded response, as the log has it."""

    number: int  # 1-based over the trace
    session: str
    index: int  # 1-based within its session
    ts: str | None
    model: str | None
    has_usage: bool
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = None
    growth_tokens: int | None = None  # recorded prompt minus the previous request's, same session
    arrived: list[str] = field(default_factory=list)  # what came in since the previous request
    events: list[str] = field(default_factory=list)

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens - self.cache_write_1h_tokens

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost_usd"] = None if self.cost_usd is None else str(self.cost_usd)
        out["uncached_tokens"] = self.uncached_tokens
        return out


@dataclass
class Totals:
    requests: int = 0
    requests_with_usage: int = 0
    input_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    uncached_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    unpriced_requests: int = 0
    peak_context_tokens: int = 0
    p95_context_tokens: int = 0
    from_run_totals: bool = False

    @property
    def hit_rate(self) -> float:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost_usd"] = str(self.cost_usd)
        out["hit_rate"] = round(self.hit_rate, 6)
        return out


def totals_of(requests: Iterable[Any]) -> Totals:
    """The totals of recorded responses: `Request`s, or any records with the same usage fields (accounting's)."""
    t = Totals()
    contexts = []
    for r in requests:
        t.requests += 1
        if not r.has_usage:
            continue
        t.requests_with_usage += 1
        t.input_tokens += r.input_tokens
        t.cache_write_5m_tokens += r.cache_write_tokens
        t.cache_write_1h_tokens += r.cache_write_1h_tokens
        t.cache_read_tokens += r.cache_read_tokens
        t.uncached_tokens += r.input_tokens - r.cache_read_tokens - r.cache_write_tokens - r.cache_write_1h_tokens
        t.output_tokens += r.output_tokens
        if r.cost_usd is None:
            t.unpriced_requests += 1
        else:
            t.cost_usd += r.cost_usd
        contexts.append(r.input_tokens)
    t.peak_context_tokens = max(contexts, default=0)
    t.p95_context_tokens = percentile(contexts, 95)
    return t


@dataclass
class SessionInfo:
    id: str
    source: str | None
    model: str | None
    requests: int
    requests_with_usage: int
    peak_context_tokens: int
    compactions: int
    parent: str | None
    continues: str | None
    recorded_totals: dict[str, Any] | None
    project: str = ""  # as inspect --by project names it (the cwd's last part, the product's folder ...)
    started: str | None = None  # the first timed message's time (ISO), as recorded
    compaction_of: str | None = None  # a compaction's summarising call (Claude Code acompact): the part it compacted


@dataclass
class Composition:
    tokenizer: str
    by_role: dict[str, dict[str, int]]  # role -> {messages, tokens, carried}
    by_tool: dict[str, dict[str, int]]  # tool -> {calls, results, tokens (of its results), carried}
    largest_results: list[dict[str, Any]]
    growth: dict[str, int]  # median, p90, max of the recorded prompt growth per request
    largest_jumps: list[dict[str, Any]]


@dataclass
class Inspection:
    trace: str
    files: list[FileReport]
    sessions: list[SessionInfo]
    requests: list[Request]
    totals: Totals
    compactions: int
    subagents: int
    subagents_not_read: list[str]
    composition: Composition
    notes: list[str]
    prices: str
    own_cost: dict[str, Any] | None = None  # the trace's own recorded cost beside ctxsim's price (replay.recorded)
    compaction_calls: int = 0  # the compactions' own summarising calls the log has (Claude Code acompact files)
    compaction_calls_cost_usd: Decimal = Decimal(0)  # what they cost (in the totals too)

    def grouped(self, by: str) -> dict[str, Totals]:
        if by not in GROUPINGS:
            raise CtxsimError(f"--by must be one of {', '.join(GROUPINGS)}, got {by!r}")
        groups: dict[str, list[Request]] = defaultdict(list)
        for r in self.requests:
            if by == "day":
                key = r.ts[:10] if r.ts else "no timestamp"
            elif by == "session":
                key = r.session
            else:
                key = r.model or "unknown"
            groups[key].append(r)
        return {k: totals_of(v) for k, v in sorted(groups.items())}

    def to_json(self, by: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trace": self.trace,
            "files": [asdict(f) for f in self.files],
            "prices": self.prices,
            "totals": self.totals.to_json(),
            "compactions": self.compactions,
            "compaction_calls": {"sessions": self.compaction_calls, "cost_usd": str(self.compaction_calls_cost_usd)},
            "subagents": self.subagents,
            "subagents_not_read": self.subagents_not_read,
            "sessions": [asdict(s) for s in self.sessions],
            "composition": asdict(self.composition),
            "timeline": [r.to_json() for r in self.requests],
            "notes": self.notes,
            "own_cost": self.own_cost,
        }
        if by:
            out["by"] = {"key": by, "groups": {k: v.to_json() for k, v in self.grouped(by).items()}}
        return out


class Prices:
    """One Pricer per (provider, model); an unpriced model is noted once, not fatal."""

    def __init__(self) -> None:
        self.pricers: dict[tuple[str, str], Pricer | None] = {}
        self.notes: list[str] = []

    def get(self, provider: str | None, model: str | None) -> Pricer | None:
        key = (provider or "", model or "")
        if key not in self.pricers:
            try:
                self.pricers[key] = Pricer(provider or "", model or "") if model else None
            except CtxsimError:
                self.pricers[key] = None
            if self.pricers[key] is None:
                self.notes.append(f"no price for model {model or '(none recorded)'} at {provider or '?'}: "
                                  "its requests are not priced")
        return self.pricers[key]


def _describe(message: Message, size: int) -> str:
    if message.role == "tool":
        return f"{message.name or 'tool'} result {size:,}"
    if message.role == "user" and message.extra.get("tool"):
        return f"{message.extra['tool']} output {size:,}"
    return f"{message.role} {size:,}"


def tool_of(message: Message) -> str | None:
    if message.role == "tool":
        return message.name or "tool"
    tool = message.extra.get("tool") if message.role == "user" else None
    return str(tool) if tool else None


def _paths_of(trace: Trace, files: list[FileReport] | None) -> dict[int, str]:
    """id(session) -> the file it was read from, where the readers' counts tell (else the first file)."""
    read = [f for f in files or [] if f.format]
    if not read:
        return {}
    if sum(f.sessions for f in read) == len(trace.sessions):
        order = [f.path for f in read for _ in range(f.sessions)]
    else:
        order = [read[0].path] * len(trace.sessions)
    return {id(s): path for s, path in zip(trace.sessions, order, strict=True)}


def _project(path: str, session: Session) -> str:
    from ctxsim.analysis.accounting import home_of, project_of

    return project_of(path, session, session.source or "", home_of())


def inspect_trace(trace: Trace, files: list[FileReport] | None = None, tokenizer: str = "o200k_base",
                  largest: int = 10, include_content: bool = False) -> Inspection:
    """What `trace` recorded. Trace content stays out unless `include_content`: the largest tool results are
    listed by session, request, tool and size; with it, each also gets the start of its text, redacted."""
    from ctxsim._support.redact import preview
    from ctxsim.tokens import TokenCounter, get_tokenizer, label
    from ctxsim.tokens.counting import MessageSizer

    counter = TokenCounter(get_tokenizer(tokenizer))
    sizer = MessageSizer(counter)
    prices = Prices()
    requests: list[Request] = []
    infos: list[SessionInfo] = []
    by_role: dict[str, dict[str, int]] = defaultdict(lambda: {"messages": 0, "tokens": 0, "carried": 0})
    by_tool: dict[str, dict[str, int]] = defaultdict(
        lambda: {"calls": 0, "results": 0, "tokens": 0, "carried": 0})
    results: list[dict[str, Any]] = []
    growth: list[int] = []
    jumps: list[dict[str, Any]] = []
    compactions = 0
    totals_only: list[Session] = []
    agents_read = {s.extra.get("agent_id") for s in trace.sessions if s.extra.get("agent_id")}
    not_read: list[str] = []
    paths = _paths_of(trace, files)
    for session in trace.sessions:
        sizer.prime(session)
        for agent in (session.extra.get("subagents") or {}):
            if agent not in agents_read:
                not_read.append(agent)
        compactions += sum(1 for e in session.events if e.name == "compaction")
        events_at: dict[int, list[str]] = defaultdict(list)
        for e in session.events:
            pre = e.fields.get("pre_tokens")
            events_at[e.position].append(e.name + (f" (before: {pre:,} tokens)" if isinstance(pre, int) else ""))
        sizes = [sizer.message(m) for m in session.messages]
        n_requests = session.requests
        seen = 0  # requests so far in this session
        arrived: list[str] = []
        previous_input: int | None = None
        first_number = len(requests)
        message_requests_after = []  # per message: how many requests of this session sent it
        for m in session.messages:
            message_requests_after.append(n_requests - seen)
            if m.role == "assistant":
                seen += 1
        seen = 0
        for position, (message, size) in enumerate(zip(session.messages, sizes, strict=True)):
            carried = size * (message_requests_after[position] - (1 if message.role == "assistant" else 0))
            role = by_role[message.role]
            role["messages"] += 1
            role["tokens"] += size
            role["carried"] += carried
            tool = tool_of(message)
            if tool is not None:
                entry = by_tool[tool]
                entry["results"] += 1
                entry["tokens"] += size
                entry["carried"] += carried
                results.append({"session": session.id, "after_request": seen, "tool": tool, "tokens": size,
                                "message": message})
            for call in message.tool_calls:
                by_tool[call.name]["calls"] += 1
            if message.role != "assistant":
                arrived.append(_describe(message, size))
                continue
            seen += 1
            usage = message.usage
            model = message.model or session.model
            r = Request(len(requests) + 1, session.id, seen, message.ts, model, usage is not None, arrived=arrived)
            for pos in sorted(p for p in events_at if p <= position):
                r.events += events_at.pop(pos)
            if usage is not None:
                r.input_tokens, r.cache_read_tokens = usage.input_tokens, usage.cache_read_tokens
                r.cache_write_tokens, r.cache_write_1h_tokens = usage.cache_write_tokens, usage.cache_write_1h_tokens
                r.output_tokens = usage.output_tokens
                pricer = prices.get(session.provider, model)
                if pricer is not None:
                    r.cost_usd = pricer.cost(Bill(usage.input_tokens, usage.cache_read_tokens,
                                                  usage.cache_write_tokens, usage.cache_write_1h_tokens,
                                                  usage.output_tokens), message.ts_s if message.ts else None)
                if previous_input is not None:
                    r.growth_tokens = usage.input_tokens - previous_input
                    growth.append(r.growth_tokens)
                    jumps.append({"request": r.number, "session": session.id, "index": seen,
                                  "growth_tokens": r.growth_tokens, "arrived": list(arrived)})
                previous_input = usage.input_tokens
            requests.append(r)
            arrived = []
        mine = requests[first_number:]
        if session.extra.get("recorded_totals") and not any(r.has_usage for r in mine):
            totals_only.append(session)
        infos.append(SessionInfo(
            session.id, session.source, session.model, len(mine), sum(1 for r in mine if r.has_usage),
            max((r.input_tokens for r in mine if r.has_usage), default=0),
            sum(1 for e in session.events if e.name == "compaction"),
            session.extra.get("parent_session"), session.extra.get("continues"),
            dict(session.extra["recorded_totals"]) if session.extra.get("recorded_totals") else None,
            _project(paths.get(id(session), trace.name), session),
            next((m.ts for m in session.messages if m.ts), None),
            str(session.extra.get("compaction_of") or "") or None if session.extra.get("compaction_call") else None))
    totals = totals_of(requests)
    notes = list(prices.notes)
    for session in totals_only:
        recorded = session.extra["recorded_totals"]
        totals.from_run_totals = True
        totals.input_tokens += int(recorded.get("input_tokens") or 0)
        totals.uncached_tokens += int(recorded.get("input_tokens") or 0)
        totals.output_tokens += int(recorded.get("output_tokens") or 0)
        calls = recorded.get("requests")
        if calls is not None and calls != session.requests:
            notes.append(f"{session.id}: the run totals count {calls} model calls, the history holds "
                         f"{session.requests} responses")
        pricer = prices.get(session.provider, session.model)
        if pricer is not None and recorded.get("input_tokens") is not None:
            cost = pricer.cost(Bill(int(recorded["input_tokens"]), output_tokens=int(recorded.get("output_tokens")
                                                                                      or 0)), None)
            totals.cost_usd += cost
            notes.append(f"{session.id}: no per-request usage; tokens and cost from the run totals "
                         f"({int(recorded['input_tokens']):,} sent, {int(recorded.get('output_tokens') or 0):,} "
                         f"received, priced at today's {pricer.model_id} rates: {cost:.5f} USD"
                         + (f"; the log's own cost: {recorded['cost_usd']} USD)" if recorded.get("cost_usd") else ")"))
        else:
            totals.unpriced_requests += session.requests
    for f in files or []:
        if not f.format:
            continue
        for note in f.notes:
            notes.append(f"{f.path}: {note}")
    for agent in not_read:
        notes.append(f"subagent {agent} ran (a Task call in its parent) but its file was not given: "
                     "its requests are not counted")
    results.sort(key=lambda x: (-x["tokens"], x["session"], x["after_request"]))
    results = results[:largest]
    for largest_result in results:
        text = largest_result.pop("message").content
        if include_content:
            largest_result["preview"] = preview(text, 70)
    jumps.sort(key=lambda x: (-abs(x["growth_tokens"]), x["request"]))
    composition = Composition(
        label(counter.tokenizer), dict(by_role), dict(sorted(by_tool.items(), key=lambda kv: -kv[1]["carried"])),
        results,
        {"median": percentile(growth, 50), "p90": percentile(growth, 90), "max": max(growth, default=0),
         "min": min(growth, default=0)},
        jumps[:5])
    calls = {s.id for s in trace.sessions if s.extra.get("compaction_call")}
    subagents = sum(1 for s in trace.sessions if s.extra.get("agent_id") and s.id not in calls)
    calls_cost = sum((r.cost_usd for r in requests if r.session in calls and r.cost_usd is not None), Decimal(0))
    from ctxsim.replay.recorded import own_cost_json

    return Inspection(trace.name, [f for f in files or [] if f.format], infos, requests, totals, compactions,
                      subagents, not_read, composition, notes, price_data_version(), own_cost_json(trace),
                      len(calls), calls_cost)



# ---------------------------------------------------------------- text


def num(value: int) -> str:
    return f"{value:,}"


def usd(value: Decimal | None) -> str:
    if value is None:
        return "n/a"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _started(ts: str | None) -> str:
    """An ISO time as `YYYY-MM-DD HH:MM` in UTC; `-` when there is none (or it does not parse)."""
    if not ts:
        return "-"
    from datetime import datetime

    from ctxsim.model import parse_ts

    try:
        return datetime.fromtimestamp(parse_ts(ts), tz=UTC).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "-"


def _share(part: int, whole: int) -> str:
    return f"{part / whole * 100:.1f}%" if whole else "-"


def tables(insp: Inspection, by: str | None = None, timeline: bool = True) -> tuple[list[Any], list[str]]:
    """The inspection as tables (render.terminal.TableData) and note lines."""
    from ctxsim.reports._terminal import TableData

    t = insp.totals
    per_request = t.requests_with_usage > 0
    rows = [
        ["requests (responses)", f"{num(t.requests)}" + (f" ({num(t.requests_with_usage)} with usage)"
                                                         if t.requests_with_usage != t.requests else "")],
        ["input tokens (whole prompts)", num(t.input_tokens)],
        ["  cache write 5m", num(t.cache_write_5m_tokens)],
        ["  cache write 1h", num(t.cache_write_1h_tokens)],
        ["  cache read", num(t.cache_read_tokens)],
        ["  uncached", num(t.uncached_tokens)],
        ["output tokens", num(t.output_tokens)],
        ["cost (genai-prices)", usd(t.cost_usd) + (f" ({t.unpriced_requests} unpriced)" if t.unpriced_requests
                                                      else "")],
        *([["cost (the trace's own)", insp.own_cost["text"]]] if insp.own_cost else []),
        ["hit rate (read / input)", f"{t.hit_rate * 100:.2f}%" if per_request else "n/a (no per-request usage)"],
        ["peak context", num(t.peak_context_tokens) if per_request else "n/a"],
        ["p95 context", num(t.p95_context_tokens) if per_request else "n/a"],
        ["compactions seen", num(insp.compactions) + (
            f" ({insp.compaction_calls} summarising call(s) logged: {usd(insp.compaction_calls_cost_usd)})"
            if insp.compaction_calls else "")],
        ["subagents", num(insp.subagents) + (f" (+{len(insp.subagents_not_read)} not read)"
                                            if insp.subagents_not_read else "")],
        ["sessions", num(len(insp.sessions))],
    ]
    out = [TableData("recorded totals", ["", "value"], rows)]
    if by:
        groups = insp.grouped(by)
        out.append(TableData(f"by {by}", [by, "requests", "input", "write 5m", "write 1h", "read", "output", "hit rate",
                                          "peak", "cost"],
                             [[k, num(g.requests), num(g.input_tokens), num(g.cache_write_5m_tokens),
                               num(g.cache_write_1h_tokens), num(g.cache_read_tokens), num(g.output_tokens),
                               f"{g.hit_rate * 100:.1f}%", num(g.peak_context_tokens), usd(g.cost_usd)]
                              for k, g in groups.items()]))
    from ctxsim.reports._fit import FitTable

    number = {s.id: str(i) for i, s in enumerate(insp.sessions, 1)}  # sessions by number, not by UUID fragments

    def link(s: SessionInfo) -> str:
        parts = ([f"subagent of #{number[s.parent]}" if s.parent in number else f"subagent of {s.parent}"]
                 if s.parent else []) + \
                ([f"continues #{number[s.continues]}" if s.continues in number else f"continues {s.continues}"]
                 if s.continues else []) + \
                ([f"summarising call of #{number[s.compaction_of]}'s compaction" if s.compaction_of in number
                  else f"summarising call of {s.compaction_of}'s compaction"] if s.compaction_of else [])
        return "; ".join(parts)

    out.append(FitTable("sessions (by project and start; --json has their ids)",
                        ["#", "project", "started (UTC)", "source", "model", "requests", "peak", "compactions",
                         "link"],
                        [[number[s.id], s.project, _started(s.started), s.source or "", s.model or "",
                          num(s.requests), num(s.peak_context_tokens), num(s.compactions), link(s)]
                         for s in insp.sessions], left=5,
                        keep=("#", "project", "started (UTC)", "requests", "peak", "link", "compactions", "model",
                              "source"), minimum=14))
    c = insp.composition
    role_tokens = sum(v["tokens"] for v in c.by_role.values())
    role_carried = sum(v["carried"] for v in c.by_role.values())
    out.append(TableData(f"context composition by role ({c.tokenizer}; the hidden system prompt and tools are "
                         "not counted)", ["role", "messages", "tokens", "share", "carried", "share"],
                         [[role, num(v["messages"]), num(v["tokens"]), _share(v["tokens"], role_tokens),
                           num(v["carried"]), _share(v["carried"], role_carried)]
                          for role, v in sorted(c.by_role.items(), key=lambda kv: -kv[1]["carried"])]))
    if c.by_tool:
        tool_tokens = sum(v["tokens"] for v in c.by_tool.values())
        out.append(TableData("tool results by tool", ["tool", "calls", "results", "tokens", "share", "carried"],
                             [[tool, num(v["calls"]), num(v["results"]), num(v["tokens"]),
                               _share(v["tokens"], tool_tokens), num(v["carried"])]
                              for tool, v in c.by_tool.items()]))
    if c.largest_results:
        content = any("preview" in r for r in c.largest_results)  # --include-content: the redacted start
        out.append(FitTable("largest tool results", ["session", "after req", "tool", "tokens"]
                            + (["starts with (redacted)"] if content else []),
                            [[number.get(r["session"], r["session"][-24:]), num(r["after_request"]), r["tool"],
                              num(r["tokens"])] + ([r.get("preview", "")] if content else [])
                             for r in c.largest_results], left=3, keep=("session", "after req", "tool", "tokens")))
    if c.largest_jumps:
        out.append(FitTable(
            f"prompt growth per request: median {c.growth['median']:+,}, p90 {c.growth['p90']:+,}, "
            f"max {c.growth['max']:+,}, min {c.growth['min']:+,}; largest steps",
            ["request", "growth", "what arrived"],
            [[num(j["request"]), f"{j['growth_tokens']:+,}", ", ".join(j["arrived"][:4])
              + (" ..." if len(j["arrived"]) > 4 else "")] for j in c.largest_jumps]))
    if timeline and insp.requests:
        step = 1
        while len(insp.requests) // step > TIMELINE_ROWS:
            step = step * 5 if str(step).startswith("2") else step * 2
        shown = [r for r in insp.requests if step == 1 or r.number == 1 or r.number % step == 0 or r.events]
        several = len(insp.sessions) > 1
        out.append(FitTable("timeline (recorded usage per request" + (
            f"; every {step}th and every request with an event: --json has all" if step > 1 else "") + ")",
                            ["#", "session", "time", "prompt", "read", "write", "output", "cost", "growth",
                             "arrived / events"],
                            [[num(r.number), number.get(r.session, r.session[-12:]), (r.ts or "")[11:19],
                              num(r.input_tokens) if r.has_usage
                               else "-", num(r.cache_read_tokens) if r.has_usage else "-",
                               num(r.cache_write_tokens + r.cache_write_1h_tokens) if r.has_usage else "-",
                               num(r.output_tokens) if r.has_usage else "-", usd(r.cost_usd) if r.has_usage else "-",
                               f"{r.growth_tokens:+,}" if r.growth_tokens is not None else "",
                               "; ".join([*r.events, ", ".join(r.arrived[:3]) + (" ..." if len(r.arrived) > 3 else "")])
                               .strip("; ")]
                              for r in shown], left=3,
                            keep=("#", *(("session",) if several else ()), "time", "prompt", "cost", "growth",
                                  "arrived / events", "read", "write", "output", "session"), minimum=20))
    notes = [f"prices: {insp.prices}"]
    for f in insp.files:
        notes.append(f"read {f.path} as {f.format}: {f.sessions} session(s)")
    notes += insp.notes
    notes.append("carried = tokens x the requests that sent them (each part's share of all prompt tokens sent)")
    return out, notes
