"""Runs on worker processes give the same artefact, byte for byte, as runs in-process."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim._support.parallel import MIN_PARALLEL_REQUESTS, available_cores, can_fork, plan_jobs, run_ordered
from ctxsim.cli import app
from ctxsim.errors import CtxsimError
from ctxsim.formats.native import write
from ctxsim.history import Edit, Splice
from ctxsim.policies import Context
from ctxsim.policies.spec import Choice, resolve
from ctxsim.replay.api import Options, replay_choices
from ctxsim.synth import synthesize

needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes need fork (Linux)")

SPECS = ["none", "clear:trigger=8000,keep=2", "compact:trigger=12000,summarizer=llm", "scored:budget=9000",
         "truncate", "mask", "ctxkit", "zones:window=16000"]


@pytest.fixture(scope="module")
def trace():  # type: ignore[no-untyped-def]
    return synthesize("coding", turns=60, seed=3)


@needs_fork
def test_workers_give_the_same_artefact_as_one_process(trace) -> None:  # type: ignore[no-untyped-def]
    alone = replay_choices(trace, "t.jsonl", resolve(SPECS), Options(jobs=1))
    shared = replay_choices(trace, "t.jsonl", resolve(SPECS), Options(jobs=2))
    assert [r.policy["label"] for r in shared.runs] == [c.label for c in resolve(SPECS)]
    assert any(row.kind == "summarize" for row in shared.runs[2].rows)  # the llm summaries came back too
    assert shared.dumps() == alone.dumps()


@needs_fork
def test_workers_with_several_providers_keep_the_order(trace) -> None:  # type: ignore[no-untyped-def]
    providers = ["anthropic", "openai:gpt-4.1"]
    alone = replay_choices(trace, "t.jsonl", resolve(SPECS[:3]), Options(jobs=1), providers)
    shared = replay_choices(trace, "t.jsonl", resolve(SPECS[:3]), Options(jobs=3), providers)
    assert [r.policy["label"] for r in shared.runs][3] == "none @ openai"
    assert shared.dumps() == alone.dumps()


@needs_fork
def test_progress_counts_every_request_once(trace) -> None:  # type: ignore[no-untyped-def]
    for jobs in (1, 2):
        seen: list[int] = []
        replay_choices(trace, "t.jsonl", resolve(SPECS[:4]), Options(jobs=jobs), progress=seen.append)
        assert sum(seen) == 4 * sum(s.requests for s in trace.sessions), jobs


class _Orphaner:
    """Drops the newest tool call but keeps its result: the engine must refuse it."""

    name = "orphaner"

    def decide(self, ctx: Context) -> Sequence[Edit]:
        holders = [it for it in ctx.history.items if it.message.tool_calls]
        if not holders:
            return ()
        return (Edit("drop", (Splice(holders[-1].pos, holders[-1].pos + 1),)),)


@needs_fork
def test_an_error_in_a_worker_reaches_the_caller(trace) -> None:  # type: ignore[no-untyped-def]
    choices = [*resolve(["none", "mask"]), Choice("orphaner", _Orphaner())]  # type: ignore[arg-type]
    with pytest.raises(CtxsimError, match="orphan its tool result"):
        replay_choices(trace, "t.jsonl", choices, Options(jobs=2))


def _square(i: int) -> int:
    if i == 3:
        raise CtxsimError("task 3 failed")
    return i * i


@needs_fork
def test_run_ordered_keeps_task_order_and_reports_each() -> None:
    done: list[int] = []
    squares = [i * i for i in range(7)]
    assert run_ordered(lambda i: i * i, 7, 2, lambda i, _: done.append(i), first=[6, 5, 0, 1, 2, 3, 4]) == squares
    assert sorted(done) == list(range(7))  # each reported once, as it arrived
    done.clear()
    assert run_ordered(lambda i: i * i, 7, 1, lambda i, _: done.append(i)) == squares
    assert done == list(range(7))  # in-process: in task order
    with pytest.raises(CtxsimError, match="task 3 failed"):
        run_ordered(_square, 5, 2)


def test_heavier_policies_are_handed_out_first() -> None:
    from ctxsim.replay.plan import replay_weight

    weights = {c.label: replay_weight(c.policy) for c in resolve(["none", "scored", "clear", "ctxkit"])}
    assert weights["none"] == 1.0
    assert weights["scored"] > weights["clear"] > weights["none"]
    assert weights["ctxkit"] > weights["clear"]  # a pipeline weighs its stages together


_PARENT = os.getpid()


def _dies_in_a_worker(i: int) -> int:
    if os.getpid() != _PARENT:
        os._exit(3)  # as a worker killed by the system would: no result, no error
    time.sleep(0.05)  # the worker takes a task meanwhile
    return i


@needs_fork
def test_a_worker_that_dies_is_an_error_not_a_hang() -> None:
    with pytest.raises(CtxsimError, match=r"worker process ended without its results \(exit codes 3\)"):
        run_ordered(_dies_in_a_worker, 4, 2)


@needs_fork
def test_no_files_are_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert run_ordered(lambda i: [i] * 1000, 6, 2) == [[i] * 1000 for i in range(6)]
    with pytest.raises(CtxsimError):
        run_ordered(_square, 5, 2)
    with pytest.raises(CtxsimError):
        run_ordered(_dies_in_a_worker, 4, 2)
    assert list(tmp_path.iterdir()) == []


def test_plan_jobs() -> None:
    assert plan_jobs(None, 8, MIN_PARALLEL_REQUESTS - 1) == 1  # small work: workers cost more than they save
    assert plan_jobs(None, 1, 10 * MIN_PARALLEL_REQUESTS) == 1  # one run: nothing to share
    assert plan_jobs(1, 8, 10 * MIN_PARALLEL_REQUESTS) == 1
    if can_fork():
        assert plan_jobs(4, 3, 10) == 3  # never more workers than runs
        assert plan_jobs(None, 8, 10 * MIN_PARALLEL_REQUESTS) >= 1


def test_jobs_below_one_is_refused(tmp_path: Path, trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write(trace, out)
    res = CliRunner().invoke(app, ["compare", str(path), "--policies", "clear", "-j", "0"])
    assert res.exit_code == 2
    assert "--jobs must be at least 1" in res.output


@needs_fork
def test_a_big_batch_is_counted_on_several_processes_with_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctxsim.tokens.bpe as bpe
    from ctxsim.tokens import get_tokenizer

    tokenizer = get_tokenizer("o200k_base")
    texts = [f"line {i}: Traceback (most recent call last) é {'x' * (i % 37)} <|endoftext|>" for i in range(301)]
    one_by_one = [len(tokenizer._encoding.encode_ordinary(t)) for t in texts]  # type: ignore[attr-defined]
    jobs: list[int] = []

    def recorded(task, count, n, *rest):  # type: ignore[no-untyped-def]
        jobs.append(n)
        return run_ordered(task, count, n, *rest)

    monkeypatch.setattr(bpe, "run_ordered", recorded)
    monkeypatch.setattr(bpe, "PARALLEL_CHARS", 1)
    assert tokenizer.count_batch(texts) == one_by_one
    assert jobs and jobs[0] >= 2  # it did go to a second process
    assert tokenizer.count_batch(texts[:1]) == one_by_one[:1]  # one text: counted here
    assert jobs == jobs[:1]
    monkeypatch.setattr(bpe, "PARALLEL_CHARS", 10**9)
    assert tokenizer.count_batch(texts) == one_by_one and len(jobs) == 1  # small: no process started


def _counts_in_a_worker(i: int) -> list[int]:
    from ctxsim.tokens import get_tokenizer

    return get_tokenizer("o200k_base").count_batch([f"text {i} " * k for k in range(1, 40)])


@needs_fork
def test_a_task_may_share_out_work_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # A run's policy counts a big batch: here it is shared out again (a run_ordered inside a task),
    # in a worker (a daemon process, which may not start others) it is counted in place; the
    # outer tasks go on either way.
    import ctxsim.tokens.bpe as bpe

    monkeypatch.setattr(bpe, "PARALLEL_CHARS", 1)
    assert run_ordered(_counts_in_a_worker, 5, 2) == [_counts_in_a_worker(i) for i in range(5)]


def test_a_run_from_a_worker_stays_packed_until_its_rows_are_read(trace) -> None:  # type: ignore[no-untyped-def]
    import pickle

    run = replay_choices(trace, "t.jsonl", resolve(["clear:trigger=8000,keep=2"]), Options(jobs=1)).runs[0]
    came = pickle.loads(pickle.dumps(run))
    assert came._packed is not None and came.totals == run.totals  # a compare table needs no more
    assert came.events == run.events and came.rows == run.rows and came._packed is None
    again = pickle.loads(pickle.dumps(run))
    again.events = []  # setting a field unpacks the other one first
    assert again.rows == run.rows and again.events == []


def test_gc_pause_leaves_cycles_collectable_and_frozen_objects_frozen() -> None:
    import gc
    import weakref

    from ctxsim._support.collector import gc_paused

    class Node:
        pass

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle only the collector can free
        gone = weakref.ref(a)
        del a, b
        assert gone() is not None
    assert gc.isenabled() and gc.get_count()[0] < 100  # what the block made was not left to scan
    gc.collect()
    assert gone() is None  # moved to the oldest generation, not out of the collector's reach
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            [Node() for _ in range(10)]
        assert gc.get_freeze_count() == frozen  # the caller's frozen objects stay frozen
    finally:
        gc.unfreeze()


@needs_fork
def test_one_job_keeps_counting_in_one_process_too(  # type: ignore[no-untyped-def]
        trace, monkeypatch: pytest.MonkeyPatch) -> None:
    import ctxsim.tokens.bpe as bpe

    shares: list[int] = []

    def recorded(task, count, n, *rest):  # type: ignore[no-untyped-def]
        shares.append(n)
        return run_ordered(task, count, n, *rest)

    monkeypatch.setattr(bpe, "run_ordered", recorded)
    monkeypatch.setattr(bpe, "PARALLEL_CHARS", 1)  # every batch is big enough to share out
    alone = replay_choices(trace, "t.jsonl", resolve(SPECS[:2]), Options(jobs=1))
    assert shares == []  # -j 1: the trace was counted here, in one process
    shared = replay_choices(trace, "t.jsonl", resolve(SPECS[:2]), Options(jobs=2))
    assert set(shares) == (set() if available_cores() == 1 else {2})  # at most the two jobs asked for
    assert shared.dumps() == alone.dumps()


@needs_fork
def test_a_worker_that_cannot_start_leaves_the_work_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing.process

    def refuse(self):  # type: ignore[no-untyped-def]
        raise BlockingIOError(11, "Resource temporarily unavailable")  # what fork says at a process limit

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    done: list[int] = []
    assert run_ordered(lambda i: i * 3, 5, 2, lambda i, _: done.append(i)) == [0, 3, 6, 9, 12]
    assert sorted(done) == list(range(5))


def _pid_and(value: int) -> tuple[int, int]:
    return os.getpid(), value * 2


def _fails() -> int:
    raise CtxsimError("the index could not be built")


def _dies() -> int:
    os._exit(5)


@needs_fork
def test_work_aside_runs_in_another_process_and_only_its_result_travels() -> None:
    from ctxsim._support.parallel import aside

    result = aside(lambda: _pid_and(21), 2)
    pid, value = result()
    assert value == 42 and pid != os.getpid()
    asked: list[int] = []
    alone = aside(lambda: asked.append(1) or _pid_and(1), 1)  # one job: nothing forked, done when asked for
    assert asked == []
    assert alone() == (os.getpid(), 2) and asked == [1]


@needs_fork
def test_work_aside_that_fails_or_dies_is_an_error_here_not_a_hang(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from ctxsim._support.parallel import aside

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(CtxsimError, match="could not be built"):
        aside(_fails, 2)()
    with pytest.raises(CtxsimError, match=r"exit codes 5"):
        aside(_dies, 2)()
    assert list(tmp_path.iterdir()) == []


@needs_fork
def test_a_loss_metered_compare_on_workers_builds_its_index_aside_with_the_same_artefact(
        trace, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import ctxsim.replay.choices
    from ctxsim._support import parallel

    alone = replay_choices(trace, "t.jsonl", resolve(SPECS), Options(jobs=1, loss=True))
    asides: list[int] = []

    def counted(work, jobs):  # type: ignore[no-untyped-def]
        asides.append(jobs)
        return parallel.aside(work, jobs)

    monkeypatch.setattr(ctxsim.replay.choices, "aside", counted)
    shared = replay_choices(trace, "t.jsonl", resolve(SPECS), Options(jobs=2, loss=True))
    assert asides == [2]
    assert any(run.loss.recall_misses for run in shared.runs)  # type: ignore[union-attr]
    assert shared.dumps() == alone.dumps()


def _slow() -> int:
    time.sleep(0.6)
    return 7


@needs_fork
def test_work_aside_holds_a_process_of_the_cap_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`-j N` keeps to N processes at work: what is shared out under a cap beside an aside's work takes one
    process fewer."""
    from ctxsim._support import parallel
    from ctxsim._support.parallel import aside, at_most, plan_share

    monkeypatch.setattr(parallel, "available_cores", lambda: 4)
    assert plan_share(8) == 4
    with at_most(3):
        result = aside(_slow, 3)
        assert plan_share(8) == 2  # this process, one more and the aside one: the cap of 3
        with at_most(2):
            assert plan_share(8) == 1
        assert result() == 7
        assert plan_share(8) == 3  # the aside one ended: its process is free again
    result = aside(_slow, 4)
    assert plan_share(8) == 4  # no cap: one per core, the aside one beside them for the while
    assert result() == 7
