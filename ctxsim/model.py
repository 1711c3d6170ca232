"""The canonical trace model every reader produces and the engine replays.

Frozen dataclasses: a Trace holds Sessions, a Session holds Messages (and the
events the recorded agent itself logged). Field names follow the native format
(formats/native.py); usage follows the inclusive convention: `input_tokens` is
the whole prompt and the cache fields are parts of it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool", "summary"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool", "summary")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


# The moments a datetime can hold in UTC: years 1 to 9999.
MIN_TS_S = datetime(1, 1, 1, tzinfo=UTC).timestamp()
MAX_TS_S = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def parse_ts(text: str) -> float:
    """ISO 8601 timestamp to epoch seconds (naive times are taken as UTC).

    ValueError (saying what is wrong) for text that is not one, or a moment outside years 1-9999
    once converted to UTC (`9999-12-31T23:59:59-01:00`), which no later step could format.
    """
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("outside years 1-9999 once converted to UTC") from None
    return moment.timestamp()


def format_ts(seconds: float) -> str:
    """Epoch seconds to the `2026-01-13T16:56:01Z` form the writer uses.

    ValueError for NaN, infinities and moments outside years 1-9999 (UTC).
    """
    if not math.isfinite(seconds) or not MIN_TS_S <= seconds < MAX_TS_S + 1:
        raise ValueError(f"{seconds!r} seconds is outside years 1-9999")
    try:
        moment = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):  # the platform's time_t may be narrower
        raise ValueError(f"{seconds!r} seconds is outside the range this platform's clock can hold") from None
    # not strftime: its %Y does not pad years before 1000 to four digits on every platform
    text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
            f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")
    return f"{text}.{moment.microsecond:06d}Z" if moment.microsecond else f"{text}Z"


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider reported for one request, inclusive convention."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    @property
    def uncached_tokens(self) -> int:
        return (
            self.input_tokens
            - self.cache_read_tokens
            - self.cache_write_tokens
            - self.cache_write_1h_tokens
        )


def arguments_text(arguments: Any) -> str:
    """The JSON a provider sees for a tool call's arguments (compact, key order kept)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: Any = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    _json: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def arguments_json(self) -> str:
        """`arguments_text(self.arguments)`, made the first time it is asked for, then kept.

        Counting, rendering, scoring and summarising all read it; a call is frozen, so the
        text cannot go stale.
        """
        text = self._json
        if text is None:
            text = arguments_text(self.arguments)
            object.__setattr__(self, "_json", text)
        return text


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str = ""
    ts: str | None = None
    thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    usage: Usage | None = None
    model: str | None = None
    extra_tokens: int = 0
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def ts_s(self) -> float | None:
        return parse_ts(self.ts) if self.ts else None

    def with_content(self, content: str) -> Message:
        """The message with its text replaced (a stub, a mask, a cut), at half the cost of `replace`.

        What rode on the replaced text goes with it: a user or tool message's `extra_tokens` (its images
        and documents, and tokens a calibration anchored on it for content the log does not show) are not
        in the new text, so a policy that stubs the message saves them. An assistant message keeps its
        `extra_tokens` (its reasoning, which its text does not hold; the provider rule drops that apart).
        """
        # Each slot set through its own descriptor, which the frozen class's __setattr__ does not guard: a
        # third of the generated __init__'s time (an object.__setattr__ by name per field).
        new = _new_object(Message)
        role = self.role
        _set_role(new, role)
        _set_content(new, content)
        _set_ts(new, self.ts)
        _set_thinking(new, self.thinking)
        _set_tool_calls(new, self.tool_calls)
        _set_tool_call_id(new, self.tool_call_id)
        _set_name(new, self.name)
        _set_is_error(new, self.is_error)
        _set_usage(new, self.usage)
        _set_model(new, self.model)
        _set_extra_tokens(new, self.extra_tokens if role == "assistant" else 0)
        _set_extra(new, self.extra)
        _set_line(new, self.line)
        return new


def written(role: Role, content: str, ts: str | None = None) -> Message:
    """`Message(role, content, ts=ts)`, every other field its default: a message a policy writes (a summary,
    a marker), made as `with_content` makes its copies, in well under half the frozen init's time."""
    new = _BLANK.with_content(content)
    _set_role(new, role)
    _set_ts(new, ts)
    return new


_new_object = object.__new__
_COPIED = ("role", "content", "ts", "thinking", "tool_calls", "tool_call_id", "name", "is_error", "usage", "model",
           "extra_tokens", "extra", "line")  # what with_content sets: every field of Message
(_set_role, _set_content, _set_ts, _set_thinking, _set_tool_calls, _set_tool_call_id, _set_name, _set_is_error,
 _set_usage, _set_model, _set_extra_tokens, _set_extra, _set_line) = (
    Message.__dict__[name].__set__ for name in _COPIED)
if tuple(f.name for f in fields(Message)) != _COPIED or tuple(Message.__slots__) != _COPIED:
    raise TypeError("Message.with_content must set every field of Message: update it with the class")
_BLANK = Message("user")  # every field its default: what `written` copies


@dataclass(frozen=True, slots=True)
class Event:
    """Something the recorded agent did that is not a message (e.g. its own compaction).

    `position` is the number of the session's messages that came before it.
    """

    name: str
    position: int
    ts: str | None = None
    fields: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)


@dataclass(frozen=True, slots=True)
class Session:
    id: str = "session"
    source: str | None = None
    model: str | None = None
    provider: str | None = None
    window: int | None = None
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    system_tokens: int | None = None
    tools_tokens: int | None = None
    ts: str | None = None
    messages: tuple[Message, ...] = ()
    events: tuple[Event, ...] = ()
    has_header: bool = field(default=True, compare=False)
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    @property
    def requests(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")


@dataclass(frozen=True, slots=True)
class Trace:
    """What one or more input files hold: sessions in file order."""

    name: str
    sessions: tuple[Session, ...]
    digest: str = ""
