"""Pareto check of a given allocation (``models.md`` item 2; thesis 002, eq. 3.6).

Given a feasible allocation ``x``, search for a feasible allocation ``y`` that
Pareto-dominates it:

.. math::

    \\max_{y, s} \\sum_i s_i \\quad\\text{s.t.}\\quad
    U_i(y) - s_i = U_i(x),\\ \\ s_i \\ge 0 \\ (\\text{gain}),\\qquad
    y \\text{ feasible (capacity, demand, windows)}

with ``U_i(y) = sum_{c,r} u_{i,c,r} y_{i,c,r}`` summed over all rounds.  The
optimum is 0 exactly when no feasible ``y`` gives every agent at least
``U_i(x)`` and some agent more: ``x`` is Pareto-efficient.  A positive optimum
comes with ``y`` as a certificate (every ``s_i`` is agent ``i``'s gain).  The
improving allocation is the shared allocation block of
:func:`laissez_opt.exact.common.add_allocation`, whose block name is ``x``; in
``models/pareto.md`` it is written ``y`` (the given allocation is a parameter).

``y`` is bounded (``0 <= y <= min(d_i, k_c)``), hence so is every ``s_i``: the
model always has a finite optimum, and ``y = x`` is feasible whenever ``x`` is
feasible and (integral mode) integral.  Integral mode is an ILP (integer
``y``, continuous ``s``); fractional mode an LP.  The ``gain`` rows break the
transportation structure, so no route relaxes integrality.  In integral mode
with a fractional ``x`` (a time-sharing allocation) the question is whether an
integral allocation dominates it; when the solver proves that no integral
allocation gives every agent ``U_i(x)`` (the model is infeasible), no integral
Pareto improvement exists.

The decision never trusts the solver alone: a positive optimum counts only
once the certificate ``y`` passes :func:`certificate_dominates`: plain Python
over the instance's records (no model code, no numpy views) finds ``y``
feasible and shows ``U_i(y) >= U_i(x) - tol`` for all ``i`` and
``U_j(y) > U_j(x) + tol`` for some ``j``, with
``tol = 1e-9 * max(1, sum_i U_i(x))``.  "Efficient" needs the solver's proof
(status optimal with total gain ``<= tol``, or a proven bound ``<= tol``).

Reference: thesis 002, section 3.4, eq. 3.6; Ehrgott, *Multicriteria
Optimization* (2005), ch. 4 (testing efficiency by a single linear program).

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.exact.pareto import pareto_check
>>> inst = lo.Instance(pools=[lo.Pool("A10", count=1)],
...                    agents=[lo.Agent("A"), lo.Agent("B")],
...                    edges=[lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)])
>>> idle = pareto_check(inst, [])          # nobody gets the device
>>> idle.efficient, idle.total_gain, idle.certificate
(False, 0.9, [{'agent': 'A', 'pool': 'A10', 'round': 0, 'amount': 1.0}])
>>> pareto_check(inst, [{"agent": "B", "pool": "A10", "amount": 1}]).efficient
True
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..modeling import LinearModel, solve_model
from ..modeling.solution import Solution
from ..result import Result, _clean, allocation_records, edge_utilities, utility_map
from .common import AllocationColumns, add_allocation

__all__ = [
    "ParetoCheck",
    "build_pareto_check",
    "pareto_check",
    "certificate_dominates",
    "allocation_amounts",
    "RELATIVE_TOLERANCE",
]

#: Relative tolerance of "zero gain": ``tol = RELATIVE_TOLERANCE * max(1, sum_i U_i(x))``.
RELATIVE_TOLERANCE = 1e-9
#: Utilities at most this fraction of the largest one are 0 in the declared model (not in the checks).
SMALL_UTILITY = 1e-9


@dataclass
class ParetoCheck:
    """Outcome of :func:`pareto_check`.

    ``efficient`` is True (proved: no Pareto improvement), False (a verified
    certificate exists) or None (undecided: a time limit, or a solver answer
    that its certificate did not confirm; ``message`` says which).  ``status``
    is the solver's status of the check model; ``total_gain`` and ``gains``
    (per agent id, ``U_i(y) - U_i(x)``) are recomputed from the certificate,
    0 when there is none.  ``bound`` is the solver's proven upper bound on the
    total gain.  ``certificate`` holds ``y`` as allocation records.
    """

    efficient: bool | None
    status: str
    mode: str
    total_gain: float
    gains: dict[str, float]
    utilities: dict[str, float]
    certificate: list[dict] | None = None
    certificate_utilities: dict[str, float] | None = None
    certificate_verified: bool | None = None
    objective: float | None = None
    bound: float | None = None
    tolerance: float = 0.0
    solver: str | None = None
    route: str | None = None
    solver_status: str | None = None
    timing: dict[str, float] = field(default_factory=dict)
    message: str = ""
    amounts: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dictionary (the certificate as allocation records)."""
        return _clean(
            {
                "efficient": self.efficient,
                "status": self.status,
                "mode": self.mode,
                "total_gain": self.total_gain,
                "gains": self.gains,
                "utilities": self.utilities,
                "certificate": self.certificate,
                "certificate_utilities": self.certificate_utilities,
                "certificate_verified": self.certificate_verified,
                "objective": self.objective,
                "bound": self.bound,
                "tolerance": self.tolerance,
                "solver": self.solver,
                "route": self.route,
                "solver_status": self.solver_status,
                "timing": self.timing,
                "message": self.message,
            }
        )


