"""Fidelity of the unmanaged replay (`none`) against what the provider billed, per real session.

For every real sample with per-request usage under ../shared/traces-real (skipped, with a note,
when that folder is absent), replays each trace under `none` with its own provider and model and
compares every request with its recorded usage, per session:

* prompt: per-request |simulated - recorded| / recorded prompt, median and p90;
* read, write: total simulated cache read / write against the recorded total (relative);
* hit pt: simulated minus recorded hit rate (cache read / prompt), in points;
* cost: total simulated cost against the recorded bill (relative, list prices);
* range: whether the recorded bill lies inside the calibration's cost range (when it gives one).

Four modes:

* `fit`: per-trace calibration, the fit on the trace's own usage, the recorded cache facts and
  re-anchors copied (the anchored score `validate` shows);
* `predict`: calibrated on the first half of each session only, no cache fact and no re-anchor from
  the second half, scored on the second half (`validate --predict`, the predicted score);
* `priors`: no fit, the shipped priors per tokenizer and provider (shipped data no sample was used
  to set), each session part anchored on its first request;
* `others`: leave-one-session-out: scale and overhead fitted on every OTHER session of the same
  provider (all samples), applied as the prior to the held-out session, which is anchored on its
  own first request as in `priors`. It says whether a per-product constant would generalise.

It is a benchmark, not a test: it prints what it measures and never fails on a figure.
Usage: python benchmarks/bench_fidelity.py [--root ../shared/traces-real] [--tokenizer o200k_base]
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections import defaultdict
from pathlib import Path

from ctxsim.analysis.validate import quantile, validate
from ctxsim.errors import CtxsimError
from ctxsim.formats import FileReport, read_traces

DEFAULT_ROOT = Path(__file__).resolve().parent.parent.parent / "shared" / "traces-real"


def groups(root: Path) -> list[tuple[str, list[str]]]:
    """Input sets: a Claude Code session with its subagent files read together, every other file alone."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or not path.is_file():
                continue
            key = str(path)
            if folder.name == "claude-code" and path.name.startswith("mclaude-"):
                key = f"{folder.name}/{'-'.join(path.name.split('-')[:2])}"
            by_key[key].append(str(path))
    return sorted(by_key.items())


def _validate(trace, tokenizer: str, mode: str, reports: list[FileReport]):  # type: ignore[no-untyped-def]
    params = inspect.signature(validate).parameters
    if "mode" in params:  # the calibration that knows priors and gaps
        return validate(trace, tokenizer, mode=mode, reports=reports)
    return validate(trace, tokenizer, calibrate=(mode == "fit"))  # before: fit or raw


def leave_one_out(loaded: list[tuple[str, object, list[FileReport]]], tokenizer: str) -> list[list[str]]:
    """Per held-out session: scale and overhead fitted on the other sessions of its provider."""
    from dataclasses import replace

    from ctxsim.analysis.calibrate import calibration, token_prior
    from ctxsim.model import Trace
    from ctxsim.replay.engine import Setup, resolve

    by_provider: dict[str, list[tuple[str, object]]] = defaultdict(list)
    for name, trace, _ in loaded:
        provider = resolve(trace, Setup())[0].provider  # type: ignore[arg-type]
        for session in trace.sessions:  # type: ignore[attr-defined]
            by_provider[provider].append((name, session))
    out: list[list[str]] = []
    for _, trace, reports in loaded:
        provider = resolve(trace, Setup())[0].provider  # type: ignore[arg-type]
        for session in trace.sessions:  # type: ignore[attr-defined]
            if not any(m.usage is not None and m.usage.input_tokens > 0 for m in session.messages):
                continue
            others = [s for _, s in by_provider[provider] if s is not session]
            if not others:
                continue
            learned = calibration(Trace("others", tuple(others)), tokenizer)  # type: ignore[arg-type]
            base = token_prior(learned.tokenizer, provider)
            prior = replace(base, scale=learned.scale, message_tokens=learned.message_tokens,
                            file_weight=learned.file_weight, classes=None,
                            source=f"fitted on {len(others)} other sessions", date="")
            cal = calibration(trace, tokenizer, mode="priors", reports=reports, prior=prior)  # type: ignore[arg-type]
            result = validate(trace, tokenizer, calibration=cal)  # type: ignore[arg-type]
            out.extend(r for r in rows_of(result, "others") if session.id.endswith(r[1]))
    return out


