"""The pinned native format: reading, round trip, and every kind of bad input."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from conftest import write_jsonl
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import TraceError
from ctxsim.formats import native, read_trace


def test_reads_sessions_messages_and_unknown_fields(tmp_path: Path, tiny_records):
    tiny_records[1]["mood"] = "curious"  # unknown field: kept
    tiny_records[0]["team"] = {"name": "billing"}
    second = [{"type": "session", "id": "two"}, {"type": "message", "role": "user", "content": "hi"},
              {"type": "event", "name": "compaction", "pre_tokens": 155000}]
    path = write_jsonl(tmp_path / "t.jsonl", tiny_records + second)
    trace = read_trace(str(path))
    assert [s.id for s in trace.sessions] == ["tiny", "two"]
    s = trace.sessions[0]
    assert s.model == "claude-sonnet-4-5" and s.window == 200000 and s.extra["team"] == {"name": "billing"}
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert s.messages[0].extra["mood"] == "curious"
    assert s.messages[1].tool_calls[0].arguments == {"path": "src/billing/invoice.py"}
    assert s.messages[3].usage.cache_write_tokens == 1700 and s.messages[3].usage.uncached_tokens == 100
    assert trace.sessions[1].events[0].fields["pre_tokens"] == 155000
    assert trace.sessions[1].events[0].position == 1
    assert trace.digest.startswith("sha256:")


def test_round_trip_is_byte_stable(tmp_path: Path, tiny_records):
    tiny_records[2]["extra_field"] = [1, 2]
    path = write_jsonl(tmp_path / "t.jsonl", tiny_records)
    first = io.StringIO()
    native.write(read_trace(str(path)), first)
    again = tmp_path / "again.jsonl"
    again.write_text(first.getvalue(), encoding="utf-8")
    second = io.StringIO()
    native.write(read_trace(str(again)), second)
    assert first.getvalue() == second.getvalue()
    assert read_trace(str(again)).sessions == read_trace(str(path)).sessions
    assert '"extra_field": [1, 2]' in first.getvalue()


def test_file_without_header_is_one_session(tmp_path: Path, tiny_records):
    path = write_jsonl(tmp_path / "nohead.jsonl", tiny_records[1:])
    trace = read_trace(str(path))
    assert len(trace.sessions) == 1 and trace.sessions[0].id == "nohead"
    assert trace.sessions[0].model is None


def test_gzip_and_stdin_style_stream(tmp_path: Path, tiny_records):
    raw = "".join(json.dumps(r) + "\n" for r in tiny_records).encode()
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(raw))
    assert read_trace(str(gz)).sessions[0].messages[0].content.startswith("Invoice")
    assert native.read_stream(io.BytesIO(raw), "-").sessions[0].id == "tiny"


BAD_CASES = [
    ("empty", b"", None, "empty trace"),
    ("blank", b"\n\n", None, "empty trace"),
    ("broken json", b'{"type": "message", "role": "user", "content": "a"}\n{"type": "mess\n', 2, "broken JSON"),
    ("not an object", b"[1, 2]\n", 1, "expected a JSON object"),
    ("no type", b'{"role": "user"}\n', 1, "'type' is missing"),
    ("wrong content type", b'{"type": "message", "role": "user", "content": 5}\n', 1, "'content' must be a string"),
    ("unknown role", b'{"type": "message", "role": "robot", "content": ""}\n', 1, "unknown role 'robot'"),
    ("orphan result", b'{"type": "message", "role": "tool", "tool_call_id": "x1", "content": "out"}\n', 1,
     "without its call"),
    ("negative usage", b'{"type": "message", "role": "assistant", "content": "", "usage": {"input_tokens": -5}}\n',
     1, "usage.input_tokens' must not be negative"),
    ("absurd usage", (b'{"type": "message", "role": "assistant", "content": "", "usage": {"input_tokens": '
     b'99999999999}}\n'), 1, "absurd"),
    ("reads above input", (b'{"type": "message", "role": "assistant", "content": "", "usage": '
     b'{"input_tokens": 10, "cache_read_tokens": 50}}\n'), 1, "exceed input_tokens"),
    ("string usage", b'{"type": "message", "role": "assistant", "content": "", "usage": {"output_tokens": "7"}}\n',
     1, "must be an integer"),
    ("invalid utf-8", (b'{"type": "message", "role": "user", "content": "ok"}\n{"type": "message", "role": "user",'
     b' "content": "\xff\xfe"}\n'), 2, "invalid UTF-8"),
    ("bad ts", b'{"type": "message", "role": "user", "content": "a", "ts": "yesterday"}\n', 1, "ISO 8601"),
    ("bad version", b'{"type": "session", "version": 9}\n', 1, "unsupported native format version 9"),
    ("bool as int", b'{"type": "session", "window": true}\n', 1, "'window' must be an integer"),
    ("unknown record", b'{"type": "turn"}\n', 1, "unknown record type 'turn'"),
    ("calls on user", (b'{"type": "message", "role": "user", "content": "", "tool_calls": [{"id": "a", '
     b'"name": "x"}]}\n'), 1, "only assistant"),
    ("duplicate result", (b'{"type": "message", "role": "assistant", "content": "", "tool_calls": [{"id": "a", '
     b'"name": "x"}]}\n{"type": "message", "role": "tool", "tool_call_id": "a", "content": "1"}\n'
     b'{"type": "message", "role": "tool", "tool_call_id": "a", "content": "2"}\n'), 3, "second tool result"),
]


@pytest.mark.parametrize(("name", "data", "line", "message"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_is_a_clear_error(tmp_path: Path, name, data, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(TraceError) as caught:
        read_trace(str(path))
    assert caught.value.line == line
    assert message in str(caught.value)
    expected_where = f"{path}:{line}:" if line is not None else f"{path}:"
    assert str(caught.value).startswith(expected_where)


@pytest.mark.parametrize(("name", "data", "line", "message"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_cli_exits_2_without_traceback(tmp_path: Path, name, data, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    out = tmp_path / "run.json"
    result = CliRunner().invoke(app, ["replay", str(path), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert message in result.stderr and "Traceback" not in result.stderr + result.stdout
    assert not out.exists()  # no half-written output


def test_missing_file_exits_2(tmp_path: Path):
    result = CliRunner().invoke(app, ["replay", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2 and "no such file" in result.stderr
