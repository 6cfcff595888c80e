"""Feasible allocations built fast, below every model: incumbents for exact methods that stop early.

* :func:`greedy_amounts`: in each round, every edge in descending order of a
  score (the weighted utility ``w_i u_{i,c,r}`` by default; ties by agent, then
  pool, in instance order) takes as many devices as its pool and its agent's
  demand still allow; edges outside the agent's window ``a_i..D_i`` and with a
  score ``<= 0`` take nothing.  It is the ``greedy`` heuristic (each device to
  the agent valuing it most) and the incumbent that ``welfare`` returns when its
  time limit ends the solve before the solver holds a better one.

The allocation is an ``E x R`` array aligned with ``instance.edges``; it
respects ``capacity`` (``sum_i x <= k_c``), ``demand`` (``sum_c x <= d_i``) and the
windows, so any allocation model built on :mod:`laissez_opt.exact.common`
accepts it.

Example
-------
>>> from laissez_opt.instance import Instance, Pool, Agent, Edge
>>> inst = Instance([Pool("g", count=1)], [Agent("A"), Agent("B")], [Edge("A", "g", 0.5), Edge("B", "g", 0.9)])
>>> greedy_amounts(inst).ravel().tolist()
[0.0, 1.0]
"""

from __future__ import annotations

import numpy as np

from .instance import Instance
from .limits import check_deadline

__all__ = ["greedy_amounts"]


def greedy_amounts(instance: Instance, score: np.ndarray | None = None, *, watch_deadline: bool = True) -> np.ndarray:
    """The greedy allocation (``E x R``) by ``score`` (default ``w_i u_{i,c,r}``); see the module docstring.

    ``watch_deadline=False`` when it is the incumbent of a run whose time is already up.
    """
    n_edges, rounds = instance.n_edges, instance.rounds
    amounts = np.zeros((n_edges, rounds))
    if score is None:
        score = instance.weights[instance.edge_agent][:, None] * instance.edge_utility
    agent = instance.edge_agent.tolist()
    pool = instance.edge_pool.tolist()
    arrival = [a.arrival for a in instance.agents]
    deadline = instance.last_rounds.tolist()
    demands = instance.effective_demands
    counts = instance.counts.astype(float)
    for r in range(rounds):
        if watch_deadline:
            check_deadline(f"in round {r} of {instance.rounds}")
        value = score[:, r]
        # Descending value; ties by (agent, pool) instance order, the documented rule.
        order = np.lexsort((instance.edge_pool, instance.edge_agent, -value))
        remaining_pool = counts.tolist()
        remaining_agent = demands.tolist()
        for e in order.tolist():
            if value[e] <= 0:
                break
            i, c = agent[e], pool[e]
            if not arrival[i] <= r <= deadline[i]:
                continue
            take = min(remaining_pool[c], remaining_agent[i])
            if take > 0:
                amounts[e, r] = take
                remaining_pool[c] -= take
                remaining_agent[i] -= take
    return amounts
