"""Weighted max-min fairness, lexicographic (leximin), ``models.md`` item 3.

Normalised utility of agent ``i`` under allocation ``x``:

.. math::

    v_i(x) = \\frac{U_i(x)}{w_i E_i}, \\qquad U_i(x) = \\sum_{c,r} u_{i,c,r}\\, x_{i,c,r},

with the normaliser ``E_i = 1`` (``normalizer="raw"``) or ``E_i = U_i^ex / w_i``
(``"equal_share"``, the default; ``U_i^ex`` is the utility of the weighted
time-equal share, :func:`laissez_opt.shares.equal_share_utilities`), which makes
``v_i = phi_i``, the sharing-incentive ratio.  The leximin allocation maximises
``min_i v_i``, then, holding the agents that cannot improve at their level, the
next smallest, and so on, over the feasible allocations of
:mod:`laissez_opt.exact.common` (``capacity``: ``sum_i x[i,c,r] <= k_c``;
``demand``: ``sum_c x[i,c,r] <= d_i``).  Agents that get 0 in every feasible
allocation (no edge with positive utility in their window, or ``d_i = 0``)
are fixed at 0 and take no part in the levels.

Fractional mode (the time-sharing allocation of heterogeneity-aware
schedulers such as Gavel) is exact waterfilling by LPs; integral mode is a
sequence of MILPs (ordered outcomes) up to 32 agents, an exact lexicographic
bottleneck b-matching for unit demands (:mod:`laissez_opt.exact.bottleneck`),
and above 32 agents the rounded fractional leximin with one first-level MILP
and certified bounds (:mod:`laissez_opt.exact.rounded_leximin`).  The LP and
MILP engines are in :mod:`laissez_opt.exact.leximin`; ``models/maxmin.md`` states the guarantees,
among them: in fractional mode with ``"equal_share"``, the first level is
``min_i phi_i >= min_i q_i`` where ``q_i <= 1`` is the ratio of the demand-capped
equal share (:func:`laissez_opt.shares.capped_share_ratios`), so sharing
incentive (``min phi >= 1``) holds whenever no agent's demand cap or window
binds its equal share.

``objective`` is the first level, ``min_i v_i`` over the agents that take part;
``details["leximin"]`` maps every agent to its ``v_i``; ``details["levels"]``
lists the level of each LP (fractional) or the sorted leximin vector (integral).

References: Bertsekas & Gallager, *Data Networks* (1992), sec. 6.5.2 (max-min
fairness, waterfilling); Radunovic & Le Boudec, IEEE/ACM ToN 2007;
Narayanan et al., "Heterogeneity-aware cluster scheduling policies for deep
learning workloads" (Gavel), OSDI 2020 (max-min over normalised throughput);
thesis 002, eqs. 3.3-3.4 (``phi``, sharing incentive).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("V100", count=2), lo.Pool("K80", count=2)],
...                    agents=[lo.Agent("A"), lo.Agent("B")],
...                    edges=[lo.Edge("A", "V100", 4.0), lo.Edge("A", "K80", 1.0),
...                           lo.Edge("B", "V100", 2.0), lo.Edge("B", "K80", 2.0)])
>>> r = lo.solve(inst, "maxmin", fractional=True)
>>> r.status, round(r.objective, 6), {a: round(v, 6) for a, v in r.details["leximin"].items()}
('optimal', 1.230769, {'A': 1.230769, 'B': 1.230769})
"""

from __future__ import annotations

import time

import numpy as np

from ..declare import Model, capacity, demand, maxmin_floor
from ..errors import InputError
from ..instance import Instance
from ..method_spec import Method, Option, partition_options, refuse_partitions, solver_options
from ..modeling import LinearModel
from ..modeling.solution import Solution, relative_gap
from ..result import Result
from ..shares import equal_share_utilities
from .bottleneck import lexicographic_unit_matching, unit_demand_structure
from .classes import COMPRESS_CHOICES, class_estimate, compress_option, solve_on_classes
from .common import AllocationColumns, add_allocation, allocation_result, allocation_size
from .rounded_leximin import LEVEL_ROUTES, ORDERED_MAX_AGENTS, solve_first_level
from .leximin import (
    FREEZE_TESTS, LEXIMIN_OPTIONS, LeximinOutcome, LeximinPlan, declare_leximin, first_level, leximin_size,
    levels_plan, solve_leximin,
)

