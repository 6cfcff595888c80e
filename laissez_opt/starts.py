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
from .jit import use_compiled
from .limits import check_deadline

__all__ = ["greedy_amounts"]


def greedy_amounts(instance: Instance, score: np.ndarray | None = None, *, watch_deadline: bool = True) -> np.ndarray:
    """The greedy allocation (``E x R``) by ``score`` (default ``w_i u_{i,c,r}``); see the module docstring.

    ``watch_deadline=False`` when it is the incumbent of a run whose time is already up;
    otherwise the time limit is checked between chunks of :data:`CHUNK` edges.
    """
    n_edges, rounds = instance.n_edges, instance.rounds
    amounts = np.zeros((n_edges, rounds))
    if score is None:
        score = instance.weights[instance.edge_agent][:, None] * instance.edge_utility
    agent = instance.edge_agent.astype(np.int64)
    pool = instance.edge_pool.astype(np.int64)
    arrival = np.asarray(instance.agent_field("arrival"), dtype=np.int64)
    deadline = instance.last_rounds.astype(np.int64)
    demands = instance.effective_demands.astype(np.float64)
    counts = instance.counts.astype(np.float64)
    # Edges already in (agent, pool) order (the usual layout): one stable sort on the score keeps that order
    # among equal scores, the documented tie rule, at a third of the three-key sort's cost.
    key = agent * max(instance.n_pools, 1) + pool
    in_order = bool(np.all(key[1:] > key[:-1]))
    greedy_pass = _compiled_pass() if use_compiled(n_edges * rounds) else _greedy_pass
    for r in range(rounds):
        if watch_deadline:
            check_deadline(f"in round {r} of {instance.rounds}")
        value = np.ascontiguousarray(score[:, r], dtype=np.float64)
        # Descending value; ties by (agent, pool) instance order, the documented rule.
        order = np.argsort(-value, kind="stable") if in_order else np.lexsort((pool, agent, -value))
        remaining_pool = counts.copy()
        remaining_agent = demands.copy()
        column = np.zeros(n_edges)
        left = np.array([remaining_pool.sum()])
        for start in range(0, n_edges, CHUNK):
            if watch_deadline:
                check_deadline(f"in round {r} of {instance.rounds}")
            if not greedy_pass(order[start:start + CHUNK], value, agent, pool, arrival, deadline, r,
                               remaining_pool, remaining_agent, column, left):
                break
        amounts[:, r] = column
    return amounts


#: Edges handed to the pass between two looks at the time limit.
CHUNK = 1 << 20
_COMPILED: list = []


def _compiled_pass():
    """:func:`_greedy_pass` compiled, on first use (small runs never import numba)."""
    if not _COMPILED:
        from .jit import jit

        _COMPILED.append(jit(_greedy_pass))
    return _COMPILED[0]


def _greedy_pass(order, value, agent, pool, arrival, deadline, r, remaining_pool, remaining_agent, column,
                 left) -> bool:
    """Edges ``order`` in turn take ``min(pool left, demand left)``; False once nothing more can be taken
    (a score ``<= 0`` is reached, or every pool is empty: ``left[0]`` counts the devices left)."""
    for k in range(order.shape[0]):
        e = order[k]
        if value[e] <= 0:
            return False
        if left[0] <= 0:
            left[0] = remaining_pool.sum()  # exact again: fractional takes may round the running count down
            if left[0] <= 0:
                return False
        i = agent[e]
        if arrival[i] <= r <= deadline[i]:
            c = pool[e]
            take = min(remaining_pool[c], remaining_agent[i])
            if take > 0:
                column[e] = take
                remaining_pool[c] -= take
                remaining_agent[i] -= take
                left[0] -= take
    return True
