"""`ctxsim sweep` and the corpus `compare`: traces x policies x budgets, resumable, on a pool or Dask."""

from __future__ import annotations

import _socket
import dataclasses
import json
import socket
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import CtxsimError
from ctxsim.formats import native
from ctxsim.model import Trace, Usage
from ctxsim.replay.budgets import Budget, parse_budgets
from ctxsim.synth import synthesize

WINDOW = 40_000  # small, so that some sessions pass window - reserve (20,000) under `none`
POLICIES = "clear,compact,truncate"
BUDGETS = "12k,50%"
# the explicit specs a budget stands for (module docstring of ctxsim.replay.sweep), written out by hand
EXPLICIT = {
    ("none", "-"): "none",
    ("clear", "12k"): "clear:trigger=12000",
    ("clear", "50%"): "clear:trigger=20000",
    ("compact", "12k"): "compact:trigger=12000,compact_above=12000",
    ("compact", "50%"): "compact:trigger=20000,compact_above=20000",
    ("truncate", "-"): "truncate",
}


def _write(path: Path, trace: Trace) -> Path:
    with path.open("w", encoding="utf-8") as out:
        native.write(trace, out)
    return path


def _with_usage(trace: Trace) -> Trace:
    """A session whose every request recorded usage (synth writes none), for the recorded bill."""
    session = trace.sessions[0]
    messages = tuple(dataclasses.replace(m, usage=Usage(input_tokens=2_000 + 100 * i, cache_read_tokens=1_500,
                                                        output_tokens=50))
                     if m.role == "assistant" else m for i, m in enumerate(session.messages))
    return Trace(trace.name, (dataclasses.replace(session, messages=messages),), trace.digest)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "team" / "a").mkdir(parents=True)
    (root / "team" / "b").mkdir(parents=True)
    _write(root / "team" / "a" / "s1.jsonl", synthesize("coding", turns=10, seed=1))
    _write(root / "team" / "a" / "s2.jsonl", synthesize("coding", turns=16, seed=2))
    _write(root / "team" / "b" / "s3.jsonl", _with_usage(synthesize("coding", turns=13, seed=3)))
    two = Trace("two", (synthesize("coding", turns=12, seed=4).sessions[0],
                        dataclasses.replace(synthesize("coding", turns=9, seed=5).sessions[0], id="second")))
    _write(root / "team" / "b" / "two-sessions.jsonl", two)  # one file, two sessions
    (root / "team" / "notes.txt").write_text("not a trace\n", encoding="utf-8")  # skipped by the folder scan
    return root / "team"


