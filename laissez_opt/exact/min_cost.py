"""Minimum-cost placement of required agents (issue: min_cost; HotOS'25 Table 1).

Every agent with ``required: true`` is placed on exactly one compatible pool
for its whole stay; it needs ``s_i`` devices there (its demand ``d_i``, or 1
when unbounded).  Edge ``(i, c)`` states ``cost_{i,c}``, the money to run the
whole job on pool ``c``.

.. math::

    \\min_y \\sum_{(i,c)} cost_{i,c}\\, y_{i,c}
    \\quad\\text{s.t.}\\quad
    \\sum_c y_{i,c} = 1 \\ (\\text{placed}),\\qquad
    \\sum_{i \\text{ present in } r} s_i\\, y_{i,c} \\le k_c \\ (\\text{capacity}, \\forall c, r),\\qquad
    y \\in \\{0, 1\\}

With ``s_i = 1`` for all agents and one capacity row per pool (one round, or
stays that never share a pool's rounds differently) this is a transportation
problem: ``placed`` is a left node that must ship exactly one unit, and the
default route (``solver="auto"``) solves it as a min-cost flow (OR-Tools),
proven optimal in integer arithmetic.  With larger sizes it is a generalised
assignment problem (NP-hard), solved as a MIP (HiGHS, or CP-SAT/SCIP through
OR-Tools).  The placement holds in every
round from the agent's arrival to its deadline.  Agents that are not required
are not placed (placing them only adds cost).

Infeasibility is explained: an agent with no compatible pool, an agent
larger than every compatible pool, or a group of agents whose compatible
pools are jointly too small.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.load("instances/hotos25-table1.json")
>>> sorted((a["agent"], a["pool"]) for a in lo.solve(inst, "min_cost").allocation)
[('A', 'A10'), ('B', 'L4')]
"""

from __future__ import annotations

import numpy as np

from ..declare import Model
from ..errors import InputError
from ..instance import Instance
from ..modeling import solve_model
from ..method_spec import Method, solver_options
from ..result import Result, agent_values, allocation_columns, edge_utilities
from ..limits import SizeEstimate
from .common import RECORD_BYTES, EDGE_ROUND_BYTES

__all__ = ["build_min_cost", "solve_min_cost", "placement_obstacles", "min_cost_size"]


def _sizes(instance: Instance) -> np.ndarray:
    return np.array([1 if a.demand is None else a.demand for a in instance.agents], dtype=np.int64)


