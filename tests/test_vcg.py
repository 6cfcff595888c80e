"""Tests of the VCG mechanism (``laissez_opt.exact.vcg``, ``models/vcg.md``).

The reference is brute force: :func:`brute_vcg` enumerates every feasible
integral allocation of each round (``brute_force.round_allocations``) and
takes ``W*`` and every ``W*_{-i}`` (the best over allocations in which ``i``
holds nothing) directly from the definition, in money per device-round: an
agent values a device at its bid times ``round_hours`` (bids are per
device-hour) or else at the round's utility, and the operator values each
unsold device of pool ``c`` at ``b_c`` times ``round_hours``.  Payments are then compared through
the tie-independent surplus ``W* - W*_{-i}``: when several allocations are
optimal the routes may pick different ones, and then the winners' payments
differ, but every agent's surplus (value minus payment) does not.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from brute_force import round_allocations
from conftest import INSTANCES, ROOT, run_cli
from laissez_opt.errors import InputError, SolverUnavailableError
from laissez_opt.exact.vcg import ExchangeGraph, build_vcg, solve_vcg
from laissez_opt.instance import Agent, Edge, Instance, Pool

TOL = 1e-9
ROUTES = [("highs", "auto"), ("highs", "resolve"), ("ortools", "auto"), ("ortools", "resolve")]
SECTION5 = INSTANCES / "hotos25-section5-bids.json"


# ----------------------------------------------------------------------------- brute force


def edge_value(edge: Edge, rnd: int, hours: float) -> float:
    """``v_{i,c,r}`` per device-round: the bid (per device-hour) times ``hours`` when given, else the round's utility."""
    return edge.bid * hours if edge.bid is not None else edge.utility_in(rnd)


def brute_vcg(instance: Instance) -> tuple[float, dict[str, float]]:
    """``W*`` and ``W*_{-i}`` for every agent, by enumerating each round's allocations."""
    ids = [a.id for a in instance.agents]
    hours = instance.round_hours
    welfare, without = 0.0, {a: 0.0 for a in ids}
    for rnd in range(instance.rounds):
        best, best_without = -math.inf, {a: -math.inf for a in ids}
        for alloc in round_allocations(instance, rnd):
            sold: dict[str, float] = defaultdict(float)
            involved = set()
            values = []
            for k, amount in alloc.items():
                edge = instance.edges[k]
                values.append(edge_value(edge, rnd, hours) * amount)
                sold[edge.pool] += amount
                involved.add(edge.agent)
            w = math.fsum(values + [p.base_price * hours * (p.count - sold[p.id]) for p in instance.pools])
            best = max(best, w)
            for a in ids:
                if a not in involved:
                    best_without[a] = max(best_without[a], w)
        welfare += best
        for a in ids:
            without[a] += best_without[a]
    return welfare, without


def values_received(instance: Instance, result) -> dict[str, float]:
    """``v_i(x)`` of the result's allocation, from the records."""
    edges = {(e.agent, e.pool): e for e in instance.edges}
    out = {a.id: 0.0 for a in instance.agents}
    for rec in result.allocation:
        out[rec["agent"]] += edge_value(edges[(rec["agent"], rec["pool"])], rec["round"], instance.round_hours) * rec["amount"]
    return out


# ----------------------------------------------------------------------------- strategies

prices = st.one_of(st.sampled_from([0.5, 0.6, 0.687, 0.762, 1.0]), st.integers(0, 200).map(lambda k: k / 100))
reserves = st.one_of(st.just(0.0), st.sampled_from([0.25, 0.5, 0.606]), st.integers(0, 100).map(lambda k: k / 100))
#: Round lengths in hours: one hour (the HotOS'25 setting), longer and shorter rounds, a minute.
hours = st.sampled_from([1.0, 2.0, 0.5, 0.25, 3.0, 1 / 60])


