"""Synthetic traces: deterministic generators of agent sessions in the canonical model.

A profile is a module in this package with a `DEFAULTS` dict (its options and their
default values), a `check(options) -> dict` that validates typed options, and a
`generate(turns, seed, **options) -> Trace`. The same profile, turns, seed and options
always give the same trace (no global random state, no clock).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import Any

from ctxsim.errors import CtxsimError, ParameterError
from ctxsim.model import Trace

# name -> one-line description (shown by `ctxsim synth --help`)
PROFILES: dict[str, str] = {
    "coding": "coding-agent session (billing bug): file reads, edits, failing tests, marker lines, long pauses",
    "yoagent": "yoagent's fixed replay workload (context_cache_test.rs): set tool mix and sizes, no timestamps",
}

_MODULES = {"coding": "ctxsim.synth.coding", "yoagent": "ctxsim.synth.yoagent"}

# A guard against typos such as --turns 10000000 (tens of gigabytes of text).
MAX_TURNS = 100_000


def _profile_module(profile: str) -> Any:
    if not isinstance(profile, str) or profile not in _MODULES:
        raise CtxsimError(f"unknown synth profile {profile!r}; known: {', '.join(PROFILES)}")
    return importlib.import_module(_MODULES[profile])


def profile_defaults(profile: str) -> dict[str, Any]:
    """The options a profile takes, with their default values."""
    return dict(_profile_module(profile).DEFAULTS)


def synthesize(profile: str = "coding", *, turns: int, seed: int = 0, billing: Mapping[str, Any] | None = None,
               **options: Any) -> Trace:
    """Generate a synthetic trace of `turns` agent turns with the named profile.

    `billing` (None: no usage recorded): record on every response the usage a provider would have
    billed (ctxsim.synth.billing; its options, `{}` for the defaults).
    """
    module = _profile_module(profile)
    if isinstance(turns, bool) or not isinstance(turns, int):
        raise CtxsimError(f"synth: turns must be an integer, got {type(turns).__name__}")
    if turns < 1:
        raise CtxsimError(f"synth: turns must be at least 1, got {turns}")
    if turns > MAX_TURNS:
        raise CtxsimError(f"synth: turns must be at most {MAX_TURNS:,}, got {turns:,}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise CtxsimError(f"synth: seed must be an integer, got {type(seed).__name__}")
    unknown = sorted(set(options) - set(module.DEFAULTS))
    if unknown:
        known = ", ".join(module.DEFAULTS) or "none"
        raise ParameterError(
            f"synth profile {profile!r}: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (known: {known})"
        )
    if billing is not None:
        from ctxsim.synth import billing as billed

        checked = billed.check(dict(billing))
    trace: Trace = module.generate(turns, seed, **module.check(options))
    if billing is not None:
        trace = billed.record(trace, seed, **checked)
    return trace


# ---------------------------------------------------------------- option checks for profiles


def option_number(profile: str, name: str, value: Any, *, low: float = 0.0, high: float = math.inf,
                  low_open: bool = False) -> float:
    """A finite real number in [low, high] (or (low, high] when `low_open`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParameterError(f"synth profile {profile!r}: option {name} must be a number, got {value!r}")
    if value < low or (low_open and value == low) or value > high:
        lower = "(" if low_open else "["
        upper = "inf)" if high == math.inf else f"{high:g}]"
        raise ParameterError(
            f"synth profile {profile!r}: option {name} must be in {lower}{low:g}, {upper}, got {value!r}"
        )
    return float(value)


def option_weights(profile: str, name: str, value: Any, known: tuple[str, ...]) -> dict[str, float]:
    """A mapping of known names to non-negative weights, at least one positive."""
    if not isinstance(value, Mapping) or not value:
        raise ParameterError(
            f"synth profile {profile!r}: option {name} must be a non-empty mapping of "
            f"tool name to weight, got {value!r}"
        )
    weights: dict[str, float] = {}
    for key, weight in value.items():
        if key not in known:
            raise ParameterError(
                f"synth profile {profile!r}: option {name} names unknown tool {key!r} "
                f"(known: {', '.join(known)})"
            )
        weights[key] = option_number(profile, f"{name}[{key}]", weight)
    if sum(weights.values()) <= 0:
        raise ParameterError(f"synth profile {profile!r}: option {name} needs at least one positive weight")
    return weights


__all__ = ["MAX_TURNS", "PROFILES", "option_number", "option_weights", "profile_defaults", "synthesize"]
