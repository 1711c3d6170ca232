"""The inputs of the commands that replay many traces (`sweep`, `compare DIR|GLOB|A B ...`, `tune`): files,
folders searched for the traces ctxsim reads, and globs, each trace file once, in a stable order."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

from ctxsim.errors import CtxsimError

GLOB_CHARS = frozenset("*?[")


def expand_inputs(patterns: Sequence[str], fmt: str | None = None,
                  left_out: list[tuple[str, str]] | None = None) -> list[str]:
    """Trace files: files as given, folders searched recursively, globs expanded; sorted per pattern, no repeats.

    The files of a folder that no reader takes are appended to `left_out` with why (a file named
    alone is read, and fails there if it is not a trace)."""
    from ctxsim._support.fileio import input_limits
    from ctxsim.formats import scan_directory

    out: list[str] = []
    ignored = left_out if left_out is not None else []
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            out.append(path)

    for pattern in patterns:
        if os.path.isdir(pattern):
            found, skipped = scan_directory(pattern, fmt, input_limits())
            ignored.extend(skipped)
            if not found:
                raise CtxsimError(f"{pattern}: no trace files found in this directory")
            for path in found:
                add(path)
        elif os.path.exists(pattern):
            add(pattern)
        elif GLOB_CHARS & set(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise CtxsimError(f"{pattern}: no file matches this pattern")
            for match in matches:
                if os.path.isdir(match):
                    found, skipped = scan_directory(match, fmt, input_limits())
                    ignored.extend(skipped)
                    for path in found:
                        add(path)
                else:
                    add(match)
        else:
            raise CtxsimError(f"{pattern}: no such file or directory")
    if not out:
        raise CtxsimError("no trace files to sweep")
    return out


def is_corpus(patterns: Sequence[str], fmt: str | None = None) -> bool:
    """A corpus: several paths, a glob (whatever it matches), a folder of more than one trace file."""
    if len(patterns) != 1:
        return True
    only = patterns[0]
    if os.path.isfile(only) or only == "-":
        return False
    if GLOB_CHARS & set(only):
        return True
    if not os.path.isdir(only):
        return False  # let the one-trace path say what is wrong with it
    return len(expand_inputs(patterns, fmt)) > 1


__all__ = ["expand_inputs", "is_corpus"]
