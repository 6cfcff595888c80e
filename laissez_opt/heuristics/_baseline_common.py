"""Helpers shared by the classic baselines (``models.md`` item 10), written once.

* :class:`Picker`: agents take devices one at a time, each from its most preferred
  pool that still has a free device.  An agent's list holds the pools of its edges
  with a positive score (the round's utility ``u_{i,c,r}`` unless told otherwise),
  by score descending, ties to the pool listed first; devices of one pool are
  identical, so "the next device" of a pool is simply its lowest-numbered free one.
  A pointer per agent only moves forward past exhausted pools (``O(E)`` per round).
* :func:`apportion_in_order`: a weight-proportional split of whole devices
  (largest remainder, exact integer arithmetic, ties to the earlier member).
* :func:`present_agents`, :func:`demand_caps`, :func:`agent_order`,
  :func:`check_options`, :func:`make_result`: windows ``a_i..D_i``, caps ``d_i``,
  a user-given agent order, option checking and the :class:`~laissez_opt.result.Result`
  every baseline returns (status ``feasible``, objective ``sum_i w_i U_i``).
* :func:`read_state`: the ``state`` option of the heuristics that carry something
  from round to round (a turn, stride passes, token budgets, a partition).  Such a
  heuristic reports where it stopped as ``details["state"]`` (JSON values, agents
  named by id) and accepts that dictionary back as ``state`` to continue from there:
  running rounds ``0..R-1`` in one call or one round per call, each passing on the
  previous call's state, gives the same allocations.  The multi-round simulator
  (:mod:`laissez_opt.simulate`) relies on it.

Example
-------
>>> import numpy as np
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("g", count=1), lo.Pool("h", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "g", 0.9), lo.Edge("A", "h", 0.5), lo.Edge("B", "g", 0.7)])
>>> picker = Picker(inst, inst.edge_utility[:, 0])
>>> picker.pick(1), picker.pick(0), picker.pick(1), picker.left
(2, 1, -1, 1)
>>> apportion_in_order(5, [1, 1, 1], [2, 0, 1])
{2: 2, 0: 2, 1: 1}
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..limits import SizeEstimate, check_deadline, compiler_bytes
from ..method_spec import Option, read_state, state_option  # noqa: F401  (the heuristics' shared names)
from ..result import Result, agent_values, allocation_columns, edge_utilities

__all__ = [
    "UNBOUNDED",
    "Picker",
    "apportion_in_order",
    "present_agents",
    "demand_caps",
    "agent_order",
    "rotate",
    "heuristic_size",
    "ORDER_OPTION",
    "make_result",
    "PICKING",
    "partition_picks",
    "draft_cycles",
    "read_state",
    "agent_of",
]

#: Stand-in for an unbounded demand ``d_i``.
UNBOUNDED = sys.maxsize


#: Bytes per edge and round held by a heuristic: utilities, amounts, the verifier's copies.
_EDGE_ROUND_BYTES = 6 * 8
#: Bytes per allocation record (a dict of four entries) in a result.
_RECORD_BYTES = 450
#: Bytes per pick recorded as two numbers (an int64 pair in arrays grown by doubling, or two list
#: entries pointing at int objects): ``per_handed_bytes`` of ``mtf``.
PICK_BYTES = 80.0
#: Bytes per pick recorded as an ``(agent, edge)`` tuple in a list: ``per_handed_bytes`` of ``round_robin``.
PICK_TUPLE_BYTES = 128.0

#: The ``order`` option of the partition baselines.
ORDER_OPTION = Option("order", "any", None, "agent ids in the order agents pick (default: instance order)",
                      nullable=True, accepts="list of agent ids", types=(list, tuple))


def heuristic_size(instance: Instance, options: dict | None = None, *, per_unit_bytes: float = 0.0,
                   per_handed_bytes: float = 0.0, bulk: bool = False, note: str = "",
                   compiles: bool = False) -> SizeEstimate:
    """Size of a heuristic that hands out devices one at a time, round by round.

    Steps per round: one per device handed out (at most ``min(sum_c k_c, sum_i d'_i)``,
    ``d'_i`` the demand capped by the devices reachable through the agent's edges),
    one per agent and one per edge.  ``bulk``: turns that repeat are handed out at
    once (:func:`draft_cycles`, the stride jumps of ``gandiva_fair``); each bulk step
    costs one step per agent and ends with an agent leaving or a pool exhausted, so
    the hand-outs cost at most ``min(devices, n (n + m))`` steps.  Memory: the edge-round arrays, one record per
    allocated (edge, round), and ``per_unit_bytes`` per device and demand unit (for
    algorithms that expand pools into devices), and ``per_handed_bytes`` per device handed
    out in a round (for those that record every pick of a round).  ``compiles``: the run
    takes compiled kernels (:func:`~laissez_opt.limits.compiler_bytes`).  Floats throughout:
    the counts of a valid instance may multiply beyond any integer type.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2**30)], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)], rounds=2**20)
    >>> heuristic_size(inst).steps > 2**50
    True
    """
    rounds = float(instance.rounds)
    devices = float(sum(float(p.count) for p in instance.pools))
    units = float(np.sum(instance.effective_demands))
    handed = min(devices, units)
    edge_rounds = float(instance.n_edges) * rounds
    steps_handed = min(handed, float(instance.n_agents) * (instance.n_agents + instance.n_pools)) if bulk else handed
    return SizeEstimate(
        dense_bytes=edge_rounds * _EDGE_ROUND_BYTES + min(edge_rounds, handed * rounds) * _RECORD_BYTES
        + (devices + units) * per_unit_bytes + handed * per_handed_bytes + compiler_bytes(compiles),
        steps=rounds * (steps_handed + instance.n_agents + instance.n_edges),
        note=note or f"{handed:.3g} devices handed out per round{' in bulk' if bulk else ''} over {instance.rounds} rounds",
    )


def agent_of(instance: Instance, agent_id, path: str) -> int:
    """Index of agent ``agent_id``; :class:`InputError` at ``path`` when unknown."""
    index = instance.agent_index.get(agent_id) if isinstance(agent_id, str) else None
    if index is None:
        raise InputError(f"unknown agent id {agent_id!r}", path=path)
    return index


def present_agents(instance: Instance, r: int) -> list[int]:
    """Indices (ascending) of the agents with ``a_i <= r <= D_i``."""
    last = instance.last_rounds.tolist()
    return [i for i, a in enumerate(instance.agents) if a.arrival <= r <= last[i]]


def demand_caps(instance: Instance) -> list[int]:
    """``d_i`` per agent as integers (:data:`UNBOUNDED` where the demand is null)."""
    return [UNBOUNDED if a.demand is None else int(a.demand) for a in instance.agents]


def agent_order(instance: Instance, order) -> list[int]:
    """Agent indices of ``order`` (a permutation of the agent ids); instance order when ``None``."""
    if order is None:
        return list(range(instance.n_agents))
    if isinstance(order, str) or not isinstance(order, Iterable):
        raise InputError(f"order must be a list of agent ids, got {order!r}", path="option order")
    order = list(order)
    index = instance.agent_index
    unknown = [a for a in order if a not in index]
    if unknown:
        raise InputError(f"order names unknown agent id {unknown[0]!r}", path="option order")
    if sorted(order) != sorted(index) or len(set(order)) != len(order):
        raise InputError("order must list every agent id exactly once", path="option order")
    return [index[a] for a in order]


def rotate(members: Sequence[int], start: int) -> list[int]:
    """``members`` (ascending agent indices) cyclically from the first index ``>= start``."""
    k = next((j for j, i in enumerate(members) if i >= start), len(members))
    return [*members[k:], *members[:k]]


def apportion_in_order(total: int, int_weights: Sequence[int], members: Sequence[int]) -> dict[int, int]:
    """Split ``total`` whole devices among ``members`` in proportion to ``w_i`` (largest remainder).

    Member ``i`` gets ``floor(total w_i / W)`` (``W = sum`` over the members); the
    ``total - sum floor`` devices left go one each to the largest remainders
    ``total w_i mod W``, ties to the member listed first.  Exact (integer weights).
    """
    if not members:
        return {}
    big = sum(int_weights[i] for i in members)
    shares: dict[int, int] = {}
    rems = []
    for pos, i in enumerate(members):
        q, rem = divmod(total * int_weights[i], big)
        shares[i] = q
        rems.append((-rem, pos, i))
    left = total - sum(shares.values())
    for _, _, i in sorted(rems)[:left]:
        shares[i] += 1
    return shares


class Picker:
    """Devices of one round (or of a fixed partition) taken one at a time by preference.

    ``score`` (shape ``(E,)``) ranks each agent's edges, descending, ties by pool
    order; edges with ``score <= 0`` are not wanted; so are all edges of agents
    not in ``allowed`` (when given).  ``counts`` are the free devices per pool
    (default ``k_c``).  :meth:`pick` gives agent ``i`` one device of its most
    preferred pool with a free device and returns that edge, or ``-1``;
    :meth:`take` gives it many at once, pool by pool.
    """

    def __init__(self, instance: Instance, score: np.ndarray, *, allowed: Sequence[int] | None = None, counts=None):
        score = np.asarray(score, dtype=np.float64)
        agent, pool = instance.edge_agent, instance.edge_pool
        wanted = score > 0
        if allowed is not None:
            mask = np.zeros(instance.n_agents, dtype=bool)
            mask[list(allowed)] = True
            wanted &= mask[agent]
        idx = np.nonzero(wanted)[0]
        order = idx[np.lexsort((pool[idx], -score[idx], agent[idx]))]
        bounds = np.searchsorted(agent[order], np.arange(instance.n_agents + 1))
        self.edge: list[int] = order.tolist()
        self.pool: list[int] = pool[order].tolist()
        self.ptr: list[int] = bounds[:-1].tolist()
        self.end: list[int] = bounds[1:].tolist()
        self.rem: list[int] = (instance.counts if counts is None else np.asarray(counts)).astype(np.int64).tolist()
        self.left = int(sum(self.rem))
        #: Free devices of the pools some allowed agent wants (the base of weight-proportional quotas).
        self.usable = int(sum(self.rem[c] for c in set(self.pool)))
        #: Hand-outs so far (one per pick, or per pool of a bulk take): paces the deadline checks.
        self.steps = 0

    def can_pick(self, i: int) -> bool:
        """Whether agent ``i`` still wants a free device (moves its pointer past exhausted pools)."""
        p, e, rem, pool = self.ptr[i], self.end[i], self.rem, self.pool
        while p < e and not rem[pool[p]]:
            p += 1
        self.ptr[i] = p
        return p < e

    def pick(self, i: int) -> int:
        """Give agent ``i`` one device of its best pool with a free device; the edge, or ``-1``."""
        if not self.can_pick(i):
            return -1
        p = self.ptr[i]
        self.rem[self.pool[p]] -= 1
        self.left -= 1
        self.steps += 1
        if not self.steps & 0xFFFF:  # every 65,536 hand-outs: rounds of millions take a while
            check_deadline("while handing out devices")
        return self.edge[p]

    def take(self, i: int, count: int) -> list[tuple[int, int]]:
        """Agent ``i`` takes up to ``count`` devices, all it can of its best pool with free
        devices, then of the next: ``(edge, devices)`` pairs.  The same devices as ``count``
        calls of :meth:`pick` in a row, in ``O(pools taken from)`` steps, so pools of
        billions of devices are handed out at once."""
        out = []
        while count > 0 and self.can_pick(i):
            p = self.ptr[i]
            k = min(count, self.rem[self.pool[p]])
            self.spend(self.pool[p], k)
            out.append((self.edge[p], k))
            count -= k
        return out

    def head(self, i: int) -> int:
        """The pool agent ``i`` takes its next device from, or ``-1`` when it wants none that is free."""
        return self.pool[self.ptr[i]] if self.can_pick(i) else -1

    def spend(self, c: int, k: int) -> None:
        """Hand out ``k`` free devices of pool ``c`` (bulk steps that know the pool has them)."""
        self.rem[c] -= k
        self.left -= k
        self.steps += 1
        if not self.steps & 0xFFFF:  # every 65,536 hand-outs: rounds of millions take a while
            check_deadline("while handing out devices")


#: How the agents of a partition choose their devices.
PICKING = ("serial", "draft")


def partition_picks(
    picker: Picker,
    members: Sequence[int],
    quotas: dict[int, int],
    caps: Sequence[int],
    *,
    picking: str = "serial",
    work_conserving: bool = True,
) -> tuple[list[tuple[int, int, int]], int]:
    """Split the picker's devices into a weight-proportional partition; ``(agent, edge, devices)`` picks.

    ``members`` in picking order, ``quotas`` ``q_i`` (from :func:`apportion_in_order`),
    ``caps`` ``d_i``.  ``picking="serial"``: each member in turn takes its whole
    ``min(q_i, d_i)`` devices, one at a time by preference, before the next member
    chooses (serial dictatorship with quotas); ``"draft"``: members take one device
    per turn, cyclically, until each has its quota or can take nothing more.  With
    ``work_conserving``, devices still free afterwards (quotas that could not be
    filled: incompatible pools, exhausted preferences, demand caps) are drafted one
    per turn, in the same order, to members below ``d_i`` that still want one.
    Returns the picks (devices of one edge taken together counted once) and how many
    devices the work-conserving pass handed out.  Device by device in meaning; in
    bulk where nothing changes between turns (:func:`draft_cycles`), so the work does
    not grow with the pools' sizes.
    """
    if picking not in PICKING:
        raise InputError(f"picking must be one of {', '.join(PICKING)}, got {picking!r}", path="option picking")
    picks: list[tuple[int, int, int]] = []
    held = dict.fromkeys(members, 0)
    quota = {i: min(quotas.get(i, 0), caps[i]) for i in members}
    if picking == "serial":
        for i in members:
            if not picker.left:
                break
            for e, k in picker.take(i, quota[i]):
                picks.append((i, e, k))
                held[i] += k
    else:
        draft_cycles(picker, [i for i in members if quota[i] > 0], quota, held, picks)
    partitioned = sum(k for _, _, k in picks)
    if work_conserving:
        draft_cycles(picker, [i for i in members if held[i] < caps[i]], caps, held, picks)
    return picks, sum(k for _, _, k in picks) - partitioned


def draft_cycles(picker: Picker, queue: list[int], target, held: dict[int, int],
                 picks: list[tuple[int, int, int]]) -> None:
    """Members of ``queue`` take one device per turn, in that order, cyclically, until each holds
    ``target[i]`` or can take nothing more; appends ``(agent, edge, devices)`` to ``picks``.

    Between two changes (a member reaching its target or wanting nothing free, a pool
    running out under the members drawing on it) every cycle repeats the previous one,
    so ``K = min(min_i (target_i - held_i), min_c floor(free_c / members drawing on c))``
    whole cycles are handed out at once; a cycle in which a pool runs out goes turn by
    turn.  Each such step ends with a member leaving or a pool exhausted.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=10**9)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)])
    >>> picker, held, picks = Picker(inst, inst.edge_utility[:, 0]), {0: 0, 1: 0}, []
    >>> draft_cycles(picker, [0, 1], {0: 3, 1: 10**9}, held, picks)    # A stops at 3; B drafts the rest
    >>> picks, picker.left
    ([(0, 0, 3), (1, 1, 3), (1, 1, 999999994)], 0)
    """
    while queue and picker.left:
        heads = [picker.head(i) for i in queue]
        queue = [i for i, c in zip(queue, heads) if c >= 0]  # wanting nothing free: it would pass every turn
        heads = [c for c in heads if c >= 0]
        if not queue:
            return
        drawing = Counter(heads)
        cycles = min(min(target[i] - held[i] for i in queue), min(picker.rem[c] // n for c, n in drawing.items()))
        if cycles > 0:
            for i, c in zip(queue, heads):
                e = picker.edge[picker.ptr[i]]
                picker.spend(c, cycles)
                held[i] += cycles
                picks.append((i, e, cycles))
            queue = [i for i in queue if held[i] < target[i]]
            continue
        keep = []
        for i in queue:  # a pool runs out during this cycle: turn by turn
            if not picker.left:
                break
            e = picker.pick(i)
            if e < 0:
                continue
            picks.append((i, e, 1))
            held[i] += 1
            if held[i] < target[i]:
                keep.append(i)
        queue = keep


def make_result(
    instance: Instance,
    method: str,
    amounts: np.ndarray,
    started: float,
    *,
    mode: str = "integral",
    params: dict | None = None,
    details: dict | None = None,
) -> Result:
    """The baseline's :class:`Result`: status ``feasible``, ``objective = sum_i w_i U_i``."""
    utilities = edge_utilities(instance, amounts)
    return Result(
        instance=instance.name,
        method=method,
        status="feasible",
        solver=None,
        objective=float(instance.weights @ utilities),
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        timing={"build_s": 0.0, "solve_s": time.perf_counter() - started},
        route=method,
        mode=mode,
        params=dict(params or {}),
        details=dict(details or {}),
        amounts=amounts,
    )