__all__ = ["NORMALIZERS", "normalizers", "build_maxmin", "solve_maxmin", "leximin_result"]

NORMALIZERS = ("equal_share", "raw")


def normalizers(instance: Instance, normalizer: str = "equal_share") -> np.ndarray:
    """``E_i`` per agent: 1 (``"raw"``) or ``U_i^ex / w_i`` (``"equal_share"``; 0 where the share is worthless).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=4)], agents=[lo.Agent("A", weight=3.0), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> normalizers(inst).tolist()
    [1.0, 2.0]
    """
    if normalizer == "raw":
        return np.ones(instance.n_agents)
    if normalizer == "equal_share":
        return equal_share_utilities(instance) / instance.weights
    raise InputError(f"unknown normalizer {normalizer!r}; choose one of {', '.join(NORMALIZERS)}", path="option normalizer")


def build_maxmin(
    instance: Instance, *, fractional: bool = False, normalizer: str = "equal_share"
) -> tuple[LinearModel, LeximinPlan]:
    """Declare the leximin model: ``x``, ``capacity``, ``demand`` and the level blocks.

    Fractional: the first level LP, declared with the public modelling API
    (:class:`laissez_opt.Model`): ``t``, the family ``level``
    (``maxmin_floor(x, t)``: ``U_i / (w_i E_i) - t >= 0`` for every agent taking
    part) and ``max t``, with the entries of ``x`` worth nothing bounded by 0;
    the engine then holds frozen agents at their levels.  Integral: ``r``,
    ``d``, ``excess`` and ``cumulative`` (ordered outcomes).  Returns the model and
    the :class:`~laissez_opt.exact.leximin.LeximinPlan` (its ``columns`` attribute
    holds the allocation's index arithmetic).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A")], edges=[lo.Edge("A", "P", 1.0)])
    >>> model, plan = build_maxmin(inst, fractional=True)
    >>> sorted(model.variables), sorted(model.constraints)
    (['t', 'x'], ['capacity', 'demand', 'level'])
    """
    E = normalizers(instance, normalizer)
    columns = AllocationColumns(instance, None)
    rounds = instance.rounds
    u = instance.edge_utility.reshape(-1) if rounds == 1 else instance.edge_utility[columns.edge, columns.round]
    scale = instance.weights[columns.agent] * E[columns.agent]
    group, group_cap = columns.agent * rounds + columns.round, np.repeat(instance.demands, rounds)
    if fractional:
        m = Model(instance, name="maxmin", integral=False)
        m.bound(m.x, upper=np.where((u > 0) & (scale > 0), np.inf, 0.0))  # columns without value add nothing
        m.add(demand(m.x))
        m.add(capacity(m.x))
        t = m.variable("t", description="the level being raised")
        if not m.add(maxmin_floor(m.x, t, normalizer), name="level").size:
            m.bound(t, upper=0.0)  # nobody takes part: nothing to raise
        m.maximize(t)
        model = m.lower()
        plan = levels_plan(model, agent=columns.agent, group=group, group_cap=group_cap, n_agents=instance.n_agents)
    else:
        with np.errstate(over="ignore"):  # an overflow is refused by value_unit, with its reason
            coef = np.where(scale > 0, u / np.where(scale > 0, scale, 1.0), 0.0)
        model = LinearModel("maxmin", sense="max")
        columns = add_allocation(model, instance, integral=True)
        plan = declare_leximin(model, columns.block, agent=columns.agent, coef=coef, group=group, group_cap=group_cap,
                               fractional=False, n_agents=instance.n_agents)
    columns.block = model.variables["x"]
    plan.columns = columns
    return model, plan


