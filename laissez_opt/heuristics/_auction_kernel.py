"""Compiled inner loop of the forward auction (:mod:`laissez_opt.heuristics.auction`).

The kernel works on one assignment problem in "unit" form:

* persons are *units*: agent ``i`` owns the units ``unit_ptr[i] .. unit_ptr[i+1]-1``
  (one per device it may hold), all with the agent's row of values;
* objects are *slots*: pool ``c`` owns the slots ``slot_ptr[c] .. slot_ptr[c+1]-1``
  (one per device), kept as a binary min-heap on price so that the cheapest
  device of a pool (the one a bidder takes) is at ``slot_ptr[c]`` and
  ``pool_price[c]`` mirrors that price;
* a "stay out" object of value 0, price 0 and unlimited copies is always available.

Values are given per agent row, either dense (``dense == 1``: ``vals[i*m + c]``) or in
compressed rows (``row_ptr``, ``cols``, ``vals``) with the transposed copy
(``col_ptr``, ``col_rows``, ``col_vals``) for the reverse step.

Each phase of the epsilon schedule runs the Gauss-Seidel forward auction from an
empty assignment with the prices of the previous phase, then the reverse clean-up
that lowers the price of every unassigned device with a positive price to 0 or hands
it to the unit that gains most from it (see the module docstring of ``auction``).
Both steps keep eps-complementary slackness.

With numba installed every function here is compiled once (``cache=True``: the
machine code is stored next to this file in ``__pycache__`` and reused by later
processes); without numba the same functions run as plain Python (slow, but the
same results).

>>> import numpy as np
>>> vals = np.array([3.0, 1.0, 2.0, 2.0])          # two agents x two pools, dense
>>> out = forward_reverse_auction(np.array([0, 2, 4]), np.zeros(0, np.int64), vals, 1, 2,
...                               np.zeros(3, np.int64), np.zeros(0, np.int64), np.zeros(0),
...                               np.array([0, 1, 2]), np.array([0, 1]), np.array([0, 1, 2]),
...                               np.array([0.5, 0.1, 0.01]))
>>> unit_slot = out[0]
>>> unit_slot.tolist()       # agent 0 holds pool 0's device, agent 1 pool 1's
[0, 1]
"""

from __future__ import annotations

import numpy as np

from ..jit import HAVE_NUMBA, jit as _jit


__all__ = [
    "HAVE_NUMBA", "forward_reverse_auction", "start_auction", "auction_phases", "best_net_values", "prepare",
    "pool_demand",
    "count_live", "fill_live", "fill_dense",
    "locate_edges",
]

STAY_OUT = -2
UNASSIGNED = -1


@_jit
def _sift_down(pos, base, size, price, owner, unit_slot):
    """Restore the heap of one pool after the price at ``pos`` rose."""
    h = pos - base
    p = price[pos]
    o = owner[pos]
    while True:
        child = 2 * h + 1
        if child >= size:
            break
        right = child + 1
        if right < size and price[base + right] < price[base + child]:
            child = right
        if price[base + child] < p:
            price[base + h] = price[base + child]
            moved = owner[base + child]
            owner[base + h] = moved
            if moved >= 0:
                unit_slot[moved] = base + h
            h = child
        else:
            break
    price[base + h] = p
    owner[base + h] = o
    if o >= 0:
        unit_slot[o] = base + h


@_jit
def _sift_up(pos, base, price, owner, unit_slot):
    """Restore the heap of one pool after the price at ``pos`` fell."""
    h = pos - base
    p = price[pos]
    o = owner[pos]
    while h > 0:
        parent = (h - 1) // 2
        if price[base + parent] > p:
            price[base + h] = price[base + parent]
            moved = owner[base + parent]
            owner[base + h] = moved
            if moved >= 0:
                unit_slot[moved] = base + h
            h = parent
        else:
            break
    price[base + h] = p
    owner[base + h] = o
    if o >= 0:
        unit_slot[o] = base + h
    return base + h


@_jit
def _after_sift_up(slot, pos, final, base):
    """Where the device at ``slot`` sits after :func:`_sift_up` took the device at ``pos`` to ``final``.

    The sift moves each device on the path from ``final`` down to ``pos``'s parent one level
    down, to its child on that path; the others stay.
    """
    h = pos - base
    while base + h != final:
        child = h
        h = (h - 1) // 2
        if base + h == slot:
            return base + child
    return slot


