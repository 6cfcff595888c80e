"""Forward auction with epsilon-scaling for the welfare problem (``models.md`` item 8).

Each round ``r`` is solved on its own (the welfare objective and the constraints
split by round).  Round ``r`` is the transportation problem

.. math::

    \\max_x \\sum_{i,c} a_{ic} x_{ic}, \\quad a_{ic} = w_i u_{i,c,r}, \\qquad
    \\sum_i x_{ic} \\le k_c, \\quad \\sum_c x_{ic} \\le d_i, \\quad x \\in \\mathbb{Z}_{\\ge 0},

over the agents active in round ``r`` (``a_i <= r <= D_i``) and their edges with
``a_{ic} > 0``.  It is written as an assignment problem:

* **persons** are units of demand: agent ``i`` becomes ``d'_i = min(d_i, sum of k_c
  over its edges with a_ic > 0)`` identical persons (more could never be used);
  ``P = sum_i d'_i``;
* **objects** are the devices: pool ``c`` holds ``k_c`` devices, each with its own
  price ``p_{c,s}``, kept in a min-heap so that a bidder always takes the cheapest
  device of a pool (similar objects); the pool's price ``p_c`` is that of its cheapest
  device (the price at which one more device could be bought);
* a **stay-out** object of value 0, price 0 and unlimited copies lets a person leave
  (the welfare problem may leave agents and devices out).

Algorithm (Bertsekas 1988, 1992; eps-scaling: Bertsekas & Eckstein 1988)
    For ``eps`` in a decreasing schedule ending at ``eps_final``, starting each phase
    from an empty assignment and the previous phase's prices:

    1. *forward auction* (Gauss-Seidel): an unassigned person of agent ``i`` finds its
       best net value ``v1 = max_c (a_ic - p_c)`` and the second best ``v2`` (other pools,
       the second-cheapest device of the best pool, and stay-out's 0).  If ``v1 <= 0``
       it stays out; otherwise it raises the price of the cheapest device of the best
       pool by ``v1 - v2 + eps`` and takes it, evicting its holder, who bids again;
    2. *reverse clean-up*: a device left free with a positive price (priced in an earlier
       phase, now unwanted) either drops to price 0 -- when no person would gain more
       than ``eps`` from it at price 0 -- or goes to the person gaining most from it, at
       the price that keeps eps-complementary slackness (the reverse auction of
       Bertsekas, Castanon & Tsaknakis 1993 with floor price 0).

Guarantee (proved in ``docs/auction.md``)
    At the end of every phase: (a) *eps-CS*: every person's net value
    ``a_{i,c(held)} - p_{c(held)}`` (0 for stay-out) is at least ``max(0, max_c (a_ic - p_c)) - eps``;
    (b) every pool with a free device has price ``p_c = 0``.  Weak duality with the
    dual ``D = sum_c k_c p_c + sum_i d'_i max(0, max_c (a_ic - p_c))`` gives

    ``OPT_r <= D_r <= W_r + P_r eps_final``

    where ``W_r`` is the auction's welfare in round ``r``.  The result's ``bound`` is
    ``objective + sum_r (min(D_r, W_r + P_r eps_r) - W_r)``, an honest upper bound on
    the optimum, and ``details["guarantee"]`` states ``sum_r P_r eps_r``.  When every
    ``a_ic`` is an integer (integer weights and utilities) the final ``eps`` is
    ``1 / (P_r + 1)``, so ``P_r eps < 1`` and the integral optimum ``OPT_r <= D_r < W_r + 1``
    forces ``W_r = OPT_r``: the allocation is optimal (``details["proven_optimal"]``,
    ``gap`` 0).  The status stays ``feasible`` (a heuristic's label); the proof is the
    bound.

Options
    ``eps``: the final epsilon (absolute, in units of ``w_i u``); default ``1/(P+1)`` for
    integer values, else ``tol * max a / P`` with ``tol`` (default ``1e-9``), so the
    a-priori gap is at most ``tol * max_ic a_ic`` per round.  ``factor`` (default 16): the
    schedule divides ``eps`` by it each phase from ``max a / factor``.  The final epsilon
    is never below ``max a * 2**-40``, so that every bid raises a float price.

Output: the allocation, ``objective = sum_i w_i U_i``, ``bound`` and ``gap``; in
``details``: ``prices`` (one ``{pool: p_c}`` per round), ``eps_final``, ``persons``,
``guarantee``, ``dual_bound``, ``proven_optimal``, ``phases``, ``bids`` and
``reverse_steps``.  Ties: stay-out wins a tie with a device (a person never takes a
device worth exactly its price); between pools the earlier pool in the agent's edge
order wins.

Speed: the inner loop is compiled with numba (``_auction_kernel``, ``cache=True``: the
machine code is stored on disk, so only the first call on a machine pays the
compilation, about 5-7 s; a new process then pays under a second to import numba and
load it, reported as ``timing["load_s"]`` of its first result).  :func:`auction_matrix`
runs the same auction on a dense value matrix (the benchmark's interface, like
:func:`scipy.optimize.linear_sum_assignment`).  See ``docs/auction.md`` for the proof
and ``docs/benchmarks-auction.md`` for measured times.

References: D. P. Bertsekas, "The auction algorithm: a distributed relaxation method
for the assignment problem", Annals of OR 14 (1988); "Auction algorithms for network
flow problems: a tutorial introduction", Comput. Optim. Appl. 1 (1992);
D. P. Bertsekas, D. A. Castanon, H. Tsaknakis, "Reverse auction and the solution of
inequality constrained assignment problems", SIAM J. Optim. 3 (1993).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("x"), lo.Pool("y")],
...                    agents=[lo.Agent("a", demand=1), lo.Agent("b", demand=1)],
...                    edges=[lo.Edge("a", "x", 10.0), lo.Edge("a", "y", 9.0), lo.Edge("b", "x", 8.0),
...                           lo.Edge("b", "y", 1.0)])
>>> result = lo.solve(inst, "auction")
>>> sorted((a["agent"], a["pool"]) for a in result.allocation), result.objective, result.gap
([('a', 'y'), ('b', 'x')], 17.0, 0.0)
>>> result.details["proven_optimal"]
True
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..jit import HAVE_NUMBA  # looked up, not imported: an estimate must not load the compiler
from ..limits import check_deadline, compiler_bytes, remaining
from ..method_spec import Method, Option
from ._baseline_common import heuristic_size
from ..modeling.solution import relative_gap
from ..result import Result, agent_values, allocation_columns
from ._fastpaths import edges_in_order, touched_utilities

__all__ = ["AuctionOutcome", "auction_matrix", "solve_auction", "eps_schedule"]

#: Smallest final epsilon relative to the largest value: a bid must move a float price.
EPS_FLOOR = 2.0**-40
DEFAULT_TOL = 1e-9
DEFAULT_FACTOR = 16.0


@dataclass
class AuctionOutcome:
    """One auction: who holds what, the prices and the guarantee.

    ``pairs`` is an ``(L, 3)`` integer array of ``(row, column, devices)``;
    ``prices[c]`` is ``p_c``; ``welfare`` is ``sum a x``; ``dual_bound`` is ``D``;
    ``guarantee = persons * eps_final`` (``OPT <= welfare + guarantee``);
    ``bound = min(dual_bound, welfare + guarantee)``, or ``welfare`` when
    ``proven_optimal``.
    """

    pairs: np.ndarray
    prices: np.ndarray
    welfare: float
    dual_bound: float
    bound: float
    eps_final: float
    persons: int
    guarantee: float
    proven_optimal: bool
    integral_values: bool
    phases: int
    bids: int
    reverse_steps: int
    solve_s: float = 0.0
    load_s: float = 0.0
    #: Phases left out because the time limit passed (the schedule was cut after ``phases``).
    phases_cut: int = 0


def eps_schedule(max_value: float, eps_final: float, factor: float = DEFAULT_FACTOR) -> np.ndarray:
    """``max_value/factor, max_value/factor**2, ...`` down to ``eps_final`` (always the last entry).

    >>> eps_schedule(1000.0, 0.01, 10.0).tolist()
    [100.0, 10.0, 1.0, 0.1, 0.01]
    """
    steps = []
    eps = max_value / factor
    while eps > eps_final * (1 + 1e-12):
        steps.append(eps)
        eps /= factor
    steps.append(eps_final)
    return np.asarray(steps, dtype=np.float64)


def _check_options(eps, tol, factor) -> None:
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0):
        raise InputError(f"eps must be a finite number > 0, got {eps!r}", path="option eps")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
        raise InputError(f"tol must be a finite number > 0, got {tol!r}", path="option tol")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 1:
        raise InputError(f"factor must be a finite number > 1, got {factor!r}", path="option factor")


_LOADED: list = []  # the kernel module, once loaded in this process


def _kernel():
    """The compiled kernel module; the first call in a process imports numba and loads (or
    compiles) the machine code, timed in ``load_s`` of the result that paid for it."""
    if not _LOADED:
        t0 = time.perf_counter()
        from . import _auction_kernel as kernel

        tiny = np.array([1.0])
        one = np.array([0, 1], np.int64)
        kernel.prepare(one, np.zeros(0, np.int64), tiny, 1, np.ones(1, np.int64))
        kernel.pool_demand(one, np.zeros(0, np.int64), tiny, 1, 1, np.ones(1, np.int64))
        args = (one, np.zeros(0, np.int64), tiny, 1, 1, np.zeros(2, np.int64), np.zeros(0, np.int64), np.zeros(0),
                one, np.zeros(1, np.int64), one)
        kernel.forward_reverse_auction(*args, np.array([0.5]))
        state = kernel.start_auction(args[9], one, 1)
        kernel.auction_phases(*args, np.array([0.5]), *state)
        kernel.best_net_values(one, args[1], tiny, 1, state[3])
        zero, ones = np.zeros(1, np.int64), np.ones(1, np.bool_)
        edges_in_order(zero, zero, 1)
        for weighted in (0, 1):
            ptrs = kernel.count_live(zero, zero, tiny, tiny, weighted, ones, 1, 1, 1)
            kernel.fill_live(zero, zero, tiny, tiny, weighted, ones, 1, 1, 1, *ptrs, one[1:], zero.copy(), tiny.copy(),
                             zero.copy(), tiny.copy())
            kernel.fill_dense(zero, zero, tiny, tiny, weighted, ones, 1, 1, 1, one[1:], tiny.copy())
        kernel.locate_edges(zero, zero, one, zero)
        _LOADED.extend([kernel, time.perf_counter() - t0])
        return kernel, _LOADED[1]
    return _LOADED[0], 0.0


def _run(row_ptr, cols, vals, dense, n, m, counts, demands, *, eps, tol, factor, prepared=None,
         transposed=None, held_values=None) -> AuctionOutcome:
    """The auction on rows ``0..n-1`` (agents) and columns ``0..m-1`` (pools).

    Values are dense (``vals[i*m + c]``, ``cols`` unused) or compressed rows; entries
    ``<= 0`` are never taken.  ``demands`` may hold ``inf``.  ``prepared`` (the figures of
    ``kernel.prepare``) and ``transposed`` (``col_ptr, col_rows, col_vals``) may come
    ready-made from :func:`_compressed_round`; ``held_values(pairs)`` then gives the values
    of the held pairs.
    """
    kernel, load_s = _kernel()
    counts = np.asarray(counts, dtype=np.int64)
    dense_flag = 1 if dense else 0
    cols_arg = np.zeros(0, np.int64) if dense else np.asarray(cols, dtype=np.int64)
    # d'_i = min(d_i, devices reachable through positive values).
    if prepared is None:
        prepared = kernel.prepare(row_ptr, cols_arg, vals, dense_flag, counts)
    reach, max_value, integral, finite = prepared
    if not finite:
        raise InputError("values must be finite numbers", path="values")
    units = np.minimum(reach, np.asarray(demands, dtype=np.float64)).astype(np.int64)
    persons = int(units.sum())
    max_value, integral = float(max_value), bool(integral) and vals.size > 0
    if persons == 0 or max_value <= 0:
        return AuctionOutcome(np.zeros((0, 3), np.int64), np.zeros(m), 0.0, 0.0, 0.0, 0.0, persons, 0.0,
                              True, integral, 0, 0, 0, 0.0, load_s)
    if eps is not None:
        eps_final = float(eps)
    elif integral:
        eps_final = 1.0 / (persons + 1)
    else:
        eps_final = tol * max_value / persons
    # Never below the smallest normal double: an increment that underflows to 0 (values of 1e-320)
    # would let two bidders outbid each other forever.
    eps_final = max(eps_final, max_value * EPS_FLOOR, float(np.finfo(np.float64).tiny))
    schedule = eps_schedule(max_value, eps_final, factor)
    unit_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(units, out=unit_ptr[1:])
    unit_agent = np.repeat(np.arange(n, dtype=np.int64), units)
    slot_ptr = np.zeros(m + 1, np.int64)
    np.cumsum(_bidden_slots(kernel, row_ptr, cols_arg, vals, dense_flag, m, counts, units), out=slot_ptr[1:])
    if dense:
        # The kernel fills a transposed copy for the reverse step, eight columns at a time on first
        # use, when devices outnumber persons (its storage allocated here: numpy maps it faster).
        col_ptr, col_rows = np.zeros(m + 1, np.int64), np.zeros(0, np.int64)
        col_vals = np.empty(n * m) if int(slot_ptr[m]) > persons else np.zeros(0)
    elif transposed is not None:
        col_ptr, col_rows, col_vals = transposed
    else:
        # The transposed copy (by pool) for the reverse step.
        row_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(row_ptr))
        # Stable by pool; pool numbers that fit 16 bits take numpy's radix sort (linear in the edges).
        order = np.argsort(cols_arg.astype(np.uint16) if m <= 65536 else cols_arg, kind="stable")
        col_rows, col_vals = row_of[order], vals[order]
        col_ptr = np.zeros(m + 1, np.int64)
        np.cumsum(np.bincount(cols_arg, minlength=m), out=col_ptr[1:])
    t0 = time.perf_counter()
    (slot_price, slot_owner, slot_pool, pool_price, unit_slot, unit_profit, stats,
     col_ready) = kernel.start_auction(unit_agent, slot_ptr, m)
    # One phase per call: between phases the assignment keeps eps-complementary slackness, so a
    # time limit that passes stops the schedule there with an allocation and its bound.
    done = 0
    while done < schedule.shape[0]:
        kernel.auction_phases(row_ptr, cols_arg, vals, dense_flag, m, col_ptr, col_rows, col_vals, unit_ptr,
                              unit_agent, slot_ptr, schedule[done:done + 1], slot_price, slot_owner, slot_pool,
                              pool_price, unit_slot, unit_profit, stats, col_ready)
        done += 1
        left = remaining()
        if left is not None and left <= 0:
            break
    best = kernel.best_net_values(row_ptr, cols_arg, vals, dense_flag, pool_price)
    schedule, cut = schedule[:done], int(schedule.shape[0] - done)
    solve_s = time.perf_counter() - t0
    held = unit_slot >= 0
    keys, amounts = np.unique(unit_agent[held] * m + slot_pool[unit_slot[held]], return_counts=True)
    pairs = np.stack([keys // m, keys % m, amounts], axis=1).astype(np.int64)
    if dense:
        held_values = vals[pairs[:, 0] * m + pairs[:, 1]]
    elif held_values is not None:
        held_values = held_values(pairs)
    else:
        held_values = np.array([
            vals[row_ptr[i] + int(np.flatnonzero(cols_arg[row_ptr[i]:row_ptr[i + 1]] == c)[0])]
            for i, c in pairs[:, :2].tolist()
        ])
    welfare = float(np.dot(held_values, pairs[:, 2])) if len(pairs) else 0.0
    # Dual bound D = sum_c k_c p_c + sum_i d'_i max(0, max_c a_ic - p_c) (weak duality: OPT <= D).
    dual = float(counts @ pool_price + units @ best)
    guarantee = persons * float(schedule[-1])
    proven = integral and guarantee < 1.0
    bound = welfare if proven else max(welfare, min(dual, welfare + guarantee))
    return AuctionOutcome(
        pairs, pool_price.copy(), welfare, dual, bound, float(schedule[-1]), persons, guarantee, proven, integral,
        int(stats[2]), int(stats[0]), int(stats[1]), solve_s, load_s, cut,
    )


def _bidden_slots(kernel, row_ptr, cols, vals, dense: int, m: int, counts: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Devices per pool the auction holds as slots: ``min(k_c, P_c + 1)``, ``P_c`` the units that may bid.

    At most ``P_c`` of a pool's devices are ever held, so with ``P_c + 1`` slots one is always
    free, and the clean-up leaves every free slot at price 0 after each phase: the pool's
    price is 0, as with all ``k_c`` devices, every unit's best net value (a free device of
    the pool among them) is the same, and so eps-complementary slackness and the bound hold
    for the whole pool.  A pool of 10^9 devices with a few bidders then takes a few slots,
    not 40 GB.
    """
    # Only where devices outnumber the units and pools can a pool have more than P_c + 1 of
    # them worth dropping; elsewhere the pass over the values is skipped.
    if counts.size == 0 or int(counts.max()) <= 1 or int(counts.sum()) <= int(units.sum()) + m:
        return counts
    return np.minimum(counts, kernel.pool_demand(row_ptr, cols, vals, dense, m, units) + 1)


