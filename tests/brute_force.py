"""Exhaustive reference solvers for tiny instances.

Written from the definitions in ``models.md`` (Notation), with plain Python
over the instance's records: no numpy views, no declared models, no solver.

An integral allocation assigns ``x[i,c,r] in {0, ..., min(d_i, k_c)}`` to every
edge ``(i, c)`` and round ``r``; it is feasible iff in every round each pool
holds at most ``k_c`` devices, each agent at most ``d_i``, and an agent gets
nothing before its arrival or after its deadline.  The feasibility constraints
and the weighted welfare ``sum_i w_i sum_{c,r} u[i,c,r] x[i,c,r]`` both split by
round, so the set of feasible allocations is the product of the per-round sets
and the best allocation is the per-round best in every round.  Each round's
set is enumerated completely (depth-first over the edges, every amount from 0
up to the cap).
"""

from __future__ import annotations

import itertools
import math

__all__ = [
    "active",
    "round_allocations",
    "all_allocations",
    "weighted_welfare",
    "best_welfare",
    "best_min_cost",
    "count_round_allocations",
]


def active(agent, rnd: int, rounds: int) -> bool:
    """Whether ``agent`` may hold devices in round ``rnd``."""
    last = rounds - 1 if agent.deadline is None else agent.deadline
    return agent.arrival <= rnd <= last


def _utility(edge, rnd: int) -> float:
    return edge.utility[rnd] if isinstance(edge.utility, tuple) else edge.utility


def round_allocations(instance, rnd: int):
    """Every feasible integral allocation of round ``rnd``: dicts ``{edge index: amount > 0}``."""
    agents = {a.id: a for a in instance.agents}
    pools = {p.id: p for p in instance.pools}
    usable = [
        k for k, e in enumerate(instance.edges) if active(agents[e.agent], rnd, instance.rounds)
    ]
    pool_left = {p.id: p.count for p in instance.pools}
    agent_left = {a.id: (math.inf if a.demand is None else a.demand) for a in instance.agents}
    chosen: dict[int, int] = {}

    def walk(pos: int):
        if pos == len(usable):
            yield dict(chosen)
            return
        k = usable[pos]
        edge = instance.edges[k]
        cap = min(pool_left[edge.pool], agent_left[edge.agent], pools[edge.pool].count)
        for amount in range(0, int(cap) + 1):
            if amount:
                chosen[k] = amount
            pool_left[edge.pool] -= amount
            agent_left[edge.agent] -= amount
            yield from walk(pos + 1)
            pool_left[edge.pool] += amount
            agent_left[edge.agent] += amount
            chosen.pop(k, None)

    yield from walk(0)


def count_round_allocations(instance, rnd: int) -> int:
    return sum(1 for _ in round_allocations(instance, rnd))


def all_allocations(instance):
    """Every feasible integral allocation: dicts ``{(edge index, round): amount > 0}``.

    The product over rounds; only for the tiniest instances (tests of the enumerator).
    """
    per_round = [list(round_allocations(instance, r)) for r in range(instance.rounds)]
    for combo in itertools.product(*per_round):
        yield {(k, r): amount for r, alloc in enumerate(combo) for k, amount in alloc.items()}


def weighted_welfare(instance, allocation: dict) -> float:
    """``sum_i w_i U_i`` of ``{(edge index, round): amount}``."""
    weights = {a.id: a.weight for a in instance.agents}
    return math.fsum(
        weights[instance.edges[k].agent] * _utility(instance.edges[k], r) * amount
        for (k, r), amount in allocation.items()
    )


def best_welfare(instance) -> tuple[float, dict]:
    """The largest weighted welfare over all feasible integral allocations, and one maximiser."""
    weights = {a.id: a.weight for a in instance.agents}
    total = 0.0
    best: dict = {}
    for r in range(instance.rounds):
        top, arg = -math.inf, None
        for alloc in round_allocations(instance, r):
            value = math.fsum(
                weights[instance.edges[k].agent] * _utility(instance.edges[k], r) * amount
                for k, amount in alloc.items()
            )
            if value > top:
                top, arg = value, alloc
        total += top
        best.update({(k, r): amount for k, amount in arg.items()})
    return total, best


def best_min_cost(instance) -> tuple[float | None, dict | None]:
    """Cheapest placement of every required agent on one compatible pool for its whole stay.

    An agent needs ``s_i`` devices (its demand, or 1 when unbounded) in every round
    from its arrival to its deadline; a pool holds at most ``k_c`` devices per round.
    Returns ``(cost, {agent id: pool id})``, or ``(None, None)`` when nothing fits.
    """
    required = [a for a in instance.agents if a.required]
    options = {
        a.id: [e for e in instance.edges if e.agent == a.id] for a in required
    }
    counts = {p.id: p.count for p in instance.pools}
    best_cost, best_plan = None, None
    for combo in itertools.product(*(options[a.id] for a in required)):
        load: dict[tuple[str, int], int] = {}
        for agent, edge in zip(required, combo):
            size = 1 if agent.demand is None else agent.demand
            for r in range(instance.rounds):
                if active(agent, r, instance.rounds):
                    load[(edge.pool, r)] = load.get((edge.pool, r), 0) + size
        if any(v > counts[pool] for (pool, _), v in load.items()):
            continue
        cost = math.fsum(edge.cost for edge in combo)
        if best_cost is None or cost < best_cost:
            best_cost, best_plan = cost, {a.id: e.pool for a, e in zip(required, combo)}
    return best_cost, best_plan
