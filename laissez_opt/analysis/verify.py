"""Independent verification of any result against its instance.

This module shares no code with the models: it walks the instance's records
(pools, agents, edges) with plain Python loops, never the numpy views or the
declared constraint matrices, and recomputes feasibility, every agent's
utility and the objective of the methods whose objective it knows.  A bug in
a model, a lowering or a solver's tolerance shows up here as a violation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from ..instance import Instance
from ..result import Result

__all__ = ["Verification", "verify"]

# Methods whose objective is the weighted welfare sum_i w_i U_i.
_WEIGHTED_WELFARE = {"welfare", "greedy"}


@dataclass
class Verification:
    """Outcome of :func:`verify`: ``ok`` and the list of violations found."""

    ok: bool
    violations: list[str] = field(default_factory=list)
    utilities: dict[str, float] = field(default_factory=dict)
    objective: float | None = None

    def __str__(self) -> str:
        if self.ok:
            return "verified: feasible, utilities and objective agree"
        return "verification failed: " + "; ".join(self.violations[:5]) + (
            f" (+{len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        )


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def verify(instance: Instance, result: Result, *, tol: float = 1e-6) -> Verification:
    """Recompute feasibility, utilities and objective of ``result`` from ``instance``.

    Checks: every record names a known agent, pool and edge and a round inside
    the horizon; amounts are finite, non-negative and integral in integral
    mode; no agent runs before its arrival or after its deadline; every pool
    holds at most ``k_c`` devices per round; every agent at most ``d_i`` per round;
    reported utilities and (for methods with a known objective) the objective
    match the recomputed ones.  An infeasible result carries no allocation.
    """
    problems: list[str] = []
    agents = {a.id: a for a in instance.agents}
    pools = {p.id: p for p in instance.pools}
    edges = {(e.agent, e.pool): e for e in instance.edges}
    if result.status == "infeasible":
        if result.allocation:
            problems.append("an infeasible result carries an allocation")
        return Verification(not problems, problems)
    pool_load: dict[tuple[str, int], float] = defaultdict(float)
    agent_load: dict[tuple[str, int], float] = defaultdict(float)
    utilities = {a.id: 0.0 for a in instance.agents}
    for k, rec in enumerate(result.allocation):
        where = f"allocation[{k}]"
        agent_id, pool_id, rnd, amount = rec.get("agent"), rec.get("pool"), rec.get("round", 0), rec.get("amount")
        if agent_id not in agents:
            problems.append(f"{where}: unknown agent {agent_id!r}")
            continue
        if pool_id not in pools:
            problems.append(f"{where}: unknown pool {pool_id!r}")
            continue
        edge = edges.get((agent_id, pool_id))
        if edge is None:
            problems.append(f"{where}: agent {agent_id!r} is incompatible with pool {pool_id!r}")
            continue
        if not isinstance(rnd, int) or not 0 <= rnd < instance.rounds:
            problems.append(f"{where}: round {rnd!r} outside 0..{instance.rounds - 1}")
            continue
        if not isinstance(amount, (int, float)) or not math.isfinite(amount):
            problems.append(f"{where}: amount {amount!r} is not a finite number")
            continue
        if amount < -tol:
            problems.append(f"{where}: negative amount {amount}")
        if result.mode == "integral" and abs(amount - round(amount)) > tol:
            problems.append(f"{where}: fractional amount {amount} in an integral result")
        agent = agents[agent_id]
        last = instance.rounds - 1 if agent.deadline is None else agent.deadline
        if amount > tol and not agent.arrival <= rnd <= last:
            problems.append(f"{where}: agent {agent_id!r} runs in round {rnd} outside {agent.arrival}..{last}")
        pool_load[(pool_id, rnd)] += amount
        agent_load[(agent_id, rnd)] += amount
        utilities[agent_id] += edge.utility_in(rnd) * amount
    for (pool_id, rnd), load in sorted(pool_load.items()):
        if load > pools[pool_id].count + tol:
            problems.append(f"pool {pool_id!r} round {rnd}: {load:g} devices used of {pools[pool_id].count}")
    for (agent_id, rnd), load in sorted(agent_load.items()):
        demand = agents[agent_id].demand
        if demand is not None and load > demand + tol:
            problems.append(f"agent {agent_id!r} round {rnd}: {load:g} devices exceed demand {demand}")
    for agent_id, value in utilities.items():
        reported = result.utilities.get(agent_id)
        if reported is None:
            problems.append(f"utility of agent {agent_id!r} not reported")
        elif not _close(reported, value, tol):
            problems.append(f"utility of agent {agent_id!r}: reported {reported!r}, recomputed {value!r}")
    objective = None
    if result.method == "min_cost":
        placed = {(rec["agent"], rec["pool"]) for rec in result.allocation if rec.get("amount", 0) > tol}
        for agent in instance.agents:
            if agent.required and not any(a == agent.id for a, _ in placed):
                problems.append(f"required agent {agent.id!r} is not placed")
        objective = sum(edges[key].cost or 0.0 for key in placed if key in edges)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed placement cost {objective!r}")
    if result.method in _WEIGHTED_WELFARE:
        objective = sum(agents[a].weight * u for a, u in utilities.items())
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {objective!r}")
    if result.status == "optimal" and result.gap not in (None, 0.0) and result.gap > 1e-6:
        problems.append(f"labelled optimal with a gap of {result.gap:g}")
    return Verification(not problems, problems, utilities, objective)
