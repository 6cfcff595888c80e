"""The worker process of the local executor: runs one task at a time for its parent.

Started by :mod:`laissez_opt.harness.executors` as
``python -P -m laissez_opt.harness.worker PARENT_PID TASK_FD RESULT_FD``.  Frames on
both pipes are an 8-byte big-endian length followed by a pickle.  The first frame
from the parent is its :mod:`multiprocessing` preparation data (``sys.path``,
working directory, main module), applied as multiprocessing's own ``spawn``
start method applies it, so that whatever the parent can unpickle (a method
registered from a script or a test module) the worker can too.

The worker never outlives its parent: on Linux the kernel sends it ``SIGKILL``
when the parent dies (``PR_SET_PDEATHSIG``), and on every system a reader
thread sees end-of-file on the task pipe when the parent is gone, however it
died, and exits at once.  ``SIGINT`` is ignored: a Ctrl-C on the terminal
reaches the whole process group, and the parent decides what happens to the
runs.

A per-run memory cap is an address-space limit (``RLIMIT_AS``) set just before
the run, relative to the worker's size at that moment, and lifted afterwards;
an allocation beyond it raises :class:`MemoryError`, reported as ``memory``.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import traceback
from contextlib import contextmanager

__all__ = ["read_frame", "write_frame", "address_space_cap", "main"]

_HEADER = struct.Struct(">Q")
_PR_SET_PDEATHSIG = 1


def write_frame(fd: int, message) -> None:
    """Write one length-prefixed pickled ``message`` to the pipe ``fd`` (blocking)."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_frame(fd: int):
    """Read one frame from ``fd`` (blocking); ``None`` at end of file."""
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    payload = _read_exactly(fd, size)
    if payload is None:
        return None
    return pickle.loads(payload)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no usable libc: the pipe watch below still works
            pass
    # The parent may have died before the death signal was armed.
    if os.getppid() != parent_pid:
        os._exit(0)


def _status_kib(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (Linux), else ``None``."""
    try:
        with open("/proc/self/status", "rb") as handle:
            for line in handle:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_bytes() -> int | None:
    kib = _status_kib("VmSize")
    return None if kib is None else kib * 1024


def _reset_peak_rss() -> bool:
    # Writing 5 to clear_refs resets VmHWM (Linux >= 4.0), so the peak is per run.
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mib(reset_worked: bool) -> float | None:
    if not reset_worked:
        return None
    kib = _status_kib("VmHWM")
    return None if kib is None else round(kib / 1024, 1)


def _read_payload(fd: int) -> bytes | None:
    header = _read_exactly(fd, _HEADER.size)
    return None if header is None else _read_exactly(fd, _HEADER.unpack(header)[0])


def _reader(fd: int, inbox: queue.Queue) -> None:
    while True:
        try:
            payload = _read_payload(fd)
        except OSError:
            payload = None
        if payload is None:
            # The parent is gone (or closed the pipe to shut us down): stop now, even mid-run.
            os._exit(0)
        inbox.put(payload)


def _prepare(fd: int) -> None:
    """Apply the parent's preparation data, the first frame on the task pipe (``prepare``), and load numba's
    compiler when the pool caps its runs' memory (``load_compiler``; :func:`laissez_opt.jit.load_compiler`)."""
    try:
        data = read_frame(fd)
    except (OSError, EOFError, pickle.UnpicklingError):
        data = None
    if data is None:
        os._exit(0)
    from multiprocessing import spawn

    try:
        spawn.prepare(data["prepare"])
    except BaseException:  # a main module that fails to import again: runs that need it will say so
        traceback.print_exc()
    if data.get("load_compiler"):
        from ..jit import load_compiler

        load_compiler()


@contextmanager
def address_space_cap(memory_cap: int | None):
    """Limit this process's address space to its current size plus ``memory_cap`` bytes, then restore it.

    Yields whether the limit is in force (it is not without ``resource``, on a
    system without ``/proc``, or above the hard limit).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix system
        yield False
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limited = False
    if memory_cap:
        size = _address_space_bytes()
        if size is not None:
            wanted = size + int(memory_cap)
            if hard == resource.RLIM_INFINITY or wanted <= hard:
                try:
                    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
                    limited = True
                except (ValueError, OSError):
                    limited = False
    try:
        yield limited
    finally:
        if limited:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _run_one(message) -> tuple:
    fn, task, memory_cap = message
    reset = _reset_peak_rss()
    with address_space_cap(memory_cap) as limited:
        try:
            outcome = ("ok", fn(task))
        except MemoryError:
            outcome = ("memory", "MemoryError")
        except BaseException as exc:  # reported to the parent, which turns it into an error row
            outcome = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=5))
    return outcome + (_peak_rss_mib(reset), limited)


def main(argv: list[str] | None = None) -> None:
    """Serve tasks from the parent until it closes the task pipe or dies."""
    args = sys.argv[1:] if argv is None else argv
    parent_pid, task_fd, result_fd = (int(a) for a in args[:3])
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    faulthandler.enable()  # a crash of a native library leaves its stack in our stderr
    _prepare(task_fd)
    inbox: queue.Queue = queue.Queue()
    write_frame(result_fd, ("ready", os.getpid()))
    threading.Thread(target=_reader, args=(task_fd, inbox), daemon=True, name="parent-watch").start()
    while True:
        payload = inbox.get()
        # The parent's copy of our stderr is kept for diagnostics of a crash; keep only this run's.
        try:
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)
        except OSError:
            pass
        try:
            message = pickle.loads(payload)
        except BaseException as exc:  # a task this process cannot rebuild is that run's failure, not a hang
            outcome = ("error", f"cannot receive the run: {type(exc).__name__}: {exc}", traceback.format_exc(limit=3),
                       None, False)
        else:
            outcome = _run_one(message)
        try:
            write_frame(result_fd, outcome)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            write_frame(result_fd, ("error", f"result cannot be sent back: {type(exc).__name__}: {exc}", "", None, False))
        except OSError:
            os._exit(0)


if __name__ == "__main__":
    main()
