"""POP-style partitioned solving on arrays: split, solve the parts, merge, bound.

Notation (``models/partition.md``): agents ``i`` with weight ``w_i`` and demand
``d_i``; pools ``c`` with ``k_c`` devices; edges ``e = (i, c)`` with utility
``u_e``; one round.  The agents are dealt uniformly at random (seeded) into
``K`` parts ``N_1 .. N_K`` of sizes ``floor(n/K)`` or ``ceil(n/K)``, and every
pool's devices are split so that the parts' capacities ``k_c^q`` add up to
``k_c`` exactly (:func:`split_capacity`).  Each part is an independent LP over
its own agents and capacities; the union of the parts' allocations is feasible
for the whole instance because the capacities add up and every agent lives in
one part.  The bound on the un-partitioned optimum comes from the parts' duals
(:func:`lagrangian_bound`), so the gap is proven without solving the whole.

Everything here is numpy arrays: no per-agent or per-edge Python object is made.

Reference: Narayanan et al., "Solving Large-Scale Granular Resource Allocation
Problems Efficiently with POP", SOSP 2021 (random partitioning with
proportional resources); Lagrangian relaxation: Geoffrion (1974), Fisher (1981).

Example
-------
>>> import numpy as np
>>> split_capacity(np.array([5, 2, 0]), 2).tolist()
[[3, 1, 0], [2, 1, 0]]
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, NoSolutionError
from ..limits import TimeLimitReached, deadline
from ..modeling import LinearModel, solve_model

__all__ = ["Problem", "PART_METHODS", "CAPACITY_SPLITS", "split_agents", "pool_presence", "split_capacity", "part_tasks", "solve_part",
           "lagrangian_bound", "merge", "build_part", "price_task", "check_feasible", "inner_maximum", "price_candidates", "refine_prices",
           "equal_share_normalizer", "objective_of", "participants", "max_t_model", "STOPPED", "NOT_RUN", "unsolved_part"]

#: Methods the array core solves per part: ``welfare`` (the LP), ``maxmin`` (leximin levels), ``themis``
#: (fractional ``min max rho``, :mod:`laissez_opt.partition.themis`).
PART_METHODS = ("welfare", "maxmin", "themis")
_INF = math.inf
#: A part's status when its run's time limit stopped it: it keeps the last feasible point it had
#: (a leximin part its last level's, a welfare part the solver's, if any), else no allocation.
STOPPED = "time_limit"
#: A part's status when its run's time limit had passed before it started: no allocation.
NOT_RUN = "not_run"
#: A part's solve that ends without a solution this close to its deadline (or after it) was stopped by it.
DEADLINE_SLACK_S = 0.1


@dataclass
class Problem:
    """One round of an allocation problem as arrays.

    ``edge_agent``, ``edge_pool`` (int, ``E``), ``utility`` (``E``, ``u_e``),
    ``counts`` (``m``, ``k_c``), ``weights`` (``n``, ``w_i``), ``demands``
    (``n``, ``d_i``, ``inf`` when unbounded).  ``coef`` is the objective
    coefficient of each edge: ``w_i u_e`` (welfare) or ``u_e / (w_i E_i)``
    (max-min, the agent's normalised value per device), set by :meth:`for_method`.

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([0.9, 0.5]), np.array([1]),
    ...             np.ones(2), np.full(2, np.inf))
    >>> p.n_agents, p.n_pools, p.n_edges
    (2, 1, 2)
    """

    edge_agent: np.ndarray
    edge_pool: np.ndarray
    utility: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    demands: np.ndarray
    coef: np.ndarray | None = None

    @property
    def n_agents(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_pools(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edge_agent.shape[0])

    def for_method(self, method: str, normalizer: np.ndarray | None = None) -> "Problem":
        """A copy whose ``coef`` is ``w_i u_e`` (welfare) or ``u_e / (w_i E_i)`` (maxmin; 0 where ``E_i = 0``)."""
        if method == "welfare":
            coef = self.weights[self.edge_agent] * self.utility
        elif method == "maxmin":
            scale = self.weights * (np.ones(self.n_agents) if normalizer is None else normalizer)
            inv = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)
            coef = self.utility * inv[self.edge_agent]
        else:
            raise InputError(f"Problem.for_method sets welfare and maxmin coefficients, not {method!r} "
                         "(themis: laissez_opt.partition.themis.themis_arrays)",
                             path="option partitions")
        return Problem(self.edge_agent, self.edge_pool, self.utility, self.counts, self.weights, self.demands, coef)


def split_agents(n_agents: int, parts: int, seed: int) -> np.ndarray:
    """Part index of every agent: a seeded uniform random permutation dealt into ``parts`` blocks.

    Block ``q`` holds positions ``q n / K`` to ``(q + 1) n / K`` of the permutation, so
    part sizes differ by at most one.

    >>> split_agents(5, 2, seed=0).tolist()
    [1, 1, 0, 0, 0]
    """
    order = np.random.default_rng(seed).permutation(n_agents)
    part = np.empty(n_agents, dtype=np.int64)
    part[order] = np.arange(n_agents, dtype=np.int64) * parts // max(n_agents, 1)
    return part


#: Capacity rules of the time-sharing split (:func:`split_capacity`).
CAPACITY_SPLITS = ("sqrt", "equal")


def pool_presence(problem: Problem, part_of: np.ndarray, parts: int) -> np.ndarray:
    """``K x m``: how many edges of part ``q``'s agents reach pool ``c`` (``n_c^q``).

    >>> p = Problem(np.array([0, 0, 1]), np.array([0, 1, 1]), np.ones(3), np.array([1, 1]), np.ones(2), np.ones(2))
    >>> pool_presence(p, np.array([0, 1]), 2).tolist()
    [[1, 1], [0, 1]]
    """
    m = problem.n_pools
    cell = part_of[problem.edge_agent] * m + problem.edge_pool
    return np.bincount(cell, minlength=parts * m).reshape(parts, m)


def split_capacity(counts: np.ndarray, parts: int, *, integral: bool = True, rule: str = "equal",
                   presence: np.ndarray | None = None) -> np.ndarray:
    """``K x m`` capacities whose columns add up to ``k_c`` exactly.

    Integral rule: every part gets ``floor(k_c / K)``; the ``r_c = k_c mod K`` devices
    left go one each to parts ``(c + j) mod K`` for ``j < r_c`` (a rotation by the
    pool index, so that no part collects every pool's leftovers).  Fractional
    (time-sharing models; a part may time-share a device with another part, as the
    fractional model allows within one part):

    * ``rule="equal"``: every part gets ``k_c / K`` (POP's proportional split);
    * ``rule="sqrt"``: part ``q`` gets ``k_c sqrt(n_c^q) / sum_r sqrt(n_c^r)``, where
      ``n_c^q`` (``presence``, :func:`pool_presence`) counts the part's edges at pool
      ``c``; a pool no part reaches is split equally.  With few agents per pool and
      part, an equal split leaves the share of every part without an agent at ``c``
      idle (a fraction ``e^{-n_c/K}`` of the pool, ``n_c`` its edges) while crowded
      parts starve; shares proportional to ``n_c^q`` itself starve the parts where a
      single agent depends on the pool.  The square root sits between the two; the
      measurements behind the choice are in ``models/partition.md`` ("The split").

    >>> split_capacity(np.array([7, 1, 1]), 3).tolist()
    [[3, 0, 0], [2, 1, 0], [2, 0, 1]]
    >>> split_capacity(np.array([3, 1]), 2, integral=False).tolist()
    [[1.5, 0.5], [1.5, 0.5]]
    >>> split_capacity(np.array([3.0, 1.0]), 2, integral=False, rule="sqrt",
    ...                presence=np.array([[4, 0], [1, 0]])).tolist()
    [[2.0, 0.5], [1.0, 0.5]]
    """
    if not integral:
        if rule not in CAPACITY_SPLITS:
            raise InputError(f"capacity_split must be one of {', '.join(CAPACITY_SPLITS)}, got {rule!r}",
                             path="option capacity_split")
        share = np.asarray(counts, dtype=np.float64) / parts
        if rule == "equal" or presence is None:
            return np.repeat(share[None, :], parts, axis=0)
        root = np.sqrt(np.asarray(presence, dtype=np.float64))
        total = root.sum(axis=0)
        reached = total > 0
        out = np.repeat(share[None, :], parts, axis=0)
        out[:, reached] = root[:, reached] * (np.asarray(counts, dtype=np.float64)[reached] / total[reached])
        return out
    counts = np.asarray(counts, dtype=np.int64)
    base, rest = np.divmod(counts, parts)
    out = np.repeat(base[None, :], parts, axis=0)
    q = np.arange(parts)[:, None]
    shifted = (q - np.arange(counts.shape[0])[None, :]) % parts
    out += (shifted < rest[None, :]).astype(np.int64)
    return out


def part_tasks(problem: Problem, parts: int, seed: int, method: str, *,
               integral: bool = True, capacity_split: str = "equal") -> tuple[list[dict], np.ndarray]:
    """One task dict per part (local arrays only, ready to ship to a worker) and each agent's part.

    ``integral``: split every pool's devices as whole devices (else time shares by
    ``capacity_split``, :func:`split_capacity`).
    A task holds ``part``, ``method``, ``agents`` (global ids of its agents),
    ``edges`` (global edge ids), the local ``edge_agent``, ``edge_pool``, ``coef``,
    ``demands`` and ``capacity`` (``k_c^q``).
    """
    part_of = split_agents(problem.n_agents, parts, seed)
    presence = pool_presence(problem, part_of, parts) if not integral and capacity_split == "sqrt" else None
    caps = split_capacity(problem.counts, parts, integral=integral, rule=capacity_split, presence=presence)
    agent_order = np.argsort(part_of, kind="stable")
    agent_bounds = np.searchsorted(part_of[agent_order], np.arange(parts + 1))
    edge_part = part_of[problem.edge_agent]
    edge_order = np.argsort(edge_part, kind="stable")
    edge_bounds = np.searchsorted(edge_part[edge_order], np.arange(parts + 1))
    local = np.empty(problem.n_agents, dtype=np.int64)
    tasks = []
    for q in range(parts):
        agents = agent_order[agent_bounds[q]:agent_bounds[q + 1]]
        edges = edge_order[edge_bounds[q]:edge_bounds[q + 1]]
        local[agents] = np.arange(agents.shape[0])
        tasks.append({
            "part": q, "method": method, "instance_name": f"part {q + 1} of {parts}",
            "agents": agents, "edges": edges, "edge_agent": local[problem.edge_agent[edges]],
            "edge_pool": problem.edge_pool[edges], "coef": problem.coef[edges],
            "demands": problem.demands[agents], "capacity": caps[q],
        })
    return tasks, part_of


def price_task(problem: Problem, size: int, seed: int) -> dict:
    """A task whose LP only prices the pools: ``size`` agents drawn at random with ``k_c size / n`` of every pool.

    Its capacity duals estimate the whole instance's market-clearing prices
    (the same argument as the partition's: a random sample sees the whole
    market scaled down); any prices give a valid bound, so an estimate is safe.
    """
    rng = np.random.default_rng([seed, 1])
    n = problem.n_agents
    chosen = np.sort(rng.choice(n, size=min(size, n), replace=False))
    mask = np.zeros(n, dtype=bool)
    mask[chosen] = True
    local = np.full(n, -1, dtype=np.int64)
    local[chosen] = np.arange(chosen.shape[0])
    edges = np.flatnonzero(mask[problem.edge_agent])
    return {"part": -1, "method": "welfare", "instance_name": "price sample", "agents": chosen, "edges": edges,
            "edge_agent": local[problem.edge_agent[edges]], "edge_pool": problem.edge_pool[edges],
            "coef": problem.coef[edges], "demands": problem.demands[chosen],
            "capacity": problem.counts.astype(np.float64) * chosen.shape[0] / n}


def _allocation_model(name: str, task: dict, objective: bool) -> tuple[LinearModel, object, object]:
    edge_agent, edge_pool, demands = task["edge_agent"], task["edge_pool"], task["demands"]
    capacity = task["capacity"].astype(np.float64)
    n_edges = edge_agent.shape[0]
    model = LinearModel(name, sense="max")
    upper = np.minimum(demands[edge_agent], capacity[edge_pool])
    x = model.add_variables("x", n_edges, upper=upper)
    # Declared as a transportation structure (agents left, pools right): min-cost flow applies to welfare.
    model.add_transportation(x, left=edge_agent, right=edge_pool, left_capacity=demands, right_capacity=capacity,
                             left_block="demand", right_block="capacity")
    cap = model.constraints["capacity"]
    if objective:
        model.set_objective(x, task["coef"])
    return model, x, cap


def build_part(task: dict) -> tuple[LinearModel, object, object, object, np.ndarray | None]:
    """The LP of one part (a task of :func:`part_tasks`): ``(model, x, capacity, level, can)``.

    ``welfare``: ``max sum_e coef_e x_e`` over the part's ``capacity`` rows
    (``sum_{e at c} x_e <= k_c^q``) and ``demand`` rows (``sum_{e of i} x_e <= d_i``).
    ``maxmin``: ``max t`` with the ``level`` rows ``sum_{e of i} coef_e x_e - t >= 0``
    for the agents ``can`` of the part that can get a positive value; ``level`` and
    ``can`` are None for welfare.  Blocks as in ``models/partition.md``.

    >>> t = {"part": 0, "method": "maxmin", "edge_agent": np.array([0, 1]), "edge_pool": np.array([0, 0]),
    ...      "coef": np.array([0.9, 0.5]), "demands": np.array([1.0, 1.0]), "capacity": np.array([1])}
    >>> model = build_part(t)[0]
    >>> sorted(model.variables), sorted(model.constraints)
    (['t', 'x'], ['capacity', 'demand', 'level'])
    """
    method = task["method"]
    coef = task["coef"]
    n_local = task["demands"].shape[0]
    if method == "welfare":
        model, x, cap = _allocation_model("welfare part", task, objective=True)
        return model, x, cap, None, None
    model, x, cap = _allocation_model("maxmin part", task, objective=False)
    # Agents that can get a positive value take part in the level rows.
    can = np.zeros(n_local, dtype=bool)
    reach = (coef > 0) & (task["capacity"][task["edge_pool"]] > 0) & (task["demands"][task["edge_agent"]] > 0)
    can[task["edge_agent"][reach]] = True
    t_var = model.add_variables("t", 1, upper=_INF)
    model.set_objective(t_var, [1.0])
    on = can[task["edge_agent"]]
    row_of = np.cumsum(can) - 1
    n_level = int(can.sum())
    rows = np.concatenate([row_of[task["edge_agent"][on]], np.arange(n_level)])
    cols = np.concatenate([x.columns(np.flatnonzero(on)), np.full(n_level, t_var.start)])
    coefs = np.concatenate([coef[on], -np.ones(n_level)])
    if n_level == 0:  # nobody can be served: the level is vacuous, t is 0
        t_var.upper[:] = 0.0
    level = model.add_constraints("level", rows=rows, cols=cols, coefs=coefs, lower=0.0, n_rows=n_level)
    return model, x, cap, level, can


def unsolved_part(task: dict, status: str, seconds: float = 0.0) -> dict:
    """The outcome of a part that returned no allocation (its agents get nothing): ``status`` says why."""
    return {"part": task["part"], "status": status, "objective": None, "x": None, "prices": None, "lam": None,
            "can": None, "seconds": seconds, "cpu_s": 0.0}


def solve_part(task: dict) -> dict:
    """:func:`solve_part_now` within ``task["deadline"]`` (seconds since the epoch, the whole run's; None: no limit).

    A part the deadline has passed for is not started (status :data:`NOT_RUN`); one
    running at the deadline stops there (:data:`STOPPED`), with the last feasible point
    it had or none.  The deadline is wall-clock time since the epoch, so it means the
    same in every worker process and on every machine of a cluster with synchronised clocks.

    >>> t = {"part": 0, "method": "welfare", "edge_agent": np.array([0]), "edge_pool": np.array([0]),
    ...      "coef": np.array([1.0]), "demands": np.array([1.0]), "capacity": np.array([1]), "deadline": 0.0}
    >>> solve_part(t)["status"]
    'not_run'
    """
    end = task.get("deadline")
    if end is None:
        return solve_part_now(task)
    start = time.time()
    if end - start <= 0:
        return unsolved_part(task, NOT_RUN)
    with deadline(end - start):
        try:
            return solve_part_now(task)
        except (NoSolutionError, TimeLimitReached):
            if time.time() < end - DEADLINE_SLACK_S:
                raise  # no solution for another reason than the limit: not the deadline's doing
            return unsolved_part(task, STOPPED, time.time() - start)


def solve_part_now(task: dict) -> dict:
    """Solve one part (a task of :func:`part_tasks`, model :func:`build_part`) with HiGHS; arrays and duals.

    ``task["levels"]`` (maxmin) ``"all"``: every leximin level, ``"first"``: the max-min LP
    only, both by :func:`laissez_opt.partition.levels.leximin_part`; unset: the max-min LP of :func:`build_part`.
    ``task["flow"]`` (welfare): OR-Tools min-cost flow, much faster, without duals
    (``prices`` None; costs scaled to integers, so ``status`` may be ``feasible``
    within the rounding bound the route states).
    Returns ``status``, ``objective``, ``x`` (per local edge), ``prices`` (capacity
    duals ``p^q_c >= 0``), ``lam`` (maxmin: level duals ``lambda^q_i >= 0``, summing
    to 1, per local agent), ``can``, ``seconds`` and ``cpu_s`` (this process's CPU time).

    >>> t = {"part": 0, "method": "welfare", "edge_agent": np.array([0, 1]), "edge_pool": np.array([0, 0]),
    ...      "coef": np.array([0.9, 0.5]), "demands": np.array([1.0, 1.0]), "capacity": np.array([1])}
    >>> out = solve_part(t)
    >>> out["status"], round(out["objective"], 6), out["x"].tolist()
    ('optimal', 0.9, [1.0, 0.0])
    """
    if task["method"] == "maxmin" and task.get("levels") in ("all", "first"):
        from .levels import leximin_part

        return leximin_part(task)
    if task["method"] == "themis":
        from .themis import themis_part

        return themis_part(task)
    start, cpu = time.perf_counter(), time.process_time()
    n_local = task["demands"].shape[0]
    model, x, cap, level, can = build_part(task)
    if task.get("flow"):
        # Welfare without duals: the part is a transportation problem, solved as a min-cost flow.
        solution = solve_model(model, solver="ortools", backend="min_cost_flow")
    else:
        solution = solve_model(model, solver="highs", duals=True)
    out = {"part": task["part"], "status": solution.status, "objective": solution.objective,
           "x": None, "prices": None, "lam": None, "can": None}
    if solution.values is not None:
        out["x"] = np.clip(solution.values[x.slice], 0.0, None)
    if solution.duals is not None:
        out["prices"] = np.clip(solution.duals.row[cap.start:cap.start + cap.size], 0.0, None)
        if level is not None:
            lam = np.zeros(n_local)
            lam[can] = np.clip(-solution.duals.row[level.start:level.start + level.size], 0.0, None)
            out["lam"] = lam
    out["can"] = can
    out["seconds"] = time.perf_counter() - start
    out["cpu_s"] = time.process_time() - cpu
    return out


def merge(problem: Problem, tasks: list[dict], outcomes: dict[int, dict]) -> np.ndarray:
    """The parts' amounts written back to the whole instance's edges (``E``)."""
    amounts = np.zeros(problem.n_edges)
    for task in tasks:
        out = outcomes[task["part"]]
        if out.get("x") is not None:
            amounts[task["edges"]] = out["x"]
    return amounts


def check_feasible(problem: Problem, amounts: np.ndarray, *, tol: float = 1e-6) -> float:
    """Largest violation of ``x >= 0``, ``sum_i x_ic <= k_c`` and ``sum_c x_ic <= d_i`` (vectorised).

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.ones(2), np.array([1]), np.ones(2), np.full(2, np.inf))
    >>> check_feasible(p, np.array([0.5, 0.75]))
    0.25
    """
    used = np.bincount(problem.edge_pool, weights=amounts, minlength=problem.n_pools)
    taken = np.bincount(problem.edge_agent, weights=amounts, minlength=problem.n_agents)
    over_cap = float(np.max(used - problem.counts, initial=0.0))
    finite = np.isfinite(problem.demands)
    over_demand = float(np.max(taken[finite] - problem.demands[finite], initial=0.0))
    negative = float(np.max(-amounts, initial=0.0))
    return max(0.0, over_cap, over_demand, negative)


def inner_maximum(problem: Problem, profit: np.ndarray, *, amounts: bool = False):
    """Per agent, ``max sum_c profit_e x_e`` over ``0 <= x_e <= k_c``, ``sum_c x_e <= d_i`` (fractional knapsack).

    Each agent fills its edges in decreasing order of positive profit, up to
    ``d_i`` devices in all: exact for this box-and-budget set.  With ``amounts``
    also returns the maximiser ``x_e`` per edge (a subgradient of the bound).

    >>> p = Problem(np.array([0, 0]), np.array([0, 1]), np.ones(2), np.array([2, 3]), np.ones(1), np.array([4.0]))
    >>> inner_maximum(p, np.array([1.0, 2.0])).tolist()    # 3 devices at 2, then 1 at 1
    [7.0]
    """
    positive = np.flatnonzero(profit > 0)
    agent = problem.edge_agent[positive]
    gain = profit[positive]
    cap = problem.counts[problem.edge_pool[positive]].astype(np.float64)
    best = np.zeros(problem.n_agents)
    x = np.zeros(problem.n_edges) if amounts else None
    if agent.size and bool(np.all(agent[1:] >= agent[:-1])):
        # Edges grouped by agent (the usual layout): an agent whose demand fits in every
        # edge it values takes d_i devices of its most profitable edge, with no sort.
        starts = np.flatnonzero(np.r_[True, agent[1:] != agent[:-1]])
        owners = agent[starts]
        top = np.maximum.reduceat(gain, starts)
        smallest = np.minimum.reduceat(cap, starts)
        simple = problem.demands[owners] <= smallest
        best[owners[simple]] = problem.demands[owners[simple]] * top[simple]
        if amounts:
            group = np.repeat(np.arange(starts.shape[0]), np.diff(np.r_[starts, agent.shape[0]]))
            is_top = simple[group] & (gain == top[group])
            first = np.flatnonzero(is_top)
            first = first[np.r_[True, group[first[1:]] != group[first[:-1]]]] if first.size else first
            x[positive[first]] = problem.demands[agent[first]]
        rest = ~simple[np.repeat(np.arange(starts.shape[0]), np.diff(np.r_[starts, agent.shape[0]]))]
        positive, agent, gain, cap = positive[rest], agent[rest], gain[rest], cap[rest]
    order = np.lexsort((-gain, agent))
    agent, gain, cap = agent[order], gain[order], cap[order]
    filled = np.cumsum(cap)
    first = np.searchsorted(agent, agent, side="left")
    before = filled - cap - np.where(first > 0, filled[first - 1], 0.0)
    room = np.clip(problem.demands[agent] - before, 0.0, None)
    take = np.minimum(cap, room)
    best += np.bincount(agent, weights=gain * take, minlength=problem.n_agents)
    if not amounts:
        return best
    x[positive[order]] = take
    return best, x


def refine_prices(problem: Problem, prices: np.ndarray, lam: np.ndarray | None, target: float, *,
                  iterations: int = 8, seconds: float | None = None) -> tuple[float, np.ndarray, int]:
    """Lower the Lagrangian bound by projected subgradient steps from ``prices`` (Polyak's step size).

    ``L`` is convex in ``p``; ``g_c = k_c - sum_{e at c} x_e(p)`` (``x(p)`` the inner
    maximisers) is a subgradient, and the step ``(L(p) - target) / |g|^2`` with
    ``target`` a known lower bound on ``min_p L`` (the merged objective) is Polyak's.
    Every iterate is a valid bound; the smallest is returned with its prices and the
    number of steps taken.  Reference: Polyak (1969); Held, Wolfe & Crowder (1974).

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([0.9, 0.5]), np.array([1]),
    ...             np.ones(2), np.ones(2)).for_method("welfare")
    >>> round(refine_prices(p, np.array([0.0]), None, 0.9)[0], 6)
    0.9
    """
    start = time.perf_counter()
    counts = problem.counts.astype(np.float64)
    p = np.clip(np.asarray(prices, dtype=np.float64), 0.0, None)
    lam = None if lam is None else np.asarray(lam, dtype=np.float64)
    support = None if lam is None else lam > 0
    best_value, best_p, steps = math.inf, p, 0
    for step in range(iterations + 1):
        scale = 1.0 if lam is None else lam[problem.edge_agent]
        inner, x = inner_maximum(problem, scale * problem.coef - p[problem.edge_pool], amounts=True)
        value = float(p @ counts + inner.sum())
        if value < best_value:
            best_value, best_p = value, p
        steps = step
        if step == iterations or (seconds is not None and time.perf_counter() - start > seconds):
            break
        g = counts - np.bincount(problem.edge_pool, weights=x, minlength=problem.n_pools)
        norm = float(g @ g)
        if lam is not None:
            # Max-min: L is jointly convex in (p, lambda); lambda's subgradient is each agent's value v_i(x).
            values = np.bincount(problem.edge_agent, weights=problem.coef * x, minlength=problem.n_agents)[support]
            gl = values - values.mean()  # the projection of the subgradient on sum(lambda) = const
            norm += float(gl @ gl)
        if norm <= 0 or value - target <= 1e-12 * max(1.0, abs(value)):
            break
        size = (value - target) / norm
        p = np.clip(p - size * g, 0.0, None)
        if lam is not None:
            lam = lam.copy()
            lam[support] = _simplex(lam[support] - size * gl)
    return best_value, best_p, steps


def lagrangian_bound(problem: Problem, prices: np.ndarray, lam: np.ndarray | None = None) -> float:
    """``L(p, lambda) = sum_c p_c k_c + sum_i max_{x_i} sum_c (lambda_i coef_e - p_c) x_e``: an upper bound.

    Welfare (``lam`` None, every ``lambda_i = 1``): for any prices ``p >= 0`` and any
    feasible ``x``, ``sum coef x <= sum coef x + sum_c p_c (k_c - sum_i x_ic) <= L(p)``.
    Max-min's first level: for ``lambda >= 0`` with ``sum_i lambda_i = 1`` over the
    agents of the level rows, ``t <= sum_i lambda_i v_i(x)``, the same argument
    applies (``models/partition.md`` proves both).

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([0.9, 0.5]), np.array([1]),
    ...             np.ones(2), np.ones(2)).for_method("welfare")
    >>> round(lagrangian_bound(p, np.array([0.0])), 9), round(lagrangian_bound(p, np.array([0.6])), 9)
    (1.4, 0.9)
    """
    prices = np.clip(np.asarray(prices, dtype=np.float64), 0.0, None)
    scale = 1.0 if lam is None else lam[problem.edge_agent]
    profit = scale * problem.coef - prices[problem.edge_pool]
    return float(prices @ problem.counts.astype(np.float64) + inner_maximum(problem, profit).sum())


def _simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` on the probability simplex (Held, Wolfe & Crowder 1974; Duchi et al. 2008)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.shape[0] + 1)
    rho = np.flatnonzero(u - css / k > 0)[-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def price_candidates(tasks: list[dict], outcomes: dict[int, dict], parts: int) -> list[tuple[str, np.ndarray]]:
    """Prices to try in the bound: the parts' mean and median capacity duals, and each part's own."""
    rows = [outcomes[t["part"]]["prices"] for t in tasks if outcomes.get(t["part"], {}).get("prices") is not None]
    if not rows:
        return []
    stack = np.vstack(rows)
    out = [("mean", stack.mean(axis=0)), ("median", np.median(stack, axis=0))]
    if 1 < stack.shape[0] <= 16:
        out += [(f"part {q + 1}", stack[q]) for q in range(stack.shape[0])]
    return out


def equal_share_normalizer(problem: Problem) -> np.ndarray:
    """``E_i = U_i^ex / w_i`` with ``U_i^ex = (w_i / sum_j w_j) sum_{e in i} u_e k_c`` (one round), as in ``maxmin``.

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 2.0]), np.array([4]),
    ...             np.array([3.0, 1.0]), np.full(2, np.inf))
    >>> equal_share_normalizer(p).tolist()
    [1.0, 2.0]
    """
    per_edge = problem.utility * problem.counts[problem.edge_pool]
    return np.bincount(problem.edge_agent, weights=per_edge, minlength=problem.n_agents) / problem.weights.sum()


def objective_of(problem: Problem, method: str, amounts: np.ndarray) -> tuple[float, np.ndarray]:
    """The whole instance's objective of ``amounts`` and each agent's value ``sum_e coef_e x_e``.

    Welfare: ``sum_e coef_e x_e``.  Max-min: ``min_i v_i`` over the agents that can get
    a positive value in the whole instance (an edge with ``coef_e > 0`` and ``d_i > 0``).
    """
    values = np.bincount(problem.edge_agent, weights=problem.coef * amounts, minlength=problem.n_agents)
    if method == "welfare":
        return float(values.sum()), values
    return float(np.min(values[participants(problem)], initial=_INF)), values


def participants(problem: Problem) -> np.ndarray:
    """Agents that can get a positive value: an edge with ``coef_e > 0`` and ``d_i > 0`` (boolean, ``n``)."""
    can = np.zeros(problem.n_agents, dtype=bool)
    live = (problem.coef > 0) & (problem.demands[problem.edge_agent] > 0)
    can[problem.edge_agent[live]] = True
    return can


def max_t_model(edge_agent: np.ndarray, edge_pool: np.ndarray, coef: np.ndarray, capacity: np.ndarray,
                demands: np.ndarray, upper: np.ndarray, agents: np.ndarray, *, t_lower: float,
                group: np.ndarray | None = None):
    """A HiGHS model of ``max t`` s.t. ``sum_i x_ic <= k_c``, ``sum_c x_ic <= d_i`` (finite ``d_i``) and
    ``sum_c a_ic x_ic - t >= 0`` for every agent of ``agents``, ``0 <= x_e <= upper_e``, ``t >= t_lower``.

    The level LP of the partitioned leximin and the finish-rate LP of partitioned
    Themis (``models/partition.md``).  Columns: the edges' ``x``, then ``t``; rows:
    the pools, the finite demands, then one row per agent of ``agents``, in order.
    ``group`` (one index ``g`` per agent of ``agents``, ``0 .. G-1``): one column
    ``t_g`` per group instead of the single ``t``, agent rows reading
    ``sum_c a_ic x_ic - t_g >= 0`` and the objective ``max sum_g t_g`` (independent
    components solved side by side, :func:`laissez_opt.partition.levels.leximin_part`).
    Returns the model, each agent's row among those (``-1`` for the others) and
    the index of the first such row.
    """
    import highspy

    n_local, n_edges, n_pools = demands.shape[0], edge_agent.shape[0], capacity.shape[0]
    n_rows_agents = agents.shape[0]
    row_of = np.full(n_local, -1, dtype=np.int64)
    row_of[agents] = np.arange(n_rows_agents)
    finite = np.isfinite(demands)
    demand_agents = np.flatnonzero(finite)
    demand_row = np.full(n_local, -1, dtype=np.int64)
    demand_row[demand_agents] = np.arange(demand_agents.shape[0])
    base_d, base = n_pools, n_pools + demand_agents.shape[0]
    on_demand = finite[edge_agent]
    on_agent = (coef > 0) & (row_of[edge_agent] >= 0)
    e_ids = np.arange(n_edges)
    group = np.zeros(n_rows_agents, dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64)
    n_t = int(group.max()) + 1 if group.size else 1
    rows = np.concatenate([edge_pool, base_d + demand_row[edge_agent[on_demand]],
                           base + row_of[edge_agent[on_agent]], base + np.arange(n_rows_agents)])
    cols = np.concatenate([e_ids, e_ids[on_demand], e_ids[on_agent], n_edges + group])
    vals = np.concatenate([np.ones(n_edges), np.ones(int(on_demand.sum())), coef[on_agent], -np.ones(n_rows_agents)])
    order = np.lexsort((rows, cols))
    rows, cols, vals = rows[order], cols[order], vals[order]
    n_cols = n_edges + n_t
    indptr = np.searchsorted(cols, np.arange(n_cols + 1))
    inf = highspy.kHighsInf
    row_lower = np.concatenate([np.full(base, -inf), np.zeros(n_rows_agents)])
    row_upper = np.concatenate([capacity, demands[demand_agents], np.full(n_rows_agents, inf)])
    col_lower = np.concatenate([np.zeros(n_edges), np.full(n_t, t_lower)])
    col_upper = np.concatenate([upper, np.full(n_t, inf if n_rows_agents else max(t_lower, 0.0))])
    cost = np.zeros(n_cols)
    cost[n_edges:] = 1.0
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(int(n_cols), int(base + n_rows_agents), int(vals.size), int(highspy.MatrixFormat.kColwise),
                int(highspy.ObjSense.kMaximize), 0.0, cost, col_lower, col_upper, row_lower, row_upper,
                np.ascontiguousarray(indptr[:-1], dtype=np.int32), np.ascontiguousarray(rows, dtype=np.int32),
                np.ascontiguousarray(vals, dtype=np.float64), np.zeros(n_cols, dtype=np.int32))
    return h, row_of, base
