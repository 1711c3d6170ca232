"""Run independent replays on several cores.

A compare replays one trace under many policies; the runs share nothing but the
trace and its token counts, which the parent has already computed. On Linux the
parent forks worker processes and works alongside them: each worker inherits the
parsed trace and the primed token memo by copy-on-write, so nothing is re-read
or re-tokenized, and only the runs a worker finished travel back (pickled into
the worker's own anonymous temporary file, which has no name on disk, so
nothing is left behind whatever ends the run, SIGKILL included). Results come
back in task order, so the output does not depend on how many processes ran
them. A worker ignores SIGINT (the parent, interrupted, ends it) and dies with
its parent (Linux PR_SET_PDEATHSIG), so a killed parent leaves no worker running.

Elsewhere (macOS, Windows: no safe `fork`), or for small jobs where starting
workers costs more than it saves, the runs go one after the other in-process.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ctxsim.errors import CtxsimError

T = TypeVar("T")

# Below this many metered requests in all the runs together, a worker costs more than it saves
# (measured: even at about 1,000, ahead from about 2,000).
MIN_PARALLEL_REQUESTS = 1_500

_task: Callable[[int], Any] | None = None  # what the forked workers run (set just before forking)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Linux, and not inside a worker (a worker is a daemon process, which may not start others)."""
    return (sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)


_cap: int | None = None  # `--jobs` of the command under way: at most this many processes for anything


@contextmanager
def at_most(jobs: int | None) -> Iterator[None]:
    """At most `jobs` processes (this one included) for all the work inside: runs and counting
    alike, so that `-j 1` keeps a command in one process. None: one per core, as usual."""
    global _cap
    outer = _cap
    if jobs is not None:
        _cap = jobs if outer is None else min(jobs, outer)
    try:
        yield
    finally:
        _cap = outer


_asides: list[Any] = []  # processes `aside` started, while they run: each takes one of the cap's processes


def _busy() -> int:
    """How many processes `aside` started are still at work (those that ended are forgotten)."""
    _asides[:] = [process for process in _asides if process.is_alive()]
    return len(_asides)


def plan_share(tasks: int) -> int:
    """How many processes share out `tasks` pieces of work already worth it: one per core, within
    the cap `at_most` set, never more than the pieces; a process `aside` started and still at work
    takes one of the cap's (this one is always counted)."""
    if tasks <= 1 or not can_fork():
        return 1
    limit = available_cores()
    if _cap is not None:
        limit = min(limit, _cap - _busy())
    return max(1, min(limit, tasks))


def plan_jobs(jobs: int | None, tasks: int, work_requests: int) -> int:
    """How many processes run the runs (this one included): `jobs` if given (1: this one alone),
    else one per core when the work is big enough to gain from it."""
    if jobs is not None:
        return max(1, min(jobs, tasks)) if tasks > 1 and can_fork() else 1
    return plan_share(tasks) if work_requests >= MIN_PARALLEL_REQUESTS else 1


def _take(order: Sequence[int], cursor: Any) -> int | None:
    """The next task to run, or None when all are taken (`cursor` is shared by all processes)."""
    with cursor.get_lock():
        at: int = cursor.value
        if at >= len(order):
            return None
        cursor.value = at + 1
    return order[at]


class _Channel:
    """Workers to this process: each result appended to the worker's own temporary file, a short
    note of it (file, offset, size) on a pipe.

    A worker writes its finished run to its file (page cache, no pipe to fill) and goes on with
    the next task; the note on the pipe is a few bytes, so a worker never waits for this process
    to read. This process loads a run when it gets to it (pread: the files' offsets are the
    workers'). The files are opened here before the fork and have no name (O_TMPFILE, or unlinked
    at once where that is missing): the system frees them when the last process holding them ends.
    """

    def __init__(self, context: Any, workers: int) -> None:
        self.reader, self.writer = context.Pipe(duplex=False)
        self.lock = context.Lock()  # one note at a time on the pipe
        self.files = []
        try:
            for _ in range(workers):
                self.files.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed in close()
        except BaseException:
            self.close()
            raise
        self._slot = -1  # in a worker: which file is its own
        self._out: Any = None

    def attach(self, slot: int) -> None:
        """In a worker: write to file `slot` from now on."""
        self._slot = slot
        self._out = os.fdopen(os.dup(self.files[slot].fileno()), "wb")

    def close(self) -> None:
        for handle in self.files:
            handle.close()
        self.reader.close()
        self.writer.close()

    def send(self, index: int, result: object) -> None:
        at = self._out.tell()
        pickle.dump(result, self._out, pickle.HIGHEST_PROTOCOL)
        self._out.flush()
        self._note((index, True, (self._slot, at, self._out.tell() - at)))

    def fail(self, index: int, error: BaseException) -> None:
        self._note((index, False, error))

    def _note(self, note: tuple[int, bool, object]) -> None:
        with self.lock:
            self.writer.send(note)

    def receive(self, workers: Sequence[Any]) -> tuple[int, Any]:  # Any: what the task returned, unpickled
        """The next result a worker sent; its error raised here; never a hang when a worker died."""
        while not self.reader.poll(0.2):
            if all(not w.is_alive() for w in workers) and not self.reader.poll(0):
                codes = ", ".join(str(w.exitcode) for w in workers)
                raise CtxsimError(f"a worker process ended without its results (exit codes {codes})")
        index, ok, payload = self.reader.recv()
        if not ok:
            raise payload
        slot, at, size = payload
        fd = self.files[slot].fileno()
        parts = []
        while size > 0:
            part = os.pread(fd, size, at)
            if not part:
                raise CtxsimError("a worker's result is shorter than it said")
            parts.append(part)
            at += len(part)
            size -= len(part)
        return index, pickle.loads(b"".join(parts))


