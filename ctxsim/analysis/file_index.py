"""The incremental accounting index: what reading one file gave the accounting (its charges, cache
breaks, reports and notes), kept in the user's cache folder so that a second `inspect` of an unchanged
home reads only the files that changed.

One JSON file per input under `$XDG_CACHE_HOME/ctxsim/index/` (else `~/.cache/ctxsim/index/`), named
by a hash of what the reading depends on besides the file's bytes (its absolute path, the format asked
for, --skip-bad-lines, the home folder projects are named from). An entry is served only when the file
still has the size, modification time (ns), device and inode it had when read, and the same hash of its
first and last `EDGE_BYTES`: an appended, rewritten (even to the same size and time) or moved file is
read again. The folder is named by ctxsim's version, the index's format and the installed price data,
so any of them changing starts a new index (the old folders are removed). Entries are written beside
their name and renamed over it, so concurrent runs never read half an entry; an entry that cannot be
read or parsed is read from the trace again and rewritten. `CTXSIM_INDEX=off` (or `--no-cache`) turns
it off; `CTXSIM_INDEX=DIR` puts it in DIR.

Nothing here is trace content: ids are hashed, and the notes and the project and model names are
those the tables show.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FORMAT = 1  # bump when what an entry holds, or how it is read, changes
EDGE_BYTES = 32 * 1024


@dataclass
class Entry:
    """What the accounting took from one file; `charges` pairs each charge with its response's id digest
    (None: no ids), so that a response copied into another file is dropped when the corpus is merged."""

    source: str
    sessions: int
    reports: list[Any]  # formats.FileReport
    notes: list[str]  # the reports' notes, as the corpus shows them
    price_notes: list[str]  # models this file needed and that have no price
    charges: list[tuple[int | None, Any]]  # (digest, accounting.Charge or None: a copy, not charged)
    breaks: list[Any] = field(default_factory=list)  # cache_breaks.Break


def _price_data_key() -> str:
    """Which genai-prices is installed (its data file's size and time), without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return "none"
    if spec is None or not spec.origin:
        return "none"
    try:
        st = os.stat(os.path.join(os.path.dirname(spec.origin), "data.py"))
    except OSError:
        return "none"
    return f"{st.st_size}:{st.st_mtime_ns}"


def index_root() -> str | None:
    """The folder holding every version's index, or None when the index is off."""
    chosen = os.environ.get("CTXSIM_INDEX", "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ctxsim", "index")


class Index:
    """One run's view of the index: `get` an entry still valid for a file, `put` a fresh one."""

    def __init__(self, root: str) -> None:
        from ctxsim import __version__

        stamp = hashlib.blake2b(f"{__version__}\0{FORMAT}\0{_price_data_key()}".encode(), digest_size=8).hexdigest()
        self.root = root
        self.folder = os.path.join(root, f"v{FORMAT}-{stamp}")
        self.read = self.served = 0
        self._pruned = False

    @staticmethod
    def open(enabled: bool = True) -> Index | None:
        root = index_root() if enabled else None
        return Index(root) if root else None

    def _name(self, path: str, fmt: str | None, skip_bad_lines: bool, home: str | None) -> str:
        key = json.dumps([os.path.abspath(path), fmt, skip_bad_lines, home])
        return os.path.join(self.folder, hashlib.blake2b(key.encode(), digest_size=16).hexdigest() + ".json")

    @staticmethod
    def stamp_of(path: str) -> list[Any] | None:
        """The file's identity and edges now, or None (not a regular file: never indexed)."""
        try:
            with open(path, "rb") as handle:
                st = os.fstat(handle.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return None
                edges = hashlib.blake2b(digest_size=16)
                edges.update(handle.read(EDGE_BYTES))
                if st.st_size > EDGE_BYTES:
                    handle.seek(max(EDGE_BYTES, st.st_size - EDGE_BYTES))
                    edges.update(handle.read(EDGE_BYTES))
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino, edges.hexdigest()]

    def get(self, path: str, fmt: str | None, skip_bad_lines: bool, home: str | None,
            stamp: list[Any], decode: Callable[[dict[str, Any]], Entry]) -> Entry | None:
        """The file's entry while its stamp holds; `decode`: the entry's JSON to an Entry (the accounting's,
        which knows its charges and breaks: the index holds bytes, not their meaning)."""
        name = self._name(path, fmt, skip_bad_lines, home)
        try:
            with open(name, "rb") as handle:
                data = _loads(handle.read())
            if data.get("stamp") != stamp:
                return None
            entry = decode(data["entry"])
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, ArithmeticError):
            return None  # absent, stale or unreadable: read the trace again (and rewrite the entry)
        self.served += 1
        return entry

    def put(self, path: str, fmt: str | None, skip_bad_lines: bool, home: str | None, stamp: list[Any],
            entry: Entry) -> None:
        self.read += 1
        if stamp != self.stamp_of(path):
            return  # the file changed while it was read: what was read is not what the stamp says
        name = self._name(path, fmt, skip_bad_lines, home)
        try:
            self._prune()
            os.makedirs(self.folder, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".entry-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"stamp": stamp, "entry": _encode(entry)}, handle, separators=(",", ":"))
                os.replace(temporary, name)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return  # an index that cannot be written is only slower next time

    def _prune(self) -> None:
        """Remove the folders of other versions (once a run)."""
        if self._pruned:
            return
        self._pruned = True
        try:
            others = [e for e in os.listdir(self.root)
                      if e.startswith("v") and os.path.join(self.root, e) != self.folder]
        except OSError:
            return
        for other in others:
            shutil.rmtree(os.path.join(self.root, other), ignore_errors=True)


# ---------------------------------------------------------------- entries as JSON


def _loads(data: bytes) -> Any:
    """An entry as the stdlib reads it, faster (formats._fastjson); unreadable: ValueError."""
    from ctxsim.formats._fastjson import REFUSED, fast_loads

    value = fast_loads(data)
    return json.loads(data) if value is REFUSED else value


def _encode(entry: Entry) -> dict[str, Any]:
    return {
        "source": entry.source, "sessions": entry.sessions, "notes": entry.notes, "price_notes": entry.price_notes,
        "reports": [[r.path, r.format, r.sessions, r.skipped_lines, r.notes] for r in entry.reports],
        "charges": [[d] if c is None else
                    [d, c.ts_s, c.session, c.project, c.source, c.model, c.has_usage, c.input_tokens,
                     c.cache_read_tokens, c.cache_write_tokens, c.cache_write_1h_tokens, c.output_tokens,
                     None if c.cost_usd is None else str(c.cost_usd)] for d, c in entry.charges],
        "breaks": [b.to_json() for b in entry.breaks],
    }


