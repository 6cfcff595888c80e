"""Dominant resource fairness (DRF) with per-pool placement, ``models.md`` item 3 (variant).

Agents run *tasks* that need several resource kinds at once (accelerators,
CPU cores, memory, ...), the multi-resource setting of DRF (Ghodsi et al.,
NSDI 2011) and of fungible applications (Quicksand, seed 004).  Instance
fields: ``agents[].task`` = ``D_i``, the demand of one task per kind (default
``{"accelerator": 1}``); ``pools[].resources`` = ``R_c``, the pool's capacity
per kind (``accelerator`` defaults to ``count``; kinds not listed: 0).

Decision: ``y_{i,c,r} >= 0`` tasks of agent ``i`` placed on compatible pool
``c`` in round ``r`` (block ``y``; fractional tasks in fractional mode,
integers in integral mode).  A task sits on one pool and takes all its
resources there:

* ``resource``: ``sum_i D_{i,rho} y_{i,c,r} <= R_{c,rho}`` for every pool ``c``,
  kind ``rho`` and round ``r``;
* ``demand``:   ``sum_c y_{i,c,r} <= d_i`` (``d_i`` counts *tasks* here);
* ``y = 0`` off edges and outside the agent's window ``a_i..D_i``.

Dominant share: the pooled capacity of kind ``rho`` for agent ``i`` is
``C_{i,rho} = sum_{c compatible with i} R_{c,rho}`` (``capacity_basis="compatible"``,
the default) or the whole cluster's ``sum_c R_{c,rho}`` (``"cluster"``, DRF's
original single-cluster definition).  One task's dominant share is
``delta_i = max_{rho: D_{i,rho} > 0} D_{i,rho} / C_{i,rho}`` and the agent's (per-round
average) dominant share is ``s_i = delta_i N_i / R`` with ``N_i = sum_{c,r} y_{i,c,r}``.
DRF is the leximin of the weighted dominant shares ``s_i / w_i``: progressive
filling raises every agent's share at the same rate and stops an agent when a
resource it needs is exhausted, which on this polytope is exactly the
waterfilling of :mod:`laissez_opt.exact.leximin` (exact LPs in fractional
mode, ordered-outcome MILPs in integral mode).  Integral mode with
interchangeable tasks in every pool (:func:`interchangeable_tasks`, always so
with the default task) is solved instead by greedy increments on a polymatroid,
each bulk step checked by one max flow (:mod:`laissez_opt.exact.count_flow`,
option ``flow``), exactly and at a million jobs.  Agents that can place no task
(no compatible pool holding every kind they need, ``d_i = 0``) are fixed at 0.

Not modelled: machines inside a pool (a pool's resources are one bin, so a task
may use CPU and memory that in reality sit on different servers of the pool),
task durations and queues, and gang constraints.  With one pool and one
round this is the DRF of the paper; with one resource kind (the default task)
it is weighted max-min of devices, normalised by each agent's reachable devices.

``objective`` is ``min_i s_i / w_i`` over the agents that take part;
``details`` adds ``dominant_shares`` (``s_i``), ``tasks`` (``N_i``), ``leximin``
(``s_i / w_i``) and the levels.  Allocation records count tasks.

Reference: Ghodsi, Zaharia, Hindman, Konwinski, Shenker & Stoica, "Dominant
Resource Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011
(definition, progressive filling, the 9-CPU / 18-GB example).

Example
-------
The paper's example: 9 CPUs and 18 GB; A's tasks need <1 CPU, 4 GB>, B's
<3 CPU, 1 GB>; DRF gives A three tasks and B two (both at dominant share 2/3).

>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("cluster", count=1, resources={"cpu": 9, "memory": 18, "accelerator": 0})],
...                    agents=[lo.Agent("A", task={"cpu": 1, "memory": 4}), lo.Agent("B", task={"cpu": 3, "memory": 1})],
...                    edges=[lo.Edge("A", "cluster", 1.0), lo.Edge("B", "cluster", 1.0)])
>>> r = lo.solve(inst, "drf")
>>> r.status, r.details["tasks"], round(r.objective, 6)
('optimal', {'A': 3.0, 'B': 2.0}, 0.666667)
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..method_spec import Method, Option, solver_options
from ..modeling import LinearModel
from ..modeling.solution import Solution, relative_gap
from ..result import Result
from .classes import COMPRESS_CHOICES, class_estimate, compress_option, solve_on_classes
from .common import AllocationColumns, allocation_result, allocation_size, refuse_overflow
from .count_flow import CountNetwork, lexicographic_count_flow
from .leximin import (
    FREEZE_TESTS, LEXIMIN_OPTIONS, LeximinPlan, declare_leximin, first_level, leximin_size, solve_leximin,
)
from .maxmin import leximin_result

__all__ = ["CAPACITY_BASES", "FLOW_CHOICES", "resource_arrays", "task_shares", "max_placed_tasks", "interchangeable_tasks",
           "task_flow_network", "build_drf", "solve_drf"]

CAPACITY_BASES = ("compatible", "cluster")
#: ``flow`` option of integral drf: the count flow where tasks are interchangeable, or always the MILPs.
FLOW_CHOICES = ("auto", "off")


def resource_arrays(instance: Instance) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(kinds, D, R)``: the kinds some task needs, ``D`` (``n x K``) per task, ``R`` (``m x K``) per pool.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2, resources={"cpu": 8})],
    ...                    agents=[lo.Agent("A", task={"accelerator": 1, "cpu": 2})], edges=[])
    >>> kinds, D, R = resource_arrays(inst)
    >>> kinds, D.tolist(), R.tolist()
    (['accelerator', 'cpu'], [[1.0, 2.0]], [[2.0, 8.0]])
    """
    cached = instance.__dict__.get("_resource_arrays")
    if cached is not None:
        return cached[0], cached[1].copy(), cached[2].copy()
    # Read the task column, not the records: most agents give no task (one accelerator),
    # and a million Agent records would cost seconds.
    tasks = instance.agent_field("task")
    given = [i for i, task in enumerate(tasks) if task is not None]
    vectors = {i: {k: float(v) for k, v in tasks[i]} for i in given}
    kinds = sorted({k for t in vectors.values() for k, v in t.items() if v > 0}
                   | ({"accelerator"} if len(given) < len(tasks) else set()))
    D = np.zeros((len(tasks), len(kinds)), dtype=np.float64)
    if len(given) < len(tasks):
        D[:, kinds.index("accelerator")] = 1.0
    for i, vector in vectors.items():
        D[i] = [vector.get(k, 0.0) for k in kinds]
    caps = [p.capacity_vector for p in instance.pools]
    R = np.array([[c.get(k, 0.0) for k in kinds] for c in caps], dtype=np.float64).reshape(len(caps), len(kinds))
    instance.__dict__["_resource_arrays"] = (kinds, D, R)
    return kinds, D.copy(), R.copy()


