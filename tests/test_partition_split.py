"""How partitioned solving shares each pool among the parts (``capacity_split``, ``models/partition.md``).

``equal`` gives every part ``k_c / K`` (POP); ``sqrt`` gives part ``q`` a share in
proportion to ``sqrt(n_c^q)``, its edges at pool ``c``.  Either way the shares add
up to ``k_c``, the merged allocation is feasible and the bound holds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.cli.main import cli
from laissez_opt.errors import InputError
from laissez_opt.partition import levels as part_levels
from laissez_opt.partition import split_capacity, solve_arrays
from laissez_opt.partition.core import Problem, equal_share_normalizer, pool_presence, split_agents

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=25)


@settings(**SETTINGS)
@given(counts=st.lists(st.integers(0, 50), min_size=1, max_size=6), k=st.integers(1, 6), data=st.data())
def test_sqrt_split_adds_up_and_follows_the_parts_edges(counts, k, data):
    presence = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=len(counts), max_size=len(counts)),
                                           min_size=k, max_size=k)))
    caps = split_capacity(np.array(counts), k, integral=False, rule="sqrt", presence=presence)
    assert caps.shape == (k, len(counts)) and (caps >= 0).all()
    assert np.allclose(caps.sum(axis=0), counts)
    reached = presence.sum(axis=0) > 0
    # A part without an edge at a reached pool gets none of it; nobody reaches a pool: equal shares.
    assert (caps[:, reached][presence[:, reached] == 0] == 0).all()
    assert np.allclose(caps[:, ~reached], np.array(counts, dtype=float)[~reached] / k)
    for c in np.flatnonzero(reached):
        order = np.argsort(presence[:, c], kind="stable")
        assert (np.diff(caps[order, c]) >= -1e-12).all()  # more edges at the pool, no smaller share


def test_pool_presence_counts_each_parts_edges():
    p = Problem(np.array([0, 0, 1, 2, 2]), np.array([0, 1, 1, 1, 0]), np.ones(5), np.array([3, 3]), np.ones(3),
                np.ones(3))
    part_of = np.array([0, 1, 1])
    assert pool_presence(p, part_of, 2).tolist() == [[1, 1], [1, 2]]


def _arrays(seed: int, n: int, m: int) -> Problem:
    rng = np.random.default_rng(seed)
    agent = np.repeat(np.arange(n), 3)
    pool = rng.integers(0, m, size=agent.shape[0])
    keep = np.ones(agent.shape[0], dtype=bool)
    keep[1:] = (agent[1:] != agent[:-1]) | (pool[1:] != pool[:-1])
    return Problem(agent[keep], pool[keep], rng.uniform(0.1, 1.0, int(keep.sum())), rng.integers(1, 6, size=m),
                   rng.uniform(0.5, 2.0, n), rng.integers(1, 3, size=n).astype(float))


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 40), m=st.integers(1, 6), k=st.integers(1, 5),
       method=st.sampled_from(["welfare", "maxmin"]))
def test_sqrt_split_merges_feasibly_and_its_bound_holds(seed, n, m, k, method):
    inst = lo.generate("uniform", n, m, seed=seed, density=0.6)
    whole = lo.solve(inst, method, fractional=True)
    split = lo.solve(inst, method, partitions=k, partition_seed=seed, capacity_split="sqrt", fractional=True)
    scale = max(1.0, abs(whole.objective))
    assert split.status == "feasible" and split.verified
    assert split.objective <= whole.objective + 1e-6 * scale
    assert split.bound >= whole.objective - 1e-6 * scale
    info = split.details["partition"]
    assert info["capacity_split"] == "sqrt" and "sqrt" in info["capacity_rule"]
    assert split.params["capacity_split"] == "sqrt"


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 20), m=st.integers(1, 5))
def test_one_part_under_the_sqrt_split_is_the_whole_leximin(seed, n, m):
    inst = lo.generate("uniform", n, m, seed=seed, density=0.6)
    whole = lo.solve(inst, "maxmin", fractional=True)
    one = lo.solve(inst, "maxmin", fractional=True, partitions=1, capacity_split="sqrt")
    assert one.objective == pytest.approx(whole.objective, rel=1e-6, abs=1e-9)


def test_sqrt_split_gives_no_share_to_a_part_without_edges_at_the_pool():
    # Pool 1 is reached only by part 0's agents: the equal split strands half of it in part 1.
    p = Problem(np.array([0, 0, 1]), np.array([0, 1, 0]), np.ones(3), np.array([2, 2]), np.ones(2),
                np.full(2, np.inf)).for_method("welfare")
    assert split_agents(2, 2, 0).tolist() in ([0, 1], [1, 0])  # one agent per part
    out = solve_arrays(p, "welfare", partitions=2, seed=0, capacity_split="sqrt")
    equal = solve_arrays(p, "welfare", partitions=2, seed=0, capacity_split="equal")
    assert out["details"]["capacity_split"] == "sqrt" and equal["details"]["capacity_split"] == "equal"
    assert out["objective"] == pytest.approx(4.0) and equal["objective"] == pytest.approx(3.0)


def test_capacity_split_is_checked_everywhere(tmp_path):
    inst = lo.generate("uniform", 12, 2, seed=1)
    with pytest.raises(InputError, match="capacity_split"):
        lo.solve(inst, "maxmin", fractional=True, partitions=2, capacity_split="cube")
    with pytest.raises(InputError, match="capacity_split"):
        lo.solve(inst, "maxmin", fractional=True, partitions=2, capacity_split=3)
    with pytest.raises(InputError, match="whole devices"):
        lo.solve(inst, "welfare", partitions=2, capacity_split="sqrt")
    with pytest.raises(InputError, match="only with partitions"):
        lo.solve(inst, "welfare", capacity_split="sqrt")
    assert lo.solve(inst, "welfare", partitions=2, capacity_split="equal").details["partition"][
        "capacity_split"] == "whole"
    problem = Problem(np.array([0]), np.array([0]), np.ones(1), np.array([1]), np.ones(1), np.ones(1)).for_method(
        "welfare")
    with pytest.raises(InputError, match="capacity_split"):
        solve_arrays(problem, "welfare", partitions=1, capacity_split="halves")
    path = tmp_path / "inst.json"
    lo.save_instance(inst, path)
    bad = CliRunner().invoke(cli, ["solve", str(path), "--method", "maxmin", "-p", "fractional=true",
                                   "-p", "partitions=2", "-p", "capacity_split=cube"])
    assert bad.exit_code == 2 and "capacity_split" in bad.output and "Traceback" not in bad.output
    good = CliRunner().invoke(cli, ["solve", str(path), "--method", "maxmin", "-p", "fractional=true",
                                    "-p", "partitions=2", "-p", "capacity_split=sqrt"], catch_exceptions=False)
    assert good.exit_code == 0, good.output
    assert json.loads(good.stdout)["details"]["partition"]["capacity_split"] == "sqrt"


def test_every_level_first_lp_routes_agree(monkeypatch):
    # Every level: the first LP by dual simplex (parts of at most SIMPLEX_EVERY_LEVEL_MAX_EDGES
    # edges) or by interior point with crossover; both vertices lead to the same leximin.
    problem = _arrays(11, 600, 40)
    ready = problem.for_method("maxmin", equal_share_normalizer(problem))
    runs = {}
    for edges in (0, 10**9):
        monkeypatch.setattr(part_levels, "SIMPLEX_EVERY_LEVEL_MAX_EDGES", edges)
        runs[edges] = solve_arrays(ready, "maxmin", partitions=3, seed=4, levels="all")
    ipm, dual = runs[0], runs[10**9]
    assert dual["objective"] == pytest.approx(ipm["objective"], rel=1e-7)
    assert np.allclose(dual["values"], ipm["values"], rtol=1e-6, atol=1e-9)
    for out in (ipm, dual):
        assert out["details"]["feasibility"]["max_violation"] <= 1e-6
        assert all(p["status"] == "optimal" for p in out["details"]["parts"])


@pytest.mark.parametrize("simplex_edges", [0, 10**9])
def test_first_level_routes_agree(monkeypatch, simplex_edges):
    # levels="first": dual simplex with presolve on parts of at most SIMPLEX_FIRST_MAX_EDGES edges,
    # else the interior point without crossover; both give the every-level run's max-min value.
    problem = _arrays(7, 400, 30)
    ready = problem.for_method("maxmin", equal_share_normalizer(problem))
    every = solve_arrays(ready, "maxmin", partitions=3, seed=2, levels="all")
    monkeypatch.setattr(part_levels, "SIMPLEX_FIRST_MAX_EDGES", simplex_edges)
    first = solve_arrays(ready, "maxmin", partitions=3, seed=2, levels="first")
    assert first["objective"] == pytest.approx(every["objective"], rel=1e-6)
    assert first["bound"] >= first["objective"] - 1e-9
    assert first["details"]["feasibility"]["max_violation"] <= 1e-6
