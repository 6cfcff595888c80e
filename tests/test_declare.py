"""The public modelling API (``lo.Model``, ``laissez_opt.declare``): expressions, families, routes, checks, errors.

Reference values come from plain Python over the instance's records (the
enumerator of ``brute_force.py``, loops over ``instance.edges``) or from the
library's independent code (the envy matrix of ``analysis.fairness``, the
``maxmin`` method), never from the expressions under test.
"""

from __future__ import annotations

import math
import pickle
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from brute_force import all_allocations
from conftest import short_decimals, small_instances
from laissez_opt.declare import (
    Model, budget, capacity, check_declaration, cost, demand, envy_free, maximize, maxmin_floor, migration_cost,
    minimize, share, sharing_incentive, utility, welfare,
)
from laissez_opt.errors import InfeasibleError, InputError, VerificationError
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.modeling import LinearModel, Solution

ROUTES = (dict(), dict(solver="ortools"), dict(via="pyomo"))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


@pytest.fixture()
def three():
    """3 agents (one without edges), 2 pools in two clusters, 2 rounds."""
    return Instance(
        [Pool("P", count=2, cluster="gpu", base_price=1.0), Pool("Q", count=1, cluster="tpu", base_price=3.0)],
        [Agent("A", demand=2), Agent("B", weight=2.0), Agent("C")],
        [Edge("A", "P", (1.0, 2.0)), Edge("A", "Q", 4.0), Edge("B", "P", 3.0)],
        rounds=2,
    )


def hand_sum(instance, values, keep):
    """``sum x[i,c,r]`` over the entries (agent, pool, round) where ``keep`` holds, by loops over the edges."""
    total = 0.0
    for e, edge in enumerate(instance.edges):
        for r in range(instance.rounds):
            if keep(edge.agent, edge.pool, r):
                total += values[e * instance.rounds + r]
    return total


# ------------------------------------------------------------------ expressions
def test_selections_and_sums_follow_the_labels(three):
    m = Model(three)
    x = m.x
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # edge-major: (A,P,0) (A,P,1) (A,Q,0) (A,Q,1) (B,P,0) (B,P,1)
    assert x.dims == ("agent", "pool", "round") and x.size == 6
    on_p = x[:, "P", :]
    assert on_p.dims == ("agent", "round") and on_p.size == 4
    assert sorted(on_p.labels()) == [("A", 0), ("A", 1), ("B", 0), ("B", 1)]
    assert x["A", :, 0].dims == ("pool",) and x["A", :, 0].value(v).tolist() == [1.0, 3.0]
    assert x.sum(pool="P").value(v) == hand_sum(three, v, lambda a, p, r: p == "P")
    assert x.sum(cluster="tpu").value(v) == hand_sum(three, v, lambda a, p, r: p == "Q")
    per_agent = x.sum(by="agent")
    assert per_agent.size == 3  # C has no edge: a sum over nothing is 0
    assert per_agent.value(v).tolist() == [hand_sum(three, v, lambda a, p, r, i=i: a == i) for i in "ABC"]
    by_pool_round = x.sum(by=("pool", "round")).value(v)
    assert by_pool_round.tolist() == [hand_sum(three, v, lambda a, p, r, c=c, t=t: (p, r) == (c, t))
                                      for c in "PQ" for t in (0, 1)]
    assert x.sum(by="cluster").value(v).tolist() == [hand_sum(three, v, lambda a, p, r, c=c: p == c) for c in "PQ"]
    assert x.select(round=1, agent="A").sum().value(v) == 2.0 + 4.0
    assert x.sum(by="agent", agent=["A", "B"]).size == 2  # a selection restricts the grouped labels


def test_entries_align_by_label(three):
    m = Model(three)
    x = m.x
    v = np.arange(1.0, 7.0)
    on_p, on_q = x[:, "P", :], x[:, "Q", :]  # both by (agent, round), different entries
    both = on_p + on_q
    expected = {(a, r): hand_sum(three, v, lambda aa, p, rr, a=a, r=r: (aa, rr) == (a, r)) for a in "AB" for r in (0, 1)}
    got = dict(zip(both.labels(), both.value(v).tolist()))
    assert got == expected
    t = m.variable("t")
    w = np.append(v, 10.0)  # x, then t
    shifted = x.sum(by="agent") - t  # a single variable spreads over every entry
    assert shifted.value(w).tolist() == [a - 10.0 for a in x.sum(by="agent").value(w)]
    assert (2 * x.sum() - x.sum() / 2 + 1).value(w) == 1.5 * v.sum() + 1
    scaled = x.scale(pool={"Q": 3.0}, agent=np.array([1.0, 2.0, 0.0]))
    assert scaled.value(w).tolist() == [0.0, 0.0, 9.0, 12.0, 0.0, 0.0]
    data = x.sum(by="agent") * 0 + 2  # an expression of constants multiplies entry by entry
    assert (x.sum(by="agent") * data).value(w).tolist() == (2 * x.sum(by="agent").value(w)).tolist()


