"""Chart: per request, stacked: cache read / cache write / uncached / output tokens.

Small multiples, one panel per policy, all on the same scale. The prompt
splits into what was read from the cache, what was written to it (5-minute,
and 1-hour when any), and what was neither; the output sits on top. A
policy's summarising calls are added to the request that made them. Runs with
the same tokens request by request share a panel (their names in its title).
At most MAX_PANELS panels: the baseline and the verdict's winner (the cheapest)
always among them, the chart says how many it left out. On a long run each
stack is the mean over a few consecutive requests (the title says so).
"""

from __future__ import annotations

from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import labels, short, star_text, starred_run, window_of, winner

PARTS = [  # (row field, legend text, colour)
    ("cache_read_tokens", "cache read", "#0072B2"),
    ("cache_write_tokens", "cache write (5 min)", "#E69F00"),
    ("cache_write_1h_tokens", "cache write (1 h)", "#D55E00"),
    ("uncached_tokens", "uncached input", "#CC79A7"),
    ("output_tokens", "output", "#009E73"),
]
MAX_PANELS = 8
STACK_POINTS = 500  # stacks drawn per panel at most (a panel is ~450 pixels wide)


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


def shown(result: RunResult) -> tuple[list[tuple[list[int], str]], int]:
    """The panels drawn: (run indices, title name), the baseline and the winner always among them; and how many
    distinct runs there are."""
    names = labels(result)
    data = [per_request(run.rows) for run in result.runs]
    keys = [(tuple(xs), tuple(tuple(v) for v in parts.values())) for xs, parts in data]
    groups = plot.merge_identical(names, keys)
    return [groups[g] for g in plot.pick(groups, [0, winner(result)], MAX_PANELS)], len(groups)


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.patches import Patch

    panels, total = shown(result)
    one_hour = any(r.cache_write_1h_tokens for run in result.runs for r in run.rows)
    parts = [p for p in PARTS if one_hour or p[0] != "cache_write_1h_tokens"]
    starred_i = starred_run(result)
    with plot.style():
        fig, axes = plot.grid(len(panels), panel_height_in=2.0 if len(panels) > 2 else 2.6)
        top: float = 1
        averaged = 1
        peaks: list[float] = []
        for ax, (members, name) in zip(axes, panels, strict=True):
            run = result.runs[members[0]]
            xs, data = per_request(run.rows)
            tx, values = plot.thin(xs, *[data[key] for key, _, _ in parts], most=STACK_POINTS, how="mean")
            averaged = max(averaged, -(-len(xs) // max(1, len(tx))))
            base = [0.0] * len(tx)
            for (_key, _, colour), part in zip(parts, values, strict=True):
                upper = [b + v for b, v in zip(base, part, strict=True)]
                ax.fill_between(tx, base, upper, step="mid", color=colour, linewidth=0)
                base = upper
            peaks.append(max(base, default=0))
            top = max(top, *base) if base else top
            mark = star_text(result) if starred_i in members and len(result.runs) > 1 else ""
            ax.set_title(f"{short(name, 58 if len(panels) > 2 else 100)}{mark}\n"
                         f"{run.totals.input_tokens:,} input tokens, hit rate {run.totals.hit_rate * 100:.1f}%",
                         fontsize=8.5, loc="left", fontweight="bold")
            plot.thousands(ax.yaxis)
        plot.clip_panels(axes, peaks, top, max(window_of(run, result) for run in result.runs))
        for ax in axes[-2 if len(axes) > 2 else -1:]:
            plot.request_axis(ax, result.runs)
            ax.xaxis.set_tick_params(labelbottom=True)
        axes[0].set_ylabel("tokens")
        title = "Tokens per request: cache read, cache write, uncached, output"
        if averaged > 1:
            title += f" (mean per {averaged} requests)"
        fig.suptitle(title, fontsize=12, fontweight="bold", x=0.01, ha="left")
        texts = [t for _, t, _ in parts]
        if len(panels) < total:
            texts.append(f"{len(panels)} of {total} distinct policies shown (the baseline and the cheapest always)")
        handles = [Patch(color=c) for _, _, c in parts] + ([Patch(color="none")] if len(panels) < total else [])
        plot.legend_below(fig, handles, texts, len(texts), fontsize=8.5)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("tokens", ("png", "svg"), "Tokens per request (cache read / write / uncached / output)",
                    render, __name__, chart=True))
