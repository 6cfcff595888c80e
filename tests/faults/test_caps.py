"""Per-run memory and time caps: a run over its cap is an error row naming the cap; the rest goes on."""

from __future__ import annotations

import csv
import time

import pytest

from laissez_opt.harness.executors import Failure, Limits, run_local_pool

from .conftest import INSTANCES, PLUGIN, assert_no_worker_children, assert_store_sound, fault_env, run

TABLE1 = INSTANCES / "hotos25-table1.json"
CAP_MIB = 200


def _rows(out) -> dict:
    with open(out / "results.csv", newline="") as handle:
        return {row["method"]: row for row in csv.DictReader(handle)}


def test_a_run_over_the_memory_cap_is_an_error_row(tmp_path, markers):
    out = tmp_path / "out"
    args = ["compare", TABLE1, "--methods", "welfare,fault_hog", "--run-memory", f"{CAP_MIB}MiB",
            "--workers", "2", "--no-plots", "-o", out]
    done = run(args, tmp_path, fault_env(markers))
    assert done.returncode == 6 and "1 of 2 runs failed" in done.stderr, done.stderr  # reported, not fatal
    rows = _rows(out)
    hog = rows["fault_hog"]
    assert hog["status"] == "error" and hog["error_kind"] == "memory_cap"
    assert hog["message"].startswith(f"run memory cap of {CAP_MIB}.0 MiB exceeded")
    # The worker's whole resident size (interpreter and libraries included) stayed near the cap.
    assert float(hog["peak_rss_mib"]) < CAP_MIB + 250
    assert rows["welfare"]["status"] == "optimal"
    assert assert_store_sound(out / "runs", finished=True) == 1  # the failure is not cached


def test_a_run_over_the_time_cap_is_stopped_and_is_an_error_row(tmp_path, markers):
    out = tmp_path / "out"
    args = ["compare", TABLE1, "--methods", "welfare,fault_stall", "--run-time", "1", "--workers", "2",
            "--no-plots", "-o", out]
    began = time.monotonic()
    done = run(args, tmp_path, fault_env(markers))
    assert done.returncode == 6 and "1 of 2 runs failed" in done.stderr, done.stderr  # reported, not fatal
    assert time.monotonic() - began < 20  # the stalled run alone would take 60 s
    stalled = _rows(out)["fault_stall"]
    assert stalled["status"] == "error" and stalled["error_kind"] == "time_cap"
    assert stalled["message"].startswith("run time cap of 1 s exceeded while running fault_stall on hotos25-table1")
    assert assert_store_sound(out / "runs", finished=True) == 1


@pytest.fixture
def plugin_on_path(monkeypatch):
    """The test task functions importable here and in worker processes."""
    monkeypatch.setenv("PYTHONPATH", str(PLUGIN))
    monkeypatch.syspath_prepend(str(PLUGIN))


def test_resident_memory_watchdog_stops_memory_the_address_space_limit_cannot_see(plugin_on_path):
    import fault_tasks

    tasks = [{"action": "touch_reserved", "method": "touch_reserved", "source": "reserved"}, {"n": 1}, {"n": 2}]
    began = time.monotonic()
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=1, limits=Limits(memory=CAP_MIB * 2**20)))
    assert time.monotonic() - began < 30
    assert [task for task, _ in outcomes] == tasks
    failure = outcomes[0][1]
    assert isinstance(failure, Failure) and failure.kind == "memory_cap", failure
    assert "resident memory grew by" in failure.message and f"cap of {CAP_MIB}.0 MiB" in failure.message
    assert failure.peak_rss_mib < 1024  # stopped well before the whole reserved GiB became resident
    # The pool's only worker was replaced and the remaining runs completed.
    assert [outcome["task"] for _, outcome in outcomes[1:]] == tasks[1:]
    assert_no_worker_children()


def test_a_run_whose_estimate_exceeds_the_memory_cap_is_refused_before_it_starts(tmp_path):
    import laissez_opt as lo
    from laissez_opt.harness import compare

    inst = lo.generate("gavel", 400, 4, seed=1)  # integral maxmin: 400^2 ordered-outcome columns, about 230 MiB
    table = compare([inst], ["greedy", "maxmin"], objectives=["weighted_welfare"], run_memory="100MiB",
                    method_options={"maxmin": {"levels": "ordered_outcomes"}}, store=tmp_path / "runs")
    rows = {row["method"]: row for row in table.rows}
    refused = rows["maxmin"]
    assert refused["status"] == "error" and refused["error_kind"] == "memory_cap"
    assert refused["message"].startswith("run memory cap of 100.0 MiB exceeded by the estimate: maxmin would need")
    assert refused["message"].endswith("refused before running")
    assert refused["runtime_s"] < 5
    assert rows["greedy"]["status"] == "feasible" and rows["welfare"]["status"] == "optimal"
    assert len(list((tmp_path / "runs").glob("*.json"))) == 2
    assert_no_worker_children()


def test_compiled_kernels_run_under_a_memory_cap_in_a_fresh_worker(tmp_path):
    """numba's first load inside a capped worker used to spin in OpenBLAS: the worker loads it before the cap."""
    import laissez_opt as lo
    from laissez_opt.harness import compare

    inst = lo.generate("gavel", 400, 4, seed=1)
    start = time.perf_counter()
    table = compare([inst], ["greedy", "mtf", "auction"], objectives=["weighted_welfare"], run_memory="100MiB",
                    run_time=60, workers=1, executor="local", store=tmp_path / "runs")
    rows = {row["method"]: row for row in table.rows}
    assert {m: rows[m]["status"] for m in ("greedy", "mtf", "auction")} == dict.fromkeys(
        ("greedy", "mtf", "auction"), "feasible"), [rows[m].get("message") for m in rows]
    assert time.perf_counter() - start < 60
    assert_no_worker_children()
