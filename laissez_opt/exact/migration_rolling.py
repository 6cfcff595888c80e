"""Rolling-horizon solve of the migration model (``cost`` objective), with a certified lower bound.

The horizon ``0 .. R-1`` is cut into windows of ``W`` rounds that overlap by
``o`` rounds.  Window ``[t_0, t_1)`` is the model of
:func:`~laissez_opt.exact.migration.build_migration` over the jobs present
(arrived by ``t_1 - 1``, not completed, deadline not passed), restricted to
those rounds, with what the committed rounds left behind
(:class:`~laissez_opt.exact.migration.WindowState`): each job's remaining work
(its threshold lowered by the progress ``P_i`` so far), the pool its
checkpoint sits on (a run elsewhere in ``t_0`` is a migration), and

* jobs whose deadline ``D_i`` falls in the window must complete in it;
* the others may carry work past it: their window progress ``q_i`` is credited
  at ``rho_i``, the money per unit of work the job pays in the greedy schedule
  of the whole horizon (:func:`greedy_schedule`, which sees the congestion), but at
  least the least money per unit of work of any fitting pool in the rounds
  after the window, times ``1 + 10^-3`` so that work done now is preferred to
  the same work later; completing in the window earns a bonus
  ``beta_i = max(0, V_i - rho_i theta'_i)`` with
  ``V_i = min_c b_c h s_i ceil(theta'_i / g_{i,c})`` the cost of finishing
  later on one pool.  A credit below the congested price would let jobs wait
  for the cheap pools until the last window, which then has no room.

The window's first ``W - o`` rounds (all of them in the last window) are
committed, the state replayed, and the next window opens at the first
uncommitted round.  Each window gets an equal share of the time left.  The
result is the better of the rolling schedule and a greedy schedule of the
whole horizon (:func:`greedy_schedule`, the ``fcfs_static`` rule; both replayed
on the whole instance); its bound is the better
of the floor bound (:func:`~laissez_opt.exact.migration.floor_bound`: each
job alone, capacity and migration losses relaxed) and the Lagrangian bound
(:func:`~laissez_opt.exact.migration.lagrangian_bound`, at most 30
subgradient steps and 15 % of the time left), so the gap is certified.  The status is
``optimal`` only when that gap is within ``mip_gap``; otherwise ``feasible``
(``time_limit`` when a window or the run was cut short).  When neither the
windows nor the greedy schedule finish every job it raises :class:`NoSolutionError`
(:func:`~laissez_opt.exact.migration.solve_migration` then solves the whole
horizon in the time left).

Reference: rolling-horizon scheduling, Sethi & Sorger (1991), Annals of
Operations Research 29; Lagrangian bounds, Fisher (1981), Management Science 27(1).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("fast", base_price=1.0), lo.Pool("slow", base_price=0.4)],
...                    agents=[lo.Agent("A", work=2.0), lo.Agent("B", work=1.0, arrival=2)],
...                    edges=[lo.Edge("A", "fast", 1.0), lo.Edge("A", "slow", 0.5),
...                           lo.Edge("B", "fast", 1.0), lo.Edge("B", "slow", 0.5)], rounds=8)
>>> result = lo.solve(inst, "migration", strategy="rolling", window=4, overlap=2)
>>> result.status, round(result.objective, 9), round(result.bound, 9)
('optimal', 2.4, 2.4)
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..limits import remaining
from ..modeling import solve_model
from ..modeling.solution import relative_gap
from ..result import Result
from .migration import (WindowState, build_migration, completion_threshold, floor_bound, job_sizes, job_work,
                        lagrangian_bound, objective_unit, objective_value, replay, round_bound, schedule_result)

__all__ = ["greedy_schedule", "solve_rolling"]

#: Preference for work done now over the same work later (relative credit premium).
EARLY = 1e-3
#: Where the credit sits between the cheapest future rate (0) and the job's rate in the greedy schedule (1).
CREDIT_BLEND = 1.0
#: Subgradient steps of the Lagrangian bound, and the share of the time limit they may take.
LAGRANGE_ITERATIONS = 30
LAGRANGE_SHARE = 0.15
#: Relative gap at which a window's solve stops (the windows are a heuristic; the bound is certified apart).
WINDOW_GAP = 1e-3


def _window_work(theta_left: float) -> float:
    """The work ``w'`` whose completion threshold is ``theta_left`` (the inverse of ``completion_threshold``)."""
    w = theta_left / (1.0 - 1e-6)
    return w if w >= 1.0 else theta_left + 1e-6


