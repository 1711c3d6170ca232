"""What `ctxsim tune` writes: the front as a table, the recommended setting as a policy file (TOML that
`--policy FILE.toml#NAME` loads back) and, where the API has the same knobs, as Anthropic
`context_management` JSON; the Pareto chart (PNG, byte-stable); every trial as CSV; the whole outcome as JSON
(`--json`)."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from typing import Any

from ctxsim.tune.search import REFETCH_ASSUMPTION, Measured, Outcome, Trial


def _money(value: Decimal) -> str:
    from ctxsim.reports._terminal import money

    return money(value)


def policy_name(outcome: Outcome) -> str:
    return f"{outcome.family}-tuned"


def _traces(outcome: Outcome) -> str:
    import os

    names = [os.path.basename(t.path) for t in outcome.targets]
    return ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")


def _limit(outcome: Outcome, budget_label: str | None) -> str:
    limits = sorted({t.limit for t in outcome.targets})
    what = f"budget {budget_label}" if budget_label else "the window minus the output reserve"
    return f"{what}: {', '.join(f'{x:,}' for x in limits)} tokens"


# ---------------------------------------------------------------- the table


def table(outcome: Outcome, every: bool = False) -> Any:
    from ctxsim.reports._fit import FitTable

    shown = list(range(len(outcome.trials)) if every else outcome.front)
    idle = [i for i in shown if never_fires(outcome.trials[i])]
    rows = []
    for i in shown:
        t = outcome.trials[i]
        m = t.measured
        if i in idle[1:]:  # identical to the first that never fires, said there
            continue
        mark = "★" if i == outcome.recommended and not no_op(outcome) else ("front" if i in outcome.front else "")
        if i in idle and m is not None:
            label = t.label if len(idle) == 1 else f"{len(idle):,} settings never fire (e.g. {t.label})"
            rows.append([str(t.number), label, _money(m.refetch_cost_usd), _money(m.cost_usd), f"{m.misses:,}",
                         f"{m.distinct:,}", f"{m.peak_context_tokens:,}", "= none"])
            continue
        if m is None:
            rows.append([str(t.number), t.label, "-", "-", "-", "-", "-", f"refused: {t.error}"])
            continue
        if m.over:
            mark = "overflows"
        rows.append([str(t.number), t.label, _money(m.refetch_cost_usd), _money(m.cost_usd), f"{m.misses:,}",
                     f"{m.distinct:,}", f"{m.peak_context_tokens:,}", mark])
    b = outcome.bound
    rows.append(["-", "oracle (the bound)", _money(b.refetch_cost_usd), _money(b.cost_usd), f"{b.misses:,}",
                 f"{b.distinct:,}", f"{b.peak_context_tokens:,}", "bound"])
    title = (f"{outcome.family}: {'every trial' if every else 'the Pareto front'} "
             f"(cost with re-fetches against recall misses) of {len(outcome.trials):,} trial(s), {outcome.how}")
    return FitTable(title, ["trial", "setting", "cost w/ re-fetch", "open-loop cost", "misses", "distinct",
                            "peak context", ""], rows, left=2, minimum=24,
                    keep=("setting", "cost w/ re-fetch", "misses", "", "trial", "peak context", "open-loop cost",
                          "distinct"))


def notes(outcome: Outcome, budget_label: str | None) -> list[str]:
    out = [(f"traces: {_traces(outcome)}; a trial overflows when a request's context passes "
            f"{_limit(outcome, budget_label)}")]
    over = sum(1 for t in outcome.trials if t.measured is not None and t.measured.over)
    refused = sum(1 for t in outcome.trials if t.error is not None)
    if over or refused:
        first = next((t.error for t in outcome.trials if t.error is not None), None)
        why = f" ({first})" if first else ""
        out.append(f"{over:,} trial(s) overflow, {refused:,} refused by the policy at this limit{why}: "
                   "not on the front, never recommended")
    if no_op(outcome):
        t = outcome.trials[outcome.recommended]  # type: ignore[index]
        out.insert(0, f"nothing to gain: the best trial within the allowance (trial {t.number}) changes nothing on "
                      "these traces (it never fires): it is `none`, so no setting is recommended")
    allowed = outcome.allowed
    if outcome.max_misses is None and allowed is not None:
        out.append(f"--max-misses not given: at most {allowed:,} (the fewest any trial that never overflows has); "
                   f"the oracle's bound at this limit is {outcome.bound.misses:,}")
    else:
        out.append(f"the oracle's bound at this limit: {outcome.bound.misses:,} recall miss(es)")
    if outcome.recommended is None:
        allowed_text = "" if allowed is None else f" with at most {allowed:,} recall miss(es)"
        out.append(f"no recommendation: no trial stays within the limit{allowed_text} "
                   "(raise --budget or --max-misses, or try another family)")
    out.append(REFETCH_ASSUMPTION)
    return out


# ---------------------------------------------------------------- the policy file


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if value is None:
        return '"none"'
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} in TOML")


def never_fires(t: Trial) -> bool:
    """A trial whose policy did nothing on every trace (a trigger above every peak): `none` by another name."""
    return t.measured is not None and t.measured.events == 0


def no_op(outcome: Outcome) -> bool:
    """The best trial within the allowance never fires: nothing to gain, nothing to recommend."""
    return outcome.recommended is not None and never_fires(outcome.trials[outcome.recommended])


def recommended_params(outcome: Outcome) -> dict[str, Any] | None:
    if outcome.recommended is None or no_op(outcome):  # never a setting that does nothing
        return None
    return outcome.trials[outcome.recommended].params[0]


def toml_text(outcome: Outcome, budget_label: str | None, seed: int) -> str | None:
    """The recommended setting as a policy file (`--policy FILE.toml#NAME`)."""
    params = recommended_params(outcome)
    if params is None:
        return None
    t = outcome.trials[outcome.recommended]  # type: ignore[index]
    m = t.measured
    assert m is not None
    lines = [f"# ctxsim tune: the recommended {outcome.family} setting (trial {t.number}: {t.label})",
             f"# traces: {_traces(outcome)}; {_limit(outcome, budget_label)}",
             f"# {outcome.how}" + ("" if "seed" in outcome.how else f" (seed {seed})"),
             (f"# cost with re-fetches {_money(m.refetch_cost_usd)} (open-loop {_money(m.cost_usd)}), "
              f"recall misses {m.misses:,} (the oracle's bound {outcome.bound.misses:,}), "
              f"peak context {m.peak_context_tokens:,} tokens")]
    if any(p != params for p in t.params[1:]):
        lines.append("# the thresholds are this first trace's; on the others they scale with each one's limit")
    lines += ["", f"[policies.{policy_name(outcome)}]", f'policy = "{outcome.family}"']
    lines += [f"{name} = {_toml_value(value)}" for name, value in params.items()]
    return "\n".join(lines) + "\n"


def context_management(outcome: Outcome) -> tuple[dict[str, Any] | None, str]:
    """The recommended setting as Anthropic `context_management` JSON, or None and why not."""
    params = recommended_params(outcome)
    from ctxsim.policies import policies

    known = policies()
    kind = known[outcome.family].api_edit
    if kind is None:
        edits = " and ".join(f"{name} -> {info.api_edit}" for name, info in known.items() if info.api_edit)
        return None, (f"{outcome.family} runs in the client: the Anthropic API has no context_management edit "
                      f"for it (only {edits})")
    if params is None:
        return None, "no recommendation to write"
    defaults = known[outcome.family].params()
    full = {name: params.get(name, getattr(defaults, name)) for name in defaults.__dataclass_fields__}
    edit: dict[str, Any] = {"type": kind}
    if outcome.family == "clear":
        edit["trigger"] = {"type": full["trigger_type"], "value": full["trigger"]}
        edit["keep"] = {"type": "tool_uses", "value": full["keep"]}
        if full["clear_at_least"]:
            edit["clear_at_least"] = {"type": "input_tokens", "value": full["clear_at_least"]}
        if full["exclude_tools"]:
            edit["exclude_tools"] = list(full["exclude_tools"])
        edit["clear_tool_inputs"] = full["clear_tool_inputs"]
    else:
        edit["trigger"] = {"type": "input_tokens", "value": full["trigger"]}
        edit["pause_after_compaction"] = full["pause_after_compaction"]
        if full["instructions"] is not None:
            edit["instructions"] = full["instructions"]
    return {"context_management": {"edits": [edit]}}, ""


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


# ---------------------------------------------------------------- the whole outcome, as JSON (--json)


def _measured_json(m: Measured | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"cost_usd": format(m.cost_usd, "f"), "cost_with_refetch_usd": format(m.refetch_cost_usd, "f"),
            "recall_misses": m.misses, "distinct_missed": m.distinct, "refetches": m.refetches,
            "peak_context_tokens": m.peak_context_tokens, "overflows": m.over, "events": m.events}


def _setting_json(value: Any) -> Any:
    """A setting's value as JSON: a fraction of the limit as {"fraction_of_limit": f}, a value taken from another
    parameter as {"same_as": name}."""
    from ctxsim.tune.space import Rel, Same

    if isinstance(value, Rel):
        return {"fraction_of_limit": value.fraction}
    if isinstance(value, Same):
        return {"same_as": value.param}
    return list(value) if isinstance(value, tuple) else value


def outcome_json(outcome: Outcome, budget_label: str | None, seed: int, every: bool = False) -> dict[str, Any]:
    """What `tune` shows, for machines: the Pareto front (or every trial), the oracle's bound, the
    recommendation (its trial, policy file and context_management, where expressible) and the notes."""
    import os

    def trial(i: int) -> dict[str, Any]:
        t = outcome.trials[i]
        return {"trial": t.number, "setting": t.label, "values": {k: _setting_json(v) for k, v in t.setting.items()},
                "params": t.params,
                "measured": _measured_json(t.measured), "refused": t.error, "on_front": i in outcome.front,
                "recommended": i == outcome.recommended}

    cm, why = context_management(outcome)
    return {
        "schema": "ctxsim.tune/1",
        "family": outcome.family,
        "how": outcome.how,
        "seed": seed,
        "traces": [os.path.basename(t.path) for t in outcome.targets],
        "limit_tokens": [t.limit for t in outcome.targets],
        "budget": budget_label,
        "max_misses": outcome.max_misses,
        "allowed_misses": outcome.allowed,
        "bound": _measured_json(outcome.bound),
        "front": [trial(i) for i in outcome.front],
        **({"trials": [trial(i) for i in range(len(outcome.trials))]} if every else {}),
        "recommended": trial(outcome.recommended) if outcome.recommended is not None else None,
        "policy_name": policy_name(outcome),
        "policy_toml": toml_text(outcome, budget_label, seed),
        "context_management": cm,
        "context_management_note": why or None,
        "notes": notes(outcome, budget_label),
    }


# ---------------------------------------------------------------- every trial, as CSV


def trials_csv(outcome: Outcome) -> str:
    names = list(outcome.trials[0].setting) if outcome.trials else []
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["trial", *names, "cost_usd", "refetch_cost_usd", "recall_misses", "distinct_missed",
                     "refetches", "peak_context_tokens", "overflows", "on_front", "recommended", "refused"])
    for i, t in enumerate(outcome.trials):
        m = t.measured
        values = [str(t.params[0][n]).lower() if isinstance(t.params[0][n], bool) else str(t.params[0][n])
                  for n in names]
        if m is None:
            writer.writerow([t.number, *values, "", "", "", "", "", "", "", "false", "false", t.error])
            continue
        writer.writerow([t.number, *values, format(m.cost_usd, "f"), format(m.refetch_cost_usd, "f"), m.misses,
                         m.distinct, m.refetches, m.peak_context_tokens, str(m.over).lower(),
                         str(i in outcome.front).lower(), str(i == outcome.recommended).lower(), ""])
    return buffer.getvalue()


# ---------------------------------------------------------------- the chart


def _point_label(t: Trial) -> str:
    return f"{t.number}"


def chart(outcome: Outcome, budget_label: str | None, fmt: str = "png") -> bytes:
    """Cost with re-fetches against recall misses: every trial, the front joined, the recommendation
    starred, the oracle's bound as a line."""
    from matplotlib.lines import Line2D

    from ctxsim.reports import _plot as plot

    trials = outcome.trials
    feasible = outcome.feasible()
    over = [i for i, t in enumerate(trials) if t.measured is not None and t.measured.over]
    front = outcome.front
    best = outcome.recommended
    with plot.style():
        fig, (ax,) = plot.figure(7.0)

        def xy(i: int) -> tuple[float, float]:
            m = trials[i].measured
            assert m is not None
            return float(m.misses), float(m.refetch_cost_usd)

        if over:
            ax.scatter([xy(i)[0] for i in over], [xy(i)[1] for i in over], marker="x", s=36, color="#b0b0b0",
                       zorder=2, linewidths=1.2)
        rest = [i for i in feasible if i not in front]
        if rest:
            ax.scatter([xy(i)[0] for i in rest], [xy(i)[1] for i in rest], s=42, facecolor="#ffffff",
                       edgecolor="#0072B2", linewidths=1.4, zorder=3)
        if front:
            ax.plot([xy(i)[0] for i in front], [xy(i)[1] for i in front], color="#888888", linewidth=5, alpha=0.35,
                    solid_capstyle="round", zorder=1, drawstyle="steps-post" if len(front) > 1 else "default")
            ax.scatter([xy(i)[0] for i in front], [xy(i)[1] for i in front], s=70, color="#0072B2", zorder=4)
            for i in front:
                ax.annotate(_point_label(trials[i]), xy(i), xytext=(6, 6), textcoords="offset points", fontsize=8.5,
                            color="#0072B2", zorder=6)
        if best is not None:
            ax.scatter([xy(best)[0]], [xy(best)[1]], s=260, marker="*", color="#D55E00", edgecolor="#000000",
                       linewidths=0.8, zorder=5)
        bound = outcome.bound.misses
        ax.axvline(bound, color="#009E73", linestyle="--", linewidth=1.4, zorder=1)
        if outcome.allowed is not None and outcome.allowed != bound:
            ax.axvline(outcome.allowed, color="#CC79A7", linestyle=":", linewidth=1.4, zorder=1)
        points = [xy(i) for i in feasible + over]
        xmax = max([p[0] for p in points] + [bound, outcome.allowed or 0, 1])
        ymax = max([p[1] for p in points] + [0.0]) or 1.0
        ax.set_xlim(-0.04 * xmax - 0.5, xmax * 1.1 + 0.5)
        ax.set_ylim(0, ymax * 1.12)
        ax.set_xlabel("recall misses (count)  →  worse")
        ax.set_ylabel("cost with re-fetches (USD)  →  worse")
        plot.thousands(ax.xaxis)
        plot.dollars(ax.yaxis)
        fig.suptitle(f"ctxsim tune: {outcome.family} on {_traces(outcome)}", fontweight="bold", fontsize=12)
        ax.set_title(f"{len(trials):,} trial(s), {outcome.how} · {_limit(outcome, budget_label)} · open-loop replay",
                     fontsize=9, fontweight="normal", color="#444444")
        handles: list[Any] = [
            Line2D([], [], marker="o", linestyle="none", markersize=8, color="#0072B2"),
            Line2D([], [], marker="o", linestyle="none", markersize=7, markerfacecolor="#ffffff",
                   markeredgecolor="#0072B2", markeredgewidth=1.4),
            Line2D([], [], marker="x", linestyle="none", markersize=7, color="#b0b0b0"),
            Line2D([], [], color="#009E73", linestyle="--", linewidth=1.4),
        ]
        texts = [f"on the Pareto front ({len(front):,}; numbered by trial)",
                 f"off the front: another trial is no worse on both axes ({len(rest):,})",
                 f"overflows the limit ({len(over):,}): never recommended",
                 f"oracle, the bound: {bound:,} miss(es)"]
        if outcome.allowed is not None and outcome.allowed != bound:
            handles.append(Line2D([], [], color="#CC79A7", linestyle=":", linewidth=1.4))
            texts.append(f"misses allowed: {outcome.allowed:,}")
        if best is not None:
            t = trials[best]
            assert t.measured is not None
            handles.append(Line2D([], [], marker="*", linestyle="none", markersize=14, color="#D55E00",
                                  markeredgecolor="#000000", markeredgewidth=0.8))
            texts.append(f"recommended: trial {t.number}, {t.label}: {_money(t.measured.refetch_cost_usd)}, "
                         f"{t.measured.misses:,} miss(es)")
        plot.legend_below(fig, handles, texts, 1, fontsize=8.5)
        return plot.save(fig, fmt)


__all__ = ["chart", "context_management", "json_text", "notes", "policy_name", "table", "toml_text", "trials_csv"]
