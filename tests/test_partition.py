"""POP-style partitioned solving (``laissez_opt.partition``, ``models/partition.md``).

The merged allocation must be feasible for the whole instance (checked by the
library's verifier), its objective at most the un-partitioned optimum, and the
certified bound at least that optimum; one part reproduces the exact optimum.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.cli.main import cli
from laissez_opt.errors import InputError
from laissez_opt.limits import SizeEstimate, refuse_if_too_large
from laissez_opt.partition import Problem, lagrangian_bound, split_agents, split_capacity, solve_arrays
from laissez_opt.partition.core import equal_share_normalizer, inner_maximum
from laissez_opt.partition.run import problem_of

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=25)
TOL = 1e-6


def _instance(seed: int, n: int, m: int, fractional_weights: bool = True) -> lo.Instance:
    return lo.generate("uniform", n, m, seed=seed, density=0.6)


def _exact(inst, method):
    if method == "welfare":
        return lo.solve(inst, "welfare").objective
    return lo.solve(inst, "maxmin", fractional=True).objective


def _partitioned(inst, method, **kw):
    if method == "welfare":
        return lo.solve(inst, "welfare", **kw)
    return lo.solve(inst, "maxmin", fractional=True, **kw)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 25), m=st.integers(1, 5), k=st.integers(1, 4),
       method=st.sampled_from(["welfare", "maxmin"]))
def test_merged_allocation_is_feasible_and_brackets_the_optimum(seed, n, m, k, method):
    inst = _instance(seed, n, m)
    result = _partitioned(inst, method, partitions=k, partition_seed=seed)
    assert result.status == "feasible" and result.verified
    assert verify(inst, result).ok
    optimum = _exact(inst, method)
    scale = max(1.0, abs(optimum))
    assert result.objective <= optimum + TOL * scale
    assert result.bound >= optimum - TOL * scale
    if result.gap is not None:
        assert result.gap >= 0
        # relative_gap's rule: 0 when bound and objective agree to 1e-12 max(1, |objective|).
        diff = result.bound - result.objective
        expected = 0.0 if diff <= 1e-12 * max(1.0, abs(result.objective)) else diff / result.objective
        assert math.isclose(result.gap, expected, rel_tol=1e-9, abs_tol=1e-12)
    info = result.details["partition"]
    assert info["k"] == min(k, n) and len(info["parts"]) == info["k"] and info["seed"] == seed
    assert all(p["status"] in ("optimal", "feasible") and p["seconds"] >= 0 for p in info["parts"])
    assert "optimal" not in result.message.split("not an optimum")[0]


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 20), m=st.integers(1, 5),
       method=st.sampled_from(["welfare", "maxmin"]))
def test_one_part_reproduces_the_exact_optimum(seed, n, m, method):
    inst = _instance(seed, n, m)
    result = _partitioned(inst, method, partitions=1)
    optimum = _exact(inst, method)
    assert math.isclose(result.objective, optimum, rel_tol=1e-6, abs_tol=1e-9)
    if result.gap is not None:
        assert result.gap <= 1e-6
    assert result.status == "feasible"


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 15), m=st.integers(1, 4), scale=st.floats(0, 3),
       method=st.sampled_from(["welfare", "maxmin"]))
def test_lagrangian_bound_holds_for_any_prices(seed, n, m, scale, method):
    inst = _instance(seed, n, m)
    base = problem_of(inst)
    problem = base.for_method(method, equal_share_normalizer(base) if method == "maxmin" else None)
    rng = np.random.default_rng(seed)
    prices = scale * rng.random(problem.n_pools) * float(np.max(problem.coef, initial=1.0))
    lam = None
    if method == "maxmin":
        lam = rng.random(problem.n_agents)
        lam /= lam.sum()
    optimum = _exact(inst, method)
    assert lagrangian_bound(problem, prices, lam) >= optimum - TOL * max(1.0, optimum)


def test_inner_maximum_is_the_fractional_knapsack():
    # agent 0: profits 3 (cap 1), 2 (cap 2), -1; demand 2 -> 3 + 2 = 5; agent 1 unbounded: 4 * 3 = 12
    p = Problem(np.array([0, 0, 0, 1]), np.array([0, 1, 2, 2]), np.ones(4), np.array([1, 2, 3]),
                np.ones(2), np.array([2.0, np.inf]))
    assert inner_maximum(p, np.array([3.0, 2.0, -1.0, 4.0])).tolist() == [5.0, 12.0]


@given(counts=st.lists(st.integers(0, 50), min_size=1, max_size=8), k=st.integers(1, 9))
@settings(**SETTINGS)
def test_capacity_split_adds_up_exactly(counts, k):
    caps = split_capacity(np.array(counts), k)
    assert caps.sum(axis=0).tolist() == counts
    assert (caps.max(axis=0) - caps.min(axis=0) <= 1).all()
    assert np.allclose(split_capacity(np.array(counts), k, integral=False).sum(axis=0), counts)


def test_agent_split_is_seeded_and_balanced():
    a, b, c = split_agents(101, 4, 3), split_agents(101, 4, 3), split_agents(101, 4, 4)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    assert sorted(np.bincount(a).tolist()) == [25, 25, 25, 26]


def test_determinism_by_seed():
    inst = _instance(5, 40, 4)
    one = lo.solve(inst, "welfare", partitions=3, partition_seed=11)
    two = lo.solve(inst, "welfare", partitions=3, partition_seed=11)
    assert np.array_equal(one.amounts, two.amounts) and one.bound == two.bound


def test_inline_and_local_pool_agree():
    inst = _instance(9, 60, 4)
    inline = lo.solve(inst, "maxmin", fractional=True, partitions=3)
    local = lo.solve(inst, "maxmin", fractional=True, partitions=3, executor="local", workers=2)
    assert np.array_equal(inline.amounts, local.amounts)
    assert inline.objective == local.objective and inline.bound == local.bound
    assert local.details["partition"]["executor"] == "local"


def test_dask_executor_agrees():
    pytest.importorskip("distributed")
    inst = _instance(4, 30, 3)
    inline = lo.solve(inst, "welfare", partitions=2)
    remote = lo.solve(inst, "welfare", partitions=2, executor="dask", workers=1)
    assert np.array_equal(inline.amounts, remote.amounts)
    assert remote.details["partition"]["executor"] == "dask"


def test_array_core_on_heterogeneous_arrays():
    rng = np.random.default_rng(0)
    n, m = 3000, 20
    agent = np.repeat(np.arange(n), 3)
    pool = (agent * 7 + np.tile([0, 5, 11], n)) % m
    problem = Problem(agent, pool, rng.uniform(0.1, 1, agent.size), rng.integers(50, 100, m),
                      rng.uniform(0.5, 2, n), np.ones(n)).for_method("welfare")
    whole = solve_arrays(problem, "welfare", partitions=1, integral=True)
    split = solve_arrays(problem, "welfare", partitions=4, integral=True)
    assert split["objective"] <= whole["objective"] + 1e-6 <= split["bound"] + 2e-6
    assert split["gap"] < 0.05
    assert split["details"]["feasibility"]["max_violation"] <= 1e-6


def test_options_are_checked():
    inst = _instance(1, 10, 2)
    for bad in (0, -1, "many", 2.5, True):
        with pytest.raises(InputError, match="partitions"):
            lo.solve(inst, "welfare", partitions=bad)
    with pytest.raises(InputError, match="executor"):
        lo.solve(inst, "welfare", partitions=2, executor="cloud")
    with pytest.raises(InputError, match="only with partitions"):
        lo.solve(inst, "welfare", executor="local")
    with pytest.raises(InputError, match="fractional only"):
        lo.solve(inst, "maxmin", partitions=2)
    with pytest.raises(InputError, match="cannot be partitioned|no option"):
        lo.solve(inst, "vcg", partitions=2)
    for bad in (0, -1.0, "soon", float("nan")):
        with pytest.raises(InputError, match="time_limit"):
            lo.solve(inst, "welfare", partitions=2, time_limit=bad)
    assert lo.solve(inst, "welfare", partitions=None).status == "optimal"
    from laissez_opt.api import solve as whole

    assert whole(inst, "welfare", partitions=None).status == "optimal"

    with pytest.raises(InputError, match="lo.solve"):
        whole(inst, "welfare", partitions=2)


def test_auto_parts():
    inst = _instance(2, 50, 3)
    result = lo.solve(inst, "welfare", partitions="auto")
    assert result.details["partition"]["k"] == 1 and result.gap is not None and result.gap <= 1e-6


def test_auto_parts_of_maxmin_are_smaller():
    """maxmin's level LPs grow faster than its parts: beyond 100,000 edges auto gives it parts of about 5,000."""
    from laissez_opt.partition.run import AUTO_EDGES_PER_MAXMIN_PART, AUTO_EDGES_PER_PART, resolve_parts

    big = 2 * AUTO_EDGES_PER_PART + 1
    assert resolve_parts("auto", big, 10**6, "maxmin") == math.ceil(big / AUTO_EDGES_PER_MAXMIN_PART)
    assert resolve_parts("auto", big, 10**6, "welfare") == 3
    assert resolve_parts("auto", AUTO_EDGES_PER_PART, 10**6, "maxmin") == 1
    inst = lo.generate("uniform", 1000, 40, seed=3)  # 11,947 edges: one part, exact
    result = lo.solve(inst, "maxmin", fractional=True, partitions="auto")
    assert result.details["partition"]["k"] == 1 and result.verified


