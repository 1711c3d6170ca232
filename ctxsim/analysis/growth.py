"""A growth model: the prompt growth a log does not explain, per message kind and per request.

Where a log holds less than was sent (redacted or encrypted items, attachments a product adds, lines a
reader skipped), the calibration re-anchors the replay to the recorded prompt (analysis/calibrate,
reason `unexplained growth`): those tokens ride on the messages they were found with, so they are
known only where a bill shows them. A replay of requests the bill has not shown (the scored part of
`validate --predict`, a counterfactual that runs past the log) needs a rule instead:

    missing tokens sent with a request = per_request + sum over kinds k of rate_k x counted_k

`counted_k` is the counted size of the messages of kind k (user, tool, assistant, other) first sent
with that request (the previous response and what followed it). The coefficients are fitted, non-negative
(least squares with an active set), over every request of the fitted part whose growth the log does not
break for another reason: the target is the unexplained growth the calibration re-anchored before it
(zero where it re-anchored nothing). A log with no unexplained growth has no model (None): a complete
log is never padded.

`carry` puts the model's tokens on the messages of the requests it is asked to predict, marked as
anchors (`extra["anchor_tokens"]`, reason GROWTH_MODEL) so that every policy carries them like the
content they stand for: a policy that drops the message drops them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ctxsim.model import Message, Trace
from ctxsim.tokens import TokenCounter
from ctxsim.tokens.counting import BASE_FRAMING, MessageSizer

if TYPE_CHECKING:
    from ctxsim.analysis.calibrate import Calibration

GROWTH = "unexplained growth"  # the reason of a re-anchor that a growth the log does not explain made

KINDS = ("user", "tool", "assistant", "other")
GROWTH_MODEL = "growth model"

__all__ = ["GROWTH_MODEL", "KINDS", "GrowthModel", "carry", "learn"]


def kind_of(message: Message) -> str:
    return message.role if message.role in KINDS else "other"


@dataclass(frozen=True)
class GrowthModel:
    """Billed tokens the log misses: `per_request` per request, `rates[k]` per counted token of kind k."""

    per_request: float
    rates: Mapping[str, float]
    requests: int  # the requests it was fitted on
    missing_tokens: int  # the unexplained growth it was fitted to

    def tokens(self, counted_by_kind: Mapping[str, int]) -> float:
        return self.per_request + sum(self.rates.get(k, 0.0) * n for k, n in counted_by_kind.items())

    def note(self) -> str:
        rates = ", ".join(f"{k} {v:.3f}" for k, v in self.rates.items() if v)
        return (f"growth model (fitted on {self.requests} requests, {self.missing_tokens:,} tokens the log misses): "
                f"{self.per_request:,.0f} tokens per request" + (f" + per counted token {rates}" if rates else "")
                + "; carried into the requests it was not fitted on")

    def to_json(self) -> dict[str, Any]:
        return {"per_request_tokens": round(self.per_request, 3),
                "rates": {k: round(v, 6) for k, v in self.rates.items()},
                "requests": self.requests, "missing_tokens": self.missing_tokens}


def _nnls(x: Any, y: Any) -> Any:
    """Non-negative least squares by an active set: columns whose coefficient comes out negative are fixed at 0."""
    import numpy as np

    free = list(range(x.shape[1]))
    beta = np.zeros(x.shape[1])
    while free:
        sol, *_ = np.linalg.lstsq(x[:, free], y, rcond=None)
        if (sol >= 0).all():
            beta[free] = sol
            break
        worst = free[int(np.argmin(sol))]
        free.remove(worst)
    return beta


def _new_messages(messages: Sequence[Message], before: int | None, position: int) -> range:
    """Positions of the messages first sent with the request at `position`: the previous response (at
    `before`) and what followed it; from the start for the first request."""
    return range(0 if before is None else before, position)


def learn(trace: Trace, counter: TokenCounter, cal: Calibration) -> GrowthModel | None:
    """The model fitted on the requests of `trace` that recorded usage, with `cal`'s growth anchors as the
    target. None when the calibration re-anchored no unexplained growth."""
    import numpy as np

    growth = {(a.session, a.request): a.tokens for a in cal.anchors if a.reason == GROWTH and a.tokens > 0}
    if not growth:
        return None
    breaks = {(a.session, a.request) for a in cal.anchors if a.reason != GROWTH}
    sizer = MessageSizer(counter, replace(BASE_FRAMING, file_weight=cal.file_weight))
    rows: list[list[float]] = []
    ys: list[float] = []
    for s in trace.sessions:
        before: int | None = None
        index = 0
        seen_billed = False
        for position, m in enumerate(s.messages):
            if m.role != "assistant":
                continue
            index += 1
            billed = m.usage is not None and m.usage.input_tokens > 0
            if billed and seen_billed and (s.id, index) not in breaks:
                counted = dict.fromkeys(KINDS, 0)
                for j in _new_messages(s.messages, before, position):
                    counted[kind_of(s.messages[j])] += sizer.message(s.messages[j])
                rows.append([1.0, *(float(counted[k]) for k in KINDS)])
                ys.append(float(growth.get((s.id, index), 0)))
            if billed:
                seen_billed = True
                before = position
            elif seen_billed:
                break  # the fitted part ends at its first request without usage
    if not rows:
        return None
    beta = _nnls(np.array(rows), np.array(ys))
    return GrowthModel(float(beta[0]), {k: float(b) for k, b in zip(KINDS, beta[1:], strict=True)}, len(rows),
                       sum(growth.values()))


def carry(trace: Trace, counter: TokenCounter, cal: Calibration, model: GrowthModel,
          requests: Mapping[str, Sequence[int]]) -> tuple[Trace, int]:
    """(`trace` with the model's missing tokens on the messages first sent with each of `requests` (request
    numbers per session), in counted tokens (the calibration's scale turns them back into billed ones); the
    counted tokens it added)."""
    sizer = MessageSizer(counter, replace(BASE_FRAMING, file_weight=cal.file_weight))
    scale = cal.scale or 1.0
    sessions = []
    added = 0
    for s in trace.sessions:
        wanted = set(requests.get(s.id, ()))
        if not wanted:
            sessions.append(s)
            continue
        messages = list(s.messages)
        before: int | None = None
        index = 0
        for position, m in enumerate(s.messages):
            if m.role != "assistant":
                continue
            index += 1
            if index in wanted:
                spread = list(_new_messages(s.messages, before, position))
                shares = _shares(model, [(kind_of(s.messages[j]), sizer.message(s.messages[j])) for j in spread],
                                 scale)
                added += sum(shares)
                for j, share in zip(spread, shares, strict=True):
                    if share:
                        now = messages[j]
                        anchored = int(now.extra.get("anchor_tokens", 0) or 0)
                        messages[j] = replace(now, extra_tokens=now.extra_tokens + share,
                                              extra={**now.extra, "anchor_tokens": anchored + share,
                                                     "anchor": GROWTH_MODEL})
            before = position
        sessions.append(replace(s, messages=tuple(messages)))
    return replace(trace, sessions=tuple(sessions)), added


def _shares(model: GrowthModel, sized: Sequence[tuple[str, int]], scale: float) -> list[int]:
    """Counted tokens per message: its kind's rate x its counted size, the per-request part on the last one
    (the latest sent); whole tokens, the total rounded once (largest remainder first)."""
    import math

    if not sized:
        return []
    raw = [model.rates.get(kind, 0.0) * size / scale for kind, size in sized]
    raw[-1] += model.per_request / scale
    total = round(sum(raw))
    out = [math.floor(v) for v in raw]
    left = total - sum(out)
    for i in sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))[:max(0, left)]:
        out[i] += 1
    return out