def leximin_result(
    instance: Instance,
    method: str,
    plan: LeximinPlan,
    outcome: LeximinOutcome,
    *,
    solver: str,
    fractional: bool,
    params: dict,
    details: dict,
) -> Result:
    """Package a leximin outcome as a :class:`Result` (objective: the smallest value taking part)."""
    columns: AllocationColumns = plan.columns
    solution = Solution(
        outcome.status, outcome.values, None, None, None, solver, outcome.route,
        outcome.build_s, outcome.solver_s, outcome.solver_status, outcome.message,
    )
    result = allocation_result(instance, method, columns, solution, fractional=fractional, params=params,
                               fit_capacity=method == "maxmin")
    values = plan.values(result.amounts.reshape(-1)) if result.amounts is not None else outcome.agent_values
    values = values / plan.unit  # the engine's units back to v_i
    taking_part = values[plan.included]
    objective = float(taking_part.min()) if taking_part.size else 0.0
    result.objective = objective
    if outcome.status == "optimal":
        result.bound, result.gap = objective, 0.0
    elif outcome.bound is not None:
        result.bound = float(outcome.bound) / plan.unit
        result.gap = relative_gap(objective, result.bound)
        if result.gap is None:
            result.message = (result.message + "; " if result.message else "") + (
                f"relative gap undefined: the incumbent's smallest value is {objective:g} "
                f"and the bound {result.bound:g} (absolute gap {result.bound - objective:g})")
    ids = [a.id for a in instance.agents]
    result.details = {
        **details,
        "leximin": {ids[i]: float(values[i]) for i in range(len(ids))},
        "levels": [float(v) / plan.unit for v in outcome.levels],
        "frozen_per_level": outcome.frozen_per_level,
        "excluded": [ids[i] for i in np.flatnonzero(~plan.included)],
        "solves": outcome.solves,
        "probes": outcome.probes,
        "solve_times": [float(s) for s in outcome.solve_times],
        "solver_s": outcome.solver_s,
        **outcome.extra,
    }
    if result.details.get("relaxed_first_level") is not None:
        result.details["relaxed_first_level"] /= plan.unit
    return result