def _sweep(*args: str) -> tuple[str, str]:
    result = CliRunner().invoke(app, ["sweep", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_budgets_parse_absolute_and_fractions():
    assert parse_budgets(None) == [Budget("-")]
    b = parse_budgets("50k, 120000,60%,0.25")
    assert [x.label for x in b] == ["50k", "120000", "60%", "0.25"]
    assert [x.resolve(200_000) for x in b] == [50_000, 120_000, 120_000, 50_000]
    for bad in ("lots", "0%", "150%", "50k,50k", "-5"):
        with pytest.raises(CtxsimError, match="--budgets"):
            parse_budgets(bad)


def test_table_equals_separate_compares_of_each_trace(corpus: Path, tmp_path: Path):
    """The sweep's corpus table against an independent path: one `compare` per trace and explicit spec."""
    out, _ = _sweep(str(corpus), "--policies", POLICIES, "--budgets", BUDGETS, "--window", str(WINDOW), "--json",
                    "-j", "1")
    table = {(r["policy"], r["budget"]): r for r in json.loads(out)["policies"]}
    assert set(table) == set(EXPLICIT)  # truncate has no token threshold: one row, budget "-"
    traces = sorted(str(p) for p in corpus.rglob("*.jsonl"))
    runner = CliRunner()
    expected = {key: {"cost": Decimal(0), "over": 0, "sessions": 0, "requests": 0} for key in EXPLICIT}
    none_cost = Decimal(0)
    for n, trace in enumerate(traces):
        run_file = tmp_path / f"run{n}.json"
        specs = ",".join(EXPLICIT[k] for k in EXPLICIT if k[0] != "none")
        done = runner.invoke(app, ["compare", trace, "--policies", specs, "--window", str(WINDOW), "-j", "1",
                                   "-o", str(run_file)])
        assert done.exit_code == 0, done.output
        from ctxsim.replay.run import RunResult

        runs = {r.policy["label"]: r for r in RunResult.load(run_file).runs}  # any schema the artefact has
        for key, spec in EXPLICIT.items():
            run = runs[spec]
            expected[key]["cost"] += run.totals.cost_usd
            expected[key]["requests"] += run.totals.requests
            peaks: dict[str, int] = {}
            for row in run.rows:
                if row.kind == "request":
                    peaks[row.session] = max(peaks.get(row.session, 0), row.context_tokens)
            expected[key]["sessions"] += len(peaks)
            expected[key]["over"] += sum(1 for p in peaks.values() if p > WINDOW - 20_000)
        none_cost += runs["none"].totals.cost_usd
    for key, want in expected.items():
        got = table[key]
        assert Decimal(got["cost_usd"]) == want["cost"], key
        assert int(got["requests"]) == want["requests"] and int(got["sessions"]) == want["sessions"] == 5
        assert int(got["sessions_over_window"]) == want["over"], key
        assert Decimal(got["saving_usd"]) == none_cost - want["cost"]
    assert int(table[("none", "-")]["sessions_over_window"]) > 0  # the check above is not vacuous
    assert int(table[("clear", "12k")]["sessions_over_window"]) < int(table[("none", "-")]["sessions_over_window"])


def test_recorded_bill_beside_the_replay(corpus: Path):
    from ctxsim.analysis.inspect import inspect_trace
    from ctxsim.formats import read_trace

    out, _ = _sweep(str(corpus), "--policies", "clear", "-j", "1")
    billed = inspect_trace(read_trace(str(corpus / "b" / "s3.jsonl"))).totals.cost_usd
    assert billed > 0
    from ctxsim.commands.sweep import _money

    assert (f"note: recorded bill of the 1 of 5 session(s) whose logged usage is all priced: "
            f"{_money(str(billed))};") in out


def test_output_dataset_manifest_and_resume(corpus: Path, tmp_path: Path):
    import pyarrow.parquet as pq

    out_dir = tmp_path / "sweep"
    args = [str(corpus), "--policies", POLICIES, "--budgets", BUDGETS, "--window", str(WINDOW), "-j", "1",
            "--per-session", "-o", str(out_dir)]
    first, _ = _sweep(*args)
    files = sorted((out_dir / "cells").rglob("*.parquet"))
    assert len(files) == 4  # one per trace file: its 6 cells' rows
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == sorted(str(p) for p in corpus.rglob("*.jsonl"))
    assert all(i["digest"].startswith("sha256:") for i in manifest["inputs"])
    assert manifest["left_out"] == [{"path": str(corpus / "notes.txt"), "why": "not a trace format ctxsim reads"}]
    clear = next(p for p in manifest["policies"] if p["label"] == "clear")
    assert clear["cells"]["12k"]["trigger"] == 12_000 and clear["takes_budget"]
    assert manifest["prices"] and manifest["ctxsim_version"]
    # the dataset: per-request rows, partitioned by trace; its costs add up to the table's
    rows = pq.read_table(out_dir / "cells").to_pandas()
    assert rows["trace"].nunique() == 4
    summary = {(r["policy"], r["budget"]): r for r in _csv(out_dir / "summary.csv")}
    for (policy, budget), r in summary.items():
        part = rows[(rows.policy == policy) & (rows.budget == budget)]
        assert sum(part.cost_usd, Decimal(0)) == Decimal(r["cost_usd"])
    assert "per session" in first and first.count("second") == len(EXPLICIT)  # the file's 2nd session, per cell
    before = _tree(out_dir)
    stamps = {p: p.stat().st_mtime_ns for p in files}
    # a second run: every cell skipped, identical output, no cell file rewritten
    again, err = _sweep(*args)
    assert f"{4 * len(EXPLICIT)} cell(s) already in {out_dir}: skipped" in err
    assert f"note: 1 file(s) in the folders left out: {corpus / 'notes.txt'} (not a trace" in err
    assert again == first and _tree(out_dir) == before
    assert all(p.stat().st_mtime_ns == stamps[p] for p in files)
    # a half-done output (a crash): a trace's file missing, another cut short; completed to the same bytes
    files[0].unlink()
    files[1].write_bytes(files[1].read_bytes()[:100])
    again, err = _sweep(*args)
    assert f"{2 * len(EXPLICIT)} cell(s) already in {out_dir}: skipped" in err
    assert again == first and _tree(out_dir) == before
    # a policy added later: only its cells run, in a file of their own; the others are read back
    more, err = _sweep(*args[:2], POLICIES + ",mask", *args[3:])
    assert f"{4 * len(EXPLICIT)} cell(s) already in {out_dir}: skipped" in err
    assert len(list((out_dir / "cells").rglob("*.parquet"))) == 8
    fresh, _ = _sweep(*args[:2], POLICIES + ",mask", *args[3:-1], str(tmp_path / "fresh"))
    assert more == fresh


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_process_pool_equals_one_process(corpus: Path, tmp_path: Path):
    args = [str(corpus / "*" / "*.jsonl"), "--policies", POLICIES + ",claude-code", "--budgets", BUDGETS,
            "--per-session"]
    one, _ = _sweep(*args, "-j", "1", "-o", str(tmp_path / "one"))
    pool, _ = _sweep(*args, "-j", "2", "-o", str(tmp_path / "pool"))
    assert one == pool
    assert _tree(tmp_path / "one") == _tree(tmp_path / "pool")


def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite refuses every connection; a LocalCluster talks over 127.0.0.1: allow that alone."""
    original = _socket.socket.connect

    def connect(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError("network disabled in tests")
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, a: connect(self, a) or 0)


def test_dask_local_cluster_equals_the_process_pool(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A real LocalCluster (2 worker processes): byte-identical tables and dataset to the process pool."""
    _loopback_only(monkeypatch)
    args = [str(corpus), "--policies", "clear,compact", "--budgets", "12k,50%", "--window", str(WINDOW),
            "--per-session"]
    pool, _ = _sweep(*args, "-j", "2", "-o", str(tmp_path / "pool"))
    dask, _ = _sweep(*args, "--cluster", "local", "-o", str(tmp_path / "dask"))
    assert dask == pool
    assert _tree(tmp_path / "dask") == _tree(tmp_path / "pool")
    assert len(list((tmp_path / "dask" / "cells").rglob("*.parquet"))) == 4


def test_compare_of_several_traces_is_a_corpus_compare(corpus: Path):
    """`compare DIR` / several files: the sweep's table with the policies as written; one file: unchanged."""
    runner = CliRunner()
    corpus_out = runner.invoke(app, ["compare", str(corpus), "--policies", "clear,compact", "-j", "1"])
    assert corpus_out.exit_code == 0, corpus_out.output
    swept, _ = _sweep(str(corpus), "--policies", "clear,compact", "-j", "1")
    assert corpus_out.stdout == swept and "policies across 4 trace(s)" in swept
    files = sorted(str(p) for p in corpus.rglob("*.jsonl"))
    listed = runner.invoke(app, ["compare", *files, "--policies", "clear,compact", "-j", "1"])
    assert listed.stdout == swept
    one_glob = runner.invoke(app, ["compare", files[0].replace(".jsonl", ".json*"), "--policies", "clear", "-j", "1"])
    assert one_glob.exit_code == 0 and "policies across 1 trace(s)" in one_glob.stdout  # a glob: a corpus of one
    single = runner.invoke(app, ["compare", files[0], "--policies", "clear", "-j", "1"])
    assert single.exit_code == 0 and "policies compared" in single.stdout  # the one-trace table


def test_bad_input_is_one_line_exit_2(corpus: Path, tmp_path: Path):
    runner = CliRunner()
    cases = [
        (["sweep", str(corpus), "--budgets", "lots"], "--budgets: 'lots'"),
        (["sweep", str(tmp_path / "nothing-here")], "no such file or directory"),
        (["sweep", str(tmp_path / "*.jsonl")], "no file matches this pattern"),
        (["sweep", str(corpus), "--policies", "clear:keep=lots"], "'keep' must be int"),
        (["sweep", str(corpus), "-o", str(corpus / "a")], "not empty and not a sweep output"),
        (["sweep", str(corpus), "-j", "0"], "--jobs must be at least 1"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output
    inside = tmp_path / "out"
    inside.mkdir()
    (inside / "t.jsonl").write_bytes((corpus / "a" / "s1.jsonl").read_bytes())
    result = runner.invoke(app, ["sweep", str(inside), "-o", str(inside)])
    assert result.exit_code == 2 and "not empty and not a sweep output" in result.stderr
    assert (inside / "t.jsonl").read_bytes() == (corpus / "a" / "s1.jsonl").read_bytes()  # input untouched


def test_a_trace_that_changes_is_an_error_not_a_wrong_cell(corpus: Path, tmp_path: Path):
    from ctxsim.replay.api import Options
    from ctxsim.replay.sweep import execute, plan

    trace = tmp_path / "t.jsonl"
    trace.write_bytes((corpus / "a" / "s1.jsonl").read_bytes())
    p = plan([str(trace)], ["clear"], parse_budgets(None), Options(jobs=1), None, str(tmp_path / "out"))
    _write(trace, synthesize("coding", turns=5, seed=9))  # rewritten between planning and running
    with pytest.raises(CtxsimError, match="changed while the sweep ran"):
        execute(p, 1)
    assert not (tmp_path / "out" / "cells").exists()  # nothing written for it


def test_a_budget_sets_each_familys_threshold_in_a_fresh_policy():
    from ctxsim.policies import effective
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.budgets import takes_budget, with_budget

    pipeline = resolve(["clear:trigger=155000,keep=3+compact:headroom_tokens=45000,summarizer=llm"])[0].policy
    before = effective(pipeline)
    clear, compact = effective(with_budget(pipeline, 40_000))["stages"]
    assert clear["params"]["trigger"] == 40_000 and clear["params"]["keep"] == 3  # the rest as the pipeline has it
    assert (compact["params"]["trigger"], compact["params"]["compact_above"]) == (40_000, 40_000)
    assert compact["params"]["headroom_tokens"] is None and compact["params"]["summarizer"] == "llm"
    assert effective(pipeline) == before  # a fresh policy: the resolved one is untouched
    # a preset's stage too: claude-code's compaction at the budget, its summary size and the rest as it has them
    preset = effective(with_budget(resolve(["claude-code"])[0].policy, 40_000))["params"]
    assert (preset["trigger"], preset["headroom_tokens"], preset["summary_tokens"]) == (40_000, None, 5_258)
    assert effective(with_budget(resolve(["scored"])[0].policy, 9_000))["params"]["budget"] == 9_000
    assert effective(with_budget(resolve(["zones"])[0].policy, 9_000))["params"]["window"] == 9_000
    assert effective(with_budget(resolve(["tiered"])[0].policy, 9_000))["params"]["max_context_tokens"] == 9_000
    for spec in ("none", "truncate", "mask", "recent", "clear:trigger_type=tool_uses,trigger=5"):
        assert not takes_budget(resolve([spec])[0].policy), spec
    with pytest.raises(CtxsimError, match="server_compact at a budget of 40,000 tokens: trigger must be at least"):
        with_budget(resolve(["server_compact"])[0].policy, 40_000)


def test_an_impossible_budget_fails_before_any_work(corpus: Path, tmp_path: Path):
    result = CliRunner().invoke(app, ["sweep", str(corpus), "--policies", "server_compact", "--budgets", "40k",
                                      "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "trigger must be at least 50,000" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_broken_line_stops_the_sweep_with_file_and_line_and_keeps_what_was_done(corpus: Path, tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("s1", "s2"):
        (folder / f"{name}.jsonl").write_bytes((corpus / "a" / f"{name}.jsonl").read_bytes())
    broken = folder / "zz-broken.jsonl"  # sorted last, so the others are done first on one process
    broken.write_bytes((corpus / "a" / "s1.jsonl").read_bytes() + b'{"type": "message", "role": \n')
    lines = broken.read_bytes().count(b"\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["sweep", str(folder), "--policies", "clear", "-j", "1", "-o", str(out)])
    assert result.exit_code == 2 and f"{broken}:{lines}: broken JSON" in result.stderr
    assert len(list((out / "cells").rglob("*.parquet"))) == 2 and not (out / "summary.csv").exists()
    assert json.loads((out / "manifest.json").read_text())["complete"] is False
    broken.write_bytes((corpus / "a" / "s1.jsonl").read_bytes().replace(b'"id": "', b'"id": "fixed-', 1))
    again, err = _sweep(str(folder), "--policies", "clear", "-j", "1", "-o", str(out))
    assert "4 cell(s) already in" in err and "policies across 3 trace(s)" in again  # the 2 done traces' 4 cells
    assert "complete" not in json.loads((out / "manifest.json").read_text())
