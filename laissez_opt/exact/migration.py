"""Migration-aware multi-round scheduling, ``models.md`` item 6 (HotOS'25 sections 2 and 5).

Each job ``i`` arrives in round ``a_i``, needs work ``W_i`` (default 1), may
have a deadline ``D_i`` (its last usable round; otherwise ``R - 1``) and runs
on ``s_i`` devices of ONE pool per round (``s_i = d_i``, or 1 when the demand
is unbounded; a gang that moves as a whole).  Running on pool ``c`` in round
``r`` does ``u_{i,c,r} s_i`` work.  Rounds are checkpoint intervals: a job may
change pool only at a round boundary, and pays ``mu_i`` work units (work lost
since the checkpoint plus the reload time) each time it runs on a pool other
than the one it last ran on, *including after a pause*.  A job stops the round
its cumulative progress reaches ``W_i`` (completion round ``t_i``) and never
runs again; devices are held, and paid ``b_c h`` per device, for whole rounds.

Binary variables (full grid; fixed to 0 outside ``a_i .. D_i``):
``z_{i,c,r}`` runs on ``c``; ``y_{i,c,r}`` the job's checkpoint sits on ``c``
after round ``r`` (the pool it last ran on); ``m_{i,r}`` migrates in ``r``;
``f_{i,r}`` completed by the end of ``r``; and the shared allocation
``x_{i,c,r} = s_i z_{i,c,r}`` (:func:`~laissez_opt.exact.common.add_allocation`).

.. math::

    &\\sum_c z_{i,c,r} \\le 1,\\quad \\sum_i x_{i,c,r} \\le k_c,\\quad x_{i,c,r} = s_i z_{i,c,r}\\\\
    &y_{i,c,r} \\ge z_{i,c,r},\\ y_{i,c,r} \\ge y_{i,c,r-1} - \\textstyle\\sum_{c'} z_{i,c',r},\\
     y_{i,c,r} \\le y_{i,c,r-1} + z_{i,c,r},\\ \\sum_c y_{i,c,r} \\le 1\\\\
    &m_{i,r} \\ge z_{i,c,r} + \\textstyle\\sum_{c' \\ne c} y_{i,c',r-1} - 1,\\
     m_{i,r} \\le \\sum_c z_{i,c,r},\\ m_{i,r} \\le \\sum_c y_{i,c,r-1},\\ m_{i,r} + z_{i,c,r} + y_{i,c,r-1} \\le 2\\\\
    &\\textstyle\\sum_{c,r} u_{i,c,r} s_i z_{i,c,r} - \\mu_i \\sum_r m_{i,r} \\ge W_i f_{i,D_i},\\quad
     f_{i,r} \\ge f_{i,r-1},\\quad \\sum_c z_{i,c,r} + f_{i,r-1} \\le 1

``y`` and ``m`` are determined exactly by ``z``: ``m`` is 1 precisely when the
job runs on a pool other than its checkpoint's.  Because a completed job never
runs again, ``f_{i,r} = 1`` implies that the progress by round ``r`` already
reached ``W_i``: one completion row per job suffices.  Objectives
(``objective=``):

* ``cost`` (default, the paper's question): minimise money
  ``sum_{i,c,r} b_c h x_{i,c,r}``; every job must finish by its deadline;
* ``work``: maximise completed weighted work ``sum_i w_i W_i f_{i,D_i}``;
* ``completion``: minimise weighted completion time ``sum_i w_i (t_i + 1)`` in
  rounds, ``t_i + 1 = R + 1 - sum_r f_{i,r}`` (time-indexed); every job must finish.

``allow_migration=False`` fixes ``m = 0`` (the ``migration_free`` method).
A job reaching ``W_i`` within ``1e-6 max(1, W_i)`` counts as complete.  The
schedule read from the solver is replayed: rounds run after the true
completion round (possible when ``f`` lags, at no gain) are dropped, and the
objective is recomputed from the replay; status, bound and gap come from the
solver.  For CP-SAT, each completion row is scaled by the least ``10^k``
(``k <= 6``) that makes its coefficients integers; otherwise OR-Tools falls
back to SCIP.

Reference: seed 000 (LaissezCloud, HotOS'25), sections 2 (static pinning is
inefficient; migration at the wrong time hurts) and 5 (checkpoint-based
migration); time-indexed scheduling formulations: Sousa & Wolsey (1992).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("fast", base_price=1.0), lo.Pool("slow", base_price=0.5)],
...                    agents=[lo.Agent("A", work=2.0)],
...                    edges=[lo.Edge("A", "fast", 1.0), lo.Edge("A", "slow", 0.5)], rounds=3)
>>> result = lo.solve(inst, "migration", objective="completion")
>>> result.status, result.objective, result.details["schedule"]["A"]
('optimal', 2.0, ['fast', 'fast', None])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..method_spec import Method, Option, solver_options
from ..modeling import LinearModel, solve_model
from ..modeling.solution import relative_gap
from ..result import Result, agent_values, allocation_columns, edge_utilities
from ..limits import SizeEstimate, TimeLimitReached, check_deadline, remaining
from .common import add_allocation, allocation_size

__all__ = ["OBJECTIVES", "build_migration", "solve_migration", "job_sizes", "job_work", "objective_unit", "replay",
           "round_bound", "strict_cutoff"]

OBJECTIVES = ("work", "completion", "cost")


def _check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}", path="option objective")
    return objective


def job_sizes(instance: Instance) -> np.ndarray:
    """``s_i``: devices a running job holds, ``d_i`` or 1 when unbounded."""
    return np.array([1 if a.demand is None else a.demand for a in instance.agents], dtype=np.int64)


def job_work(instance: Instance) -> np.ndarray:
    """``W_i``: the agent's ``work``, 1 when not given."""
    return np.array([1.0 if a.work is None else float(a.work) for a in instance.agents])


#: Completion tolerance: a job whose progress reaches ``W_i - COMPLETION_TOL max(1, W_i)`` has completed.
COMPLETION_TOL = 1e-6


def completion_threshold(work: np.ndarray | float) -> np.ndarray | float:
    """``theta_i = W_i - 1e-6 max(1, W_i)``: the progress at which a job counts as complete.

    The one definition of completion in this model: the ``complete`` row,
    :func:`replay` and :func:`obstacles` all compare progress with it, so the
    model never demands more work than the replay credits (a stricter row
    would let a solver prove optimal a schedule worse than the true optimum).
    The baselines (``fcfs_static``, ``myopic``) and the verifier apply the same
    ``1e-6 max(1, W_i)``.
    """
    return work - COMPLETION_TOL * np.maximum(1.0, work)


def _row_scale(values: np.ndarray) -> float | None:
    """Least ``10**k`` (``k <= 6``) making every value an integer up to floating-point noise; None if none does.

    The noise allowed (``1e-12`` relative) is what representing a decimal in
    binary and multiplying it by ``10**k`` leaves; anything larger is data the
    scaled row would change, so such a row is left unscaled.
    """
    for k in range(7):
        scaled = values * 10.0**k
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-12 * np.maximum(1.0, np.abs(scaled))):
            return 10.0**k
    return None


def objective_unit(instance: Instance, objective: str = "cost") -> float | None:
    """``delta``: a unit of which every achievable objective value is an integer multiple; None when none is found.

    * ``cost``: money is ``sum b_c h s_i`` over the device-rounds held, so it is
      a multiple of ``delta = h g / 10^k`` when the least ``10^k`` (``k <= 6``)
      makes every ``b_c s_i`` of a fitting edge an integer ``n_{i,c}`` and
      ``g = gcd(n_{i,c})``;
    * ``completion``: ``sum_i w_i (t_i + 1)`` with integer ``t_i``: a multiple
      of ``g / 10^k`` for the weights ``w_i`` of every job;
    * ``work``: ``sum_i w_i W_i [done]``: a multiple of ``g / 10^k`` for ``w_i W_i``.

    None when no such power of ten exists (arbitrary floats), when every
    coefficient is 0, or when the integers would pass ``2^53`` (not exact in a
    double).  Every value ``V`` of a schedule then satisfies ``V = n delta``;
    :func:`round_bound` uses that to round bounds.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("a", base_price=0.606), lo.Pool("b", base_price=0.48)], [lo.Agent("A")],
    ...                    [lo.Edge("A", "a", 1.0), lo.Edge("A", "b", 1.0)], rounds=2, round_hours=1 / 12)
    >>> round(1 / objective_unit(inst))  # gcd(606, 480) = 6 thousandths per device-hour, times 1/12 h
    2000
    """
    objective = _check_objective(objective)
    if objective == "cost":
        sizes = job_sizes(instance)
        fits = (sizes[instance.edge_agent] > 0) & (sizes[instance.edge_agent] <= instance.counts[instance.edge_pool])
        values = instance.base_prices[instance.edge_pool[fits]] * sizes[instance.edge_agent[fits]]
        factor = float(instance.round_hours)
    elif objective == "completion":
        values, factor = np.asarray(instance.weights, dtype=float), 1.0
    else:
        values, factor = np.asarray(instance.weights, dtype=float) * job_work(instance), 1.0
    values = np.abs(values[values != 0])
    if values.size == 0:
        return None
    scale = _row_scale(values)
    if scale is None or float(values.max()) * scale >= 2.0**53:
        return None
    g = int(np.gcd.reduce(np.round(values * scale).astype(np.int64)))
    return factor * g / scale if g > 0 else None


