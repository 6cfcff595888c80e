"""Migration-aware scheduling: brute force against HiGHS, Pyomo and OR-Tools; baselines; accounting; HotOS'25."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError, NoSolutionError, SolverUnavailableError
from laissez_opt.exact.migration import build_migration
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force_migration import best
from conftest import INSTANCES

OBJECTIVES = ("work", "completion", "cost")
BASELINES = ("fcfs_static", "myopic", "migration_free")


# ----------------------------------------------------------------------------- instances


@st.composite
def job_instances(draw, max_agents=3, max_pools=2, max_rounds=4):
    """1-3 jobs, 1-2 pools of 1-2 devices, 2-4 rounds; integer, quarter or arbitrary-float data.

    Utilities are often per-round lists and pools often single devices, so that
    moving between pools pays off on a good share of the examples.
    """
    kind = draw(st.sampled_from(["int", "quarter", "float"]))
    number = {
        "int": st.sampled_from([1.0, 2.0, 3.0, 1.0, 2.0, 0.0]),
        "quarter": st.integers(0, 12).map(lambda k: (12 - k) / 4),
        "float": st.floats(0.0, 3.0, allow_nan=False, allow_infinity=False).map(lambda v: 3.0 - v),
    }[kind]
    work = {"int": st.sampled_from([1.0, 2.0, 3.0, 4.0]), "quarter": st.integers(1, 16).map(lambda k: k / 4),
            "float": st.floats(0.1, 4.0, allow_nan=False, allow_infinity=False)}[kind]
    loss = {"int": st.sampled_from([0.0, 0.0, 1.0]), "quarter": st.sampled_from([0.0, 0.25, 0.5]),
            "float": st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)}[kind]
    rounds = draw(st.integers(2, max_rounds))
    n, m = draw(st.integers(1, max_agents)), draw(st.integers(1, max_pools))
    pools = [Pool(f"p{c}", count=draw(st.sampled_from([1, 1, 2])), base_price=draw(st.integers(0, 8).map(lambda k: k / 4)))
             for c in range(m)]
    sizes = [None, 1, 1] + ([2] if any(p.count == 2 for p in pools) else [])
    agents = []
    for i in range(n):
        arrival = draw(st.integers(0, rounds // 2))
        deadline = draw(st.one_of(st.none(), st.integers(arrival, rounds - 1)))
        agents.append(Agent(f"a{i}", weight=draw(st.sampled_from([1.0, 2.0, 0.5, 1.5])), demand=draw(st.sampled_from(sizes)),
                            work=draw(work), arrival=arrival, deadline=deadline, migration_cost=draw(loss)))
    edges = []
    for i in range(n):
        for c in range(m):
            if draw(st.integers(0, 4)) == 4 and (c < m - 1 or any(e.agent == f"a{i}" for e in edges)):
                continue  # every job keeps at least one edge
            if draw(st.booleans()):
                utility = tuple(draw(number) for _ in range(rounds))
            else:
                utility = draw(number)
            edges.append(Edge(f"a{i}", f"p{c}", utility))
    return Instance(pools, agents, edges, rounds=rounds, name="jobs")


def _agrees(result, expected):
    if expected is None:
        assert result.status == "infeasible", (result.status, result.objective)
        assert result.allocation == [] and result.message
        return
    assert result.status == "optimal", (result.status, result.message)
    assert result.objective == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert result.gap in (None, 0.0) or result.gap <= 1e-6


def _solve(inst, method, objective, **kw):
    result = lo.solve(inst, method, objective=objective, **kw)
    if result.status != "infeasible":
        outcome = verify(inst, result)
        assert outcome.ok, outcome.violations
        _accounting(inst, result)
    return result


def _accounting(inst, result):
    """Work done = sum of per-round progress - migration losses; no run before arrival or after completion."""
    sched, per = result.details["schedule"], result.details["agents"]
    edges = {(e.agent, e.pool): e for e in inst.edges}
    for a in inst.agents:
        size = 1 if a.demand is None else a.demand
        runs = [(r, p) for r, p in enumerate(sched[a.id]) if p is not None]
        stats = per[a.id]
        gross = sum(edges[(a.id, p)].utility_in(r) * size for r, p in runs)
        assert stats["work_done"] == pytest.approx(gross - a.migration_cost * stats["migrations"], abs=1e-9)
        moves = [r for (r, p), (_, q) in zip(runs[1:], runs[:-1]) if p != q]
        assert stats["migration_rounds"] == moves
        assert all(r >= a.arrival for r, _ in runs)
        if stats["completion_round"] is not None:
            assert all(r <= stats["completion_round"] for r, _ in runs)
        price = {p.id: p.base_price for p in inst.pools}
        assert stats["money"] == pytest.approx(sum(price[p] * inst.round_hours * size for _, p in runs), abs=1e-9)
    assert result.payments == {a: s["money"] for a, s in per.items()}


# ----------------------------------------------------------------------------- exact vs brute force


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=job_instances(), objective=st.sampled_from(OBJECTIVES))
def test_migration_matches_brute_force_highs_and_ortools(inst, objective):
    expected = best(inst, objective)
    for solver in ("highs", "ortools"):
        _agrees(_solve(inst, "migration", objective, solver=solver), expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=job_instances(), objective=st.sampled_from(OBJECTIVES), solver=st.sampled_from(["highs", "ortools"]))
def test_migration_free_matches_brute_force_and_no_baseline_beats_the_optimum(inst, objective, solver):
    _agrees(_solve(inst, "migration_free", objective, solver=solver), best(inst, objective, allow_migration=False))
    optimum = _solve(inst, "migration", objective)
    for method in BASELINES:
        other = _solve(inst, method, objective)
        if other.status == "infeasible":
            continue
        assert optimum.status == "optimal"
        assert other.details["totals"]["migrations"] == 0 or method == "myopic"
        if objective == "work":
            assert optimum.objective >= other.objective - 1e-6
        else:
            assert optimum.objective <= other.objective + 1e-6


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=job_instances(max_agents=2, max_rounds=3), objective=st.sampled_from(OBJECTIVES))
def test_pyomo_route_matches_brute_force(inst, objective):
    _agrees(_solve(inst, "migration", objective, via="pyomo"), best(inst, objective))


# ----------------------------------------------------------------------------- the horizon, round lengths, every route

#: Every route the migration model supports: HiGHS (matrix API and Pyomo), OR-Tools CP-SAT and SCIP.
ROUTES = (("highs", "direct", None), ("highs", "pyomo", None), ("ortools", "direct", "cp_sat"),
          ("ortools", "direct", "scip"))


def _nulled(inst):
    """The instance with every deadline at or after the last round replaced by none (the documented equivalent)."""
    last = inst.rounds - 1
    agents = [dataclasses.replace(a, deadline=None) if a.deadline is not None and a.deadline >= last else a
              for a in inst.agents]
    return Instance(inst.pools, agents, inst.edges, rounds=inst.rounds, round_hours=inst.round_hours, name=inst.name)


def _quarters(inst):
    """Whether every number of a completion row is a multiple of 1/4 (CP-SAT must then take the model)."""
    numbers = [u for e in inst.edges for u in (e.utility if isinstance(e.utility, tuple) else (e.utility,))]
    numbers += [a.migration_cost for a in inst.agents] + [1.0 if a.work is None else a.work for a in inst.agents]
    return all(float(v * 4).is_integer() for v in numbers)


@st.composite
def horizon_instances(draw):
    """Job instances whose deadlines lie before, at and past the horizon (up to 10**6), some arriving in the last round.

    Round lengths vary too: they price the ``cost`` objective (``b_c h`` per device-round).
    """
    inst = draw(job_instances(max_agents=2, max_pools=2, max_rounds=3))
    R = inst.rounds
    agents = []
    for a in inst.agents:
        arrival = draw(st.sampled_from([a.arrival, a.arrival, R - 1]))
        deadline = draw(st.sampled_from([None, R - 2, R - 1, R, R + 1, 2 * R, 10**6]))
        agents.append(dataclasses.replace(a, arrival=arrival, deadline=None if deadline is not None and deadline < arrival else deadline))
    hours = draw(st.sampled_from([1.0, 2.0, 0.5, 0.25, 1 / 60]))
    return Instance(inst.pools, agents, inst.edges, rounds=R, round_hours=hours, name="horizon")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=horizon_instances(), objective=st.sampled_from(OBJECTIVES), allow=st.booleans())
def test_deadlines_past_the_horizon_on_every_route(inst, objective, allow):
    """Deadlines before, at and after the last round, any round length, every route: brute force's optimum, proven.

    A feasible instance is never called infeasible, every route returns the same optimum, an
    ``optimal`` label never sits on a worse value, and a deadline after the horizon behaves as none.
    """
    method = "migration" if allow else "migration_free"
    expected = best(inst, objective, allow_migration=allow)
    assert expected == best(_nulled(inst), objective, allow_migration=allow)
    for solver, via, backend in ROUTES:
        options = {} if backend is None else {"backend": backend}
        try:
            result = _solve(inst, method, objective, solver=solver, via=via, **options)
        except SolverUnavailableError:
            # CP-SAT takes the model whenever its rows are integral; quarter data always are.
            assert backend == "cp_sat" and not _quarters(inst)
            continue
        _agrees(result, expected)
    # The baselines read deadlines the same way: past the horizon is the same as none. None beats the
    # optimum with migration (myopic migrates, so it may beat migration_free's).
    optimum = expected if allow else best(inst, objective)
    for baseline in ("fcfs_static", "myopic"):
        here, nulled = _solve(inst, baseline, objective), _solve(_nulled(inst), baseline, objective)
        assert (here.status, here.objective) == (nulled.status, nulled.objective)
        assert here.details["schedule"] == nulled.details["schedule"]
        if here.status != "infeasible":
            assert optimum is not None
            assert here.objective <= optimum + 1e-6 if objective == "work" else here.objective >= optimum - 1e-6


@pytest.mark.parametrize("deadline", [2, 3, 4, 6, 10**6])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_issue_deadlines_after_the_last_of_three_rounds(deadline, objective):
    """The reported cases (3 rounds; deadlines 3, 4 and 6 called infeasible, mis-optimised, or an IndexError)."""
    def three_rounds(d):
        return Instance([Pool("fast", base_price=1.0), Pool("slow", base_price=0.5)],
                        [Agent("A", work=2.0, deadline=d), Agent("B", work=1.0, arrival=1)],
                        [Edge("A", "fast", 1.0), Edge("A", "slow", 0.5), Edge("B", "fast", 1.0)], rounds=3)

    inst, none = three_rounds(deadline), three_rounds(None)
    assert list(inst.last_rounds) == [2, 2]
    # A deadline at or after the last round builds exactly the model of no deadline.
    built, reference = build_migration(inst, objective=objective)[0], build_migration(none, objective=objective)[0]
    assert (built.csc() != reference.csc()).nnz == 0
    assert all(np.array_equal(a, b) for a, b in zip(built.bounds(), reference.bounds()))
    assert all(np.array_equal(a, b) for a, b in zip(built.row_bounds(), reference.row_bounds()))
    expected = best(none, objective)
    assert expected is not None
    for method in ("migration", "migration_free"):
        for solver, via, backend in ROUTES:
            options = {} if backend is None else {"backend": backend}
            _agrees(_solve(inst, method, objective, solver=solver, via=via, **options), expected)


@pytest.mark.parametrize("work, utility, deadline, rounds_needed", [
    (1.0, 0.4999996, 1, 2),   # 2 x 0.4999996 = W - 8e-7: complete within the 1e-6 tolerance
    (1.0, 0.333333, 2, 3),    # 3 x 0.333333 = W - 1e-6, a short decimal: the row is stored in integers
    (5.0, 2.4999996, 1, 2),   # the tolerance scales with W when W > 1
    (0.5000001, 0.25, 1, 2),  # W a hair above the progress
])
def test_completion_threshold_matches_the_replay_on_every_route(work, utility, deadline, rounds_needed):
    """The model credits a job as complete exactly when the replay does (``W - 1e-6 max(1, W)``).

    The row used to demand the full ``W``: every route then proved optimal a schedule worse than
    brute force's (``work`` 0 instead of ``W``; one more round for ``completion`` and ``cost``).
    """
    inst = Instance([Pool("p", base_price=1.0)], [Agent("A", work=work, deadline=deadline)], [Edge("A", "p", utility)],
                    rounds=4, name="boundary")
    loose = Instance([Pool("p", base_price=1.0)], [Agent("A", work=work)], [Edge("A", "p", utility)], rounds=4, name="boundary")
    for objective, case, expected in (("work", inst, work), ("completion", loose, float(rounds_needed)),
                                      ("cost", loose, float(rounds_needed))):
        assert best(case, objective) == pytest.approx(expected)
        for solver, via, backend in ROUTES:
            options = {} if backend is None else {"backend": backend}
            try:
                result = _solve(case, "migration", objective, solver=solver, via=via, **options)
            except SolverUnavailableError:
                # Seven decimals do not scale to integers by 10**6 or less, so CP-SAT cannot take the row.
                assert backend == "cp_sat" and any(abs(v * 1e6 - round(v * 1e6)) > 1e-3 for v in (utility, work))
                continue
            _agrees(result, expected)


def test_routes_that_do_not_fit_the_model_refuse():
    """Min-cost flow and GLOP cannot solve the migration model: they refuse instead of answering."""
    inst = _two_pools(migration_cost=0.5)
    for backend in ("min_cost_flow", "glop"):
        with pytest.raises(SolverUnavailableError):
            lo.solve(inst, "migration", solver="ortools", backend=backend)


def test_a_replay_worse_than_the_solvers_optimum_is_not_optimal(monkeypatch):
    """If a solver's tolerance lets a job pass the complete row short of its work, the result is not ``optimal``."""
    import laissez_opt.exact.migration as migration

    inst = Instance([Pool("p", base_price=1.0)], [Agent("A", work=1.0, deadline=1)], [Edge("A", "p", 0.4999)],
                    rounds=2, name="short")
    # A row demanding 2e-4 less than the replay's threshold stands for a solver accepting that violation.
    monkeypatch.setattr(migration, "completion_threshold", lambda work: work - 3e-4 * np.maximum(1.0, work))
    result = lo.solve(inst, "migration", objective="work")
    assert result.status == "feasible" and result.objective == 0.0 and "not proven optimal" in result.message
    assert result.bound == pytest.approx(1.0) and result.verified
    with pytest.raises(NoSolutionError, match="'A'"):
        lo.solve(inst, "migration", objective="completion")


