"""Where runs execute: inline, a local process pool, or a Dask cluster.

Every executor takes picklable tasks and yields ``(task, row)`` pairs as runs
finish, in completion order.  The local pool uses the ``forkserver`` start
method (solver libraries hold threads that ``fork`` would copy in a broken
state) and runs one solver thread per worker.  Dask is optional
(``pip install 'laissez-opt[dask]'``): give a scheduler address, or a local
cluster is started.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterable, Iterator

from ..errors import InputError

__all__ = ["run_inline", "run_local_pool", "run_dask", "EXECUTORS"]

EXECUTORS = ("local", "dask")


def run_inline(fn: Callable, tasks: Iterable) -> Iterator:
    for task in tasks:
        yield task, fn(task)


def run_local_pool(fn: Callable, tasks: list, *, workers: int) -> Iterator:
    if workers <= 1:
        yield from run_inline(fn, tasks)
        return
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(fn, task): task for task in tasks}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def run_dask(fn: Callable, tasks: list, *, workers: int, scheduler: str | None = None) -> Iterator:
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:
        raise InputError("the dask executor needs: pip install 'laissez-opt[dask]'", path="--executor") from None
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(fn, tasks, pure=False)
        index = {f.key: task for f, task in zip(futures, tasks)}
        for future in dask_completed(futures):
            yield index[future.key], future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
