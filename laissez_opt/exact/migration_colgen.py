"""Column generation for the migration model (``cost`` objective): a strong certified bound and schedules.

The capacity rows ``sum_i x_{i,c,r} <= k_c`` are the only rows that couple the
jobs.  Dantzig-Wolfe decomposition writes the problem over each job's whole
schedules ``S`` (one fitting pool or idle in each round of ``a_i .. D_i``,
reaching ``theta_i``): the *master*

.. math::

    \\min \\sum_{i,S} \\mathrm{cost}_S\\, \\xi_{i,S}
    \\quad\\text{s.t.}\\quad \\sum_S \\xi_{i,S} = 1\\ (\\sigma_i),\\qquad
    \\sum_{i,S} s_i\\, [(c,r) \\in S]\\, \\xi_{i,S} \\le k_c\\ (\\pi_{c,r} \\le 0),\\qquad \\xi \\ge 0,

with ``cost_S = sum_{(c,r) in S} b_c h s_i``, is solved on a growing set of
columns (HiGHS, with duals).  *Pricing* job ``i`` at ``lambda = -pi`` is the
per-job dynamic programme of :func:`~laissez_opt.exact.migration._cheapest_completion`
with prices ``(b_c h + lambda_{c,r}) s_i`` and migration losses dropped
(``mu_i >= 0``: a relaxation).  Its value ``v_i(lambda)`` gives the
**certified bound**

.. math::

    L(\\lambda) = \\sum_i v_i(\\lambda) - \\sum_{c,r} \\lambda_{c,r} k_c
    \\;\\le\\; \\mathrm{OPT}\\qquad(\\lambda \\ge 0),

weak duality of the Lagrangian relaxation of capacity (every feasible
schedule pays ``sum_i cost_i + sum lambda (usage - k) <= sum_i cost_i``, and
each job's part is at least ``v_i``).  It holds for every ``lambda >= 0``
whatever the master's accuracy, so the bound never depends on the LP solver
being exact.  At convergence (no column of negative reduced cost) ``L`` equals
the master's LP value, the Lagrangian dual, which is at least both the LP
relaxation of the time-indexed model and the per-job floor
(:func:`~laissez_opt.exact.migration.floor_bound`, ``lambda = 0``).  Prices are
smoothed (Wentges 1997: ``lambda = a lambda_best + (1 - a) lambda_LP``) and
priced again at ``lambda_LP`` when the smoothed prices find no column.

Schedules: :func:`sequential_schedule` places the jobs one at a time (least
slack first), each on its cheapest schedule (at prices ``lambda``) among the
devices the earlier jobs left, a migration-aware check falling back to one
pool; the master restricted to the generated columns that keep their work
after migration losses is then solved as an integer programme
(price-and-branch) from the best such schedule.  Every schedule is replayed
on the whole instance (:func:`~laissez_opt.exact.migration.replay`).

Reference: Dantzig & Wolfe (1960), Operations Research 8(1); Desrosiers &
Luebbecke, "A primer in column generation" (2005); Wentges (1997),
International Transactions in Operational Research 4(2).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("cheap", count=1, base_price=1.0), lo.Pool("dear", count=2, base_price=3.0)],
...     [lo.Agent("A"), lo.Agent("B")], [lo.Edge(j, p, 1.0) for j in "AB" for p in ("cheap", "dear")], rounds=1)
>>> out = column_generation(inst)
>>> round(out.bound, 6), round(out.master, 6)  # both want the one cheap device: 1 + 3
(4.0, 4.0)
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import NoSolutionError
from ..instance import Instance
from ..limits import remaining
from ..modeling import LinearModel, solve_model
from ..modeling.solution import relative_gap
from ..result import Result
from .migration import _cheapest_completion, completion_threshold, job_sizes, job_work, objective_value, replay

__all__ = ["ColumnGeneration", "column_generation", "enumerate_columns", "exact_by_enumeration", "fixings", "improve",
           "master_schedule", "prune_dominated", "schedule_money",
           "sequential_schedule", "solve_colgen"]

#: Wentges smoothing weight on the best prices so far.
SMOOTHING = 0.5
#: Columns (after pruning) the set-partitioning programme may hold per second of its time limit.  HiGHS
#: checks its limit only between phases; measured: 11,600 pruned columns solve in about a second, and
#: the unpruned 44,000 took 14 s.
COLUMNS_PER_SECOND = 4000
#: Relative distance between the master's LP value and the bound at which column generation stops.
CONVERGED = 1e-6


@dataclass
class _Job:
    """Job ``i`` restricted to its fitting edges and its rounds ``lo .. hi - 1``."""

    index: int
    lo: int
    hi: int
    edges: np.ndarray  # global edge ids
    pools: np.ndarray  # pool of each edge
    gains: np.ndarray  # (hi - lo) x edges: progress of one round
    theta: float
    size: int
    mu: float


def _jobs(instance: Instance) -> list[_Job] | None:
    """Every job's pricing data; None when a job that must complete has no usable edge."""
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    counts = instance.counts
    ea, ep = instance.edge_agent, instance.edge_pool
    order = np.argsort(ea, kind="stable")
    cuts = np.searchsorted(ea[order], np.arange(instance.n_agents + 1))
    out = []
    for i, agent in enumerate(instance.agents):
        mine = order[cuts[i]:cuts[i + 1]]
        mine = mine[(sizes[i] > 0) & (sizes[i] <= counts[ep[mine]])]
        lo, hi = agent.arrival, int(last[i]) + 1
        theta = float(completion_threshold(work[i]))
        gains = (instance.edge_utility[mine, lo:hi] * sizes[i]).T if hi > lo else np.zeros((0, mine.size))
        if theta > 0 and (mine.size == 0 or hi <= lo):
            return None
        out.append(_Job(i, lo, hi, mine, ep[mine], np.ascontiguousarray(gains), theta, int(sizes[i]),
                        float(agent.migration_cost)))
    return out