def placement_obstacles(instance: Instance) -> list[str]:
    """Reasons that no placement exists, found without a solver (empty if none found).

    Checks each required agent alone, then, round by round, each set of
    required agents present in that round that share compatible pools
    (connected components of the compatibility graph): their total size
    against their pools' total capacity.  The set present changes only in a
    round where some required agent arrives or has just left, so only those
    rounds are examined (the first failing round is always one of them); the
    components come from ``scipy.sparse.csgraph`` in one pass over the edges.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=1)], [lo.Agent("A", required=True), lo.Agent("B", required=True)],
    ...                    [lo.Edge("A", "P", 1.0, cost=1.0), lo.Edge("B", "P", 1.0, cost=1.0)])
    >>> placement_obstacles(inst)
    ["agents 'A', 'B' need 2 devices but their compatible pools ('P') hold 1"]
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    reasons = []
    n, m = instance.n_agents, instance.n_pools
    sizes = _sizes(instance)
    counts = np.asarray(instance.counts, dtype=np.int64)
    required = np.array([a.required for a in instance.agents], dtype=bool)
    on = required[instance.edge_agent] if instance.n_edges else np.zeros(0, dtype=bool)
    agent_of, pool_of = instance.edge_agent[on], instance.edge_pool[on]
    degree = np.bincount(agent_of, minlength=n)
    largest = np.zeros(n, dtype=np.int64)
    np.maximum.at(largest, agent_of, counts[pool_of])
    for i in np.flatnonzero(required).tolist():
        name = instance.agents[i].id
        if sizes[i] == 0:
            reasons.append(f"agent {name!r} is required but its demand is 0 devices")
        elif degree[i] == 0:
            reasons.append(f"agent {name!r} has no compatible pool")
        elif sizes[i] > largest[i]:
            reasons.append(f"agent {name!r} needs {sizes[i]} devices but its largest compatible pool holds {largest[i]}")
    if reasons:
        return reasons
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    last = np.asarray(instance.last_rounds, dtype=np.int64)
    events = np.unique(np.concatenate([arrival[required], last[required] + 1]))
    for r in events[(events >= 0) & (events < instance.rounds)].tolist():
        # Agents compete only with those present in the same round.
        present = required & (arrival <= r) & (r <= last)
        live = present[agent_of]
        a, c = agent_of[live], pool_of[live]
        graph = coo_matrix((np.ones(a.size, dtype=np.int8), (a, n + c)), shape=(n + m, n + m))
        _, label = connected_components(graph, directed=False)
        members = np.flatnonzero(present)
        need = np.bincount(label[members], weights=sizes[members], minlength=n + m)
        pools = np.unique(c)
        have = np.bincount(label[n + pools], weights=counts[pools], minlength=n + m)
        short = np.flatnonzero(need > have)
        # In the order of each component's first agent.
        first = {int(g): int(members[label[members] == g].min()) for g in short}
        for g in sorted(short.tolist(), key=first.get):
            agents = members[label[members] == g]
            its_pools = pools[label[n + pools] == g]
            when = f" in round {r}" if instance.rounds > 1 else ""
            reasons.append(
                f"agents {', '.join(repr(instance.agents[i].id) for i in agents.tolist())} need {int(need[g])} "
                f"devices{when} but their compatible pools "
                f"({', '.join(repr(instance.pools[k].id) for k in its_pools.tolist())}) hold {int(have[g])}"
            )
        if reasons:
            break
    return reasons


def build_min_cost(instance: Instance, **_ignored):
    """Declare the placement model; returns ``(model, edge index of each y column)``."""
    required = np.array([a.required for a in instance.agents], dtype=bool)
    edges = np.flatnonzero(required[instance.edge_agent])
    costs = instance.edge_cost[edges]
    missing = edges[np.isnan(costs)]
    if missing.size:
        e = int(missing[0])
        raise InputError(
            f"min_cost needs a cost on every edge of a required agent (agent {instance.edges[e].agent!r})",
            source=instance.source, path=f"$.edges[{e}].cost",
        )
    m = Model(instance, name="min_cost")
    y = m.variable("y", "edge", where=required[instance.edge_agent], upper=1.0, integer=True,
                   description="1 if agent i is placed on pool c")
    m.add(y.sum(by="agent", agent=[a.id for a in instance.agents if a.required]) == 1, name="placed",
          description="sum_c y[i,c] = 1 for each required agent i")
    # One capacity row per pool and round: agents whose stays do not overlap share devices.
    load = y.over_rounds().scale(agent=_sizes(instance).astype(float)).sum(by=("pool", "round"))
    m.add(load <= np.repeat(instance.counts[:, None], instance.rounds, axis=1), name="capacity",
          description="sum_i s_i y[i,c] <= k_c for each pool c and round r, over the agents present in r")
    m.minimize((y * costs).sum())
    return m.lower(), edges


def solve_min_cost(
    instance: Instance,
    *,
    solver: str = "auto",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
) -> Result:
    """Place every required agent at minimum total cost; see the module docstring."""
    params = {"time_limit": time_limit, "via": via}
    obstacles = placement_obstacles(instance)
    if obstacles:
        return Result(instance=instance.name, method="min_cost", status="infeasible", solver=solver,
                      message="; ".join(obstacles), params=params, route="pre-check")
    model, edges = build_min_cost(instance)
    solution = solve_model(model, solver=solver, via=via, time_limit=time_limit, threads=threads,
                           mip_gap=mip_gap, verbose=verbose, backend=backend)
    common = dict(instance=instance.name, method="min_cost", solver=solution.solver, route=solution.route,
                  solver_status=solution.solver_status, params=params,
                  timing={"build_s": solution.build_s, "solve_s": solution.solve_s})
    if solution.status == "infeasible":
        names = ", ".join(repr(a.id) for a in instance.agents if a.required)
        return Result(status="infeasible", message=f"no placement of agents {names} fits the pool capacities", **common)
    chosen = edges[np.round(solution.block(model, "y")) > 0.5]
    amounts = np.zeros((instance.n_edges, instance.rounds))
    sizes = _sizes(instance)
    for e in chosen.tolist():
        i = int(instance.edge_agent[e])
        amounts[e, instance.agents[i].arrival : int(instance.last_rounds[i]) + 1] = sizes[i]
    utilities = edge_utilities(instance, amounts)
    return Result(
        status=solution.status, objective=solution.objective, bound=solution.bound, gap=solution.gap,
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        amounts=amounts, **common,
    )


def min_cost_size(instance: Instance, options: dict | None = None) -> SizeEstimate:
    """Size of the placement model: ``y`` only on the edges of required agents.

    ``P`` columns (the required agents' edges), one ``placed`` row per required
    agent and one ``capacity`` row per pool and round, each column in its
    ``placed`` row and in the capacity row of every round of its stay; outside the
    model, the result's edge-round arrays.  Counting every edge (as a model over
    all edges would) overstated 16,384 neocloud agents with a quarter required
    fourfold and refused a run that fits.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", required=True), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0, cost=1.0), lo.Edge("B", "P", 1.0, cost=1.0)], rounds=3)
    >>> size = min_cost_size(inst)
    >>> size.variables, size.constraints, size.nonzeros
    (1.0, 4.0, 4.0)
    """
    required = np.array([a.required for a in instance.agents], dtype=bool)
    stay = (instance.last_rounds - np.array([a.arrival for a in instance.agents]) + 1).clip(min=0).astype(float)
    on_required = required[instance.edge_agent] if instance.n_edges else np.zeros(0, dtype=bool)
    columns = float(np.count_nonzero(on_required))
    rows = float(required.sum()) + float(instance.n_pools) * float(instance.rounds)
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    return SizeEstimate(
        variables=columns,
        constraints=rows,
        nonzeros=columns + float(stay[instance.edge_agent[on_required]].sum()),
        dense_bytes=edge_rounds * EDGE_ROUND_BYTES + min(columns, rows) * RECORD_BYTES,
        note="placement y per edge of a required agent, capacity per pool and round",
    )


def _export_model(instance: Instance, options: dict):
    """The model ``lo.build(instance, "min_cost")`` exports."""
    return build_min_cost(instance)[0]


METHOD = Method(
    name="min_cost",
    kind="exact",
    objective="min sum cost_{i,c} y_{i,c}: place every required agent on one compatible pool",
    solvers=("highs", "ortools"),
    fractional=False,
    summary="Minimum-cost placement of required agents (generalised assignment MIP).",
    run=solve_min_cost,
    options=solver_options(fractional=False, auto=True),
    estimate=min_cost_size,
    build=_export_model,
)