def auction_matrix(values, counts=None, demands=None, *, eps: float | None = None, tol: float = DEFAULT_TOL,
                   factor: float = DEFAULT_FACTOR) -> AuctionOutcome:
    """The auction on a dense ``n x m`` value matrix (rows: agents, columns: pools).

    ``counts`` (default all 1) are the devices per column, ``demands`` (default all 1)
    the most devices per row (``None`` entries or ``inf``: unbounded).  Entries ``<= 0``
    are never taken.  With the defaults this is the (rectangular) assignment problem
    that :func:`scipy.optimize.linear_sum_assignment` solves with ``maximize=True``,
    except that a row may stay unassigned when nothing is worth more than 0.

    >>> out = auction_matrix([[10, 9], [8, 1]])
    >>> out.pairs.tolist(), out.welfare, out.proven_optimal
    ([[0, 1, 1], [1, 0, 1]], 17.0, True)
    >>> out.prices.round(2).tolist(), round(out.eps_final, 2)  # an equilibrium within eps:
    ([1.33, 0.67], 0.33)

    (row 0 nets ``9 - 0.67`` from column 1, within eps of ``10 - 1.33`` from column 0.)
    """
    _check_options(eps, tol, factor)
    vals = np.ascontiguousarray(values, dtype=np.float64)
    if vals.ndim != 2:
        raise InputError(f"values must be a 2-d matrix, got shape {vals.shape}", path="values")
    n, m = vals.shape
    counts = np.ones(m, np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    if demands is None:
        demands = np.ones(n)
    else:
        demands = np.array([np.inf if d is None else d for d in demands], dtype=np.float64)
    if counts.shape != (m,) or np.any(counts < 0):
        raise InputError(f"counts must be {m} integers >= 0", path="counts")
    if demands.shape != (n,) or np.any(demands < 0):
        raise InputError(f"demands must be {n} numbers >= 0", path="demands")
    row_ptr = np.arange(n + 1, dtype=np.int64) * m
    return _run(row_ptr, None, vals.reshape(-1), True, n, m, counts, demands, eps=eps, tol=tol, factor=factor)


def solve_auction(instance: Instance, *, eps: float | None = None, tol: float = DEFAULT_TOL,
                  factor: float = DEFAULT_FACTOR) -> Result:
    """Run the auction round by round; ``objective`` is ``sum_i w_i U_i`` (see the module docstring)."""
    _check_options(eps, tol, factor)
    t0 = time.perf_counter()
    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    amounts = np.zeros((instance.n_edges, rounds))
    edge_agent, edge_pool = instance.edge_agent, instance.edge_pool
    weights = instance.weights
    unit_weights = bool(np.all(weights == 1.0))
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    deadline = instance.last_rounds
    demands = instance.effective_demands
    kernel, _ = _kernel()
    # Edges ordered by agent, then pool (as files and generators leave them) need no sort to be found.
    in_order = edges_in_order(edge_agent, edge_pool, m)
    if in_order:
        weighted = None
        edge_start = np.searchsorted(edge_agent, np.arange(n + 1))
    else:
        # Equal weights of 1 (the common case) leave the utilities as they are: no E x R product to form.
        weighted = instance.edge_utility if unit_weights else weights[edge_agent][:, None] * instance.edge_utility
        key_of_edge = edge_agent * m + edge_pool
        key_order = np.argsort(key_of_edge)
        sorted_keys = key_of_edge[key_order]
    pool_ids = [p.id for p in instance.pools]
    prices, per_round, touched = [], [], []
    solve_s = load_s = 0.0
    skipped = []  # rounds the time limit left out: no devices, bounded by what the agents could get
    for r in range(rounds):
        present = (arrival <= r) & (r <= deadline)
        left = remaining()
        if r > 0 and left is not None and left <= 0:
            skipped.append((r, _round_upper_bound(instance, r, present, demands)))
            prices.append(None)  # not run: no equilibrium prices
            continue
        check_deadline(f"in round {r} of {instance.rounds}")
        if in_order:
            out, edges = _compressed_round(kernel, instance, r, present, unit_weights, edge_start, demands,
                                           eps=eps, tol=tol, factor=factor)
        else:
            out = _shuffled_round(instance, weighted[:, r], present, demands, eps=eps, tol=tol, factor=factor)
            edges = key_order[np.searchsorted(sorted_keys, out.pairs[:, 0] * m + out.pairs[:, 1])]
        solve_s += out.solve_s
        load_s += out.load_s
        if len(out.pairs):
            amounts[edges, r] = out.pairs[:, 2]
            touched.append(edges)
        prices.append(dict(zip(pool_ids, out.prices.tolist())))
        per_round.append(out)
    utilities = touched_utilities(instance, amounts, touched)
    objective = float(instance.weights @ utilities)
    proven = all(o.proven_optimal for o in per_round) and not skipped
    slack = sum(o.bound - o.welfare for o in per_round) + sum(b for _, b in skipped)
    bound = objective + slack
    elapsed = time.perf_counter() - t0
    cut = [(r, o) for r, o in enumerate(per_round) if o.phases_cut]
    message = ""
    if cut or skipped:
        parts = [f"round {r}: stopped after {o.phases} of {o.phases + o.phases_cut} eps phases (eps {o.eps_final:.3g})"
                 for r, o in cut]
        if skipped:
            parts.append(f"rounds {skipped[0][0]}..{skipped[-1][0]} not run (no devices; bounded by each agent's "
                         "best value times the devices it could use)")
        message = "time limit: " + "; ".join(parts) + "; the allocation keeps its certified bound"
    return Result(
        instance=instance.name,
        method="auction",
        status="time_limit" if cut or skipped else "feasible",
        message=message,
        solver="numba" if HAVE_NUMBA else "python",
        objective=objective,
        bound=bound,
        gap=relative_gap(objective, bound),
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        timing={"build_s": max(0.0, elapsed - solve_s - load_s), "solve_s": solve_s,
                **({"load_s": load_s} if load_s else {})},
        route="auction",
        mode="integral",
        params={"eps": eps, "tol": tol, "factor": factor},
        details={
            "prices": prices,
            "eps_final": [o.eps_final for o in per_round],
            "persons": [o.persons for o in per_round],
            "guarantee": float(sum(o.guarantee for o in per_round)),
            "dual_bound": float(sum(o.dual_bound for o in per_round)),
            "proven_optimal": proven,
            "integral_values": all(o.integral_values for o in per_round),
            "phases": [o.phases for o in per_round],
            "bids": int(sum(o.bids for o in per_round)),
            "reverse_steps": int(sum(o.reverse_steps for o in per_round)),
            **({"rounds_not_run": [r for r, _ in skipped]} if skipped else {}),
        },
        amounts=amounts,
    )


def _compressed_round(kernel, instance: Instance, r: int, present: np.ndarray, unit_weights: bool,
                      edge_start: np.ndarray, demands: np.ndarray, *, eps, tol, factor):
    """Round ``r`` on edges ordered by agent, then pool: ``(outcome, edge index of each held pair)``.

    When the live edges (``a_e = w_i u_{e,r} > 0``, agent present) fill at least half of
    the ``n x m`` table the round runs on the dense form, with ``-inf`` where no live edge
    is (never taken: the same auction), written by one compiled pass over the edges;
    otherwise on compressed rows and their transposed copy, built by two passes (a count,
    then a placement: what gathering the live edges in edge order and sorting their
    positions stably by pool gives).
    """
    n, m = instance.n_agents, instance.n_pools
    everyone = 1 if present.all() else 0
    column = instance.edge_utility[:, r]
    weighted = 0 if unit_weights else 1
    args = (instance.edge_agent, instance.edge_pool, column, instance.weights, weighted, present, everyone, n, m)
    counts = instance.counts
    out = None
    if 2 * instance.n_edges >= n * m:
        vals = np.empty(n * m)
        live, *prepared = kernel.fill_dense(*args, counts, vals)
        if 2 * live >= n * m:
            out = _run(np.arange(n + 1, dtype=np.int64) * m, None, vals, True, n, m, counts, demands, eps=eps,
                       tol=tol, factor=factor, prepared=prepared)
    if out is None:
        row_ptr, col_ptr = kernel.count_live(*args)
        live = int(row_ptr[n])
        cols, col_rows = np.empty(live, np.int64), np.empty(live, np.int64)
        vals, col_vals = np.empty(live), np.empty(live)
        prepared = kernel.fill_live(*args, row_ptr, col_ptr, counts, cols, vals, col_rows, col_vals)
        out = _run(row_ptr, cols, vals, False, n, m, counts, demands, eps=eps, tol=tol, factor=factor,
                   prepared=prepared, transposed=(col_ptr, col_rows, col_vals),
                   held_values=lambda pairs: _edge_values(kernel, instance, column, unit_weights, edge_start, pairs))
    edges = kernel.locate_edges(out.pairs[:, 0].copy(), out.pairs[:, 1].copy(), edge_start, instance.edge_pool)
    return out, edges


def _edge_values(kernel, instance: Instance, column: np.ndarray, unit_weights: bool, edge_start: np.ndarray,
                 pairs: np.ndarray) -> np.ndarray:
    """``a = w_i u_e`` of the held pairs, read on their edges (the same products the rows hold)."""
    edges = kernel.locate_edges(pairs[:, 0].copy(), pairs[:, 1].copy(), edge_start, instance.edge_pool)
    return column[edges] if unit_weights else column[edges] * instance.weights[pairs[:, 0]]


def _shuffled_round(instance: Instance, weighted: np.ndarray, present: np.ndarray, demands: np.ndarray, *, eps,
                    tol, factor) -> AuctionOutcome:
    """Round ``r`` (``weighted``: its column of ``w_i u_e``) on edges in any order: rows by a stable sort."""
    n, m = instance.n_agents, instance.n_pools
    edge_agent = instance.edge_agent
    live = weighted > 0
    if not present.all():
        live &= present[edge_agent]
    chosen = np.flatnonzero(live)
    # Compressed rows by agent, edges in instance order within a row (the tie rule).
    chosen = chosen[np.argsort(edge_agent[chosen], kind="stable")]
    row_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(edge_agent[chosen], minlength=n), out=row_ptr[1:])
    vals = np.ascontiguousarray(weighted[chosen])
    return _run(row_ptr, instance.edge_pool[chosen], vals, False, n, m, instance.counts, demands, eps=eps, tol=tol,
                factor=factor)