@_jit
def _block_max(x, xs, y, ys):
    """``max_j (x[xs + j] - y[ys + j])`` over ``j < 8``, as a tree (no loop-carried dependency)."""
    d0 = x[xs] - y[ys]
    d1 = x[xs + 1] - y[ys + 1]
    d2 = x[xs + 2] - y[ys + 2]
    d3 = x[xs + 3] - y[ys + 3]
    d4 = x[xs + 4] - y[ys + 4]
    d5 = x[xs + 5] - y[ys + 5]
    d6 = x[xs + 6] - y[ys + 6]
    d7 = x[xs + 7] - y[ys + 7]
    return max(max(max(d0, d1), max(d2, d3)), max(max(d4, d5), max(d6, d7)))


@_jit
def _top_two(x, xs, y, ys, length, v1, v2, j1):
    """Fold ``x[xs + j] - y[ys + j]`` (``j < length``) into the best ``v1`` (at ``j1``) and second ``v2``.

    Strict comparisons in index order: an earlier index (or the incumbent) wins ties.
    Blocks of 8 whose maximum does not beat ``v2`` are skipped after one tree
    reduction, which makes the scan several times faster once ``v2`` is high.
    """
    j = 0
    while j + 8 <= length:
        if _block_max(x, xs + j, y, ys + j) > v2:
            for jj in range(j, j + 8):
                net = x[xs + jj] - y[ys + jj]
                if net > v2:
                    if net > v1:
                        v2 = v1
                        v1 = net
                        j1 = jj
                    else:
                        v2 = net
        j += 8
    while j < length:
        net = x[xs + j] - y[ys + j]
        if net > v2:
            if net > v1:
                v2 = v1
                v1 = net
                j1 = j
            else:
                v2 = net
        j += 1
    return v1, v2, j1


@_jit
def _best_two_dense(vals, start, m, price):
    """Best and second-best ``vals[start + c] - price[c]`` over ``c < m``, with stay-out (0) as the
    incumbent best (it wins ties); returns ``(v1, v2, c1)``, ``c1 = -1`` for stay-out."""
    return _top_two(vals, start, price, 0, m, 0.0, -np.inf, -1)


@_jit
def _best_two_sparse(vals, cols, start, end, price):
    """As :func:`_best_two_dense` over compressed-row entries; returns the entry index ``k1``."""
    v1 = 0.0
    v2 = -np.inf
    k1 = -1
    for k in range(start, end):
        net = vals[k] - price[cols[k]]
        if net > v2:
            if net > v1:
                v2 = v1
                v1 = net
                k1 = k
            else:
                v2 = net
    return v1, v2, k1


@_jit
def _forward(row_ptr, cols, vals, dense, unit_agent, slot_ptr, slot_price, slot_owner, pool_price,
             unit_slot, unit_profit, queue, eps):
    """Forward auction from an empty assignment; returns the number of bids."""
    n_units = unit_agent.shape[0]
    for u in range(n_units):
        unit_slot[u] = UNASSIGNED
        queue[u] = u
    for s in range(slot_owner.shape[0]):
        slot_owner[s] = UNASSIGNED
    # out[i] = 1 once a unit of agent i stayed out in this phase: prices only rise during the
    # phase, so nothing is worth more than 0 to agent i any more and its other units follow.
    out = np.zeros(row_ptr.shape[0] - 1, np.int8)
    pending = n_units
    head = 0
    bids = 0
    while pending > 0:
        u = queue[head]
        head += 1
        if head == n_units:
            head = 0
        pending -= 1
        i = unit_agent[u]
        if out[i] == 1:
            unit_slot[u] = STAY_OUT
            unit_profit[u] = 0.0
            continue
        start = row_ptr[i]
        end = row_ptr[i + 1]
        # Best and second-best net value over the pools' cheapest devices; the
        # stay-out object (net value 0) is the incumbent, and wins ties.
        if dense == 1:
            v1, v2, c1 = _best_two_dense(vals, start, end - start, pool_price)
            a1 = vals[start + c1] if c1 >= 0 else 0.0
        else:
            v1, v2, k1 = _best_two_sparse(vals, cols, start, end, pool_price)
            c1 = cols[k1] if k1 >= 0 else -1
            a1 = vals[k1] if k1 >= 0 else 0.0
        if c1 < 0:
            unit_slot[u] = STAY_OUT
            unit_profit[u] = 0.0
            out[i] = 1
            continue
        base = slot_ptr[c1]
        size = slot_ptr[c1 + 1] - base
        if size >= 2:  # the second-cheapest device of the same pool is an alternative too
            second = slot_price[base + 1]
            if size >= 3 and slot_price[base + 2] < second:
                second = slot_price[base + 2]
            if a1 - second > v2:
                v2 = a1 - second
        new_price = pool_price[c1] + (v1 - v2) + eps
        evicted = slot_owner[base]
        slot_price[base] = new_price
        slot_owner[base] = u
        unit_slot[u] = base
        unit_profit[u] = a1 - new_price
        if evicted >= 0:
            unit_slot[evicted] = UNASSIGNED
            tail = head + pending
            if tail >= n_units:
                tail -= n_units
            queue[tail] = evicted
            pending += 1
        _sift_down(base, base, size, slot_price, slot_owner, unit_slot)
        pool_price[c1] = slot_price[base]
        bids += 1
    return bids


