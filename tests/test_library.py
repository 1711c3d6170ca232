"""The Python API: the README's notebook example runs, and its numbers are the command line's."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ctxsim
from ctxsim.cli import app
from ctxsim.errors import CtxsimError

ROOT = Path(__file__).resolve().parent.parent
TRACE = str(ROOT / "traces" / "billing-session.jsonl")


def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- python-api-example[^\n]*-->\n```python\n(.*?)```", readme, re.DOTALL)
    assert block is not None, "README lost its Python API example"
    code = block.group(1).replace("/tmp/ctxsim-example-run.json", str(tmp_path / "run.json"))
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "compact" in out and "session(s)" in out
    assert (tmp_path / "run.json").is_file()


def test_numbers_are_the_command_lines() -> None:
    result = ctxsim.compare(TRACE, "clear,compact")
    assert result.policies == ["none", "clear", "compact"]
    done = CliRunner().invoke(app, ["compare", TRACE, "--policies", "clear,compact", "--json"])
    assert done.exit_code == 0, done.output
    cli = {r["policy"]["label"]: r["totals"] for r in json.loads(done.stdout)["runs"]}
    frame = result.to_pandas()
    for label in result.policies:
        row = frame[frame["policy"] == label].iloc[0]
        assert Decimal(row["cost_usd_exact"]) == Decimal(cli[label]["cost_usd"])
        assert row["cost_usd"] == pytest.approx(float(cli[label]["cost_usd"]))
        assert int(row["input_tokens"]) == cli[label]["input_tokens"]
        assert result.totals(label)["cost_usd"] == Decimal(cli[label]["cost_usd"])  # Decimal money (issue 29)


def test_a_single_spec_is_not_split_into_letters() -> None:
    assert ctxsim.replay(TRACE, "none").policies == ["none"]
    assert ctxsim.replay(TRACE, "clear:trigger=30000,keep=3").policies == ["clear:trigger=30000,keep=3"]


def test_money_columns_are_floats_beside_exact_strings() -> None:
    frame = ctxsim.replay(TRACE, ["none"]).to_pandas("requests")
    assert str(frame["cost_usd"].dtype) == "float64"
    assert sum(Decimal(v) for v in frame["cost_usd_exact"]) == Decimal(ctxsim.replay(TRACE).totals()["cost_usd"])


def test_unknown_run_label_names_the_close_one() -> None:
    with pytest.raises(CtxsimError, match="did you mean 'clear'"):
        ctxsim.replay(TRACE, "none,clear").totals("claer")


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "ctxsim" / "py.typed").is_file()
    assert "py.typed" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
