"""Small shared helpers of the heuristics' public paths (private).

:func:`edges_in_order` checks in one compiled pass, without temporaries, whether the
edges are ordered by agent, then pool (as the file reader and the generators leave
them); with ``E = n m`` that means every pair, in order (edge ``e`` is agent ``e // m``
on pool ``e % m``).  :func:`touched_utilities` gives ``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}`` from the edges an
allocation touches instead of a pass over every edge: the same sums, term for term, as
:func:`laissez_opt.result.edge_utilities`, because the terms it leaves out are zeros.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..instance import Instance
from ..jit import jit

__all__ = ["edges_in_order", "touched_utilities"]


@jit
def edges_in_order(edge_agent, edge_pool, m):
    """Whether the keys ``edge_agent[e] * m + edge_pool[e]`` strictly increase.

    >>> edges_in_order(np.array([0, 0, 1]), np.array([0, 2, 1]), 3), edges_in_order(np.array([1, 0]), np.array([0, 0]), 3)
    (True, False)
    """
    prev = -1
    for e in range(edge_agent.shape[0]):
        key = edge_agent[e] * m + edge_pool[e]
        if key <= prev:
            return False
        prev = key
    return True


def touched_utilities(instance: Instance, amounts: np.ndarray, touched: Sequence[np.ndarray]) -> np.ndarray:
    """``U_i`` per agent from an ``E x R`` amount array nonzero only on the edges in ``touched``.

    Mathematics: ``U_i = sum_e [agent(e) = i] sum_r u_{e,r} x_{e,r}``.  The per-edge sums are
    taken row by row over the rounds exactly as ``edge_utilities`` takes them, and the
    per-agent sums add them in increasing edge order, as ``np.bincount`` over all edges
    does; an edge outside ``touched`` contributes ``+-0.0``, which leaves every partial sum
    unchanged, so the result is bit-for-bit the same at a cost linear in the touched edges.
    (Reference: the definition of ``U_i`` in ``models.md``.)

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 0.5), lo.Edge("B", "g", 2.0)])
    >>> amounts = np.array([[0.0], [2.0]])
    >>> touched_utilities(inst, amounts, [np.array([1])]).tolist()
    [0.0, 4.0]
    """
    if len(touched):
        edges = np.unique(np.concatenate([np.asarray(t, dtype=np.int64) for t in touched]))
    else:
        edges = np.zeros(0, np.int64)
    per_edge = np.sum(instance.edge_utility[edges] * amounts[edges], axis=1)
    return np.bincount(instance.edge_agent[edges], weights=per_edge, minlength=instance.n_agents)
