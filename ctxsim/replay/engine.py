"""The replay loop.

For each recorded model request, in order: append the messages that arrived
since the previous request; let the policy decide; apply and check its edits;
meter the request as the prompt now stands (output = the recorded
`output_tokens`, else the counted size of the assistant message); append the
assistant message. Per request the work is proportional to what changed: the
history keeps running sums, the cache models are told where an edit started.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import partial
from operator import is_
from typing import Any, NamedTuple

from ctxsim.caching import CacheModel, CacheResult, CacheSpec, WarmStart, cache_spec
from ctxsim.caching.best_effort import BestEffort, served_share
from ctxsim.caching.none import unpriced_cache
from ctxsim.caching.per_model import PerModel
from ctxsim.caching.recorded import FACTS_KEY, RecordedFacts
from ctxsim.caching.transfer import cost_range
from ctxsim.composition import Composition, Snapshots, column_of
from ctxsim.errors import CtxsimError
from ctxsim.history import Edit as Spliced
from ctxsim.history import History, Item, PolicyViolation, SideCall, Splice
from ctxsim.model import Message, Session, Trace, parse_ts
from ctxsim.policies import Policy, effective
from ctxsim.policies.base import DEFAULT_KIND, Drop, Edit, Insert, Observer, Replace, Summarize, Truncate, View
from ctxsim.pricing.prices import Bill, Pricer, price_data_version
from ctxsim.replay.meter import EventRecord, Row, Totals, from_columns, to_columns
from ctxsim.tokens.counting import Framing, MessageSizer, blocks

DEFAULT_PROVIDER = "anthropic"
DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_WINDOW = 200_000
DEFAULT_RESERVE = 20_000
DEFAULT_CACHE = {"anthropic": "anthropic", "openai": "openai", "deepseek": "deepseek"}


def default_cache(provider: str, model: str | None, on: float | None = None) -> str:
    """The cache model a provider's requests replay with when none is chosen; Gemini's implicit
    cache is `prefix` with the model's minimum on day `on` (caching/data.toml; None: the latest)."""
    if provider == "google":
        from ctxsim.caching import model_rules

        return f"prefix:min_tokens={model_rules('google', model, on)['min_tokens']}"
    return DEFAULT_CACHE.get(provider, "prefix")


@dataclass(frozen=True)
class Setup:
    """How a trace is replayed, apart from the policy."""

    provider: str | None = None  # None: the trace's own
    model: str | None = None
    window: int | None = None
    output_reserve: int = DEFAULT_RESERVE
    cache: str | None = None  # cache model spec, e.g. "anthropic:ttl=1h"; None: by provider
    cache_ttl: str | None = None
    pin_tools: tuple[str, ...] = ()
    hidden_prefix_tokens: int = 0  # calibration: system prompt and tools the log does not show
    # The provider's own prompt rules, applied before every policy: earlier turns' reasoning dropped at
    # a new user message where the provider does so (calibrate.ProviderReasoningRule). replay, compare
    # and validate then meter the same prompt.
    provider_rules: bool = False


@dataclass(frozen=True)
class Resolved:
    provider: str
    model: str
    model_id: str
    window: int
    cache: CacheSpec
    # every priced model id the replay uses, in order of first use (each request is priced at its own
    # session's or message's model unless --model forces one); the first is `model_id`
    models: tuple[str, ...] = ()


def session_model(session: Session) -> str | None:
    """A session's own model: its header's, else its first recorded response's."""
    return session.model or next((m.model for m in session.messages if m.model), None)


def trace_model(trace: Trace) -> tuple[str | None, str | None]:
    """The trace's first session's (provider, model): the run's primary model, its window and cache rules."""
    for session in trace.sessions:
        model = session_model(session)
        if model or session.provider:
            return session.provider, model
    return None, None


