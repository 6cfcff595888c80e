"""Reference shares of an instance: the weighted equal share and its demand-capped form.

Notation (``models.md``, metrics): ``W = sum_j w_j``.

* ``U_i^ex = (w_i / W) sum_{c,r} k_c u_{i,c,r}``: agent ``i``'s utility under the
  weighted time-equal share, ``w_i / W`` of every device in every round
  (thesis 002, eq. 3.3); the sharing-incentive ratio is ``phi_i = U_i / U_i^ex``.
* The demand-capped equal share ``x^eq``: in each round of its window
  ``a_i..D_i``, agent ``i`` gets ``alpha_i (w_i / W) k_c`` devices of each
  compatible pool ``c``, scaled down proportionally to its demand:
  ``alpha_i = min(1, d_i / ((w_i / W) sum_{c compatible} k_c))``.  It is always
  feasible; ``q_i = phi_i(x^eq)`` is at most 1 and equals 1 when the agent's
  demand covers its share and it may run in every round.

This module sits below ``exact/`` and ``analysis/`` so both can use it.

Example
-------
>>> from laissez_opt.instance import Instance, Pool, Agent, Edge
>>> inst = Instance(pools=[Pool("P", count=4)], agents=[Agent("A", demand=1), Agent("B")],
...                 edges=[Edge("A", "P", 1.0), Edge("B", "P", 1.0)])
>>> equal_share_utilities(inst).tolist(), capped_share_ratios(inst).tolist()
([2.0, 2.0], [0.5, 1.0])
"""

from __future__ import annotations

import numpy as np

from .instance import Instance

__all__ = ["equal_share_utilities", "capped_share_ratios"]


def equal_share_utilities(instance: Instance) -> np.ndarray:
    """``U_i^ex``: the utility of ``w_i / sum w`` of every device in every round.

    A pass over every edge, done once per instance (kept beside its array views,
    which are as immutable as it): every result's ``min_phi`` needs it, and on a
    dense instance it costs more than a fast heuristic's whole run.  Each call
    returns a fresh copy of the ``n`` values.
    """
    cached = instance.__dict__.get("_equal_share_utilities")
    if cached is None:
        share = instance.weights / instance.weights.sum()
        per_edge = instance.edge_utility.sum(axis=1) * instance.counts[instance.edge_pool]
        total = np.bincount(instance.edge_agent, weights=per_edge, minlength=instance.n_agents)
        cached = instance.__dict__["_equal_share_utilities"] = share * total
    return cached.copy()


def capped_share_ratios(instance: Instance) -> np.ndarray:
    """``q_i = phi_i(x^eq)`` of the demand-capped equal share (``inf`` where ``U_i^ex = 0``).

    The fractional leximin with the ``equal_share`` normaliser gives every agent
    that can get positive utility ``phi_i >= min_j q_j`` (over those agents); see
    ``models/maxmin.md``.
    """
    share = instance.weights / instance.weights.sum()
    reachable = np.bincount(
        instance.edge_agent, weights=instance.counts[instance.edge_pool].astype(float), minlength=instance.n_agents
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(share * reachable > 0, np.minimum(1.0, instance.demands / (share * reachable)), 1.0)
    rounds = np.arange(instance.rounds)
    arrival = np.array([a.arrival for a in instance.agents])
    deadline = instance.last_rounds
    active = (rounds[None, :] >= arrival[:, None]) & (rounds[None, :] <= deadline[:, None])
    in_window = np.sum(instance.edge_utility * active[instance.edge_agent], axis=1)
    got = np.bincount(
        instance.edge_agent, weights=in_window * instance.counts[instance.edge_pool], minlength=instance.n_agents
    ) * share * alpha
    ex = equal_share_utilities(instance)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ex > 0, got / np.where(ex > 0, ex, 1.0), np.inf)
