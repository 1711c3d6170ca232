"""The `recorded` row (what was really billed), calibrated by default, replay = validate, and the
product presets checked against the products' own compactions (issue 17).

Fixtures are written by code here and in tests/recorded_fixtures.py; expected costs are priced
independently with genai-prices' own `calc_price`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from recorded_fixtures import claude_code_compaction, codex_compaction
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import native, read_traces
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.replay.recorded import recorded_of
from ctxsim.replay.run import RunResult
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z
MODEL = "gpt-4o"
HIDDEN = 5_000
runner = CliRunner()


def price(usage: Usage, ts: float, model: str = MODEL, provider: str = "openai") -> Decimal:
    """One request priced by genai-prices itself (not ctxsim's Pricer)."""
    moment = datetime.fromtimestamp(ts, tz=UTC)
    result = calc_price(PriceUsage(input_tokens=usage.input_tokens, cache_read_tokens=usage.cache_read_tokens,
                                   output_tokens=usage.output_tokens), model_ref=model, provider_id=provider,
                        genai_request_timestamp=moment)
    return Decimal(result.total_price)


def write(trace: Trace, path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        native.write(trace, out)
    return path


def calibratable(turns: int = 8, hidden: int = HIDDEN, **session: object) -> Trace:
    """A session whose recorded prompts are the counted prompt (o200k, default framing) plus a hidden prefix."""
    sizer = MessageSizer(TokenCounter(get_tokenizer("o200k_base")), Framing())
    messages: list[Message] = []
    total = 0
    for i in range(turns):
        user = Message("user", f"step {i}: " + "please look at the invoice totals " * (5 + 3 * i),
                       ts=format_ts(T0 + 60 * i))
        messages.append(user)
        total += sizer.message(user)
        reply = Message("assistant", f"ok {i}", ts=format_ts(T0 + 60 * i + 5),
                        usage=Usage(input_tokens=total + hidden, output_tokens=5))
        messages.append(reply)
        total += sizer.message(reply)
    return Trace("cal", (Session(id="cal", model=MODEL, provider="openai", messages=tuple(messages), **session),))


def hand_usage() -> tuple[Trace, list[Usage], list[float]]:
    """Three requests with hand-set usage (reads included), far from what the short texts count."""
    usages = [Usage(1_200, 0, 0, 0, 30), Usage(2_600, 1_024, 0, 0, 45), Usage(4_100, 2_048, 0, 0, 12)]
    times = [T0 + 3, T0 + 30, T0 + 90]
    messages: list[Message] = []
    for i, (usage, ts) in enumerate(zip(usages, times, strict=True)):
        messages.append(Message("user", f"question {i}", ts=format_ts(ts - 1)))
        messages.append(Message("assistant", f"answer {i}", ts=format_ts(ts), usage=usage))
    return Trace("hand", (Session(id="hand", model=MODEL, provider="openai", messages=tuple(messages)),)), usages, times


def bundle(args: list[str], folder: Path) -> dict[str, str]:
    """run.json written by the command, report.md and runs.csv rendered from it (no charts: fast)."""
    from ctxsim.reports import Options, render
    from ctxsim.reports._common import load_run

    folder.mkdir()
    result = runner.invoke(app, [*args, "-o", str(folder / "run.json")])
    assert result.exit_code == 0, result.output
    run = load_run(folder / "run.json")
    return {"run.json": (folder / "run.json").read_text(), "report.md": str(render("markdown", run, "md")),
            "runs.csv": str(render("csv", run, "csv", Options(table="runs")))}


def run_json(args: list[str]) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------- the recorded row


def test_recorded_row_numbers_match_the_usage_priced_by_genai_prices(tmp_path: Path) -> None:
    trace, usages, times = hand_usage()
    path = write(trace, tmp_path / "hand.jsonl")
    expected = sum((price(u, t) for u, t in zip(usages, times, strict=True)), Decimal(0))
    data = run_json(["compare", str(path), "--policies", "clear"])
    rec = data["manifest"]["recorded"]
    assert rec["requests"] == 3 and rec["input_tokens"] == 7_900 and rec["cache_read_tokens"] == 3_072
    assert rec["cache_write_tokens"] == 0 and rec["output_tokens"] == 87 and rec["peak_context_tokens"] == 4_100
    assert Decimal(rec["cost_usd"]) == expected
    none = data["recorded"]["none"]
    assert rec["none"] == none  # run.json keeps none's difference from the bill too
    totals = next(r["totals"] for r in data["runs"] if r["policy"]["name"] == "none")
    assert none["input_tokens"] == totals["input_tokens"]  # every request recorded usage: the same requests
    assert Decimal(none["cost_error"]) == pytest.approx(Decimal(totals["cost_usd"]) / expected - 1,
                                                       abs=Decimal("1e-6"))
    # the same row in the table, the runs CSV and report.md
    out = bundle(["compare", str(path), "--policies", "clear"], tmp_path / "out")
    rows = list(csv.DictReader(io.StringIO(out["runs.csv"])))
    recorded = next(r for r in rows if r["policy"] == "recorded")
    assert (recorded["requests"], recorded["input_tokens"], recorded["cache_read_tokens"],
            recorded["peak_context_tokens"]) == ("3", "7900", "3072", "4100")
    assert Decimal(recorded["cost_usd"]) == expected
    assert next(r for r in rows if r["policy"] == "none")["vs_recorded_cost"] != ""
    assert any(line.startswith("| recorded |") for line in out["report.md"].splitlines())
    table = runner.invoke(app, ["compare", str(path), "--policies", "clear", "--wide"]).stdout
    line = next(line for line in table.splitlines() if line.startswith("recorded"))
    assert "7,900" in line and "4,100" in line and "40.00%" not in line  # hit rate 3,072 / 7,900 = 38.89%
    assert "38.89%" in line


def test_replay_summary_has_a_recorded_column(tmp_path: Path) -> None:
    trace, _, _ = hand_usage()
    out = runner.invoke(app, ["replay", str(write(trace, tmp_path / "hand.jsonl"))]).stdout
    lines = out.splitlines()
    header = lines[lines.index("summary") + 1]  # the summary table's head: the policy, then the bill
    assert header.split() == ["none", "recorded"]
    assert "4,100" in next(line for line in out.splitlines() if line.startswith("peak context"))


def test_more_than_3_percent_off_the_bill_is_said_above_the_table(tmp_path: Path) -> None:
    path = write(calibratable(), tmp_path / "cal.jsonl")
    args = ["compare", str(path), "--policies", "clear", "--cache", "none"]
    calibrated = runner.invoke(app, args).stdout.splitlines()
    raw = runner.invoke(app, [*args, "--no-calibrate"]).stdout.splitlines()
    title = "policies compared"
    assert not any(line.startswith("warning:") for line in calibrated)
    assert any(line.startswith("none against the recorded bill") for line in calibrated)
    warning = [i for i, line in enumerate(raw) if line.startswith("warning: the unmanaged replay (none)")]
    assert len(warning) == 1 and warning[0] < next(i for i, line in enumerate(raw) if line.startswith(title))
    report = bundle([*args, "--no-calibrate"], tmp_path / "raw")["report.md"].splitlines()
    flagged = [i for i, line in enumerate(report) if "off the recorded bill by more than 3%" in line]
    assert len(flagged) == 1 and flagged[0] < next(i for i, line in enumerate(report) if line.startswith("| policy"))
    assert "more than 3%" not in bundle(args, tmp_path / "good")["report.md"]


def test_no_usage_no_row_and_no_claim(tmp_path: Path) -> None:
    trace = calibratable()
    bare = replace(trace, sessions=tuple(replace(s, messages=tuple(replace(m, usage=None) for m in s.messages))
                                         for s in trace.sessions))
    path = write(bare, tmp_path / "bare.jsonl")
    data = run_json(["compare", str(path), "--policies", "clear"])
    assert data["manifest"]["recorded"] is None and data["recorded"] is None
    assert data["manifest"]["calibration"]["applied"] is False
    assert "no request recorded its usage" in data["manifest"]["calibration"]["reason"]
    out = runner.invoke(app, ["compare", str(path), "--policies", "clear"]).stdout
    lines = out.splitlines()
    assert not any(line.startswith("recorded") for line in lines)
    assert "recorded bill" not in out and "warning" not in out


def test_part_of_the_requests_with_usage_compares_like_for_like(tmp_path: Path) -> None:
    trace, _, _ = hand_usage()
    messages = list(trace.sessions[0].messages)
    messages[1] = replace(messages[1], usage=None)  # the first request recorded nothing
    path = write(replace(trace, sessions=(replace(trace.sessions[0], messages=tuple(messages)),)), tmp_path / "p.jsonl")
    data = run_json(["compare", str(path), "--policies", "clear"])
    rec, none = data["manifest"]["recorded"], data["manifest"]["recorded"]["none"]
    assert (rec["requests"], rec["requests_total"], rec["input_tokens"]) == (2, 3, 6_700)
    assert runner.invoke(app, ["replay", str(path), "-o", str(tmp_path / "r.json")]).exit_code == 0
    rows = [r.to_json() for r in RunResult.load(tmp_path / "r.json").runs[0].rows]
    assert none["requests"] == 2 and none["input_tokens"] == sum(r["input_tokens"] for r in rows[1:])
    out = runner.invoke(app, ["compare", str(path), "--policies", "clear"]).stdout
    assert "covers the 2 of 3 requests that recorded usage" in out


def test_a_trace_with_run_totals_only_gets_a_row_from_them() -> None:
    trace = read_traces([str(Path(__file__).parent / "fixtures" / "tiny" / "swe-agent.traj")])
    rec = recorded_of(trace)
    totals = trace.sessions[0].extra["recorded_totals"]
    assert rec is not None and rec.source == "run totals"
    assert rec.input_tokens == totals["input_tokens"] and rec.cache_read_tokens is None
    assert rec.peak_context_tokens is None


# ---------------------------------------------------------------- the trace's own cost


@pytest.mark.parametrize(("factor", "flagged"), [(Decimal("1.10"), True), (Decimal("1.02"), False)])
def test_the_traces_own_cost_is_shown_and_flagged_over_5_percent(tmp_path: Path, factor: Decimal,
                                                                 flagged: bool) -> None:
    trace, usages, times = hand_usage()
    priced = sum((price(u, t) for u, t in zip(usages, times, strict=True)), Decimal(0))
    own = (priced * factor).quantize(Decimal("0.0000001"))
    session = replace(trace.sessions[0], extra={"recorded_totals": {"cost_usd": str(own)}})
    path = write(replace(trace, sessions=(session,)), tmp_path / "own.jsonl")
    data = run_json(["compare", str(path), "--policies", "clear"])
    rec = data["manifest"]["recorded"]
    assert Decimal(rec["own_cost_usd"]) == own and rec["own_cost_flagged"] is flagged
    assert Decimal(rec["own_cost_error"]) == pytest.approx(priced / own - 1, abs=Decimal("1e-6"))
    out = runner.invoke(app, ["compare", str(path), "--policies", "clear"]).stdout
    row = next(line for line in out.splitlines() if line.startswith("recorded"))
    assert "(trace $" in row and row.count("!") == (1 if flagged else 0)
    assert ("more than 5% apart" in out) is flagged
    shown = runner.invoke(app, ["inspect", str(path)]).stdout
    own_line = next(line for line in shown.splitlines() if line.startswith("cost (the trace's own)"))
    assert f"${own:,.4f}" in own_line and ("more than 5% apart" in own_line) is flagged


def test_per_request_recorded_costs_are_summed(tmp_path: Path) -> None:
    trace, _, _ = hand_usage()
    costs = ["0.001", "0.0025", "0.004"]
    it = iter(costs)
    messages = tuple(replace(m, usage=replace(m.usage, extra={"cost_usd": next(it)})) if m.usage else m
                     for m in trace.sessions[0].messages)
    rec = recorded_of(replace(trace, sessions=(replace(trace.sessions[0], messages=messages),)))
    assert rec is not None and rec.own_cost_usd == Decimal("0.0075") and rec.own_cost_sessions == 1


# ---------------------------------------------------------------- calibrated by default; one path


def test_calibrated_by_default_and_not_with_no_calibrate(tmp_path: Path) -> None:
    path = write(calibratable(), tmp_path / "cal.jsonl")
    default = run_json(["replay", str(path)])
    raw = run_json(["replay", str(path), "--no-calibrate"])
    asked = run_json(["replay", str(path), "--calibrate"])
    fit = default["manifest"]["calibration"]
    assert fit["applied"] is True and abs(fit["hidden_prefix_tokens"] - HIDDEN) <= 10
    assert asked["manifest"]["calibration"] == fit
    assert raw["manifest"]["calibration"]["applied"] is False
    gap = default["runs"][0]["totals"]["input_tokens"] - raw["runs"][0]["totals"]["input_tokens"]
    assert abs(gap - 8 * HIDDEN) <= 8 * 10
    shown = runner.invoke(app, ["replay", str(path)]).stdout.splitlines()
    line = next(line for line in shown if line.startswith("calibrated on "))
    assert "hidden prefix" in line and "scale" in line and "overhead" in line
    assert not any(line.startswith("calibrated on ") for line in runner.invoke(
        app, ["replay", str(path), "--no-calibrate"]).stdout.splitlines())


def test_replay_none_costs_what_validate_simulates(tmp_path: Path) -> None:
    """The provider drops earlier turns' thinking (claude-sonnet-4-5): replay and validate meter it alike."""
    trace = calibratable(turns=10)
    session = trace.sessions[0]
    messages = []
    for i, m in enumerate(session.messages):
        if m.role == "assistant":
            messages.append(replace(m, thinking="let me weigh the invoice totals carefully " * 40))
        elif m.role == "user" and i % 4 == 0:
            messages.append(replace(m, content="a new question: " + m.content))
        else:
            messages.append(m)
    session = replace(session, model="claude-sonnet-4-5", provider="anthropic", messages=tuple(messages))
    path = write(replace(trace, sessions=(session,)), tmp_path / "think.jsonl")
    replayed = run_json(["replay", str(path)])
    validated = json.loads(runner.invoke(app, ["validate", str(path), "--json"]).stdout)
    none = replayed["runs"][0]["totals"]
    assert validated["provider_rules"], "the provider rule must be at work for this test to mean anything"
    assert Decimal(none["cost_usd"]) == Decimal(validated["cost_usd"]["simulated"])
    assert none["input_tokens"] == validated["totals"]["input"]["simulated"]
    # without the provider's rule the replay sends more: the agreement above is not a coincidence
    from ctxsim.replay.api import Options, replay_trace

    kept = replay_trace(str(path), ["none"], options=Options(calibrate=True, provider_rules=False))
    assert kept.runs[0].totals.input_tokens > none["input_tokens"]


def test_same_input_same_bytes(tmp_path: Path) -> None:
    trace, _, _ = hand_usage()
    path = write(trace, tmp_path / "hand.jsonl")
    first, second = (bundle(["compare", str(path), "--policies", "clear"], tmp_path / name) for name in "ab")
    assert first == second and "| recorded |" in first["report.md"]


# ---------------------------------------------------------------- presets against the products


def _check(path: Path):  # type: ignore[no-untyped-def]
    from ctxsim.analysis import preset_check

    checks = preset_check.check(read_traces([str(path)]), "chars4")
    assert len(checks) == 1
    return checks[0]


def test_claude_code_preset_compacts_where_claude_code_did(tmp_path: Path) -> None:
    # request k sends ~3,108 + 20,008 (k - 1): the last response's total passes 155,000 after request 9
    c = _check(claude_code_compaction(tmp_path / "cc.jsonl", version="2.1.5"))
    assert (c.product, c.version, c.preset, c.threshold_tokens) == ("claude-code", "2.1.5", "claude-code", 155_000)
    assert c.recorded_request == 10 and c.trigger == "auto"
    assert abs(c.replayed_tokens - c.recorded_pre_tokens) <= 0.01 * c.recorded_pre_tokens
    assert c.threshold_request == 10 and "same request" in c.verdict
    assert c.preset_request == 10  # checked on the last response's total, as the product checks it
    # the documented 167k (v2.1.221 as decompiled) fires one request after the product did
    late = _check(claude_code_compaction(tmp_path / "cc2.jsonl", version="2.1.221"))
    assert late.threshold_tokens == 167_000 and late.threshold_request == 11 and "later" in late.verdict


def test_claude_code_preset_compacts_tool_output_it_does_not_clear(tmp_path: Path) -> None:
    # the same growth as tool results: the product compacted them (no clearing record), and so does the preset
    c = _check(claude_code_compaction(tmp_path / "cct.jsonl", tools=True))
    assert c.preset_clear_request is None and c.preset_request == c.threshold_request == c.recorded_request
    assert "clearing stage" not in c.verdict and "same request" in c.verdict


def test_codex_preset_compacts_where_codex_0104_did(tmp_path: Path) -> None:
    # request k sends ~5,108 + 25,008 (k - 1) of a 258,400 usable window; 0.104 compacted after request 10 (230k)
    c = _check(codex_compaction(tmp_path / "cx.jsonl", version="0.104.0", window=258_400))
    assert (c.product, c.preset) == ("codex", "codex") and c.threshold_tokens == int(258_400 * 0.8127)
    assert c.recorded_request == 11 and c.threshold_request == 11 and "same request" in c.verdict
    old = _check(codex_compaction(tmp_path / "cx2.jsonl", version="0.40.0"))
    assert old.preset == "codex:compact_at=0.9" and old.threshold_tokens == 244_800 and old.threshold_request == 12
    # a rollout logs no trigger: a compaction far below the threshold is said to be a manual one, not a miss
    small = _check(codex_compaction(tmp_path / "cx3.jsonl", step=1_000, before=3))
    assert small.threshold_request is None and "likely a manual compaction" in small.verdict


def test_validate_reports_the_preset_check(tmp_path: Path) -> None:
    path = claude_code_compaction(tmp_path / "cc.jsonl")
    data = json.loads(runner.invoke(app, ["validate", str(path), "--tokenizer", "chars4", "--json"]).stdout)
    (check,) = data["preset_checks"]
    assert check["recorded_request"] == 10 and check["threshold_request"] == 10
    text = runner.invoke(app, ["validate", str(path), "--tokenizer", "chars4", "--worst", "0"]).stdout
    assert "product presets against the product's own compactions" in text and "same request" in text
