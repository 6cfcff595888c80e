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

import numpy as np

from ..instance import Instance
from ..result import Result

__all__ = ["Verification", "verify"]

# Methods whose objective is the weighted welfare sum_i w_i U_i.
_WEIGHTED_WELFARE = {"welfare", "greedy", "mtf", "round_robin", "time_equal", "fixed_partition", "dynamic_partition", "gandiva_fair", "auction"}


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


def _last_round(agent, rounds: int) -> int:
    """The agent's last usable round: its deadline, or the horizon's last round when none or later.

    Written here rather than read from the instance's views, to keep the check
    independent of the models (which use ``Instance.last_rounds``).
    """
    return rounds - 1 if agent.deadline is None else min(agent.deadline, rounds - 1)


def _named_edges(instance: Instance, allocation: list[dict], agents: dict, pools: dict) -> dict:
    """The instance's edges for the (agent, pool) pairs the allocation names, keyed by the pair.

    One pass over the edge records that keeps only the named pairs: an
    allocation names far fewer pairs than a dense instance has edges, and
    building a dictionary of every edge would cost more than the whole check.
    """
    wanted: dict[str, set] = {}
    for rec in allocation:
        agent_id, pool_id = rec.get("agent"), rec.get("pool")
        if agent_id in agents and pool_id in pools:
            wanted.setdefault(agent_id, set()).add(pool_id)
    found = {}
    if not wanted:
        return found
    located = _located_edges(instance, wanted)
    if located is not None:
        return located
    pools_of = wanted.get
    for edge in instance.edges:
        named = pools_of(edge.agent)
        if named is not None and edge.pool in named:
            found[(edge.agent, edge.pool)] = edge
    return found


