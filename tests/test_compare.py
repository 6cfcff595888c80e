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
    table = compare([_instance(seed, agents, pools)], ["greedy", "welfare"], executor="inline")
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


def test_exact_methods_take_their_own_default_route_unless_a_solver_is_named():
    inst = _instance(3)
    default = {r["method"]: r for r in compare([inst], ["welfare"], executor="inline").rows}["welfare"]
    named = {r["method"]: r for r in compare([inst], ["welfare"], solver="highs", executor="inline").rows}["welfare"]
    by_solve = lo.solve(inst, "welfare")
    assert default["route"] == by_solve.route and default["solver"] == by_solve.solver
    assert named["solver"] == "highs"
    assert default["objective"] == pytest.approx(named["objective"], rel=1e-6)


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


def test_failed_run_is_a_row_not_a_crash_and_is_never_cached(tmp_path):
    table = compare([ROOT / "instances" / "hotos25-section5-bids.json"], ["min_cost", "welfare"])
    row = next(r for r in table.rows if r["method"] == "min_cost")
    assert row["status"] == "optimal"  # no required agent: placing nobody is optimal
    data = json.loads((ROOT / "instances" / "hotos25-table1.json").read_text())
    data["edges"][0].pop("cost")
    table = compare([lo.instance_from_dict(data)], ["min_cost", "welfare"], store=tmp_path)
    row = next(r for r in table.rows if r["method"] == "min_cost")
    assert row["status"] == "error"
    assert "$.edges[0].cost" in row["message"]
    assert len(RunStore(tmp_path).keys()) == 1  # only welfare's result
    again = compare([lo.instance_from_dict(data)], ["min_cost", "welfare"], store=tmp_path)
    assert (again.computed, again.reused) == (1, 1)


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
    from laissez_opt.io.jsonfile import _anonymous_works

    if _anonymous_works(store, store / ".probe.tmp"):
        # Records are written as unnamed inodes and named once finished: nothing half-written has a name.
        assert not list(store.glob(".*.tmp")), "a killed run left a half-written file"
    # Elsewhere (no O_TMPFILE, or a sandbox that cannot link one) a kill during a write may leave its
    # named temporary file; the next write of that record removes it, as the resumed run shows.
    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{24 - done} runs computed, {done} reused" in rerun.stderr
    assert (out / "results.csv").read_text().count("\n") == 25
    assert not list(store.glob(".*.tmp")), "a half-written record outlived the resumed run"


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
    with pytest.raises(lo.InputError, match="expected an Instance or the path of an instance file, got dict"):
        compare([{"pools": []}], ["welfare"])
    with pytest.raises(lo.InputError, match="executor"):
        compare([_instance(1)], ["welfare"], executor="slurm")


@pytest.mark.parametrize("kwargs, where, problem", [
    ({"workers": 0}, "workers", "must be an integer >= 1"),
    ({"workers": "2"}, "workers", "must be an integer >= 1"),
    ({"workers": True}, "workers", "must be an integer >= 1"),
    ({"scheduler": "tcp://127.0.0.1:8786"}, "scheduler", "with --executor dask only"),
    ({"time_limit": -1}, "time_limit", "must be a number > 0"),
    ({"time_limit": "5"}, "time_limit", "must be a number > 0"),
    ({"fractional": "no"}, "fractional", "must be true or false"),
    ({"pareto": 1}, "pareto", "must be true or false"),
    ({"run_memory": "12XB"}, "run_memory", "or a size such as 8G"),
    ({"run_memory": 10}, "run_memory", "at least 1 MiB"),
    ({"run_time": 0}, "run_time", "must be a number > 0"),
    ({"run_time": "soon"}, "run_time", "expected seconds"),
    ({"solver": "gurobi"}, "solver", "method 'welfare' supports solvers highs, ortools, not 'gurobi'"),
    ({"method_options": {"greedy": {"x": 1}}}, "method_options.greedy", "not in this comparison; methods: welfare, mtf"),
    ({"method_options": {"welfare": {"solver": "cplex"}}}, "method_options.welfare.solver", "supports solvers"),
    ({"method_options": {"mtf": 7}}, "method_options.mtf", "must be a mapping"),
    ({"objectives": ["speed"]}, "objectives", "unknown objective 'speed'"),
])
def test_bad_arguments_are_refused_before_any_run(tmp_path, kwargs, where, problem):
    store = tmp_path / "runs"
    with pytest.raises(lo.InputError) as caught:
        compare([ROOT / "instances" / "hotos25-table1.json"], ["welfare", "mtf"], store=store, **kwargs)
    assert caught.value.path == where
    assert problem in caught.value.problem
    assert not store.exists()  # nothing started, nothing written