def round_bound(bound: float | None, unit: float | None, *, maximise: bool = False) -> float | None:
    """A bound rounded to the next multiple of ``unit`` toward the objective (up when minimising).

    When every achievable value is a multiple ``n delta`` (:func:`objective_unit`)
    and ``OPT >= B``, then ``OPT >= delta ceil(B / delta)``: the least multiple
    not below ``B`` (``floor`` when maximising).  ``B`` is a floating-point
    number: it is first moved by ``10^-6 + 10^-9 |B / delta|`` units against the
    rounding, so a bound computed a hair above a multiple is not lifted to the
    next one.  Unchanged when ``unit`` or ``bound`` is None or not finite.

    >>> [round(round_bound(b / 6000, 1 / 6000) * 6000, 6) for b in (24094.0, 24094.2, 24094.000001)]
    [24094.0, 24095.0, 24094.0]
    """
    if unit is None or bound is None or not math.isfinite(bound):
        return bound
    k = bound / unit
    tol = 1e-6 + 1e-9 * abs(k)
    return unit * (math.floor(k + tol) if maximise else math.ceil(k - tol))


def strict_cutoff(upper: float, unit: float | None) -> float:
    """A money level ``c < upper`` that every schedule cheaper than ``upper`` meets (``money <= c``).

    Without a unit, ``upper - 10^-9 max(1, upper)``.  With one, a cheaper
    schedule costs at most ``n delta``, the largest multiple of ``delta`` below
    ``upper`` (``upper - delta`` when ``upper`` is itself a schedule's money),
    so ``c = (n + 1/2) delta`` when that is smaller: half a unit of room for
    floating-point sums and solver tolerances on either side.  ``upper`` is
    normally a schedule's money summed in floating point: within
    ``10^-6 + 10^-9 |upper / delta|`` units above a multiple it counts as that
    multiple (the same tolerance as :func:`round_bound`).

    >>> round(strict_cutoff(4.016, 1 / 6000) * 6000, 6), strict_cutoff(1.75, 1.25)  # 1.25 is the only multiple below
    (24095.5, 1.74999999825)
    """
    cutoff = upper - 1e-9 * max(1.0, abs(upper))
    if unit is not None and math.isfinite(upper):
        below = math.ceil(upper / unit - 1e-6 - 1e-9 * abs(upper / unit)) - 1
        cutoff = min(cutoff, (below + 0.5) * unit)
    return cutoff


def _completion_rows(progress: np.ndarray, mu: float, work: float) -> tuple[np.ndarray, float, float]:
    """One job's ``complete`` row coefficients: ``(progress, mu, theta)`` as the row holds them.

    The row reads ``sum u s z - mu sum m - theta f[D] >= 0`` with ``theta`` the
    completion threshold.  When one power of ten turns ``u s``, ``mu`` and
    ``W`` into integers, the row is stored in those integers: the left-hand
    side then only takes integer values, so ``theta`` may be rounded up to
    ``ceil(10**k theta)`` without changing which schedules satisfy it, and the
    row is exact for an integer solver (CP-SAT).  Otherwise the row keeps the
    data as given (``scale`` 1).
    """
    theta = float(completion_threshold(work))
    scale = _row_scale(np.concatenate([progress, [mu, work]]))
    if scale is None:
        return progress, mu, theta
    level = scale * theta
    # level is an integer minus a fraction; ceil of it, with float noise on an exact integer ignored.
    need = math.ceil(level - 1e-9 * max(1.0, abs(level)))
    return np.round(progress * scale), round(mu * scale), float(need)


#: ``strategy="auto"`` solves the whole horizon at once up to this many edge-rounds (``E R``), else rolls.
AUTO_EDGE_ROUNDS = 8000
STRATEGIES = ("auto", "monolithic", "rolling", "colgen")

#: Options shared by ``migration`` and ``migration_free``.
MIGRATION_OPTIONS = solver_options(fractional=False) + (
    Option("objective", "choice", "cost", "cost: min money with every job done by its deadline; work: max weighted "
           "completed work; completion: min weighted completion time", choices=OBJECTIVES),
    Option("strategy", "choice", "auto", "monolithic: one model over the whole horizon; rolling: windows of "
           "`window` rounds overlapping by `overlap` (cost objective only; a heuristic with a certified bound); "
           "colgen: column generation over whole job schedules and price-and-branch (cost objective only; "
           "certified Lagrangian bound); "
           f"auto: monolithic up to {AUTO_EDGE_ROUNDS} edge-rounds or for work/completion, else colgen",
           choices=STRATEGIES),
    Option("window", "int", 4, "rounds per rolling window", minimum=1, maximum=10**6),
    Option("overlap", "int", 2, "rounds each rolling window shares with the next (less than window)", minimum=0,
           maximum=10**6),
    Option("starts", "bool", True, "build a greedy first-come schedule first and keep it as the incumbent when "
           "the solver holds nothing better (monolithic)"),
)


def pick_strategy(instance: Instance, objective: str, strategy: str) -> str:
    """``monolithic`` or ``rolling`` for ``strategy``; ``auto`` rolls ``cost`` above :data:`AUTO_EDGE_ROUNDS`.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g")], [lo.Agent("A")], [lo.Edge("A", "g", 1.0)], rounds=2)
    >>> pick_strategy(inst, "cost", "auto"), pick_strategy(inst, "cost", "rolling")
    ('monolithic', 'rolling')
    """
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}", path="option strategy")
    if strategy in ("rolling", "colgen") and objective != "cost":
        raise InputError(f"strategy {strategy} supports objective cost only, got {objective!r}", path="option strategy")
    if strategy != "auto":
        return strategy
    big = instance.n_edges * instance.rounds > AUTO_EDGE_ROUNDS
    return "colgen" if big and objective == "cost" else "monolithic"


def migration_size(instance: Instance, options: dict) -> SizeEstimate:
    """Size of the time-expanded model: blocks ``x z y`` per edge and round, ``m f`` per job and round."""
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    job_rounds = float(instance.n_agents) * float(instance.rounds)
    return allocation_size(instance, extra_variables=2 * edge_rounds + 2 * job_rounds,
                           extra_constraints=4 * edge_rounds + 8 * job_rounds,
                           extra_nonzeros=12 * edge_rounds + 16 * job_rounds,
                           note="time-expanded: x, z, y per edge and round; m, f per job and round")


@dataclass
class WindowState:
    """What a window of the rolling-horizon solve inherits: one entry per job of the window instance.

    ``initial_pool``: the pool the job's checkpoint sits on when the window
    opens (``-1``: never ran); ``required``: the job must complete within the
    window (its deadline falls inside); ``credit``: money credited per unit of
    progress of a job that need not complete (its estimated cost to go);
    ``bonus``: money credited when such a job completes in the window (the
    whole-round rounding its future runs would waste).  Used only under the
    ``cost`` objective (:mod:`laissez_opt.exact.migration_rolling`).
    """

    initial_pool: np.ndarray
    required: np.ndarray
    credit: np.ndarray
    bonus: np.ndarray