def test_rows_take_numbers_dicts_arrays_and_expressions(three):
    m = Model(three)
    x = m.x
    per = x.sum(by=("agent", "round"))
    c = m.add(per <= {("A", 1): 1, ("B", 0): 2}, name="some")
    assert c.upper.reshape(3, 2).tolist() == [[np.inf, 1.0], [2.0, np.inf], [np.inf, np.inf]]
    c = m.add(per <= np.array([[1, 2], [3, 4], [5, 6]]), name="array")
    assert c.upper.tolist() == [1, 2, 3, 4, 5, 6]
    c = m.add(x.sum(by="agent") >= x.sum(by="agent", agent="A") * 0 + 1, name="expr")
    assert c.lower.tolist() == [0.0, -np.inf, -np.inf] or c.lower.tolist()[0] == 0.0
    c = m.add(x[:, "P", :] == 1, name="eq")
    assert np.array_equal(c.lower, c.upper)


@pytest.mark.parametrize("build, message", [
    (lambda m: m.x.sum(pool="A11") <= 1, "unknown pool 'A11'"),
    (lambda m: m.x.sum(pool="p") <= 1, "(did you mean 'P'?)"),
    (lambda m: m.x[:, :, 7] <= 1, "round 7 is outside the horizon 0 .. 1"),
    (lambda m: m.x.sum(by="colour") <= 1, "unknown dimension 'colour'"),
    (lambda m: utility(m.x).sum(by="pool") <= 1, "utility(x) has no pool dimension"),
    (lambda m: m.x * m.x <= 1, "x * x is not linear"),
    (lambda m: m.x / m.x.sum() <= 1, "divides by an expression of variables"),
    (lambda m: m.x ** 2 <= 1, "powers of variables are not allowed"),
    (lambda m: m.x.sum(by="agent") + m.x.sum(by="pool") <= 1, "dimension mismatch"),
    (lambda m: m.x.sum(by="agent") <= [1, 2], "needs shape (3,)"),
    (lambda m: m.x.sum(by="agent") <= {"Z": 1}, "unknown agent 'Z'"),
    (lambda m: m.x * np.ones(4) <= 1, "the array has shape (4,)"),
    (lambda m: m.x.sum() <= float("nan"), "NaN"),
    (lambda m: m.x[:, "P"] <= 1, "indexed by 3 dimension(s)"),
])
def test_mistakes_name_the_constraint(three, build, message):
    m = Model(three)
    with pytest.raises(InputError) as info:
        m.add(build(m), name="my_rule")
    text = str(info.value)
    assert text.startswith("constraint 'my_rule': ") and message in text, text
    assert not re.search(r"column \d|index \d", text)  # never an internal index


def test_more_mistakes(three):
    m, other = Model(three), Model(three)
    with pytest.raises(InputError, match="another model"):
        m.add(other.x.sum() <= 1, name="foreign")
    with pytest.raises(InputError, match="a comparison of plain numbers"):
        m.add(1 <= 2, name="bool")
    with pytest.raises(TypeError, match="chained comparison"):
        0 <= m.x.sum() <= 1
    with pytest.raises(TypeError, match="strict"):
        m.x.sum() < 1
    with pytest.raises(InputError, match="identifier"):
        m.add(m.x.sum() <= 1, name="two words")
    m.add(m.x.sum() <= 1, name="once")
    with pytest.raises(InputError, match="already has a constraint named 'once'"):
        m.add(m.x.sum() <= 1, name="once")
    with pytest.raises(InputError, match="already has a variable named 'x'"):
        m.variable("x")
    with pytest.raises(InputError, match="reserved"):
        m.add(m.x.sum() <= 1, name="dual")
    with pytest.raises(InputError, match="objective: an objective is one number"):
        m.maximize(utility(m.x))
    with pytest.raises(InputError, match="lower bound 2 exceeds upper bound 1"):
        m.variable("bad", lower=2, upper=1)
    with pytest.raises(InputError, match="give a number, not a mapping"):
        m.add(m.x.sum() == {}, name="empty")
    with pytest.raises(InputError, match="lower bound 3 above its upper bound 1"):
        m.add(lo.declare.Constraint(m.x.sum(), np.array([3.0]), np.array([1.0])), name="crossed")
    assert m.remove("once").name == "once" and "once" not in m.constraints


