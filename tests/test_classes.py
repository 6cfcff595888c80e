"""Exact symmetry compression (``laissez_opt.exact.classes``, ``models/compression.md``).

Random small instances built from a few agent *types* (so classes have several
members): every model that compresses returns, with ``compress="on"``, the
objective of ``compress="off"``, an allocation the independent verifier accepts,
and (fractional leximin, where values are unique) the same value per agent.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.exact.classes import agent_classes
from laissez_opt.instance import Agent, Edge, Instance, Pool

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def typed_instances(draw, *, tasks: bool = False, themis: bool = False):
    """2-9 agents drawn from 1-3 types; 1-3 pools; small integer utilities."""
    m = draw(st.integers(1, 3))
    counts = [draw(st.integers(1, 4)) for _ in range(m)]
    pools = [Pool(f"P{c}", count=k, resources={"accelerator": k, "cpu": draw(st.integers(1, 8))} if tasks else None)
             for c, k in enumerate(counts)]
    n_types = draw(st.integers(1, 3))
    types = []
    for _ in range(n_types):
        utils = [draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0])) for _ in range(m)]
        if not any(u > 0 for u in utils):
            utils[0] = 1.0
        types.append(dict(
            utils=utils,
            weight=draw(st.sampled_from([1.0, 2.0])),
            demand=draw(st.sampled_from([None, 1, 2])),
            work=draw(st.sampled_from([1.0, 3.0])) if themis else None,
            elapsed=draw(st.sampled_from([0.0, 1.0])) if themis else 0.0,
            task={"accelerator": 1, "cpu": draw(st.integers(0, 3))} if tasks else None,
        ))
    kinds = draw(st.lists(st.integers(0, n_types - 1), min_size=2, max_size=9))
    agents, edges = [], []
    for i, k in enumerate(kinds):
        t = types[k]
        agents.append(Agent(f"a{i}", weight=t["weight"], demand=t["demand"], work=t["work"], elapsed=t["elapsed"],
                            task=t["task"]))
        edges += [Edge(f"a{i}", f"P{c}", u) for c, u in enumerate(t["utils"]) if u > 0]
    return Instance(pools, agents, edges)


def _both(inst, method, **opts):
    on = lo.solve(inst, method, compress="on", **opts)
    off = lo.solve(inst, method, compress="off", **opts)
    assert on.verified and off.verified
    assert on.status == off.status == "optimal"
    assert on.objective == pytest.approx(off.objective, rel=1e-6, abs=1e-7)
    return on, off


@SETTINGS
@given(typed_instances())
def test_welfare_compressed_equals_uncompressed(inst):
    for fractional in (False, True):
        on, off = _both(inst, "welfare", fractional=fractional)
        if not fractional:
            assert all(float(rec["amount"]).is_integer() for rec in on.allocation)


@SETTINGS
@given(typed_instances())
def test_fractional_leximin_compressed_equals_uncompressed(inst):
    for normalizer in ("equal_share", "raw"):
        on, off = _both(inst, "maxmin", fractional=True, normalizer=normalizer)
        for a in inst.agents:  # fractional leximin values are unique
            assert on.details["leximin"][a.id] == pytest.approx(off.details["leximin"][a.id], rel=1e-6, abs=1e-7)


@SETTINGS
@given(typed_instances(tasks=True))
def test_fractional_drf_compressed_equals_uncompressed(inst):
    on, off = _both(inst, "drf", fractional=True)
    for a in inst.agents:
        assert on.details["leximin"][a.id] == pytest.approx(off.details["leximin"][a.id], rel=1e-6, abs=1e-7)
        assert on.details["tasks"][a.id] == pytest.approx(off.details["tasks"][a.id], rel=1e-6, abs=1e-7)


@SETTINGS
@given(typed_instances(themis=True))
def test_fractional_themis_compressed_equals_uncompressed(inst):
    on, off = _both(inst, "themis", fractional=True)
    assert sorted(on.details["bidders"]) == sorted(off.details["bidders"])
    # The second stage maximises the weighted welfare of all agents with every rho_i held: same value.
    welfare = lambda r: sum(a.weight * r.utilities[a.id] for a in inst.agents)  # noqa: E731
    assert welfare(on) == pytest.approx(welfare(off), rel=1e-6, abs=1e-6)


def test_auto_compresses_only_when_classes_are_few():
    inst = lo.generate("gavel", 300, 3, seed=2)
    assert lo.solve(inst, "maxmin", fractional=True).details["compression"]["classes"] < 150
    distinct = Instance([Pool("P", count=2)], [Agent(f"a{i}") for i in range(4)],
                        [Edge(f"a{i}", "P", float(i + 1)) for i in range(4)])
    assert "compression" not in lo.solve(distinct, "maxmin", fractional=True).details
    assert "compression" not in lo.solve(inst, "maxmin", fractional=True, compress="off").details


def test_classes_split_on_every_distinguishing_field():
    base = dict(weight=1.0, demand=2, work=None, arrival=0, deadline=None, elapsed=0.0)
    agents = [Agent("A", **base), Agent("B", **base), Agent("C", **{**base, "weight": 2.0}),
              Agent("D", **{**base, "demand": 1}), Agent("E", **base), Agent("F", **base)]
    edges = [Edge(a.id, "P", 1.0) for a in agents[:5]] + [Edge("F", "P", 2.0)]
    inst = Instance([Pool("P", count=3)], agents, edges, rounds=1)
    assert agent_classes(inst).label.tolist() == [0, 0, 1, 2, 0, 3]


def test_integral_expansion_deals_round_robin():
    inst = Instance([Pool("P", count=5), Pool("Q", count=5)], [Agent(a, demand=2) for a in "ABC"],
                    [Edge(a, c, 1.0) for a in "ABC" for c in "PQ"])
    cls = agent_classes(inst)
    small = cls.class_instance(inst, weight="member", integral=True)
    got = cls.expand_integral(inst, np.array([[2.0], [3.0]]), small).reshape(3, 2)
    assert got.sum(axis=0).tolist() == [2.0, 3.0]
    assert got.sum(axis=1).tolist() == [2.0, 2.0, 1.0]  # floor or ceil of 5 / 3, never above d = 2


@pytest.mark.parametrize("method", ["maxmin", "themis"])
def test_compressed_solve_of_a_generated_instance_builds_no_record(method):
    from laissez_opt.exact.maxmin import solve_maxmin
    from laissez_opt.exact.themis import solve_themis

    inst = lo.generate("gavel", 3000, 3, seed=4)
    twin = lo.generate("gavel", 3000, 3, seed=4)
    run = solve_maxmin if method == "maxmin" else solve_themis
    result = run(inst, fractional=True, compress="on")
    # Only the class representatives' records were built: the million-agent path stays on columns.
    assert "_agents_later" in inst.__dict__ and "_edges_later" in inst.__dict__
    assert result.status == "optimal" and result.details["compression"]["classes"] < 150
    rows = [0, 17, 2999]
    assert inst.agent_rows(rows) == [twin.agents[i] for i in rows]
    edge_rows = [0, 5, inst.n_edges - 1]
    assert inst.edge_rows(edge_rows) == [twin.edges[e] for e in edge_rows]
    assert lo.verify(inst, result).ok
    from laissez_opt.io.digest import columnar_copy

    copy = columnar_copy(twin)  # the deferred columns compare workers get
    assert copy.agent_rows(rows) == [twin.agents[i] for i in rows] and "_agents_later" in copy.__dict__


@pytest.mark.parametrize("method,opts", [("maxmin", {"fractional": True}), ("welfare", {"solver": "highs"}),
                                         ("welfare", {"fractional": True, "solver": "highs"}), ("drf", {"fractional": True}),
                                         ("themis", {"fractional": True})])
def test_a_budget_that_only_the_class_model_fits_is_solved_not_refused(method, opts):
    inst = lo.generate("gavel", 3000, 3, seed=1)
    plain = lo.estimate(inst, method, compress="off", **opts)
    budget = int(0.9 * plain.bytes())
    result = lo.solve(inst, method, max_memory=budget, **opts)
    assert result.status == "optimal" and result.details["compression"]["classes"] < 150
    assert result.details["compression"]["classes_cached"]  # found once, by the estimate
    assert 0.0 <= result.timing["estimate_s"] <= result.timing["total_s"]
    with pytest.raises(lo.InputError, match="over the memory budget"):
        lo.solve(inst, method, max_memory=budget, compress="off", **opts)


def test_estimate_counts_the_class_model_only_over_the_examined_size():
    from laissez_opt.limits import EXAMINE_BYTES

    inst = lo.generate("gavel", 3000, 3, seed=1)
    small = lo.estimate(inst, "maxmin", fractional=True)
    assert small.bytes() < EXAMINE_BYTES and "classes" not in small.note  # an upper bound, found for free
    spec = lo.methods.get_method("maxmin")
    full = {**spec.defaults(), "fractional": True}
    on_classes = spec.estimate(inst, full, examine_over=0)
    assert on_classes.variables < small.variables / 10 and "83 classes" in on_classes.note
    assert spec.estimate(inst, {**full, "compress": "off"}, examine_over=0).variables == small.variables
    integral = spec.estimate(inst, {**full, "fractional": False}, examine_over=0)  # integral leximin: not compressed
    assert "classes" not in integral.note


def test_classes_do_not_depend_on_the_order_of_the_edges():
    """Edges already in (agent, pool) order skip the sort; any other order is sorted first: same classes."""
    rng = np.random.default_rng(3)
    pools = [lo.Pool(f"p{c}", count=2) for c in range(4)]
    agents = [lo.Agent(f"a{i}", demand=1 + i % 2) for i in range(12)]
    edges = [lo.Edge(f"a{i}", f"p{c}", float(1 + (i % 3) * c)) for i in range(12) for c in range(4) if (i + c) % 3]
    ordered = lo.Instance(pools, agents, edges)
    shuffled = lo.Instance(pools, agents, [edges[k] for k in rng.permutation(len(edges))])
    a, b = agent_classes(ordered), agent_classes(shuffled)
    assert a.label.tolist() == b.label.tolist() and a.n_classes < 12
    assert a.size.tolist() == b.size.tolist() and a.rank.tolist() == b.rank.tolist()


@st.composite
def mostly_distinct_instances(draw):
    """Agents whose first or last edge, degree or scalars tell most apart, and some exact twins."""
    m = draw(st.integers(1, 4))
    pools = [Pool(f"P{c}", count=2) for c in range(m)]
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        utils = [draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for _ in range(m)]
        rows.append((utils, draw(st.sampled_from([1.0, 2.0])), draw(st.sampled_from([None, 1]))))
    twins = draw(st.lists(st.integers(0, len(rows) - 1), max_size=4))
    agents, edges = [], []
    for i, (utils, weight, demand) in enumerate(rows + [rows[k] for k in twins]):
        agents.append(Agent(f"a{i}", weight=weight, demand=demand))
        edges += [Edge(f"a{i}", f"P{c}", u) for c, u in enumerate(utils) if u > 0]
    return Instance(pools, agents, edges)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=st.one_of(mostly_distinct_instances(), typed_instances()))
def test_the_feature_shortcuts_agree_with_the_full_hash(inst):
    import laissez_opt.exact.classes as classes

    quick = agent_classes(inst)
    original = classes._feature_count
    classes._feature_count = lambda *args: -1  # never "every agent apart": hash every edge
    try:
        full = agent_classes(inst)
    finally:
        classes._feature_count = original
    bound = classes.classes_lower_bound(inst)
    assert bound is None or bound <= full.n_classes
    for name in ("label", "representative", "size", "rank"):
        assert getattr(quick, name).tolist() == getattr(full, name).tolist(), name


def test_heterogeneous_agents_are_told_apart_without_hashing_every_edge(monkeypatch):
    import laissez_opt.exact.classes as classes

    from laissez_opt.generate import generate_instance

    inst = generate_instance("uniform", 2000, 20, seed=0)
    monkeypatch.setattr(classes, "_mix", _counting(classes._mix, limit=inst.n_edges))
    found = agent_classes(inst)
    assert found.n_classes == inst.n_agents


def _counting(mix, limit):
    def counted(values):
        assert np.asarray(values).size < limit, "an O(E) hash was computed"
        return mix(values)
    return counted


def test_auto_decides_from_the_lower_bound_without_finding_the_classes(monkeypatch):
    import laissez_opt.exact.classes as classes

    # 10 agents: 6 with distinct utilities and 2 pairs of twins: 8 classes, far above half.
    utils = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0, 8.0, 8.0]
    inst = Instance([Pool("P", count=3)], [Agent(f"a{i}") for i in range(10)],
                    [Edge(f"a{i}", "P", u) for i, u in enumerate(utils)])
    assert classes.classes_lower_bound(inst) == 8
    monkeypatch.setattr(classes, "cached_agent_classes", lambda *a, **k: pytest.fail("classes were found"))
    assert classes.classes_if_wanted(inst, "auto") == (None, False)
    assert classes.classes_if_wanted(inst, "off") == (None, False)
    monkeypatch.undo()
    found, _ = classes.classes_if_wanted(inst, "on")
    assert found is not None and found.n_classes == 8
