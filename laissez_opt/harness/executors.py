"""Where runs execute: supervised local worker processes, the calling process, or a Dask cluster.

Every executor pulls tasks from a *feed* (see :class:`ListFeed`) as workers
become free and yields ``(task, outcome)`` pairs in completion order, where
``outcome`` is whatever the run function returned, or a :class:`Failure` when
the run could not finish: its worker died, it went over the per-run memory or
time cap (:class:`Limits`), or it ran out of memory.  A failure is one run's
outcome, never the end of the sweep.

``local`` (:func:`run_local_pool`) runs each task in a worker process of its
own making (``python -m laissez_opt.harness.worker``), one task at a time.
The parent supervises them: a worker that dies is replaced and its task
reported as a failure; a run over its time cap, or whose worker's resident
memory grows by more than the memory cap, has its worker killed and replaced.
Workers never outlive the parent (see :mod:`laissez_opt.harness.worker`), and
the parent kills and reaps every worker when it stops, however it stops short
of ``SIGKILL``.  Fresh processes rather than ``fork``: solver libraries hold
threads that a forked copy would inherit in a broken state.

``inline`` (:func:`run_inline`) runs tasks in the calling process: no
isolation and no caps, for debugging and tiny comparisons.

``dask`` (:func:`run_dask`, ``pip install 'laissez-opt[dask]'``): a scheduler
address, or a local cluster is started.  A run whose Dask worker dies becomes a
failure (a local cluster does not retry it; a remote scheduler retries as
configured, then gives up with ``KilledWorker``).  On a local cluster (one
thread per worker) a run gets the same address-space limit as in a local
worker, each worker's memory limit is the run memory cap plus a baseline, and
a run over its time cap ends its worker process, which Dask replaces.  On a
remote cluster the time cap releases the run's future, but Dask cannot stop a
task that is running, and memory is the cluster's own configuration.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import InputError, LaissezOptError
from ..limits import format_bytes
from .worker import _HEADER, address_space_cap

__all__ = ["EXECUTORS", "WAIT", "Failure", "Limits", "ListFeed", "pick_preferred", "run_inline", "run_local_pool", "run_dask"]

EXECUTORS = ("local", "inline", "dask")

#: What a feed's ``take()`` returns when it has no task now but may have one later.
WAIT = object()

#: How often the supervisor checks deadlines, memory and waiting feeds (seconds).
_TICK = 0.05
#: A worker process needs this much resident memory of its own before running anything.
_DASK_WORKER_BASELINE = 256 * 2**20
#: Consecutive worker processes that may die before reporting ready before we give up.
_STARTUP_ATTEMPTS = 3
#: Affinity keys a local worker is taken to still hold: as many as a compare worker keeps unpacked.
_HELD_KEYS = 4


@dataclass(frozen=True)
class Limits:
    """Per-run caps: ``memory`` in bytes, ``time`` in seconds of wall-clock time (``None``: no cap)."""

    memory: int | None = None
    time: float | None = None


@dataclass(frozen=True)
class Failure:
    """A run that produced no outcome.

    ``kind`` is ``worker_died``, ``memory_cap``, ``time_cap``, ``out_of_memory``,
    ``crashed`` (the run function itself raised) or ``lost`` (the executor lost
    track of it); ``message`` says what happened
    in one line.  Every failure is transient: the run may succeed another time.
    """

    kind: str
    message: str
    peak_rss_mib: float | None = None


#: How far down a feed's queue :func:`pick_preferred` looks for a preferred task: a sweep of many
#: thousands of runs pays a bounded scan per run, and tasks of one instance sit next to each other.
PREFERENCE_WINDOW = 64


def pick_preferred(queue: deque, rank: Callable | None):
    """Remove and return the queued task of least ``rank`` among the first :data:`PREFERENCE_WINDOW`.

    Ties go to the earliest; without ``rank`` (or with an empty queue) the first task, or ``None``.
    """
    if not queue:
        return None
    if rank is None:
        return queue.popleft()
    best, best_rank = 0, None
    for position in range(min(len(queue), PREFERENCE_WINDOW)):
        value = rank(queue[position])
        if best_rank is None or value < best_rank:
            best, best_rank = position, value
            if value == 0:
                break
    task = queue[best]
    del queue[best]
    return task


class ListFeed:
    """A feed over a fixed list: ``take()`` returns the next task, ``None`` when none is left.

    ``take(rank)`` prefers, among the next :data:`PREFERENCE_WINDOW` tasks, one of least
    ``rank(task)`` (the local pool ranks by instance affinity, see :func:`run_local_pool`).
    """

    def __init__(self, tasks: Iterable):
        self._tasks = deque(tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def take(self, rank: Callable | None = None):
        """The next task (the preferred one under ``rank``), or ``None`` when the list is exhausted."""
        return pick_preferred(self._tasks, rank)


def _takes_rank(feed) -> bool:
    """Whether ``feed.take`` accepts a rank function (a feed written before affinity takes none)."""
    import inspect

    try:
        return len(inspect.signature(feed.take).parameters) >= 1
    except (TypeError, ValueError):
        return False


def _as_feed(tasks):
    return tasks if hasattr(tasks, "take") else ListFeed(tasks)


def _describe(task) -> str:
    if isinstance(task, dict) and "read" in task:
        return f"reading {task['read']}"
    if isinstance(task, dict) and "method" in task:
        return f"{task['method']} on {task.get('instance_name') or task.get('source') or 'an instance'}"
    return "a run"


def format_seconds(seconds: float) -> str:
    """``seconds`` as ``"1 s"``, ``"2.5 s"``."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + " s"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# --------------------------------------------------------------------------------------- inline