# ----------------------------------------------------------------------------- model details


def _two_pools(**agent):
    return Instance(
        [Pool("fast", base_price=1.0), Pool("slow", base_price=0.25)],
        [Agent("A", **{"work": 3.0, **agent})],
        [Edge("A", "fast", 1.0), Edge("A", "slow", 0.5)], rounds=4, name="two-pools",
    )


def test_a_pause_then_a_new_pool_is_a_migration():
    inst = _two_pools(migration_cost=0.5)
    result = _solve(inst, "myopic", "work")
    assert result.details["schedule"]["A"][:3] == ["fast", "fast", "fast"]
    # Forced pattern fast, idle, slow: the replay charges mu at the resumption.
    from laissez_opt.exact.migration import replay
    import numpy as np

    kept, stats = replay(inst, np.array([[0, -1, 1, 1]]))
    assert stats[0]["migrations"] == 1 and stats[0]["migration_rounds"] == [2]
    assert stats[0]["work_done"] == pytest.approx(1.0 + 0.5 + 0.5 - 0.5)


def test_integer_data_goes_to_cp_sat_and_scaled_decimals_too():
    inst = _two_pools(migration_cost=0.5)
    assert lo.solve(inst, "migration", solver="ortools").route == "ortools-cp-sat"
    model, _ = build_migration(inst)
    assert set(model.variables) == {"x", "z", "y", "m", "f", "q", "p"}
    assert model.variables["q"].size == 0 and model.variables["p"].size == 0  # p: migration_free only
    complete = model.constraints["complete"]
    assert complete.coefs.tolist() == [round(v) for v in complete.coefs.tolist()]  # 0.5 scaled by 10
    # migration_free's per-pool completion rows share the complete row's integers, so CP-SAT takes it too.
    pinned, _ = build_migration(inst, allow_migration=False)
    assert pinned.variables["p"].size == inst.n_edges and pinned.constraints["pin_work"].size == inst.n_edges
    pin_work = pinned.constraints["pin_work"]
    assert pin_work.coefs.tolist() == [round(v) for v in pin_work.coefs.tolist()]
    assert lo.solve(inst, "migration_free", solver="ortools").route == "ortools-cp-sat"
    floor = build_migration(inst, floor_rows=True)[0].constraints["floor"]
    assert floor.size == 1 and floor.coefs.tolist() == [round(v) for v in floor.coefs.tolist()]


