"""Later leximin levels on the optimal face (``leximin_part`` with ``face``, ``optimal_face``).

After a contested level, every later level's feasible point is an optimum of the
level LP, so the columns with nonzero reduced costs keep their values and only the
components of agents and pools that still hold free agents are solved again.  The
values must equal those of the whole model, level after level, on small random
parts (the size threshold set to 0 so the face is cut even there) and on a slice of
the heterogeneous benchmark instance, where it must also cut the model to a small
fraction of its columns.
"""

from __future__ import annotations

import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laissez_opt.errors import InputError
from laissez_opt.partition import Problem, levels, solve_arrays
from laissez_opt.partition.core import equal_share_normalizer, part_tasks
from laissez_opt.partition.levels import leximin_part, optimal_face

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=80)


def _task(seed: int, n: int, m: int) -> dict:
    """Small arrays: 1 to 4 pools an agent, coarse values, demands from 0.25 to none, scarce capacity."""
    rng = np.random.default_rng(seed)
    agent, pool = [], []
    for i in range(n):
        for c in sorted(set(rng.integers(0, m, size=int(rng.integers(1, 5))).tolist())):
            agent.append(i)
            pool.append(c)
    agent, pool = np.array(agent), np.array(pool)
    return {"part": 0, "method": "maxmin", "edge_agent": agent, "edge_pool": pool,
            "coef": rng.choice([0.5, 1.0, 1.5, 2.0, 3.0], size=agent.shape[0]),
            "demands": rng.choice([0.25, 0.5, 1.0, 2.0, np.inf], size=n),
            "capacity": rng.choice([0.5, 1.0, 2.0, 5.0], size=m)}


def _assert_same(a: np.ndarray, b: np.ndarray) -> None:
    scale = max(1.0, float(np.max(np.abs(a), initial=0.0)))
    assert np.allclose(a, b, rtol=1e-6, atol=1e-6 * scale)


def _feasible(task: dict, x: np.ndarray) -> None:
    used = np.bincount(task["edge_pool"], weights=x, minlength=task["capacity"].shape[0])
    taken = np.bincount(task["edge_agent"], weights=x, minlength=task["demands"].shape[0])
    assert (x >= 0).all() and (used <= task["capacity"] + 1e-9).all() and (taken <= task["demands"] + 1e-9).all()


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 40), m=st.integers(1, 8), caps=st.booleans(),
       warm=st.booleans())
def test_levels_on_the_face_equal_the_whole_model(seed, n, m, caps, warm):
    task = _task(seed, n, m)
    whole = leximin_part(dict(task, face=False, caps=caps))
    with mock.patch.object(levels, "FACE_MIN_COLUMNS", 0):
        cut = leximin_part(dict(task, face=True, caps=caps, warm_face=warm))
    assert whole["status"] == cut["status"] == "optimal"
    _assert_same(whole["values"], cut["values"])
    _feasible(task, cut["x"])
    assert whole["face_rebuilds"] == 0
    # Every rebuilt model starts from the last vertex when asked to (HiGHS took each basis here).
    assert cut["warm_rebuilds"] == (cut["face_rebuilds"] if warm else 0)


def test_a_raised_level_bound_that_binds_is_released_and_the_level_solved_again():
    """The warm start holds a component's t_g at its last level by a bound; were that bound to carry
    the level's dual (the component did not rise), the level runs again without it.  Forced here on
    every warm model: the values stay the whole model's."""
    calls = []

    def always(sol, raised):
        calls.append(raised.size)
        return True

    reruns = 0
    with mock.patch.object(levels, "FACE_MIN_COLUMNS", 0), mock.patch.object(levels, "_bound_carries_dual", always):
        for seed in range(12):
            task = _task(seed, 30, 5)
            whole = leximin_part(dict(task, face=False))
            cut = leximin_part(task)
            assert cut["status"] == "optimal"
            _assert_same(whole["values"], cut["values"])
            _feasible(task, cut["x"])
            reruns += cut["released_reruns"]
    # Only models with a raised bound are checked, and each check forced a second run.
    assert calls and min(calls) > 0 and reruns == len(calls)