@_jit
def _unit_before(u, v, unit_profit):
    """Unit ``u`` comes before ``v`` in its agent's heap: smaller profit, then smaller index."""
    return unit_profit[u] < unit_profit[v] or (unit_profit[u] == unit_profit[v] and u < v)


@_jit
def _unit_sift(pos, base, size, heap, where, unit_profit):
    """Restore agent heap ``heap[base:base+size]`` after the profit of the unit at ``pos`` changed."""
    h = pos - base
    u = heap[pos]
    while h > 0:
        parent = (h - 1) // 2
        v = heap[base + parent]
        if not _unit_before(u, v, unit_profit):
            break
        heap[base + h] = v
        where[v] = base + h
        h = parent
    heap[base + h] = u
    where[u] = base + h
    _unit_sift_down(base + h, base, size, heap, where, unit_profit)


@_jit
def _unit_sift_down(pos, base, size, heap, where, unit_profit):
    """Move the unit at ``pos`` down agent heap ``heap[base:base+size]`` to its place."""
    h = pos - base
    u = heap[pos]
    while True:
        child = 2 * h + 1
        if child >= size:
            break
        if child + 1 < size and _unit_before(heap[base + child + 1], heap[base + child], unit_profit):
            child += 1
        v = heap[base + child]
        if not _unit_before(v, u, unit_profit):
            break
        heap[base + h] = v
        where[v] = base + h
        h = child
    heap[base + h] = u
    where[u] = base + h


