"""The sweep's cells on a Dask distributed cluster (`--cluster ADDRESS`, or `--cluster local`).

Imported only when `--cluster` is given: dask is the `dask` extra, not a dependency. Each task
is a `TraceTask` (a path, a digest, the cell specs: a few hundred bytes); the worker reads the
trace where it stands (a shared filesystem path), writes the cells' Parquet files there too, and
sends back only the cells' summaries. `local` starts a LocalCluster of worker processes
(`jobs` of them, 2 by default) for this run and stops it after.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ctxsim.errors import CtxsimError

LOCAL = "local"
LOCAL_WORKERS = 2


_QUIET_LOGGERS = ("distributed", "tornado", "asyncio")


@contextlib.contextmanager
def _workers_deaf() -> Iterator[None]:
    """While the local workers start: SIGINT ignored and stderr on /dev/null, which they inherit.

    A Ctrl-C goes to the whole foreground process group: the workers must not each raise
    KeyboardInterrupt and print tracebacks; ctxsim stops them itself and prints its one line. An
    ignored signal stays ignored across exec, whichever thread spawns them (a blocked one would not:
    the cluster spawns from threads of its own); a Ctrl-C in these few seconds is therefore lost.
    The multiprocessing resource tracker is started here too, so that its warning after the parent
    was killed (it still unlinks the semaphores it lists) goes nowhere.
    """
    from multiprocessing import resource_tracker

    terms: list[int] = []
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    # a SIGTERM meanwhile is noted and raised once the cluster stands (so that it is stopped in order);
    # a handler, unlike SIG_IGN, is not inherited: the workers keep the default
    old_term = signal.signal(signal.SIGTERM, lambda signum, _frame: terms.append(signum))
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        resource_tracker.ensure_running()
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        signal.signal(signal.SIGINT, old)
        signal.signal(signal.SIGTERM, old_term)
        if terms:  # before anything the start raised: the workers may have died of the same SIGTERM
            if callable(old_term):
                old_term(signal.SIGTERM, None)
            os.kill(os.getpid(), signal.SIGTERM)


def _silence_logs() -> None:
    """distributed's own loggers off: shutdown after an interrupt logs cancelled comms and nanny states."""
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.CRITICAL + 1)
        logger.propagate = False


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise CtxsimError("--cluster needs dask.distributed: pip install 'ctxsim[dask]'") from None
    return distributed


def run_on_cluster(address: str, tasks: Sequence[Any], run: Callable[[Any], Any],
                   take: Callable[[Any, Any], None], jobs: int | None) -> None:
    """`run(task)` for every task on the cluster; `take(task, result)` as each arrives."""
    distributed = _distributed()
    client: Any = None
    cluster: Any = None
    try:
        if address == LOCAL:
            with _workers_deaf():
                cluster = distributed.LocalCluster(
                    n_workers=jobs or LOCAL_WORKERS, threads_per_worker=1, processes=True,
                    dashboard_address=None, silence_logs=logging.CRITICAL + 1)
            _silence_logs()
            client = distributed.Client(cluster)
        else:
            try:
                client = distributed.Client(address, timeout="20s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise CtxsimError(f"--cluster {address}: cannot reach the Dask scheduler ({exc})") from None
        futures = client.map(run, list(tasks), key=[f"ctxsim-sweep-{t.trace_id}-{i}" for i, t in enumerate(tasks)],
                             pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in distributed.as_completed(futures):
            try:
                result = future.result()
            except CtxsimError:
                raise
            except Exception as exc:
                raise CtxsimError(f"a Dask worker failed on {tasks[index[future.key]].path}: "
                                  f"{type(exc).__name__}: {exc}") from None
            take(tasks[index[future.key]], result)
            future.release()
    finally:
        _silence_logs()
        _shutdown(client, cluster)


def _shutdown(client: Any, cluster: Any) -> None:
    """The client, then the cluster (its workers first); a second Ctrl-C meanwhile does not interrupt it."""
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=10)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=10)
        # closed, or as closed as it will get (workers killed by a SIGTERM to the whole group make the
        # nanny's bookkeeping fail; a start cut short leaves no cluster to close): distributed's own
        # attempt at exit would only print a traceback
        from distributed.deploy import spec

        atexit.unregister(spec.close_clusters)
    finally:
        signal.signal(signal.SIGINT, old_int)
