"""Dynamic fair partition (thesis 002, Table 3.2, mechanism ``M_0``; ``models.md`` item 10).

Every round the devices are re-partitioned among the agents present, each getting
a weight-proportional number of whole devices chosen by its utilities of that round.

Round ``r``
    1. Order: the present agents (``a_i <= r <= D_i``) cyclically from the current
       turn (round 0: the first agent; a user-given ``order`` replaces instance order).
    2. Quotas: the round's ``D`` usable devices (``k_c`` summed over the pools that
       some present agent values, ``u_{i,c,r} > 0``) split in proportion to the
       weights, ``q_i = floor(D w_i / W_r)`` plus one for the largest remainders
       (ties: earlier in the round's order), ``W_r`` the present agents' weights.
    3. Picking (``picking``): ``"serial"`` (default): in order, each agent takes its
       ``min(q_i, d_i)`` devices, one at a time from its most preferred pool with a
       free device (``u_{i,c,r}`` descending, ties to the pool listed first,
       ``u_{i,c,r} = 0`` never taken), before the next agent chooses;
       ``"draft"``: one device per agent per turn, cyclically.
    4. With ``work_conserving`` (default), devices left free because a quota could
       not be filled (incompatibility, demand caps) are drafted one per turn, in the
       same order, to present agents below ``d_i`` that still value one.
    5. Turn: the next round's order starts after the last agent that received one
       of the remainder devices of step 2, or, without remainders, after this
       round's first agent; so with equal weights the first pick rotates and, when
       devices are fewer than agents, the devices rotate among the agents.

The thesis's Table 3.2 rows of ``M_0`` on ``instances/thesis-r2-table3-1.json``
follow from the default (serial picking; A1 first in rounds 0 and 2, A2 first in
round 1; as well from A1 first in every round); the draft does not reproduce them
(round 0 would give A1 ``c2`` and ``c1``, not ``c2`` and ``c4``).  See
``docs/baselines.md``.

Objective reported: ``sum_i w_i U_i``.  Cost per round ``O(E log E + D + n)``.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.load("instances/thesis-r2-table3-1.json")
>>> res = lo.solve(inst, "dynamic_partition")
>>> [[a["pool"] for a in res.allocation if a["agent"] == "A1" and a["round"] == r] for r in range(3)]
[['c2', 'c4'], ['c1', 'c2'], ['c1', 'c3']]
>>> {k: round(v, 6) for k, v in res.utilities.items()}
{'A1': 4.6, 'A2': 3.2}
"""

from __future__ import annotations

import time

import numpy as np

from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method, Option
from ..result import Result
from ._baseline_common import (
    Picker,
    agent_of,
    agent_order,
    apportion_in_order,
    ORDER_OPTION,
    PICKING,
    heuristic_size,
    demand_caps,
    make_result,
    partition_picks,
    present_agents,
    read_state,
    state_option,
)
from .mtf import integer_weights

__all__ = ["solve_dynamic_partition"]


def solve_dynamic_partition(
    instance: Instance,
    *,
    picking: str = "serial",
    work_conserving: bool = True,
    order=None,
    state: dict | None = None,
) -> Result:
    """Re-partition the devices every round (``M_0``); ``objective = sum_i w_i U_i``.

    ``picking``: ``"serial"`` (default) or ``"draft"``; ``work_conserving``: hand out
    devices left over by unfilled quotas (default ``True``); ``order``: agent ids in
    picking order (default instance order), rotated every round as described above;
    ``state``: ``{"turn": agent id}`` from an earlier run's ``details["state"]``, the agent
    the first round's order starts from (continues a run round by round).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent(a) for a in "ABC"],
    ...                    [lo.Edge(a, "g", 1.0) for a in "ABC"], rounds=3)
    >>> solve_dynamic_partition(inst).details["rounds"][1]
    {'order': ['C', 'A', 'B'], 'quotas': [1, 0, 1], 'filled': 0}
    """
    started = time.perf_counter()
    n, rounds = instance.n_agents, instance.rounds
    caps = demand_caps(instance)
    ints = integer_weights(instance.weights.tolist())
    sequence = agent_order(instance, order)
    position = {i: k for k, i in enumerate(sequence)}
    amounts = np.zeros((instance.n_edges, rounds))
    resume = read_state(state, "dynamic_partition", ("turn",))
    turn = 0 if resume is None else position[agent_of(instance, resume["turn"], "state.turn")]
    log = []
    for r in range(rounds):
        check_deadline(f"in round {r} of {instance.rounds}")
        present = set(present_agents(instance, r))
        ranked = [i for i in sequence if i in present]  # in the user's order
        k = next((j for j, i in enumerate(ranked) if position[i] >= turn), len(ranked))
        members = [*ranked[k:], *ranked[:k]]
        picker = Picker(instance, instance.edge_utility[:, r], allowed=members)
        total = picker.usable
        quotas = apportion_in_order(total, ints, members)
        big = sum(ints[i] for i in members)
        extra = [i for i in members if quotas[i] > total * ints[i] // big] if members else []
        picks, filled = partition_picks(picker, members, quotas, caps, picking=picking, work_conserving=work_conserving)
        for _, e, k in picks:
            amounts[e, r] += k
        log.append({
            "order": [instance.agents[i].id for i in members],
            "quotas": [quotas.get(i, 0) for i in range(n)],
            "filled": filled,
        })
        if members:
            after = extra[-1] if extra else members[0]
            turn = (position[after] + 1) % n
    details = {"agents": [a.id for a in instance.agents], "rounds": log,
               "state": {"turn": instance.agents[sequence[turn]].id}}
    params = {"picking": picking, "work_conserving": work_conserving,
              "order": None if order is None else [instance.agents[i].id for i in sequence]}
    return make_result(instance, "dynamic_partition", amounts, started, params=params, details=details)


METHOD = Method(
    name="dynamic_partition",
    kind="heuristic",
    objective="sum_i w_i U_i (dynamic fair partition M0; no optimality guarantee)",
    solvers=(),
    fractional=False,
    summary="Every round, a weight-proportional number of devices per agent, chosen by that round's utilities (thesis M0).",
    run=solve_dynamic_partition,
    options=(
        Option("picking", "choice", "serial", "serial: each agent fills its quota in turn; draft: one device per turn",
               choices=PICKING),
        Option("work_conserving", "bool", True, "hand out the devices that unfilled quotas leave over"),
        ORDER_OPTION,
        state_option("the agent whose turn it is"),
    ),
    estimate=lambda instance, options: heuristic_size(instance, options, bulk=True),
)