def test_optimal_face_fixes_by_sign_and_drops_components_without_free_agents():
    # Agents 0 and 1 share pool 0; agent 2 alone on pool 1 is frozen; agent 1's edge to pool 2
    # sits at 0 with a negative reduced cost.
    ea, ep = np.array([0, 1, 1, 2]), np.array([0, 0, 2, 1])
    x, upper = np.array([0.5, 0.5, 0.0, 1.0]), np.ones(4)
    reduced = np.array([0.0, 0.0, -1e-3, 0.0])
    free = np.array([True, False, False])
    keep, stranded = optimal_face(ea, ep, x, upper, reduced, free, 3)
    assert keep.tolist() == [True, True, False, False] and not stranded.any()
    # A positive reduced cost at 0 is the wrong sign for a fixing (within HiGHS's tolerance): kept.
    keep, _ = optimal_face(ea, ep, x, upper, np.array([0.0, 0.0, 1e-3, 0.0]), free, 3)
    assert keep[2]
    # A free agent whose every column is fixed cannot move: it is returned to be frozen.
    keep, stranded = optimal_face(ea, ep, np.array([1.0, 0.0, 0.0, 1.0]), upper,
                                  np.array([2e-3, -1e-3, 0.0, 0.0]), np.array([True, True, False]), 3)
    assert stranded.tolist() == [True, False, False] and keep.tolist() == [False, False, True, False]


def test_the_face_cuts_a_benchmark_part_to_a_few_columns():
    """A part of the heterogeneous 2 x 10^4 x 10^3 instance split in 32 (pools of about a third of a
    device, as 10^6 x 10^3 in 1,600 parts): after the common level the
    later levels run on a few percent of the columns, with the whole model's values."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from scaling_partition import make_problem

    problem = make_problem(20_000, 1000)
    ready = problem.for_method("maxmin", equal_share_normalizer(problem))
    tasks, _ = part_tasks(ready, 32, 0, "maxmin", integral=False)
    task = tasks[0]
    whole = leximin_part(dict(task, face=False))
    cut = leximin_part(task)
    assert cut["face_rebuilds"] >= 1 and cut["warm_rebuilds"] == cut["face_rebuilds"]
    assert np.array_equal(np.array(whole["frozen_per_level"][:1]), np.array(cut["frozen_per_level"][:1]))
    # The floors are the levels themselves (once a hair below them: at a hair of 1e-9 of
    # max(1, v) the two paths differed by up to 1.2e-4 of a value on these parts), so both paths
    # give the same leximin.
    assert np.abs(whole["values"] - cut["values"]).max() <= 1e-7 * float(whole["values"].max())
    assert np.sort(cut["values"])[0] == pytest.approx(np.sort(whole["values"])[0], rel=1e-9)
    assert cut["cpu_s"] < whole["cpu_s"]
    # The components left after the common level run side by side, one t_g each: a few LPs
    # instead of one per later level (measured: 7 against 37).
    assert cut["lps"] * 3 <= whole["lps"]
    for other in tasks[1:4]:
        plain = leximin_part(dict(other, face=False, caps=False))["values"]
        assert np.abs(plain - leximin_part(other)["values"]).max() <= 1e-7 * float(plain.max())


def test_one_t_per_component_gives_each_component_its_own_level():
    # Component 0: agents 0 and 1 share one device (level 0.5); component 1: agent 2 alone
    # on 3 devices with demand 2 (level 2).  One t holds both at 0.5; a t_g each does not.
    import highspy

    from laissez_opt.partition.core import max_t_model

    ea, ep = np.array([0, 1, 2]), np.array([0, 0, 1])
    capacity, demands = np.array([1.0, 3.0]), np.array([np.inf, np.inf, 2.0])
    upper = np.minimum(demands[ea], capacity[ep])
    for group, expected in ((None, [0.5]), (np.array([0, 0, 1]), [0.5, 2.0])):
        h, _, _ = max_t_model(ea, ep, np.ones(3), capacity, demands, upper, np.arange(3), t_lower=0.0, group=group)
        h.run()
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        assert np.asarray(h.getSolution().col_value)[3:] == pytest.approx(expected)


def test_face_option_is_checked():
    task = _task(1, 4, 2)
    with pytest.raises(InputError, match="face"):
        leximin_part(dict(task, face="yes"))
    with pytest.raises(InputError, match="warm_face"):
        leximin_part(dict(task, warm_face=1))
    p = Problem(np.array([0]), np.array([0]), np.ones(1), np.array([1]), np.ones(1), np.ones(1)).for_method("maxmin")
    with pytest.raises(InputError, match="face"):
        solve_arrays(p, "maxmin", partitions=1, face=1)
