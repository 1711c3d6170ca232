"""Chart: cumulative cost per policy over the session, with and without prompt caching.

Solid: with caching as the trace's real gaps allow (`cost_usd`); dashed: the
same requests with no cache at all (`cost_nocache_usd`). A policy's
summarising calls count at the request that made them. The legend carries the
totals, so the chart reads without hovering. Runs with the same costs request
by request are one line (their names listed); each line has its own colour.
When the dearest curve ends more than LOG_ABOVE times above the cheapest total,
the axis is logarithmic (a linear one would flatten the cheap policies).
"""

from __future__ import annotations

from decimal import Decimal

from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, money, short

LOG_ABOVE = 30  # a log axis when the dearest curve ends this many times above the cheapest total


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
    curves = []
    for run in result.runs:
        xs, cached = cumulative(run.rows, "cost_usd")
        _, plain = cumulative(run.rows, "cost_nocache_usd")
        curves.append((tuple(xs), tuple(cached), tuple(plain)))
    groups = plot.merge_identical(names, curves)
    colours = plot.palette(len(groups))
    with plot.style():
        fig, (ax,) = plot.figure(4.6 + 0.2 * (len(groups) + 2))
        handles: list = []
        texts: list[str] = []
        for g, (members, name) in enumerate(groups):
            at, cached_usd, plain_usd = curves[members[0]]
            tx, (tplain, tcached) = plot.thin(at, [float(v) for v in plain_usd], [float(v) for v in cached_usd])
            ax.plot(tx, tplain, color=colours[g], linestyle=(0, (4, 2)), linewidth=1.4, zorder=2)
            ax.plot(tx, tcached, color=colours[g], linestyle="-", linewidth=2.2, zorder=3)
            handles.append(Line2D([], [], color=colours[g], linewidth=2.2))
            totals = result.runs[members[0]].totals
            texts.append(f"{short(name, 70)}: {money(totals.cost_usd)} cached, "
                         f"{money(totals.cost_nocache_usd)} without cache")
        handles += [Line2D([], [], color="#444444", linewidth=2.2),
                    Line2D([], [], color="#444444", linestyle=(0, (4, 2)), linewidth=1.4)]
        texts += ["solid: with prompt caching (real gaps between requests)", "dashed: without caching"]
        finals = [float(result.runs[m[0]].totals.cost_usd) for m, _ in groups]
        highest = max(float(result.runs[m[0]].totals.cost_nocache_usd) for m, _ in groups)
        low = min((f for f in finals if f > 0), default=0)
        log = low > 0 and highest / low > LOG_ABOVE  # a linear axis would flatten the cheap policies
        plot.request_axis(ax, result.runs)
        if log:
            from matplotlib.ticker import FuncFormatter, LogLocator

            ax.set_yscale("log")
            ax.set_ylim(low / 30, highest * 1.5)
            ax.yaxis.set_major_locator(LogLocator(base=10))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"${v:,.0f}" if v >= 1 else f"${v:g}"))
            ax.set_ylabel("cumulative cost (USD, log scale)")
        else:
            ax.set_ylim(bottom=0)
            ax.set_ylabel("cumulative cost (USD)")
            plot.dollars(ax.yaxis)
        plot.titles(fig, "Cumulative cost per policy", result)
        plot.legend_below(fig, handles, texts, 1 if len(groups) > 1 else 2, fontsize=8.5)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("cost", ("png", "svg"), "Cumulative cost, with and without cache", render, __name__,
                    chart=True))
