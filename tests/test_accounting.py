"""Accounting across a corpus: --by week / project totals against sums computed here, --since/--until,
5-hour blocks, time zones moving day and week boundaries."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from session_makers import Step, claude_code, codex, gemini, unix
from typer.testing import CliRunner

from ctxsim.cli import app


def run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env)


# Sunday 2026-01-11 23:30 UTC is Monday 00:30 in Paris: another day and another ISO week
SUNDAY_LATE = unix("2026-01-11T23:30:00Z")
TUESDAY = unix("2026-01-13T10:20:00Z")
NEXT_WEEK = unix("2026-01-20T08:00:00Z")

SHOP_A = [Step(SUNDAY_LATE, uncached=1000, w5=4000, out=100), Step(SUNDAY_LATE + 60, uncached=200, read=5000, out=80)]
SHOP_B = [Step(TUESDAY, uncached=500, w5=3000, out=40), Step(TUESDAY + 30, uncached=300, read=3500, out=60),
          Step(NEXT_WEEK, uncached=900, w5=4200, out=70)]
API = [Step(TUESDAY + 600, uncached=3000, out=200), Step(TUESDAY + 650, uncached=200, read=2944, out=90)]
GEM = [Step(NEXT_WEEK + 100, uncached=2500, out=30)]


def corpus(root: Path) -> dict[str, list[Step]]:
    """Claude Code, Codex and Gemini sessions in one folder tree; project -> its steps."""
    claude_code(root / "claude" / "a.jsonl", "sa", "/home/u/shop", SHOP_A)
    claude_code(root / "claude" / "b.jsonl", "sb", "/home/u/shop", SHOP_B)
    codex(root / "codex" / "rollout-api.jsonl", "cx", "/home/u/api", API)
    gemini(root / "gemini" / "session-g.json", "gs", "f00d" * 16, GEM)
    return {"shop": SHOP_A + SHOP_B, "api": API, "gemini:f00df00df00d": GEM}


def groups(result) -> dict:  # type: ignore[no-untyped-def]
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["by"]["groups"]


def test_by_project_sums(tmp_path):
    projects = corpus(tmp_path)
    got = groups(run("inspect", str(tmp_path), "--by", "project", "--json"))
    assert set(got) == set(projects)
    for name, steps in projects.items():
        g = got[name]
        assert g["requests"] == len(steps)
        assert g["input_tokens"] == sum(s.prompt for s in steps)
        assert g["cache_read_tokens"] == sum(s.read for s in steps)
        assert g["cache_write_5m_tokens"] == sum(s.w5 for s in steps)
        assert g["output_tokens"] == sum(s.out for s in steps)
    assert Decimal(got["shop"]["cost_usd"]) == sum((s.sonnet_usd() for s in projects["shop"]), Decimal(0))
    text = run("inspect", str(tmp_path), "--by", "project")
    total_line = next(line for line in text.stdout.splitlines() if line.startswith("total"))
    assert f"{sum(s.prompt for v in projects.values() for s in v):,}" in total_line


def test_by_week_and_timezone(tmp_path):
    corpus(tmp_path)
    utc = groups(run("inspect", str(tmp_path), "--by", "week", "--json"))
    every = SHOP_A + SHOP_B + API + GEM
    week_of = {"2026-01-05 (W02)": SHOP_A, "2026-01-12 (W03)": SHOP_B[:2] + API,
               "2026-01-19 (W04)": SHOP_B[2:] + GEM}
    assert {k: v["input_tokens"] for k, v in utc.items()} == {k: sum(s.prompt for s in v) for k, v in week_of.items()}
    assert sum(v["requests"] for v in utc.values()) == len(every)
    paris = run("inspect", str(tmp_path), "--by", "week", "--json", "--timezone", "Europe/Paris")
    weeks = json.loads(paris.stdout)
    assert weeks["timezone"] == "Europe/Paris"
    assert weeks["by"]["groups"]["2026-01-12 (W03)"]["requests"] == len(SHOP_A + SHOP_B[:2] + API)
    assert "2026-01-05 (W02)" not in weeks["by"]["groups"]
    days_utc = groups(run("inspect", str(tmp_path), "--by", "day", "--json"))
    days_paris = groups(run("inspect", str(tmp_path), "--by", "day", "--json", "--timezone", "Europe/Paris"))
    assert days_utc["2026-01-11"]["requests"] == 2 and "2026-01-11" not in days_paris
    assert days_paris["2026-01-12"]["requests"] == 2
    assert run("inspect", str(tmp_path), "--by", "day", "--timezone", "Mars/Olympus").exit_code == 2


def test_since_until(tmp_path):
    corpus(tmp_path)
    inside = json.loads(run("inspect", str(tmp_path), "--json", "--since", "2026-01-12", "--until", "20260119").stdout)
    assert inside["totals"]["requests"] == len(SHOP_B[:2] + API)
    assert inside["totals"]["input_tokens"] == sum(s.prompt for s in SHOP_B[:2] + API)
    paris = json.loads(run("inspect", str(tmp_path), "--json", "--since", "2026-01-12", "--until", "2026-01-19",
                           "--timezone", "Europe/Paris").stdout)
    assert paris["totals"]["requests"] == len(SHOP_A + SHOP_B[:2] + API)  # Sunday 23:30 UTC is Monday in Paris
    bad = run("inspect", str(tmp_path), "--since", "12/01/2026")
    assert bad.exit_code == 2 and "--since must be a date YYYY-MM-DD or YYYYMMDD" in bad.stderr
    swapped = run("inspect", str(tmp_path), "--since", "2026-01-20", "--until", "2026-01-12")
    assert swapped.exit_code == 2


def test_five_hour_blocks(tmp_path):
    t = unix("2026-01-13T10:20:00Z")
    claude_code(tmp_path / "p" / "a.jsonl", "a", "/home/u/shop", [
        Step(t), Step(t + 40 * 60), Step(t + 4 * 3600 + 39 * 60)])  # 10:20, 11:00, 14:59: the 10:00 block
    claude_code(tmp_path / "p" / "b.jsonl", "b", "/home/u/web", [
        Step(t + 4 * 3600 + 50 * 60),  # 15:10: the first block ended at 15:00, a new one starts at 15:00
        Step(t + 13 * 3600 + 20 * 60)])  # 23:40 after a gap: a block from 23:00
    got = groups(run("inspect", str(tmp_path), "--by", "block", "--json"))
    assert {k: v["requests"] for k, v in got.items()} == {
        "2026-01-13 10:00 - 15:00": 3, "2026-01-13 15:00 - 20:00": 1, "2026-01-13 23:00 - 04:00": 1}
    assert list(got) == sorted(got)  # chronological
    kolkata = groups(run("inspect", str(tmp_path), "--by", "block", "--json", "--timezone", "Asia/Kolkata"))
    assert next(iter(kolkata)) == "2026-01-13 15:30 - 20:30"  # the same block, shown in a half-hour zone


def test_sessions_named_by_project_and_start(tmp_path):
    corpus(tmp_path)
    got = groups(run("inspect", str(tmp_path), "--by", "session", "--json"))
    assert set(got) == {"shop 2026-01-11 23:30", "shop 2026-01-13 10:20", "api 2026-01-13 10:30",
                        "gemini:f00df00df00d 2026-01-20 08:01"}
    assert got["shop 2026-01-13 10:20"]["requests"] == 3


def test_same_response_in_two_files_counts_once(tmp_path):
    claude_code(tmp_path / "a.jsonl", "same", "/home/u/shop", SHOP_A)
    claude_code(tmp_path / "b.jsonl", "same", "/home/u/shop", SHOP_A)  # a resumed copy: same ids
    data = json.loads(run("inspect", str(tmp_path), "--json", "--by", "day").stdout)
    assert data["totals"]["requests"] == len(SHOP_A) and data["files"] == 2


def test_output_is_byte_identical(tmp_path):
    corpus(tmp_path)
    first = run("inspect", str(tmp_path), "--by", "session", "--breaks").stdout
    assert first == run("inspect", str(tmp_path), "--by", "session", "--breaks").stdout
    assert "times in UTC" in first


@pytest.mark.parametrize("by", ["day", "week", "month", "session", "project", "model", "block"])
def test_every_grouping_sums_to_the_total(tmp_path, by):
    corpus(tmp_path)
    data = json.loads(run("inspect", str(tmp_path), "--json", "--by", by).stdout)
    assert sum(g["input_tokens"] for g in data["by"]["groups"].values()) == data["totals"]["input_tokens"]
    assert sum(Decimal(g["cost_usd"]) for g in data["by"]["groups"].values()) == Decimal(data["totals"]["cost_usd"])
