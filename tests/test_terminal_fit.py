"""Tables fit the terminal: compare keeps its most useful columns at 80 columns, --wide keeps them all."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.reports._compare_table import PRIORITY, fit
from ctxsim.reports._terminal import TableData

TRACE = str(Path(__file__).resolve().parent.parent / "traces" / "billing-session.jsonl")


def _table() -> TableData:
    headers = ["policy", "requests", "input tokens", "peak", "p95", "hit rate", "cost real gaps", "vs none",
               "first overflow", "events"]
    rows = [["hierarchical *", "60", "3,840,360", "139,672", "138,609", "94.24%", "$1.96", "baseline", "never", "0"]]
    return TableData("t", headers, rows)


def test_fit_keeps_the_first_priorities_in_their_order_within_the_width() -> None:
    for width in (30, 50, 80, 120):
        table, left_out = fit(_table(), width)
        line = max(len("  ".join(row)) for row in [table.headers, *table.rows])
        assert line <= width or len(table.headers) == 1
        assert table.headers == [h for h in _table().headers if h in table.headers]  # order kept
        assert sorted(table.headers + left_out) == sorted(_table().headers)
        assert table.headers[0] == "policy" and ("cost real gaps" in table.headers or width < 40)
    wide, none_left = fit(_table(), 10_000)
    assert wide.headers == _table().headers and none_left == []


def test_priority_names_every_compare_column() -> None:
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._compare_table import compare_table

    headers = compare_table(replay_trace(TRACE, ["none"])).headers
    assert set(headers) < set(PRIORITY)
    metered = compare_table(replay_trace(TRACE, ["none"], loss=True)).headers  # the loss columns too
    assert set(metered) == set(PRIORITY)


def test_compare_at_80_columns_fits_and_says_what_it_left_out(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["compare", TRACE, "--policies", "clear,compact"]).stdout
    table = out.split("timing)\n", 1)[1].split("\nnote:", 1)[0]
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "more column(s) with --wide" in out
    wide = CliRunner().invoke(app, ["compare", TRACE, "--policies", "clear,compact", "--wide"]).stdout
    assert "fresh prefill" in wide and "more column(s)" not in wide


# ---------------------------------------------------------------- inspect's full view (issue 15)
CLAUDE = Path(__file__).resolve().parent / "fixtures" / "tiny" / "claude-code.jsonl"


def _fit_table():  # type: ignore[no-untyped-def]
    from ctxsim.reports._fit import FitTable

    return FitTable("t", ["#", "project", "requests", "cost", "what arrived"],
                    [["1", "a-very-long-project-name-indeed", "1,234", "$0.0123", "Read result 3,216, Bash result 4"],
                     ["2", "web", "56", "$1.50", "user 10"]],
                    left=2, keep=("#", "project", "cost", "requests", "what arrived"))


def test_text_columns_are_shortened_before_any_number_is_touched() -> None:
    from ctxsim.reports._fit import fit_columns
    from ctxsim.reports._terminal import plain

    table, left_out = fit_columns(_fit_table(), 50)
    text = plain(table)
    assert left_out == [] and max(len(line) for line in text.splitlines()) <= 50
    assert table.rows[0][2:4] == ["1,234", "$0.0123"] and table.rows[1][2:4] == ["56", "$1.50"]  # numbers whole
    assert table.rows[0][1].endswith("…") and table.rows[0][1].startswith("a-very-long")
    assert table.rows[1][1] == "web"  # short text is left as it is
    wide, none_left = fit_columns(_fit_table(), 200)
    assert wide.rows == _fit_table().rows and none_left == []


def test_past_the_shortest_text_the_least_kept_columns_go_first() -> None:
    from ctxsim.reports._fit import fit_columns

    table, left_out = fit_columns(_fit_table(), 32)
    assert left_out[0] == "what arrived" and "#" in table.headers and "project" in table.headers
    assert table.headers == [h for h in _fit_table().headers if h in table.headers]  # order kept
    for width in (20, 26, 40, 60):
        for border, edge in ((2, -2), (3, 1)):
            fitted, _ = fit_columns(_fit_table(), width, border, edge)
            used = sum(max([len(fitted.headers[c])] + [len(r[c]) for r in fitted.rows]) + border
                       for c in range(len(fitted.headers))) + edge
            assert used <= width or len(fitted.headers) == 1, (width, border, fitted.headers)


def test_an_empty_column_goes_before_any_with_something_in_it() -> None:
    from ctxsim.reports._fit import FitTable, fit_columns

    table = FitTable("t", ["#", "project", "link", "requests"], [["1", "unruffled-mcclintock", "", "94"]], left=3,
                     keep=("#", "project", "link", "requests"))
    fitted, left_out = fit_columns(table, 33)  # 39 with link, 33 without: the text is not cut
    assert left_out == ["link"] and fitted.rows == [["1", "unruffled-mcclintock", "94"]]


def test_inspect_at_80_columns_fits_and_names_sessions_by_project_and_start(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["inspect", str(CLAUDE)]).stdout
    tables = out.split("\nnote:", 1)[0]
    assert "timeline" in tables and max(len(line) for line in tables.splitlines()) <= 80
    sessions = out.split("sessions (by project and start", 1)[1].split("\n\n", 1)[0]
    assert "shop" in sessions and "2026-01-13 16:56" in sessions
    assert "tiny-claude" not in tables  # the session id: in --json, not in the tables
    assert "note: left out to fit 80 columns (--wide or --json shows them): sessions: source, link" in out
    wide = CliRunner().invoke(app, ["inspect", str(CLAUDE), "--wide"]).stdout
    assert "left out to fit" not in wide and "claude-code" in wide.split("sessions (by", 1)[1].split("\n\n")[0]
    assert "claude-sonnet-4-5" in wide and "…" not in wide
    data = json.loads(CliRunner().invoke(app, ["inspect", str(CLAUDE), "--json"]).stdout)
    assert data["sessions"][0]["id"] == "tiny-claude" and data["sessions"][0]["project"] == "shop"
    assert data["sessions"][0]["started"].startswith("2026-01-13T16:56")


# ---------------------------------------------------------------- what a person sees at 80 columns
def test_a_narrow_terminal_wraps_labels_and_never_cuts_a_number() -> None:
    """The replay summary at 80 columns: labels wrap at words, every number is printed whole."""
    import io

    from rich.console import Console

    from ctxsim.reports._terminal import rich_table

    numbers = ["3,084,999", "1,534,536", "4,746,759", "2,137,465", "4,746,811"]
    table = TableData("summary", ["", "clear", "compact", "tiered", "mask", "recorded"],
                      [["input tokens, all requests", *numbers], ["... with the trace's real gaps", *["$1.59"] * 5]])
    buffer = io.StringIO()
    Console(file=buffer, width=80, color_system=None).print(rich_table(table))
    shown = buffer.getvalue()
    assert max(len(line) for line in shown.splitlines()) <= 80
    assert "…" not in shown and all(n in shown for n in numbers)
    assert "input tokens," in shown and "all requests" in shown  # the label wrapped, at a word


def test_the_calibration_line_is_short_and_its_notes_are_notes_of_their_own() -> None:
    from ctxsim.replay.recorded import calibration_line, calibration_notes

    manifest = {"calibration": {"applied": True, "scale": 1.1, "message_tokens": 16, "hidden_prefix_tokens": 8067,
                                "requests_used": 60, "notes": ["first thing said", "second thing said"]}}
    line = calibration_line(manifest)
    assert line is not None and "thing said" not in line and line.endswith("--no-calibrate replays raw")
    assert calibration_notes(manifest) == ["calibration: first thing said", "calibration: second thing said"]
    assert calibration_notes({"calibration": {"applied": False, "notes": ["x"]}}) == []
