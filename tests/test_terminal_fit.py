"""Tables fit the terminal: compare keeps its most useful columns at 80 columns, --wide keeps them all."""

from __future__ import annotations

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
    from ctxsim.api import replay_trace
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
