"""Predicted, not copied: calibrate on the first part of each session, score the rest (issue 25).

The anchored validation (`validate`) fits on every request it then scores, copies the provider's
recorded cache behaviour back request by request (ceilings, floors, fresh tails: cache_anchor) and
re-anchors the prompt wherever the log is missing something. It says how well the replay can be
made to agree with a bill it has seen. This module says how well it predicts one it has not:

* the billed requests of each session part are split in order: the first `fit_on` share (at least
  one) is the fit part, the rest are scored;
* the calibration is made on a copy of the trace whose scored requests carry no usage, so the
  scale, the per-message overhead, the hidden prefix, the re-anchors and the growth model come from
  the fit part only;
* no per-request cache fact is applied anywhere (they cannot be known for a request before its bill,
  nor for a policy's prompts): the cache model alone predicts the reads;
* unexplained growth learned on the fit part is carried into the scored part by a growth model
  (analysis/growth), the way it would be carried into any counterfactual;
* the scores are over the scored requests only.

Cost range: the point estimate up to the cost had the scored requests lost the share of the model's
reads that the provider's misses took on the fitted ones, widened by a best-effort provider's served
share (`cost_ranges`, caching/miss_range.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from ctxsim.analysis import growth
from ctxsim.analysis.calibrate import Calibration, calibration
from ctxsim.analysis.validate import RequestCheck, Validation, quantile, validate
from ctxsim.errors import CtxsimError
from ctxsim.model import Session, Trace
from ctxsim.tokens import TokenCounter, get_tokenizer

DEFAULT_FIT_ON = 0.5

__all__ = ["DEFAULT_FIT_ON", "Prediction", "cost_ranges", "facts_block", "fitted_settings", "manifest_entry",
           "missing_block", "predict", "prediction_table", "score_block", "score_blocks", "split"]


def _billed_indexes(session: Session) -> list[int]:
    """1-based request numbers of the session's requests that recorded a prompt."""
    out = []
    index = 0
    for m in session.messages:
        if m.role != "assistant":
            continue
        index += 1
        if m.usage is not None and m.usage.input_tokens > 0:
            out.append(index)
    return out


def split(trace: Trace, fit_on: float) -> tuple[Trace, dict[str, tuple[int, ...]]]:
    """(the trace with the scored requests' usage taken away, the scored request numbers per session).

    Per session part, the first ceil(fit_on x billed requests) billed requests (at least one) are the
    fit part; the usage of every later request is removed from the copy the calibration sees.
    """
    if not 0.0 < fit_on < 1.0:
        raise CtxsimError(f"--fit-on must lie strictly between 0 and 1 (a share of each session's requests), "
                          f"not {fit_on:g}")
    sessions = []
    scored: dict[str, tuple[int, ...]] = {}
    for s in trace.sessions:
        billed = _billed_indexes(s)
        if not billed:
            sessions.append(s)
            continue
        keep = min(len(billed), max(1, math.ceil(fit_on * len(billed))))
        mine = tuple(billed[keep:])
        scored[s.id] = mine
        if not mine:
            sessions.append(s)
            continue
        cut = set(mine)
        messages = list(s.messages)
        index = 0
        for i, m in enumerate(messages):
            if m.role != "assistant":
                continue
            index += 1
            if index in cut:
                messages[i] = replace(m, usage=None)
        sessions.append(replace(s, messages=tuple(messages)))
    return replace(trace, sessions=tuple(sessions)), scored


@dataclass
class Prediction:
    """The predicted validation: the replay calibrated on the fit parts, scored on the rest."""

    fit_on: float
    validation: Validation  # its checks: the scored requests only
    fit_requests: int
    fit_by_session: dict[str, int]
    growth_model: growth.GrowthModel | None
    cost_range_usd: tuple[Decimal, Decimal] | None = None
    session_cost_ranges: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    growth_model_tokens: int = 0  # billed tokens the growth model added to the scored requests' messages

    @property
    def checks(self) -> list[RequestCheck]:
        return self.validation.checks


