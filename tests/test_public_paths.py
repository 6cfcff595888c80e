"""The vectorised public paths of ``mtf`` and ``auction`` against the general (sorting) route they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.heuristics.mtf import _preferences_from_edges


@st.composite
def instances(draw, shuffled=None):
    n = draw(st.integers(1, 9))
    m = draw(st.integers(1, 6))
    values = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.5])
    pairs = [(i, c) for i in range(n) for c in range(m) if draw(st.booleans()) or c == i % m]
    if shuffled if shuffled is not None else draw(st.booleans()):
        pairs = draw(st.permutations(pairs))
    pools = [lo.Pool(f"p{c}", count=draw(st.integers(1, 3))) for c in range(m)]
    agents = [lo.Agent(f"a{i}") for i in range(n)]
    edges = [lo.Edge(f"a{i}", f"p{c}", draw(values)) for i, c in pairs]
    return lo.Instance(pools, agents, edges)


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_preference_lists_equal_the_lexsort_route(inst, data):
    active = np.array(data.draw(st.lists(st.booleans(), min_size=inst.n_agents, max_size=inst.n_agents)))
    u = inst.edge_utility[:, 0]
    norm = u / 7.0
    prefs = _preferences_from_edges(inst, 0, norm, active)
    agent = inst.edge_agent
    idx = np.nonzero((u > 0) & active[agent])[0]
    order = idx[np.lexsort((inst.edge_pool[idx], -u[idx], agent[idx]))]
    owner = agent[order]
    bounds = np.searchsorted(owner, np.arange(inst.n_agents + 1))
    assert list(prefs.edge) == order.tolist()
    assert list(prefs.pool) == inst.edge_pool[order].tolist()
    assert list(prefs.score) == norm[order].tolist()
    assert prefs.start == bounds[:-1].tolist() and prefs.end == bounds[1:].tolist()


def test_dense_table_route_on_a_large_dense_instance():
    """Every agent on every pool (the dense route), with ties: the lexsort order exactly."""
    rng = np.random.default_rng(4)
    n, m = 300, 40
    inst = lo.generate("uniform", n, m, seed=4, density=1.0)
    u = np.round(rng.random(inst.n_edges) * 4) / 4  # many ties, some zeros
    inst = lo.Instance(inst.pools, inst.agents, [lo.Edge(e.agent, e.pool, float(v)) for e, v in zip(inst.edges, u)])
    active = rng.random(n) < 0.8
    prefs = _preferences_from_edges(inst, 0, inst.edge_utility[:, 0], active)
    idx = np.nonzero((u > 0) & active[inst.edge_agent])[0]
    order = idx[np.lexsort((inst.edge_pool[idx], -u[idx], inst.edge_agent[idx]))]
    assert list(prefs.edge) == order.tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 12), st.integers(1, 15), st.booleans())
def test_auction_dense_form_equals_the_compressed_rows(seed, n, m, integral):
    """The kernel on the dense n x m form (every pair live) and on compressed rows: the same outcome."""
    from laissez_opt.heuristics.auction import _run

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=(n, m)).astype(float) if integral else rng.random((n, m)) * 100
    values[values == 0] = 1.0  # every pair live, as the dense route requires
    counts = rng.integers(1, 3, size=m)
    demands = rng.integers(1, 3, size=n).astype(float)
    row_ptr = np.arange(n + 1, dtype=np.int64) * m
    vals = values.reshape(-1).copy()
    cols = np.tile(np.arange(m, dtype=np.int64), n)
    dense = _run(row_ptr, None, vals, True, n, m, counts, demands, eps=None, tol=1e-9, factor=16.0)
    rows = _run(row_ptr, cols, vals, False, n, m, counts, demands, eps=None, tol=1e-9, factor=16.0)
    assert dense.pairs.tolist() == rows.pairs.tolist()
    assert dense.prices.tolist() == rows.prices.tolist()
    assert (dense.welfare, dense.dual_bound, dense.bound) == (rows.welfare, rows.dual_bound, rows.bound)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30), st.integers(1, 12), st.integers(0, 10**6))
def test_fully_dense_route_equals_the_lexsort_route(n, m, seed):
    """Every agent on every pool with positive utilities (ties included), all active: the lexsort order."""
    rng = np.random.default_rng(seed)
    u = rng.integers(1, 4, size=(n, m)).astype(float) / 2
    inst = lo.Instance([lo.Pool(f"p{c}") for c in range(m)], [lo.Agent(f"a{i}") for i in range(n)],
                       [lo.Edge(f"a{i}", f"p{c}", float(u[i, c])) for i in range(n) for c in range(m)])
    norm = inst.edge_utility[:, 0] / 3.0
    prefs = _preferences_from_edges(inst, 0, norm, np.ones(n, dtype=bool))
    flat = u.reshape(-1)
    order = np.lexsort((inst.edge_pool, -flat, inst.edge_agent))
    assert list(prefs.edge) == order.tolist()
    assert list(prefs.pool) == inst.edge_pool[order].tolist()
    assert list(prefs.score) == norm[order].tolist()
    assert prefs.owner.tolist() == inst.edge_agent[order].tolist()
    assert prefs.start == [i * m for i in range(n)] and prefs.end == [(i + 1) * m for i in range(n)]
