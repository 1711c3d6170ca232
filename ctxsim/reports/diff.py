"""Diff of two runs (e.g. main's policy config against a pull request's), for `ctxsim diff`.

Runs are paired by policy label, then by policy name in order, and a last unpaired run on each
side with each other; every metric is
compared as a relative change new/base - 1. A gated metric regresses when it
gets worse by more than the threshold, direction-aware: cost, peak context,
tokens, rewrites and losses are worse up; hit rates are worse down. This is not
a single-run report, so it does not register.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ctxsim.errors import CtxsimError, did_you_mean
from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.run import RunResult
from ctxsim.reports._common import change, label, money, pct, signed_pct


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    field: str  # on Totals
    higher_is_worse: bool
    fmt: Callable[[Any], str]


def _int(value: Any) -> str:
    return f"{int(value):,}"


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("cost", "cost (cached, real gaps)", "cost_usd", True, money),
    Metric("cost_warm", "cost (cache never cold)", "cost_warm_usd", True, money),
    Metric("cost_nocache", "cost without caching", "cost_nocache_usd", True, money),
    Metric("peak", "peak context (tokens)", "peak_context_tokens", True, _int),
    Metric("p95", "p95 context (tokens)", "p95_context_tokens", True, _int),
    Metric("hit_rate", "cache hit rate", "hit_rate", False, pct),
    Metric("warm_hit_rate", "hit rate, cache never cold", "warm_hit_rate", False, pct),
    Metric("input", "input tokens, all requests", "input_tokens", True, _int),
    Metric("fresh", "tokens prefilled fresh", "fresh_prefill_tokens", True, _int),
    Metric("output", "output tokens", "output_tokens", True, _int),
    Metric("rewrites", "rewrites (prefix broken)", "rewrites", True, _int),
    Metric("summarize_cost", "cost of summarising calls", "summarize_cost_usd", True, money),
    Metric("recall_misses", "recall misses", "recall_misses", True, _int),
    Metric("probes_lost", "probes lost", "probes_lost", True, _int),
]}
HEADLINE = ("cost", "cost_nocache", "peak", "hit_rate")
COMPARED_MANIFEST = (("trace", "digest", "trace"), ("provider", None, "provider"), ("model", None, "model"),
                     ("window", None, "window"), ("tokenizer", None, "tokenizer"),
                     ("cache_model", None, "cache model"), ("prices", None, "price data"),
                     ("ctxsim_version", None, "ctxsim version"))


def parse_threshold(text: str) -> Decimal:
    """`5%` or `5` -> 0.05 (a percentage either way)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%?\s*", text or "")
    if not match:
        raise CtxsimError(f"--fail-above: expected a percentage such as 5% or 2.5, got {text!r}")
    try:
        return Decimal(match.group(1)) / 100
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise CtxsimError(f"--fail-above: not a number: {text!r}") from None


def parse_metrics(values: Sequence[str]) -> tuple[str, ...]:
    names: list[str] = []
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if not name:
                continue
            if name not in METRICS:
                raise CtxsimError(f"unknown metric {name!r}{did_you_mean(name, METRICS)}; known: "
                                  f"{', '.join(METRICS)}")
            if name not in names:
                names.append(name)
    return tuple(names) or ("cost",)


@dataclass
class Change:
    metric: Metric
    base: Any
    new: Any
    rel: Decimal | None  # None: base 0, new not
    gated: bool
    regressed: bool

    @property
    def worse(self) -> bool:
        if self.base == self.new:
            return False
        return bool(self.new > self.base) == self.metric.higher_is_worse

    @property
    def status(self) -> str:
        if self.regressed:
            return "regression"
        if self.base == self.new:
            return "same"
        return "worse" if self.worse else "better"


@dataclass
class Pair:
    base_label: str | None
    new_label: str | None
    changes: list[Change] = field(default_factory=list)
    params: list[tuple[str, Any, Any]] = field(default_factory=list)  # (key, base, new) that differ

    @property
    def title(self) -> str:
        if self.base_label == self.new_label or self.new_label is None:
            return self.base_label or "?"
        if self.base_label is None:
            return self.new_label
        return f"{self.base_label} → {self.new_label}"


@dataclass
class Diff:
    pairs: list[Pair]
    gated: tuple[str, ...]
    threshold: Decimal | None
    warnings: list[str]
    base_manifest: dict[str, Any]
    new_manifest: dict[str, Any]

    @property
    def regressions(self) -> list[tuple[Pair, Change]]:
        return [(p, c) for p in self.pairs for c in p.changes if c.regressed]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def headline(self) -> str:
        gated = ", ".join(self.gated)
        if self.threshold is None:
            return f"no gate (pass --fail-above to fail on a regression of {gated})"
        limit = percent_text(self.threshold)
        if self.failed:
            worst = sorted({c.metric.name for _, c in self.regressions}, key=list(METRICS).index)
            return f"{', '.join(worst)} regressed by more than {limit}"
        return f"no regression above {limit} ({gated})"