def _round_upper_bound(instance: Instance, r: int, present: np.ndarray, demands: np.ndarray) -> float:
    """An upper bound on round ``r``'s welfare: each present agent's best value ``w_i u`` times the
    devices it could use, ``min(d_i, devices on its edges of positive value)``."""
    values = instance.weights[instance.edge_agent] * instance.edge_utility[:, r]
    live = (values > 0) & present[instance.edge_agent]
    best = np.zeros(instance.n_agents)
    np.maximum.at(best, instance.edge_agent[live], values[live])
    reach = np.bincount(instance.edge_agent[live], weights=instance.counts[instance.edge_pool[live]].astype(float),
                        minlength=instance.n_agents)
    return float(np.minimum(reach, demands) @ best)


METHOD = Method(
    name="auction",
    kind="heuristic",
    objective="sum_i w_i U_i (within sum_r P_r eps_r of the optimum; optimal for integer values)",
    solvers=(),
    fractional=False,
    summary="Bertsekas forward auction with eps-scaling per round; prices per pool; bound from duality.",
    run=solve_auction,
    options=(
        Option("eps", "float", None, "final bidding increment (default: proves optimality on integer values, "
               "else tol x the largest value / persons)", above=0, nullable=True),
        Option("tol", "float", DEFAULT_TOL, "relative accuracy of the default final increment", above=0, maximum=1),
        Option("factor", "float", DEFAULT_FACTOR, "eps-scaling factor between phases", above=1),
    ),
    estimate=lambda instance, options: _size(instance),
)


