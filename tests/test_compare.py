"""The comparison harness: gaps, the run store, resuming after a kill, executors, outputs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.harness import RunStore, compare, write_reports

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "laissez_opt"]


def _instance(seed: int, agents: int = 6, pools: int = 3):
    return lo.generate("uniform", agents, pools, seed=seed)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), agents=st.integers(1, 8), pools=st.integers(1, 4))
def test_gaps_are_never_negative_against_a_proven_optimum(seed, agents, pools):
    table = compare([_instance(seed, agents, pools)], ["greedy", "welfare"])
    reference = next(r for r in table.rows if r["method"] == "welfare")
    assert reference["status"] == "optimal"
    for row in table.rows:
        assert row["gap_weighted_welfare"] is not None
        assert row["gap_weighted_welfare"] >= 0.0
    assert reference["gap_weighted_welfare"] == 0.0


def test_reference_method_is_added_and_marked():
    table = compare([ROOT / "instances" / "hotos25-table1.json"], ["greedy"])
    methods = {r["method"]: r for r in table.rows}
    assert methods["welfare"]["reference_only"] is True
    assert methods["greedy"]["reference_only"] is False
    assert methods["greedy"]["gap_weighted_welfare"] == 0.0


def test_store_reuses_finished_runs(tmp_path):
    instances = [_instance(1), _instance(2)]
    first = compare(instances, ["welfare", "greedy"], store=tmp_path)
    assert (first.computed, first.reused) == (4, 0)
    assert len(RunStore(tmp_path).keys()) == 4
    second = compare(instances, ["welfare", "greedy"], store=tmp_path)
    assert (second.computed, second.reused) == (0, 4)
    assert [r["objective"] for r in first.rows] == [r["objective"] for r in second.rows]
    # A different parameter is a different run.
    third = compare(instances, ["welfare"], store=tmp_path, time_limit=30.0)
    assert third.computed == 2


def test_failed_run_is_a_row_not_a_crash():
    table = compare([ROOT / "instances" / "hotos25-section5-bids.json"], ["min_cost", "welfare"])
    row = next(r for r in table.rows if r["method"] == "min_cost")
    assert row["status"] == "optimal"  # no required agent: placing nobody is optimal
    data = json.loads((ROOT / "instances" / "hotos25-table1.json").read_text())
    data["edges"][0].pop("cost")
    table = compare([lo.instance_from_dict(data)], ["min_cost", "welfare"])
    row = next(r for r in table.rows if r["method"] == "min_cost")
    assert row["status"] == "error"
    assert "$.edges[0].cost" in row["message"]


def test_resumes_after_being_killed(tmp_path):
    files = []
    for seed in range(12):
        path = tmp_path / f"inst{seed}.json"
        lo.save_instance(lo.generate("gavel", 2000, 6, seed=seed), path)
        files.append(str(path))
    out = tmp_path / "out"
    command = CLI + ["compare", *files, "--methods", "welfare,greedy", "-o", str(out), "--workers", "1", "--no-plots"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    store = out / "runs"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if store.is_dir() and len(list(store.glob("*.json"))) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the comparison finished before it could be killed; make it larger"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(store.glob("*.json")))
    assert 2 <= done < 24
    assert not list(store.glob(".*.tmp")), "a killed run left a half-written file"
    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{24 - done} runs computed, {done} reused" in rerun.stderr
    assert (out / "results.csv").read_text().count("\n") == 25


def test_local_pool_and_dask_give_the_same_rows(tmp_path):
    pytest.importorskip("distributed")
    instances = [_instance(5), _instance(6)]
    pooled = compare(instances, ["welfare", "greedy"], workers=2)
    dasked = compare(instances, ["welfare", "greedy"], workers=2, executor="dask")
    key = lambda r: (r["instance_hash"], r["method"])  # noqa: E731
    assert sorted((key(r), r["objective"], r["status"]) for r in pooled.rows) == sorted(
        (key(r), r["objective"], r["status"]) for r in dasked.rows
    )


def test_reports_are_written(tmp_path):
    table = compare([_instance(3), _instance(4, 12, 4)], ["welfare", "greedy"])
    written = write_reports(table, tmp_path)
    names = {p.name for p in written}
    assert {"results.csv", "results.md", "runtime.png", "gap_weighted_welfare.png"} <= names
    header = (tmp_path / "results.csv").read_text().splitlines()[0].split(",")
    assert {"instance", "method", "gap_weighted_welfare", "runtime_s", "min_phi"} <= set(header)
    assert (tmp_path / "runtime.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| greedy |" in (tmp_path / "results.md").read_text()


def test_bad_input_to_compare():
    with pytest.raises(lo.InputError, match="unknown method"):
        compare([_instance(1)], ["nope"])
    with pytest.raises(lo.InputError, match="executor"):
        compare([_instance(1)], ["welfare"], executor="slurm")
