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
    """With affinity, a worker stays with the instances it began; two share one only when nothing else is left."""
    import fault_tasks

    # Instance-major order, as compare plans: without affinity the second worker would take
    # the second run of the first instance.
    tasks = [{"instance": i, "method": m, "action": "sleep", "seconds": 0.2} for i in range(4) for m in range(3)]
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=2, affinity=lambda task: task["instance"]))
    assert len(outcomes) == len(tasks)
    runs = sorted((outcome["started"], task["instance"], outcome["pid"]) for task, outcome in outcomes)
    first_start = {}
    for started, instance, _ in runs:
        first_start.setdefault(instance, started)
    last_instance_begun = max(first_start.values())
    first_worker = {}
    for started, instance, pid in runs:
        holder = first_worker.setdefault(instance, pid)
        if pid != holder:
            # A worker may join another's instance only once every instance has been begun (the end
            # of the queue, where sharing beats idling); the margin covers the pipe between the
            # supervisor's hand-over and the run's start, far below one 0.2 s run.
            assert started >= last_instance_begun - 0.05, (instance, runs)
    assert len({pid for _, _, pid in runs}) == 2  # both workers ran something
    assert_no_worker_children()


def test_without_affinity_the_queue_order_is_kept(plugin_on_path):
    import fault_tasks

    tasks = [{"n": n} for n in range(5)]
    outcomes = list(run_local_pool(fault_tasks.dispatch, tasks, workers=1))
    assert [task["n"] for task, _ in outcomes] == list(range(5))
    assert_no_worker_children()
