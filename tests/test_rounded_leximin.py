"""Integral leximin at scale (``levels="first_level"``): rounded fractional leximin, first-level MILP, bounds.

Against enumeration (``brute_force_maxmin``): every bound (fractional first level,
device counting, covers, the result's ``bound``) is at least the brute-force
max-min value, which is at least the incumbent's smallest value; every start is a
feasible integral allocation of the enumerated polytope.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.errors import InputError
from laissez_opt.exact.maxmin import _value_coefficients, solve_maxmin
from laissez_opt.exact.rounded_leximin import (
    check_allocation, configuration_bound, cover_bound, declare_first_level, device_count_bound, order_by_class, rounded_start,
    unit_leximin_base,
)
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force_maxmin import brute_force_leximin, maxmin_polytope

TOL = 1e-7


@st.composite
def small_instances(draw):
    """One round, 1-4 agents (some identical), 1-3 pools of 1-3 devices, demands 1-3 or None."""
    m = draw(st.integers(1, 3))
    pools = [Pool(f"p{c}", count=draw(st.integers(1, 3))) for c in range(m)]
    n = draw(st.integers(1, 4))
    utility = st.one_of(st.just(0.0), st.integers(1, 30).map(lambda k: k / 10))
    agents, edges = [], []
    for i in range(n):
        if i and draw(st.integers(0, 2)) == 0:  # a copy of the agent before: a class of identical agents
            prev = agents[-1]
            agents.append(Agent(f"a{i}", weight=prev.weight, demand=prev.demand))
            edges += [Edge(f"a{i}", e.pool, e.utility) for e in edges if e.agent == prev.id]
            continue
        agents.append(Agent(f"a{i}", weight=draw(st.sampled_from([1.0, 2.0])),
                            demand=draw(st.sampled_from([None, 1, 2, 3]))))
        for c in range(m):
            if draw(st.integers(0, 3)) > 0:
                edges.append(Edge(f"a{i}", f"p{c}", draw(utility)))
    return Instance(pools, agents, edges, name="small")


def _enumerated_min(inst, normalizer):
    poly = maxmin_polytope(inst, normalizer)
    assume(math.prod(int(u) + 1 for u in poly.upper) <= 100_000)  # small enough to enumerate
    best = brute_force_leximin(poly)
    return poly, (best[0] if best else 0.0)


def _feasible_in_polytope(poly, inst, x_edges):
    """The allocation (one amount per edge, one round) checked against the enumerated rows."""
    by_edge = {(e.agent, e.pool): k for k, e in enumerate(inst.edges)}
    ids = [a.id for a in inst.agents]
    pools = [p.id for p in inst.pools]
    x = np.array([x_edges[by_edge[(ids[poly.col_agent[k]], poly.col_group[k][0])]]
                  for k in range(poly.upper.size)]) if poly.upper.size else np.zeros(0)
    assert np.all(x <= poly.upper + 1e-9) and np.all(x >= -1e-9)
    if poly.A.size:
        assert np.all(poly.A @ x <= poly.b + 1e-9)
    assert pools  # the instance has pools
    return x


@settings(max_examples=120, deadline=None)
@given(inst=small_instances(), normalizer=st.sampled_from(["equal_share", "raw"]))
def test_bounds_bracket_the_enumerated_optimum(inst, normalizer):
    poly, optimum = _enumerated_min(inst, normalizer)
    r = solve_maxmin(inst, levels="first_level", normalizer=normalizer)
    assert r.status in ("feasible", "optimal")  # never "optimal" while the higher levels are a heuristic's
    assert r.objective <= optimum + TOL * max(1.0, optimum)
    if r.bound is not None:
        assert r.bound >= optimum - TOL * max(1.0, optimum)
    # Tiny MILPs finish: the smallest value is then proven, and equals the enumeration's.
    assert math.isclose(r.objective, optimum, rel_tol=1e-6, abs_tol=1e-9), (r.objective, optimum, r.message)
    assert r.gap == 0.0 or r.status == "optimal"
    _feasible_in_polytope(poly, inst, r.amounts[:, 0])


@settings(max_examples=120, deadline=None)
@given(inst=small_instances(), normalizer=st.sampled_from(["equal_share", "raw"]))
def test_starts_feasible_and_bounds_valid(inst, normalizer):
    poly, optimum = _enumerated_min(inst, normalizer)
    coef = _value_coefficients(inst, normalizer)
    model, plan, label = declare_first_level(inst, coef)
    unit = plan.unit
    frac = solve_maxmin(inst, fractional=True, normalizer=normalizer)
    assert frac.objective >= optimum - TOL * max(1.0, optimum)  # the fractional first level bounds it
    base = frac.amounts[:, 0]
    starts = [rounded_start(model, plan, base), rounded_start(model, plan, None)]
    unit_base = unit_leximin_base(inst, plan)
    starts += [unit_base, rounded_start(model, plan, unit_base)]
    for x in starts:
        check_allocation(model, plan, x)
        _feasible_in_polytope(poly, inst, x)
        ordered = order_by_class(plan, label, x)
        check_allocation(model, plan, ordered)
        assert np.allclose(np.sort(plan.values(ordered)), np.sort(plan.values(x)))
        level = float(plan.values(x)[plan.rows_agent].min()) if plan.rows_agent.size else 0.0
        assert level / unit <= optimum + TOL * max(1.0, optimum)
        covered = cover_bound(inst, coef, plan, level)
        assert covered is not None and covered / unit >= optimum - TOL * max(1.0, optimum)
        upper = float(plan.vmax[plan.rows_agent].min()) if plan.rows_agent.size else 0.0
        configured, _ = configuration_bound(inst, plan, level, max(upper, level))
        if plan.rows_agent.size:
            assert configured is not None and configured / unit >= optimum - TOL * max(1.0, optimum)
    count = device_count_bound(inst, plan)
    if count is not None:
        assert count / unit >= optimum - TOL * max(1.0, optimum)


def test_symmetry_rows_for_identical_agents_keep_the_value():
    pools = [Pool("V", count=3), Pool("K", count=4)]
    agents = [Agent(f"j{i}", demand=2) for i in range(6)] + [Agent("x", demand=3)]
    edges = [Edge(f"j{i}", "V", 3.0) for i in range(6)] + [Edge(f"j{i}", "K", 1.0) for i in range(6)]
    edges += [Edge("x", "V", 2.0), Edge("x", "K", 2.0)]
    inst = Instance(pools, agents, edges)
    model, plan, label = declare_first_level(inst, _value_coefficients(inst, "raw"))
    assert model.constraints["order"].size == 5 and model.constraints["level"].size == 2
    on = solve_maxmin(inst, levels="first_level", normalizer="raw")
    off = solve_maxmin(inst, levels="ordered_outcomes", normalizer="raw")
    assert off.status == "optimal"
    assert math.isclose(on.objective, off.objective, rel_tol=1e-9)
    assert on.details["first_level_proven"] and on.gap == 0.0


def test_scarce_devices_prove_zero_without_absurd_gap():
    inst = lo.generate("gavel", 200, 3, seed=0)  # 18 devices for 200 jobs: somebody gets nothing
    r = lo.solve(inst, "maxmin", time_limit=30)
    assert r.details["levels_route"] == "first_level"
    assert r.objective == 0.0 and r.bound == 0.0 and r.gap == 0.0
    assert "at most" in r.message


def test_gavel_general_demands_reach_the_bound_fast():
    inst = lo.generate("gavel", 400, 3, seed=1, max_count=400)
    r = lo.solve(inst, "maxmin", time_limit=30)
    assert r.status == "feasible" and r.verified
    assert r.gap is not None and r.gap <= 0.01
    assert r.bound >= r.objective > 0
    assert r.details["symmetry_rows"] > 0


def test_configuration_lp_proves_dense_neocloud():
    inst = lo.generate("neocloud", 256, 4, seed=0, max_demand=4, max_count=128)  # about one device per job
    r = lo.solve(inst, "maxmin", time_limit=60)
    assert r.details["configuration_bound"] < 0.5 * r.details["fractional_first_level"]  # integrality decides
    assert r.gap is not None and r.gap <= 0.01 and r.bound >= r.objective


def test_time_limited_run_keeps_an_incumbent_and_an_honest_gap():
    inst = lo.generate("neocloud", 150, 4, seed=0, max_demand=4, max_count=75)
    r = lo.solve(inst, "maxmin", levels="first_level", time_limit=2)
    assert r.status in ("time_limit", "feasible")
    assert r.objective > 0 and r.bound >= r.objective
    assert r.gap is not None and 0 <= r.gap < 10
    if r.status == "time_limit":
        assert "not proven" in r.message


def test_levels_option_is_checked():
    inst = lo.generate("gavel", 10, 3, seed=0)
    with pytest.raises(InputError, match="levels"):
        solve_maxmin(inst, levels="fast")


def test_a_milp_that_stops_without_a_point_keeps_the_start(monkeypatch):
    import laissez_opt.exact.rounded_leximin as rl
    from laissez_opt.errors import NoSolutionError

    def stopped(*args, **kwargs):
        raise NoSolutionError("HiGHS hit the time limit before finding a feasible solution (simulated)")

    monkeypatch.setattr(rl, "configuration_bound", lambda *a, **k: (None, 0))
    monkeypatch.setattr(rl, "cover_bound", lambda *a, **k: None)
    monkeypatch.setattr(rl, "solve_model", stopped)
    inst = lo.generate("neocloud", 80, 4, seed=0, max_demand=4, max_count=40)
    r = lo.solve(inst, "maxmin", time_limit=30)
    assert r.status == "time_limit" and r.verified and r.allocation
    assert r.objective == pytest.approx(r.details["start_level"]) and r.objective > 0
    assert r.bound >= r.objective and r.gap is not None and 0 < r.gap < 10
    assert "not proven" in r.message


def test_ortools_route_agrees_on_the_smallest_value():
    inst = lo.generate("neocloud", 60, 4, seed=3, max_demand=3, max_count=30)
    a = lo.solve(inst, "maxmin", time_limit=60)
    b = lo.solve(inst, "maxmin", solver="ortools", time_limit=60)
    assert a.details["first_level_proven"] and b.details["first_level_proven"]
    assert math.isclose(a.objective, b.objective, rel_tol=1e-7)
