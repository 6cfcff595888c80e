"""The queue model ``backlog`` against brute force, an independent LP, and the thesis's example (R1).

Brute force enumerates every whole-device allocation of every round (devices may
stay idle), runs the queues of thesis eq. 3.2 with plain Python, and keeps the
least weighted total backlog and the leximin vector of ``B_i / w_i``.  The
fractional optimum is checked against an LP written here with
``scipy.optimize.linprog`` from the definitions, sharing no code with the model.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.optimize import linprog

import laissez_opt as lo
from laissez_opt.errors import InputError
from laissez_opt.exact.backlog import build_backlog, queue_replay

from conftest import INSTANCES, run_cli

R1 = INSTANCES / "thesis-r1-fair-vs-efficient.json"


@st.composite
def queue_instances(draw, max_agents=3, max_pools=2, max_rounds=2):
    """Small queue instances: integer throughputs 0..5, arrivals 0..9, pools of 1-2 devices, some demands."""
    n = draw(st.integers(1, max_agents))
    m = draw(st.integers(1, max_pools))
    rounds = draw(st.integers(1, max_rounds))
    pools = [lo.Pool(f"P{c}", count=draw(st.integers(1, 2))) for c in range(m)]
    agents = []
    for i in range(n):
        arrivals = tuple(float(draw(st.integers(0, 9))) for _ in range(rounds))
        agents.append(lo.Agent(f"A{i}", weight=float(draw(st.sampled_from([1, 1, 2, 3]))),
                               demand=draw(st.sampled_from([None, None, 1, 2])), arrivals=arrivals))
    edges = []
    for i in range(n):
        for c in range(m):
            if draw(st.integers(0, 4)) > 0:
                edges.append(lo.Edge(f"A{i}", f"P{c}", tuple(float(draw(st.integers(0, 5))) for _ in range(rounds))))
    if not edges:
        edges.append(lo.Edge("A0", "P0", (1.0,) * rounds))
    return lo.Instance(pools=pools, agents=agents, edges=edges, rounds=rounds, name="queues")


def _round_allocations(inst):
    """Every whole-device allocation of one round: dicts (agent, pool) -> devices, demands respected."""
    by_pool = {p.id: [e.agent for e in inst.edges if e.pool == p.id] for p in inst.pools}
    per_pool = []
    for pool in inst.pools:
        holders = by_pool[pool.id]
        options = [combo for combo in itertools.product(range(pool.count + 1), repeat=len(holders))
                   if sum(combo) <= pool.count]
        per_pool.append([dict(zip(((a, pool.id) for a in holders), combo)) for combo in options])
    demand = {a.id: a.demand for a in inst.agents}
    for parts in itertools.product(*per_pool):
        alloc = {k: v for part in parts for k, v in part.items()}
        used = {}
        for (agent, _), v in alloc.items():
            used[agent] = used.get(agent, 0) + v
        if all(demand[a] is None or used.get(a, 0) <= demand[a] for a in demand):
            yield alloc


def brute_force(inst):
    """(least weighted total backlog, leximin vector of B_i / w_i sorted largest first) over whole devices."""
    utility = {(e.agent, e.pool): e for e in inst.edges}
    rounds = list(_round_allocations(inst))
    best_total, best_vector = float("inf"), None
    for plan in itertools.product(rounds, repeat=inst.rounds):
        totals = {}
        for agent in inst.agents:
            carried, total = 0.0, 0.0
            for r, alloc in enumerate(plan):
                service = sum(v * utility[(a, p)].utility_in(r) for (a, p), v in alloc.items() if a == agent.id)
                carried = max(0.0, carried + agent.arrivals[r] - service)
                total += carried
            totals[agent.id] = total
        weighted = sum(a.weight * totals[a.id] for a in inst.agents)
        vector = sorted((totals[a.id] / a.weight for a in inst.agents), reverse=True)
        best_total = min(best_total, weighted)
        if best_vector is None or _lex_smaller(vector, best_vector):
            best_vector = vector
    return best_total, best_vector


def _lex_smaller(a, b, tol=1e-9):
    for x, y in zip(a, b):
        if x < y - tol:
            return True
        if x > y + tol:
            return False
    return False


def independent_lp(inst, objective):
    """Fractional optimum from the definitions with linprog: 'total' or the min-max of B_i / w_i."""
    n, m, R = inst.n_agents, inst.n_pools, inst.rounds
    edges = list(inst.edges)
    E = len(edges)
    # columns: x[e, r], p[i, r], q[i, r], (z for minmax)
    nx, np_, nq = E * R, n * R, n * R
    size = nx + np_ + nq + 1
    X = lambda e, r: e * R + r  # noqa: E731
    P = lambda i, r: nx + i * R + r  # noqa: E731
    Q = lambda i, r: nx + np_ + i * R + r  # noqa: E731
    Z = size - 1
    agent_of = {a.id: i for i, a in enumerate(inst.agents)}
    pool_of = {p.id: c for c, p in enumerate(inst.pools)}
    A_ub, b_ub, A_eq, b_eq = [], [], [], []
    for r in range(R):
        for c, pool in enumerate(inst.pools):
            row = np.zeros(size)
            for e, edge in enumerate(edges):
                if pool_of[edge.pool] == c:
                    row[X(e, r)] = 1
            A_ub.append(row), b_ub.append(pool.count)
        for i, agent in enumerate(inst.agents):
            if agent.demand is not None:
                row = np.zeros(size)
                for e, edge in enumerate(edges):
                    if agent_of[edge.agent] == i:
                        row[X(e, r)] = 1
                A_ub.append(row), b_ub.append(agent.demand)
            row = np.zeros(size)
            row[P(i, r)] = 1
            for e, edge in enumerate(edges):
                if agent_of[edge.agent] == i:
                    row[X(e, r)] = -edge.utility_in(r)
            A_ub.append(row), b_ub.append(0.0)
            row = np.zeros(size)
            row[Q(i, r)], row[P(i, r)] = 1, 1
            if r:
                row[Q(i, r - 1)] = -1
            A_eq.append(row), b_eq.append(agent.arrivals[r])
    c = np.zeros(size)
    if objective == "total":
        for i, agent in enumerate(inst.agents):
            for r in range(R):
                c[Q(i, r)] = agent.weight
    else:
        c[Z] = 1
        for i, agent in enumerate(inst.agents):
            row = np.zeros(size)
            for r in range(R):
                row[Q(i, r)] = 1 / agent.weight
            row[Z] = -1
            A_ub.append(row), b_ub.append(0.0)
    out = linprog(c, A_ub=np.array(A_ub), b_ub=b_ub, A_eq=np.array(A_eq), b_eq=b_eq,
                  bounds=[(0, None)] * size, method="highs")
    assert out.status == 0, out.message
    return out.fun


ROUTES = [("highs", "direct"), ("ortools", "direct"), ("highs", "pyomo")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=queue_instances(), route=st.sampled_from(ROUTES))
def test_integral_optima_equal_brute_force(inst, route):
    solver, via = route
    total, vector = brute_force(inst)
    best = lo.solve(inst, "backlog", solver=solver, via=via)
    assert best.status == "optimal" and best.verified
    assert best.objective == pytest.approx(total, abs=1e-6)
    fair = lo.solve(inst, "backlog", objective="leximin", solver=solver, via=via)
    assert fair.status == "optimal" and fair.verified
    # Each solved ordered-outcomes step is fixed with a relative slack of 1e-7.
    assert fair.details["levels"] == pytest.approx(vector, rel=1e-6, abs=1e-6)
    assert fair.objective == pytest.approx(vector[0], rel=1e-6, abs=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=queue_instances(), solver=st.sampled_from(["highs", "ortools"]))
def test_fractional_optima_equal_an_independent_lp(inst, solver):
    whole = lo.solve(inst, "backlog")
    shared = lo.solve(inst, "backlog", fractional=True, solver=solver)
    assert shared.status == "optimal" and shared.verified and shared.mode == "fractional"
    assert shared.objective == pytest.approx(independent_lp(inst, "total"), rel=1e-7, abs=1e-6)
    assert shared.objective <= whole.objective + 1e-6
    fair = lo.solve(inst, "backlog", objective="leximin", fractional=True, solver=solver)
    assert fair.objective == pytest.approx(independent_lp(inst, "minmax"), rel=1e-6, abs=1e-6)
    levels = fair.details["levels"]
    assert levels == sorted(levels, reverse=True)


@settings(max_examples=40, deadline=None)
@given(inst=queue_instances(max_rounds=3))
def test_replay_is_the_thesis_recursion(inst):
    """queue_replay follows eq. 3.2 (backlog = max(0, carried + arrivals - service)) for any allocation."""
    amounts = lo.solve(inst, "greedy").amounts
    trace = queue_replay(inst, amounts)
    for i, agent in enumerate(inst.agents):
        carried = 0.0
        for r in range(inst.rounds):
            service = sum(e.utility_in(r) * amounts[k, r] for k, e in enumerate(inst.edges) if e.agent == agent.id)
            carried = max(0.0, carried + agent.arrivals[r] - service)
            assert trace.backlog[i, r] == pytest.approx(carried)
            assert trace.processed[i, r] <= trace.service[i, r] + 1e-9
    assert np.all(trace.round_utility <= 0)


def test_r1_thesis_example():
    """Thesis 002, section 2.2.3: the optima the reproduction (R1) reports."""
    inst = lo.load(R1)
    whole = lo.solve(inst, "backlog")
    assert (whole.objective, whole.details["queue_utilities"]) == (20.0, {"A1": -20.0, "A2": 0.0})
    assert whole.details["queue"]["A1"]["backlog"] == [0.0, 20.0]
    assert lo.solve(inst, "backlog", fractional=True).objective == 0.0
    assert lo.solve(inst, "backlog", objective="leximin").details["levels"] == [20.0, 0.0]
    assert lo.solve(inst, "backlog", objective="leximin", fractional=True).details["levels"] == [0.0, 0.0]
    # The text's efficient allocation, replayed: A1 20 jobs behind after round 2, A2 clear.
    edge = {(e.agent, e.pool): k for k, e in enumerate(inst.edges)}
    amounts = np.zeros((inst.n_edges, inst.rounds))
    for agent, pool, r in [("A1", "R3", 0), ("A2", "R1", 0), ("A2", "R2", 0), ("A2", "R4", 0),
                           ("A1", "R3", 1), ("A1", "R4", 1), ("A2", "R1", 1), ("A2", "R2", 1)]:
        amounts[edge[(agent, pool)], r] = 1
    assert queue_replay(inst, amounts).backlog.tolist() == [[0.0, 20.0], [0.0, 0.0]]


def test_weights_scale_the_leximin():
    """Two agents, one device: the heavier agent's backlog counts per unit of weight."""
    inst = lo.Instance([lo.Pool("g")], [lo.Agent("A", weight=2.0, arrivals=(4.0,)), lo.Agent("B", arrivals=(4.0,))],
                       [lo.Edge("A", "g", 4.0), lo.Edge("B", "g", 4.0)], name="w")
    fair = lo.solve(inst, "backlog", objective="leximin", fractional=True)
    # B_A / 2 = B_B with B_A + B_B = 4 (one device clears 4 jobs in all): B_A = 8/3, B_B = 4/3.
    assert fair.details["queue_utilities"]["A"] == pytest.approx(-8 / 3)
    assert fair.details["levels"] == pytest.approx([4 / 3, 4 / 3])


