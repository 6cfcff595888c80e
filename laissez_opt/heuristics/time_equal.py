"""Time Equal: every agent a weight-proportional time share of every device (``models.md`` item 10).

Fractional (time-sharing) allocation.  In round ``r`` let ``P_r`` be the agents
present (``a_i <= r <= D_i``) and ``W_r = sum_{j in P_r} w_j``.  Agent ``i in P_r``
gets, of every compatible pool ``c``,

    ``x_{i,c,r} = (w_i / W_r) k_c``                        (``incompatible="idle"``, default)
    ``x_{i,c,r} = (w_i / W_{c,r}) k_c``,  ``W_{c,r} = sum_{j in P_r, (j,c) edge} w_j``
                                                            (``incompatible="redistribute"``)

then, where ``sum_c x_{i,c,r} > d_i``, all of agent ``i``'s shares in the round are
scaled down by the same factor ``d_i / sum_c x_{i,c,r}`` (the freed time stays idle).
Utilities are ``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}``; the objective reported is
``sum_i w_i U_i``; the result's ``mode`` is ``fractional``.

The default is the thesis's "Time Equal" row (thesis 002, Table 3.2: each of two
agents gets 1/2 of every accelerator in every round) and the reference of the
sharing incentive (eq. 3.3): the share of a pool an agent cannot use is not handed
to anyone ("idle"), exactly as ``U_i^ex = (w_i / sum_j w_j) sum_{c,r} k_c u_{i,c,r}``
counts it.  Hence, when every agent is present in every round and no demand binds,
``U_i = U_i^ex`` and ``phi_i = 1`` for every agent (sharing incentive by
construction, with equality), whatever the compatibility graph.
``redistribute`` hands the unusable share of each pool to the agents that can use
it, in proportion to their weights (every device with at least one compatible
present agent is fully used before caps); then ``phi_i >= 1`` when no cap binds.
Edges of zero utility count as compatible (the share is blind to utilities).

Cost: ``O(E R)``.  Reference: thesis 002, section 3.2 and Table 3.2.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("gpu", count=2), lo.Pool("trn")], [lo.Agent("A"), lo.Agent("B", weight=3)],
...                    [lo.Edge("A", "gpu", 1.0), lo.Edge("A", "trn", 1.0), lo.Edge("B", "gpu", 2.0)])
>>> sorted((a["agent"], a["pool"], a["amount"]) for a in lo.solve(inst, "time_equal").allocation)
[('A', 'gpu', 0.5), ('A', 'trn', 0.25), ('B', 'gpu', 1.5)]
>>> sorted((a["agent"], a["pool"], a["amount"]) for a in lo.solve(inst, "time_equal", incompatible="redistribute").allocation)
[('A', 'gpu', 0.5), ('A', 'trn', 1.0), ('B', 'gpu', 1.5)]
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..method_spec import Method, Option
from ..result import Result
from ._baseline_common import heuristic_size, make_result

__all__ = ["INCOMPATIBLE", "solve_time_equal", "time_equal_amounts"]

#: What happens to the share of a pool an agent cannot use.
INCOMPATIBLE = ("idle", "redistribute")


def time_equal_amounts(instance: Instance, incompatible: str = "idle") -> np.ndarray:
    """The ``E x R`` time shares of the module docstring."""
    if incompatible not in INCOMPATIBLE:
        raise InputError(
            f"incompatible must be one of {', '.join(INCOMPATIBLE)}, got {incompatible!r}", path="option incompatible"
        )
    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    agent, pool = instance.edge_agent, instance.edge_pool
    w = instance.weights
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    r = np.arange(rounds)
    present = (r[None, :] >= arrival[:, None]) & (r[None, :] <= instance.last_rounds[:, None])  # n x R
    wp = w[:, None] * present  # n x R: w_i where present, else 0
    if incompatible == "idle":
        total = wp.sum(axis=0)  # W_r
        denom = np.broadcast_to(total[None, :], (instance.n_edges, rounds))
    else:
        per_pool = np.zeros((m, rounds))
        np.add.at(per_pool, pool, wp[agent])  # W_{c,r}
        denom = per_pool[pool]
    with np.errstate(divide="ignore", invalid="ignore"):
        amounts = np.where(denom > 0, wp[agent] / np.where(denom > 0, denom, 1.0), 0.0)
    amounts *= instance.counts[pool].astype(float)[:, None]
    load = np.zeros((n, rounds))
    np.add.at(load, agent, amounts)
    demands = instance.demands
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(load > demands[:, None], demands[:, None] / np.where(load > 0, load, 1.0), 1.0)
    return amounts * scale[agent]


def solve_time_equal(instance: Instance, *, incompatible: str = "idle") -> Result:
    """Run Time Equal; ``objective = sum_i w_i U_i``, ``mode = "fractional"``.

    ``incompatible``: ``"idle"`` (default, thesis-faithful) or ``"redistribute"``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=4)], [lo.Agent("A", demand=1), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)])
    >>> solve_time_equal(inst).utilities
    {'A': 1.0, 'B': 2.0}
    """
    started = time.perf_counter()
    amounts = time_equal_amounts(instance, incompatible)
    return make_result(
        instance, "time_equal", amounts, started, mode="fractional", params={"incompatible": incompatible}
    )


METHOD = Method(
    name="time_equal",
    kind="heuristic",
    objective="sum_i w_i U_i (weighted time-equal share of every device; the sharing-incentive reference)",
    solvers=(),
    fractional=True,
    summary="Each present agent a w_i / sum w time share of every compatible device every round (fractional).",
    run=solve_time_equal,
    options=(
        Option("incompatible", "choice", "idle", "share of an agent on a device it cannot use: idle (thesis) or "
               "redistribute to the agents that can", choices=("idle", "redistribute")),
    ),
    estimate=heuristic_size,
)
