"""The built-in models re-declared with ``lo.Model`` (vcg's welfare, the fractional maxmin levels) and the API they use.

The references are the former internal declarations (a ``LinearModel`` with
``add_allocation``, the surplus objective; ``declare_leximin``), written out
here as they were, and the brute-force helpers of the VCG and maxmin tests.
The re-declared VCG model must be the same LP array for array; the
re-declared level LP must give the same leximin values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from brute_force_maxmin import maxmin_polytope, reference_waterfilling
from conftest import INSTANCES
from laissez_opt.declare import Model, capacity, demand, utility, value, welfare
from laissez_opt.errors import InputError
from laissez_opt.exact.common import add_allocation
from laissez_opt.exact.leximin import declare_leximin, solve_leximin
from laissez_opt.exact.maxmin import build_maxmin, normalizers, solve_maxmin
from laissez_opt.exact.vcg import build_vcg, vcg_reserves, vcg_values
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.modeling import LinearModel, solve_model
from test_maxmin import tiny_instances
from test_vcg import auctions, brute_vcg, check_against_brute

FILES = sorted(p for p in INSTANCES.glob("*.json"))


# ----------------------------------------------------------------------------- references
def internal_vcg(instance: Instance, fractional: bool = False) -> LinearModel:
    """``build_vcg`` as it was declared before ``lo.Model``."""
    model = LinearModel("vcg", sense="max")
    columns = add_allocation(model, instance, integral=not fractional)
    surplus = vcg_values(instance)[columns.edge, columns.round] - vcg_reserves(instance)[columns.pool]
    columns.block.upper[surplus <= 0] = 0.0
    reserves = vcg_reserves(instance)
    model.set_objective(columns.block, np.where(surplus > 0, surplus, 0.0),
                        offset=float(instance.rounds * np.dot(reserves, instance.counts.astype(float))))
    return model


def internal_levels(instance: Instance, normalizer: str):
    """The fractional ``build_maxmin`` as it was declared before ``lo.Model``."""
    E = normalizers(instance, normalizer)
    model = LinearModel("maxmin", sense="max")
    columns = add_allocation(model, instance, integral=False)
    u = instance.edge_utility[columns.edge, columns.round]
    scale = instance.weights[columns.agent] * E[columns.agent]
    coef = np.where(scale > 0, u / np.where(scale > 0, scale, 1.0), 0.0)
    rounds = instance.rounds
    plan = declare_leximin(model, columns.block, agent=columns.agent, coef=coef,
                           group=columns.agent * rounds + columns.round,
                           group_cap=np.repeat(instance.demands, rounds), fractional=True, n_agents=instance.n_agents)
    return model, plan


def same_lp(a: LinearModel, b: LinearModel) -> bool:
    pairs = [(a.objective, b.objective), *zip(a.bounds(), b.bounds()), *zip(a.row_bounds(), b.row_bounds()),
             *zip(a.csc_arrays(), b.csc_arrays())]
    return (a.sense == b.sense and a.objective_offset == b.objective_offset
            and all(x.shape == y.shape and np.array_equal(x, y) for x, y in pairs)
            and [b.integer for b in a.variables.values()] == [b.integer for b in b.variables.values()])


# ----------------------------------------------------------------------------- vcg
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize("fractional", [False, True])
def test_declared_vcg_is_the_former_lp_on_the_shipped_instances(path, fractional):
    inst = lo.load(path)
    declared, _ = build_vcg(inst, fractional=fractional)
    former = internal_vcg(inst, fractional)
    assert same_lp(declared, former)
    assert declared.transportation() is not None
    a, b = solve_model(declared, solver="highs"), solve_model(former, solver="highs")
    assert a.objective == b.objective and np.array_equal(a.values, b.values)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auctions(max_rounds=2))
def test_declared_vcg_is_the_former_lp_and_prices_like_brute_force(inst):
    declared, _ = build_vcg(inst)
    assert same_lp(declared, internal_vcg(inst))
    welfare_star, without = brute_vcg(inst)
    for solver in ("highs", "ortools"):
        check_against_brute(inst, lo.solve(inst, "vcg", solver=solver), welfare_star, without)


def test_vcg_pivots_by_paths_with_agents_without_a_demand_row():
    """Agents of unbounded demand have no ``demand`` row; the exchange graph still gives each its own node."""
    inst = Instance([Pool("P", count=2, base_price=0.1)],
                    [Agent("A"), Agent("B"), Agent("C", demand=1)],
                    [Edge("A", "P", 0.9), Edge("B", "P", 0.8), Edge("C", "P", 0.85)])
    model, _ = build_vcg(inst)
    assert model.constraints["demand"].size == 1
    auto, resolve = lo.solve(inst, "vcg"), lo.solve(inst, "vcg", pivots="resolve")
    assert auto.details["by_paths"] >= 1
    assert auto.payments == pytest.approx(resolve.payments, abs=1e-12)
    welfare_star, without = brute_vcg(inst)
    check_against_brute(inst, auto, welfare_star, without)


# ----------------------------------------------------------------------------- maxmin levels
def _values(model, plan):
    return solve_leximin(model, plan).agent_values / plan.unit


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize("normalizer", ["equal_share", "raw"])
def test_declared_levels_give_the_former_leximin_on_the_shipped_instances(path, normalizer):
    inst = lo.load(path)
    model, plan = build_maxmin(inst, fractional=True, normalizer=normalizer)
    former_model, former_plan = internal_levels(inst, normalizer)
    assert sorted(model.variables) == sorted(former_model.variables) == ["t", "x"]
    assert np.array_equal(plan.included, former_plan.included)
    assert np.array_equal(model.variables["x"].upper, former_model.variables["x"].upper)
    assert np.allclose(plan.coef, former_plan.coef, rtol=1e-15, atol=0)
    assert np.allclose(_values(model, plan), _values(former_model, former_plan), rtol=1e-9, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(inst=tiny_instances(), normalizer=st.sampled_from(["equal_share", "raw"]))
def test_declared_levels_agree_with_the_former_declaration_and_the_reference(inst, normalizer):
    model, plan = build_maxmin(inst, fractional=True, normalizer=normalizer)
    former_model, former_plan = internal_levels(inst, normalizer)
    assert np.array_equal(plan.included, former_plan.included)
    got = _values(model, plan)
    assert np.allclose(got, _values(former_model, former_plan), rtol=1e-9, atol=1e-12)
    reference = reference_waterfilling(maxmin_polytope(inst, normalizer))
    for i, agent in enumerate(a.id for a in inst.agents):
        assert math.isclose(got[i], reference[agent], rel_tol=1e-6, abs_tol=1e-7), agent


def test_declared_levels_rescale_tiny_values_like_the_engine():
    """Pools of millions of devices make equal-share values tiny: the level rows work in units of the largest."""
    inst = Instance([Pool("P", count=4_000_000), Pool("Q", count=2_000_000)],
                    [Agent("A"), Agent("B", weight=2.0), Agent("C", demand=3)],
                    [Edge("A", "P", 1.0), Edge("B", "P", 2.0), Edge("B", "Q", 1.0), Edge("C", "Q", 5.0)])
    model, plan = build_maxmin(inst, fractional=True)
    former_model, former_plan = internal_levels(inst, "equal_share")
    assert plan.unit != 1.0 and plan.unit == pytest.approx(former_plan.unit, rel=1e-12)
    assert np.max(np.abs(model.constraints["level"].coefs)) == pytest.approx(1.0)
    assert np.allclose(_values(model, plan), _values(former_model, former_plan), rtol=1e-9)
    result = lo.solve(inst, "maxmin", fractional=True, compress="off")
    assert result.status == "optimal" and result.verified


def test_declared_levels_nobody_takes_part():
    inst = Instance([Pool("P")], [Agent("A"), Agent("B", demand=0)], [Edge("A", "P", 0.0), Edge("B", "P", 1.0)])
    model, plan = build_maxmin(inst, fractional=True)
    assert model.constraints["level"].size == 0 and model.variables["t"].upper.tolist() == [0.0]
    result = solve_maxmin(inst, fractional=True, compress="off")
    assert result.status == "optimal" and result.objective == 0.0


@pytest.mark.parametrize("solver,freeze", [("highs", "dual"), ("highs", "probe"), ("ortools", "dual")])
def test_declared_levels_on_every_route_and_with_compression(solver, freeze):
    inst = lo.generate("gavel", 60, 3, seed=2, max_count=60)
    off = lo.solve(inst, "maxmin", fractional=True, compress="off", solver=solver, freeze=freeze)
    on = lo.solve(inst, "maxmin", fractional=True, compress="on", solver=solver, freeze=freeze)
    assert "compression" in on.details and "compression" not in off.details
    assert off.status == on.status == "optimal" and off.verified and on.verified
    for agent, v in off.details["leximin"].items():
        assert on.details["leximin"][agent] == pytest.approx(v, rel=1e-6, abs=1e-9)
    model, plan = internal_levels(inst, "equal_share")
    former = _values(model, plan)
    got = np.array([off.details["leximin"][a.id] for a in inst.agents])
    assert np.allclose(got, former, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------------------- value(x, table)
@pytest.fixture
def two_rounds():
    return Instance([Pool("A10", count=2), Pool("L4")], [Agent("A", demand=2), Agent("B")],
                    [Edge("A", "A10", (1.0, 2.0)), Edge("A", "L4", 0.5), Edge("B", "A10", 3.0)], rounds=2)


def test_value_takes_arrays_and_dicts(two_rounds):
    m = Model(two_rounds)
    x = m.x
    point = np.arange(1.0, 7.0)  # (A,A10,0..1), (A,L4,0..1), (B,A10,0..1)
    table = np.array([[1.0, 2.0], [0.5, 0.5], [3.0, 3.0]])
    assert value(x, table).value(point) == pytest.approx(float(table.reshape(-1) @ point))
    assert value(x, [1.0, 0.5, 3.0]).value(point) == pytest.approx(float(np.repeat([1.0, 0.5, 3.0], 2) @ point))
    assert value(x, table.reshape(-1)).value(point) == pytest.approx(float(table.reshape(-1) @ point))
    keyed = value(x, {("A", "L4"): 2.0, ("B", "A10", 1): 10.0})
    assert keyed.value(point) == pytest.approx(2.0 * 3 + 2.0 * 4 + 10.0 * 6)
    per_agent = value(x, table, by="agent").value(point)
    assert per_agent.tolist() == pytest.approx([1 + 4 + 1.5 + 2, 15 + 18])
    # On a selection: only the entries of that selection count.
    assert value(x.select(round=1), table).value(point) == pytest.approx(2 * 2 + 0.5 * 4 + 3 * 6)
    # utility(x) is value(x, u, by="agent").
    assert np.allclose(value(x, two_rounds.edge_utility, by="agent").value(point), utility(x).value(point))


@pytest.mark.parametrize("table,message", [
    (np.ones((3, 3)), "dimension mismatch: the table needs one value per edge and round, shape (3, 2)"),
    (np.array([[1.0, np.nan], [0, 0], [0, 0]]), "the table holds nan at edge ('A', 'A10'), round 1"),
    (np.array([[1.0, 1.0], [np.inf, 0], [0, 0]]), "the table holds inf at edge ('A', 'L4'), round 0"),
    ({("A", "A11"): 1.0}, "unknown pool 'A11' (did you mean 'A10'?)"),
    ({("Z", "A10"): 1.0}, "unknown agent 'Z'"),
    ({("B", "L4"): 1.0}, "agent 'B' has no edge to pool 'L4' in the instance"),
    ({("A", "L4", 5): 1.0}, "key ('A', 'L4', 5)"),
    ({("A", "L4"): float("nan")}, "not a finite number"),
    ({"A": 1.0}, "use (agent id, pool id) for every round or (agent id, pool id, round)"),
    (2.0, "not one number"),
])
def test_value_errors_name_the_problem(two_rounds, table, message):
    m = Model(two_rounds)
    with pytest.raises(InputError) as info:
        m.maximize(value(m.x, table))
    assert message in str(info.value)
    assert "objective" in str(info.value)


def test_value_needs_the_allocation(two_rounds):
    m = Model(two_rounds)
    with pytest.raises(InputError, match="indexed by agent, pool and round"):
        m.add(value(m.x.sum(by="agent"), [1.0, 1.0, 1.0]) <= 1, name="v")


def test_value_solves_on_every_route_with_the_same_objective():
    inst = lo.load(INSTANCES / "hotos25-table1.json")
    table = np.where(inst.edge_utility > 0.5, inst.edge_utility - 0.5, 0.0)
    objectives = []
    for solver, via in (("highs", "direct"), ("ortools", "direct"), ("highs", "pyomo")):
        m = Model(inst)
        m.add(demand(m.x))
        m.add(capacity(m.x))
        m.maximize(value(m.x, table) + 1.0)
        result = m.solve(solver=solver, via=via)
        assert result.status == "optimal" and result.verified
        objectives.append(result.objective)
    assert objectives == pytest.approx([objectives[0]] * 3, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(inst=tiny_instances(), data=st.data())
def test_value_of_an_allocation_is_the_table_sum(inst, data):
    m = Model(inst, integral=False)
    size = inst.n_edges * inst.rounds
    table = np.array(data.draw(st.lists(st.integers(-20, 20), min_size=size, max_size=size)), float) / 4
    point = np.array(data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)), float)
    assert value(m.x, table).value(point) == pytest.approx(float(table @ point), abs=1e-12)
    by_agent = np.bincount(np.repeat(inst.edge_agent, inst.rounds), weights=table * point, minlength=inst.n_agents)
    assert np.allclose(value(m.x, table, by="agent").value(point), by_agent)


# ----------------------------------------------------------------------------- Model.bound
def test_bound_tightens_without_rows_and_keeps_the_transportation_structure(two_rounds):
    m = Model(two_rounds, integral=False)
    m.add(demand(m.x))
    m.add(capacity(m.x))
    m.bound(m.x.select(pool="A10"), upper=[1.0, 0.0, 5.0, 0.5])
    m.bound(m.x, lower=0.0, upper=np.inf)  # no change: bounds only tighten
    assert m.variables["x"].upper.tolist() == [1.0, 0.0, 1.0, 1.0, 2.0, 0.5]
    m.maximize(welfare(m.x))
    model = m.lower()
    assert sorted(model.constraints) == ["capacity", "demand"] and model.transportation() is not None
    result = m.solve()
    assert result.verified
    amounts = result.amounts
    assert amounts[0, 1] == 0.0 and amounts[2, 1] <= 0.5 + 1e-9


def test_bound_on_an_auxiliary_variable(two_rounds):
    m = Model(two_rounds, integral=False)
    t = m.variable("t", "agent", upper=10.0)
    m.bound(t.select(agent="B"), lower=2.0, upper=3.0)
    assert m.variables["t"].lower.tolist() == [0.0, 2.0] and m.variables["t"].upper.tolist() == [10.0, 3.0]


@pytest.mark.parametrize("make,message", [
    (lambda m: m.bound(2 * m.x, upper=1), "is not a selection of variables"),
    (lambda m: m.bound(m.x.sum(), upper=1), "is not a selection of variables"),
    (lambda m: m.bound(m.x + 1, upper=1), "is not a selection of variables"),
    (lambda m: m.bound(m.x, upper=[1.0, 2.0]), "upper needs a number or 6 values"),
    (lambda m: m.bound(m.x, lower=float("nan")), "lower holds NaN"),
    (lambda m: m.bound(m.x.select(agent="A"), lower=3.0), "entry A, A10, round 0 of 'x': lower bound 3 would exceed upper bound 2"),
    (lambda m: m.bound(m.x.select(pool="H100"), upper=0), "unknown pool 'H100'"),
    (lambda m: m.bound([1, 2], upper=0), "expected variables of the model"),
    (lambda m: m.bound(Model(m.instance).x, upper=0), "another model"),
])
def test_bound_errors_are_in_the_users_terms(two_rounds, make, message):
    m = Model(two_rounds)
    with pytest.raises(InputError) as info:
        make(m)
    assert message in str(info.value)


def test_adding_a_number_shares_the_coefficient_arrays(two_rounds):
    x = Model(two_rounds).x
    e = value(x, two_rounds.edge_utility)
    shifted = e + 2.5
    assert shifted.cols is e.cols and shifted.coefs is e.coefs
    assert shifted.value(np.ones(6)) == pytest.approx(e.value(np.ones(6)) + 2.5)
    assert (x - 1).const.tolist() == [-1.0] * 6 and (x - 1).cols is x.cols
    assert (2 - x.sum()).value(np.ones(6)) == pytest.approx(-4.0)


def test_value_is_exported_at_the_top():
    assert lo.value is value and "value" in dir(lo)


@pytest.mark.parametrize("method,options", [("vcg", {}), ("vcg", {"pivots": "resolve"}), ("maxmin", {"fractional": True})])
def test_declared_builtins_run_through_pyomo(method, options):
    inst = lo.load(INSTANCES / "hotos25-table1.json")
    direct = lo.solve(inst, method, **options)
    pyomo = lo.solve(inst, method, via="pyomo", **options)
    assert direct.status == pyomo.status == "optimal" and pyomo.verified
    assert pyomo.objective == pytest.approx(direct.objective, abs=1e-7)