def _value(run: PolicyRun, metric: Metric) -> Any:
    return getattr(run.totals, metric.field, None)


def pair_runs(base: RunResult, new: RunResult) -> list[tuple[int | None, int | None]]:
    left = list(range(len(base.runs)))
    right = list(range(len(new.runs)))
    pairs: list[tuple[int | None, int | None]] = []
    for key in (label, lambda run: run.policy["name"]):
        for i in list(left):
            j = next((j for j in right if key(new.runs[j]) == key(base.runs[i])), None)
            if j is not None:
                pairs.append((i, j))
                left.remove(i)
                right.remove(j)
    if len(left) == 1 and len(right) == 1:  # one policy each side (main's config vs a PR's): compare them
        pairs.append((left.pop(), right.pop()))
    pairs += [(i, None) for i in left]
    pairs.sort(key=lambda p: p[0] if p[0] is not None else -1)
    pairs += [(None, j) for j in right]
    return pairs


def _params_changes(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    missing = object()
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, missing), b.get(key, missing)
        if x != y:
            out.append((key, None if x is missing else x, None if y is missing else y))
    return out


def diff(base: RunResult, new: RunResult, metrics: Sequence[str] = ("cost",),
         threshold: Decimal | None = None) -> Diff:
    gated = parse_metrics(metrics)
    pairs: list[Pair] = []
    for i, j in pair_runs(base, new):
        a = base.runs[i] if i is not None else None
        b = new.runs[j] if j is not None else None
        pair = Pair(label(a) if a else None, label(b) if b else None)
        if a is not None and b is not None:
            pair.params = _params_changes(a.policy.get("params") or {}, b.policy.get("params") or {})
            for name, metric in METRICS.items():
                x, y = _value(a, metric), _value(b, metric)
                if x is None or y is None:
                    continue
                rel = change(x, y)
                is_gated = name in gated and threshold is not None
                c = Change(metric, x, y, rel, is_gated, False)
                if is_gated and threshold is not None and c.worse:
                    c.regressed = rel is None or abs(rel) > threshold
                pair.changes.append(c)
        pairs.append(pair)
    warnings = manifest_warnings(base.manifest, new.manifest)
    if any(p.changes for p in pairs):
        missing = [m for m in gated if not any(c.metric.name == m for p in pairs for c in p.changes)]
        if missing:
            raise CtxsimError(f"metric {', '.join(missing)} is not recorded in both runs")
    else:
        warnings.append("no policy is in both runs: nothing to compare")
    return Diff(pairs, gated, threshold, warnings, base.manifest, new.manifest)


def manifest_warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key, sub, text in COMPARED_MANIFEST:
        x, y = a.get(key), b.get(key)
        if sub is not None:
            x = (x or {}).get(sub) if isinstance(x, dict) else x
            y = (y or {}).get(sub) if isinstance(y, dict) else y
        if x != y:
            if key == "trace":
                out.append("the two runs replay different traces (digests differ): not like for like")
            else:
                out.append(f"{text} differs: {_short(x)} → {_short(y)}")
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
    return text if len(text) <= 80 else text[:79] + "…"


# ---------------------------------------------------------------- output
SYMBOL = {"regression": "❌", "worse": "⚠️", "better": "✅", "same": ""}


def percent_text(value: Decimal) -> str:
    text = f"{(value * 100).normalize():f}"
    return text + "%"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _policy_md(pair: Pair) -> str:
    if pair.base_label is not None and pair.new_label is not None and pair.base_label != pair.new_label:
        return f"{_code(pair.new_label)} (was {_code(pair.base_label)})"
    return _code(pair.title)


def _change_md(c: Change) -> str:
    mark = SYMBOL[c.status]
    return (f"{c.metric.fmt(c.base)} → {c.metric.fmt(c.new)} ({signed_pct(c.rel)})" + (f" {mark}" if mark else ""))


def _shown(d: Diff) -> list[str]:
    present = {c.metric.name for p in d.pairs for c in p.changes}
    return [m for m in METRICS if (m in d.gated or m in HEADLINE) and m in present]


