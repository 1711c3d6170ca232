"""Chart: context size per request, one line per policy.

Draws the window, the window minus the output reserve (the band between is the
reserve), each policy's token thresholds (its trigger) and marks the policy
events on its line: clears, compactions, truncations, threshold passes and
overflows. Seed 000's naive/managed table, as a picture.
"""

from __future__ import annotations

from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, request_rows, short, thresholds, window_of
from ctxsim.run import RunResult

MARKERS = {  # event kind -> (marker, legend text)
    "clear": ("v", "clear"),
    "compact": ("s", "compaction"),
    "compaction": ("s", "compaction"),
    "summarize": ("s", "compaction"),
    "truncate": ("D", "truncation"),
    "drop": ("<", "drop"),
    "threshold": ("^", "passes window − reserve"),
    "overflow": ("X", "overflow (passes the window)"),
}
OTHER = ("o", "other event")


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    m = result.manifest
    reserve = int(m.get("output_reserve") or 0)
    names = labels(result)
    with plot.style():
        fig, (ax,) = plot.figure(6.2)
        handles: list = []
        texts: list[str] = []
        peak = 1
        for i, run in enumerate(result.runs):
            rows = request_rows(run)
            xs = [r.request for r in rows]
            ys = [r.context_tokens for r in rows]
            peak = max([peak, *ys])
            (line,) = ax.plot(xs, ys, color=plot.colour(i), linestyle=plot.linestyle(i), linewidth=1.9,
                              zorder=3)
            handles.append(line)
            texts.append(short(names[i], 60) + f" (peak {max(ys, default=0):,})")
        windows = sorted({window_of(run, result) for run in result.runs})
        # a window far above the lines would flatten them: keep them readable, say where it is
        visible = [w for w in windows if w <= 3 * peak]
        hidden = [w for w in windows if w > 3 * peak]
        top = max([peak, *visible]) * 1.06 if visible else peak * 1.25
        if hidden:
            text = " / ".join(f"{w:,}" for w in hidden)
            ax.annotate(f"window {text} and its reserve {reserve:,}: above the chart ↑", xy=(0.99, 0.98),
                        xycoords="axes fraction", ha="right", va="top", fontsize=9, color="#000000")
        for w in visible:
            ax.axhline(w, color="#000000", linewidth=1.3, zorder=2)
            if reserve:
                ax.axhspan(w - reserve, w, color="#999999", alpha=0.25, linewidth=0, zorder=1)
        if visible:
            who = {w: [names[i] for i, run in enumerate(result.runs) if window_of(run, result) == w] for w in windows}
            handles.append(Line2D([], [], color="#000000", linewidth=1.3))
            texts.append("window " + "; ".join(
                f"{w:,}" + (f" ({short(', '.join(who[w]), 40)})" if len(windows) > 1 else "") for w in visible))
            if reserve:
                handles.append(Patch(color="#999999", alpha=0.25))
                texts.append(f"output reserve {reserve:,} (window − reserve = "
                             + ", ".join(f"{w - reserve:,}" for w in visible) + ")")
        # policy thresholds
        drawn: set[tuple[str, int]] = set()
        for i, run in enumerate(result.runs):
            for what, value in thresholds(run):
                if (what, value) in drawn or value > top:
                    continue
                drawn.add((what, value))
                ax.axhline(value, color=plot.colour(i), linestyle=(0, (1, 2)), linewidth=1.3, zorder=2)
                handles.append(Line2D([], [], color=plot.colour(i), linestyle=(0, (1, 2)), linewidth=1.3))
                texts.append(f"{what} {value:,}" + (f" ({short(names[i], 24)})" if len(result.runs) > 2 else ""))
        # events
        kinds_seen: dict[str, str] = {}
        for i, run in enumerate(result.runs):
            at = {r.request: r.context_tokens for r in request_rows(run)}
            groups: dict[str, tuple[list[int], list[int]]] = {}
            for event in run.events:
                if event.request not in at:
                    continue
                marker, text = MARKERS.get(event.kind, OTHER)
                kinds_seen.setdefault(marker, text)
                xs, ys = groups.setdefault(marker, ([], []))
                xs.append(event.request)
                ys.append(at[event.request])
            for marker, (xs, ys) in sorted(groups.items()):
                ax.scatter(xs, ys, marker=marker, s=46, color=plot.colour(i), edgecolors="#000000",
                           linewidths=0.7, zorder=4)
        for marker, text in sorted(kinds_seen.items(), key=lambda kv: kv[1]):
            handles.append(Line2D([], [], marker=marker, linestyle="none", markerfacecolor="#bbbbbb",
                                  markeredgecolor="#000000", markersize=7))
            texts.append(f"event: {text}")
        ax.set_ylim(0, top)
        plot.request_axis(ax, result.runs)
        ax.set_ylabel("context size (tokens)")
        plot.thousands(ax.yaxis)
        plot.titles(fig, "Context size per request", result)
        plot.legend_below(fig, handles, texts, 2)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("context", ("png", "svg"), "Context size per request", render, __name__, chart=True))
