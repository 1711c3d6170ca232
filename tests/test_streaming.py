"""`replay` streams a native trace one session at a time, and its artefact is the whole-trace replay's.

The streamed path holds one session (and the rows so far), not the file; what it must keep equal to the
whole-trace path: session ids (defaulted, duplicated), the set-up `resolve` takes from the first sessions
that name a model or a window (even when a later session names it), the digest of every byte, the notes of
skipped lines, and which error is reported first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxsim.api import replay_trace
from ctxsim.errors import TraceError
from ctxsim.formats import native, read_traces, stream_trace
from ctxsim.synth import synthesize

POLICIES = ["none", "compact:trigger=3000,compact_above=2000,clear_at_least=1000", "clear:trigger=2000",
            "ctxkit:trigger=3000,compact_above=2000,clear_at_least=1000"]


def _lines(turns: int, seed: int, **header: object) -> list[str]:
    lines = list(native.iter_lines(synthesize("coding", turns=turns, seed=seed)))
    first = json.loads(lines[0])
    for key, value in header.items():
        if value is None:
            first.pop(key, None)
        else:
            first[key] = value
    return [json.dumps(first)] + lines[1:]


def _multi(path: Path) -> Path:
    """Sessions that make the set-up and the ids depend on later ones: the first has neither model, provider
    nor window (and no header id), two share an id, the window comes with the third."""
    parts = [
        _lines(12, 1, id=None, model=None, provider=None, window=None),
        _lines(10, 2, id="twin", window=None),
        _lines(14, 3, id="twin", window=150_000),
        _lines(9, 4, window=100_000),
    ]
    first = parts[0]
    first[1:] = [json.dumps({**json.loads(line), **({"model": None} if '"model"' in line else {})})
                 for line in first[1:]]
    first[1:] = [json.dumps({k: v for k, v in json.loads(line).items() if v is not None}) for line in first[1:]]
    path.write_text("".join(line + "\n" for part in parts for line in part))
    return path


def test_streamed_replay_is_the_whole_replay(tmp_path):
    trace = str(_multi(tmp_path / "multi.jsonl"))
    whole = replay_trace(trace, POLICIES, tokenizer="chars4", jobs=1)
    streamed = replay_trace(trace, POLICIES, tokenizer="chars4", stream=True)
    assert streamed.dumps() == whole.dumps()
    manifest = whole.manifest
    assert manifest["trace"]["sessions"] == 4 and manifest["window"] == 150_000  # from the third session
    assert [r["session"] for r in whole.to_json()["runs"][0]["rows"]][::10][:3]  # rows of several sessions
    ids = {r.session for r in whole.runs[0].rows}
    assert {"multi-1", "twin", "twin-2"} <= ids
    # and save() writes those bytes without building them
    streamed.save(tmp_path / "run.json")
    assert (tmp_path / "run.json").read_text(encoding="utf-8") == whole.dumps()


def test_stream_reads_what_read_traces_reads(tmp_path):
    trace = str(_multi(tmp_path / "multi.jsonl"))
    whole = read_traces([trace])
    stream = stream_trace(trace)
    assert stream is not None
    assert tuple(stream) == whole.sessions
    assert stream.digest == whole.digest
    assert stream.first_window() == 150_000


def test_sessions_are_given_out_as_they_end():
    """The reader yields a session when the next header arrives, before reading the rest."""
    read: list[int] = []

    def records():
        for number, record in enumerate([{"type": "session", "id": "a"}, {"type": "message", "role": "user",
                                          "content": "x"}, {"type": "session", "id": "b"},
                                          {"type": "message", "role": "user", "content": "y"}], start=1):
            read.append(number)
            yield number, record

    sessions = native.iter_sessions(records(), "t.jsonl")
    assert next(sessions).id == "a"
    assert read == [1, 2, 3]  # session b's header, not its messages
    assert next(sessions).id == "b"


def test_not_native_or_not_a_file_is_read_whole(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"type": "session", "id": "a"}) + "\n")
    assert stream_trace(str(tmp_path)) is None  # a folder
    assert stream_trace("-") is None
    assert stream_trace(str(tmp_path / "a.jsonl"), "claude-code") is None


def test_malformed_lines_are_reported_before_a_bad_record_as_before(tmp_path):
    lines = _lines(3, 1)
    bad_field = json.loads(lines[2])
    bad_field["role"] = "robot"  # a record the native reader refuses
    lines[2] = json.dumps(bad_field)
    lines.insert(5, "{broken")
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(TraceError) as whole:
        read_traces([str(path)])
    with pytest.raises(TraceError) as streamed:
        replay_trace(str(path), ["none"], tokenizer="chars4", stream=True)
    assert str(streamed.value) == str(whole.value)
    assert ":6:" in str(whole.value) and "malformed" in str(whole.value)


def test_skipped_lines_stream_too(tmp_path):
    lines = _lines(4, 1)
    lines.insert(3, "{broken")
    path = tmp_path / "skip.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    whole = replay_trace(str(path), ["none"], tokenizer="chars4", skip_bad_lines=True, jobs=1)
    streamed = replay_trace(str(path), ["none"], tokenizer="chars4", skip_bad_lines=True, stream=True)
    assert streamed.dumps() == whole.dumps()