def task_shares(instance: Instance, capacity_basis: str = "compatible") -> np.ndarray:
    """``delta_i``: the dominant share of one task of each agent (``inf`` where no capacity of a needed kind exists).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("C", resources={"cpu": 9, "memory": 18})],
    ...                    agents=[lo.Agent("A", task={"cpu": 1, "memory": 4})], edges=[lo.Edge("A", "C", 1.0)])
    >>> round(float(task_shares(inst)[0]), 6)
    0.222222
    """
    if capacity_basis not in CAPACITY_BASES:
        raise InputError(
            f"unknown capacity_basis {capacity_basis!r}; choose one of {', '.join(CAPACITY_BASES)}", path="option capacity_basis"
        )
    _, D, R = resource_arrays(instance)
    if capacity_basis == "cluster":
        C = np.broadcast_to(R.sum(axis=0), D.shape)
    else:
        C = np.zeros_like(D)
        np.add.at(C, instance.edge_agent, R[instance.edge_pool])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(D > 0, D / np.where(C > 0, C, 1.0), 0.0)
        ratio = np.where((D > 0) & (C <= 0), np.inf, ratio)
    return ratio.max(axis=1, initial=0.0)


def max_placed_tasks(instance: Instance) -> float:
    """An upper bound on the whole tasks placed at once, over every pool and round.

    Every task needs some kind ``rho`` (the instance checks refuse an empty
    task), so counting each task under one kind it needs, pool ``c`` holds in a
    round at most

    .. math::

        T_c = \\sum_{\\rho} \\Big\\lfloor R_{c,\\rho} / \\min_{i \\sim c,\\ D_{i,\\rho} > 0} D_{i,\\rho} \\Big\\rfloor

    tasks (``i ~ c``: agents with an edge to ``c``; a kind no such agent needs adds
    nothing), and ``R sum_c T_c`` bounds the tasks of all rounds.  In integral mode a
    served agent places at least one task, so at most that many agents have a
    positive share and the first ``n - R sum_c T_c`` ordered outcomes are 0.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2)], agents=[lo.Agent(a) for a in "ABC"],
    ...                    edges=[lo.Edge(a, "P", 1.0) for a in "ABC"])
    >>> max_placed_tasks(inst)
    2.0
    """
    _, D, R = resource_arrays(instance)
    if instance.n_edges == 0 or D.shape[1] == 0:
        return 0.0
    smallest = np.full(R.shape, np.inf)
    need = D[instance.edge_agent]
    np.minimum.at(smallest, instance.edge_pool, np.where(need > 0, need, np.inf))
    with np.errstate(invalid="ignore"):
        fits = np.where(np.isfinite(smallest), np.floor(R / np.where(np.isfinite(smallest), smallest, 1.0)), 0.0)
    return float(fits.sum()) * instance.rounds