def _predicted(trace, tokenizer: str, reports: list[FileReport], skipped: list[str], name: str
               ) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The predicted score's rows (calibrated on each session's first half, scored on the rest), when it exists."""
    try:
        from ctxsim.analysis.predict import predict
    except ImportError:  # before validate --predict
        return []
    try:
        return rows_of(predict(trace, tokenizer, 0.5, reports=reports).validation, "predict")
    except CtxsimError as exc:
        skipped.append(f"{name}: predict: {exc}".splitlines()[0][:160])
        return []


def rows_of(result, label: str) -> list[list[str]]:  # type: ignore[no-untyped-def]
    by_session: dict[str, list] = defaultdict(list)
    for check in result.checks:
        by_session[check.session].append(check)
    ranges = getattr(result, "session_cost_ranges", {}) or {}
    out = []
    for session, checks in by_session.items():
        errors = [c.prompt_error for c in checks]
        rec_in = sum(c.recorded_input_tokens for c in checks)
        sim_in = sum(c.simulated_input_tokens for c in checks)
        rec_read = sum(c.recorded_cache_read_tokens for c in checks)
        sim_read = sum(c.simulated_cache_read_tokens for c in checks)
        rec_write = sum(c.recorded_cache_write_tokens for c in checks)
        sim_write = sum(c.simulated_cache_write_tokens for c in checks)
        rec_cost = sum(c.recorded_cost_usd for c in checks)
        sim_cost = sum(c.simulated_cost_usd for c in checks)
        hit = (sim_read / sim_in if sim_in else 0.0) - (rec_read / rec_in if rec_in else 0.0)
        span = ranges.get(session)
        inside = "-" if span is None else ("yes" if span[0] <= rec_cost <= span[1] else "no")
        out.append([label, session[-34:], str(len(checks)), _pct(quantile(errors, 0.5)), _pct(quantile(errors, 0.9)),
                    _rel(sim_read, rec_read), _rel(sim_write, rec_write), f"{hit * 100:+.2f}",
                    _rel(sim_cost, rec_cost), inside])
    return out


def _pct(value: float) -> str:
    return f"{value * 100:.2f}%"


def _rel(sim: float, rec: float) -> str:
    return f"{(float(sim) - float(rec)) / float(rec) * 100:+.2f}%" if rec else "-"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=os.environ.get("CTXSIM_TRACES_REAL", str(DEFAULT_ROOT)))
    parser.add_argument("--tokenizer", default="o200k_base")
    args = parser.parse_args()
    root = Path(args.root)
    if not root.is_dir():
        print(f"bench_fidelity: skipped: {root} is absent (real samples are read from ../shared/traces-real)")
        return 0
    header = ["mode", "session", "reqs", "prompt med", "prompt p90", "read", "write", "hit pt", "cost", "in range"]
    table: list[list[str]] = []
    skipped: list[str] = []
    loaded: list[tuple[str, object, list[FileReport]]] = []
    for name, paths in groups(root):
        reports: list[FileReport] = []
        try:
            trace = read_traces(paths, None, True, reports)
        except CtxsimError as exc:
            skipped.append(f"{name}: unreadable: {exc}")
            continue
        for mode in ("fit", "priors"):
            try:
                result = _validate(trace, args.tokenizer, mode, reports)
            except CtxsimError as exc:
                skipped.append(f"{name}: {exc}".splitlines()[0][:160])
                break
            table.extend(rows_of(result, mode))
        else:
            loaded.append((name, trace, reports))
            table.extend(_predicted(trace, args.tokenizer, reports, skipped, name))
    if "mode" in inspect.signature(validate).parameters:  # the calibration that takes a prior
        table.extend(leave_one_out(loaded, args.tokenizer))
    order = {"fit": 0, "predict": 1, "priors": 2, "others": 3}
    table.sort(key=lambda r: (order[r[0]], r[1]))
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *table]:
        print("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths, strict=False))))
    for note in skipped:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
