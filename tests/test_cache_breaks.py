"""Cache breaks: each cause on a hand-made Claude Code session, with the tokens and dollars re-billed
computed here from the per-million prices (not from ctxsim's pricer)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from session_makers import SONNET, Step, claude_code, codex, unix
from typer.testing import CliRunner

from ctxsim.analysis.cache_breaks import breaks_of, per_cause
from ctxsim.cli import app
from ctxsim.formats import read_traces

HAIKU = "claude-haiku-4-5-20251001"
M = Decimal(1_000_000)
T0 = unix("2026-01-13T10:00:00Z")


def sonnet_back(w5: int = 0, w1h: int = 0, uncached: int = 0) -> Decimal:
    """What moving tokens from 5m writes / 1h writes / uncached input to cache reads saves, Sonnet 4.5."""
    return (w5 * (Decimal("3.75") - Decimal("0.30")) + w1h * (Decimal(6) - Decimal("0.30"))
            + uncached * (Decimal(3) - Decimal("0.30"))) / M


def every_cause(tmp_path: Path) -> Path:
    steps = [
        Step(T0, uncached=1000, w5=5000),                          # 1: 6,000, cold start: not a break
        Step(T0 + 60, uncached=200, read=6000),                     # 2: 6,200 all read
        Step(T0 + 460, uncached=100, w5=6300),                      # 3: 400 s gap > 5 min: ttl, lost 6,200
        Step(T0 + 480, uncached=500, read=6000, thinking=True),     # 4: 400 short of 6,400: tolerated
        Step(T0 + 500, uncached=100, read=2000, w5=1000),           # 5: prompt 6,500 -> 3,100 at a user turn
        Step(T0 + 520, uncached=100, read=1500, w5=2000, microcompact_before=True),  # 6: rewrite: lost 1,600
        Step(T0 + 540, uncached=100, w5=3700),                      # 7: grew, nothing explains: lost 3,600
        Step(T0 + 560, uncached=100, w5=2000, compact_before=True),  # 8: compaction: lost 2,100
        Step(T0 + 580, uncached=100, w5=2200, model=HAIKU),          # 9: model switch: lost 2,100
    ]
    return claude_code(tmp_path / "every.jsonl", "every", "/home/u/shop", steps)


def test_each_cause_with_tokens_and_dollars(tmp_path):
    trace = read_traces([str(every_cause(tmp_path))])
    found = breaks_of(trace)
    got = [(b.request, b.cause, b.cacheable_tokens, b.read_tokens, b.lost_tokens) for b in found]
    # requests are numbered within their session part: the compaction starts part 2 (its request 1)
    assert got == [(3, "ttl", 6200, 0, 6200),
                   (5, "edit", 3100, 2000, 1100),
                   (6, "edit", 3100, 1500, 1600),
                   (7, "provider miss", 3600, 0, 3600),
                   (1, "compaction", 2100, 0, 2100),
                   (2, "model switch", 2100, 0, 2100)]
    assert "edit at message 9" in found[1].detail and "thinking" in found[1].detail  # the user turn, message 9
    assert "edit at message 11" in found[2].detail and "microcompact" in found[2].detail
    assert f"{SONNET} -> {HAIKU}" == found[5].detail
    assert [b.rebilled_usd for b in found[:5]] == [
        sonnet_back(w5=6200), sonnet_back(w5=1000, uncached=100), sonnet_back(w5=1600), sonnet_back(w5=3600),
        sonnet_back(w5=2000, uncached=100)]  # 2,000 written, 100 uncached
    # Haiku 4.5: write 1.25, read 0.10 per million
    assert found[5].rebilled_usd == 2100 * (Decimal("1.25") - Decimal("0.10")) / M
    causes = per_cause(found)
    assert {k: (v["breaks"], v["lost_tokens"]) for k, v in causes.items()} == {
        "compaction": (1, 2100), "model switch": (1, 2100), "ttl": (1, 6200), "edit": (2, 2700),
        "provider miss": (1, 3600)}
    assert causes["edit"]["rebilled_usd"] == sonnet_back(w5=2600, uncached=100)


def test_one_hour_writes_stretch_the_lifetime(tmp_path):
    path = claude_code(tmp_path / "hour.jsonl", "hour", "/home/u/shop", [
        Step(T0, uncached=1000, w1h=5000),
        Step(T0 + 1000, uncached=100, w1h=6100),   # 17 min: inside the 1 h lifetime, so a provider miss
        Step(T0 + 5000, uncached=100, w1h=6300),   # 67 min: past it
    ])
    found = breaks_of(read_traces([str(path)]))
    assert [(b.cause, b.lost_tokens, b.rebilled_usd) for b in found] == [
        ("provider miss", 6000, sonnet_back(w1h=6000)), ("ttl", 6200, sonnet_back(w1h=6200))]
    assert "past the 60 min cache lifetime" in found[1].detail


def test_openai_breaks_price_the_uncached_input(tmp_path):
    path = codex(tmp_path / "rollout-o.jsonl", "o", "/home/u/api", [
        Step(T0, uncached=4000), Step(T0 + 20, uncached=300, read=3968), Step(T0 + 40, uncached=4400, read=0)])
    found = breaks_of(read_traces([str(path)]))
    assert [(b.request, b.cause, b.lost_tokens) for b in found] == [(3, "provider miss", 4268)]
    # gpt-5-codex: input 1.25, cached input 0.125 per million
    assert found[0].rebilled_usd == 4268 * (Decimal("1.25") - Decimal("0.125")) / M


def test_breaks_in_the_cli_table_and_json(tmp_path):
    path = every_cause(tmp_path)
    runner = CliRunner()
    text = runner.invoke(app, ["inspect", str(path), "--breaks"])
    assert text.exit_code == 0, text.output
    assert "cache breaks per cause" in text.stdout and "shop 2026-01-13 10:00" in text.stdout
    data = json.loads(runner.invoke(app, ["inspect", str(path), "--json"]).stdout)
    breaks = data["cache_breaks"]
    assert breaks["total"]["breaks"] == 6 and breaks["total"]["lost_tokens"] == 6200 + 1100 + 1600 + 3600 + 2100 + 2100
    assert Decimal(breaks["per_cause"]["ttl"]["rebilled_usd"]) == sonnet_back(w5=6200)
    # the accounting path gives the same breaks, sessions named by project and start time
    by = json.loads(runner.invoke(app, ["inspect", str(path), "--json", "--by", "day"]).stdout)
    assert [b["cause"] for b in by["cache_breaks"]["breaks"]] == [b["cause"] for b in breaks["breaks"]]
    assert {b["session"] for b in by["cache_breaks"]["breaks"]} == {"shop 2026-01-13 10:00"}
