"""Loss in compare and replay outputs: the misses column at 80 columns, run.json round trip, the verdict that
weighs loss (the oracle is the bound, never starred), probes on the command line, no trace content by default."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path

import pytest
from test_loss import known_trace
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import native
from ctxsim.loss.verdict import allowance, cost_with_refetch, starred
from ctxsim.policies.spec import resolve
from ctxsim.replay.api import Options, replay_choices
from ctxsim.replay.run import RunResult
from ctxsim.reports._compare_table import compare_table

SPECS = ["none", "clear:trigger=0,keep=1", "mask:keep=1",
         "compact:trigger=400,compact_above=0,keep_recent=2,clear_at_least=0"]


def result_of(margin: int = 5, max_misses: int | None = None) -> RunResult:
    options = Options(tokenizer="chars4", loss=True,
                      loss_settings=(("max_misses", max_misses), ("miss_margin", margin)))
    return replay_choices(known_trace(), "known.jsonl", resolve(SPECS), options)


def test_compare_table_has_the_loss_columns_and_stars_within_the_allowance() -> None:
    result = result_of(margin=0)
    table = compare_table(result)
    col = table.headers.index("misses")
    assert [row[col] for row in table.rows] == ["0", "4", "4", "4"]
    # with no oracle and a margin of 0, only `none` keeps within the allowance: it is starred though dearer
    assert starred(result) == 0 and table.rows[0][0] == "none *"
    loose = result_of(margin=10)
    best = starred(loose)
    costs = [cost_with_refetch(run) for run in loose.runs]
    assert best is not None and costs[best] == min(costs)
    assert cost_with_refetch(loose.runs[1]) == loose.runs[1].totals.cost_usd + loose.runs[1].loss.refetch_cost_usd
    assert starred(result_of(max_misses=3)) == 0  # --max-misses replaces the oracle/margin rule
    assert allowance(result_of(max_misses=3), 2) == 3


def test_an_oracle_run_is_the_bound_and_never_starred() -> None:
    result = result_of(margin=1)
    oracle = copy.copy(result.runs[1])  # stands in for the tune branch's oracle: a run named `oracle`
    oracle.policy = {**oracle.policy, "name": "oracle", "label": "oracle"}
    oracle.totals = result.runs[1].totals
    from dataclasses import replace

    oracle.totals = replace(oracle.totals, cost_usd=Decimal("0.000001"))  # the cheapest of all, still not starred
    result.runs.append(oracle)
    assert allowance(result, 2) == oracle.loss.recall_misses + 1  # the oracle's misses plus the margin
    best = starred(result)
    assert best is not None and result.runs[best].policy["name"] != "oracle"
    names = [row[0] for row in compare_table(result).rows]
    assert "oracle (bound)" in names


def test_run_json_round_trip_keeps_the_loss_and_no_identifier(tmp_path: Path) -> None:
    result = result_of()
    result.save(tmp_path / "run.json")
    text = (tmp_path / "run.json").read_text()
    assert "alpha_value" not in text and "BETA_LIMIT" not in text  # digests only, without --include-content
    data = json.loads(text)
    assert data["manifest"]["loss"]["refetch_assumption"].startswith("re-fetch estimate")
    assert [r["loss"]["recall_misses"] for r in data["runs"]] == [0, 4, 4, 4]
    back = RunResult.load(tmp_path / "run.json")
    assert [run.loss.recall_misses for run in back.runs] == [0, 4, 4, 4]
    assert [cost_with_refetch(r) for r in back.runs] == [cost_with_refetch(r) for r in result.runs]
    assert compare_table(back).rows == compare_table(result).rows
    assert back.dumps() == result.dumps()  # the same bytes again


def test_compare_cli_fits_80_columns_states_the_assumptions_and_checks_probes(tmp_path: Path,
                                                                              monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    trace = tmp_path / "known.jsonl"
    with trace.open("w") as out:
        native.write(known_trace(), out)
    args = ["compare", str(trace), "-p", ",".join(SPECS[1:]), "--tokenizer", "chars4", "--no-calibrate",
            "--probe", "BETA_LIMIT = BETA_CAP", "--probe", "re:gamma_\\w+", "--probe-at", "3",
            "-o", str(tmp_path / "out")]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    out = run.stdout
    table = out.split("timing)\n", 1)[1].split("\nnote:", 1)[0]
    assert max(len(line) for line in table.splitlines()) <= 80 and "misses" in table.splitlines()[0]
    assert "note: re-fetch estimate" in out and "note: open-loop replay" in out
    assert "facts still in the managed context" in out
    report = (tmp_path / "out" / "report.md").read_text()
    assert "re-fetch estimate" in report and "recall misses" in report and "alpha_value" not in report
    runs_csv = (tmp_path / "out" / "runs.csv").read_text().splitlines()
    assert "recall_misses" in runs_csv[0] and "cost_with_refetch_usd" in runs_csv[0]
    shown = CliRunner().invoke(app, [*args[:-2], "--include-content", "-o", str(tmp_path / "shown.json")])
    assert shown.exit_code == 0 and "alpha_value" in (tmp_path / "shown.json").read_text()
    plain = CliRunner().invoke(app, ["compare", str(trace), "-p", "clear", "--tokenizer", "chars4", "--no-loss"])
    assert plain.exit_code == 0 and "misses" not in plain.stdout and "re-fetch" not in plain.stdout


def test_bad_probe_options_are_one_line_errors(tmp_path: Path) -> None:
    trace = tmp_path / "known.jsonl"
    with trace.open("w") as out:
        native.write(known_trace(), out)
    for extra, message in ((["--probe", "re:("], "not a regular expression"),
                           (["--probe", "x", "--probe-at", "0"], "not a request number"),
                           (["--probes", str(tmp_path / "missing.toml")], "no such file"),
                           (["--max-misses", "-1"], "must not be negative")):
        run = CliRunner().invoke(app, ["compare", str(trace), "-p", "clear", "--tokenizer", "chars4", *extra])
        assert run.exit_code == 2, (extra, run.output)
        assert message in run.output and "Traceback" not in run.output


def test_replay_streams_with_the_same_misses_as_compare(tmp_path: Path) -> None:
    trace = tmp_path / "known.jsonl"
    with trace.open("w") as out:
        native.write(known_trace(), out)
    run = CliRunner().invoke(app, ["replay", str(trace), "-p", "clear:trigger=0,keep=1", "--tokenizer", "chars4",
                                   "--no-calibrate", "--loss", "-o", str(tmp_path / "r.json")])
    assert run.exit_code == 0, run.output
    assert "recall misses" in run.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["runs"][0]["loss"]["recall_misses"] == 4


def test_report_md_main_table_keeps_six_columns_with_the_misses() -> None:
    """With the loss metered, the misses take the hit rate's place in report.md's main table (860 px: six
    columns); the hit rate stays in the folded details."""
    from ctxsim.reports import render

    result = result_of()
    text = render("markdown", result, "md")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| policy"))
    table = lines[start:next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))]
    assert all(len(line.strip().strip("|").split("|")) == 6 for line in table), table
    assert table[0].split("|")[-2].strip() == "recall misses" and "hit rate" not in table[0]
    assert "hit rate" in text[text.index("<summary>Every column"):]
    misses = {run.policy["name"]: run.loss.recall_misses for run in result.runs}
    assert any(m > 0 for m in misses.values())  # the column has something to show
    assert table[2].startswith("| `none`") and table[2].endswith(f"| {misses['none']:,} |")


def test_no_star_anywhere_when_no_run_is_within_its_allowance(tmp_path: Path) -> None:
    """Every run passes the window minus the reserve: the verdict stars none, so neither report.md's table nor
    the charts may mark one (the cheapest is still shown, unstarred)."""
    from ctxsim.loss.verdict import starred
    from ctxsim.reports import render
    from ctxsim.reports._common import starred_run, winner

    options = Options(tokenizer="chars4", loss=True, window=400, reserve=300)
    result = replay_choices(known_trace(), "known.jsonl", resolve(SPECS), options)
    assert starred(result) is None and starred_run(result) is None
    assert 0 <= winner(result) < len(result.runs)  # the run a chart always shows
    text = render("markdown", result, "md")
    assert "No policy is starred" in text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| policy"))
    table = lines[start:next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))]
    assert not any("★" in line for line in table), table
    assert "★ the cheapest" not in text  # nor the footnote that explains a star
    # a run that qualifies is starred in the table as before
    starred_text = render("markdown", result_of(), "md")
    assert any("★" in line for line in starred_text.splitlines() if line.startswith("| `"))


def test_a_compare_builds_each_session_index_once_for_the_meter_and_the_oracle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle (a run, or a stage of a pipeline) reads the loss meter's index instead of building its own."""
    from ctxsim.loss import index as index_module
    from ctxsim.policies import oracle
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.api import Options, replay_choices
    from ctxsim.synth import synthesize

    trace = synthesize("coding", turns=30, seed=4)
    alone = replay_choices(trace, "t.jsonl", resolve(["none", "oracle:budget=9000", "truncate+oracle:budget=9000"]),
                           Options(jobs=1, loss=True))
    built: list[int] = []
    build = index_module.SessionIndex.build.__func__  # type: ignore[attr-defined]

    def counted(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(1)
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(index_module.SessionIndex, "build", classmethod(counted))
    monkeypatch.setattr(oracle, "_INDEXES", {})  # nothing kept from the run above
    again = replay_choices(trace, "t.jsonl", resolve(["none", "oracle:budget=9000", "truncate+oracle:budget=9000"]),
                           Options(jobs=1, loss=True))
    assert len(built) == len(trace.sessions)
    assert again.dumps() == alone.dumps()
