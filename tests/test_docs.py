"""README's generated tables (`python -m ctxsim.docs`): the policy and preset tables are the registries',
and the check fails, changing nothing, when README drifts from them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ctxsim import docs
from ctxsim.policies import policies
from ctxsim.presets import presets


def _section(text: str, name: str) -> str:
    start, end = docs.markers(name)
    assert text.count(start) == 1 and text.count(end) == 1, f"README lacks the {name} markers"
    return text.split(start, 1)[1].split(end, 1)[0]


def _rows(table: str) -> list[list[str]]:
    """The cells of a Markdown table's body rows (an escaped pipe stays inside its cell)."""
    lines = table.strip().splitlines()[2:]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]


def test_readme_policy_and_preset_tables_are_the_generated_ones():
    text = docs.README.read_text(encoding="utf-8")
    assert docs.with_tables(text) == text, "README's tables are out of date: run python -m ctxsim.docs"
    policy_rows = _rows(_section(text, "policies"))
    names = [r[0] for r in policy_rows]
    assert names == [f"`{n}`" for n in policies()]
    clear = dict(zip(["name", "summary", "params", "source"], policy_rows[names.index("`clear`")], strict=True))
    assert clear["summary"] == policies()["clear"].summary and "`keep`" in clear["params"]
    preset_rows = _rows(_section(text, "presets"))
    assert [r[0] for r in preset_rows] == [f"`{n}`" for n in presets()]
    ctxkit = preset_rows[[r[0] for r in preset_rows].index("`ctxkit`")]
    # the stages in order, as the preset runs them
    assert ctxkit[2].index("`notes:") < ctxkit[2].index("`clear:") < ctxkit[2].index("`compact:")
    assert "tokenizer `o200k_base`" in ctxkit[3]


def test_the_check_fails_when_a_registry_changes_and_readme_does_not(tmp_path: Path, monkeypatch):
    copy = tmp_path / "README.md"
    original = docs.README.read_text(encoding="utf-8")
    copy.write_text(original, encoding="utf-8")
    monkeypatch.setattr(docs, "README", copy)
    assert docs.main(["--check"]) == 0
    table = dict(policies())
    table["clear"] = dataclasses.replace(table["clear"], summary="a summary README has not seen")
    monkeypatch.setattr("ctxsim.policies.policies", lambda: table)
    assert docs.main(["--check"]) == 1
    assert copy.read_text(encoding="utf-8") == original  # --check changes nothing
    assert docs.main([]) == 0
    rewritten = copy.read_text(encoding="utf-8")
    assert "| `clear` | a summary README has not seen |" in rewritten
    assert _section(rewritten, "formats") == _section(original, "formats")  # only the stale table changed
    assert docs.main(["--check"]) == 0


def test_a_stale_preset_table_is_reported_by_name(tmp_path: Path, monkeypatch, capsys):
    stale = tmp_path / "README.md"
    fresh = docs.with_tables(docs.README.read_text(encoding="utf-8"))
    stale.write_text(fresh.replace(_section(fresh, "presets"), "\n| old |\n"), encoding="utf-8")
    monkeypatch.setattr(docs, "README", stale)
    assert docs.main(["--check"]) == 1
    assert "presets" in capsys.readouterr().err and "| old |" in stale.read_text(encoding="utf-8")
    assert docs.main([]) == 0 and "`yoagent`" in _section(stale.read_text(encoding="utf-8"), "presets")


def test_a_pipe_in_a_summary_stays_in_its_cell(monkeypatch):
    table = dict(policies())
    table["none"] = dataclasses.replace(table["none"], summary="keep a | b")
    monkeypatch.setattr("ctxsim.policies.policies", lambda: table)
    rows = _rows(docs.policy_table())
    assert all(len(r) == 4 for r in rows)
    assert rows[[r[0] for r in rows].index("`none`")][1] == "keep a \\| b"


def test_the_formats_markers_stay_required(tmp_path: Path, monkeypatch):
    bare = tmp_path / "README.md"
    bare.write_text("no markers here\n", encoding="utf-8")
    monkeypatch.setattr(docs, "README", bare)
    with pytest.raises(SystemExit, match="formats table markers are missing"):
        docs.main(["--check"])
