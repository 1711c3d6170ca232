"""Helpers shared by the reports: loading and dumping the artefact, labels, numbers.

`load_run` wraps `RunResult.load` with one-line errors for anything that is not
a run artefact.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from ctxsim.errors import CtxsimError
from ctxsim.replay.engine import PolicyRun
from ctxsim.replay.run import RunResult


# ---------------------------------------------------------------- artefact
def load_run(path: str | Path) -> RunResult:
    """Read run.json back, with a one-line error for anything that is not a run artefact."""
    from ctxsim._support.fileio import check_regular_file

    target = Path(path)
    if target.is_dir():
        raise CtxsimError(f"{path}: is a folder, expected a run.json file")
    check_regular_file(str(target))  # a FIFO or device is refused, not read (a FIFO blocked for ever)
    try:
        result = RunResult.load(target)
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        raise CtxsimError(f"{path}: not a valid ctxsim run artefact ({type(exc).__name__}: {exc})") from None
    if not result.runs:
        raise CtxsimError(f"{path}: the run artefact holds no policy runs")
    return result


def dumps_run(result: RunResult) -> str:
    return result.dumps()


def composition_of(run: PolicyRun) -> Any:
    return getattr(run, "composition", None)


# ---------------------------------------------------------------- labels
def label(run: PolicyRun) -> str:
    return str(run.policy.get("label") or run.policy["name"])


def labels(result: RunResult) -> list[str]:
    """A distinct label per run (a repeated label gets `#2`, `#3` ...)."""
    seen: dict[str, int] = {}
    out = []
    for run in result.runs:
        base = label(run)
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return out


def short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def request_rows(run: PolicyRun) -> list[Any]:
    """The rows of the agent's own requests (a policy's summarising calls left out)."""
    return [r for r in run.rows if r.kind == "request"]


def window_of(run: PolicyRun, result: RunResult) -> int:
    """The run's own window (runs priced under several providers differ), else the manifest's."""
    setup = run.policy.get("setup") or {}
    return int(setup.get("window") or result.manifest["window"])


THRESHOLD_KEYS = ("trigger", "threshold", "compact_above", "max_context", "budget")


def thresholds(run: PolicyRun) -> list[tuple[str, int]]:
    """Token thresholds from a policy's effective parameters: (what, tokens).

    Keys named trigger/threshold/compact_above/... (or ending so) with an integer
    value count, unless the policy says its trigger counts something else
    (`trigger_type` other than input_tokens). Pipeline stages are read from
    their specs with the policy registry's defaults.
    """
    out: list[tuple[str, int]] = []

    def scan(name: str, params: dict[str, Any]) -> None:
        if params.get("trigger_type", "input_tokens") != "input_tokens":
            return
        for key, value in sorted(params.items()):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                continue
            if key in THRESHOLD_KEYS or key.endswith(tuple("_" + k for k in THRESHOLD_KEYS)):
                text = key.replace("_", " ")
                out.append((text if text.startswith(name) else f"{name} {text}", value))

    params = run.policy.get("params") or {}
    stages = params.get("stages")
    recorded = run.policy.get("stages")
    if isinstance(recorded, list) and recorded:  # effective parameters of each stage
        for stage in recorded:
            if isinstance(stage, dict) and "name" in stage:
                scan(str(stage["name"]), stage.get("params") or {})
    elif run.policy["name"] == "pipeline" and isinstance(stages, list):
        from ctxsim.policies import effective, parse_policy

        for spec in stages:
            try:
                stage = effective(parse_policy(str(spec)))
            except CtxsimError:
                continue
            scan(stage["name"], stage["params"])
    else:
        scan(run.policy["name"], params)
    return out


# ---------------------------------------------------------------- numbers
def money(value: Decimal) -> str:
    """Dollars with thousands separators; small amounts keep four decimals."""
    value = Decimal(value)
    if abs(value) < 1:
        return f"${value.quantize(Decimal('0.0001'), ROUND_HALF_EVEN)}"
    return f"${value.quantize(Decimal('0.01'), ROUND_HALF_EVEN):,}"


def tokens(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def pct(value: float) -> str:
    return f"{value * 100:.2f}%"


def change(base: Decimal | float | int, new: Decimal | float | int) -> Decimal | None:
    """Relative change new/base - 1 as a Decimal; None when base is 0 and new is not."""
    b, n = Decimal(str(base)), Decimal(str(new))
    if b == 0:
        return Decimal(0) if n == 0 else None
    return n / b - 1


def signed_pct(value: Decimal | None) -> str:
    if value is None:
        return "new"
    text = f"{abs(value) * 100:,.1f}%"
    if text == "0.0%":
        return "±0.0%"
    return ("+" if value > 0 else "−") + text


# ---------------------------------------------------------------- the verdict's choice
def winner(result: RunResult) -> int:
    """Index of the run the verdict names: the cheapest with caching (the first of equals); with loss metered,
    `loss.verdict.starred` when a run qualifies.

    Charts that cannot show every run always show this one (and the baseline).
    """
    runs = result.runs
    from ctxsim.loss.verdict import starred, weighs_loss

    if weighs_loss(result):  # loss metered: the starred run (the cheapest with re-fetches within the allowance)
        best = starred(result)
        if best is not None:
            return best
    return min(range(len(runs)), key=lambda i: (runs[i].totals.cost_usd, i)) if runs else 0


def starred_run(result: RunResult) -> int | None:
    """Index of the run a chart or table marks with a star: `winner`, except that with the loss metered and no
    run within its allowance none is starred (the verdict says so; `winner` is then only the run always shown)."""
    from ctxsim.loss.verdict import starred, weighs_loss

    if weighs_loss(result):
        return starred(result)
    return winner(result)


def star_text(result: RunResult) -> str:
    """What a chart title says beside the starred run: `★ cheapest` only when it is the cheapest; with the loss
    metered the star is the recommendation (the cheapest with re-fetches within the miss allowance), and says so."""
    from ctxsim.loss.verdict import weighs_loss

    return " ★ recommended" if weighs_loss(result) else " ★ cheapest"


def overflows(run: PolicyRun, result: RunResult) -> int | None:
    """The first request whose context passes the run's window (the session could not have happened so)."""
    window = window_of(run, result)
    return next((r.request for r in run.rows if r.kind == "request" and r.context_tokens > window), None)