# --------------------------------------------------------------------------- the model


def build_pareto_check(
    instance: Instance, allocation_amounts: np.ndarray, fractional: bool = False
) -> tuple[LinearModel, AllocationColumns]:
    """Declare the Pareto-check model of the ``E x R`` allocation ``allocation_amounts``.

    Blocks: ``x`` (the improving allocation ``y``, from
    :func:`~laissez_opt.exact.common.add_allocation`, with its ``capacity`` and
    ``demand`` rows), ``s`` (``s_i >= 0``, one per agent) and ``gain``
    (``sum_{c,r} u_{i,c,r} y_{i,c,r} - s_i = U_i(x)``, one row per agent);
    objective ``max sum_i s_i``.  Utilities at most ``SMALL_UTILITY`` (1e-9) times the
    largest are declared as 0, in the rows and in ``U_i(x)`` alike (solvers treat such
    coefficients as noise); the verdict and the certificate use the true utilities.
    Returns ``(model, allocation columns)``.

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A")], edges=[lo.Edge("A", "P", 2.0)])
    >>> model, _ = build_pareto_check(inst, np.zeros((1, 1)))
    >>> model.summary()["variables"], model.summary()["constraints"]
    ({'x': 1, 's': 1}, {'demand': 0, 'capacity': 1, 'gain': 1})
    """
    amounts = np.asarray(allocation_amounts, dtype=np.float64)
    if amounts.shape != (instance.n_edges, instance.rounds):
        raise InputError(
            f"allocation array has shape {amounts.shape}, expected (edges, rounds) = "
            f"({instance.n_edges}, {instance.rounds})",
            path="$.allocation",
        )
    model = LinearModel("pareto", sense="max")
    columns = add_allocation(model, instance, integral=not fractional)
    n = instance.n_agents
    slack = model.add_variables(
        "s", n, lower=0.0, description="s_i: gain of agent i, U_i(y) - U_i(x) >= 0",
        labels=[a.id for a in instance.agents],
    )
    utility = instance.edge_utility[columns.edge, columns.round].copy()
    # Coefficients below 1e-9 of the largest are numerical noise to every LP solver (HiGHS drops
    # matrix entries below 1e-9; GLOP can even report the model infeasible): they are 0 here, in
    # the rows and in their right-hand sides alike, so that y = x stays exactly feasible.
    utility[np.abs(utility) <= SMALL_UTILITY * float(np.max(np.abs(utility), initial=0.0))] = 0.0
    base = np.bincount(columns.agent, weights=utility * amounts.ravel(), minlength=n)
    keep = utility != 0.0
    model.add_constraints(
        "gain",
        rows=np.concatenate([columns.agent[keep], np.arange(n)]),
        cols=np.concatenate([columns.block.columns(np.flatnonzero(keep)), slack.columns(np.arange(n))]),
        coefs=np.concatenate([utility[keep], -np.ones(n)]),
        lower=base,
        upper=base,
        n_rows=n,
        description="sum_{c,r} u[i,c,r] y[i,c,r] - s_i = U_i(x) for each agent i",
    )
    model.set_objective(slack, np.ones(n))
    return model, columns


