"""Partitioned solving under a time limit: the parts stop at the run's deadline, the bound stays proven.

A part not started by the deadline gives its agents nothing (``not_run``), one running
at it keeps its last feasible point (``time_limit``); the run's status is then
``time_limit``, the merged allocation verified, and the bound (any prices and level
duals give one) still at least the whole optimum.  No allocation at all: NoSolutionError,
exit code 4 on the command line.
"""

from __future__ import annotations

import json
import time
import types

import numpy as np
import pytest
from click.testing import CliRunner

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.cli.main import cli
from laissez_opt.errors import NoSolutionError
from laissez_opt.modeling.highs_route import limit_next_run
from laissez_opt.partition import core, levels, run, themis


def _instance(seed: int = 4, n: int = 60, m: int = 5) -> lo.Instance:
    rng = np.random.default_rng(seed)
    pools = [lo.Pool(f"P{c}", count=int(rng.integers(1, 6))) for c in range(m)]
    agents = [lo.Agent(f"A{i}", weight=float(rng.uniform(0.5, 2.0)), demand=int(rng.integers(1, 3)), work=5.0)
              for i in range(n)]
    edges = [lo.Edge(f"A{i}", f"P{c}", float(rng.uniform(0.1, 1.0)))
             for i in range(n) for c in sorted(set(rng.integers(0, m, size=3).tolist()))]
    return lo.Instance(pools=pools, agents=agents, edges=edges, name=f"tl-{seed}")


def test_limit_next_run_counts_from_the_accumulated_run_clock():
    """HiGHS compares time_limit with the run time summed over every run() of the object."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    inf = highspy.kHighsInf
    h.addVars(2, np.zeros(2), np.full(2, inf))
    h.changeColsCost(2, np.array([0, 1], dtype=np.int32), np.array([-1.0, -2.0]))
    h.addRow(-inf, 4.0, 2, np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]))
    for _ in range(3):
        h.clearSolver()
        h.run()
    spent = h.getRunTime()
    assert spent > 0
    limit_next_run(h, 2.5)
    assert h.getOptionValue("time_limit")[1] == pytest.approx(spent + 2.5)
    h.clearSolver()
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    limit_next_run(h, None)
    assert h.getOptionValue("time_limit")[1] == inf


@pytest.mark.parametrize("method", ["welfare", "maxmin", "themis"])
def test_a_generous_limit_changes_nothing(method):
    inst = _instance()
    kw = {} if method == "welfare" else {"fractional": True}
    free = lo.solve(inst, method, partitions=3, **kw)
    timed = lo.solve(inst, method, partitions=3, time_limit=600, **kw)
    assert timed.status == free.status == "feasible"
    assert timed.objective == pytest.approx(free.objective, rel=1e-9) and timed.bound == pytest.approx(free.bound)
    assert timed.params["time_limit"] == 600 and free.params["time_limit"] is None
    assert timed.details["partition"]["not_run"] == [] == timed.details["partition"]["stopped_at_deadline"]


def test_no_allocation_in_time_is_no_solution(tmp_path):
    inst = _instance()
    with pytest.raises(NoSolutionError, match="before any of the 3 parts"):
        lo.solve(inst, "maxmin", fractional=True, partitions=3, time_limit=1e-9)
    path = tmp_path / "inst.json"
    lo.save_instance(inst, path)
    out = CliRunner().invoke(cli, ["solve", str(path), "--method", "welfare", "--time-limit", "1e-9",
                                   "-p", "partitions=2"])
    assert out.exit_code == 4, out.output
    assert "Traceback" not in out.output and len(out.output.strip().splitlines()) == 1


def _clock_jumps_after_first_part(monkeypatch):
    """After the first part, the parts' clock reads past any deadline (the inline executor runs them in order)."""
    jumped = {"on": False}
    fake = types.SimpleNamespace(time=lambda: time.time() + (1e9 if jumped["on"] else 0.0),
                                 perf_counter=time.perf_counter, process_time=time.process_time)
    monkeypatch.setattr(core, "time", fake)
    real = run.solve_part

    def solve_then_jump(task):
        out = real(task)
        jumped["on"] = True
        return out

    monkeypatch.setattr(run, "solve_part", solve_then_jump)


@pytest.mark.parametrize("method", ["welfare", "maxmin"])
def test_parts_not_started_get_nothing_and_the_bound_stays_proven(monkeypatch, method):
    inst = _instance(7, 80, 6)
    kw = {"fractional": True}
    whole = lo.solve(inst, method, **kw)
    assert whole.status == "optimal"
    _clock_jumps_after_first_part(monkeypatch)
    r = lo.solve(inst, method, partitions=3, time_limit=600, **kw)
    d = r.details["partition"]
    assert r.status == "time_limit" and d["not_run"] == [2, 3] and d["allocated_parts"] == 1
    assert [p["status"] for p in d["parts"]][1:] == ["not_run", "not_run"]
    assert r.verified and verify(inst, r).ok
    assert "not started" in r.message and "hold their agents at 0" in d["gap_note"]
    # The agents of the parts not run get nothing.
    part_of = core.split_agents(len(inst.agents), 3, 0)
    served = {a["agent"] for a in r.allocation if a["amount"] > 0}
    ids = [a.id for a in inst.agents]
    assert served and not served & {ids[i] for i in np.flatnonzero(part_of != 0)}
    if method == "welfare":
        assert 0 < r.objective <= whole.objective + 1e-9 <= r.bound + 2e-9 and 0 <= r.gap < 10
    else:
        # Agents of the parts not run sit at 0: the max-min is 0, and no relative gap is claimed.
        assert r.objective == 0 and r.gap is None and r.bound >= whole.objective - 1e-9


