"""``simulate`` killed (the parent at a random moment, or one of its workers): nothing left behind,
only whole records in the run store, and a rerun writes exactly what an uninterrupted sweep writes."""

from __future__ import annotations

import json
import os
import random
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import assert_group_gone, communicate_or_dump, run, start, wait_for, worker_pids

#: Three policies x six seeds plus six hindsight bounds: 24 tasks of a fraction of a second each.
CONFIG = {
    "format": "laissez-opt/simulation", "version": 1,
    "generate": {"family": "gemmini", "agents": 6, "pools": 2, "params": {"weights": "1-2"}},
    "rounds": 200, "seeds": 6, "workload": {"load": 1.2, "deadline": 3},
    "policies": [{"name": "mtf", "options": {"threshold": "hedge"}}, "gandiva_fair", "welfare"],
    "hindsight": True,
}
TASKS = 24
#: What a sweep writes that does not depend on how long each run took or where it ran.
OUTPUTS = ("rounds.csv", "agents.csv", "runs.csv", "summary.csv", "summary.json", "summary.md", "hindsight.csv")


@dataclass
class Reference:
    config: Path
    files: dict


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
    """An uninterrupted sweep of :data:`CONFIG` with two workers, and the bytes of its outputs."""
    base = tmp_path_factory.mktemp("simulate-reference")
    config = base / "sweep.json"
    config.write_text(json.dumps(CONFIG))
    done = run(["simulate", config, "--workers", "2", "--no-plots", "-o", base / "out"], base)
    assert done.returncode == 0, done.stderr
    assert f"{TASKS} tasks computed, 0 reused" in done.stderr
    return Reference(config, {name: (base / "out" / name).read_bytes() for name in OUTPUTS})


def _records(store: Path) -> int:
    return len(list(store.glob("*.json"))) if store.is_dir() else 0


def _assert_store_whole(store: Path) -> int:
    """Every record of a simulation store reads back as a run or a bound; returns how many there are."""
    from laissez_opt.harness.store import RunStore
    from laissez_opt.simulate.sweep import check_stored_row

    run_store = RunStore(store, check_row=check_stored_row, allow_nan=True)
    for key in run_store.keys():
        assert run_store.get(key) is not None, key  # DamagedRecord for a partial record
    return len(run_store.keys())


def _assert_same_outputs(out: Path, ref: Reference) -> None:
    for name in OUTPUTS:
        assert (out / name).read_bytes() == ref.files[name], name


@pytest.mark.parametrize("seed", [3, 8])
def test_sigkill_of_simulate_then_rerun_matches_an_uninterrupted_sweep(tmp_path, seed, reference):
    out = tmp_path / "out"
    args = ["simulate", reference.config, "--workers", "2", "--no-plots", "-o", out]
    proc = start(args, tmp_path)
    finished = random.Random(seed).randint(1, TASKS // 2)
    wait_for(lambda: proc.poll() is not None or _records(out / "runs") >= finished, timeout=120,
             what=f"{finished} finished runs")
    assert proc.poll() is None, "the sweep ended before the kill point"
    os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must notice on their own
    proc.communicate()
    assert_group_gone(proc.pid)
    assert finished <= _assert_store_whole(out / "runs") < TASKS
    assert not any((out / name).exists() for name in OUTPUTS)  # tables are written once, at the end
    resumed = run(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "reused" in resumed.stderr and "0 reused" not in resumed.stderr
    _assert_same_outputs(out, reference)
    assert not list((out / "runs").glob(".*.tmp")) and not list(out.glob(".*.tmp"))


def test_a_killed_worker_fails_only_its_run_and_a_rerun_completes_the_sweep(tmp_path, reference):
    out = tmp_path / "out"
    args = ["simulate", reference.config, "--workers", "2", "--no-plots", "-o", out]
    proc = start(args, tmp_path)
    wait_for(lambda: proc.poll() is not None or _records(out / "runs") >= 2, timeout=120, what="two finished runs")
    alive = wait_for(lambda: worker_pids(proc.pid) or proc.poll() is not None, what="a worker process")
    if isinstance(alive, list):
        os.kill(alive[0], signal.SIGKILL)
    _, stderr = communicate_or_dump(proc, 120)
    assert_group_gone(proc.pid)
    assert "Traceback" not in stderr
    stored = _assert_store_whole(out / "runs")
    if proc.returncode == 6:  # the worker was running a task: that run alone failed, the rest were stored
        assert "1 of" in stderr and "runs failed" in stderr and "worker process died" in stderr, stderr
        assert stored == TASKS - 1
    else:  # the worker was between tasks: the pool replaced it and nothing was lost
        assert proc.returncode == 0, stderr
    resumed = run(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_outputs(out, reference)
