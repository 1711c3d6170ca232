"""The parameter space `ctxsim tune` searches, per policy family.

A family is a policy that declares its space in its own registration (`PolicyInfo.space`, beside the
policy); the space names fields of the policy's params dataclass (tests check every name and every value
builds). A value is one of:

- a plain value: the parameter is set to it;
- `Rel(f)` (ctxsim.params): a token threshold, `f` times the reference: the `--budget` when one is given, else the
  window minus the output reserve (so one space fits a 32k and a 1M window);
- `Same(name)`: the value the trial gives parameter `name` (compact's compact_above follows its
  trigger, as a budget sets both in the sweep).

The ranges are what the products and the seeds use, widened both ways: clear's keep around
Anthropic's default 3, compact's keep_recent around 10, trigger fractions from 30% to the whole
budget. Parameters with no sensible range across traces (tool names, stub texts, prompts) stay at
the policy's default.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ctxsim.errors import CtxsimError, did_you_mean
from ctxsim.params import Rel, Same


def spaces() -> dict[str, Mapping[str, tuple[Any, ...]]]:
    """Every family's space, as each policy declares it in its registration (`PolicyInfo.space`)."""
    from ctxsim.policies import policies

    return {name: info.space for name, info in policies().items() if info.space is not None}


def families() -> list[str]:
    return sorted(spaces())


def space_of(family: str) -> Mapping[str, tuple[Any, ...]]:
    known = spaces()
    if family not in known:
        raise CtxsimError(f"--family: no parameter space for {family!r}{did_you_mean(family, known)}; "
                          f"families: {', '.join(families())}")
    return known[family]


def grid_size(family: str) -> int:
    size = 1
    for values in space_of(family).values():
        size *= len(values)
    return size


def settings(family: str, trials: int, seed: int) -> tuple[list[dict[str, Any]], str]:
    """The settings to try, in a fixed order, and how they were chosen: the whole grid when it has at most
    `trials` points, else `trials` distinct points of it drawn with `seed` (in grid order)."""
    space = space_of(family)
    names = list(space)
    size = grid_size(family)
    if size <= trials:
        picks: list[int] = list(range(size))
        how = f"grid: all {size:,} settings"
    else:
        picks = sorted(random.Random(seed).sample(range(size), trials))
        how = f"random: {trials:,} of {size:,} settings (seed {seed})"
    out = []
    for pick in picks:
        setting: dict[str, Any] = {}
        index = pick
        for name in reversed(names):  # the last parameter varies fastest, as itertools.product
            values = space[name]
            index, at = divmod(index, len(values))
            setting[name] = values[at]
        out.append({name: setting[name] for name in names})
    return out, how


def concrete(setting: Mapping[str, Any], reference: int) -> dict[str, Any]:
    """The parameter values of a setting for a trace whose reference (budget) is `reference` tokens."""
    out: dict[str, Any] = {}
    for name, value in setting.items():
        out[name] = max(1, int(value.fraction * reference)) if isinstance(value, Rel) else value
    for name, value in setting.items():
        if isinstance(value, Same):
            out[name] = out[value.param]
    return out


def shown(setting: Mapping[str, Any]) -> str:
    """A setting as one short line: `trigger=60% keep=3 ...` (derived parameters left out)."""
    parts = []
    for name, value in setting.items():
        if isinstance(value, Same):
            continue
        text = str(value) if isinstance(value, (Rel, bool)) else (f"{value:,}" if isinstance(value, int) else
                                                                   str(value))
        parts.append(f"{name}={text.lower() if isinstance(value, bool) else text}")
    return " ".join(parts)


__all__ = ["Rel", "Same", "concrete", "families", "grid_size", "settings", "shown", "space_of", "spaces"]
