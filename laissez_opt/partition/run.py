"""Partitioned solving of an :class:`~laissez_opt.instance.Instance`: the parts on an executor, one Result.

:func:`solve_arrays` runs the array core (:mod:`laissez_opt.partition.core`) on
the chosen executor (``inline``, ``local`` worker processes, ``dask``;
:mod:`laissez_opt.harness.executors`) and returns the merged allocation with its
proven bound; :func:`solve_partitioned` wraps it for an instance and returns a
:class:`~laissez_opt.result.Result` with status ``feasible`` (never ``optimal``:
the merged allocation is feasible, and optimal only up to the gap it reports).

Gap: ``gap = (bound - objective) / objective`` for these maximisations, with
``bound`` the smallest Lagrangian bound over the price candidates; ``None`` with
the reason in ``details["partition"]["gap_note"]`` when the objective is 0.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from ..errors import InputError, LaissezOptError, NoSolutionError
from ..harness.executors import Failure, Limits, run_dask, run_inline, run_local_pool
from ..modeling.solution import relative_gap
from .levels import CAP_HINT_SHARE
from .themis import max_rho, themis_bound
from .core import (
    CAPACITY_SPLITS, NOT_RUN, PART_METHODS, STOPPED, Problem, check_feasible, equal_share_normalizer, inner_maximum, lagrangian_bound, merge, objective_of, participants, refine_prices,
    part_tasks, price_candidates, price_task, solve_part,
)

__all__ = ["AUTO_EDGES_PER_PART", "AUTO_EDGES_PER_MAXMIN_PART", "LEVELS", "PART_LEVELS", "resolve_parts", "solve_arrays", "solve_partitioned"]

#: ``partitions="auto"``: about this many edges per part (a part's LP then solves in about a second).
AUTO_EDGES_PER_PART = 100_000
#: ``partitions="auto"`` for ``maxmin`` beyond :data:`AUTO_EDGES_PER_PART` edges: its parts run a sequence of level LPs whose cost grows faster
#: than the part.  Measured, every level of 10^5 agents x 10^3 pools (5 x 10^5 edges; 2 workers):
#: 5 parts over 300 s, 50 parts 93.0 s (gap 0.000%), 100 parts 27.3 s (0.085%), 150 parts 9.3 s
#: (1.50%), 217 parts 5.8 s (4.8%).
AUTO_EDGES_PER_MAXMIN_PART = 5_000
#: Agents in the random sample whose LP duals price the welfare bound when the parts run as flows.
PRICE_SAMPLE = 20_000
#: Subgradient steps on the bound's prices after the best of the parts' candidates.
REFINE_STEPS = 200
#: The subgradient steps stop once they have taken this share of the parts' solve time ...
REFINE_SHARE = 0.2
#: ... or this many seconds, whichever is longer (every step is one pass over the edges).
REFINE_MIN_SECONDS = 1.0
#: Every-level maxmin on at least this many parts runs one part first, in this process, and gives the
#: others its common level as ``cap_below`` (:func:`~laissez_opt.partition.levels.leximin_part`); below
#: it, the one part solved alone would hold up the pool for too long a share of the run.
PILOT_MIN_PARTS = 32
#: With a time limit, the local pool and Dask end a part still running this long after the deadline
#: (the parts stop themselves at it; this catches a worker stuck outside the solver).
DEADLINE_GRACE_S = 10.0
#: Largest violation the merged allocation may show in the vectorised check.
FEASIBILITY_TOL = 1e-6
#: A bound below the merged (feasible) objective by at most this, relative, is solver tolerance: raised to it.
BOUND_TOL = 1e-6
#: Leximin levels a partitioned maxmin runs in each part: all of them, or the first (max-min) only.
LEVELS = ("all", "first")
#: maxmin's option ``levels`` (``lo.solve``, ``-p levels=``) -> :data:`LEVELS`: ``auto`` every leximin level,
#: ``first_level`` the max-min LP only (the level whose bound and gap are certified).
PART_LEVELS = {"auto": "all", "first_level": "first"}


def resolve_parts(partitions, n_edges: int, n_agents: int, method: str = "welfare") -> int:
    """The number of parts ``K``: an integer ``>= 1`` as given (at most the number of agents), or for
    ``"auto"`` ``ceil(E / AUTO_EDGES_PER_PART)``; ``maxmin`` beyond :data:`AUTO_EDGES_PER_PART` edges
    takes parts of :data:`AUTO_EDGES_PER_MAXMIN_PART` instead (below it the whole instance stays one
    part, as for every method: no split where the whole solve is quick and exact).

    >>> resolve_parts("auto", 250_000, 50_000), resolve_parts(4, 10, 3), resolve_parts("auto", 250_000, 50_000, "maxmin")
    (3, 3, 50)
    >>> resolve_parts("auto", 60_000, 20_000, "maxmin")
    1
    """
    if partitions == "auto":
        large = method == "maxmin" and n_edges > AUTO_EDGES_PER_PART
        k = math.ceil(n_edges / (AUTO_EDGES_PER_MAXMIN_PART if large else AUTO_EDGES_PER_PART))
    elif isinstance(partitions, int) and not isinstance(partitions, bool) and partitions >= 1:
        k = partitions
    else:
        raise InputError(f"partitions must be an integer >= 1 or 'auto', got {partitions!r}", path="option partitions")
    return max(1, min(k, n_agents))


def _run(tasks: list[dict], executor: str, workers: int | None, scheduler: str | None, limits: Limits | None = None):
    if executor == "inline":
        return run_inline(solve_part, tasks)
    count = max(1, min(workers or os.cpu_count() or 1, len(tasks)))
    if executor == "local":
        return run_local_pool(solve_part, tasks, workers=count, limits=limits)
    if executor == "dask":
        return run_dask(solve_part, tasks, workers=count, scheduler=scheduler, limits=limits)
    raise InputError(f"unknown executor {executor!r}; choose inline, local or dask", path="option executor")


#: What each capacity split gives a part, as the Result reports it.
CAPACITY_RULE_TEXT = {
    "whole": "floor(k_c / K) per part, the k_c mod K left over to parts (c + j) mod K",
    "equal": "k_c / K per part (fractional time shares)",
    "sqrt": "k_c sqrt(n_c^q) / sum_r sqrt(n_c^r) per part, n_c^q the part's edges at pool c (fractional time shares)",
}


def capacity_split_rule(capacity_split: str | None, integral: bool) -> str:
    """The split a run uses: ``"whole"`` devices for integral models, else ``capacity_split`` (default ``"equal"``).

    >>> capacity_split_rule(None, False), capacity_split_rule("sqrt", False), capacity_split_rule(None, True)
    ('equal', 'sqrt', 'whole')
    """
    if capacity_split is not None and capacity_split not in CAPACITY_SPLITS:
        raise InputError(f"capacity_split must be one of {', '.join(CAPACITY_SPLITS)}, got {capacity_split!r}",
                         path="option capacity_split")
    if integral:
        if capacity_split not in (None, "equal"):
            raise InputError("an integral split gives every part whole devices, floor(k_c / K) or one more; "
                             "capacity_split sqrt applies to the time-sharing models", path="option capacity_split")
        return "whole"
    return capacity_split or "equal"


def solve_arrays(problem: Problem, method: str, *, partitions=2, seed: int = 0, executor: str = "inline",
                 workers: int | None = None, scheduler: str | None = None, integral: bool = False,
                 refine: int = REFINE_STEPS, levels: str = "all", caps: bool = True, face: bool = True,
                 capacity_split: str | None = None, lag: np.ndarray | None = None,
                 active: np.ndarray | None = None, deadline: float | None = None) -> dict:
    """Split ``problem`` (``coef`` set, :meth:`Problem.for_method`), solve the parts, merge, verify, bound.

    ``levels`` (maxmin): ``"all"`` runs every leximin level in each part
    (:func:`~laissez_opt.partition.levels.leximin_part`), ``"first"`` only the max-min LP;
    either way the bound and gap are those of the first level (the max-min value).
    ``caps`` (maxmin, all levels): after a level held by standalone maxima, freeze by
    capped LPs every agent that all leximin optima hold at its maximum (exact, the
    capping lemma of ``models/partition.md``; default on); False runs the plain level
    loop, one LP per level (for comparison).
    ``face`` (maxmin, all levels): after a contested level, run the later levels on the
    level LP's optimal face, cut to the components that still hold free agents
    (:func:`~laissez_opt.partition.levels.optimal_face`; default on); False keeps the
    whole part's model (for comparison).
    ``integral`` splits whole devices, ``floor(k_c / K)`` or one more per part
    (:func:`~laissez_opt.partition.core.split_capacity`; integral welfare), else time
    shares by ``capacity_split``: ``"sqrt"``
    gives part ``q`` a share of pool ``c`` proportional to the square root of its
    edges at ``c``, ``"equal"`` (the default) gives every part ``k_c / K`` (POP's rule).
    ``refine``: at most this many subgradient steps lower the bound from the best
    candidate prices (:func:`~laissez_opt.partition.core.refine_prices`), within
    ``REFINE_SHARE`` of the parts' solve time (at least ``REFINE_MIN_SECONDS``).
    ``themis``: ``problem.coef`` holds ``a_e = u_e / X^id_i`` and ``lag``, ``active`` the
    whole instance's ``a_i`` and active agents (:func:`~laissez_opt.partition.themis.themis_arrays`);
    each part solves its ``min max rho`` (:func:`~laissez_opt.partition.themis.themis_part`),
    ``objective`` is the merged ``max_i rho_i``, ``values`` the rates ``r_i``, and ``bound``
    a certified LOWER bound on the whole ``rho*`` (:func:`~laissez_opt.partition.themis.themis_bound`;
    ``gap = (objective - bound) / objective``).
    ``deadline`` (seconds since the epoch): every part stops there (:func:`~laissez_opt.partition.core.solve_part`:
    a part not started by then gets no allocation, one running keeps its last feasible point), the
    bound's subgradient steps too; the bound stays valid, since any prices and level duals give one
    (``models/partition.md``).  The local pool also ends a part still running
    :data:`DEADLINE_GRACE_S` after it (a worker stuck outside the solver).
    Returns ``amounts`` (per edge), ``values`` (per agent), ``objective``, ``bound``,
    ``gap`` and ``details`` (``k``, ``seed``, ``executor``, per-part status, objective
    and seconds, the price candidate that gave the bound, the largest violation
    found by the vectorised feasibility check) and ``timing`` (``split_s``,
    ``solve_s``, ``merge_s``, ``verify_s``, ``bound_s``).

    >>> p = Problem(np.array([0, 1, 2, 3]), np.array([0, 0, 0, 0]), np.array([4.0, 3.0, 2.0, 1.0]),
    ...             np.array([2]), np.ones(4), np.ones(4)).for_method("welfare")
    >>> out = solve_arrays(p, "welfare", partitions=2, seed=0)
    >>> out["objective"] <= 7.0 <= out["bound"]
    True
    """
    if method not in PART_METHODS:
        raise InputError(f"partitioned solving supports {', '.join(PART_METHODS)}, not {method!r}", path="method")
    if levels not in LEVELS:
        raise InputError(f"levels must be one of {', '.join(LEVELS)}, got {levels!r}", path="option levels")
    for name, flag in (("caps", caps), ("face", face)):
        if not isinstance(flag, bool):
            raise InputError(f"{name} must be true or false, got {flag!r}", path=f"option {name}")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or not math.isfinite(deadline)):
        raise InputError(f"deadline must be a finite number of seconds since the epoch, got {deadline!r}",
                         path="deadline")
    timing = {}
    t0 = time.perf_counter()
    rule = capacity_split_rule(capacity_split, integral)
    k = resolve_parts(partitions, problem.n_edges, problem.n_agents, method)
    tasks, part_of = part_tasks(problem, k, seed, method, integral=integral, capacity_split=rule)
    if method == "maxmin":
        for task in tasks:
            task["levels"], task["caps"], task["face"] = levels, caps, face
    if method == "themis":
        if lag is None or active is None:
            raise InputError("partitioned themis needs the lags and active agents (themis_arrays)", path="method")
        alone = inner_maximum(problem, problem.coef)
        target = float(np.max(lag[active] + 1.0 / alone[active])) if active.any() and np.all(alone[active] > 0) \
            else None
        for task in tasks:
            task["lag"], task["active"] = lag[task["agents"]], active[task["agents"]]
            task["target"] = target
    jobs = list(tasks)
    if method == "welfare" and k > 1 and integral:
        # The parts run as min-cost flows; a random sample's LP supplies the prices of the bound.
        for task in tasks:
            task["flow"] = True
        jobs.insert(0, price_task(problem, PRICE_SAMPLE, seed))
    if deadline is not None:
        for task in jobs:
            task["deadline"] = float(deadline)
    timing["split_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    outcomes: dict[int, dict] = {}
    failures: dict[int, str] = {}
    first_caps = None
    if method == "maxmin" and levels == "all" and caps and k >= PILOT_MIN_PARTS:
        # The parts are alike (random shares of the same agents and pools), so one part's common
        # level tells the others where the chains of agents held by their own maxima end: each
        # part's first LP then holds the agents below CAP_HINT_SHARE of it at their maxima
        # (exact whatever the hint, models/partition.md; a miss costs one LP).
        pilot = solve_part(tasks[0])
        outcomes[tasks[0]["part"]] = pilot
        jobs = jobs[1:]
        level = pilot.get("common_level")
        first_caps = {"pilot_part": 1, "common_level": level, "share": CAP_HINT_SHARE,
                      "cap_below": None if level is None else CAP_HINT_SHARE * level}
        if level is not None:
            for task in jobs:
                task["cap_below"] = first_caps["cap_below"]
    cap = None if deadline is None else Limits(time=max(deadline - time.time(), 0.0) + DEADLINE_GRACE_S)
    for task, outcome in _run(jobs, executor, workers, scheduler, cap):
        if isinstance(outcome, Failure):
            failures[task["part"]] = f"{outcome.kind}: {outcome.message}"
            outcomes[task["part"]] = {"part": task["part"], "status": "failed", "objective": None, "x": None,
                                      "prices": None, "lam": None, "seconds": None}
        else:
            outcomes[task["part"]] = outcome
    timing["solve_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    amounts = merge(problem, tasks, outcomes)
    timing["merge_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    violation = check_feasible(problem, amounts)
    if violation > FEASIBILITY_TOL * max(1.0, float(problem.counts.max(initial=1))):
        raise LaissezOptError(f"the merged allocation violates a constraint by {violation:.3g}: a solver fault")
    if method == "themis":
        values = np.bincount(problem.edge_agent, weights=problem.coef * amounts, minlength=problem.n_agents)
        objective = max_rho(values, lag, active)
    else:
        objective, values = objective_of(problem, method, amounts)
    timing["verify_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    budget = max(REFINE_MIN_SECONDS, REFINE_SHARE * timing["solve_s"])
    if deadline is not None:
        budget = min(budget, deadline - time.time())
        if budget <= 0:
            refine = 0
    if method == "themis":
        bound, which = _themis_bound(problem, lag, active, jobs, outcomes)
    else:
        bound, which = _bound(problem, method, jobs, outcomes, k, objective, refine, budget)
    timing["bound_s"] = time.perf_counter() - t0
    clamped = False
    if method == "themis":
        # A minimisation: the bound is a lower bound; one above the feasible objective by
        # no more than the solvers' tolerance is that tolerance, not a negative gap.
        if bound is not None and objective < bound <= objective + BOUND_TOL * max(1.0, abs(objective)):
            bound, clamped = objective, True
        gap = None if bound is None or not math.isfinite(objective) else relative_gap(objective, min(bound, objective))
    else:
        if bound is not None and bound < objective <= bound + BOUND_TOL * max(1.0, abs(objective)):
            # The merged allocation is feasible, so the optimum is at least its objective: a dual
            # bound below it by no more than the solvers' tolerance is that tolerance, not a gap.
            bound, clamped = objective, True
        gap = None if bound is None else relative_gap(objective, max(bound, objective))
    cut = {name: [q + 1 for q in range(k) if outcomes[q]["status"] == name] for name in (STOPPED, NOT_RUN)}
    if bound is None:
        note = "no bound: no part returned duals"
    elif method == "themis" and not math.isfinite(objective):
        note = "an active agent got no rate (no device in its part, or no allocation from it): the merged max rho is infinite and no gap is defined"
    elif gap is None:
        note = "the merged objective is 0, so a relative gap is undefined; the absolute gap is bound - objective"
    elif method == "themis":
        note = ("gap = (objective - bound) / objective: objective the merged max rho, bound a certified lower "
                "bound on the whole rho* (models/partition.md, Themis)")
    else:
        note = "gap = (bound - objective) / objective, bound from the parts' duals (models/partition.md)"
    if any(outcomes[q].get("x") is None for q in range(k)):
        note += "; the parts that returned no allocation (time limit, failure) hold their agents at 0"
    details = {
        "k": k, "seed": seed, "executor": executor, "method": method,
        "levels": None if method != "maxmin" else levels,
        "part_lower": None if method != "themis" else [outcomes[q].get("lower") for q in range(k)],
        "parts_cpu_s": float(sum(outcomes[q].get("cpu_s") or 0.0 for q in range(k))),
        "price_sample": None if -1 not in outcomes else {
            "agents": int(jobs[0]["agents"].shape[0]), "status": outcomes[-1]["status"],
            "seconds": outcomes[-1]["seconds"]},
        "parts": [{"part": q + 1, "agents": int(tasks[q]["agents"].shape[0]), "edges": int(tasks[q]["edges"].shape[0]),
                   "status": outcomes[q]["status"], "objective": outcomes[q]["objective"],
                   "seconds": outcomes[q]["seconds"], "cpu_s": outcomes[q].get("cpu_s"),
                   "lps": outcomes[q].get("lps"), "cap_lps": outcomes[q].get("cap_lps"),
                   "cap_frozen": outcomes[q].get("cap_frozen"), "levels": None if outcomes[q].get("levels") is None
                   else len(outcomes[q]["levels"])} for q in range(k)],
        "failures": failures, "bound_from": which, "gap_note": note, "bound_raised_to_objective": clamped,
        "stopped_at_deadline": cut[STOPPED], "not_run": cut[NOT_RUN],
        "allocated_parts": sum(1 for q in range(k) if outcomes[q].get("x") is not None),
        "first_level_caps": None if first_caps is None else dict(
            first_caps, parts_capped=sum(1 for q in range(k) if outcomes[q].get("first_capped")),
            parts_missed=sum(1 for q in range(k) if outcomes[q].get("first_cap_failed"))),
        "feasibility": {"check": "vectorised capacity, demand and sign check of the merged amounts",
                        "max_violation": violation},
        "capacity_split": rule,
        "capacity_rule": CAPACITY_RULE_TEXT[rule],
    }
    return {"amounts": amounts, "values": values, "objective": objective, "bound": bound, "gap": gap,
            "details": details, "timing": timing, "part_of": part_of}


def _themis_bound(problem: Problem, lag, active, tasks, outcomes) -> tuple[float | None, str | None]:
    """The largest certified lower bound on the whole ``rho*``: the standalone bound
    ``max_i a_i + 1 / r_i^max`` and :func:`themis_bound` at the parts' combined duals
    (``lambda`` the parts' finish duals, ``p`` their mean, median or each part's own)."""
    best, which = -math.inf, None
    alone = inner_maximum(problem, problem.coef)
    if np.any(active & (alone <= 0)):
        return math.inf, "an active agent has no useful device: rho* is infinite"
    if active.any():
        best, which = float(np.max(lag[active] + 1.0 / alone[active])), "standalone best rate of each agent"
    lam = np.zeros(problem.n_agents)
    for task in tasks:
        out = outcomes[task["part"]]
        if out.get("lam") is not None:
            lam[task["agents"]] = out["lam"]
    for name, prices in price_candidates(tasks, outcomes, len(tasks)):
        value = themis_bound(problem, lag, active, lam, prices)
        if value > best:
            best, which = value, f"Lagrangian bound at the parts' finish duals and {name} capacity duals"
    return (None, None) if which is None else (best, which)


def _bound(problem: Problem, method: str, tasks, outcomes, k: int, target: float,
           refine: int, seconds: float | None = None) -> tuple[float | None, str | None]:
    candidates = price_candidates(tasks, outcomes, k)
    if not candidates:
        return None, None
    lam = None
    if method == "maxmin":
        lam = np.zeros(problem.n_agents)
        for task in tasks:
            out = outcomes[task["part"]]
            if out.get("lam") is not None:
                lam[task["agents"]] = out["lam"]
        total = lam.sum()
        if not total > 0:
            return None, None
        lam /= total
        # The parts' prices go with lambda summing to 1 in each part: scale them with lambda.
        candidates = [(name, p / total) for name, p in candidates]
    best, which, start = math.inf, None, None
    if method == "maxmin":
        # lambda on one agent and p = 0: t* <= v_i <= the most agent i could get alone.
        alone = inner_maximum(problem, problem.coef)[participants(problem)]
        if alone.size:
            best, which = float(alone.min()), "standalone maximum of the worst-placed agent"
    for name, prices in candidates:
        if best - target <= BOUND_TOL * max(1.0, abs(target)):
            break  # the bound meets the merged objective already: nothing left to prove
        value = lagrangian_bound(problem, prices, lam)
        if value < best:
            best, which, start = value, name, prices
    if refine and start is not None and best - target > BOUND_TOL * max(1.0, abs(target)):
        value, _, steps = refine_prices(problem, start, lam, target, iterations=refine, seconds=seconds)
        if value < best:
            best, which = value, f"{which} + {steps} subgradient steps"
    return best, which


def problem_of(instance) -> Problem:
    """The arrays of a one-round ``instance`` (its cached views)."""
    if instance.rounds != 1:
        raise InputError(f"partitioned solving takes one round, the instance has {instance.rounds}",
                         path="option partitions")
    if any(a.arrival > 0 for a in instance.agents):
        raise InputError("partitioned solving takes no arrival rounds", path="option partitions")
    return Problem(instance.edge_agent, instance.edge_pool, instance.edge_utility[:, 0], instance.counts,
                   instance.weights, instance.demands)


def solve_partitioned(instance, method: str = "welfare", *, partitions="auto", partition_seed: int = 0,
                      capacity_split: str = "equal", executor: str = "inline", workers: int | None = None,
                      scheduler: str | None = None, fractional: bool = False, normalizer: str = "equal_share", levels: str = "all",
                      check: bool = True, time_limit: float | None = None):
    """POP-style partitioned ``welfare``, fractional ``maxmin`` (leximin per part) or fractional ``themis``, as a Result.

    The agents are split uniformly at random (``partition_seed``) into ``K`` parts,
    each with ``floor`` or ``ceil`` of ``k_c / K`` devices of every pool (integral
    welfare) or a time share of it (``capacity_split``: ``"equal"``, ``k_c / K``, or
    ``"sqrt"``, in proportion to the square root of the part's edges at the pool),
    adding up to ``k_c``; each part's LP runs on ``executor``; the union of the parts'
    allocations is feasible for the whole instance (maxmin: each part's exact
    fractional leximin, every level, or with ``levels="first"`` the max-min LP alone; checked vectorised, and by
    :func:`laissez_opt.analysis.verify.verify` when ``check``).  ``bound`` is the
    Lagrangian bound ``min_p L(p)`` over the parts' capacity duals (welfare) or
    ``L(p, lambda)`` with the parts' level duals (max-min), ``models/partition.md``;
    ``gap = (bound - objective) / objective``; ``themis``: ``objective`` the merged
    ``max_i rho_i``, ``bound`` a certified lower bound on the whole ``rho*``
    (:func:`laissez_opt.partition.themis.themis_bound`) and ``gap = (objective - bound) / objective``.
    Status ``feasible``.

    ``time_limit`` (seconds, from this call): the parts stop at it (:func:`solve_arrays`'s
    ``deadline``); if any part stopped there or never started, the status is
    ``time_limit`` and the message counts them (their agents hold what the part's last
    feasible point gave, or nothing); the bound and gap stay proven.  If no part returned
    an allocation, :class:`~laissez_opt.errors.NoSolutionError` (exit code 4).  The merge,
    the check and the bound's evaluations (one pass over the edges per price candidate)
    run after the parts, past the limit if it is that tight.

    Reference: Narayanan et al., POP, SOSP 2021.

    >>> import laissez_opt as lo
    >>> inst = lo.generate("uniform", 40, 3, seed=2)
    >>> r = solve_partitioned(inst, "welfare", partitions=2)
    >>> r.status, r.objective <= lo.solve(inst, "welfare").objective <= r.bound
    ('feasible', True)
    """
    from ..analysis.metrics import basic_metrics
    from ..analysis.verify import verify
    from ..exact.maxmin import NORMALIZERS
    from ..result import Result, agent_values, allocation_columns, utility_map

    start = time.perf_counter()
    end = None if time_limit is None else time.time() + float(time_limit)
    if method in ("maxmin", "themis") and not fractional:
        raise InputError(f"partitioned {method} is fractional only: add fractional=True", path="option partitions")
    if normalizer not in NORMALIZERS:
        raise InputError(f"unknown normalizer {normalizer!r}; choose one of {', '.join(NORMALIZERS)}",
                         path="option normalizer")
    base = problem_of(instance)
    norm = None
    if method == "maxmin" and normalizer == "equal_share":
        norm = equal_share_normalizer(base)
    lag = active = None
    if method == "themis":
        from .themis import themis_arrays

        work = np.array([1.0 if a.work is None else float(a.work) for a in instance.agents])
        elapsed = np.array([float(a.elapsed) for a in instance.agents])
        coef, lag, active = themis_arrays(base, work, elapsed)
        problem = Problem(base.edge_agent, base.edge_pool, base.utility, base.counts, base.weights, base.demands, coef)
    else:
        problem = base.for_method(method, norm)
    integral = method == "welfare" and not fractional
    out = solve_arrays(problem, method, partitions=partitions, seed=partition_seed, executor=executor,
                       workers=workers, scheduler=scheduler, integral=integral, lag=lag, active=active,
                       levels=levels, capacity_split=None if integral and capacity_split == "equal" else capacity_split,
                       deadline=end)
    found = out["details"]
    if time_limit is not None and not found["allocated_parts"]:
        raise NoSolutionError(f"the time limit of {time_limit:g} s passed before any of the {found['k']} parts "
                              f"returned an allocation")
    amounts = out["amounts"]
    if integral:
        rounded = np.rint(amounts)
        if np.max(np.abs(rounded - amounts), initial=0.0) > 1e-6:
            raise LaissezOptError("a part's welfare LP returned a fractional vertex; solve with fractional=True")
        amounts = rounded
    if method == "welfare":
        objective = float(np.sum(problem.coef * amounts))
    else:
        objective = out["objective"]
    bound = out["bound"]
    if method == "themis":
        gap = out["gap"]
    else:
        gap = None if bound is None else relative_gap(objective, max(bound, objective))
    utilities = np.bincount(problem.edge_agent, weights=problem.utility * amounts, minlength=problem.n_agents)
    details = {"partition": out["details"]}
    if method == "maxmin":
        details["partition"]["levels_note"] = (
            "every part runs all its leximin levels (exact waterfilling within the part); bound and gap are "
            "those of the first level, the max-min value: later levels have no certified bound"
            if levels == "all" else
            "every part runs its first level only (the max-min LP, by interior point): the objective, bound and gap "
            "are certified; the values above each part's max-min are those of one optimal point, not a leximin")
        details["normalizer"] = normalizer
        details["leximin"] = utility_map(instance, out["values"])
    if method == "themis":
        idx = np.flatnonzero(active)
        order = idx[np.lexsort((idx, -lag[idx]))]  # priority: lag descending, ties in instance order
        ids = [a.id for a in instance.agents]
        details["bidders"] = [ids[i] for i in order.tolist()]
        details["bracket"] = [bound, objective]
        details["partition"]["themis_note"] = (
            "fractional Themis with fairness_knob 0: every active agent bids; each part minimises its own max rho "
            "(ideal rates and lags of the whole instance); bound: certified lower bound on the whole rho*; the "
            "partitioned allocation is not made work-conserving (no second stage)")
    k = out["details"]["k"]
    message = (f"POP partition into {k} random parts: a feasible allocation with a proven gap"
               + ("" if gap is None else f" of {gap:.3g}") + ", not an optimum")
    # A part whose own solve stopped short (leximin: a level LP in numerical trouble on every route
    # and every easing; Themis: a bracket not closed) keeps its last point: feasible, and the bound
    # stands, but its later values are not what the method defines: say so.
    short = [(p["part"], p["status"]) for p in found["parts"]
             if p["status"] not in ("optimal", "feasible", STOPPED, NOT_RUN, "failed")]
    if short:
        message += "; " + ", ".join(f"part {q} {text}" for q, text in short) + (
            " (its agents above that point hold the last point's values, not the method's)")
    failed = sorted(q + 1 for q in found["failures"] if q >= 0)
    if failed:
        message += f"; part(s) {', '.join(map(str, failed))} failed (details['partition']['failures']) and give their agents nothing"
    stopped, unstarted = found["stopped_at_deadline"], found["not_run"]
    status = "time_limit" if stopped or unstarted else "feasible"
    if status == "time_limit":
        # Without a run limit only a solver's own limit can stop a part (HiGHS reports it the same way).
        limit = "a solver's time limit" if time_limit is None else f"the time limit of {time_limit:g} s"
        message += (f"; {limit} stopped {len(stopped)} part(s) at their last feasible point"
                    f" and left {len(unstarted)} not started (their agents get nothing)")
    result = Result(
        instance=instance.name, method=method, status=status, solver="highs", objective=objective,
        bound=bound, gap=gap, allocation=allocation_columns(instance, amounts[:, None]),
        utilities=agent_values(instance, utilities), timing=out["timing"],
        params={"partitions": partitions, "partition_seed": partition_seed, "capacity_split": capacity_split,
                "executor": executor,
                "fractional": fractional, "time_limit": time_limit, "seed": partition_seed,  # the contract's keys
                **({"normalizer": normalizer, "levels": next(k for k, v in PART_LEVELS.items() if v == levels)}
                   if method == "maxmin" else {})},
        route="partitioned", solver_status=f"{k} parts",
        mode="integral" if integral else "fractional", message=message, details=details, amounts=amounts[:, None],
    )
    if check:
        t0 = time.perf_counter()
        outcome = verify(instance, result)
        if not outcome.ok:
            from ..errors import VerificationError

            raise VerificationError(f"partitioned {method} on {instance.name}: {outcome}")
        result.verified = True
        result.timing["library_verify_s"] = time.perf_counter() - t0
    result.metrics.update(basic_metrics(instance, utilities))
    result.timing["total_s"] = time.perf_counter() - start
    return result
