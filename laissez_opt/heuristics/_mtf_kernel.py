"""Compiled passes of Most-Token-First's preference build (:mod:`laissez_opt.heuristics.mtf`), private.

* :func:`agent_top`: ``M_i`` (or ``M_{i,r}``), the largest utility of each agent, in one
  pass over the edges (what ``np.maximum.at`` from zeros gives);
* :func:`dense_lists`: the preference lists of a round where every agent is on every
  pool with a positive utility, from the ascending row argsort of the ``n x m`` utility
  table: position ``k`` of row ``i`` is column ``perm[i, m-1-k]`` (descending), with its
  score ``u / M_i`` and edge ``i m + c``, and a flag per row whose sorted values repeat
  (only those rows can differ from the stable order and are re-sorted by the caller).

>>> import numpy as np
>>> u = np.array([0.2, 0.7, 0.5, 0.1, 0.3, 0.3])
>>> perm = np.argsort(u.reshape(2, 3), axis=1)
>>> pool, score, edge, tied = dense_lists(u, perm, np.array([1.0, 0.5]), 2, 3)
>>> pool[:3].tolist(), edge[3:].tolist()[0], tied.tolist()
([1, 2, 0], 4, [False, True])
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

__all__ = ["agent_top", "dense_lists"]


@jit
def agent_top(edge_agent, utility, n, per_round):
    """``max(0, max u)`` per agent over its edges and rounds (``per_round == 0``, shape ``(n, 1)``) or
    per agent and round (``per_round == 1``, shape ``(n, R)``); ``utility`` is ``E x R``."""
    rounds = utility.shape[1]
    top = np.zeros((n, rounds if per_round == 1 else 1))
    for e in range(edge_agent.shape[0]):
        i = edge_agent[e]
        for r in range(rounds):
            v = utility[e, r]
            col = r if per_round == 1 else 0
            if v > top[i, col]:
                top[i, col] = v
    return top


@jit
def dense_lists(u, perm, den, n, m):
    """``(pool, score, edge, tied)`` of the dense lists (module docstring); ``u`` row-major ``n m``."""
    pool = np.empty(n * m, np.int64)
    score = np.empty(n * m)
    edge = np.empty(n * m, np.int64)
    tied = np.zeros(n, np.bool_)
    for i in range(n):
        base = i * m
        d = den[i]
        prev = 0.0
        for k in range(m):
            c = perm[i, m - 1 - k]
            v = u[base + c]
            if k > 0 and v == prev:
                tied[i] = True
            prev = v
            pool[base + k] = c
            score[base + k] = v / d
            edge[base + k] = base + c
    return pool, score, edge, tied
