"""Reports: pure functions of run.json. Round trip, registry contract, determinism, atomic
writes, Markdown size, tidy tables, the diff gate, composition, progress."""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.composition import Composition
from ctxsim.errors import CtxsimError
from ctxsim.replay.meter import EventRecord
from ctxsim.replay.run import RunResult
from ctxsim.reports import FORMATS, Options, charts, render, reports, write_bundle, write_file
from ctxsim.reports._common import dumps_run, load_run, thresholds
from ctxsim.reports.pareto import pareto_front

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "billing-session.jsonl"
CTXSIM = Path(sys.executable).with_name("ctxsim")
CLEAR = "clear:trigger=30000,keep=3,clear_at_least=10000"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped trace replayed under none and clear, saved as run.json."""
    from ctxsim.replay.api import replay_trace

    path = tmp_path_factory.mktemp("run") / "run.json"
    replay_trace(str(TRACE), ["none", CLEAR]).save(path)
    return path


@pytest.fixture
def result(saved: Path) -> RunResult:
    return load_run(saved)


@pytest.fixture(scope="module")
def with_composition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same trace replayed with a cheap tokenizer; the engine records the composition block."""
    from ctxsim.replay.api import Options, replay_trace

    path = tmp_path_factory.mktemp("comp") / "run.json"
    write_file(path, dumps_run(replay_trace(str(TRACE), ["none", CLEAR], options=Options(tokenizer="chars4"))))
    return path


def bare(saved: Path, folder: Path) -> Path:
    """A copy of run.json without the composition block (as an older or hand-made artefact)."""
    path = folder / "bare-run.json"
    write_file(path, dumps_run(without_composition(load_run(saved))))
    return path


def without_composition(result: RunResult) -> RunResult:
    for run in result.runs:
        run.composition = None
    return result


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def scaled(result: RunResult, policy_index: int, factor: Decimal) -> RunResult:
    """A copy with one run's per-request costs scaled (totals follow on load)."""
    out = copy.deepcopy(result)
    run = out.runs[policy_index]
    run.rows = [replace(r, cost_usd=r.cost_usd * factor) for r in run.rows]
    return out


# ---------------------------------------------------------------- the artefact
def test_run_json_round_trips_to_the_same_objects(saved: Path, result: RunResult):
    again = RunResult.load(saved)
    assert again.dumps() == saved.read_text(encoding="utf-8")  # load + save = same bytes
    assert dumps_run(result) == saved.read_text(encoding="utf-8")
    assert [r.rows for r in again.runs] == [r.rows for r in result.runs]
    assert [r.events for r in again.runs] == [r.events for r in result.runs]
    assert [r.totals for r in again.runs] == [r.totals for r in result.runs]
    row = result.runs[1].rows[-1]
    assert isinstance(row.cost_usd, Decimal) and isinstance(result.runs[1].totals.cost_usd, Decimal)
    m = result.manifest
    assert json.loads(saved.read_text())["schema"] == "ctxsim.run/2"
    for key in ("ctxsim_version", "trace", "provider", "model", "tokenizer", "cache_model", "prices", "seed"):
        assert key in m, key
    assert m["trace"]["digest"].startswith("sha256:") and m["trace"]["name"] == "billing-session"
    assert result.runs[1].policy["params"]["trigger"] == 30000  # effective parameters recorded


def test_load_errors_are_one_line(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "ctxsim.run/1", "manifest": {}, "runs": [{"rows": []}]}))
    for path, message in ((tmp_path / "missing.json", "no such file"), (bad, "not a ctxsim run artefact"),
                          (other, "not a valid ctxsim run artefact"), (tmp_path, "is a folder")):
        with pytest.raises(CtxsimError, match=message):
            load_run(path)
        res = invoke("report", path)
        assert res.exit_code == 2, res.output
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("ctxsim: error:")
        assert "Traceback" not in res.output


# ---------------------------------------------------------------- registry contract
def test_registry_names_are_module_names():
    table = reports()
    assert {"table", "markdown", "csv", "parquet", "context", "cost", "tokens", "composition", "pareto"} <= set(table)
    for name, info in table.items():
        assert info.module == f"ctxsim.reports.{name}"
        assert set(info.formats) <= set(FORMATS)


@pytest.mark.parametrize("name", sorted(reports()))
def test_every_report_renders_every_format(name: str, with_composition: Path):
    result = load_run(with_composition)
    info = reports()[name]
    for fmt in info.formats:
        out = render(name, result, fmt)
        assert out, (name, fmt)
        if fmt == "png":
            assert out[:8] == PNG_MAGIC
        elif fmt == "svg":
            assert b"<svg" in out[:500] and b"<dc:date>" not in out  # no creation date
            ElementTree.fromstring(out)  # well-formed XML
        elif fmt == "parquet":
            assert out[:4] == b"PAR1"
        elif fmt == "md":
            assert out.startswith("### ctxsim") and len(out) < 65_536
        elif fmt == "csv":
            assert out.splitlines()[0].startswith("policy,")
        else:
            assert "summary" in out