def _placeholders(trace: Trace) -> tuple[tuple[str, int], ...]:
    """(session, request) whose recorded output is a streaming placeholder (the readers flag it, a format
    fact, not a learned one): estimated in the scored part as in the fit part."""
    out = []
    for s in trace.sessions:
        index = 0
        for m in s.messages:
            if m.role != "assistant":
                continue
            index += 1
            if m.usage is not None and m.usage.extra.get("output_placeholder"):
                out.append((s.id, index))
    return tuple(out)


def predict(trace: Trace, tokenizer: str = "o200k_base", fit_on: float = DEFAULT_FIT_ON, *,
            counter: TokenCounter | None = None, mode: str = "fit", reports: Any = None) -> Prediction:
    """Calibrate on the first `fit_on` of each session part's requests, replay the whole trace with
    that calibration and no recorded cache fact, and score the requests after the fit part."""
    counter = counter or TokenCounter(get_tokenizer(tokenizer))
    fit_trace, scored = split(trace, fit_on)
    if not any(scored.values()):
        raise CtxsimError(f"{trace.name}: no session has a request left to score after fitting on the first "
                          f"{fit_on:.0%} of its requests (a session needs two recorded requests at least)")
    cal = calibration(fit_trace, tokenizer, counter, mode=mode, reports=reports)
    model = cal.growth_model  # carried below, into the scored requests only, counting what it adds
    fit_facts = cal.cache_facts  # the fitted requests' provider misses: the scored part's range (miss_range)
    cal = replace(cal, cache_facts={}, cache_facts_moved={}, placeholder_outputs=_placeholders(trace),
                  growth_model=None, growth_from={}, **fitted_settings(trace, fit_trace))
    replayed, carried = growth.carry(trace, counter, cal, model, scored) if model is not None else (trace, 0)
    full = validate(replayed, tokenizer, calibration=cal)
    wanted = {(sid, i) for sid, idx in scored.items() for i in idx}
    by_session: dict[str, list[RequestCheck]] = {}
    fitted: dict[str, list[RequestCheck]] = {}
    for c in full.checks:
        (by_session if (c.session, c.index) in wanted else fitted).setdefault(c.session, []).append(c)
    checks = [c for cs in by_session.values() for c in cs]
    ranges = cost_ranges(full.provider, full.model, by_session, fitted, fit_facts)
    total = (sum((lo for lo, _ in ranges.values()), Decimal(0)),
             sum((hi for _, hi in ranges.values()), Decimal(0))) if checks else None
    v = replace(full, checks=checks, cost_range_usd=total, session_cost_ranges=ranges)
    fit_by_session = {s.id: len(_billed_indexes(s)) - len(scored.get(s.id, ())) for s in trace.sessions
                      if _billed_indexes(s)}
    return Prediction(fit_on, v, sum(fit_by_session.values()), fit_by_session, model, total, ranges,
                      round(carried * cal.scale))


def fitted_settings(trace: Trace, fit_trace: Trace) -> dict[str, Any]:
    """What the replay would otherwise read from the whole log, scored requests included, taken from the fitted
    requests of `fit_trace` (split): Calibration's `fitted_ttl` (each session's cache TTL, as its fitted writes
    show it) and `cache` ("none" where the model has no cache-read price and no fitted request read a cache)."""
    from ctxsim.caching.anthropic import recorded_ttl
    from ctxsim.caching.none import unpriced_cache
    from ctxsim.replay.engine import Setup, resolve

    _, pricer = resolve(trace, Setup())
    whole = unpriced_cache(trace, pricer)
    return {"fitted_ttl": {s.id: recorded_ttl(s) for s in fit_trace.sessions},
            "cache": "none" if not whole and unpriced_cache(fit_trace, pricer) else None}


def cost_ranges(provider: str, model: str, scored: dict[str, list[RequestCheck]],
                fitted: dict[str, list[RequestCheck]], facts: Any) -> dict[str, tuple[Decimal, Decimal]]:
    """The predicted cost's range per session over what remains uncertain (caching/miss_range.py): the
    provider misses the fitted requests showed, as a share of the model's reads, and a best-effort
    provider's served share."""
    from ctxsim.caching.miss_range import predicted_ranges

    points = {sid: sum((c.simulated_cost_usd for c in cs), Decimal(0)) for sid, cs in scored.items()}
    return predicted_ranges(provider, model, points, fitted, scored, facts)


# ---------------------------------------------------------------- score blocks