def solve_maxmin(
    instance: Instance,
    *,
    fractional: bool = False,
    normalizer: str = "equal_share",
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    freeze: str = "dual",
    threads: int | None = None,
    mip_gap: float = 1e-9,
    backend: str | None = None,
    verbose: bool = False,
    compress: str = "auto",
    bottleneck: str = "auto",
    levels: str = "auto",
    partitions=None,
    partition_seed: int = 0,
    capacity_split: str = "equal",
    executor: str = "inline",
    workers: int | None = None,
    scheduler: str | None = None,
) -> Result:
    """Leximin allocation of ``U_i / (w_i E_i)``; see the module docstring.

    ``partitions``, ``partition_seed``, ``capacity_split``, ``executor``, ``workers``, ``scheduler``: the
    partitioned solve of ``lo.solve`` (:mod:`laissez_opt.partition`); this entry point
    solves the whole instance and refuses ``partitions``.

    ``freeze`` (fractional): ``"dual"`` or ``"probe"`` freezing certificate
    (:mod:`laissez_opt.exact.leximin`); routes without duals always probe.
    ``compress`` (fractional): solve on classes of identical agents
    (:mod:`laissez_opt.exact.classes`; class ``g`` of ``n_g`` members has weight
    ``n_g w``, demand ``n_g d``, and its value ``U_g / (n_g w E) `` is each member's
    ``v_i`` under the even split, ``models/compression.md``).
    ``bottleneck`` (integral, one round, every ``d_i`` in {0, 1}): ``auto`` solves the
    leximin exactly as a lexicographic bottleneck b-matching, a few min-cost flows
    (:mod:`laissez_opt.exact.bottleneck`); ``off`` runs the ordered-outcome MILPs.
    ``levels`` (integral, general demands): ``ordered_outcomes`` proves the whole leximin
    (``K`` MILPs with ``K^2`` auxiliary columns: small instances); ``first_level`` starts
    from the rounded fractional leximin, raises the smallest value by one MILP with
    symmetry breaking among identical agents and bounds it by the fractional first level
    (:mod:`laissez_opt.exact.rounded_leximin`; status ``feasible`` or ``time_limit``, the
    higher levels a greedy fill); ``auto`` takes the ordered outcomes up to
    ``ORDERED_MAX_AGENTS`` agents.  Partitioned through ``lo.solve`` (fractional),
    ``auto`` runs every leximin level in each part and ``first_level`` only the
    max-min LP (:mod:`laissez_opt.partition`).

    >>> import laissez_opt as lo
    >>> inst = lo.generate("gavel", 200, 3, seed=1)
    >>> on = solve_maxmin(inst, fractional=True, compress="on")
    >>> off = solve_maxmin(inst, fractional=True, compress="off")
    >>> on.details["compression"]["classes"] < 200, abs(on.objective - off.objective) < 1e-7
    (True, True)
    """
    refuse_partitions("maxmin", partitions)
    if freeze not in FREEZE_TESTS:
        raise InputError(f"unknown freeze test {freeze!r}; choose one of {', '.join(FREEZE_TESTS)}", path="option freeze")
    if compress not in COMPRESS_CHOICES:
        raise InputError(f"unknown compress {compress!r}; choose one of {', '.join(COMPRESS_CHOICES)}", path="option compress")
    if bottleneck not in BOTTLENECK_CHOICES:
        raise InputError(f"unknown bottleneck {bottleneck!r}; choose one of {', '.join(BOTTLENECK_CHOICES)}",
                         path="option bottleneck")
    if levels not in LEVEL_ROUTES:
        raise InputError(f"unknown levels {levels!r}; choose one of {', '.join(LEVEL_ROUTES)}", path="option levels")
    if not fractional and bottleneck == "auto" and unit_demand_structure(instance):
        return _unit_leximin(instance, normalizer, {"time_limit": time_limit, "fractional": False, "via": via,
                                                   "normalizer": normalizer}, time_limit)
    if fractional:
        run = lambda small, classes: solve_maxmin(  # noqa: E731
            small, fractional=True, normalizer=normalizer, solver=solver, via=via, time_limit=time_limit,
            freeze=freeze, threads=threads, mip_gap=mip_gap, backend=backend, verbose=verbose, compress="off")
        out = solve_on_classes(instance, compress, run, weight="total", same=("leximin",), members=("excluded",))
        if out is not None:
            return out
    if _uses_first_level(instance, {"fractional": fractional, "levels": levels}):
        return _first_level_leximin(instance, normalizer, time_limit=time_limit, threads=threads, mip_gap=mip_gap,
                                    verbose=verbose, via=via, solver=solver)
    start = time.perf_counter()
    model, plan = build_maxmin(instance, fractional=fractional, normalizer=normalizer)
    declare_s = time.perf_counter() - start
    # Whole devices: at most the devices of all rounds can serve distinct agents.
    served = None if fractional else float(instance.counts.sum()) * instance.rounds
    outcome = solve_leximin(
        model, plan, max_served=served, solver=solver, via=via, time_limit=time_limit, freeze=freeze,
        threads=threads, mip_gap=mip_gap, backend=backend, verbose=verbose,
    )
    params = {"time_limit": time_limit, "fractional": fractional, "via": via, "normalizer": normalizer}
    result = leximin_result(
        instance, "maxmin", plan, outcome, solver=solver, fractional=fractional, params=params,
        details={"normalizer": normalizer},
    )
    result.timing["build_s"] += declare_s
    return result


BOTTLENECK_CHOICES = ("auto", "off")


def _uses_first_level(instance: Instance, options: dict) -> bool:
    """Whether an integral run with these options takes the first-level route (option ``levels``)."""
    if options.get("fractional"):
        return False
    route = options.get("levels", "auto")
    return route == "first_level" or (route == "auto" and instance.n_agents > ORDERED_MAX_AGENTS)