def test_a_leximin_part_stopped_between_levels_keeps_its_last_level(monkeypatch):
    inst = _instance(11, 40, 12)
    problem = run.problem_of(inst).for_method("maxmin", core.equal_share_normalizer(run.problem_of(inst)))
    task = core.part_tasks(problem, 1, 0, "maxmin", integral=False, capacity_split="equal")[0][0]
    task.update(levels="all", caps=False, face=False)
    full = levels.leximin_part(dict(task))
    assert full["status"] == "optimal" and len(full["levels"]) >= 3
    answers = iter([60.0, 60.0])  # before the first LP, then at the top of the first level
    monkeypatch.setattr(levels, "remaining", lambda: next(answers, 0.0))
    cut = levels.leximin_part(dict(task))
    assert cut["status"] == core.STOPPED
    assert cut["objective"] == pytest.approx(full["objective"]) and cut["levels"][0] == pytest.approx(full["levels"][0])
    assert len(cut["levels"]) < len(full["levels"])
    amounts = np.zeros(problem.n_edges)
    amounts[task["edges"]] = cut["x"]
    assert core.check_feasible(problem, amounts) <= 1e-7
    # Every agent holds at least the first level: the max-min value is kept.
    can = cut["can"]
    assert np.all(cut["values"][can] >= full["levels"][0] * (1 - 1e-7))


def test_a_themis_part_keeps_its_best_evaluation_or_has_none(monkeypatch):
    inst = _instance(12, 30, 3)
    free = lo.solve(inst, "themis", fractional=True, partitions=1)
    assert free.status == "feasible" and free.details["partition"]["parts"][0]["lps"] >= 2
    answers = iter([60.0])  # the first evaluation, then the limit
    monkeypatch.setattr(themis, "remaining", lambda: next(answers, 0.0))
    cut = lo.solve(inst, "themis", fractional=True, partitions=1, time_limit=600)
    assert cut.status == "time_limit" and cut.details["partition"]["stopped_at_deadline"] == [1]
    assert cut.verified and cut.details["partition"]["parts"][0]["lps"] == 1
    # A minimisation stopped early: no better than the full run, and the lower bound still below it.
    assert cut.objective >= free.objective * (1 - 1e-9) and cut.bound <= cut.objective
    monkeypatch.setattr(themis, "remaining", lambda: 0.0)
    with pytest.raises(NoSolutionError):
        lo.solve(inst, "themis", fractional=True, partitions=1, time_limit=600)


def test_cli_reports_time_limit_status(tmp_path, monkeypatch):
    inst = _instance(7, 80, 6)
    path = tmp_path / "inst.json"
    lo.save_instance(inst, path)
    _clock_jumps_after_first_part(monkeypatch)
    out = CliRunner().invoke(cli, ["solve", str(path), "--method", "maxmin", "--fractional", "--time-limit", "600",
                                   "-p", "partitions=3"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "time_limit" and data["params"]["time_limit"] == 600
    assert data["details"]["partition"]["not_run"] == [2, 3]


def test_a_part_failing_for_another_reason_is_not_blamed_on_the_deadline(monkeypatch):
    """Only a solve that ends at its deadline is 'stopped'; an earlier NoSolutionError is the part's own."""
    inst = _instance()

    def no_solution(task):
        raise NoSolutionError("HiGHS returned Unknown (injected)")

    monkeypatch.setattr(core, "solve_part_now", no_solution)
    with pytest.raises(NoSolutionError, match="injected"):
        lo.solve(inst, "welfare", fractional=True, partitions=2, time_limit=600)


def test_the_array_deadline_is_checked():
    from laissez_opt.errors import InputError

    problem = run.problem_of(_instance()).for_method("welfare")
    for bad in ("soon", float("nan"), True):
        with pytest.raises(InputError, match="deadline"):
            run.solve_arrays(problem, "welfare", partitions=2, deadline=bad)


def test_a_part_stopped_without_a_run_limit_is_reported_not_crashed(monkeypatch):
    """A part stopped by its solver's own limit, in a run without ``time_limit``, used to crash the
    run's message (it formatted the missing limit); now the message names a solver's limit."""
    inst = _instance(11, 40, 12)
    answers = iter([60.0, 60.0])  # the part sees time left before its first LP and at its first level only
    monkeypatch.setattr(levels, "remaining", lambda: next(answers, 0.0))
    result = lo.solve(inst, "maxmin", fractional=True, partitions=1)
    assert result.status == "time_limit" and result.verified
    assert "a solver's time limit stopped 1 part(s)" in result.message
