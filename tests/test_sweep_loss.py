"""The sweep's loss columns (issue 16 from issue 13's meter): every cell metered, the columns equal a
direct metered replay of the same policy, per session and summed, identical on one process, a pool
and a Dask LocalCluster."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import native, read_traces
from ctxsim.loss import SCHEMA, TraceIndex, metered_run
from ctxsim.model import Message, Session, ToolCall, Trace
from ctxsim.policies.spec import resolve
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.replay.sweep import LOSS_SCHEMA
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

POLICIES = "clear,mask:keep=2,oracle"
BUDGET = "4000"
SPECS = {"none": "none", "clear": "clear:trigger=4000", "mask:keep=2": "mask:keep=2",
         "oracle": "oracle:budget=4000"}


def _session(sid: str, seed: int, turns: int) -> Session:
    """Reads whose names a later answer uses (1 to 6 reads back)."""
    rng = random.Random(seed)
    m = [Message("user", f"Audit package {sid}.")]
    for n in range(turns):
        m.append(Message("assistant", f"Reading {n}.",
                         tool_calls=(ToolCall(f"{sid}{n}", "read_file", {"path": f"src/{sid}/mod{n}.py"}),)))
        body = f"{sid}_value_{n} = {1000 + n}\n{sid}_limit_{n} = {5000 + n}"
        m.append(Message("tool", body + " filler" * rng.randint(100, 600), tool_call_id=f"{sid}{n}",
                         name="read_file"))
        if n >= 2 and n % 2 == 0:
            back = rng.randint(1, min(6, n))
            m.append(Message("assistant", f"Noted {sid}_value_{n - back} and {sid}_limit_{n - back}."))
            m.append(Message("user", "Go on."))
    m.append(Message("assistant", f"Done: {sid}_value_0 and {sid}_limit_1."))
    return Session(id=sid, system="You are an auditor.", messages=tuple(m), model="claude-sonnet-4-5",
                   provider="anthropic")


def _write(path: Path, trace: Trace) -> Path:
    with path.open("w", encoding="utf-8") as out:
        native.write(trace, out)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("loss-corpus")
    _write(root / "one.jsonl", Trace("one", (_session("alpha", 1, 12),)))
    _write(root / "two.jsonl", Trace("two", (_session("beta", 2, 10), _session("gamma", 3, 8))))  # two sessions
    return root


def _sweep(*args: str) -> str:
    result = CliRunner().invoke(app, ["sweep", *args, "--tokenizer", "chars4", "--no-calibrate"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _direct(path: Path, spec: str):  # type: ignore[no-untyped-def]
    trace = read_traces([str(path)])
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    return metered_run(replayer, resolve([spec])[0].policy, index=TraceIndex())


def test_the_loss_columns_equal_a_direct_metered_replay(corpus: Path) -> None:
    data = json.loads(_sweep(str(corpus), "--policies", POLICIES, "--budgets", BUDGET, "--json", "--per-session",
                             "-j", "1"))
    table = {r["policy"]: r for r in data["policies"]}
    sessions = {(r["policy"], r["session"]): r for r in data["sessions"]}
    assert set(table) == set(SPECS)
    for label, spec in SPECS.items():
        want = {"misses": 0, "distinct": 0, "refetches": 0, "refetch": Decimal(0), "cost": Decimal(0)}
        for path in sorted(corpus.glob("*.jsonl")):
            run = _direct(path, spec)
            loss = run.loss
            want["misses"] += loss.recall_misses
            want["refetches"] += len(loss.refetches)
            want["refetch"] += loss.refetch_cost_usd
            want["cost"] += run.totals.cost_usd + loss.refetch_cost_usd
            by_session: dict[str, set[str]] = {}
            for miss in loss.misses:
                by_session.setdefault(miss.session, set()).add(miss.identifier)
            want["distinct"] += sum(len(ids) for ids in by_session.values())
            for sid in (s.id for s in read_traces([str(path)]).sessions):  # each session's own columns
                row = sessions[(label, sid)]
                assert int(row["loss_recall_misses"]) == sum(1 for m in loss.misses if m.session == sid)
        got = table[label]
        assert int(got["loss_recall_misses"]) == want["misses"], label
        assert int(got["loss_distinct_identifiers"]) == want["distinct"], label
        assert int(got["loss_refetches"]) == want["refetches"], label
        assert Decimal(got["loss_refetch_cost_usd"]) == want["refetch"], label
        assert Decimal(got["loss_cost_with_refetch_usd"]) == want["cost"], label
        assert Decimal(got["loss_cost_with_refetch_usd"]) == Decimal(got["cost_usd"]) + want["refetch"]
    assert int(table["none"]["loss_recall_misses"]) == 0
    assert int(table["clear"]["loss_recall_misses"]) > 0 and Decimal(table["clear"]["loss_refetch_cost_usd"]) > 0
    assert int(table["oracle"]["loss_recall_misses"]) <= int(table["clear"]["loss_recall_misses"])
    manifest = data["manifest"]
    assert manifest["loss"]["schema"] == SCHEMA == LOSS_SCHEMA
    assert "re-fetch" in manifest["loss"]["refetch_assumption"]
    assert manifest["budget_params"]["oracle"] == "budget"


def test_the_terminal_table_shows_the_loss_columns_and_says_what_they_assume(corpus: Path) -> None:
    out = _sweep(str(corpus), "--policies", "clear", "--budgets", BUDGET, "-j", "1", "--per-session", "--wide")
    head = next(line for line in out.splitlines() if line.startswith("policy "))  # the table's header
    for column in ("misses", "distinct", "re-fetches", "re-fetch cost", "cost w/ re-fetch"):
        assert column in head
    assert "note: re-fetch estimate:" in out and "note: recall misses:" in out


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_one_process_a_pool_and_a_dask_cluster_agree_on_the_loss(corpus: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from test_sweep import _loopback_only

    args = [str(corpus), "--policies", POLICIES, "--budgets", BUDGET, "--per-session"]
    one = _sweep(*args, "-j", "1", "-o", str(tmp_path / "one"))
    pool = _sweep(*args, "-j", "2", "-o", str(tmp_path / "pool"))
    assert one == pool and _tree(tmp_path / "one") == _tree(tmp_path / "pool")
    _loopback_only(monkeypatch)
    dask = _sweep(*args, "--cluster", "local", "-o", str(tmp_path / "dask"))
    assert dask == pool and _tree(tmp_path / "dask") == _tree(tmp_path / "pool")
    summary = (tmp_path / "pool" / "summary.csv").read_text().splitlines()
    assert summary[0].endswith("loss_recall_misses,loss_distinct_identifiers,loss_refetches,loss_refetch_cost_usd,"
                               "loss_cost_with_refetch_usd")


def test_cells_swept_before_the_loss_columns_are_run_again(corpus: Path) -> None:
    """The loss rules are part of a cell's id: a resumed folder written without them does not mix in."""
    from ctxsim.replay.budgets import AS_WRITTEN
    from ctxsim.replay.sweep import PolicyEntry, cell_id

    entry = PolicyEntry("none", "none", {"name": "none", "params": {}}, False)
    key = cell_id("sha256:x", entry, AS_WRITTEN, {"a": 1}, "prices")
    from ctxsim.replay import sweep

    old = sweep.LOSS_SCHEMA
    try:
        sweep.LOSS_SCHEMA = "ctxsim.loss/0"
        assert cell_id("sha256:x", entry, AS_WRITTEN, {"a": 1}, "prices") != key
    finally:
        sweep.LOSS_SCHEMA = old


def test_no_loss_leaves_the_columns_out(corpus: Path) -> None:
    data = json.loads(_sweep(str(corpus), "--policies", "clear", "--budgets", BUDGET, "--json", "-j", "1",
                             "--no-loss"))
    assert not any(key.startswith("loss_") for key in data["policies"][0])
    assert data["manifest"]["loss"]["columns"] == []
