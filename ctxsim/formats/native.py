"""ctxsim JSONL, version 1: the pinned native trace format.

Read line by line (a file of any size streams: `stream_trace`), several sessions
per file, unknown fields kept; the writer's output reads back and writes again to
the same bytes. Every problem is reported as `file:line: what is wrong`. Read
strictly (`FormatInfo.strict`): only foreign formats are read liberally.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import IO, Any

from ctxsim._support.fileio import HashingReader, Limits, input_limits, open_input
from ctxsim._support.redact import quoted
from ctxsim.errors import CtxsimError, TraceError
from ctxsim.formats import FormatInfo, detect, register
from ctxsim.formats._input import READ_ERRORS, FileReport, HashingStream, MessageBudget, count_message, head_of, stem
from ctxsim.formats._source import LONE_SURROGATE, Source, replace_surrogates
from ctxsim.model import ROLES, Event, Message, Session, ToolCall, Trace, Usage, parse_ts

NAME = "native"
VERSION = 1
# A single request above this many tokens is not a real usage record.
MAX_TOKENS = 100_000_000

_SESSION_KEYS = (
    "version", "id", "source", "model", "provider", "window", "system", "tools",
    "system_tokens", "tools_tokens", "ts",
)
_MESSAGE_KEYS = (
    "role", "tool_call_id", "name", "content", "thinking", "tool_calls", "is_error",
    "usage", "model", "extra_tokens", "ts",
)
_USAGE_KEYS = (
    "input_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens",
    "output_tokens",
)


class _Checker:
    """Typed field access that fails with the file, line and field name."""

    def __init__(self, path: str, line: int) -> None:
        self.path = path
        self.line = line

    def fail(self, message: str) -> TraceError:
        return TraceError(self.path, self.line, message)

    def string(self, record: Mapping[str, Any], key: str, where: str = "") -> str | None:
        value = record.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"field '{where}{key}' must be a string, got {_kind(value)}")
        return value

    def count(self, record: Mapping[str, Any], key: str, where: str = "") -> int | None:
        value = record.get(key)
        if value is None:
            return None
        if isinstance(value, float) and value.is_integer():  # `1300.0`, as some JSON writers spell a count
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            what = f"{value!r}" if isinstance(value, float) else _kind(value)  # 12.5, nan, inf
            raise self.fail(f"field '{where}{key}' must be an integer, got {what}")
        if value < 0:
            raise self.fail(f"field '{where}{key}' must not be negative, got {value}")
        if value > MAX_TOKENS:
            raise self.fail(f"field '{where}{key}' is absurd: {value:,} (limit {MAX_TOKENS:,})")
        return value

    def ts(self, record: Mapping[str, Any]) -> str | None:
        value = self.string(record, "ts")
        if value is not None:
            try:
                parse_ts(value)
            except ValueError as exc:
                why = f" ({exc})" if "years" in str(exc) else ""
                raise self.fail(f"field 'ts' is not an ISO 8601 timestamp{why}: {quoted(value)}") from None
        return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
_SKIP: dict[tuple[str, ...], frozenset[str]] = {}


def _extra(record: Mapping[str, Any], known: tuple[str, ...]) -> Mapping[str, Any]:
    skip = _SKIP.get(known)
    if skip is None:
        skip = _SKIP[known] = frozenset(known) | {"type"}
    if len(record) <= len(skip) and skip.issuperset(record):
        return _NO_EXTRA
    return MappingProxyType({k: v for k, v in record.items() if k not in skip})


def _usage(check: _Checker, value: Any) -> Usage:
    if not isinstance(value, dict):
        raise check.fail(f"field 'usage' must be an object, got {_kind(value)}")
    counts = {key: check.count(value, key, "usage.") or 0 for key in _USAGE_KEYS}
    cached = counts["cache_read_tokens"] + counts["cache_write_tokens"] + counts["cache_write_1h_tokens"]
    if cached > counts["input_tokens"]:
        raise check.fail(
            f"usage: cache read + writes ({cached:,}) exceed input_tokens ({counts['input_tokens']:,}); "
            "input_tokens must be the whole prompt (inclusive convention)"
        )
    return Usage(**counts, extra=_extra(value, _USAGE_KEYS))


def _tool_calls(check: _Checker, value: Any) -> tuple[ToolCall, ...]:
    if not isinstance(value, list):
        raise check.fail(f"field 'tool_calls' must be an array, got {_kind(value)}")
    calls = []
    for i, item in enumerate(value):
        where = f"tool_calls[{i}]."
        if not isinstance(item, dict):
            raise check.fail(f"field 'tool_calls[{i}]' must be an object, got {_kind(item)}")
        call_id = check.string(item, "id", where)
        name = check.string(item, "name", where)
        if not call_id:
            raise check.fail(f"field '{where}id' is missing")
        if not name:
            raise check.fail(f"field '{where}name' is missing")
        calls.append(ToolCall(call_id, name, item.get("arguments"), _extra(item, ("id", "name", "arguments"))))
    return tuple(calls)


class _SessionBuilder:
    def __init__(self, header: Mapping[str, Any], has_header: bool, line: int | None) -> None:
        self.header = header
        self.has_header = has_header
        self.line = line
        self.messages: list[Message] = []
        self.events: list[Event] = []
        self.open_calls: dict[str, int] = {}  # call id -> line of its call
        self.answered: dict[str, int] = {}  # call id -> line of its result
        self.renamed: dict[str, str] = {}  # a reused call id (as the file has it) -> its unique id here

    def build(self, default_id: str) -> Session:
        h = self.header
        return Session(
            id=h.get("id") or default_id,
            source=h.get("source"),
            model=h.get("model"),
            provider=h.get("provider"),
            window=h.get("window"),
            system=h.get("system"),
            tools=tuple(MappingProxyType(dict(t)) for t in h.get("tools") or ()),
            system_tokens=h.get("system_tokens"),
            tools_tokens=h.get("tools_tokens"),
            ts=h.get("ts"),
            messages=tuple(self.messages),
            events=tuple(self.events),
            has_header=self.has_header,
            extra=_extra(h, _SESSION_KEYS),
        )


def _header(check: _Checker, record: dict[str, Any]) -> dict[str, Any]:
    version = record.get("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        raise check.fail(f"field 'version' must be an integer, got {_kind(version)}")
    if version != VERSION:
        raise check.fail(f"unsupported native format version {version} (this ctxsim reads version {VERSION})")
    for key in ("id", "source", "model", "provider", "system"):
        check.string(record, key)
    window = check.count(record, "window")
    if window == 0:
        raise check.fail("field 'window' must be positive")
    check.count(record, "system_tokens")
    check.count(record, "tools_tokens")
    check.ts(record)
    tools = record.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise check.fail(f"field 'tools' must be an array, got {_kind(tools)}")
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict):
                raise check.fail(f"field 'tools[{i}]' must be an object, got {_kind(tool)}")
    return record


def _message(check: _Checker, record: dict[str, Any], session: _SessionBuilder) -> Message:
    role = record.get("role")
    if role is None:
        raise check.fail("field 'role' is missing")
    if role not in ROLES:
        raise check.fail(f"unknown role {quoted(role)} (expected one of {', '.join(ROLES)})")
    if "content" not in record:
        raise check.fail('field \'content\' is missing (a message\'s text; "" when it has none)')
    content = record["content"]
    if not isinstance(content, str):
        raise check.fail(f"field 'content' must be a string, got {_kind(content)}")
    thinking = check.string(record, "thinking")
    name = check.string(record, "name")
    model = check.string(record, "model")
    ts = check.ts(record)
    is_error = record.get("is_error", False)
    if not isinstance(is_error, bool):
        raise check.fail(f"field 'is_error' must be true or false, got {_kind(is_error)}")
    extra_tokens = check.count(record, "extra_tokens") or 0
    calls: tuple[ToolCall, ...] = ()
    if "tool_calls" in record and record["tool_calls"] is not None:
        calls = _tool_calls(check, record["tool_calls"])
        if calls and role != "assistant":
            raise check.fail(f"only assistant messages may hold tool_calls, not {quoted(role)}")
    usage = None
    if record.get("usage") is not None:
        if role != "assistant":
            raise check.fail(f"only assistant messages carry usage, not {quoted(role)}")
        usage = _usage(check, record["usage"])
    call_id = check.string(record, "tool_call_id")
    if role == "tool":
        if not call_id:
            raise check.fail("tool result without 'tool_call_id'")
        call_id = session.renamed.get(call_id, call_id)
        if call_id in session.answered:
            raise check.fail(
                f"second tool result for call {call_id!r} (first at line {session.answered[call_id]})"
            )
        if call_id not in session.open_calls:
            raise check.fail(
                f"tool result for call {call_id!r} without its call: no earlier assistant message "
                "in this session holds that tool call"
            )
        del session.open_calls[call_id]
        session.answered[call_id] = check.line
    renamed = []
    for given in calls:
        call = given
        if call.id in session.open_calls:
            raise check.fail(f"tool call id {call.id!r} used twice in one session, the first call still "
                             f"unanswered (line {session.open_calls[call.id]})")
        if call.id in session.answered:
            # reused once its first call was answered: made unique as every reader does (`id#2`),
            # and the results that follow name the new call
            n = 2
            while f"{call.id}#{n}" in session.answered or f"{call.id}#{n}" in session.open_calls:
                n += 1
            session.renamed[call.id] = f"{call.id}#{n}"
            call = ToolCall(f"{call.id}#{n}", call.name, call.arguments, call.extra)
        session.open_calls[call.id] = check.line
        renamed.append(call)
    calls = tuple(renamed)
    return Message(
        role=role,
        content=content,
        ts=ts,
        thinking=thinking,
        tool_calls=calls,
        tool_call_id=call_id,
        name=name,
        is_error=is_error,
        usage=usage,
        model=model,
        extra_tokens=extra_tokens,
        extra=_extra(record, _MESSAGE_KEYS),
        line=check.line,
    )


def _event(check: _Checker, record: dict[str, Any], session: _SessionBuilder) -> Event:
    name = check.string(record, "name")
    if not name:
        raise check.fail("event without 'name'")
    ts = check.ts(record)
    return Event(name, len(session.messages), ts, _extra(record, ("name", "ts")))


def iter_records(lines: Iterable[tuple[int, bytes | None]], path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Decode JSONL lines strictly; blank lines skipped; errors name the line.

    A line given as None was over the line limit (`HashingReader`); a UTF-8 byte-order mark
    on line 1 is allowed; a lone UTF-16 surrogate escape is not (not valid Unicode).
    """
    for number, raw in lines:
        if raw is None:
            raise TraceError(path, number, f"line longer than --max-line-bytes "
                                           f"({input_limits().max_line_bytes:,} bytes)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(path, number, f"invalid UTF-8 at byte {exc.start} of the line") from None
        if number == 1:
            text = text.removeprefix("\ufeff")
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(path, number, f"broken JSON: {exc.msg} at column {exc.colno}") from None
        except RecursionError:
            raise TraceError(path, number, "JSON nested too deeply") from None
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            raise TraceError(path, number, f"broken JSON: {exc}") from None
        if not isinstance(record, dict):
            raise TraceError(path, number, f"expected a JSON object, got {_kind(record)}")
        if "\\u" in text and replace_surrogates(record):
            raise TraceError(path, number, LONE_SURROGATE)
        yield number, record


def stem_of(path: str) -> str:
    """What a session without an id is named after: the file name up to its first dot."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0] or "session"


def iter_sessions(records: Iterable[tuple[int, dict[str, Any]]], path: str,
                  count: Callable[[int | None], None] = count_message) -> Iterator[Session]:
    """The sessions of decoded records, each as soon as it ends (at the next session header or the end),
    so that a file of any number of sessions is read holding one session at a time. `count` is told of
    every message (its line): `--max-messages`."""
    stem = stem_of(path)
    builder: _SessionBuilder | None = None
    done = 0  # sessions yielded
    for number, record in records:
        check = _Checker(path, number)
        kind = record.get("type")
        if kind is None:
            raise check.fail("field 'type' is missing (expected session, message or event)")
        if kind == "session":
            header = _header(check, record)
            if builder is not None:  # a second session: the first ones are named stem-1, stem-2 ...
                done += 1
                yield builder.build(f"{stem}-{done}")
            builder = _SessionBuilder(header, True, number)
            continue
        if builder is None:
            builder = _SessionBuilder({}, False, None)
        if kind == "message":
            count(number)
            builder.messages.append(_message(check, record, builder))
        elif kind == "event":
            builder.events.append(_event(check, record, builder))
        else:
            raise check.fail(f"unknown record type {quoted(kind)} (expected session, message or event)")
    if builder is None:
        raise TraceError(path, None, "empty trace: no sessions and no messages")
    yield builder.build(stem if done == 0 else f"{stem}-{done + 1}")


def iter_parse(stream: IO[bytes], source: Source, count: Callable[[int | None], None] = count_message
               ) -> Iterator[Session]:
    """The sessions of a native JSONL input, each as soon as it ends (`iter_sessions`). Malformed lines are
    collected by `source` as they pass; when a record is wrong, the rest of the input is still read for them,
    and their error (`source.finish`) comes first."""
    records = source.records(stream)
    try:
        yield from iter_sessions(records, source.path, count)
    except TraceError:
        for _ in records:  # the malformed lines after it
            pass
        source.finish()
        raise


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    return list(iter_parse(stream, source))


def read_stream(stream: IO[bytes], path: str, max_line_bytes: int | None = None) -> Trace:
    reader = HashingReader(stream, max_line_bytes)
    sessions = tuple(iter_sessions(iter_records(reader, path), path))
    return Trace(name=stem_of(path), sessions=sessions, digest=reader.digest)


def read(path: str) -> Trace:
    stream = open_input(path)
    try:
        return read_stream(stream, path)
    finally:
        if path != "-":
            stream.close()


# ---------------------------------------------------------------- writer


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def session_record(session: Session) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "session", "version": VERSION, "id": session.id}
    _put(out, "source", session.source)
    _put(out, "model", session.model)
    _put(out, "provider", session.provider)
    _put(out, "window", session.window)
    _put(out, "system", session.system)
    if session.tools:
        out["tools"] = [dict(t) for t in session.tools]
    _put(out, "system_tokens", session.system_tokens)
    _put(out, "tools_tokens", session.tools_tokens)
    _put(out, "ts", session.ts)
    out.update(session.extra)
    return out


def message_record(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message", "role": message.role}
    _put(out, "tool_call_id", message.tool_call_id)
    _put(out, "name", message.name)
    out["content"] = message.content
    _put(out, "thinking", message.thinking)
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments, **c.extra} for c in message.tool_calls
        ]
    if message.is_error:
        out["is_error"] = True
    if message.usage is not None:
        u = message.usage
        out["usage"] = {key: getattr(u, key) for key in _USAGE_KEYS} | dict(u.extra)
    _put(out, "model", message.model)
    if message.extra_tokens:
        out["extra_tokens"] = message.extra_tokens
    _put(out, "ts", message.ts)
    out.update(message.extra)
    return out


def event_record(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "event", "name": event.name}
    _put(out, "ts", event.ts)
    out.update(event.fields)
    return out


def iter_lines(trace: Trace) -> Iterator[str]:
    for session in trace.sessions:
        yield _dumps(session_record(session))
        events = list(session.events)
        e = 0
        for i, message in enumerate(session.messages):
            while e < len(events) and events[e].position <= i:
                yield _dumps(event_record(events[e]))
                e += 1
            yield _dumps(message_record(message))
        for event in events[e:]:
            yield _dumps(event_record(event))


def write(trace: Trace, out: IO[str]) -> None:
    for line in iter_lines(trace):
        out.write(line)
        out.write("\n")


def sniff(head: bytes) -> str | None:
    """None when the head looks like native JSONL, else why not."""
    for raw in head.removeprefix(b"\xef\xbb\xbf").splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            return "first line is not a JSON object"
        if isinstance(record, dict) and record.get("type") == "session" and "cwd" in record and "timestamp" in record \
                and not {"source", "model", "provider", "system"} & record.keys():
            return "a Pi session header ({type: session, version, id, timestamp, cwd}): pi"
        if isinstance(record, dict) and record.get("type") in ("session", "message", "event") \
                and (record.get("type") != "message" or record.get("role") in ROLES):
            return None
        return "first record has no native 'type' (session, message or event)"
    return "no records in the first bytes"


# ---------------------------------------------------------------- streaming


class NativeSessions:
    """The sessions of one native JSONL file read on its own (not within `read_traces`), line by line and given
    out one at a time (memory: the session being read, not the file), under the limits in force (a line, the
    input, `--max-messages` over the file). Malformed lines are an error listing them unless skipped, as in
    `read_traces` (`iter_parse`). `digest` (SHA-256 of every byte) once read; the stream is closed once read."""

    def __init__(self, stream: IO[bytes], path: str, skip_bad_lines: bool, file_report: FileReport,
                 limits: Limits | None = None) -> None:
        limits = limits or input_limits()
        self.path = path
        self.file_report = file_report
        self._stream = stream
        self._hashing = HashingStream(stream)
        self._source = Source(path, skip_bad_lines, limits.max_line_bytes, strict=True)
        self._budget = MessageBudget(limits.max_messages)
        self._budget.path = path
        self.digest: str | None = None

    def __iter__(self) -> Iterator[Session]:
        try:
            yield from iter_parse(io.BufferedReader(self._hashing, 1 << 16), self._source, self._budget.add)
            self._source.finish()
        except READ_ERRORS as exc:
            raise TraceError(self.path, None, f"cannot read the file ({exc})") from None
        finally:
            self._stream.close()
        self.file_report.skipped_lines = [line for line, _ in self._source.bad_lines]
        self.digest = self._hashing.digest




@dataclass
class SessionStream:
    """One native trace file read as a stream of sessions (`stream_trace`): sessions in file order, their ids
    made unique as `read_traces` makes them; `digest` and `report` are complete once the sessions are."""

    name: str
    reading: NativeSessions
    report: FileReport

    def __iter__(self) -> Iterator[Session]:
        seen: dict[str, int] = {}
        for session in self.reading:
            n = seen.get(session.id, 0)
            seen[session.id] = n + 1
            yield session if n == 0 else replace(session, id=f"{session.id}-{n + 1}")
        self.report.sessions = sum(seen.values())

    def first_window(self) -> int | None:
        """The `window` of the first session header that has one (None: none has), found by a scan of the
        file that decodes only the lines that can be such a header (a second read, not a second parse)."""
        stream = open_input(self.reading.path)
        try:
            for line in stream:
                if b'"window"' in line and b'"session"' in line:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict) and record.get("type") == "session" and record.get("window"):
                        window = record["window"]
                        return window if isinstance(window, int) and not isinstance(window, bool) else None
        except READ_ERRORS:
            return None  # the reading itself says what is wrong
        finally:
            stream.close()
        return None

    @property
    def digest(self) -> str:
        if self.reading.digest is None:
            raise CtxsimError(f"{self.reading.path}: the digest is known once every session is read")
        return self.reading.digest


def stream_trace(path: str, fmt: str | None = None, skip_bad_lines: bool = False, *,
                 unless_usage: bool = False) -> SessionStream | None:
    """`path` as a stream of sessions when it is one native JSONL file (by `fmt` or by its first bytes);
    None otherwise (a folder, stdin, another format: read it whole with `read_traces`). The stream reads what
    `read_traces([path], fmt, skip_bad_lines)` reads, in the same order, one session at a time, under the
    same limits (a line, the input, `--max-messages`). `unless_usage`: None too when the file may record
    usage (`may_record_usage`): a calibration needs the whole trace."""
    if path == "-" or os.path.isdir(path) or (fmt is not None and fmt != NAME):
        return None
    try:
        head = head_of(path)
    except (CtxsimError, *READ_ERRORS):
        return None  # read_traces says what is wrong
    if not head.strip():
        return None
    if fmt is None:
        try:
            if detect(path, head).name != NAME:
                return None
        except CtxsimError:
            return None
    if unless_usage and may_record_usage(path):
        return None
    report = FileReport(path, NAME)
    stream = open_input(path)
    reading = NativeSessions(stream, path, skip_bad_lines, report)
    return SessionStream(stem(path), reading, report)


# The JSON string "usage", each letter as itself or as its \u escape (a key may be spelt so: "\u0075sage").
_USAGE_KEY = re.compile(rb'"(?:u|\\u0075)(?:s|\\u0073)(?:a|\\u0061)(?:g|\\u0067)(?:e|\\u0065)"')
_USAGE_KEY_BYTES = 2 + 5 * 6


def may_record_usage(path: str) -> bool:
    """Whether a native file may hold a message's `usage`, by a scan of its bytes (no parse): False only when
    the string "usage" appears nowhere, however it is spelt; unsure (a read error) is True."""
    try:
        stream = open_input(path)
        try:
            tail = b""
            while True:
                chunk = stream.read(1 << 20)
                if not chunk:
                    return False
                window = tail + chunk
                if _USAGE_KEY.search(window) is not None:
                    return True
                tail = window[-(_USAGE_KEY_BYTES - 1):]
        finally:
            stream.close()
    except (CtxsimError, *READ_ERRORS):
        return True


register(FormatInfo(name=NAME, description="ctxsim JSONL v1, the native trace format",
                    sniff=sniff, module=__name__, parse=parse, strict=True))
