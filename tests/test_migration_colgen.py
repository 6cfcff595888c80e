"""Column generation for the migration model: certified bound, schedules and reduced-cost fixing against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.exact.migration import build_migration, floor_bound, objective_value, replay
from laissez_opt.exact.migration_colgen import (column_generation, enumerate_columns, exact_by_enumeration, fixings,
                                                improve, master_schedule, schedule_money, sequential_schedule)
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.modeling import solve_model

from brute_force_migration import best
from test_migration import job_instances

SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tol(value):
    return 1e-6 * max(1.0, abs(value))


@SLOW
@given(inst=job_instances())
def test_column_generation_bound_lies_between_the_floor_and_the_optimum(inst):
    expected = best(inst, "cost")
    cg = column_generation(inst)
    if expected is None:
        return
    assert cg.bound <= expected + _tol(expected)
    assert cg.bound >= floor_bound(inst, "cost") - _tol(expected)
    assert np.all(cg.lam >= 0)
    if cg.converged and cg.master is not None:
        assert cg.master == pytest.approx(cg.bound, rel=1e-4, abs=1e-6)


@SLOW
@given(inst=job_instances(), order=st.sampled_from(("slack", "arrival", "index")))
def test_schedules_are_feasible_and_never_beat_the_optimum(inst, order):
    expected = best(inst, "cost")
    schedule = sequential_schedule(inst, order=order)
    if schedule is not None:
        money = schedule_money(inst, schedule)
        assert money is not None and expected is not None and money >= expected - _tol(expected)
    cg, found, money = improve(inst, seconds=None)
    if found is None:
        return
    assert expected is not None and money >= expected - _tol(expected)
    kept, stats = replay(inst, found)
    assert objective_value(inst, stats, "cost") == pytest.approx(money)
    result = lo.solve(inst, "migration", strategy="colgen")
    assert verify(inst, result).ok
    assert result.bound <= expected + _tol(expected) <= result.objective + 2 * _tol(expected)
    if result.status == "optimal":
        assert result.objective == pytest.approx(expected, rel=1e-6, abs=1e-6)
    master = master_schedule(inst, cg, found, time_limit=None)
    if master is not None:
        value = schedule_money(inst, master)
        assert value is not None and value >= expected - _tol(expected)


@SLOW
@given(inst=job_instances())
def test_reduced_cost_fixing_keeps_an_optimal_schedule(inst):
    expected = best(inst, "cost")
    if expected is None:
        return
    cg = column_generation(inst)
    fixed = fixings(inst, cg.lam, cg.bound, expected)
    model, _ = build_migration(inst, objective="cost")
    z = model.variables["z"]
    z.upper = np.where(fixed.reshape(-1), 0.0, z.upper)
    solution = solve_model(model, mip_gap=0.0)
    assert solution.status == "optimal"
    E, R = inst.n_edges, inst.rounds
    runs = np.round(solution.block(model, "z")).reshape(E, R) > 0.5
    chosen = np.full((inst.n_agents, R), -1, dtype=np.int64)
    edges, rounds = np.nonzero(runs)
    chosen[inst.edge_agent[edges], rounds] = edges
    assert schedule_money(inst, chosen) == pytest.approx(expected, rel=1e-6, abs=1e-6)


@SLOW
@given(inst=job_instances())
def test_enumeration_finds_the_optimum_below_a_feasible_schedule(inst):
    expected = best(inst, "cost")
    cg, found, money = improve(inst, seconds=None)
    if found is None:
        return
    upper = money + 0.5  # room for schedules worse than the optimum in the enumeration
    schedule, proven = exact_by_enumeration(inst, cg.lam, cg.bound, upper, time_limit=None)
    assert proven is not None and proven <= expected + _tol(expected)
    assert schedule is not None and schedule_money(inst, schedule) == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert proven == pytest.approx(expected, rel=1e-6, abs=1e-6)
    # At the optimum itself nothing is strictly cheaper: the programme proves the optimum (a schedule the
    # solver returns within its feasibility tolerance of the cutoff is never cheaper than the optimum).
    schedule, proven = exact_by_enumeration(inst, cg.lam, cg.bound, expected, time_limit=None)
    assert proven == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert schedule is None or schedule_money(inst, schedule) >= expected - _tol(expected)
    columns = enumerate_columns(inst, cg.lam, cg.bound, upper)
    assert columns is not None and {j for j, _ in columns} == set(range(inst.n_agents))


def test_fixing_removes_runs_that_only_cost_more():
    pools = [Pool("cheap", count=2, base_price=1.0), Pool("dear", count=2, base_price=4.0)]
    agents = [Agent("A", work=2.0), Agent("B", work=1.0)]
    edges = [Edge(a, p, 1.0) for a in "AB" for p in ("cheap", "dear")]
    inst = Instance(pools, agents, edges, rounds=3)
    cg = column_generation(inst)
    assert cg.bound == pytest.approx(3.0) and cg.converged
    fixed = fixings(inst, cg.lam, cg.bound, 3.0)
    dear = [e for e in range(inst.n_edges) if inst.edge_pool[e] == 1]
    assert fixed[dear].all() and not fixed[[e for e in range(inst.n_edges) if e not in dear]].all()


def test_congestion_lifts_the_bound_above_each_job_alone():
    # Three one-round jobs, one cheap device per round, two rounds: one job must pay the dear pool.
    pools = [Pool("cheap", count=1, base_price=1.0), Pool("dear", count=3, base_price=5.0)]
    agents = [Agent(j, work=1.0) for j in "ABC"]
    edges = [Edge(j, p, 1.0) for j in "ABC" for p in ("cheap", "dear")]
    inst = Instance(pools, agents, edges, rounds=2)
    assert floor_bound(inst, "cost") == pytest.approx(3.0)
    cg = column_generation(inst)
    assert cg.bound == pytest.approx(7.0) and best(inst, "cost") == pytest.approx(7.0)
    result = lo.solve(inst, "migration", strategy="colgen")
    assert result.status == "optimal" and result.objective == pytest.approx(7.0)


def test_colgen_strategy_is_for_cost_only():
    inst = Instance([Pool("g")], [Agent("A")], [Edge("A", "g", 1.0)], rounds=2)
    with pytest.raises(InputError, match="strategy colgen supports objective cost only"):
        lo.solve(inst, "migration", objective="work", strategy="colgen")
