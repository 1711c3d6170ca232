"""From what a user writes to configured policies (and the set-up a preset implies).

A spec is one of:
- a policy: `clear:trigger=30000,keep=3`;
- a pipeline: `clear:trigger=30000+compact:keep_recent=10` (stages run in order);
- a preset: `ctxkit`, `claude-code:window=...` (k=v override the preset's stages' parameters);
- a TOML policy file: `policies.toml` (every named policy in it) or `policies.toml#name`;
- an Anthropic `context_management` JSON file (`{"context_management": {"edits": [...]}}` or
  `{"edits": [...]}`), accepted as the API takes it.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxsim.errors import CtxsimError, ParameterError, did_you_mean
from ctxsim.params import split_spec
from ctxsim.policies import Policy, make_policy, parse_policy, policies
from ctxsim.policies.pipeline import pipeline_of
from ctxsim.presets import Preset, presets


@dataclass(frozen=True)
class Choice:
    """A configured policy, its label, and the preset (if any) whose set-up it needs."""

    label: str
    policy: Policy
    preset: Preset | None = None


def split_list(text: str) -> list[str]:
    """`none,clear:trigger=30000,keep=3,compact` -> ["none", "clear:trigger=30000,keep=3", "compact"].

    A comma-separated piece with `=` but no `:` is a parameter of the spec before it.
    """
    out: list[str] = []
    depth = 0
    current = ""
    pieces: list[str] = []
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += ch
    pieces.append(current)
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if out and "=" in piece and ":" not in piece.split("=", 1)[0] and ":" not in piece.split("+")[0]:
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def _override(spec: str, values: Mapping[str, str], owner: str) -> str:
    """Apply `values` to a stage spec, for the keys that stage's policy has."""
    name, own = split_spec(spec)
    info = policies().get(name)
    if info is None:
        return spec
    known = {f.name for f in dataclasses.fields(info.params)}
    merged = dict(own)
    merged.update({k: v for k, v in values.items() if k in known})
    return name + (":" + ",".join(f"{k}={v}" for k, v in merged.items()) if merged else "")


