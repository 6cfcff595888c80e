"""Small shared helpers of the heuristics' public paths (private).

:func:`edges_in_order` checks whether the edges are ordered by agent, then pool (as the
file reader and the generators leave them); with ``E = n m`` that means every pair, in
order (edge ``e`` is agent ``e // m`` on pool ``e % m``).  Compiled (one pass, no
temporaries) when :func:`use_compiled` says so, numpy otherwise.  :func:`use_compiled`
keeps small runs free of the numba import (a few tenths of a second and tens of MiB the
first time): the compiled passes are used once numba is loaded, or for runs of at least
:data:`COMPILED_FROM` edge-rounds, where they pay for it.  :func:`touched_utilities`
gives ``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}`` from the edges an allocation touches instead
of a pass over every edge: the same sums, term for term, as
:func:`laissez_opt.result.edge_utilities`, because the terms it leaves out are zeros.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..instance import Instance
from ..jit import COMPILED_FROM, use_compiled as compiled_for

__all__ = ["COMPILED_FROM", "edges_in_order", "touched_utilities", "use_compiled"]



def use_compiled(instance: Instance) -> bool:
    """Whether to run the compiled passes on ``instance`` (:func:`laissez_opt.jit.use_compiled` of its edge-rounds).

    >>> import laissez_opt as lo
    >>> use_compiled(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])) in (True, False)
    True
    """
    return compiled_for(instance.n_edges * instance.rounds)


def edges_in_order(edge_agent, edge_pool, m: int, *, compiled: bool = True) -> bool:
    """Whether the keys ``edge_agent[e] * m + edge_pool[e]`` strictly increase.

    >>> edges_in_order(np.array([0, 0, 1]), np.array([0, 2, 1]), 3, compiled=False)
    True
    >>> edges_in_order(np.array([1, 0]), np.array([0, 0]), 3, compiled=False)
    False
    """
    if compiled:
        from ._mtf_kernel import keys_increasing

        return bool(keys_increasing(edge_agent, edge_pool, m))
    key = np.asarray(edge_agent, dtype=np.int64) * m + np.asarray(edge_pool, dtype=np.int64)
    return bool(np.all(key[1:] > key[:-1]))


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
