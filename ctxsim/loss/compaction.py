"""What a product's compaction lost, observed beside predicted: the loss meter checked against the agent.

For every compaction a trace records (a part that `continues` another, with a `compaction` event):

- observed (`observed.observe`): the tool calls after it whose target the context held before it,
  with the tokens the agent got back;
- predicted: the part before and the part after joined without what the product put back (as if it
  had not compacted: `analysis.preset_check.joined_parts`), replayed uncalibrated with a loss meter under
  the product's own compaction stage (its preset's, `stage_of`) made to fire exactly where the product
  compacted (`at_request`; its own threshold out of reach);
  the meter's re-fetches and recall misses from that request to the preset's next compaction.

When the part before holds redacted or hashed text (`[REDACTED_TEXT len=N sha=...]`), what it held
cannot be known: the prediction is "unknown" (said so, never a number). `entry` makes the
`validate --json` list entry (`{"after_request", "loss"}`), `table`/`notes` the terminal view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxsim.loss.observed import Observed
from ctxsim.model import Session, Trace

REDACTED_SHARE = 0.1  # a part whose texts hold redaction markers this often: its loss is unknown
NEVER = 10**12  # the stage's own threshold, out of reach: it compacts where the product did (`at_request`) alone
DEFAULT_STAGE = "compact:keep_recent=0,clear_at_least=0,summarizer=llm"
_THRESHOLDS = ("trigger", "compact_above", "compact_at", "headroom_tokens", "trigger_on", "at_request")


def stage_of(product: str | None) -> str:
    """The product's own compaction stage (its preset's, the compact one) without its thresholds."""
    from ctxsim.presets import presets

    preset = presets().get(product or "")
    stage = next((s for s in reversed(preset.stages) if s.startswith("compact:")), None) if preset else None
    if stage is None:
        return DEFAULT_STAGE
    name, _, params = stage.partition(":")
    kept = [p for p in params.split(",") if p and p.split("=", 1)[0] not in _THRESHOLDS]
    return f"{name}:{','.join(kept)}"


@dataclass(frozen=True)
class Predicted:
    refetches: int | None  # None: unknown (`why`)
    refetch_tokens: int | None
    recall_misses: int | None
    request: int | None  # where the stage compacted (1-based in the joined session); None: it did not
    why: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"refetches": self.refetches, "refetch_tokens": self.refetch_tokens,
                               "recall_misses": self.recall_misses}
        if self.why is not None:
            out["unknown"] = self.why
        return out


@dataclass(frozen=True)
class CompactionLoss:
    before: str  # the part the product compacted
    session: str  # the part after the compaction
    product: str
    after_request: int  # the product compacted before this request (1-based in the joined session)
    observed: Observed
    predicted: Predicted

    def loss_json(self) -> dict[str, Any]:
        return {"observed": self.observed.to_json(), "predicted": self.predicted.to_json()}

    @property
    def scored(self) -> str:
        """How the prediction sits beside what the agent did (the issue's targets)."""
        p = self.predicted
        if p.refetches is None or p.refetch_tokens is None:
            return "unknown"
        seen, said = len(self.observed.refetches), p.refetches
        count_ok = abs(said - seen) <= 2 if seen < 4 else abs(said - seen) <= 0.5 * seen
        tokens = self.observed.refetch_tokens
        tokens_ok = (p.refetch_tokens == 0) if tokens == 0 else tokens / 2 <= p.refetch_tokens <= 2 * tokens
        return "within" if count_ok and tokens_ok else "count off" if not count_ok else "tokens off"


def entry(after_request: int, loss: dict[str, Any]) -> dict[str, Any]:
    """One `validate --json` compactions entry's loss side (the presets check adds its own keys beside)."""
    return {"after_request": after_request, "loss": loss}


def entries(checks: list[CompactionLoss], others: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """`validate --json`'s "compactions": every compaction's entry, the loss beside what other analyses put in it
    (`others`: (the compacted part's id, its entry), in order); a compaction no other analysis took is its own."""
    by_before = {c.before: c for c in checks}
    out = []
    for before, other in others:
        c = by_before.pop(before, None)
        out.append(other if c is None else {**other, **entry(c.after_request, c.loss_json())})
    out.extend(entry(c.after_request, c.loss_json()) for c in checks if c.before in by_before)
    return out


def summary(checks: list[CompactionLoss]) -> dict[str, Any]:
    """The corpus line: how the loss meter scored on every compaction whose loss is known."""
    known = [c for c in checks if c.predicted.refetches is not None]
    return {
        "compactions": len(checks), "known": len(known),
        "observed_refetches": sum(len(c.observed.refetches) for c in known),
        "observed_refetch_tokens": sum(c.observed.refetch_tokens for c in known),
        "predicted_refetches": sum(c.predicted.refetches or 0 for c in known),
        "predicted_refetch_tokens": sum(c.predicted.refetch_tokens or 0 for c in known),
        "predicted_recall_misses": sum(c.predicted.recall_misses or 0 for c in known),
        "within_targets": sum(1 for c in known if c.scored == "within"),
    }


def summary_line(checks: list[CompactionLoss]) -> str:
    """`summary` in words (a note of `presets check`, `tune`)."""
    s = summary(checks)
    if not s["compactions"]:
        return "loss meter: no recorded compaction to check it on"
    text = (f"loss meter on {s['known']:,} of {s['compactions']:,} recorded compaction(s): the agents re-fetched "
            f"{s['observed_refetches']:,} target(s) ({s['observed_refetch_tokens']:,} tokens), the meter predicted "
            f"{s['predicted_refetches']:,} ({s['predicted_refetch_tokens']:,} tokens); {s['within_targets']:,} within "
            "the targets (count +/-50 % or 2, tokens 2x)")
    if s["known"] < s["compactions"]:
        text += f"; {s['compactions'] - s['known']:,} unknown (redacted text)"
    return text


def scored_on(traces: list[Trace], tokenizer: str = "o200k_base") -> tuple[dict[str, Any] | None, str | None]:
    """How the meter scored on the recorded compactions of `traces` (`summary`, and a note in words); (None, None)
    when they recorded none (`tune` says it beside its recommendation)."""
    checks = [c for trace in traces for c in check(trace, tokenizer)]
    if not checks:
        return None, None
    return summary(checks), "on your own compactions, " + summary_line(checks)


def redacted(session: Session) -> bool:
    """Whether enough of the session's text is redacted or hashed that what its context held is unknown (a stray
    marker, one redacted name, is not)."""
    from ctxsim.loss.kinds import has_marker

    texts = [m.content for m in session.messages if m.content]
    return bool(texts) and sum(map(has_marker, texts)) >= REDACTED_SHARE * len(texts)


def check(trace: Trace, tokenizer: str = "o200k_base") -> list[CompactionLoss]:
    """Every recorded compaction of the trace: observed and predicted loss."""
    from ctxsim.loss.observed import observe
    from ctxsim.tokens import get_tokenizer

    by_id = {s.id: s for s in trace.sessions}
    count = get_tokenizer(tokenizer).count_batch  # the replay's tokenizer: observed and predicted in one count
    out = []
    for after in trace.sessions:
        before = by_id.get(str(after.extra.get("continues") or ""))
        if before is None or not before.requests or not any(e.name == "compaction" for e in after.events):
            continue
        seen = [o for o in observe([before, after], count) if o.kind == "compaction"]
        observed = seen[0] if seen else Observed("compaction", after.id, 0)
        out.append(CompactionLoss(before.id, after.id, after.source or "?", before.requests + 1, observed,
                                  predict(before, after, tokenizer)))
    return out


def clearings(trace: Trace, tokenizer: str = "o200k_base") -> list[dict[str, Any]]:
    """The re-fetches after every product clearing the log shows (Claude Code's microcompact): observed only (the
    product's clearing is not replayed, so no prediction stands beside them)."""
    from ctxsim.loss.observed import observe

    if not any(e.name == "microcompact" for s in trace.sessions for e in s.events):
        return []
    from ctxsim.tokens import get_tokenizer

    return [{"session": o.session, "observed": o.to_json()}
            for o in observe(trace.sessions, get_tokenizer(tokenizer).count_batch) if o.kind == "clearing"]


def predict(before: Session, after: Session, tokenizer: str = "o200k_base") -> Predicted:
    """The loss meter on the product's compaction stage, fired where the product compacted."""
    from ctxsim.analysis.preset_check import joined_parts
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.choices import replay_choices
    from ctxsim.replay.plan import Options

    if redacted(before) or redacted(after):
        return Predicted(None, None, None, None, "the log's text is redacted or hashed: what the context held cannot "
                                                 "be known, so no misses are counted from it")
    joined, n_before = joined_parts(before, after)
    trace = Trace(f"{before.id} joined", (joined,))
    if n_before >= joined.requests:
        return Predicted(0, 0, 0, None, None)
    spec = f"{stage_of(after.source)},trigger={NEVER},compact_above=0,at_request={n_before + 1}"
    options = Options(tokenizer=tokenizer, jobs=1, loss=True)
    run = replay_choices(trace, "", resolve([spec]), options).runs[0]
    compacts = sorted(e.request for e in run.events if e.kind == "compact")
    if not compacts:
        return Predicted(0, 0, 0, None, None)
    start = compacts[0]
    end = next((r for r in compacts[1:] if r > start), None)

    def inside(request: int) -> bool:
        return request >= start and (end is None or request < end)

    loss = run.loss
    fetched = [f for f in loss.refetches if inside(f.request)]
    misses = sum(1 for m in loss.misses if inside(m.request))
    return Predicted(len(fetched), sum(f.tokens for f in fetched), misses, start)


def table(checks: list[CompactionLoss]) -> Any:
    from ctxsim.reports._terminal import TableData

    def n(value: int | None) -> str:
        return "unknown" if value is None else f"{value:,}"

    rows = [[c.session[-24:], c.product, f"before {c.after_request:,}", f"{len(c.observed.refetches):,}",
             f"{c.observed.refetch_tokens:,}", n(c.predicted.refetches), n(c.predicted.refetch_tokens),
             n(c.predicted.recall_misses), c.scored] for c in checks]
    return TableData("what the product's compactions lost: re-fetches the agent made, beside the loss meter's",
                     ["session", "product", "compacted", "re-fetched", "tokens", "predicted", "tokens",
                      "recall misses", "meter"], rows, left=2)


def notes(checks: list[CompactionLoss]) -> list[str]:
    out = [("re-fetched = tool calls after the compaction whose target (a file, an identical command or search, a "
            "URL) the context held before it, each once; predicted = the loss meter on the product's compaction stage "
            "fired at the same request; meter 'within' = count within +/-50 % (or 2 where fewer than 4 were observed) "
            "and tokens within 2x")]
    unknown = {c.predicted.why for c in checks if c.predicted.why}
    out.extend(sorted(f"unknown: {why}" for why in unknown))
    return out


__all__ = ["CompactionLoss", "Predicted", "check", "clearings", "entries", "entry", "notes", "predict", "scored_on",
           "stage_of", "summary", "summary_line", "table"]