def test_cost_objective_is_infeasible_with_an_explanation():
    inst = _two_pools(deadline=1)
    result = lo.solve(inst, "migration", objective="cost")
    assert result.status == "infeasible" and "'A'" in result.message and "even alone" in result.message
    assert lo.solve(inst, "migration", objective="work").objective == 0.0
    late = lo.solve(inst, "fcfs_static", objective="cost")
    assert late.status == "infeasible" and late.allocation == [] and "'A'" in late.message


def test_unknown_objective_is_an_input_error():
    with pytest.raises(InputError, match="objective"):
        lo.solve(_two_pools(), "migration", objective="speed")
    with pytest.raises(InputError, match="objective"):
        lo.solve(_two_pools(), "myopic", objective="speed")


def _crowded(n=14, rounds=12):
    pools = [Pool("a", count=2, base_price=1.0), Pool("b", count=3, base_price=0.5), Pool("c", count=2, base_price=0.75)]
    agents = [Agent(f"j{k}", work=1.0 + k % 3, arrival=k % 4, migration_cost=0.25) for k in range(n)]
    edges = [Edge(f"j{k}", p.id, 0.25 + ((3 * k + 5 * c) % 7) / 8) for k in range(n) for c, p in enumerate(pools)]
    return Instance(pools, agents, edges, rounds=rounds, name="crowded")


