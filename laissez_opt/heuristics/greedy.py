"""Greedy allocation: each device to the agent that values it most (``models.md`` item 10).

For every round independently, edges are taken in descending order of weighted
per-device utility ``w_i u_{i,c,r}``; each takes as many devices of its pool as
remain, up to the agent's remaining demand ``d_i``.  Without demand caps this
is exactly "each device to the agent valuing it most"; with caps it is the
classic greedy b-matching, whose welfare is at least half the optimum.

Tie-breaking (documented, deterministic): equal weighted utilities are taken
in instance order of the agent, then of the pool.  Edges with zero utility
receive nothing.  Agents are skipped before their arrival round and after
their deadline.

Cost: ``O(E R log E)`` for ``E`` edges and ``R`` rounds.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("g", count=2)],
...                    agents=[lo.Agent("A", demand=1), lo.Agent("B")],
...                    edges=[lo.Edge("A", "g", 0.9), lo.Edge("B", "g", 0.5)])
>>> [(a["agent"], a["amount"]) for a in lo.solve(inst, "greedy").allocation]
[('A', 1.0), ('B', 1.0)]
"""

from __future__ import annotations

import time

from ..instance import Instance
from ..method_spec import Method
from ..result import Result, agent_values, allocation_columns, edge_utilities
from ..starts import greedy_amounts
from ._baseline_common import heuristic_size
from ._fastpaths import use_compiled

__all__ = ["solve_greedy"]


def solve_greedy(instance: Instance) -> Result:
    """Run the greedy heuristic; ``objective`` is ``sum_i w_i U_i``."""
    t0 = time.perf_counter()
    amounts = greedy_amounts(instance)
    utilities = edge_utilities(instance, amounts)
    elapsed = time.perf_counter() - t0
    return Result(
        instance=instance.name,
        method="greedy",
        status="feasible",
        solver=None,
        objective=float(instance.weights @ utilities),
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        timing={"build_s": 0.0, "solve_s": elapsed},
        route="greedy",
        mode="integral",
        params={},
        amounts=amounts,
    )


METHOD = Method(
    name="greedy",
    kind="heuristic",
    objective="sum_i w_i U_i (no guarantee beyond 1/2 of the optimum)",
    solvers=(),
    fractional=False,
    summary="Each device to the agent valuing it most (weighted), per round.",
    run=solve_greedy,
    estimate=lambda instance, options: heuristic_size(instance, options, compiles=use_compiled(instance)),
)
