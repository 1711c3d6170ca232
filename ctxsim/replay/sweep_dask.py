"""The sweep's cells on a Dask distributed cluster (`--cluster ADDRESS`, or `--cluster local`).

Imported only when `--cluster` is given: dask is the `dask` extra, not a dependency. Each task
is a `TraceTask` (a path, a digest, the cell specs: a few hundred bytes); the worker reads the
trace where it stands (a shared filesystem path), writes the cells' Parquet files there too, and
sends back only the cells' summaries. `local` starts a LocalCluster of worker processes
(`jobs` of them, 2 by default) for this run and stops it after.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ctxsim.errors import CtxsimError

LOCAL = "local"
LOCAL_WORKERS = 2


def _client(address: str, workers: int) -> tuple[Any, Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise CtxsimError("--cluster needs dask.distributed: pip install 'ctxsim[dask]'") from None
    if address == LOCAL:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise CtxsimError(f"--cluster {address}: cannot reach the Dask scheduler ({exc})") from None


def run_on_cluster(address: str, tasks: Sequence[Any], run: Callable[[Any], Any],
                   take: Callable[[Any, Any], None], jobs: int | None) -> None:
    """`run(task)` for every task on the cluster; `take(task, result)` as each arrives."""
    from distributed import as_completed

    client, cluster = _client(address, jobs or LOCAL_WORKERS)
    try:
        futures = client.map(run, list(tasks), key=[f"ctxsim-sweep-{t.trace_id}-{i}" for i, t in enumerate(tasks)],
                             pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
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
        client.close()
        if cluster is not None:
            cluster.close()
