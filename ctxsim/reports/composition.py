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


from ctxsim.composition import HEAD, Composition  # noqa: F401 - Composition re-exported for callers
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import composition_of, labels, short
from ctxsim.run import RunResult

MAX_SERIES = 8  # one colour each from the palette; smaller tools fold into "tool:other"
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

    runs = [(name, run) for name, run in zip(labels(result), result.runs, strict=True)
            if composition_of(run) is not None]
    with plot.style():
        fig, axes = plot.figure(1.4 + 2.7 * len(runs), nrows=len(runs))
        colours: dict[str, str] = {}
        tool_index = 0
        legend: dict[str, Patch] = {}
        top = 1
        for ax, (name, run) in zip(axes, runs, strict=True):
            comp = composition_of(run)
            data = folded(comp)
            for key in data:
                if key not in colours:
                    if key in COLOURS:
                        colours[key] = COLOURS[key]
                    else:
                        colours[key] = TOOL_COLOURS[tool_index % len(TOOL_COLOURS)]
                        tool_index += 1
            keys = list(data)
            if keys:  # every prompt of this run empty (or no request): an empty panel, not a crash
                ax.stackplot(comp.requests, *[data[k] for k in keys], colors=[colours[k] for k in keys],
                             linewidth=0, alpha=0.9)
            totals = [sum(col) for col in zip(*data.values(), strict=True)] if data else [0]
            top = max(top, *totals)
            ax.set_title(short(name, 90), fontsize=10, loc="left", fontweight="bold")
            ax.set_ylabel("tokens in context")
            plot.thousands(ax.yaxis)
            for k in keys:
                legend.setdefault(k, Patch(color=colours[k], alpha=0.9))
        for ax in axes:
            ax.set_ylim(0, top * 1.05)
        plot.request_axis(axes[-1])
        fig.suptitle("Context composition over the session, by role and tool", fontsize=13, fontweight="bold",
                     x=0.01, ha="left")
        order = [k for k in legend if not k.startswith("tool:")] + sorted(k for k in legend if k.startswith("tool:"))
        plot.legend_below(fig, [legend[k] for k in order], [k.replace("tool:", "tool ") for k in order],
                          min(5, len(order)))
        return plot.save(fig, fmt)


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    return draw(result, fmt)


register(ReportInfo("composition", ("png", "svg"), "Context composition by role and tool", render, __name__,
                    chart=True, unavailable=_missing))
