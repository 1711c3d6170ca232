"""Errors that the CLI turns into one clear line and exit code 2."""

from __future__ import annotations


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