def solve_rolling(
    instance: Instance,
    *,
    window: int = 4,
    overlap: int = 2,
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    allow_migration: bool = True,
    method: str = "migration",
    params: dict | None = None,
) -> Result:
    """Rolling-horizon schedule for ``objective="cost"``; see the module docstring.

    ``window`` ``W >= 2`` rounds per window, ``overlap`` ``0 <= o < W`` rounds
    re-solved by the next window.  Windows are solved by HiGHS.
    """
    if not (isinstance(window, int) and window >= 1):
        raise InputError(f"window must be an integer >= 1, got {window!r}", path="option window")
    if not (isinstance(overlap, int) and 0 <= overlap < window):
        raise InputError(f"overlap must be an integer with 0 <= overlap < window ({window}), got {overlap!r}",
                         path="option overlap")
    started_at = time.perf_counter()
    params = dict(params or {})
    n, R = instance.n_agents, instance.rounds
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    theta = completion_threshold(work)
    mu = np.array([a.migration_cost for a in instance.agents])
    ea, ep, util = instance.edge_agent, instance.edge_pool, instance.edge_utility
    money = instance.base_prices * instance.round_hours
    edges_of = [np.flatnonzero(ea == i) for i in range(n)]
    bound = floor_bound(instance, "cost")
    baselines = list(_baselines(instance, allow_migration))
    left = remaining(time_limit)
    upper = min((c[1] for c in baselines), default=None)
    lagrange, _ = lagrangian_bound(instance, upper=upper, iterations=LAGRANGE_ITERATIONS,
                                   seconds=None if left is None else LAGRANGE_SHARE * left)
    bound = round_bound(max(bound, lagrange), objective_unit(instance, "cost"))
    rate = np.zeros(n)
    if baselines:
        _, _, _, base_stats = min(baselines, key=lambda c: c[1])
        rate = np.array([s["money"] / max(theta[i], 1e-12) for i, s in enumerate(base_stats)])
    progress = np.zeros(n)
    home = np.full(n, -1, dtype=np.int64)  # pool of the checkpoint
    finished = np.zeros(n, dtype=bool)
    chosen = np.full((n, R), -1, dtype=np.int64)
    cut_short, failure, windows, log = False, None, 0, []
    t0 = 0
    while t0 < R:
        t1 = min(R, t0 + window)
        commit = R if t1 == R else t0 + window - overlap
        jobs = [i for i in range(n) if not finished[i] and instance.agents[i].arrival < t1 and last[i] >= t0]
        late = [instance.agents[i].id for i in range(n) if not finished[i] and last[i] < t0]
        if late:
            failure = f"jobs {', '.join(map(repr, late))} passed their deadline unfinished in the rolling schedule"
            break
        if jobs:
            windows += 1
            sub, sub_edges, state = _window(instance, jobs, t0, t1, progress, home, theta, money, sizes, edges_of, rate)
            model, _ = build_migration(sub, objective="cost", allow_migration=allow_migration, state=state)
            left = remaining(time_limit)
            share = None
            if left is not None:
                rounds_left = max(1, math.ceil((R - t0 - window) / max(1, window - overlap)) + 1)
                share = max(0.05, left * 0.9 / rounds_left)
            try:
                start = _window_start(model, sub, state)
                solution = solve_model(model, solver="highs", time_limit=share, threads=threads,
                                       mip_gap=max(mip_gap, WINDOW_GAP), start=start)
            except NoSolutionError as exc:
                failure = f"window {t0}..{t1 - 1}: {exc}"
                break
            log.append({"window": [t0, t1 - 1], "jobs": len(jobs), "status": solution.status,
                        "seconds": round(solution.solve_s, 3), "gap": solution.gap})
            if solution.values is None:
                failure = f"window {t0}..{t1 - 1}: {solution.status} ({solution.message or 'no schedule'})"
                break
            cut_short |= solution.status == "time_limit"
            runs = np.round(solution.block(model, "z")).reshape(sub.n_edges, sub.rounds) > 0.5
            for e_local, r_local in zip(*np.nonzero(runs)):
                r = t0 + int(r_local)
                if r < commit:
                    chosen[ea[sub_edges[e_local]], r] = sub_edges[e_local]
            for i in jobs:  # replay the committed rounds
                for r in range(t0, commit):
                    e = int(chosen[i, r])
                    if finished[i] or e < 0:
                        chosen[i, r] = -1 if finished[i] else e
                        continue
                    if home[i] >= 0 and ep[e] != home[i]:
                        progress[i] -= mu[i]
                    progress[i] += util[e, r] * sizes[i]
                    home[i] = ep[e]
                    if progress[i] >= theta[i]:
                        finished[i] = True
        t0 = commit
    candidates = []
    if failure is None:
        kept, stats = replay(instance, chosen)
        value = objective_value(instance, stats, "cost")
        if value is None:
            failure = "the rolling schedule leaves a job unfinished"
        else:
            candidates.append(("rolling", value, kept, stats))
    candidates += baselines
    common = dict(solver="highs", route=f"rolling-horizon (window {window}, overlap {overlap}, {windows} windows)",
                  params=params)
    elapsed = time.perf_counter() - started_at
    if not candidates:
        raise NoSolutionError(f"the rolling horizon found no schedule finishing every job ({failure}) and the greedy one did not")
    name, value, kept, stats = min(candidates, key=lambda c: c[1])
    gap = relative_gap(value, bound)
    status = "optimal" if gap is not None and gap <= max(mip_gap, 1e-9) else ("time_limit" if cut_short else "feasible")
    notes = [f"incumbent from {name}", "bound: Lagrangian relaxation of capacity (each job alone, migration losses relaxed)"]
    if failure:
        notes.append(f"rolling schedule discarded: {failure}")
    if status == "optimal":
        notes.append("proven optimal: the incumbent meets the bound")
    result = schedule_result(instance, method, kept, stats, "cost", status=status, message="; ".join(notes),
                             solver_status="", timing={"build_s": 0.0, "solve_s": elapsed}, **common)
    result.bound, result.gap = bound, gap
    result.details["windows"] = log
    return result


