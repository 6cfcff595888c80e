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
mode, ordered-outcome MILPs in integral mode).  Agents that can place no task
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
from ..result import Result
from .classes import COMPRESS_CHOICES, class_estimate, compress_option, solve_on_classes
from .common import AllocationColumns
from .leximin import (
    FREEZE_TESTS, LEXIMIN_OPTIONS, LeximinPlan, declare_leximin, first_level, leximin_size, solve_leximin,
)
from .maxmin import leximin_result

__all__ = ["CAPACITY_BASES", "resource_arrays", "task_shares", "max_placed_tasks", "build_drf", "solve_drf"]

CAPACITY_BASES = ("compatible", "cluster")


def resource_arrays(instance: Instance) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(kinds, D, R)``: the kinds some task needs, ``D`` (``n x K``) per task, ``R`` (``m x K``) per pool.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2, resources={"cpu": 8})],
    ...                    agents=[lo.Agent("A", task={"accelerator": 1, "cpu": 2})], edges=[])
    >>> kinds, D, R = resource_arrays(inst)
    >>> kinds, D.tolist(), R.tolist()
    (['accelerator', 'cpu'], [[1.0, 2.0]], [[2.0, 8.0]])
    """
    tasks = [a.task_vector for a in instance.agents]
    kinds = sorted({k for t in tasks for k, v in t.items() if v > 0})
    D = np.array([[t.get(k, 0.0) for k in kinds] for t in tasks], dtype=np.float64).reshape(len(tasks), len(kinds))
    caps = [p.capacity_vector for p in instance.pools]
    R = np.array([[c.get(k, 0.0) for k in kinds] for c in caps], dtype=np.float64).reshape(len(caps), len(kinds))
    return kinds, D, R


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
    edge = np.repeat(np.arange(instance.n_edges), rounds)
    round_ = np.tile(np.arange(rounds), instance.n_edges)
    agent = instance.edge_agent[edge]
    pool = instance.edge_pool[edge]
    need = D[agent] > 0  # (columns, kinds)
    with np.errstate(divide="ignore", invalid="ignore"):
        fit = np.where(need, R[pool] / np.where(need, D[agent], 1.0), np.inf)
    upper = np.minimum(fit.min(axis=1, initial=np.inf), instance.demands[agent])
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    deadline = instance.last_rounds
    upper = np.where((round_ >= arrival[agent]) & (round_ <= deadline[agent]), upper, 0.0)
    upper = np.where(np.isfinite(upper), upper, 0.0)  # a task needing nothing is rejected by the instance checks
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
    coef = np.where(np.isfinite(delta[agent]), delta[agent] / (rounds * weights), 0.0)
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
) -> Result:
    """Weighted DRF: leximin of ``s_i / w_i``; see the module docstring.

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
    ids = [a.id for a in instance.agents]
    if result.amounts is not None:
        tasks = np.bincount(instance.edge_agent, weights=result.amounts.sum(axis=1), minlength=instance.n_agents)
    else:
        tasks = np.zeros(instance.n_agents)
    shares = np.where(np.isfinite(delta), delta, 0.0) * tasks / instance.rounds
    result.details["tasks"] = {ids[i]: float(tasks[i]) for i in range(len(ids))}
    result.details["dominant_shares"] = {ids[i]: float(shares[i]) for i in range(len(ids))}
    result.details["kinds"] = resource_arrays(instance)[0]
    return result


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
    ),
    estimate=class_estimate(leximin_size, applies=lambda instance, options: bool(options.get("fractional")),
                            keys=lambda instance: (resource_arrays(instance)[1],)),
    build=_export_model,
    exported="the first level, max min_i s_i / w_i (fractional: max t over the level rows; integral: step 1 of the "
             "ordered outcomes)",
)
