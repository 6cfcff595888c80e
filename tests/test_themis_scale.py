"""Integral Themis at scale: the rounded incumbent and the LP relaxation solved on classes.

Against enumeration (``test_themis.ref_integral``): with identical agents (so the
relaxation runs on classes) the integral optimum is unchanged and the bracket
holds it; every rounded incumbent is a feasible integral allocation whose
``max rho`` is at least the optimum; a time-limited large run keeps an incumbent,
a bound below it and a finite gap.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.exact.themis import (
    bipartite_rounding, improve_by_moves, rounded_incumbent, solve_themis, themis_data,
)
from laissez_opt.instance import Agent, Edge, Instance

from test_themis import SETTINGS, ref_integral, themis_instances

REL = 1e-6


def doubled(instance: Instance) -> Instance:
    """Every agent twice (same edges, weight, demand, work, elapsed): classes of two."""
    agents, edges = [], []
    for copy in range(2):
        for a in instance.agents:
            agents.append(Agent(f"{a.id}-{copy}", weight=a.weight, demand=a.demand, work=a.work, elapsed=a.elapsed))
            edges += [Edge(f"{a.id}-{copy}", e.pool, e.utility) for e in instance.edges if e.agent == a.id]
    return Instance(instance.pools, agents, edges, name="doubled")


@settings(max_examples=80, **SETTINGS)
@given(themis_instances(max_agents=2, max_pools=2, max_count=3))
def test_relaxation_on_classes_keeps_the_integral_optimum(instance):
    inst = doubled(instance)
    expected, _ = ref_integral(inst)
    on = lo.solve(inst, "themis")
    off = lo.solve(inst, "themis", compress="off")
    for r in (on, off):
        assert r.status == "optimal", (r.status, r.message)
        assert math.isclose(r.objective, expected, rel_tol=REL, abs_tol=1e-9), (r.objective, expected)
        low, high = r.details["bracket"]
        assert low <= expected * (1 + REL) + 1e-12


@settings(max_examples=120, **SETTINGS)
@given(themis_instances(), st.lists(st.floats(0, 3), min_size=12, max_size=12))
def test_rounded_incumbent_is_feasible_and_not_below_the_optimum(instance, raw):
    expected, _ = ref_integral(instance)
    data = themis_data(instance)
    base = np.array(raw[: instance.n_edges] + [0.0] * max(0, instance.n_edges - len(raw)))
    frac = lo.solve(instance, "themis", fractional=True)
    starts = [None, base]
    if frac.amounts is not None:
        x_frac = frac.amounts[:, 0]
        paired = bipartite_rounding(instance, data, x_frac)
        assert paired is not None  # x itself is feasible: the TU polytope has an integral vertex
        assert np.all(np.abs(paired - x_frac) < 1 - 1e-9)  # each edge rounded up or down
        for index, count in ((instance.edge_agent, instance.n_agents), (instance.edge_pool, instance.n_pools)):
            assert np.all(np.abs(np.bincount(index, weights=paired, minlength=count)
                                 - np.bincount(index, weights=x_frac, minlength=count)) < 1 + 1e-9)
        starts += [x_frac, paired]
    for start in starts:
        x = rounded_incumbent(instance, data, start)
        assert np.all(x == np.round(x)) and np.all(x >= 0)
        assert np.all(np.bincount(instance.edge_pool, weights=x, minlength=instance.n_pools) <= instance.counts)
        assert np.all(np.bincount(instance.edge_agent, weights=x, minlength=instance.n_agents) <= instance.demands)
        value = data.max_rho(instance, x)
        if data.bidders.size:
            assert value >= expected * (1 - REL) - 1e-12, (value, expected)
        y = improve_by_moves(instance, data, x)  # single-device moves: feasible, never worse, never below rho*
        assert np.all(y == np.round(y)) and np.all(y >= 0)
        assert np.all(np.bincount(instance.edge_pool, weights=y, minlength=instance.n_pools) <= instance.counts)
        assert np.all(np.bincount(instance.edge_agent, weights=y, minlength=instance.n_agents) <= instance.demands)
        assert np.all(y[instance.edge_utility[:, 0] <= 0] <= x[instance.edge_utility[:, 0] <= 0])
        moved = data.max_rho(instance, y)
        assert moved <= value
        if data.bidders.size:
            assert moved >= expected * (1 - REL) - 1e-12, (moved, expected)


def test_time_limited_large_run_has_incumbent_bound_and_gap():
    inst = lo.generate("gavel", 3000, 3, seed=1, max_count=3000)
    r = solve_themis(inst, time_limit=4.0)
    assert r.status in ("optimal", "feasible", "time_limit")
    assert math.isfinite(r.objective) and r.bound is not None and 0 < r.bound <= r.objective
    assert r.gap is not None and 0 <= r.gap < 1
    assert r.amounts is not None


def test_relaxation_runs_on_classes_when_everyone_bids():
    pools = [lo.Pool("V", count=3), lo.Pool("K", count=5)]
    agents = [Agent(f"j{i}", demand=2, work=2.0) for i in range(6)]
    edges = [Edge(f"j{i}", "V", 3.0) for i in range(6)] + [Edge(f"j{i}", "K", 1.0) for i in range(6)]
    inst = Instance(pools, agents, edges)
    expected, _ = ref_integral(inst)
    r = lo.solve(inst, "themis")
    assert "relaxation" in r.details and r.status == "optimal"
    assert math.isclose(r.objective, expected, rel_tol=REL)
    assert "relaxation" not in lo.solve(inst, "themis", compress="off").details