class Pricers:
    """One Pricer per (provider, model) a replay prices requests at, all sharing one notes list.

    A request is priced at its own recorded message's model, else its session's, else the trace's
    (the primary); a forced `--model` / `--provider` overrides. A model the price data does not know
    is priced at its session's (or the primary) model, and the notes say so.
    """

    def __init__(self, primary: Pricer, setup: Setup, default_provider: str | None) -> None:
        self.primary = primary
        self.setup = setup
        self.default_provider = default_provider
        self.notes = primary.notes
        self.memo: dict[tuple[str, str], Pricer] = {(primary.provider, primary.model): primary}
        self.used: dict[str, None] = {}  # model ids, in order of first use

    def get(self, provider: str | None, model: str | None, fallback: Pricer | None = None) -> Pricer:
        if self.setup.model:
            model = self.setup.model
        provider = self.setup.provider or provider or self.default_provider or self.primary.provider
        pricer: Pricer | None
        if not model:
            pricer = fallback or self.primary
        else:
            key = (provider, model)
            pricer = self.memo.get(key)
            if pricer is None:
                try:
                    pricer = Pricer(provider, model, self.notes)
                except CtxsimError:
                    pricer = fallback or self.primary
                    note = (f"model {model!r} ({provider}) has no price in {price_data_version()}: "
                            f"its requests priced as {pricer.model_id}")
                    if note not in self.notes:
                        self.notes.append(note)
                self.memo[key] = pricer
        self.used.setdefault(pricer.model_id)
        return pricer

    def session(self, session: Session) -> Pricer:
        return self.get(session.provider, session_model(session))

    def request(self, session: Session, session_pricer: Pricer, message: Message) -> Pricer:
        if not message.model or self.setup.model:
            self.used.setdefault(session_pricer.model_id)
            return session_pricer
        return self.get(session.provider, message.model, session_pricer)


def resolve(trace: Trace, setup: Setup) -> tuple[Resolved, Pricer]:
    provider, model = trace_model(trace)
    provider = setup.provider or provider or DEFAULT_PROVIDER
    model = setup.model or model or DEFAULT_MODEL
    pricer = Pricer(provider, model)
    # the rules of the trace's own date (its first timestamp)
    started = next((m.ts_s for s in trace.sessions for m in s.messages if m.ts), None)
    spec = setup.cache or default_cache(pricer.provider_id, pricer.model_id, started)
    if setup.cache is None and unpriced_cache(trace, pricer):  # no cache-read price: the provider caches nothing
        spec = "none"
    if setup.cache_ttl and spec.split(":", 1)[0] == "anthropic":
        spec = f"{spec}{',' if ':' in spec else ':'}ttl={setup.cache_ttl}"
    window = setup.window or next((s.window for s in trace.sessions if s.window), None) \
        or pricer.context_window or DEFAULT_WINDOW
    return Resolved(pricer.provider_id, model, pricer.model_id, window, cache_spec(spec), (pricer.model_id,)), pricer


def priced_models(trace: Trace, pricers: Pricers) -> tuple[str, ...]:
    """The priced model ids the requests of `trace` are priced at, in order of first use."""
    for session in trace.sessions:
        own = pricers.session(session)
        for m in session.messages:
            if m.role == "assistant":
                pricers.request(session, own, m)
    return tuple(pricers.used) or (pricers.primary.model_id,)


def own_models(trace: Trace) -> tuple[str, ...]:
    """The models the trace itself was run on (no `--model` forced), as ctxsim prices them."""
    _, pricer = resolve(trace, Setup())
    return priced_models(trace, Pricers(pricer, Setup(), trace_model(trace)[0]))