def _value_coefficients(instance: Instance, normalizer: str) -> np.ndarray:
    """``a_{i,c,r} = u_{i,c,r} / (w_i E_i)`` per column of the allocation block (0 where ``w_i E_i = 0``)."""
    E = normalizers(instance, normalizer)
    columns = AllocationColumns(instance, None)
    u = instance.edge_utility.reshape(-1) if instance.rounds == 1 else instance.edge_utility[columns.edge, columns.round]
    scale = instance.weights[columns.agent] * E[columns.agent]
    return np.where(scale > 0, u / np.where(scale > 0, scale, 1.0), 0.0)


def _first_level_leximin(instance: Instance, normalizer: str, *, time_limit, threads, mip_gap, verbose,
                         via, solver="highs") -> Result:
    """Integral leximin, general demands, at any size: :mod:`laissez_opt.exact.rounded_leximin`.

    The fractional leximin (compressed on classes of identical agents when that pays)
    gives the rounded start and the bound ``t_1^frac``; then one first-level MILP.
    """
    from ..limits import remaining

    t0 = time.perf_counter()
    left = remaining(time_limit)
    frac = solve_maxmin(instance, fractional=True, normalizer=normalizer, time_limit=left, threads=threads,
                        mip_gap=mip_gap, verbose=verbose)
    frac_s = time.perf_counter() - t0
    frac_levels = frac.details.get("levels") or []
    # The first LP's optimum bounds the integral max-min even when a later level stopped.
    level = float(frac.objective) if frac.status == "optimal" else (float(frac_levels[0]) if frac_levels else None)
    amounts = frac.amounts if frac.amounts is not None else None
    left = None if left is None else left - frac_s
    outcome, plan = solve_first_level(instance, _value_coefficients(instance, normalizer), amounts, level,
                                      time_limit=None if left is None else max(left, 1e-3), threads=threads,
                                      mip_gap=mip_gap, verbose=verbose, solver=solver, via=via)
    outcome.extra["fractional_s"] = frac_s
    outcome.extra["fractional_status"] = frac.status
    params = {"time_limit": time_limit, "fractional": False, "via": via, "normalizer": normalizer,
              "levels": "first_level"}
    result = leximin_result(instance, "maxmin", plan, outcome, solver=solver, fractional=False, params=params,
                            details={"normalizer": normalizer, "levels_route": "first_level"})
    result.timing["build_s"] += frac_s
    return result


class _EdgeAmounts:
    """Amounts given as an ``E``-vector (one round), as :func:`allocation_result` reads them."""

    def __init__(self, instance: Instance):
        self.instance = instance

    def amounts(self, solution: Solution) -> np.ndarray:
        return solution.values.reshape(self.instance.n_edges, 1)