@pytest.mark.parametrize("options, where, problem", [
    ({"bogus": 1}, "method_options.mtf.bogus", "mtf has no option 'bogus'; valid options: tokens, threshold, "),
    ({"normaliser": "raw"}, "method_options.mtf.normaliser", "(did you mean 'normalize'?)"),
    ({"tokens": "many"}, "method_options.mtf.tokens", "mtf expects an integer, got 'many'"),
    ({"episodes": 0}, "method_options.mtf.episodes", "mtf expects a value >= 1, got 0"),
])
def test_unknown_or_ill_typed_method_option_is_refused_before_any_run(tmp_path, options, where, problem):
    with pytest.raises(lo.InputError) as caught:
        compare([ROOT / "instances" / "hotos25-table1.json"], ["welfare", "mtf"], store=tmp_path / "runs",
                method_options={"mtf": options})
    assert caught.value.path == where
    assert problem in caught.value.problem
    assert not (tmp_path / "runs").exists()


def test_reference_method_options_are_checked_too(tmp_path):
    # maxmin runs only as the reference of min_phi, yet its options are checked like any other.
    with pytest.raises(lo.InputError) as caught:
        compare([ROOT / "instances" / "hotos25-table1.json"], ["greedy"], objectives=["min_phi"],
                method_options={"maxmin": {"normalizer": "nope"}}, store=tmp_path / "runs")
    assert caught.value.path == "method_options.maxmin.normalizer"
    assert not (tmp_path / "runs").exists()


def test_command_line_refuses_bad_options_with_exit_2(tmp_path):
    inst = str(ROOT / "instances" / "hotos25-table1.json")
    cases = [
        (["--solver", "gurobi"], "--solver: method 'welfare' supports solvers highs, ortools, not 'gurobi'"),
        (["-p", "greedy.tokens=3"], "--param greedy: options given for 'greedy', which is not in this comparison"),
        (["-p", "mtf.bogus=raw"], "--param mtf.bogus: mtf has no option 'bogus'; valid options: tokens, "),
        (["-p", "welfare.check=false"], "--param welfare.check: welfare has no option 'check'"),
        (["-p", "mtf.tokens=many"], "--param mtf.tokens: mtf expects an integer, got 'many' (str)"),
        (["-p", "mtf"], "--param: expected METHOD.KEY=VALUE, got 'mtf'"),
        (["--run-memory", "lots"], "--run-memory: expected 'auto', 'none' or a size such as 8G"),
        (["--run-time", "-3"], "--run-time: must be a number > 0"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler: a scheduler address goes with --executor dask only"),
    ]
    for extra, message in cases:
        out = tmp_path / "out"
        proc = subprocess.run(CLI + ["compare", inst, "--methods", "welfare,mtf", "-o", str(out), *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (extra, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"laissez-opt: error: {message}"), (extra, proc.stderr)
        assert not out.exists(), extra


def test_run_store_keys_change_with_the_library_version():
    from laissez_opt.harness.store import run_key

    assert run_key("abc", "welfare", {}, version="1.0") != run_key("abc", "welfare", {}, version="1.1")
    assert run_key("abc", "welfare", {}, version="1.0") == run_key("abc", "welfare", {}, version="1.0")


def test_caps_parse_and_default():
    from laissez_opt.harness import parse_run_memory, parse_run_time

    assert parse_run_memory("512MiB") == 512 * 2**20
    assert parse_run_memory("2G") == parse_run_memory("2 gib") == 2 * 2**30
    assert parse_run_memory("2GB") == 2 * 10**9
    assert parse_run_memory("none") is None and parse_run_memory(None) is None
    assert 0 < parse_run_memory("auto", workers=4) < parse_run_memory("auto", workers=1)
    assert parse_run_time("auto", 120.0) == 300.0
    assert parse_run_time("auto", None) is None
    assert parse_run_time("2.5") == 2.5


def test_a_method_that_cannot_reach_a_worker_runs_here_by_default_and_is_refused_when_workers_are_asked_for():
    from declared_models import frugal_welfare

    inst = lo.load(ROOT / "instances" / "hotos25-table1.json")
    lo.register_method("frugal_here", lambda instance: frugal_welfare(instance))
    try:
        with pytest.warns(UserWarning, match="'frugal_here' cannot be sent to a worker process .* runs in this process"):
            table = compare([inst], ["frugal_here", "greedy"])
        assert {row["method"]: row["status"] for row in table.rows}["frugal_here"] == "optimal"
        for explicit in ({"executor": "local"}, {"workers": 2}):
            with pytest.raises(lo.InputError, match="'frugal_here' was registered in this process.*cannot be pickled"):
                compare([inst], ["frugal_here"], **explicit)
    finally:
        lo.unregister_method("frugal_here")


def test_cli_shows_each_failure_counts_them_and_exits_6(tmp_path):
    data = json.loads((ROOT / "instances" / "hotos25-table1.json").read_text())
    data["edges"][0].pop("cost")
    path = tmp_path / "nocost.json"
    path.write_text(json.dumps(data))
    proc = subprocess.run(CLI + ["compare", str(path), "--methods", "min_cost,welfare", "--executor", "inline",
                                 "--no-plots", "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 6, proc.stderr
    assert "$.edges[0].cost" in proc.stdout  # the reason, under the terminal table
    assert "1 failed" in proc.stderr and "1 of 2 runs failed" in proc.stderr.splitlines()[-1]
    assert "$.edges[0].cost" in (tmp_path / "out" / "results.md").read_text()
