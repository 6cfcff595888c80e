"""Round-robin: agents take turns, one device per turn (``models.md`` item 10).

Every round ``r`` the devices are handed out one at a time.  The agent whose turn
it is takes one device of its most preferred pool that still has a free device
(highest ``u_{i,c,r}``; equal utilities: the pool listed first; within a pool the
lowest-numbered free device, which does not matter since a pool's devices are
identical).  The turn then passes to the next agent in instance order, cyclically.
An agent is skipped, and leaves the round, when it is absent (``r < a_i`` or
``r > D_i``), holds ``d_i`` devices already, or has no free device of a pool with
``u_{i,c,r} > 0`` left (zero-utility edges are never taken: a device nobody
values stays idle).  The round ends when no device is free or no agent can take
one.

The turn persists across rounds: round ``r + 1`` starts with the agent after the
last one served in round ``r`` (the first present agent at or after that index).

Weights are not used: this is the classic unweighted rotation, each present agent
one device per cycle.  The weighted counterpart is ``gandiva_fair`` (stride
scheduling).  The objective reported is ``sum_i w_i U_i``.

Cost per round: ``O(E log E)`` to sort the round's edges into preference lists,
then ``O(D + n + E)`` for ``D`` devices (a queue of agents and forward-only
preference pointers).  Reference: thesis 002, section 2 (round-robin schedulers
as the classic fair but heterogeneity-blind baseline).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("fast"), lo.Pool("slow", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "fast", 0.9), lo.Edge("A", "slow", 0.2),
...                     lo.Edge("B", "fast", 0.5), lo.Edge("B", "slow", 0.4)], rounds=2)
>>> res = lo.solve(inst, "round_robin")
>>> sorted((a["round"], a["agent"], a["pool"], a["amount"]) for a in res.allocation)
[(0, 'A', 'fast', 1.0), (0, 'A', 'slow', 1.0), (0, 'B', 'slow', 1.0), (1, 'A', 'slow', 1.0), (1, 'B', 'fast', 1.0), (1, 'B', 'slow', 1.0)]
>>> res.details["turn_start"]
['A', 'B']

Round 0: A takes ``fast``, B a ``slow``, A the last ``slow``; A was served last, so
round 1 starts with B, which now gets ``fast``.
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method
from ..result import Result
from ._baseline_common import (
    PICK_TUPLE_BYTES,
    Picker,
    agent_of,
    demand_caps,
    heuristic_size,
    make_result,
    present_agents,
    read_state,
    rotate,
    state_option,
)

__all__ = ["solve_round_robin", "round_robin_round"]


def round_robin_round(picker: Picker, members: list[int], turn: int, caps: list[int], n: int) -> tuple[list[tuple[int, int]], int]:
    """One round: ``(agent, edge)`` picks in order and the turn for the next round.

    ``members``: present agents, ascending; ``turn``: the agent index whose turn it is
    (the first present agent at or after it starts); ``caps``: ``d_i``.
    """
    picks: list[tuple[int, int]] = []
    queue = deque(i for i in rotate(members, turn) if caps[i] > 0)
    held = dict.fromkeys(queue, 0)
    while queue and picker.left:
        i = queue.popleft()
        e = picker.pick(i)
        if e < 0:
            continue
        picks.append((i, e))
        held[i] += 1
        turn = i + 1 if i + 1 < n else 0
        if held[i] < caps[i]:
            queue.append(i)
    return picks, turn


def solve_round_robin(instance: Instance, *, state: dict | None = None) -> Result:
    """Run round-robin over all rounds; ``objective = sum_i w_i U_i`` (see the module docstring).

    ``state``: ``{"turn": agent id}`` from an earlier run's ``details["state"]``: start
    with that agent's turn instead of the first agent's (continues a run round by round).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=3)], [lo.Agent("A", weight=5), lo.Agent("B", demand=1)],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)])
    >>> solve_round_robin(inst).utilities
    {'A': 2.0, 'B': 1.0}
    """
    started = time.perf_counter()
    n, rounds = instance.n_agents, instance.rounds
    caps = demand_caps(instance)
    amounts = np.zeros((instance.n_edges, rounds))
    resume = read_state(state, "round_robin", ("turn",))
    turn = 0 if resume is None else agent_of(instance, resume["turn"], "state.turn")
    turn_start = []
    for r in range(rounds):
        check_deadline(f"in round {r} of {instance.rounds}")
        members = present_agents(instance, r)
        first = rotate(members, turn)
        turn_start.append(instance.agents[first[0]].id if first else None)
        picker = Picker(instance, instance.edge_utility[:, r])
        picks, turn = round_robin_round(picker, members, turn, caps, n)
        for _, e in picks:
            amounts[e, r] += 1.0
    details = {"turn_start": turn_start, "final_turn": instance.agents[turn].id,
               "state": {"turn": instance.agents[turn].id}}
    return make_result(instance, "round_robin", amounts, started, details=details)


METHOD = Method(
    name="round_robin",
    kind="heuristic",
    objective="sum_i w_i U_i (round-robin, one device per turn; no optimality guarantee)",
    solvers=(),
    fractional=False,
    summary="Agents take turns (persisting across rounds), each taking one device of its best remaining pool.",
    run=solve_round_robin,
    options=(state_option("the agent whose turn it is"),),
    # A round records every pick as an (agent, edge) tuple in a list.
    estimate=lambda instance, options: heuristic_size(instance, per_handed_bytes=PICK_TUPLE_BYTES),
)
