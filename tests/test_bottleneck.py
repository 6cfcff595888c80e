"""Integral leximin for unit demands as a lexicographic bottleneck b-matching (``laissez_opt.exact.bottleneck``).

Cross-checked against every integral allocation enumerated (``brute_force_maxmin``)
on tiny instances, and against the ordered-outcome MILPs (``bottleneck="off"``) on
small ones; every allocation passes the independent verifier.
"""

from __future__ import annotations

import pytest
from brute_force_maxmin import brute_force_leximin, maxmin_polytope
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.exact.bottleneck import unit_demand_structure
from laissez_opt.generate import generate
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.io import instance_from_dict


@st.composite
def unit_instances(draw, max_agents=5):
    m = draw(st.integers(1, 3))
    pools = [Pool(f"P{c}", count=draw(st.integers(1, 2))) for c in range(m)]
    n = draw(st.integers(1, max_agents))
    agents = [Agent(f"a{i}", demand=1, weight=draw(st.sampled_from([1.0, 2.0]))) for i in range(n)]
    edges = []
    for i in range(n):
        for c in range(m):
            u = draw(st.sampled_from([None, 0.0, 1.0, 2.0, 3.0, 4.0]))  # ties on purpose
            if u is not None:
                edges.append(Edge(f"a{i}", f"P{c}", u))
    return Instance(pools, agents, edges)


def _sorted_values(result, inst):
    excluded = set(result.details["excluded"])
    return sorted(result.details["leximin"][a.id] for a in inst.agents if a.id not in excluded)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(unit_instances(), st.sampled_from(["equal_share", "raw"]))
def test_matches_brute_force(inst, normalizer):
    result = lo.solve(inst, "maxmin", normalizer=normalizer)
    assert result.verified and result.status == "optimal" and result.gap == 0.0
    assert result.solver == "ortools" and "bottleneck" in result.route
    best = brute_force_leximin(maxmin_polytope(inst, normalizer))
    assert _sorted_values(result, inst) == pytest.approx(best, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_ordered_outcome_milps(seed):
    data = generate("gavel", 10, 3, seed=seed, max_count=3)
    for agent in data["agents"]:
        agent["demand"] = 1
    inst = instance_from_dict(data, "unit gavel")
    fast = lo.solve(inst, "maxmin")
    milp = lo.solve(inst, "maxmin", bottleneck="off", time_limit=30)
    assert milp.status == "optimal", milp.status
    assert fast.objective == pytest.approx(milp.objective, rel=1e-7)
    assert _sorted_values(fast, inst) == pytest.approx(_sorted_values(milp, inst), rel=1e-6)


def test_applies_only_to_one_round_and_unit_demands():
    inst = Instance([Pool("P", count=2)], [Agent("A", demand=2), Agent("B", demand=1)],
                    [Edge("A", "P", 1.0), Edge("B", "P", 1.0)])
    assert not unit_demand_structure(inst)
    assert "bottleneck" not in lo.solve(inst, "maxmin").details
    with pytest.raises(lo.InputError, match="bottleneck"):
        lo.solve(inst, "maxmin", bottleneck="fast")


def test_scales_to_thousands_of_jobs():
    data = generate("gavel", 3000, 3, seed=4, max_count=3000)
    for agent in data["agents"]:
        agent["demand"] = 1
    result = lo.solve(instance_from_dict(data, "unit gavel"), "maxmin")
    assert result.status == "optimal" and result.verified and result.objective > 0


def test_a_time_limit_returns_a_verified_incumbent_with_an_honest_bound():
    """Random utilities give thousands of distinct values (one stage per few of them): stopped early,
    the last stage's allocation comes back as ``time_limit``, never ``optimal``, with bound >= objective."""
    inst = lo.generate("neocloud", 300, 30, seed=0)
    result = lo.solve(inst, "maxmin", time_limit=0.05)
    assert result.verified
    if result.details["bottleneck"]["complete"]:
        assert result.status == "optimal"
    else:
        assert result.status == "time_limit" and result.bound >= result.objective
        assert "settled" in result.message