# ------------------------------------------------------------------ families
def test_families_against_plain_loops(three):
    m = Model(three, integral=False)
    x = m.x
    v = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    u = {(e.agent, e.pool): e for e in three.edges}
    hand_utility = {a: sum(u[(a, p)].utility_in(r) * v[k * 2 + r] for k, (aa, p) in enumerate(u) if aa == a for r in (0, 1))
                    for a in "ABC"}
    assert utility(x).value(v).tolist() == [hand_utility[a] for a in "ABC"]
    assert welfare(x).value(v) == sum(ag.weight * hand_utility[ag.id] for ag in three.agents)
    assert welfare(x, {"A": 1.0}).value(v) == hand_utility["A"]
    assert cost(x).value(v) == 1.0 * 4 + 3.0 * 1  # P: 4 device-rounds at 1, Q: 1 at 3
    assert cost(x, by="agent").value(v).tolist() == [1.0 * 2 + 3.0, 2.0, 0.0]
    assert share(x, "A").value(v) == 3.0 / (2 * 3)
    assert share(x, "B", pool="P").value(v) == 2.0 / (2 * 2)
    caps = capacity(x)
    assert caps.expr.value(v).tolist() == [2.0, 2.0, 1.0, 0.0] and caps.upper.tolist() == [2.0, 2.0, 1.0, 1.0]
    needs = demand(x)
    assert needs.size == 2 and needs.expr.value(v).tolist() == [2.0, 1.0]  # only A has a finite demand
    money = budget(x, {"B": 1.5})
    assert money.size == 1 and money.upper.tolist() == [1.5] and money.expr.value(v).tolist() == [2.0]
    si = sharing_incentive(x, alpha=0.5)
    total_weight = 4.0
    ex = {"A": 1 / total_weight * (2 * (1 + 2) + 1 * 4 * 2), "B": 2 / total_weight * 2 * 3 * 2}
    assert si.lower.tolist() == [0.5 * ex["A"], 0.5 * ex["B"]]  # C's equal share is worth nothing: no row


def test_capped_sharing_incentive_is_always_feasible_when_time_shared():
    from laissez_opt.shares import capped_share_ratios, equal_share_utilities

    inst = lo.load("instances/hotos25-table1.json")  # demand 1 each: the plain equal share is out of reach
    m = Model(inst, integral=False)
    m.add(capacity(m.x)), m.add(demand(m.x)), m.add(sharing_incentive(m.x, capped=True))
    m.maximize(welfare(m.x))
    result = m.solve()
    assert result.status == "optimal"
    for agent, floor in zip(inst.agents, capped_share_ratios(inst) * equal_share_utilities(inst)):
        assert result.utilities[agent.id] >= floor - 1e-9
    plain = Model(inst, integral=False)
    plain.add(capacity(plain.x)), plain.add(demand(plain.x)), plain.add(sharing_incentive(plain.x))
    assert plain.solve().status == "infeasible"


def test_envy_rows_match_the_envy_matrix():
    from laissez_opt.analysis.fairness import envy_matrix

    inst = Instance([Pool("P", count=2), Pool("Q")], [Agent("A"), Agent("B", weight=2.0), Agent("C", weight=0.5)],
                    [Edge("A", "P", 1.0), Edge("A", "Q", 3.0), Edge("B", "P", 2.0), Edge("C", "Q", 5.0), Edge("C", "P", 0.5)],
                    rounds=2)
    m = Model(inst, integral=False)
    rows = envy_free(m.x, eps=0.25)
    rng = np.random.default_rng(3)
    amounts = rng.uniform(0, 1, size=(inst.n_edges, inst.rounds))
    matrix = envy_matrix(inst, amounts)
    w = inst.weights
    activity = rows.expr.value(amounts.reshape(-1))
    for k, (i, j) in enumerate(zip(*rows.expr.index.codes)):
        assert close(activity[k], matrix[i, i] - (w[i] / w[j]) * matrix[i, j], 1e-12)
    assert rows.lower.tolist() == [-0.25] * 6


def test_maxmin_floor_is_the_first_leximin_level():
    inst = lo.load("instances/uniform-small.json")
    m = Model(inst, integral=False)
    t = m.variable("t", upper=1e6)
    m.add(capacity(m.x)), m.add(demand(m.x)), m.add(maxmin_floor(m.x, t))
    m.maximize(t)
    floor = m.solve().objective
    assert close(floor, lo.solve(inst, "maxmin", fractional=True).objective)


def test_migration_cost_counts_new_devices_after_arrival():
    inst = Instance([Pool("P", count=2), Pool("Q", count=2)], [Agent("A", migration_cost=0.5, arrival=1)],
                    [Edge("A", "P", 1.0), Edge("A", "Q", 1.0)], rounds=4)
    m = Model(inst)
    moved_cost = migration_cost(m.x)
    assert migration_cost(m.x).nnz == moved_cost.nnz  # the second call reuses the variables
    m.add(capacity(m.x)), m.add(demand(m.x))
    m.add(m.x.sum(by="round", round=[1, 2, 3]) >= 2, name="busy")
    m.add(m.x["A", "Q", 1] <= 0, name="q_shut_in_round_1")
    m.add(m.x["A", "Q", 2] >= 1, name="visit_q")
    m.minimize(moved_cost.sum())
    result = m.solve()
    # Round 1 runs on P only and round 2 needs Q: one device starts on Q in round 2 (its arrival round 1 is free).
    assert close(result.objective, 0.5 * 1)
    schedule = result.amounts  # (edge, round)
    moved = sum(max(0.0, schedule[e, r] - schedule[e, r - 1]) for e in range(2) for r in (2, 3))
    assert close(0.5 * moved, result.objective)


