"""Task functions for driving the executors directly in the fault-injection suite.

``_RESERVED`` is mapped when a worker first unpickles a task function of this
module, before the run's address-space limit is set, like the arenas a native
library reserves early.  :func:`touch_reserved` then makes it resident step by
step: memory that only the parent's resident-memory watchdog can see growing.
"""

from __future__ import annotations

import mmap
import os
import time

_RESERVED = mmap.mmap(-1, 1 << 30)


def touch_reserved(task):
    """Write one byte per page of the reserved GiB, 64 MiB every 20 ms."""
    page = mmap.PAGESIZE
    step = 64 << 20
    for start in range(0, len(_RESERVED), step):
        for offset in range(start, start + step, page):
            _RESERVED[offset] = 1
        time.sleep(0.02)
    return {"done": True}


def echo(task):
    """The task back, with the worker's process id."""
    return {"task": task, "pid": os.getpid()}


def sleep_then_echo(task):
    """Sleep ``task['seconds']``, then :func:`echo` with the run's start on the system-wide monotonic clock."""
    started = time.monotonic()
    time.sleep(task["seconds"])
    return {**echo(task), "started": started}


def dispatch(task):
    """The task function of the executor tests: ``task['action']`` picks what the run does."""
    action = task.get("action", "echo")
    if action == "touch_reserved":
        return touch_reserved(task)
    if action == "sleep":
        return sleep_then_echo(task)
    return echo(task)


def _refuse_to_load(reason: str):
    raise RuntimeError(reason)


class ExplodesOnLoad:
    """An object that pickles fine and cannot be unpickled: a task no worker can rebuild."""

    def __reduce__(self):
        return _refuse_to_load, ("this task cannot be rebuilt",)
