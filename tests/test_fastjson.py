"""JSONL lines decoded by msgspec give exactly what the stdlib gives (objects, key order, numbers), and
every line msgspec refuses is the stdlib's, with its own verdict."""

from __future__ import annotations

import json

import pytest

from ctxsim.formats import _source
from ctxsim.formats._fastjson import REFUSED, fast_loads
from ctxsim.formats._source import Source

LINES = [
    b'{"a": 1, "b": [1, 2.5, -0.0, 1E5, true, null], "a": 2}',  # a repeated key: the last value, first place
    b'{"usage": {"input_tokens": 12, "cache_read_input_tokens": 9007199254740993}}',
    b'{"n": 123456789012345678901234567890, "m": -9223372036854775809}',  # past 64 bits: still ints
    b'{"id": "req_0123456789012345678901"}',
    b'{"f": 1e400, "g": NaN}',
    b'{"s": "\\ud83d\\ude00 caf\\u00e9 \xc3\xa9"}',
    b'{"s": "\\ud800 alone"}',
    b'\xef\xbb\xbf{"bom": 1}',
    b'{"deep": ' + b"[" * 1100 + b"]" * 1100 + b"}",
    b'{"broken": ',
    b'{"bad": "\xff"}',
    b"[1, 2]",
    b"null",
]


def read(raw: bytes, number: int) -> tuple[str, list[tuple[int, str]], int]:
    source = Source("x.jsonl")
    record = source.decode(raw, number)
    return json.dumps(record), source.bad_lines, source.surrogates


@pytest.mark.parametrize("number", [1, 2])
@pytest.mark.parametrize("raw", LINES)
def test_a_line_reads_as_the_stdlib_alone_reads_it(raw: bytes, number: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = read(raw, number)
    monkeypatch.setattr(_source, "fast_loads", lambda raw: REFUSED)  # the reading before msgspec
    slow = read(raw, number)
    assert fast == slow  # the same objects (keys in the same order, the same numbers), verdicts and notes


def test_the_lines_cover_both_readers() -> None:
    refused = [raw for raw in LINES if fast_loads(raw) is REFUSED]
    assert 0 < len(refused) < len(LINES)
    assert read(LINES[1], 2)[0] == '{"usage": {"input_tokens": 12, "cache_read_input_tokens": 9007199254740993}}'


def test_what_msgspec_refuses_is_the_stdlibs() -> None:
    assert fast_loads(b'{"a": 1, "n": 12345678901234567890123}') == {"a": 1, "n": 12345678901234567890123}
    for raw in (b'{"f": 1e400}', b'\xef\xbb\xbf{"a": 1}', b'{"g": NaN}', b'{"s": "\\udc00"}', b'{"a": '):
        assert fast_loads(raw) is REFUSED


def test_a_broken_line_is_described_in_the_stdlibs_words() -> None:
    source = Source("x.jsonl")
    assert source.decode(b'{"a": "\\x"}', 7) is None
    with pytest.raises(json.JSONDecodeError) as stdlib:
        json.loads('{"a": "\\x"}')
    assert source.bad_lines == [(7, f"broken JSON: {stdlib.value.msg} at column {stdlib.value.colno}")]
    assert stdlib.value.msg == "Invalid \\escape"
