"""The last classes of bad input: values far out of range where a reader meets them (span times),
secrets quoted in error lines and notes, integral floats in the native usage, a trace with nothing
to replay. Each refusal is one line naming the file, the line and the field; never an internal error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_inputs import _run
from hypothesis import given, settings
from hypothesis import strategies as st

TINY_OTLP = Path(__file__).resolve().parent / "fixtures" / "otel-genai" / "tiny-otlp.json"
EXTREMES = [10**30, -(10**30), 1e308, -1e308, 1e30, -(2**63) * 10**3, 253402300800 * 10**9]


def _anyagent(start: object, end: object) -> dict:
    """An any-agent trace of one chat span whose times are given."""
    context = {"trace_id": 7, "span_id": 9}
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 120,
             "gen_ai.usage.output_tokens": 8, "gen_ai.input.messages": json.dumps([{"role": "user", "content": "hi"}]),
             "gen_ai.output": "hello"}
    return {"spans": [{"name": "call_llm gpt-4o", "context": context, "parent": None, "start_time": start,
                       "end_time": end, "attributes": attrs, "events": []}]}


def _otlp_with(key: str, value: object) -> dict:
    doc = json.loads(TINY_OTLP.read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1][key] = value
    return doc


def _refused(path: Path, field: str) -> str:
    code, out, err = _run(["inspect", str(path)])
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert str(path) in lines[0] and field in lines[0] and "outside the years" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("value", EXTREMES, ids=str)
@pytest.mark.parametrize("field", ["start_time", "end_time"])
def test_an_anyagent_span_time_out_of_range_is_refused_naming_the_field(tmp_path: Path, field: str,
                                                                         value: float) -> None:
    times = {"start_time": 1758026593450406000, "end_time": 1758026593452926000, field: value}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_anyagent(times["start_time"], times["end_time"])))
    line = _refused(path, field)
    assert ":" in line.split(str(path), 1)[1][:3]  # file:line


@pytest.mark.parametrize("field", ["startTimeUnixNano", "endTimeUnixNano"])
@pytest.mark.parametrize("value", ["1" + "0" * 40, 1e30, -1e308])
def test_an_otlp_span_time_out_of_range_is_refused_naming_the_field(tmp_path: Path, field: str,
                                                                    value: object) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_otlp_with(field, value)))
    _refused(path, field)


def test_a_span_time_of_infinity_is_refused_not_crashed_on(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_anyagent(1758026593450406000, 1758026593452926000)).replace(
        "1758026593452926000", "1e999"))  # Python's json reads it as inf
    _refused(path, "end_time")


def test_span_times_inside_the_range_are_read(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_anyagent(1758026593450406000, 1758026593452926000)))
    code, out, err = _run(["inspect", str(path), "--json"])
    assert code == 0, err
    totals = json.loads(out)["totals"]
    assert totals["requests"] == 1 and totals["input_tokens"] == 120


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.one_of(st.integers(min_value=-(10**40), max_value=10**40),
                 st.floats(allow_nan=False, allow_infinity=False, width=64)))
def test_any_span_time_is_read_or_refused_in_one_line(value: float) -> None:
    """Hypothesis over the whole number line: a time is read or refused with one line, never an internal error."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        path.write_text(json.dumps(_anyagent(1758026593450406000, value)))
        code, _, err = _run(["inspect", str(path)])
    assert code in (0, 2), err
    assert "internal error" not in err and "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and "end_time" in err