def _task_columns(instance: Instance, D: np.ndarray, R: np.ndarray):
    """Per column (edge, round): its edge, round, agent, pool and the tasks it can hold.

    ``u = min(min_{rho: D_{i,rho} > 0} R_{c,rho} / D_{i,rho}, d_i)`` inside the agent's
    window ``a_i..D_i`` and 0 outside it.
    """
    rounds = instance.rounds
    edge = np.repeat(np.arange(instance.n_edges), rounds)
    round_ = np.tile(np.arange(rounds), instance.n_edges)
    agent = instance.edge_agent[edge]
    pool = instance.edge_pool[edge]
    need = D[agent] > 0  # (columns, kinds)
    with np.errstate(divide="ignore", invalid="ignore"):
        fit = np.where(need, R[pool] / np.where(need, D[agent], 1.0), np.inf)
    upper = np.minimum(fit.min(axis=1, initial=np.inf), instance.demands[agent])
    arrival = np.array(instance.agent_field("arrival"), dtype=np.int64)
    upper = np.where((round_ >= arrival[agent]) & (round_ <= instance.last_rounds[agent]), upper, 0.0)
    upper = np.where(np.isfinite(upper), upper, 0.0)  # a task needing nothing is rejected by the instance checks
    return edge, round_, agent, pool, upper


def interchangeable_tasks(instance: Instance) -> bool:
    """Whether in every pool all agents with an edge to it (and ``d_i != 0``) need the same task vector.

    >>> import laissez_opt as lo
    >>> pools = [lo.Pool("P", count=4, resources={"cpu": 8})]
    >>> same = [lo.Agent("A", task={"accelerator": 1, "cpu": 2}), lo.Agent("B", task={"accelerator": 1, "cpu": 2})]
    >>> interchangeable_tasks(lo.Instance(pools, same, [lo.Edge(a.id, "P", 1.0) for a in same]))
    True
    >>> mixed = [same[0], lo.Agent("C", task={"accelerator": 1, "cpu": 4})]
    >>> interchangeable_tasks(lo.Instance(pools, mixed, [lo.Edge(a.id, "P", 1.0) for a in mixed]))
    False
    """
    _, D, _ = resource_arrays(instance)
    live = instance.demands[instance.edge_agent] != 0
    a, p = instance.edge_agent[live], instance.edge_pool[live]
    first = np.full(instance.n_pools, -1, dtype=np.int64)
    first[p[::-1]] = a[::-1]
    return bool(np.array_equal(D[a], D[first[p]]))


