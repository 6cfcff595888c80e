"""Reference leximin solvers for the maxmin and drf tests, independent of the library's models.

Everything is rebuilt from the instance's records (pools, agents, edges) with
plain Python: the columns (one per edge and round), their bounds, the rows
``A x <= b`` and each agent's normalised value ``v_i = V[i] @ x``.

* :func:`brute_force_leximin` (integral): enumerates every integral allocation
  and keeps the lexicographically largest sorted vector of values.
* :func:`reference_waterfilling` (fractional): slow waterfilling with
  ``scipy.optimize.linprog``: one LP per level for ``t``, then one LP per free
  agent (maximise ``v_i`` with everyone else held at the level) to decide who is
  stuck.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog


@dataclass
class Polytope:
    """Columns with bounds, rows ``A x <= b``, value rows ``V``, the columns' agent and (pool, round) group."""

    upper: np.ndarray
    A: np.ndarray
    b: np.ndarray
    V: np.ndarray
    col_agent: list[int]
    col_group: list[tuple[str, int]]
    ids: list[str]


def _window(agent, rounds):
    return range(agent.arrival, rounds if agent.deadline is None else agent.deadline + 1)


def maxmin_polytope(inst, normalizer: str = "equal_share") -> Polytope:
    """Feasible allocations of ``models.md`` (capacity, demand, windows) and ``U_i / (w_i E_i)``."""
    rounds = inst.rounds
    pools = {p.id: p for p in inst.pools}
    ids = [a.id for a in inst.agents]
    index = {a: i for i, a in enumerate(ids)}
    total_weight = sum(a.weight for a in inst.agents)
    ex = {a.id: 0.0 for a in inst.agents}
    for e in inst.edges:
        ex[e.agent] += pools[e.pool].count * sum(e.utility_in(r) for r in range(rounds))
    cols = []
    for e in inst.edges:
        agent = inst.agents[index[e.agent]]
        for r in range(rounds):
            active = r in _window(agent, rounds)
            cap = pools[e.pool].count if agent.demand is None else min(pools[e.pool].count, agent.demand)
            cols.append((e, r, cap if active else 0))
    upper = np.array([c[2] for c in cols], dtype=float)
    rows, b = [], []
    for p in inst.pools:
        for r in range(rounds):
            rows.append([1.0 if (e.pool == p.id and rr == r) else 0.0 for e, rr, _ in cols])
            b.append(p.count)
    for a in inst.agents:
        if a.demand is not None:
            for r in range(rounds):
                rows.append([1.0 if (e.agent == a.id and rr == r) else 0.0 for e, rr, _ in cols])
                b.append(a.demand)
    V = np.zeros((len(ids), len(cols)))
    for k, (e, r, _) in enumerate(cols):
        agent = inst.agents[index[e.agent]]
        scale = agent.weight if normalizer == "raw" else agent.weight / total_weight * ex[e.agent]
        V[index[e.agent], k] = e.utility_in(r) / scale if scale > 0 else 0.0
    return Polytope(upper, np.array(rows).reshape(len(rows), len(cols)), np.array(b, float), V,
                    [index[e.agent] for e, _, _ in cols], [(e.pool, r) for e, r, _ in cols], ids)


def drf_polytope(inst, capacity_basis: str = "compatible") -> Polytope:
    """Tasks per edge and round; resource rows per pool, kind and round; demand rows in tasks; ``s_i / w_i``."""
    rounds = inst.rounds
    pools = {p.id: p for p in inst.pools}
    ids = [a.id for a in inst.agents]
    index = {a: i for i, a in enumerate(ids)}
    kinds = sorted({k for a in inst.agents for k, v in a.task_vector.items() if v > 0})
    cols = []
    for e in inst.edges:
        agent = inst.agents[index[e.agent]]
        task, cap = agent.task_vector, pools[e.pool].capacity_vector
        fit = min(cap.get(k, 0.0) / v for k, v in task.items() if v > 0)
        if agent.demand is not None:
            fit = min(fit, agent.demand)
        for r in range(rounds):
            cols.append((e, r, fit if r in _window(agent, rounds) else 0.0))
    upper = np.array([c[2] for c in cols], dtype=float)
    rows, b = [], []
    for p in inst.pools:
        for kind in kinds:
            for r in range(rounds):
                rows.append([inst.agents[index[e.agent]].task_vector.get(kind, 0.0) if (e.pool == p.id and rr == r) else 0.0
                             for e, rr, _ in cols])
                b.append(p.capacity_vector.get(kind, 0.0))
    for a in inst.agents:
        if a.demand is not None:
            for r in range(rounds):
                rows.append([1.0 if (e.agent == a.id and rr == r) else 0.0 for e, rr, _ in cols])
                b.append(a.demand)
    V = np.zeros((len(ids), len(cols)))
    for i, a in enumerate(inst.agents):
        basis = [pools[e.pool] for e in inst.edges if e.agent == a.id] if capacity_basis == "compatible" else list(inst.pools)
        shares = []
        for kind, need in a.task_vector.items():
            if need > 0:
                pooled = sum(p.capacity_vector.get(kind, 0.0) for p in basis)
                shares.append(need / pooled if pooled > 0 else math.inf)
        delta = max(shares)
        for k, (e, r, _) in enumerate(cols):
            if e.agent == a.id and math.isfinite(delta):
                V[i, k] = delta / (rounds * a.weight)
    return Polytope(upper, np.array(rows).reshape(len(rows), len(cols)), np.array(b, float), V,
                    [index[e.agent] for e, _, _ in cols], [(e.pool, r) for e, r, _ in cols], ids)