def _cheapest_completion(gains: np.ndarray, prices: np.ndarray, theta: float, *, cap: int = 20000,
                         picks: bool = False):
    """Least money to reach progress ``theta`` running at most one option per round; ``inf`` if unreachable.

    ``gains[r, c]`` is the progress of option ``c`` in round ``r`` (``<= 0``:
    unusable), ``prices[c]`` (or ``prices[r, c]``) its money.  A Pareto dynamic
    programme over ``(progress, money)`` labels (a label reaching ``theta``
    closes); exact.  Should the front exceed ``cap`` labels it returns the
    ratio bound ``theta min prices / gains``, still a lower bound (and no
    picks).  ``picks=True`` returns ``(money, option per round or -1)``.

    >>> round(_cheapest_completion(np.array([[1.0, 0.4]] * 3), np.array([1.0, 0.3]), 1.2), 9)
    0.9
    """
    R_i = gains.shape[0]
    prices = np.broadcast_to(prices, gains.shape)
    none = np.full(R_i, -1, dtype=np.int64)
    if theta <= 0:
        return (0.0, none) if picks else 0.0
    usable = gains > 0
    if not usable.any():
        return (math.inf, none) if picks else math.inf
    progress, money, node = np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64)
    parents, rounds_, options = [np.array([-1])], [np.array([-1])], [np.array([-1])]
    size, best, best_node = 1, math.inf, -1
    for r in range(R_i):
        cols = np.flatnonzero(usable[r])
        if cols.size == 0:
            continue
        k = progress.size
        ids = size + np.arange(k * cols.size)
        parents.append(np.tile(node, cols.size))
        rounds_.append(np.full(k * cols.size, r))
        options.append(np.repeat(cols, k))
        size += k * cols.size
        progress = np.concatenate([progress] + [progress + gains[r, c] for c in cols])
        money = np.concatenate([money] + [money + prices[r, c] for c in cols])
        node = np.concatenate([node, ids])
        done = progress >= theta
        if done.any():
            j = int(np.argmin(np.where(done, money, np.inf)))
            if money[j] < best:
                best, best_node = float(money[j]), int(node[j])
        keep = (~done) & (money < best)
        progress, money, node = progress[keep], money[keep], node[keep]
        if progress.size == 0:
            break
        order = np.lexsort((money, -progress))
        progress, money, node = progress[order], money[order], node[order]
        front = np.ones(progress.size, dtype=bool)
        front[1:] = money[1:] < np.minimum.accumulate(money)[:-1]
        progress, money, node = progress[front], money[front], node[front]
        if progress.size > cap:
            ratio = float(np.min(np.where(usable, prices / np.where(usable, gains, 1.0), np.inf)))
            return (theta * ratio, None) if picks else theta * ratio
    if not picks:
        return best
    chosen = none.copy()
    if best_node >= 0:
        parent, round_of, option = (np.concatenate(a) for a in (parents, rounds_, options))
        at = best_node
        while at > 0:
            chosen[round_of[at]] = option[at]
            at = parent[at]
    return best, chosen


def lagrangian_bound(instance: Instance, *, upper: float | None = None, iterations: int = 30,
                     seconds: float | None = None) -> tuple[float, np.ndarray]:
    """A lower bound on the ``cost`` optimum: the capacity rows relaxed with multipliers ``lambda_{c,r} >= 0``.

    ``L(lambda) = sum_i min_{S_i} sum_{(c,r) in S_i} (b_c h + lambda_{c,r}) s_i - sum_{c,r} lambda_{c,r} k_c``,
    where ``S_i`` ranges over job ``i``'s schedules alone (one fitting pool
    per round of ``a_i .. D_i``, reaching ``theta_i`` with migration losses
    dropped, a relaxation since ``mu_i >= 0``), solved exactly by
    :func:`_cheapest_completion`.  Every ``L(lambda)`` is a valid bound (weak
    duality); ``lambda`` is improved by projected subgradient steps
    ``lambda <- max(0, lambda + alpha (U - L) g / |g|^2)``, ``g`` the capacity
    excess of the jobs' choices and ``U`` an upper bound (``upper``, else
    ``1.05 L``), ``alpha`` halved after three steps without improvement.
    Stops after ``iterations`` or ``seconds``.  Returns the best bound and its
    multipliers (pools x rounds).  ``lambda = 0`` is :func:`floor_bound`.
    Reference: Held & Karp (1971); Fisher (1981), Management Science 27(1).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("cheap", base_price=1.0), lo.Pool("dear", base_price=3.0)],
    ...     [lo.Agent("A"), lo.Agent("B")], [lo.Edge(j, p, 1.0) for j in "AB" for p in ("cheap", "dear")], rounds=1)
    >>> round(lagrangian_bound(inst, upper=4.0)[0], 6)  # both want the one cheap device: 1 + 3
    4.0
    """
    started = time.perf_counter()
    n, R, P = instance.n_agents, instance.rounds, instance.n_pools
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    counts = instance.counts.astype(float)
    money_rate = instance.base_prices * instance.round_hours
    jobs = []
    by_agent: list[list[int]] = [[] for _ in range(n)]
    for e, i in enumerate(instance.edge_agent.tolist()):
        by_agent[i].append(e)
    for i, agent in enumerate(instance.agents):
        edges = [e for e in by_agent[i] if 0 < sizes[i] <= counts[instance.edge_pool[e]]]
        lo_r, hi_r = agent.arrival, int(last[i]) + 1
        theta = float(completion_threshold(work[i]))
        if not edges or hi_r <= lo_r:
            if theta > 0:
                return math.inf, np.zeros((P, R))
            continue
        pools = instance.edge_pool[edges]
        jobs.append((i, pools, lo_r, hi_r, (instance.edge_utility[edges, lo_r:hi_r] * sizes[i]).T, theta))
    lam = np.zeros((P, R))
    best, best_lam, alpha, stale = -math.inf, lam.copy(), 1.0, 0
    for _ in range(max(1, iterations)):
        check_deadline("while computing the Lagrangian bound")
        total, usage = -float(np.sum(lam * counts[:, None])), np.zeros((P, R))
        for i, pools, lo_r, hi_r, gains, theta in jobs:
            prices = (money_rate[pools][None, :] + lam[pools, lo_r:hi_r].T) * sizes[i]
            value, chosen = _cheapest_completion(gains, prices, theta, picks=True)
            if not math.isfinite(value):
                return math.inf, lam
            total += value
            if chosen is not None:
                rr_ = np.flatnonzero(chosen >= 0)
                np.add.at(usage, (pools[chosen[rr_]], lo_r + rr_), sizes[i])
        if not math.isfinite(best) or total > best + 1e-12 * max(1.0, abs(best)):
            best, best_lam, stale = total, lam.copy(), 0
        else:
            stale += 1
            if stale >= 3:
                alpha, stale = alpha / 2, 0
        g = usage - counts[:, None]
        g = np.where((lam <= 0) & (g < 0), 0.0, g)
        norm = float(np.sum(g * g))
        if norm == 0 or alpha < 1e-4 or (seconds is not None and time.perf_counter() - started > seconds):
            break
        target = upper if upper is not None and upper > total else 1.05 * max(total, 1e-12)
        lam = np.maximum(0.0, lam + alpha * (target - total) / norm * g)
    return best, best_lam