def _price(job: _Job, lam: np.ndarray, rate: np.ndarray, gains: np.ndarray | None = None):
    """``(v_i(lambda), option per round)``: job alone at prices ``(b_c h + lambda_{c,r}) s_i``, migration dropped."""
    if job.theta <= 0:
        return 0.0, np.full(job.hi - job.lo, -1, dtype=np.int64)
    prices = (rate[job.pools][None, :] + lam[job.pools, job.lo:job.hi].T) * job.size
    return _cheapest_completion(job.gains if gains is None else gains, prices, job.theta, picks=True)


def _keeps_work(job: _Job, chosen: np.ndarray, gains: np.ndarray | None = None) -> bool:
    """Whether the schedule ``chosen`` still reaches ``theta_i`` once each change of pool loses ``mu_i``."""
    gains = job.gains if gains is None else gains
    progress, home = 0.0, -1
    for r in np.flatnonzero(chosen >= 0).tolist():
        k = int(chosen[r])
        if home >= 0 and job.pools[k] != home:
            progress -= job.mu
        progress += gains[r, k]
        home = job.pools[k]
    return progress >= job.theta


@dataclass
class ColumnGeneration:
    """What :func:`column_generation` found.

    ``bound``: the best certified ``L(lambda)``; ``lam``: its prices (pools x
    rounds); ``master``: the last restricted master's LP value (an upper
    estimate of the Lagrangian dual until convergence); ``converged``: no
    column of negative reduced cost is left (then ``bound`` is the Lagrangian
    dual up to ``CONVERGED``); ``columns``: per column ``(job, option per
    round)``; ``iterations``; ``seconds``.
    """

    bound: float
    lam: np.ndarray
    master: float | None = None
    converged: bool = False
    iterations: int = 0
    seconds: float = 0.0
    columns: list = field(default_factory=list)




def _schedule_of(instance: Instance, jobs, columns, values: np.ndarray) -> np.ndarray:
    """The ``n x R`` schedule (edge per agent and round, -1 idle) of the columns an integer master chose."""
    out = np.full((instance.n_agents, instance.rounds), -1, dtype=np.int64)
    for k in np.flatnonzero(values > 0.5).tolist():
        j, chosen = columns[k]
        job = jobs[j]
        rounds = np.flatnonzero(chosen >= 0)
        out[job.index, job.lo + rounds] = job.edges[chosen[rounds]]
    return out

