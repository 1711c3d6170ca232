"""Opening inputs (files, `-`, .gz) and writing outputs atomically."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ctxsim.errors import CtxsimError


def open_input(path: str) -> BinaryIO:
    """A binary stream for a path, `-` (stdin) or a gzip file (by magic bytes)."""
    if path == "-":
        return sys.stdin.buffer
    try:
        raw = open(path, "rb")  # noqa: SIM115 - handed to the caller
    except FileNotFoundError:
        raise CtxsimError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CtxsimError(f"{path}: is a directory, expected a trace file") from None
    except PermissionError:
        raise CtxsimError(f"{path}: permission denied") from None
    if raw.peek(2)[:2] == b"\x1f\x8b":
        return gzip.open(raw)  # type: ignore[return-value]
    return raw


class HashingReader:
    """Iterates the lines of a binary stream and keeps a SHA-256 of every byte read."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._hash = hashlib.sha256()

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            self._hash.update(line)
            yield line

    @property
    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[io.IOBase]:
    """Write to a temporary file beside `path`, then rename it over `path`.

    An interrupted write leaves the old file or the new one, never a partial one.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if "b" in mode:
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
