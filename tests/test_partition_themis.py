"""Partitioned fractional Themis (``lo.solve(inst, "themis", fractional=True, partitions=K)``).

The merged allocation must be feasible and pass the library's verifier; its
``max rho`` is at least the whole optimum (it is a feasible allocation of a
minimisation), and the certified bound at most the whole optimum; one part is the
whole problem (gap about 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.partition.core import Problem, check_feasible
from laissez_opt.partition.run import problem_of
from laissez_opt.partition.themis import root_of, themis_arrays, themis_bound, themis_part

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=25)


def _instance(seed: int, n: int, m: int, top: int = 3, lagged: bool = True) -> lo.Instance:
    """Scarce pools (1 to ``top`` devices) shared by many agents, so competition sets ``rho*``."""
    rng = np.random.default_rng(seed)
    pools = [lo.Pool(f"P{c}", count=int(rng.integers(1, top + 1))) for c in range(m)]
    agents = [lo.Agent(f"A{i}", weight=float(rng.uniform(0.5, 2.0)), demand=int(rng.integers(1, 3)),
                       work=float(rng.uniform(1, 5)), elapsed=float(rng.uniform(0, 3)) if lagged else 0.0)
              for i in range(n)]
    edges = [lo.Edge(f"A{i}", f"P{c}", float(rng.uniform(0.1, 1.0)))
             for i in range(n) for c in sorted(set(rng.integers(0, m, size=3).tolist()))]
    return lo.Instance(pools=pools, agents=agents, edges=edges, name=f"themis-{seed}")


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(3, 40), m=st.integers(1, 6), k=st.integers(1, 4),
       lagged=st.booleans())
def test_merged_allocation_is_feasible_and_the_bound_holds(seed, n, m, k, lagged):
    inst = _instance(seed, n, m, lagged=lagged)
    whole = lo.solve(inst, "themis", fractional=True)
    split = lo.solve(inst, "themis", fractional=True, partitions=k, partition_seed=seed)
    assert split.status == "feasible" and split.verified and verify(inst, split).ok
    tol = 1e-6 * max(1.0, whole.objective)
    assert split.objective >= whole.objective - tol          # a feasible allocation: at least the optimum
    assert split.bound <= whole.objective + tol               # the certified lower bound holds
    assert split.gap is not None and split.gap >= 0
    assert split.gap == pytest.approx((split.objective - split.bound) / split.objective, abs=1e-9)
    if split.details["partition"]["k"] == 1:
        assert split.gap < 1e-5                               # one part is the whole problem
        assert split.objective == pytest.approx(whole.objective, rel=1e-5)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(3, 30), m=st.integers(1, 5), scale=st.floats(0.0, 3.0))
def test_lagrangian_bound_holds_for_any_duals(seed, n, m, scale):
    inst = _instance(seed, n, m)
    whole = lo.solve(inst, "themis", fractional=True)
    base = problem_of(inst)
    work = np.array([a.work for a in inst.agents])
    elapsed = np.array([a.elapsed for a in inst.agents])
    coef, lag, active = themis_arrays(base, work, elapsed)
    p = Problem(base.edge_agent, base.edge_pool, base.utility, base.counts, base.weights, base.demands, coef)
    rng = np.random.default_rng(seed)
    lam = rng.random(n) * active
    prices = scale * rng.random(m)
    if lam.sum() > 0:
        assert themis_bound(p, lag, active, lam, prices) <= whole.objective * (1 + 1e-9) + 1e-12


@settings(**SETTINGS)
@given(lam=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=6), lag=st.lists(st.floats(0.0, 5.0), min_size=6,
       max_size=6), constant=st.floats(1e-3, 1e3))
def test_root_is_certified(lam, lag, constant):
    lam = np.array(lam) / np.sum(lam)
    lag = np.array(lag[:lam.size])
    rho = root_of(lam, lag, constant)
    assert rho >= lag.max()
    if rho > lag.max():
        assert np.sum(lam / (rho - lag)) >= constant           # every rho below it is infeasible
    # and it is tight: a little above, the inequality fails
    above = lag.max() + (rho - lag.max()) * (1 + 1e-6) + 1e-12
    assert np.sum(lam / (above - lag)) <= constant * (1 + 1e-9)


def test_themis_part_on_arrays():
    # Two agents with lags 1 and 0 share one device: 1 + 1/r0 = 1/r1 with r0 + r1 = 1.
    task = {"part": 0, "method": "themis", "edge_agent": np.array([0, 1]), "edge_pool": np.array([0, 0]),
            "coef": np.array([1.0, 1.0]), "demands": np.array([1.0, 1.0]), "capacity": np.array([1.0]),
            "lag": np.array([1.0, 0.0]), "active": np.array([True, True])}
    out = themis_part(task)
    r0 = (math.sqrt(5) - 1) / 2          # r0^2 + r0 - 1 = 0 from 1 + 1/r0 = 1/(1 - r0)
    assert out["objective"] == pytest.approx(1 + 1 / r0, rel=1e-6)
    assert out["lower"] <= out["objective"] <= out["lower"] * (1 + 1e-6)
    assert out["values"] == pytest.approx([r0, 1 - r0], rel=1e-5)
    assert out["lam"].sum() == pytest.approx(1.0)


def test_heterogeneous_arrays_partitioned():
    from laissez_opt.partition.run import solve_arrays

    rng = np.random.default_rng(4)
    n, m = 3000, 40
    agent = np.repeat(np.arange(n), 3)
    pool = rng.integers(0, m, size=agent.shape[0])
    base = Problem(agent, pool, rng.uniform(0.1, 1.0, agent.shape[0]), rng.integers(1, 30, m), rng.uniform(0.5, 2, n),
                   rng.integers(1, 3, n).astype(float))
    work = rng.uniform(1, 4, n)
    coef, lag, active = themis_arrays(base, work, np.zeros(n))
    ideal = base.utility / np.where(coef > 0, coef, np.inf)
    elapsed = rng.uniform(0, 1, n) * work / np.bincount(agent, weights=ideal, minlength=n) * 3
    coef, lag, active = themis_arrays(base, work, elapsed)
    p = Problem(base.edge_agent, base.edge_pool, base.utility, base.counts, base.weights, base.demands, coef)
    out = solve_arrays(p, "themis", partitions=4, seed=1, lag=lag, active=active)
    assert check_feasible(p, out["amounts"]) <= 1e-9
    assert out["bound"] <= out["objective"] and out["gap"] is not None
    assert len(out["details"]["part_lower"]) == 4


def test_options_are_checked():
    inst = _instance(1, 10, 3)
    with pytest.raises(InputError, match="fractional"):
        lo.solve(inst, "themis", partitions=2)
    with pytest.raises(InputError, match="fairness_knob"):
        lo.solve(inst, "themis", fractional=True, partitions=2, fairness_knob=0.5)
    with pytest.raises(InputError, match="tolerance"):
        lo.solve(inst, "themis", fractional=True, partitions=2, tolerance=1e-3)
    with pytest.raises(InputError, match="executor"):
        lo.solve(inst, "themis", fractional=True, partitions=2, executor="cloud")
    with pytest.raises(InputError, match="partitions"):
        lo.solve(inst, "themis", fractional=True, partitions=0)
    from laissez_opt.exact.themis import solve_themis

    with pytest.raises(InputError, match="lo.solve"):
        solve_themis(inst, fractional=True, partitions=2)
    # fairness_knob 0 given explicitly is accepted
    r = lo.solve(inst, "themis", fractional=True, partitions=2, fairness_knob=0.0)
    assert r.status == "feasible"