def test_time_limit_reports_status_bound_and_gap():
    result = lo.solve(_crowded(), "migration", objective="cost", time_limit=0.2)
    assert result.status in ("optimal", "time_limit")
    assert result.bound is not None and result.bound <= result.objective + 1e-9
    if result.status == "time_limit":
        assert result.gap is not None and result.gap >= 0 and result.verified


# ----------------------------------------------------------------------------- HotOS'25


@pytest.fixture(scope="module")
def hotos():
    inst = lo.load(INSTANCES / "hotos25-migration.json")
    return inst, {m: _solve(inst, m, "cost") for m in ("migration", "migration_free", "fcfs_static", "myopic")}


def test_hotos_static_fcfs_is_the_papers_b_first_case(hotos):
    inst, results = hotos
    fcfs = results["fcfs_static"]
    assert fcfs.details["schedule"]["B"] == ["A10"] * 14 + [None] * 26
    assert fcfs.details["schedule"]["A"] == [None] * 5 + ["Trainium"] * 18 + [None] * 17
    # 14 min on the A10 and 18 min on Trainium: 0.1414 + 0.2412 (Table 1: 0.14 + 0.24).
    assert fcfs.objective == pytest.approx(14 / 60 * 0.606 + 18 / 60 * 0.804)


def test_hotos_myopic_moves_b_to_the_l4_when_a_arrives(hotos):
    _, results = hotos
    myopic = results["myopic"]
    assert myopic.details["schedule"]["B"][:6] == ["A10"] * 5 + ["L4"]
    assert myopic.details["agents"]["B"]["migration_rounds"] == [5]
    assert myopic.details["schedule"]["A"][5:26] == ["A10"] * 21
    assert myopic.objective == pytest.approx(5 / 60 * 0.606 + 13 / 60 * 0.48 + 21 / 60 * 0.606)