def taking_part(poly: Polytope, integral: bool) -> list[int]:
    """Agents with a positive value in some feasible allocation (one unit, or a sliver, of one valued column)."""
    out = []
    for i in range(len(poly.ids)):
        for k in range(poly.upper.size):
            if poly.V[i, k] > 0 and (poly.upper[k] >= 1 - 1e-9 if integral else poly.upper[k] > 0):
                x = np.zeros(poly.upper.size)
                x[k] = 1.0 if integral else min(poly.upper[k], 1e-6)
                if np.all(poly.A @ x <= poly.b + 1e-9):
                    out.append(i)
                    break
    return out


def lex_greater(a, b, tol=1e-9) -> bool:
    """Sorted vector ``a`` lexicographically greater than ``b`` (beyond ``tol``)."""
    for x, y in zip(a, b):
        if x > y + tol * max(1.0, abs(y)):
            return True
        if x < y - tol * max(1.0, abs(y)):
            return False
    return False


def brute_force_leximin(poly: Polytope, limit: int = 300_000) -> list[float]:
    """Leximin-best sorted vector of values (agents taking part) over all integral allocations."""
    part = taking_part(poly, integral=True)
    if not part:
        return []
    ranges = [range(int(math.floor(u + 1e-9)) + 1) for u in poly.upper]
    assert math.prod(len(r) for r in ranges) <= limit, "instance too large to enumerate"
    X = np.array(list(itertools.product(*ranges)), dtype=float).reshape(-1, len(ranges))
    if poly.A.size:
        X = X[np.all(X @ poly.A.T <= poly.b + 1e-9, axis=1)]
    S = np.sort(X @ poly.V[part].T, axis=1)
    keep = np.ones(len(S), dtype=bool)
    for col in range(S.shape[1]):  # lexicographic maximum, column by column
        best = S[keep, col].max()
        keep &= S[:, col] >= best - 1e-9 * max(1.0, abs(best))
    return S[np.flatnonzero(keep)[0]].tolist()


def reference_waterfilling(poly: Polytope) -> dict[str, float]:
    """Per-agent leximin values of the fractional problem (0 for agents that take no part)."""
    n, m = poly.V.shape
    part = taking_part(poly, integral=False)
    levels = {i: 0.0 for i in range(n)}
    free = set(part)
    frozen: dict[int, float] = {}
    bounds = [(0.0, float(u)) for u in poly.upper] + [(0.0, None)]
    base_A = np.hstack([poly.A, np.zeros((poly.A.shape[0], 1))]) if poly.A.size else np.zeros((0, m + 1))

    def rows(t_free, slack):
        A, b = [base_A], [poly.b]
        for i in sorted(free):
            A.append(np.append(-poly.V[i], 1.0 if t_free is None else 0.0)[None, :])
            b.append([0.0 if t_free is None else -(t_free - slack * max(1.0, t_free))])
        for j, lev in frozen.items():
            A.append(np.append(-poly.V[j], 0.0)[None, :])
            b.append([-lev + slack * max(1.0, lev)])
        return np.vstack(A), np.concatenate(b)

    def solve(c, t_free):
        # Levels come from an LP, so holding them exactly can be infeasible by a rounding
        # error: relax the held levels by the smallest slack that the LP accepts.
        for slack in (1e-11, 1e-10, 1e-9, 1e-8, 1e-7):
            A, b = rows(t_free, slack)
            res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
            if res.status == 0:
                return res
        raise AssertionError(f"reference LP infeasible even with slack 1e-7: {res.message}")

    while free:
        c = np.zeros(m + 1)
        c[-1] = -1.0
        t = -solve(c, None).fun
        stuck = []
        for i in sorted(free):
            res = solve(np.append(-poly.V[i], 0.0), t)
            if -res.fun <= t + 1e-6 * max(1.0, t):
                stuck.append(i)
        assert stuck, "no agent is stuck at a level (numerical trouble)"
        for i in stuck:
            frozen[i] = t
            levels[i] = t
            free.discard(i)
    return {poly.ids[i]: levels[i] for i in range(n)}
