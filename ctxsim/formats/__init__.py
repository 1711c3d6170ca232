"""Trace-format readers: one module per format, each registering itself here.

The module name is the registry name is the `--format` value. Third-party
readers come through the `ctxsim.formats` entry-point group.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from ctxsim.errors import CtxsimError
from ctxsim.model import Trace


@dataclass(frozen=True)
class FormatInfo:
    name: str
    description: str
    read: Callable[[str], Trace]
    # Returns None when the first bytes look like this format, else the reason they don't.
    sniff: Callable[[bytes], str | None]
    module: str


_REGISTRY: dict[str, FormatInfo] = {}
_LOADED = False


def register(info: FormatInfo) -> None:
    if info.name in _REGISTRY and _REGISTRY[info.name].module != info.module:
        raise CtxsimError(
            f"format {info.name!r} registered twice: by {_REGISTRY[info.name].module} and by {info.module}"
        )
    _REGISTRY[info.name] = info


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    for entry in entry_points(group="ctxsim.formats"):
        entry.load()


def formats() -> dict[str, FormatInfo]:
    _load()
    return dict(sorted(_REGISTRY.items()))


SNIFF_BYTES = 65536


def detect(path: str, head: bytes) -> FormatInfo:
    reasons = []
    for info in formats().values():
        why = info.sniff(head)
        if why is None:
            return info
        reasons.append(f"{info.name}: {why}")
    raise CtxsimError(f"{path}: unknown trace format; tried " + "; ".join(reasons))


def read_trace(path: str, fmt: str | None = None) -> Trace:
    """Read a trace with the named format, or the one its first bytes show."""
    if fmt is not None:
        table = formats()
        if fmt not in table:
            raise CtxsimError(f"unknown format {fmt!r}; known: {', '.join(table)}")
        return table[fmt].read(path)
    if path == "-":
        return formats()["native"].read(path)
    from ctxsim.fileio import open_input

    stream = open_input(path)
    try:
        head = stream.read(SNIFF_BYTES)
    finally:
        stream.close()
    if not head.strip():
        from ctxsim.errors import TraceError

        raise TraceError(path, None, "empty trace: the file has no records")
    try:
        info = detect(path, head)
    except CtxsimError:
        if path.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
            # Report the native reader's precise `file:line` error rather than "unknown format".
            return formats()["native"].read(path)
        raise
    return info.read(path)