def _baselines(instance: Instance, allow_migration: bool):
    """The greedy schedule ``(name, money, kept, stats)`` when it finishes every job (and moves none if forbidden)."""
    found = greedy_schedule(instance)
    if found is None:
        return
    kept, stats = found
    value = objective_value(instance, stats, "cost")
    if value is not None and (allow_migration or all(s["migrations"] == 0 for s in stats)):
        yield "greedy", value, kept, stats


def greedy_schedule(instance: Instance):
    """A greedy schedule of the whole horizon replayed, ``(kept, stats)``, or None when a job is left unfinished.

    Round by round, the jobs present (by deadline, then in order) stay on the
    pool of their checkpoint when it has room and positive utility, else take
    the free fitting pool of least money per unit of work ``b_c h / u_{i,c,r}``
    (under ``cost``, the rule ``fcfs_static`` follows), until they complete.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=1, base_price=1.0)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)], rounds=2)
    >>> kept, stats = greedy_schedule(inst)
    >>> kept.tolist(), [s["completion_round"] for s in stats]
    ([[0, -1], [-1, 1]], [0, 1])
    """
    n, R = instance.n_agents, instance.rounds
    sizes, work, last = job_sizes(instance), job_work(instance), instance.last_rounds
    theta = completion_threshold(work)
    ea, ep, util = instance.edge_agent, instance.edge_pool, instance.edge_utility
    money = instance.base_prices * instance.round_hours
    edges_of = [np.flatnonzero(ea == i).tolist() for i in range(n)]
    mu = np.array([a.migration_cost for a in instance.agents])
    home = np.full(n, -1, dtype=np.int64)
    got = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    chosen = np.full((n, R), -1, dtype=np.int64)
    order = sorted(range(n), key=lambda i: (int(last[i]), instance.agents[i].arrival, i))
    for r in range(R):
        free = instance.counts.astype(float).copy()
        for i in order:
            if done[i] or instance.agents[i].arrival > r or r > last[i] or sizes[i] <= 0:
                continue
            options = [e for e in edges_of[i] if util[e, r] > 0 and free[ep[e]] >= sizes[i]]
            if not options:
                continue
            stay = [e for e in options if ep[e] == home[i]]
            e = stay[0] if stay else min(options, key=lambda e: (money[ep[e]] / util[e, r], ep[e]))
            if home[i] >= 0 and ep[e] != home[i]:
                got[i] -= mu[i]
            got[i] += util[e, r] * sizes[i]
            home[i], chosen[i, r] = ep[e], e
            free[ep[e]] -= sizes[i]
            done[i] = got[i] >= theta[i]
    if not done.all():
        return None
    return replay(instance, chosen)