def test_the_last_resort_line_names_the_command_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error no code expected: one line naming `ctxsim inspect` (not the function behind it) and the
    `--debug` command to run again."""
    from ctxsim.analysis import inspect as inspect_module

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("secret trace content")

    monkeypatch.setattr(inspect_module, "inspect_trace", broken)
    code, _, err = _run(["inspect", str(TINY_OTLP)])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error in ctxsim inspect on" in lines[0], err
    assert "`ctxsim --debug inspect ...`" in lines[0] and "inspect_command" not in err
    assert "secret trace content" not in err


# ---------------------------------------------------------------- secrets in what is quoted

KEY = "sk-ant-api03-" + "Zx9" * 30  # the shape of an Anthropic key, not a real one
TINY = Path(__file__).resolve().parent / "fixtures" / "tiny"


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in (TINY / name).read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("field", ["role", "ts"])
def test_a_key_in_a_native_field_is_never_echoed_in_the_error(tmp_path: Path, field: str) -> None:
    records = _records("native.jsonl")
    records[1][field] = KEY
    path = _write(tmp_path / "t.jsonl", records)
    code, out, err = _run(["inspect", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(path) + ":2" in err and "[REDACTED:anthropic_key]" in err
    assert "Zx9Zx9" not in err + out


def test_a_long_value_is_quoted_cut_short(tmp_path: Path) -> None:
    records = _records("native.jsonl")
    records[1]["role"] = "r" * 5000
    path = _write(tmp_path / "t.jsonl", records)
    code, _, err = _run(["inspect", str(path)])
    assert code == 2 and "unknown role 'rrrr" in err and "...'" in err and len(err) < 400, err


@pytest.mark.parametrize("where", ["session", "message"])
def test_a_key_in_a_model_field_is_neither_echoed_nor_stored(tmp_path: Path, where: str) -> None:
    """inspect (table and --json) and a compare's run.json never hold it; a note counts what was dropped."""
    records = _records("native.jsonl")
    if where == "session":
        records[0]["model"] = KEY
    else:
        records[2]["model"] = KEY
    path = _write(tmp_path / "t.jsonl", records)
    outputs = []
    for argv in (["inspect", str(path)], ["inspect", str(path), "--json"], ["validate", str(path)],
                 ["compare", str(path), "--policies", "none", "-o", str(tmp_path / "run.json")]):
        code, out, err = _run(argv)
        # with the session's only model name dropped, a replay has no model to price as: one line, exit 2
        assert code == 0 or (where == "session" and argv[0] != "inspect" and len(err.strip().splitlines()) == 1), err
        outputs.append(out + err)
    if where == "message":
        outputs.append((tmp_path / "run.json").read_text())
    assert not any("Zx9Zx9" in text for text in outputs)
    notes = json.loads(outputs[1])["notes"]
    assert any("not plausible model ids" in n for n in notes), notes


def test_plausible_model_ids_are_kept() -> None:
    from ctxsim._support.redact import plausible_model

    for name in ("claude-opus-4-6[1m]", "anthropic/claude-3.5-sonnet", "gpt-4o-2024-08-06", "qwen3-coder:30b",
                 "models/gemini-2.5-pro", "deepseek-v4-flash", "<synthetic>"):
        assert plausible_model(name), name
    for name in (KEY, "rm -rf /", "", "x" * 200, "a\nb", "AKIAABCDEFGHIJKLMNOP"):
        assert not plausible_model(name), name


# ---------------------------------------------------------------- valid inputs said plainly

def test_integral_floats_are_token_counts_in_the_native_format(tmp_path: Path) -> None:
    """`1300.0` is read as 1300 (some JSON writers spell every number as a float); `12.5`, NaN and
    infinities are still refused, naming the field and the value."""
    records = _records("native.jsonl")
    as_int = _write(tmp_path / "a.jsonl", records)
    for r in records:
        if "usage" in r:
            r["usage"] = {k: float(v) for k, v in r["usage"].items()}
    as_float = _write(tmp_path / "b.jsonl", records)
    totals = [json.loads(_run(["inspect", str(p), "--json"])[1])["totals"] for p in (as_int, as_float)]
    assert totals[0] == totals[1] and totals[0]["input_tokens"] == 2500
    for bad, shown in ((12.5, "12.5"), (float("nan"), "nan"), (float("inf"), "inf")):
        records[2]["usage"]["input_tokens"] = bad
        path = _write(tmp_path / "c.jsonl", records)
        code, _, err = _run(["inspect", str(path)])
        assert code == 2 and f"{path}:3:" in err and "usage.input_tokens' must be an integer, got " + shown in err, err


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_a_trace_with_no_model_request_says_there_was_nothing_to_replay(tmp_path: Path, command: str) -> None:
    records = [r for r in _records("native.jsonl") if r.get("role") in (None, "user")]
    path = _write(tmp_path / "q.jsonl", records)
    argv = [command, str(path)] + (["--policies", "none,clear"] if command == "compare" else [])
    code, out, err = _run(argv)
    assert code == 0, err
    assert "nothing to replay: the trace holds no model request" in out + err
    code, out, err = _run([command, str(_write(tmp_path / "full.jsonl", _records("native.jsonl")))])
    assert code == 0 and "nothing to replay" not in out + err
