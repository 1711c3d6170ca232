"""Opening inputs (files, `-`, .gz) within limits, and writing outputs atomically."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ctxsim.errors import CtxsimError


@dataclass(frozen=True)
class Limits:
    """What one read may take; over a limit is a one-line error naming the file (and line).

    Generous defaults, but finite: a gzip bomb, a runaway line or a device file cannot take
    the machine. The command line sets them (`--max-line-bytes`, `--max-input-bytes`,
    `--max-messages`).
    """

    max_line_bytes: int = 64 << 20  # one JSONL line, without its line end
    max_input_bytes: int = 1 << 30  # one input after decompression (its size on disk first, by stat)
    max_messages: int = 10_000_000  # messages in the whole trace, every input together


_limits = Limits()


def input_limits() -> Limits:
    """The limits reads use when none are given (the command line's, else the defaults)."""
    return _limits


def set_input_limits(limits: Limits) -> None:
    global _limits
    _limits = limits


def over_input(path: str, limit: int, detail: str) -> CtxsimError:
    return CtxsimError(f"{path}: {detail} --max-input-bytes ({limit:,} bytes); pass a larger --max-input-bytes "
                       "to read it")


_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _refuse_special(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise CtxsimError(f"{path}: is a directory, expected a trace file")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
        raise CtxsimError(f"{path}: is {kind}, not a regular file; to read from it, pipe it to '-' (stdin)")


def _os_error(path: str, exc: OSError) -> CtxsimError:
    if isinstance(exc, FileNotFoundError):
        return CtxsimError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return CtxsimError(f"{path}: is a directory, expected a trace file")
    if isinstance(exc, PermissionError):
        return CtxsimError(f"{path}: permission denied")
    if isinstance(exc, NotADirectoryError):
        return CtxsimError(f"{path}: no such file (a part of the path is not a directory)")
    return CtxsimError(f"{path}: cannot read it ({exc.strerror or exc})")


def check_regular_file(path: str) -> None:
    """A one-line error unless `path` is a regular file (or a directory, said as such): for
    readers that open a path themselves (run.json), so that a FIFO is refused, not waited on."""
    try:
        _refuse_special(path, os.stat(path).st_mode)
    except OSError as exc:
        raise _os_error(path, exc) from None
    except ValueError:  # a NUL byte in the path
        raise CtxsimError(f"{path!r}: not a valid file name") from None


def open_input(path: str, limits: Limits | None = None) -> BinaryIO:
    """A binary stream for a path, `-` (stdin) or a gzip file (by magic bytes).

    Checked before anything is read: a FIFO, device or socket is refused (opening a FIFO
    would block for ever), and so is a file whose size on disk is over `max_input_bytes` (a
    sparse 2 GB file is not read to find that out). What is read is counted after
    decompression, so a gzip bomb stops at the limit; a UTF-8 byte-order mark at the start is
    dropped; a broken gzip stream, wherever it breaks, is `path: broken gzip data (...)`.
    """
    if path == "-":
        return sys.stdin.buffer
    limits = limits or _limits
    try:
        info = os.stat(path)
        _refuse_special(path, info.st_mode)
        if info.st_size > limits.max_input_bytes:
            raise over_input(path, limits.max_input_bytes, f"{info.st_size:,} bytes on disk, over")
        # O_NONBLOCK: should the path have become a FIFO since the stat, opening it does not block
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _os_error(path, exc) from None
    except ValueError:  # a NUL byte in the path
        raise CtxsimError(f"{path!r}: not a valid file name") from None
    raw = os.fdopen(fd, "rb")  # handed to the caller, closed with the stream
    try:
        _refuse_special(path, os.fstat(fd).st_mode)
        packed = raw.peek(2)[:2] == b"\x1f\x8b"
    except BaseException:
        raw.close()
        raise
    inner: BinaryIO = gzip.GzipFile(fileobj=raw) if packed else raw  # type: ignore[assignment]
    guarded = GuardedInput(inner, path, limits.max_input_bytes, packed, also_close=raw)
    return io.BufferedReader(guarded, 1 << 16)  # type: ignore[return-value]


def read_stdin(limits: Limits | None = None) -> bytes:
    """All of stdin (decompressed when it is gzip), at most `max_input_bytes`, without a leading BOM."""
    limits = limits or _limits
    stream = GuardedInput(sys.stdin.buffer, "-", limits.max_input_bytes, False)
    data = stream.read_all()
    if data[:2] == b"\x1f\x8b":
        data = GuardedInput(gzip.GzipFile(fileobj=io.BytesIO(data)), "-", limits.max_input_bytes, True).read_all()
    return data


_READ_ERRORS = (OSError, EOFError, zlib.error)
_BOM = b"\xef\xbb\xbf"


class GuardedInput(io.RawIOBase):
    """A read-only stream over `inner` that counts what it yields and stops past `limit` bytes.

    It drops a UTF-8 byte-order mark at the very start and turns read failures (a truncated
    or corrupt gzip stream, an I/O error) into one-line errors naming the file.
    """

    def __init__(self, inner: BinaryIO, path: str, limit: int, packed: bool,
                 also_close: BinaryIO | None = None) -> None:
        self._inner = inner
        self._also_close = also_close
        self._path = path
        self._limit = limit
        self._packed = packed
        self._count = 0
        self._pending = b""
        self._started = False

    def readable(self) -> bool:
        return True

    def _read(self, n: int) -> bytes:
        try:
            return self._inner.read(n)
        except _READ_ERRORS as exc:
            what = "broken gzip data" if self._packed else "cannot read the file"
            detail = str(exc) or type(exc).__name__
            raise CtxsimError(f"{self._path}: {what} after {self._count:,} bytes ({detail})") from None

    def readinto(self, buffer: Any) -> int:
        want = len(buffer)
        if not self._started:
            self._started = True
            head = self._read(max(want, 3))
            while 0 < len(head) < 3:
                more = self._read(3 - len(head))
                if not more:
                    break
                head += more
            self._pending = head[3:] if head.startswith(_BOM) else head
        if self._pending:
            data, self._pending = self._pending[:want], self._pending[want:]
        else:
            data = self._read(want)
        n = len(data)
        self._count += n
        if self._count > self._limit:
            raise over_input(self._path, self._limit, "decompresses to more than" if self._packed
                             else "more data than")
        buffer[:n] = data
        return n

    def read_all(self) -> bytes:
        """Everything up to the limit (over it: the error), without a BufferedReader's extra copy."""
        chunks = []
        while True:
            chunk = self.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def close(self) -> None:
        for stream in (self._inner, self._also_close):
            if stream is not None and stream is not sys.stdin.buffer:
                stream.close()
        super().close()


def read_lines(stream: BinaryIO, limit: int, update: Any = None) -> Iterator[bytes | None]:
    """The lines of a binary stream; None for a line longer than `limit` bytes (its end not counted).

    An over-long line is never held whole: it is read on in pieces of at most `limit` bytes and
    dropped, so the caller can refuse (or skip) it at a cost bounded by the limit. `update`, if
    given, sees every byte read (a hash).
    """
    readline = stream.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if update is not None:
            update(line)
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = readline(limit + 1)
            if update is not None:
                update(line)
        yield None


class HashingReader:
    """Iterates the lines of a binary stream and keeps a SHA-256 of every byte read.

    A line over `max_line_bytes` (default: the limits in force) is yielded as None."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int | None = None) -> None:
        self._stream = stream
        self._hash = hashlib.sha256()
        self._limit = max_line_bytes if max_line_bytes is not None else _limits.max_line_bytes

    def __iter__(self) -> Iterator[bytes | None]:
        return read_lines(self._stream, self._limit, self._hash.update)

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
