"""The compiled passes of the public paths of ``auction``, ``mtf`` and ``greedy`` against the routes they replace.

Each test rebuilds the previous route (numpy gathers and sorts) in the test itself and checks that the
new one gives the same outcome bit for bit: pairs, prices, welfare, bounds, counters and allocations.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.heuristics import _auction_kernel as kernel
from laissez_opt.heuristics._fastpaths import edges_in_order, touched_utilities
from laissez_opt.heuristics.auction import _compressed_round, _run, solve_auction
from laissez_opt.heuristics.mtf import (
    _compiled_round, _denominators, _preferences_from_edges, mtf_round, preferences_from_matrix,
)
from laissez_opt.result import edge_utilities


@st.composite
def instances(draw, *, shuffled=False, integral=None):
    """Small instances with rounds, arrivals, deadlines, weights, demands, zeros and missing edges."""
    n = draw(st.integers(1, 8))
    m = draw(st.integers(1, 8))
    rounds = draw(st.integers(1, 3))
    density = draw(st.sampled_from([0.2, 0.6, 0.9, 1.0]))
    whole = draw(st.booleans()) if integral is None else integral
    value = st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0]) if whole else st.sampled_from([0.0, 0.25, 1.5, 2.75, 0.1, 3.3])
    pairs = [(i, c) for i in range(n) for c in range(m) if draw(st.floats(0, 1)) < density]
    if shuffled:
        pairs = draw(st.permutations(pairs))
    pools = [lo.Pool(f"p{c}", count=draw(st.integers(1, 3))) for c in range(m)]
    agents = []
    for i in range(n):
        arrival = draw(st.integers(0, rounds - 1))
        agents.append(lo.Agent(f"a{i}", weight=draw(st.sampled_from([1.0, 1.0, 0.5, 2.0, 3.0])),
                               demand=draw(st.one_of(st.none(), st.integers(0, 3))), arrival=arrival,
                               deadline=draw(st.one_of(st.none(), st.integers(arrival, rounds - 1)))))
    edges = [lo.Edge(f"a{i}", f"p{c}", tuple(draw(value) for _ in range(rounds))) for i, c in pairs]
    return lo.Instance(pools, agents, edges, rounds=rounds)


def _numpy_round(inst, r, present, *, eps=None, factor=16.0):
    """Round ``r`` as the previous code built it: numpy gathers, ``prepare`` and a stable sort by pool."""
    n, m = inst.n_agents, inst.n_pools
    weighted = inst.weights[inst.edge_agent][:, None] * inst.edge_utility
    live = (weighted[:, r] > 0) & present[inst.edge_agent]
    chosen = np.flatnonzero(live)
    row_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(inst.edge_agent[chosen], minlength=n), out=row_ptr[1:])
    vals = np.ascontiguousarray(weighted[chosen, r])
    dense = chosen.size == n * m
    out = _run(row_ptr, None if dense else inst.edge_pool[chosen], vals, dense, n, m, inst.counts,
               inst.effective_demands, eps=eps, tol=1e-9, factor=factor)
    keys = inst.edge_agent * m + inst.edge_pool
    return out, np.searchsorted(keys, out.pairs[:, 0] * m + out.pairs[:, 1])


def _same(a, b):
    assert a.pairs.tolist() == b.pairs.tolist()
    assert a.prices.tolist() == b.prices.tolist()
    assert (a.welfare, a.dual_bound, a.bound, a.eps_final, a.persons, a.guarantee) == \
        (b.welfare, b.dual_bound, b.bound, b.eps_final, b.persons, b.guarantee)
    assert (a.proven_optimal, a.integral_values, a.phases, a.bids, a.reverse_steps) == \
        (b.proven_optimal, b.integral_values, b.phases, b.bids, b.reverse_steps)


@settings(max_examples=250, deadline=None)
@given(instances(), st.sampled_from([None, 0.5, 0.01]), st.sampled_from([4.0, 16.0]))
def test_auction_round_equals_the_numpy_route(inst, eps, factor):
    """The compiled gathering (dense form with -inf holes, or compressed rows) against numpy gathers."""
    n = inst.n_agents
    unit = bool(np.all(inst.weights == 1.0))
    edge_start = np.searchsorted(inst.edge_agent, np.arange(n + 1))
    arrival = np.array([a.arrival for a in inst.agents])
    for r in range(inst.rounds):
        present = (arrival <= r) & (r <= inst.last_rounds)
        new, edges = _compressed_round(kernel, inst, r, present, unit, edge_start, inst.effective_demands,
                                       eps=eps, tol=1e-9, factor=factor)
        old, old_edges = _numpy_round(inst, r, present, eps=eps, factor=factor)
        _same(new, old)
        assert edges.tolist() == old_edges.tolist()


@settings(max_examples=150, deadline=None)
@given(instances(integral=True))
def test_auction_with_shuffled_edges_is_optimal_on_integers(inst):
    """Edges in any order (the sorting route): each run's welfare within the other's bound (equal when proven)."""
    rng = np.random.default_rng(inst.n_edges)
    order = rng.permutation(inst.n_edges)
    shuffled = lo.Instance(inst.pools, inst.agents, [inst.edges[k] for k in order], rounds=inst.rounds)
    a, b = solve_auction(inst), solve_auction(shuffled)
    assert a.objective <= b.bound + 1e-9 and b.objective <= a.bound + 1e-9
    if a.details["proven_optimal"] and b.details["proven_optimal"]:
        assert a.objective == pytest.approx(b.objective, abs=1e-9)
    assert lo.verify(shuffled, b).ok


def test_shuffled_edges_every_pair_live_regression():
    """Every pair live with edges out of agent order: rows once paired values with the wrong pools."""
    rng = np.random.default_rng(3)
    for _ in range(10):
        vals = rng.integers(1, 10, size=(4, 3)).astype(float)
        edges = [lo.Edge(f"p{i}", f"d{c}", float(vals[i, c])) for i in range(4) for c in range(3)]
        rng.shuffle(edges)
        inst = lo.Instance([lo.Pool(f"d{c}") for c in range(3)], [lo.Agent(f"p{i}", demand=1) for i in range(4)], edges)
        res = lo.solve(inst, "auction")
        assert res.objective == lo.solve(inst, "welfare").objective == res.bound


@settings(max_examples=200, deadline=None)
@given(instances(shuffled=True), st.data())
def test_edges_in_order_and_touched_utilities(inst, data):
    keys = inst.edge_agent * inst.n_pools + inst.edge_pool
    assert edges_in_order(inst.edge_agent, inst.edge_pool, inst.n_pools) == bool(np.all(keys[1:] > keys[:-1]))
    amounts = np.zeros((inst.n_edges, inst.rounds))
    picks = data.draw(st.lists(st.tuples(st.integers(0, max(inst.n_edges - 1, 0)), st.integers(0, inst.rounds - 1),
                                         st.integers(1, 3)), max_size=12)) if inst.n_edges else []
    for e, r, a in picks:
        amounts[e, r] += a
    touched = [np.array([e for e, _, _ in picks], dtype=np.int64)]
    assert touched_utilities(inst, amounts, touched).tolist() == edge_utilities(inst, amounts).tolist()


# --------------------------------------------------------------------------- mtf


@st.composite
def rounds(draw):
    """One MTF round's inputs: preference lists from a matrix with ties and zeros, budgets, thresholds, caps."""
    n = draw(st.integers(1, 9))
    m = draw(st.integers(1, 7))
    scores = np.array(draw(st.lists(st.sampled_from([0.0, 0.2, 0.5, 0.5, 0.9, 1.0]), min_size=n * m, max_size=n * m)))
    prefs = preferences_from_matrix(scores.reshape(n, m))
    counts = draw(st.lists(st.integers(0, 4), min_size=m, max_size=m))
    budgets = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    taus = draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.95]), min_size=n, max_size=n))
    active = sorted(draw(st.sets(st.integers(0, n - 1))))
    demand = draw(st.lists(st.sampled_from([0, 1, 2, 5, sys.maxsize]), min_size=n, max_size=n))
    weights = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    turn = draw(st.integers(0, n - 1))
    return prefs, counts, budgets, taus, active, demand, weights, turn


