"""Mermaid charts (`xychart-beta`) that GitHub draws inside a PR comment or a Markdown file, no hosting.

Numbers and policy labels only, never trace text. Labels are quoted with a small safe alphabet (anything
else becomes `_`), lines are sampled to at most `MAX_POINTS` requests so a block stays small, and the
colours come from a fixed palette named in a legend under each chart (xychart-beta draws no legend).
The same run gives the same bytes.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal

from ctxsim.replay.engine import PolicyRun
from ctxsim.reports._common import request_rows

MAX_POINTS = 60
MAX_LINES = 8
PALETTE = (("#1f77b4", "blue"), ("#ff7f0e", "orange"), ("#2ca02c", "green"), ("#d62728", "red"),
           ("#9467bd", "purple"), ("#8c564b", "brown"), ("#e377c2", "pink"), ("#7f7f7f", "grey"))
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,:=+\-/()'#@→]")  # no `%`: `%%` starts a Mermaid comment


def quote(text: str) -> str:
    """A label in double quotes that cannot end the string or break the block."""
    return '"' + _UNSAFE.sub("_", text.replace('"', "'"))[:60] + '"'


def sample(count: int, most: int = MAX_POINTS) -> list[int]:
    """At most `most` indices into a series of `count`, evenly spaced, the first and the last kept."""
    if count <= most:
        return list(range(count))
    return [i * (count - 1) // (most - 1) for i in range(most)]


def usd(value: Decimal) -> str:
    return str(Decimal(value).quantize(Decimal("0.000001"), ROUND_HALF_EVEN))


def _init(colours: int) -> str:
    palette = ", ".join(c for c, _ in PALETTE[:max(colours, 1)])
    return '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%'


def _legend(names: Sequence[str], what: str) -> str:
    parts = [f"{PALETTE[i][1]}: `{n.replace('`', chr(39))}`" for i, n in enumerate(names)]
    return f"<sub>{what}: " + " · ".join(parts) + "</sub>"


def context_chart(series: Sequence[tuple[str, PolicyRun]], title: str = "Context per request") -> list[str]:
    """A line per run (at most MAX_LINES) of the context sent at each sampled request, in tokens. A run
    whose trace ended earlier than another's is at 0 past its last request."""
    dropped = max(len(series) - MAX_LINES, 0)
    series = list(series)[:MAX_LINES]
    points = [{r.request: r.context_tokens for r in request_rows(run)} for _, run in series]
    requests = sorted(set().union(*points)) if points else []
    if not requests:
        return []
    xs = [requests[i] for i in sample(len(requests))]
    lines = []
    for row in points:
        known = sorted(row)
        values = []
        for x in xs:
            at = bisect_right(known, x)  # the run's last request at or before x
            values.append(row[known[at - 1]] if at and x <= known[-1] else 0)
        lines.append(values)
    top = max(max(v) for v in lines) or 1
    step = "" if len(xs) == len(requests) else f", every {len(requests) // len(xs)}th request or so"
    step += f"; {dropped} more not drawn" if dropped else ""
    out = ["```mermaid", _init(len(series)), "xychart-beta", f"    title {quote(title)}",
           "    x-axis " + quote("request") + " [" + ", ".join(str(x) for x in xs) + "]",
           f"    y-axis {quote('context (tokens)')} 0 --> {top}"]
    out += [f"    line {quote(name)} [" + ", ".join(str(v) for v in values) + "]"
            for (name, _), values in zip(series, lines, strict=True)]
    out += ["```", "", _legend([n for n, _ in series], f"{len(xs)} of {len(requests)} requests{step}")]
    return out


def cost_chart(bars: Sequence[tuple[str, Decimal]], title: str = "Cost per policy (USD, cached)") -> list[str]:
    """One bar per label, in USD."""
    if not bars:
        return []
    top = max(Decimal(v) for _, v in bars)
    top_text = usd(top) if top > 0 else "1"
    out = ["```mermaid", _init(1), "xychart-beta", f"    title {quote(title)}",
           "    x-axis [" + ", ".join(quote(n) for n, _ in bars) + "]",
           f"    y-axis {quote('cost (USD)')} 0 --> {top_text}",
           "    bar [" + ", ".join(usd(v) for _, v in bars) + "]", "```"]
    return out