def _die_with_parent(parent: int) -> None:
    """In a worker: the system kills this process when its parent ends (SIGKILL included), so no
    worker runs on, orphaned; SIGINT is the parent's to handle (it ends the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux's libc: the parent's terminate() still ends it
        pass
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def _worker(order: Sequence[int], cursor: Any, channel: _Channel, slot: int, parent: int) -> None:
    """A forked process: take tasks until none are left, send each result (or the error) back."""
    assert _task is not None
    _die_with_parent(parent)
    channel.attach(slot)
    while (index := _take(order, cursor)) is not None:
        try:
            channel.send(index, _task(index))
        except BaseException as exc:
            channel.fail(index, exc)
            return


def _aside(work: Callable[[], Any], channel: _Channel, parent: int) -> None:
    """A forked process: do `work`, send its result (or the error) back, end."""
    _die_with_parent(parent)
    channel.attach(0)
    try:
        channel.send(0, work())
    except BaseException as exc:
        channel.fail(0, exc)


def aside(work: Callable[[], T], jobs: int) -> Callable[[], T]:
    """Start `work` in a forked process, beside what this one does next; the function returned waits for
    its result (raises its error) and may be called once. `jobs`: the processes the caller's work will
    use (1: no fork, `work` is done when its result is asked for, in this process).

    For work whose result is needed only later, while this process has other work to do first (loss
    metering's identifier index, built while the trace's texts are counted): only the result travels.
    While it runs it holds one of the processes `at_most` allows: under a cap, work shared out meanwhile
    (`plan_share`) takes one process fewer, so `-j N` keeps to N processes at work. With no cap (one per
    core), it runs beside them: one process more than the cores for the while.
    """
    if jobs <= 1 or plan_share(2) < 2:
        return work
    context = multiprocessing.get_context("fork")
    try:
        channel = _Channel(context, 1)
    except OSError:
        return work
    process = context.Process(target=_aside, args=(work, channel, os.getpid()), daemon=True)
    try:
        process.start()
    except OSError:  # no process to be had: done here, when asked for
        channel.close()
        return work
    _asides.append(process)  # one of the cap's processes taken until it ends (plan_share)

    def result() -> T:
        try:
            _, value = channel.receive([process])
            return value  # type: ignore[no-any-return]
        finally:
            if process.is_alive():
                process.terminate()
            process.join()
            channel.close()

    return result


def run_ordered(task: Callable[[int], T], count: int, jobs: int,
                done: Callable[[int, T], None] | None = None, first: Sequence[int] | None = None) -> list[T]:
    """`task(0) .. task(count - 1)` on `jobs` processes (this one and jobs - 1 forked); results in task order.

    Tasks are taken in the order `first` gives (the heaviest first, so that no long task starts
    last and runs alone), by whichever process is free; this process takes its share too, so its
    results never travel. `done(i, result)` is called as each result arrives. An error in a
    worker is raised here; a worker that dies without a word is an error, never a hang.
    """
    if jobs > 1:
        context = multiprocessing.get_context("fork")
        try:  # a shared counter needs POSIX semaphores and the runs temporary files: not everywhere
            cursor = context.Value("l", 0)
            channel = _Channel(context, jobs - 1)
        except OSError:
            jobs = 1
    arrived: dict[int, T] = {}

    def finish(index: int, result: T) -> None:
        arrived[index] = result
        if done is not None:
            done(index, result)

    if jobs <= 1:
        for i in range(count):
            finish(i, task(i))
        return [arrived[i] for i in range(count)]
    global _task
    order = list(first if first is not None else range(count))
    outer = _task  # set when a task shares out work of its own (counting a big batch in a run)
    try:
        _task = task
        workers = [context.Process(target=_worker, args=(order, cursor, channel, slot, os.getpid()), daemon=True)
                   for slot in range(jobs - 1)]
        try:
            for worker in workers:
                try:
                    worker.start()
                except OSError:  # no process to be had (a process limit, memory): this one takes its share
                    break
            while (index := _take(order, cursor)) is not None:
                finish(index, task(index))
                while channel.reader.poll(0):  # load what the workers finished meanwhile, not all at the end
                    finish(*channel.receive(workers))
            while len(arrived) < count:
                finish(*channel.receive(workers))
        finally:
            _task = outer
            for worker in workers:
                if worker.pid is None:  # never started (the error is on its way up)
                    continue
                if worker.is_alive():
                    worker.terminate()
                worker.join()
    finally:
        channel.close()
    return [arrived[i] for i in range(count)]


__all__: Sequence[str] = [
    "MIN_PARALLEL_REQUESTS",
    "at_most",
    "available_cores",
    "can_fork",
    "plan_jobs",
    "plan_share",
    "run_ordered",
]
