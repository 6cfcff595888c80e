"""Themis finish-time fairness (``models.md`` item 4) against exhaustive references.

The references here are written from the definitions (``models/themis.md``) with
plain Python over the instance's records: the ideal rates, lags, bidder choice and
``rho_i`` are recomputed without the library's numpy views or models.

* integral: every feasible allocation is enumerated (``brute_force.round_allocations``);
  the bidders are chosen greedily (a candidate bids when some enumerated allocation
  gives it and every earlier bidder a positive rate); the optimum is the least
  ``max_B rho_i`` over all allocations;
* fractional: bisection on ``rho`` with a feasibility LP solved by
  ``scipy.optimize.linprog`` (30 halvings from an interval of width 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.exact.themis import (
    best_rates,
    build_themis,
    ideal_rates,
    next_rates,
    select_bidders,
    solve_themis,
    themis_data,
)
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force import round_allocations

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
REL = 1e-6


# ----------------------------------------------------------------------------- references


def ref_quantities(instance):
    """Per agent id: (W, t, X^id, T_id, a, active) from the definitions, in plain Python."""
    total_weight = math.fsum(a.weight for a in instance.agents)
    pools = {p.id: p for p in instance.pools}
    out = {}
    for agent in instance.agents:
        mine = [e for e in instance.edges if e.agent == agent.id]
        share = agent.weight / total_weight
        held = share * sum(pools[e.pool].count for e in mine)
        scale = 1.0
        if agent.demand is not None and held > agent.demand:
            scale = agent.demand / held
        ideal = scale * share * math.fsum(e.utility * pools[e.pool].count for e in mine)
        work = 1.0 if agent.work is None else agent.work
        active = work > 0 and ideal > 0
        t_id = work / ideal if ideal > 0 else math.inf
        lag = agent.elapsed / t_id if active else 0.0
        out[agent.id] = (work, agent.elapsed, ideal, t_id, lag, active)
    return out


def rates_of(instance, allocation):
    rates = {a.id: 0.0 for a in instance.agents}
    for k, amount in allocation.items():
        edge = instance.edges[k]
        rates[edge.agent] += edge.utility * amount
    return rates


def rho_of(q, agent_id, rate):
    work, elapsed, ideal, t_id, lag, active = q[agent_id]
    return math.inf if rate <= 0 else (elapsed + work / rate) / t_id


def ref_candidates(instance, knob):
    q = ref_quantities(instance)
    active = [k for k, a in enumerate(instance.agents) if q[a.id][5]]
    order = sorted(active, key=lambda k: (-q[instance.agents[k].id][4], k))
    count = max(1, math.ceil((1 - knob) * len(active) - 1e-9)) if active else 0
    return q, [instance.agents[k].id for k in order[:count]]


def ref_integral(instance, knob=0.0):
    """(optimal max rho over the bidders, bidder ids) by enumeration."""
    q, candidates = ref_candidates(instance, knob)
    allocations = [rates_of(instance, alloc) for alloc in round_allocations(instance, 0)]
    bidders = []
    for agent_id in candidates:
        trial = bidders + [agent_id]
        if any(all(r[j] > 0 for j in trial) for r in allocations):
            bidders = trial
    if not bidders:
        return 0.0, bidders
    best = min(max(rho_of(q, j, r[j]) for j in bidders) for r in allocations)
    return best, bidders


def ref_fractional(instance, knob=0.0):
    """(optimal max rho over the bidders, bidder ids) by LP bisection with scipy."""
    q, bidders = ref_candidates(instance, knob)
    if not bidders:
        return 0.0, bidders
    edges = instance.edges
    n_e = len(edges)
    rows, rhs = [], []
    for pool in instance.pools:
        rows.append([1.0 if e.pool == pool.id else 0.0 for e in edges])
        rhs.append(pool.count)
    for agent in instance.agents:
        if agent.demand is not None:
            rows.append([1.0 if e.agent == agent.id else 0.0 for e in edges])
            rhs.append(agent.demand)

    def feasible(rho):
        a_ub, b_ub = list(rows), list(rhs)
        for j in bidders:
            work, elapsed, ideal, t_id, lag, _ = q[j]
            if rho <= lag:
                return False
            need = ideal / (rho - lag)  # X_j >= X^id_j / (rho - a_j)
            a_ub.append([-e.utility if e.agent == j else 0.0 for e in edges])
            b_ub.append(-need)
        res = linprog(np.zeros(n_e), A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=[(0, None)] * n_e,
                      method="highs")
        return res.status == 0

    lo_ = max(q[j][4] for j in bidders)
    hi_ = lo_ + 1.0  # the equal share reaches every r_i = 1
    assert feasible(hi_)
    for _ in range(30):  # width <= 2^-30 < 1e-9, well inside the 1e-6 comparisons
        mid = 0.5 * (lo_ + hi_)
        if feasible(mid):
            hi_ = mid
        else:
            lo_ = mid
    return hi_, bidders


# ----------------------------------------------------------------------------- strategies


@st.composite
def themis_instances(draw, max_agents=3, max_pools=3, max_count=3):
    n = draw(st.integers(1, max_agents))
    m = draw(st.integers(1, max_pools))
    pools = [Pool(f"p{c}", count=draw(st.integers(1, max_count))) for c in range(m)]
    agents = []
    for i in range(n):
        elapsed = draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5, 7.0]))
        agents.append(Agent(
            f"a{i}",
            weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5])),
            demand=draw(st.sampled_from([None, 1, 2, 3])),
            work=draw(st.one_of(st.none(), st.integers(1, 5).map(float))),
            elapsed=elapsed,
        ))
    edges = []
    for i in range(n):
        for c in range(m):
            if draw(st.integers(0, 3)) > 0:
                edges.append(Edge(f"a{i}", f"p{c}", draw(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 0.25]))))
    return Instance(pools, agents, edges, name="hyp-themis")


def check_result(instance, result, expected, *, fractional):
    outcome = verify(instance, result)
    assert outcome.ok, str(outcome)
    assert result.status == "optimal", (result.status, result.message, result.details["search"])
    assert result.gap <= REL
    low, high = result.details["bracket"]
    assert low <= expected * (1 + REL) + 1e-12, (low, expected)
    assert high >= expected * (1 - REL) - 1e-12, (high, expected)
    assert math.isclose(result.objective, expected, rel_tol=REL, abs_tol=1e-9), (result.objective, expected)
    assert_work_conserving(instance, result, fractional=fractional)


def assert_work_conserving(instance, result, *, fractional):
    """No pool keeps a free device that an active agent with room below its demand values."""
    q = ref_quantities(instance)
    used_pool = {p.id: 0.0 for p in instance.pools}
    used_agent = {a.id: 0.0 for a in instance.agents}
    for rec in result.allocation:
        used_pool[rec["pool"]] += rec["amount"]
        used_agent[rec["agent"]] += rec["amount"]
    counts = {p.id: p.count for p in instance.pools}
    demand = {a.id: (math.inf if a.demand is None else a.demand) for a in instance.agents}
    slack = 1e-6 if fractional else 0.5
    for e in instance.edges:
        if e.utility > 0 and q[e.agent][5]:
            pool_free = counts[e.pool] - used_pool[e.pool] > slack
            agent_room = demand[e.agent] - used_agent[e.agent] > slack
            assert not (pool_free and agent_room), (e, result.allocation)


# ----------------------------------------------------------------------------- tests


@settings(max_examples=200, **SETTINGS)
@given(themis_instances())
def test_integral_highs_ortools_brute_force(instance):
    expected, bidders = ref_integral(instance)
    for solver in ("highs", "ortools"):
        result = lo.solve(instance, "themis", solver=solver)
        assert result.details["bidders"] == bidders
        check_result(instance, result, expected, fractional=False)


@settings(max_examples=200, **SETTINGS)
@given(themis_instances())
def test_fractional_highs_ortools_reference(instance):
    expected, bidders = ref_fractional(instance)
    for solver in ("highs", "ortools"):
        result = lo.solve(instance, "themis", solver=solver, fractional=True)
        assert result.details["bidders"] == bidders
        check_result(instance, result, expected, fractional=True)
        if bidders:  # the equal share reaches every rho_i = a_i + 1
            q = ref_quantities(instance)
            assert result.objective <= max(q[j][4] for j in bidders) + 1 + 1e-7


@settings(max_examples=40, **SETTINGS)
@given(themis_instances(), st.sampled_from([0.25, 0.5, 0.8, 1.0]))
def test_fairness_knob_against_brute_force(instance, knob):
    expected, bidders = ref_integral(instance, knob)
    result = lo.solve(instance, "themis", fairness_knob=knob)
    assert result.details["bidders"] == bidders
    check_result(instance, result, expected, fractional=False)
    expected_f, bidders_f = ref_fractional(instance, knob)
    result_f = lo.solve(instance, "themis", fairness_knob=knob, fractional=True)
    assert result_f.details["bidders"] == bidders_f
    check_result(instance, result_f, expected_f, fractional=True)


def two_by_two(elapsed_b=0.0):
    return Instance(
        [Pool("P"), Pool("Q")],
        [Agent("A", work=1.0), Agent("B", work=1.0, elapsed=elapsed_b)],
        [Edge("A", "P", 2.0), Edge("A", "Q", 1.0), Edge("B", "P", 1.0), Edge("B", "Q", 1.0)],
        name="2x2",
    )


def test_ideal_times_by_hand_2x2():
    # Each agent's equal share is half of P and half of Q: A runs at 0.5*2 + 0.5*1 = 1.5,
    # B at 0.5*1 + 0.5*1 = 1.0; with W = 1: T_id = 2/3 and 1.
    inst = two_by_two()
    assert ideal_rates(inst).tolist() == [1.5, 1.0]
    data = themis_data(inst)
    assert np.allclose(data.ideal_time, [2 / 3, 1.0])
    assert best_rates(inst).tolist() == [3.0, 2.0]
    # Integral: A on P and B on Q gives rho_A = (1/2)/(2/3) = 0.75, rho_B = 1/1 = 1; the swap gives 1.5.
    result = lo.solve(inst, "themis")
    agents = result.details["agents"]
    assert result.status == "optimal" and result.objective == pytest.approx(1.0, abs=1e-12)
    assert agents["A"]["rho"] == pytest.approx(0.75) and agents["B"]["rho"] == pytest.approx(1.0)
    assert agents["A"]["ideal_time"] == pytest.approx(2 / 3) and agents["A"]["shared_time"] == pytest.approx(0.5)
    assert agents["B"]["ideal_rate"] == pytest.approx(1.0)
    # Fractional: trade P only; A gets p of P: (2p)/1.5 = 2 - p gives p = 6/7, rho = 7/8.
    frac = lo.solve(inst, "themis", fractional=True)
    assert frac.objective == pytest.approx(7 / 8, rel=1e-7)
    x = {(r["agent"], r["pool"]): r["amount"] for r in frac.allocation}
    assert x[("A", "P")] == pytest.approx(6 / 7, rel=1e-6) and x[("B", "Q")] == pytest.approx(1.0)
    # B has waited one ideal time (a_B = 1): rho_B = 1 + 1/X_B; integral optimum 2 (B on either device).
    late = two_by_two(elapsed_b=1.0)
    assert lo.solve(late, "themis").objective == pytest.approx(2.0)
    # Fractional: B keeps Q and takes y of P; 1 + 1/(1 + y) = 1.5 / (2 (1 - y)) <=> y^2 + 1.75 y - 1.25 = 0.
    frac = lo.solve(late, "themis", fractional=True)
    y = (-1.75 + math.sqrt(1.75**2 + 4 * 1.25)) / 2
    value = 1 + 1 / (1 + y)
    assert value == pytest.approx(1.5 / (2 * (1 - y)), rel=1e-12)
    assert frac.objective == pytest.approx(value, rel=1e-7)


def test_subnormal_utility_gives_infinite_rho_quietly():
    # A utility of 1e-320 against an ideal rate near 1: 1/r overflows to inf, the rho of no rate,
    # with no overflow warning on the way (the CLI prints warnings to stderr).
    import warnings

    inst = Instance(
        [Pool("P", count=1), Pool("Q", count=1)],
        [Agent("A", work=1.0), Agent("B", work=1.0)],
        [Edge("A", "P", 1e-320), Edge("A", "Q", 1.0), Edge("B", "P", 1.0), Edge("B", "Q", 1.0)],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = lo.solve(inst, "themis")
    assert result.status == "optimal" and math.isfinite(result.objective)
    assert {(r["agent"], r["pool"]) for r in result.allocation} == {("A", "Q"), ("B", "P")}


def test_scarce_devices_bidders_by_lag():
    # One device, three agents: only one can be served; the one with the largest t_i / T_id bids.
    inst = Instance(
        [Pool("P")],
        [Agent("A", work=2.0, elapsed=1.0), Agent("B", work=1.0, elapsed=1.0), Agent("C", work=1.0)],
        [Edge("A", "P", 1.0), Edge("B", "P", 1.0), Edge("C", "P", 1.0)],
    )
    result = lo.solve(inst, "themis")
    assert result.details["bidders"] == ["B"]  # a_B = 1/3 > a_A = 1/6 > a_C = 0
    assert [r["agent"] for r in result.allocation] == ["B"]
    assert result.details["agents"]["A"]["rho"] == math.inf
    # Fractionally everyone is served.
    assert lo.solve(inst, "themis", fractional=True).details["bidders"] == ["B", "A", "C"]


def test_fairness_knob_leftover_goes_to_others():
    # f = 0.5 with two agents: only the worse one (A) bids; B gets what A does not need.
    inst = Instance(
        [Pool("P", count=4)],
        [Agent("A", work=1.0, elapsed=3.0, demand=1), Agent("B", work=1.0)],
        [Edge("A", "P", 1.0), Edge("B", "P", 1.0)],
    )
    result = lo.solve(inst, "themis", fairness_knob=0.5)
    assert result.details["bidders"] == ["A"]
    x = {r["agent"]: r["amount"] for r in result.allocation}
    assert x == {"A": 1.0, "B": 3.0}
    assert result.details["work_conserving"] == "optimal"


def test_select_bidders_moves_agents():
    inst = Instance(
        [Pool("P"), Pool("Q")],
        [Agent("A"), Agent("B"), Agent("C"), Agent("D")],
        [Edge("A", "P", 1.0), Edge("A", "Q", 1.0), Edge("B", "P", 1.0), Edge("C", "Q", 1.0), Edge("D", "Q", 0.0)],
    )
    kept, where = select_bidders(inst, np.array([0, 1, 2, 3]), placement=True)
    assert kept.tolist() == [0, 1]  # C would need A's pool too; D values nothing
    assert where == {0: 1, 1: 0}


def test_next_rates_enumerates_combinations():
    inst = Instance([Pool("P", count=2), Pool("Q", count=3)], [Agent("A", demand=3)],
                    [Edge("A", "P", 3.0), Edge("A", "Q", 2.0)])
    data = themis_data(inst)
    ideal = data.ideal_rate[0]
    # sums of <= 3 devices (<= 2 of P at 3, <= 3 of Q at 2): 0,2,3,4,5,6,7,8
    got = next_rates(inst, data, np.array([4.5 / ideal]))[0] * ideal
    assert got == pytest.approx(5.0)
    assert next_rates(inst, data, np.array([8.0 / ideal]))[0] == math.inf


def test_inactive_agents_and_empty():
    inst = Instance([Pool("P")], [Agent("A", work=0.0), Agent("B")], [Edge("A", "P", 1.0)])
    result = lo.solve(inst, "themis")
    assert result.details["bidders"] == []
    assert result.objective == 0.0 and result.allocation == []
    assert result.details["agents"]["B"]["rho"] is None


def test_bad_input():
    two_rounds = Instance([Pool("P")], [Agent("A")], [Edge("A", "P", 1.0)], rounds=2)
    with pytest.raises(InputError) as err:
        lo.solve(two_rounds, "themis")
    assert err.value.path == "$.rounds"
    with pytest.raises(InputError):
        lo.solve(two_by_two(), "themis", fairness_knob=1.5)
    with pytest.raises(InputError):
        lo.solve(two_by_two(), "themis", tolerance=0.0)


def test_model_blocks_and_registry():
    model, _ = build_themis(two_by_two(), fractional=True)
    assert set(model.variables) == {"x", "delta"}
    assert set(model.constraints) == {"capacity", "demand", "finish", "others"}
    from laissez_opt.methods import get_method

    spec = get_method("themis")
    assert spec.solvers == ("highs", "ortools") and spec.fractional and spec.kind == "exact"


def test_larger_instance_agrees_across_solvers():
    inst = lo.generate("gavel", 40, 3, seed=3, max_count=6)
    rng = np.random.default_rng(0)
    agents = [Agent(a.id, weight=a.weight, demand=a.demand, work=float(rng.integers(1, 6)),
                    elapsed=float(rng.choice([0.0, 0.5, 2.0]))) for a in inst.agents]
    inst = Instance(inst.pools, agents, inst.edges, name="gavel-40")
    for fractional in (False, True):
        h = lo.solve(inst, "themis", fractional=fractional)
        o = lo.solve(inst, "themis", fractional=fractional, solver="ortools")
        assert h.status == o.status == "optimal"
        assert h.objective == pytest.approx(o.objective, rel=REL)
        assert_work_conserving(inst, h, fractional=fractional)


def test_time_limit_reports_bracket():
    inst = lo.generate("gavel", 60, 3, seed=5, max_count=10)
    result = solve_themis(inst, time_limit=5.0)
    low, high = result.details["bracket"]
    assert low <= high and result.status in ("optimal", "time_limit", "feasible")


# ----------------------------------------------------------------------------- the state a simulation carries


@settings(max_examples=80, **SETTINGS)
@given(themis_instances(), st.sampled_from(["optimum", "below", "above", "tiny", "huge", "none"]))
def test_state_hint_never_changes_the_optimum(instance, where):
    """Whatever rho the state carries, the search proves the same optimum (brute force)."""
    expected, _ = ref_integral(instance)
    plain = lo.solve(instance, "themis")
    rho = {"optimum": expected, "below": expected * 0.9, "above": expected * 1.1 + 0.1, "tiny": 1e-9,
           "huge": 1e12, "none": None}[where]
    if expected <= 0:  # no bidder: nothing to search, and a state's rho must be positive
        rho = None
    hinted = lo.solve(instance, "themis", state={"rho": rho})
    check_result(instance, hinted, expected, fractional=False)
    assert hinted.details["state"] == {"rho": hinted.objective if hinted.details["bidders"] else None}
    if where == "optimum" and plain.details["bidders"]:
        assert hinted.details["solves"] <= plain.details["solves"] + 1


def test_state_from_the_previous_run_cuts_the_search(monkeypatch):
    """The second of two equal rounds starts at the first one's optimum: two probes prove it (six without).

    The incumbent improvements (fill, roundings, device moves) are switched off, leaving the
    placement as the first incumbent: on this instance they reach the optimum before any probe,
    and this test is about the probes the state saves.
    """
    import laissez_opt.exact.themis as themis_module

    monkeypatch.setattr(themis_module, "improve_by_moves", lambda instance, data, amounts, **_: amounts)
    monkeypatch.setattr(themis_module, "bipartite_rounding", lambda *args: None)
    monkeypatch.setattr(themis_module, "rounded_incumbent",
                        lambda instance, data, base: np.floor(np.asarray(base, float) + 1e-9))
    pools = [Pool("fast", count=3), Pool("mid", count=4), Pool("slow", count=9)]
    agents = [Agent(f"a{i}", work=float(3 + i), elapsed=float(i % 4), demand=1 + i % 3, weight=1.0 + (i % 3 == 0))
              for i in range(6)]
    edges = [Edge(a.id, "fast", 2.0 + 0.25 * i) for i, a in enumerate(agents)]
    edges += [Edge(a.id, "mid", 1.5 + 0.2 * (i % 4)) for i, a in enumerate(agents)]
    edges += [Edge(a.id, "slow", 1.0 + 0.125 * i) for i, a in enumerate(agents)]
    instance = Instance(pools=pools, agents=agents, edges=edges)
    first = lo.solve(instance, "themis")
    second = lo.solve(instance, "themis", state=first.details["state"])
    assert second.status == first.status == "optimal"
    assert second.objective == first.objective
    assert np.array_equal(second.amounts, first.amounts)
    probes = [e for e in second.details["search"] if e["stage"] == "probe"]
    assert [e["status"] for e in probes] == ["optimal", "infeasible"]
    assert len(probes) < len([e for e in first.details["search"] if e["stage"] == "probe"])


@pytest.mark.parametrize("state, problem", [
    ({"rho": -1.0}, "state.rho: themis state's rho must be a positive finite number"),
    ({"rho": float("nan")}, "state.rho: themis state's rho must be a positive finite number"),
    ({"rho": "1.5"}, "state.rho: themis state's rho must be a positive finite number"),
    ({"rho": 1.5, "turn": 0}, "state: themis state has fields rho, got rho, turn"),
    ({}, "state: themis state has fields rho, got no fields"),
])
def test_state_is_checked(state, problem):
    instance = Instance(pools=[Pool("P", count=2)], agents=[Agent("A", work=4.0), Agent("B", work=2.0)],
                        edges=[Edge("A", "P", 1.0), Edge("B", "P", 1.0)])
    with pytest.raises(InputError) as err:
        lo.solve(instance, "themis", state=state)
    assert str(err.value).startswith(problem)
