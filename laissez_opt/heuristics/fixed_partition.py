"""Fixed fair partition (thesis 002, Table 3.2, mechanism ``M_1``; ``models.md`` item 10).

Each agent owns a fixed, weight-proportional set of devices for the whole horizon,
chosen once; it uses them in every round of its window ``a_i..D_i`` and they stay
idle in the other rounds (the partition is never re-drawn or lent out).

The partition
    1. Order: the agents in instance order (or a user-given ``order``).
    2. Quotas: the ``D`` usable devices (``k_c`` summed over the pools that some
       agent scores above 0 under ``basis``, step 3) split in proportion to the weights,
       ``q_i = floor(D w_i / W)`` plus one for the largest remainders (ties: earlier
       in the order), ``W = sum_j w_j``.
    3. Preferences (``basis``): ``"first"`` (default): ``u_{i,c,a_i}``, the agent's
       utilities in its first round (round 0 for agents present from the start);
       ``"total"``: ``sum_{r=a_i}^{D_i} u_{i,c,r}`` over its window; ``"index"``:
       device index order (pools in the order listed; utilities only decide which
       pools are wanted at all), the static contiguous split of a machine.  Pools of
       score 0 are never taken; ties go to the pool listed first.
    4. Picking (``picking``): ``"serial"`` (default): in order, each agent takes its
       ``min(q_i, d_i)`` devices by preference before the next agent chooses;
       ``"draft"``: one device per agent per turn, cyclically.
    5. With ``work_conserving`` (default), devices left free because a quota could
       not be filled are drafted one per turn to agents below ``d_i`` that still
       want one.

The thesis's Table 3.2 rows of ``M_1`` on ``instances/thesis-r2-table3-1.json``
(A1 owns ``c3, c4``, A2 owns ``c1, c2``) do not follow from preferences under any
of these rules with A1 choosing first; they are the contiguous split
``basis="index"`` with A2 first (``order=["A2", "A1"]``, serial picking).  With
A1 first the same rule gives the mirror image, whose utilities 3.9 and 3.0 are the
envy figures the thesis quotes for ``M_1``.  See ``docs/baselines.md``.

Objective reported: ``sum_i w_i U_i``.  Cost ``O(E R + E log E + D + n)``.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.load("instances/thesis-r2-table3-1.json")
>>> res = lo.solve(inst, "fixed_partition", basis="index", order=["A2", "A1"])
>>> res.details["owned"]
{'A1': {'c3': 1, 'c4': 1}, 'A2': {'c1': 1, 'c2': 1}}
>>> {k: round(v, 6) for k, v in res.utilities.items()}
{'A1': 2.8, 'A2': 3.1}
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..method_spec import Method, Option
from ..result import Result
from ._baseline_common import (
    Picker,
    agent_order,
    apportion_in_order,
    ORDER_OPTION,
    PICKING,
    agent_of,
    heuristic_size,
    demand_caps,
    make_result,
    partition_picks,
    read_state,
    state_option,
)
from .mtf import integer_weights

__all__ = ["BASES", "solve_fixed_partition", "partition_scores"]

#: What the agents' preferences over devices are based on when the partition is drawn.
BASES = ("first", "total", "index")


def partition_scores(instance: Instance, basis: str) -> np.ndarray:
    """The score per edge (shape ``(E,)``) that ranks each agent's pools under ``basis``."""
    if basis not in BASES:
        raise InputError(f"basis must be one of {', '.join(BASES)}, got {basis!r}", path="option basis")
    rounds = instance.rounds
    agent = instance.edge_agent
    first = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    last = instance.last_rounds
    u = instance.edge_utility
    if basis == "first":
        return u[np.arange(instance.n_edges), first[agent]] if instance.n_edges else np.zeros(0)
    r = np.arange(rounds)
    window = (r[None, :] >= first[agent][:, None]) & (r[None, :] <= last[agent][:, None])
    total = np.sum(u * window, axis=1)
    if basis == "total":
        return total
    return (total > 0).astype(np.float64)


def _owned(instance: Instance, owned) -> np.ndarray:
    """Devices per edge of a ``state["owned"]`` partition, checked against the pools' counts."""
    if not isinstance(owned, dict):
        raise InputError("state.owned must map agent ids to {pool id: devices}", path="state.owned")
    edge_of = {(e.agent, e.pool): k for k, e in enumerate(instance.edges)}
    out = np.zeros(instance.n_edges)
    for agent_id, pools in owned.items():
        agent_of(instance, agent_id, "state.owned")
        if not isinstance(pools, dict):
            raise InputError("expected {pool id: devices}", path=f"state.owned.{agent_id}")
        for pool_id, k in pools.items():
            where = f"state.owned.{agent_id}.{pool_id}"
            if (agent_id, pool_id) not in edge_of:
                raise InputError(f"agent {agent_id!r} has no edge to pool {pool_id!r}", path=where)
            if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                raise InputError(f"devices must be an integer >= 0, got {k!r}", path=where)
            out[edge_of[(agent_id, pool_id)]] = k
    held = np.bincount(instance.edge_pool, weights=out, minlength=instance.n_pools)
    over = np.nonzero(held > instance.counts)[0]
    if over.size:
        c = int(over[0])
        raise InputError(f"the partition holds {int(held[c])} devices of pool {instance.pools[c].id!r}, "
                         f"which has {int(instance.counts[c])}", path="state.owned")
    return out


