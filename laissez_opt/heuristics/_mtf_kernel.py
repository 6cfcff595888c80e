"""Compiled passes of Most-Token-First's preference build (:mod:`laissez_opt.heuristics.mtf`), private.

* :func:`agent_top`: ``M_i`` (or ``M_{i,r}``), the largest utility of each agent, in one
  pass over the edges (what ``np.maximum.at`` from zeros gives);
* :func:`descending_rows`: for a round where every agent is on every pool with a positive
  utility, the ascending row argsort of the ``n x m`` utility table turned, in place and
  row by row, into the preference lists (utility descending, ties by pool ascending),
  with their scores ``u / (M_i (1 + 1e-9))``.

>>> import numpy as np
>>> u = np.array([0.2, 0.7, 0.5, 0.1, 0.3, 0.3])
>>> perm = np.argsort(u.reshape(2, 3), axis=1)
>>> score, tied = descending_rows(u, perm, np.array([1.0, 0.5]), 2, 3, np.empty(6))
>>> perm.tolist(), score.tolist()[3:], int(tied)
([[1, 2, 0], [1, 2, 0]], [0.6, 0.6, 0.2], 1)
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

__all__ = ["agent_top", "descending_rows"]


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
def descending_rows(u, perm, den, n, m, score):
    """Turn the ascending row argsort ``perm`` of ``u`` (row-major ``n m``) into the preference lists, in place.

    Each row is reversed (value descending) and every run of equal values is put in
    ascending column order (the stable descending order: ties by pool index); returns
    the scores ``u[i m + perm[i, k]] / den[i]`` written into ``score`` (``n m``, same layout)
    and the number of rows with ties.  Each row is read and written while it is in cache.
    (Large outputs are allocated by the caller: numpy's allocator maps big arrays faster.)
    """
    rows = 0
    for i in range(n):
        base = i * m
        lo = 0
        hi = m - 1
        while lo < hi:
            t = perm[i, lo]
            perm[i, lo] = perm[i, hi]
            perm[i, hi] = t
            lo += 1
            hi -= 1
        d = den[i]
        k = 0
        had = False
        while k < m:
            v = u[base + perm[i, k]]
            j = k + 1
            while j < m and u[base + perm[i, j]] == v:
                j += 1
            if j - k > 1:
                had = True
                perm[i, k:j] = np.sort(perm[i, k:j])
            for t in range(k, j):
                score[base + t] = v / d
            k = j
        if had:
            rows += 1
    return score, rows
