"""The parameter space `ctxsim tune` searches, per policy family.

Each family's space names fields of the policy's own params dataclass (tests check every name and
every value builds). A value is one of:

- a plain value: the parameter is set to it;
- `Rel(f)`: a token threshold, `f` times the reference: the `--budget` when one is given, else the
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
from dataclasses import dataclass
from typing import Any

from ctxsim.errors import CtxsimError, did_you_mean


@dataclass(frozen=True, order=True)
class Rel:
    """A threshold as a fraction of the reference tokens (the budget, else the window minus the reserve)."""

    fraction: float

    def __str__(self) -> str:
        return f"{self.fraction * 100:g}%"


@dataclass(frozen=True)
class Same:
    """The value the trial gives another parameter."""

    param: str

    def __str__(self) -> str:
        return f"={self.param}"


TRIGGERS = tuple(Rel(f) for f in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0))

SPACES: dict[str, dict[str, tuple[Any, ...]]] = {
    "clear": {
        "trigger": TRIGGERS,
        "keep": (0, 1, 2, 3, 5, 8, 12),
        "clear_at_least": (0, 2_000, 5_000, 10_000, 20_000),
        "clear_tool_inputs": (False, True),
    },
    "compact": {
        "trigger": TRIGGERS,
        "compact_above": (Same("trigger"),),
        "keep_recent": (2, 4, 6, 10, 16, 24),
        "clear_at_least": (0, 5_000, 10_000, 20_000),
        "summarizer": ("extractive", "llm"),
    },
    "server_compact": {
        "trigger": TRIGGERS,
        "pause_after_compaction": (False, True),
    },
    "tiered": {
        "max_context_tokens": TRIGGERS,
        "keep_recent": (4, 6, 10, 16, 24),
        "tool_output_max_lines": (50, 100, 200, 400),
        "compact_target_ratio": (0.5, 0.6, 0.7, 0.8),
    },
    "scored": {
        "budget": TRIGGERS,
        "recent_turns": (1, 2, 3, 5, 8),
        "recency_weight": (1.0, 3.0, 6.0),
        "relevance_weight": (0.0, 2.0, 4.0),
    },
    "zones": {
        "window": TRIGGERS,
        "yellow_fraction": (0.1, 0.2, 0.3),
        "red_keep_turns": (1, 2, 3, 5),
    },
    "mask": {
        "keep": (1, 2, 3, 5, 8, 10, 15, 20, 30),
    },
    "recent": {
        "keep_first": (1, 2, 4),
        "keep_last": (10, 20, 40, 60, 99, 150, 250),
    },
    "truncate": {
        "max_lines": (20, 50, 100, 200, 400, 800),
    },
}


def families() -> list[str]:
    return sorted(SPACES)


def space_of(family: str) -> dict[str, tuple[Any, ...]]:
    if family not in SPACES:
        raise CtxsimError(f"--family: no parameter space for {family!r}{did_you_mean(family, SPACES)}; "
                          f"families: {', '.join(families())}")
    return SPACES[family]


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


__all__ = ["SPACES", "Rel", "Same", "concrete", "families", "grid_size", "settings", "shown", "space_of"]