def _within_demand(instance: Instance, amounts: np.ndarray, caps) -> np.ndarray:
    """Each agent's ``d_i`` best owned devices per round (``u`` descending, ties by pool order)."""
    held = np.bincount(instance.edge_agent, weights=amounts.max(axis=1), minlength=instance.n_agents)
    over = [i for i in np.nonzero(held > np.asarray(caps, dtype=float))[0].tolist()]
    if not over:
        return amounts
    out = amounts.copy()
    for i in over:
        edges = np.nonzero((instance.edge_agent == i) & (amounts.max(axis=1) > 0))[0]
        for r in range(instance.rounds):
            order = edges[np.lexsort((instance.edge_pool[edges], -instance.edge_utility[edges, r]))]
            left = caps[i]
            for e in order.tolist():
                out[e, r] = min(amounts[e, r], left)
                left -= out[e, r]
    return out


def solve_fixed_partition(
    instance: Instance,
    *,
    basis: str = "first",
    picking: str = "serial",
    work_conserving: bool = True,
    order=None,
    state: dict | None = None,
) -> Result:
    """Draw one weight-proportional partition and keep it for all rounds (``M_1``).

    ``basis``: ``"first"`` (default), ``"total"`` or ``"index"``; ``picking``:
    ``"serial"`` (default) or ``"draft"``; ``work_conserving`` (default ``True``);
    ``order``: agent ids in picking order (default instance order);
    ``state``: ``{"owned": {agent id: {pool id: devices}}}``, an earlier run's
    ``details["state"]``: keep that partition instead of drawing one (continues a run
    round by round).  Where an agent owns more devices than its demand ``d_i`` it uses
    its ``d_i`` best ones of each round (``u_{i,c,r}`` descending, ties to the pool
    listed first) and the rest stay idle.
    ``objective = sum_i w_i U_i``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=3)], [lo.Agent("A"), lo.Agent("B", weight=2, arrival=1)],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)], rounds=2)
    >>> solve_fixed_partition(inst).utilities
    {'A': 2.0, 'B': 2.0}
    """
    started = time.perf_counter()
    caps = demand_caps(instance)
    members = agent_order(instance, order)
    resume = read_state(state, "fixed_partition", ("owned",))
    if resume is None:
        scores = partition_scores(instance, basis)
        picker = Picker(instance, scores)
        quotas = apportion_in_order(picker.usable, integer_weights(instance.weights.tolist()), members)
        picks, filled = partition_picks(picker, members, quotas, caps, picking=picking, work_conserving=work_conserving)
        owned = np.zeros(instance.n_edges)
        for _, e, k in picks:
            owned[e] += k
    else:
        owned, quotas, filled = _owned(instance, resume["owned"]), None, 0
    rounds = instance.rounds
    r = np.arange(rounds)
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    deadline = instance.last_rounds
    agent = instance.edge_agent
    window = (r[None, :] >= arrival[agent][:, None]) & (r[None, :] <= deadline[agent][:, None])
    amounts = owned[:, None] * window
    if resume is not None:
        amounts = _within_demand(instance, amounts, caps)
    held: dict[str, dict[str, int]] = {}
    for e in np.nonzero(owned)[0].tolist():
        edge = instance.edges[e]
        held.setdefault(edge.agent, {})[edge.pool] = int(owned[e])
    details = {
        "owned": {a.id: held[a.id] for a in instance.agents if a.id in held},
        "quotas": None if quotas is None else {instance.agents[i].id: quotas[i] for i in members},
        "filled": filled,
    }
    details["state"] = {"owned": details["owned"]}
    params = {"basis": basis, "picking": picking, "work_conserving": work_conserving,
              "order": None if order is None else [instance.agents[i].id for i in members]}
    return make_result(instance, "fixed_partition", amounts, started, params=params, details=details)


METHOD = Method(
    name="fixed_partition",
    kind="heuristic",
    objective="sum_i w_i U_i (fixed fair partition M1; no optimality guarantee)",
    solvers=(),
    fractional=False,
    summary="One weight-proportional partition of the devices, drawn once and kept for all rounds (thesis M1).",
    run=solve_fixed_partition,
    options=(
        Option("basis", "choice", "first", "utilities the partition is drawn from: the first round's, the totals, "
               "or device index order", choices=BASES),
        Option("picking", "choice", "serial", "serial: each agent fills its quota in turn; draft: one device per turn",
               choices=PICKING),
        Option("work_conserving", "bool", True, "hand out the devices that unfilled quotas leave over"),
        ORDER_OPTION,
        state_option("the partition the agents own"),
    ),
    estimate=lambda instance, options: heuristic_size(instance, options, bulk=True),
)
