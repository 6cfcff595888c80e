"""Minimum-cost placement of required agents: R4, brute force, infeasibility, missing costs."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.exact.min_cost import build_min_cost, placement_obstacles
from laissez_opt.instance import Agent, Edge, Instance, Pool

from brute_force import best_min_cost
from conftest import small_instances

SOLVERS = ["auto", "highs", "ortools"]  # auto: min-cost flow when every size is 1 and one row per pool


def placements(result) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rec in result.allocation:
        out.setdefault(rec["agent"], set()).add(rec["pool"])
    return out


# ----------------------------------------------------------------------------- R4


@pytest.mark.parametrize("solver", SOLVERS)
def test_r4_places_a_on_a10_and_b_on_l4(r4, solver):
    result = lo.solve(r4, "min_cost", solver=solver)
    assert result.status == "optimal" and result.verified and result.gap == 0.0
    assert placements(result) == {"A": {"A10"}, "B": {"L4"}}
    assert result.objective == pytest.approx(0.21 + 0.15, abs=1e-12)
    assert best_min_cost(r4) == (pytest.approx(0.36), {"A": "A10", "B": "L4"})


def test_r4_via_pyomo(r4):
    result = lo.solve(r4, "min_cost", via="pyomo")
    assert placements(result) == {"A": {"A10"}, "B": {"L4"}}


# ----------------------------------------------------------------------------- brute force


def _compare(inst):
    expected, _ = best_min_cost(inst)
    for solver in SOLVERS:
        result = lo.solve(inst, "min_cost", solver=solver, check=False)
        if expected is None:
            assert result.status == "infeasible", (solver, result)
            assert result.allocation == [] and result.message
            assert any(f"'{a.id}'" in result.message for a in inst.agents if a.required)
            continue
        assert result.status == "optimal", (solver, result.status, result.message)
        outcome = verify(inst, result)
        violations = outcome.violations
        if result.route == "ortools-cp-sat":
            # Known bug, reported and pinned by test_cp_sat_bound_with_a_forced_placement:
            # CP-SAT's bound can be wrong; everything else must hold.
            violations = [v for v in violations if not v.startswith("labelled optimal with a gap")]
        assert not violations, violations
        assert math.isclose(result.objective, expected, rel_tol=1e-9, abs_tol=1e-9), (solver, result.objective, expected)
        # every required agent on exactly one pool, with its size in every round of its stay
        placed = placements(result)
        for agent in inst.agents:
            assert (len(placed.get(agent.id, ())) == 1) == agent.required


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_agents=4, max_pools=3, max_count=3, demands=(None, 1, 2), with_costs=True, required=True, windows=False))
def test_min_cost_matches_brute_force(inst):
    _compare(inst)


def test_disjoint_stays_share_a_device():
    inst = Instance(
        [Pool("p", count=1)],
        [Agent("x", demand=1, required=True, arrival=0, deadline=0), Agent("y", demand=1, required=True, arrival=1)],
        [Edge("x", "p", 1.0, cost=1.0), Edge("y", "p", 1.0, cost=2.0)],
        rounds=2,
    )
    assert best_min_cost(inst) == (3.0, {"x": "p", "y": "p"})
    _compare(inst)


def test_cp_sat_bound_with_a_forced_placement():
    inst = Instance(
        [Pool("p0"), Pool("p1"), Pool("p2")],
        [Agent("a0", required=True), Agent("a1", required=True)],
        [Edge("a0", "p0", 0.0, cost=0.01), Edge("a1", "p1", 0.0, cost=0.07), Edge("a1", "p2", 0.0, cost=0.0)],
    )
    assert best_min_cost(inst)[0] == 0.01
    result = lo.solve(inst, "min_cost", solver="ortools")  # verification rejects the gap
    assert result.objective == 0.01 and result.gap == 0.0


def test_not_required_agents_are_not_placed():
    inst = Instance(
        [Pool("p", count=2)],
        [Agent("x", required=True), Agent("y")],
        [Edge("x", "p", 1.0, cost=1.0), Edge("y", "p", 1.0, cost=0.0)],
    )
    result = lo.solve(inst, "min_cost")
    assert placements(result) == {"x": {"p"}}
    assert result.objective == 1.0


def test_size_is_the_demand_and_holds_every_round():
    inst = Instance(
        [Pool("small", count=1), Pool("big", count=3)],
        [Agent("x", demand=2, required=True, arrival=1)],
        [Edge("x", "small", 1.0, cost=0.1), Edge("x", "big", 1.0, cost=5.0)],
        rounds=3,
    )
    for solver in SOLVERS:
        result = lo.solve(inst, "min_cost", solver=solver)
        assert sorted((r["pool"], r["round"], r["amount"]) for r in result.allocation) == [
            ("big", 1, 2.0),
            ("big", 2, 2.0),
        ]


def test_generalised_assignment_needs_the_solver():
    # Sizes 2 and 2, pools of 3 and 1: the component check passes (4 <= 4), no placement fits.
    inst = Instance(
        [Pool("p", count=3), Pool("q", count=1)],
        [Agent("x", demand=2, required=True), Agent("y", demand=2, required=True)],
        [Edge(a, c, 1.0, cost=1.0) for a in "xy" for c in "pq"],
    )
    assert placement_obstacles(inst) == []
    assert best_min_cost(inst) == (None, None)
    _compare(inst)


# ----------------------------------------------------------------------------- infeasibility


@pytest.mark.parametrize(
    "agents,edges,pools,named",
    [
        # two agents, one device
        ([Agent("x", required=True), Agent("y", required=True)], [("x", "p"), ("y", "p")], [Pool("p")], ["x", "y"]),
        # an agent with no compatible pool
        ([Agent("x", required=True), Agent("lonely", required=True)], [("x", "p")], [Pool("p")], ["lonely"]),
        # an agent larger than every compatible pool
        ([Agent("big", demand=3, required=True)], [("big", "p"), ("big", "q")], [Pool("p", count=2), Pool("q", count=1)], ["big"]),
        # a required agent that can use no device at all
        ([Agent("zero", demand=0, required=True)], [("zero", "p")], [Pool("p")], ["zero"]),
    ],
    ids=["crowded", "no-pool", "too-big", "demand-zero"],
)
@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible_reason_names_the_agents(agents, edges, pools, named, solver):
    inst = Instance(pools, agents, [Edge(a, p, 1.0, cost=1.0) for a, p in edges])
    result = lo.solve(inst, "min_cost", solver=solver)
    assert result.status == "infeasible"
    assert result.allocation == [] and result.objective is None
    for name in named:
        assert f"'{name}'" in result.message, result.message
    with pytest.raises(lo.InfeasibleError) as info:
        lo.solve(inst, "min_cost", solver=solver, raise_infeasible=True)
    assert info.value.result.status == "infeasible"
    assert all(f"'{name}'" in str(info.value) for name in named)


# ----------------------------------------------------------------------------- missing cost


def test_missing_cost_on_a_required_agent_is_an_input_error(tmp_path):
    path = tmp_path / "nocost.json"
    path.write_text(
        '{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "p"}, {"id": "q"}],'
        ' "agents": [{"id": "x", "required": true}, {"id": "y"}],'
        ' "edges": [{"agent": "y", "pool": "p", "utility": 1},'
        ' {"agent": "x", "pool": "p", "utility": 1, "cost": 2},'
        ' {"agent": "x", "pool": "q", "utility": 1}]}'
    )
    inst = lo.load(path)
    with pytest.raises(InputError) as info:
        lo.solve(inst, "min_cost")
    text = str(info.value)
    assert info.value.path == "$.edges[2].cost"
    assert text.startswith(f"{path}: $.edges[2].cost: ") and "'x'" in text
    with pytest.raises(InputError):
        build_min_cost(inst)


def test_missing_cost_on_an_optional_agent_is_fine():
    inst = Instance(
        [Pool("p")], [Agent("x", required=True), Agent("y")],
        [Edge("x", "p", 1.0, cost=2.0), Edge("y", "p", 1.0)],
    )
    assert lo.solve(inst, "min_cost").objective == 2.0


def test_missing_cost_via_cli_is_exit_2(tmp_path):
    from click.testing import CliRunner

    from laissez_opt.cli.main import cli

    path = tmp_path / "nocost.json"
    path.write_text(
        '{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "p"}],'
        ' "agents": [{"id": "x", "required": true}], "edges": [{"agent": "x", "pool": "p", "utility": 1}]}'
    )
    result = CliRunner().invoke(cli, ["solve", str(path), "--method", "min_cost"])
    assert result.exit_code == 2
    assert f"{path}: $.edges[0].cost:" in result.stderr
