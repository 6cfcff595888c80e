"""Helpers of the fault-injection suite: the command line in its own process group, process
scans through ``/proc``, store checks and row comparisons that ignore timings.

The suite kills real processes.  Every comparison under test runs in a session of its own
(``start_new_session``), so that "no orphan processes" is checked exactly: once the
comparison's parent is gone, no live process may remain in its process group.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
INSTANCES = ROOT / "instances"
PLUGIN = Path(__file__).resolve().parent / "plugin"
CLI = [sys.executable, "-m", "laissez_opt"]

#: The plugin modules register test methods and map memory when imported: never collect them
#: (``--doctest-modules`` would import them into the test process).
collect_ignore = ["plugin"]

#: Columns that measure this run rather than describe its outcome.
TIMING_COLUMNS = ("runtime_s", "peak_rss_mib")

if not sys.platform.startswith("linux"):
    pytest.skip("the fault-injection suite reads /proc (Linux)", allow_module_level=True)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgrp)`` of a live process, ``None`` if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def live_processes() -> list[tuple[int, str, int, int]]:
    """``(pid, state, ppid, pgrp)`` of every process that is not a zombie."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[0] != "Z":
                found.append((int(entry), *info))
    return found


def group_members(pgid: int) -> list[str]:
    """Live processes of process group ``pgid``, as ``"pid cmdline"``."""
    return [f"{pid} {_cmdline(pid)}" for pid, _, _, pgrp in live_processes() if pgrp == pgid]


def descendants(root: int) -> list[int]:
    """Live descendants of ``root``."""
    children: dict[int, list[int]] = {}
    for pid, _, ppid, _ in live_processes():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def worker_pids(root: int) -> list[int]:
    """The local executor's worker processes among ``root``'s descendants."""
    return [pid for pid in descendants(root) if "laissez_opt.harness.worker" in _cmdline(pid)]


def assert_group_gone(pgid: int, timeout: float = 5.0) -> None:
    """Wait until process group ``pgid`` has no live member; fail naming the survivors."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return
        time.sleep(0.05)
    survivors = group_members(pgid)
    for line in survivors:  # do not leave them running for the rest of the suite
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    pytest.fail(f"processes left behind in group {pgid}: {survivors}")


def assert_no_worker_children() -> None:
    """This (test) process has no worker process left, alive or unreaped."""
    left = [pid for pid, _, ppid, _ in live_processes() if ppid == os.getpid() and "harness.worker" in _cmdline(pid)]
    zombies = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[0] == "Z" and info[1] == os.getpid():
                zombies.append(int(entry))
    assert not left, f"worker processes still running: {left}"
    assert not zombies, f"worker processes never reaped: {zombies}"


def fault_env(markers: Path | None = None) -> dict:
    """The environment of a command under test: the test methods registered, markers directory set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PLUGIN), str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["LAISSEZ_FAULT_METHODS"] = "1"
    if markers is not None:
        env["LAISSEZ_FAULT_MARKERS"] = str(markers)
    return env


def start(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """Start ``laissez-opt ARGS`` in a new session (its pid is its process group).

    ``SIGINT`` is reset to its default in the command: a suite started as a background job of a
    non-interactive shell ignores it, the command would inherit that, and a Ctrl-C test would
    then wait for nothing.
    """
    return subprocess.Popen(CLI + [str(a) for a in args], cwd=cwd, env=env or fault_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``laissez-opt ARGS`` to completion, then check that it left no process behind."""
    proc = start(args, cwd, env)
    out, err = communicate_or_dump(proc, timeout)
    assert_group_gone(proc.pid)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def communicate_or_dump(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``proc.communicate(timeout)``; past the timeout, fail with the stacks of every thread of the
    command (``SIGUSR1``: the command's faulthandler writes them to stderr) and kill its group."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it may have ended just now
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the command did not end within {timeout} s; its threads then:\n{err[-6000:]}")


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    """Poll ``predicate`` every 20 ms until it returns something true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def outcome_rows(csv_path: Path) -> list[tuple]:
    """The rows of a ``results.csv`` without their timing columns, sorted: what a run produced."""
    with open(csv_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return sorted(tuple(sorted((k, v) for k, v in row.items() if k not in TIMING_COLUMNS)) for row in rows)


def assert_store_sound(store: Path, *, finished: bool) -> int:
    """Every record is whole and valid; when ``finished``, no temporary or claim file is left.

    Returns the number of records.
    """
    from laissez_opt.harness.store import RunStore

    run_store = RunStore(store)
    for key in run_store.keys():
        assert run_store.get(key) is not None, key  # raises DamagedRecord for a partial or bad record
    if finished:
        assert not list(store.glob(".*.tmp")), f"temporary files left: {list(store.glob('.*.tmp'))}"
        assert not run_store.claims(), f"claims left: {run_store.claims()}"
    return len(run_store.keys())


@pytest.fixture
def markers(tmp_path) -> Path:
    """A fresh directory for the test methods' marker files."""
    path = tmp_path / "markers"
    path.mkdir()
    return path


RUNS = 24


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    """A comparison of many short runs and the outcome rows of an uninterrupted run of it.

    Twenty-four runs: eight small instances (two worked examples, six generated) times
    ``welfare``, ``greedy`` and ``mtf`` with enough episodes to take a moment: with 10,000
    episodes the comparison had about 2 s of work left after its third finished run, too
    little for a kill point on a loaded machine; 30,000 leave several seconds after the
    twelfth.
    """
    import laissez_opt as lo

    base = tmp_path_factory.mktemp("reference")
    files = [INSTANCES / "hotos25-table1.json", INSTANCES / "thesis-r2-table3-1.json"]
    for seed in range(6):
        path = base / f"uniform-{seed}.json"
        lo.save_instance(lo.generate("uniform", 5, 3, seed=seed), path)
        files.append(path)
    args = ["compare", *files, "--methods", "welfare,greedy,mtf", "-p", "mtf.episodes=30000",
            "--workers", "2", "--no-plots"]
    done = run(args + ["-o", base / "out"], base)
    assert done.returncode == 0, done.stderr
    assert f"{RUNS} runs computed, 0 reused" in done.stderr
    return Reference(args, outcome_rows(base / "out" / "results.csv"))


@dataclass
class Reference:
    """The comparison's arguments (without ``-o``) and its outcome rows."""

    args: list
    rows: list

    def wait_for_kill_point(self, proc: subprocess.Popen, store: Path, rng) -> int:
        """Wait for a random point of the running comparison ``proc``: a random number of finished
        runs (up to half of them), or, for none, a random moment of its start-up.  Returns that number.

        Counting finished runs rather than seconds keeps the point inside the comparison
        on a loaded machine, as long as the runs left take longer than the test takes to
        notice the count (seconds here); a test that must be certain stalls a run instead.
        """
        finished = rng.randint(0, RUNS // 2)
        if finished == 0:
            time.sleep(rng.uniform(0.0, 0.5))
        else:
            wait_for(lambda: proc.poll() is not None or
                     (store.is_dir() and len(list(store.glob("*.json"))) >= finished),
                     timeout=120, what=f"{finished} finished runs")
        assert proc.poll() is None, "the comparison ended before the kill point"
        return finished