def task_flow_network(instance: Instance, capacity_basis: str = "compatible") -> tuple[CountNetwork, np.ndarray] | None:
    """Integral DRF as a count flow (:mod:`laissez_opt.exact.count_flow`), or None when it is not one.

    It is one when in every pool all agents that can place a task there need the
    same task vector ``D``: the pool then holds
    ``T_c = floor(min_{rho: D_rho > 0} R_{c,rho} / D_rho)`` tasks per round whoever runs
    them, and ``s_i / w_i = g_i N_i`` with ``g_i = delta_i / (R w_i)`` depends on the
    number of tasks ``N_i`` alone.  Network: agent ``i`` -> group ``(i, r)`` (``d_i``)
    -> node ``(c, r)`` (``floor(u)`` of the column) -> sink (``T_c``).  Returns the
    network and, per column of the network, its column (edge-round) index.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A", demand=2), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> net, cols = task_flow_network(inst)
    >>> net.node_cap.tolist(), net.group_cap.tolist(), net.col_cap.tolist()   # B's unbounded demand: 1 + all tasks
    ([3], [2, 4], [2, 3])
    """
    if not interchangeable_tasks(instance):
        return None
    kinds, D, R = resource_arrays(instance)
    edge, round_, agent, pool, upper = _task_columns(instance, D, R)
    cap = np.floor(upper + 1e-9)
    used = np.flatnonzero(cap >= 1)
    rounds = instance.rounds
    a, p = agent[used], pool[used]
    first = np.full(instance.n_pools, -1, dtype=np.int64)
    first[p[::-1]] = a[::-1]  # an agent placing tasks in each pool: all there need its task vector
    need = D[np.maximum(first, 0)] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        per_kind = np.where(need, R / np.where(need, D[np.maximum(first, 0)], 1.0), np.inf)
    tasks = np.floor(per_kind.min(axis=1, initial=np.inf) + 1e-9)
    tasks = np.where((first >= 0) & np.isfinite(tasks), tasks, 0.0).astype(np.int64)
    node_cap = np.repeat(tasks, rounds)
    group_key = a * rounds + round_[used]
    groups, col_group = np.unique(group_key, return_inverse=True)
    group_agent = groups // rounds
    big = int(min(node_cap.sum(), 2**62)) + 1
    demands = instance.demands[group_agent]
    group_cap = np.where(np.isfinite(demands), np.floor(np.where(np.isfinite(demands), demands, 0) + 1e-9), big)
    delta = task_shares(instance, capacity_basis)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = np.where(np.isfinite(delta) & (delta > 0), delta / (rounds * instance.weights), 0.0)
    refuse_overflow(g, instance, np.arange(instance.n_agents))
    net = CountNetwork(g=g, group_agent=group_agent.astype(np.int64), group_cap=group_cap.astype(np.int64),
                       col_group=col_group.ravel().astype(np.int64), col_node=(p * rounds + round_[used]).astype(np.int64),
                       col_cap=cap[used].astype(np.int64), node_cap=node_cap)
    return net, used


def build_drf(
    instance: Instance, *, fractional: bool = False, capacity_basis: str = "compatible"
) -> tuple[LinearModel, LeximinPlan]:
    """Declare ``y``, ``resource``, ``demand`` and the leximin blocks over ``s_i / w_i``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A")], edges=[lo.Edge("A", "P", 1.0)])
    >>> model, plan = build_drf(inst, fractional=True)
    >>> sorted(model.variables), sorted(model.constraints)
    (['t', 'y'], ['demand', 'level', 'resource'])
    """
    delta = task_shares(instance, capacity_basis)
    kinds, D, R = resource_arrays(instance)
    n_kinds = len(kinds)
    rounds = instance.rounds
    model = LinearModel("drf", sense="max")
    size = instance.n_edges * rounds
    edge, round_, agent, pool, upper = _task_columns(instance, D, R)
    need = D[agent] > 0  # (columns, kinds)
    block = model.add_variables(
        "y", size, lower=0.0, upper=upper, integer=not fractional,
        description="tasks of agent i placed on pool c in round r, one column per edge and round",
    )
    columns = AllocationColumns(instance, block)
    col, kind = np.nonzero(need)
    model.add_constraints(
        "resource",
        rows=(pool[col] * n_kinds + kind) * rounds + round_[col],
        cols=block.columns(col),
        coefs=D[agent[col], kind],
        upper=np.repeat(R.reshape(-1), rounds),
        n_rows=instance.n_pools * n_kinds * rounds,
        description="sum_i D[i,rho] y[i,c,r] <= R[c,rho] for each pool c, resource kind rho and round r",
    )
    group = agent * rounds + round_
    cap = np.repeat(instance.demands, rounds)
    finite = np.isfinite(cap)
    row_of = np.full(cap.size, -1, dtype=np.int64)
    row_of[finite] = np.arange(int(finite.sum()))
    keep = finite[group]
    model.add_constraints(
        "demand",
        rows=row_of[group[keep]],
        cols=block.columns(np.flatnonzero(keep)),
        coefs=np.ones(int(keep.sum())),
        upper=cap[finite],
        n_rows=int(finite.sum()),
        description="sum_c y[i,c,r] <= d_i (tasks) for each agent i and round r",
    )
    weights = instance.weights[agent]
    with np.errstate(over="ignore"):
        coef = np.where(np.isfinite(delta[agent]), delta[agent] / (rounds * weights), 0.0)
    refuse_overflow(coef, instance, agent)
    plan = declare_leximin(
        model, block, agent=agent, coef=coef, group=group, group_cap=cap,
        fractional=fractional, n_agents=instance.n_agents,
    )
    plan.columns = columns
    return model, plan


