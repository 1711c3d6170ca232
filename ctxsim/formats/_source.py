"""One input being read (`Source`): its JSONL lines or whole document decoded, malformed lines collected (an
error that lists them, or skipped with `--skip-bad-lines`), wrong shapes turned into `file:line: what is
wrong`; and lone UTF-16 surrogates, which are valid JSON but not valid Unicode."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import IO, Any

from ctxsim._support.fileio import input_limits
from ctxsim.errors import TraceError
from ctxsim.formats._fastjson import REFUSED, fast_loads
from ctxsim.formats._node import Node, kind_of

BAD_LINES_SHOWN = 8


class Source:
    """One input being read: decodes lines, collects malformed ones, reports wrong shapes.

    A lone UTF-16 surrogate (`"\\ud800"`: valid JSON, not valid Unicode, so no later step
    could encode it) is replaced by U+FFFD and counted in the notes. With `strict` (a format
    that says so, `FormatInfo.strict`: the native one) its line is malformed instead, and the
    reading keeps no notes (the lines it skipped are in `bad_lines`).
    """

    def __init__(self, path: str, skip_bad_lines: bool = False, max_line_bytes: int | None = None,
                 strict: bool = False) -> None:
        self.path = path
        self.skip_bad_lines = skip_bad_lines
        self.max_line_bytes = max_line_bytes if max_line_bytes is not None else input_limits().max_line_bytes
        self.strict = strict
        self.bad_lines: list[tuple[int, str]] = []  # (line, what is wrong)
        self.notes: list[str] = []
        self.text: str | None = None  # a whole-document input, for locating fields
        self.surrogates = 0
        self.surrogate_lines: list[int] = []

    def too_long(self) -> str:
        return f"line longer than --max-line-bytes ({self.max_line_bytes:,} bytes)"

    # -- JSONL
    def decode(self, raw: bytes, number: int) -> dict[str, Any] | None:
        """One JSONL line as an object, or None (recorded as malformed)."""
        record = fast_loads(raw)  # msgspec: the stdlib's objects, faster; REFUSED leaves the line to the stdlib
        if record is REFUSED:
            record = self._loads(raw, number)
            if record is REFUSED:
                return None
        if not isinstance(record, dict):
            self.bad_lines.append((number, f"expected a JSON object, got {kind_of(record)}"))
            return None
        if _SURROGATE_ESCAPE.search(raw) is not None:
            found = replace_surrogates(record)
            if found and self.strict:
                self.bad_lines.append((number, LONE_SURROGATE))
                return None
            if found:
                self.surrogates += found
                self.surrogate_lines.append(number)
        return record

    def _loads(self, raw: bytes, number: int) -> Any:
        """The stdlib's reading of a line, or REFUSED (recorded as malformed, in its words)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_lines.append((number, f"invalid UTF-8 at byte {exc.start} of the line"))
            return REFUSED
        if number == 1:
            text = text.removeprefix("\ufeff")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            self.bad_lines.append((number, f"broken JSON: {exc.msg} at column {exc.colno}"))
        except RecursionError:
            self.bad_lines.append((number, "JSON nested too deeply"))
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            self.bad_lines.append((number, f"broken JSON: {exc}"))
        return REFUSED

    def records(self, stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every well-formed line as (its number, its object); blank lines skipped, malformed ones collected
        (blank lines skipped at the byte level, an over-long line never held whole: `numbered_lines`)."""
        from ctxsim._support.fileio import numbered_lines

        for number, raw in numbered_lines(stream, self.max_line_bytes):
            if raw is None:
                self.bad_lines.append((number, self.too_long()))
                continue
            if not raw.strip():
                continue
            record = self.decode(raw, number)
            if record is not None:
                yield number, record

    def jsonl(self, stream: IO[bytes]) -> Iterator[Node]:
        """Every well-formed line as a Node; blank lines skipped, malformed ones collected."""
        for number, record in self.records(stream):
            yield Node(record, self, number)

    def finish(self) -> None:
        """After reading: malformed lines are an error that lists them, unless they are skipped."""
        if self.surrogates:
            lines = self.surrogate_lines
            where = (f" on line{'s' if len(lines) != 1 else ''} " + ", ".join(map(str, lines[:BAD_LINES_SHOWN]))
                     + (", ..." if len(lines) > BAD_LINES_SHOWN else "")) if lines else ""
            self.note(f"replaced {self.surrogates:,} lone UTF-16 surrogate(s) (not valid Unicode) with U+FFFD{where}")
            self.surrogates = 0
        if not self.bad_lines:
            return
        lines = [n for n, _ in self.bad_lines]
        shown = ", ".join(str(n) for n in lines[:BAD_LINES_SHOWN]) + (", ..." if len(lines) > BAD_LINES_SHOWN else "")
        count = f"{len(lines)} malformed line{'s' if len(lines) != 1 else ''} ({shown})"
        if self.skip_bad_lines:
            if not self.strict:  # a strict reading keeps no notes: what it skipped is in bad_lines alone
                self.notes.insert(0, f"skipped {count}")
            return
        first, why = self.bad_lines[0]
        raise TraceError(self.path, first, f"{why}; {count}; pass --skip-bad-lines to skip them and read the rest")

    def bad(self, line: int | None, message: str) -> None:
        """A record of the wrong shape: skipped with `skip_bad_lines` (when it has a line), else an error."""
        if self.skip_bad_lines and line is not None and self.text is None:
            self.bad_lines.append((line, message))
            return
        if self.bad_lines and not self.skip_bad_lines:
            self.finish()
        raise TraceError(self.path, line, message)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def any_json(self, stream: IO[bytes]) -> tuple[list[Node], bool]:
        """A whole JSON document (one Node, True) or JSONL (its line Nodes, False), told apart by parsing."""
        raw = stream.read()
        text = raw.lstrip()
        if text.startswith(b"{"):
            first, _, rest = text.partition(b"\n")
            try:
                json.loads(first)
                whole_line = True
            except (ValueError, RecursionError):
                whole_line = False
            if whole_line and (not rest.strip() or rest.lstrip().startswith(b"{")):
                return list(self.jsonl(io.BytesIO(raw))), False
        return [self.document(io.BytesIO(raw))], True

    # -- whole documents
    def document(self, stream: IO[bytes]) -> Node:
        raw = stream.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise TraceError(self.path, line, f"invalid UTF-8 at byte {exc.start}") from None
        if not text.strip():
            raise TraceError(self.path, None, "empty trace: the file has no records")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            what = "truncated JSON" if "\n" not in text[exc.pos:].rstrip() else "broken JSON"
            raise TraceError(self.path, exc.lineno, f"{what}: {exc.msg} at column {exc.colno}") from None
        except RecursionError:
            raise TraceError(self.path, None, "JSON nested too deeply") from None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise TraceError(self.path, None, f"broken JSON: {exc}") from None
        if _SURROGATE_ESCAPE.search(raw) is not None:
            self.surrogates += replace_surrogates(value)
        self.text = text
        return Node(value, self, None)


# A JSON escape of a UTF-16 surrogate; json.loads joins a valid pair into one character, so
# a surrogate left in the decoded text was alone.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")
LONE_SURROGATE = "a string holds a lone UTF-16 surrogate escape (e.g. \\ud800): not valid Unicode"


def replace_surrogates(value: Any) -> int:
    """Replace, in place, every lone surrogate in the strings (keys too) of a decoded JSON value
    by U+FFFD; how many there were. A bare string cannot change in place: callers pass containers."""
    count = 0
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for i, v in enumerate(item):
                if isinstance(v, str):
                    if _LONE.search(v):
                        item[i], n = _LONE.subn("\ufffd", v)
                        count += n
                elif isinstance(v, (dict, list)):
                    stack.append(v)
            continue
        bad_keys = False
        for k, v in item.items():
            if isinstance(v, str):
                if _LONE.search(v):
                    item[k], n = _LONE.subn("\ufffd", v)
                    count += n
            elif isinstance(v, (dict, list)):
                stack.append(v)
            bad_keys = bad_keys or _LONE.search(k) is not None
        if bad_keys:
            pairs = list(item.items())
            item.clear()
            for k, v in pairs:
                new, n = _LONE.subn("\ufffd", k)
                count += n
                item[new] = v
    return count
