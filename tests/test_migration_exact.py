"""Exact closing of the migration model: the objective unit, rounded bounds, the strict cutoff and dominance pruning."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.exact.migration import floor_bound, objective_unit, round_bound, strict_cutoff
from laissez_opt.exact.migration_colgen import (_column_matrix, _jobs, _master, column_generation, enumerate_columns,
                                                exact_by_enumeration, improve, prune_dominated, schedule_money)
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force_migration import best, job_schedules
from test_migration import job_instances

SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROOT = Path(__file__).resolve().parents[1]


def _tol(value):
    return 1e-6 * max(1.0, abs(value))


def _with_hours(inst: Instance, hours: float) -> Instance:
    return Instance(inst.pools, inst.agents, inst.edges, rounds=inst.rounds, round_hours=hours, name=inst.name)


@SLOW
@given(inst=job_instances(), hours=st.sampled_from([1.0, 0.25, 1 / 12, 0.1, 1 / 3]))
def test_every_schedule_costs_a_multiple_of_the_unit(inst, hours):
    inst = _with_hours(inst, hours)
    unit = objective_unit(inst, "cost")
    counts = {p.id: p.count for p in inst.pools}
    for agent in inst.agents:
        for _, _, _, _, money, usage in job_schedules(inst, agent):
            if any(n > counts[p] for (p, _), n in usage.items()):
                continue  # a gang larger than the pool: never part of a feasible schedule
            if unit is None:  # quarter prices always have a unit unless every price a job can pay is 0
                assert money == 0
            else:
                assert abs(money / unit - round(money / unit)) <= 1e-6
    completion = objective_unit(inst, "completion")
    assert completion is not None and all(abs(a.weight / completion - round(a.weight / completion)) <= 1e-9
                                          for a in inst.agents)


@SLOW
@given(inst=job_instances(), hours=st.sampled_from([1.0, 1 / 12, 0.1]))
def test_rounded_bounds_never_exceed_brute_force(inst, hours):
    inst = _with_hours(inst, hours)
    expected = best(inst, "cost")
    cg = column_generation(inst)
    if expected is not None:
        rounded = round_bound(cg.bound, objective_unit(inst, "cost"))
        assert cg.bound - _tol(cg.bound) <= rounded <= expected + _tol(expected)
    for objective in ("completion", "work"):
        value = best(inst, objective)
        if value is None:
            continue
        floor = floor_bound(inst, objective)
        rounded = round_bound(floor, objective_unit(inst, objective), maximise=objective == "work")
        if objective == "work":
            assert value - _tol(value) <= rounded <= floor + _tol(floor)
        else:
            assert floor - _tol(floor) <= rounded <= value + _tol(value)


@given(upper=st.integers(-50, 10**7), unit_k=st.integers(1, 10**4), extra=st.floats(0.0, 0.999))
def test_strict_cutoff_admits_every_cheaper_multiple_and_nothing_else(upper, unit_k, extra):
    unit = unit_k / 1000.0
    level = (upper + extra) * unit  # a money level, a multiple of the unit when extra is 0
    cutoff = strict_cutoff(level, unit)
    assert cutoff < level
    # Every multiple below the level, beyond the noise allowed on the level (1e-6 + 1e-9 |level| units), passes.
    noise = 1e-6 + 1e-9 * abs(level / unit)
    below = math.ceil(level / unit - noise) - 1
    assert below * unit <= cutoff + 1e-12 * max(1.0, abs(level))
    assert (below + 1) * unit >= level - 2 * noise * unit
    if extra == 0.0:
        assert cutoff < level - 0.4 * unit  # the level itself is excluded with half a unit of room


def test_rounding_moves_only_past_noise():
    unit = 1 / 6000
    assert round_bound(24094 / 6000 + 1e-15, unit) == pytest.approx(24094 / 6000)  # noise is not lifted
    assert round_bound(24094.01 / 6000, unit) == pytest.approx(24095 / 6000)
    assert round_bound(24094.99 / 6000, unit, maximise=True) == pytest.approx(24094 / 6000)
    assert round_bound(1.234, None) == 1.234 and round_bound(math.inf, unit) == math.inf


def _irrational_instance():
    pools = [Pool("cheap", count=1, base_price=math.pi / 3), Pool("dear", count=2, base_price=math.sqrt(2))]
    agents = [Agent("A", work=2.0), Agent("B", work=1.0, arrival=1), Agent("C", work=1.0, deadline=2)]
    edges = [Edge(j, p, 1.0) for j in "ABC" for p in ("cheap", "dear")]
    return Instance(pools, agents, edges, rounds=3)


def test_non_integral_prices_take_the_fallback():
    inst = _irrational_instance()
    assert objective_unit(inst, "cost") is None
    expected = best(inst, "cost")
    cg, found, money = improve(inst, seconds=None)
    stats: dict = {}
    schedule, proven = exact_by_enumeration(inst, cg.lam, cg.bound, money + 0.5, time_limit=None, stats=stats)
    assert stats["unit"] is None and stats["cutoff"] == pytest.approx(money + 0.5 - 1e-9 * (money + 0.5), abs=1e-15)
    assert proven == pytest.approx(expected) and schedule_money(inst, schedule) == pytest.approx(expected)
    assert round_bound(cg.bound, None) == cg.bound
    result = lo.solve(inst, "migration", time_limit=30, threads=1)
    assert result.status == "optimal" and result.objective == pytest.approx(expected)


def test_the_unit_cutoff_needs_fewer_columns():
    # Quarter prices, one-hour rounds: money comes in quarters, so below an incumbent one quarter above the optimum
    # only the optimum counts, and schedules a quarter dearer than a job's cheapest (the dear pool) need not be listed.
    pools = [Pool("cheap", count=3, base_price=0.5), Pool("dear", count=3, base_price=0.75)]
    agents = [Agent("A", work=2.0), Agent("B", work=1.0), Agent("C", work=1.0, arrival=1)]
    edges = [Edge(j, p, 1.0) for j in "ABC" for p in ("cheap", "dear")]
    inst = Instance(pools, agents, edges, rounds=4)
    unit = objective_unit(inst, "cost")
    assert unit == pytest.approx(0.25)
    expected = best(inst, "cost")
    cg = column_generation(inst)
    assert cg.bound == pytest.approx(expected)  # nothing is contested
    upper = expected + unit  # a schedule one unit dearer than the optimum
    low = expected - 0.4 * unit  # a valid bound that is not a multiple (as the Lagrangian one often is)
    with_unit = enumerate_columns(inst, cg.lam, low, strict_cutoff(upper, unit))
    without = enumerate_columns(inst, cg.lam, low, strict_cutoff(upper, None))
    assert len(with_unit) < len(without)
    assert not any(inst.edge_pool[_jobs(inst)[j].edges[k]] == 1 for j, c in with_unit for k in c.tolist() if k >= 0)
    schedule, proven = exact_by_enumeration(inst, cg.lam, cg.bound, expected, time_limit=None)
    assert proven == pytest.approx(expected)  # nothing is a unit cheaper than the optimum


def _master_value(inst, columns):
    jobs = _jobs(inst)
    R, P = inst.rounds, inst.n_pools
    costs, rows, cols = _column_matrix(jobs, columns, inst.base_prices * inst.round_hours, R)
    counts = np.repeat(inst.counts.astype(float), R)
    _, solution = _master(jobs, columns, costs, rows, cols, P * R, counts, integral=True)
    return solution.objective, costs, rows, cols, counts


@SLOW
@given(inst=job_instances())
def test_pruning_dominated_columns_keeps_the_optimum(inst):
    expected = best(inst, "cost")
    cg, found, money = improve(inst, seconds=None)
    if found is None:
        return
    columns = enumerate_columns(inst, cg.lam, cg.bound, money + 1.0)
    assert columns is not None
    unique = list({(j, c.tobytes()): (j, c) for j, c in columns}.values())
    full, costs, rows, cols, counts = _master_value(inst, unique)
    kept = prune_dominated(_jobs(inst), unique, costs, rows, cols, counts)
    assert 0 < kept.size <= len(unique) and {unique[k][0] for k in kept.tolist()} == {j for j, _ in unique}
    pruned, *_ = _master_value(inst, [unique[k] for k in kept.tolist()])
    assert pruned == pytest.approx(full, rel=1e-7, abs=1e-7) == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_only_columns_that_save_a_contested_slot_survive():
    # One cheap and one dear device, two rounds, two one-round jobs; only A may use the dear pool.  The cheap
    # slots are contested (A and B both want them); the dear slots are not (A alone).  A's two dear columns cost
    # the same and use no contested slot: one stands for both.  The cheap columns each hold a contested slot
    # that the dear one does not, so none dominates another: 3 columns of A and 2 of B are kept.
    pools = [Pool("cheap", count=1, base_price=1.0), Pool("dear", count=1, base_price=3.0)]
    agents = [Agent("A"), Agent("B")]
    edges = [Edge("A", "cheap", 1.0), Edge("A", "dear", 1.0), Edge("B", "cheap", 1.0)]
    inst = Instance(pools, agents, edges, rounds=2)
    jobs = _jobs(inst)
    columns = enumerate_columns(inst, np.zeros((2, 2)), 2.0, 10.0)
    assert len(columns) == 6
    costs, rows, cols = _column_matrix(jobs, columns, inst.base_prices * inst.round_hours, 2)
    kept = prune_dominated(jobs, columns, costs, rows, cols, np.repeat(inst.counts.astype(float), 2))
    survivors = [columns[k] for k in kept.tolist()]
    dear = [c for j, c in survivors if j == 0 and any(jobs[0].pools[k] == 1 for k in c.tolist() if k >= 0)]
    assert len(dear) == 1 and sum(1 for j, _ in survivors if j == 1) == 2 and len(survivors) == 5
    # With a second cheap device nothing is contested: each job keeps its one cheapest column.
    roomy = Instance([Pool("cheap", count=2, base_price=1.0), pools[1]], agents, edges, rounds=2)
    kept = prune_dominated(_jobs(roomy), columns, costs, rows, cols, np.repeat(roomy.counts.astype(float), 2))
    assert sorted(columns[k][0] for k in kept.tolist()) == [0, 1]
    assert all(costs[k] == 1.0 for k in kept.tolist())


def _classic(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the script imports its sibling helpers
    spec = importlib.util.spec_from_file_location("migration_scaling", ROOT / "benchmarks" / "migration_scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.jobs_instance(20, 20)


def test_classic_twenty_by_twenty_is_proven_optimal(monkeypatch):
    # The benchmark's classic 20 jobs x 20 rounds: the column-generation bound 24,094 / 6,000 is a multiple of the
    # unit, the incumbent is two units above it; the pruned enumeration proves nothing cheaper exists.
    inst = _classic(monkeypatch)
    assert objective_unit(inst, "cost") == pytest.approx(1 / 6000)
    result = lo.solve(inst, "migration", time_limit=60, threads=1)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(4.016) and result.bound == pytest.approx(4.016)