def score_block(checks: Sequence[RequestCheck], fit_requests: int,
                cost_range_usd: tuple[Decimal, Decimal] | None) -> dict[str, Any]:
    """The score over `checks`: prompt error median and p90, hit rates, cost against the bill (fractions)."""
    errors = [c.prompt_error for c in checks]
    rec_in = sum(c.recorded_input_tokens for c in checks)
    sim_in = sum(c.simulated_input_tokens for c in checks)
    rec_read = sum(c.recorded_cache_read_tokens for c in checks)
    sim_read = sum(c.simulated_cache_read_tokens for c in checks)
    billed = sum((c.recorded_cost_usd for c in checks), Decimal(0))
    cost = sum((c.simulated_cost_usd for c in checks), Decimal(0))
    return {
        "fit_requests": fit_requests, "scored_requests": len(checks),
        "prompt_error_median": round(quantile(errors, 0.5), 6), "prompt_error_p90": round(quantile(errors, 0.9), 6),
        "hit_rate_recorded": round(rec_read / rec_in, 6) if rec_in else 0.0,
        "hit_rate_simulated": round(sim_read / sim_in, 6) if sim_in else 0.0,
        "cost_usd": str(cost), "billed_usd": str(billed),
        "cost_error": round(float((cost - billed) / billed), 6) if billed else None,
        "cost_range_usd": [str(v) for v in cost_range_usd] if cost_range_usd else None,
    }


def facts_block(cal: Calibration | None, sessions: Iterable[str] | None = None) -> dict[str, Any]:
    """What the anchored score copied from the bill: cache facts and re-anchors, counted (for `sessions`)."""
    if cal is None:
        return {"ceilings": 0, "floors": 0, "fresh_tails": 0, "re_anchors": 0, "re_anchored_tokens": 0}
    keep = None if sessions is None else set(sessions)
    facts = [v for sid, f in cal.cache_facts.items() if keep is None or sid in keep for v in f.values()]
    anchors = [a for a in cal.anchors if keep is None or a.session in keep]
    return {"ceilings": sum(1 for v in facts if v[0] is not None), "floors": sum(1 for v in facts if v[1] is not None),
            "fresh_tails": sum(1 for v in facts if v[2] is not None), "re_anchors": len(anchors),
            "re_anchored_tokens": sum(a.tokens for a in anchors)}


def _by_session(checks: Sequence[RequestCheck]) -> dict[str, list[RequestCheck]]:
    out: dict[str, list[RequestCheck]] = {}
    for c in checks:
        out.setdefault(c.session, []).append(c)
    return out


def missing_block(trace: Trace, cal: Calibration | None, prediction: Prediction | None) -> dict[str, int]:
    """The tokens the log is missing, as each part of ctxsim sized them: re-anchored on the anchored fit
    (and dropped: content the log holds that the provider did not get), estimated from redaction markers'
    lengths (tokens/redacted.py), and added by the growth model to the predicted requests."""
    from ctxsim.tokens.redacted import redacted_tokens, session_texts

    report = cal.missing_report if cal is not None else {"missing_tokens": 0, "dropped_tokens": 0}
    return {"re_anchored_tokens": int(report["missing_tokens"]), "dropped_tokens": int(report["dropped_tokens"]),
            "redacted_tokens": sum(redacted_tokens(t) for s in trace.sessions for t in session_texts(s)),
            "growth_model_tokens": prediction.growth_model_tokens if prediction is not None else 0}