def test_png_carries_no_software_or_date_stamp(result: RunResult):
    png = render("context", result, "png")
    assert b"Software" not in png and b"matplotlib" not in png.lower()


# ---------------------------------------------------------------- determinism
def _run(*args: str, cwd: Path) -> None:
    done = subprocess.run([str(CTXSIM), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


def test_same_commands_twice_give_identical_bytes(tmp_path: Path):
    """replay -o run.json, then report -o bundle/: run twice, in fresh processes."""
    outputs = []
    for attempt in ("a", "b"):
        folder = tmp_path / attempt
        folder.mkdir()
        _run("replay", str(TRACE), "--policy", "none", "--policy", CLEAR, "-o", "run.json", cwd=folder)
        _run("report", "run.json", "-o", "bundle/", cwd=folder)
        files = {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        outputs.append(files)
    a, b = outputs
    assert set(a) == set(b)
    names = {p.name for p in a}
    assert {"run.json", "report.md", "requests.csv", "runs.csv", "events.csv", "context.png", "context.svg",
            "cost.png", "tokens.svg", "pareto.png"} <= names
    for path in a:
        if path.suffix != ".parquet":  # Parquet embeds writer metadata: not promised stable
            assert a[path] == b[path], f"{path} differs between two identical runs"
    assert a[Path("run.json")] == a[Path("bundle/run.json")]  # the bundle's run.json is the artefact


def test_bundle_twice_in_process_is_identical(tmp_path: Path, with_composition: Path):
    result = load_run(with_composition)
    first = write_bundle(result, tmp_path / "one")
    second = write_bundle(result, tmp_path / "two")
    assert [p.name for p in first] == [p.name for p in second]
    assert "composition.png" in {p.name for p in first}
    for p, q in zip(first, second, strict=True):
        if p.suffix != ".parquet":
            assert p.read_bytes() == q.read_bytes(), p.name
    assert (tmp_path / "one" / "run.json").read_text() == with_composition.read_text()


# ---------------------------------------------------------------- atomic replacement
def test_interrupted_bundle_keeps_the_old_files(tmp_path: Path, result: RunResult, monkeypatch):
    folder = tmp_path / "bundle"
    write_bundle(result, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    smaller = RunResult(result.manifest, result.runs[:1])  # a different report

    import ctxsim._support.fileio

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(ctxsim._support.fileio.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bundle(smaller, folder)
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert after == before  # nothing replaced, no temporary file left behind
    write_bundle(smaller, folder)
    assert (folder / "report.md").read_bytes() != before["report.md"]


def test_killed_mid_write_leaves_the_old_file(tmp_path: Path, result: RunResult):
    """A process killed half-way through writing report.md leaves the old report, whole."""
    target = tmp_path / "report.md"
    old = render("markdown", result, "md")
    write_file(target, old)
    new_result = RunResult(result.manifest, result.runs[:1])
    child = textwrap.dedent(f"""
        import sys, time
        from contextlib import contextmanager
        import ctxsim.reports as reports
        from ctxsim.reports import render, write_file
        from ctxsim.reports._common import load_run
        from ctxsim.replay.run import RunResult

        real = reports.atomic_write

        @contextmanager
        def slow(path, mode="w", force=False):
            with real(path, mode, force) as out:
                class Half:
                    def write(self, data):
                        out.write(data[: len(data) // 2])
                        out.flush()
                        print("half", flush=True)
                        time.sleep(120)
                        out.write(data[len(data) // 2 :])
                yield Half()

        reports.atomic_write = slow
        result = load_run({str(tmp_path / 'run.json')!r})
        write_file({str(target)!r}, render("markdown", result, "md"))
    """)
    new_result.save(tmp_path / "run.json")
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "half"
        assert target.read_text(encoding="utf-8") == old  # mid-write: the old file is still there
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert target.read_text(encoding="utf-8") == old  # killed: the old file, whole
    write_file(target, render("markdown", new_result, "md"))
    assert target.read_text(encoding="utf-8") != old


def test_a_crashing_renderer_leaves_the_existing_chart_untouched(tmp_path: Path, saved: Path, monkeypatch):
    out = tmp_path / "context.png"
    assert invoke("report", saved, "-o", out).exit_code == 0
    old = out.read_bytes()
    import ctxsim.reports._plot as plot

    def broken(fig, fmt):
        raise RuntimeError("renderer crashed half-way")

    monkeypatch.setattr(plot, "save", broken)
    res = invoke("report", saved, "-o", out, "--chart", "cost")
    assert res.exit_code != 0
    assert out.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["context.png"]


# ---------------------------------------------------------------- report command
def test_format_is_guessed_from_the_output_path(tmp_path: Path, saved: Path):
    cases = {"r.md": lambda b: b.startswith(b"### ctxsim"), "r.csv": lambda b: b.startswith(b"policy,"),
             "r.png": lambda b: b[:8] == PNG_MAGIC, "r.svg": lambda b: b"<svg" in b[:500],
             "r.parquet": lambda b: b[:4] == b"PAR1", "r.txt": lambda b: b"summary" in b}
    for name, check in cases.items():
        res = invoke("report", saved, "-o", tmp_path / name)
        assert res.exit_code == 0, (name, res.output)
        assert check((tmp_path / name).read_bytes()), name
    # the md written to a file gets its charts beside it; with no base URL they are not linked (a PR
    # comment cannot show relative images) and a note says how to embed them
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "![" not in text and "--image-base-url" in text and (tmp_path / "context.png").exists()
    res = invoke("report", saved, "-o", tmp_path / "u.md", "--image-base-url", "https://ci.example/a/1")
    assert res.exit_code == 0, res.output
    text = (tmp_path / "u.md").read_text(encoding="utf-8")
    assert "![Context size per request](https://ci.example/a/1/context.png)" in text


def test_report_to_stdout_and_errors(tmp_path: Path, saved: Path):
    res = invoke("report", saved, "-f", "csv", "--table", "runs")
    assert res.exit_code == 0 and res.stdout.startswith("policy,policy_name,params,")
    lines = res.stdout.strip().splitlines()
    # header + two policies + the recorded row (the shipped trace records the usage it was billed)
    assert len(lines) == 4 and lines[-1].startswith("recorded,")
    res = invoke("report", saved)
    assert res.exit_code == 0 and "summary" in res.stdout and "\x1b[" not in res.stdout
    for args, message in [
        (["-f", "pdf"], "unknown format"),
        (["-o", tmp_path / "x.docx"], "cannot write '.docx' files; report -o writes .txt (the terminal table)"),
        (["-f", "parquet"], "give the file to write with -o"),
        (["-f", "png"], "give -o"),
        (["-f", "csv", "-o", tmp_path / "x.png"], "looks like png"),
        (["-o", tmp_path / "c.png", "--chart", "nope"], "unknown chart"),
        (["-f", "csv", "--table", "nope"], "unknown table"),
    ]:
        res = invoke("report", saved, *args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.stderr and res.stderr.count("\n") == 1, (args, res.stderr)
    res = invoke("report", bare(saved, tmp_path), "-o", tmp_path / "c.png", "--chart", "composition")
    assert res.exit_code == 2 and "no `composition` block" in res.stderr


def test_charts_into_a_folder_skip_what_the_run_cannot_draw(tmp_path: Path, saved: Path):
    res = invoke("report", bare(saved, tmp_path), "-f", "svg", "-o", tmp_path / "charts")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == [
        "context.svg", "cost.svg", "pareto.svg", "tokens.svg"]
    assert "skipped chart composition" in res.stderr


# ---------------------------------------------------------------- markdown
def test_markdown_reads_as_a_pr_comment(result: RunResult):
    text = render("markdown", result, "md", Options(charts=(("Context size per request", "context.png"),),
                                                    image_base_url="https://ci.example/run/"))
    lines = text.splitlines()
    assert lines[2].startswith("**Verdict:**")  # the verdict first
    verdict = lines[2]
    assert f"`{CLEAR}` is the cheapest" in verdict and "−" in verdict  # a saving, with its sign
    assert verdict.count(". ") + 1 == 2 and verdict.endswith(".")  # two sentences
    assert "| `none` |" in text and f"| `{CLEAR}` ★ |" in text and f"| `{CLEAR}` **cheapest** |" in text
    assert "open-loop replay" in text and "tokenizer o200k_base" in text and "prices genai-prices" in text
    assert "![Context size per request](https://ci.example/run/context.png)" in text
    assert text.count("<details>") == text.count("</details>") >= 3
    assert "<summary>Events: 7 (clear 7)</summary>" in text
    # money with cents (none's total, re-derived: the shipped trace now records usage, so its outputs are
    # billed at their recorded counts); thousands separators in token counts:
    assert f"${result.runs[0].totals.cost_usd:.2f}" in text
    assert "139,672" in text


def test_markdown_fits_a_comment_and_says_what_it_cut(result: RunResult):
    big = copy.deepcopy(result)
    run = big.runs[1]
    template = run.events[0]
    run.events = [replace(template, request=1 + i % 60, note=f"cleared {i} tool results | with a pipe")
                  for i in range(6000)]
    text = render("markdown", big, "md")
    assert len(text) < 65_536
    assert "Cut to fit a PR comment" in text and "of 6,000 events" in text
    assert "\\| with a pipe" in text  # pipes escaped inside table cells
    small = render("markdown", result, "md")
    assert "Cut to fit" not in small


def test_single_policy_verdict(result: RunResult):
    one = RunResult(result.manifest, result.runs[:1])
    text = render("markdown", one, "md")
    cost = f"${result.runs[0].totals.cost_usd:.2f}"
    verdict = next(line for line in text.splitlines() if line.startswith("**Verdict:**"))
    assert verdict.startswith(f"**Verdict:** `none` costs {cost} ")
    assert "for 60 requests, peak context 139,672 tokens (70% of the window)" in verdict


# ---------------------------------------------------------------- tidy tables
def test_csv_keeps_money_exact_and_tidy(result: RunResult):
    import pandas as pd

    text = render("csv", result, "csv", Options(table="requests"))
    frame = pd.read_csv(io.StringIO(text), dtype={"cost_usd": str})
    assert len(frame) == sum(len(r.rows) for r in result.runs)
    assert list(frame["cost_usd"]) == [str(row.cost_usd) for run in result.runs for row in run.rows]
    for label, run in zip(["none", CLEAR], result.runs, strict=True):
        total = sum((Decimal(v) for v in frame.loc[frame["policy"] == label, "cost_usd"]), Decimal(0))
        assert total == run.totals.cost_usd
    runs = pd.read_csv(io.StringIO(render("csv", result, "csv", Options(table="runs"))), dtype=str)
    recorded = runs[runs["policy"] == "recorded"]  # the shipped trace records its bill: one row for it
    assert list(recorded["cost_usd"]) == [result.manifest["recorded"]["cost_usd"]]
    runs = runs[runs["policy"] != "recorded"]
    assert list(runs["cost_usd"]) == [str(r.totals.cost_usd) for r in result.runs]
    assert list(runs["peak_context_tokens"]) == [str(r.totals.peak_context_tokens) for r in result.runs]
    events = pd.read_csv(io.StringIO(render("csv", result, "csv", Options(table="events"))))
    assert len(events) == 7 and (events["freed_tokens"] == events["tokens_before"] - events["tokens_after"]).all()


def test_parquet_keeps_decimals(result: RunResult):
    import pandas as pd

    frame = pd.read_parquet(io.BytesIO(render("parquet", result, "parquet", Options(table="runs"))))
    assert [Decimal(v) for v in frame["cost_usd"]] == [r.totals.cost_usd for r in result.runs] + [
        Decimal(result.manifest["recorded"]["cost_usd"])]  # the recorded row last


# ---------------------------------------------------------------- charts' inputs
def test_pareto_front():
    points = [(100.0, Decimal(2)), (50.0, Decimal(3)), (60.0, Decimal("3.5")), (10.0, Decimal(9)),
              (100.0, Decimal(2))]
    assert pareto_front(points) == [0, 1, 3, 4]  # 2 is beaten by 1; equal points both stay


def test_thresholds_come_from_effective_parameters(result: RunResult):
    assert thresholds(result.runs[0]) == []
    assert thresholds(result.runs[1]) == [("clear trigger", 30000)]
    run = copy.deepcopy(result.runs[1])
    run.policy["params"]["trigger_type"] = "tool_uses"  # counts tool uses, not tokens: no line
    assert thresholds(run) == []


# ---------------------------------------------------------------- composition
def test_composition_sums_to_the_context_and_round_trips(with_composition: Path):
    result = load_run(with_composition)
    for run in result.runs:
        comp = run.composition
        context = {r.request: r.context_tokens for r in run.rows if r.kind == "request"}
        assert comp.requests == sorted(context)
        assert all(sum(tokens) == context[q] for q, tokens in zip(comp.requests, comp.tokens, strict=True))
        assert comp.columns[0] == "tools+system" and any(c.startswith("tool:") for c in comp.columns)
    cleared = result.runs[1].composition.series().get("cleared")
    assert cleared and cleared[-1] > 0  # the clear policy's stubs show as their own band
    assert "cleared" not in result.runs[0].composition.columns
    assert dumps_run(result) == with_composition.read_text(encoding="utf-8")
    assert result.runs[1].policy["name"] == "clear" and "stages" not in result.runs[1].policy
    with pytest.raises(CtxsimError):
        Composition.from_json({"version": 1, "columns": ["a"], "requests": [1], "tokens": [[1, 2]]})


def test_composition_chart_is_skipped_without_the_block(tmp_path: Path, result: RunResult):
    result = without_composition(result)
    assert "composition" in charts()
    written = {p.name for p in write_bundle(result, tmp_path)}
    assert "composition.png" not in written and "context.png" in written
    assert "composition.png" not in (tmp_path / "report.md").read_text(encoding="utf-8")
    with pytest.raises(CtxsimError, match="no `composition` block"):
        render("composition", result, "png")


# ---------------------------------------------------------------- diff
def test_diff_fails_on_a_cost_regression_above_the_threshold(tmp_path: Path, result: RunResult):
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    result.save(base)
    scaled(result, 1, Decimal("1.10")).save(new)  # clear costs 10% more
    res = invoke("diff", base, new, "--fail-above", "5%")
    assert res.exit_code == 1, res.output
    assert "regression" in res.stdout and "+10.0%" in res.stdout
    assert "ctxsim: regression:" in res.stderr and "over the 5% gate" in res.stderr
    assert invoke("diff", base, new, "--fail-above", "15%").exit_code == 0  # below the threshold
    assert invoke("diff", base, new, "--fail-above", "15").exit_code == 0  # % sign optional
    assert invoke("diff", base, new).exit_code == 0  # no gate: report only
    assert invoke("diff", new, base, "--fail-above", "5%").exit_code == 0  # cheaper is not a regression


def test_diff_is_direction_aware_for_hit_rate(tmp_path: Path, result: RunResult):
    worse = copy.deepcopy(result)
    run = worse.runs[1]
    run.rows = [replace(r, cache_read_tokens=r.cache_read_tokens // 2,
                        uncached_tokens=r.uncached_tokens + r.cache_read_tokens - r.cache_read_tokens // 2)
                for r in run.rows]
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    result.save(base)
    worse.save(new)
    assert load_run(new).runs[1].totals.hit_rate < result.runs[1].totals.hit_rate
    assert invoke("diff", base, new, "--fail-above", "5%", "--metric", "hit_rate").exit_code == 1
    assert invoke("diff", new, base, "--fail-above", "5%", "--metric", "hit_rate").exit_code == 0  # went up
    assert invoke("diff", base, new, "--fail-above", "5%", "--metric", "cost").exit_code == 0  # costs untouched


def test_diff_markdown_and_json(tmp_path: Path, result: RunResult):
    base, new, md = tmp_path / "base.json", tmp_path / "new.json", tmp_path / "diff.md"
    result.save(base)
    changed = scaled(result, 1, Decimal("1.25"))
    changed.runs[1].policy = {**changed.runs[1].policy, "label": "clear:trigger=40000",
                              "params": {**changed.runs[1].policy["params"], "trigger": 40000}}
    changed.save(new)
    res = invoke("diff", base, new, "--fail-above", "5%", "-m", "cost,peak", "-o", md)
    assert res.exit_code == 1
    text = md.read_text(encoding="utf-8")
    assert text.startswith("### ctxsim diff: ❌ cost regressed by more than 5%")
    assert f"`clear:trigger=40000` (was `{CLEAR}`)" in text  # paired by policy name
    was = result.runs[1].totals.cost_usd
    assert f"${was:.2f} → ${was * Decimal('1.25'):.2f} (+25.0%) ❌" in text and "trigger: 30000 → 40000" in text
    data = json.loads(invoke("diff", base, new, "--fail-above", "5%", "--json").stdout)
    assert data["failed"] is True and data["threshold"] == "0.05"
    statuses = {c["metric"]: c["status"] for c in data["pairs"][1]["changes"]}
    assert statuses["cost"] == "regression" and data["pairs"][0]["changes"][0]["status"] == "same"


def test_diff_bad_input_exits_2(tmp_path: Path, saved: Path):
    for args, message in [([saved, tmp_path / "nope.json"], "no such file"),
                          ([saved, saved, "--fail-above", "lots"], "expected a percentage"),
                          ([saved, saved, "--metric", "vibes"], "unknown metric")]:
        res = invoke("diff", *args)
        assert res.exit_code == 2 and message in res.stderr and res.stderr.count("\n") == 1


def test_diff_warns_when_traces_differ(tmp_path: Path, result: RunResult):
    other = copy.deepcopy(result)
    other.manifest["trace"]["digest"] = "sha256:" + "0" * 64
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    result.save(base)
    other.save(new)
    res = invoke("diff", base, new, "--md")
    assert res.exit_code == 0 and "replay different traces" in res.stdout


# ---------------------------------------------------------------- progress
class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only(capsys):
    from ctxsim.reports._progress import progress_bar

    piped = io.StringIO()
    with progress_bar(10, stream=piped, delay_s=0) as advance:
        for _ in range(10):
            advance(1)
    assert piped.getvalue() == ""

    tty = FakeTerminal()
    with progress_bar(10, "replaying", stream=tty, delay_s=0) as advance:
        for _ in range(10):
            advance(1)
    assert "replaying" in tty.getvalue()
    captured = capsys.readouterr()
    assert captured.out == ""  # never on stdout


def test_progress_callback_fits_the_engine(capsys):
    from ctxsim.formats import read_trace
    from ctxsim.policies import parse_policy
    from ctxsim.replay.engine import Replayer
    from ctxsim.reports._progress import progress_bar
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    replayer = Replayer(read_trace(str(TRACE)), MessageSizer(TokenCounter(get_tokenizer("chars4"))))
    calls = []
    tty = FakeTerminal()
    with progress_bar(60, stream=tty, delay_s=0) as advance:
        run = replayer.run(parse_policy("none"), progress=lambda n: (calls.append(n), advance(n)))
    assert sum(calls) == run.totals.requests == 60
    assert "60/60" in tty.getvalue()
    with progress_bar(60) as advance:  # stderr is not a terminal under pytest: a no-op
        replayer.run(parse_policy("none"), progress=advance)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_event_kinds_are_marked(result: RunResult):
    """An overflow event in the run still draws (its marker has a legend entry)."""
    loud = copy.deepcopy(result)
    loud.runs[0].events = [EventRecord(54, "s", "none", "overflow", "context passes the window")]
    assert render("context", loud, "png") != render("context", result, "png")


def test_diff_pairs_one_policy_each_side_whatever_their_labels(tmp_path: Path):
    """main's config against a PR's: one run each, different labels, still compared and gated."""
    from ctxsim.replay.api import replay_trace

    base, new = tmp_path / "base.json", tmp_path / "new.json"
    replay_trace(str(TRACE), ["clear:trigger=60000"]).save(base)
    replay_trace(str(TRACE), ["none"]).save(new)
    res = invoke("diff", base, new, "--fail-above", "5%")
    assert res.exit_code == 1 and "clear:trigger=60000 → none" in res.stderr
    assert invoke("diff", new, base, "--fail-above", "5%").exit_code == 0


def test_composition_across_sessions_lines_up_columns_by_name():
    # Session 1 grows from 2 to 3 columns; session 2 has its own order, a column session 1 never
    # had, and one that is 0 at every request (left out). Expected table worked out by hand.
    first = {"tools+system": 0, "user": 0, "tool:bash": 0}
    second = {"tools+system": 0, "tool:read": 0, "assistant": 0, "user": 0}
    comp = Composition.of([
        (first, [1, 2], [(10, 5), (10, 7, 30)]),
        (second, [3, 4], [(20, 40), (20, 0, 0, 9)]),
    ])
    assert comp.columns == ["tools+system", "user", "tool:bash", "tool:read"]
    assert comp.requests == [1, 2, 3, 4]
    assert comp.tokens == [[10, 5, 0, 0], [10, 7, 30, 0], [20, 0, 0, 40], [20, 9, 0, 0]]
    assert Composition.of([(first, [], [])]) == Composition([], [], [])
    assert Composition.of([({"tools+system": 0}, [1], [(0,)])]).tokens == [[]]


# ---------------------------------------------------------------- charts a reviewer reads at a glance
def drawn(name: str, result: RunResult, monkeypatch) -> object:
    """The matplotlib Figure a chart builds (captured at save time), to inspect what it draws."""
    from ctxsim.reports import _plot

    figures = []
    real = _plot.save

    def keep(fig, fmt):  # type: ignore[no-untyped-def]
        figures.append(fig)
        return real(fig, fmt)

    monkeypatch.setattr(_plot, "save", keep)
    render(name, result, "png")
    return figures[-1]


def renamed(run, name: str):  # type: ignore[no-untyped-def]
    twin = copy.deepcopy(run)
    twin.policy = {**twin.policy, "label": name}
    return twin


def many(result: RunResult, n: int, cheapest_last: bool = True) -> RunResult:
    """`n` runs with distinct context series and costs (copies of `clear`, shifted), the last the cheapest."""
    out = copy.deepcopy(result)
    base = out.runs[1]
    runs = [out.runs[0]]
    for k in range(1, n):
        run = renamed(base, f"p{k}")
        factor = Decimal(1) - Decimal(k) / Decimal(100) if cheapest_last else Decimal(1) + Decimal(k) / 100
        run.rows = [replace(r, context_tokens=r.context_tokens + 100 * k, cache_read_tokens=r.cache_read_tokens + k,
                            cost_usd=r.cost_usd * factor)
                    for r in run.rows]
        runs.append(run)
    out.runs = runs
    return _reload(out)


def _reload(result: RunResult) -> RunResult:
    """Through run.json, so totals follow the edited rows."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        result.save(path)
        return load_run(path)


def legend_texts(fig) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_runs_identical_to_none_are_one_line_with_their_names(result: RunResult, monkeypatch):
    twins = copy.deepcopy(result)
    twins.runs = [twins.runs[0], renamed(twins.runs[0], "tiered"), twins.runs[1], renamed(twins.runs[0], "zones")]
    fig = drawn("context", twins, monkeypatch)
    texts = legend_texts(fig)
    assert any(t.startswith("none = tiered = zones (identical)") for t in texts), texts
    ax = fig.get_axes()[0]
    series = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert len(series) == 2  # none (with its twins) and clear
    fig = drawn("cost", twins, monkeypatch)
    assert any(t.startswith("none = tiered = zones (identical)") for t in legend_texts(fig))


@pytest.mark.parametrize("chart", ["context", "cost", "pareto"])
def test_no_colour_repeats_within_a_chart(result: RunResult, monkeypatch, chart: str):
    from matplotlib.colors import to_hex

    from ctxsim.reports._plot import palette

    for n in (1, 7, 8, 13, 20, 21, 40):
        assert len(set(palette(n))) == n
    fig = drawn(chart, many(result, 13), monkeypatch)
    ax = fig.get_axes()[0]
    if chart == "pareto":
        colours = [to_hex(c.get_edgecolor()[0]) for c in ax.collections if len(c.get_offsets()) == 1]
        colours = [c for c in colours if c != "#000000"]  # the winner's star is outlined in black
        assert len(colours) >= 12
    else:  # context: small multiples past 6 lines, each panel's own line in colour, the others grey
        solid = [line for a in fig.get_axes() for line in a.get_lines()
                 if len(line.get_xdata()) > 2 and line.get_linestyle() == "-" and to_hex(line.get_color()) != "#d0d0d0"]
        colours = [to_hex(line.get_color()) for line in solid]
        assert len(colours) == 13
        if chart == "context":
            assert len([a for a in fig.get_axes() if a.get_visible()]) == 13
    assert len(set(colours)) == len(colours), colours


def test_the_cheapest_is_always_among_the_tokens_panels(result: RunResult, monkeypatch):
    crowded = many(result, 13)  # more distinct runs than panels; the last is the cheapest
    from ctxsim.reports._common import winner

    assert winner(crowded) == 12
    fig = drawn("tokens", crowded, monkeypatch)
    titles = [ax.get_title(loc="left") for ax in fig.get_axes() if ax.get_visible()]
    assert len(titles) == 8
    assert any(t.startswith("p12 ★ cheapest") for t in titles), titles
    assert titles[0].startswith("none")  # and the baseline
    assert any("8 of 13 distinct policies shown" in t for t in legend_texts(fig))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_composition_height_is_bounded(with_composition: Path):
    crowded = many(load_run(with_composition), 13)
    crowded.runs = list(crowded.runs)
    for run in crowded.runs[1:]:  # distinct compositions: shift one column
        if run.composition is not None:
            run.composition = Composition(run.composition.columns, run.composition.requests,
                                          [[v + int(run.policy["label"][1:]) for v in row[:1]] + row[1:]
                                           for row in run.composition.tokens])
    width, height = png_size(render("composition", crowded, "png"))
    assert width == 1100 and height <= 1300, (width, height)


def test_pareto_labels_do_not_overlap(result: RunResult, monkeypatch):
    from matplotlib.text import Text

    close = many(result, 9)
    fig = drawn("pareto", close, monkeypatch)
    ax = fig.get_axes()[0]
    fig.canvas.draw()
    boxes = [Text.get_window_extent(t) for t in ax.texts if t.get_text().isdigit()]  # the text, not its arrow
    assert len(boxes) == 9
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def test_overflowing_lines_are_clipped_near_the_window_and_marked(result: RunResult, monkeypatch):
    huge = copy.deepcopy(result)
    window = int(huge.manifest["window"])
    huge.runs[0].rows = [replace(r, context_tokens=r.context_tokens * 8) for r in huge.runs[0].rows]
    fig = drawn("context", huge, monkeypatch)
    ax = fig.get_axes()[0]
    assert ax.get_ylim()[1] <= window * 1.2  # the managed line is not flattened against a 1M axis
    assert any("beyond the window, cut off" in t.get_text() for t in ax.texts)
    assert any("clipped above the chart" in t for t in legend_texts(fig))


def test_thinning_is_bounded_deterministic_and_keeps_the_extremes():
    from ctxsim.reports._plot import thin

    xs = list(range(1, 20_001))
    ys = [(i * 7919) % 1000 for i in xs]
    ys[12_345] = 99_999
    tx, (ty,) = thin(xs, ys, most=2000)
    assert len(tx) <= 2000 and tx == sorted(tx) and max(ty) == 99_999 and min(ty) == 0
    assert thin(xs, ys, most=2000) == (tx, [ty])
    mx, (my,) = thin(xs, ys, most=500, how="mean")
    assert len(mx) <= 500 and abs(sum(my) * 40 - sum(ys)) < 1e-6 * sum(ys)
    short_x, (short_y,) = thin([1, 2, 3], [5, 6, 7])
    assert (short_x, short_y) == ([1, 2, 3], [5, 6, 7])


# ---------------------------------------------------------------- report.md as a PR comment
def main_table_of(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| policy"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def columns(line: str) -> int:
    return len(list(line.replace("\\|", "").strip().strip("|").split("|")))


def test_main_table_has_at_most_six_columns_and_details_below(result: RunResult):
    text = render("markdown", result, "md")
    table = main_table_of(text)
    assert all(columns(line) <= 6 for line in table), table
    assert text.index("| policy") < text.index("<summary>Every column")  # the wide table is folded below
    # none's cost re-derived from the run (the shipped trace records usage now, so outputs bill at their counts)
    assert f"| `none` | ${result.runs[0].totals.cost_usd:.2f} | — |" in text  # the cost with the trace's gaps


def test_images_use_the_base_url_or_are_left_out_with_a_note(tmp_path: Path, saved: Path):
    res = invoke("report", saved, "-o", tmp_path / "b", "--image-base-url", "https://ci.example/pr/7/")
    assert res.exit_code == 0, res.output
    text = (tmp_path / "b" / "report.md").read_text(encoding="utf-8")
    images = [line for line in text.splitlines() if line.startswith("![")]
    assert images and all("](https://ci.example/pr/7/" in line for line in images)
    res = invoke("report", saved, "-o", tmp_path / "c")
    text = (tmp_path / "c" / "report.md").read_text(encoding="utf-8")
    assert "![" not in text and "](" not in text
    assert "--image-base-url URL" in text and "`context.png`" in text
    alone = render("markdown", load_run(saved), "md")  # to stdout: no charts at all, and the note says so
    assert "![" not in alone and "Charts are not included" in alone
    bad = invoke("report", saved, "-o", tmp_path / "d", "--image-base-url", "https://x y/")
    assert bad.exit_code == 2 and "--image-base-url" in bad.stderr and not (tmp_path / "d").exists()


def test_a_saving_against_an_overflowing_baseline_says_so(result: RunResult):
    over = copy.deepcopy(result)
    window = int(over.manifest["window"])
    over.runs[0].rows = [replace(r, context_tokens=r.context_tokens + window) for r in over.runs[0].rows]
    over = _reload(over)
    verdict = next(line for line in render("markdown", over, "md").splitlines() if line.startswith("**Verdict"))
    assert "is the cheapest" in verdict and "−" in verdict
    assert "against a baseline that overflows" in verdict and "could not have happened" in verdict
    text = render("markdown", over, "md")
    assert "| ⚠️ " in text or "⚠️ 3" in text  # the overflowing peak is flagged in the table
    plain = next(line for line in render("markdown", result, "md").splitlines() if line.startswith("**Verdict"))
    assert "overflows" not in plain and "No policy passes the window minus the output reserve." in plain


def test_markdown_stays_under_the_comment_limit_on_a_long_trace(tmp_path: Path):
    """A 300-turn synthetic trace under four policies (the 2,400-turn one, scaled down to keep the test
    fast); the budget is checked at the real limit and at a limit scaled down with it."""
    from ctxsim.replay.api import Options as RunOptions
    from ctxsim.replay.api import replay_trace

    trace = tmp_path / "long.jsonl"
    assert invoke("synth", "--turns", "300", "--seed", "3", "-o", trace).exit_code == 0
    long = replay_trace(str(trace), ["none", "clear", "compact", "mask"], options=RunOptions(tokenizer="chars4"))
    text = render("markdown", long, "md")
    assert len(text) < 65_536
    small = render("markdown", long, "md", Options(limit=8_000))
    assert len(small) <= 8_000 and "Cut to fit a PR comment (8,000 characters)" in small
    assert all(columns(line) <= 6 for line in main_table_of(small))


# ---------------------------------------------------------------- the bundle
def v1_text(result: RunResult) -> str:
    """run.json as ctxsim.run/1 wrote it (one object per row and event)."""
    data = result.to_json()
    data["schema"] = "ctxsim.run/1"
    for out, run in zip(data["runs"], result.runs, strict=True):
        out["rows"] = [row.to_json() for row in run.rows]
        out["events"] = [event.to_json() for event in run.events]
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_old_run_json_is_still_read_by_report_and_diff(tmp_path: Path, result: RunResult):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(v1_text(result), encoding="utf-8")
    result.save(new)
    assert json.loads(new.read_text())["schema"] == "ctxsim.run/2"
    again = load_run(old)
    assert [r.rows for r in again.runs] == [r.rows for r in result.runs]
    assert [r.events for r in again.runs] == [r.events for r in result.runs]
    assert again.dumps() == new.read_text(encoding="utf-8")  # read old, written new
    assert len(new.read_bytes()) * 3 < len(old.read_bytes())  # columns: a fraction of the size
    res = invoke("report", old, "-f", "md")
    assert res.exit_code == 0 and "**Verdict:**" in res.stdout
    res = invoke("diff", old, new)
    assert res.exit_code == 0, res.output
    import gzip

    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(new.read_bytes(), mtime=0))
    assert load_run(packed).dumps() == new.read_text(encoding="utf-8")
    broken = tmp_path / "broken.json"
    data = json.loads(new.read_text())
    data["runs"][0]["rows"]["values"].pop()
    broken.write_text(json.dumps(data), encoding="utf-8")
    res = invoke("report", broken)
    assert res.exit_code == 2 and "not a valid ctxsim run artefact" in res.stderr


def test_same_run_same_bundle_bytes_and_a_progress_line(tmp_path: Path, result: RunResult, monkeypatch):
    from ctxsim.reports import _progress as progress

    tty = FakeTerminal()
    real = progress.progress_bar

    def on_a_terminal(total, description="replaying", **kwargs):  # type: ignore[no-untyped-def]
        return real(total, description, stream=tty, enabled=True, delay_s=0)

    monkeypatch.setattr(progress, "progress_bar", on_a_terminal)
    one = write_bundle(result, tmp_path / "one", image_base_url="https://ci.example/x/")
    assert "writing one/" in tty.getvalue()
    monkeypatch.setattr(progress, "progress_bar", real)
    two = write_bundle(result, tmp_path / "two", image_base_url="https://ci.example/x/")
    for p, q in zip(one, two, strict=True):
        if p.suffix != ".parquet":
            assert p.read_bytes() == q.read_bytes(), p.name
    assert "https://ci.example/x/context.png" in (tmp_path / "one" / "report.md").read_text(encoding="utf-8")
    for svg in (tmp_path / "one").glob("*.svg"):
        assert svg.stat().st_size < 2_000_000, svg.name