def run_inline(fn: Callable, tasks, *, limits: Limits | None = None) -> Iterator:
    """Run each task in this process (no isolation, no caps); yields ``(task, outcome)``."""
    feed = _as_feed(tasks)
    while True:
        task = feed.take()
        if task is None:
            return
        if task is WAIT:
            time.sleep(_TICK * 4)
            continue
        try:
            outcome = fn(task)
        except MemoryError:
            outcome = Failure("out_of_memory", f"out of memory (MemoryError) while running {_describe(task)}")
        yield task, outcome


# ---------------------------------------------------------------------------------------- local
def _rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _worker_env() -> dict:
    """This environment, with the directory this package came from importable.

    Workers start with ``-P`` (the working directory is not on their path, so a
    different checkout there cannot shadow the package); a package that is not
    in a site directory (a source checkout) is found through ``PYTHONPATH``.
    """
    import site
    import sysconfig

    env = dict(os.environ)
    package_root = Path(__file__).resolve().parent.parent.parent
    site_dirs = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages(),
                                              sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]}
    if package_root not in site_dirs:
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(package_root) not in paths:
            env["PYTHONPATH"] = os.pathsep.join([str(package_root), *paths])
    return env


class _Worker:
    """One supervised worker process and the pipes to it."""

    def __init__(self, env: dict):
        if not sys.executable:
            raise LaissezOptError("cannot start worker processes: no Python interpreter path (sys.executable)")
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "laissez_opt.harness.worker", str(os.getpid()), str(task_r), str(result_w)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr,
                pass_fds=(task_r, result_w), close_fds=True, env=env,
            )
        except BaseException:
            for fd in (task_r, task_w, result_r, result_w):
                os.close(fd)
            self.stderr.close()
            raise
        os.close(task_r)
        os.close(result_w)
        os.set_blocking(result_r, False)
        self.task_w = task_w
        self.result_r = result_r
        self.buffer = bytearray()
        self.ready = False
        self.task = None
        self.started = 0.0
        self.base_rss: int | None = None
        self.closed = False
        #: Affinity keys of the tasks this worker ran, most recent last (see ``run_local_pool``).
        self.held: deque = deque(maxlen=_HELD_KEYS)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message) -> bool:
        """Write a frame to the worker; ``False`` if it is gone."""
        import pickle

        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_HEADER.pack(len(payload)) + payload)
        try:
            while view:
                view = view[os.write(self.task_w, view):]
        except (BrokenPipeError, OSError):
            return False
        return True

    def receive(self) -> tuple[list, bool]:
        """Frames available now, and whether the worker closed its end (it exited)."""
        import pickle

        eof = False
        while True:
            try:
                chunk = os.read(self.result_r, 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                eof = True
                break
            if not chunk:
                eof = True
                break
            self.buffer += chunk
        frames = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + size:
                break
            payload = bytes(self.buffer[_HEADER.size:_HEADER.size + size])
            del self.buffer[:_HEADER.size + size]
            frames.append(pickle.loads(payload))
        return frames, eof

    def last_error_line(self) -> str:
        """The last non-empty line the worker wrote to its stderr during its current run."""
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 4096))
            tail = self.stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        first_fatal = next((line for line in lines if line.startswith("Fatal Python error")), None)
        return first_fatal or (lines[-1] if lines else "")

    def kill(self) -> None:
        """Kill the process (if alive), reap it and close every descriptor."""
        if self.closed:
            return
        self.closed = True
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        self._reap()

    def stop(self) -> None:
        """Ask the worker to exit by closing its task pipe (it exits on end of file)."""
        try:
            os.close(self.task_w)
        except OSError:
            pass
        self.task_w = -1

    def _reap(self) -> None:
        try:
            self.proc.wait()
        except BaseException:  # interrupted while reaping: make sure it is gone anyway
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            for fd in (self.task_w, self.result_r):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self.task_w = self.result_r = -1
            self.stderr.close()