def score_blocks(anchored: Validation, prediction: Prediction | None, trace: Trace | None = None
                 ) -> dict[str, Any]:
    """validate --json's and run.json's blocks: `anchored`, `predicted` (None when nothing could be
    predicted), `facts` for the trace, and the same per session under `sessions`; with `trace`, `missing`
    (missing_block)."""
    cal = anchored.calibration
    anchored_sessions = _by_session(anchored.checks)
    predicted_sessions = _by_session(prediction.checks) if prediction is not None else {}
    sessions: dict[str, Any] = {}
    for sid, checks in anchored_sessions.items():
        mine = predicted_sessions.get(sid)
        sessions[sid] = {
            "anchored": score_block(checks, len(checks) if cal is not None else 0,
                                    anchored.session_cost_ranges.get(sid)),
            "predicted": None if prediction is None or not mine else score_block(
                mine, prediction.fit_by_session.get(sid, 0), prediction.session_cost_ranges.get(sid)),
            "facts": facts_block(cal, (sid,)),
        }
    return {
        "anchored": score_block(anchored.checks, cal.requests_used if cal is not None else 0,
                                anchored.cost_range_usd),
        "predicted": None if prediction is None else {
            **score_block(prediction.checks, prediction.fit_requests, prediction.cost_range_usd),
            "fit_on": prediction.fit_on, "facts": facts_block(prediction.validation.calibration),
            "growth_model": prediction.growth_model.to_json() if prediction.growth_model is not None else None},
        "facts": facts_block(cal),
        "sessions": sessions,
        **({"missing_tokens": missing_block(trace, cal, prediction)} if trace is not None else {}),
    }


def prediction_table(blocks: dict[str, Any], calibrated: bool = True) -> Any:
    """The two scores side by side (validate's text report); `calibrated` false: the raw replay's alone."""
    from ctxsim.reports._terminal import TableData

    a, p = blocks["anchored"], blocks["predicted"]

    def pct(v: Any) -> str:
        return "-" if v is None else f"{v * 100:.2f}%"

    def signed(v: Any) -> str:
        return "-" if v is None else f"{v * 100:+.2f}%"

    def usd(v: Any) -> str:
        return f"${Decimal(v):,.4f}"

    def span(b: dict[str, Any]) -> str:
        r = b["cost_range_usd"]
        return "-" if not r else f"{usd(r[0])} - {usd(r[1])}"

    cols = [a] if p is None else [a, p]
    rows = [["requests fitted on", *(f"{b['fit_requests']:,}" for b in cols)],
            ["requests scored", *(f"{b['scored_requests']:,}" for b in cols)],
            ["prompt error median", *(pct(b["prompt_error_median"]) for b in cols)],
            ["prompt error p90", *(pct(b["prompt_error_p90"]) for b in cols)],
            ["hit rate recorded", *(pct(b["hit_rate_recorded"]) for b in cols)],
            ["hit rate simulated", *(pct(b["hit_rate_simulated"]) for b in cols)],
            ["billed (scored requests)", *(usd(b["billed_usd"]) for b in cols)],
            ["simulated cost", *(usd(b["cost_usd"]) for b in cols)],
            ["cost error", *(signed(b["cost_error"]) for b in cols)],
            ["cost range", *(span(b) for b in cols)]]
    facts = [blocks["facts"]] + ([] if p is None else [p["facts"]])
    rows.append(["cache facts copied (ceil/floor/fresh)",
                 *(f"{f['ceilings']}/{f['floors']}/{f['fresh_tails']}" for f in facts)])
    rows.append(["re-anchors (tokens)", *(f"{f['re_anchors']} ({f['re_anchored_tokens']:+,})" for f in facts)])
    missing = blocks.get("missing_tokens")
    if missing is not None:
        said = (f"{missing['re_anchored_tokens']:,} re-anchored, {missing['redacted_tokens']:,} sized from "
                "redaction markers")
        rows.append(["tokens the log misses", said,
                     *([] if p is None else [f"{missing['growth_model_tokens']:,} from the growth model"])])
    head = ["", "anchored" if calibrated else "raw (not calibrated)"]
    if p is not None:
        head.append(f"predicted (fit on first {p['fit_on']:.0%})")
    return TableData("fidelity: anchored and predicted" if p is not None else "fidelity", head, rows, left=1)


def manifest_entry(trace: Trace, tokenizer: str, reports: Any = None, fit_on: float = DEFAULT_FIT_ON
                   ) -> dict[str, Any] | None:
    """run.json's `calibration.predicted` (replay, compare): the predicted score of `none` on the trace as read
    (before the calibration is applied), with what it fitted on; None when no session has a request to score."""
    if not any(split(trace, fit_on)[1].values()):
        return None
    p = predict(trace, tokenizer, fit_on, reports=reports)
    return {**score_block(p.checks, p.fit_requests, p.cost_range_usd), "fit_on": fit_on,
            "facts": facts_block(p.validation.calibration),
            "growth_model": p.growth_model.to_json() if p.growth_model is not None else None}