def _column_matrix(jobs, columns, rate: np.ndarray, R: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    """Cost of each schedule column and its capacity-row incidences (row ``c R + r``, column ``k``).

    A column ``(j, chosen)`` runs job ``j`` in the rounds where ``chosen >= 0``, on the pool of its
    edge ``chosen[r]``; it costs the pools' prices per round times the job's size.
    """
    costs = np.zeros(len(columns))
    rows, cols = [], []
    by_job: dict[int, list[int]] = {}
    for k, (j, _) in enumerate(columns):
        by_job.setdefault(j, []).append(k)
    for j, ks in by_job.items():
        job = jobs[j]
        ks = np.asarray(ks, dtype=np.int64)
        chosen = np.stack([columns[k][1] for k in ks.tolist()]).reshape(ks.size, -1)
        which, rounds = np.nonzero(chosen >= 0)
        pools = job.pools[chosen[which, rounds]]
        rows.append(pools * R + job.lo + rounds)
        cols.append(ks[which])
        costs[ks] = np.bincount(which, weights=rate[pools], minlength=ks.size) * job.size
    empty = np.zeros(0, dtype=np.int64)
    return costs.tolist(), np.concatenate(rows) if rows else empty, np.concatenate(cols) if cols else empty


def _master(jobs, columns, costs, usage_rows, usage_cols, n_slots, counts_flat, *, integral=False,
            time_limit=None, start=None, threads=None, artificial=None, cutoff=None):
    """The restricted master over ``columns``: an LP with duals, or the integer programme.

    ``artificial`` (LP only): the price of one extra column per job that
    schedules nothing, so the LP is feasible before a feasible set of columns
    is known (phase one by a big price; its duals are still prices
    ``lambda``, and the bound is certified at any ``lambda >= 0``).
    ``cutoff``: the row ``sum cost xi <= cutoff`` (only strictly better schedules).
    """
    k, n = len(columns), len(jobs)
    model = LinearModel("migration_master", sense="min")
    xi = model.add_variables("xi", k, upper=1.0, integer=integral, description="weight of schedule S of job i")
    extra = 0 if artificial is None else n
    slack = model.add_variables("artificial", extra, upper=1.0, description="job i scheduled by no column (phase one)")
    owner = np.array([j for j, _ in columns], dtype=np.int64)
    model.add_constraints("convexity", rows=np.concatenate([owner, np.arange(extra)]),
                          cols=np.concatenate([xi.start + np.arange(k), slack.start + np.arange(extra)]),
                          coefs=np.ones(k + extra), lower=1.0, upper=1.0, n_rows=n,
                          description="sum_S xi[i,S] = 1")
    sizes = np.array([jobs[j].size for j, _ in columns], dtype=float)
    model.add_constraints("capacity", rows=usage_rows, cols=xi.start + usage_cols, coefs=sizes[usage_cols],
                          upper=counts_flat, n_rows=n_slots, description="sum s_i [(c,r) in S] xi[i,S] <= k_c")
    model.set_objective(xi, np.asarray(costs, dtype=float))
    if extra:
        model.set_objective(slack, np.full(extra, float(artificial)))
    if cutoff is not None:
        model.add_constraints("cutoff", rows=np.zeros(k, dtype=np.int64), cols=xi.start + np.arange(k),
                              coefs=np.asarray(costs, dtype=float), upper=float(cutoff), n_rows=1,
                              description="sum cost_S xi[i,S] <= cutoff")
    if start is not None:
        start = np.concatenate([start, np.zeros(extra)])
    return model, solve_model(model, solver="highs", duals=not integral, time_limit=time_limit, threads=threads,
                              mip_gap=1e-7, start=start)


def column_generation(instance: Instance, *, seconds: float | None = None, iterations: int = 200,
                      seed_schedules: list[np.ndarray] | None = None, threads: int | None = None) -> ColumnGeneration:
    """Column generation on the Dantzig-Wolfe master of the ``cost`` objective; see the module docstring.

    ``seed_schedules``: ``(n, R)`` arrays of edges (-1 idle) of feasible
    schedules whose job columns start the master (without one the master may
    be infeasible, and slack-free: the bound is still valid, computed at the
    prices found).  Stops at convergence, after ``iterations`` or ``seconds``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=1, base_price=2.0)], [lo.Agent("A", work=1.5)],
    ...                    [lo.Edge("A", "g", 1.0)], rounds=3)
    >>> column_generation(inst).bound  # two whole rounds at 2
    4.0
    """
    started = time.perf_counter()
    R, P = instance.rounds, instance.n_pools
    jobs = _jobs(instance)
    if jobs is None:
        return ColumnGeneration(math.inf, np.zeros((P, R)), converged=True)
    rate = instance.base_prices * instance.round_hours
    counts_flat = np.repeat(instance.counts.astype(float), R)  # slot c * R + r
    lam_best = np.zeros((P, R))
    columns, costs, seen = [], [], set()
    u_rows: list[np.ndarray] = []
    u_cols: list[np.ndarray] = []

    def add(j: int, chosen: np.ndarray) -> bool:
        key = (j, chosen.tobytes())
        if key in seen:
            return False
        seen.add(key)
        job = jobs[j]
        rounds = np.flatnonzero(chosen >= 0)
        pools = job.pools[chosen[rounds]]
        u_rows.append(pools * R + job.lo + rounds)
        u_cols.append(np.full(rounds.size, len(columns)))
        costs.append(float(rate[pools].sum() * job.size))
        columns.append((j, chosen.copy()))
        return True

    def local(j: int, schedule: np.ndarray) -> np.ndarray:
        job = jobs[j]
        row = schedule[job.index, job.lo:job.hi]
        out = np.full(row.size, -1, dtype=np.int64)
        for r in np.flatnonzero(row >= 0).tolist():
            hit = np.flatnonzero(job.edges == row[r])
            out[r] = hit[0] if hit.size else -1
        return out

    for schedule in seed_schedules or []:
        for j in range(len(jobs)):
            add(j, local(j, schedule))

    def price_all(lam):
        total, found = -float(np.sum(lam.reshape(-1) * counts_flat)), []
        for j, job in enumerate(jobs):
            value, chosen = _price(job, lam, rate)
            if not math.isfinite(value):
                return math.inf, []
            total += value
            found.append((j, value, chosen))
        return total, found

    # The artificial price: more than any job's dearest schedule (every round on its dearest pool).
    big = 10.0 * (1.0 + sum((job.hi - job.lo) * float(rate[job.pools].max(initial=0.0)) * job.size for job in jobs))
    best, found = price_all(lam_best)
    if not math.isfinite(best):
        return ColumnGeneration(math.inf, lam_best, converged=True)
    for j, _, chosen in found:
        if chosen is not None:
            add(j, chosen)
    out = ColumnGeneration(best, lam_best.copy())
    for it in range(iterations):
        out.iterations = it + 1
        if seconds is not None and time.perf_counter() - started > seconds:
            break
        try:
            left = None if seconds is None else max(0.05, seconds - (time.perf_counter() - started))
            _, solution = _master(jobs, columns, costs, np.concatenate(u_rows) if u_rows else np.zeros(0, int),
                                  np.concatenate(u_cols) if u_cols else np.zeros(0, int), P * R, counts_flat,
                                  time_limit=left, threads=threads, artificial=big)
        except NoSolutionError:
            break
        if solution.status != "optimal" or solution.duals is None:
            break  # an infeasible restricted master (no seed schedule): keep the bound found so far
        out.master = float(solution.objective)
        n = len(jobs)
        sigma = solution.duals.row[:n]
        lam_lp = np.maximum(0.0, -solution.duals.row[n:]).reshape(P, R)
        if out.master - best <= CONVERGED * max(1.0, abs(out.master)):
            out.converged = True
            break
        added = 0
        for a in (SMOOTHING, 0.0):
            lam = a * lam_best + (1.0 - a) * lam_lp
            total, found = price_all(lam)
            if total > best:
                best, lam_best = total, lam.copy()
            for j, _, chosen in found:
                if chosen is None:
                    continue
                job = jobs[j]
                rounds = np.flatnonzero(chosen >= 0)
                pools = job.pools[chosen[rounds]]
                reduced = float((rate[pools] + lam_lp[pools, job.lo + rounds]).sum() * job.size) - sigma[j]
                if reduced < -1e-9 * max(1.0, abs(sigma[j])):
                    added += add(j, chosen)
            if added:
                break
        if not added:
            out.converged = out.master - best <= 1e-4 * max(1.0, abs(out.master))
            break
    out.bound, out.lam = best, lam_best
    out.columns = columns
    out.seconds = time.perf_counter() - started
    return out


def sequential_schedule(instance: Instance, lam: np.ndarray | None = None, *, order: str = "slack") -> np.ndarray | None:
    """A feasible schedule ``(n, R)`` of edges (-1 idle) built one job at a time, or None when a job cannot finish.

    Jobs in ``order`` (``slack``: fewest usable rounds ``D_i - a_i`` first;
    ``arrival``; ``index``) each take their cheapest schedule at prices
    ``(b_c h + lambda_{c,r}) s_i`` (``lambda = 0`` by default: money) over the
    devices the earlier jobs left (:func:`~laissez_opt.exact.migration._cheapest_completion`);
    when that schedule changes pool and the migration losses leave it short of
    ``theta_i``, the cheapest one-pool schedule is taken instead.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=1, base_price=1.0)], [lo.Agent("A"), lo.Agent("B", deadline=0)],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)], rounds=2)
    >>> sequential_schedule(inst).tolist()  # B has no slack: it goes first
    [[-1, 0], [1, -1]]
    """
    jobs = _jobs(instance)
    if jobs is None:
        return None
    n, R, P = instance.n_agents, instance.rounds, instance.n_pools
    rate = instance.base_prices * instance.round_hours
    lam = np.zeros((P, R)) if lam is None else lam
    free = np.repeat(instance.counts.astype(float)[:, None], R, axis=1)
    keys = {"slack": lambda j: (jobs[j].hi - jobs[j].lo, jobs[j].lo, j), "arrival": lambda j: (jobs[j].lo, j),
            "index": lambda j: j}
    chosen_all = np.full((n, R), -1, dtype=np.int64)
    for j in sorted(range(len(jobs)), key=keys[order]):
        job = jobs[j]
        if job.theta <= 0:
            continue
        gains = job.gains.copy()
        gains[free[job.pools, job.lo:job.hi].T < job.size] = 0.0
        value, chosen = _price(job, lam, rate, gains)
        if chosen is None or not math.isfinite(value) or not _keeps_work(job, chosen, gains):
            options = []
            for k in range(job.edges.size):
                one = np.zeros_like(gains)
                one[:, k] = gains[:, k]
                v, c = _price(job, lam, rate, one)
                if c is not None and math.isfinite(v):
                    options.append((v, c))
            if not options:
                return None
            chosen = min(options, key=lambda t: t[0])[1]
        rounds = np.flatnonzero(chosen >= 0)
        chosen_all[job.index, job.lo + rounds] = job.edges[chosen[rounds]]
        free[job.pools[chosen[rounds]], job.lo + rounds] -= job.size
    return chosen_all


def master_schedule(instance: Instance, cg: ColumnGeneration, incumbent: np.ndarray, *, time_limit: float | None,
                    threads: int | None = None) -> np.ndarray | None:
    """Price-and-branch: the restricted master over ``cg``'s columns that keep their work after migration
    losses, plus ``incumbent``'s (a feasible schedule, the start), solved as an integer programme; the
    schedule ``(n, R)`` of edges it picks, or None when the solver returns nothing."""
    jobs = _jobs(instance)
    if jobs is None:
        return None
    R, P = instance.rounds, instance.n_pools
    rate = instance.base_prices * instance.round_hours
    columns, seen, start_cols = [], set(), []
    for j, job in enumerate(jobs):
        row = incumbent[job.index, job.lo:job.hi]
        mine = np.full(row.size, -1, dtype=np.int64)
        for r in np.flatnonzero(row >= 0).tolist():
            mine[r] = int(np.flatnonzero(job.edges == row[r])[0])
        start_cols.append(len(columns))
        seen.add((j, mine.tobytes()))
        columns.append((j, mine))
    for j, chosen in cg.columns:
        if (j, chosen.tobytes()) not in seen and _keeps_work(jobs[j], chosen):
            seen.add((j, chosen.tobytes()))
            columns.append((j, chosen))
    costs, u_rows, u_cols = _column_matrix(jobs, columns, rate, R)
    start = np.zeros(len(columns))
    start[start_cols] = 1.0
    counts_flat = np.repeat(instance.counts.astype(float), R)
    try:
        _, solution = _master(jobs, columns, costs, u_rows, u_cols, P * R,
                              counts_flat, integral=True, time_limit=time_limit, start=start, threads=threads)
    except NoSolutionError:
        return None
    if solution.values is None:
        return None
    out = _schedule_of(instance, jobs, columns, solution.values)
    return out


def schedule_money(instance: Instance, schedule: np.ndarray) -> float | None:
    """Money of ``schedule`` replayed on ``instance``; None when a job does not finish by its deadline."""
    _, stats = replay(instance, schedule)
    return objective_value(instance, stats, "cost")


def fixings(instance: Instance, lam: np.ndarray, bound: float, upper: float) -> np.ndarray:
    """Reduced-cost fixing: a boolean ``(E, R)`` mask of the runs ``z_{i,c,r}`` no schedule cheaper than ``upper`` uses.

    For every feasible schedule ``sum_i cost_i >= L(lambda) + sum_i rc_i``
    with ``rc_i = c_lambda(S_i) - v_i(lambda) >= 0`` (``c_lambda`` the money at
    prices ``b_c h + lambda``; the capacity term ``lambda (usage - k) <= 0``),
    so a schedule cheaper than ``upper`` has every ``rc_i < upper - L``.  The
    least ``c_lambda`` of job ``i``'s schedules that run on ``c`` in round
    ``r`` is ``(b_c h + lambda_{c,r}) s_i`` plus the job's least ``c_lambda`` to
    reach ``theta_i - u_{i,c,r} s_i`` in its other rounds (migration losses
    dropped: a relaxation); when it exceeds ``v_i + upper - L`` (with a
    ``10^-9`` relative margin) the run is fixed to 0.  Reference: Desrosiers &
    Luebbecke (2005), section on reduced-cost variable fixing.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("cheap", count=1, base_price=1.0), lo.Pool("dear", count=1, base_price=5.0)],
    ...                    [lo.Agent("A")], [lo.Edge("A", "cheap", 1.0), lo.Edge("A", "dear", 1.0)], rounds=1)
    >>> fixings(inst, np.zeros((2, 1)), 1.0, 1.0).tolist()  # the dear pool can only cost more
    [[False], [True]]
    """
    E, R = instance.n_edges, instance.rounds
    fixed = np.zeros((E, R), dtype=bool)
    jobs = _jobs(instance)
    if jobs is None or not (math.isfinite(bound) and math.isfinite(upper)):
        return fixed
    rate = instance.base_prices * instance.round_hours
    slack = upper - bound + 1e-9 * max(1.0, abs(upper))
    for job in jobs:
        span = job.hi - job.lo
        if job.theta <= 0 or span <= 0:
            continue
        best, _ = _price(job, lam, rate)
        prices = (rate[job.pools][None, :] + lam[job.pools, job.lo:job.hi].T) * job.size
        for r in range(span):
            rest = job.gains.copy()
            rest[r, :] = 0.0
            for k in range(job.edges.size):
                g = job.gains[r, k]
                if g <= 0:
                    continue
                need = job.theta - g
                tail = 0.0 if need <= 0 else _cheapest_completion(rest, prices, need)
                if prices[r, k] + tail > best + slack:
                    fixed[job.edges[k], job.lo + r] = True
    return fixed


def improve(instance: Instance, *, seconds: float | None, threads: int | None = None,
            seeds: list[np.ndarray] = (), master_share: float = 0.5):
    """Bound and incumbent for the ``cost`` objective by column generation; ``(cg, schedule, money)``.

    The candidates are ``seeds`` (feasible schedules), :func:`sequential_schedule`
    at prices 0 and at the bound's prices, and :func:`master_schedule` (given
    ``master_share`` of what is left); the cheapest after replay is returned
    (``schedule`` None when none finishes every job).  ``cg.bound`` is certified.
    """
    started = time.perf_counter()

    def left():
        return None if seconds is None else max(0.0, seconds - (time.perf_counter() - started))

    candidates = []

    def consider(schedule):
        if schedule is not None:
            money = schedule_money(instance, schedule)
            if money is not None:
                candidates.append((money, len(candidates), schedule))

    for seed in seeds:
        consider(seed)
    consider(sequential_schedule(instance))
    cg = column_generation(instance, seconds=None if seconds is None else 0.6 * seconds,
                           seed_schedules=[c[2] for c in candidates], threads=threads)
    consider(sequential_schedule(instance, cg.lam))
    if candidates and cg.columns:
        best = min(candidates)
        gap = (best[0] - cg.bound) / max(abs(best[0]), 1e-12)
        room = left()
        if gap > 1e-9 and (room is None or room > 0.05):
            consider(master_schedule(instance, cg, best[2], time_limit=None if room is None else master_share * room,
                                     threads=threads))
    if not candidates:
        return cg, None, None
    money, _, schedule = min(candidates)
    return cg, schedule, money


def solve_colgen(instance: Instance, *, time_limit: float | None = None, threads: int | None = None,
                 mip_gap: float = 1e-7, method: str = "migration", params: dict | None = None) -> Result:
    """The ``colgen`` strategy (``cost`` objective): :func:`improve` within the time limit, its bound certified.

    Status ``optimal`` only when the replayed schedule meets the bound within
    ``mip_gap``; otherwise ``time_limit`` when column generation stopped
    before convergence, else ``feasible``.  Raises :class:`NoSolutionError`
    when no candidate finishes every job (the caller then solves the whole
    horizon).
    """
    from .migration import objective_unit, round_bound, schedule_result
    from .migration_rolling import greedy_schedule

    started = time.perf_counter()
    left = remaining(time_limit)
    found = greedy_schedule(instance)
    seeds = [] if found is None else [found[0]]
    cg, schedule, money = improve(instance, seconds=None if left is None else 0.9 * left, threads=threads,
                                  seeds=seeds, master_share=0.8)
    if schedule is None:
        raise NoSolutionError("column generation found no schedule finishing every job")
    kept, stats = replay(instance, schedule)
    bound = round_bound(cg.bound, objective_unit(instance, "cost"))
    gap = relative_gap(money, bound)
    if gap is not None and gap <= max(mip_gap, 1e-9):
        status, note = "optimal", "proven optimal: the incumbent meets the column-generation bound"
    else:
        status = "feasible" if cg.converged else "time_limit"
        note = ("the bound is the Lagrangian dual (column generation converged)" if cg.converged
                else "column generation stopped before convergence")
    message = (f"incumbent from column generation and price-and-branch; bound: Lagrangian relaxation of capacity "
               f"at the master's prices ({cg.iterations} iterations, {len(cg.columns)} columns); {note}")
    elapsed = time.perf_counter() - started
    result = schedule_result(instance, method, kept, stats, "cost", status=status, message=message, solver="highs",
                             route=f"column generation ({cg.iterations} iterations) and price-and-branch",
                             solver_status="", timing={"build_s": 0.0, "solve_s": elapsed}, params=dict(params or {}))
    result.bound, result.gap = bound, relative_gap(result.objective, bound)
    result.details["column_generation"] = {"iterations": cg.iterations, "columns": len(cg.columns),
                                           "converged": cg.converged, "master_lp": cg.master,
                                           "seconds": round(cg.seconds, 3)}
    return result


def _suffix_fronts(job: _Job, prices: np.ndarray, cap: int):
    """Per round ``r``: ``(progress, least money)`` to gain from rounds ``r ..``, sorted by progress, the money a
    suffix minimum (so ``money[searchsorted(progress, need)]`` is the least to reach ``need``); None past ``cap``."""
    span = job.hi - job.lo
    progress, money = np.zeros(1), np.zeros(1)
    fronts = [None] * (span + 1)
    fronts[span] = (progress, money)
    for r in range(span - 1, -1, -1):
        cols = np.flatnonzero(job.gains[r] > 0)
        p = np.concatenate([progress] + [np.minimum(job.theta, progress + job.gains[r, k]) for k in cols])
        m = np.concatenate([money] + [money + prices[r, k] for k in cols])
        order = np.lexsort((m, -p))
        p, m = p[order], m[order]
        keep = np.ones(p.size, dtype=bool)
        keep[1:] = m[1:] < np.minimum.accumulate(m)[:-1]
        progress, money = p[keep], m[keep]
        if progress.size > cap:
            return None
        asc = np.argsort(progress, kind="stable")
        fronts[r] = (progress[asc], np.minimum.accumulate(money[asc][::-1])[::-1])
    return fronts


def enumerate_columns(instance: Instance, lam: np.ndarray, bound: float, upper: float, *, cap: int = 50000):
    """Every job schedule that a schedule cheaper than ``upper`` may use, or None past ``cap`` search nodes.

    A schedule cheaper than ``upper`` has ``c_lambda(S_i) <= v_i(lambda) + upper - L`` for every job
    (:func:`fixings`).  A depth-first search over job ``i``'s rounds, tracking its true progress (migration
    losses included) and stopping at completion (no run after it), lists every such schedule, pruned by the
    least money at prices ``lambda`` to gain the rest in the remaining rounds (migration losses dropped: a
    lower bound).  Returns ``[(job, option per round)]``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=1, base_price=1.0)], [lo.Agent("A")], [lo.Edge("A", "g", 1.0)],
    ...                    rounds=2)
    >>> [c.tolist() for _, c in enumerate_columns(inst, np.zeros((1, 2)), 1.0, 1.0)]  # either round
    [[0, -1], [-1, 0]]
    """
    jobs = _jobs(instance)
    if jobs is None:
        return None
    rate = instance.base_prices * instance.round_hours
    slack = upper - bound + 1e-9 * max(1.0, abs(upper))
    out, nodes = [], 0
    for j, job in enumerate(jobs):
        span = job.hi - job.lo
        if job.theta <= 0 or span <= 0:
            out.append((j, np.full(max(span, 0), -1, dtype=np.int64)))
            continue
        best, _ = _price(job, lam, rate)
        if not math.isfinite(best):
            return None
        limit = best + slack
        prices = (rate[job.pools][None, :] + lam[job.pools, job.lo:job.hi].T) * job.size
        fronts = _suffix_fronts(job, prices, cap)
        if fronts is None:
            return None
        picks = np.full(span, -1, dtype=np.int64)
        # Python lists of the same doubles: the search below runs per node, where numpy calls cost most.
        fronts_l = [(f[0].tolist(), f[1].tolist()) for f in fronts[:span]]
        options = [np.flatnonzero(job.gains[r] > 0).tolist() for r in range(span)]
        gains_l, prices_l, pools_l = job.gains.tolist(), prices.tolist(), job.pools.tolist()

        def to_go(r, need):
            progress, money = fronts_l[r]
            at = bisect.bisect_left(progress, need - 1e-12)
            return math.inf if at >= len(progress) else money[at]

        stack = [(0, 0.0, -1, 0.0, None)]  # (round, progress, home pool, money at prices, picks so far)
        while stack:
            r, done, home, spent, path = stack.pop()
            nodes += 1
            if nodes > cap:
                return None
            if r >= span or spent + to_go(r, job.theta - done) > limit:
                continue
            stack.append((r + 1, done, home, spent, path))
            for k in options[r]:
                cost = spent + prices_l[r][k]
                if cost > limit:
                    continue
                gained = done + gains_l[r][k] - (job.mu if home >= 0 and pools_l[k] != home else 0.0)
                step = (r, k, path)
                if gained >= job.theta:
                    picks[:] = -1
                    at = step
                    while at is not None:
                        picks[at[0]] = at[1]
                        at = at[2]
                    out.append((j, picks.copy()))
                else:
                    stack.append((r + 1, gained, pools_l[k], cost, step))
    return out


def _undominated(bits: np.ndarray, block: int = 256) -> np.ndarray:
    """Indices of the rows of ``bits`` (packed sets, in priority order) of which no earlier row is a subset.

    Earlier rows are no dearer (the caller's order), so "an earlier row is a
    subset" is dominance; it is transitive, so testing against every earlier
    row or only against the undominated ones gives the same answer.  Blocks of
    ``block`` rows are tested at once against the undominated rows of earlier
    blocks and against the earlier rows of their own block (``p & ~q == 0`` on
    64-bit words).
    """
    width = -(-bits.shape[1] // 8) * 8
    padded = np.zeros((bits.shape[0], width), dtype=np.uint8)
    padded[:, :bits.shape[1]] = bits
    words = padded.view(np.uint64)
    kept = np.empty((0, words.shape[1]), dtype=np.uint64)
    out = []
    for start in range(0, words.shape[0], block):
        chunk = words[start:start + block]
        inside = np.all((chunk[None, :, :] & ~chunk[:, None, :]) == 0, axis=2)  # [q, p]: row p is a subset of row q
        hit = np.tril(inside, k=-1).any(axis=1)
        step = max(1, 4_000_000 // (chunk.shape[0] * words.shape[1]))  # at most 4 million words at once
        for lo in range(0, kept.shape[0], step):
            part = kept[lo:lo + step]
            hit |= np.all((part[None, :, :] & ~chunk[:, None, :]) == 0, axis=2).any(axis=1)
        alive = np.flatnonzero(~hit)
        if alive.size:
            kept = np.vstack([kept, chunk[alive]])
            out.extend((start + alive).tolist())
    return np.asarray(out, dtype=np.int64)


def prune_dominated(jobs, columns, costs, u_rows: np.ndarray, u_cols: np.ndarray, counts_flat: np.ndarray, *,
                    max_cells: int = 50_000_000, seconds: float | None = None) -> np.ndarray:
    """Indices of the columns left once dominated ones are removed; the master's optimum (and feasibility under a
    cutoff on money) is unchanged.

    A capacity slot ``(c, r)`` *can bind* when the jobs that have a column
    using it could together hold more than ``k_c`` devices there:
    ``sum_i s_i [some column of i uses (c, r)] > k_c``.  Column ``A`` of job
    ``i`` *dominates* column ``B`` of the same job when ``cost_A <= cost_B``
    and the binding slots ``A`` uses are a subset of those ``B`` uses (equal
    costs up to ``10^-12`` relative count as equal).  Replacing ``B`` by ``A``
    in any feasible choice keeps it feasible (binding slots hold no more;
    the other slots cannot overflow whatever is chosen) and costs no more, so
    removing ``B`` changes neither the optimum nor whether a schedule under a
    cutoff exists.  Removing columns can turn binding slots into free ones, so
    the two steps repeat until nothing changes (each round's argument applies
    to the columns left by the previous one).  Skipped (everything kept) when
    one job's columns times the binding slots exceed ``max_cells``; after
    ``seconds`` the jobs not yet reduced keep all their columns (each job's
    reduction is valid on its own, so a partial pass is still exact).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2, base_price=1.0)], [lo.Agent("A")], [lo.Edge("A", "g", 1.0)],
    ...                    rounds=3)
    >>> jobs, rate = _jobs(inst), inst.base_prices * inst.round_hours
    >>> cols = enumerate_columns(inst, np.zeros((1, 3)), 1.0, 1.0)
    >>> costs, rows, cs = _column_matrix(jobs, cols, rate, 3)
    >>> prune_dominated(jobs, cols, costs, rows, cs, np.full(3, 2.0)).tolist()  # no slot can bind: one suffices
    [0]
    """
    from scipy import sparse

    k = len(columns)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    owner = np.array([j for j, _ in columns], dtype=np.int64)
    sizes = np.array([job.size for job in jobs], dtype=float)
    costs = np.asarray(costs, dtype=float)
    tie = 1e-12 * np.maximum(1.0, np.abs(costs))
    incidence = sparse.csc_matrix((np.ones(u_rows.size), (u_rows, u_cols)), shape=(counts_flat.size, k))
    alive, previous = np.ones(k, dtype=bool), None
    stop = None if seconds is None else time.perf_counter() + seconds
    while True:
        live = np.flatnonzero(alive)
        per_job = sparse.csr_matrix((np.ones(live.size), (live, owner[live])), shape=(k, len(jobs)))
        touched = (incidence @ per_job) > 0
        binding = np.flatnonzero(np.asarray(touched @ sizes).reshape(-1) > counts_flat + 1e-9)
        sub = incidence[binding].tocsc()
        keep = np.zeros(k, dtype=bool)
        for j in np.unique(owner[live]).tolist():
            mine = live[owner[live] == j]
            if mine.size * max(1, binding.size) > max_cells or (stop is not None and time.perf_counter() > stop):
                keep[mine] = True
                continue
            used = sub[:, mine].T.toarray() > 0
            bits = np.packbits(used, axis=1) if binding.size else np.zeros((mine.size, 1), dtype=np.uint8)
            # Cheapest first, fewest binding slots first among equal costs; equal (cost, slots) keep the first.
            by_cost = np.argsort(costs[mine], kind="stable")
            step = np.diff(costs[mine][by_cost]) > tie[mine][by_cost][1:]
            level = np.empty(mine.size, dtype=np.int64)
            level[by_cost] = np.concatenate([[0], np.cumsum(step)])
            _, first = np.unique(np.column_stack([level.view(np.uint8).reshape(mine.size, -1), bits]), axis=0,
                                 return_index=True)
            first = first[np.lexsort((used[first].sum(axis=1), level[first]))]
            for q in _undominated(bits[first]).tolist():
                keep[mine[first[q]]] = True
        late = stop is not None and time.perf_counter() > stop
        if late or np.array_equal(keep, alive) or (previous is not None and np.array_equal(binding, previous)):
            return np.flatnonzero(keep)  # the same binding slots again: the same dominance, nothing more to remove
        alive, previous = keep, binding


def exact_by_enumeration(instance: Instance, lam: np.ndarray, bound: float, upper: float, *,
                         time_limit: float | None, threads: int | None = None, cap: int = 50000,
                         stats: dict | None = None):
    """Solve the master over :func:`enumerate_columns` as an integer programme; ``(schedule or None, proven bound)``.

    The columns hold every schedule cheaper than ``upper`` uses, and a cutoff
    row keeps only schedules cheaper than ``upper``: when money comes in
    multiples of a unit ``delta`` (:func:`~laissez_opt.exact.migration.objective_unit`),
    a cheaper schedule costs at most ``n delta``, the largest multiple below
    ``upper`` (``upper - delta`` when ``upper`` is itself a schedule's money), so
    the cutoff is ``(n + 1/2) delta`` (or ``upper - 10^-9 max(1, upper)`` when
    smaller) and the enumeration only needs schedules within ``cutoff - L`` of
    their priced optimum; without a unit the cutoff is ``upper - 10^-9 max(1, upper)``.  Dominated columns are removed
    (:func:`prune_dominated`, exact).  When the solver proves its optimum
    ``V`` the optimum is ``V``, and when the programme is infeasible the
    optimum is ``upper`` (within ``10^-9`` without a unit, exactly with one);
    in general ``OPT >= min(upper, B)`` for its bound ``B``, rounded up to a
    multiple of the unit (:func:`~laissez_opt.exact.migration.round_bound`).
    ``time_limit`` covers the whole call: pruning may take 30 % of it and the
    programme gets what is left.  Returns ``(None, None)`` when the enumeration
    passes ``cap`` nodes or, after pruning, holds more than
    :data:`COLUMNS_PER_SECOND` columns per second of the programme's time.  ``stats`` (a dict, optional) receives ``enumerated``,
    ``pruned`` (columns left), ``unit`` and ``cutoff``.
    """
    from .migration import objective_unit, round_bound, strict_cutoff

    began = time.perf_counter()
    unit = objective_unit(instance, "cost")
    cutoff = strict_cutoff(upper, unit)
    found = enumerate_columns(instance, lam, bound, cutoff, cap=cap)
    jobs = _jobs(instance)
    if stats is not None:
        stats.update(enumerated=None, pruned=None, unit=unit, cutoff=cutoff)
    if found is None or jobs is None:
        return None, None  # past the search cap: stats say enumerated None
    R, P = instance.rounds, instance.n_pools
    rate = instance.base_prices * instance.round_hours
    columns, seen = [], set()
    for j, chosen in found:
        if (j, chosen.tobytes()) not in seen:
            seen.add((j, chosen.tobytes()))
            columns.append((j, chosen))
    if stats is not None:
        stats.update(enumerated=len(columns), unit=unit, cutoff=cutoff)
    if len({j for j, _ in columns}) < len(jobs):
        if stats is not None:
            stats["pruned"] = 0
        return None, upper  # a job has no schedule cheaper than the incumbent allows: nothing cheaper exists
    counts_flat = np.repeat(instance.counts.astype(float), R)
    costs, u_rows, u_cols = _column_matrix(jobs, columns, rate, R)
    kept = prune_dominated(jobs, columns, costs, u_rows, u_cols, counts_flat,
                           seconds=None if time_limit is None else 0.3 * time_limit)
    if kept.size < len(columns):
        renumber = np.full(len(columns), -1, dtype=np.int64)
        renumber[kept] = np.arange(kept.size)
        mask = renumber[u_cols] >= 0
        u_rows, u_cols = u_rows[mask], renumber[u_cols[mask]]
        columns, costs = [columns[k] for k in kept.tolist()], [costs[k] for k in kept.tolist()]
    if stats is not None:
        stats["pruned"] = len(columns)
    if time_limit is not None:
        time_limit = max(0.05, time_limit - (time.perf_counter() - began))
    if time_limit is not None and len(columns) > COLUMNS_PER_SECOND * time_limit:
        return None, None  # HiGHS would not stop in time on a master this large (measured: presolve overruns)
    try:
        _, solution = _master(jobs, columns, costs, u_rows, u_cols, P * R,
                              counts_flat, integral=True, time_limit=time_limit, threads=threads, cutoff=cutoff)
    except NoSolutionError:
        return None, None
    if solution.status == "infeasible":
        return None, upper
    proven = None if solution.bound is None else min(upper, round_bound(float(solution.bound), unit))
    if solution.values is None:
        return None, proven
    out = _schedule_of(instance, jobs, columns, solution.values)
    if solution.status == "optimal" and proven is None:
        proven = min(upper, float(solution.objective))
    return out, proven
