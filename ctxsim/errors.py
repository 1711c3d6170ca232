"""Errors that the CLI turns into one clear line and exit code 2."""

from __future__ import annotations

from collections.abc import Iterable


class CtxsimError(Exception):
    """Bad input or usage: printed as one line, exit code 2."""


class TraceError(CtxsimError):
    """A problem at a place in a trace file: `file:line: what is wrong`."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class ParameterError(CtxsimError):
    """A policy, cache-model or command parameter that is unknown or of the wrong type."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `known` to a mistyped `name`, else ''."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
