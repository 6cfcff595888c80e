"""The local executor's protocol with its workers: what a worker cannot do is reported, never awaited."""

from __future__ import annotations

import pytest

from laissez_opt.errors import LaissezOptError
from laissez_opt.harness.executors import Failure, run_local_pool

from .conftest import PLUGIN, assert_no_worker_children


@pytest.fixture
def plugin_on_path(monkeypatch):
    """The test task functions importable here and in worker processes."""
    monkeypatch.setenv("PYTHONPATH", str(PLUGIN))
    monkeypatch.syspath_prepend(str(PLUGIN))


def test_a_task_the_worker_cannot_rebuild_is_that_runs_failure(plugin_on_path):
    import fault_tasks

    tasks = [{"n": 1, "payload": fault_tasks.ExplodesOnLoad()}, {"n": 2}]
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=1))
    assert [task["n"] for task, _ in outcomes] == [1, 2]
    failure = outcomes[0][1]
    assert isinstance(failure, Failure) and failure.kind == "crashed"
    assert "cannot receive the run: RuntimeError: this task cannot be rebuilt" in failure.message
    assert outcomes[1][1]["task"] == {"n": 2}  # the same worker goes on
    assert_no_worker_children()


def test_workers_that_cannot_start_are_reported_once(plugin_on_path, monkeypatch):
    import fault_tasks

    monkeypatch.setenv("LAISSEZ_FAULT_BREAK_STARTUP", "1")
    with pytest.raises(LaissezOptError, match=r"cannot start worker processes \(exit status 3\)"):
        list(run_local_pool(fault_tasks.dispatch, [{"n": 1}, {"n": 2}], workers=2))
    assert_no_worker_children()


def test_each_worker_keeps_to_its_own_instances(plugin_on_path):
    """With affinity, the runs of one instance go to the worker that took its first run."""
    import fault_tasks

    # Instance-major order, as compare plans: without affinity the second worker would take
    # the second run of the first instance.
    tasks = [{"instance": i, "method": m, "action": "sleep", "seconds": 0.2} for i in range(4) for m in range(3)]
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=2, affinity=lambda task: task["instance"]))
    assert len(outcomes) == len(tasks)
    workers_of = {}
    for task, outcome in outcomes:
        workers_of.setdefault(task["instance"], set()).add(outcome["pid"])
    assert all(len(pids) == 1 for pids in workers_of.values()), workers_of
    assert len(set().union(*workers_of.values())) == 2  # both workers ran something
    assert_no_worker_children()


def test_without_affinity_the_queue_order_is_kept(plugin_on_path):
    import fault_tasks

    tasks = [{"n": n} for n in range(5)]
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=1))
    assert [task["n"] for task, _ in outcomes] == list(range(5))
    assert_no_worker_children()
