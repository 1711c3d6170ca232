"""Product presets checked against the products: where the product compacted, where its preset would.

A Claude Code transcript records its own compaction (`compact_boundary` with `preTokens`), a Codex
rollout its `compacted` item; the readers end the session there and start the next part with a
`compaction` event (`pre_tokens`: the product's count) and the product's summary. For every such
compaction this joins the part before it and the part after it (without the summary and the
history the product rebuilt: as if it had not compacted), replays that under the product's preset
for the transcript's version (`presets.claude_code.for_version`, `presets.codex.for_version`),
calibrated on the whole trace when it recorded enough usage, and reports whether and at which
request the preset compacts, beside the request the product compacted before.

Each compaction is also measured on both sides (`Side`, `compaction_entry`): the request it compacted
after, the prompt before and after, the summary's tokens, the summarising call's cost (the product's
where its log has the call: Claude Code 2.1.3x's `acompact` subagent file) and the cost of the requests
after the product's compaction up to its next one (the product's as recorded and priced, the preset's
as replayed). A manual compaction is replayed at the request the user asked for it (`at_request`).

`validate` shows it; `check(trace)` returns the rows, `table(checks)` and `sides_table(checks)` the
terminal tables; `ctxsim presets check` sums them over a corpus (ctxsim.analysis.preset_corpus).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from ctxsim.model import Session, Trace

PRODUCTS = ("claude-code", "codex")
MANUAL_SHARE = 0.5  # a compaction below half the threshold, with no trigger logged, is taken as a manual one


@dataclass(frozen=True)
class CompactionCheck:
    session: str  # the part the product compacted (the one before the compaction)
    product: str
    version: str | None
    preset: str  # the policy spec replayed
    threshold: str  # the preset's threshold, in words
    source: str  # where the threshold comes from
    trigger: str | None  # auto / manual, where the log says
    recorded_request: int  # the product compacted before this request (1-based in the joined session)
    recorded_pre_tokens: int | None  # the product's own count when it compacted
    replayed_tokens: int  # ctxsim's prompt (plus the last output) at that point, under none
    preset_request: int | None  # the first request the preset compacts before; None: never
    preset_prompt_tokens: int | None  # the prompt it compacted from
    preset_clear_request: int | None  # claude-code: the first request the preset clears tool output
    threshold_tokens: int  # the preset's compaction threshold at this window
    threshold_request: int | None  # the first request after a response whose total (prompt + output, under
    # none) passes the threshold: where the preset's threshold fires when checked as the products check it
    requests: int  # requests in the joined session
    calibrated: bool
    product_side: Side = field(default_factory=lambda: Side())  # the compaction as the product did it
    preset_side: Side = field(default_factory=lambda: Side())  # as the preset does it

    @property
    def verdict(self) -> str:
        """How the preset's threshold, checked as the product checks it, sits beside the product's compaction."""
        if self.trigger == "manual":
            return "the product compacted on request (manual): no threshold to check"
        count = self.recorded_pre_tokens or self.replayed_tokens
        if self.trigger is None and count < MANUAL_SHARE * self.threshold_tokens:
            return (f"the product compacted at {count:,} tokens, far below any automatic threshold: likely a manual "
                    "compaction (the log does not say)")
        if self.threshold_request is None:
            return (f"the preset's threshold is never passed in the {self.requests:,} requests replayed: it is too "
                    "high")
        delta = self.threshold_request - self.recorded_request
        if delta == 0:
            text = "the preset's threshold fires at the same request as the product"
        else:
            side = "earlier" if delta < 0 else "later"
            text = (f"the preset's threshold fires {abs(delta):,} request{'s' if abs(delta) != 1 else ''} {side} "
                    "than the product: too " + ("low" if delta < 0 else "high"))
        if self.preset_request is None and self.preset_clear_request is not None:
            text += (f"; but its clearing stage (request {self.preset_clear_request:,}) freed enough that it never "
                     "compacted, where the product did")
        return text

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("product_side", "preset_side")}
        return {**out, "verdict": self.verdict}


@dataclass(frozen=True)
class Side:
    """One compaction as one side (the product, or its preset) did it. None: not known (not logged, or the
    preset never compacted)."""

    after_request: int | None = None  # it compacted after this request (1-based in the joined session)
    prompt_before: int | None = None  # the prompt of the request it compacted after
    prompt_after: int | None = None  # the prompt of the first request after the compaction
    summary_tokens: int | None = None
    summarizer_cost_usd: Decimal | None = None  # the summarising call(s)
    cost_after_usd: Decimal | None = None  # the requests after the product's compaction up to its next one

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(self).items()}


def compaction_entry(check: CompactionCheck) -> dict[str, Any]:
    """One compaction of `validate --json`'s "compactions": the product's side and the preset's, each a dict
    (other analyses add their own keys to the entry)."""
    return {"product": check.product_side.to_json(), "preset": check.preset_side.to_json()}


def _product(session: Session) -> str | None:
    return session.source if session.source in PRODUCTS else None


def joined_parts(before: Session, after: Session) -> tuple[Session, int]:
    """`before` then `after` without what the product put back when it compacted (its summary, the rebuilt
    history): the session as if it had not compacted, and the number of `before`'s requests."""
    messages = list(after.messages)
    first_reply = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    last_summary = max((i for i, m in enumerate(messages[:first_reply]) if m.role == "summary"), default=-1)
    kept = messages[last_summary + 1:]
    joined = replace(before, messages=tuple(before.messages) + tuple(kept), events=tuple(
        e for e in before.events if e.name != "compaction"))
    return joined, before.requests


