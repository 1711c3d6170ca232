"""Typed, strict parameters for policies and cache models.

A component declares its parameters as a frozen dataclass with defaults and
field docs (`metadata={"doc": ...}`); `build_params` turns a mapping of
command-line strings or TOML/JSON values into it. An unknown key or a value
of the wrong type is a `ParameterError` naming the component, the key and the
expected type.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

from ctxsim.errors import ParameterError, did_you_mean

P = TypeVar("P")

_INT = re.compile(r"^([0-9][0-9_]*)([kKmM]?)$")  # counts and sizes: never negative
_NEGATIVE = re.compile(r"^\s*-\s*[0-9]")


def parse_int(text: str) -> int:
    match = _INT.match(text.strip().replace(",", "_"))
    if not match:
        raise ValueError
    value = int(match.group(1).replace("_", ""))
    scale = {"": 1, "k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}[match.group(2)]
    return value * scale


def _convert(value: Any, tp: Any) -> Any:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = get_args(tp)
        if (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))) and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option)
            except (ValueError, TypeError) as exc:
                errors.append(exc)
        raise ValueError
    if origin is Literal:
        allowed = get_args(tp)
        if value in allowed:
            return value
        raise ValueError
    if origin is tuple:
        (item_type, *_rest) = get_args(tp)
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("[") and text.endswith("]"):
                text = text[1:-1]
            items = [x.strip() for x in re.split(r"[|,]", text) if x.strip()]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise TypeError
        return tuple(_convert(x, item_type) for x in items)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "no", "0", "off"):
            return False
        raise ValueError
    if tp is int:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            return parse_int(value)
        raise TypeError
    if tp is float:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            text = value.strip()
            if text.endswith("%"):
                return float(text[:-1]) / 100
            return float(text)
        raise TypeError
    if tp is str:
        if isinstance(value, str):
            return value
        raise TypeError
    raise TypeError(f"unsupported parameter type {tp!r}")


def type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(t) for t in get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin is tuple:
        return f"list of {type_name(get_args(tp)[0])}"
    if tp is type(None):
        return "none"
    return getattr(tp, "__name__", str(tp))


def build_params(cls: type[P], values: Mapping[str, Any], owner: str) -> P:
    """Build `cls` from `values`; unknown keys and bad values are errors."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in fields:
            known = ", ".join(fields) or "(none)"
            raise ParameterError(f"{owner}: unknown parameter {key!r}{did_you_mean(key, fields)}; known: {known}")
        try:
            kwargs[key] = _convert(raw, hints[key])
        except (ValueError, TypeError):
            if isinstance(raw, str) and _NEGATIVE.match(raw) and "int" in type_name(hints[key]):
                raise ParameterError(f"{owner}: parameter {key!r} must not be negative, got {raw!r}") from None
            raise ParameterError(
                f"{owner}: parameter {key!r} must be {type_name(hints[key])}, got {raw!r}"
            ) from None
    try:
        params = cls(**kwargs)
    except ValueError as exc:
        raise ParameterError(f"{owner}: {exc}") from None
    return params


def describe(cls: type) -> list[dict[str, Any]]:
    """Name, type, default and doc of each parameter, for `policies show`."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        )
        rows.append({"name": f.name, "type": type_name(hints[f.name]), "default": default,
                     "doc": f.metadata.get("doc", "")})
    return rows


def as_dict(params: Any) -> dict[str, Any]:
    """Effective parameters, JSON-ready (tuples as lists)."""
    out = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`name:k=v,k2=[a,b]` -> ("name", {"k": "v", "k2": "[a,b]"})."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ParameterError(f"empty name in {spec!r}; expected NAME[:key=value,...]")
    values: dict[str, str] = {}
    depth, current = 0, ""
    parts = []
    for ch in rest:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ParameterError(f"{name}: expected key=value, got {part!r} in {spec!r}")
        values[key.strip()] = value.strip()
    return name, values


def field_doc(doc: str) -> dict[str, str]:
    return {"doc": doc}


# ---------------------------------------------------------------- searched values (a policy's tune space)


@dataclasses.dataclass(frozen=True, order=True)
class Rel:
    """A threshold as a fraction of the reference tokens (the budget, else the window minus the reserve)."""

    fraction: float

    def __str__(self) -> str:
        return f"{self.fraction * 100:g}%"


@dataclasses.dataclass(frozen=True)
class Same:
    """The value the trial gives another parameter."""

    param: str

    def __str__(self) -> str:
        return f"={self.param}"


# the token thresholds a family's space searches: 30% of the reference to all of it
TRIGGERS = tuple(Rel(f) for f in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0))
