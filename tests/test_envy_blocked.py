"""The blocked envy route (``envy_report`` above ``ENVY_BLOCKED_FROM`` agents) against the sparse product and
the dense matrix: the same figures to 1e-9, ties broken toward the lowest agent index, and the size limit."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.analysis import fairness
from laissez_opt.analysis.fairness import _bundle_matrix, envy_free_from_matrix, envy_matrix, envy_report


def reference(instance, amounts, tol=fairness.ENVY_TOLERANCE):
    """The sparse-product route as it stood before the blocked one: (own, best, envious pairs), by rows."""
    n = instance.n_agents
    bundle, utility = _bundle_matrix(instance, amounts)
    product = (utility @ bundle.T).tocsr()
    own = np.asarray(product.diagonal(), dtype=np.float64)
    w = instance.weights
    product = product.tocoo()
    off = product.row != product.col
    rows, cols = product.row[off], product.col[off]
    vals = product.data[off] * w[rows] / w[cols]
    best = np.zeros(n)
    if vals.size:
        np.maximum.at(best, rows, vals)
    thresholds = tol * np.maximum(1.0, np.abs(own))
    return own, best, int(np.sum(vals - own[rows] > thresholds[rows]))


@st.composite
def allocations(draw):
    n = draw(st.integers(2, 14))
    m = draw(st.integers(1, 4))
    rounds = draw(st.integers(1, 2))
    values = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.25, 7.0])
    weights = draw(st.lists(st.sampled_from([1.0, 2.0, 0.5, 3.0]), min_size=n, max_size=n))
    pools = [lo.Pool(f"p{c}", count=3) for c in range(m)]
    agents = [lo.Agent(f"a{i}", weight=weights[i]) for i in range(n)]
    edges, amounts = [], []
    for i in range(n):
        chosen = draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=m, unique=True))
        for c in sorted(chosen):
            u = tuple(draw(values) for _ in range(rounds))
            edges.append(lo.Edge(f"a{i}", f"p{c}", u if rounds > 1 else u[0]))
            amounts.append([draw(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.25])) for _ in range(rounds)])
    inst = lo.Instance(pools, agents, edges, rounds=rounds)
    return inst, np.array(amounts)


def blocked(inst, amounts, block_entries=7):
    with mock.patch.object(fairness, "ENVY_BLOCKED_FROM", 0), \
            mock.patch.object(fairness, "ENVY_BLOCK_ENTRIES", block_entries):
        return envy_report(inst, amounts, keep_matrix=False)


@settings(max_examples=200, deadline=None)
@given(allocations(), st.sampled_from([1, 5, 7, 1 << 20]))
def test_blocked_route_equals_the_sparse_product_and_the_dense_matrix(case, block_entries):
    inst, amounts = case
    fast = blocked(inst, amounts, block_entries)
    sparse = envy_report(inst, amounts, keep_matrix=False)
    own, best, pairs = reference(inst, amounts)
    dense = envy_free_from_matrix(envy_matrix(inst, amounts), inst.weights)
    for report in (fast, sparse):
        np.testing.assert_allclose(report.own, own, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(report.worst_by_agent, best - own, rtol=1e-9, atol=1e-12)
        assert report.envious_pairs == pairs == dense.envious_pairs
        assert report.envy_free == dense.envy_free
        assert report.largest_envy == pytest.approx(dense.largest_envy, rel=1e-9, abs=1e-12)
        # Ties go to the lowest agent index, as the dense matrix's argmax does.
        assert report.target_by_agent.tolist() == dense.target_by_agent.tolist()
        assert report.pair == dense.pair
    assert fast.to_dict() == sparse.to_dict()


def test_blocked_route_groups_identical_bundles():
    """Many agents holding one device each of the same pool: one column for all of them, same figures."""
    n = 600
    inst = lo.generate("gavel", n, 3, seed=2)
    res = lo.solve(inst, "welfare")
    report = envy_report(inst, res.amounts, keep_matrix=False)
    assert n > fairness.ENVY_BLOCKED_FROM
    with mock.patch.object(fairness, "ENVY_BLOCKED_FROM", 10**9):
        sparse = envy_report(inst, res.amounts, keep_matrix=False)
    assert report.to_dict() == sparse.to_dict()
    groups = fairness._bundle_groups(_bundle_matrix(inst, res.amounts)[0], inst.weights)
    assert groups[3].size < 100


def test_envy_is_skipped_above_the_limit_with_the_reason():
    inst = lo.generate("uniform", 400, 3, seed=0)
    res = lo.solve(inst, "welfare")
    report = envy_report(inst, res.amounts, max_pairs=100)
    assert report.skipped and "above the limit of 100" in report.skipped
    assert report.to_dict()["envy_free"] is None and "skipped" in report.to_dict()
    assert envy_report(inst, res.amounts, max_pairs=None).skipped is None
