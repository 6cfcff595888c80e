"""Compiled passes of Most-Token-First's preference build (:mod:`laissez_opt.heuristics.mtf`), private.

* :func:`agent_top`: ``M_i`` (or ``M_{i,r}``), the largest utility of each agent, in one
  pass over the edges (what ``np.maximum.at`` from zeros gives);
* :func:`descending_rows`: for a round where every agent is on every pool with a positive
  utility, the ascending row argsort of the ``n x m`` utility table turned, in place and
  row by row, into the preference lists (utility descending, ties by pool ascending),
  with their scores ``u / (M_i (1 + 1e-9))``.

>>> import numpy as np
>>> u = np.array([0.2, 0.7, 0.5, 0.1, 0.3, 0.3])
>>> perm = np.argsort(u.reshape(2, 3), axis=1)
>>> score, tied = descending_rows(u, perm, np.array([1.0, 0.5]), 2, 3, np.empty(6))
>>> perm.tolist(), score.tolist()[3:], int(tied)
([[1, 2, 0], [1, 2, 0]], [0.6, 0.6, 0.2], 1)
"""

from __future__ import annotations

import numpy as np

from ..jit import jit

__all__ = ["agent_top", "descending_rows", "keys_increasing", "token_phase", "round_robin"]


@jit
def keys_increasing(edge_agent, edge_pool, m):
    """Whether ``edge_agent[e] * m + edge_pool[e]`` strictly increases over the edges (one pass)."""
    prev = -1
    for e in range(edge_agent.shape[0]):
        key = edge_agent[e] * m + edge_pool[e]
        if key <= prev:
            return False
        prev = key
    return True


@jit
def agent_top(edge_agent, utility, n, per_round):
    """``max(0, max u)`` per agent over its edges and rounds (``per_round == 0``, shape ``(n, 1)``) or
    per agent and round (``per_round == 1``, shape ``(n, R)``); ``utility`` is ``E x R``."""
    rounds = utility.shape[1]
    top = np.zeros((n, rounds if per_round == 1 else 1))
    for e in range(edge_agent.shape[0]):
        i = edge_agent[e]
        for r in range(rounds):
            v = utility[e, r]
            col = r if per_round == 1 else 0
            if v > top[i, col]:
                top[i, col] = v
    return top


@jit
def descending_rows(u, perm, den, n, m, score):
    """Turn the ascending row argsort ``perm`` of ``u`` (row-major ``n m``) into the preference lists, in place.

    Each row is reversed (value descending) and every run of equal values is put in
    ascending column order (the stable descending order: ties by pool index); returns
    the scores ``u[i m + perm[i, k]] / den[i]`` written into ``score`` (``n m``, same layout)
    and the number of rows with ties.  Each row is read and written while it is in cache.
    (Large outputs are allocated by the caller: numpy's allocator maps big arrays faster.)
    """
    rows = 0
    for i in range(n):
        base = i * m
        lo = 0
        hi = m - 1
        while lo < hi:
            t = perm[i, lo]
            perm[i, lo] = perm[i, hi]
            perm[i, hi] = t
            lo += 1
            hi -= 1
        d = den[i]
        k = 0
        had = False
        while k < m:
            v = u[base + perm[i, k]]
            j = k + 1
            while j < m and u[base + perm[i, j]] == v:
                j += 1
            if j - k > 1:
                had = True
                perm[i, k:j] = np.sort(perm[i, k:j])
            for t in range(k, j):
                score[base + t] = v / d
            k = j
        if had:
            rows += 1
    return score, rows


@jit
def _grow(a, size):
    out = np.empty(max(2 * a.shape[0], size), a.dtype)
    out[: a.shape[0]] = a
    return out


@jit
def _first_open(pool, rem, p, e):
    """The first list position at or after ``p`` (before ``e``) whose pool has devices left; ``e`` when none.

    A full pool stays full for the rest of the round, so an agent's pointer moves past it for good.
    """
    while p < e and rem[pool[p]] == 0:
        p += 1
    return p