def _preset_choice(spec: str, preset: Preset, values: Mapping[str, str]) -> Choice:
    known: set[str] = set()
    for stage in preset.stages:
        info = policies().get(split_spec(stage)[0])
        if info is not None:
            known |= {f.name for f in dataclasses.fields(info.params)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ParameterError(f"preset {preset.name}: unknown parameter {unknown[0]!r}; its stages take: "
                             + ", ".join(sorted(known)))
    stages = [_override(s, values, preset.name) for s in preset.stages]
    return Choice(spec, _build(stages), preset)


def _build(stages: Sequence[str]) -> Policy:
    built = [parse_policy(s) for s in stages]
    return built[0] if len(built) == 1 else pipeline_of(built, stages)


ANTHROPIC_EDITS = {
    "clear_tool_uses_20250919": "clear",
    "clear_thinking_20251015": "clear_thinking",
    "compact_20260112": "server_compact",
}


MAX_POLICY_FILE_BYTES = 1 << 20  # a policy file is a few lines; a bigger one is not a policy file


def _read_text(path: Path) -> str:
    """A policy file's text: a regular file, at most MAX_POLICY_FILE_BYTES, UTF-8 (a BOM allowed);
    anything else a one-line error naming the file (and the line of a bad byte)."""
    import os
    import stat

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise CtxsimError(f"{path}: not a regular file")
        if info.st_size > MAX_POLICY_FILE_BYTES:
            raise CtxsimError(f"{path}: {info.st_size:,} bytes, too big for a policy file "
                              f"(at most {MAX_POLICY_FILE_BYTES:,})")
        raw = path.read_bytes()
    except OSError as exc:
        raise CtxsimError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise CtxsimError(f"{path}:{line}: not UTF-8 (invalid byte 0x{raw[exc.start]:02x} at byte "
                          f"{exc.start:,})") from None


def _anthropic_edit(edit: Mapping[str, Any], where: str) -> Policy:
    kind = edit.get("type")
    if not isinstance(kind, str) or kind not in ANTHROPIC_EDITS:
        raise CtxsimError(f"{where}: unknown context_management edit type {kind!r}; known: "
                          + ", ".join(ANTHROPIC_EDITS))
    values: dict[str, Any] = {}
    for key, value in edit.items():
        if key == "type":
            continue
        if isinstance(value, Mapping):  # {"type": "input_tokens", "value": 30000}
            if key == "trigger" and value.get("type") == "tool_uses":
                values["trigger_type"] = "tool_uses"
            values[key] = value.get("value")
        else:
            values[key] = value
    try:
        return make_policy(ANTHROPIC_EDITS[kind], values)
    except ParameterError as exc:
        raise CtxsimError(f"{where}: {exc}") from None


def _from_json(path: Path, label: str) -> Choice:
    try:
        data = json.loads(_read_text(path))
    except (ValueError, RecursionError) as exc:
        raise CtxsimError(f"{path}: not valid JSON ({exc or 'nested too deeply'})") from None
    block = data.get("context_management", data) if isinstance(data, dict) else None
    edits = block.get("edits") if isinstance(block, dict) else None
    if not isinstance(edits, list) or not edits:
        raise CtxsimError(f"{path}: expected an Anthropic context_management object with an 'edits' array")
    built = [_anthropic_edit(e if isinstance(e, dict) else {}, f"{path}: edits[{i}]") for i, e in enumerate(edits)]
    # The API applies thinking clearing before tool-use clearing.
    built.sort(key=lambda p: {"clear_thinking": 0, "clear": 1, "server_compact": 2}.get(p.name, 3))
    specs = [p.name for p in built]
    return Choice(label, built[0] if len(built) == 1 else pipeline_of(built, specs))


def _toml_entry(name: str, entry: Any, path: Path) -> Choice:
    where = f"{path}: policies.{name}"
    if not isinstance(entry, dict):
        raise CtxsimError(f"{where}: expected a table")
    if "stages" in entry:
        stages = entry["stages"]
        if not isinstance(stages, list) or not stages:
            raise CtxsimError(f"{where}: 'stages' must be a non-empty array")
        built = []
        specs = []
        for i, stage in enumerate(stages):
            if isinstance(stage, str):
                built.append(_choice(stage).policy)
                specs.append(stage)
            elif isinstance(stage, dict) and isinstance(stage.get("policy"), str):
                values = {k: v for k, v in stage.items() if k != "policy"}
                try:
                    built.append(make_policy(stage["policy"], values))
                except ParameterError as exc:
                    raise CtxsimError(f"{where}.stages[{i}]: {exc}") from None
                specs.append(stage["policy"])
            else:
                raise CtxsimError(f"{where}.stages[{i}]: expected a spec string or a table with 'policy'")
        return Choice(name, built[0] if len(built) == 1 else pipeline_of(built, specs))
    if "preset" in entry:
        preset = presets().get(entry["preset"]) if isinstance(entry["preset"], str) else None
        if preset is None:
            raise CtxsimError(f"{where}: unknown preset {entry['preset']!r}"
                              f"{did_you_mean(str(entry['preset']), presets())}")
        values = {k: str(v) for k, v in entry.items() if k != "preset"}
        return dataclasses.replace(_preset_choice(name, preset, values), label=name)
    if "policy" not in entry:
        raise CtxsimError(f"{where}: needs 'policy', 'preset' or 'stages'")
    if not isinstance(entry["policy"], str):
        raise CtxsimError(f"{where}: 'policy' must be a policy name (a string)")
    try:
        return Choice(name, make_policy(entry["policy"], {k: v for k, v in entry.items() if k != "policy"}))
    except ParameterError as exc:
        raise CtxsimError(f"{where}: {exc}") from None


def _from_toml(path: Path, only: str | None) -> Iterator[Choice]:
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise CtxsimError(f"{path}: not valid TOML ({exc})") from None
    table = data.get("policies")
    if not isinstance(table, dict) or not table:
        raise CtxsimError(f"{path}: expected [policies.NAME] tables")
    if only is not None:
        if only not in table:
            raise CtxsimError(f"{path}: no policy named {only!r}; it has: {', '.join(table)}")
        yield _toml_entry(only, table[only], path)
        return
    for name, entry in table.items():
        yield _toml_entry(name, entry, path)


def _choice(spec: str) -> Choice:
    if "+" in spec:
        parts = [p.strip() for p in spec.split("+") if p.strip()]
        return Choice(spec, _build(parts))
    name, values = split_spec(spec)
    table = presets()
    if name in table and name not in policies():
        return _preset_choice(spec, table[name], values)
    if name not in policies():
        raise ParameterError(f"unknown policy or preset {name!r}{did_you_mean(name, [*policies(), *table])}; "
                             f"policies: {', '.join(policies())}; "
                             f"presets: {', '.join(table)}")
    return Choice(spec, parse_policy(spec))


def resolve(specs: Sequence[str]) -> list[Choice]:
    """Every spec to configured policies; files may hold several."""
    out: list[Choice] = []
    for spec in specs:
        file_part, _, only = spec.partition("#")
        path = Path(file_part)
        if file_part.endswith(".toml"):
            if not path.exists():
                raise CtxsimError(f"{file_part}: no such policy file")
            out.extend(_from_toml(path, only or None))
        elif file_part.endswith(".json"):
            if not path.exists():
                raise CtxsimError(f"{file_part}: no such file")
            out.append(_from_json(path, path.stem))
        else:
            out.append(_choice(spec))
    labels = [c.label for c in out]
    for label in labels:
        if labels.count(label) > 1:
            raise CtxsimError(f"policy {label!r} given twice")
    return out
