"""Run independent replays on several cores.

A compare replays one trace under many policies; the runs share nothing but the
trace and its token counts, which the parent has already computed. On Linux the
runs are handed to forked worker processes: each inherits the parsed trace and
the primed token memo by copy-on-write, so nothing is re-read or re-tokenized,
and only the finished runs travel back (pickled). Results come back in task
order, so the output does not depend on how many workers ran them.

Elsewhere (macOS, Windows: no safe `fork`), or for small jobs where starting
workers costs more than it saves, the runs go one after the other in-process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# Below this many metered requests in all the runs together, workers cost more than they save.
MIN_PARALLEL_REQUESTS = 5_000

_task: Callable[[int], object] | None = None  # what the forked workers run (set just before forking)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def plan_jobs(jobs: int | None, tasks: int, work_requests: int) -> int:
    """How many workers: `jobs` if given (1 = in-process), else one per core for big enough work."""
    if tasks <= 1 or not can_fork():
        return 1
    if jobs is not None:
        return max(1, min(jobs, tasks))
    if work_requests < MIN_PARALLEL_REQUESTS:
        return 1
    return max(1, min(available_cores(), tasks))


def _run(index: int) -> tuple[int, object]:
    assert _task is not None
    return index, _task(index)


def run_ordered(task: Callable[[int], T], count: int, jobs: int,
                done: Callable[[int, T], None] | None = None, first: Sequence[int] | None = None) -> list[T]:
    """`task(0) .. task(count - 1)` on `jobs` workers; the results in task order.

    `done(i, result)` is called as each result arrives. With workers, tasks are handed out in the
    order `first` gives (the heaviest first, so that no long task starts last and runs alone).
    """
    if jobs <= 1:
        results: list[T] = []
        for i in range(count):
            results.append(task(i))
            if done is not None:
                done(i, results[-1])
        return results
    global _task
    _task = task
    arrived: dict[int, T] = {}
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for i, result in pool.imap_unordered(_run, first or range(count), chunksize=1):
                arrived[i] = result
                if done is not None:
                    done(i, result)
    finally:
        _task = None
    return [arrived[i] for i in range(count)]


__all__: Sequence[str] = ["available_cores", "can_fork", "plan_jobs", "run_ordered", "MIN_PARALLEL_REQUESTS"]