def solve_drf(
    instance: Instance,
    *,
    fractional: bool = False,
    capacity_basis: str = "compatible",
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    freeze: str = "dual",
    threads: int | None = None,
    mip_gap: float = 1e-9,
    backend: str | None = None,
    verbose: bool = False,
    compress: str = "auto",
    flow: str = "auto",
) -> Result:
    """Weighted DRF: leximin of ``s_i / w_i``; see the module docstring.

    ``flow`` (integral): ``auto`` solves the leximin exactly by greedy increments checked
    by max flows when every pool's tasks are interchangeable (:func:`task_flow_network`,
    :mod:`laissez_opt.exact.count_flow`); ``off`` (and other instances) run the
    ordered-outcome MILPs.

    ``compress`` (fractional): solve on classes of agents with identical edges,
    weight, demand, window and task vector ``D_i`` (:mod:`laissez_opt.exact.classes`;
    class ``g`` has weight ``n_g w`` and demand ``n_g d``, so its ``s_g / w_g`` is each
    member's ``s_i / w_i`` under the even split; ``models/compression.md``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=3)], agents=[lo.Agent(a) for a in "ABCD"],
    ...                    edges=[lo.Edge(a, "P", 1.0) for a in "ABCD"])
    >>> r = solve_drf(inst, fractional=True, compress="on")
    >>> r.details["compression"]["classes"], r.details["tasks"]
    (1, {'A': 0.75, 'B': 0.75, 'C': 0.75, 'D': 0.75})
    """
    if freeze not in FREEZE_TESTS:
        raise InputError(f"unknown freeze test {freeze!r}; choose one of {', '.join(FREEZE_TESTS)}", path="option freeze")
    if compress not in COMPRESS_CHOICES:
        raise InputError(f"unknown compress {compress!r}; choose one of {', '.join(COMPRESS_CHOICES)}", path="option compress")
    if flow not in FLOW_CHOICES:
        raise InputError(f"unknown flow {flow!r}; choose one of {', '.join(FLOW_CHOICES)}", path="option flow")
    if not fractional and flow == "auto":
        start = time.perf_counter()
        network = task_flow_network(instance, capacity_basis)
        if network is not None:
            return _flow_drf(instance, network, capacity_basis, time_limit, time.perf_counter() - start)
    if fractional:
        run = lambda small, classes: solve_drf(  # noqa: E731
            small, fractional=True, capacity_basis=capacity_basis, solver=solver, via=via, time_limit=time_limit,
            freeze=freeze, threads=threads, mip_gap=mip_gap, backend=backend, verbose=verbose, compress="off")
        out = solve_on_classes(instance, compress, run, keys=(resource_arrays(instance)[1],), weight="total",
                               same=("leximin",), shared=("tasks", "dominant_shares"), members=("excluded",))
        if out is not None:
            return out
    start = time.perf_counter()
    model, plan = build_drf(instance, fractional=fractional, capacity_basis=capacity_basis)
    declare_s = time.perf_counter() - start
    # Whole tasks: at most the tasks that fit at once can serve distinct agents (max_placed_tasks).
    served = None if fractional else max_placed_tasks(instance)
    outcome = solve_leximin(
        model, plan, max_served=served, solver=solver, via=via, time_limit=time_limit, freeze=freeze,
        threads=threads, mip_gap=mip_gap, backend=backend, verbose=verbose,
    )
    params = {"time_limit": time_limit, "fractional": fractional, "via": via, "capacity_basis": capacity_basis}
    result = leximin_result(
        instance, "drf", plan, outcome, solver=solver, fractional=fractional, params=params,
        details={"capacity_basis": capacity_basis},
    )
    result.timing["build_s"] += declare_s
    delta = task_shares(instance, capacity_basis)
    ids = instance.agent_field("id")
    if result.amounts is not None:
        tasks = np.bincount(instance.edge_agent, weights=result.amounts.sum(axis=1), minlength=instance.n_agents)
    else:
        tasks = np.zeros(instance.n_agents)
    shares = np.where(np.isfinite(delta), delta, 0.0) * tasks / instance.rounds
    result.details["tasks"] = {ids[i]: float(tasks[i]) for i in range(len(ids))}
    result.details["dominant_shares"] = {ids[i]: float(shares[i]) for i in range(len(ids))}
    result.details["kinds"] = resource_arrays(instance)[0]
    return result



class _ColumnAmounts:
    """Amounts given as an ``E R``-vector (edge-major), as :func:`allocation_result` reads them."""

    def __init__(self, instance: Instance):
        self.instance = instance

    def amounts(self, solution: Solution) -> np.ndarray:
        return solution.values.reshape(self.instance.n_edges, self.instance.rounds)


