"""The sweep's report: the tables (a row per policy and budget across the corpus, a row per session on
request), the manifest and the notes, aggregated from the cells' summaries (ctxsim.replay.sweep), never
from their rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ctxsim import __version__
from ctxsim.errors import CtxsimError
from ctxsim.replay.budgets import NO_BUDGET, Budget, budget_params
from ctxsim.replay.sweep import LOSS_SCHEMA, SCHEMA, Plan, PolicyEntry, budgets_for, options_json


def _s(value: Decimal) -> str:
    """Exact, never in exponent form (`0E-8`)."""
    return format(value, "f")


def _dec(text: str | None) -> Decimal:
    return Decimal(text) if text is not None else Decimal(0)


LOSS_ORDER = ("recall_misses", "distinct_identifiers", "refetches", "refetch_cost_usd", "cost_with_refetch_usd")


def _loss_columns(summaries: Iterable[dict[str, Any]]) -> list[str]:
    """The loss columns the cells have: the loss meter's in LOSS_ORDER, then any other meter's, sorted."""
    names: set[str] = set()
    for s in summaries:
        for session in s["sessions"]:
            names.update(session.get("loss", {}))
    return [c for c in LOSS_ORDER if c in names] + sorted(names - set(LOSS_ORDER))


@dataclass
class Report:
    """The sweep's results, aggregated from the cell summaries (no rows)."""

    plan: Plan  # its `done`: each cell's summary as JSON text (parsed when read: text is a tenth of the dicts)

    def summary(self, i: int, label: str, budget: str) -> dict[str, Any]:
        summary: dict[str, Any] = json.loads(self.plan.done[self.plan.cells[(i, label, budget)]])
        return summary

    def summaries(self) -> Iterable[dict[str, Any]]:
        return (json.loads(self.plan.done[cid]) for cid in sorted(set(self.plan.cells.values())))

    def baseline_label(self) -> str:
        return next(e.label for e in self.plan.policies if e.effective["name"] == "none")

    def policy_rows(self) -> tuple[list[str], list[list[str]]]:
        loss = _loss_columns(self.summaries())
        headers = ["policy", "budget", "traces", "sessions", "requests", "cost_usd", "none_cost_usd",
                   "saving_usd", "saving_pct", "sessions_over_window", "peak_context_tokens", "summarizer_cost_usd",
                   "events"] + [f"loss_{c}" for c in loss]
        base = self.baseline_label()
        rows = []
        for entry in self.plan.policies:
            for budget in budgets_for(entry, self.plan.budgets):
                cost = none_cost = summarize = Decimal(0)
                sessions = requests = over = events = peak = 0
                losses = {c: Decimal(0) for c in loss}
                for i in range(len(self.plan.inputs)):
                    s = self.summary(i, entry.label, budget.label)
                    b = self.summary(i, base, NO_BUDGET)
                    for sess in s["sessions"]:
                        sessions += 1
                        requests += sess["requests"]
                        cost += _dec(sess["cost_usd"])
                        summarize += _dec(sess["summarize_cost_usd"])
                        over += sess["first_overflow_request"] is not None
                        events += sess["events"]
                        peak = max(peak, sess["peak_context_tokens"])
                        for c in loss:
                            losses[c] += Decimal(str(sess.get("loss", {}).get(c, 0)))
                    none_cost += sum((_dec(x["cost_usd"]) for x in b["sessions"]), Decimal(0))
                saving = none_cost - cost
                pct = f"{saving / none_cost * 100:.1f}" if none_cost else "n/a"
                rows.append([entry.label, budget.label, str(len(self.plan.inputs)), str(sessions), str(requests),
                             _s(cost), _s(none_cost), _s(saving), pct, str(over), str(peak), _s(summarize),
                             str(events)] + [_s(losses[c]) for c in loss])
        return headers, rows

    def session_rows(self) -> tuple[list[str], list[list[str]]]:
        loss = _loss_columns(self.summaries())
        headers = ["trace", "session", "policy", "budget", "budget_tokens", "requests", "cost_usd", "none_cost_usd",
                   "saving_usd", "recorded_cost_usd", "peak_context_tokens", "first_overflow_request",
                   "events"] + [f"loss_{c}" for c in loss]
        base = self.baseline_label()
        rows = []
        for i, (path, _, _tid) in enumerate(self.plan.inputs):
            b = {x["session"]: x for x in self.summary(i, base, NO_BUDGET)["sessions"]}
            for entry in self.plan.policies:
                for budget in budgets_for(entry, self.plan.budgets):
                    s = self.summary(i, entry.label, budget.label)
                    for sess in s["sessions"]:
                        none_cost = _dec(b[sess["session"]]["cost_usd"])
                        cost = _dec(sess["cost_usd"])
                        first = sess["first_overflow_request"]
                        rows.append([path, sess["session"], entry.label, budget.label,
                                     "" if s["budget_tokens"] is None else str(s["budget_tokens"]),
                                     str(sess["requests"]), _s(cost), _s(none_cost), _s(none_cost - cost),
                                     sess.get("recorded_cost_usd") or "", str(sess["peak_context_tokens"]),
                                     "" if first is None else str(first), str(sess["events"])]
                                    + [str(sess.get("loss", {}).get(c, "")) for c in loss])
        return headers, rows

    def recorded(self) -> tuple[int, int, Decimal, Decimal]:
        """(sessions whose every logged request is priced, sessions, their recorded bill, none's replay of them)."""
        base = self.baseline_label()
        priced = total = 0
        cost = replayed = Decimal(0)
        for i in range(len(self.plan.inputs)):
            for sess in self.summary(i, base, NO_BUDGET)["sessions"]:
                total += 1
                if sess.get("recorded_cost_usd") is not None:
                    priced += 1
                    cost += Decimal(sess["recorded_cost_usd"])
                    replayed += Decimal(sess["cost_usd"])
        return priced, total, cost, replayed

    def notes(self) -> list[str]:
        notes: set[str] = set()
        for s in self.summaries():
            notes.update(s.get("price_notes", []))
        return sorted(notes)

    def date_counts(self) -> dict[str, Any] | None:
        """--since/--until: the range, and how many sessions were replayed, outside it, or with no time to tell."""
        if self.plan.dates is None:
            return None
        base = self.baseline_label()
        outside = untimed = kept = 0
        for i in range(len(self.plan.inputs)):
            s = self.summary(i, base, NO_BUDGET)
            outside += s.get("skipped_sessions", {}).get("outside_dates", 0)
            untimed += s.get("skipped_sessions", {}).get("untimed", 0)
            kept += len(s["sessions"])
        dates: dict[str, Any] = self.plan.dates.to_json()
        return dates | {"sessions_replayed": kept, "sessions_outside": outside, "sessions_untimed": untimed}

    def date_notes(self) -> list[str]:
        counts = self.date_counts()
        if counts is None:
            return []
        untimed = counts["sessions_untimed"]
        untimed_text = f"; {untimed:,} with no time to tell, skipped too" if untimed else ""
        return [(f"{self.plan.dates.describe()}: {counts['sessions_replayed']:,} session(s) started in the range "
                 f"and were replayed; {counts['sessions_outside']:,} outside it skipped{untimed_text}")]

    def manifest(self) -> dict[str, Any]:
        from ctxsim.pricing.prices import price_data_latest_change, price_data_version

        return {
            "schema": SCHEMA,
            "ctxsim_version": __version__,
            "prices": price_data_version(),
            "price_data_latest_change": price_data_latest_change(),
            "price_notes": self.notes(),
            "assumption": "open-loop replay: the agent's recorded outputs are replayed unchanged whatever the "
                          "policy does",
            "loss": self._loss_block(),
            "budget_params": budget_params() | {"others": "no budget: run once, budget '-'"},
            "budgets": [b.to_json() for b in self.plan.budgets],
            "policies": [{"label": e.label, "spec": e.spec, "effective": e.effective, "takes_budget": e.takes_budget,
                          "cells": {b.label: self._effective_at(e, b) for b in budgets_for(e, self.plan.budgets)}}
                         for e in self.plan.policies],
            "options": options_json(self.plan.options) | {"format": self.plan.fmt}
            | ({"dates": self.date_counts()} if self.plan.dates is not None else {}),
            "inputs": [{"path": path, "digest": digest, "trace_id": tid} for path, digest, tid in self.plan.inputs],
            "left_out": [{"path": path, "why": why} for path, why in self.plan.left_out],
            "cells": len(self.plan.cells),
            "dataset": "cells/trace=<trace_id>/<part>.parquet: per-request rows of the cells run together on that "
                       "trace (columns cell, policy, budget, budget_tokens and the rows' fields); the cells' "
                       "summaries as a JSON list in the file's metadata key ctxsim.cells",
        }

    def _loss_block(self) -> dict[str, Any]:
        from ctxsim.loss.refetch import ASSUMPTION

        return {"schema": LOSS_SCHEMA, "columns": _loss_columns(self.summaries()), "refetch_assumption": ASSUMPTION,
                "rules": "ctxsim/loss/identifiers.py: a recall miss is an identifier a recorded answer uses that an "
                         "earlier user or tool message held and no item of the managed context holds"}

    def _effective_at(self, entry: PolicyEntry, budget: Budget) -> Any:
        """The effective policy of a budget: the same for every trace when absolute, per trace when a fraction."""
        if budget.label == NO_BUDGET:
            return None
        if budget.tokens is not None:
            s = self.summary(0, entry.label, budget.label)
            return s["policy"].get("params") if "stages" not in s["policy"] else s["policy"]["stages"]
        return f"{budget.fraction} of each trace's window (per-trace effective parameters in each cell's summary)"


def load_report(p: Plan) -> Report:
    wanted = set(p.cells.values())
    missing = wanted - set(p.done)
    if missing:
        raise CtxsimError(f"{len(missing)} cell(s) have no result")
    return Report(p)


def csv_text(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue()


__all__ = ["LOSS_ORDER", "Report", "csv_text", "load_report"]