class _Unpacked:
    """A field of a run that may still be packed as columns: unpacked when first read or set."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, run: PolicyRun | None, owner: type | None = None) -> Any:
        if run is None:
            return self
        run._unpack()
        return getattr(run, self.slot)

    def __set__(self, run: PolicyRun, value: Any) -> None:
        run._unpack()
        setattr(run, self.slot, value)


class PolicyRun:
    """One policy's replay: its rows, events, totals and composition.

    A run that came back from a worker process arrives packed, its rows and events as columns,
    and is unpacked when they are first read: a compare table reads only the totals.
    """

    __slots__ = ("_events", "_packed", "_rows", "composition", "loss", "policy", "totals")
    rows: list[Row] = _Unpacked()  # type: ignore[assignment]
    events: list[EventRecord] = _Unpacked()  # type: ignore[assignment]

    def __init__(self, policy: dict[str, Any], rows: list[Row], events: list[EventRecord], totals: Totals,
                 composition: Composition | None = None) -> None:
        self.policy = policy
        self.totals = totals
        self.composition = composition
        self._packed: tuple[list[list[Any]], list[list[Any]]] | None = None
        self._rows = rows
        self._events = events
        self.loss: Any = None  # ctxsim.loss.meter.LossReport when the run was loss-metered

    def _unpack(self) -> None:
        if self._packed is not None:
            rows, events = self._packed
            self._rows, self._events = from_columns(rows, Row), from_columns(events, EventRecord)
            self._packed = None

    def _columns(self) -> tuple[list[list[Any]], list[list[Any]]]:
        if self._packed is not None:
            return self._packed
        return to_columns(self.rows, Row), to_columns(self.events, EventRecord)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _policy_run, (self.policy, self._columns(), self.totals, self.composition, self.loss)


def _policy_run(policy: dict[str, Any], packed: tuple[list[list[Any]], list[list[Any]]], totals: Totals,
                composition: Composition | None, loss: Any = None) -> PolicyRun:
    run = PolicyRun(policy, None, None, totals, composition)  # type: ignore[arg-type]
    run._packed = packed
    run.loss = loss
    return run


@dataclass
class _RunState:
    rows: list[Row] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    requests: int = 0
    composition: list[Snapshots] = field(default_factory=list)
    rule: Policy | None = None  # the provider's prompt rules, in front of the policy (Replayer.start)
    observers: tuple[Observer, ...] = ()  # told of every change besides the stages that observe (the loss meter)
    range_deltas: list[Decimal] = field(default_factory=list)  # per request with a transferred miss (caching.transfer)
    ranged: bool = False  # a session replayed recorded cache facts: the totals carry a cost range


class _Recorded(NamedTuple):
    """What every run needs of one recorded message, worked out once per Replayer."""

    tokens: int
    blocks: int
    ts_s: float | None
    pinned: bool
    column: str  # its composition column as it arrives


@dataclass
class _Ts:
    """Parse each distinct timestamp string once."""

    memo: dict[str, float] = field(default_factory=dict)

    def __call__(self, text: str | None) -> float | None:
        if text is None:
            return None
        value = self.memo.get(text)
        if value is None:
            value = self.memo[text] = parse_ts(text)
        return value


class Replayer:
    """Replays a trace under policies; shares one token memo across them."""

    def __init__(self, trace: Trace, sizer: MessageSizer, setup: Setup | None = None, *,
                 record: bool = True) -> None:
        """`record`: work out what the runs need of every session of `trace` now (else the caller hands
        the sessions over one at a time: `recorded`, `run_session`, as a stream of sessions is replayed)."""
        self.trace = trace
        self.sizer = sizer
        self.setup = setup or Setup()
        # no TTL chosen (--cache-ttl, ttl= in --cache): each session's own, as its recorded writes show it
        self._ttl_free = not self.setup.cache_ttl and "ttl=" not in (self.setup.cache or "")
        self.resolved, self.pricer = resolve(trace, self.setup)
        self.pricers = Pricers(self.pricer, self.setup, trace_model(trace)[0])
        self._session_pricers = [self.pricers.session(s) for s in trace.sessions] if record else []
        self.resolved = replace(self.resolved, models=priced_models(trace, self.pricers))
        self._ts = _Ts()  # each distinct timestamp parsed once
        # Every run appends the same recorded messages: what the engine needs of each (size,
        # content blocks, time, pinned, composition column) is worked out once, here, for all runs.
        self._recorded: list[list[_Recorded]] = [self.recorded(s) for s in trace.sessions] if record else []

    def recorded(self, session: Session) -> list[_Recorded]:
        """What every run needs of each message of `session` (its texts counted in one batch first)."""
        unknown = session.extra.get("conversation_unknown")
        if unknown:  # a reader that could give the accounting only (Cline's ui_messages.json alone)
            raise CtxsimError(f"{session.id}: cannot replay: {unknown}; `ctxsim inspect` shows its accounting")
        sizer = self.sizer
        ts = self._ts
        pin = set(self.setup.pin_tools)
        sizer.prime(session)
        return [_Recorded(sizer.message(m), blocks(m), ts(m.ts) if m.ts else None,
                          m.role == "system" or bool(m.extra.get("pinned")) or (m.role == "tool" and m.name in pin),
                          column_of(m))
                for m in session.messages]

    def forget(self) -> None:
        """Let go of what was kept for sessions already replayed (timestamps parsed)."""
        self._ts = _Ts()

    def run(self, policy: Policy, progress: Callable[[int], None] | None = None,
            observers: tuple[Observer, ...] = ()) -> PolicyRun:
        """`observers`: told of every change to each session's history (policies.base.Observer), as
        the stages that observe are; fresh ones per run."""
        state = self.start()
        state.observers = observers
        for session, recorded, pricer in zip(self.trace.sessions, self._recorded, self._session_pricers, strict=True):
            self._session(session, recorded, policy, state, progress, state.rule, pricer)
        return self.finish(policy, state)

    def start(self) -> _RunState:
        """The state of a run whose sessions come one at a time (`run_session`, then `finish`): it holds the
        run's own copy of the provider's rules (`provider_rule`), put in front of the policy in every session."""
        return _RunState(rule=self.provider_rule() if self.setup.provider_rules else None)

    def run_session(self, session: Session, recorded: list[_Recorded], policy: Policy, state: _RunState,
                    progress: Callable[[int], None] | None = None) -> None:
        self._session(session, recorded, policy, state, progress, state.rule, self.pricers.session(session))

    def finish(self, policy: Policy, state: _RunState) -> PolicyRun:
        # the models priced at so far: every session's once the last has run (streamed sessions add theirs)
        self.resolved = replace(self.resolved, models=tuple(self.pricers.used) or (self.pricers.primary.model_id,))
        totals = Totals.of(state.rows, len(state.events), self.resolved.window, self.setup.output_reserve)
        if state.ranged:
            totals = replace(totals, cost_range_usd=cost_range(totals.cost_usd, state.range_deltas))
        return PolicyRun(effective(policy), state.rows, state.events, totals, Composition.of(state.composition))

    def provider_rule(self) -> Policy | None:
        """A fresh copy of the provider's prompt rules for this provider and model, None when it has none."""
        from ctxsim.analysis.calibrate import ProviderReasoningRule

        rule = ProviderReasoningRule(self.resolved.provider, self.resolved.model_id)
        return rule if rule.active else None

    def _session(self, session: Session, recorded: list[_Recorded], policy: Policy, state: _RunState,
                 progress: Callable[[int], None] | None, rule: Policy | None = None,
                 own: Pricer | None = None) -> None:
        sizer = self.sizer
        rows, events = state.rows, state.events
        stages: tuple[Policy, ...] = ((rule,) if rule is not None else ()) + tuple(
            getattr(policy, "stages", None) or (policy,))
        appenders = [s for s in stages if hasattr(s, "on_append")]
        for stage in stages:
            foresee = getattr(stage, "foresee", None)  # a bound (the oracle) reads the recorded session ahead
            if foresee is not None:
                foresee(session)
            begin = getattr(stage, "start", None)
            if begin is not None:
                begin()
        observers: list[Observer] = [s for s in stages  # type: ignore[misc]
                                     if hasattr(s, "observe") and getattr(s, "observing", True)]
        observers.extend(state.observers)
        for observer in state.observers:
            begin = getattr(observer, "start", None)
            if begin is not None:
                begin()
        # observers told of each request before its answer is appended (policies.base: `requested`)
        requesters = [o for o in observers if hasattr(o, "requested")]
        observes = [o.observe for o in observers]  # bound once: called at every append and splice
        edits_made: list[tuple[str, str, int]] = []  # (stage, event kind, splices) of this request's edits
        base = sizer.tools(session) + sizer.system(session) + self.setup.hidden_prefix_tokens
        history = History(base, sizer.message, blocks)
        spec = self.resolved.cache
        own = own or self.pricer
        if spec.name == "anthropic" and self._ttl_free:  # the TTL the product asked for, as its log shows
            from ctxsim.caching.anthropic import session_spec

            spec = session_spec(spec, session)
        cache = spec.build(own.model_id)  # the session's own model's cache rules (minimum cacheable prefix)
        warm_start = session.extra.get("warm_start_tokens")  # a prefix cached before its log began (calibrate)
        if isinstance(warm_start, int) and warm_start > 0:
            cache = WarmStart(cache, warm_start)
        switching: PerModel | None = None  # a session whose requests go to several models: a cache per model
        if len({m.model for m in session.messages if m.role == "assistant" and m.model}) > 1:
            first, session_cache = own.model_id, cache
            cache = switching = PerModel(lambda m: session_cache if m == first else spec.build(m), first)
        ranged: RecordedFacts | BestEffort | None = None  # its other possible answers: the run's cost range
        share = served_share(self.resolved.provider, own.model_id)  # a provider that promises no hit
        if share is not None:
            cache = ranged = BestEffort(cache, share)
            state.ranged = True
        facts = session.extra.get(FACTS_KEY)  # recorded ceilings and floors of the cache (calibrate; caching/recorded)
        if facts:
            cache = ranged = RecordedFacts(cache, facts)
            state.ranged = True
        request_pricer = self.pricers.request
        window = self.resolved.window
        reserve = self.setup.output_reserve
        last_ts: float | None = None
        prev_items = 0  # messages in the previous request
        valid = 0  # of those, still unchanged
        limits = ((window - reserve, "threshold", "the window minus the output reserve"),
                  (window, "overflow", "the window"))
        crossed: set[int] = set()
        index = 0
        append = history.append
        numbers: list[int] = []  # each request's number and its composition (Composition.of)
        snapshots: list[tuple[int, ...]] = []
        state.composition.append((history.composition, numbers, snapshots))
        columns = history.composition.values
        column: str | None  # the recorded message's column; None once a stage rewrote it on arrival
        # One view per stage (and one for the appending stages), made once per session and brought up to
        # date before each call: a view is read during the call it is passed to (policies.base.View).
        size_of = sizer.message
        append_view = View(history, 0, window, size_of) if appenders else None
        stage_views = [(stage, View(history, 0, window, size_of)) for stage in stages]
        for origin, message in enumerate(session.messages):
            size, n_blocks, ts_s, pinned, column = recorded[origin]
            if message.role != "assistant":
                item = Item(message, size, n_blocks, origin, pinned)
                if append_view is not None and not pinned:
                    ctx = append_view
                    ctx.request, ctx.ts_s = state.requests + 1, last_ts
                    for stage in appenders:
                        change = stage.on_append(ctx, item.message)
                        if change is not None:
                            new = history.item(change.message, origin)
                            events.append(EventRecord(state.requests + 1, session.id, stage.name, change.kind,
                                                      change.note, 1, item.tokens, new.tokens))
                            item, column = new, None  # its column: worked out again as it is appended
                append(item, column)
                if observes:
                    added = (item,)
                    for observe in observes:
                        observe((), added)
                last_ts = ts_s if ts_s is not None else last_ts
                continue
            index += 1
            state.requests += 1
            number = state.requests
            request_ts = last_ts if last_ts is not None else ts_s
            before = history.prompt_tokens
            for stage, ctx in stage_views:
                ctx.request, ctx.ts_s, ctx.prompt_before_tokens = number, request_ts, before
                for decided in stage.decide(ctx):
                    edit = decided if isinstance(decided, Spliced) else resolve_edit(history, decided, stage.name)
                    applied = history.apply(edit, stage.name)
                    if observes:
                        for removed, put in applied.spliced:
                            for observe in observes:
                                observe(removed, put)
                    cache.edited(applied.first_index)
                    valid = min(valid, applied.first_index)
                    events.append(EventRecord(number, session.id, stage.name, applied.kind, applied.note,
                                              applied.messages, applied.tokens_before, applied.tokens_after))
                    if requesters:
                        edits_made.append((stage.name, applied.kind, len(applied.spliced)))
                    for call in edit.calls:
                        rows.append(self._side_row(number, session, call, message.ts, request_ts, window, own))
            prompt = history.prompt_tokens
            numbers.append(number)
            snapshots.append(tuple(columns()))
            shared = history.prefix_tokens(min(valid, len(history))) if prev_items else 0
            rewrite = prev_items > 0 and valid < prev_items
            output = message.usage.output_tokens if message.usage and message.usage.output_tokens else size
            pricer = own if message.model is None else request_pricer(session, own, message)
            if switching is not None:
                switching.use(pricer.model_id)
            rows.append(self._row(number, session, index, message, history, cache, request_ts,
                                  prompt, output, shared, rewrite, window, pricer))
            if ranged is not None and ranged.pending:  # the other ends of the cost range (caching.transfer)
                for other in ranged.pending:
                    state.range_deltas.append(pricer.cost(Bill(prompt, *other, output), request_ts)
                                              - rows[-1].cost_usd)
            for limit, kind, label in limits:
                if prompt > limit and limit not in crossed:
                    crossed.add(limit)
                    events.append(EventRecord(number, session.id, policy.name, kind,
                                              f"context {prompt:,} tokens passes {label} ({limit:,})"))
            if requesters:
                for observer in requesters:
                    observer.requested(number, message, edits_made)
                edits_made.clear()
            answer = Item(message, size, n_blocks, origin)
            append(answer, column)
            if observes:
                added = (answer,)
                for observe in observes:
                    observe((), added)
            prev_items = len(history)
            valid = prev_items
            last_ts = ts_s if ts_s is not None else last_ts
            if progress is not None:
                progress(1)

    def pricer_for(self, session: Session, message: Message) -> Pricer:
        """The Pricer a request (the assistant `message` of `session`) is priced at: its own model's."""
        return self.pricers.request(session, self.pricers.session(session), message)

    def _side_row(self, number: int, session: Session, call: SideCall, ts: str | None, ts_s: float | None,
                  window: int, pricer: Pricer) -> Row:
        """A policy's own model request, priced like any request (its session's model): read fresh unless the
        call says what of it the prompt cache served or took (a call sharing the prompt's cached prefix)."""
        read, write = call.cache_read_tokens, call.cache_write_tokens
        cost = pricer.cost(Bill(call.input_tokens, read, write, output_tokens=call.output_tokens), ts_s)
        plain = cost if not (read or write) else pricer.cost(Bill(call.input_tokens, output_tokens=call.output_tokens),
                                                              ts_s)
        return Row(
            request=number, session=session.id, index=0, kind=call.kind, ts=ts, messages=0,
            input_tokens=call.input_tokens, cache_read_tokens=read, cache_write_tokens=write, cache_write_1h_tokens=0,
            uncached_tokens=call.input_tokens - read - write, output_tokens=call.output_tokens,
            context_tokens=call.input_tokens, headroom_tokens=window - call.input_tokens, shared_prefix_tokens=0,
            rewrite=False, warm_cache_read_tokens=read, cost_usd=cost, cost_warm_usd=cost, cost_nocache_usd=plain,
        )

    def _row(self, number: int, session: Session, index: int, message: Message, history: History,
             cache: CacheModel, ts_s: float | None, prompt: int, output: int,
             shared: int, rewrite: bool, window: int, pricer: Pricer) -> Row:
        answer = cache.request(history, ts_s)
        real, warm = (answer, answer) if isinstance(answer, CacheResult) else answer
        # CacheResult is (read, write, write_1h): the middle of a Bill
        cost, cost_warm, cost_plain = pricer.costs(Bill(prompt, *real, output), Bill(prompt, *warm, output),
                                                        ts_s)
        usage = message.usage
        read = real.read_tokens
        # Positional, in Row's field order: a keyword call costs three times as much, per request.
        return Row(
            number, session.id, index, "request", message.ts, len(history),
            prompt, read, real.write_tokens, real.write_1h_tokens,
            prompt - read - real.write_tokens - real.write_1h_tokens,  # uncached
            output, prompt, window - prompt,  # output, context, headroom
            shared, rewrite, warm.read_tokens, cost, cost_warm, cost_plain,
            usage.input_tokens if usage else None, usage.cache_read_tokens if usage else None,
        )


