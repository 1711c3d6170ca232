"""ctxsim: replay recorded LLM-agent traces under context-management policies and meter them.

The library's entry points (`replay`, `compare`, `load_trace`, `load_run`, `Result`) live in
`ctxsim.replay.library` and load on first use, so `import ctxsim` (and `ctxsim --help`) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Result", "__version__", "compare", "load_run", "load_trace", "replay", "sample_trace"]

if TYPE_CHECKING:
    from ctxsim.replay.library import Result, compare, load_run, load_trace, replay, sample_trace


def __dir__() -> list[str]:
    """The API as well as the module's own names, for a notebook's completion (they load on first use)."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})


def __getattr__(name: str) -> Any:
    if name == "replay":  # the package ctxsim.replay, which a call runs as library.replay (see its docstring)
        return importlib.import_module("ctxsim.replay")
    if name in __all__ and name != "__version__":
        from ctxsim.replay import library

        return getattr(library, name)
    raise AttributeError(f"module 'ctxsim' has no attribute {name!r}")
