"""Weighted welfare (``models.md`` item 1) against exhaustive enumeration, on every route."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import NoSolutionError
from laissez_opt.exact.common import allocation_result
from laissez_opt.exact.welfare import build_welfare
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.modeling import solve_model

from brute_force import all_allocations, best_welfare, count_round_allocations, weighted_welfare
from conftest import INSTANCES, decimal_weights, short_decimals, small_instances

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _check(instance, result, *, expect_optimal=True):
    outcome = verify(instance, result)
    assert outcome.ok, str(outcome)
    if expect_optimal:
        assert result.status == "optimal", (result.status, result.route, result.message)
        assert result.gap == 0.0, (result.gap, result.route)
    return outcome


# ------------------------------------------------------------------ the reference itself


def test_enumerator_counts_by_hand():
    # One pool of 2 devices, two unbounded agents: (x_a, x_b) with x_a + x_b <= 2 -> 6 allocations.
    inst = Instance([Pool("g", count=2)], [Agent("a"), Agent("b")], [Edge("a", "g", 1.0), Edge("b", "g", 2.0)])
    assert count_round_allocations(inst, 0) == 6
    # Demand 1 on agent a removes (2, 0): 5 allocations.
    inst = Instance([Pool("g", count=2)], [Agent("a", demand=1), Agent("b")], [Edge("a", "g", 1.0), Edge("b", "g", 2.0)])
    assert count_round_allocations(inst, 0) == 5
    # Two rounds, agent b only in round 1: round 0 has x_a in {0, 1}; round 1 has 5.
    inst = Instance(
        [Pool("g", count=2)],
        [Agent("a", demand=1), Agent("b", arrival=1)],
        [Edge("a", "g", 1.0), Edge("b", "g", (2.0, 3.0))],
        rounds=2,
    )
    assert count_round_allocations(inst, 0) == 2
    assert len(list(all_allocations(inst))) == 10
    value, best = best_welfare(inst)
    # Round 0: a takes 1 (1.0).  Round 1: b takes 2 devices (2 * 3.0) beats a 1 + b 1.
    assert value == pytest.approx(7.0)
    assert best == {(0, 0): 1, (1, 1): 2}
    assert max(weighted_welfare(inst, alloc) for alloc in all_allocations(inst)) == pytest.approx(value)


def test_assignment_by_hand():
    # The classic 2x2 assignment where greedy on the largest entry is wrong.
    inst = Instance(
        [Pool("x"), Pool("y")],
        [Agent("a", demand=1), Agent("b", demand=1)],
        [Edge("a", "x", 10.0), Edge("a", "y", 9.0), Edge("b", "x", 8.0), Edge("b", "y", 1.0)],
    )
    assert best_welfare(inst)[0] == 17.0
    for solver in ("highs", "ortools"):
        result = lo.solve(inst, "welfare", solver=solver)
        assert result.objective == pytest.approx(17.0)
        assert sorted((r["agent"], r["pool"]) for r in result.allocation) == [("a", "y"), ("b", "x")]


# ------------------------------------------------------------------ property: routes agree


@settings(max_examples=200, **SETTINGS)
@given(small_instances())
def test_highs_ortools_brute_force_agree(inst):
    expected, _ = best_welfare(inst)
    highs = lo.solve(inst, "welfare", solver="highs", check=False)
    ortools = lo.solve(inst, "welfare", solver="ortools", check=False)
    assert inst.n_edges == 0 or (highs.route.startswith("highspy") and ortools.route == "ortools-min-cost-flow")
    for result in (highs, ortools):
        _check(inst, result)
        assert close(result.objective, expected), (result.route, result.objective, expected)
        assert result.mode == "integral"
        assert all(float(r["amount"]).is_integer() for r in result.allocation)
    # Total unimodularity: the time-sharing relaxation has the same optimum.
    for solver in ("highs", "ortools"):
        frac = lo.solve(inst, "welfare", solver=solver, fractional=True, check=False)
        _check(inst, frac)
        assert frac.mode == "fractional"
        assert close(frac.objective, expected), (solver, frac.objective, expected)


@settings(max_examples=50, **SETTINGS)
@given(small_instances(utilities=short_decimals, weights=decimal_weights, min_edges=1))
def test_every_route_agrees_short_decimals(inst):
    expected, _ = best_welfare(inst)
    _all_routes_agree(inst, expected)


@settings(max_examples=50, **SETTINGS)
@given(small_instances(utilities=st.floats(0.0, 1e4, allow_nan=False), min_edges=1))
def test_every_route_agrees_arbitrary_floats(inst):
    expected, _ = best_welfare(inst)
    _all_routes_agree(inst, expected, routes=("pyomo", "glop", "scip"))


def _all_routes_agree(inst, expected, routes=("pyomo", "glop", "cp_sat", "scip")):
    for fractional in (False, True):
        model, columns = build_welfare(inst, fractional=fractional)
        for route in routes:
            if route == "pyomo":
                solution = solve_model(model, via="pyomo")
            else:
                # solve_ortools picks min-cost flow for this transportation model unless a
                # backend is forced; cp_sat and scip keep the integrality of x (a MIP).
                if route == "cp_sat" and fractional:
                    continue  # CP-SAT has no continuous variables
                solution = solve_model(model, solver="ortools", backend=route)
            expected_route = {"pyomo": "pyomo", "glop": "glop", "cp_sat": "cp-sat", "scip": "scip"}[route]
            assert expected_route in solution.route
            if route in ("cp_sat", "scip"):
                assert model.is_integer == (not fractional)  # integral x stays integral: a MIP
            result = allocation_result(inst, "welfare", columns, solution, fractional=fractional, params={})
            _check(inst, result)
            assert close(result.objective, expected), (route, fractional, result.objective, expected)


def test_cp_sat_exact_on_tiny_float_coefficients():
    inst = Instance(
        [Pool("p", count=2), Pool("q")],
        [Agent("a", demand=1, weight=0.3), Agent("b")],
        [Edge("a", "p", 0.123456789012), Edge("b", "p", 1e-7), Edge("b", "q", 3.3)],
    )
    expected, _ = best_welfare(inst)
    model, columns = build_welfare(inst)
    model.integrality_is_free = lambda: False  # make it a MIP so that CP-SAT applies
    # CP-SAT takes the model only when its objective scales exactly to integers; then
    # its optimum is exact.  Otherwise it must refuse rather than round.
    try:
        solution = solve_model(model, solver="ortools", backend="cp_sat")
    except lo.SolverUnavailableError:
        assert solve_model(model, solver="ortools").route == "ortools-scip"
        return
    assert solution.status == "optimal"
    assert close(solution.objective, expected)
    assert solution.gap == 0.0


def test_every_route_on_the_instances():
    for path in ("hotos25-table1.json", "thesis-r1-fair-vs-efficient.json", "thesis-r2-table3-1.json", "uniform-small.json"):
        inst = lo.load(INSTANCES / path)
        values = []
        for kwargs in (dict(), dict(solver="ortools"), dict(via="pyomo"), dict(fractional=True), dict(solver="ortools", fractional=True)):
            result = lo.solve(inst, "welfare", **kwargs)
            assert result.verified and result.status == "optimal"
            values.append(result.objective)
        assert all(close(v, values[0]) for v in values), (path, values)


# ------------------------------------------------------------------ time limits


def _big_instance():
    return lo.generate("uniform", 3000, 40, seed=1)


@pytest.fixture(scope="module")
def big():
    return _big_instance()


@pytest.mark.parametrize("solver", ["highs", "ortools"])
@pytest.mark.parametrize("time_limit", [1e-4, 1e-3, 1e-2])
def test_time_limit_never_claims_unproven_optimum(big, solver, time_limit):
    try:
        result = lo.solve(big, "welfare", solver=solver, time_limit=time_limit)
    except NoSolutionError:
        return  # stopped before any incumbent: no result, so nothing is mislabelled
    assert result.status in {"optimal", "time_limit", "feasible"}
    assert result.verified
    if result.status == "optimal":
        exact = lo.solve(big, "welfare", solver="ortools")
        assert result.gap == 0.0 and close(result.objective, exact.objective)
        assert close(result.bound, result.objective)
    else:
        assert result.objective is not None
        assert result.bound is not None and result.gap is not None
        assert result.bound >= result.objective - 1e-9
        assert result.gap is not None and result.gap >= 0


@pytest.fixture(scope="module")
def hard_placement():
    """A tight generalised assignment (min_cost with sizes 1-3): a real MIP, not TU."""
    rng = np.random.default_rng(5)
    n, m = 300, 30
    demands = rng.integers(1, 4, size=n)
    cap = int(demands.sum() * 1.1 / m) + 1
    pools = [Pool(f"p{c}", count=cap) for c in range(m)]
    agents = [Agent(f"a{i}", demand=int(demands[i]), required=True) for i in range(n)]
    edges = [
        Edge(f"a{i}", f"p{c}", 1.0, cost=float(rng.integers(1, 10_000)) / 100)
        for i in range(n)
        for c in sorted(rng.choice(m, size=6, replace=False).tolist())
    ]
    inst = Instance(pools, agents, edges)
    exact = lo.solve(inst, "min_cost")
    assert exact.status == "optimal"
    return inst, exact.objective


@pytest.mark.parametrize("solver", ["highs", "ortools"])
@pytest.mark.parametrize("time_limit", [0.02, 0.3])
def test_time_limit_on_a_mip_reports_a_valid_bound(hard_placement, solver, time_limit):
    inst, optimum = hard_placement
    try:
        result = lo.solve(inst, "min_cost", solver=solver, time_limit=time_limit)
    except NoSolutionError:
        return
    assert result.verified
    assert result.status in {"optimal", "time_limit", "feasible"}
    if result.status == "optimal":
        assert result.objective == pytest.approx(optimum, rel=1e-9)
        assert result.gap <= 1e-6
    else:
        # minimisation: the bound is below the true optimum, the incumbent above it
        assert result.bound is not None and result.gap is not None and result.gap >= 0
        assert result.bound <= optimum + 1e-6 <= result.objective + 2e-6


# ------------------------------------------------------------------ R4


@pytest.mark.parametrize("solver", ["highs", "ortools"])
@pytest.mark.parametrize("via", ["direct", "pyomo"])
def test_r4_welfare_places_b_on_a10_and_a_on_trainium(r4, solver, via):
    if via == "pyomo" and solver == "ortools":
        pytest.skip("Pyomo route uses Pyomo's solver plugins")
    result = lo.solve(r4, "welfare", solver=solver, via=via)
    assert result.status == "optimal" and result.verified
    assert sorted((r["agent"], r["pool"], r["amount"]) for r in result.allocation) == [
        ("A", "Trainium", 1.0),
        ("B", "A10", 1.0),
    ]
    assert result.objective == pytest.approx(3.333333 + 4.347826, rel=1e-12)
    assert result.utilities == pytest.approx({"A": 3.333333, "B": 4.347826})


@settings(max_examples=60, **SETTINGS)
@given(small_instances(min_edges=1), st.sampled_from(["auto", "highs", "ortools"]),
       st.booleans())
def test_size_estimate_follows_the_route_the_solve_takes(inst, solver, fractional):
    """The estimate tells the min-cost-flow route before building, as the solve then picks it."""
    from laissez_opt.exact.common import takes_flow_route
    from laissez_opt.exact.welfare import welfare_size

    options = {"solver": solver, "fractional": fractional}
    costs = lambda: inst.weights[inst.edge_agent][:, None] * inst.edge_utility  # noqa: E731
    told = takes_flow_route(inst, options, costs)
    result = lo.solve(inst, "welfare", compress="off", **options)
    assert told == ("min-cost-flow" in result.route), (result.route, told)
    note = welfare_size(inst, options).note
    assert ("min-cost flow" in note) == told