# ----------------------------------------------------------- solving, every route
SPEC = st.lists(st.one_of(
    st.tuples(st.just("pool_total"), st.integers(0, 2), st.integers(0, 3)),
    st.tuples(st.just("agent_floor"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("per_agent_round"), st.integers(0, 2)),
    st.tuples(st.just("utility_floor"), st.integers(0, 2), short_decimals),
), max_size=3)


def declare_spec(inst, spec, sense, integral=True):
    m = Model(inst, integral=integral)
    x = m.x
    m.add(capacity(x))
    m.add(demand(x))
    agents, pools = [a.id for a in inst.agents], [p.id for p in inst.pools]
    for k, item in enumerate(spec):
        kind = item[0]
        if kind == "pool_total":
            m.add(x.sum(pool=pools[item[1] % len(pools)]) <= item[2], name=f"r{k}")
        elif kind == "agent_floor":
            m.add(x.sum(agent=agents[item[1] % len(agents)]) >= item[2], name=f"r{k}")
        elif kind == "per_agent_round":
            m.add(x.sum(by=("agent", "round")) <= item[1], name=f"r{k}")
        else:
            m.add(utility(x)[agents[item[1] % len(agents)]] >= item[2], name=f"r{k}")
    if sense == "max":
        m.maximize(welfare(x))
    else:
        m.minimize(x.sum())
    return m


def spec_holds(inst, spec, allocation):
    """The spec's rows on ``{(edge, round): amount}``, evaluated with loops over the records."""
    agents, pools = [a.id for a in inst.agents], [p.id for p in inst.pools]
    for item in spec:
        kind = item[0]
        held = {}
        for (k, r), amount in allocation.items():
            edge = inst.edges[k]
            held[(edge.agent, edge.pool, r)] = amount
        if kind == "pool_total" and sum(a for (i, c, r), a in held.items() if c == pools[item[1] % len(pools)]) > item[2]:
            return False
        if kind == "agent_floor" and sum(a for (i, c, r), a in held.items() if i == agents[item[1] % len(agents)]) < item[2]:
            return False
        if kind == "per_agent_round":
            for i in agents:
                for r in range(inst.rounds):
                    if sum(a for (ii, c, rr), a in held.items() if (ii, rr) == (i, r)) > item[1]:
                        return False
        if kind == "utility_floor":
            who = agents[item[1] % len(agents)]
            value = sum(e.utility_in(r) * allocation.get((k, r), 0) for k, e in enumerate(inst.edges) if e.agent == who
                        for r in range(inst.rounds))
            if value < item[2] - 1e-9:
                return False
    return True


def brute(inst, spec, sense):
    weights = {a.id: a.weight for a in inst.agents}
    best = None
    for allocation in all_allocations(inst):
        if not spec_holds(inst, spec, allocation):
            continue
        if sense == "max":
            value = math.fsum(weights[inst.edges[k].agent] * inst.edges[k].utility_in(r) * a for (k, r), a in allocation.items())
            better = best is None or value > best
        else:
            value = float(sum(allocation.values()))
            better = best is None or value < best
        if better:
            best = value
    return best


@settings(max_examples=30, **SETTINGS)
@given(small_instances(utilities=short_decimals, max_agents=3, max_pools=2, max_rounds=2), SPEC,
       st.sampled_from(["max", "min"]))
def test_random_user_models_agree_on_every_route_and_with_brute_force(inst, spec, sense):
    assume(inst.n_edges * inst.rounds <= 8)
    expected = brute(inst, spec, sense)
    for route in ROUTES:
        result = declare_spec(inst, spec, sense).solve(**route)
        if expected is None:
            assert result.status == "infeasible", (route, result.objective)
            assert result.details["conflict"], route
        else:
            # CP-SAT scales inexact objective coefficients and calls an optimum of 0 with a rounding bound
            # "feasible" (its relative gap is undefined); it must still be proven to within that bound.
            proven = result.status == "optimal" or (
                result.status == "feasible" and close(result.bound, result.objective, 1e-7))
            assert proven and result.verified, (route, result.status, result.bound)
            assert close(result.objective, expected), (route, result.objective, expected)


@settings(max_examples=20, **SETTINGS)
@given(small_instances(utilities=short_decimals), SPEC)
def test_random_fractional_models_agree_on_every_route(inst, spec):
    results = [declare_spec(inst, spec, "max", integral=False).solve(**route) for route in ROUTES]
    statuses = {r.status for r in results}
    assert len(statuses) == 1, statuses
    if results[0].status == "optimal":
        values = [r.objective for r in results]
        assert all(close(v, values[0]) for v in values), values
        assert all(r.details["verification"]["ok"] for r in results)


def test_transportation_is_detected_not_declared():
    inst = lo.load("instances/hotos25-table1.json")
    m = Model(inst)
    m.add(capacity(m.x)), m.add(demand(m.x))
    m.maximize(welfare(m.x))
    assert m.lower().transportation() is not None
    assert m.solve(solver="ortools").route == "ortools-min-cost-flow"
    assert m.solve().route.startswith("highspy-lp (totally unimodular")
    m.add(m.x.sum(pool="L4") <= 1, name="l4_cap")
    assert m.lower().transportation() is None
    assert m.solve(solver="ortools").route != "ortools-min-cost-flow"


@pytest.mark.parametrize("change", ["coefficient", "lower", "column twice", "third block", "aux variable"])
def test_detection_refuses_what_is_no_transportation(change):
    inst = lo.load("instances/hotos25-table1.json")
    m = Model(inst, integral=False)
    x = m.x
    m.add(capacity(x))
    if change == "coefficient":
        m.add(x.scale(pool={"A10": 2.0, "L4": 1.0, "Trainium": 1.0}).sum(by="agent") <= 1, name="double")
    elif change == "lower":
        m.add(x.sum(by="agent") >= 0.5, name="floor")
    elif change == "column twice":
        m.add(x.sum(by="agent") + x.sum(pool="A10") * 0 + x.select(pool="A10").sum(by="agent") <= 1, name="twice")
    elif change == "third block":
        m.add(demand(x)), m.add(x.sum() <= 5, name="total")
    else:
        m.add(demand(x)), m.variable("spare")
    assert m.lower().transportation() is None


def test_detection_by_the_lowering_model_alone():
    model = LinearModel("t")
    x = model.add_variables("x", 3)
    model.add_constraints("a", rows=np.array([0, 0, 1]), cols=x.columns([2, 0, 1]), coefs=np.ones(3), upper=np.array([1.0, 2.0]))
    model.add_constraints("b", rows=np.array([0]), cols=x.columns([1]), coefs=np.ones(1), upper=np.array([1.0]))
    t = model.detect_transportation()
    assert t.left.tolist() == [0, 1, 0] and t.right.tolist() == [1, 0, 1] and t.right_capacity.tolist() == [1.0, np.inf]
    model.constraints["b"].coefs[0] = 2.0  # a model changed after detection loses it, as declared ones do
    bad = LinearModel("u")
    y = bad.add_variables("y", 2)
    bad.add_constraints("a", rows=np.array([0, 0]), cols=y.columns([0, 0]), coefs=np.ones(2), upper=np.array([1.0]))
    bad.add_constraints("b", rows=np.array([0]), cols=y.columns([1]), coefs=np.ones(1), upper=np.array([1.0]))
    assert bad.detect_transportation() is None


# --------------------------------------------------------------------- duals
@settings(max_examples=15, **SETTINGS)
@given(small_instances(utilities=short_decimals, max_rounds=1, min_edges=2), st.integers(0, 2))
def test_duals_are_rates_of_change_of_the_optimum(inst, pool_choice):
    """For a maximisation the optimum is concave in a bound: its dual lies between the two one-sided slopes.

    The bound is half of what the pool carries without it, so the row binds unless other optima use less.
    """
    pool = inst.pools[pool_choice % inst.n_pools].id
    delta = 1e-3

    def declared(bound):
        m = Model(inst, integral=False)
        m.add(capacity(m.x)), m.add(demand(m.x))
        if bound is not None:
            m.add(m.x.sum(pool=pool) <= bound, name="pool_cap")
        m.maximize(welfare(m.x))
        return m

    free = declared(None)
    free.solve()
    used = free.x.sum(pool=pool).value()
    assume(used > 4 * delta)
    bound = used / 2
    for route in (dict(), dict(solver="ortools", backend="glop"), dict(via="pyomo")):
        result = declared(bound).solve(**route)
        binding = [b["dual"] for b in result.details["binding"] if b["constraint"] == "pool_cap"]
        dual = binding[0] if binding else 0.0
        assert dual is not None, route
        right = (declared(bound + delta).solve(**route).objective - result.objective) / delta
        left = (result.objective - declared(bound - delta).solve(**route).objective) / delta
        assert right - 1e-5 <= dual <= left + 1e-5, (route, right, dual, left)
        # Only examples where the bound costs welfare compare real slopes (another optimum may avoid the pool).
        assume(left > 1e-9)


def test_integer_programs_report_no_duals():
    inst = lo.load("instances/hotos25-table1.json")
    m = Model(inst)
    m.add(capacity(m.x)), m.add(demand(m.x)), m.add(m.x.sum(pool="A10") <= 0, name="closed")
    m.maximize(welfare(m.x))
    result = m.solve()
    assert all(b["dual"] is None for b in result.details["binding"])
    assert "integer program" in result.details["duals"]


# -------------------------------------------------------------- verification
def test_the_check_rejects_what_the_declaration_forbids(three):
    m = Model(three)
    m.add(capacity(m.x)), m.add(m.x.sum(by="agent") <= {"A": 1}, name="one_for_a")
    m.maximize(welfare(m.x))
    verdict = check_declaration(m, np.array([1.0, 0.0, 1.0, 0.0, 2.0, 3.0]), objective_values=[0.0])
    assert not verdict.ok
    text = "; ".join(verdict.violations)
    assert "constraint 'capacity' row P, round 1: 3 > upper bound 2" in text
    assert "constraint 'one_for_a' row A: 2 > upper bound 1" in text
    assert "variable 'x' entry B, P, round 1: 3 outside its upper bound 2" in text
    assert "objective 'objective': reported 0" in text
    assert "is not an integer" in "; ".join(check_declaration(m, np.array([0.5, 0, 0, 0, 0, 0])).violations)


def test_a_wrong_lowering_is_caught(three, monkeypatch):
    """The check re-evaluates the user's rows: a route returning a point that breaks them cannot pass."""
    import laissez_opt.declare.model as model_module

    m = Model(three)
    m.add(capacity(m.x)), m.add(m.x.sum(pool="Q") <= 0, name="q_closed")
    m.maximize(welfare(m.x))

    def broken(model, **options):
        values = np.zeros(model.n_cols)
        values[2] = 1.0  # A on Q in round 0: breaks q_closed
        return Solution("optimal", values, 4.0, 4.0, 0.0, "highs", "broken", 0.0, 0.0)

    monkeypatch.setattr(model_module, "solve_model", broken)
    with pytest.raises(VerificationError, match="constraint 'q_closed' row : 1 > upper bound 0|constraint 'q_closed'"):
        m.solve()


# ---------------------------------------------------------------- infeasible
def test_conflicts_are_named_rows():
    inst = lo.load("instances/hotos25-table1.json")
    m = Model(inst)
    m.add(capacity(m.x)), m.add(demand(m.x))
    m.add(m.x.sum(pool="A10") >= 1, name="use_a10")
    m.add(m.x.sum(agent="A") >= 1, name="a_served")
    m.add(m.x.select(agent="A").sum(pool=["L4", "Trainium"]) <= 0, name="a_only_a10")
    m.add(m.x.sum(agent="B", pool="A10") >= 1, name="b_on_a10")
    m.maximize(welfare(m.x))
    result = m.solve()
    assert result.status == "infeasible"
    assert result.details["conflict"] == ["capacity[A10, round 0]", "a_served", "a_only_a10", "b_on_a10"]
    assert "cannot hold together" in result.message and "removing any one" in result.message
    with pytest.raises(InfeasibleError, match="a_only_a10"):
        m.solve(raise_infeasible=True)
    assert "conflict" not in m.solve(explain=False).details


def test_large_conflicts_are_named_by_family():
    inst = lo.generate("uniform", 80, 4, seed=2)
    m = Model(inst)
    m.add(capacity(m.x))
    m.add(m.x.sum(by="agent") >= 1, name="everyone")  # 80 agents, far fewer devices: more rows than refined
    m.maximize(welfare(m.x))
    result = m.solve()
    assert result.status == "infeasible" and result.details["conflict"] == ["capacity", "everyone"]


def test_bounds_alone_can_conflict(three):
    m = Model(three)
    m.variable("half", lower=0.2, upper=0.8, integer=True)
    m.maximize(m.x.sum())
    result = m.solve()
    assert result.status == "infeasible" and "bounds and integrality alone" in result.message


def test_unbounded_objectives_name_the_variables(three):
    m = Model(three)
    t = m.variable("t")
    m.add(capacity(m.x))
    m.maximize(t + welfare(m.x))
    with pytest.raises(InputError, match="unbounded.*variables: t"):
        m.solve()


# ------------------------------------------------------ objectives and export
def test_lexicographic_levels_hold_their_optimum():
    inst = lo.load("instances/hotos25-table1.json")
    m = Model(inst, integral=False)
    m.add(capacity(m.x)), m.add(demand(m.x))
    m.lexicographic(maximize(welfare(m.x)), minimize(cost(m.x)))
    result = m.solve()
    levels = result.details["levels"]
    assert close(levels[0]["value"], lo.solve(inst, "welfare").objective) and levels[0]["held"]
    assert close(result.objective, levels[1]["value"]) and close(result.objective, cost(m.x).value())
    assert close(welfare(m.x).value(), levels[0]["value"])
    for route in ROUTES[1:]:
        assert close(m.solve(**route).objective, result.objective)


def test_export_names_the_declared_blocks(three, tmp_path):
    m = Model(three)
    m.add(capacity(m.x)), m.add(m.x.sum(pool="Q") <= 0, name="q_closed")
    m.maximize(welfare(m.x))
    pyomo_model = m.to_pyomo()
    assert {c.name for c in pyomo_model.component_objects()} >= {"x", "capacity", "q_closed", "objective"}
    m.write(str(tmp_path / "m.lp"))
    assert "q_closed" in (tmp_path / "m.lp").read_text()
    m.write(str(tmp_path / "m.mps"))
    assert (tmp_path / "m.mps").read_text().startswith("*") or "ROWS" in (tmp_path / "m.mps").read_text()


def test_values_from_results_and_solutions(three):
    m = Model(three)
    with pytest.raises(ValueError, match="no solution yet"):
        m.x.sum().value()
    m.add(capacity(m.x)), m.add(demand(m.x))
    m.maximize(welfare(m.x))
    result = m.solve()
    assert close(welfare(m.x).value(result), result.objective) and close(welfare(m.x).value(), result.objective)
    assert utility(m.x).value(result).tolist() == [result.utilities[a] for a in "ABC"]


def test_size_is_the_declared_size(three):
    m = Model(three)
    m.add(capacity(m.x)), m.add(demand(m.x))
    size = m.size()
    assert (size.variables, size.constraints, size.nonzeros) == (6, 4 + 2, 6 + 4)


# ------------------------------------------------------------ declared methods
def test_a_registered_method_runs_like_a_built_in_one():
    from declared_models import capped_welfare

    calls = []

    def build(instance, cap=1):
        calls.append(cap)
        return capped_welfare(instance, cap)

    lo.register_method("capped", build, options=(lo.Option("cap", "int", 1, "devices", minimum=0),))
    try:
        inst = lo.load("instances/uniform-small.json")
        result = lo.solve(inst, "capped", cap=2.0, solver="ortools")
        assert calls == [2, 2][:len(calls)] and calls[-1] == 2 and result.verified and result.method == "capped"
        assert result.params["cap"] == 2 and result.metrics["weighted_welfare"] > 0
        assert lo.estimate(inst, "capped").variables == inst.n_edges
        calls.clear()
        with pytest.raises(InputError, match="capped has no option 'cpa' \\(did you mean 'cap'\\?\\)"):
            lo.solve(inst, "capped", cpa=2)
        with pytest.raises(InputError, match="expects an integer"):
            lo.solve(inst, "capped", cap="two")
        fresh = lo.load("instances/uniform-small.json")  # the estimate above left its model for this instance
        with pytest.raises(InputError, match="memory budget"):
            lo.solve(fresh, "capped", max_memory=1024)
        assert calls == [1]  # declared once for the estimate; refused before solving
        with pytest.raises(InputError, match="already registered"):
            lo.register_method("capped", build)
        lo.register_method("capped", build, replace=True)
    finally:
        lo.unregister_method("capped")
    with pytest.raises(InputError, match="built-in method"):
        lo.register_method("welfare", build)
    with pytest.raises(InputError, match="unknown method 'capped'"):
        lo.solve(inst, "capped")


def test_a_method_model_must_keep_the_instance_feasible():
    def careless(instance):
        m = Model(instance)
        m.add(capacity(m.x))
        m.maximize(welfare(m.x))
        return m

    lo.register_method("careless", careless)
    try:
        with pytest.raises(InputError, match=r"add demand\(m.x\)"):
            lo.solve("instances/hotos25-table1.json", "careless")
    finally:
        lo.unregister_method("careless")


def test_registered_methods_compare_beside_built_in_ones(tmp_path):
    from declared_models import frugal_welfare

    lo.register_method("frugal", frugal_welfare, fractional=True)
    try:
        inst = lo.load("instances/hotos25-table1.json")
        table = lo.compare([inst], ["welfare", "frugal", "greedy"], workers=2, store=tmp_path / "runs")
        rows = {row["method"]: row for row in table.rows}
        assert rows["frugal"]["status"] == "optimal" and rows["frugal"]["verified"]
        assert rows["frugal"]["gap_weighted_welfare"] > 0 and rows["welfare"]["gap_weighted_welfare"] == 0.0
        again = lo.compare([inst], ["welfare", "frugal", "greedy"], store=tmp_path / "runs")
        assert again.reused == 3
        local = lambda instance: frugal_welfare(instance)  # noqa: E731  cannot travel to a worker
        lo.register_method("frugal", local, replace=True)
        with pytest.raises(InputError, match="cannot be pickled"):
            lo.compare([inst], ["frugal"], workers=2)
        changed = lo.compare([inst], ["welfare", "frugal"], store=tmp_path / "runs")
        assert changed.computed == 1  # a changed definition is never served from the store
    finally:
        lo.unregister_method("frugal")


def test_declared_methods_pickle_without_their_cache():
    from declared_models import CAPPED

    inst = lo.load("instances/hotos25-table1.json")
    CAPPED.run.estimate(inst, {})
    copy = pickle.loads(pickle.dumps(CAPPED))
    assert copy.run._cache is None and copy.run.fingerprint == CAPPED.run.fingerprint
    assert copy.run(inst).objective == CAPPED.run(inst).objective


# ------------------------------------------------------------------- plugins
PLUGIN = '''
import laissez_opt as lo
from laissez_opt.declare import capacity, demand, welfare


def capped_welfare(instance, cap=1):
    m = lo.Model(instance, name="capped_welfare")
    m.add(capacity(m.x))
    m.add(demand(m.x))
    m.add(m.x.sum(by=("agent", "round")) <= cap, name="cap")
    m.maximize(welfare(m.x))
    return m


CAPPED = lo.declared_method("capped_welfare", capped_welfare, summary="welfare, at most cap devices per agent",
                            options=(lo.Option("cap", "int", 1, "devices per agent and round", minimum=0),))
'''


@pytest.fixture()
def plugin_path(tmp_path):
    """A directory holding an 'installed' plugin: a package and its distribution metadata with entry points."""
    site = tmp_path / "site"
    (site / "plugin_demo").mkdir(parents=True)
    (site / "plugin_demo" / "__init__.py").write_text(PLUGIN)
    info = site / "plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[laissez_opt.methods]\ncapped_welfare = plugin_demo:CAPPED\nbroken_one = plugin_demo_missing:METHOD\n"
    )
    return site