def markdown(d: Diff) -> str:
    icon = "" if d.threshold is None else ("❌ " if d.failed else "✅ ")
    lines = [f"### ctxsim diff: {icon}{d.headline()}", ""]
    for w in d.warnings:
        lines.append(f"> ⚠️ {_cell(w)}")
    if d.warnings:
        lines.append("")
    shown = _shown(d)
    titles = [f"**{METRICS[m].title}** (gate)" if m in d.gated and d.threshold is not None else METRICS[m].title
              for m in shown]
    lines += ["| policy | " + " | ".join(titles) + " |", "|:--|" + "--:|" * len(shown)]
    for pair in d.pairs:
        if pair.changes:
            by_name = {c.metric.name: c for c in pair.changes}
            cells = [_change_md(by_name[m]) if m in by_name else "—" for m in shown]
        else:
            cells = [f"only in the {'base' if pair.new_label is None else 'new'} run"] + [""] * (len(shown) - 1)
        lines.append("| " + " | ".join(_cell(c) for c in [_policy_md(pair), *cells]) + " |")
    legend = "❌ regression past the gate · ⚠️ worse · ✅ better · change = new / base − 1"
    if d.threshold is not None:
        legend = (f"Gate: {', '.join(d.gated)} worse by more than {percent_text(d.threshold)} fails (cost, "
                  "context and tokens are worse up, hit rates worse down). " + legend)
    lines += ["", f"<sub>{legend}</sub>"]
    params = [p for p in d.pairs if p.params]
    if params:
        lines += ["", "<details><summary>Policy parameter changes</summary>", ""]
        for p in params:
            changes = ", ".join(f"{k}: {_short(x)} → {_short(y)}" for k, x, y in p.params)
            lines.append(f"- {_policy_md(p)}: {_cell(changes)}")
        lines += ["", "</details>"]
    lines += ["", "<details><summary>All metrics</summary>", "",
              "| policy | metric | base | new | change | |", "|:--|:--|--:|--:|--:|:-:|"]
    for pair in d.pairs:
        for c in pair.changes:
            metric = f"**{c.metric.title}**" if c.gated else c.metric.title
            lines.append("| " + " | ".join(_cell(x) for x in [
                _code(pair.new_label or pair.title), metric, c.metric.fmt(c.base), c.metric.fmt(c.new),
                signed_pct(c.rel), SYMBOL[c.status]]) + " |")
    lines += ["", "</details>", "", "<sub>" + _cell(_side("base", d.base_manifest)) + "<br>"
              + _cell(_side("new", d.new_manifest)) + "<br>open-loop replay: the agent's recorded outputs "
              "are replayed unchanged whatever the policy does</sub>"]
    return "\n".join(lines) + "\n"


def _side(name: str, m: dict[str, Any]) -> str:
    trace = m.get("trace") or {}
    return (f"{name}: trace {trace.get('name', '?')} {str(trace.get('digest', ''))[:19]} · "
            f"{m.get('provider', '?')} {m.get('model', '?')} · tokenizer {m.get('tokenizer', '?')} · "
            f"prices {m.get('prices', '?')} · ctxsim {m.get('ctxsim_version', '?')}")


def table(d: Diff) -> Any:
    from ctxsim.reports._common import short
    from ctxsim.reports._terminal import TableData

    rows = []
    names = _shown(d)
    for pair in d.pairs:
        title = short(pair.new_label or pair.title, 40)
        if not pair.changes:
            rows.append([title, f"only in the {'base' if pair.new_label is None else 'new'} run", "", "", "", ""])
            continue
        if pair.base_label is not None and pair.new_label is not None and pair.base_label != pair.new_label:
            rows.append([title, "(was " + short(pair.base_label, 40) + ")", "", "", "", ""])
        for c in pair.changes:
            if c.metric.name in names:
                rows.append([title, c.metric.title + (" (gated)" if c.gated else ""), c.metric.fmt(c.base),
                             c.metric.fmt(c.new), signed_pct(c.rel), "" if c.status == "same" else c.status])
    return TableData(f"ctxsim diff: {d.headline()}", ["policy", "metric", "base", "new", "change", "status"],
                     rows, left=2)


def to_json(d: Diff) -> dict[str, Any]:
    def num(value: Any) -> Any:
        return str(value) if isinstance(value, Decimal) else value

    return {
        "failed": d.failed,
        "headline": d.headline(),
        "gated": list(d.gated),
        "threshold": None if d.threshold is None else str(d.threshold),
        "warnings": d.warnings,
        "pairs": [{
            "base": p.base_label, "new": p.new_label,
            "params": [{"key": k, "base": x, "new": y} for k, x, y in p.params],
            "changes": [{"metric": c.metric.name, "base": num(c.base), "new": num(c.new),
                         "change": None if c.rel is None else str(round(c.rel, 6)), "status": c.status,
                         "gated": c.gated} for c in p.changes],
        } for p in d.pairs],
    }