@st.composite
def auctions(draw, *, max_agents=4, max_pools=3, max_rounds=1, demands=(1, 2, None), round_hours=hours):
    """1-4 agents, 1-3 pools of 1-2 devices with reserves, short-decimal bids (ties likely), varied round lengths."""
    n = draw(st.integers(1, max_agents))
    m = draw(st.integers(1, max_pools))
    rounds = draw(st.integers(1, max_rounds))
    pools = [Pool(f"p{c}", count=draw(st.integers(1, 2)), base_price=draw(reserves)) for c in range(m)]
    agents = []
    for i in range(n):
        arrival = draw(st.integers(0, rounds - 1))
        deadline = draw(st.one_of(st.none(), st.integers(arrival, rounds - 1)))
        agents.append(Agent(f"a{i}", demand=draw(st.sampled_from(demands)), arrival=arrival, deadline=deadline))
    edges = []
    for i in range(n):
        for c in range(m):
            if draw(st.integers(0, 3)) == 0:
                continue
            if rounds > 1 and draw(st.booleans()):
                utility = tuple(draw(prices) for _ in range(rounds))
            else:
                utility = draw(prices)
            bid = draw(st.one_of(st.none(), prices))
            edges.append(Edge(f"a{i}", f"p{c}", utility, bid=bid))
    return Instance(pools, agents, edges, rounds=rounds, round_hours=draw(round_hours), name="auction")


def check_against_brute(instance: Instance, result, welfare: float, without: dict[str, float]):
    ids = [a.id for a in instance.agents]
    assert result.status == "optimal", result.message
    assert result.verified
    assert result.objective == pytest.approx(welfare, abs=TOL)
    assert result.details["welfare"] == pytest.approx(welfare, abs=TOL)
    received = values_received(instance, result)
    for a in ids:
        surplus = welfare - without[a]
        assert result.details["welfare_without"][a] == pytest.approx(without[a], abs=TOL), a
        assert result.details["surplus"][a] == pytest.approx(surplus, abs=TOL), a
        assert result.details["values"][a] == pytest.approx(received[a], abs=TOL), a
        # The Clarke pivot, recomputed from the definition and this result's own allocation.
        assert result.payments[a] == pytest.approx(without[a] - (welfare - received[a]), abs=TOL), a
        # Individually rational, no positive transfers.
        assert -TOL <= result.payments[a] <= received[a] + TOL, a
        if received[a] == 0:
            assert result.payments[a] == 0.0
    assert result.details["revenue"] == pytest.approx(sum(result.payments.values()), abs=TOL)


# ----------------------------------------------------------------------------- brute force agreement


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auctions())
def test_highs_ortools_brute_force_agree(instance):
    """W*, every W*_{-i}, surplus, payments and IR, on every route, against enumeration."""
    welfare, without = brute_vcg(instance)
    for solver, pivots in ROUTES:
        result = lo.solve(instance, "vcg", solver=solver, pivots=pivots)
        check_against_brute(instance, result, welfare, without)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auctions(max_agents=3, max_pools=2, max_rounds=2), st.sampled_from(ROUTES), st.booleans())
def test_multi_round_and_fractional_against_brute_force(instance, route, fractional):
    """Rounds add up (values summed over rounds, windows respected); the LP gives the same numbers."""
    welfare, without = brute_vcg(instance)
    solver, pivots = route
    result = lo.solve(instance, "vcg", solver=solver, pivots=pivots, fractional=fractional)
    assert result.mode == ("fractional" if fractional else "integral")
    check_against_brute(instance, result, welfare, without)


#: Every route of the VCG model, each doing the re-solves too: HiGHS (matrix API, Pyomo), OR-Tools min-cost
#: flow, GLOP, CP-SAT and SCIP (``backend`` forces one), plus the exchange paths on HiGHS and min-cost flow.
EVERY_ROUTE = [
    ("highs", "direct", None, "auto"), ("highs", "direct", None, "resolve"), ("highs", "pyomo", None, "resolve"),
    ("ortools", "direct", "min_cost_flow", "auto"), ("ortools", "direct", "min_cost_flow", "resolve"),
    ("ortools", "direct", "glop", "resolve"), ("ortools", "direct", "cp_sat", "resolve"),
    ("ortools", "direct", "scip", "resolve"),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auctions(max_agents=3, max_pools=2, max_rounds=2, round_hours=st.sampled_from([1.0, 2.0, 0.5, 1 / 60, 1 / 3])))