# ------------------------------------------------------------------ the independent part


def _records_check(instance: Instance, records: list[dict], *, integral: bool, tol: float = 1e-7):
    """Feasibility problems and ``U_i`` of allocation records, in plain Python.

    Walks ``instance.agents``, ``pools`` and ``edges`` (never the numpy views or
    the model): every record on an edge, inside the horizon and the agent's
    window, non-negative (and integral when ``integral``); at most ``k_c``
    devices per pool and round, at most ``d_i`` per agent and round.  Returns
    ``(problems, utilities)``.
    """
    agents = {a.id: a for a in instance.agents}
    pools = {p.id: p for p in instance.pools}
    edges = {(e.agent, e.pool): e for e in instance.edges}
    problems: list[str] = []
    pool_load: dict[tuple[str, int], float] = {}
    agent_load: dict[tuple[str, int], float] = {}
    parts: dict[str, list[float]] = {a: [] for a in agents}
    for k, rec in enumerate(records):
        agent_id, pool_id, rnd, amount = rec["agent"], rec["pool"], rec.get("round", 0), rec["amount"]
        edge = edges.get((agent_id, pool_id))
        if edge is None or not (isinstance(rnd, int) and 0 <= rnd < instance.rounds):
            problems.append(f"record {k}: no edge ({agent_id!r}, {pool_id!r}) or round {rnd!r} outside the horizon")
            continue
        if not math.isfinite(amount) or amount < -tol:
            problems.append(f"record {k}: amount {amount!r}")
            continue
        if integral and abs(amount - round(amount)) > tol:
            problems.append(f"record {k}: fractional amount {amount!r} in an integral allocation")
        agent = agents[agent_id]
        last = int(instance.last_rounds[instance.agent_index[agent_id]])
        if amount > tol and not agent.arrival <= rnd <= last:
            problems.append(f"record {k}: agent {agent_id!r} holds a device in round {rnd}, outside {agent.arrival}..{last}")
        pool_load[(pool_id, rnd)] = pool_load.get((pool_id, rnd), 0.0) + amount
        agent_load[(agent_id, rnd)] = agent_load.get((agent_id, rnd), 0.0) + amount
        parts[agent_id].append(edge.utility_in(rnd) * amount)
    for (pool_id, rnd), load in sorted(pool_load.items()):
        if load > pools[pool_id].count + tol:
            problems.append(f"pool {pool_id!r} round {rnd}: {load:g} devices used of {pools[pool_id].count}")
    for (agent_id, rnd), load in sorted(agent_load.items()):
        demand = agents[agent_id].demand
        if demand is not None and load > demand + tol:
            problems.append(f"agent {agent_id!r} round {rnd}: {load:g} devices exceed demand {demand}")
    return problems, {a: math.fsum(p) for a, p in parts.items()}


def certificate_dominates(
    instance: Instance, x_records: list[dict], y_records: list[dict], *, integral: bool, tol: float
) -> tuple[bool, str, dict[str, float]]:
    """Independent check that ``y`` is feasible and Pareto-dominates ``x``.

    Plain Python over the instance's records (no model code, no numpy views):
    ``y`` is feasible (capacity, demand, windows, integrality in integral mode),
    ``U_i(y) >= U_i(x) - tol`` for every agent and ``U_j(y) > U_j(x) + tol`` for
    some agent.  Returns ``(ok, reason, U(y))``.
    """
    _, ux = _records_check(instance, x_records, integral=False)
    problems, uy = _records_check(instance, y_records, integral=integral)
    if problems:
        return False, "infeasible: " + "; ".join(problems[:3]), uy
    worse = [a for a in ux if uy[a] < ux[a] - tol]
    if worse:
        a = worse[0]
        return False, f"agent {a!r} loses: {uy[a]!r} < {ux[a]!r}", uy
    if not any(uy[a] > ux[a] + tol for a in ux):
        return False, "no agent gains more than the tolerance", uy
    return True, "feasible and Pareto-dominating", uy


