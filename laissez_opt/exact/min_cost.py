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

With ``s_i = 1`` for all agents this is a transportation problem; with
larger sizes it is a generalised assignment problem (NP-hard), solved as a
MIP (HiGHS, or CP-SAT/SCIP through OR-Tools).  The placement holds in every
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
from .common import allocation_size

__all__ = ["build_min_cost", "solve_min_cost", "placement_obstacles"]


def _sizes(instance: Instance) -> np.ndarray:
    return np.array([1 if a.demand is None else a.demand for a in instance.agents], dtype=np.int64)


def placement_obstacles(instance: Instance) -> list[str]:
    """Reasons that no placement exists, found without a solver (empty if none found).

    Checks each required agent alone, then, round by round, each set of
    required agents present in that round that share compatible pools
    (connected components of the compatibility graph): their total size
    against their pools' total capacity.
    """
    reasons = []
    sizes = _sizes(instance)
    required = [i for i, a in enumerate(instance.agents) if a.required]
    pools_of: dict[int, list[int]] = {i: [] for i in required}
    for agent, pool in zip(instance.edge_agent.tolist(), instance.edge_pool.tolist()):
        if agent in pools_of:
            pools_of[agent].append(pool)
    for i in required:
        name = instance.agents[i].id
        if sizes[i] == 0:
            reasons.append(f"agent {name!r} is required but its demand is 0 devices")
        elif not pools_of[i]:
            reasons.append(f"agent {name!r} has no compatible pool")
        elif sizes[i] > max(instance.counts[c] for c in pools_of[i]):
            reasons.append(
                f"agent {name!r} needs {sizes[i]} devices but its largest compatible pool holds "
                f"{max(instance.counts[c] for c in pools_of[i])}"
            )
    if reasons:
        return reasons
    import networkx as nx

    # Agents compete only with those present in the same round.
    last = instance.last_rounds.tolist()
    for r in range(instance.rounds):
        present = [i for i in required if instance.agents[i].arrival <= r <= last[i]]
        graph = nx.Graph()
        for i in present:
            graph.add_node(("a", i))
            graph.add_edges_from((("a", i), ("p", c)) for c in pools_of[i])
        for component in nx.connected_components(graph):
            agents = sorted(i for kind, i in component if kind == "a")
            pools = sorted(c for kind, c in component if kind == "p")
            need = int(sizes[agents].sum())
            have = int(instance.counts[pools].sum())
            if need > have:
                when = f" in round {r}" if instance.rounds > 1 else ""
                reasons.append(
                    f"agents {', '.join(repr(instance.agents[i].id) for i in agents)} need {need} devices{when} "
                    f"but their compatible pools ({', '.join(repr(instance.pools[c].id) for c in pools)}) hold {have}"
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
    solver: str = "highs",
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
    options=solver_options(fractional=False),
    estimate=lambda instance, options: allocation_size(instance, note="placement y per edge, capacity per pool and round"),
    build=_export_model,
)