def _cli(args, site, cwd):
    import os
    import subprocess

    from conftest import CLI, ROOT

    env = dict(os.environ, PYTHONPATH=str(site), COLUMNS="200")
    return subprocess.run([str(CLI), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_plugins_appear_in_every_command(plugin_path, tmp_path):
    import json
    import shutil

    from conftest import ROOT

    shutil.copy(ROOT / "instances" / "hotos25-table1.json", tmp_path / "r4.json")
    listing = _cli(["methods"], plugin_path, tmp_path)
    assert listing.returncode == 0 and "capped_welfare" in listing.stdout
    assert "plugin method 'broken_one' not loaded: broken_one = plugin_demo_missing:METHOD" in listing.stderr
    options = _cli(["methods", "capped_welfare"], plugin_path, tmp_path)
    assert "cap" in options.stdout and "devices per agent and round" in options.stdout
    solved = _cli(["solve", "r4.json", "--method", "capped_welfare", "-p", "cap=1", "--write-model", "m.lp"],
                  plugin_path, tmp_path)
    assert solved.returncode == 0, solved.stderr
    result = json.loads(solved.stdout)
    assert result["method"] == "capped_welfare" and result["verified"] and result["status"] == "optimal"
    assert "cap(" in (tmp_path / "m.lp").read_text()
    broken = _cli(["solve", "r4.json", "--method", "broken_one"], plugin_path, tmp_path)
    assert broken.returncode == 2 and "comes from a plugin that failed to load" in broken.stderr
    compared = _cli(["compare", "r4.json", "--methods", "welfare,capped_welfare", "--workers", "2", "--no-plots",
                     "-o", "out"], plugin_path, tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "| capped_welfare |" in compared.stdout.replace("  ", " ") or "capped_welfare" in compared.stdout
    rows = (tmp_path / "out" / "results.csv").read_text()
    assert "capped_welfare" in rows and "error" not in rows


# --------------------------------------------------------------------- docs
def test_the_api_reference_is_the_docstrings():
    """docs/modelling.md's reference table lists every public name with its docstring's first line."""
    import inspect

    import laissez_opt.declare as declare
    from conftest import ROOT
    from test_docs import sections, tables

    text = (ROOT / "docs" / "modelling.md").read_text(encoding="utf-8")
    (header, rows), = [t for t in tables(sections(text)["API reference"]) if t[0] == ["name", "what it does"]]
    listed = {}
    for name, meaning in rows:
        name = name.strip("`")
        if name.startswith("lo."):
            target = getattr(lo, name[3:])
        elif "." in name:
            owner, attribute = name.split(".")
            target = inspect.getattr_static(getattr(declare, owner), attribute)
            target = target.fget if isinstance(target, property) else target
        else:
            target = getattr(declare, name)
        first = inspect.getdoc(target).split("\n")[0]
        assert meaning == first, f"{name}: the table says {meaning!r}, the docstring {first!r}"
        listed[name] = target
    missing = [n for n in declare.__all__ if n not in listed and f"lo.{n}" not in listed]
    assert not missing, f"public names missing from the reference: {missing}"
    assert {"lo.register_method", "lo.unregister_method"} <= set(listed)


def test_registered_method_is_a_simulation_policy_inline_and_in_workers():
    from declared_models import frugal_welfare

    lo.register_method("frugal", frugal_welfare, fractional=True)
    try:
        config = {"format": "laissez-opt/simulation", "version": 1,
                  "generate": {"family": "gemmini", "agents": 4, "pools": 2},
                  "rounds": 4, "seeds": 2, "workload": {"load": 1.0, "deadline": 3},
                  "policies": ["frugal", "welfare"]}
        inline = lo.simulate(config, progress=False)
        pooled = lo.simulate(config, progress=False, workers=2)
        assert inline.policies == ["frugal", "welfare"]
        for seed in (0, 1):
            assert inline.run("frugal", seed).rounds == pooled.run("frugal", seed).rounds
            assert sum(inline.run("frugal", seed).rounds["processed_work"]) > 0
    finally:
        lo.unregister_method("frugal")