def test_every_route_agrees_with_brute_force_at_any_round_length(instance):
    """W*, every W*_{-i} and the payments from the definition in money per device-round, on every route.

    Bids (per device-hour) and base prices count ``round_hours`` times per device-round, utilities
    once; each route must prove the same optimum (never ``optimal`` on a worse welfare).
    """
    welfare, without = brute_vcg(instance)
    for solver, via, backend, pivots in EVERY_ROUTE:
        options = {} if backend is None else {"backend": backend}
        try:
            result = lo.solve(instance, "vcg", solver=solver, via=via, pivots=pivots, **options)
        except SolverUnavailableError as err:
            # CP-SAT takes only models whose coefficients scale exactly to integers; it must say so.
            assert backend == "cp_sat" and "CP-SAT needs" in str(err), (backend, err)
            continue
        check_against_brute(instance, result, welfare, without)


def test_welfare_definition_with_two_hour_rounds():
    """At ``round_hours`` 2 a device-round is worth twice a bid and twice the reserve; a utility counts once."""
    inst = Instance(
        [Pool("A10", count=1, base_price=0.606), Pool("L4", count=2, base_price=0.3)],
        [Agent("A", demand=1), Agent("B", demand=2)],
        [Edge("A", "A10", 0.687, bid=0.687), Edge("B", "A10", 0.762), Edge("B", "L4", 0.5)],
        rounds=2, round_hours=2.0, name="two-hours",
    )
    for solver in ("highs", "ortools"):
        result = lo.solve(inst, "vcg", solver=solver)
        # Each round: A's bid is worth 1.374 > the A10's reserve 1.212 > B's utility 0.762; B's 0.5 on an L4 is
        # below its reserve 0.6, so both L4s stay unsold (reserve value 1.2).
        assert [(r["agent"], r["pool"], r["round"]) for r in result.allocation] == [("A", "A10", 0), ("A", "A10", 1)]
        assert result.objective == pytest.approx(2 * (0.687 * 2 + 2 * 0.3 * 2), abs=TOL)
        assert result.details["reserve_value"] == pytest.approx(2 * 2 * 0.3 * 2, abs=TOL)
        # A pays the reserve of the A10 for its two rounds (B's 0.762 is below it).
        assert result.payments == {"A": pytest.approx(2 * 0.606 * 2, abs=TOL), "B": 0.0}
        assert result.verified


@pytest.mark.parametrize("hours", [1.0, 2.0, 0.5])
def test_section5_second_price_scales_with_the_round_length(hours):
    """Bids and the reserve are per device-hour: a round of h hours costs the winner h times the second price."""
    from laissez_opt.io.instance_file import instance_from_dict

    data = json.loads(SECTION5.read_text())
    data["round_hours"] = hours
    result = lo.solve(instance_from_dict(data), "vcg")
    assert [(r["agent"], r["pool"]) for r in result.allocation] == [("B", "A10")]
    assert result.payments == {"A": 0.0, "B": pytest.approx(0.687 * hours, abs=TOL)}
    assert result.objective == pytest.approx(0.762 * hours, abs=TOL)
    if hours == 1.0:
        assert result.payments["B"] == pytest.approx(0.687, abs=TOL) and result.objective == pytest.approx(0.762, abs=TOL)


# ----------------------------------------------------------------------------- truthfulness


