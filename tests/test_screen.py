"""What a person reads (issue 29): every table of every command fits 80, 100 and 120 columns with its key and
money columns kept; a user's home with a broken line is read (skipped, counted, --strict stops); notes said
once across files and kept to 3 lines on a terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from session_makers import Step, claude_code, unix
from typer.testing import CliRunner

from ctxsim.cli import app

WIDTHS = (80, 100, 120)
HERE = Path(__file__).resolve().parent
TINY = HERE / "fixtures" / "tiny" / "claude-code.jsonl"
T0 = unix("2026-01-13T10:00:00Z")
T1 = unix("2026-01-14T09:00:00Z")


def _home(tmp_path: Path, broken: bool = False) -> Path:
    """A home folder as Claude Code keeps it: two projects, the later one with a long name; a broken line."""
    projects = tmp_path / "home" / ".claude" / "projects"
    late = claude_code(projects / "-home-u-zz-an-exceedingly-long-project-name" / "s2.jsonl", "s2",
                       "/home/u/zz-an-exceedingly-long-project-name",
                       [Step(T1, uncached=900, w5=6000, out=70), Step(T1 + 30, uncached=100, read=6900, out=50),
                        Step(T1 + 900, uncached=100, w5=7000, out=40)])
    claude_code(projects / "-home-u-aa" / "s1.jsonl", "s1", "/home/u/aa",
                [Step(T0, uncached=1000, w5=5000, out=100), Step(T0 + 60, uncached=200, read=6000, out=80)])
    if broken:
        with late.open("a") as f:
            f.write('{"type": "assistant", "message": \n')
    return tmp_path / "home"


def _table_lines(out: str) -> list[str]:
    """The lines of the tables (and their titles): everything but the notes, which a pipe gets whole."""
    return [line for line in out.splitlines() if not line.startswith("note:")]


def _run(args: list[str], width: int, home: Path | None = None) -> str:
    env = {"COLUMNS": str(width)} | ({"HOME": str(home)} if home else {})
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_inspect_of_a_home_fits_every_width_keeping_the_key_and_the_cost(tmp_path: Path, width: int) -> None:
    home = _home(tmp_path)
    every = (["inspect"], ["inspect", "--by", "session"], ["inspect", "--by", "project"],
             ["inspect", "--breaks", "--by", "day"], ["inspect", "--by", "model"])
    for args in every if width == 80 else every[1:4:2]:  # the widest two at 100 and 120
        out = _run(args, width, home)
        lines = _table_lines(out)
        assert max(len(line) for line in lines) <= width, (args, width, out)
        header = next(line for line in lines if "requests" in line)
        assert header.split()[0] in {"day", "session", "project", "model"} and header.rstrip().endswith("cost")
        assert any(line.startswith("total ") and "$" in line for line in lines)
        if "--breaks" in args:  # the break's time, session and what it re-billed are never what goes
            breaks = out.split("cache breaks in time order", 1)[1]
            assert "2026-01-14 09:15" in breaks and "zz-an-exceedingly-long" in breaks and "ttl" in breaks
            assert "re-billed" in breaks
        if width == 80:
            assert "note: left out to fit 80 columns" in out
    wide = _run(["inspect", "--by", "session", "--wide"], 80, home)
    assert "left out to fit" not in wide and "hit rate" in wide


def test_inspect_alone_is_a_daily_table_and_sessions_come_in_time_order(tmp_path: Path) -> None:
    home = _home(tmp_path)
    days = _run(["inspect"], 120, home)
    assert "by day (UTC)" in days and "2026-01-13" in days and "2026-01-14" in days
    sessions = _run(["inspect", "--by", "session"], 120, home).split("by session", 1)[1]
    assert sessions.index("aa 2026-01-13") < sessions.index("zz-an-exceedingly-long-project-name 2026-01-14")
    bad = CliRunner().invoke(app, ["inspect", "--by", "dya"], env={"HOME": str(home)})
    assert bad.exit_code == 2 and "did you mean 'day'?" in bad.output


def test_a_broken_line_in_a_home_is_skipped_and_counted_and_strict_stops(tmp_path: Path) -> None:
    home = _home(tmp_path, broken=True)
    broken = next(home.rglob("s2.jsonl"))
    last = len(broken.read_text().splitlines())  # the line appended broken
    result = CliRunner().invoke(app, ["inspect", "--json"], env={"HOME": str(home)})
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "malformed" in line]
    assert len(said) == 1 and "1 malformed line(s) in 1 file(s)" in said[0] and f"s2.jsonl:{last}" in said[0]
    data = json.loads(result.stdout)
    assert data["totals"]["requests"] == 5  # both sessions read, the broken line alone left out
    strict = CliRunner().invoke(app, ["inspect", "--strict"], env={"HOME": str(home)})
    assert strict.exit_code == 2 and f"s2.jsonl:{last}:" in strict.output and "Traceback" not in strict.output


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_tune_and_compare_fit_every_width(tmp_path: Path, width: int) -> None:
    folder = _home(tmp_path) / ".claude" / "projects"
    sweep = _run(["sweep", str(folder), "--policies", "clear,compact", "-j", "1"], width)
    lines = _table_lines(sweep)
    assert max(len(line) for line in lines) <= width, sweep
    header = next(line for line in lines if line.startswith("policy"))
    assert "cost" in header.split() and "vs none" in header
    compare = _run(["compare", str(TINY), "--policies", "clear,compact"], width)
    table = compare.split("timing)\n", 1)[1].split("\nnote:", 1)[0]
    assert max(len(line) for line in table.splitlines()) <= width
    assert table.startswith("policy") and "cost real gaps" in table.splitlines()[0]


def test_tune_fits_80_columns_keeping_the_setting_and_its_cost(tmp_path: Path) -> None:
    folder = _home(tmp_path) / ".claude" / "projects"
    out = _run(["tune", str(folder), "--family", "clear", "--trials", "3"], 80)
    table = out.split("\nnote:", 1)[0]
    assert max(len(line) for line in table.splitlines()) <= 80, out
    header = next(line for line in table.splitlines() if line.startswith("trial "))
    assert "cost w/ re-fetch" in header and "misses" in header


def test_compare_keeps_first_overflow_before_a_less_useful_column() -> None:
    from ctxsim.reports._compare_table import PRIORITY, fit
    from ctxsim.reports._terminal import TableData

    headers = ["policy", "cost real gaps", "vs none", "misses", "peak", "hit rate", "first overflow", "events"]
    table = TableData("t", headers, [["none", "$1.00", "baseline", "0", "250,000", "90.00%", "request 1,234", "0"]])
    for width in range(40, 100):
        shown, left_out = fit(table, width)
        ranks = [PRIORITY.index(h) for h in shown.headers]
        assert all(PRIORITY.index(h) > max(ranks) for h in left_out), (width, shown.headers)


# ---------------------------------------------------------------- the fit of any table, rich and plain
def test_any_table_keeps_its_key_and_money_columns_at_every_width() -> None:
    from rich.console import Console

    from ctxsim.reports._screen import fit_table
    from ctxsim.reports._terminal import TableData, plain, rich_table

    headers = ["session", "requests", "input", "write 5m", "write 1h", "read", "output", "hit rate", "cost"]
    rows = [["long-project-name 2026-01-13 10:00", "1,234", "48,178,646", "1,156,933", "191,474",
             "46,298,328", "188,180", "96.1%", "$23.1778"], ["total", "1,234", "1", "1", "1", "1", "1", "1%", "$1.00"]]
    table = TableData("by session", headers, rows)
    for width in WIDTHS:
        for rich in (True, False):
            shown, left_out = fit_table(table, width, rich)
            assert shown.headers[0] == "session" and shown.headers[-1] == "cost"
            assert (not left_out and width == 120 and not rich) or left_out[-1] == "hit rate"  # the last goes first
            if rich:
                buffer = io.StringIO()
                Console(file=buffer, width=width, color_system=None).print(rich_table(shown))
                text = buffer.getvalue()
            else:
                text = plain(shown)
            assert max(len(line) for line in text.splitlines()) <= width
            assert "$23.1778" in text and "2026-01-13 10:00" in text  # the key whole while a number could go


def test_replay_summary_on_a_terminal_keeps_the_labels_and_the_recorded_bill(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._terminal import emit

    result = replay_trace(str(TINY), ["clear", "compact", "truncate", "mask", "recent", "zones"])
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    emit(result, out, None, True)
    text = out.getvalue()
    import re

    plain_text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    summary = plain_text.split("summary", 1)[1].split("context per request", 1)[0]
    assert max(len(line) for line in summary.splitlines()) <= 80
    assert "recorded" in summary.splitlines()[2] and "policy events" in summary
    assert "left out to fit 80 columns" in plain_text


# ---------------------------------------------------------------- notes
def test_a_note_several_files_share_is_said_once_with_the_counts_added() -> None:
    from ctxsim.reports._screen import merge_notes, terminal_notes

    notes = ["8 file(s) read", "/h/a.jsonl: 42 response(s) end with a streaming placeholder",
             "/h/b.jsonl: 3 response(s) end with a streaming placeholder", "/h/b.jsonl: skipped 1 malformed line (336)",
             "/h/c.jsonl: 1 response(s) end with a streaming placeholder"]
    merged = merge_notes(notes)
    assert merged == ["8 file(s) read", "3 files: 46 response(s) end with a streaming placeholder (-v: each file)",
                      "/h/b.jsonl: skipped 1 malformed line (336)"]
    assert terminal_notes(notes, 80, verbose=True) == notes
    shown = terminal_notes(notes + [f"extra note {i} " + "word " * 20 for i in range(5)], 80, verbose=False)
    lines = sum(-(-len(f"note: {n}") // 80) for n in shown)
    assert lines <= 3 and shown[-1].startswith("6 more note(s): -v shows them")


# ---------------------------------------------------------------- one recorded figure
def test_the_recorded_bill_says_where_estimates_replace_placeholders_and_by_how_much(tmp_path: Path) -> None:
    from decimal import Decimal

    from test_fidelity import placeholder_session

    path = tmp_path / "ph.jsonl"
    placeholder_session(path)  # response 2 logged a streaming placeholder (3 output tokens) for 100 tokens of text
    logged = json.loads(CliRunner().invoke(app, ["inspect", str(path), "--json"]).stdout)["totals"]["cost_usd"]
    result = CliRunner().invoke(app, ["compare", str(path), "--policies", "clear", "--tokenizer", "chars4",
                                      "-o", str(tmp_path / "run.json")])
    assert result.exit_code == 0, result.output
    rec = json.loads((tmp_path / "run.json").read_text())["manifest"]["recorded"]
    assert rec["estimated_outputs"] == 1
    assert Decimal(rec["logged_cost_usd"]) == Decimal(logged)  # inspect's figure, the one bill as logged
    more = Decimal(rec["cost_usd"]) - Decimal(rec["logged_cost_usd"])
    assert more > 0  # the estimate is the larger count, priced at the output price
    out = result.stdout
    assert "recorded, est.: 1 response(s) logged a streaming placeholder" in out and f"(+${more:,.4f})" in out
    row = next(line for line in out.splitlines() if line.startswith("recorded"))
    assert row.startswith("recorded, est.")


# ---------------------------------------------------------------- tune: never a no-op
def _outcome(recommended: int):  # type: ignore[no-untyped-def]
    from decimal import Decimal

    from ctxsim.tune.search import Measured, Outcome, Trial

    def measured(cost: str, misses: int, events: int, peak: int) -> Measured:
        return Measured(Decimal(cost), Decimal(cost), misses, misses, 0, peak, False, events)

    idle = [Trial(n, {"trigger": 108_000 + n * 1000}, [{"trigger": 108_000 + n * 1000}],
                  measured("3.90", 0, 0, 107_000)) for n in (1, 2, 3)]
    fires = Trial(4, {"trigger": 60_000}, [{"trigger": 60_000}], measured("3.10", 4, 5, 60_000))
    return Outcome("clear", "grid", [*idle, fires], measured("3.90", 0, 0, 107_000), None, 0, [0, 1, 2, 3],
                   recommended)


def test_tune_collapses_settings_that_never_fire_and_never_recommends_one() -> None:
    from ctxsim.tune import outputs as tune_out

    noop = _outcome(recommended=0)
    table = tune_out.table(noop)
    assert [row[-1] for row in table.rows] == ["= none", "front", "bound"]
    assert table.rows[0][1].startswith("3 settings never fire (e.g. trigger=")
    assert tune_out.toml_text(noop, None, 0) is None and tune_out.context_management(noop)[0] is None
    assert tune_out.notes(noop, None)[0].startswith("nothing to gain: the best trial within the allowance (trial 1)")
    firing = _outcome(recommended=3)
    assert [row[-1] for row in tune_out.table(firing).rows] == ["= none", "★", "bound"]
    assert "trigger = 60000" in (tune_out.toml_text(firing, None, 0) or "")
    assert not any(n.startswith("nothing to gain") for n in tune_out.notes(firing, None))


# ---------------------------------------------------------------- policies list, completion
def test_policies_list_wraps_at_words_within_80_columns_and_cites_no_internal_names() -> None:
    from ctxsim.policies import policies

    out = _run(["policies", "list"], 80)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "seed 0" not in out and "issue 1" not in out and ".md" not in out
    words = out.split()
    for name, info in policies().items():  # every word of every summary printed whole
        assert name in words and all(w in words for w in info.summary.split()), name


def test_completion_offers_the_by_keys_and_policy_names_after_a_comma() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "_CTXSIM_COMPLETE": "complete_bash", "COMP_WORDS": "ctxsim inspect --by w", "COMP_CWORD": "3"}
    code = "from ctxsim.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    by = done.stdout.split()
    assert by == ["week"]
    from ctxsim.commands._complete import by_keys, policy_names

    assert by_keys("mo") == ["month", "model"]
    assert "clear,compact" in policy_names("clear,com") and "clear,claude-code" in policy_names("clear,cl")
    assert all(name.startswith("clear,") for name in policy_names("clear,"))


# ---------------------------------------------------------------- the Python API
def test_the_api_lists_itself_reaches_the_sample_meters_loss_and_gives_decimal_money() -> None:
    from decimal import Decimal

    import ctxsim
    from ctxsim.commands.compare import DEFAULT_POLICIES
    from ctxsim.replay.library import DEFAULT_COMPARE

    assert {"compare", "replay", "load_trace", "load_run", "sample_trace", "Result"} <= set(dir(ctxsim))
    assert Path(ctxsim.sample_trace()).is_file()
    assert ",".join(DEFAULT_COMPARE) == DEFAULT_POLICIES  # one default list
    result = ctxsim.compare(str(TINY), ["clear"], tokenizer="chars4")
    assert all(run.loss is not None for run in result.run.runs)  # metered by default, as the CLI
    totals = result.totals("clear")
    assert isinstance(totals["cost_usd"], Decimal) and totals["cost_usd"] > 0
    assert isinstance(totals["requests"], int)
    unmetered = ctxsim.compare(str(TINY), ["clear"], tokenizer="chars4", loss=False)
    assert all(run.loss is None for run in unmetered.run.runs)


# ---------------------------------------------------------------- charts
def test_context_chart_draws_trigger_lines_only_of_stages_that_fired_and_the_star_says_what_it_is() -> None:
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._common import star_text, thresholds
    from ctxsim.reports.context import fired_thresholds

    sample = str(HERE.parent / "traces" / "billing-session.jsonl")  # peaks at about 163k
    result = replay_trace(sample, ["none", "clear:trigger=190000", "compact:trigger=60000"])
    idle, fired = result.runs[1], result.runs[2]
    assert thresholds(idle) and fired_thresholds(idle) == []  # 190k: the context never got there, no event
    assert fired.events and fired_thresholds(fired) == thresholds(fired)
    assert star_text(result) == " ★ cheapest"
    metered = replay_trace(str(TINY), ["none", "clear"], loss=True)
    assert star_text(metered) == " ★ recommended"


def test_compare_of_a_claude_code_session_points_to_its_subagent_files(tmp_path: Path) -> None:
    main = claude_code(tmp_path / "s1.jsonl", "s1", "/home/u/aa",
                       [Step(T0, uncached=1000, w5=5000, out=100), Step(T0 + 60, uncached=200, read=6000, out=80)])
    alone = _run(["compare", str(main), "--policies", "clear", "--no-loss"], 120)
    assert "subagent file(s) beside" not in alone
    claude_code(tmp_path / "s1" / "subagents" / "agent-a1.jsonl", "s1", "/home/u/aa",
                [Step(T0 + 10, uncached=500, w5=2000, out=30)])
    out = _run(["compare", str(main), "--policies", "clear", "--no-loss"], 120)
    assert f"note: 1 subagent file(s) beside this session ({tmp_path / 's1' / 'subagents'}/)" in out