def job_floors(instance: Instance, *, watch_deadline: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per job, alone on the cluster: the earliest completion round and the least money to complete.

    Capacity is ignored (the other jobs absent) and migration losses are
    dropped (``mu_i >= 0`` only lowers progress), so both relax job ``i``'s part
    of any feasible schedule: ``t_i >= earliest_i`` and ``money_i >= cheapest_i``.
    ``earliest_i`` is the first round ``r >= a_i`` with
    ``sum_{a_i <= r' <= r} max_c u_{i,c,r'} s_i >= theta_i`` (``R``: never by
    ``D_i``); ``cheapest_i`` the least ``sum b_c h s_i`` over at most one fitting
    pool per round of ``a_i .. D_i`` reaching ``theta_i``
    (:func:`_cheapest_completion`; ``inf``: unreachable).  Reference: a
    Lagrangian relaxation of the capacity rows at multipliers 0
    (Fisher 1981, Management Science 27(1)).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", base_price=2.0)], [lo.Agent("A", work=1.5)], [lo.Edge("A", "g", 1.0)], rounds=3)
    >>> [v.tolist() for v in job_floors(inst)]
    [[1], [4.0]]
    """
    n, R = instance.n_agents, instance.rounds
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    counts, money_rate = instance.counts, instance.base_prices * instance.round_hours
    earliest = np.full(n, R, dtype=np.int64)
    cheapest = np.full(n, math.inf)
    by_agent: list[list[int]] = [[] for _ in range(n)]
    for e, i in enumerate(instance.edge_agent.tolist()):
        by_agent[i].append(e)
    for i, agent in enumerate(instance.agents):
        if watch_deadline and i % 256 == 0:
            check_deadline(f"while bounding job {i} of {n} alone")
        theta = float(completion_threshold(work[i]))
        if theta <= 0:
            earliest[i], cheapest[i] = agent.arrival, 0.0
            continue
        edges = [e for e in by_agent[i] if 0 < sizes[i] <= counts[instance.edge_pool[e]]]
        lo_r, hi_r = agent.arrival, int(last[i]) + 1
        if not edges or hi_r <= lo_r:
            continue
        gains = (instance.edge_utility[edges, lo_r:hi_r] * sizes[i]).T
        best = np.max(np.maximum(gains, 0.0), axis=1).cumsum()
        hit = np.flatnonzero(best >= theta)
        if hit.size:
            earliest[i] = lo_r + int(hit[0])
            cheapest[i] = _cheapest_completion(gains, money_rate[instance.edge_pool[edges]] * sizes[i], theta)
    return earliest, cheapest


def floor_bound(instance: Instance, objective: str, *, watch_deadline: bool = True) -> float:
    """A bound on the optimum from :func:`job_floors`: each job alone, capacity and migration losses relaxed.

    ``cost``: ``sum_i cheapest_i`` (lower); ``completion``:
    ``sum_i w_i (earliest_i + 1)`` (lower); ``work``: ``sum_i w_i W_i`` over the
    jobs with ``earliest_i <= D_i`` (upper).  ``inf`` when a job that must
    complete cannot.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", base_price=2.0)], [lo.Agent("A", work=1.5)], [lo.Edge("A", "g", 1.0)], rounds=3)
    >>> floor_bound(inst, "cost"), floor_bound(inst, "completion"), floor_bound(inst, "work")
    (4.0, 2.0, 1.5)
    """
    earliest, cheapest = job_floors(instance, watch_deadline=watch_deadline)
    if objective == "cost":
        return float(cheapest.sum())
    reach = earliest <= instance.last_rounds
    if objective == "completion":
        return float(np.dot(instance.weights, earliest + 1.0)) if reach.all() else math.inf
    return float(np.dot(instance.weights[reach], job_work(instance)[reach]))


def build_migration(instance: Instance, *, objective: str = "cost", allow_migration: bool = True,
                    state: WindowState | None = None, tight: bool = True, floor_rows: bool = False, **_ignored):
    """Declare the time-expanded model; returns ``(model, allocation columns)``.

    Blocks: variables ``x z y m f q p``; constraints ``capacity demand gang one_pool
    state_run state_keep state_move state_one mig_lower mig_run mig_started
    mig_same complete monotone stop floor resume credit pin_run pin_keep pin_one
    pin_work`` (see ``models/migration.md``; ``p`` and the ``pin_*`` rows are empty
    unless ``allow_migration`` is false, :func:`_add_pinning`).
    The bounds ``f_{i,r} = 0`` for ``r < earliest_i`` come from
    :func:`job_floors`, and so do the rows ``floor`` (per job under ``cost``:
    its money ``>= cheapest_i``) when ``floor_rows`` (off by default: they
    lift the LP bound but, measured, stall HiGHS's search for incumbents;
    ``floor_bound`` certifies the same bound after the solve);
    ``q``, ``resume`` and ``credit`` are empty unless ``state`` (a
    rolling-horizon window, :class:`WindowState`) is given.  ``tight=False``
    leaves out ``floor`` and the fixing (the formulation before them, kept to
    measure what it buys).
    """
    objective = _check_objective(objective)
    n, R, E = instance.n_agents, instance.rounds, instance.n_edges
    ea, ep = instance.edge_agent, instance.edge_pool
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    mu = np.array([a.migration_cost for a in instance.agents], dtype=np.float64)
    rr = np.arange(R)
    if tight:
        earliest, cheapest = job_floors(instance)
        if not floor_rows:
            cheapest = np.full(n, np.inf)
    else:
        earliest, cheapest = np.zeros(n, dtype=np.int64), np.full(n, np.inf)
    if state is not None and objective != "cost":
        raise InputError("a rolling-horizon window is defined for the cost objective only", path="option strategy")
    required = np.ones(n, dtype=bool) if state is None else np.asarray(state.required, dtype=bool)
    initial = np.full(n, -1, dtype=np.int64) if state is None else np.asarray(state.initial_pool, dtype=np.int64)
    started = initial >= 0
    model = LinearModel("migration", sense="max" if objective == "work" else "min")
    columns = add_allocation(model, instance, integral=True)
    x = columns.block
    er_round = np.tile(rr, E)  # round of column e * R + r
    er_agent = np.repeat(ea, R)
    in_window = (er_round >= arrival[er_agent]) & (er_round <= last[er_agent]) & (sizes[er_agent] > 0)
    z = model.add_variables("z", E * R, upper=in_window.astype(float), integer=True,
                            description="1 if job i runs on pool c in round r")
    y = model.add_variables("y", E * R, upper=1.0, integer=True,
                            description="1 if job i's checkpoint is on pool c after round r (the pool it last ran on)")
    m_upper = np.ones(n * R) if allow_migration else np.zeros(n * R)
    m_upper[rr.size * np.arange(n)] = 0.0  # no migration in round 0 (unless the job resumes from a checkpoint)
    if allow_migration:
        m_upper[rr.size * np.flatnonzero(started)] = 1.0
    m = model.add_variables("m", n * R, upper=m_upper, integer=True, description="1 if job i migrates in round r")
    # f is 0 before the job could complete even alone on the cluster (earliest_i): a valid fixing.
    f_upper = (np.tile(rr, n) >= np.repeat(np.maximum(arrival, earliest), R)).astype(float)
    f_lower = np.zeros(n * R)
    if objective != "work":
        f_lower[(np.arange(n) * R + last)[required]] = 1.0  # every job completes by its deadline
    f = model.add_variables("f", n * R, lower=f_lower, upper=f_upper, integer=True,
                            description="1 if job i has completed by the end of round r")
    # Credited progress of the window's jobs that need not complete (empty outside a rolling window).
    credited = np.flatnonzero(~required) if state is not None else np.zeros(0, dtype=np.int64)
    q = model.add_variables("q", credited.size, upper=completion_threshold(work[credited]),
                            description="progress credited to a job that may carry its work past the window")

    def zc(e, r):
        return z.start + e * R + r

    def yc(e, r):
        return y.start + e * R + r

    def ac(block, i, r):
        return block.start + i * R + r

    ones = lambda k: np.ones(k)  # noqa: E731
    e_r = np.arange(E * R)
    e_of, r_of = np.repeat(np.arange(E), R), np.tile(rr, E)
    model.add_constraints("gang", rows=np.concatenate([e_r, e_r]), cols=np.concatenate([x.start + e_r, z.start + e_r]),
                          coefs=np.concatenate([ones(E * R), -sizes[er_agent].astype(float)]),
                          lower=0.0, upper=0.0, n_rows=E * R, description="x[i,c,r] = s_i z[i,c,r]")
    agent_round = ea[e_of] * R + r_of  # row (i, r) of each (e, r) column
    model.add_constraints("one_pool", rows=agent_round, cols=zc(e_of, r_of), coefs=ones(E * R), upper=1.0,
                          n_rows=n * R, description="sum_c z[i,c,r] <= 1")
    model.add_constraints("state_run", rows=np.concatenate([e_r, e_r]), cols=np.concatenate([yc(e_of, r_of), zc(e_of, r_of)]),
                          coefs=np.concatenate([ones(E * R), -ones(E * R)]), lower=0.0, n_rows=E * R,
                          description="y[i,c,r] >= z[i,c,r]")
    # Pairs (e, e2) of edges of the same agent, for the rows that sum over the agent's pools.
    same_e, same_e2 = np.nonzero(ea[:, None] == ea[None, :])
    later = np.arange(1, R)
    K = R - 1  # rows per edge (or agent) of the blocks defined for r >= 1
    pe, pr = np.repeat(same_e, K), np.tile(later, same_e.size)
    pe2 = np.repeat(same_e2, K)
    le, lr = np.repeat(np.arange(E), K), np.tile(later, E)
    lrow = le * K + (lr - 1)
    prow = pe * K + (pr - 1)
    model.add_constraints(
        "state_keep",
        rows=np.concatenate([lrow, lrow, prow]),
        cols=np.concatenate([yc(le, lr), yc(le, lr - 1), zc(pe2, pr)]),
        coefs=np.concatenate([ones(lrow.size), -ones(lrow.size), ones(prow.size)]),
        lower=0.0, n_rows=E * K, description="y[i,c,r] >= y[i,c,r-1] - sum_c' z[i,c',r]  (r >= 1)",
    )
    prev = r_of >= 1
    model.add_constraints(
        "state_move",
        rows=np.concatenate([e_r, e_r[prev], e_r]),
        cols=np.concatenate([yc(e_of, r_of), yc(e_of[prev], r_of[prev] - 1), zc(e_of, r_of)]),
        coefs=np.concatenate([ones(E * R), -ones(int(prev.sum())), -ones(E * R)]),
        upper=0.0, n_rows=E * R, description="y[i,c,r] <= y[i,c,r-1] + z[i,c,r]",
    )
    # A job resuming from a checkpoint on pool c0 (a rolling window): y[i,c0,-1] = 1.
    home = np.flatnonzero(started[ea] & (ep == initial[ea]))  # the edge of each started job's checkpoint pool
    model.constraints["state_move"].upper[home * R] = 1.0
    away = np.flatnonzero(started[ea] & (ep != initial[ea]))
    k_away, k_home = away.size, home.size
    # The third family also needs every z[i,c,0] of the job: one coefficient per edge of a started job.
    mine0 = np.flatnonzero(started[ea])
    slot = np.full(n, -1, dtype=np.int64)
    slot[ea[home]] = np.arange(k_home)
    model.add_constraints(
        "resume",
        rows=np.concatenate([np.arange(k_away), np.arange(k_away), k_away + np.arange(k_home),
                             k_away + np.arange(k_home), k_away + k_home + np.arange(k_home),
                             k_away + k_home + slot[ea[mine0]]]),
        cols=np.concatenate([m.start + ea[away] * R, zc(away, 0), m.start + ea[home] * R, zc(home, 0),
                             yc(home, 0), zc(mine0, 0)]),
        coefs=np.concatenate([ones(k_away), -ones(k_away), ones(k_home), ones(k_home), ones(k_home),
                              ones(mine0.size)]),
        lower=np.concatenate([np.zeros(k_away), np.full(k_home, -np.inf), np.ones(k_home)]),
        upper=np.concatenate([np.full(k_away, np.inf), np.ones(k_home), np.full(k_home, np.inf)]),
        n_rows=k_away + 2 * k_home,
        description="checkpoint on c0 when the window opens: m[i,0] >= z[i,c,0] (c != c0); "
                    "m[i,0] + z[i,c0,0] <= 1; y[i,c0,0] + sum_c z[i,c,0] >= 1",
    )
    model.add_constraints("state_one", rows=agent_round, cols=yc(e_of, r_of), coefs=ones(E * R), upper=1.0,
                          n_rows=n * R, description="sum_c y[i,c,r] <= 1")
    other = pe != pe2
    model.add_constraints(
        "mig_lower",
        rows=np.concatenate([lrow, lrow, prow[other]]),
        cols=np.concatenate([ac(m, ea[le], lr), zc(le, lr), yc(pe2[other], pr[other] - 1)]),
        coefs=np.concatenate([ones(lrow.size), -ones(lrow.size), -ones(int(other.sum()))]),
        lower=-1.0, n_rows=E * K, description="m[i,r] >= z[i,c,r] + sum_{c' != c} y[i,c',r-1] - 1  (r >= 1)",
    )
    a_r = np.arange(n * R)
    model.add_constraints("mig_run", rows=np.concatenate([a_r, agent_round]),
                          cols=np.concatenate([m.start + a_r, zc(e_of, r_of)]),
                          coefs=np.concatenate([ones(n * R), -ones(E * R)]), upper=0.0, n_rows=n * R,
                          description="m[i,r] <= sum_c z[i,c,r]")
    ai, ar = np.repeat(np.arange(n), K), np.tile(later, n)
    arow = ai * K + (ar - 1)
    lrow_agent = ea[le] * K + (lr - 1)
    model.add_constraints("mig_started", rows=np.concatenate([arow, lrow_agent]),
                          cols=np.concatenate([ac(m, ai, ar), yc(le, lr - 1)]),
                          coefs=np.concatenate([ones(arow.size), -ones(lrow.size)]), upper=0.0, n_rows=n * K,
                          description="m[i,r] <= sum_c y[i,c,r-1]  (r >= 1)")
    model.add_constraints("mig_same", rows=np.concatenate([lrow, lrow, lrow]),
                          cols=np.concatenate([ac(m, ea[le], lr), zc(le, lr), yc(le, lr - 1)]),
                          coefs=ones(3 * lrow.size), upper=2.0, n_rows=E * K,
                          description="m[i,r] + z[i,c,r] + y[i,c,r-1] <= 2  (r >= 1)")
    # complete: sum u s z - mu sum m - theta f[D] >= 0 per job, in integers where a small power of ten makes it so.
    progress = instance.edge_utility.reshape(-1) * sizes[er_agent]
    row_progress = np.empty(E * R)
    row_mu, row_theta = np.empty(n), np.empty(n)
    # Each job's columns by one stable sort, not a scan of every column per job (O(n E R) at scale).
    by_job = np.argsort(er_agent, kind="stable")
    bounds = np.searchsorted(er_agent[by_job], np.arange(n + 1))
    for i in range(n):
        if i % 256 == 0:
            check_deadline(f"while building the migration model (job {i} of {n})")
        mine = by_job[bounds[i]:bounds[i + 1]]
        row_progress[mine], row_mu[i], row_theta[i] = _completion_rows(progress[mine], float(mu[i]), float(work[i]))
    model.add_constraints(
        "complete",
        rows=np.concatenate([er_agent, np.repeat(np.arange(n), R), np.arange(n)]),
        cols=np.concatenate([z.start + e_r, m.start + a_r, ac(f, np.arange(n), last)]),
        coefs=np.concatenate([row_progress, -np.repeat(row_mu, R), -row_theta]),
        lower=0.0, n_rows=n,
        description="sum_{c,r} u[i,c,r] s_i z[i,c,r] - mu_i sum_r m[i,r] >= theta_i f[i,D_i], theta_i = W_i - 1e-6 max(1, W_i)",
    )
    model.add_constraints("monotone", rows=np.concatenate([arow, arow]),
                          cols=np.concatenate([ac(f, ai, ar), ac(f, ai, ar - 1)]),
                          coefs=np.concatenate([ones(arow.size), -ones(arow.size)]), lower=0.0, n_rows=n * K,
                          description="f[i,r] >= f[i,r-1]  (r >= 1)")
    model.add_constraints("stop", rows=np.concatenate([lrow_agent, arow]),
                          cols=np.concatenate([zc(le, lr), ac(f, ai, ar - 1)]),
                          coefs=ones(lrow.size + arow.size), upper=1.0, n_rows=n * K,
                          description="sum_c z[i,c,r] + f[i,r-1] <= 1: no run after completion  (r >= 1)")
    # floor: each job pays at least what it would alone (cost; rows of jobs that need not complete are free).
    # The row is stored divided by h (and scaled to integers when a power of ten makes b_c s_i integral, the
    # right-hand side then rounded up: the left side is integral), so an integer route (CP-SAT) keeps it exact.
    floored = np.flatnonzero(required & np.isfinite(cheapest) & (cheapest > 0)) if objective == "cost" else np.zeros(0, dtype=np.int64)
    on_floor = np.flatnonzero(np.isin(er_agent, floored))
    rate = instance.base_prices[np.repeat(ep, R)][on_floor] * sizes[er_agent[on_floor]]
    level = cheapest[floored] / instance.round_hours
    scale = _row_scale(rate) if rate.size else 1.0
    if scale is None:
        floor_lower = level - 1e-9 * np.maximum(1.0, np.abs(level))
    else:
        rate = np.round(rate * scale)
        floor_lower = np.ceil(level * scale - 1e-9 * np.maximum(1.0, np.abs(level * scale)))
    slot_f = np.full(n, -1, dtype=np.int64)
    slot_f[floored] = np.arange(floored.size)
    model.add_constraints("floor", rows=slot_f[er_agent[on_floor]], cols=z.start + on_floor, coefs=rate,
                          lower=floor_lower, n_rows=floored.size,
                          description="sum_{c,r} b_c h s_i z[i,c,r] >= cheapest_i (cost objective; stored divided by h)")
    # credit: q_i <= the window's progress of job i (unscaled row).
    cj = np.full(n, -1, dtype=np.int64)
    cj[credited] = np.arange(credited.size)
    on_z = np.flatnonzero(cj[er_agent] >= 0)
    on_m = np.flatnonzero(np.repeat(cj, R) >= 0)
    model.add_constraints(
        "credit",
        rows=np.concatenate([np.arange(credited.size), cj[er_agent[on_z]], np.repeat(cj, R)[on_m]]),
        cols=np.concatenate([q.start + np.arange(credited.size), z.start + on_z, m.start + on_m]),
        coefs=np.concatenate([ones(credited.size), -progress[on_z], np.repeat(mu, R)[on_m]]),
        upper=0.0, n_rows=credited.size,
        description="q_i <= sum_{c,r} u[i,c,r] s_i z[i,c,r] - mu_i sum_r m[i,r]  (rolling window)",
    )
    _add_pinning(model, instance, z, y, f, started, initial,
                 (row_progress, row_theta) if state is None and not allow_migration else None, not allow_migration)
    weights = instance.weights
    if objective == "work":
        coefs = np.zeros(n * R)
        coefs[np.arange(n) * R + last] = weights * work
        model.set_objective(f, coefs)
    elif objective == "completion":
        model.set_objective(f, -np.repeat(weights, R), offset=float(weights.sum() * (R + 1)))
    else:
        model.set_objective(x, instance.base_prices[np.repeat(ep, R)] * instance.round_hours)
        if state is not None:
            model.set_objective(q, -np.asarray(state.credit, dtype=float)[credited])
            bonus = np.zeros(n * R)
            bonus[(np.arange(n) * R + last)[credited]] = -np.asarray(state.bonus, dtype=float)[credited]
            model.set_objective(f, bonus)
    return model, columns


def _add_pinning(model: LinearModel, instance: Instance, z, y, f, started: np.ndarray, initial: np.ndarray,
                 completion: tuple[np.ndarray, np.ndarray] | None, pinned: bool) -> None:
    """Without migration a job runs on one pool for good: ``p_{i,c}`` picks it (blocks empty when ``pinned`` is false).

    Rows ``pin_run`` (``z_{i,c,r} <= p_{i,c}``), ``pin_keep`` (``y_{i,c,r} <= p_{i,c}``)
    and ``pin_one`` (``sum_c p_{i,c} <= 1``) hold for every schedule without a move
    (the pool of a job's runs and checkpoints never changes), and so does
    ``pin_work`` (``sum_r u_{i,c,r} s_i z_{i,c,r} >= theta_i (p_{i,c} + f_{i,D_i} - 1)``:
    a job that completes does all its work on its pool; stored in the scale of the
    job's ``complete`` row).  They cut off no ``migration_free`` schedule, only LP
    points that spread a job over several pools in different rounds, which
    ``mig_lower`` with ``m = 0`` forbids between consecutive rounds alone.  A job
    resuming from a checkpoint (a rolling window) is pinned to that pool; its
    ``pin_work`` row is left out there (``completion`` is None), the window's
    credit accounting its work instead.
    """
    E, R = (instance.n_edges if pinned else 0), instance.rounds
    ea, ep = instance.edge_agent[:E], instance.edge_pool[:E]
    p = model.add_variables("p", E, upper=np.where(started[ea] & (ep != initial[ea]), 0.0, 1.0), integer=True,
                            description="1 if job i runs on pool c (no migration)")
    e_r = np.arange(E * R)
    e_of = e_r // R
    for name, block, what in (("pin_run", z, "z"), ("pin_keep", y, "y")):
        model.add_constraints(name, rows=np.concatenate([e_r, e_r]), cols=np.concatenate([block.start + e_r, p.start + e_of]),
                              coefs=np.concatenate([np.ones(E * R), -np.ones(E * R)]), upper=0.0, n_rows=E * R,
                              description=f"{what}[i,c,r] <= p[i,c]")
    model.add_constraints("pin_one", rows=ea, cols=p.start + np.arange(E), coefs=np.ones(E), upper=1.0,
                          n_rows=instance.n_agents if pinned else 0, description="sum_c p[i,c] <= 1")
    # pin_work rows: one per edge when the completion rows are given, none otherwise.
    progress, theta = completion if completion is not None else (np.zeros(0), np.zeros(0))
    W = E if completion is not None else 0
    w_r, w_agent = e_r[:W * R], ea[:W]
    theta_e = theta[w_agent]
    model.add_constraints(
        "pin_work",
        rows=np.concatenate([w_r // R, np.arange(W), np.arange(W)]),
        cols=np.concatenate([z.start + w_r, p.start + np.arange(W), f.start + w_agent * R + instance.last_rounds[w_agent]]),
        coefs=np.concatenate([progress[:W * R], -theta_e, -theta_e]),
        lower=-theta_e, n_rows=W,
        description="sum_r u[i,c,r] s_i z[i,c,r] >= theta_i (p[i,c] + f[i,D_i] - 1)",
    )


def replay(instance: Instance, chosen: np.ndarray, *, tol: float = COMPLETION_TOL) -> tuple[np.ndarray, list[dict]]:
    """Replay a schedule: ``chosen[i, r]`` is the edge job ``i`` runs on in round ``r`` (-1: idle).

    Returns the schedule with every round after the job's completion dropped,
    and per job its progress, migrations (a pool other than the one it last ran
    on), completion round (the first round ``r >= a_i`` whose cumulative
    progress reaches ``W_i - tol max(1, W_i)``) and money (``b_c h s_i`` per
    round run).
    """
    sizes, work = job_sizes(instance), job_work(instance)
    util, ep, h = instance.edge_utility, instance.edge_pool, instance.round_hours
    kept = np.full(chosen.shape, -1, dtype=np.int64)
    stats = []
    for i, agent in enumerate(instance.agents):
        done, last_pool, when, moves, money = 0.0, None, None, [], 0.0
        for r in range(agent.arrival, instance.rounds):
            e = int(chosen[i, r])
            if e >= 0 and when is None:
                pool = int(ep[e])
                if last_pool is not None and pool != last_pool:
                    moves.append(r)
                    done -= agent.migration_cost
                done += util[e, r] * sizes[i]
                money += instance.pools[pool].base_price * h * sizes[i]
                last_pool, kept[i, r] = pool, e
            if when is None and done >= work[i] - tol * max(1.0, work[i]):
                when = r
        stats.append({"work": float(work[i]), "work_done": float(done), "completion_round": when,
                      "migrations": len(moves), "migration_rounds": moves, "money": money})
    return kept, stats


def schedule_columns(model: LinearModel, instance: Instance, kept: np.ndarray, stats: list[dict]) -> np.ndarray | None:
    """The column vector of a replayed schedule in the model :func:`build_migration` declared; None if it violates a row.

    ``z_{i,c,r} = 1`` where the job runs, ``x = s_i z``, ``y`` the pool it last
    ran on, ``m`` its migration rounds, ``f_{i,r} = 1`` from its completion round
    on, and (``migration_free``) ``p_{i,c} = 1`` on the pool it ran on.  The vector is checked against every bound and row of ``model`` (within
    ``1e-6``) before it is returned, so a start that the model would reject
    (a baseline moving a job under ``migration_free``, a job ending with negative
    progress under ``work``) is refused rather than passed on.
    """
    E, R, n = instance.n_edges, instance.rounds, instance.n_agents
    values = np.zeros(model.n_cols)
    sizes = job_sizes(instance)
    runs = np.zeros((E, R))
    state = np.zeros((E, R))
    moves, done = np.zeros((n, R)), np.zeros((n, R))
    for i in range(n):
        home = -1
        for r in range(R):
            e = int(kept[i, r])
            if e >= 0:
                runs[e, r] = 1.0
                home = e
            if home >= 0:
                state[home, r] = 1.0
        for r in stats[i]["migration_rounds"]:
            moves[i, r] = 1.0
        t = stats[i]["completion_round"]
        if t is not None:
            done[i, t:] = 1.0
    values[model.variables["z"].slice] = runs.reshape(-1)
    values[model.variables["x"].slice] = (runs * sizes[instance.edge_agent][:, None]).reshape(-1)
    values[model.variables["y"].slice] = state.reshape(-1)
    values[model.variables["m"].slice] = moves.reshape(-1)
    values[model.variables["f"].slice] = done.reshape(-1)
    pin = model.variables.get("p")
    if pin is not None and pin.size == E:  # migration_free: the pool of the job's runs and checkpoint
        values[pin.slice] = (state.max(axis=1, initial=0.0) > 0).astype(float)
    return values if model.max_violation(values) <= 1e-6 else None


def baseline_starts(instance: Instance, objective: str, model: LinearModel) -> list[tuple[str, float, np.ndarray]]:
    """Feasible starts for ``model``: ``(name, objective, columns)``, best first (empty when none fits).

    The start is the greedy schedule of
    :func:`laissez_opt.exact.migration_rolling.greedy_schedule` (jobs by
    deadline, then in order; each stays on the pool of its checkpoint when it
    has room, else takes the free fitting pool of least money per unit of work,
    the rule of ``fcfs_static`` under ``cost``), replayed (:func:`replay`),
    scored (:func:`objective_value`) and converted by
    :func:`schedule_columns`, which checks it against every row of the model.
    The baselines ``fcfs_static`` and ``myopic`` themselves live in the
    heuristics layer, which the exact layer does not import.  Under ``work``
    the empty schedule is the start instead (see :func:`solve_migration`).
    """
    from .migration_rolling import greedy_schedule

    if objective == "work":
        return []
    found = greedy_schedule(instance)
    if found is None:
        return []
    kept, stats = found
    value = objective_value(instance, stats, objective)
    columns = None if value is None else schedule_columns(model, instance, kept, stats)
    return [] if columns is None else [("greedy", value, columns)]


def objective_value(instance: Instance, stats: list[dict], objective: str) -> float | None:
    """The objective of replayed ``stats``; None when ``completion``/``cost`` leave a job unfinished."""
    last = instance.last_rounds
    if objective == "work":
        return float(sum(a.weight * s["work"] for a, s, d in zip(instance.agents, stats, last)
                         if s["completion_round"] is not None and s["completion_round"] <= d))
    if any(s["completion_round"] is None or s["completion_round"] > d for s, d in zip(stats, last)):
        return None
    if objective == "completion":
        return float(sum(a.weight * (s["completion_round"] + 1) for a, s in zip(instance.agents, stats)))
    return float(sum(s["money"] for s in stats))


def schedule_result(instance: Instance, method: str, kept: np.ndarray, stats: list[dict], objective: str, **fields) -> Result:
    """A :class:`Result` for a replayed schedule: allocation, utilities, money as payments, details, metrics."""
    sizes = job_sizes(instance)
    amounts = np.zeros((instance.n_edges, instance.rounds))
    rows, rounds = np.nonzero(kept >= 0)
    amounts[kept[rows, rounds], rounds] = sizes[rows]
    utilities = edge_utilities(instance, amounts)
    names = [p.id for p in instance.pools]
    ep = instance.edge_pool
    schedule = {a.id: [None if e < 0 else names[ep[e]] for e in kept[i].tolist()] for i, a in enumerate(instance.agents)}
    h = instance.round_hours
    for s in stats:
        t = s["completion_round"]
        s["completion_hours"] = None if t is None else (t + 1) * h
    value = objective_value(instance, stats, objective)
    finished = all(s["completion_round"] is not None for s in stats)
    totals = {
        "money": float(sum(s["money"] for s in stats)),
        "migrations": int(sum(s["migrations"] for s in stats)),
        "migration_loss": float(sum(a.migration_cost * s["migrations"] for a, s in zip(instance.agents, stats))),
        "completed_weighted_work": objective_value(instance, stats, "work"),
        "weighted_completion": objective_value(instance, stats, "completion") if finished else None,
    }
    details = {"objective": objective, "round_hours": h, "schedule": schedule,
               "agents": {a.id: s for a, s in zip(instance.agents, stats)}, "totals": totals}
    metrics = {k: v for k, v in totals.items() if v is not None}
    params = fields.pop("params", {})
    params["objective"] = objective
    return Result(instance=instance.name, method=method, objective=value,
                  allocation=allocation_columns(instance, amounts),
                  utilities=agent_values(instance, utilities),
                  payments={a.id: s["money"] for a, s in zip(instance.agents, stats)},
                  metrics=metrics, details=details, params=params, amounts=amounts, mode="integral", **fields)


def obstacles(instance: Instance, objective: str) -> list[str]:
    """Jobs that cannot finish by their deadline even alone (``completion`` and ``cost`` need all to finish)."""
    if objective == "work":
        return []
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    best = np.zeros((instance.n_agents, instance.rounds))
    fits = sizes[instance.edge_agent] <= instance.counts[instance.edge_pool]
    for e in np.flatnonzero(fits).tolist():
        i = instance.edge_agent[e]
        best[i] = np.maximum(best[i], instance.edge_utility[e] * sizes[i])
    out = []
    for i, agent in enumerate(instance.agents):
        most = float(best[i, agent.arrival : last[i] + 1].sum())
        if most < completion_threshold(work[i]):
            out.append(f"job {agent.id!r} can do at most {most:g} of its work {work[i]:g} by round {last[i]}, even alone")
    return out


def solve_migration(
    instance: Instance,
    *,
    objective: str = "cost",
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    allow_migration: bool = True,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
    method: str = "migration",
    strategy: str = "auto",
    window: int = 4,
    overlap: int = 2,
    starts: bool = True,
) -> Result:
    """Solve the migration-aware schedule; see the module docstring.

    ``strategy`` (:func:`pick_strategy`): ``monolithic`` solves the whole
    horizon (tightened by :func:`job_floors`, the greedy schedule as the
    incumbent when ``starts``; the bound is the better of the solver's and
    :func:`floor_bound`); ``rolling`` hands over to
    :func:`laissez_opt.exact.migration_rolling.solve_rolling` (``window``,
    ``overlap``).  ``details`` holds per job the pool of each round
    (``schedule``), its migrations, completion round and money paid;
    ``payments`` the money.
    """
    objective = _check_objective(objective)
    if not (isinstance(overlap, int) and isinstance(window, int) and 0 <= overlap < window):
        raise InputError(f"overlap must be less than window, got overlap {overlap!r} and window {window!r}",
                         path="option overlap")
    chosen_strategy = pick_strategy(instance, objective, strategy)
    params = {"time_limit": time_limit, "via": via, "allow_migration": allow_migration, "objective": objective,
              "strategy": chosen_strategy}
    reasons = obstacles(instance, objective)
    if reasons:
        return Result(instance=instance.name, method=method, status="infeasible", solver=solver, route="pre-check",
                      message="; ".join(reasons), params=params)
    if chosen_strategy == "colgen" and not allow_migration:
        chosen_strategy = params["strategy"] = "rolling"  # column generation's schedules may move; rolling may not
    if chosen_strategy == "colgen":
        from .migration_colgen import solve_colgen

        try:
            return solve_colgen(instance, time_limit=time_limit, threads=threads, mip_gap=mip_gap, method=method,
                                params=params)
        except NoSolutionError:
            chosen_strategy = params["strategy"] = "rolling"  # no candidate finished every job: roll instead
    if chosen_strategy == "rolling":
        from .migration_rolling import solve_rolling

        params.update(window=window, overlap=overlap)
        try:
            return solve_rolling(instance, window=window, overlap=overlap, time_limit=time_limit, threads=threads,
                                 mip_gap=mip_gap, allow_migration=allow_migration, method=method, params=params)
        except NoSolutionError as exc:
            # Windows can paint themselves into a corner (capacity left too late): solve the whole horizon instead.
            fallback = f"{exc}; solved the whole horizon instead"
            params["strategy"] = "monolithic"
    else:
        fallback = ""
    # cost on the HiGHS matrix route (the one column generation uses): column generation first (certified bound,
    # incumbent); proven there, or its prices fix runs to 0.
    pre = None
    if (objective == "cost" and allow_migration and starts and not fallback and solver == "highs" and via == "direct"
            and backend is None):
        pre = _colgen_prestep(instance, time_limit, threads)
        if pre is not None and pre["gap"] <= max(mip_gap, 1e-9):
            kept, stats = pre["replay"]
            result = schedule_result(instance, method, kept, stats, objective, status="optimal", params=params,
                                     message="proven optimal: the incumbent meets the bound of column generation "
                                             "(and of the reduced-cost enumeration of schedules, when run)",
                                     solver="highs", route="column generation and price-and-branch",
                                     solver_status="", timing={"build_s": 0.0, "solve_s": pre["seconds"]})
            result.bound, result.gap = pre["bound"], relative_gap(result.objective, pre["bound"])
            result.details["enumeration"] = pre["enumeration"]
            return result
    try:
        model, columns = build_migration(instance, objective=objective, allow_migration=allow_migration)
    except TimeLimitReached as stop:
        if pre is not None:
            # Column generation's incumbent stands, with its certified bound.
            kept, stats = pre["replay"]
            result = schedule_result(instance, method, kept, stats, objective, status="time_limit", params=params,
                                     message=f"{stop}; the column-generation incumbent stands", solver="highs",
                                     route="column generation and price-and-branch", solver_status="",
                                     timing={"build_s": 0.0, "solve_s": pre["seconds"]})
            result.bound, result.gap = pre["bound"], relative_gap(result.objective, pre["bound"])
            return result
        if objective != "work":
            raise
        # Nothing has to finish under the work objective: the empty schedule stands, bounded by all the work.
        idle = np.full((instance.n_agents, instance.rounds), -1, dtype=np.int64)
        kept, stats = replay(instance, idle)
        result = schedule_result(instance, method, kept, stats, objective, status="time_limit", params=params,
                                 message=f"{stop}; the empty schedule is the incumbent", solver=solver,
                                 route="none (the model was not built in time)", solver_status="",
                                 timing={"build_s": 0.0, "solve_s": 0.0})
        result.bound = float(np.dot(instance.weights, job_work(instance)))
        result.gap = relative_gap(result.objective, result.bound)
        return result
    # Under the work objective nothing is required to finish, so the empty schedule (every column 0)
    # is feasible: the incumbent should the time limit stop the solver before it finds one.
    start = np.zeros(model.n_cols) if objective == "work" else None
    found = baseline_starts(instance, objective, model) if starts else []
    if found:
        start = found[0][2]
    if pre is not None:
        z_block = model.variables["z"]
        z_block.upper = np.where(pre["fixed"].reshape(-1), 0.0, z_block.upper)
        kept0, stats0 = pre["replay"]
        start = schedule_columns(model, instance, kept0, stats0)
    solution = solve_model(model, solver=solver, via=via, time_limit=time_limit, threads=threads, mip_gap=mip_gap,
                           verbose=verbose, backend=backend, start=start)
    common = dict(solver=solution.solver, route=solution.route, solver_status=solution.solver_status,
                  timing={"build_s": solution.build_s, "solve_s": solution.solve_s})
    if pre is not None:
        return _after_fixing(instance, method, model, solution, pre, params, mip_gap, common)
    if solution.status == "infeasible":
        what = "finishes every job by its deadline" + ("" if allow_migration else " without migrating")
        return Result(instance=instance.name, method=method, status="infeasible", params=params,
                      message=(fallback + "; " if fallback else "") + f"no schedule {what} within the pool capacities",
                      **common)
    E, R = instance.n_edges, instance.rounds
    runs = np.round(solution.block(model, "z")).reshape(E, R) > 0.5
    chosen = np.full((instance.n_agents, R), -1, dtype=np.int64)
    edges, rounds = np.nonzero(runs)
    chosen[instance.edge_agent[edges], rounds] = edges
    kept, stats = replay(instance, chosen)
    status, message = solution.status, solution.message
    value = objective_value(instance, stats, objective)
    if value is None:
        # Only a solver's feasibility tolerance lets a schedule pass the complete row yet fall short in the replay.
        short = [a.id for a, s, d in zip(instance.agents, stats, instance.last_rounds.tolist())
                 if s["completion_round"] is None or s["completion_round"] > d]
        raise NoSolutionError(
            f"{solution.route} returned a schedule in which jobs {', '.join(map(repr, short))} fall short of their "
            f"work by less than the solver's feasibility tolerance; no schedule meeting every deadline was verified")
    replayed_worse = status == "optimal" and _worse(value, solution.objective, objective)
    if replayed_worse:
        # The solver proved its own value; the replayed schedule is worth less (a row met only within the
        # solver's tolerance), so its optimality rests on the gap to the bound below.
        status = "feasible"
        message = (message + "; " if message else "") + (
            f"the solver's optimum {solution.objective!r} replays to {value!r} (a completion met only within "
            "the solver's feasibility tolerance)")
    bound = solution.bound
    floor = floor_bound(instance, objective, watch_deadline=False)  # the run's time may be up: finish the report
    if bound is None or (floor < bound if objective == "work" else floor > bound):
        bound = floor
    bound = round_bound(bound, objective_unit(instance, objective), maximise=objective == "work")
    gap = relative_gap(value, bound)
    if status == "time_limit" and gap is not None and gap <= max(mip_gap, 1e-9):
        status = "optimal"
        message = (message + "; " if message else "") + "proven optimal: the incumbent meets the per-job floor bound"
    elif replayed_worse:
        # Optimal as every MIP result here is: within mip_gap of the proven bound (seen: 2.9101562781
        # replaying to 2.91015625, the brute-force optimum, a gap of 9.7e-9).
        proven = gap is not None and gap <= max(mip_gap, 1e-9)
        status = "optimal" if proven else "feasible"
        message += (f"; the replayed schedule is within {gap:.2g} of the bound: optimal to the MIP gap {mip_gap:g}"
                    if proven else "; not proven optimal")
    if fallback:
        message = fallback + ("; " + message if message else "")
    result = schedule_result(instance, method, kept, stats, objective, status=status, params=params,
                             message=message, **common)
    result.bound = bound
    result.gap = relative_gap(result.objective, bound)
    return result


#: Search nodes the reduced-cost enumeration of job schedules may visit before the whole-horizon solve.
ENUMERATION_CAP = 200000


def _colgen_prestep(instance: Instance, time_limit: float | None, threads: int | None) -> dict | None:
    """Column generation before the whole-horizon ``cost`` solve (:mod:`laissez_opt.exact.migration_colgen`).

    Gets 30 % of the time left; then, unless the incumbent meets the bound,
    :func:`~laissez_opt.exact.migration_colgen.exact_by_enumeration` gets 85 %
    of what is left (at most :data:`ENUMERATION_CAP` search nodes).  Returns the
    incumbent (``replay``, ``money``), the certified ``bound``, their ``gap``
    and the runs ``fixed`` to 0 (:func:`~laissez_opt.exact.migration_colgen.fixings`
    at the column-generation bound and the strict cutoff below the incumbent: no
    schedule cheaper than the incumbent uses them; computed only while a gap
    remains), the objective ``unit`` and the ``enumeration`` statistics; None
    when no candidate finishes every job.
    """
    from .migration_colgen import exact_by_enumeration, fixings, improve
    from .migration_rolling import greedy_schedule

    began = time.perf_counter()
    left = remaining(time_limit)
    found = greedy_schedule(instance)
    cg, schedule, money = improve(instance, seconds=None if left is None else 0.3 * left, threads=threads,
                                  seeds=[] if found is None else [found[0]])
    if schedule is None or not math.isfinite(cg.bound):
        return None
    kept, stats = replay(instance, schedule)
    unit, enumeration = objective_unit(instance, "cost"), {}
    bound = round_bound(cg.bound, unit)
    gap = relative_gap(money, bound)
    if gap is not None and gap > 1e-9:
        # Every schedule cheaper than the incumbent, enumerated by reduced cost and solved as a set-partitioning
        # programme (85 % of the time left): exact when the enumeration fits.
        room = remaining(time_limit)
        better, proven = exact_by_enumeration(instance, cg.lam, cg.bound, money, threads=threads, cap=ENUMERATION_CAP,
                                              time_limit=None if room is None else 0.85 * room, stats=enumeration)
        if proven is not None:
            bound = max(bound, round_bound(proven, unit))
        value = None if better is None else objective_value(instance, replay(instance, better)[1], "cost")
        if value is not None and value < money:
            schedule, money = better, value
        kept, stats = replay(instance, schedule)
        gap = relative_gap(money, bound)
    return {"replay": (kept, stats), "money": money, "bound": bound, "gap": gap,
            # Fixing is only needed when the whole-horizon model follows (not when the incumbent is proven here).
            "fixed": (fixings(instance, cg.lam, cg.bound, strict_cutoff(money, unit)) if gap is None or gap > 1e-9
                      else np.zeros((instance.n_edges, instance.rounds), dtype=bool)), "unit": unit,
            "enumeration": enumeration, "seconds": time.perf_counter() - began}


def _after_fixing(instance, method, model, solution, pre, params, mip_gap, common) -> Result:
    """The whole-horizon ``cost`` result when runs were fixed by reduced cost (``pre`` from :func:`_colgen_prestep`).

    The fixed model holds every schedule cheaper than the incumbent ``U``, so
    ``OPT >= min(U, B)`` for the solver's bound ``B`` on it (``B = inf`` when it
    is infeasible), and ``OPT >= L`` (column generation): the bound is
    ``max(L, min(U, B))``.  The answer is the cheaper of the solver's replayed
    schedule and the incumbent.
    """
    E, R = instance.n_edges, instance.rounds
    candidates = [(pre["money"], 1, *pre["replay"])]
    solver_bound = math.inf if solution.status == "infeasible" else solution.bound
    if solution.values is not None and solution.status != "infeasible":
        runs = np.round(solution.block(model, "z")).reshape(E, R) > 0.5
        chosen = np.full((instance.n_agents, R), -1, dtype=np.int64)
        edges, rounds = np.nonzero(runs)
        chosen[instance.edge_agent[edges], rounds] = edges
        kept, stats = replay(instance, chosen)
        value = objective_value(instance, stats, "cost")
        if value is not None:
            candidates.append((value, 0, kept, stats))
    value, _, kept, stats = min(candidates, key=lambda c: (c[0], c[1]))
    bound = pre["bound"]
    if solver_bound is not None:
        bound = max(bound, round_bound(min(pre["money"], solver_bound), pre["unit"]))
    gap = relative_gap(value, bound)
    status = "optimal" if gap is not None and gap <= max(mip_gap, 1e-9) else (
        "time_limit" if solution.status == "time_limit" else "feasible")
    message = (f"column generation bound {pre['bound']:.6g} and incumbent {pre['money']:.6g}; "
               f"{int(pre['fixed'].sum())} runs fixed to 0 by reduced cost; the fixed model: {solution.status}")
    if status == "optimal":
        message += "; proven optimal"
    result = schedule_result(instance, method, kept, stats, "cost", status=status, params=params, message=message,
                             **common)
    result.bound, result.gap = bound, relative_gap(result.objective, bound)
    result.details["enumeration"] = pre["enumeration"]
    return result


def _worse(value: float, reference: float, objective: str) -> bool:
    """Whether ``value`` is worse than ``reference`` beyond floating-point noise (``work`` is maximised)."""
    noise = 1e-9 * max(1.0, abs(reference))
    return value < reference - noise if objective == "work" else value > reference + noise


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The time-indexed model ``lo.build(instance, "migration", ...)`` exports."""
    return build_migration(instance, objective=options.get("objective", "cost"),
                           allow_migration=bool(options.get("allow_migration", True)))[0]


def _export_migration_free(instance: Instance, options: dict) -> LinearModel:
    """The model ``lo.build(instance, "migration_free", ...)`` exports: every ``m_{i,r}`` fixed to 0."""
    return build_migration(instance, objective=options.get("objective", "cost"), allow_migration=False)[0]


METHOD = Method(
    name="migration",
    kind="exact",
    objective="objective=cost (default): min sum b_c h x, every job done by D_i; work: max sum_i w_i W_i [done]; completion: min sum_i w_i C_i",
    solvers=("highs", "ortools"),
    fractional=False,
    summary="Migration-aware multi-round scheduling (time-indexed MIP with checkpoint-based migration cost).",
    run=solve_migration,
    options=MIGRATION_OPTIONS + (
        Option("allow_migration", "bool", True, "false forbids changing pool between rounds (the migration_free model)"),
    ),
    estimate=migration_size,
    build=_export_model,
)
