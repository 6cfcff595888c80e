"""Exact integral leximin of per-unit values on a flow network: greedy increments checked by max flows.

Setting.  Agent ``i`` receives ``N_i`` whole units (tasks, devices) through a
layered network and its value is ``v_i = g_i N_i`` with ``g_i > 0``: the value of
a unit does not depend on where it runs.  Integral DRF has this form when every
pool's tasks are interchangeable (:func:`laissez_opt.exact.drf.task_flow_network`):

    S -> agent i  (N_i) -> group (i, r)  (d_i) -> pool-round (c, r)  (u_col) -> T  (T_c)

The vectors ``N`` that an integral flow can deliver are the integer points of an
integral polymatroid (the supply vectors of a flow with sources at the agents,
Megiddo 1974): the set is down-closed, and its rank function is a max flow.

Leximin as a separable concave objective.  Let ``nu_0 = 0 < nu_1 < ...`` be the
values an agent can reach and ``n_k(N)`` the number of agents at ``nu_k``.  The
leximin comparison is the lexicographic minimum of ``(n_0, n_1, ...)``
(:mod:`laissez_opt.exact.bottleneck`), i.e. the maximum of
``Phi(N) = sum_i Psi(g_i N_i)`` with ``Psi(nu_k) = -M^(-k)`` and ``M > n``.  Raising
agent ``i`` from ``k`` to ``k + 1`` units gains
``Psi(g_i (k+1)) - Psi(g_i k)``: the smaller the current value ``g_i k``, the larger
the gain (by a factor ``M`` per level), and between equal current values the larger
next value ``g_i (k + 1)`` gains more.  The gains fall as ``k`` grows, so ``Phi`` is
separable and concave, and on a polymatroid the greedy procedure that repeatedly
makes the feasible increment of largest gain is optimal (Federgruen & Groenevelt,
"The greedy procedure for resource allocation problems", Oper. Res. 34, 1986).
An increment that fails stays infeasible for good (the set is down-closed and the
other agents only grow), so the agent is frozen.

The greedy order of increments is ``(g_i k ascending, g_i descending, i)``.

Bulk steps.  A prefix of that order is feasible exactly when one max flow with
source arcs ``S -> i`` at the prefix's targets saturates them, and then the greedy
makes every increment of the prefix.  The search therefore
(1) bisects on a value threshold ``theta`` ("every increment whose current value is
below ``theta``", counted per agent in closed form) until few increments remain
between the last feasible and the first infeasible threshold, then
(2) orders those increments explicitly and finds the first one that fails by
exponential and binary search over prefixes.  At the last feasible prefix the agents
that cannot reach ``T`` in the residual network (OR-Tools' sink side of a minimum
cut) cannot rise in any later state: all of them freeze at once.  Values within a
relative ``TIE`` of each other count as equal (floating-point products of ``g_i`` and
``k`` that are equal in exact arithmetic); thresholds are placed away from every
value by more than that.

Each max flow is OR-Tools' push-relabel on ``n + G + C + P`` arcs; the number of max
flows is about ``log`` of the increments per threshold step plus ``2 log`` of the
window per freeze round.

Example
-------
Two agents share a pool of three units; A's unit is worth 1, B's 2 (B has half A's
capacity basis).  Leximin of ``(N_A, 2 N_B)``: (2, 1) gives values (2, 2).

>>> import numpy as np
>>> net = CountNetwork(g=np.array([1.0, 2.0]), group_agent=np.array([0, 1]), group_cap=np.array([3, 3]),
...                    col_group=np.array([0, 1]), col_node=np.array([0, 0]), col_cap=np.array([3, 3]),
...                    node_cap=np.array([3]))
>>> units, flows, stats = lexicographic_count_flow(net)
>>> units.tolist(), flows.tolist(), stats["complete"]
([2, 1], [2, 1], True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from ..limits import remaining

__all__ = ["CountNetwork", "lexicographic_count_flow", "TIE"]

#: Values within this relative distance are treated as equal.
TIE = 1e-9
#: The explicit window holds at most this many increments, or ``4`` per active agent if more.
WINDOW = 4096
#: Refuse to order more increments than this at once (only when thresholds cannot separate them).
HARD_WINDOW = 20_000_000


@dataclass
class CountNetwork:
    """The layered network: agents, groups (agent-rounds), columns (group -> node) and nodes (pool-rounds).

    ``g[i]``: value of one unit of agent ``i`` (``0``: takes no part);
    ``group_agent``, ``group_cap``: each group's agent and capacity (per-round demand);
    ``col_group``, ``col_node``, ``col_cap``: each column's group, node and capacity;
    ``node_cap``: each node's capacity (units a pool holds in a round).  Capacities are
    non-negative integers.
    """

    g: np.ndarray
    group_agent: np.ndarray
    group_cap: np.ndarray
    col_group: np.ndarray
    col_node: np.ndarray
    col_cap: np.ndarray
    node_cap: np.ndarray

    def standalone(self) -> np.ndarray:
        """``U_i``: the units agent ``i`` gets alone (each group: its demand or its columns' capacity)."""
        n = self.g.shape[0]
        reach = np.bincount(self.col_group, weights=np.minimum(self.col_cap, self.node_cap[self.col_node]),
                            minlength=self.group_agent.shape[0])
        per_group = np.minimum(reach, self.group_cap)
        return np.bincount(self.group_agent, weights=per_group, minlength=n).astype(np.int64)


class _MaxFlow:
    """One OR-Tools max-flow network whose source arcs are reset for every probe."""

    def __init__(self, net: CountNetwork):
        from ortools.graph.python import max_flow

        n, G, P = net.g.shape[0], net.group_agent.shape[0], net.node_cap.shape[0]
        self.n = n
        self.source, self.sink = 0, 1 + n + G + P
        agent_node = 1 + np.arange(n)
        group_node = 1 + n + np.arange(G)
        pool_node = 1 + n + G + np.arange(P)
        self.solver = max_flow.SimpleMaxFlow()
        add = self.solver.add_arcs_with_capacity
        self.src_arcs = np.asarray(add(np.zeros(n, dtype=np.int64), agent_node, np.zeros(n, dtype=np.int64)))
        add(agent_node[net.group_agent], group_node, net.group_cap.astype(np.int64))
        self.col_arcs = np.asarray(add(group_node[net.col_group], pool_node[net.col_node], net.col_cap.astype(np.int64)))
        add(pool_node, np.full(P, self.sink, dtype=np.int64), net.node_cap.astype(np.int64))
        self.state: np.ndarray | None = None
        self.runs = 0
        self.seconds = 0.0

    def feasible(self, targets: np.ndarray) -> bool:
        """Whether one flow gives every agent its target (and leaves that flow in the solver)."""
        t0 = time.perf_counter()
        self.solver.set_arcs_capacity(self.src_arcs, targets)
        status = self.solver.solve(self.source, self.sink)
        self.runs += 1
        self.seconds += time.perf_counter() - t0
        if status != self.solver.OPTIMAL:
            raise SolverError(f"OR-Tools max flow returned status {status} (capacities too large for 64-bit flows?)")
        self.state = targets.copy()
        return int(self.solver.optimal_flow()) == int(targets.sum())

    def can_rise(self, targets: np.ndarray) -> np.ndarray:
        """Agents that could take one more unit at ``targets`` (a feasible state): those reaching ``T``."""
        if self.state is None or not np.array_equal(self.state, targets):
            if not self.feasible(targets):
                raise SolverError("a state the greedy accepted is no longer feasible (a solver fault)")
        nodes = np.asarray(self.solver.get_sink_side_min_cut(), dtype=np.int64)
        out = np.zeros(self.n, dtype=bool)
        agents = nodes[(nodes >= 1) & (nodes <= self.n)] - 1
        out[agents] = True
        return out

    def column_flows(self, targets: np.ndarray) -> np.ndarray:
        if self.state is None or not np.array_equal(self.state, targets):
            if not self.feasible(targets):
                raise SolverError("the final state of the greedy is not feasible (a solver fault)")
        return np.asarray(self.solver.flows(self.col_arcs), dtype=np.int64)


def _below(theta: float, g: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per agent, the increments ``k`` (``0 <= k < U_i``) whose current value ``g_i k`` is below ``theta``."""
    if theta <= 0:
        return np.zeros(g.shape[0], dtype=np.int64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        q = np.ceil(theta / g)
    q = np.where(np.isfinite(q), q, upper)
    return np.minimum(upper, q).astype(np.int64)


def _clear_of_values(theta: float, lo: float, hi: float, g: np.ndarray, upper: np.ndarray) -> float:
    """``theta`` moved up until no increment's value lies within ``TIE`` of it (kept inside ``(lo, hi)``)."""
    for _ in range(64):
        k = np.rint(theta / g)
        near = (k >= 0) & (k < upper) & (np.abs(theta - g * k) <= 2 * TIE * theta)
        if not near.any():
            return theta
        moved = theta * (1 + 4 * TIE)
        if not moved < hi:
            return theta
        theta = moved
    return theta


def _window_order(agents: np.ndarray, first: np.ndarray, last: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The agents of the increments ``first[j] <= k < last[j]`` of ``agents[j]``, in the greedy order."""
    counts = last - first
    owner = np.repeat(agents, counts)
    k = np.repeat(first, counts) + (np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
    value = g[owner] * k
    order = np.argsort(value, kind="stable")
    v = value[order]
    gap = np.diff(v) > TIE * np.maximum(np.abs(v[1:]), 1e-300)
    cluster = np.empty(v.shape[0], dtype=np.int64)
    if v.shape[0]:
        cluster[order] = np.concatenate([[0], np.cumsum(gap)])
    ranked = np.lexsort((owner, -g[owner], cluster))
    return owner[ranked]


def lexicographic_count_flow(net: CountNetwork, time_limit: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Leximin of ``g_i N_i`` over the integral flows of ``net`` (module docstring).

    Returns ``N`` (units per agent), the flow on every column and statistics:
    ``max_flows``, ``max_flow_s``, ``freeze_rounds``, ``windows``, ``agents`` taking
    part, ``complete`` (False when ``time_limit`` or the open deadline stopped the
    search: ``N`` is then a feasible state of the greedy, every frozen agent final)
    and ``frozen`` (boolean per agent: final in every leximin allocation found by
    the greedy).
    """
    start = time.perf_counter()
    g = np.asarray(net.g, dtype=np.float64)
    n = g.shape[0]
    upper = np.where(g > 0, net.standalone(), 0)
    units = np.zeros(n, dtype=np.int64)
    active = upper > 0
    frozen = np.zeros(n, dtype=bool)
    flow = _MaxFlow(net)
    stats = {"agents": int(active.sum()), "max_flows": 0, "max_flow_s": 0.0, "freeze_rounds": 0, "windows": 0,
             "complete": True}

    def out_of_time() -> bool:
        left = remaining(None)
        if left is not None and left <= 0:
            return True
        return time_limit is not None and time.perf_counter() - start > time_limit

    def freeze_at(state: np.ndarray) -> None:
        nonlocal active
        rising = flow.can_rise(state)
        stuck = active & ~rising
        frozen[stuck] = True
        active &= rising
        stats["freeze_rounds"] += 1

    lo = 0.0  # every increment of an active agent with value below lo is made
    while active.any():
        if out_of_time():
            stats["complete"] = False
            break
        top = np.where(active, upper, units)
        if flow.feasible(top):
            units = top
            active[:] = False
            break
        # Above every active agent's last increment: the whole remainder, just found infeasible.
        hi = float(np.max(np.where(active, g * upper, 0.0))) * (1 + 8 * TIE)
        width = max(WINDOW, 4 * int(active.sum()))
        # (1) narrow (lo, hi) by value thresholds until its increments fit a window.
        while not out_of_time():
            pending = int(np.where(active, _below(hi, g, upper) - units, 0).sum())
            if pending <= width:
                break
            if lo == 0.0:
                theta = float(np.min(g[active])) / 2  # below it: the first increments (value 0) alone
            elif hi / lo > 2:
                theta = math.sqrt(lo * hi)
            else:
                theta = lo + (hi - lo) / 2
            theta = _clear_of_values(theta, lo, hi, g, upper)
            if not lo < theta < hi:
                if pending > HARD_WINDOW:
                    raise SolverError(f"{pending} increments lie within one representable value step; "
                                      "the count flow cannot order them")
                break
            target = np.where(active, np.maximum(units, _below(theta, g, upper)), units)
            if flow.feasible(target):
                units, lo = target, theta
            else:
                hi = theta
        if out_of_time():
            stats["complete"] = False
            break
        # (2) the window's increments in greedy order; freeze at the first failure, repeat.
        stats["windows"] += 1
        last = _below(hi, g, upper)
        idx = np.flatnonzero(active & (last > units))
        queue = _window_order(idx, units[idx], last[idx], g)
        while queue.size:
            if out_of_time():
                stats["complete"] = False
                break
            whole = units + np.bincount(queue, minlength=n)
            if flow.feasible(whole):
                units = whole
                break
            good, bad, step = 0, queue.size, 1  # prefix `good` is feasible, prefix `bad` is not
            while step < bad:
                if flow.feasible(units + np.bincount(queue[:step], minlength=n)):
                    good, step = step, step * 2
                else:
                    bad = step
                    break
            while bad - good > 1:
                mid = (good + bad) // 2
                if flow.feasible(units + np.bincount(queue[:mid], minlength=n)):
                    good = mid
                else:
                    bad = mid
            units = units + np.bincount(queue[:good], minlength=n)
            failed = int(queue[bad - 1])
            freeze_at(units)
            active[failed] = False
            frozen[failed] = True
            queue = queue[bad:]
            queue = queue[active[queue]]
        if not stats["complete"]:
            break
        lo = hi
        active &= units < upper
    flows = flow.column_flows(units)
    stats.update(max_flows=flow.runs, max_flow_s=flow.seconds, seconds=time.perf_counter() - start)
    stats["frozen"] = frozen | (units >= upper)
    return units, flows, stats