def _size(instance: Instance):
    """The auction's size: :func:`heuristic_size` plus about 40 bytes per bidding unit and device slot,
    and the compiler's footprint where this run would load it (:func:`~laissez_opt.limits.compiler_bytes`).

    Units: at most ``sum_i d'_i``.  Slots per pool: at most ``min(k_c, P_c + 1)``
    (:func:`_bidden_slots`), ``P_c`` bounded by the units of the agents with an edge there;
    that bound takes a pass over the edges, made only when the devices outnumber twice the
    units and pools (otherwise the devices themselves are counted, at most twice the bound).
    Floats: the counts of a valid instance may multiply beyond any integer type.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=10**9)], [lo.Agent("A", demand=3)], [lo.Edge("A", "P", 1.0)])
    >>> _size(inst).dense_bytes < 10**4
    True
    """
    import dataclasses

    base = heuristic_size(instance)
    counts = instance.counts.astype(np.float64)
    demands = instance.effective_demands.astype(np.float64)
    units = float(demands.sum())
    slots = float(counts.sum())
    if slots > 2.0 * (units + instance.n_pools) and instance.n_edges:
        bidders = np.bincount(instance.edge_pool, weights=demands[instance.edge_agent], minlength=instance.n_pools)
        slots = float(np.minimum(counts, bidders + 1.0).sum())
    return dataclasses.replace(base, dense_bytes=base.dense_bytes + 40.0 * (slots + units) + compiler_bytes(HAVE_NUMBA))