def _feasibility_problem(instance: Instance, records: list[dict]) -> str | None:
    """The first reasons the given allocation ``x`` is infeasible (None if feasible)."""
    problems, _ = _records_check(instance, records, integral=False)
    return "; ".join(problems[:3]) if problems else None


def allocation_amounts(instance: Instance, allocation, *, source: str | None = None) -> np.ndarray:
    """The ``E x R`` amount array (aligned with ``instance.edges``) of allocation records.

    Records are ``{"agent", "pool", "round" (default 0), "amount"}``; repeated
    (agent, pool, round) records add up.  A record naming an unknown agent or
    pool, a pair without an edge, a round outside the horizon or an amount that
    is negative or not finite raises :class:`InputError` naming
    ``$.allocation[k]``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2)], agents=[lo.Agent("A")], edges=[lo.Edge("A", "P", 1.0)])
    >>> allocation_amounts(inst, [{"agent": "A", "pool": "P", "amount": 2}]).tolist()
    [[2.0]]
    """
    edge_of = {(e.agent, e.pool): k for k, e in enumerate(instance.edges)}
    agents = instance.agent_index
    pools = instance.pool_index
    out = np.zeros((instance.n_edges, instance.rounds), dtype=np.float64)
    for k, rec in enumerate(allocation):
        where = f"$.allocation[{k}]"
        if not isinstance(rec, dict) or "agent" not in rec or "pool" not in rec or "amount" not in rec:
            raise InputError("an allocation record needs agent, pool and amount", source=source, path=where)
        agent, pool, rnd, amount = rec["agent"], rec["pool"], rec.get("round", 0), rec["amount"]
        if agent not in agents:
            raise InputError(
                f"unknown agent id {agent!r} (instance {instance.name!r} has no such agent)",
                source=source, path=f"{where}.agent",
            )
        if pool not in pools:
            raise InputError(
                f"unknown pool id {pool!r} (instance {instance.name!r} has no such pool)",
                source=source, path=f"{where}.pool",
            )
        if (agent, pool) not in edge_of:
            raise InputError(
                f"agent {agent!r} is incompatible with pool {pool!r} (the instance has no such edge)",
                source=source, path=where,
            )
        if isinstance(rnd, bool) or not isinstance(rnd, int) or not 0 <= rnd < instance.rounds:
            raise InputError(
                f"round {rnd!r} is outside the horizon 0..{instance.rounds - 1}", source=source, path=f"{where}.round"
            )
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount < 0:
            raise InputError(
                f"amount must be a finite number >= 0, got {amount!r}", source=source, path=f"{where}.amount"
            )
        out[edge_of[(agent, pool)], rnd] += float(amount)
    return out


# ----------------------------------------------------------------------------- the check


def _as_amounts(instance: Instance, given) -> np.ndarray:
    if isinstance(given, Result):
        if given.status == "infeasible":
            raise InputError("the result is infeasible and carries no allocation to check", path="$.status")
        if given.amounts is not None and given.amounts.shape == (instance.n_edges, instance.rounds):
            return np.asarray(given.amounts, dtype=np.float64)
        return allocation_amounts(instance, given.allocation)
    if isinstance(given, np.ndarray):
        if given.shape != (instance.n_edges, instance.rounds):
            raise InputError(
                f"allocation array has shape {given.shape}, expected ({instance.n_edges}, {instance.rounds})",
                path="$.allocation",
            )
        if not np.all(np.isfinite(given)) or np.any(given < 0):
            raise InputError("allocation amounts must be finite and >= 0", path="$.allocation")
        return given.astype(np.float64)
    return allocation_amounts(instance, list(given))


