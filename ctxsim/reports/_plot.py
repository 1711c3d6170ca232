"""Shared chart style and byte-stable saving (matplotlib, Agg, no pyplot state).

Every chart is a `Figure` built and saved inside `style()`: fixed size, DPI,
fonts and SVG hash salt, and no date or software stamp in the file, so the same
run gives the same PNG and SVG bytes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib itself is imported when a chart is drawn
    from matplotlib.typing import RcKeyType

# Okabe-Ito (distinguishable with the common colour-vision deficiencies) for up to 7 series, then
# matplotlib's tab20 (pairs of a dark and a light shade) for up to 20, then evenly spaced hues: a chart
# never shows one colour for two series.
# (black is left out: it is the window's colour; Okabe-Ito's yellow, unreadable on white, gives way to
# Tol's wine)
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#882255"]
TAB20 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
         "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
         "#dbdb8d", "#9edae5"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1))]
MAX_POINTS = 2000  # points drawn per series at most (SVG size; a 10-inch chart shows ~1,000 pixels)
WIDTH_IN = 10.0
DPI = 110

RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "ctxsim",
    "svg.fonttype": "path",
    "text.parse_math": False,  # "$1.96" is money, not mathtext
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "path.simplify": False,
    "image.interpolation": "nearest",
}

METADATA = {
    "png": {"Software": None},
    "svg": {"Creator": "ctxsim", "Date": None},
}


def palette(n: int) -> list[str]:
    """`n` distinct colours, in a fixed order."""
    if n <= len(PALETTE):
        return PALETTE[:n]
    if n <= len(TAB20):
        return TAB20[:n]
    import colorsys

    out = []
    for i in range(n):
        r, g, b = colorsys.hsv_to_rgb(i / n, 0.75 if i % 2 else 0.95, 0.55 if i % 3 == 1 else 0.85)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def thin(xs: Sequence[int], *series: Sequence[float], most: int = MAX_POINTS,
         how: str = "extremes") -> tuple[list[int], list[list[float]]]:
    """At most about `most` points per series, deterministic.

    `extremes` (a line): per bucket of consecutive points, the first, the lowest, the highest and the
    last of the first series (the others at the same positions), so spikes and drops stay visible.
    `mean` (a stack): per bucket, the mean of each series at the bucket's first x (stacks stay sums).
    """
    n = len(xs)
    if n <= most:
        return list(xs), [list(s) for s in series]
    if how == "mean":
        size = -(-n // most)
        out_x = [xs[i] for i in range(0, n, size)]
        out = [[sum(s[i:i + size]) / len(s[i:i + size]) for i in range(0, n, size)] for s in series]
        return out_x, out
    size = -(-n // max(1, most // 4))
    keep: list[int] = []
    first = series[0] if series else xs
    for start in range(0, n, size):
        idx = range(start, min(n, start + size))
        picks = {idx[0], idx[-1], min(idx, key=lambda i: (first[i], i)), max(idx, key=lambda i: (first[i], -i))}
        keep.extend(sorted(picks))
    return [xs[i] for i in keep], [[s[i] for i in keep] for s in series]


def merge_identical(names: Sequence[str], series: Sequence[Any]) -> list[tuple[list[int], str]]:
    """Runs whose series are equal, merged: (indices, legend name), in the order of the first of each.

    The legend name lists every merged run: `none = clear = tiered` (shortened past a few names, with a
    count).
    """
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(series):
        groups.setdefault(s, []).append(i)
    return [(members, joined([names[i] for i in members])) for members in groups.values()]


def joined(names: Sequence[str], width: int = 64) -> str:
    if len(names) == 1:
        return names[0]
    text = " = ".join(names)
    if len(text) <= width:
        return text + " (identical)"
    shown: list[str] = []
    for name in names:
        if len(" = ".join([*shown, name])) > width - 14:
            break
        shown.append(name)
    return " = ".join(shown) + f" + {len(names) - len(shown)} more (identical)"


def linestyle(i: int) -> Any:
    return LINESTYLES[i % len(LINESTYLES)]


@contextmanager
def style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


def figure(height_in: float, nrows: int = 1, sharex: bool = True) -> tuple[Any, list[Any]]:
    """A constrained-layout figure (Agg canvas) and its axes, top to bottom."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, 1, sharex=sharex, squeeze=False)[:, 0]
    return fig, list(axes)


