"""Partitioned fractional Themis on arrays: each part's ``min max rho``, and a certified lower bound.

Notation as in ``models/themis.md`` and ``models/partition.md``: agent ``i`` has
work ``W_i``, elapsed time ``t_i``, ideal rate ``X^id_i`` (the weighted equal share of
the WHOLE instance, scaled to ``d_i``), lag ``a_i = t_i X^id_i / W_i`` and normalised
rate ``r_i = sum_{e of i} a_e x_e`` with ``a_e = u_e / X^id_i``; its finish-time
fairness is ``rho_i = a_i + 1 / r_i``.  Fractional Themis with ``f = 0`` (every active
agent bids) is ``rho* = min_x max_i rho_i``.

A part solves its own ``min max rho`` over its agents and ``k_c / K`` of every pool
(:func:`themis_part`, Newton's method on the concave increasing level function
``F(rho) = max {delta : r_i - delta >= 1/(rho - a_i)}``); the merged allocation is
feasible for the whole instance, and :func:`themis_bound` turns the parts' duals into
a certified LOWER bound on the whole ``rho*`` (``models/partition.md``, "Themis").

Reference: Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling",
NSDI 2020; Narayanan et al., POP, SOSP 2021; Lagrangian duality (Geoffrion 1974).

>>> import numpy as np
>>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 1.0]), np.array([2]), np.ones(2), np.ones(2))
>>> coef, lag, active = themis_arrays(p, np.ones(2), np.array([1.0, 0.0]))
>>> coef.tolist(), lag.tolist(), active.tolist()
([1.0, 1.0], [1.0, 0.0], [True, True])
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..errors import InputError
from ..limits import remaining
from ..modeling.highs_route import limit_next_run
from .core import STOPPED, Problem, inner_maximum, max_t_model

__all__ = ["themis_arrays", "themis_part", "themis_bound", "max_rho", "root_of", "MAX_LAG", "TOLERANCE"]

#: Largest lag ``a_i`` accepted (as the whole Themis: ``rho - a_i`` keeps 4 significant digits below it).
MAX_LAG = 1e12
#: A part's search stops when its bracket ``[lo, hi]`` on its own ``rho*`` is this narrow, relative.
TOLERANCE = 1e-7
#: At most this many LP evaluations per part.
MAX_EVALUATIONS = 40


def themis_arrays(problem: Problem, work: np.ndarray, elapsed: np.ndarray):
    """``(coef, lag, active)`` of the whole instance: ``a_e = u_e / X^id_i``, ``a_i``, ``W_i > 0 and X^id_i > 0``.

    ``X^id_i = min(1, d_i / H_i) s_i sum_{e of i} u_e k_c`` with ``s_i = w_i / sum_j w_j``
    and ``H_i = s_i sum_{e of i} k_c`` (as :func:`laissez_opt.exact.themis.ideal_rates`);
    ``a_i = t_i X^id_i / W_i``.  ``coef`` is 0 on the edges of inactive agents.

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.array([3.0, 1.0]), np.array([4]), np.ones(2),
    ...             np.array([1.0, np.inf]))
    >>> coef, lag, active = themis_arrays(p, np.ones(2), np.zeros(2))
    >>> coef.tolist()          # X^id = [3, 2]: A's share holds 2 devices but it uses 1
    [1.0, 0.5]
    """
    n = problem.n_agents
    work = np.asarray(work, dtype=np.float64)
    elapsed = np.asarray(elapsed, dtype=np.float64)
    share = problem.weights / problem.weights.sum()
    k = problem.counts[problem.edge_pool].astype(np.float64)
    usable = np.bincount(problem.edge_agent, weights=k, minlength=n)
    full = np.bincount(problem.edge_agent, weights=problem.utility * k, minlength=n)
    held = share * usable
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(held > problem.demands, problem.demands / np.where(held > 0, held, 1.0), 1.0)
    ideal = scale * share * full
    active = (work > 0) & (ideal > 0)
    lag = np.where(active, elapsed * ideal / np.where(active, work, 1.0), 0.0)
    if np.any(lag > MAX_LAG):
        worst = int(np.argmax(lag))
        raise InputError(f"agent {worst} has waited {lag[worst]:.3g} times its ideal finish time; themis needs "
                         f"a_i = t_i / T_id,i below {MAX_LAG:g}", path=f"$.agents[{worst}].elapsed")
    inv = np.divide(1.0, ideal, out=np.zeros(n), where=active)
    return problem.utility * inv[problem.edge_agent], lag, active


def max_rho(rates: np.ndarray, lag: np.ndarray, active: np.ndarray) -> float:
    """``max_{i active} a_i + 1 / r_i`` (``inf`` if an active agent has ``r_i <= 0``; 0 with no active agent).

    >>> max_rho(np.array([0.5, 2.0]), np.array([0.0, 1.0]), np.array([True, True]))
    2.0
    """
    r = rates[active]
    if r.size == 0:
        return 0.0
    if np.any(r <= 0):
        return math.inf
    return float(np.max(lag[active] + 1.0 / r))


def _lo_from(rho: float, level: float, lag: np.ndarray) -> float:
    """A lower bound on ``rho*`` from ``F(rho) = level``: ``min_i a_i + 1 / (level + 1/(rho - a_i))``.

    An allocation reaching ``rho' `` has ``r_i >= 1/(rho' - a_i)`` for all ``i``, so at
    ``rho`` its ``delta >= min_i [1/(rho' - a_i) - 1/(rho - a_i)]``, which is at most
    ``F(rho)``; some ``i`` then has ``1/(rho' - a_i) <= F(rho) + 1/(rho - a_i)``.
    ``rho = inf`` reads ``1/(rho - a_i)`` as 0.
    """
    b = np.zeros_like(lag) if math.isinf(rho) else 1.0 / (rho - lag)
    den = level + b
    if np.any(den <= 0):
        return -math.inf  # some agent could reach any level: no bound from this evaluation
    return float(np.min(lag + 1.0 / den))


def themis_part(task: dict) -> dict:
    """Fractional Themis of one part: ``min max_i rho_i`` over its active agents and ``k_c^q`` devices.

    One HiGHS model ``F(rho) = max delta`` s.t. ``sum_{e of i} a_e x_e - delta >= 1/(rho - a_i)``
    (``finish``), ``capacity``, ``demand``; only the finish rows' lower bounds change
    with ``rho``, so every evaluation after the first (interior point with crossover)
    warm-starts the dual simplex method.  ``F`` is concave and increasing with
    ``F'(rho) = sum_i lambda_i / (rho - a_i)^2`` (``lambda`` the finish duals, summing
    to 1), so Newton's step ``rho - F/F'`` approaches the root from the left; the first
    evaluation is at ``rho = inf`` (``max_x min_i r_i``, exact when every lag is equal).
    Each evaluation's ``x`` gives ``hi = max_i rho_i(x)`` and its value ``lo``
    (:func:`_lo_from`); the search stops at ``hi - lo <= TOLERANCE hi``, or at
    ``hi <= target (1 + TOLERANCE)`` when ``task["target"]`` holds a certified lower bound
    on the WHOLE problem's ``rho*`` (the standalone bound): the merged ``max rho`` is at
    least that bound whatever the part does, so a part below it has nothing left to gain
    (the first evaluation is then at ``rho = max(target, lo)``).

    Returns ``status``, ``objective`` (the part's ``hi``), ``lower`` (its ``lo``), ``x``,
    ``values`` (``r_i``), the duals of the last evaluation (``prices``, ``lam``) and
    its constant ``C_q = sum_c p_c k_c^q + sum_i max_{x_i} sum_e (lambda_i a_e - p_c) x_e``,
    ``lps``, ``seconds``, ``cpu_s``.

    >>> t = {"part": 0, "method": "themis", "edge_agent": np.array([0, 1]), "edge_pool": np.array([0, 0]),
    ...      "coef": np.array([1.0, 1.0]), "demands": np.array([1.0, 1.0]), "capacity": np.array([1.0]),
    ...      "lag": np.array([0.0, 0.0]), "active": np.array([True, True])}
    >>> out = themis_part(t)      # half a device each: r = 0.5, rho = 2
    >>> round(out["objective"], 6), round(out["lower"], 6)
    (2.0, 2.0)
    """
    import highspy

    start, cpu = time.perf_counter(), time.process_time()
    edge_agent, edge_pool = task["edge_agent"], task["edge_pool"]
    coef = np.asarray(task["coef"], dtype=np.float64)
    demands = task["demands"].astype(np.float64)
    capacity = task["capacity"].astype(np.float64)
    lag_all = np.asarray(task["lag"], dtype=np.float64)
    n_local, n_pools, n_edges = demands.shape[0], capacity.shape[0], edge_agent.shape[0]
    upper = np.minimum(demands[edge_agent], capacity[edge_pool])
    upper[coef <= 0] = 0.0
    alone = Problem(edge_agent, edge_pool, np.ones(n_edges), capacity, np.ones(n_local), demands, coef)
    rmax = inner_maximum(alone, np.where(upper > 0, coef, 0.0))
    active = np.asarray(task["active"], dtype=bool)
    out = {"part": task["part"], "status": "optimal", "objective": None, "lower": None, "x": np.zeros(n_edges),
           "values": np.zeros(n_local), "prices": None, "lam": None, "constant": None, "lps": 0}
    if np.any(active & (rmax <= 0)):
        # An active agent with no device in its part: rho_i = inf whatever the part does.
        out.update(status="no device for an active agent", objective=math.inf, lower=math.inf,
                   seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu)
        return out
    bid = np.flatnonzero(active)
    n_bid = bid.shape[0]
    if n_bid == 0:
        out.update(objective=0.0, lower=0.0, seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu)
        return out
    lag = lag_all[bid]
    # Rows: capacity (m), demand (finite d_i), one finish row per bidder.  Columns: x (E), then t (free).
    h, _, base_f = max_t_model(edge_agent, edge_pool, coef, capacity, demands, upper, bid, t_lower=-math.inf)
    inf = highspy.kHighsInf
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "on")
    finish_rows = (base_f + np.arange(n_bid)).astype(np.int32)
    lo = float(np.max(lag + 1.0 / rmax[bid]))  # no agent beats its best rate alone
    hi, best_x, rho = math.inf, np.zeros(n_edges), math.inf
    # A certified lower bound on the WHOLE rho* (the standalone bound): the merged max rho
    # cannot go below it, so a part is done once its own max rho reaches it.
    target = task.get("target")
    target = None if target is None or not math.isfinite(target) else float(target)
    if target is not None and target > float(lag.max()):
        rho = max(target, lo)
    status, lps = "optimal", 0
    for _ in range(MAX_EVALUATIONS):
        left = remaining()  # the part's share of its run's time limit, if any (solve_part)
        if left is not None and left <= 0:
            status = STOPPED
            break
        limit_next_run(h, left)
        b = np.zeros(n_bid) if math.isinf(rho) else 1.0 / (rho - lag)
        if lps:
            h.changeRowsBounds(n_bid, finish_rows, b, np.full(n_bid, inf))
        h.run()
        lps += 1
        if h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
            status = STOPPED  # the best point so far stands (none before the first evaluation)
            break
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            h.clearSolver()
            h.setOptionValue("solver", "simplex")
            h.setOptionValue("presolve", "choose")
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                status = (STOPPED if h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit else
                          f"stopped after {lps} evaluations: HiGHS {h.modelStatusToString(h.getModelStatus())}")
                break
        if lps == 1:
            h.setOptionValue("solver", "simplex")
            h.setOptionValue("simplex_strategy", 1)
            h.setOptionValue("presolve", "off")
        sol = h.getSolution()
        col = np.asarray(sol.col_value)
        row_dual = np.asarray(sol.row_dual)
        level = float(col[n_edges])
        x = np.clip(col[:n_edges], 0.0, upper)
        r = np.bincount(edge_agent, weights=coef * x, minlength=n_local)
        reached = max_rho(r, lag_all, active)
        if reached < hi:
            hi, best_x = reached, x
        lo = max(lo, _lo_from(rho, level, lag))
        lam = np.clip(-row_dual[base_f:], 0.0, None)
        prices = np.clip(row_dual[:n_pools], 0.0, None)
        out["prices"], out["lam_rows"], out["level"], out["rho"] = prices, lam, level, rho
        if hi - lo <= TOLERANCE * max(1.0, abs(hi)):
            break
        if target is not None and hi <= target * (1.0 + TOLERANCE):
            break  # at the whole problem's bound: no part can do better for the merged max rho
        slope = float(np.sum(lam / (rho - lag) ** 2)) if not math.isinf(rho) else 0.0
        step = rho - level / slope if slope > 0 else math.nan
        width = hi - lo
        if math.isfinite(hi):
            # Safeguard: stay strictly inside the bracket; outside it (or no slope), bisect.
            if not math.isfinite(step) or step <= lo or step >= hi:
                step = 0.5 * (lo + hi)
            else:
                step = min(max(step, lo + 0.01 * width), hi - 0.01 * width)
        rho = step if math.isfinite(step) else hi
    else:
        status = f"bracket not closed in {MAX_EVALUATIONS} evaluations (width {hi - lo:.3g})"
    best_x = _repair(best_x, edge_agent, edge_pool, capacity, demands)
    values = np.bincount(edge_agent, weights=coef * best_x, minlength=n_local)
    lam = np.zeros(n_local)
    if out.get("lam_rows") is not None:
        lam[bid] = out.pop("lam_rows")
    if status == STOPPED and "rho" not in out:
        best_x = None  # stopped before its first evaluation: no allocation of its own
    out.update(status=status, objective=max_rho(values, lag_all, active), lower=lo, x=best_x, values=values,
               lam=lam, lps=lps, seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu)
    return out


def _repair(x, edge_agent, edge_pool, capacity, demands) -> np.ndarray:
    """``x`` scaled down where a solver's tolerance left a pool or a demand over."""
    used = np.bincount(edge_pool, weights=x, minlength=capacity.shape[0])
    over = used > capacity
    if over.any():
        x = x * np.where(over, capacity / np.where(used > 0, used, 1.0), 1.0)[edge_pool]
    taken = np.bincount(edge_agent, weights=x, minlength=demands.shape[0])
    over = taken > demands
    if over.any():
        x = x * np.where(over, demands / np.where(taken > 0, taken, 1.0), 1.0)[edge_agent]
    return x


def root_of(lam: np.ndarray, lag: np.ndarray, constant: float) -> float:
    """The largest ``rho`` certified by ``sum_i lambda_i / (rho - a_i) >= C`` (``lambda >= 0``, sum 1; ``C > 0``).

    ``g(rho) = sum_i lambda_i / (rho - a_i)`` decreases from ``+inf`` to 0 on
    ``rho > max_{lambda_i > 0} a_i``; its root lies in
    ``[max(a_max, a_min + 1/C), a_max + 1/C]``.  Bisection returns the left end of the
    final bracket, where ``g >= C`` holds in floating point, so every ``rho`` below it
    has ``g(rho) > C``.

    >>> round(root_of(np.array([1.0]), np.array([0.5]), 2.0), 9)     # 1/(rho - 0.5) = 2
    1.0
    """
    support = lam > 0
    lam, lag = lam[support], lag[support]
    if lam.size == 0 or not constant > 0:
        return -math.inf
    a_max, a_min = float(lag.max()), float(lag.min())
    left, right = max(a_max, a_min + 1.0 / constant), a_max + 1.0 / constant
    g = lambda rho: float(np.sum(lam / (rho - lag))) if rho > a_max else math.inf  # noqa: E731
    for _ in range(60):
        if g(left) >= constant:
            break
        # Only through rounding (at a_min = a_max the root is the bracket's end): step left.
        left = a_max + (left - a_max) * (1.0 - min(0.5, 1e-12 * 2 ** _))
    else:
        return a_max
    for _ in range(200):
        mid = 0.5 * (left + right)
        if mid <= left or mid >= right:
            break
        if g(mid) >= constant:
            left = mid
        else:
            right = mid
    return left


def themis_bound(problem: Problem, lag: np.ndarray, active: np.ndarray, lam: np.ndarray,
                 prices: np.ndarray) -> float:
    """A certified lower bound on the whole instance's fractional Themis ``rho*`` from ``(p, lambda)``.

    ``lam`` and ``prices`` are taken at the parts' scale (each part's ``lambda`` sums to 1)
    and both divided by ``sum_i lambda_i``.  For ``lambda >= 0`` with ``sum_i lambda_i = 1``
    on the active agents and ``p >= 0``:
    ``F(rho) <= L(p, lambda) - sum_i lambda_i / (rho - a_i)`` with ``L`` the
    Lagrangian of ``models/partition.md``; so where ``sum_i lambda_i / (rho - a_i) > L``,
    ``F(rho) < 0`` and no allocation reaches ``rho``.  Returns :func:`root_of` at
    ``C = L(p, lambda)`` (``problem.coef`` the normalised ``a_e``).

    >>> p = Problem(np.array([0, 1]), np.array([0, 0]), np.ones(2), np.array([1]), np.ones(2), np.ones(2), np.ones(2))
    >>> round(themis_bound(p, np.zeros(2), np.ones(2, bool), np.array([0.5, 0.5]), np.array([0.5])), 9)
    2.0
    """
    lam = np.where(active, np.clip(lam, 0.0, None), 0.0)
    total = lam.sum()
    if not total > 0:
        return -math.inf
    lam = lam / total
    prices = np.clip(np.asarray(prices, dtype=np.float64), 0.0, None) / total
    profit = lam[problem.edge_agent] * problem.coef - prices[problem.edge_pool]
    constant = float(prices @ problem.counts.astype(np.float64) + inner_maximum(problem, profit).sum())
    return root_of(lam, lag, constant)