def run_local_pool(fn: Callable, tasks, *, workers: int, limits: Limits | None = None,
                   affinity: Callable | None = None) -> Iterator:
    """Run tasks in ``workers`` supervised worker processes; yields ``(task, outcome)``.

    ``fn`` must be importable by name (it is pickled by reference).  A run
    whose worker dies, or that goes over a cap of ``limits``, yields a
    :class:`Failure`; its worker is replaced and the other runs go on.

    A feed's ``take`` may return :data:`WAIT` ("nothing now, more later"); it
    is asked again after its ``poll_interval`` seconds (default ``4 x`` the
    supervisor's tick), so a feed that is cheap to ask sets it to 0.

    ``affinity(task)`` names what a task shares with others (``compare``: its
    instance, which a worker unpacks once and whose array views and equal
    shares it then keeps).  A free worker takes, from a feed that accepts a
    rank (``take(rank)``), first a task whose key it ran before, then one whose
    key no other worker holds, then any: each worker keeps to its own
    instances, and two workers share one only when nothing else is left.
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise InputError(f"must be an integer >= 1, got {workers!r}", path="workers")
    limits = limits or Limits()
    feed = _as_feed(tasks)
    size = min(workers, len(feed)) if hasattr(feed, "__len__") else workers
    if size == 0:
        return
    env = _worker_env()
    from multiprocessing import spawn

    # What multiprocessing's spawn start method gives its children: sys.path, working directory, main module.
    preparation = spawn.get_preparation_data("laissez-opt-worker")
    preparation.pop("authkey", None)  # our workers speak no multiprocessing protocol; the key stays here
    selector = selectors.DefaultSelector()
    pool: list[_Worker] = []
    ranked = affinity is not None and _takes_rank(feed)
    startup_failures = 0
    state = {"exhausted": False, "waiting_since": None}

    def start_worker() -> None:
        worker = _Worker(env)
        pool.append(worker)
        selector.register(worker.result_r, selectors.EVENT_READ, worker)
        # Under a tight run memory cap the workers load numba's compiler before they report ready: neither the
        # address-space limit nor the resident-memory watch of a run may meet it (it spins in OpenBLAS under it).
        worker.send({"prepare": preparation, "load_compiler": _load_first(limits.memory)})
        # (if the worker died already, its end of file comes through the selector)

    def retire(worker: _Worker) -> None:
        selector.unregister(worker.result_r)
        pool.remove(worker)
        worker.kill()

    def next_task(worker: _Worker):
        if state["exhausted"]:
            return None
        since = state["waiting_since"]
        if since is not None and time.monotonic() - since < getattr(feed, "poll_interval", _TICK * 4):
            return WAIT  # the feed said "later": do not poll it on every tick (unless asking it is free)
        if affinity is None or not ranked:
            task = feed.take()
        else:
            others = {key for w in pool if w is not worker for key in w.held}
            own = worker.held

            def rank(candidate) -> int:
                key = affinity(candidate)
                return 0 if key in own else 2 if key in others else 1

            task = feed.take(rank)
        if task is None:
            state["exhausted"] = True
        state["waiting_since"] = time.monotonic() if task is WAIT else None
        return task

    completed = False
    try:
        while True:
            for worker in [w for w in pool if w.ready and w.task is None]:
                task = next_task(worker)
                if task is None or task is WAIT:
                    break
                if affinity is not None:
                    key = affinity(task)
                    if key in worker.held:
                        worker.held.remove(key)
                    worker.held.append(key)
                worker.task, worker.started = task, time.monotonic()
                worker.base_rss = _rss_bytes(worker.pid)
                worker.send((fn, task, limits.memory))  # if it died, its end of file comes through the selector
            busy = [w for w in pool if w.task is not None]
            if state["exhausted"] and not busy:
                break
            if not state["exhausted"]:
                while len(pool) < size:  # replace lost workers while work remains
                    start_worker()
            for key, _ in selector.select(timeout=_TICK):
                worker: _Worker = key.data
                if worker not in pool:
                    continue
                frames, eof = worker.receive()
                for frame in frames:
                    if frame[0] == "ready":
                        worker.ready = True
                        startup_failures = 0
                        continue
                    task, worker.task = worker.task, None
                    kind, peak, limited = frame[0], frame[-2], frame[-1]
                    if kind == "ok":
                        outcome = frame[1]
                        if isinstance(outcome, dict) and peak is not None:
                            outcome.setdefault("peak_rss_mib", peak)
                        yield task, outcome
                    elif kind == "memory":
                        if limited:
                            failure = Failure("memory_cap", f"run memory cap of {format_bytes(limits.memory)} exceeded "
                                                            f"(MemoryError) while running {_describe(task)}", peak)
                        else:
                            failure = Failure("out_of_memory", f"out of memory (MemoryError) while running {_describe(task)}", peak)
                        retire(worker)  # a native library may be left in a bad state after a failed allocation
                        yield task, failure
                        break
                    else:
                        yield task, Failure("crashed", f"{frame[1]} while running {_describe(task)}", peak)
                if eof and worker in pool:
                    code = worker.proc.wait()
                    detail = worker.last_error_line()
                    task = worker.task
                    retire(worker)
                    if not worker.ready:
                        startup_failures += 1
                        if startup_failures >= _STARTUP_ATTEMPTS:
                            raise LaissezOptError(
                                f"cannot start worker processes (exit status {code})" + (f": {detail}" if detail else "")
                            )
                    elif task is not None:
                        how = f"signal {-code}, {_signal_name(-code)}" if code < 0 else f"exit status {code}"
                        message = f"worker process died ({how}) while running {_describe(task)}"
                        if detail:
                            message += f": {detail}"
                        yield task, Failure("worker_died", message)
            # The caps are enforced here, in the parent, where a stuck or swelling run cannot stop us.
            now = time.monotonic()
            for worker in [w for w in pool if w.task is not None]:
                failure = None
                if limits.time is not None and now - worker.started > limits.time:
                    failure = Failure("time_cap", f"run time cap of {format_seconds(limits.time)} exceeded "
                                                  f"while running {_describe(worker.task)}; its worker was stopped")
                elif limits.memory is not None and worker.base_rss is not None:
                    rss = _rss_bytes(worker.pid)
                    if rss is not None and rss - worker.base_rss > limits.memory:
                        failure = Failure("memory_cap", f"run memory cap of {format_bytes(limits.memory)} exceeded "
                                                        f"(resident memory grew by {format_bytes(rss - worker.base_rss)}) "
                                                        f"while running {_describe(worker.task)}; its worker was stopped",
                                          round(rss / 2**20, 1))
                if failure is not None:
                    task = worker.task
                    retire(worker)
                    yield task, failure
        completed = True
    finally:
        if completed:  # idle workers exit on end of file; give them a moment, then make sure
            for worker in pool:
                worker.stop()
            deadline = time.monotonic() + 2.0
            for worker in pool:
                try:
                    worker.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for worker in pool:  # interrupted (or stragglers): kill and reap
            worker.kill()
        pool.clear()
        selector.close()


# ----------------------------------------------------------------------------------------- dask
def _kill_this_process() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _load_first(memory_cap: int | None) -> bool:
    """Whether a worker capped at ``memory_cap`` bytes loads numba's compiler before its runs (a tight cap)."""
    from ..jit import LOAD_BEFORE_CAPS_BELOW

    return memory_cap is not None and memory_cap < LOAD_BEFORE_CAPS_BELOW


