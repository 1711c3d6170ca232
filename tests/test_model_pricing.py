"""Each request is priced at its own session's (or its own recorded message's) model (issue 17).

A Claude Code folder holds a main session (sonnet) and a subagent (haiku): pricing the whole trace at
the first session's model overstates the subagent's cost three-fold. Expected costs here are priced
independently, request by request, with genai-prices' own `calc_price`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from typer.testing import CliRunner

from ctxsim.analysis.validate import validate
from ctxsim.cli import app
from ctxsim.formats import native
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.replay.recorded import recorded_of
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z
MAIN, SUB = "claude-sonnet-4-5", "claude-haiku-4-5"
runner = CliRunner()


def calc(model: str, ts: float, input_tokens: int, read: int = 0, write: int = 0, output: int = 0) -> Decimal:
    """One request priced by genai-prices itself (not ctxsim's Pricer)."""
    result = calc_price(PriceUsage(input_tokens=input_tokens, cache_read_tokens=read, cache_write_tokens=write,
                                   output_tokens=output), model_ref=model, provider_id="anthropic",
                        genai_request_timestamp=datetime.fromtimestamp(ts, tz=UTC))
    return Decimal(result.total_price)


def _session(sid: str, model: str | None, start: float, turns: int, message_model: str | None = None,
             usage: bool = True) -> Session:
    messages = []
    for i in range(turns):
        ts = start + 30 * i
        messages.append(Message("user", f"{sid} step {i}: " + "read the parser module and fix it " * (20 + 5 * i),
                                ts=format_ts(ts)))
        recorded = Usage(input_tokens=2_000 + 500 * i, cache_read_tokens=1_000 * i,
                         cache_write_tokens=400, output_tokens=120) if usage else None
        messages.append(Message("assistant", f"done step {i} " * 10, ts=format_ts(ts + 5), usage=recorded,
                                model=message_model or model))
    return Session(id=sid, model=model, provider="anthropic", system="You are a coding agent.",
                   messages=tuple(messages))


def two_models() -> Trace:
    return Trace("two", (_session("main", MAIN, T0, 4), _session("agent-sub", SUB, T0 + 400, 3)))


def _replay(trace: Trace, **setup: object):
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("o200k_base"))), Setup(**setup))
    from ctxsim.policies import parse_policy

    return replayer, replayer.run(parse_policy("none"))


def _row_price(model: str, row) -> Decimal:
    return calc(model, datetime.fromisoformat(row.ts).timestamp(), row.input_tokens,
                row.cache_read_tokens, row.cache_write_tokens + row.cache_write_1h_tokens, row.output_tokens)


def test_each_session_is_priced_at_its_own_model():
    trace = two_models()
    replayer, run = _replay(trace)
    models = {"main": MAIN, "agent-sub": SUB}
    rows = [r for r in run.rows if r.kind == "request"]
    assert {r.session for r in rows} == {"main", "agent-sub"}
    for row in rows:
        assert row.cost_usd == _row_price(models[row.session], row), row
    expected = sum((_row_price(models[r.session], r) for r in rows), Decimal(0))
    assert run.totals.cost_usd == expected
    # the old behaviour (all at the first session's model) is a different, larger number
    assert expected < sum((_row_price(MAIN, r) for r in rows), Decimal(0))
    assert replayer.resolved.models == (MAIN, SUB)
    assert replayer.resolved.model_id == MAIN  # the primary: window and cache rules


def test_forced_model_prices_everything_at_it():
    replayer, run = _replay(two_models(), model=SUB)
    rows = [r for r in run.rows if r.kind == "request"]
    assert all(r.cost_usd == _row_price(SUB, r) for r in rows)
    assert replayer.resolved.models == (SUB,)


def test_a_message_model_overrides_its_session_and_an_unknown_one_falls_back_with_a_note():
    # the main session switched model for its responses (Claude Code's /model): each response at its own
    session = _session("main", MAIN, T0, 3, message_model=SUB)
    odd = _session("odd", MAIN, T0 + 400, 2, message_model="claude-imaginary-9")
    replayer, run = _replay(Trace("t", (session, odd)))
    for row in (r for r in run.rows if r.kind == "request"):
        assert row.cost_usd == _row_price(SUB if row.session == "main" else MAIN, row)
    assert any("claude-imaginary-9" in n and MAIN in n for n in replayer.pricer.notes)


def test_recorded_row_validate_and_manifest_agree_on_the_models(tmp_path: Path):
    trace = two_models()
    recorded = recorded_of(trace)
    assert recorded is not None
    want = Decimal(0)
    for session, model in zip(trace.sessions, (MAIN, SUB), strict=True):
        for m in session.messages:
            if m.usage:
                u = m.usage
                want += calc(model, m.ts_s, u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                             u.output_tokens)
    assert recorded.cost_usd == want
    checked = validate(trace, "o200k_base", calibrate=False)
    assert sum((c.recorded_cost_usd for c in checked.checks), Decimal(0)) == want
    path = tmp_path / "two.jsonl"
    with path.open("w", encoding="utf-8") as out:
        native.write(trace, out)
    out_dir = tmp_path / "out"
    result = runner.invoke(app, ["compare", str(path), "--policies", "none", "--no-calibrate", "-o", str(out_dir)])
    assert result.exit_code == 0, result.output
    run_json = json.loads(next(out_dir.rglob("run.json")).read_text())
    manifest = run_json.get("manifest", run_json)
    assert manifest["models"] == [MAIN, SUB]
    assert manifest["recorded"]["models"] == [MAIN, SUB]
    assert Decimal(manifest["recorded"]["cost_usd"]) == want
