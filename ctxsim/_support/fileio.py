"""Opening inputs (files, `-`, .gz) within limits, and writing outputs safely.

The output side (everything below `HashingReader`) is the one place where ctxsim writes:

- `check_output` / `check_folder` refuse, before any work, an output that would lose data (the same
  file as an input, a symlink, a device or FIFO, a folder that is not ours) unless forced, and an
  output that cannot be written (an empty path, a path under a file, a folder where a file is
  expected, an unwritable folder); each is one `CtxsimError` line.
- `atomic_write` writes a file beside the target and renames it over, so a file is the old one or
  the new one; `replace_folder` does the same for a whole folder (a report bundle): filled in a
  hidden sibling, then swapped in, so the folder holds one run or the one before it.
- Outputs announced by the checks and not yet written are listed by `pending()`, for the line the
  CLI prints when it is interrupted. Temporary names carry the writer's pid, and a writer removes
  the leftovers of writers that died (SIGKILL) before cleaning up.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, TypeVar

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
    inner: IO[bytes] | io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if packed else raw
    guarded = GuardedInput(inner, path, limits.max_input_bytes, packed, also_close=raw)
    return io.BufferedReader(guarded, 1 << 16)


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

    def __init__(self, inner: IO[bytes] | io.BufferedIOBase, path: str, limit: int, packed: bool,
                 also_close: IO[bytes] | None = None) -> None:
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
        chunks: list[bytes] = []
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


_BLANK = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() strips


def _non_blank(buf: bytes, pos: int) -> int:
    """Where the first byte that is not blank stands at or after `pos` in `buf`, or -1. A short look
    first (a record's line starts at once; a blank line or two is a 64-byte copy), then the rest of the
    chunk in one strip (a long run of blank lines: one pass in C)."""
    if pos < len(buf) and buf[pos] not in _BLANK:
        return pos
    near = min(len(buf), pos + 64)
    kept = buf[pos:near].lstrip()
    if kept:
        return near - len(kept)
    if near == len(buf):
        return -1
    kept = buf[near:].lstrip()
    return len(buf) - len(kept) if kept else -1
LINE_CHUNK = 1 << 16  # what `numbered_lines` reads at a time


def numbered_lines(stream: IO[bytes], limit: int, update: Any = None, chunk: int = LINE_CHUNK
                   ) -> Iterator[tuple[int, bytes | None]]:
    """(number, line) for every line of a binary stream that is not blank, numbered as the file's lines
    are; None for a line whose content (its newline aside) is longer than `limit` bytes.

    Blank lines are skipped at the byte level, a chunk at a time (a gigabyte of newlines costs a search
    and a count per chunk, not a Python step per line), and an over-long line is never held whole: it is
    read on and dropped, so the caller can refuse (or skip) it at a cost bounded by the limit. A line's
    leading blanks that a chunk's end cut off are counted against the limit but not returned. `update`,
    if given, sees every byte read (a hash); `chunk`: the bytes read at a time.
    """
    read = stream.read
    buf = b""
    pos = number = 0
    carry = 0  # blank bytes of the current line that earlier chunks held
    while True:
        if pos >= len(buf):
            buf, pos = read(chunk), 0
            if not buf:
                return
            if update is not None:
                update(buf)
        found = _non_blank(buf, pos)
        if found < 0:  # the rest of the chunk is blank lines, and maybe the start of one more
            last = buf.rfind(b"\n", pos)
            number += buf.count(b"\n", pos)
            carry = len(buf) - last - 1 if last >= 0 else carry + len(buf) - pos
            pos = len(buf)
            continue
        last = buf.rfind(b"\n", pos, found)
        if last >= 0:
            number += buf.count(b"\n", pos, last + 1)
            pos, carry = last + 1, 0
        number += 1
        start = pos
        end = buf.find(b"\n", found)
        stop = end if end >= 0 else len(buf)
        size = carry + stop - start  # the line's content so far, its newline aside
        carry = 0
        pos = end + 1 if end >= 0 else len(buf)
        if end >= 0 and size <= limit:
            yield number, buf[start:pos]
            continue
        parts = [buf[start:pos]] if size <= limit else []
        while end < 0:  # the line goes on in the next chunks
            buf, pos = read(chunk), 0
            if not buf:
                break
            if update is not None:
                update(buf)
            end = buf.find(b"\n")
            size += end if end >= 0 else len(buf)
            pos = end + 1 if end >= 0 else len(buf)
            if size <= limit:
                parts.append(buf[:pos])
            else:
                parts.clear()  # over the limit: read on to its end without keeping it
        yield number, b"".join(parts) if size <= limit else None


class HashingReader:
    """Iterates the numbered lines of a binary stream that are not blank (`numbered_lines`) and keeps a
    SHA-256 of every byte read. A line over `max_line_bytes` (default: the limits in force) is None."""

    def __init__(self, stream: IO[bytes], max_line_bytes: int | None = None) -> None:
        self._stream = stream
        self._hash = hashlib.sha256()
        self._limit = max_line_bytes if max_line_bytes is not None else _limits.max_line_bytes

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        return numbered_lines(self._stream, self._limit, self._hash.update)

    @property
    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()


# ---------------------------------------------------------------- outputs
T = TypeVar("T")

_pending: dict[str, str] = {}  # outputs this command announced (checked) and has not written: absolute -> as given

FORCE_HINT = "--force"


def reset_pending() -> None:
    _pending.clear()


def pending() -> list[str]:
    """Outputs checked for this command and not written (yet): what an interruption leaves unwritten."""
    return list(_pending.values())


def _announce(path: str | Path) -> None:
    _pending.setdefault(os.path.abspath(path), str(path))


def _written(path: str | Path) -> None:
    _pending.pop(os.path.abspath(path), None)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _lstat(path: Path) -> os.stat_result | None:
    """The path's own status (a link itself, not its target); None when absent; one line on any error."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                raise CtxsimError(f"{path}: cannot write: {parent} is not a folder") from None
        raise CtxsimError(f"{path}: cannot write: a part of the path is not a folder") from None
    except OSError as exc:
        raise CtxsimError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _check_parent(path: Path) -> None:
    """The first existing folder above `path` must be a folder we may create entries in."""
    for parent in path.parents:
        st = _lstat(parent)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(parent) if parent.exists() else None
            if st is None:
                raise CtxsimError(f"{path}: cannot write: {parent} is a broken symbolic link")
        if not stat.S_ISDIR(st.st_mode):
            raise CtxsimError(f"{path}: cannot write: {parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CtxsimError(f"{path}: cannot write: the folder {parent} is not writable")
        return


def _empty(path: str | Path) -> None:
    if str(path) == "":
        raise CtxsimError("-o '': the output path is empty")


def output_path(text: str) -> Path:
    """`-o TEXT` as a Path; an empty TEXT is an error (Path("") would be the current folder)."""
    _empty(text)
    return Path(text)


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def _input_clash(out: Path, inputs: Sequence[str | Path]) -> str | None:
    """The input `out` would replace: the same file (also through links), or a file inside an input folder."""
    if not out.exists():
        return None
    real = os.path.realpath(out)
    for given in inputs:
        text = str(given)
        if text in ("", "-") or not os.path.exists(text):
            continue
        if os.path.isdir(text):
            if not out.is_dir() and _inside(real, os.path.realpath(text)):
                return f"is inside the input folder {text}, where it may be one of the traces read"
        elif os.path.samefile(out, text):
            return f"is the input {text}" if os.path.abspath(text) == os.path.abspath(out) else \
                f"is the same file as the input {text}"
    return None


def _through_link(out: Path, force: bool, real: str, forced: str) -> tuple[Path, os.stat_result | None]:
    """`out` and its lstat, or, for a symlink (refused unless `force`), what it points to and its lstat."""
    st = _lstat(out)
    if st is None or not stat.S_ISLNK(st.st_mode):
        return out, st
    if not force:
        raise CtxsimError(f"{out}: is a symbolic link (to {os.readlink(out)}); refusing to replace it: give the "
                          f"{real}, or {FORCE_HINT} {forced}")
    target = Path(os.path.realpath(out))
    return target, _lstat(target)


def check_output(path: str | Path, inputs: Sequence[str | Path] = (), force: bool = False) -> Path:
    """Refuse an output file that would lose data (an input, a symlink, a device/FIFO/socket) unless
    `force`, and one that cannot be written; announce it as pending. Returns it as a Path."""
    _empty(path)
    out = Path(path)
    target, st = _through_link(out, force, "real path", "to write to what it points to")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CtxsimError(f"{out}: is a folder, expected a file")
    if st is not None and not stat.S_ISREG(st.st_mode) and not force:
        raise CtxsimError(f"{out}: is a {_kind(st.st_mode)}, not a regular file; refusing to replace it "
                          f"({FORCE_HINT} writes into it)")
    if st is None:
        _check_parent(target)
    clash = _input_clash(out, inputs)
    if clash and not force:
        raise CtxsimError(f"{out}: {clash}; refusing to overwrite an input: write elsewhere, or {FORCE_HINT} "
                          f"to replace it")
    _announce(path)
    return out


def check_folder(path: str | Path, inputs: Sequence[str | Path] = (), force: bool = False,
                 ours: Callable[[str], bool] = lambda name: True) -> Path:
    """Refuse a folder to be replaced whole (a bundle) when that would lose data: a symlink, a folder
    holding entries `ours` does not claim, a folder with an input inside, unless `force`; never the
    current folder or one above it; one that cannot be written. Announce it as pending."""
    _empty(path)
    out = Path(path)
    target, st = _through_link(out, force, "real folder", "to replace the folder it points to")
    real = os.path.realpath(target)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise CtxsimError(f"{out}: exists and is not a folder")
    if _inside(os.path.realpath(os.getcwd()), real):
        raise CtxsimError(f"{out}: is the current folder or above it; the output folder is replaced whole: "
                          f"give a folder of its own (e.g. -o report/)")
    _check_parent(Path(real))
    if st is not None:
        foreign = sorted(name for name in _listdir(target) if not ours(name))
        if foreign and not force:
            raise CtxsimError(f"{out}: holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} that a "
                              f"ctxsim bundle does not write (e.g. {foreign[0]}) and the bundle replaces the whole "
                              f"folder: pick another folder, or {FORCE_HINT} to replace it, deleting them")
    for given in inputs:
        text = str(given)
        if text in ("", "-") or not os.path.exists(text):
            continue
        if _inside(os.path.realpath(text), real) and not force:
            raise CtxsimError(f"{out}: holds the input {text}, which replacing the folder would delete: write "
                              f"elsewhere, or {FORCE_HINT}")
    _announce(path)
    return out


def _listdir(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError as exc:
        raise CtxsimError(f"{folder}: cannot read the folder: {exc.strerror or exc}") from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _temp_prefix(name: str, kind: str) -> str:
    return f".{name}.{kind}-{os.getpid()}-"


def _clean_stale(folder: Path, name: str) -> None:
    """Remove what writers of `name` that died (e.g. SIGKILL) left beside it: `.NAME.tmp-PID-*`, `.NAME.old-PID-*`."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        for kind in ("tmp", "old"):
            head = f".{name}.{kind}-"
            if not entry.startswith(head):
                continue
            pid = entry[len(head):].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                stale = folder / entry
                if stale.is_dir() and not stale.is_symlink():
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    with suppress(OSError):
                        stale.unlink()


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _fail(path: str | Path, exc: OSError) -> CtxsimError:
    return CtxsimError(f"{path}: cannot write: {exc.strerror or exc}")


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", force: bool = False) -> Iterator[IO[Any]]:
    """Write to a temporary file beside `path`, then rename it over `path`.

    An interrupted write leaves the old file or the new one, never a partial one. A symlink or a
    special file (device, FIFO) at `path` is refused, unless `force`: then the link's target is
    written, and a special file is written into (there is nothing to rename over it). Every
    OSError is a one-line CtxsimError.
    """
    _empty(path)
    target = Path(path)
    st = _lstat(target)
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            raise CtxsimError(f"{target}: is a symbolic link; refusing to replace it ({FORCE_HINT} writes its target)")
        target = Path(os.path.realpath(target))
        st = _lstat(target)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CtxsimError(f"{path}: is a folder, expected a file")
    binary = "b" in mode
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not force:
            raise CtxsimError(f"{path}: is a {_kind(st.st_mode)}, not a regular file; refusing to replace it")
        try:
            with open(target, "wb") if binary else open(target, "w", encoding="utf-8", newline="\n") as into:
                yield into
        except OSError as exc:
            raise _fail(path, exc) from None
        _written(path)
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(target.parent, target.name)
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target.name, "tmp"), suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _fail(path, exc) from None
    try:
        handle: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        _written(path)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _fail(path, exc) from None
        raise


def _exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    errno = ctypes.get_errno()
    import errno as codes

    if errno in (codes.ENOSYS, codes.EINVAL, codes.ENOTSUP, codes.EOPNOTSUPP):
        return False  # not this kernel or this filesystem: the two-rename fallback
    raise OSError(errno, os.strerror(errno), b)


def replace_folder(path: str | Path, fill: Callable[[Path], T], force: bool = False,
                   ours: Callable[[str], bool] = lambda name: True) -> T:
    """Fill a hidden sibling folder (`.NAME.tmp-PID-XXXX`) with `fill(folder)`, then swap it in for `path`.

    The folder holds the previous contents or the new ones, never a mix: on Linux the swap is one
    renameat2(RENAME_EXCHANGE); elsewhere the old folder is renamed aside and the new one renamed in
    (a moment with no folder; an error or interruption there puts the old one back). The old
    contents are then removed. Refused as `check_folder` refuses (a symlink, entries that `ours`
    does not claim), unless `force`. An interruption removes the temporary folder.
    """
    _empty(path)
    target = Path(os.path.abspath(path))
    st = _lstat(target)
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            raise CtxsimError(f"{path}: is a symbolic link; refusing to replace it ({FORCE_HINT} replaces its target)")
        target = Path(os.path.realpath(target))
        st = _lstat(target)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise CtxsimError(f"{path}: exists and is not a folder")
    if st is not None and not force:
        foreign = sorted(name for name in _listdir(target) if not ours(name))
        if foreign:
            raise CtxsimError(f"{path}: holds entries that a ctxsim bundle does not write (e.g. {foreign[0]}); "
                              f"refusing to replace the folder")
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(parent, target.name)
        tmp = tempfile.mkdtemp(prefix=_temp_prefix(target.name, "tmp"), dir=parent)
    except OSError as exc:
        raise _fail(path, exc) from None
    leftover = tmp  # what to remove at the end: the new folder until it is in place, then the old one
    try:
        result = fill(Path(tmp))
        os.chmod(tmp, 0o777 & ~_umask())
        if st is None:
            os.rename(tmp, target)
            leftover = ""
        elif _exchange(tmp, str(target)):
            pass  # tmp now holds the old contents
        else:
            aside = tempfile.mkdtemp(prefix=_temp_prefix(target.name, "old"), dir=parent)
            os.rename(target, aside)  # onto the empty folder just made: POSIX allows it
            try:
                os.rename(tmp, target)
            except BaseException:
                os.rename(aside, target)  # the old folder back; the new one is removed below
                raise
            leftover = aside
        _written(path)
    except BaseException as exc:
        shutil.rmtree(leftover, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _fail(path, exc) from None
        raise
    if leftover:
        shutil.rmtree(leftover, ignore_errors=True)
    return result
