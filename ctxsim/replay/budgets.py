"""Budgets for `sweep --budgets` (and `tune --budget`): a token count or a fraction of each trace's window,
and what a budget sets in a policy, stage by stage, as each policy declares in its registration
(`PolicyInfo.budget`); a policy that declares nothing runs once, budget `-`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ctxsim.errors import CtxsimError

NO_BUDGET = "-"


@dataclass(frozen=True)
class Budget:
    label: str  # as shown: "50k", "60%", or "-" (the policy as written)
    tokens: int | None = None
    fraction: Fraction | None = None

    def resolve(self, window: int) -> int | None:
        if self.tokens is not None:
            return self.tokens
        if self.fraction is not None:
            return int(self.fraction * window)
        return None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "tokens": self.tokens,
                "fraction": None if self.fraction is None else str(self.fraction)}


AS_WRITTEN = Budget(NO_BUDGET)


def parse_budgets(text: str | None) -> list[Budget]:
    """`50k,100k,60%` -> budgets; None or empty: the policies as written."""
    if not text or not text.strip():
        return [AS_WRITTEN]
    from ctxsim.params import parse_int

    out: list[Budget] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        try:
            if piece.endswith("%"):
                fraction = Fraction(piece[:-1].strip()) / 100
                budget = Budget(piece, fraction=fraction)
            elif "." in piece or "/" in piece:
                fraction = Fraction(piece)
                budget = Budget(piece, fraction=fraction)
            else:
                budget = Budget(piece, tokens=parse_int(piece))
        except (ValueError, ZeroDivisionError):
            raise CtxsimError(f"--budgets: {piece!r} is neither tokens (50000, 50k) nor a fraction of the window "
                              "(60%, 0.6)") from None
        if budget.fraction is not None and not 0 < budget.fraction <= 1:
            raise CtxsimError(f"--budgets: {piece!r}: a fraction of the window must be above 0 and at most 100%")
        if budget.tokens is not None and budget.tokens <= 0:
            raise CtxsimError(f"--budgets: {piece!r}: a budget must be positive")
        if any(b.label == budget.label for b in out):
            raise CtxsimError(f"--budgets: {piece!r} given twice")
        out.append(budget)
    return out or [AS_WRITTEN]


def _leaves(policy: Any) -> list[Any]:
    stages = getattr(policy, "stages", None)
    return [leaf for stage in stages for leaf in _leaves(stage)] if stages else [policy]


def _budget_of(leaf: Any, tokens: int) -> dict[str, Any] | None:
    """The parameters a budget of `tokens` sets in one stage, as its policy declares (`PolicyInfo.budget`)."""
    from ctxsim.policies import policies

    info = policies().get(leaf.name)
    if info is None or info.budget is None:
        return None
    return info.budget(leaf.params, tokens)


def budget_params() -> dict[str, str]:
    """What a budget sets, per policy that takes one (at its default parameters), as the manifest says it."""
    from ctxsim.policies import policies

    out: dict[str, str] = {}
    for name, info in policies().items():
        values = info.budget(info.params(), 1) if info.budget is not None else None
        if values:
            set_ = ", ".join(k for k, v in values.items() if v is not None)
            cleared = ", ".join(k for k, v in values.items() if v is None)
            out[name] = set_ + (f" ({cleared} cleared)" if cleared else "")
    return out


def takes_budget(policy: Any) -> bool:
    return any(_budget_of(leaf, 1) is not None for leaf in _leaves(policy))


def _spec_with(spec: str, values: dict[str, Any] | None) -> str:
    """A stage's spec text with the budget's values in place of its own (the pipeline's label of the stage)."""
    from ctxsim.errors import ParameterError
    from ctxsim.params import split_spec

    if not values:
        return spec
    try:
        name, own = split_spec(spec)
    except ParameterError:
        return spec
    merged = {**own, **{k: "none" if v is None else str(v) for k, v in values.items()}}
    return name + ":" + ",".join(f"{k}={v}" for k, v in merged.items())


def with_budget(policy: Any, tokens: int) -> Any:
    """A fresh policy: `policy` with each stage's budget parameter(s) set to `tokens`."""
    from ctxsim.errors import ParameterError
    from ctxsim.policies import policies
    from ctxsim.policies.pipeline import pipeline_of

    stages = getattr(policy, "stages", None)
    if stages:
        specs = list(getattr(policy.params, "stages", ()) or [s.name for s in stages])
        if len(specs) != len(stages):
            specs = [s.name for s in stages]
        built = [with_budget(s, tokens) for s in stages]
        new_specs = [_spec_with(spec, _budget_of(stage, tokens)) for spec, stage in zip(specs, stages, strict=True)]
        return pipeline_of(built, new_specs)
    values = _budget_of(policy, tokens)
    info = policies()[policy.name]
    try:
        params = dataclasses.replace(policy.params, **values) if values else policy.params
        return info.factory(params)
    except (ValueError, TypeError, ParameterError) as exc:
        raise CtxsimError(f"policy {policy.name} at a budget of {tokens:,} tokens: {exc}") from None


__all__ = ["AS_WRITTEN", "NO_BUDGET", "Budget", "budget_params", "parse_budgets", "takes_budget", "with_budget"]