def misreports(instance: Instance, agent: str):
    """Reported bids (per device-hour) for ``agent``'s edges: scaled, single edges zeroed, two edges swapped.

    The truthful bid of an edge is its value per device-round divided by ``round_hours``.
    """
    own = [k for k, e in enumerate(instance.edges) if e.agent == agent]
    true = {k: edge_value(instance.edges[k], 0, instance.round_hours) / instance.round_hours for k in own}
    for factor in (0.0, 0.5, 0.9, 1.1, 2.0):
        yield {k: true[k] * factor for k in own}
    for k in own:
        yield {**true, k: 0.0}
    for pos, k in enumerate(own):
        for k2 in own[pos + 1 :]:
            yield {**true, k: true[k2], k2: true[k]}


def reported(instance: Instance, bids: dict[int, float]) -> Instance:
    edges = [
        Edge(e.agent, e.pool, e.utility, bid=bids[k], cost=e.cost) if k in bids else e
        for k, e in enumerate(instance.edges)
    ]
    return Instance(instance.pools, instance.agents, edges, rounds=instance.rounds,
                    round_hours=instance.round_hours, name="misreport")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auctions(), st.sampled_from(ROUTES))
def test_truthful_bidding_is_dominant(instance, route):
    """No misreport gives an agent more true utility v_i(x') - p'_i than bidding its values."""
    solver, pivots = route
    truthful = solve_vcg(instance, solver=solver, pivots=pivots)
    edges = {(e.agent, e.pool): e for e in instance.edges}
    for agent in instance.agents:
        honest = truthful.details["values"][agent.id] - truthful.payments[agent.id]
        assert honest >= -TOL  # individually rational
        for bids in misreports(instance, agent.id):
            told = reported(instance, bids)
            lie = solve_vcg(told, solver=solver, pivots=pivots)
            assert lo.verify(told, lie).ok
            true_value = sum(
                edge_value(edges[(rec["agent"], rec["pool"])], 0, instance.round_hours) * rec["amount"]
                for rec in lie.allocation
                if rec["agent"] == agent.id
            )
            gain = true_value - lie.payments[agent.id]
            assert gain <= honest + TOL, (agent.id, bids, gain, honest)


# ----------------------------------------------------------------------------- the HotOS'25 example (R4)


def _auction(bids: dict[str, float], reserve: float = 0.606) -> Instance:
    return Instance(
        [Pool("A10", count=1, base_price=reserve)],
        [Agent(a, demand=1) for a in bids],
        [Edge(a, "A10", b, bid=b) for a, b in bids.items()],
        name="a10",
    )


@pytest.mark.parametrize("solver", ["highs", "ortools"])
@pytest.mark.parametrize("pivots", ["auto", "resolve"])
def test_section5_b_wins_and_pays_the_second_price(solver, pivots):
    inst = lo.load(SECTION5)
    result = lo.solve(inst, "vcg", solver=solver, pivots=pivots)
    assert result.status == "optimal" and result.verified
    assert [(r["agent"], r["pool"], r["amount"]) for r in result.allocation] == [("B", "A10", 1.0)]
    assert result.payments["B"] == pytest.approx(0.687, abs=TOL)
    assert result.payments["A"] == 0.0
    assert result.objective == pytest.approx(0.762, abs=TOL)
    assert result.details["surplus"]["B"] == pytest.approx(0.762 - 0.687, abs=TOL)


