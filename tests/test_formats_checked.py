"""`ctxsim formats list` says, per format, which product versions its reader was checked against (issue 30)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import formats


def test_formats_list_says_what_each_format_was_checked_against():
    listed = CliRunner().invoke(app, ["formats", "list"])
    assert listed.exit_code == 0
    assert listed.output.count("checked against: ") == len(formats())
    table = json.loads(CliRunner().invoke(app, ["formats", "list", "--json"]).output)
    assert set(table) == set(formats())
    assert all(d["checked"] and d["checked"] != "not described" for d in table.values())
    assert "0.104.0" in table["codex"]["checked"] and "0.14x" in table["codex"]["checked"]
    shown = CliRunner().invoke(app, ["formats", "show", "pi"])
    assert "checked against: Pi session files version 3" in shown.output
