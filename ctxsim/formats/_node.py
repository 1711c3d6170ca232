"""The JSON node every reader walks: a decoded value with the file, line and JSON path it came from, whose
typed getters fail with `file:line: field 'a.b[2]' must be ...`; and the line locator that finds where a
field of a whole-document input starts."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ctxsim._support.redact import quoted
from ctxsim.errors import TraceError
from ctxsim.model import format_ts, parse_ts

if TYPE_CHECKING:
    from ctxsim.formats._source import Source


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def locate(text: str, path: tuple[Any, ...]) -> int | None:
    """Line (1-based) where the value at `path` starts in the JSON `text`; None if it cannot be found."""
    decoder = json.JSONDecoder()
    ws = " \t\n\r"
    pos = 0
    n = len(text)

    def skip(p: int) -> int:
        while p < n and text[p] in ws:
            p += 1
        return p

    def value_then(p: int, sep: str) -> tuple[Any, int] | None:
        """The JSON value at `p` and where the next one starts, past `sep`; None if the text is not so."""
        try:
            value, p = decoder.raw_decode(text, p)
        except ValueError:
            return None
        p = skip(p)
        if p >= n or text[p] != sep:
            return None
        return value, skip(p + 1)

    pos = skip(pos)
    for step in path:
        if pos >= n:
            return None
        if isinstance(step, int) and text[pos] == "[":
            pos = skip(pos + 1)
            for _ in range(step):
                got = value_then(pos, ",")
                if got is None:
                    return None
                pos = got[1]
        elif isinstance(step, str) and text[pos] == "{":
            pos = skip(pos + 1)
            while True:
                if pos >= n or text[pos] != '"':
                    return None
                got = value_then(pos, ":")
                if got is None:
                    return None
                key, pos = got
                if key == step:
                    break
                got = value_then(pos, ",")
                if got is None:
                    return None
                pos = got[1]
        else:
            return None
    return text.count("\n", 0, pos) + 1


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


MAX_TOKENS = 100_000_000


class Node:
    """A decoded JSON value and where it came from; typed getters fail with file:line and the field's path.

    The getters are named for the JSON kind they require of a field (`string`, `boolean`, `number`,
    `count`, `obj`, `array`, `ts`, `tools`), none after a Python builtin.
    """

    __slots__ = ("line", "path", "source", "value")

    def __init__(self, value: Any, source: Source, line: int | None, path: tuple[Any, ...] = ()) -> None:
        self.value = value
        self.source = source
        self.line = line  # the JSONL line; None inside a whole document (located on error)
        self.path = path

    # -- errors
    def where(self) -> int | None:
        if self.line is not None:
            return self.line
        if self.source.text is not None:
            return locate(self.source.text, self.path)
        return None

    def fail(self, message: str, key: Any = None) -> TraceError:
        path = self.path + ((key,) if key is not None else ())
        label = _dotted(path)
        text = f"field '{label}' {message}" if label else message
        line = self.line if self.line is not None else (
            locate(self.source.text, path) or locate(self.source.text, self.path) if self.source.text else None)
        return TraceError(self.source.path, line, text)

    # -- navigation
    def child(self, key: Any) -> Node:
        value = self.value.get(key) if isinstance(self.value, dict) else (
            self.value[key] if isinstance(self.value, list) and isinstance(key, int) and key < len(self.value)
            else None)
        return Node(value, self.source, self.line, (*self.path, key))

    def get(self, key: str, default: Any = None) -> Any:
        if isinstance(self.value, dict):
            value = self.value.get(key, default)
            return default if value is None else value
        return default

    def __contains__(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def _typed(self, key: str, kinds: tuple[type, ...], what: str, required: bool) -> Any:
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None:
            if required:
                raise self.fail("is missing", key)
            return None
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise self.fail(f"must be {what}, got {kind_of(value)}", key)
        return value

    def string(self, key: str, required: bool = False) -> str | None:
        value: str | None = self._typed(key, (str,), "a string", required)
        return value

    def boolean(self, key: str) -> bool:
        return bool(self._typed(key, (bool,), "true or false", False))

    def number(self, key: str) -> float | None:
        value = self._typed(key, (int, float), "a number", False)
        return None if value is None else float(value)

    def count(self, key: str, required: bool = False) -> int | None:
        value: int | float | None = self._typed(key, (int, float), "a non-negative integer", required)
        if value is None:
            return None
        if isinstance(value, float):
            if not value.is_integer():
                raise self.fail(f"must be an integer, got {value}", key)
            value = int(value)
        if value < 0:
            raise self.fail(f"must not be negative, got {value}", key)
        if value > MAX_TOKENS:
            raise self.fail(f"is absurd: {value:,} (limit {MAX_TOKENS:,})", key)
        return value

    def obj(self, key: str, required: bool = False) -> Node | None:
        value = self._typed(key, (dict,), "an object", required)
        return None if value is None else Node(value, self.source, self.line, (*self.path, key))

    def array(self, key: str, required: bool = False) -> list[Node]:
        value = self._typed(key, (list,), "an array", required)
        if value is None:
            return []
        return [Node(v, self.source, self.line, (*self.path, key, i)) for i, v in enumerate(value)]

    def items(self) -> list[Node]:
        """The elements of this array (an error if it is not one)."""
        if not isinstance(self.value, list):
            raise self.fail(f"must be an array, got {kind_of(self.value)}")
        return [Node(v, self.source, self.line, (*self.path, i)) for i, v in enumerate(self.value)]

    def tools(self, key: str = "tools") -> list[dict[str, Any]] | None:
        """Tool definitions: an array of objects (or absent)."""
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None:
            return None
        out = []
        for item in self.array(key):
            if not item.is_obj():
                raise item.fail(f"must be a tool definition (an object), got {kind_of(item.value)}")
            out.append(item.value)
        return out

    def ts(self, key: str) -> str | None:
        """An ISO 8601 or unix-seconds timestamp, normalised to the native `...Z` form."""
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            raise self.fail(f"must be a timestamp, got {kind_of(value)}", key)
        if isinstance(value, (int, float)):
            try:
                seconds = float(value)
                if seconds > 1e11:  # milliseconds
                    seconds /= 1000
                return format_ts(seconds)
            except (ValueError, OverflowError) as exc:
                raise self.fail(f"is not a usable timestamp: {exc}", key) from None
        if not isinstance(value, str):
            raise self.fail(f"must be a timestamp, got {kind_of(value)}", key)
        try:
            return format_ts(parse_ts(value))
        except (ValueError, OverflowError) as exc:
            why = f" ({exc})" if "years" in str(exc) else ""
            raise self.fail(f"is not an ISO 8601 timestamp{why}: {quoted(value)}", key) from None

    def is_obj(self) -> bool:
        return isinstance(self.value, dict)

