"""Chart: context size per request, one line per policy.

Draws the window, the window minus the output reserve (the band between is the
reserve), each policy's token thresholds (its trigger) and marks the policy
events on its line: clears, compactions, truncations, threshold passes and
overflows. Seed 000's naive/managed table, as a picture.

Runs with the same context series (most often policies that never acted, equal
to `none`) are one line, their names listed in the legend. More than ONE_PANEL
lines: small multiples, a panel per line with the others in grey behind it. Each line has its
own colour. Events are thinned to one marker per kind per line per ~1/80 of
the x axis. A line far above the window is clipped just above it, the part
cut off marked, so the managed policies are not flattened against the axis.
"""

from __future__ import annotations

from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, request_rows, short, star_text, starred_run, thresholds, window_of

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
EVENT_BINS = 80  # at most one marker per kind per line in each 1/EVENT_BINS of the x axis
CLIP = plot.CLIP
ONE_PANEL = 6  # more distinct lines than this: small multiples, a panel per line


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    m = result.manifest
    reserve = int(m.get("output_reserve") or 0)
    names = labels(result)
    series = [tuple((r.request, r.context_tokens) for r in request_rows(run)) for run in result.runs]
    groups = plot.merge_identical(names, series)
    if len(groups) > ONE_PANEL:
        return multiples(result, fmt, series, groups)
    colours = plot.palette(len(groups))
    last = max((r.request for run in result.runs for r in run.rows), default=1)
    peaks = [max((y for _, y in series[members[0]]), default=0) for members, _ in groups]
    peak = max([1, *peaks])
    windows = sorted({window_of(run, result) for run in result.runs})
    # a window far above the lines would flatten them: keep them readable, say where it is
    visible = [w for w in windows if w <= 3 * peak]
    hidden = [w for w in windows if w > 3 * peak]
    top = max([peak, *visible]) * 1.06 if visible else peak * 1.25
    clipped = bool(visible) and peak > max(visible) * CLIP
    if clipped:
        top = max(visible) * CLIP
    handles: list = []
    texts: list[str] = []
    entries = len(groups) + 2 + sum(len(thresholds(run)) for run in result.runs) + len(MARKERS)
    ncol = 2
    with plot.style():
        fig, (ax,) = plot.figure(4.4 + 0.2 * min(entries, 40) / ncol)
        for g, (members, name) in enumerate(groups):
            xs = [x for x, _ in series[members[0]]]
            ys = [y for _, y in series[members[0]]]
            tx, (ty,) = plot.thin(xs, ys)
            (line,) = ax.plot(tx, ty, color=colours[g], linewidth=2.4 if g == 0 else 1.7, zorder=3 + g * 0.01,
                              solid_joinstyle="round")
            handles.append(line)
            over = " — clipped above the chart" if clipped and peaks[g] > top else ""
            texts.append(short(name, 70) + f" (peak {peaks[g]:,}{over})")
        if hidden:
            text = " / ".join(f"{w:,}" for w in hidden)
            ax.annotate(f"window {text} and its reserve {reserve:,}: above the chart ↑", xy=(0.99, 0.98),
                        xycoords="axes fraction", ha="right", va="top", fontsize=9, color="#000000")
        for w in visible:
            ax.axhline(w, color="#000000", linewidth=1.3, zorder=2)
            if reserve:
                ax.axhspan(w - reserve, w, color="#999999", alpha=0.25, linewidth=0, zorder=1)
        if clipped:
            ax.axhspan(max(visible), top, facecolor="none", edgecolor="#b00000", hatch="////", linewidth=0,
                       alpha=0.35, zorder=1)
            cut = [g for g in range(len(groups)) if peaks[g] > top]
            ax.annotate("↑ beyond the window, cut off: " + "; ".join(f"{short(groups[g][1], 40)} (peak {peaks[g]:,})"
                                                                      for g in cut),
                        xy=(0.01, 0.985), xycoords="axes fraction", ha="left", va="top", fontsize=8.5,
                        color="#b00000", zorder=6,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
        if visible:
            who = {w: [names[i] for i, run in enumerate(result.runs) if window_of(run, result) == w] for w in windows}
            handles.append(Line2D([], [], color="#000000", linewidth=1.3))
            texts.append("window " + "; ".join(
                f"{w:,}" + (f" ({short(', '.join(who[w]), 40)})" if len(windows) > 1 else "") for w in visible))
            if reserve:
                handles.append(Patch(color="#999999", alpha=0.25))
                texts.append(f"output reserve {reserve:,} (window − reserve = "
                             + ", ".join(f"{w - reserve:,}" for w in visible) + ")")
        group_of = {i: g for g, (members, _) in enumerate(groups) for i in members}
        # policy thresholds: one line per value, in the colour of the first line that has it
        drawn: dict[tuple[str, int], list[str]] = {}
        for i, run in enumerate(result.runs):
            for what, value in fired_thresholds(run):
                if value > top:
                    continue
                if (what, value) not in drawn:
                    drawn[(what, value)] = []
                    g = group_of[i]
                    ax.axhline(value, color=colours[g], linestyle=(0, (1, 2)), linewidth=1.2, zorder=2)
                    handles.append(Line2D([], [], color=colours[g], linestyle=(0, (1, 2)), linewidth=1.2))
                    texts.append(f"{what} {value:,}")
        # events, thinned: one marker per kind per line per bin of the x axis
        kinds_seen: dict[str, str] = {}
        width = max(1.0, (last + 1) / EVENT_BINS)
        for g, (members, _) in enumerate(groups):
            at = dict(series[members[0]])
            groups_xy: dict[str, dict[int, tuple[int, int]]] = {}
            for i in members:
                for event in result.runs[i].events:
                    if event.request not in at:
                        continue
                    marker, text = MARKERS.get(event.kind, OTHER)
                    kinds_seen.setdefault(marker, text)
                    bins = groups_xy.setdefault(marker, {})
                    bins.setdefault(int(event.request / width), (event.request, min(at[event.request], int(top))))
            for marker, bins in sorted(groups_xy.items()):
                points = [bins[k] for k in sorted(bins)]
                size = 44 if len(points) <= 30 else 18
                ax.scatter([x for x, _ in points], [y for _, y in points], marker=marker, s=size, color=colours[g],
                           edgecolors="#000000", linewidths=0.6, zorder=4 + g * 0.01)
        for marker, text in sorted(kinds_seen.items(), key=lambda kv: kv[1]):
            handles.append(Line2D([], [], marker=marker, linestyle="none", markerfacecolor="#bbbbbb",
                                  markeredgecolor="#000000", markersize=7))
            texts.append(f"event: {text}")
        ax.set_ylim(0, top)
        plot.request_axis(ax, result.runs)
        ax.set_ylabel("context size (tokens)")
        plot.thousands(ax.yaxis)
        plot.titles(fig, "Context size per request", result)
        plot.legend_below(fig, handles, texts, ncol, fontsize=8.5)
        return plot.save(fig, fmt)


def fired_thresholds(run: PolicyRun) -> list[tuple[str, int]]:
    """The run's trigger lines of the stages that fired (an event of theirs); a stage that never acted draws none."""
    fired = {e.policy for e in run.events}
    return [(what, value) for what, value in thresholds(run) if what.split(" ", 1)[0] in fired]


def thinned_events(result: RunResult, members: list[int], at: dict[int, int], top: float, last: int,
                   bins: int) -> dict[str, list[tuple[int, int]]]:
    """marker -> points: one event per kind per bin of the x axis, drawn at its line (capped at `top`)."""
    width = max(1.0, (last + 1) / bins)
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for i in members:
        for event in result.runs[i].events:
            if event.request in at:
                marker = MARKERS.get(event.kind, OTHER)[0]
                out.setdefault(marker, {}).setdefault(int(event.request / width),
                                                      (event.request, min(at[event.request], int(top))))
    return {marker: [b[k] for k in sorted(b)] for marker, b in sorted(out.items())}


def multiples(result: RunResult, fmt: str, series: list[tuple[tuple[int, int], ...]],
              groups: list[tuple[list[int], str]]) -> bytes:
    """Small multiples: a panel per line (identical runs merged), the others in grey behind it."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    reserve = int(result.manifest.get("output_reserve") or 0)
    colours = plot.palette(len(groups))
    last = max((r.request for run in result.runs for r in run.rows), default=1)
    peaks = [max((y for _, y in series[members[0]]), default=0) for members, _ in groups]
    window = max(window_of(run, result) for run in result.runs)
    top = min(max(peaks) * 1.06, window * CLIP) if max(peaks) > window else window * 1.06
    thinned, grey = [], []  # each panel's own line finer than the grey ones behind it (the SVG's size)
    for members, _ in groups:
        xs = [x for x, _ in series[members[0]]]
        ys = [y for _, y in series[members[0]]]
        thinned.append(plot.thin(xs, ys, most=800))
        grey.append(plot.thin(xs, ys, most=300))
    kinds: dict[str, str] = {}
    starred_i = starred_run(result)
    with plot.style():
        fig, axes = plot.grid(len(groups), panel_height_in=1.55, head_in=1.9)
        for g, (ax, (members, name)) in enumerate(zip(axes, groups, strict=True)):
            for h, (tx, (ty,)) in enumerate(grey):
                if h != g:
                    ax.plot(tx, ty, color="#d0d0d0", linewidth=0.8, zorder=2)
            tx, (ty,) = thinned[g]
            ax.plot(tx, ty, color=colours[g], linewidth=1.8, zorder=3)
            ax.axhline(window, color="#000000", linewidth=1.1, zorder=2)
            if reserve:
                ax.axhspan(window - reserve, window, color="#999999", alpha=0.25, linewidth=0, zorder=1)
            for _what, value in {t for i in members for t in fired_thresholds(result.runs[i])}:
                if value < top:
                    ax.axhline(value, color=colours[g], linestyle=(0, (1, 2)), linewidth=1.0, zorder=2)
            for marker, points in thinned_events(result, members, dict(series[members[0]]), top, last, 50).items():
                kinds.setdefault(marker, next(t for m, t in [*MARKERS.values(), OTHER] if m == marker))
                ax.scatter([x for x, _ in points], [y for _, y in points], marker=marker, s=16, color=colours[g],
                           edgecolors="#000000", linewidths=0.5, zorder=4)
            over = f" — cut off above (peak {peaks[g]:,})" if peaks[g] > top else f" (peak {peaks[g]:,})"
            star = star_text(result) if starred_i in members else ""
            ax.set_title(short(name, 64) + star + ("\n" + over.strip(" —") if len(name) + len(over) > 58 else over),
                         fontsize=8.5, loc="left", fontweight="bold",
                         color="#b00000" if peaks[g] > top else "#000000")
            ax.set_ylim(0, top)
            ax.label_outer()
            plot.thousands(ax.yaxis)
        for ax in axes[-2:]:
            plot.request_axis(ax, result.runs)
            ax.xaxis.set_tick_params(labelbottom=True)
        axes[0].set_ylabel("context (tokens)")
        sub = plot.subtitle(result).split(" · ")
        fig.suptitle("Context size per request, a panel per policy (the others in grey)\n" + " · ".join(sub[:3])
                     + "\n" + " · ".join(sub[3:]),
                     fontsize=11, fontweight="bold", x=0.01, ha="left")
        handles: list = [Line2D([], [], color="#d0d0d0", linewidth=1.2), Line2D([], [], color="#000000", linewidth=1.1)]
        texts = ["the other policies", f"window {window:,}"]
        if reserve:
            handles.append(Patch(color="#999999", alpha=0.25))
            texts.append(f"output reserve {reserve:,}")
        handles.append(Line2D([], [], color="#444444", linestyle=(0, (1, 2)), linewidth=1.0))
        texts.append("the policy's trigger")
        for marker, text in sorted(kinds.items(), key=lambda kv: kv[1]):
            handles.append(Line2D([], [], marker=marker, linestyle="none", markerfacecolor="#bbbbbb",
                                  markeredgecolor="#000000", markersize=6))
            texts.append(f"event: {text}")
        plot.legend_below(fig, handles, texts, 4, fontsize=8.5)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("context", ("png", "svg"), "Context size per request", render, __name__, chart=True))
