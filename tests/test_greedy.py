"""The greedy heuristic: never above the optimum, at least half of it, documented tie-breaking."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force import best_welfare
from conftest import small_instances


def alloc(result):
    return sorted((r["agent"], r["pool"], r["round"], r["amount"]) for r in result.allocation)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_greedy_between_half_and_all_of_the_optimum(inst):
    greedy = lo.solve(inst, "greedy", check=False)
    outcome = verify(inst, greedy)
    assert outcome.ok, str(outcome)
    assert greedy.status == "feasible"  # a heuristic proves nothing
    assert greedy.bound is None and greedy.gap is None
    optimum, _ = best_welfare(inst)
    slack = 1e-9 * max(1.0, abs(optimum))
    assert greedy.objective <= optimum + slack
    assert greedy.objective >= 0.5 * optimum - slack
    assert math.isclose(greedy.objective, outcome.objective, rel_tol=1e-9, abs_tol=1e-12)
    exact = lo.solve(inst, "welfare")
    assert greedy.objective <= exact.objective + slack


def test_greedy_is_not_optimal_on_the_classic_example():
    # Greedy takes a-x (10) first and is left with b-y (1): 11 against the optimum 17.
    inst = Instance(
        [Pool("x"), Pool("y")],
        [Agent("a", demand=1), Agent("b", demand=1)],
        [Edge("a", "x", 10.0), Edge("a", "y", 9.0), Edge("b", "x", 8.0), Edge("b", "y", 1.0)],
    )
    result = lo.solve(inst, "greedy")
    assert alloc(result) == [("a", "x", 0, 1.0), ("b", "y", 0, 1.0)]
    assert result.objective == 11.0
    assert lo.solve(inst, "welfare").objective == 17.0


def test_half_is_tight():
    # a-x worth 1 + eps goes first; b (only x) and a's second choice y are lost: ratio ~ 1/2.
    eps = 1e-3
    inst = Instance(
        [Pool("x"), Pool("y")],
        [Agent("a", demand=1), Agent("b", demand=1)],
        [Edge("a", "x", 1.0 + eps), Edge("a", "y", 1.0), Edge("b", "x", 1.0)],
    )
    greedy = lo.solve(inst, "greedy").objective
    optimum = best_welfare(inst)[0]
    assert greedy == pytest.approx(1.0 + eps) and optimum == pytest.approx(2.0)
    assert 0.5 <= greedy / optimum < 0.51


def test_each_device_to_the_agent_valuing_it_most_weighted():
    # Weighted values: A 2 x 1.0 = 2.0 beats B 1 x 1.5 = 1.5 for the single device.
    inst = Instance([Pool("g")], [Agent("A", weight=2.0), Agent("B")], [Edge("A", "g", 1.0), Edge("B", "g", 1.5)])
    assert alloc(lo.solve(inst, "greedy")) == [("A", "g", 0, 1.0)]
    # With equal weights B values it more.
    inst = Instance([Pool("g")], [Agent("A"), Agent("B")], [Edge("A", "g", 1.0), Edge("B", "g", 1.5)])
    assert alloc(lo.solve(inst, "greedy")) == [("B", "g", 0, 1.0)]


def test_ties_go_to_the_earlier_agent_in_instance_order():
    # Agents listed Z before A: Z wins the tie although "A" sorts first by id.
    inst = Instance([Pool("g")], [Agent("Z"), Agent("A")], [Edge("A", "g", 1.0), Edge("Z", "g", 1.0)])
    assert alloc(lo.solve(inst, "greedy")) == [("Z", "g", 0, 1.0)]
    inst = Instance([Pool("g")], [Agent("A"), Agent("Z")], [Edge("Z", "g", 1.0), Edge("A", "g", 1.0)])
    assert alloc(lo.solve(inst, "greedy")) == [("A", "g", 0, 1.0)]


def test_ties_between_pools_go_to_the_earlier_pool_in_instance_order():
    inst = Instance(
        [Pool("late"), Pool("early")],
        [Agent("a", demand=1)],
        [Edge("a", "early", 2.0), Edge("a", "late", 2.0)],
    )
    assert alloc(lo.solve(inst, "greedy")) == [("a", "late", 0, 1.0)]


def test_weighted_ties_use_agent_order_not_raw_utility():
    # A: 2 x 1.0, B: 1 x 2.0 -- equal weighted values; A is listed first.
    inst = Instance([Pool("g")], [Agent("A", weight=2.0), Agent("B")], [Edge("B", "g", 2.0), Edge("A", "g", 1.0)])
    assert alloc(lo.solve(inst, "greedy")) == [("A", "g", 0, 1.0)]


def test_demand_caps_and_leftovers():
    # Pool of 5; A (demand 2) values it most, B (demand 1) next, C (unbounded) takes the rest.
    inst = Instance(
        [Pool("g", count=5)],
        [Agent("A", demand=2), Agent("B", demand=1), Agent("C")],
        [Edge("A", "g", 3.0), Edge("B", "g", 2.0), Edge("C", "g", 1.0)],
    )
    result = lo.solve(inst, "greedy")
    assert alloc(result) == [("A", "g", 0, 2.0), ("B", "g", 0, 1.0), ("C", "g", 0, 2.0)]
    assert result.objective == pytest.approx(2 * 3.0 + 2.0 + 2 * 1.0)
    assert result.utilities == {"A": 6.0, "B": 2.0, "C": 2.0}


def test_demand_spread_over_pools():
    # A (demand 3) takes both devices of its best pool, then one of the next.
    inst = Instance(
        [Pool("p", count=2), Pool("q", count=2)],
        [Agent("A", demand=3), Agent("B", demand=1)],
        [Edge("A", "p", 5.0), Edge("A", "q", 4.0), Edge("B", "q", 1.0)],
    )
    assert alloc(lo.solve(inst, "greedy")) == [("A", "p", 0, 2.0), ("A", "q", 0, 1.0), ("B", "q", 0, 1.0)]


def test_demand_zero_and_zero_utility_get_nothing():
    inst = Instance(
        [Pool("g", count=3)],
        [Agent("A", demand=0), Agent("B")],
        [Edge("A", "g", 9.0), Edge("B", "g", 0.0)],
    )
    result = lo.solve(inst, "greedy")
    assert result.allocation == [] and result.objective == 0.0


def test_rounds_are_independent_and_respect_windows():
    inst = Instance(
        [Pool("g")],
        [Agent("early", deadline=0), Agent("late", arrival=1)],
        [Edge("early", "g", (1.0, 100.0)), Edge("late", "g", (100.0, 1.0))],
        rounds=2,
    )
    result = lo.solve(inst, "greedy")
    # Round 0: only "early" may run; round 1: only "late".
    assert alloc(result) == [("early", "g", 0, 1.0), ("late", "g", 1, 1.0)]
    assert result.objective == pytest.approx(2.0)


def test_r4_greedy(r4):
    # B-A10 (4.35) first, then A-Trainium (3.33): here greedy finds the optimum.
    result = lo.solve(r4, "greedy")
    assert alloc(result) == [("A", "Trainium", 0, 1.0), ("B", "A10", 0, 1.0)]
    assert result.objective == pytest.approx(lo.solve(r4, "welfare").objective)
