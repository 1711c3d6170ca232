"""Calibration: fit how the counted prompt maps to the billed one, from the requests a trace recorded.

A log rarely shows everything a request carried: Claude Code never logs its system prompt and
tool schemas, and Claude's tokenizer is not o200k. Where the trace records real usage, the
recorded prompt of request k (inclusive `input_tokens`) is fitted as

    recorded_k = prefix_g + scale * (counted_text_k + overhead * messages_k)

`counted_text_k` is what ctxsim counts of the messages before request k (no framing),
`messages_k` how many there are, `prefix_g` the hidden fixed prefix of the session's group
(the main agent and its subagents carry different system prompts and tools), `scale` the
billed tokens per counted token and `overhead` the framing tokens per message the provider
adds. The fit is a robust (Huber-weighted) least squares over the requests that are not the
first after a recorded compaction (the summary call itself is not logged). The prefixes are
then re-centred on the applied framing (medians of the residuals), so rounding cancels.

Use: `cal = fit(trace, "o200k_base")`, then replay `cal.apply(trace)` with
`cal.framing()` and `cal.setup(Setup(...))` (`Setup(hidden_prefix_tokens=cal.hidden_prefix_tokens)`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

from ctxsim.counting import Framing, MessageSizer
from ctxsim.engine import Setup
from ctxsim.model import Session, Trace
from ctxsim.tokens import TokenCounter, get_tokenizer

MIN_REQUESTS = 3
BASE_FRAMING = Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0)


def group_of(session: Session) -> str:
    """Sessions that share a hidden prefix: the main agent's, or a subagent's (per source)."""
    kind = "subagent" if session.extra.get("agent_id") or session.extra.get("sidechain") else "main"
    return f"{session.source}:{kind}" if session.source else kind


@dataclass(frozen=True)
class Point:
    """One recorded request: what was counted before it and what was billed."""

    session: str
    group: str
    index: int  # 1-based request number in its session
    text_tokens: int  # counted message tokens, no framing
    messages: int
    fixed_tokens: int  # counted system + tools (zero when the log does not show them)
    recorded_tokens: int
    after_compaction: bool


def points(trace: Trace, counter: TokenCounter) -> list[Point]:
    """Every request with recorded usage, measured under the bare framing (policy none: nothing removed)."""
    sizer = MessageSizer(counter, BASE_FRAMING)
    out = []
    for session in trace.sessions:
        sizer.prime(session)
        fixed = sizer.system(session) + sizer.tools(session)
        compacted = any(e.name == "compaction" for e in session.events)
        text = messages = index = 0
        for message in session.messages:
            if message.role == "assistant":
                index += 1
                usage = message.usage
                if usage is not None and usage.input_tokens > 0:
                    out.append(Point(session.id, group_of(session), index, text, messages, fixed,
                                     usage.input_tokens, compacted and index == 1))
            text += sizer.message(message)
            messages += 1
    return out


def _solve(rows: list[list[float]], ys: list[float], weights: list[float]) -> list[float] | None:
    """Weighted least squares by the normal equations (small systems; Gauss-Jordan with pivoting)."""
    k = len(rows[0])
    a = [[0.0] * (k + 1) for _ in range(k)]
    for row, y, w in zip(rows, ys, weights, strict=True):
        for i in range(k):
            wi = w * row[i]
            if wi == 0.0:
                continue
            for j in range(k):
                a[i][j] += wi * row[j]
            a[i][k] += wi * y
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-9:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(k):
            if r != col and a[r][col] != 0.0:
                f = a[r][col] / a[col][col]
                for c in range(col, k + 1):
                    a[r][c] -= f * a[col][c]
    return [a[i][k] / a[i][i] for i in range(k)]


def huber_fit(rows: list[list[float]], ys: list[float], iterations: int = 40) -> list[float] | None:
    """Least squares with Huber weights (k = 1.345 robust sigma): outliers pull little."""
    weights = [1.0] * len(ys)
    beta = None
    for _ in range(iterations):
        beta = _solve(rows, ys, weights)
        if beta is None:
            return None
        residuals = [y - sum(b * x for b, x in zip(beta, row, strict=True)) for row, y in zip(rows, ys, strict=True)]
        scale = median(abs(r) for r in residuals) / 0.6745
        if scale <= 1e-9:
            break
        limit = 1.345 * scale
        new = [1.0 if abs(r) <= limit else limit / abs(r) for r in residuals]
        if max(abs(x - y) for x, y in zip(new, weights, strict=True)) < 1e-6:
            break
        weights = new
    return beta


@dataclass(frozen=True)
class Calibration:
    """The fitted values and how they were found; apply with `apply`, `framing` and `setup`."""

    scale: float
    message_tokens: int  # framing per message, in counted tokens
    hidden_prefix_tokens: int  # the smallest group prefix: what Setup carries
    group_prefix_tokens: dict[str, int]
    group_requests: dict[str, int]
    requests_used: int
    requests_excluded: int
    tokenizer: str
    model: str = "prefix + scale x (text + overhead x messages)"
    notes: tuple[str, ...] = ()
    session_groups: dict[str, str] = field(default_factory=dict)

    def framing(self, base: Framing | None = None) -> Framing:
        base = base or Framing()
        return replace(base, message_tokens=self.message_tokens, tool_call_tokens=0, tool_result_tokens=0,
                       scale=round(self.scale, 6))

    def setup(self, base: Setup | None = None) -> Setup:
        return replace(base or Setup(), hidden_prefix_tokens=self.hidden_prefix_tokens)

    def apply(self, trace: Trace, counter: TokenCounter | None = None) -> Trace:
        """The trace with each group's extra prefix (above the smallest) in its sessions' system size."""
        if all(v == self.hidden_prefix_tokens for v in self.group_prefix_tokens.values()):
            return trace
        sizer = MessageSizer(counter or TokenCounter(get_tokenizer(self.tokenizer)), self.framing())
        sessions = []
        for s in trace.sessions:
            extra = self.group_prefix_tokens.get(group_of(s), self.hidden_prefix_tokens) - self.hidden_prefix_tokens
            if extra > 0:
                s = replace(s, system_tokens=sizer.system(s) + extra)
            sessions.append(s)
        return replace(trace, sessions=tuple(sessions))

    def to_json(self) -> dict[str, Any]:
        return {"scale": round(self.scale, 4), "message_tokens": self.message_tokens,
                "hidden_prefix_tokens": self.hidden_prefix_tokens,
                "group_prefix_tokens": dict(self.group_prefix_tokens), "group_requests": dict(self.group_requests),
                "requests_used": self.requests_used, "requests_excluded": self.requests_excluded,
                "tokenizer": self.tokenizer, "model": self.model, "notes": list(self.notes)}


def fit(trace: Trace, tokenizer: str = "o200k_base", counter: TokenCounter | None = None) -> Calibration | None:
    """Fit scale, per-message overhead and hidden prefixes; None when fewer than 3 requests recorded usage."""
    counter = counter or TokenCounter(get_tokenizer(tokenizer))
    every = points(trace, counter)
    used = [p for p in every if not p.after_compaction]
    if len(used) < MIN_REQUESTS:
        return None
    groups = sorted({p.group for p in used})
    notes: list[str] = []
    rows = [[1.0 if p.group == g else 0.0 for g in groups] + [float(p.text_tokens), float(p.messages)] for p in used]
    ys = [float(p.recorded_tokens - p.fixed_tokens) for p in used]
    beta = huber_fit(rows, ys) if len(used) >= len(groups) + 3 else None
    scale = overhead = None
    if beta is not None:
        scale, per_message = beta[-2], beta[-1]
        if scale > 0.2 and per_message >= 0:
            overhead = per_message / scale
        else:
            beta = None
    if beta is None:  # too few or degenerate requests: scale only, default framing, Theil-Sen
        overhead = float(Framing().message_tokens)
        scale = _theil_sen(used, overhead) or 1.0
        notes.append("too few distinct requests for the full fit: per-message overhead kept at the default")
    assert scale is not None and overhead is not None
    calibration = Calibration(scale, max(0, round(overhead)), 0, {}, {}, len(used), len(every) - len(used),
                              getattr(counter.tokenizer, "name", tokenizer), notes=tuple(notes))
    # re-centre each group's prefix on the framing that will be applied
    sizer = MessageSizer(counter, calibration.framing())
    residuals: dict[str, list[int]] = {}
    wanted = {(p.session, p.index) for p in used}
    for session, index, prompt, recorded in _prompts(trace, sizer):
        if (session.id, index) in wanted:
            residuals.setdefault(group_of(session), []).append(recorded - prompt)
    prefixes = {g: max(0, round(median(r))) for g, r in residuals.items()}
    counts = {g: len(r) for g, r in residuals.items()}
    hidden = min(prefixes.values()) if prefixes else 0
    session_groups = {s.id: group_of(s) for s in trace.sessions}
    return replace(calibration, hidden_prefix_tokens=hidden, group_prefix_tokens=prefixes, group_requests=counts,
                   session_groups=session_groups)


def _prompts(trace: Trace, sizer: MessageSizer) -> Iterator[tuple[Session, int, int, int]]:
    """(session, request index, prompt as `none` replays it without hidden prefix, recorded prompt)."""
    for session in trace.sessions:
        sizer.prime(session)
        total = sizer.system(session) + sizer.tools(session)
        index = 0
        for message in session.messages:
            if message.role == "assistant":
                index += 1
                if message.usage is not None and message.usage.input_tokens > 0:
                    yield session, index, total, message.usage.input_tokens
            total += sizer.message(message)


def _theil_sen(used: list[Point], overhead: float) -> float | None:
    slopes = []
    by_group: dict[str, list[Point]] = {}
    for p in used:
        by_group.setdefault(p.group, []).append(p)
    for group in by_group.values():
        step = max(1, math.isqrt(len(group) * len(group) // 20000 + 1))
        for i in range(0, len(group), step):
            for j in range(i + 1, len(group), step):
                a, b = group[i], group[j]
                dx = (b.text_tokens + overhead * b.messages) - (a.text_tokens + overhead * a.messages)
                if dx > 0:
                    slopes.append((b.recorded_tokens - a.recorded_tokens) / dx)
    return median(slopes) if slopes else None


def calibrated(trace: Trace, tokenizer: str = "o200k_base", framing: Framing | None = None,
               setup: Setup | None = None) -> tuple[Trace, Framing | None, Setup, Calibration | None]:
    """Everything a replay needs to run calibrated: (trace, framing, setup, the fit or None).

    For `--calibrate` on replay/compare: `trace, framing, setup, cal = calibrated(trace, tokenizer,
    framing, setup)`, then replay with them (unchanged when the trace has too few recorded requests).
    """
    cal = fit(trace, tokenizer)
    if cal is None:
        return trace, framing, setup or Setup(), None
    return cal.apply(trace), cal.framing(framing), cal.setup(setup), cal
