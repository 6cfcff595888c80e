"""drf: dominant resource fairness with per-pool placement (``models/drf.md``).

* the DRF paper's example (9 CPUs, 18 GB; <1 CPU, 4 GB> and <3 CPU, 1 GB>) and a
  weighted variant worked out by hand;
* HiGHS vs OR-Tools vs an exhaustive enumeration (integral) and a slow
  linprog waterfilling (fractional) on hypothesis instances with two or three
  resource kinds; every result verifies (``lo.solve`` verifies each result);
* with the default task (one accelerator) and unit utilities, DRF is maxmin
  with the equal-share normaliser (values scaled by ``sum w``);
* the new instance fields ``pools[].resources`` and ``agents[].task``: reading,
  canonical writing, errors.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.exact.drf import build_drf, max_placed_tasks, resource_arrays, task_shares
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.io import dumps_instance, instance_from_dict

from brute_force_maxmin import brute_force_leximin, drf_polytope, reference_waterfilling, taking_part


def paper_example(weight_a: float = 1.0) -> Instance:
    """DRF (NSDI 2011), section 4: 9 CPUs and 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>."""
    return Instance(
        [Pool("cluster", count=1, resources={"cpu": 9, "memory": 18, "accelerator": 0})],
        [Agent("A", weight=weight_a, task={"cpu": 1, "memory": 4}), Agent("B", task={"cpu": 3, "memory": 1})],
        [Edge("A", "cluster", 1.0), Edge("B", "cluster", 1.0)],
        name="drf-paper",
    )


@pytest.mark.parametrize("fractional", [False, True])
@pytest.mark.parametrize("solver", ["highs", "ortools"])
def test_paper_example(fractional, solver):
    r = lo.solve(paper_example(), "drf", fractional=fractional, solver=solver)
    assert r.status == "optimal" and r.verified
    assert r.details["tasks"] == pytest.approx({"A": 3.0, "B": 2.0})
    # A: 3 CPUs, 12 GB -> dominant share 12/18 = 2/3 (memory); B: 6 CPUs, 2 GB -> 6/9 = 2/3 (CPU).
    assert r.details["dominant_shares"] == pytest.approx({"A": 2 / 3, "B": 2 / 3})
    assert r.objective == pytest.approx(2 / 3)
    assert r.details["kinds"] == ["cpu", "memory"]


def test_weighted_paper_example():
    """With w_A = 2: s_A / 2 = s_B, and memory binds first: A gets 54/13 tasks, B 18/13."""
    r = lo.solve(paper_example(weight_a=2.0), "drf", fractional=True)
    assert r.details["tasks"] == pytest.approx({"A": 54 / 13, "B": 18 / 13})
    assert r.details["leximin"]["A"] == pytest.approx(r.details["leximin"]["B"])
    integral = lo.solve(paper_example(weight_a=2.0), "drf")
    # Integral: (A, B) = (3, 2) has values (1/3, 2/3), better than (4, 1) with (4/9, 1/3).
    assert integral.details["tasks"] == pytest.approx({"A": 3.0, "B": 2.0})


def test_task_without_capacity_is_excluded():
    inst = Instance(
        [Pool("gpu", count=2, resources={"cpu": 8})],
        [Agent("A", task={"accelerator": 1, "cpu": 2}), Agent("B", task={"memory": 4})],
        [Edge("A", "gpu", 1.0), Edge("B", "gpu", 1.0)],
    )
    r = lo.solve(inst, "drf", fractional=True)
    assert r.details["excluded"] == ["B"] and r.details["tasks"]["B"] == 0.0
    assert r.details["tasks"]["A"] == pytest.approx(2.0)  # two accelerators, 4 of 8 CPUs
    assert math.isinf(task_shares(inst)[1])


def test_max_placed_tasks_counts_each_task_under_one_kind():
    pools = [Pool("p", count=4, resources={"cpu": 7}), Pool("q", count=1, resources={"cpu": 0})]
    agents = [Agent("A", task={"accelerator": 2, "cpu": 1}), Agent("B", task={"cpu": 3}), Agent("C")]
    edges = [Edge("A", "p", 1.0), Edge("B", "p", 1.0), Edge("C", "q", 1.0)]
    # p: floor(4 / 2) accelerator tasks + floor(7 / 1) cpu tasks; q: one task of C's single accelerator.
    assert max_placed_tasks(Instance(pools, agents, edges)) == 2 + 7 + 1
    assert max_placed_tasks(Instance(pools, agents, edges, rounds=3)) == 3 * 10


def test_integral_drf_with_more_jobs_than_devices_proves_its_minimum():
    """32 gavel jobs, 18 GPUs: 14 jobs get nothing in every allocation, so the smallest share is 0,
    proven without a solve (bound 0, gap 0) whatever the time limit leaves of the higher levels."""
    inst = lo.generate("gavel", 32, 3, seed=0)
    assert max_placed_tasks(inst) == 18
    r = lo.solve(inst, "drf", time_limit=2, flow="off")
    assert r.details["steps_settled_at_zero"] == 14
    assert r.objective == 0.0 and r.bound == 0.0 and r.gap == 0.0
    assert r.verified
    # The count flow (the default for interchangeable tasks) proves the whole leximin.
    exact = lo.solve(inst, "drf")
    assert exact.status == "optimal" and exact.verified and exact.route.startswith("ortools-max-flow")
    assert sum(exact.details["tasks"].values()) == 18 and exact.objective == 0.0


# ------------------------------------------------------------------ hypothesis: references
KINDS = ("accelerator", "cpu", "memory")


@st.composite
def drf_instances(draw):
    """1-3 agents, 1-2 pools, one round; tasks over two or three kinds; small capacities."""
    n = draw(st.integers(1, 3))
    m = draw(st.integers(1, 2))
    kinds = KINDS[: draw(st.integers(2, 3))]
    pools = []
    for c in range(m):
        count = draw(st.integers(1, 2))
        resources = {k: float(draw(st.integers(0, 4))) for k in kinds[1:]}
        if draw(st.booleans()):
            resources["accelerator"] = float(draw(st.integers(0, count)))
        pools.append(Pool(f"p{c}", count=count, resources=resources))
    agents = []
    for i in range(n):
        task = None
        if draw(st.integers(0, 3)) > 0:
            task = {k: float(draw(st.sampled_from([0, 0.5, 1, 2]))) for k in kinds}
            if not any(task.values()):
                task[kinds[1]] = 1.0
        agents.append(Agent(f"a{i}", weight=draw(st.sampled_from([0.5, 1.0, 2.0])),
                            demand=draw(st.sampled_from([None, None, 0, 1, 2])), task=task))
    edges = [Edge(f"a{i}", f"p{c}", 1.0) for i in range(n) for c in range(m) if draw(st.integers(0, 3)) > 0]
    return Instance(pools, agents, edges, name="drf-hyp")


@settings(max_examples=200, deadline=None)
@given(inst=drf_instances(), basis=st.sampled_from(["compatible", "cluster"]))
def test_integral_drf_agrees_with_enumeration(inst, basis):
    poly = drf_polytope(inst, basis)
    if math.prod(int(u + 1e-9) + 1 for u in poly.upper) > 60_000:
        return
    best = brute_force_leximin(poly)
    part = {poly.ids[i] for i in taking_part(poly, integral=True)}
    for solver, flow in (("highs", "off"), ("ortools", "off"), ("highs", "auto")):
        r = lo.solve(inst, "drf", solver=solver, capacity_basis=basis, flow=flow)
        assert r.status == "optimal" and r.verified
        got = sorted(v for a, v in r.details["leximin"].items() if a in part)
        assert len(got) == len(best) and all(abs(x - y) <= 1e-6 * max(1, abs(y)) for x, y in zip(got, best)), (solver, got, best)
        assert set(r.details["excluded"]) == {a.id for a in inst.agents} - part
    # The task bound that settles the first ordered outcomes at 0 never cuts off a served agent.
    assert sum(1 for v in best if v > 1e-9) <= max_placed_tasks(inst)


@settings(max_examples=200, deadline=None)
@given(inst=drf_instances(), basis=st.sampled_from(["compatible", "cluster"]))
def test_fractional_drf_agrees_with_reference(inst, basis):
    reference = reference_waterfilling(drf_polytope(inst, basis))
    for solver, freeze in (("highs", "dual"), ("highs", "probe"), ("ortools", "dual")):
        r = lo.solve(inst, "drf", fractional=True, solver=solver, freeze=freeze, capacity_basis=basis)
        assert r.status == "optimal" and r.verified
        for agent, value in reference.items():
            assert math.isclose(r.details["leximin"][agent], value, rel_tol=1e-6, abs_tol=1e-7), (solver, freeze, agent)
        for agent in inst.agents:  # s_i = w_i * leximin value
            assert math.isclose(r.details["dominant_shares"][agent.id], agent.weight * r.details["leximin"][agent.id],
                                rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    agents=st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([None, 1, 2])), min_size=1, max_size=4),
    mask=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_default_task_drf_is_equal_share_maxmin(counts, agents, mask):
    """One accelerator per task, unit utilities: DRF values = maxmin(equal_share) values / sum w."""
    pools = [Pool(f"p{c}", count=k) for c, k in enumerate(counts)]
    ags = [Agent(f"a{i}", weight=w, demand=d) for i, (w, d) in enumerate(agents)]
    edges = [Edge(f"a{i}", f"p{c}", 1.0) for i in range(len(ags)) for c in range(len(pools)) if mask[i * 3 + c]]
    inst = Instance(pools, ags, edges)
    total = sum(w for w, _ in agents)
    drf = lo.solve(inst, "drf", fractional=True)
    maxmin = lo.solve(inst, "maxmin", fractional=True)
    for a in ags:
        assert math.isclose(drf.details["leximin"][a.id] * total, maxmin.details["leximin"][a.id], rel_tol=1e-6, abs_tol=1e-9)


# ------------------------------------------------------------------------ instance fields
def test_fields_read_write_round_trip():
    data = {
        "format": "laissez-opt/instance", "version": 1, "name": "drf",
        "pools": [{"id": "C", "count": 2, "resources": {"memory": 18, "cpu": 9}}],
        "agents": [{"id": "A", "task": {"memory": 4, "cpu": 1}}, {"id": "B"}],
        "edges": [{"agent": "A", "pool": "C", "utility": 1}, {"agent": "B", "pool": "C", "utility": 1}],
    }
    inst = instance_from_dict(data)
    assert inst.pools[0].capacity_vector == {"accelerator": 2.0, "cpu": 9.0, "memory": 18.0}
    assert inst.agents[0].task_vector == {"cpu": 1.0, "memory": 4.0}
    assert inst.agents[1].task_vector == {"accelerator": 1.0} and inst.agents[1].task is None
    text = dumps_instance(inst)
    assert '"resources": {"cpu": 9.0, "memory": 18.0}' in text and '"task": {"cpu": 1.0, "memory": 4.0}' in text
    assert '"task"' not in text.splitlines()[[k for k, line in enumerate(text.splitlines()) if '"B"' in line][0]]
    assert dumps_instance(instance_from_dict(json.loads(text))) == text
    kinds, D, R = resource_arrays(inst)
    assert kinds == ["accelerator", "cpu", "memory"] and D.tolist() == [[0, 1, 4], [1, 0, 0]]
    model, _ = build_drf(inst, fractional=True)
    assert set(model.constraints) == {"resource", "demand", "level"} and set(model.variables) == {"y", "t"}


@pytest.mark.parametrize(
    "change, path",
    [
        ({"pools": [{"id": "C", "resources": {"accelerator": 2}}]}, "$.pools[0].resources.accelerator"),
        ({"pools": [{"id": "C", "resources": {"cpu": -1}}]}, "$.pools[0].resources.cpu"),
        ({"agents": [{"id": "A", "task": {}}]}, "$.agents[0].task"),
        ({"agents": [{"id": "A", "task": {"cpu": 0}}]}, "$.agents[0].task"),
        ({"agents": [{"id": "A", "task": {"cpu": "four"}}]}, "$.agents[0].task.cpu"),
    ],
)
def test_bad_fields(change, path):
    data = {"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "C"}], "agents": [{"id": "A"}], "edges": []}
    data.update(change)
    with pytest.raises(lo.InputError) as err:
        instance_from_dict(data)
    assert err.value.path == path


def test_bad_capacity_basis():
    with pytest.raises(lo.InputError, match="capacity_basis"):
        lo.solve(paper_example(), "drf", capacity_basis="machines")
