"""`--since/--until/--timezone` on the commands that replay many sessions: `sweep` and `compare DIR|GLOB...`
(issue 15). A session is replayed whole when the day it started is in the range; the others are skipped and
counted in the notes (and in the manifest); a fake corpus of native sessions on known days."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app


def session(sid: str, start: str | None) -> list[dict]:
    """A small native session starting at `start` (ISO, UTC), or with no times at all (None)."""
    def at(seconds: int) -> dict:
        if start is None:
            return {}
        from ctxsim.model import format_ts, parse_ts

        return {"ts": format_ts(parse_ts(start) + seconds)}

    return [
        {"type": "session", "version": 1, "id": sid, "model": "claude-sonnet-4-5", "provider": "anthropic",
         "window": 200000, "system": "You are a coding agent.", **at(0)},
        {"type": "message", "role": "user", "content": "Fix the rounding in invoice totals.", **at(1)},
        {"type": "message", "role": "assistant", "content": "Reading it.", **at(4),
         "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "src/invoice.py"}}]},
        {"type": "message", "role": "tool", "tool_call_id": "c1", "name": "read_file",
         "content": "def total(x):\n    return round(x, 2)\n" * 20, **at(5)},
        {"type": "message", "role": "assistant", "content": "Fixed.", **at(8)},
    ]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    files = {"a.jsonl": [("a1", "2026-01-10T09:00:00Z"), ("a2", "2026-01-13T23:30:00Z")],
             "b.jsonl": [("b1", "2026-01-20T12:00:00Z")],
             "c.jsonl": [("c1", None)]}
    for name, sessions in files.items():
        records = [r for sid, start in sessions for r in session(sid, start)]
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def swept(command: str, corpus: Path, *extra: str) -> tuple[dict, str]:
    res = run(command, corpus, "--policies", "clear", "-j", "1", "--no-calibrate", *extra, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res.stdout


def sessions_replayed(data: dict) -> int:
    return int(next(p for p in data["policies"] if p["policy"] == "none")["sessions"])


@pytest.mark.parametrize("command", ["sweep", "compare"])
def test_sessions_outside_the_range_are_skipped_and_counted(command: str, corpus: Path) -> None:
    every, _ = swept(command, corpus)
    assert sessions_replayed(every) == 4 and "dates" not in every["manifest"]["options"]
    data, _ = swept(command, corpus, "--since", "2026-01-11", "--until", "2026-01-15")
    assert sessions_replayed(data) == 1  # a2 alone
    assert data["manifest"]["options"]["dates"] == {
        "since": "2026-01-11", "until": "2026-01-15", "timezone": "UTC",
        "sessions_replayed": 1, "sessions_outside": 2, "sessions_untimed": 1}
    one_side, _ = swept(command, corpus, "--since", "20260113")
    assert sessions_replayed(one_side) == 2  # a2 and b1
    text = run(command, corpus, "--policies", "clear", "-j", "1", "--no-calibrate", "--until", "2026-01-10")
    assert text.exit_code == 0, text.output
    assert ("note: --until 2026-01-10 (UTC): 1 session(s) started in the range and were replayed; 2 outside it "
            "skipped; 1 with no time to tell, skipped too") in text.stdout


def test_the_cost_is_the_cost_of_the_sessions_kept(corpus: Path) -> None:
    """Skipping a session takes out exactly its cost: the per-session rows of the full run, summed."""
    from decimal import Decimal

    every, _ = swept("sweep", corpus, "--per-session")
    data, _ = swept("sweep", corpus, "--per-session", "--since", "2026-01-13", "--until", "2026-01-13")
    kept = [s for s in every["sessions"] if s["session"] == "a2"]
    assert [s["session"] for s in data["sessions"]] == ["a2", "a2"]  # none and clear
    assert sorted(s["cost_usd"] for s in data["sessions"]) == sorted(s["cost_usd"] for s in kept)
    none = next(p for p in data["policies"] if p["policy"] == "none")
    assert Decimal(none["cost_usd"]) == Decimal(next(s["cost_usd"] for s in kept if s["policy"] == "none"))


def test_the_days_are_in_the_timezone(corpus: Path) -> None:
    """a2 starts 2026-01-13 23:30 UTC: the 14th in Tokyo, still the 13th in New York."""
    tokyo, _ = swept("sweep", corpus, "--per-session", "--since", "2026-01-14", "--until", "2026-01-14",
                     "--timezone", "Asia/Tokyo")
    assert {s["session"] for s in tokyo["sessions"]} == {"a2"}
    york, _ = swept("sweep", corpus, "--per-session", "--since", "2026-01-14", "--until", "2026-01-14",
                    "--timezone", "America/New_York")
    assert york["sessions"] == [] and sessions_replayed(york) == 0


def test_a_range_is_part_of_a_cell_so_a_resume_does_not_reuse_other_ranges(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    first = run("sweep", corpus, "--policies", "clear", "-j", "1", "--no-calibrate", "--since", "2026-01-13",
                "-o", out)
    assert first.exit_code == 0, first.output
    again = run("sweep", corpus, "--policies", "clear", "-j", "1", "--no-calibrate", "--since", "2026-01-13",
                "-o", out)
    assert "6 cell(s) already in" in again.stderr  # 3 traces x (none, clear)
    other = run("sweep", corpus, "--policies", "clear", "-j", "1", "--no-calibrate", "-o", out)
    assert other.exit_code == 0 and "already in" not in other.stderr
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["options"].get("dates") is None


@pytest.mark.parametrize(("args", "message"), [
    (["--since", "January"], "--since must be a date YYYY-MM-DD or YYYYMMDD, got 'January'"),
    (["--since", "2026-02-01", "--until", "2026-01-01"], "--since 2026-02-01 is after --until 2026-01-01"),
    (["--since", "2026-01-01", "--timezone", "Mars/Olympus"], "--timezone: unknown time zone 'Mars/Olympus'"),
])
def test_bad_dates_are_one_line_before_the_work(args: list[str], message: str, tmp_path: Path) -> None:
    for command in ("sweep", "compare"):
        res = run(command, tmp_path / "missing", tmp_path / "missing2", *args)
        assert res.exit_code == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_one_trace_compare_refuses_a_range(corpus: Path) -> None:
    res = run("compare", corpus / "a.jsonl", "--since", "2026-01-01")
    assert res.exit_code == 2 and "--since/--until pick sessions across several traces" in res.stderr
