"""Chart: what the context is made of over the session, by role and by tool (stacked area).

The rows of run.json hold sizes, not composition, so this chart reads an
optional block per policy run, `composition` (version 1):

    "composition": {
      "version": 1,
      "columns": ["tools+system", "user", "assistant", "summary", "cleared", "tool:read_file", ...],
      "requests": [1, 2, 3, ...],
      "tokens": [[612, 40, 0, 0, 0, 0, ...], ...]
    }

`tokens[i][j]` is how many tokens of the prompt of request `requests[i]` (the
agent's own requests, `kind == "request"`, after the policy's edits) belong to
column j. A row sums to that request's `context_tokens`. Columns: `tools+system`
(the fixed head: tool schemas, system prompt, hidden prefix), one per message
role (`system`, `user`, `assistant` with its tool calls, `summary` for
summaries a policy or the agent wrote), `cleared` (stubs that replaced cleared
content) and `tool:NAME` (live tool results by tool).

The engine records it for every run (`ctxsim.composition`). A run.json
without the block (an older or hand-made one) has no composition chart: it is
skipped in bundles, and `ctxsim report -f png --chart composition` says why.
"""

from __future__ import annotations

from ctxsim.composition import HEAD, Composition
from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import composition_of, labels, short, star_text, starred_run, window_of, winner

MAX_SERIES = 8  # series per panel; smaller tools fold into "tool:other"
MAX_PANELS = 8  # small multiples at most (4 rows of 2): the baseline and the verdict's winner always shown
STACK_POINTS = 500  # stacks drawn per panel at most (a panel is ~450 pixels wide)
COLOURS = {HEAD: "#000000", "system": "#555555", "user": "#E69F00", "assistant": "#56B4E9",
           "summary": "#F0E442", "cleared": "#BBBBBB"}
TOOL_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#882255", "#117733", "#44AA99", "#999933"]


# ---------------------------------------------------------------- chart
def _missing(result: RunResult) -> str | None:
    comps = [composition_of(run) for run in result.runs]
    if all(comp is None for comp in comps):
        return ("this run.json has no `composition` block (the engine does not record it yet); "
                "see ctxsim/reports/composition.py")
    if not any(comp is not None and comp.requests for comp in comps):
        return "the trace has no model request, so there is no context to chart"
    return None


def folded(comp: Composition) -> dict[str, list[int]]:
    """At most MAX_SERIES series: the fixed columns present, the biggest tools, then `tool:other`."""
    series = comp.series()
    fixed = {c: v for c, v in series.items() if not c.startswith("tool:") and any(v)}
    tools = {c: v for c, v in series.items() if c.startswith("tool:") and any(v)}
    room = max(1, MAX_SERIES - len(fixed))
    ranked = sorted(tools, key=lambda c: (-sum(tools[c]), c))
    keep = ranked if len(ranked) <= room else ranked[: room - 1]
    out = dict(fixed)
    out.update((c, tools[c]) for c in sorted(keep))
    rest = [c for c in ranked if c not in keep]
    if rest:
        out["tool:other"] = [sum(tools[c][i] for c in rest) for i in range(len(comp.requests))]
    return out


def draw(result: RunResult, fmt: str) -> bytes:
    from matplotlib.patches import Patch

    names = labels(result)
    have = [i for i, run in enumerate(result.runs) if composition_of(run) is not None]
    data = {i: folded(composition_of(result.runs[i])) for i in have}
    keys = [(tuple(composition_of(result.runs[i]).requests), tuple((k, tuple(v)) for k, v in data[i].items()))
            for i in have]
    groups = [([have[j] for j in members], name) for members, name in
              plot.merge_identical([names[i] for i in have], keys)]
    must = [i for i in (0, winner(result)) if i in have]
    panels = [groups[g] for g in plot.pick(groups, must, MAX_PANELS)]
    # one colour per series across every panel: the fixed ones, then the tools in a palette sized to them
    seen = [k for _, (members, _) in enumerate(panels) for k in data[members[0]]]
    tools = sorted({k for k in seen if k not in COLOURS})
    tool_colours = TOOL_COLOURS[:len(tools)] if len(tools) <= len(TOOL_COLOURS) else plot.palette(len(tools))
    colours = {**COLOURS, **dict(zip(tools, tool_colours, strict=True))}
    starred_i = starred_run(result)
    with plot.style():
        fig, axes = plot.grid(len(panels), panel_height_in=2.0 if len(panels) > 2 else 2.6)
        legend: dict[str, Patch] = {}
        top = 1
        averaged = 1
        peaks: list[float] = []
        for ax, (members, name) in zip(axes, panels, strict=True):
            comp = composition_of(result.runs[members[0]])
            series = data[members[0]]
            order = list(series)
            xs, values = plot.thin(comp.requests, *[series[k] for k in order], most=STACK_POINTS, how="mean")
            averaged = max(averaged, -(-len(comp.requests) // max(1, len(xs))))
            if order:
                ax.stackplot(xs, *values, colors=[colours[k] for k in order], linewidth=0, alpha=0.9)
                top = max(top, *[sum(col) for col in zip(*values, strict=True)])
            peaks.append(max((sum(col) for col in zip(*values, strict=True)), default=0) if order else 0)
            mark = star_text(result) if starred_i in members and len(result.runs) > 1 else ""
            ax.set_title(short(name, 58 if len(panels) > 2 else 100) + mark, fontsize=8.5, loc="left",
                         fontweight="bold")
            plot.thousands(ax.yaxis)
            for k in order:
                legend.setdefault(k, Patch(color=colours[k], alpha=0.9))
        plot.clip_panels(axes, peaks, top, max(window_of(run, result) for run in result.runs))
        for ax in axes[-2 if len(axes) > 2 else -1:]:
            plot.request_axis(ax)
            ax.xaxis.set_tick_params(labelbottom=True)
        axes[0].set_ylabel("tokens in context")
        title = "Context composition over the session, by role and tool"
        if averaged > 1:
            title += f" (mean per {averaged} requests)"
        fig.suptitle(title, fontsize=12, fontweight="bold", x=0.01, ha="left")
        order = [k for k in legend if not k.startswith("tool:")] + sorted(k for k in legend if k.startswith("tool:"))
        texts = [k.replace("tool:", "tool ") for k in order]
        handles = [legend[k] for k in order]
        if len(panels) < len(groups):
            texts.append(f"{len(panels)} of {len(groups)} distinct policies shown "
                         "(the baseline and the cheapest always)")
            handles.append(Patch(color="none"))
        plot.legend_below(fig, handles, texts, min(5, len(texts)), fontsize=8.5)
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("composition", ("png", "svg"), "Context composition by role and tool", render, __name__,
                    chart=True, unavailable=_missing))
