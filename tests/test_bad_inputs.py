"""Bad input through the command line: every case of the corpus (tests/bad_inputs.py) ends in
exit 2 with one line naming the input, or exit 0 where the input is valid; never a traceback,
never a hang. Then the claims behind the cases, checked on the library directly.
"""

from __future__ import annotations

import gzip
import io
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from bad_inputs import FILES, TINY, Case, base_text, cases, problems, run_case
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxsim._support.fileio import LINE_CHUNK, Limits, numbered_lines, open_input
from ctxsim.errors import CtxsimError, TraceError
from ctxsim.formats import FileReport, read_trace, read_traces
from ctxsim.model import MAX_TS_S, MIN_TS_S, format_ts, parse_ts

CASES = cases()


@pytest.fixture
def deadline() -> Iterator[None]:
    """A case that blocks (a FIFO opened for reading waits for a writer for ever) fails instead."""
    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("the command hung")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, tmp_path: Path, deadline: None) -> None:
    setup, code, err = run_case(case, tmp_path)
    assert problems(case, setup, code, err) == [], err


def test_the_corpus_covers_every_reader_and_every_command_that_reads_input() -> None:
    names = {c.name for c in CASES}
    assert {n.split("/")[0] for n in names} >= set(FILES) | {"replay", "compare", "inspect", "convert", "validate",
                                                             "report", "diff", "policy-file"}
    for fmt in FILES:  # each reader: valid variants accepted, the bad ones refused
        for mutation in ("valid", "bom", "crlf", "gzip", "truncated", "invalid-utf8", "lone-surrogate",
                         "broken-gzip-past-64k", "over-max-input-bytes", "over-max-messages", "nesting-100k"):
            assert f"{fmt}/{mutation}" in names
    assert sum(c.expect == 2 for c in CASES) > 200 and sum(c.expect == 0 for c in CASES) > 50


# ---------------------------------------------------------------- the claims behind the cases


def test_a_bom_changes_nothing_a_reader_reads(tmp_path: Path) -> None:
    for fmt, name in FILES.items():
        plain = read_trace(str(TINY / name))
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + (TINY / name).read_bytes())
        assert read_trace(str(path)).sessions == plain.sessions, fmt


def test_a_lone_surrogate_is_replaced_and_counted_by_foreign_readers_and_refused_by_native(tmp_path: Path) -> None:
    for fmt, name in FILES.items():
        path = tmp_path / name
        path.write_text(base_text(fmt).replace("rounding", "round\\ud800ing"), encoding="utf-8")
        if fmt == "native":
            with pytest.raises(TraceError, match="lone UTF-16 surrogate") as err:
                read_trace(str(path))
            assert err.value.line == 2
            continue
        report: list[FileReport] = []
        trace = read_traces([str(path)], report=report)
        texts = [m.content for s in trace.sessions for m in s.messages]
        assert "Fix the round\ufffding bug in invoice.py" in texts, fmt
        assert all("\ud800" not in t for t in texts)
        assert any("lone UTF-16 surrogate" in n for n in report[0].notes), (fmt, report[0].notes)


def test_native_renames_a_call_id_reused_after_its_answer_as_the_other_readers_do(tmp_path: Path) -> None:
    def call(cid: str) -> dict:
        return {"type": "message", "role": "assistant", "content": "", "tool_calls": [{"id": cid, "name": "f"}]}

    def result(cid: str, text: str) -> dict:
        return {"type": "message", "role": "tool", "tool_call_id": cid, "content": text}

    records = [call("c1"), result("c1", "one"), call("c1"), result("c1", "two"), call("c1"), result("c1", "three")]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    messages = read_trace(str(path)).sessions[0].messages
    assert [c.id for m in messages for c in m.tool_calls] == ["c1", "c1#2", "c1#3"]
    assert [(m.tool_call_id, m.content) for m in messages if m.role == "tool"] == [
        ("c1", "one"), ("c1#2", "two"), ("c1#3", "three")]