def test_size_refusal_suggests_partitions():
    est = SizeEstimate(variables=10**9, constraints=10**6, nonzeros=2 * 10**9)
    with pytest.raises(InputError, match="partitions="):
        refuse_if_too_large(est, "welfare", max_memory=2**30, partitions=True)
    with pytest.raises(InputError) as info:
        refuse_if_too_large(est, "vcg", max_memory=2**30)
    assert "partitions" not in str(info.value)


def test_cli_partitions(tmp_path):
    path = tmp_path / "inst.json"
    lo.save_instance(_instance(3, 30, 3), path)
    out = CliRunner().invoke(cli, ["solve", str(path), "--method", "welfare", "-p", "partitions=2"],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "feasible" and data["details"]["partition"]["k"] == 2 and data["bound"] >= data["objective"]
    bad = CliRunner().invoke(cli, ["solve", str(path), "--method", "welfare", "-p", "partitions=0"])
    assert bad.exit_code == 2 and "partitions" in bad.output and "Traceback" not in bad.output


def test_benchmark_script_runs(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, str(root / "benchmarks" / "scaling_partition.py"), "--sizes", "2000x100",
                          "--methods", "welfare,maxmin", "--parts", "1,3", "--executor", "inline", "--repeat", "1",
                          "--out", str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = json.loads((tmp_path / "scaling_partition.json").read_text())["rows"]
    assert [(r["method"], r["k"]) for r in rows] == [("welfare", 1), ("welfare", 3), ("maxmin", 1), ("maxmin", 3)]
    for r in rows:
        assert r["bound"] >= r["objective"] - 1e-6 * abs(r["objective"])
        assert r["true_gap"] >= -1e-6 and (r["k"] > 1 or abs(r["true_gap"]) <= 1e-6)
        assert r["parts_cpu_s"] > 0
    leximin = [r for r in rows if r["method"] == "maxmin"]
    assert all(r["levels"] == "all" and r["lps"] >= r["k"] for r in leximin)
    # One part is the whole leximin: no agent below it; three parts cannot be above it at the first level.
    assert leximin[0]["leximin"]["agents_below_1pct"] == 0.0
    assert 0.0 <= leximin[1]["leximin"]["agents_below_1pct"] <= 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scaling_partition.json", "scaling_partition.md"]


def test_public_path_benchmark_runs(tmp_path):
    # The benchmark behind the docs' public-path figures: the same objective by the
    # array core, lo.solve on the .npz file it writes, and the laissez-opt command.
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, str(root / "benchmarks" / "partition_public_path.py"), "--quick",
                          "--size", "3000x40", "--jobs", "welfare,maxmin_first,maxmin_first_sqrt", "--out",
                          str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = json.loads((tmp_path / "partition_public_path.json").read_text())["rows"]
    assert [r["job"] for r in rows] == ["welfare", "maxmin_first", "maxmin_first_sqrt"]
    for r in rows:
        assert r["same_objective"] and r["solve"]["gap"] is not None and r["solve"]["gap"] >= 0
        assert r["edges"] > 3000 and r["cli"]["result_mb"] > 0