@_jit
def _best_unit(c, vals, dense, transposed, single, m, col_ptr, col_rows, col_vals, col_ready, unit_ptr, unit_profit,
               held, heap):
    """Best and second-best ``a_ic - profit_u`` over the units ``u`` of the agents ``i`` of pool ``c``.

    Returns ``(t1, t2, u1, a1)``: the best unit ``u1`` and its value ``a1`` for pool ``c``.
    ``single``: every agent owns exactly one unit (unit ``i`` is agent ``i``).  Otherwise
    agent ``i``'s units ``unit_ptr[i] .. + held[i] - 1`` hold devices and the rest stay out
    (all alike, net value 0): two of those stand for all of them.  Of the holding units only
    the two first of the agent's heap (``heap``, smallest profit first) can be best or second
    best, as all of the agent's units see the same value ``a_ic``; the candidates are taken in
    unit order, so ties go to the smaller unit as a scan of every unit would give.
    """
    t1 = -np.inf
    t2 = -np.inf
    u1 = -1
    a1 = 0.0
    n = unit_ptr.shape[0] - 1
    if dense == 1 and transposed and col_ready[c // 8] == 0:
        # Copy column c, with the 7 next to it (one cache line of each row), into the
        # transposed store the first time one of them is scanned.
        lo = (c // 8) * 8
        hi = min(lo + 8, m)
        for i in range(n):
            for cc in range(lo, hi):
                col_vals[cc * n + i] = vals[i * m + cc]
        col_ready[c // 8] = 1
    if dense == 1 and transposed and single:
        base = c * n
        t1, t2, u1 = _top_two(col_vals, base, unit_profit, 0, n, t1, t2, u1)
        if u1 >= 0:
            a1 = col_vals[base + u1]
        return t1, t2, u1, a1
    if dense == 1:
        lo = 0
        hi = n
    else:
        lo = col_ptr[c]
        hi = col_ptr[c + 1]
    for k in range(lo, hi):
        if dense == 1:
            i = k
            a = col_vals[c * n + i] if transposed else vals[i * m + c]
        else:
            i = col_rows[k]
            a = col_vals[k]
        first = unit_ptr[i]
        h = held[i]
        # Up to four candidates: the heap's first unit, the better of its two children, and the
        # first two units staying out; in unit order.
        c0 = heap[first] if h >= 1 else -1
        c1 = -1
        if h >= 2:
            c1 = heap[first + 1]
            if h >= 3 and _unit_before(heap[first + 2], c1, unit_profit):
                c1 = heap[first + 2]
        s0 = first + h if first + h < unit_ptr[i + 1] else -1
        s1 = first + h + 1 if first + h + 1 < unit_ptr[i + 1] else -1
        if c1 >= 0 and c1 < c0:
            c0, c1 = c1, c0
        for u in (c0, c1, s0, s1):
            if u < 0:
                continue
            t = a - unit_profit[u]
            if t > t2:
                if t > t1:
                    t2 = t1
                    t1 = t
                    u1 = u
                    a1 = a
                else:
                    t2 = t
    return t1, t2, u1, a1


@_jit
def _reverse_cleanup(vals, dense, m, col_ptr, col_rows, col_vals, col_ready, unit_ptr, unit_agent, slot_ptr,
                     slot_pool, slot_price, slot_owner, pool_price, unit_slot, unit_profit, eps, work, in_work,
                     single, held, heap, where):
    """Lower every unassigned device's price to 0, or hand the device to the unit gaining most.

    Keeps eps-complementary slackness; returns the number of reverse steps.
    """
    n_pools = slot_ptr.shape[0] - 1
    # Units of one agent are interchangeable: renumber them so that those holding a device
    # come first (``held[i]`` of them); a unit staying out that takes a device in a reverse
    # step is always the first one staying out, so the order is kept.
    for i in range(unit_ptr.shape[0] - 1):
        w = unit_ptr[i]
        for u in range(unit_ptr[i], unit_ptr[i + 1]):
            if unit_slot[u] >= 0:
                if u != w:
                    slot = unit_slot[u]
                    unit_slot[w] = slot
                    unit_profit[w] = unit_profit[u]
                    slot_owner[slot] = w
                    unit_slot[u] = STAY_OUT
                    unit_profit[u] = 0.0
                w += 1
        held[i] = w - unit_ptr[i]
        # The holding units as a heap on (profit, unit): a reverse step reads its two first units
        # instead of scanning all of them (an agent may hold a million devices).
        first = unit_ptr[i]
        for u in range(first, w):
            heap[u] = u
            where[u] = u
        for k in range((w - first) // 2 - 1, -1, -1):
            _unit_sift_down(first + k, first, w - first, heap, where, unit_profit)
    # Dense values may come with a transposed store (``col_vals``, pools x agents, filled eight
    # columns at a time as ``col_ready`` records) for this scan.
    transposed = dense == 1 and col_vals.shape[0] > 0
    top = 0
    for c in range(n_pools):
        work[top] = c
        in_work[c] = 1
        top += 1
    steps = 0
    while top > 0:
        top -= 1
        c = work[top]
        in_work[c] = 0
        base = slot_ptr[c]
        end = slot_ptr[c + 1]
        # The free priced devices are taken lowest heap position first.  After one is handled,
        # the positions up to it hold devices already seen (a sift moves devices only down the
        # path to it, the handled one up), so the scan goes on from the next position.  A device
        # of this same pool that a step frees is handled next (``chain``, found again after the
        # sift), then the scan goes on.  Linear per pass, where starting over after every device
        # made a pool of k free priced devices cost k^2.
        pos = base
        chain = -1
        while True:
            if chain >= 0:
                q = chain
                chain = -1
            else:
                while pos < end and (slot_owner[pos] != UNASSIGNED or slot_price[pos] <= 0.0):
                    pos += 1
                if pos >= end:
                    break
                q = pos
            # The device at ``q`` is free but priced: find the unit to which it is worth most
            # relative to what the unit holds now.
            t1, t2, u1, a1 = _best_unit(c, vals, dense, transposed, single, m, col_ptr, col_rows, col_vals,
                                        col_ready, unit_ptr, unit_profit, held, heap)
            steps += 1
            freed = -1
            if t1 <= eps:
                # Nobody gains more than eps from it even at price 0: it stays free at price 0.
                slot_price[q] = 0.0
            else:
                new_price = t2 - eps
                if new_price < 0.0:
                    new_price = 0.0
                old = unit_slot[u1]
                agent = unit_agent[u1]
                if old == STAY_OUT:
                    held[agent] += 1
                if old >= 0:
                    slot_owner[old] = UNASSIGNED
                    c_old = slot_pool[old]
                    if slot_price[old] > 0.0:
                        if c_old == c:
                            freed = old
                        elif in_work[c_old] == 0:
                            work[top] = c_old
                            in_work[c_old] = 1
                            top += 1
                slot_price[q] = new_price
                slot_owner[q] = u1
                unit_slot[u1] = q
                unit_profit[u1] = a1 - new_price
                first = unit_ptr[agent]
                if old == STAY_OUT:  # u1 is the first unit staying out: it joins the heap at its end
                    heap[first + held[agent] - 1] = u1
                    where[u1] = first + held[agent] - 1
                _unit_sift(where[u1], first, held[agent], heap, where, unit_profit)
            final = _sift_up(q, base, slot_price, slot_owner, unit_slot)
            pool_price[c] = slot_price[base]
            if freed >= 0:
                chain = _after_sift_up(freed, q, final, base)
            if q == pos:
                pos += 1
    return steps


@_jit
def pool_demand(row_ptr, cols, vals, dense, m, units):
    """``P_c = sum_i units_i [a_ic > 0]``: the units that may bid for pool ``c``."""
    demand = np.zeros(m, np.int64)
    for i in range(row_ptr.shape[0] - 1):
        if units[i] == 0:
            continue
        start = row_ptr[i]
        for k in range(start, row_ptr[i + 1]):
            if vals[k] > 0.0:
                demand[k - start if dense == 1 else cols[k]] += units[i]
    return demand


@_jit
def prepare(row_ptr, cols, vals, dense, counts):
    """One pass over the values: ``(reach, largest, integral, finite)``.

    ``reach[i] = sum_c k_c [a_ic > 0]`` (devices row ``i`` can use), the largest value,
    whether every positive value is an integer (the others are never taken), and
    whether every value is finite.
    """
    n = row_ptr.shape[0] - 1
    reach = np.zeros(n, np.int64)
    top = 0.0
    integral = True
    finite = True
    for i in range(n):
        start = row_ptr[i]
        total = 0
        for k in range(start, row_ptr[i + 1]):
            a = vals[k]
            if not np.isfinite(a):
                finite = False
                continue
            if a > 0.0:
                c = k - start if dense == 1 else cols[k]
                total += counts[c]
                if a > top:
                    top = a
                if integral and a != np.floor(a):
                    integral = False
        reach[i] = total
    return reach, top, integral, finite


@_jit
def start_auction(unit_agent, slot_ptr, m):
    """The state of an auction before its first phase: every device free at price 0.

    Returns ``(slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats,
    col_ready)``, the arrays :func:`auction_phases` carries from one phase to the next.
    """
    n_units = unit_agent.shape[0]
    n_slots = slot_ptr[m]
    slot_price = np.zeros(n_slots)
    slot_owner = np.full(n_slots, UNASSIGNED, np.int64)
    slot_pool = np.empty(n_slots, np.int64)
    for c in range(m):
        for s in range(slot_ptr[c], slot_ptr[c + 1]):
            slot_pool[s] = c
    pool_price = np.zeros(m)
    unit_slot = np.full(n_units, UNASSIGNED, np.int64)
    unit_profit = np.zeros(n_units)
    stats = np.zeros(3, np.int64)
    col_ready = np.zeros(m // 8 + 1, np.int8)
    return slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats, col_ready


@_jit
def auction_phases(row_ptr, cols, vals, dense, m, col_ptr, col_rows, col_vals, unit_ptr, unit_agent, slot_ptr,
                   eps_schedule, slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats,
                   col_ready):
    """Run the phases ``eps_schedule`` on the state of :func:`start_auction` (changed in place).

    After each phase the assignment keeps eps-complementary slackness for that phase's eps,
    so a caller may stop between phases (a time limit) with an allocation and its bound.
    ``stats`` adds up ``[bids, reverse steps, phases]``.
    """
    n_units = unit_agent.shape[0]
    single = n_units == unit_ptr.shape[0] - 1
    for i in range(unit_ptr.shape[0] - 1):
        if unit_ptr[i + 1] - unit_ptr[i] != 1:
            single = False
            break
    queue = np.empty(max(n_units, 1), np.int64)
    work = np.empty(max(m, 1), np.int64)
    in_work = np.zeros(max(m, 1), np.int64)
    held = np.zeros(unit_ptr.shape[0] - 1, np.int64)
    heap = np.empty(max(n_units, 1), np.int64)
    where = np.empty(max(n_units, 1), np.int64)
    for phase in range(eps_schedule.shape[0]):
        eps = eps_schedule[phase]
        stats[0] += _forward(row_ptr, cols, vals, dense, unit_agent, slot_ptr, slot_price, slot_owner,
                             pool_price, unit_slot, unit_profit, queue, eps)
        stats[1] += _reverse_cleanup(vals, dense, m, col_ptr, col_rows, col_vals, col_ready, unit_ptr, unit_agent,
                                     slot_ptr, slot_pool, slot_price, slot_owner, pool_price, unit_slot,
                                     unit_profit, eps, work, in_work, single, held, heap, where)
        stats[2] += 1


@_jit
def best_net_values(row_ptr, cols, vals, dense, pool_price):
    """``best_net[i] = max(0, max_c a_ic - pool_price[c])``: the dual's person prices."""
    n_rows = row_ptr.shape[0] - 1
    best_net = np.zeros(n_rows)
    for i in range(n_rows):
        start = row_ptr[i]
        best = 0.0
        for k in range(start, row_ptr[i + 1]):
            c = k - start if dense == 1 else cols[k]
            net = vals[k] - pool_price[c]
            if net > best:
                best = net
        best_net[i] = best
    return best_net


@_jit
def forward_reverse_auction(row_ptr, cols, vals, dense, m, col_ptr, col_rows, col_vals,
                            unit_ptr, unit_agent, slot_ptr, eps_schedule):
    """Run the epsilon schedule; returns ``(unit_slot, slot_pool, pool_price, best_net, stats)``.

    ``unit_slot[u]`` is the slot (device) held by unit ``u``, or ``-2`` for stay-out;
    ``slot_pool`` maps a slot to its pool; ``pool_price[c]`` is the price of the pool's
    cheapest device; ``best_net[i] = max(0, max_c a_ic - pool_price[c])`` (the dual's
    person prices); ``stats`` = ``[bids, reverse steps, phases]``.  With dense values and
    more devices than units, the reverse step reads a transposed copy of the columns it
    scans, made here eight columns at a time on first use.  The phases one call at a time:
    :func:`start_auction`, :func:`auction_phases`, :func:`best_net_values`.
    """
    slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats, col_ready = start_auction(
        unit_agent, slot_ptr, m)
    if dense == 1 and col_vals.shape[0] == 0 and slot_ptr[m] > unit_agent.shape[0]:
        col_vals = np.empty((row_ptr.shape[0] - 1) * m)  # filled lazily, one column at its first reverse step
    auction_phases(row_ptr, cols, vals, dense, m, col_ptr, col_rows, col_vals, unit_ptr, unit_agent, slot_ptr,
                   eps_schedule, slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats,
                   col_ready)
    return unit_slot, slot_pool, pool_price, best_net_values(row_ptr, cols, vals, dense, pool_price), stats


@_jit
def count_live(edge_agent, edge_pool, utility, weights, weighted, present, everyone, n, m):
    """Per agent and per pool, the live edges of one round: ``a_e = w_i u_e > 0`` and agent ``i`` present.

    ``utility`` is the round's column of the edge utilities (any stride); ``weighted == 0``:
    every weight is 1 and ``a_e = u_e`` (no product); ``everyone``: every agent present.
    Returns ``(row_ptr, col_ptr)``, the prefix sums of the counts.
    """
    row_ptr = np.zeros(n + 1, np.int64)
    col_ptr = np.zeros(m + 1, np.int64)
    for e in range(edge_agent.shape[0]):
        i = edge_agent[e]
        a = utility[e] * weights[i] if weighted == 1 else utility[e]
        if a > 0.0 and (everyone == 1 or present[i]):
            row_ptr[i + 1] += 1
            col_ptr[edge_pool[e] + 1] += 1
    for i in range(n):
        row_ptr[i + 1] += row_ptr[i]
    for c in range(m):
        col_ptr[c + 1] += col_ptr[c]
    return row_ptr, col_ptr


@_jit
def _transpose_rows(row_ptr, cols, vals, col_ptr, n, m, col_rows, col_vals):
    """The compressed rows by column (pools ascending within each row), rows in order within a column.

    Near-dense rows are copied in blocks of 64 rows, column by column (each column's
    block lands contiguously: a cache-friendly transpose); sparse ones by one scatter pass.
    """
    live = row_ptr[n]
    nxt = col_ptr[:m].copy()
    if 4 * live >= n * m:
        ptr = row_ptr[:n].copy()
        for b0 in range(0, n, 64):
            b1 = min(b0 + 64, n)
            for c in range(m):
                q = nxt[c]
                for i in range(b0, b1):
                    k = ptr[i]
                    if k < row_ptr[i + 1] and cols[k] == c:
                        col_rows[q] = i
                        col_vals[q] = vals[k]
                        q += 1
                        ptr[i] = k + 1
                nxt[c] = q
    else:
        for i in range(n):
            for k in range(row_ptr[i], row_ptr[i + 1]):
                c = cols[k]
                q = nxt[c]
                nxt[c] = q + 1
                col_rows[q] = i
                col_vals[q] = vals[k]


@_jit
def fill_live(edge_agent, edge_pool, utility, weights, weighted, present, everyone, n, m, row_ptr, col_ptr, counts,
              cols, vals, col_rows, col_vals):
    """The live edges (see :func:`count_live`, edges ordered by agent, then pool) in compressed rows and
    in the transposed copy (by pool, stable in row order), with :func:`prepare`'s figures.

    Fills ``cols, vals, col_rows, col_vals`` (``row_ptr[n]`` entries each, allocated by the
    caller: numpy maps large arrays faster) and returns ``(reach, largest, integral, finite)``;
    the arrays are those of gathering the live edges in edge order and sorting their
    positions stably by pool.
    """
    reach = np.zeros(n, np.int64)
    top = 0.0
    integral = True
    finite = True
    k = 0
    for e in range(edge_agent.shape[0]):
        i = edge_agent[e]
        a = utility[e] * weights[i] if weighted == 1 else utility[e]
        if a > 0.0 and (everyone == 1 or present[i]):
            c = edge_pool[e]
            cols[k] = c
            vals[k] = a
            k += 1
            if not np.isfinite(a):
                finite = False
                continue
            reach[i] += counts[c]
            if a > top:
                top = a
            if integral and a != np.floor(a):
                integral = False
    _transpose_rows(row_ptr, cols, vals, col_ptr, n, m, col_rows, col_vals)
    return reach, top, integral, finite


@_jit
def fill_dense(edge_agent, edge_pool, utility, weights, weighted, present, everyone, n, m, counts, vals):
    """The round's values as a dense ``n x m`` row-major array, ``-inf`` where no live edge is.

    A ``-inf`` entry is never taken and never changes a best or second-best value (every
    comparison in the kernel is strict and starts from ``-inf`` or stay-out's 0), so the
    dense form with ``-inf`` holes gives the auction of the compressed rows exactly.
    Fills ``vals`` (``n m`` entries, allocated by the caller) and returns ``(live, reach,
    largest, integral, finite)``: the number of live edges and :func:`prepare`'s figures over them.
    """
    if edge_agent.shape[0] != n * m:
        vals[:] = -np.inf
    reach = np.zeros(n, np.int64)
    top = 0.0
    integral = True
    finite = True
    live = 0
    for e in range(edge_agent.shape[0]):
        i = edge_agent[e]
        c = edge_pool[e]
        a = utility[e] * weights[i] if weighted == 1 else utility[e]
        if a > 0.0 and (everyone == 1 or present[i]):
            vals[i * m + c] = a
            live += 1
            if not np.isfinite(a):
                finite = False
                continue
            reach[i] += counts[c]
            if a > top:
                top = a
            if integral and a != np.floor(a):
                integral = False
        else:
            vals[i * m + c] = -np.inf
    return live, reach, top, integral, finite


@_jit
def locate_edges(rows, pools, edge_start, edge_pool):
    """The edge index of each pair ``(rows[k], pools[k])``, by binary search in the pair's row.

    Edges are ordered by agent, then pool; agent ``i``'s are ``edge_start[i] .. edge_start[i+1]-1``.
    """
    L = rows.shape[0]
    edge = np.empty(L, np.int64)
    for k in range(L):
        c = pools[k]
        lo = edge_start[rows[k]]
        hi = edge_start[rows[k] + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if edge_pool[mid] < c:
                lo = mid + 1
            else:
                hi = mid
        edge[k] = lo
    return edge