def _spec(product: str, version: str | None) -> tuple[str, str, str]:
    if product == "claude-code":
        from ctxsim.presets.claude_code import for_version as claude

        spec, headroom, source = claude(version)
        return spec, f"window - {headroom:,}", source
    from ctxsim.presets.codex import for_version as codex

    spec, share, source = codex(version)
    return spec, f"{share * 100:.1f}% of the window", source


def check(trace: Trace, tokenizer: str = "o200k_base") -> list[CompactionCheck]:
    """Every compaction a Claude Code or Codex trace recorded, against the product's preset."""
    by_id = {s.id: s for s in trace.sessions}
    pairs = []
    for session in trace.sessions:
        event = next((e for e in session.events if e.name == "compaction"), None)
        before = by_id.get(str(session.extra.get("continues") or ""))
        product = _product(session)
        if event is None or before is None or product is None or not before.requests:
            continue
        pairs.append((before, session, event, product))
    if not pairs:
        return []
    from ctxsim.analysis.calibrate import fit

    calibration = fit(trace, tokenizer)
    calls = {s.id: s for s in trace.sessions if s.extra.get("compaction_call")}
    return [_check(before, after, event, product, calibration, tokenizer, calls)
            for before, after, event, product in pairs]


def _check(before: Session, after: Session, event: Any, product: str, calibration: Any,
           tokenizer: str, calls: dict[str, Session] | None = None) -> CompactionCheck:
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.choices import replay_choices
    from ctxsim.replay.plan import Options

    version = before.extra.get("cli_version") or after.extra.get("cli_version")
    spec, threshold, source = _spec(product, str(version) if version else None)
    options = Options(tokenizer=tokenizer, jobs=1)
    if calibration is not None:  # calibrated part by part, then joined: what each part's log misses (its re-anchored
        # growth) rides on its own messages into the replay without the compaction
        before, after = calibration.apply(Trace("parts", (before, after))).sessions
    joined, n_before = joined_parts(before, after)
    if event.fields.get("trigger") == "manual":  # the user asked for it: the preset compacts there too
        spec += ("," if ":" in spec else ":") + f"at_request={n_before + 1}"
    trace = Trace(f"{before.id} joined", (joined,))
    if calibration is not None:
        options = replace(options, framing=calibration.framing(), hidden_prefix_tokens=calibration.base_prefix_tokens)
    choices = resolve(["none", spec])
    result = replay_choices(trace, "", choices, options)
    none, preset = result.runs
    rows = [r for r in none.rows if r.kind == "request"]
    last = rows[n_before - 1]
    window = int(preset.policy.get("setup", {}).get("window") or result.manifest["window"])
    limit = _threshold(choices[1].policy, window)
    crossed = next((r.request + 1 for r in rows if r.context_tokens + r.output_tokens > limit), None)
    compacts = [e for e in preset.events if e.kind == "compact"]
    clears = [e for e in preset.events if e.kind == "clear"]
    pre = event.fields.get("pre_tokens")
    product_side = _product_side(before, after, n_before, tokenizer, summarizer_of(after, calls or {}))
    preset_side = _preset_side(preset, n_before)
    return CompactionCheck(
        session=before.id, product=product, version=str(version) if version else None, preset=spec,
        threshold=threshold, source=source, trigger=event.fields.get("trigger"), recorded_request=n_before + 1,
        recorded_pre_tokens=pre if isinstance(pre, int) else None,
        replayed_tokens=last.context_tokens + last.output_tokens,
        preset_request=compacts[0].request if compacts else None,
        preset_prompt_tokens=compacts[0].tokens_before if compacts else None,
        preset_clear_request=clears[0].request if clears else None,
        threshold_tokens=limit, threshold_request=crossed if crossed is None or crossed <= len(rows) else None,
        requests=len(rows), calibrated=calibration is not None, product_side=product_side, preset_side=preset_side)


