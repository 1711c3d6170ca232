"""Context-management policies: one module per policy, registered in that module.

A policy only chooses: given the live history before a request, it returns
`Edit`s; the engine applies them, checks the invariants and logs one event per
edit. The module name is the registry name is the `--policy` name. Third-party
policies come through the `ctxsim.policies` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxsim.errors import ParameterError, did_you_mean
from ctxsim.params import as_dict, build_params, split_spec
from ctxsim.policies.base import Context, Policy, View
from ctxsim.registry import Registry

# the registry and its helpers, and the contract's names a policy module imports from here (Context, Policy, View)
__all__ = [
    "Context", "NoParams", "Policy", "PolicyInfo", "Stages", "View", "effective", "make_policy", "parse_policy",
    "policies", "register",
]


@dataclass(frozen=True)
class NoParams:
    """The parameters of a stage built in code that takes none (a probe, a check)."""


@dataclass
class Stages:
    """Stages built in code (probes, checks), run in order under one name, as `pipeline` runs specs."""

    name: str
    stages: tuple[Policy, ...]
    params: Any = NoParams()

    def decide(self, view: View) -> Sequence[Any]:
        # A Policy all the same: the engine runs `stages` itself, applying each one's edits before the next decides.
        raise RuntimeError("stages built in code are run by the engine, one by one")


@dataclass(frozen=True)
class PolicyInfo:
    """A policy's registration: what it is, and what the sweep, `tune` and the planner need to know of it."""

    name: str
    params: type
    factory: Callable[[Any], Policy]
    source: str  # where its semantics come from
    summary: str
    module: str
    # the parameters a sweep budget of N tokens sets, given the policy's params (None: this setting has no
    # token threshold for a budget to move); no function: the policy takes no budget and runs once
    budget: Callable[[Any, int], dict[str, Any] | None] | None = None
    # what `ctxsim tune --family NAME` searches: parameter -> values (`Rel` thresholds, `Same` ties;
    # ctxsim.params); None: not a family tune searches
    space: Mapping[str, tuple[Any, ...]] | None = None
    weight: float = 1.0  # about how long a replay takes against one under `none`: the planner runs the heaviest first
    api_edit: str | None = None  # the Anthropic `context_management` edit with the same knobs, if any


_REGISTRY: Registry[PolicyInfo] = Registry("policy", __name__, "ctxsim.policies")


def register(info: PolicyInfo) -> None:
    _REGISTRY.add(info.name, info, info.module)


def policies() -> dict[str, PolicyInfo]:
    return _REGISTRY.all()


def make_policy(name: str, values: Mapping[str, Any] | None = None) -> Policy:
    table = policies()
    if name not in table:
        raise ParameterError(f"unknown policy {name!r}{did_you_mean(name, table)}; known: {', '.join(table)}")
    info = table[name]
    return info.factory(build_params(info.params, values or {}, f"policy {name}"))


def parse_policy(spec: str) -> Policy:
    """`clear:trigger=30000,keep=3` -> a configured policy."""
    name, values = split_spec(spec)
    return make_policy(name, values)


def effective(policy: Policy) -> dict[str, Any]:
    stages = getattr(policy, "stages", None)
    out: dict[str, Any] = {"name": policy.name, "params": as_dict(policy.params)}
    if stages:
        out["stages"] = [effective(s) for s in stages]
    return out