def grid(panels: int, panel_height_in: float = 2.2, head_in: float = 1.3, most_columns: int = 2,
         ) -> tuple[Any, list[Any]]:
    """Small multiples: `panels` axes in rows of up to `most_columns`, shared axes, spare cells hidden."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ncols = 1 if panels <= 2 else most_columns
    nrows = -(-panels // ncols)
    fig = Figure(figsize=(WIDTH_IN, head_in + panel_height_in * nrows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel().tolist()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def pick(groups: Sequence[tuple[list[int], str]], must: Sequence[int], most: int) -> list[int]:
    """Which groups a chart of at most `most` panels shows: those holding a run of `must` first
    (the baseline, the verdict's winner), then the rest in order; returned in the groups' order."""
    chosen: list[int] = []
    for i in must:
        g = next(g for g, (members, _) in enumerate(groups) if i in members)
        if g not in chosen:
            chosen.append(g)
    for g in range(len(groups)):
        if len(chosen) >= most:
            break
        if g not in chosen:
            chosen.append(g)
    return sorted(chosen[:most])


CLIP = 1.18  # a series above CLIP × the window is cut there (the part cut off marked)


def clip_panels(axes: Sequence[Any], peaks: Sequence[float], top: float, window: int) -> None:
    """Shared y limit of small multiples: the highest panel, or just above the window when a panel passes
    it by far (each such panel says it is cut off and where its peak is); outer tick labels only."""
    limit = window * CLIP
    clipped = top > limit
    for ax, peak in zip(axes, peaks, strict=True):
        ax.set_ylim(0, limit if clipped else top * 1.05)
        ax.label_outer()
        if clipped:
            ax.axhline(window, color="#000000", linewidth=0.9, zorder=4)
        if clipped and peak > limit:
            ax.annotate(f"↑ cut off above the window {window:,} (peak {peak:,.0f})", xy=(0.01, 0.96),
                        xycoords="axes fraction", ha="left", va="top", fontsize=8, color="#b00000", zorder=6,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def save(fig: Any, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI, metadata=METADATA[fmt])
    return buf.getvalue()


def thousands(ax_axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax_axis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax_axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))


def request_axis(ax: Any, runs: Sequence[Any] = ()) -> None:
    """The x axis of a per-request chart: request numbers, from 0 to past the last request of `runs`
    (when given)."""
    if runs:
        last = max((r.request for run in runs for r in run.rows), default=1)
        ax.set_xlim(0, last + 1)
    ax.set_xlabel("request (model call number)")
    thousands(ax.xaxis)


def dollars(ax_axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    def fmt(v: float, _pos: Any) -> str:
        low, high = ax_axis.get_view_interval()
        span = max(abs(low), abs(high))
        if span >= 50:
            return f"${v:,.0f}"
        return f"${v:,.2f}" if span >= 0.5 else f"${v:,.4f}"

    ax_axis.set_major_formatter(FuncFormatter(fmt))


def legend_below(fig: Any, handles: list[Any], labels: list[str], ncol: int, fontsize: float | None = None) -> None:
    """A legend under the axes: it can never cover data."""
    fig.legend(handles, labels, loc="outside lower center", ncol=max(1, ncol), handlelength=2.4,
               columnspacing=1.4, fontsize=fontsize, labelspacing=0.35)


def legend_right(fig: Any, handles: list[Any], labels: list[str], fontsize: float | None = None) -> None:
    """A legend right of the axes, one entry a line."""
    fig.legend(handles, labels, loc="outside right upper", ncol=1, handlelength=2.2, fontsize=fontsize,
               labelspacing=0.4)


def subtitle(result: Any) -> str:
    m = result.manifest
    trace = m.get("trace", {})
    return (f"trace {trace.get('name', '?')} · {m.get('provider', '?')} {m.get('model', '?')} · "
            f"window {m.get('window', 0):,} · tokenizer {m.get('tokenizer', '?')} · open-loop replay")


def titles(fig: Any, title: str, result: Any) -> None:
    fig.suptitle(title, fontsize=13, fontweight="bold", x=0.01, ha="left")
    fig.get_axes()[0].set_title(subtitle(result), fontsize=9, fontweight="normal", loc="left", color="#444444")