def summarizer_of(after: Session, calls: dict[str, Session]) -> Session | None:
    """The product's logged summarising call of the compaction that started `after` (a Claude Code `acompact`
    subagent session, linked by its reader), if the log has it."""
    sid = after.extra.get("compaction_call_session")
    return calls.get(str(sid)) if sid else None


def _usages(session: Session) -> list[Any]:
    return [m for m in session.messages if m.role == "assistant" and m.usage is not None]


def recorded_cost(session: Session, messages: list[Any] | None = None) -> Decimal | None:
    """What the recorded responses of `session` (or those of `messages`) cost, priced at their own model."""
    from ctxsim.analysis.inspect import Prices
    from ctxsim.pricing.prices import Bill

    prices = Prices()
    total = Decimal(0)
    priced = False
    for m in _usages(session) if messages is None else messages:
        pricer = prices.get(session.provider, m.model or session.model)
        if pricer is None:
            continue
        u = m.usage
        total += pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.cache_write_1h_tokens,
                                  u.output_tokens), None)
        priced = True
    return total if priced else None


def _product_side(before: Session, after: Session, n_before: int, tokenizer: str, call: Session | None) -> Side:
    from ctxsim.tokens import TokenCounter, get_tokenizer

    was = _usages(before)
    now = _usages(after)
    counter = TokenCounter(get_tokenizer(tokenizer))
    summaries = [m for m in after.messages if m.role == "summary"]
    summary = sum(counter.count(m.content) for m in summaries) if summaries else None
    call_usage = _usages(call) if call is not None else []
    if call_usage and call_usage[-1].usage.output_tokens:
        summary = call_usage[-1].usage.output_tokens  # the model's own count of what it wrote
    return Side(
        after_request=n_before,
        prompt_before=was[-1].usage.input_tokens if was else None,
        prompt_after=now[0].usage.input_tokens if now else None,
        summary_tokens=summary,
        summarizer_cost_usd=recorded_cost(call) if call is not None else None,
        cost_after_usd=recorded_cost(after) if now else None)