def _window(instance, jobs, t0, t1, progress, home, theta, money, sizes, edges_of, rate):
    """The window instance over rounds ``t0 .. t1-1`` for ``jobs``, its edges' global indices and its state."""
    R, last = instance.rounds, instance.last_rounds
    util, ep = instance.edge_utility, instance.edge_pool
    pools = instance.pools
    agents, edges, sub_edges = [], [], []
    initial, required, credit, bonus = [], [], [], []
    for i in jobs:
        a = instance.agents[i]
        need = float(theta[i] - progress[i])
        inside = last[i] <= t1 - 1
        agents.append(dataclasses.replace(a, arrival=max(0, a.arrival - t0), work=_window_work(need),
                                          deadline=int(last[i] - t0) if inside else None, arrivals=None))
        for e in edges_of[i].tolist():
            edges.append(dataclasses.replace(instance.edges[e], utility=tuple(float(v) for v in util[e, t0:t1])))
            sub_edges.append(e)
        initial.append(-1 if home[i] < 0 else int(home[i]))
        required.append(inside)
        rho, future = math.inf, math.inf
        for e in edges_of[i].tolist():
            if not 0 < sizes[i] <= instance.counts[ep[e]]:
                continue
            g = util[e, t1:last[i] + 1] * sizes[i]
            g = g[g > 0]
            if g.size:
                price = money[ep[e]] * sizes[i]
                rho = min(rho, price / float(g.max()))
                future = min(future, price * math.ceil(need / float(g.max()) - 1e-9))
        if not math.isfinite(rho):
            rho, future = 0.0, 0.0
        rho = max(rho, rho + CREDIT_BLEND * (float(rate[i]) - rho))
        credit.append(rho * (1.0 + EARLY))
        bonus.append(max(0.0, future - rho * need))
    sub = Instance(pools, agents, edges, rounds=t1 - t0, round_hours=instance.round_hours, name=f"{instance.name}@{t0}")
    state = WindowState(initial_pool=np.array(initial), required=np.array(required), credit=np.array(credit),
                        bonus=np.array(bonus))
    return sub, np.array(sub_edges, dtype=np.int64), state


def _window_start(model, sub: Instance, state: WindowState) -> np.ndarray | None:
    """A feasible column vector for a window model: a greedy continuation from the window's state, or None.

    Round by round, the jobs present (those that must complete in the window
    first, by deadline, then in agent order) stay on the pool of their
    checkpoint when it has room, else take the free fitting pool of least money
    per unit of work; a job that need not complete runs only where that rate
    is at most its credit.  The vector is checked against the model.
    """
    n, W, E = sub.n_agents, sub.rounds, sub.n_edges
    sizes, work, last = job_sizes(sub), job_work(sub), sub.last_rounds
    theta = completion_threshold(work)
    mu = np.array([a.migration_cost for a in sub.agents])
    ea, ep, util = sub.edge_agent, sub.edge_pool, sub.edge_utility
    money = sub.base_prices * sub.round_hours
    edge_at = {(int(i), int(c)): e for e, (i, c) in enumerate(zip(ea, ep))}
    edges_of = [np.flatnonzero(ea == i) for i in range(n)]
    home = np.asarray(state.initial_pool, dtype=np.int64).copy()
    required = np.asarray(state.required, dtype=bool)
    credit = np.asarray(state.credit, dtype=float)
    done_at = np.full(n, -1, dtype=np.int64)
    got = np.zeros(n)
    z, y, m = np.zeros((E, W)), np.zeros((E, W)), np.zeros((n, W))
    order = sorted(range(n), key=lambda i: (not required[i], int(last[i]) if required[i] else 0, i))
    for r in range(W):
        free = sub.counts.astype(float).copy()
        for i in order:
            if done_at[i] >= 0 or sub.agents[i].arrival > r or r > last[i] or sizes[i] <= 0:
                continue
            options = [e for e in edges_of[i].tolist() if util[e, r] > 0 and free[ep[e]] >= sizes[i]]
            if not options:
                continue
            stay = [e for e in options if ep[e] == home[i]]
            e = stay[0] if stay else min(options, key=lambda e: (money[ep[e]] / util[e, r], ep[e]))
            if not required[i] and money[ep[e]] / util[e, r] > credit[i] + 1e-12:
                continue
            moved = home[i] >= 0 and ep[e] != home[i]
            z[e, r], m[i, r] = 1.0, float(moved)
            got[i] += util[e, r] * sizes[i] - (mu[i] if moved else 0.0)
            home[i] = ep[e]
            free[ep[e]] -= sizes[i]
            if got[i] >= theta[i]:
                done_at[i] = r
        for i in range(n):
            if home[i] >= 0:
                y[edge_at[(i, int(home[i]))], r] = 1.0
    if np.any(required & (done_at < 0)):
        return None
    values = np.zeros(model.n_cols)
    values[model.variables["z"].slice] = z.reshape(-1)
    values[model.variables["x"].slice] = (z * sizes[ea][:, None]).reshape(-1)
    values[model.variables["y"].slice] = y.reshape(-1)
    values[model.variables["m"].slice] = m.reshape(-1)
    f = np.zeros((n, W))
    for i in np.flatnonzero(done_at >= 0):
        f[i, done_at[i]:] = 1.0
    values[model.variables["f"].slice] = f.reshape(-1)
    credited = np.flatnonzero(~required)
    values[model.variables["q"].slice] = np.clip(got[credited], 0.0, theta[credited])
    return values if model.max_violation(values) <= 1e-6 else None
