"""The loss columns and notes the reports share (ctxsim.loss): misses, re-fetch cost, probes, summarizers.

Every report states the re-fetch assumption beside the open-loop one, and says that a simulated LLM
summary (its size only) holds none of what it summarised, so its misses are an upper bound; an
extractive summary is real text ctxsim writes for free, and what it keeps counts as kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ctxsim.reports._terminal import money

LOSS_HEADERS = ["misses", "distinct ids", "miss tokens", "re-fetches", "cost w/ re-fetch"]
LLM_NOTE = ("a simulated LLM summary keeps, of the identifiers the agent had used in what it summarised, the share "
            "product summaries keep by kind (measured on recorded Claude Code summaries: paths 45 %, error lines and "
            "tickets 65 %, symbols 20 %, quoted strings 15 %, URLs and commands none; ctxsim.loss.kinds.RETAINED), "
            "the same ones in every run; an extractive summary (free) is real text and what it keeps counts as kept")


def summarizers(policy: Any) -> set[str]:
    """The summarizer kinds a run's policy (its stages included) uses."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            kind = value.get("summarizer")
            if isinstance(kind, str):
                found.add(kind)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and "summarizer=" in value:  # a pipeline stage spec
            found.add(value.split("summarizer=", 1)[1].split(",", 1)[0])

    walk({k: v for k, v in policy.items() if k in ("params", "stages")})
    return found


NOT_SUMMARIES = frozenset({"clear", "drop", "truncate", "mask", "threshold", "overflow", "insert", "evict", "tier"})


def summarized(run: Any) -> bool:
    """Whether the run wrote a summary (a paid call, or an edit of a kind that is not a plain removal)."""
    return run.totals.summarize_requests > 0 or any(e.kind not in NOT_SUMMARIES for e in run.events)


def summarizer_cell(run: Any) -> str:
    """What the run's summaries cost, and whether an LLM would have written them or ctxsim did, for free."""
    t = run.totals
    kinds = summarizers(run.policy)
    if t.summarize_requests:
        return f"{money(t.summarize_cost_usd)} (LLM)" if "llm" in kinds or not kinds else money(t.summarize_cost_usd)
    if "extractive" in kinds and summarized(run):
        return "free (extractive)"
    return "-"


def cost_with_refetch(run: Any) -> Any:
    from ctxsim.loss.verdict import cost_with_refetch as cost

    return cost(run)


def loss_cells(run: Any) -> list[str]:
    loss = run.loss
    return [f"{loss.recall_misses:,}", f"{loss.distinct_identifiers:,}", f"{loss.miss_source_tokens:,}",
            f"{len(loss.refetches):,}", money(cost_with_refetch(run))]


def notes(result: Any) -> list[str]:
    """The loss notes every report states (none for an artefact without loss data)."""
    entry = result.manifest.get("loss")
    if not entry or not any(run.loss is not None for run in result.runs):
        return []
    allowance = [_allowance_text(entry)] if len(result.runs) > 1 else []
    out = [entry["refetch_assumption"], *allowance, ("recall misses: identifiers (paths, names, errors, URLs, "
           "commands, ...; never bare numbers or units) a recorded answer uses that came from a user or tool message "
           "and that, under the policy, no message in the context holds any more (ctxsim.loss.identifiers); what a "
           "log's redaction markers hide is unknown and never counted as a miss")]
    if any("llm" in summarizers(run.policy) for run in result.runs):
        out.append(LLM_NOTE)
    return out


def _allowance_text(entry: dict[str, Any]) -> str:
    head = "* = the cheapest with re-fetches that never overflows and whose recall misses are within the allowance: "
    if entry.get("max_misses") is not None:
        return head + f"at most {entry['max_misses']:,} recall misses (--max-misses)"
    return head + (f"no more recall misses than the oracle at the same budget plus "
            f"{entry.get('miss_margin', 5):,} (--miss-margin), or than {entry.get('miss_margin', 5):,} when no oracle "
            "ran; the oracle is the bound, never starred")


def terminal_notes(result: Any) -> list[str]:
    out = [f"note: {line}" for line in notes(result)]
    from ctxsim.loss.verdict import starred, weighs_loss

    if weighs_loss(result) and starred(result) is None:
        out.append("note: no policy is starred: each overflows or has more recall misses than allowed")
    said = (result.manifest.get("loss") or {}).get("meter_note")
    if said:  # the loss meter checked against the re-fetches the agents made after this trace's own compactions
        out.append(f"note: {said}")
    table = retention_rows(result)
    if table:
        out.append("facts still in the managed context (probes; yes/no per checkpoint):")
        out.extend("  " + line for line in table)
    return out


def retention_rows(result: Any) -> list[str]:
    """A plain retention table: one line per policy, one column per probe (at the end; `kept/checked` over the
    chosen requests too)."""
    from ctxsim.reports._common import labels

    runs = [(name, run) for name, run in zip(labels(result), result.runs, strict=True)
            if run.loss is not None and run.loss.probes]
    if not runs:
        return []
    probes = [p["probe"] for p in runs[0][1].loss.probes]
    width = max(len(name) for name, _ in runs)
    heads = [p if len(p) <= 24 else p[:23] + "…" for p in probes]
    lines = ["policy".ljust(width) + "  " + "  ".join(heads) + "  lost"]
    for name, run in runs:
        cells = []
        for head, p in zip(heads, run.loss.probes, strict=True):
            at = p["at"]
            text = ("yes" if p["end"] else "no") + (f" {sum(at.values())}/{len(at)}" if at else "")
            cells.append(text.ljust(len(head)))
        lines.append(name.ljust(width) + "  " + "  ".join(cells) + f"  {run.loss.probes_lost}")
    return lines


