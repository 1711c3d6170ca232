"""Shared chart style and byte-stable saving (matplotlib, Agg, no pyplot state).

Every chart is a `Figure` built and saved inside `style()`: fixed size, DPI,
fonts and SVG hash salt, and no date or software stamp in the file, so the same
run gives the same PNG and SVG bytes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1))]
WIDTH_IN = 10.0
DPI = 110

RC: dict[str, Any] = {
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


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


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


def legend_below(fig: Any, handles: list[Any], labels: list[str], ncol: int) -> None:
    """A legend under the axes: it can never cover data."""
    fig.legend(handles, labels, loc="outside lower center", ncol=max(1, ncol), handlelength=3.2,
               columnspacing=1.6)


def subtitle(result: Any) -> str:
    m = result.manifest
    trace = m.get("trace", {})
    return (f"trace {trace.get('name', '?')} · {m.get('provider', '?')} {m.get('model', '?')} · "
            f"window {m.get('window', 0):,} · tokenizer {m.get('tokenizer', '?')} · open-loop replay")


def titles(fig: Any, title: str, result: Any) -> None:
    fig.suptitle(title, fontsize=13, fontweight="bold", x=0.01, ha="left")
    fig.get_axes()[0].set_title(subtitle(result), fontsize=9, fontweight="normal", loc="left", color="#444444")