def test_hotos_optimum_migrates_at_checkpoints_and_beats_every_baseline(hotos):
    _, results = hotos
    opt = results["migration"]
    assert opt.status == "optimal" and opt.objective == pytest.approx(0.364, abs=1e-9)
    assert results["migration_free"].objective == pytest.approx(0.3721, abs=1e-9)
    assert opt.objective < min(results[m].objective for m in BASELINES)
    per = opt.details["agents"]
    # Both migrate once, at a round (checkpoint) boundary just after A's arrival: B leaves the A10 for
    # the L4, A leaves Trainium for the A10; both finish by their deadlines.
    assert per["A"]["migrations"] == 1 and per["B"]["migrations"] == 1
    assert opt.details["schedule"]["A"][per["A"]["migration_rounds"][0] - 1] == "Trainium"
    assert [p for p in opt.details["schedule"]["A"] if p][-1] == "A10"
    assert [p for p in opt.details["schedule"]["B"] if p][-1] == "L4"
    assert 5 <= per["A"]["migration_rounds"][0] <= 8 and 5 <= per["B"]["migration_rounds"][0] <= 8
    assert per["A"]["completion_round"] <= 25 and per["B"]["completion_round"] <= 19


def test_hotos_compare_runs_all_four_methods(tmp_path):
    from conftest import run_cli

    run = run_cli("compare", INSTANCES / "hotos25-migration.json", "--methods", "migration,migration_free,fcfs_static,myopic",
                  "-o", tmp_path, "--no-plots", "--workers", "2", timeout=300)
    assert run.returncode == 0, run.stderr
    table = (tmp_path / "results.md").read_text()
    for method, money in (("migration", "0.364"), ("migration_free", "0.3721"), ("fcfs_static", "0.3826"), ("myopic", "0.3666")):
        assert f"| {method} |" in table and money in table


def test_scaling_benchmark_quick(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT

    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "migration_scaling.py"), "--quick", "--time-limit", "1",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "migration_scaling.json").read_text())
    assert [(p["agents"], p["rounds"]) for p in report["points"]] == [(10, 10), (10, 20), (20, 20)]
    for point in report["points"]:
        assert point["status"] in ("optimal", "time_limit", "no incumbent")
        if point["status"] == "time_limit":
            assert point["gap"] is not None and point["bound"] <= point["objective"] + 1e-9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["migration_scaling.json", "migration_scaling.md"]
