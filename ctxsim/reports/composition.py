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

The engine does not write it yet. `snapshot(history)` computes one row, and
`with_composition(policy)` wraps a policy with an observer stage that records
a row per request (after every other stage's edits) so a caller can attach the
block today: `run = record(replayer, policy)`. Without the block the chart is
unavailable (skipped in bundles; `ctxsim report -f png --chart composition`
says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxsim.errors import CtxsimError
from ctxsim.reports import Options, ReportInfo, register
from ctxsim.reports import _plot as plot
from ctxsim.reports._common import composition_of, labels, short
from ctxsim.run import RunResult

VERSION = 1
HEAD = "tools+system"
FIXED = (HEAD, "system", "user", "assistant", "summary", "cleared")
MAX_SERIES = 8  # one colour each from the palette; smaller tools fold into "tool:other"
COLOURS = {HEAD: "#000000", "system": "#555555", "user": "#E69F00", "assistant": "#56B4E9",
           "summary": "#F0E442", "cleared": "#BBBBBB"}
TOOL_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#882255", "#117733", "#44AA99", "#999933"]


@dataclass
class Composition:
    columns: list[str]
    requests: list[int] = field(default_factory=list)
    tokens: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "columns": list(self.columns), "requests": list(self.requests),
                "tokens": [list(row) for row in self.tokens]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Composition:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise CtxsimError(f"composition block: version {VERSION} expected")
        columns, requests, tokens = data["columns"], data["requests"], data["tokens"]
        if len(requests) != len(tokens) or any(len(row) != len(columns) for row in tokens):
            raise CtxsimError("composition block: requests, tokens and columns do not line up")
        return cls(list(columns), [int(r) for r in requests], [[int(v) for v in row] for row in tokens])

    @classmethod
    def of(cls, snapshots: Sequence[tuple[int, dict[str, int]]]) -> Composition:
        seen = {key for _, snap in snapshots for key in snap}
        columns = [c for c in FIXED if c in seen] + sorted(k for k in seen if k not in FIXED)
        return cls(columns, [r for r, _ in snapshots], [[snap.get(c, 0) for c in columns] for _, snap in snapshots])

    def series(self) -> dict[str, list[int]]:
        return {c: [row[j] for row in self.tokens] for j, c in enumerate(self.columns)}


def category(item: Any) -> str:
    message = item.message
    if item.cleared:
        return "cleared"
    if message.role == "tool":
        return f"tool:{message.name or 'unknown'}"
    return message.role


def snapshot(history: Any) -> dict[str, int]:
    """Tokens of the prompt as it stands, by column (sums to `history.prompt_tokens`)."""
    out = {HEAD: history.base_tokens}
    for item in history.items:
        key = category(item)
        out[key] = out.get(key, 0) + item.tokens
    return out


@dataclass(frozen=True)
class _NoParams:
    pass


class _Observer:
    """A pipeline stage that changes nothing and records the prompt's composition."""

    name = "composition"
    params = _NoParams()

    def __init__(self, sink: list[tuple[int, dict[str, int]]]) -> None:
        self.sink = sink

    def decide(self, ctx: Any) -> Sequence[Any]:
        self.sink.append((ctx.request, snapshot(ctx.history)))
        return ()


class _Recording:
    """`policy` with an observer run last, seeing every other stage's edits applied."""

    def __init__(self, policy: Any) -> None:
        self.inner = policy
        self.name = policy.name
        self.params = policy.params
        self.snapshots: list[tuple[int, dict[str, int]]] = []
        inner = tuple(getattr(policy, "stages", None) or (policy,))
        self.stages = (*inner, _Observer(self.snapshots))

    def decide(self, ctx: Any) -> Sequence[Any]:  # pragma: no cover - the engine runs the stages
        raise RuntimeError("run by the engine through `stages`")


def with_composition(policy: Any) -> _Recording:
    return _Recording(policy)


def record(replayer: Any, policy: Any, progress: Callable[[int], None] | None = None) -> Any:
    """Run `policy` on `replayer` and attach the composition block to the PolicyRun."""
    from ctxsim.policies import effective

    wrapped = with_composition(policy)
    run = replayer.run(wrapped, progress=progress)
    run.policy = effective(policy)  # the policy as given, without the observer stage
    run.composition = Composition.of(wrapped.snapshots)
    return run


# ---------------------------------------------------------------- chart
def _missing(result: RunResult) -> str | None:
    if all(composition_of(run) is None for run in result.runs):
        return ("this run.json has no `composition` block (the engine does not record it yet); "
                "see ctxsim/reports/composition.py")
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
        axes[-1].set_xlabel("request (model call number)")
        plot.thousands(axes[-1].xaxis)
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
