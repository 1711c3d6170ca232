"""Fuzz every reader: any bytes in, and structured mutations of a valid file of that format
(random bytes alone rarely get past sniffing); a Trace or a clean CtxsimError out, never
another exception. Whatever a reader returns, `convert` (the native writer) writes it so it
reads back to the same trace. Then the round trip on traces Hypothesis builds itself.

Bounded in the suite (FUZZ_EXAMPLES per reader and strategy, deadline=None); for a long run:

    CTXSIM_FUZZ_EXAMPLES=5000 python -m pytest -q tests/test_fuzz_readers.py
"""

from __future__ import annotations

import copy
import io
import json
import os
from typing import Any

import pytest
from bad_inputs import FILES, JSONL, TINY
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxsim._support.fileio import Limits
from ctxsim.errors import CtxsimError
from ctxsim.formats import SessionBuilder, native, read_traces
from ctxsim.formats._input import read_one as _read_one
from ctxsim.model import Message, ToolCall, Trace, Usage, format_ts

FUZZ_EXAMPLES = int(os.environ.get("CTXSIM_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize="CTXSIM_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LIMITS = Limits(max_line_bytes=1 << 20, max_input_bytes=1 << 22, max_messages=10_000)


def read_bytes(data: bytes, fmt: str | None, skip: bool, name: str = "fuzz.jsonl") -> Trace | None:
    """The reader (the one `fmt` names, else the one sniffing picks) on these bytes, as for stdin:
    a Trace, or None when it refused them with a CtxsimError. Anything else propagates."""
    try:
        _, sessions, _, _ = _read_one(name, data, fmt, skip, LIMITS)
    except CtxsimError as exc:
        assert "\n" not in str(exc), "an error is one line"  # noqa: PT017  a fuzzed input may or may not be refused
        event("refused")
        return None
    event("read")
    return Trace("fuzz", tuple(sessions))


def native_text(trace: Trace) -> str:
    out = io.StringIO()
    native.write(trace, out)
    return out.getvalue()


def assert_round_trip(trace: Trace) -> None:
    """What convert writes reads back (strictly, as native) to the same sessions, and writes the same."""
    text = native_text(trace)
    back = read_bytes(text.encode("utf-8"), "native", False, "converted.jsonl")
    assert back is not None, "convert wrote a file the native reader refuses: " + _refusal(text)
    assert native_text(back) == text
    if "NaN" not in text:  # NaN != NaN: where the trace holds one (arguments, say), the text stands for it
        assert back.sessions == trace.sessions


def _refusal(text: str) -> str:
    try:
        _read_one("converted.jsonl", text.encode(), "native", False, LIMITS)
    except CtxsimError as exc:
        return str(exc)
    return "?"


# ---------------------------------------------------------------- any bytes


@pytest.mark.parametrize("fmt", [None, *FILES])
@FUZZ
@given(data=st.binary(max_size=600), skip=st.booleans())
def test_any_bytes_are_a_trace_or_a_clean_error(fmt: str | None, data: bytes, skip: bool) -> None:
    trace = read_bytes(data, fmt, skip)
    if trace is not None:
        assert_round_trip(trace)


@pytest.mark.parametrize("fmt", [None, *FILES])
@FUZZ
@given(prefix=st.sampled_from([b"", b"\xef\xbb\xbf", b"\x1f\x8b", b"{", b"[", b"{\"type\": \"session\"}\n"]),
       text=st.text(max_size=300), skip=st.booleans())
def test_any_text_is_a_trace_or_a_clean_error(fmt: str | None, prefix: bytes, text: str, skip: bool) -> None:
    trace = read_bytes(prefix + text.encode("utf-8", "surrogatepass"), fmt, skip)
    if trace is not None:
        assert_round_trip(trace)


# ---------------------------------------------------------------- structured mutations of a valid file


def _base(fmt: str) -> Any:
    text = (TINY / FILES[fmt]).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()] if fmt in JSONL else json.loads(text)


BASES = {fmt: _base(fmt) for fmt in FILES}


def _vocabulary(value: Any, keys: set[str], strings: set[str]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.update(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and len(item) < 40:
            strings.add(item)


KEYS: set[str] = set()
STRINGS: set[str] = set()
for _value in BASES.values():
    _vocabulary(_value, KEYS, STRINGS)
STRINGS |= {"", chr(0xD800), chr(0xDFFF), "x\ud83dy", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00",
            "2026-13-45T99:99:99Z", "NaN", "call_1", "call_1#2", "tool_use", "tool_result", "thinking", "image",
            "compact_boundary", "user", "assistant", "tool", "system", "summary", "function_call",
            "function_call_output", "token_count", "session_meta", "message", "event", "session"}
SORTED_KEYS = sorted(KEYS)
SORTED_STRINGS = sorted(STRINGS)

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2 ** 64), max_value=2 ** 64),
    st.sampled_from([0, -1, 1, 10 ** 8, 10 ** 8 + 1, 10 ** 12, 2 ** 63, 1e20, 1e300, 1.5, -0.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(SORTED_STRINGS),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(SORTED_KEYS) | st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in the value."""
    out: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                out.append((item, k))
                stack.append(v)
        elif isinstance(item, list):
            for i, v in enumerate(item):
                out.append((item, i))
                stack.append(v)
    return out


# Same type, odd value: the structure stays valid, so these reach past the shape checks.
ODD_STRINGS = [chr(0xD800), chr(0xDFFF), "\x00", "\ufeff", "\u2028", "", "9999-12-31T23:59:59-01:00",
               "0001-01-01T00:00:00+01:00", "x" * 5000, "\r\n", "#2"]
ODD_NUMBERS = [float("nan"), float("inf"), -float("inf"), 1e300, 1e20, -1, 2 ** 63, 10 ** 8 + 1, 0.5, 10 ** 30, 0]


def _odd(data: st.DataObject, slots: list[tuple[Any, Any]]) -> None:
    strings = [s for s in slots if isinstance(s[0][s[1]], str)]
    numbers = [s for s in slots if isinstance(s[0][s[1]], (int, float)) and not isinstance(s[0][s[1]], bool)]
    pool = strings + numbers
    if not pool:
        return
    parent, key = pool[data.draw(st.integers(0, len(pool) - 1), label="odd slot")]
    old = parent[key]
    if isinstance(old, str):
        odd = data.draw(st.sampled_from(ODD_STRINGS), label="odd string")
        where = data.draw(st.sampled_from(["all", "prefix", "suffix"]), label="where")
        parent[key] = odd if where == "all" else (odd + old if where == "prefix" else old + odd)
    else:
        parent[key] = data.draw(st.sampled_from(ODD_NUMBERS), label="odd number")


def mutate(data: st.DataObject, value: Any) -> Any:
    value = copy.deepcopy(value)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        slots = _slots(value)
        if not slots:
            break
        parent, key = slots[data.draw(st.integers(0, len(slots) - 1), label="slot")]
        action = data.draw(st.sampled_from(["replace", "replace", "odd", "odd", "odd", "delete", "copy", "retype"]),
                           label="action")
        if action == "odd":
            _odd(data, slots)
        elif action == "replace":
            parent[key] = data.draw(json_values, label="new value")
        elif action == "delete":
            del parent[key]
        elif action == "copy" and isinstance(parent, list):
            parent.insert(data.draw(st.integers(0, len(parent)), label="at"), copy.deepcopy(parent[key]))
        elif action == "copy":  # the value of another key of the same object
            parent[key] = copy.deepcopy(parent[data.draw(st.sampled_from(sorted(parent, key=str)), label="from")])
        else:  # the same value as another type
            old = parent[key]
            parent[key] = {"value": old} if not isinstance(old, dict) else [old]
    return value


def serialise(data: st.DataObject, fmt: str, value: Any) -> bytes:
    ascii_only = data.draw(st.booleans(), label="ascii")
    if fmt in JSONL and isinstance(value, list):
        text = "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in value)
    else:
        text = json.dumps(value, ensure_ascii=ascii_only, indent=data.draw(st.sampled_from([None, 1]), label="indent"))
    raw = text.encode("utf-8", "surrogatepass")
    damage = data.draw(st.sampled_from(["none", "none", "none", "truncate", "byte", "bom", "crlf"]), label="damage")
    if damage == "truncate" and raw:
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
    elif damage == "byte" and raw:
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        raw = raw[:at] + bytes([data.draw(st.integers(0, 255), label="byte")]) + raw[at + 1:]
    elif damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "crlf":
        raw = raw.replace(b"\n", b"\r\n")
    return raw


@pytest.mark.parametrize("fmt", list(FILES))
@FUZZ
@given(data=st.data())
def test_mutated_files_are_a_trace_or_a_clean_error(fmt: str, data: st.DataObject) -> None:
    raw = serialise(data, fmt, mutate(data, BASES[fmt]))
    skip = data.draw(st.booleans(), label="skip bad lines")
    forced = data.draw(st.booleans(), label="forced format")
    trace = read_bytes(raw, fmt if forced else None, skip, FILES[fmt])
    if trace is not None:
        assert_round_trip(trace)


# ---------------------------------------------------------------- round trip of built traces

ids = st.sampled_from(["c1", "c2", "", "c1#2", "call one", "\u00e9", "x" * 30])
texts = st.text(max_size=40) | st.sampled_from(["", " ", "\n", "\r\n", "\u2028", "\x00", "\ufeff"])
timestamps = st.none() | st.floats(min_value=-62135596800, max_value=253402300799, allow_nan=False).map(format_ts)
usages = st.builds(lambda i, r, w, w1, o: Usage(i + r + w + w1, r, w, w1, o),
                   *[st.integers(0, 10 ** 6)] * 5)


def _encodable(value: Any) -> bool:
    """No lone surrogate anywhere: what a reader hands on never holds one (they are replaced as read)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


arguments = st.none() | json_values.filter(_encodable)


@st.composite
def built_traces(draw: st.DrawFn) -> Trace:
    sessions = []
    for n in range(draw(st.integers(1, 3))):
        builder = SessionBuilder(draw(st.sampled_from([f"s{n}", f"s{n}/part-2", "sess\u00e9"])), source="fuzz",
                                 model=draw(st.none() | st.sampled_from(["claude-sonnet-4-5", "gpt-4.1"])),
                                 window=draw(st.none() | st.integers(1, 10 ** 6)), system=draw(st.none() | texts),
                                 ts=draw(timestamps))
        open_calls: list[str] = []
        for _ in range(draw(st.integers(0, 8))):
            role = draw(st.sampled_from(["user", "assistant", "assistant", "tool", "summary", "system"]))
            ts = draw(timestamps)
            if role == "assistant":
                calls = tuple(ToolCall(draw(ids), draw(st.sampled_from(["read_file", "", "bash"])), draw(arguments))
                              for _ in range(draw(st.integers(0, 2))))
                added = builder.add(Message("assistant", draw(texts), ts=ts, thinking=draw(st.none() | texts),
                                            tool_calls=calls, usage=draw(st.none() | usages),
                                            extra_tokens=draw(st.integers(0, 5000))))
                open_calls.extend(c.id for c in added.tool_calls)
            elif role == "tool":
                # a result for an open call, or one whose call is not open (it becomes a user message)
                wanted = draw(st.sampled_from(open_calls)) if open_calls and draw(st.booleans()) else draw(ids)
                builder.add(Message("tool", draw(texts), ts=ts, tool_call_id=wanted, is_error=draw(st.booleans())))
            else:
                builder.add(Message(role, draw(texts), ts=ts))  # type: ignore[arg-type]
        if draw(st.booleans()):
            builder.event("compaction", draw(timestamps), pre_tokens=draw(st.integers(0, 10 ** 6)))
        sessions.append(builder.build())
    return Trace("built", tuple(sessions))


@FUZZ
@given(trace=built_traces())
def test_what_convert_writes_reads_back_to_the_same_trace(trace: Trace) -> None:
    assert_round_trip(trace)


def test_the_round_trip_goes_through_the_files_convert_writes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every tiny fixture, converted by the command and read back from the file, is the same trace."""
    from typer.testing import CliRunner

    from ctxsim.cli import app

    for fmt, name in FILES.items():
        out = tmp_path / f"{fmt}.jsonl"
        res = CliRunner().invoke(app, ["convert", str(TINY / name), "-o", str(out)])
        assert res.exit_code == 0, res.output
        original = read_traces([str(TINY / name)])
        assert read_traces([str(out)]).sessions == original.sessions, fmt