def _absent(policy: str, item: Item) -> PolicyViolation:
    return PolicyViolation(f"policy {policy}: an edit names a message that is not in the history "
                           f"(session index {item.origin})")


def _runs(items: list[Item], named: tuple[Item, ...], policy: str) -> list[tuple[int, int]]:
    """The [start, end) runs of the positions of `named` (checked to be live), in order."""
    n = len(items)
    if not named:
        return []
    start = named[0].pos
    end = start + len(named)
    # named in order, one after the other (a message and its results): one run, checked in C (the live
    # history holds exactly the named items there), no sort
    if start >= 0 and end <= n and all(map(is_, items[start:end], named)):
        return [(start, end)]
    positions = []
    for item in named:
        pos = item.pos
        if not item.alive or pos >= n or items[pos] is not item:
            raise _absent(policy, item)
        positions.append(pos)
    positions.sort()
    out: list[tuple[int, int]] = []
    start = end = -1
    for pos in positions:
        if pos == end:
            end = pos + 1
        elif pos < end:
            raise PolicyViolation(f"policy {policy}: an edit names one message twice")
        else:
            if end >= 0:
                out.append((start, end))
            start, end = pos, pos + 1
    if end >= 0:
        out.append((start, end))
    return out


def resolve_edit(history: History, edit: object, policy: str) -> Spliced:
    """An edit that names items (policies.base), as splices of the history as it stands now."""
    if isinstance(edit, Edit):
        kind, changes, note, calls = edit.kind, edit.changes, edit.note, edit.calls
    elif type(edit) in DEFAULT_KIND:
        kind, changes, note, calls = DEFAULT_KIND[type(edit)], (edit,), "", ()  # type: ignore[assignment]
    else:
        raise PolicyViolation(f"policy {policy}: returned {type(edit).__name__}, not an edit")
    splices: list[Splice] = []
    add = splices.append
    items = history.items
    make = history.made
    more: list[SideCall] | None = None  # the summaries' calls, after the edit's own
    size, blocks_of = history._size, history._blocks  # what history.made reads, for the new items made here
    # Splice(start, end, new) without the NamedTuple's own __new__ (a Python call): one per item an edit names
    _splice = partial(tuple.__new__, Splice)
    n = len(items)
    for change in changes:
        # the commonest first: stubs (clear, mask), summaries (tiered, compact), drops (the eviction policies)
        if isinstance(change, Replace):
            old = change.item
            message = change.message
            new = Item(message, size(message) if change.tokens is None else change.tokens, blocks_of(message),
                       old.origin, change.pinned, change.cleared, old.inserted, True,
                       old.tags if change.tags is None else change.tags)
            at = old.pos
            if not old.alive or at >= n or items[at] is not old:
                raise _absent(policy, old)
            add(_splice((at, at + 1, (new,))))
        elif isinstance(change, Summarize):
            named = change.items
            if not named:
                raise PolicyViolation(f"policy {policy}: a summary that replaces no message")
            message = change.message
            new = Item(message, size(message) if change.tokens is None else change.tokens, blocks_of(message),
                       change.origin, False, False, True, True, change.tags)
            if len(named) == 1:  # one message summarised (tiered's one-line stand-ins)
                old = named[0]
                at = old.pos
                if not old.alive or at >= n or items[at] is not old:
                    raise _absent(policy, old)
                add(_splice((at, at + 1, (new,))))
            else:  # a message and its results in place (tiered's summaries): one run, `_runs`' fast path
                put: tuple[Item, ...] = (new,)
                for s, e in _runs(items, named, policy):
                    add(_splice((s, e, put)))
                    put = ()
            if change.call is not None:
                if more is None:
                    more = list(calls)
                more.append(change.call)
        elif isinstance(change, Drop):
            for s, e in _runs(items, change.items, policy):
                add(_splice((s, e, ())))
        elif isinstance(change, Truncate):
            old = change.item
            new = make(change.message, old.origin, change.tokens, False, old.cleared, old.inserted, old.tags)
            at = old.pos
            if not old.alive or at >= n or items[at] is not old:
                raise _absent(policy, old)
            add(_splice((at, at + 1, (new,))))
        elif isinstance(change, Insert):
            before = change.before
            if before is None:
                at = n
            else:
                at = before.pos
                if not before.alive or at >= n or items[at] is not before:
                    raise _absent(policy, before)
            add(_splice((at, at, (make(change.message, -1, change.tokens, False, False, True, change.tags),))))
        else:
            raise PolicyViolation(f"policy {policy}: {type(change).__name__} is not a change a policy may make")
    return Spliced(kind, tuple(splices), note, tuple(calls) if more is None else tuple(more))


__all__ = ["Framing", "PolicyRun", "Replayer", "Setup"]