@settings(max_examples=400, deadline=None)
@given(rounds())
def test_compiled_round_equals_mtf_round(case):
    """The compiled token and round-robin phases against the pure-Python round: every field of the outcome."""
    prefs, counts, budgets, taus, active, demand, weights, turn = case
    expected = mtf_round(prefs, counts, budgets, taus, active=active, turn=turn, int_weights=weights, demand=demand)
    arrays = (np.asarray(prefs.pool, dtype=np.int64), np.asarray(prefs.score, dtype=np.float64),
              np.asarray(prefs.start, dtype=np.int64), np.asarray(prefs.end, dtype=np.int64),
              np.asarray(counts, dtype=np.int64), np.asarray(demand, dtype=np.int64), np.asarray(active, dtype=np.int64))
    got = _compiled_round(arrays, budgets, np.asarray(taus, dtype=np.float64), active, turn, weights)
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 25), st.integers(1, 12), st.integers(0, 10**6), st.sampled_from([1, 2, 3]),
       st.sampled_from(["agent", "round", "none"]))
def test_dense_lists_and_denominators_equal_the_lexsort_route(n, m, seed, rounds_, normalize):
    """Every agent on every pool (the dense layout), ties included: lists, scores and denominators as before."""
    rng = np.random.default_rng(seed)
    u = rng.integers(1, 5, size=(n, m, rounds_)).astype(float) / 4
    inst = lo.Instance([lo.Pool(f"p{c}") for c in range(m)], [lo.Agent(f"a{i}") for i in range(n)],
                       [lo.Edge(f"a{i}", f"p{c}", tuple(u[i, c].tolist())) for i in range(n) for c in range(m)],
                       rounds=rounds_)
    den = _denominators(inst, normalize)
    top = np.zeros((n, rounds_))
    np.maximum.at(top, inst.edge_agent, inst.edge_utility)
    top = top.max(axis=1, keepdims=True) if normalize == "agent" else top
    expected = np.ones((n, 1)) if normalize == "none" else np.where(top > 0, top * (1.0 + 1e-9), 1.0)
    assert den.tolist() == expected.tolist()
    for r in range(rounds_):
        d = den[:, min(r, den.shape[1] - 1)]
        prefs = _preferences_from_edges(inst, r, None, np.ones(n, dtype=bool), den=d)
        col = inst.edge_utility[:, r]
        order = np.lexsort((inst.edge_pool, -col, inst.edge_agent))
        assert list(prefs.edge) == order.tolist()
        assert list(prefs.pool) == inst.edge_pool[order].tolist()
        assert list(prefs.score) == (col / d[inst.edge_agent])[order].tolist()
        assert prefs.owner.tolist() == inst.edge_agent[order].tolist()


