"""Chart: per request, stacked: cache read / cache write / uncached / output tokens.

One panel per policy, all on the same scale. The prompt splits into what was
read from the cache, what was written to it (5-minute, and 1-hour when any),
and what was neither; the output sits on top. A policy's summarising calls
are added to the request that made them.
"""

from __future__ import annotations

from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, short
from ctxsim.run import RunResult

PARTS = [  # (row field, legend text, colour)
    ("cache_read_tokens", "cache read", "#0072B2"),
    ("cache_write_tokens", "cache write (5 min)", "#E69F00"),
    ("cache_write_1h_tokens", "cache write (1 h)", "#D55E00"),
    ("uncached_tokens", "uncached input", "#CC79A7"),
    ("output_tokens", "output", "#009E73"),
]
MAX_PANELS = 8


def per_request(rows: list) -> tuple[list[int], dict[str, list[int]]]:
    xs: list[int] = []
    out: dict[str, list[int]] = {key: [] for key, _, _ in PARTS}
    for row in rows:
        if not xs or xs[-1] != row.request:
            xs.append(row.request)
            for key in out:
                out[key].append(0)
        for key in out:
            out[key][-1] += getattr(row, key)
    return xs, out


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.patches import Patch

    runs = list(zip(labels(result), result.runs, strict=True))[:MAX_PANELS]
    one_hour = any(r.cache_write_1h_tokens for _, run in runs for r in run.rows)
    parts = [p for p in PARTS if one_hour or p[0] != "cache_write_1h_tokens"]
    with plot.style():
        fig, axes = plot.figure(1.5 + 2.6 * len(runs), nrows=len(runs))
        top = 1
        for ax, (name, run) in zip(axes, runs, strict=True):
            xs, data = per_request(run.rows)
            base = [0] * len(xs)
            for key, _, colour in parts:
                upper = [b + v for b, v in zip(base, data[key], strict=True)]
                ax.fill_between(xs, base, upper, step="mid", color=colour, linewidth=0)
                base = upper
            top = max(top, *base) if base else top
            ax.set_title(f"{short(name, 70)}: {run.totals.input_tokens:,} input tokens, "
                         f"hit rate {run.totals.hit_rate * 100:.1f}%", fontsize=10, loc="left", fontweight="bold")
            ax.set_ylabel("tokens")
            plot.thousands(ax.yaxis)
        for ax in axes:
            ax.set_ylim(0, top * 1.05)
        plot.request_axis(axes[-1], [run for _, run in runs])
        fig.suptitle("Tokens per request: cache read, cache write, uncached, output", fontsize=13,
                     fontweight="bold", x=0.01, ha="left")
        note = "" if len(result.runs) <= MAX_PANELS else f" (first {MAX_PANELS} of {len(result.runs)} policies)"
        plot.legend_below(fig, [Patch(color=c) for _, _, c in parts], [t for _, t, _ in parts] if not note else
                          [t for _, t, _ in parts[:-1]] + [parts[-1][1] + note], len(parts))
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("tokens", ("png", "svg"), "Tokens per request (cache read / write / uncached / output)",
                    render, __name__, chart=True))