def _flow_drf(instance: Instance, network: tuple[CountNetwork, np.ndarray], capacity_basis: str,
              time_limit: float | None, build_s: float) -> Result:
    """Integral DRF by :func:`laissez_opt.exact.count_flow.lexicographic_count_flow` (exact).

    Stopped by the time limit, the greedy's current state is returned with status
    ``time_limit``; the bound is the smallest of the frozen agents' values (final in
    the leximin the greedy reaches) and the other agents' standalone maxima.
    """
    net, used = network
    units, flows, stats = lexicographic_count_flow(net, time_limit)
    amounts = np.zeros(instance.n_edges * instance.rounds)
    amounts[used] = flows
    values = net.g * units
    upper = np.where(net.g > 0, net.standalone(), 0)
    taking = upper > 0
    objective = float(values[taking].min()) if taking.any() else 0.0
    final = stats.pop("frozen")
    route = f"ortools-max-flow (greedy increments on the task-flow polymatroid, {stats['max_flows']} max flows)"
    solve_s = stats["seconds"]
    if stats["complete"]:
        solution = Solution("optimal", amounts, objective, objective, 0.0, "ortools", route, build_s, solve_s, "OPTIMAL")
    else:
        reach = np.where(final, values, net.g * upper)
        bound = float(reach[taking].min()) if taking.any() else 0.0
        message = (f"time limit after {stats['max_flows']} max flows: {int((final & taking).sum())} of "
                   f"{int(taking.sum())} agents final" + ("; the smallest value is proven" if bound <= objective else ""))
        solution = Solution("time_limit", amounts, objective, max(bound, objective), relative_gap(objective, bound),
                            "ortools", route, build_s, solve_s, "time limit", message)
    ids = instance.agent_field("id")
    delta = task_shares(instance, capacity_basis)
    shares = np.where(np.isfinite(delta), delta, 0.0) * units / instance.rounds
    details = {
        "capacity_basis": capacity_basis,
        "leximin": dict(zip(ids, values.tolist())),
        "levels": sorted(values[taking].tolist()),
        "excluded": [ids[i] for i in np.flatnonzero(~taking)],
        "solves": stats["max_flows"],
        "flow": stats,
        "tasks": dict(zip(ids, units.astype(float).tolist())),
        "dominant_shares": dict(zip(ids, shares.tolist())),
        "kinds": resource_arrays(instance)[0],
    }
    params = {"time_limit": time_limit, "fractional": False, "capacity_basis": capacity_basis}
    return allocation_result(instance, "drf", _ColumnAmounts(instance), solution, fractional=False, params=params,
                             details=details)


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The first level of the dominant-share leximin, the model ``lo.build(instance, "drf", ...)`` exports."""
    model, plan = build_drf(instance, fractional=bool(options.get("fractional")),
                            capacity_basis=options.get("capacity_basis", "compatible"))
    return first_level(model, plan)


METHOD = Method(
    name="drf",
    kind="exact",
    objective="leximin of weighted dominant shares s_i / w_i (tasks need several resource kinds); objective = min",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Dominant resource fairness with per-pool placement: exact waterfilling LPs or ordered-outcome MILPs.",
    run=solve_drf,
    options=solver_options(fractional=True, mip_gap=1e-9) + LEXIMIN_OPTIONS + (
        Option("capacity_basis", "choice", "compatible", "capacities the dominant share is measured against",
               choices=CAPACITY_BASES),
        compress_option(),
        Option("flow", "choice", "auto", "integral, interchangeable tasks in every pool: exact leximin by greedy "
               "increments checked by max flows (auto) or the ordered-outcome MILPs (off)", choices=FLOW_CHOICES),
    ),
    estimate=class_estimate(lambda instance, options: (
        allocation_size(instance, extra_variables=float(instance.n_agents) * (instance.rounds + 1)
                        + float(instance.n_pools) * instance.rounds,
                        note="max flows: one arc per agent, agent-round, edge-round and pool-round")
        if not options.get("fractional") and options.get("flow", "auto") == "auto" and interchangeable_tasks(instance)
        else leximin_size(instance, options)),
        applies=lambda instance, options: bool(options.get("fractional")),
        keys=lambda instance: (resource_arrays(instance)[1],)),
    build=_export_model,
    exported="the first level, max min_i s_i / w_i (fractional: max t over the level rows; integral: step 1 of the "
             "ordered outcomes)",
)