def _unit_leximin(instance: Instance, normalizer: str, params: dict, time_limit: float | None = None) -> Result:
    """Integral leximin with one round and unit demands by lexicographic min-cost flows (exact).

    Stopped by the time limit between stages, the last stage's allocation is returned
    with status ``time_limit``: its smallest value is proven optimal (bound = objective)
    when the stages settled every value up to it, else the bound is the smallest
    standalone maximum ``min_i max_c a_{i,c}``.
    """
    t0 = time.perf_counter()
    E = normalizers(instance, normalizer)
    agent = instance.edge_agent
    scale = instance.weights[agent] * E[agent]
    coef = np.where(scale > 0, instance.edge_utility[:, 0] / np.where(scale > 0, scale, 1.0), 0.0)
    arrival = np.fromiter((a.arrival for a in instance.agents), dtype=np.int64, count=instance.n_agents)
    usable = (arrival[agent] <= 0) & (instance.last_rounds[agent] >= 0)
    placed, stats = lexicographic_unit_matching(instance, coef, usable, time_limit)
    amounts = (placed[agent] == instance.edge_pool).astype(np.float64)
    values = np.bincount(agent, weights=coef * amounts, minlength=instance.n_agents)
    taking = np.zeros(instance.n_agents, dtype=bool)
    demand_ok = np.array([a.demand != 0 for a in instance.agents], dtype=bool)
    taking[agent[(coef > 0) & usable & demand_ok[agent]]] = True
    objective = float(values[taking].min()) if taking.any() else 0.0
    total = time.perf_counter() - t0
    route = f"ortools-min-cost-flow (lexicographic bottleneck b-matching, {stats['stages']} stages)"
    if stats["complete"]:
        solution = Solution("optimal", amounts, objective, objective, 0.0, "ortools", route,
                            total - stats["solver_s"], stats["solver_s"], "OPTIMAL")
    else:
        ok = (coef > 0) & usable & demand_ok[agent]
        vmax = np.zeros(instance.n_agents)
        np.maximum.at(vmax, agent[ok], coef[ok])
        proven = objective <= stats["settled"] or (objective == 0.0 and stats["stages"] > 0)
        bound = objective if proven else float(vmax[taking].min())
        message = (f"time limit after {stats['stages']} stages: the leximin counts are settled for the values "
                   f"up to {stats['settled']:g}" + ("; the smallest value is proven" if proven else ""))
        solution = Solution("time_limit", amounts, objective, bound, relative_gap(objective, bound), "ortools",
                            route, total - stats["solver_s"], stats["solver_s"], "time limit", message)
    ids = [a.id for a in instance.agents]
    details = {
        "normalizer": normalizer,
        "leximin": dict(zip(ids, values.tolist())),
        "levels": sorted(values[taking].tolist()),
        "excluded": [ids[i] for i in np.flatnonzero(~taking)],
        "solves": stats["stages"],
        "bottleneck": stats,
    }
    return allocation_result(instance, "maxmin", _EdgeAmounts(instance), solution, fractional=False, params=params,
                             details=details)


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The first level of the leximin, the model ``lo.build(instance, "maxmin", ...)`` exports."""
    model, plan = build_maxmin(instance, fractional=bool(options.get("fractional")),
                               normalizer=options.get("normalizer", "equal_share"))
    return first_level(model, plan)


METHOD = Method(
    name="maxmin",
    kind="exact",
    objective="leximin of U_i / (w_i E_i), E_i = U_i^ex / w_i (equal_share) or 1 (raw); objective = min",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Weighted lexicographic max-min fairness: exact waterfilling LPs (fractional); integral: ordered-outcome "
            "MILPs, bottleneck b-matching (unit demands) or a rounded start with a first-level MILP and bounds.",
    run=solve_maxmin,
    options=solver_options(fractional=True, mip_gap=1e-9) + LEXIMIN_OPTIONS + (
        Option("normalizer", "choice", "equal_share", "E_i: U_i^ex / w_i (equal_share: values are phi_i) or 1 (raw)",
               choices=NORMALIZERS),
        compress_option(),
        Option("bottleneck", "choice", "auto", "integral, one round, unit demands: exact leximin by lexicographic "
               "min-cost flows (auto) or the ordered-outcome MILPs (off)", choices=BOTTLENECK_CHOICES),
        Option("levels", "choice", "auto", "integral, general demands: the exact ordered-outcome MILPs "
               "(ordered_outcomes), or the rounded fractional leximin with one first-level MILP, bounded by the "
               f"fractional first level (first_level); auto: ordered outcomes up to {ORDERED_MAX_AGENTS} agents. "
               "Partitioned (fractional): auto runs every leximin level in each part, first_level the max-min LP only",
               choices=LEVEL_ROUTES),
    ) + partition_options(),
    estimate=class_estimate(lambda instance, options: (
        allocation_size(instance, extra_variables=instance.n_agents + instance.n_pools,
                        note="lexicographic min-cost flows: one arc per edge, agent and pool")
        if not options.get("fractional") and options.get("bottleneck", "auto") == "auto"
        and unit_demand_structure(instance) else
        allocation_size(instance, extra_variables=1, extra_constraints=instance.n_agents,
                        extra_nonzeros=float(instance.n_edges) * instance.rounds + instance.n_agents,
                        note="rounded fractional leximin and one first-level MILP (level and order rows)")
        if _uses_first_level(instance, options) else leximin_size(instance, options)), applies=lambda instance, options: bool(options.get("fractional"))),
    build=_export_model,
    exported="the first level, max min_i v_i (fractional: max t over the level rows; integral: step 1 of the "
             "ordered outcomes); each further level is the same model with the agents found at earlier levels held there",
)
