"""The count flow (laissez_opt.exact.count_flow) against enumeration with independent max flows."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.exact.count_flow import CountNetwork, lexicographic_count_flow


def _graph(net: CountNetwork, targets) -> nx.DiGraph:
    """The layered network with source arcs at ``targets``, built from scratch with networkx."""
    g = nx.DiGraph()
    for i, t in enumerate(targets):
        g.add_edge("S", ("a", i), capacity=int(t))
    for j, (i, cap) in enumerate(zip(net.group_agent.tolist(), net.group_cap.tolist())):
        g.add_edge(("a", i), ("g", j), capacity=int(cap))
    for grp, node, cap in zip(net.col_group.tolist(), net.col_node.tolist(), net.col_cap.tolist()):
        # Parallel columns between one group and one node add up.
        old = g.get_edge_data(("g", grp), ("p", node), {"capacity": 0})["capacity"]
        g.add_edge(("g", grp), ("p", node), capacity=old + int(cap))
    for node, cap in enumerate(net.node_cap.tolist()):
        g.add_edge(("p", node), "T", capacity=int(cap))
    return g


def _deliverable(net: CountNetwork, targets) -> bool:
    if sum(targets) == 0:
        return True
    return nx.maximum_flow_value(_graph(net, targets), "S", "T") == sum(targets)


def _brute_force(net: CountNetwork) -> list[float]:
    """The leximin sorted vector of ``g_i N_i`` (agents with ``g_i > 0``) over every deliverable ``N``."""
    upper = net.standalone()
    taking = np.flatnonzero(net.g > 0)
    best = None
    for choice in itertools.product(*(range(int(upper[i]) + 1) for i in taking)):
        targets = np.zeros(net.g.shape[0], dtype=np.int64)
        targets[taking] = choice
        if not _deliverable(net, targets):
            continue
        key = sorted((net.g[taking] * np.array(choice)).round(9).tolist())
        if best is None or key > best:
            best = key
    return best or []


@st.composite
def networks(draw):
    n = draw(st.integers(1, 4))
    rounds = draw(st.integers(1, 2))
    pools = draw(st.integers(1, 3))
    # Values per unit from a small set, so that ties between agents occur often.
    g = np.array([draw(st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.0])) for _ in range(n)])
    groups, group_agent, group_cap = {}, [], []
    col_group, col_node, col_cap = [], [], []
    for i in range(n):
        for r in range(rounds):
            groups[(i, r)] = len(group_agent)
            group_agent.append(i)
            group_cap.append(draw(st.integers(0, 3)))
        for c in draw(st.sets(st.integers(0, pools - 1), min_size=1, max_size=pools)):
            for r in range(rounds):
                col_group.append(groups[(i, r)])
                col_node.append(c * rounds + r)
                col_cap.append(draw(st.integers(0, 3)))
    node_cap = [draw(st.integers(0, 3)) for _ in range(pools * rounds)]
    return CountNetwork(g=g, group_agent=np.array(group_agent), group_cap=np.array(group_cap),
                        col_group=np.array(col_group), col_node=np.array(col_node), col_cap=np.array(col_cap),
                        node_cap=np.array(node_cap))


def _check_flow(net: CountNetwork, units: np.ndarray, flows: np.ndarray) -> None:
    """The column flows respect every capacity and deliver ``units``."""
    assert (flows >= 0).all() and (flows <= net.col_cap).all()
    per_group = np.bincount(net.col_group, weights=flows, minlength=net.group_agent.shape[0])
    assert (per_group <= net.group_cap).all()
    per_node = np.bincount(net.col_node, weights=flows, minlength=net.node_cap.shape[0])
    assert (per_node <= net.node_cap).all()
    assert np.array_equal(np.bincount(net.group_agent, weights=per_group, minlength=units.shape[0]), units)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks())
def test_the_greedy_reaches_the_enumerated_leximin(net):
    units, flows, stats = lexicographic_count_flow(net)
    assert stats["complete"]
    _check_flow(net, units, flows)
    taking = net.g > 0
    assert (units[~taking] == 0).all()
    got = sorted((net.g[taking] * units[taking]).round(9).tolist())
    assert got == _brute_force(net)
    assert stats["frozen"][taking].all()


class _StepClock:
    """A clock that advances one second per reading: a time limit of ``k`` stops the search after ``k`` checks."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1.0
        return self.now


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks(), st.integers(1, 40))
def test_a_time_limit_leaves_a_state_of_the_greedy_with_final_agents(net, steps):
    import laissez_opt.exact.count_flow as count_flow

    full, _, _ = lexicographic_count_flow(net)
    real = count_flow.time
    count_flow.time = _StepClock()
    try:
        units, flows, stats = lexicographic_count_flow(net, time_limit=float(steps))
    finally:
        count_flow.time = real
    _check_flow(net, units, flows)
    # The stopped greedy is a prefix of the full one: nobody is past the end, and
    # every agent it marks final already has its final number of units.
    assert (units <= full).all()
    assert np.array_equal(units[stats["frozen"]], full[stats["frozen"]])
    if stats["complete"]:
        assert np.array_equal(units, full)


