"""Presets: named set-ups that mirror a real product or a seed document.

One module per preset, registered in that module. A preset fixes a policy
(one spec, or several run in order as a pipeline) and, where its source says
so, the replay set-up: tokenizer, framing, cache model, window. `--policy NAME`
accepts a preset name wherever it accepts a policy; `k=v` after the name
overrides the preset's own parameters (`ctxkit:trigger=40000` is applied to
every stage that has that parameter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxsim.registry import Registry
from ctxsim.tokens.counting import Framing


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    source: str
    stages: tuple[str, ...]  # policy specs, run in order (cheapest first)
    tokenizer: str | None = None
    framing: Framing | None = None
    cache: str | None = None  # cache model spec
    window: int | None = None
    provider: str | None = None
    model: str | None = None
    pin_tools: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    module: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_REGISTRY: Registry[Preset] = Registry("preset", __name__, "ctxsim.presets")


def version_key(text: str | None) -> tuple[int, ...]:
    """A product version (`2.1.5`, `0.104.0-alpha.1`) as numbers to compare: its leading numeric parts."""
    parts = []
    for piece in (text or "").split("-", 1)[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def register(preset: Preset) -> None:
    _REGISTRY.add(preset.name, preset, preset.module)


def presets() -> dict[str, Preset]:
    return _REGISTRY.all()
