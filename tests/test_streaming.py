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

from ctxsim.errors import TraceError
from ctxsim.formats import native, read_traces
from ctxsim.formats.native import stream_trace
from ctxsim.replay.api import replay_trace
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
    return [json.dumps(first), *lines[1:]]


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
    assert [r.session for r in whole.runs[0].rows][::10][:3]  # rows of several sessions
    ids = {r.session for r in whole.runs[0].rows}
    assert {"multi-1", "twin", "twin-2"} <= ids
    # and save() writes those bytes
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


# ---------------------------------------------------------------- merged with main: calibration, the bill, rules


def _with_usage_and_thinking(path: Path, usage: bool = True) -> Path:
    """`_multi`'s sessions, each assistant message with thinking (claude-sonnet-4-5 drops earlier turns'
    thinking: the provider rule is active) and, with `usage`, its recorded usage (some with cache reads)."""
    _multi(path)
    out = []
    n = 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "message" and record.get("role") == "assistant":
            n += 1
            record["thinking"] = f"step {n}: weigh the options, then act on the rounding"
            if usage:
                prompt = 2_000 + 700 * n
                record["usage"] = {"input_tokens": prompt, "cache_read_tokens": (prompt // 2) if n % 3 else 0,
                                   "cache_write_tokens": 300, "output_tokens": 40 + n}
        out.append(json.dumps(record))
    path.write_text("".join(line + "\n" for line in out))
    return path


def _rules_and_bill(result) -> tuple[list[str], object]:
    manifest = result.manifest
    return manifest["provider_rules"], manifest["recorded"]


def test_streamed_replay_with_usage_and_provider_rules_is_the_whole_replay(tmp_path):
    trace = str(_with_usage_and_thinking(tmp_path / "used.jsonl"))
    assert stream_trace(trace) is not None
    assert stream_trace(trace, unless_usage=True) is None  # a calibration would need the whole trace
    whole = replay_trace(trace, POLICIES, tokenizer="chars4", jobs=1, calibrate=False)
    streamed = replay_trace(trace, POLICIES, tokenizer="chars4", stream=True, calibrate=False)
    rules, bill = _rules_and_bill(whole)
    assert rules and "claude-sonnet-4-5" in rules[0]  # the provider's rule applied ...
    assert any(e.kind == "provider_drops_reasoning" for e in whole.runs[0].events)  # ... and it did something
    assert bill is not None and bill["requests"] > 10 and "none" in bill  # the bill, over every session
    assert whole.manifest["calibration"]["reason"].startswith("not asked")
    streamed.save(tmp_path / "run.json")
    assert (tmp_path / "run.json").read_text(encoding="utf-8") == whole.dumps()
    # calibrating (the default of the CLI): read whole, so the stream's answer is the whole one
    whole = replay_trace(trace, ["none"], tokenizer="chars4", jobs=1, calibrate=True)
    streamed = replay_trace(trace, ["none"], tokenizer="chars4", stream=True, calibrate=True)
    assert whole.manifest["calibration"]["applied"] is True
    assert streamed.dumps() == whole.dumps()


def test_streamed_replay_without_usage_calibrating_is_the_whole_replay(tmp_path):
    trace = str(_with_usage_and_thinking(tmp_path / "bare.jsonl", usage=False))
    assert stream_trace(trace, unless_usage=True) is not None  # nothing to fit: streamed
    for calibrate in (True, False):
        whole = replay_trace(trace, POLICIES, tokenizer="chars4", jobs=1, calibrate=calibrate)
        streamed = replay_trace(trace, POLICIES, tokenizer="chars4", stream=True, calibrate=calibrate)
        assert streamed.dumps() == whole.dumps()
        rules, bill = _rules_and_bill(whole)
        assert rules and bill is None
    assert whole.manifest["calibration"]["reason"].startswith("not asked")
    calibrated = replay_trace(trace, ["none"], tokenizer="chars4", stream=True, calibrate=True)
    assert calibrated.manifest["calibration"] == {
        "applied": False, "requests_with_usage": 0,
        "reason": "no request recorded its usage: replayed with the default framing and no hidden prefix"}


def test_a_usage_key_spelt_with_an_escape_is_not_streamed_past(tmp_path):
    """The scan for usage is of bytes: a key written `"\\u0075sage"` is still usage, so the file is read whole."""
    path = _with_usage_and_thinking(tmp_path / "escaped.jsonl")
    path.write_text(path.read_text().replace('"usage"', '"\\u0075sage"'))
    assert stream_trace(str(path), unless_usage=True) is None
    bare = _with_usage_and_thinking(tmp_path / "bare.jsonl", usage=False)
    assert stream_trace(str(bare), unless_usage=True) is not None


def test_the_stream_keeps_the_input_limits(tmp_path):
    """--max-line-bytes and --max-messages hold on the streamed path as on the whole one, with its messages."""
    from ctxsim._support.fileio import Limits, input_limits, set_input_limits

    trace = str(_multi(tmp_path / "multi.jsonl"))
    messages = sum(len(s.messages) for s in read_traces([trace]).sessions)
    longest = max(len(line) for line in Path(trace).read_bytes().splitlines())
    saved = input_limits()
    try:
        for limits in (Limits(max_line_bytes=longest - 1), Limits(max_messages=messages - 1)):
            set_input_limits(limits)
            with pytest.raises(TraceError) as whole:
                read_traces([trace])
            with pytest.raises(TraceError) as streamed:
                replay_trace(trace, ["none"], tokenizer="chars4", stream=True)
            assert str(streamed.value) == str(whole.value)
            assert "--max-line-bytes" in str(whole.value) or "--max-messages" in str(whole.value)
    finally:
        set_input_limits(saved)


def test_the_cli_replay_calibrating_by_default_streams_the_same_run_json(tmp_path):
    """`ctxsim replay -o` (calibrating by default) on a trace with no usage: the stream's run.json is the
    bytes of the whole-trace calibrated replay's; with usage it is read whole, the fit applied."""
    from typer.testing import CliRunner

    from ctxsim.cli import app

    for usage in (False, True):
        trace = str(_with_usage_and_thinking(tmp_path / f"cli-{usage}.jsonl", usage=usage))
        out = tmp_path / f"run-{usage}.json"
        res = CliRunner().invoke(app, ["replay", trace, "-p", "none,clear:trigger=2000", "--tokenizer", "chars4",
                                       "-o", str(out)])
        assert res.exit_code == 0, res.output
        whole = replay_trace(trace, ["none", "clear:trigger=2000"], tokenizer="chars4", jobs=1, calibrate=True)
        assert out.read_text(encoding="utf-8") == whole.dumps()
        assert whole.manifest["calibration"]["applied"] is usage
