"""Gandiva_fair: stride scheduling of device quanta, with optional trading (``models.md`` item 10).

After Gandiva_fair (Chaudhary et al., EuroSys 2020), as the thesis describes it
(thesis 002, section 5.1): every agent holds tickets equal to its weight ``w_i``;
its stride is ``1 / w_i``; a scheduler keeps a pass value per agent and always
serves the agent with the smallest pass, which then advances by its stride.  Over
time each agent receives device quanta in proportion to its tickets.

Quanta and state
    A quantum is one device for one round.  In round ``r`` the agents present
    (``a_i <= r <= D_i``) are served repeatedly, smallest pass first (ties: the
    lowest agent index); the served agent takes one device of its most preferred
    pool with a free device (``u_{i,c,r}`` descending, ties to the pool listed
    first; zero-utility pools never) and its pass grows by its stride.  An agent
    at its demand ``d_i`` or without a wanted free device leaves the round without
    advancing.  Passes persist across rounds.  An agent that starts competing (it
    becomes present, at its arrival or in its first round, with a demand ``d_i > 0``)
    starts at ``max(its pass, the smallest pass among the agents that competed in
    the previous round)``, so it does not monopolise the devices to catch up (the
    global-pass rule of stride scheduling).  Option ``state`` (``{"passes": {agent
    id: pass}, "previous": [agent ids]}``, an earlier run's ``details["state"]``)
    continues from the passes and competitors where that run stopped.
    Strides are exact integers: weights are scaled to integers ``t_i`` with the same
    ratios and the stride is ``L / t_i``, ``L = lcm(t)``, so ties are exact.

Trading (``trading=True``)
    Gandiva_fair's heterogeneity-aware step: users who gain most from a fast
    accelerator buy time on it from users who gain least, paying with time on a
    slower one.  Implemented per round on the stride allocation, for every ordered
    pair of pools ``(F, S)``: the speedup of agent ``i`` is ``s_i = u_{i,F,r} / u_{i,S,r}``
    (both positive).  A buyer ``b`` holding ``S`` devices and a seller ``s`` holding
    ``F`` devices with ``s_s < s_b`` trade ``a`` ``F`` devices for ``b'`` ``S`` devices with
    ``a s_s < b' < a s_b``: the exchange rate ``b' / a`` lies strictly between the two
    speedups, as near their midpoint as whole devices allow (``b'`` the whole number
    nearest to ``a (s_s + s_b) / 2`` in range), with the smallest ``a`` for which such a
    ``b'`` exists; ``a`` is at most the seller's ``F`` devices, ``b'`` at most the
    buyer's ``S`` devices, and both stay within their demands.  Both agents gain
    strictly (``b' u_{s,S} > a u_{s,F}`` and ``a u_{b,F} > b' u_{b,S}``), so trading never
    lowers an agent below its stride share and ends (the utilitarian sum grows at every
    trade over finitely many allocations).  Buyers are scanned from the highest speedup,
    sellers from the lowest.  Not implemented: the paper's trading of long-term ticket
    shares across servers and its exact price rule (no seed gives
    it); trades here are whole devices within one round.

Objective reported: ``sum_i w_i U_i``.  Cost per round ``O(E log E + (D + n) log n)``
for the stride part; trading adds ``O(m^2 n log n)`` per scan.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("g", count=4)], [lo.Agent("A", weight=3), lo.Agent("B")],
...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)], rounds=2)
>>> res = lo.solve(inst, "gandiva_fair")
>>> res.utilities, res.details["final_pass"]
({'A': 6.0, 'B': 2.0}, [6, 6])

Strides are 1 and 3 (tickets 3 and 1).  Round 0 serves A (pass 0, lower index),
B (pass 0), A (pass 1), A (pass 2); round 1 the same from passes 3 and 3: per
round A gets 3 devices and B one.
"""

from __future__ import annotations

import heapq
import time
from math import lcm

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method, Option
from ..result import Result
from ._baseline_common import (
    Picker,
    agent_of,
    demand_caps,
    heuristic_size,
    make_result,
    present_agents,
    read_state,
    state_option,
)
from .mtf import integer_weights

__all__ = ["solve_gandiva_fair", "stride_round", "trade_round"]

_EPS = 1e-12
_UNCAPPED = 1 << 62