def _dask_call(fn: Callable, task, memory_cap: int | None = None, time_cap: float | None = None):
    """Runs on a Dask worker: ``fn(task)`` under the caps, running out of memory reported, not raised.

    Only given caps on a worker with one thread (a local cluster of ours): the
    address-space limit and the time cap's kill are process-wide.
    """
    timer = None
    if time_cap:
        # Dask cannot stop a running task; the nanny restarts a worker that dies, and the client reads the death.
        timer = threading.Timer(time_cap, _kill_this_process)
        timer.daemon = True
        timer.start()
    try:
        with address_space_cap(memory_cap) as limited:
            try:
                return fn(task)
            except MemoryError:
                if limited:
                    return Failure("memory_cap", f"run memory cap of {format_bytes(memory_cap)} exceeded "
                                                 f"(MemoryError) while running {_describe(task)}")
                return Failure("out_of_memory", f"out of memory (MemoryError) while running {_describe(task)}")
    finally:
        if timer is not None:
            timer.cancel()


def run_dask(fn: Callable, tasks, *, workers: int, scheduler: str | None = None, limits: Limits | None = None) -> Iterator:
    """Run tasks on a Dask cluster (``scheduler`` address, or a local cluster); yields ``(task, outcome)``."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("the dask executor needs: pip install 'laissez-opt[dask]'", path="executor") from None
    limits = limits or Limits()
    feed = _as_feed(tasks)
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot connect to the Dask scheduler {scheduler!r}: {exc}", path="scheduler") from None
        caps = {}
    else:
        memory_limit = limits.memory + _DASK_WORKER_BASELINE if limits.memory else "auto"
        # A run that kills its worker is a failed run, not something to retry on every other worker.
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                   dashboard_address=None, memory_limit=memory_limit)
        client = Client(cluster)
        caps = {"memory_cap": limits.memory, "time_cap": limits.time}
    try:
        capacity = max(1, sum(client.nthreads().values()) if scheduler else workers)
        in_flight: dict = {}  # future -> (task, submitted)
        exhausted = False
        while True:
            while not exhausted and len(in_flight) < capacity:
                task = feed.take()
                if task is None:
                    exhausted = True
                elif task is WAIT:
                    break
                else:
                    # Not more in flight than threads, so a submitted run is a running one.
                    in_flight[client.submit(_dask_call, fn, task, pure=False, **caps)] = (task, time.monotonic())
            if exhausted and not in_flight:
                break
            time.sleep(_TICK)
            now = time.monotonic()
            for future in list(in_flight):
                task, submitted = in_flight[future]
                if future.status == "finished":
                    del in_flight[future]
                    yield task, future.result()
                elif future.status in ("error", "cancelled", "lost"):
                    del in_flight[future]
                    try:
                        exc = future.exception(timeout=5)
                    except Exception as err:  # the future itself is gone
                        exc = err
                    name = type(exc).__name__
                    if name == "KilledWorker" and limits.time is not None and now - submitted >= limits.time:
                        yield task, Failure("time_cap", f"run time cap of {format_seconds(limits.time)} exceeded "
                                                        f"while running {_describe(task)}; its worker was stopped")
                    elif name == "KilledWorker":
                        yield task, Failure("worker_died", f"worker process died while running {_describe(task)} "
                                                           "(Dask: KilledWorker)")
                    else:
                        yield task, Failure("lost", f"{name}: {exc} while running {_describe(task)}")
                elif not caps and limits.time is not None and now - submitted > limits.time:
                    # A remote cluster: release the run; Dask cannot stop the task itself.
                    del in_flight[future]
                    future.cancel()
                    yield task, Failure("time_cap", f"run time cap of {format_seconds(limits.time)} exceeded "
                                                    f"while running {_describe(task)}; the Dask task was released")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
