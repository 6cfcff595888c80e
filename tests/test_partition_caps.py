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


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 30), m=st.integers(1, 5), share=st.floats(0.0, 1.5))
def test_a_capped_first_level_gives_the_plain_leximin(seed, n, m, share):
    # Any cap_below is exact: a success freezes the chain with the common level, a miss falls back.
    task = _task(seed, n, m)
    plain = leximin_part(dict(task, caps=False))
    hint = share * float(np.max(plain["values"], initial=0.0))
    capped = leximin_part(dict(task, cap_below=hint))
    assert plain["status"] == capped["status"] == "optimal"
    _assert_same(plain["values"], capped["values"])
    assert capped["objective"] == pytest.approx(plain["objective"], rel=1e-6, abs=1e-9)
    assert not (capped["first_capped"] and capped["first_cap_failed"])


def test_capped_first_level_hit_and_miss():
    # Pool 0 (1 device): agent 0 wants 0.1, agent 3 wants 0.6, agents 1 and 2 any amount.
    # Leximin: 0.1 for agent 0, then 0.3 each for the others (agent 3's demand does not bind).
    task = {"part": 0, "method": "maxmin", "edge_agent": np.arange(4), "edge_pool": np.zeros(4, dtype=int),
            "coef": np.ones(4), "demands": np.array([0.1, np.inf, np.inf, 0.6]), "capacity": np.array([1.0])}
    expected = [0.1, 0.3, 0.3, 0.3]
    plain = leximin_part(dict(task, caps=False))
    assert plain["values"] == pytest.approx(expected) and plain["lps"] == 2 and plain["first_capped"] == 0
    hit = leximin_part(dict(task, cap_below=0.2))  # holds agent 0 at 0.1; the others then reach 0.3 >= 0.1
    assert hit["values"] == pytest.approx(expected)
    assert (hit["first_capped"], hit["first_cap_failed"], hit["lps"]) == (1, False, 1)
    assert hit["objective"] == pytest.approx(0.1) and hit["levels"] == pytest.approx([0.3])
    # Holding agent 3 at 0.6 as well leaves 0.15 each to agents 1 and 2, below 0.6: a miss, then
    # the first level (agent 0's chain at 0.1), a capped probe at agent 3's 0.6 (it fails the same
    # way) and the common level.
    miss = leximin_part(dict(task, cap_below=0.7))
    assert miss["values"] == pytest.approx(expected)
    assert (miss["first_capped"], miss["first_cap_failed"], miss["lps"], miss["cap_lps"]) == (0, True, 4, 2)
    assert miss["objective"] == pytest.approx(0.1)
    with pytest.raises(InputError, match="cap_below"):
        leximin_part(dict(task, cap_below=float("nan")))


def test_a_pilot_part_hints_the_others(monkeypatch):
    from laissez_opt.partition import run

    rng = np.random.default_rng(3)
    n, m = 400, 20
    agent = np.repeat(np.arange(n), 3)
    pool = rng.integers(0, m, size=agent.shape[0])
    keep = np.ones(agent.shape[0], dtype=bool)
    keep[1:] = (agent[1:] != agent[:-1]) | (pool[1:] != pool[:-1])
    # Demands as small as 0.02 give chains of agents held by their own maxima below the common level.
    p = Problem(agent[keep], pool[keep], rng.uniform(0.1, 1.0, keep.sum()), rng.integers(1, 8, m),
                np.ones(n), rng.choice([0.02, 0.05, 1.0, 2.0], n)).for_method("maxmin")
    monkeypatch.setattr(run, "PILOT_MIN_PARTS", 10**9)
    alone = solve_arrays(p, "maxmin", partitions=8, seed=1)
    assert alone["details"]["first_level_caps"] is None
    monkeypatch.setattr(run, "PILOT_MIN_PARTS", 2)
    hinted = solve_arrays(p, "maxmin", partitions=8, seed=1)
    caps = hinted["details"]["first_level_caps"]
    assert caps["pilot_part"] == 1 and caps["share"] == run.CAP_HINT_SHARE
    assert caps["cap_below"] == pytest.approx(caps["share"] * caps["common_level"])
    assert caps["parts_capped"] >= 1 and caps["parts_missed"] >= 1 and caps["parts_capped"] + caps["parts_missed"] <= 7
    assert {q["status"] for q in hinted["details"]["parts"]} == {"optimal"}
    _assert_same(alone["values"], hinted["values"])
    assert hinted["objective"] == pytest.approx(alone["objective"], rel=1e-9)


def test_standalone_unique_sees_every_tie_at_the_margin():
    from laissez_opt.partition.core import inner_maximum
    from laissez_opt.partition.levels import standalone_unique

    # Agent 0: demand not binding (every edge full): unique.  Agent 1: two edges of 1.0 both
    # full at the demand, the next one 0.5: unique.  Agent 2: two edges of 1.0 sharing a demand
    # of 1.5: value can move between them.  Agent 3: a tie below the margin only: unique.
    ea = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3])
    ep = np.arange(10)
    coef = np.array([1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 2.0, 1.0, 1.0])
    caps = np.ones(10)
    demands = np.array([5.0, 2.0, 1.5, 1.0])
    upper = np.minimum(demands[ea], caps[ep])
    alone = Problem(ea, ep, np.ones(10), caps, np.ones(4), demands, coef)
    _, x = inner_maximum(alone, coef, amounts=True)
    assert standalone_unique(ea, coef, upper, x, 4).tolist() == [True, True, False, True]
