"""The forward auction: within its stated bound of the welfare optimum, optimal on integer values.

The checks of eps-complementary slackness, prices and the dual bound are written
here from the definitions (plain Python over the instance's records), not with the
auction's own arrays.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import defaultdict
from importlib import metadata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.heuristics import _auction_kernel as kernel
from laissez_opt.heuristics.auction import auction_matrix, eps_schedule
from laissez_opt.instance import Agent, Edge, Instance, Pool

from conftest import ROOT, arbitrary_floats, decimal_weights, short_decimals, small_instances

TOL = 1e-9


def alloc(result):
    return sorted((r["agent"], r["pool"], r["round"], r["amount"]) for r in result.allocation)


# ----------------------------------------------------------------------------- packaging


def test_numba_is_installed_at_the_pinned_version():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [re.fullmatch(r"numba==(\S+)", spec) for spec in data["project"]["dependencies"]]
    pinned = [m.group(1) for m in pins if m]
    assert len(pinned) == 1, "numba must be pinned exactly once in the dependencies"
    assert metadata.version("numba") == pinned[0]
    assert kernel.HAVE_NUMBA


def test_compiled_functions_are_cached_on_disk():
    # cache=True: the dispatcher has a file cache, not numba's NullCache.
    for fn in (kernel.forward_reverse_auction, kernel.prepare):
        assert type(fn._cache).__name__ != "NullCache"


# ----------------------------------------------------------------------------- independent checks


def _round_data(inst, rnd):
    """Active agents' weighted values ``a[i][c] = w_i u_icr`` and capped demands ``d'_i`` for one round."""
    agents = {a.id: a for a in inst.agents}
    counts = {p.id: p.count for p in inst.pools}
    values = defaultdict(dict)
    for e in inst.edges:
        agent = agents[e.agent]
        last = inst.rounds - 1 if agent.deadline is None else agent.deadline
        if agent.arrival <= rnd <= last:
            values[e.agent][e.pool] = agent.weight * e.utility_in(rnd)
    units = {}
    for agent_id, row in values.items():
        reach = sum(counts[c] for c, a in row.items() if a > 0)
        demand = agents[agent_id].demand
        units[agent_id] = reach if demand is None else min(demand, reach)
    return values, units, counts


def check_certificate(inst, result):
    """Prices >= 0, free devices priced 0, eps-CS, and the dual bound, from the records."""
    eps_list, prices = result.details["eps_final"], result.details["prices"]
    assert len(prices) == inst.rounds == len(eps_list)
    dual_total = 0.0
    for rnd in range(inst.rounds):
        values, units, counts = _round_data(inst, rnd)
        p, eps = prices[rnd], eps_list[rnd]
        assert set(p) == set(counts)
        held = defaultdict(float)
        used = defaultdict(float)
        for rec in result.allocation:
            if rec["round"] == rnd:
                held[(rec["agent"], rec["pool"])] += rec["amount"]
                used[rec["pool"]] += rec["amount"]
        for pool_id, price in p.items():
            assert price >= 0.0
            if used[pool_id] < counts[pool_id]:
                assert price == 0.0, f"pool {pool_id} has a free device but price {price}"
        dual = sum(counts[c] * p[c] for c in counts)
        for agent_id, row in values.items():
            best = max([0.0] + [a - p[c] for c, a in row.items()])
            slack = eps + 1e-9 * max(1.0, best, max(row.values(), default=0.0))
            taken = 0.0
            for (a_id, pool_id), amount in held.items():
                if a_id == agent_id:
                    taken += amount
                    assert row[pool_id] - p[pool_id] >= best - slack, "eps-CS fails for a held device"
            if taken < units[agent_id]:
                assert 0.0 >= best - slack, "eps-CS fails for a unit staying out"
            dual += units[agent_id] * best
        dual_total += dual
    scale = max(1.0, abs(dual_total))
    assert result.bound <= dual_total + 1e-9 * scale
    return dual_total


def check_against_optimum(inst, result, *, integral_values: bool):
    outcome = verify(inst, result)
    assert outcome.ok, str(outcome)
    assert result.status == "feasible"
    assert math.isclose(result.objective, outcome.objective, rel_tol=1e-9, abs_tol=1e-12)
    optimum = lo.solve(inst, "welfare").objective
    scale = max(1.0, abs(optimum))
    assert result.objective <= optimum + TOL * scale, "above the optimum"
    assert optimum <= result.bound + TOL * scale, "the stated bound is not a bound"
    assert result.bound - result.objective <= result.details["guarantee"] + TOL * scale
    dual = check_certificate(inst, result)
    assert optimum <= dual + TOL * max(1.0, abs(dual))
    if integral_values and result.details["proven_optimal"]:
        assert result.objective == pytest.approx(optimum, abs=1e-9)
        assert result.gap == 0.0 and result.bound == result.objective
    return optimum


# ----------------------------------------------------------------------------- hypothesis

integer_utilities = st.integers(0, 30).map(float)
integer_weights = st.integers(1, 3).map(float)


@st.composite
def auction_cases(draw):
    integral = draw(st.booleans())
    if integral:
        utilities, weights = integer_utilities, integer_weights
    else:
        utilities = draw(st.sampled_from([short_decimals, arbitrary_floats]))
        weights = decimal_weights
    inst = draw(small_instances(max_agents=5, max_pools=4, max_count=3, demands=(None, 1, 2),
                                max_rounds=2, utilities=utilities, weights=weights))
    eps = draw(st.sampled_from([None, None, None, 0.05, 1.0, 10.0]))
    return inst, integral, eps


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(auction_cases())
def test_within_the_stated_bound_of_the_optimum(case):
    inst, integral, eps = case
    result = lo.solve(inst, "auction", eps=eps)
    assert result.verified
    check_against_optimum(inst, result, integral_values=integral)
    if integral and eps is None:
        # Default eps 1/(P+1) on integer values: proven, and equal to the optimum.
        assert result.details["proven_optimal"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(0, 10**6), st.booleans())
def test_assignment_matrices_match_scipy(n, m, seed, integral):
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(seed)
    values = rng.integers(1, 101, size=(n, m)).astype(float) if integral else rng.random((n, m)) * 100 + 1e-3
    rows, cols = linear_sum_assignment(values, maximize=True)
    optimum = values[rows, cols].sum()
    out = auction_matrix(values)
    assert out.welfare <= optimum + 1e-9
    assert optimum <= out.bound + 1e-9
    assert out.bound - out.welfare <= out.guarantee + 1e-9
    if integral:
        assert out.proven_optimal and out.welfare == optimum
    assert out.pairs[:, 2].max() == 1 and len(set(out.pairs[:, 0])) == len(out.pairs) == len(set(out.pairs[:, 1]))


# ----------------------------------------------------------------------------- hand cases


def test_classic_example_greedy_misses():
    inst = Instance(
        [Pool("x"), Pool("y")],
        [Agent("a", demand=1), Agent("b", demand=1)],
        [Edge("a", "x", 10.0), Edge("a", "y", 9.0), Edge("b", "x", 8.0), Edge("b", "y", 1.0)],
    )
    result = lo.solve(inst, "auction")
    assert alloc(result) == [("a", "y", 0, 1.0), ("b", "x", 0, 1.0)]
    assert result.objective == 17.0 and result.bound == 17.0 and result.gap == 0.0
    assert result.details["proven_optimal"] and result.details["integral_values"]
    p = result.details["prices"][0]
    # Competitive within eps: a prefers y (9 - p_y >= 10 - p_x - eps), b prefers x.
    eps = result.details["eps_final"][0]
    assert 9 - p["y"] >= 10 - p["x"] - eps and 8 - p["x"] >= 1 - p["y"] - eps
    check_certificate(inst, result)


def test_single_device_goes_to_the_highest_value_at_about_the_second_value():
    inst = Instance([Pool("g")], [Agent("A"), Agent("B"), Agent("C")],
                    [Edge("A", "g", 0.9), Edge("B", "g", 0.5), Edge("C", "g", 0.7)])
    result = lo.solve(inst, "auction")
    assert alloc(result) == [("A", "g", 0, 1.0)]
    price = result.details["prices"][0]["g"]
    eps = result.details["eps_final"][0]
    # The losers do not want it at this price (within eps) and the winner does.
    assert 0.7 - eps <= price <= 0.9 + eps


def test_multi_unit_pool_one_price_and_demands():
    # Pool of 3: A (demand 2) values 5, B (demand 2) values 4, C values 1: A gets 2, B 1.
    inst = Instance([Pool("g", count=3)], [Agent("A", demand=2), Agent("B", demand=2), Agent("C", demand=1)],
                    [Edge("A", "g", 5.0), Edge("B", "g", 4.0), Edge("C", "g", 1.0)])
    result = lo.solve(inst, "auction")
    assert alloc(result) == [("A", "g", 0, 2.0), ("B", "g", 0, 1.0)]
    assert result.objective == 14.0 and result.details["proven_optimal"]
    assert result.details["persons"] == [5]
    price = result.details["prices"][0]["g"]
    eps = result.details["eps_final"][0]
    # B's second unit stays out: the price is about B's value.
    assert 4.0 - eps <= price <= 4.0 + eps
    check_certificate(inst, result)


def test_unbounded_demand_is_capped_by_reachable_devices():
    inst = Instance([Pool("p", count=2), Pool("q", count=3)], [Agent("A"), Agent("B", demand=1)],
                    [Edge("A", "p", 3.0), Edge("A", "q", 1.0), Edge("B", "q", 2.0)])
    result = lo.solve(inst, "auction")
    assert alloc(result) == [("A", "p", 0, 2.0), ("A", "q", 0, 2.0), ("B", "q", 0, 1.0)]
    assert result.details["persons"] == [6]  # A: 2 + 3 reachable devices; B: 1
    # Free devices nowhere: q is full, so its price may be positive; p full too.
    check_certificate(inst, result)


def test_weights_scale_values():
    inst = Instance([Pool("g")], [Agent("A", weight=2.0), Agent("B")], [Edge("A", "g", 1.0), Edge("B", "g", 1.5)])
    assert alloc(lo.solve(inst, "auction")) == [("A", "g", 0, 1.0)]
    inst = Instance([Pool("g")], [Agent("A"), Agent("B")], [Edge("A", "g", 1.0), Edge("B", "g", 1.5)])
    assert alloc(lo.solve(inst, "auction")) == [("B", "g", 0, 1.0)]


def test_nothing_worth_taking_stays_out_with_zero_prices():
    inst = Instance([Pool("g", count=2)], [Agent("A", demand=0), Agent("B")],
                    [Edge("A", "g", 9.0), Edge("B", "g", 0.0)])
    result = lo.solve(inst, "auction")
    assert result.allocation == [] and result.objective == 0.0 and result.bound == 0.0
    assert result.details["prices"] == [{"g": 0.0}] and result.details["persons"] == [0]


def test_free_devices_are_priced_zero_after_earlier_phases():
    # Two agents, five single-device pools: three devices stay free and must end at price 0
    # (the reverse clean-up), whatever earlier phases charged for them.
    rng = np.random.default_rng(3)
    pools = [Pool(f"p{c}") for c in range(5)]
    agents = [Agent("A", demand=1), Agent("B", demand=1)]
    edges = [Edge(a.id, p.id, float(v)) for a in agents for p, v in zip(pools, rng.random(5) + 1.0)]
    inst = Instance(pools, agents, edges)
    result = lo.solve(inst, "auction")
    free = [p.id for p in pools if p.id not in {r["pool"] for r in result.allocation}]
    assert len(free) == 3
    assert all(result.details["prices"][0][c] == 0.0 for c in free)
    check_against_optimum(inst, result, integral_values=False)


def test_rounds_are_independent_and_respect_windows():
    inst = Instance(
        [Pool("g")],
        [Agent("early", deadline=0), Agent("late", arrival=1)],
        [Edge("early", "g", (1.0, 100.0)), Edge("late", "g", (100.0, 1.0))],
        rounds=2,
    )
    result = lo.solve(inst, "auction")
    assert alloc(result) == [("early", "g", 0, 1.0), ("late", "g", 1, 1.0)]
    assert len(result.details["prices"]) == 2
    assert result.objective == pytest.approx(2.0)


def test_large_eps_still_reports_an_honest_bound():
    inst = Instance(
        [Pool("x"), Pool("y")],
        [Agent("a", demand=1), Agent("b", demand=1)],
        [Edge("a", "x", 10.0), Edge("a", "y", 9.0), Edge("b", "x", 8.0), Edge("b", "y", 1.0)],
    )
    result = lo.solve(inst, "auction", eps=5.0)
    assert result.details["eps_final"] == [5.0] and result.details["guarantee"] == 10.0
    assert not result.details["proven_optimal"]
    assert 17.0 <= result.bound <= result.objective + 10.0
    check_against_optimum(inst, result, integral_values=True)


def test_r4_auction_matches_welfare(r4):
    result = lo.solve(r4, "auction")
    assert result.objective == pytest.approx(lo.solve(r4, "welfare").objective, rel=1e-9)
    assert set(result.details["prices"][0]) == {p.id for p in r4.pools}


def test_result_file_round_trip_keeps_prices(tmp_path):
    inst = Instance([Pool("g")], [Agent("A")], [Edge("A", "g", 1.0)])
    data = lo.solve(inst, "auction").to_dict()
    assert data["method"] == "auction" and data["status"] == "feasible"
    assert data["details"]["prices"] == [{"g": pytest.approx(data["details"]["prices"][0]["g"])}]


@pytest.mark.parametrize("option, value", [("eps", 0.0), ("eps", -1.0), ("eps", float("nan")), ("tol", 0.0),
                                           ("factor", 1.0), ("factor", "x")])
def test_bad_options_raise_input_error(option, value):
    inst = Instance([Pool("g")], [Agent("A")], [Edge("A", "g", 1.0)])
    with pytest.raises(InputError):
        lo.solve(inst, "auction", **{option: value})


def test_eps_schedule_ends_at_the_final_eps():
    schedule = eps_schedule(1000.0, 0.003, 8.0)
    assert schedule[0] == 125.0 and schedule[-1] == 0.003
    assert np.all(np.diff(schedule) < 0)
    assert eps_schedule(1.0, 5.0).tolist() == [5.0]


def test_python_fallback_gives_the_same_auction():
    # The same kernel run as plain Python (numba's py_func) on a small dense problem.
    rng = np.random.default_rng(0)
    n, m = 6, 9
    vals = rng.integers(1, 50, size=n * m).astype(float)
    args = (np.arange(n + 1, dtype=np.int64) * m, np.zeros(0, np.int64), vals, 1, m,
            np.zeros(m + 1, np.int64), np.zeros(0, np.int64), np.zeros(0),
            np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64), np.arange(m + 1, dtype=np.int64),
            eps_schedule(49.0, 1.0 / (n + 1), 8.0))
    compiled = kernel.forward_reverse_auction(*args)
    plain = kernel.forward_reverse_auction.py_func(*args)
    for a, b in zip(compiled, plain):
        assert np.array_equal(a, b)


def test_benchmark_script_quick_run(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "auction_scaling.py"), "--sizes", "30", "--e2e", "20x5,10x20:assignment",
         "--repeat", "1", "--skip-compile", "--public", "40x80", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "auction_scaling.json").read_text())
    assert [(r["n"], r["m"], r["values"]) for r in report["assignment"]] == [
        (30, 30, "int"), (30, 30, "float"), (30, 60, "int"), (30, 60, "float")]
    for r in report["assignment"]:
        assert r["gap"] >= -1e-12 and r["bound_gap"] >= 0 and r["auction"] <= r["optimum"] + 1e-9
        assert r["proven_optimal"] == (r["values"] == "int")
    assert [(r["agents"], r["pools"]) for r in report["public_path"]] == [(40, 80)]
    assert report["public_path"][0]["gap"] >= -1e-12
    assert [r["size"] for r in report["end_to_end"]] == ["20x5", "10x20:assignment"]
    assert report["end_to_end"][1]["proven_optimal"] and report["end_to_end"][1]["gap"] == 0.0
    assert "| 30 | 60 | float |" in (out / "auction_scaling.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["auction_scaling.json", "auction_scaling.md"]


# ----------------------------------------------------------------------------- time limits


@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 6), st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_phase_by_phase_is_the_whole_schedule(seed, n, m, integer):
    # The time-limited route runs one eps phase per call on a carried state: the same auction.
    rng = np.random.default_rng(seed)
    vals = (rng.integers(0, 30, size=n * m) if integer else rng.random(n * m) * 30).astype(float)
    counts = rng.integers(1, 4, size=m)
    units = rng.integers(1, 4, size=n)
    unit_ptr = np.concatenate([[0], np.cumsum(units)]).astype(np.int64)
    unit_agent = np.repeat(np.arange(n, dtype=np.int64), units)
    slot_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    row_ptr = np.arange(n + 1, dtype=np.int64) * m
    col_vals = np.zeros(0) if slot_ptr[m] <= unit_agent.size else np.empty(n * m)
    schedule = eps_schedule(float(vals.max()) or 1.0, 1.0 / (unit_agent.size + 1), 4.0)
    args = (row_ptr, np.zeros(0, np.int64), vals, 1, m, np.zeros(m + 1, np.int64), np.zeros(0, np.int64), col_vals,
            unit_ptr, unit_agent, slot_ptr)
    whole = kernel.forward_reverse_auction(*args, schedule)
    state = kernel.start_auction(unit_agent, slot_ptr, m)
    for k in range(schedule.size):
        kernel.auction_phases(*args, schedule[k:k + 1], *state)
    unit_slot, slot_pool, pool_price, stats = state[4], state[2], state[3], state[6]
    best = kernel.best_net_values(row_ptr, args[1], vals, 1, pool_price)
    for a, b in zip(whole, (unit_slot, slot_pool, pool_price, best, stats)):
        assert np.array_equal(a, b)


def _deadline_after(monkeypatch, calls: int):
    """``remaining()`` as the auction sees it (at each round's start and after each phase): time left for
    ``calls`` calls, then none."""
    import laissez_opt.heuristics.auction as auction_module

    seen = {"n": 0}

    def fake_remaining(time_limit=None):
        seen["n"] += 1
        return 1.0 if seen["n"] <= calls else 0.0

    monkeypatch.setattr(auction_module, "remaining", fake_remaining)


def _contested(rounds: int) -> Instance:
    rng = np.random.default_rng(3)
    agents = [Agent(f"a{i}") for i in range(12)]
    pools = [Pool(f"p{c}", count=int(k)) for c, k in enumerate(rng.integers(1, 4, size=4))]
    edges = [Edge(a.id, p.id, tuple(float(v) for v in rng.random(rounds) * 100)) for a in agents for p in pools]
    return Instance(pools, agents, edges, rounds=rounds)


def test_a_time_limit_between_phases_returns_the_allocation_with_its_bound(monkeypatch):
    inst = _contested(1)
    optimum = lo.solve(inst, "welfare").objective
    _deadline_after(monkeypatch, 1)  # time is up after round 0's first phase
    result = lo.solve(inst, "auction")
    assert result.status == "time_limit" and result.verified
    assert result.details["phases"] == [1]
    assert "stopped after 1 of" in result.message
    assert result.objective <= optimum + TOL <= result.bound + 2 * TOL


def test_rounds_after_the_time_limit_are_left_empty_and_bounded(monkeypatch):
    inst = _contested(3)
    optimum = lo.solve(inst, "welfare").objective
    full = lo.solve(inst, "auction")
    _deadline_after(monkeypatch, 1 + full.details["phases"][0])  # round 0's start and each of its phases
    result = lo.solve(inst, "auction")
    assert result.status == "time_limit" and result.verified
    assert result.details["rounds_not_run"] == [1, 2]
    assert result.details["prices"][1:] == [None, None]
    assert {rec["round"] for rec in result.allocation} == {0}
    assert result.objective <= optimum + TOL <= result.bound + 2 * TOL


# Found by fuzzing, both ran for hours:
# * "worthless pool": a million units of one heavy agent, two contested devices and a million
#   devices worth 1e-294 each.  Every phase leaves about a million free priced devices to clean
#   up; the reverse step used to scan the pool from its start after each one (10^12 steps).
# * "heavy holder": an agent's ten thousand units hold most of a pool and keep moving to its
#   cheaper devices; each reverse step used to scan all of the agent's units and to start the
#   pool's scan over.  The agent's units now sit in a heap on their profits.
FUZZED = {
    "worthless pool": Instance(
        [Pool("p0", count=2, base_price=0.5), Pool("p1", count=10**6, base_price=0.5), Pool("p2", count=2)],
        [Agent("a1", weight=0.001), Agent("a2", weight=1e6), Agent("a3", weight=5.0, demand=2)],
        [Edge("a1", "p2", 0.5), Edge("a2", "p0", 0.5), Edge("a2", "p1", 1e-300), Edge("a3", "p2", 0.5)],
    ),
    "heavy holder": Instance(
        [Pool("p0", count=5), Pool("p1", count=10_000)],
        [Agent("a0", weight=0.001, demand=10_000), Agent("a1", weight=5.0, demand=10_000),
         Agent("a2", weight=0.001, demand=3)],
        [Edge("a0", "p1", 1e6), Edge("a1", "p0", 1.0), Edge("a1", "p1", 1e-12), Edge("a2", "p0", 1.0),
         Edge("a2", "p1", 1e-300)],
    ),
}


@pytest.mark.parametrize("name", FUZZED)
def test_fuzzed_instances_with_vast_pools_solve_to_the_optimum(name):
    inst = FUZZED[name]
    result = lo.solve(inst, "auction", time_limit=120)
    optimum = lo.solve(inst, "welfare").objective
    assert result.status == "feasible" and result.verified
    assert result.objective == pytest.approx(optimum, rel=1e-12)
    assert result.bound >= optimum - TOL


def test_a_billion_devices_for_three_units_take_a_few_slots():
    # At most P_c devices of a pool are ever held, so the auction keeps min(k_c, P_c + 1) slots:
    # one stays free at price 0, the pool's price is 0, and the guarantee holds for the whole pool.
    inst = Instance([Pool("P", count=10**9), Pool("Q", count=2)],
                    [Agent("A", demand=1), Agent("B", demand=2)],
                    [Edge("A", "P", 1.0), Edge("B", "P", 2.0), Edge("B", "Q", 3.0)])
    assert lo.estimate(inst, "auction").dense_bytes < 10**5
    result = lo.solve(inst, "auction")
    assert result.verified and result.details["proven_optimal"]
    assert result.objective == lo.solve(inst, "welfare").objective == 7.0
    assert result.details["prices"][0]["P"] == 0.0


@given(small_instances(max_count=6, demands=(1, 2)))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_slots_capped_at_the_bidders_keep_the_guarantee(inst):
    # Pools with more devices than units that may bid for them hold min(k_c, P_c + 1) slots.
    result = lo.solve(inst, "auction")
    optimum = lo.solve(inst, "welfare").objective
    assert result.objective <= optimum + TOL * max(1.0, optimum)
    assert result.bound >= optimum - TOL * max(1.0, optimum)
