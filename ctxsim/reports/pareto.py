"""Chart: policy comparison, cost against loss, with the Pareto front highlighted.

Loss is what a policy risks by removing context: recall misses when the run
has them (`totals.recall_misses`), else probes lost (`totals.probes_lost`),
else, until those are measured, peak context as a stand-in (lower is safer
against overflow, and says nothing about what was lost). A policy is on the
front when no other policy is at least as good on both axes and better on one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from ctxsim.engine import PolicyRun
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, money, short
from ctxsim.run import RunResult

LOSSES = [  # (totals field, axis label)
    ("recall_misses", "recall misses (count)"),
    ("probes_lost", "probes lost (count)"),
]
STAND_IN = ("peak_context_tokens", "peak context (tokens): stand-in for loss until recall misses are measured")


def loss_metric(result: RunResult) -> tuple[str, str, Callable[[PolicyRun], float]]:
    for key, text in LOSSES:
        if result.runs and all(getattr(run.totals, key, None) is not None for run in result.runs):
            return key, text, lambda run, key=key: float(getattr(run.totals, key))
    key, text = STAND_IN
    return key, text, lambda run: float(run.totals.peak_context_tokens)


def pareto_front(points: Sequence[tuple[float, Decimal | float]]) -> list[int]:
    """Indices of the points no other point dominates (lower is better on both axes)."""
    front = []
    for i, (x, y) in enumerate(points):
        dominated = any((x2 <= x and y2 <= y) and (x2 < x or y2 < y)
                        for j, (x2, y2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return front


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.lines import Line2D

    key, axis_label, loss = loss_metric(result)
    names = labels(result)
    points = [(loss(run), run.totals.cost_usd) for run in result.runs]
    front = pareto_front(points)
    counts = key != STAND_IN[0]
    with plot.style():
        fig, (ax,) = plot.figure(6.0)
        ordered = sorted(front, key=lambda i: (points[i][0], points[i][1]))
        if len(ordered) > 1:
            ax.plot([points[i][0] for i in ordered], [float(points[i][1]) for i in ordered], color="#888888",
                    linewidth=5, alpha=0.35, solid_capstyle="round", zorder=1)
        handles: list = []
        texts: list[str] = []
        for i, (x, y) in enumerate(points):
            on = i in front
            ax.scatter([x], [float(y)], s=110 if on else 80, marker="o", zorder=3, linewidths=2,
                       color=plot.colour(i) if on else "#ffffff", edgecolors=plot.colour(i))
            ax.annotate(str(i + 1), (x, float(y)), xytext=(7, 7), textcoords="offset points",
                        fontsize=10, fontweight="bold", color=plot.colour(i))
            handles.append(Line2D([], [], marker="o", linestyle="none", markersize=9, markeredgewidth=2,
                                  markerfacecolor=plot.colour(i) if on else "#ffffff",
                                  markeredgecolor=plot.colour(i)))
            value = f"{x:,.0f}" if counts or x != int(x) else f"{int(x):,}"
            texts.append(f"{i + 1}  {short(names[i], 56)}: {money(y)}, {key.replace('_', ' ')} {value}"
                         + ("  (on the Pareto front)" if on else ""))
        handles.append(Line2D([], [], color="#888888", linewidth=5, alpha=0.35))
        texts.append("Pareto front: filled points; hollow points are beaten on both axes")
        xmax = max((p[0] for p in points), default=1) or 1
        ymax = float(max((p[1] for p in points), default=1)) or 1
        ax.set_xlim(0, xmax * 1.3)
        ax.set_ylim(0, ymax * 1.2)
        ax.set_xlabel(axis_label + "  →  worse")
        ax.set_ylabel("cost with caching (USD)  →  worse")
        plot.thousands(ax.xaxis)
        plot.dollars(ax.yaxis)
        plot.titles(fig, "Policy comparison: cost against loss", result)
        plot.legend_below(fig, handles, texts, 1)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("pareto", ("png", "svg"), "Cost against loss, Pareto front", render, __name__, chart=True))