def _preset_side(run: Any, n_before: int) -> Side:
    requests = [r for r in run.rows if r.kind == "request"]
    after = [r for r in requests if r.request > n_before]
    cost_after = sum((r.cost_usd for r in after), Decimal(0)) if after else None
    compacts = [e for e in run.events if e.kind == "compact"]
    if not compacts:
        return Side(cost_after_usd=cost_after)
    # the compaction nearest the product's (a preset can compact more than once in the joined session)
    event = min(compacts, key=lambda e: (abs(e.request - 1 - n_before), e.request))
    calls = [r for r in run.rows if r.kind == "summarize" and r.request == event.request]
    first = next((r for r in requests if r.request == event.request), None)
    last = next((r for r in requests if r.request == event.request - 1), None)
    return Side(
        after_request=event.request - 1, prompt_before=last.context_tokens if last is not None else None,
        prompt_after=first.context_tokens if first is not None else None,
        summary_tokens=calls[0].output_tokens if calls else None,
        summarizer_cost_usd=sum((r.cost_usd for r in calls), Decimal(0)) if calls else None,
        cost_after_usd=cost_after)


def _threshold(policy: Any, window: int) -> int:
    """The compaction threshold of a preset's compact stage at this window, in tokens."""
    for stage in getattr(policy, "stages", None) or (policy,):
        if hasattr(stage, "thresholds"):
            return int(stage.thresholds(getattr(stage.params, "window_tokens", None) or window)[0])
    raise ValueError("the preset has no compaction stage")


def table(checks: list[CompactionCheck]) -> Any:
    """The checks as one terminal table (render.terminal.TableData)."""
    from ctxsim.reports._terminal import TableData

    def n(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    rows = []
    for c in checks:
        rows.append([c.session[-24:], f"{c.product} {c.version or '?'}", c.preset,
                     f"{c.threshold_tokens:,} ({c.threshold})", f"before {c.recorded_request:,}",
                     n(c.recorded_pre_tokens), n(c.replayed_tokens),
                     "never" if c.threshold_request is None else f"before {c.threshold_request:,}",
                     "never" if c.preset_request is None else f"before {c.preset_request:,}", c.verdict])
    return TableData("product presets against the product's own compactions (replayed as if it had not compacted)",
                     ["session", "product", "preset", "threshold", "product compacted", "its count",
                      "ctxsim then", "threshold fires", "preset compacts", "verdict"], rows, left=4)


def notes(checks: list[CompactionCheck]) -> list[str]:
    out = sorted({f"{c.preset}: {c.source}" for c in checks})
    if any(not c.calibrated for c in checks):
        out.append("not calibrated (too little recorded usage): ctxsim's prompt sizes are counted, not billed")
    out.append("'ctxsim then' = the last prompt plus its output under none where the product compacted, beside "
               "the product's own count; 'threshold fires' = the first request after a response whose total passes "
               "the preset's threshold (as the products check); 'preset compacts' = where the preset's policy "
               "compacts (it checks the prompt about to be sent, new messages included, so it can come one earlier)")
    out.append("each compaction: 'cost after' = the requests after the product's compaction up to its next one (the "
               "product's recorded usage priced, the preset's replayed); 'summarizer $' = the summarising call ('-' "
               "for the product: its log does not have the call); a manual compaction is replayed where the user "
               "asked for it")
    return out


def _usd(value: Decimal | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def sides_table(checks: list[CompactionCheck]) -> Any:
    """Every compaction, the product's and the preset's side on two rows."""
    from ctxsim.reports._terminal import TableData

    rows = []
    for c in checks:
        for who, label, side in (("product", f"{c.product} {c.version or '?'} ({c.trigger or '?'})", c.product_side),
                                 ("preset", c.preset, c.preset_side)):
            rows.append([c.session[-24:] if who == "product" else "", label,
                         "never" if side.after_request is None else f"after {side.after_request:,}",
                         _tokens(side.prompt_before), _tokens(side.prompt_after), _tokens(side.summary_tokens),
                         _usd(side.summarizer_cost_usd), _usd(side.cost_after_usd)])
    return TableData("each compaction, the product beside its preset",
                     ["session", "who", "compacted", "prompt before", "prompt after", "summary", "summarizer $",
                      "cost after $"], rows, left=2)
