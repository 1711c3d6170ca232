"""Chart: policy comparison, cost against loss, with the Pareto front highlighted.

Loss is what a policy removed that the agent later needed: recall misses when
every run was loss-metered (`run.loss`, ctxsim.loss), and then the cost axis is
the cost with re-fetches (the open-loop cost plus re-reading what was missed);
else probes lost; else, for an artefact written before loss metering, peak
context as a stand-in (lower is safer against overflow, and says nothing about
what was lost). The oracle is drawn as the bound (a diamond), never starred;
each point says whether its summaries are an LLM's (paid) or extractive (free).
A policy is on the front when no other policy is at least as good on both axes
and better on one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, money, short, starred_run, winner

if TYPE_CHECKING:  # matplotlib itself is imported when a chart is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LOSSES = [  # (totals field, axis label)
    ("recall_misses", "recall misses (count)"),
    ("probes_lost", "probes lost (count)"),
]
STAND_IN = ("peak_context_tokens", "peak context (tokens): stand-in for loss until recall misses are measured")


def loss_metric(result: RunResult) -> tuple[str, str, Callable[[PolicyRun], float]]:
    if result.runs and all(getattr(run, "loss", None) is not None for run in result.runs):
        return "recall_misses", LOSSES[0][1], lambda run: float(run.loss.recall_misses)
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


OFFSETS = [(7, 7), (7, -14), (-16, 7), (-16, -14), (12, -3), (-22, -3), (0, 16), (0, -22), (18, 14),
           (-26, 14), (18, -22), (-26, -22), (30, 0), (-36, 0), (0, 28), (0, -34)]  # points, tried in turn


def place_labels(ax: Axes, fig: Figure, anchors: list[tuple[float, float]], texts: list[str]) -> list[tuple[int, int]]:
    """An offset per label so that no two labels, and no label and point, overlap (greedy, in order)."""
    fig.canvas.draw()  # the limits and the transform are final now
    scale = fig.dpi / 72
    placed: list[tuple[float, float, float, float]] = []
    points = [ax.transData.transform(a) for a in anchors]
    for px, py in points:
        placed.append((px - 6 * scale, py - 6 * scale, px + 6 * scale, py + 6 * scale))
    out = []
    for (px, py), text in zip(points, texts, strict=True):
        w, h = (6.5 * len(text) + 2) * scale, 12 * scale
        choice = OFFSETS[0]
        for dx, dy in OFFSETS:
            box = (px + dx * scale, py + dy * scale, px + dx * scale + w, py + dy * scale + h)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                choice = (dx, dy)
                break
        dx, dy = choice
        placed.append((px + dx * scale, py + dy * scale, px + dx * scale + w, py + dy * scale + h))
        out.append(choice)
    return out


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.lines import Line2D

    key, axis_label, loss = loss_metric(result)
    names = labels(result)
    from ctxsim.loss.verdict import cost_with_refetch, is_oracle
    from ctxsim.reports._loss import summarized, summarizers

    metered = key == "recall_misses" and all(run.loss is not None for run in result.runs)
    points = [(loss(run), cost_with_refetch(run) if metered else run.totals.cost_usd) for run in result.runs]
    front = pareto_front(points)
    counts = key != STAND_IN[0]
    groups = plot.merge_identical(names, points)  # runs at the same point: one point, one number
    colours = plot.palette(len(groups))
    best = winner(result)
    starred_i = starred_run(result)
    with plot.style():
        fig, (ax,) = plot.figure(4.4 + 0.21 * (len(groups) + 1))
        ordered = sorted(front, key=lambda i: (points[i][0], points[i][1]))
        if len(ordered) > 1:
            ax.plot([points[i][0] for i in ordered], [float(points[i][1]) for i in ordered], color="#888888",
                    linewidth=5, alpha=0.35, solid_capstyle="round", zorder=1)
        handles: list = []
        texts: list[str] = []
        for g, (members, name) in enumerate(groups):
            x, y = points[members[0]]
            on = members[0] in front
            star = starred_i in members and len(result.runs) > 1 and not is_oracle(result.runs[best])
            bound = any(is_oracle(result.runs[m]) for m in members)
            shape = "*" if star else ("D" if bound else "o")
            ax.scatter([x], [float(y)], s=150 if star else (110 if on else 80), marker=shape,
                       zorder=3, linewidths=2 if not star else 1, color=colours[g] if on else "#ffffff",
                       edgecolors=colours[g] if not star else "#000000")
            handles.append(Line2D([], [], marker=shape, linestyle="none", markersize=11 if star else 9,
                                  markeredgewidth=1 if star else 2, markerfacecolor=colours[g] if on else "#ffffff",
                                  markeredgecolor="#000000" if star else colours[g]))
            value = f"{x:,.0f}" if counts or x != int(x) else f"{int(x):,}"
            run = result.runs[members[0]]
            kinds = summarizers(run.policy) if summarized(run) else set()
            summary = ("  [LLM summary, paid]" if "llm" in kinds else
                       "  [extractive summary, free]" if "extractive" in kinds else "")
            texts.append(f"{g + 1}  {short(name, 64)}: {money(y)}, {key.replace('_', ' ')} {value}" + summary
                         + ("  (on the Pareto front)" if on else "") + ("  (the bound)" if bound else "")
                         + (("  ★ starred" if metered else "  ★ cheapest") if star else ""))
        handles.append(Line2D([], [], color="#888888", linewidth=5, alpha=0.35))
        texts.append("Pareto front: filled points; hollow points are beaten on both axes")
        xmax = max((p[0] for p in points), default=1) or 1
        ymax = float(max((p[1] for p in points), default=1)) or 1
        ax.set_xlim(0, xmax * 1.3)
        ax.set_ylim(0, ymax * 1.2)
        ax.set_xlabel(axis_label + "  →  worse")
        ax.set_ylabel(("cost with re-fetches (USD)" if metered else "cost with caching (USD)") + "  →  worse")
        plot.thousands(ax.xaxis)
        plot.dollars(ax.yaxis)
        plot.titles(fig, "Policy comparison: cost against loss", result)
        plot.legend_below(fig, handles, texts, 1, fontsize=8.5)
        anchors = [(points[m[0]][0], float(points[m[0]][1])) for m, _ in groups]
        numbers = [str(g + 1) for g in range(len(groups))]
        for g, ((dx, dy), anchor) in enumerate(zip(place_labels(ax, fig, anchors, numbers), anchors, strict=True)):
            ax.annotate(numbers[g], anchor, xytext=(dx, dy), textcoords="offset points", fontsize=10,
                        fontweight="bold", color=colours[g], zorder=5,
                        arrowprops={"arrowstyle": "-", "color": colours[g], "linewidth": 0.6}
                        if abs(dx) > 12 or abs(dy) > 15 else None)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("pareto", ("png", "svg"), "Cost against loss, Pareto front", render, __name__, chart=True))
