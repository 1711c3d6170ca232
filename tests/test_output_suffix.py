"""`-o` writes what its suffix says (or a bundle for a folder) and refuses to guess (issue 15).

Each command that has `-o` is tried with every suffix it writes (the file checked for what it holds,
not only that it exists) and with suffixes it cannot write (one line naming what it can, exit 2,
before any input is read: the inputs given are missing, so an error about them would show the work
had started).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app

NATIVE = Path(__file__).parent / "fixtures" / "tiny" / "native.jsonl"


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def refused(res, *parts: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2, (res.exit_code, res.stderr)
    assert len(lines) == 1 and lines[0].startswith("ctxsim: error: "), res.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    shutil.copyfile(NATIVE, path)
    return path


def _requests_of_run(path: Path) -> int:
    return sum(r["totals"]["requests"] for r in json.loads(path.read_text(encoding="utf-8"))["runs"])


# ---------------------------------------------------------------- replay and compare: one run
@pytest.mark.parametrize("command", [["replay", "-p", "none,clear"], ["compare", "--policies", "clear"]])
def test_a_run_is_written_as_its_suffix_says(command: list[str], trace: Path, tmp_path: Path) -> None:
    name, *policies = command
    base = [name, trace, *policies, "--no-calibrate"]
    assert invoke(*base, "-o", tmp_path / "x.json").exit_code == 0
    run = json.loads((tmp_path / "x.json").read_text(encoding="utf-8"))
    assert run["schema"] == "ctxsim.run/2" and [r["policy"]["name"] for r in run["runs"]] == ["none", "clear"]
    requests = _requests_of_run(tmp_path / "x.json")

    assert invoke(*base, "-o", tmp_path / "x.csv").exit_code == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "x.csv").read_text(encoding="utf-8"))))
    assert len(rows) == requests and {r["policy_name"] for r in rows} == {"none", "clear"}

    assert invoke(*base, "-o", tmp_path / "x.md").exit_code == 0
    md = (tmp_path / "x.md").read_text(encoding="utf-8")
    assert md.startswith("### ctxsim") and "**Verdict:**" in md and not md.lstrip().startswith("{")

    assert invoke(*base, "-o", tmp_path / "x.svg").exit_code == 0
    assert "<svg" in (tmp_path / "x.svg").read_text(encoding="utf-8")[:2000]

    if importlib.util.find_spec("pyarrow") is not None:
        import pyarrow.parquet as pq

        assert invoke(*base, "-o", tmp_path / "x.parquet").exit_code == 0
        assert pq.read_table(tmp_path / "x.parquet").num_rows == requests


def test_a_png_is_a_png(trace: Path, tmp_path: Path) -> None:
    assert invoke("replay", trace, "--no-calibrate", "-o", tmp_path / "c.png").exit_code == 0
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_folder_is_the_bundle(trace: Path, tmp_path: Path) -> None:
    """`DIR/` (even with a dot in the name) and an existing folder are the bundle, never a file named like it
    (one bundle per command: they are the slow part)."""
    res = invoke("replay", trace, "-p", "none", "--no-calibrate", "-o", f"{tmp_path / 'out.v2'}/")
    assert res.exit_code == 0, res.stderr
    folder = tmp_path / "out.v2"
    assert folder.is_dir() and {"run.json", "report.md", "requests.csv"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["schema"] == "ctxsim.run/2"
    existing = tmp_path / "existing"
    existing.mkdir()
    assert invoke("compare", trace, "-p", "none", "--no-calibrate", "-o", existing).exit_code == 0
    assert (existing / "run.json").is_file() and (existing / "report.md").is_file()


@pytest.mark.parametrize("command", ["replay", "compare"])
@pytest.mark.parametrize("name", ["x.txt", "x.jsonl", "x.html", "x.json.gz"])
def test_a_suffix_a_run_cannot_be_is_refused_before_the_work(command: str, name: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-trace.jsonl"  # read first, this would be the error
    line = refused(invoke(command, missing, "-o", tmp_path / name), f"cannot write '{Path(name).suffix}'",
                   f"{command} -o writes .json (the run artefact)", ".md", ".csv", ".parquet", ".png", ".svg",
                   "DIR/")
    assert "no such file" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_dash_is_not_a_file_name(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (["replay", trace], ["compare", trace], ["diff", trace, trace], ["sweep", trace, trace]):
        refused(invoke(*args, "-o", "-"), "-o -:", "writes a file, not stdout")
    synth = invoke("synth", "--turns", "2", "-o", "-")  # convert and synth: '-' is stdout
    assert synth.exit_code == 0 and json.loads(synth.stdout.splitlines()[0])["type"] == "session"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_parquet_without_pyarrow_is_one_line_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    missing = tmp_path / "no-such-trace.jsonl"
    for args in (["replay", missing], ["compare", missing], ["report", missing]):
        refused(invoke(*args, "-o", tmp_path / "x.parquet"), "needs pyarrow", "pip install 'ctxsim[parquet]'")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- sweep and compare of several traces
@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copyfile(NATIVE, folder / name)
    return folder


@pytest.mark.parametrize("command", [["sweep", "--policies", "clear"], ["compare", "--policies", "clear"]])
def test_a_corpus_table_is_written_as_its_suffix_says(command: list[str], corpus: Path, tmp_path: Path) -> None:
    name, *policies = command
    base = [name, corpus, *policies, "-j", "1", "--no-calibrate"]
    shown = invoke(*base, "--json")
    assert shown.exit_code == 0, shown.stderr
    res = invoke(*base, "-o", tmp_path / "t.json")
    assert res.exit_code == 0, res.stderr
    data = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert data == json.loads(shown.stdout) and [p["policy"] for p in data["policies"]] == ["none", "clear"]

    assert invoke(*base, "-o", tmp_path / "t.csv").exit_code == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8"))))
    assert [r["policy"] for r in rows] == ["none", "clear"] and {r["sessions"] for r in rows} == {"2"}

    assert invoke(*base, "-o", tmp_path / "t.md").exit_code == 0
    md = (tmp_path / "t.md").read_text(encoding="utf-8").splitlines()
    header = next(i for i, line in enumerate(md) if line.startswith("| policy | budget |"))
    assert md[header + 1].startswith("|:---|:---|---:") and md[header + 2].startswith("| none |")
    assert md[header + 3].startswith("| clear |")
    assert not (tmp_path / "t.json").is_dir() and not (tmp_path / "cells").exists()

    if importlib.util.find_spec("pyarrow") is not None:
        res = invoke(*base, "-o", f"{tmp_path / 'swept'}/")
        assert res.exit_code == 0, res.stderr
        assert (tmp_path / "swept" / "manifest.json").is_file() and (tmp_path / "swept" / "cells").is_dir()


@pytest.mark.parametrize("command", ["sweep", "compare"])
def test_a_suffix_a_corpus_cannot_be_is_refused(command: str, corpus: Path, tmp_path: Path) -> None:
    for name in ("t.parquet", "t.png", "t.txt"):
        refused(invoke(command, corpus, corpus, "-o", tmp_path / name), f"cannot write '{Path(name).suffix}'",
                "DIR/ (the sweep folder", ".json", ".csv", ".md")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]


def test_a_sweep_file_output_keeps_the_output_rules(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    out.symlink_to(corpus / "a.jsonl")
    refused(invoke("sweep", corpus, "--policies", "clear", "-o", out), "symbolic link")
    inside = corpus / "old.md"
    inside.write_text("mine", encoding="utf-8")
    refused(invoke("sweep", corpus, "--policies", "clear", "-o", inside), "inside the input folder")
    assert inside.read_text(encoding="utf-8") == "mine"


# ---------------------------------------------------------------- convert, synth: a trace
def test_convert_and_synth_write_jsonl_and_nothing_else(trace: Path, tmp_path: Path) -> None:
    assert invoke("convert", trace, "-o", tmp_path / "c.jsonl").exit_code == 0
    assert json.loads((tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()[0])["type"] == "session"
    assert invoke("synth", "--turns", "2", "-o", tmp_path / "s").exit_code == 0  # no suffix: the one type
    assert json.loads((tmp_path / "s").read_text(encoding="utf-8").splitlines()[0])["type"] == "session"
    for args in (["convert", tmp_path / "missing.json"], ["synth", "--turns", "2"]):
        for name in ("c.json", "c.md", "c.csv"):
            refused(invoke(*args, "-o", tmp_path / name), "writes .jsonl (the trace in the native format)")
        refused(invoke(*args, "-o", f"{tmp_path / 'folder'}/"), "a folder, but", ".jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s", "t.jsonl"]


# ---------------------------------------------------------------- diff, report
def test_diff_writes_markdown_or_json(trace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    assert invoke("replay", trace, "-p", "none,clear", "--no-calibrate", "-o", run).exit_code == 0
    assert invoke("diff", run, run, "-o", tmp_path / "d.md").exit_code == 0
    assert (tmp_path / "d.md").read_text(encoding="utf-8").lstrip().startswith(("#", "|", "**"))
    shown = invoke("diff", run, run, "--json")
    assert invoke("diff", run, run, "-o", tmp_path / "d.json").exit_code == 0
    assert json.loads((tmp_path / "d.json").read_text(encoding="utf-8")) == json.loads(shown.stdout)
    for name in ("d.csv", "d"):
        refused(invoke("diff", tmp_path / "missing.json", run, "-o", tmp_path / name),
                "diff -o writes .md (the Markdown diff) or .json")


def test_report_takes_a_folder_with_a_slash_and_rewrites_the_run_as_json(trace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    assert invoke("replay", trace, "-p", "none,clear", "--no-calibrate", "-o", run).exit_code == 0
    res = invoke("report", run, "-o", f"{tmp_path / 'pr.42'}/")  # a dotted name: the slash says folder
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "pr.42" / "report.md").is_file()
    assert invoke("report", run, "-o", tmp_path / "copy.json").exit_code == 0
    assert (tmp_path / "copy.json").read_bytes() == run.read_bytes()


def test_help_says_what_o_writes() -> None:
    for command, words in (("replay", ".md (the Markdown report)"), ("compare", "DIR/ (the sweep folder"),
                           ("sweep", ".json (the tables as --json"), ("convert", "FILE.jsonl"),
                           ("diff", ".json (as --json prints it)"), ("report", ".json), or a folder")):
        text = " ".join(invoke(command, "--help").stdout.split())
        assert words in text, (command, words)
