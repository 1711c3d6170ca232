"""Chart: cumulative cost per policy over the session, with and without prompt caching.

Solid: with caching as the trace's real gaps allow (`cost_usd`); dashed: the
same requests with no cache at all (`cost_nocache_usd`). A policy's
summarising calls count at the request that made them. The legend carries the
totals, so the chart reads without hovering.
"""

from __future__ import annotations

from decimal import Decimal

from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, money, short
from ctxsim.run import RunResult


def cumulative(rows: list, key: str) -> tuple[list[int], list[Decimal]]:
    """Running total of `key` by request number (rows of one request summed)."""
    xs: list[int] = []
    ys: list[Decimal] = []
    total = Decimal(0)
    for row in rows:
        total += getattr(row, key)
        if xs and xs[-1] == row.request:
            ys[-1] = total
        else:
            xs.append(row.request)
            ys.append(total)
    return xs, ys


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.lines import Line2D

    names = labels(result)
    with plot.style():
        fig, (ax,) = plot.figure(6.0)
        handles: list = []
        texts: list[str] = []
        for i, run in enumerate(result.runs):
            colour = plot.colour(i)
            xs, cached = cumulative(run.rows, "cost_usd")
            _, plain = cumulative(run.rows, "cost_nocache_usd")
            ax.plot(xs, [float(v) for v in plain], color=colour, linestyle=(0, (4, 2)), linewidth=1.6, zorder=2)
            ax.plot(xs, [float(v) for v in cached], color=colour, linestyle="-", linewidth=2.2, zorder=3)
            handles.append(Line2D([], [], color=colour, linewidth=2.2))
            texts.append(f"{short(names[i], 56)}: {money(run.totals.cost_usd)} cached, "
                         f"{money(run.totals.cost_nocache_usd)} without cache")
        handles += [Line2D([], [], color="#444444", linewidth=2.2),
                    Line2D([], [], color="#444444", linestyle=(0, (4, 2)), linewidth=1.6)]
        texts += ["solid: with prompt caching (real gaps between requests)", "dashed: without caching"]
        ax.set_ylim(bottom=0)
        plot.request_axis(ax, result.runs)
        ax.set_ylabel("cumulative cost (USD)")
        plot.dollars(ax.yaxis)
        plot.titles(fig, "Cumulative cost per policy", result)
        plot.legend_below(fig, handles, texts, 1 if len(result.runs) > 1 else 2)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("cost", ("png", "svg"), "Cumulative cost, with and without cache", render, __name__,
                    chart=True))