def test_bad_input_is_one_line():
    inst = lo.load(INSTANCES / "hotos25-table1.json")
    with pytest.raises(InputError, match=r"arrivals"):
        lo.solve(inst, "backlog")
    with pytest.raises(InputError, match=r"objective"):
        lo.solve(lo.load(R1), "backlog", objective="fastest")
    run = run_cli("solve", INSTANCES / "hotos25-table1.json", "-m", "backlog")
    assert run.returncode == 2 and len(run.stderr_lines) == 1 and "$.agents[*].arrivals" in run.stderr


def test_command_line_solves_a_queue_instance():
    import json

    run = run_cli("solve", R1, "-m", "backlog", "-p", "objective=leximin", "--fractional")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["details"]["levels"] == [0.0, 0.0] and out["mode"] == "fractional"


def test_size_estimate_and_blocks():
    inst = lo.load(R1)
    est = lo.estimate(inst, "backlog", objective="leximin")
    model, _ = build_backlog(inst, objective="leximin")
    assert est.variables == model.n_cols
    assert est.constraints >= model.n_rows


def test_one_round_backlog_equals_the_simulators_min_backlog_policy():
    """On one round the offline model and the simulator's myopic policy solve the same problem."""
    from laissez_opt.simulate.min_backlog import solve_min_backlog
    from laissez_opt.simulate.view import ViewBuilder

    inst = lo.load(R1)
    one = lo.Instance(inst.pools, [lo.Agent("A1", arrivals=(370.0,)), lo.Agent("A2", arrivals=(280.0,))],
                      [lo.Edge(e.agent, e.pool, e.utility_in(1)) for e in inst.edges], name="r1-round-2")
    view = ViewBuilder(inst, tick_scale=1.0, demand_rule="clear").view(
        1, backlog=np.array([370.0, 280.0]), elapsed=np.zeros(2))
    myopic = solve_min_backlog(view)
    assert lo.solve(one, "backlog").objective == pytest.approx(370.0 + 280.0 - myopic.objective) == 20.0