@settings(max_examples=120, deadline=None)
@given(instances(), st.sampled_from(["fixed:0", "fixed:0.5", "hedge"]), st.sampled_from(["agent", "round", "none"]))
def test_mtf_numpy_route_equals_the_compiled_route(inst, threshold, normalize):
    """Small runs before numba is loaded take numpy routes: the same result as the compiled passes."""
    import laissez_opt.heuristics.mtf as mtf

    compiled = mtf.solve_mtf(inst, threshold=threshold, normalize=normalize)
    original = mtf.use_compiled
    mtf.use_compiled = lambda instance: False
    try:
        plain = mtf.solve_mtf(inst, threshold=threshold, normalize=normalize)
    finally:
        mtf.use_compiled = original
    assert np.array_equal(compiled.amounts, plain.amounts)
    assert compiled.details == plain.details and compiled.utilities == plain.utilities


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20), st.integers(1, 10), st.integers(0, 10**6))
def test_dense_lists_numpy_and_compiled(n, m, seed):
    rng = np.random.default_rng(seed)
    u = rng.integers(1, 4, size=(n, m)).astype(float) / 2
    inst = lo.Instance([lo.Pool(f"p{c}") for c in range(m)], [lo.Agent(f"a{i}") for i in range(n)],
                       [lo.Edge(f"a{i}", f"p{c}", float(u[i, c])) for i in range(n) for c in range(m)])
    den = rng.random(n) + 0.5
    a = _preferences_from_edges(inst, 0, None, np.ones(n, dtype=bool), den=den, compiled=True)
    b = _preferences_from_edges(inst, 0, None, np.ones(n, dtype=bool), den=den, compiled=False)
    assert list(a.pool) == list(b.pool) and list(a.score) == list(b.score) and list(a.edge) == list(b.edge)
    keys = inst.edge_agent * m + inst.edge_pool
    for compiled in (True, False):
        assert edges_in_order(inst.edge_agent[::-1], inst.edge_pool[::-1], m, compiled=compiled) == (inst.n_edges < 2)
        assert edges_in_order(inst.edge_agent, inst.edge_pool, m, compiled=compiled) == bool(np.all(keys[1:] > keys[:-1]))