def _located_edges(instance: Instance, wanted: dict[str, set]) -> dict | None:
    """The named pairs' edges found through the instance's index arrays, each confirmed on its record.

    The arrays only say where to look: a pair counts as found when the edge
    record at that position names exactly that agent and pool, so a wrong
    array can make a pair look missing (the check then fails loudly, or the
    caller scans the records) but never make a wrong pair pass.  None when
    a position does not confirm: the caller then scans every record.
    """
    agent_index, pool_index, m = instance.agent_index, instance.pool_index, instance.n_pools
    names = [(a, p) for a, named in wanted.items() for p in named]
    keys = np.array([agent_index[a] * m + pool_index[p] for a, p in names], dtype=np.int64)
    edge_keys = instance.edge_agent * m + instance.edge_pool
    if edge_keys.size > 1 and not bool(np.all(edge_keys[1:] > edge_keys[:-1])):
        order = np.argsort(edge_keys, kind="stable")
        edge_keys = edge_keys[order]
    else:
        order = None
    at = np.minimum(np.searchsorted(edge_keys, keys), max(edge_keys.size - 1, 0))
    hit = edge_keys[at] == keys if edge_keys.size else np.zeros(keys.size, dtype=bool)
    positions = (at if order is None else order[at]).tolist()
    found = {}
    edges = instance.edges
    for (a, p), e, ok in zip(names, positions, hit.tolist()):
        if not ok:
            continue  # no edge for the pair: reported as incompatible by the caller
        edge = edges[e]
        if edge.agent != a or edge.pool != p:
            return None
        found[(a, p)] = edge
    return found


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
    # Only the (agent, pool) pairs the allocation names: look up no other pair in it.
    edges = _named_edges(instance, result.allocation, agents, pools)
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
        last = _last_round(agent, instance.rounds)
        if amount > tol and not agent.arrival <= rnd <= last:
            problems.append(f"{where}: agent {agent_id!r} runs in round {rnd} outside {agent.arrival}..{last}")
        # drf amounts count tasks; a task takes task["accelerator"] devices of the pool.
        pool_load[(pool_id, rnd)] += amount * (agent.task_vector.get("accelerator", 0.0) if result.method == "drf" else 1.0)
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
            on = sorted(p for a, p in placed if a == agent.id)
            if len(on) > 1:
                problems.append(f"agent {agent.id!r} is placed on more than one pool ({', '.join(on)})")
        objective = sum(edges[key].cost or 0.0 for key in placed if key in edges)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed placement cost {objective!r}")
    if result.method == "vcg":
        # Money per device-round (a round lasts h hours): an agent values a device at bid * h (bids are per
        # device-hour), else at the round's utility; the operator each unsold device-round at b_c * h.
        # W = the agents' values of what they hold + the reserves of the unsold device-rounds; 0 <= p_i <= v_i.
        h = instance.round_hours
        value = defaultdict(float)
        for rec in result.allocation:
            edge = edges.get((rec.get("agent"), rec.get("pool")))
            if edge is not None and isinstance(rec.get("round"), int) and 0 <= rec["round"] < instance.rounds:
                worth = edge.bid * h if edge.bid is not None else edge.utility_in(rec["round"])
                value[edge.agent] += worth * rec["amount"]
        sold = defaultdict(float)
        for (pool_id, _), load in pool_load.items():
            sold[pool_id] += load
        objective = sum(value.values()) + sum(p.base_price * h * (p.count * instance.rounds - sold[p.id]) for p in instance.pools)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed welfare with reserves {objective!r}")
        for agent in instance.agents:
            pay = (result.payments or {}).get(agent.id)
            if pay is None or not -tol <= pay <= value[agent.id] + tol * max(1.0, value[agent.id]):
                problems.append(f"payment of agent {agent.id!r} is {pay!r}, outside [0, its value {value[agent.id]!r}]")
    if result.method in _WEIGHTED_WELFARE:
        objective = sum(agents[a].weight * u for a, u in utilities.items())
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {objective!r}")
    if result.method == "themis" and result.details.get("bidders"):
        # max rho_i over the bidders; rho_i = (t_i + W_i/X_i) X^id_i / W_i, X^id_i from the weighted equal share.
        total_weight = sum(a.weight for a in instance.agents)
        held, full = defaultdict(float), defaultdict(float)
        for e in instance.edges:
            held[e.agent] += pools[e.pool].count
            full[e.agent] += pools[e.pool].count * e.utility_in(0)
        objective = 0.0
        for agent_id in result.details["bidders"]:
            agent, share = agents[agent_id], agents[agent_id].weight / total_weight
            scale = 1.0 if agent.demand is None or share * held[agent_id] <= agent.demand else agent.demand / (share * held[agent_id])
            work = 1.0 if agent.work is None else agent.work
            rate = utilities[agent_id]
            rho = math.inf if rate <= 0 else (agent.elapsed + work / rate) * scale * share * full[agent_id] / work
            objective = max(objective, rho)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed max rho {objective!r}")
    if result.method in ("maxmin", "drf"):
        # Leximin objective: min over agents able to get value of U_i/(w_i E_i) (maxmin) or s_i/w_i (drf).
        total_weight, rounds = sum(a.weight for a in instance.agents), instance.rounds
        own, used, tasks = defaultdict(list), defaultdict(float), defaultdict(float)
        for e in instance.edges:
            own[e.agent].append(e)
        for rec in result.allocation:
            if result.method == "drf" and rec.get("agent") in agents and rec.get("pool") in pools:
                tasks[rec["agent"]] += rec["amount"]
                for kind, need in agents[rec["agent"]].task_vector.items():
                    used[(rec["pool"], kind, rec.get("round", 0))] += need * rec["amount"]
        for (pool_id, kind, rnd), load in sorted(used.items()):
            if load > pools[pool_id].capacity_vector.get(kind, 0.0) + tol * max(1.0, load):
                problems.append(f"pool {pool_id!r} round {rnd}: {load:g} of resource {kind!r} used of {pools[pool_id].capacity_vector.get(kind, 0.0):g}")
        values = []
        for agent in instance.agents:
            window = range(agent.arrival, _last_round(agent, rounds) + 1)
            task = agent.task_vector
            need = {k: v for k, v in task.items() if v > 0}
            if result.method == "maxmin":
                usable = any(e.utility_in(r) > 0 for e in own[agent.id] for r in window)
                if result.params.get("normalizer", "equal_share") == "raw":
                    scale = agent.weight
                else:
                    scale = agent.weight / total_weight * sum(pools[e.pool].count * e.utility_in(r) for e in own[agent.id] for r in range(rounds))
                value = utilities[agent.id] / scale if scale > 0 else 0.0
            else:
                least = 1.0 if result.mode == "integral" else 1e-300
                usable = bool(window) and any(all(pools[e.pool].capacity_vector.get(k, 0.0) >= v * least for k, v in need.items()) for e in own[agent.id])
                basis = [pools[e.pool] for e in own[agent.id]] if result.params.get("capacity_basis", "compatible") == "compatible" else instance.pools
                pooled = {k: sum(p.capacity_vector.get(k, 0.0) for p in basis) for k in need}
                delta = max((v / pooled[k] if pooled[k] > 0 else math.inf) for k, v in need.items())
                value = delta * tasks[agent.id] / rounds / agent.weight if math.isfinite(delta) else 0.0
            if usable and agent.demand != 0:
                values.append(value)
        objective = min(values) if values else 0.0
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed smallest normalised value {objective!r}")
    if result.method in ("migration", "migration_free", "fcfs_static", "myopic"):
        # Replay each job: progress u*x, minus mu on a pool other than its last; one pool a round, none after completing.
        kind, on = result.params.get("objective", "work"), defaultdict(list)
        for rec in result.allocation:
            if (rec.get("agent"), rec.get("pool")) in edges and isinstance(rec.get("round"), int) and rec.get("amount", 0) > tol:
                on[(rec["agent"], rec["round"])].append(rec)
        objective = 0.0
        for agent in instance.agents:
            work, done, last, when = 1.0 if agent.work is None else agent.work, 0.0, None, None
            for rnd in range(agent.arrival, instance.rounds):
                for k, rec in enumerate(on[(agent.id, rnd)]):
                    if when is not None or k:
                        problems.append(f"agent {agent.id!r} runs in round {rnd} after completing or on two pools")
                    done -= agent.migration_cost if last not in (None, rec["pool"]) else 0.0
                    done += edges[(agent.id, rec["pool"])].utility_in(rnd) * rec["amount"]
                    last = rec["pool"]
                    objective += pools[last].base_price * instance.round_hours * rec["amount"] if kind == "cost" else 0.0
                when = rnd if when is None and done >= work - 1e-6 * max(1.0, work) else when
            if kind == "work":
                objective += agent.weight * work if when is not None else 0.0
            elif when is None:
                problems.append(f"agent {agent.id!r} does not complete its work by its deadline")
            elif kind == "completion":
                objective += agent.weight * (when + 1)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {kind} objective {objective!r}")
    if result.method == "backlog":
        # Queues (thesis eq. 3.2): backlog = max(0, carried + arrivals - service), service = sum u x of the round.
        kind, objective = result.params.get("objective", "total"), 0.0
        service = defaultdict(float)
        for rec in result.allocation:
            edge = edges.get((rec.get("agent"), rec.get("pool")))
            if edge is not None and isinstance(rec.get("round"), int) and 0 <= rec["round"] < instance.rounds:
                service[(edge.agent, rec["round"])] += edge.utility_in(rec["round"]) * rec["amount"]
        for agent in instance.agents:
            carried, total = 0.0, 0.0
            for rnd in range(instance.rounds):
                arrived = carried + (agent.arrivals[rnd] if agent.arrivals is not None else 0.0)
                carried = max(0.0, arrived - service[(agent.id, rnd)])
                carried = 0.0 if carried <= 1e-9 * max(1.0, arrived) else carried
                total += carried
            objective = objective + agent.weight * total if kind == "total" else max(objective, total / agent.weight)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {kind} backlog {objective!r}")
    if result.status == "optimal" and result.gap not in (None, 0.0) and result.gap > 1e-6:
        problems.append(f"labelled optimal with a gap of {result.gap:g}")
    return Verification(not problems, problems, utilities, objective)
