"""Capped jumps of the partitioned leximin (``leximin_part`` with ``caps``).

After a level held by standalone maxima, capped LPs freeze at once every free agent
that all leximin optima hold at ``v_i^max`` (the capping lemma, models/partition.md).
The values must equal those of the plain level loop (one LP per level) agent by
agent, including ties of ``v_i^max`` and frozen agents' floors, and the search must
take fewer LPs on a long chain.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.partition import Problem, solve_arrays
from laissez_opt.partition.levels import leximin_part

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=60)


def _task(seed: int, n: int, m: int) -> dict:
    """Small arrays with coarse values (ties of ``v_i^max`` are common) and demands from 0.25 to none."""
    rng = np.random.default_rng(seed)
    agent, pool = [], []
    for i in range(n):
        for c in sorted(set(rng.integers(0, m, size=int(rng.integers(1, 4))).tolist())):
            agent.append(i)
            pool.append(c)
    agent, pool = np.array(agent), np.array(pool)
    return {"part": 0, "method": "maxmin", "edge_agent": agent, "edge_pool": pool,
            "coef": rng.choice([0.5, 1.0, 2.0], size=agent.shape[0]),
            "demands": rng.choice([0.25, 0.5, 1.0, 2.0, np.inf], size=n),
            "capacity": rng.choice([0.5, 1.0, 3.0, 10.0], size=m)}


def _assert_same(a: np.ndarray, b: np.ndarray) -> None:
    scale = max(1.0, float(np.max(np.abs(a), initial=0.0)))
    assert np.allclose(a, b, rtol=1e-6, atol=1e-6 * scale)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 30), m=st.integers(1, 5))
def test_capped_jumps_give_the_plain_leximin(seed, n, m):
    task = _task(seed, n, m)
    plain = leximin_part(dict(task, caps=False))
    capped = leximin_part(dict(task, caps=True))
    assert plain["status"] == capped["status"] == "optimal"
    _assert_same(plain["values"], capped["values"])
    assert plain["cap_lps"] == 0 and capped["cap_frozen"] <= n
    # Every agent the capped LPs froze sits at its standalone maximum in the plain leximin too.
    assert capped["lps"] == len(capped["levels"]) + capped["cap_lps"]


def test_a_long_chain_takes_fewer_lps():
    # 40 agents held by their own demands 0.01, 0.02, ... below the level of 4 unbounded agents.
    n_small = 40
    demands = np.concatenate([0.01 * np.arange(1, n_small + 1), np.full(4, np.inf)])
    n = demands.shape[0]
    task = {"part": 0, "method": "maxmin", "edge_agent": np.arange(n), "edge_pool": np.zeros(n, dtype=int),
            "coef": np.ones(n), "demands": demands, "capacity": np.array([10.0])}
    plain = leximin_part(dict(task, caps=False))
    capped = leximin_part(task)  # caps on by default
    _assert_same(plain["values"], capped["values"])
    # The small agents get their demands; the 4 others share the rest equally.
    assert capped["values"][:n_small] == pytest.approx(demands[:n_small])
    assert capped["values"][n_small:] == pytest.approx(np.full(4, (10.0 - demands[:n_small].sum()) / 4))
    assert plain["lps"] >= n_small
    assert capped["cap_frozen"] >= n_small - 1 and capped["lps"] <= 16


def test_ties_and_frozen_floors():
    # Agents 0-1 compete for pool 0 (level 0.5 each); agents 2-5 share pool 1 with tied maxima 0.3.
    task = {"part": 0, "method": "maxmin", "edge_agent": np.array([0, 1, 2, 3, 4, 5, 5]),
            "edge_pool": np.array([0, 0, 1, 1, 1, 1, 0]), "coef": np.ones(7),
            "demands": np.array([np.inf, np.inf, 0.3, 0.3, 0.3, 2.0]), "capacity": np.array([1.0, 3.0])}
    plain = leximin_part(dict(task, caps=False))
    capped = leximin_part(task)
    _assert_same(plain["values"], capped["values"])


def test_caps_option_is_checked():
    task = _task(1, 4, 2)
    with pytest.raises(InputError, match="caps"):
        leximin_part(dict(task, caps="on"))
    p = Problem(np.array([0]), np.array([0]), np.ones(1), np.array([1]), np.ones(1), np.ones(1)).for_method("maxmin")
    with pytest.raises(InputError, match="caps"):
        solve_arrays(p, "maxmin", partitions=1, caps=1)


def test_partitioned_leximin_with_caps_is_verified():
    rng = np.random.default_rng(4)
    pools = [lo.Pool(f"P{c}", count=int(rng.integers(20, 40))) for c in range(3)]
    agents = [lo.Agent(f"A{i}", demand=int(rng.integers(1, 3))) for i in range(60)]
    edges = [lo.Edge(f"A{i}", f"P{c}", float(rng.uniform(0.05, 1.0))) for i in range(60) for c in range(3)
             if rng.random() < 0.6 or c == i % 3]
    inst = lo.Instance(pools=pools, agents=agents, edges=edges, name="caps")
    r = lo.solve(inst, "maxmin", fractional=True, normalizer="raw", partitions=2)
    assert verify(inst, r).ok and r.status == "feasible"
    whole = lo.solve(inst, "maxmin", fractional=True, normalizer="raw")
    assert r.objective <= whole.objective + 1e-6 and r.bound >= whole.objective - 1e-6
