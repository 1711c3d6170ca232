"""Opening inputs (files, `-`, .gz) and writing outputs safely.

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TypeVar

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


def check_output(path: str | Path, inputs: Sequence[str | Path] = (), force: bool = False) -> Path:
    """Refuse an output file that would lose data (an input, a symlink, a device/FIFO/socket) unless
    `force`, and one that cannot be written; announce it as pending. Returns it as a Path."""
    _empty(path)
    out = Path(path)
    st = _lstat(out)
    target = out
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            raise CtxsimError(f"{out}: is a symbolic link (to {os.readlink(out)}); refusing to replace it: give the "
                              f"real path, or {FORCE_HINT} to write to what it points to")
        target = Path(os.path.realpath(out))
        st = _lstat(target)
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
    st = _lstat(out)
    target = out
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not force:
            raise CtxsimError(f"{out}: is a symbolic link (to {os.readlink(out)}); refusing to replace it: give the "
                              f"real folder, or {FORCE_HINT} to replace the folder it points to")
        target = Path(os.path.realpath(out))
        st = _lstat(target)
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
                    try:
                        stale.unlink()
                    except OSError:
                        pass


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _fail(path: str | Path, exc: OSError) -> CtxsimError:
    return CtxsimError(f"{path}: cannot write: {exc.strerror or exc}")


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", force: bool = False) -> Iterator[io.IOBase]:
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
            with open(target, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": "\n"})) \
                    as handle:
                yield handle
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
        if binary:
            handle = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        _written(path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
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