@jit
def token_phase(pool, score, ptr, end, rem, left, cap, budgets, thresholds, active):
    """Phase 1 of a round (``mtf.mtf_round``): agents by budget descending, ties by index, each buys one
    device of its best remaining pool while its score is at least its threshold.

    Levels of equal budget are served in index order; a buyer drops to the next level
    (merged by index with the agents already there); an agent that does not qualify
    leaves the phase.  ``ptr``, ``rem`` and ``cap`` are updated in place.  Returns
    ``(picks_agent, picks_pos, count, spent, left, visits, steps)``.
    """
    n = budgets.shape[0]
    na = active.shape[0]
    # active agents with a positive budget, by budget descending then index
    cand = np.empty(na, np.int64)
    nc = 0
    for t in range(na):
        if budgets[active[t]] > 0:
            cand[nc] = active[t]
            nc += 1
    cand = cand[:nc]
    keys = np.empty(nc, np.int64)
    for t in range(nc):
        keys[t] = -budgets[cand[t]]
    order = np.argsort(keys, kind="mergesort")  # stable: index order within a budget
    cand = cand[order]
    size = min(left, 1024) if left > 0 else 1
    picks_agent = np.empty(size, np.int64)
    picks_pos = np.empty(size, np.int64)
    count = 0
    spent = np.zeros(n, np.int64)
    visits = 0
    steps = 0
    cur = np.empty(nc, np.int64)
    demoted = np.empty(nc, np.int64)
    merged = np.empty(nc, np.int64)
    g = 0  # next original group in cand
    n_cur = 0
    b = 0
    n_dem = 0
    while left > 0:
        # the next level: b - 1 with the demoted agents (merged with the originals there), or the next original group
        if n_dem > 0:
            b = b - 1
            n_orig = 0
            while g + n_orig < nc and budgets[cand[g + n_orig]] == b:
                n_orig += 1
            x = 0
            y = 0
            z = 0
            while x < n_dem or y < n_orig:
                if y >= n_orig or (x < n_dem and demoted[x] < cand[g + y]):
                    merged[z] = demoted[x]
                    x += 1
                else:
                    merged[z] = cand[g + y]
                    y += 1
                z += 1
            g += n_orig
            n_cur = z
            for t in range(z):
                cur[t] = merged[t]
        else:
            if g >= nc:
                break
            b = budgets[cand[g]]
            n_cur = 0
            while g < nc and budgets[cand[g]] == b:
                cur[n_cur] = cand[g]
                n_cur += 1
                g += 1
        n_dem = 0
        for t in range(n_cur):
            i = cur[t]
            visits += 1
            p = ptr[i]
            e = end[i]
            if p == e:
                continue
            c = pool[p]
            if rem[c] == 0:
                q = p
                p = _first_open(pool, rem, p + 1, e)
                steps += p - q
                ptr[i] = p
                if p == e:
                    continue
                c = pool[p]
            if score[p] < thresholds[i] or cap[i] == 0:
                continue
            rem[c] -= 1
            left -= 1
            cap[i] -= 1
            spent[i] += 1
            if count == picks_agent.shape[0]:
                picks_agent = _grow(picks_agent, count + 1)
                picks_pos = _grow(picks_pos, count + 1)
            picks_agent[count] = i
            picks_pos[count] = p
            count += 1
            if b > 1:
                demoted[n_dem] = i
                n_dem += 1
            if left == 0:
                break
    return picks_agent, picks_pos, count, spent, left, visits, steps


@jit
def round_robin(pool, ptr, end, rem, left, cap, active, turn, n, picks_agent, picks_pos, count):
    """Phase 3 of a round (``mtf.mtf_round``): the remaining devices one at a time, cyclically from the agent
    ``turn`` (the first active agent at or after it), each its best remaining pool; agents at their cap or
    with nothing left are dropped.  Appends to the picks; returns ``(picks_agent, picks_pos, count, turn,
    left, steps)``."""
    na = active.shape[0]
    steps = 0
    if left <= 0 or na == 0:
        return picks_agent, picks_pos, count, turn, left, steps
    k = np.searchsorted(active, turn)  # bisect_left
    queue = np.empty(na + 1, np.int64)
    head = 0
    tail = 0
    for t in range(na):
        i = active[(k + t) % na]
        if cap[i] != 0:
            queue[tail] = i
            tail += 1
    size = na + 1
    while head != tail and left > 0:
        i = queue[head]
        head += 1
        if head == size:
            head = 0
        p = ptr[i]
        e = end[i]
        if p == e:
            continue
        c = pool[p]
        if rem[c] == 0:
            q = p
            p = _first_open(pool, rem, p + 1, e)
            steps += p - q
            ptr[i] = p
            if p == e:
                continue
            c = pool[p]
        rem[c] -= 1
        left -= 1
        cap[i] -= 1
        if count == picks_agent.shape[0]:
            picks_agent = _grow(picks_agent, count + 1)
            picks_pos = _grow(picks_pos, count + 1)
        picks_agent[count] = i
        picks_pos[count] = p
        count += 1
        turn = i + 1 if i + 1 < n else 0
        if cap[i] != 0:
            queue[tail] = i
            tail += 1
            if tail == size:
                tail = 0
    return picks_agent, picks_pos, count, turn, left, steps
