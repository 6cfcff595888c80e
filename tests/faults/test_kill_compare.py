"""``compare`` itself killed (SIGKILL at a random moment, SIGTERM, SIGINT): nothing left behind, resume is exact."""

from __future__ import annotations

import os
import random
import signal

import pytest

from .conftest import (
    assert_group_gone, assert_store_sound, communicate_or_dump, fault_env, outcome_rows, run, start, wait_for,
    worker_pids,
)


@pytest.mark.parametrize("seed", [11, 13, 2])  # after 7 and 4 finished runs, and during start-up
def test_sigkill_of_the_parent_at_a_random_moment(tmp_path, seed, reference_run):
    args, reference = reference_run.args, reference_run.rows
    out = tmp_path / "out"
    proc = start(args + ["-o", out], tmp_path)
    reference_run.wait_for_kill_point(proc, out / "runs", random.Random(seed))
    os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must notice on their own
    proc.communicate()
    assert_group_gone(proc.pid)
    if (out / "runs").is_dir():
        stored = assert_store_sound(out / "runs", finished=False)  # whole records only, whatever the moment
        assert stored < len(reference)
    for name in ("results.csv", "results.md"):
        assert not (out / name).exists() or (out / name).read_text().endswith("\n")
    resumed = run(args + ["-o", out], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert outcome_rows(out / "results.csv") == reference
    assert_store_sound(out / "runs", finished=True)
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("how, code, said", [(signal.SIGTERM, 130, "interrupted"), (signal.SIGINT, 130, "interrupted")])
def test_terminated_or_interrupted_compare_cleans_up(tmp_path, how, code, said, reference_run):
    args, reference = reference_run.args, reference_run.rows
    out = tmp_path / "out"
    markers = tmp_path / "markers"
    markers.mkdir()
    # A stalled run keeps the comparison busy until the signal comes: counting finished runs alone
    # left it about 2 s of work after the third, which a loaded machine could let it finish first.
    methods = args.index("--methods") + 1
    stalling = args[:methods] + [args[methods] + ",fault_stall"] + args[methods + 1:]
    proc = start(stalling + ["-o", out], tmp_path, fault_env(markers))
    wait_for(lambda: (out / "runs").is_dir() and len(list((out / "runs").glob("*.json"))) >= 3
             and any(not p.name.endswith(".tmp") for p in markers.glob("fault_stall.*")), what="three runs and a stall")
    assert proc.poll() is None and worker_pids(proc.pid)
    if how == signal.SIGINT:
        os.killpg(proc.pid, how)  # a Ctrl-C on a terminal reaches the whole foreground group
    else:
        os.kill(proc.pid, how)
    _, stderr = communicate_or_dump(proc, 30)
    assert proc.returncode == code, stderr
    assert f"laissez-opt: {said}" in stderr
    assert "Traceback" not in stderr
    assert_group_gone(proc.pid)
    assert_store_sound(out / "runs", finished=True)  # claims dropped and no temporary file, even now
    resumed = run(args + ["-o", out], tmp_path)  # without the stalling method: the runs stored are reused
    assert resumed.returncode == 0, resumed.stderr
    assert outcome_rows(out / "results.csv") == reference