@pytest.mark.parametrize("solver", ["highs", "ortools"])
def test_section5_from_the_command_line(solver):
    run = run_cli("solve", SECTION5, "--method", "vcg", "--solver", solver, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["method"] == "vcg" and data["status"] == "optimal" and data["verified"] is True
    assert data["allocation"] == [{"agent": "B", "pool": "A10", "round": 0, "amount": 1.0}]
    assert data["payments"]["B"] == pytest.approx(0.687, abs=TOL) and data["payments"]["A"] == 0.0
    assert data["utilities"] == {"A": 0.0, "B": 0.762}


@pytest.mark.parametrize("solver", ["highs", "ortools"])
def test_section5_rebid_and_single_bidder(solver):
    # After its checkpoint B re-bids 0.652 (its L4 completion cost over its A10 runtime): A wins, pays 0.652.
    rebid = lo.solve(_auction({"A": 0.687, "B": 0.652}), "vcg", solver=solver)
    assert [r["agent"] for r in rebid.allocation] == ["A"]
    assert rebid.payments == {"A": pytest.approx(0.652, abs=TOL), "B": 0.0}
    # A single bidder above the reserve pays the reserve (the price falls to the base price).
    for bidder, bid in (("A", 0.687), ("B", 0.762)):
        alone = lo.solve(_auction({bidder: bid}), "vcg", solver=solver)
        assert alone.payments == {bidder: pytest.approx(0.606, abs=TOL)}
        assert alone.details["revenue"] == pytest.approx(0.606, abs=TOL)
    # A bid below the reserve: the operator keeps the device; the welfare is the reserve value.
    kept = lo.solve(_auction({"A": 0.5}), "vcg", solver=solver)
    assert kept.allocation == [] and kept.payments == {"A": 0.0}
    assert kept.objective == pytest.approx(0.606) and kept.details["reserve_value"] == pytest.approx(0.606)


# ----------------------------------------------------------------------------- the fast pivots


@pytest.mark.parametrize("family,params", [
    ("neocloud", {"max_demand": 3, "max_count": 3}),
    ("gavel", {"max_count": 4}),
    ("neocloud", {"rounds": 2, "max_demand": 2}),
])
def test_exchange_paths_agree_with_resolving(family, params):
    """On generated instances with multi-unit winners, exchange paths give the re-solves' W*_{-i}."""
    inst = lo.generate(family, 40, 6, seed=3, **params)
    results = {(s, p): lo.solve(inst, "vcg", solver=s, pivots=p) for s, p in ROUTES}
    reference = results[("highs", "resolve")]
    assert results[("highs", "auto")].details["by_paths"] > 0
    assert results[("highs", "auto")].details["resolved"] == 0
    for key, result in results.items():
        assert result.status == "optimal", key
        assert result.objective == pytest.approx(reference.objective, abs=1e-7)
        for a, w in reference.details["welfare_without"].items():
            assert result.details["welfare_without"][a] == pytest.approx(w, abs=1e-7), (key, a)
            assert result.details["surplus"][a] == pytest.approx(reference.details["surplus"][a], abs=1e-7)


def test_exchange_graph_certifies_and_rejects():
    inst = _auction({"A": 0.687, "B": 0.762})
    model, _ = build_vcg(inst)
    import numpy as np

    good = ExchangeGraph.build(model, np.array([0.0, 1.0]))
    assert good.certified and good.removal_loss([1]) == pytest.approx(0.075, abs=TOL)
    assert good.removal_loss([0]) == 0.0  # A holds nothing
    bad = ExchangeGraph.build(model, np.array([1.0, 0.0]))  # A holds the A10: not optimal
    assert not bad.certified and bad.removal_loss([0]) is None
    assert ExchangeGraph.build(model, np.array([0.5, 0.5])) is None  # not integral


# ----------------------------------------------------------------------------- statuses, details, errors


def test_time_limit_is_propagated(monkeypatch):
    """When the time runs out after the welfare solve, each pivot left falls back to its proven lower bound."""
    import laissez_opt.exact.vcg as vcg_module

    inst = lo.generate("neocloud", 30, 4, seed=1)
    calls = []

    def no_time_after_the_welfare_solve(time_limit, start):
        calls.append(time_limit)
        return None if len(calls) == 1 else 0.0

    monkeypatch.setattr(vcg_module, "_remaining", no_time_after_the_welfare_solve)
    result = lo.solve(inst, "vcg", solver="ortools", pivots="resolve", time_limit=60)
    monkeypatch.undo()
    assert result.status == "time_limit"
    winners = [a for a, v in result.details["values"].items() if v > 0]
    assert winners and sorted(result.details["unproven"]) == sorted(winners)
    assert "lower bounds" in result.message
    assert result.details["statuses"]["time_limit"] == len(winners)
    # The fallback is the lower bound W* - (v - b) x*: each unproven winner pays its reserve.
    for a in winners:
        assert 0 <= result.payments[a] <= result.details["values"][a] + TOL
    generous = lo.solve(inst, "vcg", time_limit=60)
    assert generous.status == "optimal" and generous.details["unproven"] == []


def test_details_losers_and_bids_versus_utilities():
    inst = Instance(
        [Pool("g", count=2, base_price=0.1)],
        [Agent("x", demand=1), Agent("y", demand=1), Agent("z", demand=1)],
        [Edge("x", "g", 5.0, bid=0.9), Edge("y", "g", 7.0, bid=0.8), Edge("z", "g", 1.0, bid=0.3)],
    )
    result = lo.solve(inst, "vcg")
    # Two devices, three bidders: the two highest win and each pays the third bid.
    assert {r["agent"] for r in result.allocation} == {"x", "y"}
    assert result.payments == {"x": pytest.approx(0.3), "y": pytest.approx(0.3), "z": 0.0}
    assert result.details["welfare_without"]["z"] == result.details["welfare"]
    # `utilities` are U_i from the edges' utilities; `values` are the bids received.
    assert result.utilities == {"x": 5.0, "y": 7.0, "z": 0.0}
    assert result.details["values"] == {"x": 0.9, "y": 0.8, "z": 0.0}
    assert result.details["revenue"] == pytest.approx(0.6)
    assert result.details["reserve_value"] == 0.0 and result.details["skipped"] == 1
    assert result.details["operator_total"] == pytest.approx(0.6)


def test_multi_round_bids_and_utilities():
    """A bid holds in every round; without one, each round's utility is the value."""
    inst = Instance(
        [Pool("g", count=1, base_price=0.0)],
        [Agent("x", demand=1), Agent("y", demand=1)],
        [Edge("x", "g", (1.0, 3.0)), Edge("y", "g", (9.0, 9.0), bid=2.0)],
        rounds=2,
    )
    result = lo.solve(inst, "vcg")
    assert sorted((r["round"], r["agent"]) for r in result.allocation) == [(0, "y"), (1, "x")]
    assert result.objective == pytest.approx(5.0)
    assert result.payments == {"x": pytest.approx(2.0), "y": pytest.approx(1.0)}


def test_bad_pivots_option_and_registry():
    inst = _auction({"A": 1.0})
    with pytest.raises(InputError, match="pivots"):
        solve_vcg(inst, pivots="fast")
    spec = lo.METHODS["vcg"]
    assert spec.kind == "exact" and spec.fractional and spec.solvers == ("highs", "ortools")


def test_empty_and_no_winner_instances():
    inst = Instance([Pool("g", count=3, base_price=0.2)], [Agent("x")], [])
    for solver in ("highs", "ortools"):
        result = lo.solve(inst, "vcg", solver=solver)
        assert result.status == "optimal" and result.allocation == []
        assert result.objective == pytest.approx(0.6) and result.payments == {"x": 0.0}


# ----------------------------------------------------------------------------- the benchmark script


def test_benchmark_script_smoke(tmp_path):
    """``benchmarks/vcg_scaling.py`` runs, both pivot methods agree, and its files are written atomically."""
    import subprocess
    import sys

    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "vcg_scaling.py"), "--agents", "50", "--repeat", "1",
         "--min-time", "0", "--resolve-max", "50", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "pivots by exchange paths and by re-solving agree: yes" in run.stdout
    report = json.loads((out / "vcg_scaling.json").read_text())
    assert {(r["family"], r["solver"]) for r in report["rows"]} == {
        (f, s) for f in ("neocloud", "gavel") for s in ("highs", "ortools")
    }
    for row in report["rows"]:
        assert row["status"] == "optimal" and row["agree"] is True and row["ratio"] > 0
    assert sorted(p.name for p in out.iterdir()) == ["vcg_scaling.json", "vcg_scaling.md"]