def test_an_over_long_line_is_never_held_whole() -> None:
    class Watched(io.BytesIO):
        biggest = 0

        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            Watched.biggest = max(Watched.biggest, len(data))
            return data

    stream = Watched(b"short\n" + b"x" * 5_000_000 + b"\nafter\n")
    assert list(numbered_lines(stream, 1000, chunk=4096)) == [(1, b"short\n"), (2, None), (3, b"after\n")]
    assert Watched.biggest <= 4096


def _naive_lines(data: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    """What `numbered_lines` must give, said plainly: every line that is not blank, numbered, None past the limit."""
    out: list[tuple[int, bytes | None]] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            out.append((number, None if len(line) > limit else line))
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([b"\n", b"  \n", b"\r\n", b"ab", b"{}", b"x" * 9, b" ", b"\t"]), max_size=60),
       st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=16))
def test_numbered_lines_are_the_files_lines_whatever_the_chunks(pieces: list[bytes], limit: int, chunk: int) -> None:
    """Lines and blank runs that cross chunks, lines at the limit and one past it: the numbers are the
    file's, a line over the limit is None, the others whole (but for leading blanks a chunk's end cut off)."""
    data = b"".join(pieces)
    got = [(n, None if line is None else line.removesuffix(b"\n").lstrip())
           for n, line in numbered_lines(io.BytesIO(data), limit, chunk=chunk)]
    want = [(n, None if line is None else line.lstrip()) for n, line in _naive_lines(data, limit)]
    assert got == want


def test_a_gigabyte_of_blank_lines_is_a_count_per_chunk_not_a_step_per_line() -> None:
    """10 million newlines, then a record: numbered 10,000,001, and read in one step a chunk."""
    reads = 0

    class Counted(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            nonlocal reads
            reads += 1
            return super().read(size)

    stream = Counted(b"\n" * 10_000_000 + b"{}\n")
    assert list(numbered_lines(stream, 100)) == [(10_000_001, b"{}\n")]
    assert reads <= 10_000_003 // LINE_CHUNK + 2


def test_a_sparse_file_is_refused_by_its_size_before_a_byte_is_read(tmp_path: Path) -> None:
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as f:
        f.truncate(2 * 10 ** 9)
    with pytest.raises(CtxsimError, match="2,000,000,000 bytes on disk"):
        open_input(str(path), Limits(max_input_bytes=10 ** 9))


def test_a_gzip_bomb_stops_at_the_limit_and_a_broken_gzip_is_one_error_wherever_it_breaks(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"a" * (20 << 20)))
    stream = open_input(str(bomb), Limits(max_input_bytes=1 << 20))
    read = [0]

    def read_all() -> None:
        while chunk := stream.read(1 << 16):
            read[0] += len(chunk)

    with pytest.raises(CtxsimError, match="decompresses to more than --max-input-bytes"):
        read_all()
    assert read[0] <= 1 << 20
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(bytes(range(256)) * 4000)[:-3000])
    with pytest.raises(CtxsimError, match="broken gzip data after"):
        open_input(str(broken)).read()


def test_max_messages_counts_every_input_together(tmp_path: Path) -> None:
    paths = []
    for i in range(3):
        path = tmp_path / f"t{i}.jsonl"
        path.write_text(base_text("native"), encoding="utf-8")  # 4 messages each
        paths.append(str(path))
    assert len(read_traces(paths, limits=Limits(max_messages=12)).sessions) == 3
    with pytest.raises(TraceError, match="more than --max-messages") as err:
        read_traces(paths, limits=Limits(max_messages=11))
    assert err.value.path == paths[2] and err.value.line == 5  # the 12th message: the last line of the third


def test_timestamps_outside_years_1_to_9999_are_value_errors() -> None:
    for bad in (float("nan"), float("inf"), -float("inf"), 1e300, 1e20, MAX_TS_S + 1, MIN_TS_S - 1):
        with pytest.raises(ValueError, match="seconds is outside years 1-9999"):
            format_ts(bad)
    for text in ("9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"):
        with pytest.raises(ValueError, match="years 1-9999"):
            parse_ts(text)
    assert format_ts(MIN_TS_S) == "0001-01-01T00:00:00Z"  # four digits, so it parses back
    assert parse_ts(format_ts(MIN_TS_S)) == MIN_TS_S and parse_ts(format_ts(MAX_TS_S)) == MAX_TS_S