__all__ = ["LLM_NOTE", "LOSS_HEADERS", "loss_cells", "notes", "retention_rows", "summarizer_cell", "terminal_notes"]


# ---------------------------------------------------------------- report.md
def markdown_verdict(result: Any, names: Sequence[str], best_i: int) -> str | None:
    """The verdict's first sentence when loss was metered (None: say it as before)."""
    from ctxsim.loss.verdict import allowance, starred, weighs_loss

    if not weighs_loss(result) or len(result.runs) < 2:
        return None
    from ctxsim.reports.markdown import code

    star = starred(result)
    if star is None:
        return ("no policy is starred: every one passes the window minus the reserve or has more recall misses than "
                "its allowance.")
    run = result.runs[star]
    base = result.runs[0]
    limit = allowance(result, star)
    return (f"{code(names[star])} is starred: the cheapest with re-fetches at {money(cost_with_refetch(run))} "
            f"(open-loop {money(run.totals.cost_usd)}) among the policies that never pass the window minus the reserve "
            f"and keep within {limit:,} recall misses; it has {run.loss.recall_misses:,}, against "
            f"{money(cost_with_refetch(base))} and {base.loss.recall_misses:,} for {code(names[0])}.")


def markdown_section(result: Any, names: Sequence[str], code: Any, cell: Any, most: int) -> list[str]:
    """The folded loss details: per-policy figures, the first misses, the probes' retention table."""
    if not any(run.loss is not None for run in result.runs):
        return []
    from ctxsim.loss.verdict import allowance

    content = bool((result.manifest.get("loss") or {}).get("include_content"))
    from ctxsim.loss.meter import shown

    total = sum(run.loss.recall_misses for run in result.runs if run.loss is not None)
    out = ["", f"<details><summary>Recall misses: {total:,} in all, re-fetch cost</summary>", "",
           ("| policy | recall misses | allowance | distinct identifiers | tokens of their sources | re-fetches | "
            "re-fetch cost | cost with re-fetches | summarizer |"), "|:--|--:|--:|--:|--:|--:|--:|--:|:--|"]
    for i, (name, run) in enumerate(zip(names, result.runs, strict=True)):
        loss = run.loss
        if loss is None:
            continue
        limit = allowance(result, i)
        cells = [code(name) + (" (bound)" if run.policy["name"] == "oracle" else ""), f"{loss.recall_misses:,}",
                 "—" if limit is None or run.policy["name"] == "oracle" else f"{limit:,}",
                 f"{loss.distinct_identifiers:,}", f"{loss.miss_source_tokens:,}", f"{len(loss.refetches):,}",
                 money(loss.refetch_cost_usd or Decimal(0)), money(cost_with_refetch(run)), summarizer_cell(run)]
        out.append("| " + " | ".join(cell(c) for c in cells) + " |")
    listed = [(name, run) for name, run in zip(names, result.runs, strict=True) if run.loss and run.loss.misses]
    if listed and most:
        what = "identifier" if content else "identifier (sha256 digest/length: --include-content shows it)"
        out += ["", f"The first {most} misses per policy:", "",
                f"| policy | request | {what} | from (message, role, tool) | removed by (request, edit) |",
                "|:--|--:|:--|:--|:--|"]
        for name, run in listed:
            for m in run.loss.misses[:most]:
                ident = m.identifier if m.identifier.startswith("sha256:") else shown(m.identifier, content)
                source = f"#{m.source} {m.role}" + (f" {m.tool}" if m.tool else "")
                removed = f"{m.removed.request:,} {m.removed.kind}" if m.removed else "—"
                out.append("| " + " | ".join(cell(c) for c in [code(name), f"{m.request:,}", code(ident), source,
                                                               removed]) + " |")
        out += ["", "<sub>The whole list is in run.json (`runs[].loss.misses`).</sub>"]
    table = retention_rows(result)
    if table:
        out += ["", "Facts still in the managed context (probes: yes/no at the end; kept/checked at `--probe-at`):",
                "", "```", *table, "```"]
    out += ["", "</details>"]
    return out


def summary_rows(result: Any) -> list[list[str]]:
    """The loss rows of the replay summary table, one column per run."""
    runs = result.runs
    rows = [
        ["recall misses"] + [f"{run.loss.recall_misses:,}" for run in runs],
        ["distinct identifiers missed"] + [f"{run.loss.distinct_identifiers:,}" for run in runs],
        ["tokens of their sources"] + [f"{run.loss.miss_source_tokens:,}" for run in runs],
        ["re-fetches (estimate)"] + [f"{len(run.loss.refetches):,}" for run in runs],
        ["cost with re-fetches (estimate)"] + [money(cost_with_refetch(run)) for run in runs],
    ]
    if any(run.loss.probes for run in runs):
        rows.append(["probes lost (at the end)"] + ["-" if run.loss.probes_lost is None else f"{run.loss.probes_lost:,}"
                                                    for run in runs])
    return rows
