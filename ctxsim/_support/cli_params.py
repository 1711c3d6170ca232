"""Command-line values converted without pydantic.

Typer (0.2x) converts every parameter's value, even an absent one, through a pydantic `TypeAdapter`
built on first use: importing pydantic and building the adapters costs 0.2-0.4 s CPU on every command,
`inspect --help` included. ctxsim's parameters are all plain (`str`, `int`, `float`, `bool`, `Path`
and lists of them, with no bounds, parsers or choices), so `install()` gives typer a converter of its
own for exactly those and leaves every other annotation to typer. A typer without these internals
(older or newer) is left alone: it converts as it always did.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

Convert = Callable[..., Any]


def _to_str(value: Any) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode(sys.getfilesystemencoding())
        except UnicodeError:
            return value.decode("utf-8", "replace")
    return str(value)


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    text = _to_str(value).strip()
    whole, dot, zeros = text.partition(".")
    if dot and zeros.strip("0") == "":  # "3.0" is 3, as typer's pydantic conversion has it; "3.5" is refused
        text = whole
    return int(text)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError
    return value if isinstance(value, float) else float(_to_str(value).strip())


_TRUE = frozenset(("1", "on", "t", "true", "y", "yes"))
_FALSE = frozenset(("", "0", "off", "f", "false", "n", "no"))


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = _to_str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError


_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_PLAIN: dict[Any, Convert] = {str: _to_str, int: _to_int, float: _to_float, bool: _to_bool}


def _plain_info(info: Any) -> bool:
    """No bounds, parser, choices or path checks: the value is converted and nothing else."""
    return (getattr(info, "min", None) is None and getattr(info, "max", None) is None
            and getattr(info, "parser", None) is None and getattr(info, "click_type", None) is None)


def light_converter(annotation: Any, info: Any) -> tuple[Convert, str] | None:
    """The converter and type name for a plain annotation, or None (typer converts it)."""
    if not _plain_info(info):
        return None
    if get_origin(annotation) is list:
        args = get_args(annotation)
        leaf = light_converter(args[0], info) if len(args) == 1 else None
        if leaf is None:
            return None
        convert_one, name = leaf
        return (lambda value: [convert_one(v) for v in (value if isinstance(value, (list, tuple)) else [value])],
                name)
    if annotation in _PLAIN:
        return _PLAIN[annotation], _NAMES[annotation]
    return None


def install() -> None:
    """Hand typer the light converters (see the module's docstring); a no-op where typer differs."""
    try:
        from typer import _coercion, _param_types, core
    except ImportError:
        return
    parameter = getattr(core, "_TyperParameter", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if parameter is None or base is None or not hasattr(parameter, "get_runtime_param") \
            or getattr(parameter, "_ctxsim_light", False):
        return
    bad_parameter = core._click.exceptions.BadParameter  # type: ignore[attr-defined]
    coerce_path = getattr(_param_types, "coerce_cli_path", None)

    @dataclass(frozen=True)
    class LightParam(base):  # type: ignore[misc, valid-type]
        convert: Convert
        type_name: str

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.type_name == "path":
                return self.convert(value, param, ctx)
            try:
                return self.convert(value)
            except (TypeError, ValueError):
                raise bad_parameter(f"{value!r} is not a valid {self.type_name}.", ctx=ctx, param=param) from None

    original = parameter.get_runtime_param

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            descriptor = self.type_descriptor
            annotation, info = descriptor.annotation, descriptor.parameter_info
            found = None if descriptor.file_annotation is not None else light_converter(annotation, info)
            if found is None and annotation is Path and coerce_path is not None and _plain_info(info):
                # the path checks are typer's own; only the str -> Path step (pydantic's) is done here
                def to_path(value: Any, param: Any, ctx: Any) -> Any:
                    return coerce_path(value if isinstance(value, Path) else Path(os.fsdecode(value)), info,
                                       path_type=Path, param=param, ctx=ctx)

                found = (to_path, "path")
            if found is not None:
                self._runtime_param = LightParam(parameter_info=info, annotation=annotation, convert=found[0],
                                                 type_name=found[1])
        return original(self)

    parameter.get_runtime_param = get_runtime_param
    parameter._ctxsim_light = True
