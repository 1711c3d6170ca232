"""The readers' one shape: every format, the native one included, is read through `parse(stream, source)` by
the same code in `read_traces`; strictness is the format's declared property, not a special case."""

from __future__ import annotations

import io
from pathlib import Path

from ctxsim.formats import FileReport, FormatInfo, formats, read_traces, register
from ctxsim.formats._node import Node
from ctxsim.formats._source import Source


def test_every_reader_parses_an_open_input():
    table = formats()
    assert all(info.parse is not None and info.read is None for info in table.values())
    assert [name for name, info in table.items() if info.strict] == ["native"]


def test_native_with_skipped_lines_reports_them_and_keeps_no_notes(tmp_path: Path):
    path = tmp_path / "n.jsonl"
    path.write_text('{"type": "message", "role": "user", "content": "hi"}\n{broken\n'
                    '{"type": "message", "role": "assistant", "content": "ok"}\n', encoding="utf-8")
    report: list[FileReport] = []
    trace = read_traces([str(path)], skip_bad_lines=True, report=report)
    assert [m.role for m in trace.sessions[0].messages] == ["user", "assistant"]
    assert (report[0].format, report[0].skipped_lines, report[0].notes) == ("native", [2], [])


def test_a_strict_source_refuses_a_lone_surrogate_that_a_liberal_one_replaces():
    line = b'{"content": "a \\ud800 b"}\n'
    liberal, strict = Source("x.jsonl"), Source("x.jsonl", strict=True)
    assert [r["content"] for _, r in liberal.records(io.BytesIO(line))] == ["a \ufffd b"]
    assert list(strict.records(io.BytesIO(line))) == [] and strict.bad_lines[0][0] == 1


def test_a_third_party_reader_gets_the_same_reading(tmp_path: Path):
    """A reader registered from outside is read by the same code: its Source, malformed lines, digest."""
    seen: list[Source] = []

    def parse(stream, source):  # type: ignore[no-untyped-def]
        from ctxsim.formats._session import SessionBuilder
        from ctxsim.model import Message

        seen.append(source)
        builder = SessionBuilder("x")
        for node in source.jsonl(stream):
            builder.add(Message("user", node.string("say") or ""))
        return [builder.build()]

    from ctxsim.formats import _REGISTRY

    info = FormatInfo("say-lines", "test", lambda head: None if head.startswith(b'{"say"') else "no", __name__,
                      parse=parse)
    formats()  # every built-in reader registered before the registry is saved
    saved = dict(_REGISTRY._items), dict(_REGISTRY._modules)
    try:
        register(info)
        path = tmp_path / "t.jsonl"
        path.write_text('{"say": "a"}\n{oops\n{"say": "b"}\n', encoding="utf-8")
        report: list[FileReport] = []
        trace = read_traces([str(path)], "say-lines", skip_bad_lines=True, report=report)
        assert [m.content for m in trace.sessions[0].messages] == ["a", "b"]
        assert report[0].skipped_lines == [2] and report[0].notes == ["skipped 1 malformed line (2)"]
        assert trace.digest.startswith("sha256:") and not seen[0].strict
    finally:
        _REGISTRY._items, _REGISTRY._modules = saved


def test_node_getters_are_named_for_json_kinds_not_builtins():
    assert not any(hasattr(Node, name) for name in ("str", "bool", "list", "int", "dict"))
    node = Node({"a": "x", "b": True, "c": [1, 2]}, Source("x.json"), 3)
    assert (node.string("a"), node.boolean("b"), [n.value for n in node.array("c")]) == ("x", True, [1, 2])