def _python_greedy(inst):
    """The greedy allocation as the plain loop computed it: a three-key sort, then every edge in turn."""
    amounts = np.zeros((inst.n_edges, inst.rounds))
    score = inst.weights[inst.edge_agent][:, None] * inst.edge_utility
    arrival = [a.arrival for a in inst.agents]
    for r in range(inst.rounds):
        order = np.lexsort((inst.edge_pool, inst.edge_agent, -score[:, r]))
        pool_left, agent_left = inst.counts.astype(float).tolist(), inst.effective_demands.tolist()
        for e in order.tolist():
            if score[e, r] <= 0:
                break
            i, c = int(inst.edge_agent[e]), int(inst.edge_pool[e])
            if arrival[i] <= r <= inst.last_rounds[i]:
                take = min(pool_left[c], agent_left[i])
                if take > 0:
                    amounts[e, r], pool_left[c], agent_left[i] = take, pool_left[c] - take, agent_left[i] - take
    return amounts


@settings(max_examples=300, deadline=None)
@given(st.one_of(instances(), instances(shuffled=True)), st.booleans())
def test_greedy_passes_equal_the_plain_loop(inst, compiled):
    import laissez_opt.starts as starts

    original = starts.use_compiled
    starts.use_compiled = lambda edge_rounds: compiled  # the compiled pass, or the same function in Python
    try:
        assert np.array_equal(starts.greedy_amounts(inst), _python_greedy(inst))
    finally:
        starts.use_compiled = original


def test_greedy_looks_at_the_time_limit_between_chunks(monkeypatch):
    import laissez_opt.starts as starts

    looks = []
    monkeypatch.setattr(starts, "CHUNK", 4)
    monkeypatch.setattr(starts, "check_deadline", lambda where: looks.append(where))
    inst = lo.Instance([lo.Pool("p", count=1000)], [lo.Agent(f"a{i}", demand=1) for i in range(40)],
                       [lo.Edge(f"a{i}", "p", 1.0 + i) for i in range(40)])
    assert np.array_equal(starts.greedy_amounts(inst), _python_greedy(inst))  # chunked, the same outcome
    assert len(looks) == 1 + 40 // 4  # once per round, then before every chunk
    with pytest.raises(lo.NoSolutionError, match="time limit"):
        monkeypatch.undo()
        lo.solve(lo.generate("uniform", 40, 5, seed=1), "greedy", time_limit=1e-9)
