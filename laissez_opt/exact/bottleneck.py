"""Exact integral leximin for unit demands: lexicographic bottleneck b-matching by min-cost flows.

With one round and unit demands (``d_i = 1``: every agent holds at most one
device), agent ``i`` placed on pool ``c`` has the value ``a_{i,c}`` (for
``maxmin``: ``u_{i,c} / (w_i E_i)``) and an agent left out has 0.  Let
``0 = nu_0 < nu_1 < ... < nu_K`` be the distinct values of the arcs and
``n_k(x)`` the number of agents taking part whose value is ``nu_k`` (``n_0``: those
left out).  For two allocations, the first level where the counts differ
decides the leximin comparison: fewer agents at that level means the sorted
vector is larger at the first position where they differ.  So

    leximin  =  lexicographic minimum of ``(n_0(x), n_1(x), ..., n_K(x))``,

and every ``n_k`` is linear in a flow: network ``agent i -> pool c`` (capacity 1,
one arc per edge with ``a_{i,c} > 0``), ``agent i -> T`` (capacity 1, "left out"),
``pool c -> T`` (capacity ``k_c``), supply 1 at every agent taking part.

**Stages.** Lexicographic minimisation of linear objectives over a polytope:
minimise the first, then the next over the first's optimal face, and so on.
Each stage here is a min-cost flow (OR-Tools ``SimpleMinCostFlow``) whose cost
is ``(N + 1)^(L - 1 - t)`` on the arcs of the ``t``-th of ``L`` consecutive
levels (``N`` agents taking part; one stage settles ``L`` levels at once, ``L`` as
large as 64-bit costs allow: every count is at most ``N``, so the weighted sum
orders integral flows lexicographically).  The optimal face of a min-cost
flow is again a flow polytope: with optimal node potentials ``pi`` (shortest
path distances in the residual network of the optimal flow, which has no
negative cycle), every optimal flow has ``x_e = 0`` on arcs with reduced cost
``c_e + pi_tail - pi_head > 0`` and ``x_e`` at capacity where it is ``< 0``
(complementary slackness holds between every optimal primal and every
optimal dual).  Those arcs are fixed, and the next stage runs on the rest.
The network matrix is totally unimodular, so every stage's optimum is
integral; after the last level the flow is a leximin allocation.

Potentials come from Bellman-Ford over the residual network, vectorised; a
simple path alternates agents with pools (or ``T``), so it has at most
``2 m + 3`` arcs and as many passes suffice.  The cost of a run: ``K / L``
min-cost flows and ``O(m)`` numpy passes each, on ``E + n + m`` arcs.

This is the threshold-and-flow structure of bottleneck matching (Gabow &
Tarjan 1988) made lexicographic (Burkard & Rendl, "Lexicographic bottleneck
problems", Oper. Res. Lett. 10, 1991: the counts-per-level view) with the
optimal-face fixing of lexicographic linear programming (Isermann 1982).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("fast"), lo.Pool("slow")],
...                    agents=[lo.Agent("A", demand=1), lo.Agent("B", demand=1), lo.Agent("C", demand=1)],
...                    edges=[lo.Edge("A", "fast", 3.0), lo.Edge("A", "slow", 1.0),
...                           lo.Edge("B", "fast", 2.0), lo.Edge("C", "fast", 5.0), lo.Edge("C", "slow", 4.0)])
>>> pool, stats = lexicographic_unit_matching(inst, np.array([3.0, 1.0, 2.0, 5.0, 4.0]))
>>> pool.tolist()   # two devices, three agents: one gets 0; then (A fast 3, C slow 4) is leximin-best
[0, -1, 1]
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..errors import SolverError
from ..instance import Instance
from ..limits import remaining

__all__ = ["unit_demand_structure", "lexicographic_unit_matching"]


def unit_demand_structure(instance: Instance) -> bool:
    """True when integral leximin is a lexicographic bottleneck b-matching: one round, every ``d_i`` in {0, 1}.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", demand=1), lo.Agent("B")], [])
    >>> unit_demand_structure(inst)   # B's demand is unbounded
    False
    """
    return instance.rounds == 1 and all(a.demand in (0, 1) for a in instance.agents)


def _potentials(n_nodes: int, tail: np.ndarray, head: np.ndarray, cost: np.ndarray, passes: int) -> np.ndarray:
    """Shortest distances from a virtual root joined to every node by a 0-cost arc (Bellman-Ford, int64)."""
    d = np.zeros(n_nodes, dtype=np.int64)
    for _ in range(passes + 1):
        new = d.copy()
        np.minimum.at(new, head, d[tail] + cost)
        if np.array_equal(new, d):
            return d
        d = new
    raise SolverError("residual network of a min-cost flow optimum has a negative cycle (a solver fault)")


def lexicographic_unit_matching(instance: Instance, value: np.ndarray,
                                usable: np.ndarray | None = None,
                                time_limit: float | None = None) -> tuple[np.ndarray, dict]:
    """The leximin placement of unit-demand agents: each agent's pool index (``-1``: left out).

    ``value[e]`` is the value of edge ``e`` (``a_{i,c}``); edges with ``value <= 0`` or
    ``usable[e]`` false carry no arc.  Agents without an arc take no part (they get
    0 in every allocation).  Returns the placement and statistics (``stages``,
    ``levels``, ``solver_s``, ``potentials_s``, ``agents`` taking part, ``complete``
    and ``settled``: the values up to which the count vector is proven minimal).

    The number of stages grows with the number of distinct values (a few dozen
    on ``gavel``; up to one per edge with random utilities).  When ``time_limit``
    (or the open :func:`laissez_opt.limits.deadline`) runs out between stages,
    the last stage's flow is returned with ``complete`` false: a feasible
    allocation whose counts are lexicographically minimal for the values below
    ``settled``.
    """
    from ortools.graph.python import min_cost_flow

    n, m = instance.n_agents, instance.n_pools
    value = np.asarray(value, dtype=np.float64)
    ok = value > 0
    if usable is not None:
        ok &= usable
    demand_ok = np.array([a.demand != 0 for a in instance.agents], dtype=bool)
    ok &= demand_ok[instance.edge_agent]
    edges = np.flatnonzero(ok)
    e_agent, e_pool = instance.edge_agent[edges], instance.edge_pool[edges]
    taking = np.zeros(n, dtype=bool)
    taking[e_agent] = True
    agents = np.flatnonzero(taking)
    N = int(agents.size)
    levels, e_level = np.unique(value[edges], return_inverse=True)
    e_level = e_level.ravel() + 1  # level 0 is "left out"
    T = n + m
    # Arcs: edges, then one "left out" arc per agent taking part, then pool -> T.
    tail = np.concatenate([e_agent, agents, n + np.arange(m)]).astype(np.int64)
    head = np.concatenate([n + e_pool, np.full(N, T), np.full(m, T)]).astype(np.int64)
    cap = np.concatenate([np.ones(edges.size + N, dtype=np.int64), instance.counts.astype(np.int64)])
    level = np.concatenate([e_level, np.zeros(N, dtype=np.int64), np.full(m, -1)])
    n_arcs = tail.size
    fixed = np.full(n_arcs, -1, dtype=np.int64)  # -1 free, else the flow it is fixed at
    supply = np.zeros(n + m + 1, dtype=np.int64)
    supply[agents] = 1
    supply[T] = -N
    # Levels per stage: N * (N + 1)^(L - 1) times the path length stays below 2^62.
    room = 62 * math.log(2) - math.log(max(1, N) * (2 * m + 4) + 1)
    per_stage = max(1, int(room // math.log(N + 2)) + 1) if N else 1
    stats = {"agents": N, "levels": int(levels.size) + 1, "stages": 0, "solver_s": 0.0, "potentials_s": 0.0,
             "levels_per_stage": per_stage}
    flow_all = np.zeros(n_arcs, dtype=np.int64)
    next_level = 0
    stats["complete"] = True
    stats["settled"] = 0.0
    while N:
        left = remaining(time_limit)
        if stats["stages"] and left is not None and left <= 0:
            stats["complete"] = False
            break
        free = fixed < 0
        present = np.unique(level[free & (level >= next_level)])
        if present.size == 0:
            break
        chosen = present[:per_stage]
        weight = np.zeros(int(level.max(initial=0)) + 2, dtype=np.int64)
        for t, lv in enumerate(chosen.tolist()):
            weight[lv] = (N + 1) ** (chosen.size - 1 - t)
        cost = np.where(level >= 0, weight[np.maximum(level, 0)], 0)
        # Supplies with the fixed arcs' flows moved to their ends.
        b = supply.copy()
        fixed_arcs = np.flatnonzero(~free)
        np.subtract.at(b, tail[fixed_arcs], fixed[fixed_arcs])
        np.add.at(b, head[fixed_arcs], fixed[fixed_arcs])
        idx = np.flatnonzero(free)
        solver = min_cost_flow.SimpleMinCostFlow()
        solver.add_arcs_with_capacity_and_unit_cost(tail[idx], head[idx], cap[idx], cost[idx])
        solver.set_nodes_supplies(np.arange(n + m + 1), b)
        t0 = time.perf_counter()
        status = solver.solve()
        stats["solver_s"] += time.perf_counter() - t0
        if status != solver.OPTIMAL:
            raise SolverError(f"min-cost flow stage {stats['stages'] + 1} returned status {status}")
        stats["stages"] += 1
        flow = np.asarray(solver.flows(np.arange(idx.size)), dtype=np.int64)
        flow_all = np.where(free, 0, fixed)
        flow_all[idx] = flow
        next_level = int(chosen[-1]) + 1
        stats["settled"] = float(levels[int(chosen[-1]) - 1]) if chosen[-1] >= 1 else 0.0
        if not (free & (level >= next_level)).any():
            break
        # Optimal potentials: shortest distances in the residual network.
        t0 = time.perf_counter()
        c = cost[idx]
        fwd = flow < cap[idx]
        bwd = flow > 0
        r_tail = np.concatenate([tail[idx][fwd], head[idx][bwd]])
        r_head = np.concatenate([head[idx][fwd], tail[idx][bwd]])
        r_cost = np.concatenate([c[fwd], -c[bwd]])
        pi = _potentials(n + m + 1, r_tail, r_head, r_cost, 2 * m + 4)
        reduced = c + pi[tail[idx]] - pi[head[idx]]
        fixed[idx[reduced > 0]] = 0
        fixed[idx[reduced < 0]] = cap[idx[reduced < 0]]
        stats["potentials_s"] += time.perf_counter() - t0
    placed = np.full(n, -1, dtype=np.int64)
    on = flow_all[: edges.size] > 0
    placed[e_agent[on]] = e_pool[on]
    return placed, stats