def test_a_stopped_drf_reports_a_bound_above_the_leximin_minimum(monkeypatch):
    import laissez_opt.exact.count_flow as count_flow

    inst = lo.generate("gavel", 200, 30, seed=0, max_count=8, rounds=4, priorities=True)
    exact = lo.solve(inst, "drf")
    seen = set()
    for steps in (2, 3, 4, 5):
        monkeypatch.setattr(count_flow, "time", _StepClock())
        stopped = lo.solve(inst, "drf", time_limit=steps)
        if stopped.status == "optimal":
            continue
        assert stopped.status == "time_limit" and stopped.verified and "max flows" in stopped.message
        assert stopped.objective <= exact.objective + 1e-12 <= stopped.bound + 2e-12
        if stopped.objective > 0:
            assert 0 <= stopped.gap <= 1
        else:  # nothing placed yet: no relative gap to a zero incumbent
            assert stopped.gap is None
        seen.add(steps)
    assert seen  # the short limits stop it


def test_bulk_steps_use_few_max_flows_on_a_large_network():
    """10,000 agents of four kinds on 50 pools over 4 rounds: a few dozen max flows, not one per unit."""
    rng = np.random.default_rng(3)
    n, pools, rounds = 10_000, 50, 4
    g = rng.choice([0.25, 0.5, 1.0, 2.0], size=n)
    group_agent = np.repeat(np.arange(n), rounds)
    group_cap = rng.integers(1, 5, size=n * rounds)
    col_group, col_node = [], []
    for i in range(n):
        for c in rng.choice(pools, size=3, replace=False):
            for r in range(rounds):
                col_group.append(i * rounds + r)
                col_node.append(c * rounds + r)
    col_group, col_node = np.array(col_group), np.array(col_node)
    net = CountNetwork(g=g, group_agent=group_agent, group_cap=group_cap, col_group=col_group,
                       col_node=col_node, col_cap=np.full(col_group.shape[0], 4), node_cap=np.full(pools * rounds, 300))
    units, flows, stats = lexicographic_count_flow(net)
    assert stats["complete"] and stats["max_flows"] < 200
    _check_flow(net, units, flows)
    assert units.sum() == 300 * pools * rounds  # scarce: every device is used


def test_integral_drf_by_the_count_flow_at_thousands_of_jobs():
    """Interchangeable tasks (the default one accelerator): the count flow proves the whole leximin."""
    inst = lo.generate("gavel", 2000, 100, seed=0, max_count=16, rounds=4, priorities=True)
    r = lo.solve(inst, "drf", time_limit=60)
    assert r.status == "optimal" and r.gap == 0.0 and r.verified
    assert r.route.startswith("ortools-max-flow")
    tasks = np.array(list(r.details["tasks"].values()))
    assert tasks.sum() == inst.counts.sum() * inst.rounds  # more demand than devices: all are used


def test_mixed_task_vectors_keep_the_ordered_outcome_milps():
    pools = [lo.Pool("P", count=4, resources={"cpu": 8})]
    agents = [lo.Agent("A", task={"accelerator": 1, "cpu": 2}), lo.Agent("B", task={"accelerator": 1, "cpu": 4})]
    inst = lo.Instance(pools, agents, [lo.Edge(a.id, "P", 1.0) for a in agents])
    r = lo.solve(inst, "drf")
    assert r.status == "optimal" and not r.route.startswith("ortools-max-flow")


def test_flow_option_is_checked():
    inst = lo.load("instances/gavel-medium.json")
    with pytest.raises(lo.InputError, match="option flow"):
        lo.solve(inst, "drf", flow="sometimes")