def _lot(low: float, high: float, fast_held: int, slow_held: int, seller_room: int, buyer_room: int):
    """The smallest trade ``(a, b)``: ``a`` fast devices for ``b`` slow ones with ``a low < b < a high``.

    ``a <= fast_held`` (the seller's fast devices), ``b <= slow_held`` (the buyer's slow
    devices), ``b - a <= seller_room`` and ``a - b <= buyer_room`` (demands); ``b`` is the
    whole number nearest to ``a (low + high) / 2`` in range (halves down).  ``None`` if none.
    """
    mid = (low + high) / 2.0
    for a in range(1, fast_held + 1):
        # A speedup ratio overflows to inf when a slow utility is vanishingly small: no upper limit then.
        bmin = max(1, _whole(np.floor(a * low + _EPS)) + 1, a - buyer_room)
        bmax = min(slow_held, _whole(np.ceil(a * high - _EPS)) - 1, a + seller_room)
        if bmin <= bmax:
            b = _whole(np.ceil(a * mid - 0.5))
            return a, min(max(b, bmin), bmax)
    return None


def _whole(value: float) -> int:
    """``int(value)``, with anything beyond :data:`_UNCAPPED` (inf included) held at it."""
    return int(value) if value < _UNCAPPED else _UNCAPPED


def stride_round(picker: Picker, members: list[int], passes: list[int], stride: list[int],
                 caps: list[int]) -> list[tuple[int, int, int]]:
    """One round of stride scheduling: ``(agent, edge, devices)`` picks; ``passes`` advance in place.

    ``members``: the competing agents, each with ``caps[i] = d_i > 0``.

    Served one device at a time, smallest ``(pass, agent index)`` first.  Where the
    pools are large the same picks are handed out in bulk: every pick with a pass up
    to ``P`` happens before any later one, so with ``m_i(P) = floor((P - pass_i) /
    stride_i) + 1`` picks per agent (0 when ``P < pass_i``) the largest ``P`` at which no
    agent passes its demand and no pool is drawn beyond its free devices
    (``sum_{i at c} m_i(P) <= free_c``, each agent drawing on its current pool) gives
    the first ``sum_i m_i(P)`` picks at once (binary search on ``P``; passes are exact
    integers).  The turns after it go one by one until something changes.  A jump is
    tried after as many single turns as there are agents, twice as many after a jump
    that handed out fewer devices than that, and it stops after one pass over the
    agents unless every agent can take at least one more turn, so rounds of a few
    devices per agent pay little for it.

    >>> import laissez_opt as lo
    >>> from laissez_opt.heuristics._baseline_common import Picker
    >>> inst = lo.Instance([lo.Pool("g", count=3 * 10**8)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)])
    >>> passes = [0, 0]                                   # strides 2 and 1: tickets 1 and 2
    >>> picks = stride_round(Picker(inst, inst.edge_utility[:, 0]), [0, 1], passes, [2, 1], [10**9, 10**9])
    >>> sorted((i, sum(k for j, _, k in picks if j == i)) for i in (0, 1)), passes
    ([(0, 100000000), (1, 200000000)], [200000000, 200000000])
    """
    held = dict.fromkeys(members, 0)
    picks: list[tuple[int, int, int]] = []
    heap = [(passes[i], i) for i in members]
    heapq.heapify(heap)
    wait = len(heap)
    while heap and picker.left:
        handed = _stride_jump(picker, heap, passes, stride, caps, held, picks)
        if handed:
            heap = [(passes[i], i) for _, i in heap if held[i] < caps[i]]
            heapq.heapify(heap)
        wait = len(heap) if handed >= len(heap) else 2 * wait
        for _ in range(max(wait, 1)):
            if not heap or not picker.left:
                break
            p, i = heapq.heappop(heap)
            e = picker.pick(i)
            if e < 0:
                continue  # nothing wanted is free: it leaves the round without advancing
            picks.append((i, e, 1))
            held[i] += 1
            passes[i] = p + stride[i]
            if held[i] < caps[i]:
                heapq.heappush(heap, (passes[i], i))
    return picks


def _stride_jump(picker, heap, passes, stride, caps, held, picks) -> int:
    """Hand out every pick of passes up to the largest safe ``P`` (see :func:`stride_round`); the devices."""
    live = [(i, picker.head(i)) for _, i in heap]
    live = [(i, c) for i, c in live if c >= 0]
    if not live or picker.left < 2 * len(live):
        return 0

    def counts(limit: int) -> list[int] | None:
        drawn: dict[int, int] = {}
        out = []
        for i, c in live:
            m = 0 if limit < passes[i] else (limit - passes[i]) // stride[i] + 1
            if m > caps[i] - held[i]:
                return None
            drawn[c] = drawn.get(c, 0) + m
            if drawn[c] > picker.rem[c]:
                return None
            out.append(m)
        return out

    low = max(passes[i] for i, _ in live)  # safe once every agent has one more turn
    if counts(low) is None:
        return 0  # not even one turn each without a change: the single turns go on
    # Unsafe: one pick past an agent's demand, or more picks than any pool holds.
    high = min(min(passes[i] + (caps[i] - held[i]) * stride[i] for i, _ in live),
               low + max(stride[i] for i, _ in live) * (picker.left + 1))
    while high - low > 1:
        mid = (low + high) // 2
        if counts(mid) is None:
            high = mid
        else:
            low = mid
    handed = 0
    for (i, c), m in zip(live, counts(low)):
        if m:
            picks.append((i, picker.edge[picker.ptr[i]], m))
            picker.spend(c, m)
            held[i] += m
            passes[i] += m * stride[i]
            handed += m
    return handed


