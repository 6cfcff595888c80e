"""A worker killed while it runs: the run becomes an error row, the pool is rebuilt, the rest goes on."""

from __future__ import annotations

import csv
import os
import random
import signal
import time

import pytest

from .conftest import (INSTANCES, assert_group_gone, assert_store_sound, communicate_or_dump, fault_env, outcome_rows,
                       run, start,
                       wait_for, worker_pids)

TABLE1 = INSTANCES / "hotos25-table1.json"
R2 = INSTANCES / "thesis-r2-table3-1.json"


def _started(markers):
    return sorted(p for p in markers.iterdir() if p.name.startswith("fault_stall.") and not p.name.endswith(".tmp"))


def test_worker_killed_mid_run_is_an_error_row_and_the_rest_completes(tmp_path, markers):
    out = tmp_path / "out"
    args = ["compare", TABLE1, R2, "--methods", "welfare,greedy,fault_stall", "--workers", "2", "--no-plots", "-o", out]
    proc = start(args, tmp_path, fault_env(markers))
    first = wait_for(lambda: _started(markers), what="a fault_stall run to start")[0]
    victim = int(first.read_text())
    assert victim in worker_pids(proc.pid)
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: len(_started(markers)) >= 2, what="the other fault_stall run to start")
    (markers / "release").touch()
    stdout, stderr = communicate_or_dump(proc, 60)
    assert proc.returncode == 6, stderr  # the table is written; the failed run is reported
    assert_group_gone(proc.pid)
    assert "1 failed" in stderr
    rows = {(r["instance"], r["method"]): r for r in _rows(out)}
    killed_instance = first.name.split(".", 2)[2]
    failed = rows[(killed_instance, "fault_stall")]
    assert failed["status"] == "error"
    assert f"worker process died (signal 9, SIGKILL) while running fault_stall on {killed_instance}" in failed["message"]
    assert failed["error_kind"] == "worker_died"
    others = [r for key, r in rows.items() if key != (killed_instance, "fault_stall")]
    assert len(others) == 5 and all(r["status"] in ("optimal", "feasible") for r in others)
    assert "worker process died (signal 9, SIGKILL)" in (out / "results.md").read_text()
    # The failure was not stored: the next comparison runs exactly that run again.
    assert assert_store_sound(out / "runs", finished=True) == 5
    rerun = run(args, tmp_path, fault_env(markers))
    assert rerun.returncode == 0, rerun.stderr
    assert "1 runs computed, 5 reused" in rerun.stderr


def _rows(out) -> list[dict]:
    with open(out / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("seed", [1, 12])  # after 2 and 7 finished runs
def test_worker_killed_at_a_random_moment_then_resume_matches_an_uninterrupted_run(tmp_path, seed, reference_run):
    args, reference = reference_run.args, reference_run.rows
    out = tmp_path / "out"
    rng = random.Random(seed)
    proc = start(args + ["-o", out], tmp_path)
    reference_run.wait_for_kill_point(proc, out / "runs", rng)
    alive = wait_for(lambda: worker_pids(proc.pid), what="a worker process")
    os.kill(rng.choice(alive), signal.SIGKILL)
    stdout, stderr = communicate_or_dump(proc, 120)
    # At most the killed run failed (none if the worker was between runs), and the exit code says which.
    assert "runs computed" in stderr and ("failed" not in stderr or ", 1 failed" in stderr)
    assert proc.returncode == (6 if ", 1 failed" in stderr else 0), stderr
    assert_group_gone(proc.pid)
    assert_store_sound(out / "runs", finished=True)
    resumed = run(args + ["-o", out], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert outcome_rows(out / "results.csv") == reference


def test_sigusr1_writes_the_stacks_and_the_run_goes_on(tmp_path, markers):
    """``kill -USR1`` on a command that seems stuck shows what it is doing, and changes nothing else."""
    out = tmp_path / "out"
    args = ["compare", TABLE1, "--methods", "greedy,fault_stall", "--workers", "1", "--no-plots", "-o", out]
    proc = start(args, tmp_path, fault_env(markers))
    wait_for(lambda: _started(markers), what="a fault_stall run to start")
    os.kill(proc.pid, signal.SIGUSR1)
    time.sleep(0.5)
    (markers / "release").touch()
    _, stderr = communicate_or_dump(proc, 60)
    assert proc.returncode == 0, stderr
    assert "(most recent call first)" in stderr and "run_local_pool" in stderr  # the parent's stack, at its wait
    assert_group_gone(proc.pid)
    statuses = {r["method"]: r["status"] for r in _rows(out)}  # welfare too: the reference of the gaps
    assert statuses["greedy"] == statuses["fault_stall"] == "feasible"