def pareto_check(
    instance: Instance,
    result_or_amounts,
    *,
    fractional: bool = False,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    relaxation_first: bool = True,
    **options,
) -> ParetoCheck:
    """Is the given allocation ``x`` Pareto-efficient?  Solve the check model (module docstring).

    ``result_or_amounts``: a :class:`~laissez_opt.result.Result`, a list of
    allocation records ``{"agent", "pool", "round", "amount"}``, or an
    ``E x R`` array aligned with ``instance.edges``.  ``fractional`` selects the
    LP (time shares) instead of the ILP (whole devices).  ``x`` must be
    feasible (:class:`InputError` otherwise).  A positive optimum returns the
    verified improving allocation ``y`` in ``certificate`` with each agent's gain.

    Integral mode first solves the LP relaxation of the same declaration: its
    optimum bounds the ILP's, so an LP optimum of 0 proves the ILP optimum 0,
    and an integral optimal LP vertex is an optimal ILP solution.  Only when
    neither holds is the ILP solved (``route`` says which stage decided).
    ``relaxation_first=False`` skips the LP stage (tests use it to exercise the ILP).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=1)], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> half = [{"agent": "A", "pool": "P", "amount": 0.5}, {"agent": "B", "pool": "P", "amount": 0.5}]
    >>> pareto_check(inst, half, fractional=True).efficient   # time shares of a fully used device
    True
    >>> part = [{"agent": "A", "pool": "P", "amount": 0.5}, {"agent": "B", "pool": "P", "amount": 0.25}]
    >>> pareto_check(inst, part, fractional=True).total_gain   # a quarter of the device is idle
    0.25
    >>> check = pareto_check(inst, part)     # but no whole-device allocation gives A 0.5 and B 0.25
    >>> check.efficient, check.status
    (True, 'infeasible')
    """
    start = time.perf_counter()
    amounts = _as_amounts(instance, result_or_amounts)
    amounts = np.where(np.abs(amounts) < 1e-12, 0.0, amounts)
    x_records = allocation_records(instance, amounts, tol=0.0)
    problem = _feasibility_problem(instance, x_records)
    if problem is not None:
        raise InputError(f"the allocation to check is infeasible ({problem})", path="$.allocation")
    base = edge_utilities(instance, amounts)
    scale = max(1.0, float(np.sum(np.abs(base))))
    tol = RELATIVE_TOLERANCE * scale
    utilities = utility_map(instance, base)
    zero_gains = {a.id: 0.0 for a in instance.agents}
    build_s = solve_s = 0.0
    stages: list[str] = []

    def run(relaxed: bool, limit: float | None):
        nonlocal build_s, solve_s
        t0 = time.perf_counter()
        model, columns = build_pareto_check(instance, amounts, relaxed)
        build_s += time.perf_counter() - t0
        try:
            solution = solve_model(model, solver=solver, via=via, time_limit=limit, **options)
        except NoSolutionError as err:  # stopped before any solution: nothing proved, nothing found
            stages.append(f"{'LP' if relaxed else 'ILP'}: no solution")
            solution = Solution(
                "time_limit", None, None, None, None, solver, "", time.perf_counter() - t0, 0.0, str(err),
            )
            return solution, columns
        build_s += solution.build_s
        solve_s += solution.solve_s
        stages.append(f"{'LP' if relaxed else 'ILP'} {solution.route}: {solution.status}")
        return solution, columns

    def finish(efficient, solution, status, message, **extra) -> ParetoCheck:
        t = time.perf_counter()
        return ParetoCheck(
            efficient, status, mode="fractional" if fractional else "integral", utilities=utilities,
            tolerance=tol, solver=solution.solver, route=" -> ".join(stages), solver_status=solution.solver_status,
            objective=solution.objective, bound=solution.bound, message=message,
            timing={"build_s": build_s, "solve_s": solve_s, "verify_s": t - t_solved, "total_s": t - start},
            **{"total_gain": 0.0, "gains": zero_gains, **extra},
        )

    def certificate(solution, columns, integral: bool):
        """(y, gains, total) of a solution; y rounded when integral."""
        y = columns.amounts(solution)
        if integral:
            y = np.round(y)
        y = np.where(y < 1e-12, 0.0, y)
        gains = edge_utilities(instance, y) - base
        gains = np.where(np.abs(gains) <= 1e-12 * scale, 0.0, gains)
        return y, gains, float(np.sum(gains))

    def improvement(solution, y, gains, total, integral: bool):
        y_records = allocation_records(instance, y, tol=0.0)
        ok, reason, uy = certificate_dominates(instance, x_records, y_records, integral=integral, tol=tol)
        if not ok:
            return None, f"the solver's improving allocation did not verify ({reason})"
        return finish(
            False, solution, solution.status,
            f"Pareto improvement found: total gain {total:.6g}; certificate verified independently",
            total_gain=total, gains={a.id: float(g) for a, g in zip(instance.agents, gains)},
            certificate=y_records, certificate_utilities=uy, certificate_verified=True, amounts=y,
        ), ""

    def unreproduced(solution, total) -> bool:
        return solution.objective is not None and solution.objective - total > 1e-6 * scale

    t_solved = time.perf_counter()
    if not fractional and relaxation_first:
        # Stage 1: the LP relaxation bounds the ILP optimum.
        lp, lp_columns = run(True, time_limit)
        t_solved = time.perf_counter()
        if lp.status == "optimal" and lp.values is not None:
            y, gains, total = certificate(lp, lp_columns, False)
            if total <= tol and not unreproduced(lp, total):
                return finish(
                    True, lp, "optimal",
                    "Pareto-efficient: the LP relaxation proves that not even time shares give some agent "
                    f"more without giving another less (total gain <= {tol:.3g}), so no integral allocation does",
                )
            if np.max(np.abs(y - np.round(y)), initial=0.0) <= 1e-9:
                y, gains, total = certificate(lp, lp_columns, True)
                found, _ = improvement(lp, y, gains, total, True)
                if found is not None:
                    found.message += " (an integral optimal vertex of the LP relaxation, hence an ILP optimum)"
                    return found
        remaining = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - start))
        solution, columns = run(False, remaining)
    else:
        solution, columns = run(fractional, time_limit)
    t_solved = time.perf_counter()

    if solution.status == "infeasible":
        integral_x = bool(np.all(np.abs(amounts - np.round(amounts)) <= 1e-9))
        if not fractional and not integral_x:
            return finish(
                True, solution, "infeasible",
                "no integral allocation gives every agent at least its utility under the given "
                "(fractional) allocation, so no integral Pareto improvement exists",
            )
        return finish(
            None, solution, "infeasible",
            "undecided: the solver reported the check infeasible although the given allocation itself is "
            "feasible (a numerical failure)",
        )

    if solution.values is None:
        return finish(
            None, solution, solution.status,
            f"undecided: the solver stopped before finding any solution ({solution.solver_status})",
        )
    y, gains, total = certificate(solution, columns, not fractional)
    reason = ""
    if total > tol:
        found, reason = improvement(solution, y, gains, total, not fractional)
        if found is not None:
            return found
    elif unreproduced(solution, total):
        reason = f"the solver reported a total gain of {solution.objective!r} that its allocation does not reproduce"
    if not reason and solution.status == "optimal":
        return finish(
            True, solution, "optimal",
            "Pareto-efficient: the solver proved that no feasible allocation gives some agent "
            f"more without giving another less (total gain <= {tol:.3g})",
        )
    if not reason and solution.bound is not None and solution.bound <= tol:
        return finish(
            True, solution, solution.status,
            f"Pareto-efficient: the proven bound on the total gain is {solution.bound:.3g} <= {tol:.3g}",
        )
    if not reason:
        reason = (
            f"the solver stopped ({solution.status}) before proving the total gain zero "
            f"(best bound {solution.bound!r})"
        )
    return finish(None, solution, solution.status, "undecided: " + reason)