def trade_round(hold: list[dict[int, int]], util: list[dict[int, float]], caps: list[int], n_pools: int) -> list[dict]:
    """Trade devices between agents of one round (see the module docstring); returns the trades.

    ``hold[i]``: devices per pool held by agent ``i`` (updated in place);
    ``util[i]``: ``u_{i,c,r}`` per compatible pool; ``caps``: ``d_i``.

    >>> hold = [{0: 1}, {1: 3}]                       # seller 0 holds the fast pool 0, buyer 1 the slow pool 1
    >>> util = [{0: 2.0, 1: 1.0}, {0: 6.0, 1: 1.0}]   # speedups 2 and 6: midpoint 4 slow devices per fast one
    >>> trade_round(hold, util, [9, 9], 2), hold      # the buyer holds only 3
    ([{'seller': 0, 'buyer': 1, 'fast': 0, 'slow': 1, 'fast_devices': 1, 'slow_devices': 3}], [{0: 0, 1: 3}, {1: 0, 0: 1}])
    >>> hold = [{0: 3}, {1: 4}]                       # speedups 1.25 and 1.4: no whole rate for one device,
    >>> util = [{0: 1.25, 1: 1.0}, {0: 1.4, 1: 1.0}]  # but 3 fast for 4 slow (3.75 < 4 < 4.2)
    >>> trade_round(hold, util, [9, 9], 2)[0]["slow_devices"], hold
    (4, [{0: 0, 1: 4}, {1: 0, 0: 3}])
    """
    trades = []
    n = len(hold)
    held = [sum(h.values()) for h in hold]
    progress = True
    while progress:
        progress = False
        for fast in range(n_pools):
            for slow in range(n_pools):
                if fast == slow:
                    continue
                while True:
                    sellers = sorted(
                        (util[i][fast] / util[i][slow], i)
                        for i in range(n)
                        if hold[i].get(fast, 0) > 0 and util[i].get(slow, 0.0) > 0
                    )
                    if not sellers:
                        break
                    buyers = sorted(
                        (-(util[i][fast] / util[i][slow]), i)
                        for i in range(n)
                        if hold[i].get(slow, 0) > 0 and util[i].get(fast, 0.0) > 0
                    )
                    # No lot fits even the widest interval and the largest holdings: no pair can trade.
                    if not buyers or _lot(sellers[0][0], -buyers[0][0], max(hold[i][fast] for _, i in sellers),
                                          max(hold[i][slow] for _, i in buyers), _UNCAPPED, _UNCAPPED) is None:
                        break
                    done = None
                    for neg, b in buyers:
                        if sellers[0][0] >= -neg:
                            break
                        for low, s in sellers:
                            if low >= -neg:
                                break
                            if s == b:
                                continue
                            lot = _lot(low, -neg, hold[s][fast], hold[b][slow], caps[s] - held[s], caps[b] - held[b])
                            if lot is not None:
                                done = (s, b, *lot)
                                break
                        if done:
                            break
                    if done is None:
                        break
                    s, b, a, k = done
                    hold[s][fast] -= a
                    hold[s][slow] = hold[s].get(slow, 0) + k
                    hold[b][slow] -= k
                    hold[b][fast] = hold[b].get(fast, 0) + a
                    held[s] += k - a
                    held[b] += a - k
                    trades.append({"seller": s, "buyer": b, "fast": fast, "slow": slow, "fast_devices": a, "slow_devices": k})
                    progress = True
    return trades


def _resumed(instance: Instance, state: dict | None) -> tuple[list[int], list[int]]:
    """Passes (by agent index) and the previous round's competitors of a ``state`` option."""
    if state is None:
        return [0] * instance.n_agents, []
    passes = state["passes"]
    if not isinstance(passes, dict) or sorted(passes) != sorted(instance.agent_index):
        raise InputError("state.passes must give every agent id its pass", path="state.passes")
    out = [0] * instance.n_agents
    for agent_id, value in passes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"a pass is an integer >= 0, got {value!r}", path=f"state.passes.{agent_id}")
        out[instance.agent_index[agent_id]] = value
    if not isinstance(state["previous"], list):
        raise InputError("state.previous must be a list of agent ids", path="state.previous")
    previous = sorted(agent_of(instance, a, "state.previous") for a in state["previous"])
    return out, previous


def solve_gandiva_fair(instance: Instance, *, trading: bool = False, state: dict | None = None) -> Result:
    """Stride scheduling of device quanta (tickets = weights), optionally with trading.

    ``objective = sum_i w_i U_i``; ``details``: the final passes, the trades per round.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("v100"), lo.Pool("k80", count=6)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "v100", 2.0), lo.Edge("A", "k80", 1.0),
    ...                     lo.Edge("B", "v100", 6.0), lo.Edge("B", "k80", 1.0)])
    >>> solve_gandiva_fair(inst).utilities
    {'A': 5.0, 'B': 3.0}
    >>> res = solve_gandiva_fair(inst, trading=True)
    >>> res.utilities, res.details["trades"]
    ({'A': 6.0, 'B': 6.0}, [[{'seller': 'A', 'buyer': 'B', 'fast': 'v100', 'slow': 'k80', 'fast_devices': 1, 'slow_devices': 3}]])
    """
    started = time.perf_counter()
    if not isinstance(trading, bool):
        raise InputError(f"trading must be true or false, got {trading!r}", path="option trading")
    n, rounds = instance.n_agents, instance.rounds
    caps = demand_caps(instance)
    ints = integer_weights(instance.weights.tolist())
    big = lcm(*ints) if ints else 1
    stride = [big // t for t in ints]
    passes, previous = _resumed(instance, read_state(state, "gandiva_fair", ("passes", "previous")))
    amounts = np.zeros((instance.n_edges, rounds))
    edge_of = {(int(i), int(c)): e for e, (i, c) in enumerate(zip(instance.edge_agent, instance.edge_pool))}
    trades_log = []
    for r in range(rounds):
        check_deadline(f"in round {r} of {instance.rounds}")
        members = [i for i in present_agents(instance, r) if caps[i] > 0]
        if previous:
            floor = min(passes[i] for i in previous)
            before = set(previous)
            for i in members:
                if i not in before and passes[i] < floor:
                    passes[i] = floor
        picker = Picker(instance, instance.edge_utility[:, r])
        picks = stride_round(picker, members, passes, stride, caps)
        if trading and picks:
            hold: list[dict[int, int]] = [{} for _ in range(n)]
            for i, e, k in picks:
                c = int(instance.edge_pool[e])
                hold[i][c] = hold[i].get(c, 0) + k
            util: list[dict[int, float]] = [{} for _ in range(n)]
            column = instance.edge_utility[:, r]
            for (i, c), e in edge_of.items():
                if column[e] > 0:
                    util[i][c] = float(column[e])
            done = trade_round(hold, util, caps, instance.n_pools)
            for i in range(n):
                for c, k in hold[i].items():
                    if k:
                        amounts[edge_of[(i, c)], r] += k
            trades_log.append([
                {**t, "seller": instance.agents[t["seller"]].id, "buyer": instance.agents[t["buyer"]].id,
                 "fast": instance.pools[t["fast"]].id, "slow": instance.pools[t["slow"]].id}
                for t in done
            ])
        else:
            for _, e, k in picks:
                amounts[e, r] += k
            if trading:
                trades_log.append([])
        previous = members
    details = {"agents": [a.id for a in instance.agents], "strides": stride, "final_pass": passes,
               "state": {"passes": {a.id: p for a, p in zip(instance.agents, passes)},
                         "previous": [instance.agents[i].id for i in previous]}}
    if trading:
        details["trades"] = trades_log
    return make_result(instance, "gandiva_fair", amounts, started, params={"trading": trading}, details=details)


METHOD = Method(
    name="gandiva_fair",
    kind="heuristic",
    objective="sum_i w_i U_i (stride scheduling, tickets = weights; no optimality guarantee)",
    solvers=(),
    fractional=False,
    summary="Gandiva_fair stride scheduling of device quanta across rounds; option trading=True adds speedup-based trades.",
    run=solve_gandiva_fair,
    options=(
        Option("trading", "bool", False, "add Gandiva_fair's speedup-based trades of devices between agents"),
        state_option("each agent's stride pass and the previous round's competitors"),
    ),
    estimate=lambda instance, options: heuristic_size(instance, options, bulk=True),
)
