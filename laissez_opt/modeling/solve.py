"""One entry point for every route: ``solve_model(model, solver=..., via=...)``."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import InputError, NoSolutionError
from ..limits import remaining
from .linear import LinearModel
from .solution import Solution, relative_gap

__all__ = ["solve_model", "pick_route", "SOLVERS", "ROUTES"]

SOLVERS = ("highs", "ortools")
#: ``solver="auto"``: the route :func:`pick_route` chooses.
AUTO = "auto"
#: HiGHS options of the automatic route for a transportation LP that min-cost flow cannot take
#: (``benchmarks/scaling_routes.py`` measured presolve off faster on the dense assignment LP).
TRANSPORTATION_HIGHS_OPTIONS = {"presolve": "off"}


def pick_route(model: LinearModel, *, duals: bool = False) -> tuple[str, str | None, dict, str]:
    """The fastest exact route for ``model``: ``(solver, backend, highs_options, reason)``.

    * A transportation structure (``capacity``/``demand`` of a b-matching, nothing
      else) with integer capacities and bounds, whose objective coefficients scale
      to 64-bit integers within ``1e-12`` of the largest (the flow solver's own
      test, :func:`laissez_opt.modeling.ortools_route._integer_scale`): OR-Tools min-cost flow (network simplex family,
      ``O`` of a few passes over the arcs; proven optimal in integer arithmetic).
      Not when duals are wanted (the flow solver reports none).
    * Otherwise HiGHS; a transportation LP whose costs do not scale exactly
      runs with presolve off (:data:`TRANSPORTATION_HIGHS_OPTIONS`).

    The flow solver has no time limit of its own: it runs to its (proven)
    optimum, which on the measured cases took a fraction of HiGHS's time
    (``docs/benchmarks.md``, "Scale").

    >>> import numpy as np
    >>> from laissez_opt.modeling import LinearModel
    >>> m = LinearModel("toy", sense="max")
    >>> x = m.add_variables("x", 2, upper=1.0)
    >>> m.add_transportation(x, left=np.array([0, 1]), right=np.array([0, 0]), left_capacity=np.array([1.0, 1.0]),
    ...                      right_capacity=np.array([1.0]), left_block="demand", right_block="capacity")
    >>> m.set_objective(x, np.array([0.5, 0.25]))
    >>> pick_route(m)[:2]
    ('ortools', 'min_cost_flow')
    >>> m.set_objective(x, np.array([1e19, 0.25]))   # beyond 64-bit integer costs
    >>> pick_route(m)[:3]
    ('highs', None, {'presolve': 'off'})
    """
    t = model.transportation()
    if t is None:
        return "highs", None, {}, "not a transportation structure: HiGHS"
    if not model.integrality_is_free():
        return "highs", None, dict(TRANSPORTATION_HIGHS_OPTIONS), (
            "transportation structure with fractional capacities: HiGHS LP, presolve off")
    if duals:
        return "highs", None, {}, "duals wanted: HiGHS (min-cost flow reports none)"
    from .ortools_route import _exact_integer_costs

    if _exact_integer_costs(model):
        return "ortools", "min_cost_flow", {}, (
            "transportation structure with integer capacities and exactly scaled costs: OR-Tools min-cost flow")
    return "highs", None, dict(TRANSPORTATION_HIGHS_OPTIONS), (
        "transportation structure whose costs do not scale exactly to integers: HiGHS LP, presolve off")
ROUTES = ("direct", "pyomo")


def _empty_solution(model: LinearModel, solver: str, via: str) -> Solution:
    """A model with no columns (nothing to decide): optimal if every row admits activity 0."""
    row_lower, row_upper = model.row_bounds()
    route = f"{via}-{solver} (empty model)"
    if np.all(row_lower <= 0) and np.all(row_upper >= 0):
        value = model.objective_offset
        return Solution("optimal", np.zeros(0), value, value, 0.0, solver, route, 0.0, 0.0, "empty")
    return Solution("infeasible", None, None, None, None, solver, route, 0.0, 0.0, "empty")


#: Objective coefficients beyond this magnitude are scaled down by a power of two for the solvers.
OBJECTIVE_RANGE = 2.0**50


def _route_in_range(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals, highs_options):
    """:func:`_route` on an objective the solvers can hold: coefficients past ``OBJECTIVE_RANGE`` (about
    1.1e15) are divided by a power of two first, and the solution's numbers multiplied back.

    Weights and utilities each up to 1e9 are valid input, but their products near 1e18 made
    HiGHS stop with a solve error and OR-Tools' min-cost flow with BAD_COST_RANGE.  A power of two
    changes no digit of any coefficient, so the optimum and its allocation are those of the
    model as declared.
    """
    biggest = float(np.max(np.abs(model.objective), initial=0.0))
    if not biggest > OBJECTIVE_RANGE or not math.isfinite(biggest):
        return _route(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals, highs_options)
    factor = 2.0 ** math.ceil(math.log2(biggest / 2.0**20))
    original, offset = model.objective, model.objective_offset
    model.objective, model.objective_offset = original / factor, offset / factor
    try:
        solution = _route(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals, highs_options)
    finally:
        model.objective, model.objective_offset = original, offset
    for name in ("objective", "bound"):
        value = getattr(solution, name)
        if value is not None:
            setattr(solution, name, value * factor)
    if solution.duals is not None:
        solution.duals = type(solution.duals)(solution.duals.row * factor, solution.duals.column * factor)
    solution.details = {**(solution.details or {}), "objective_scale": 1.0 / factor}
    return solution


def solve_model(
    model: LinearModel,
    *,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    backend: str | None = None,
    verbose: bool = False,
    start: np.ndarray | Callable[[], np.ndarray] | None = None,
    duals: bool = False,
    highs_options: dict | None = None,
) -> Solution:
    """Solve a declared model.

    ``solver``: ``"highs"`` or ``"ortools"``; with ``via="pyomo"`` any solver name
    Pyomo knows (``"highs"`` maps to Pyomo's HiGHS interface).  ``via``:
    ``"direct"`` (matrix API / OR-Tools) or ``"pyomo"``.  ``backend`` forces an
    OR-Tools solver (``min_cost_flow``, ``glop``, ``cp_sat``, ``scip``).

    Inside :func:`laissez_opt.limits.deadline` (as every ``lo.solve`` runs) the
    solver gets only what is left of the run's time limit, so building and
    solving share one limit; when nothing is left, :class:`NoSolutionError`.

    ``start`` is a feasible column vector the method constructed (a heuristic
    allocation), or a function computing one when needed: when a route stops
    without a solution of its own (or with a worse one), the start is returned
    as the incumbent with status ``time_limit`` and the best bound known.  It is
    not given to the solver as a MIP start: HiGHS 1.13.1 can return a worse
    point labelled optimal after ``setSolution``.

    ``solver="auto"`` takes the route :func:`pick_route` chooses and records
    why in ``Solution.details["route_choice"]``.

    ``duals=True`` asks an LP route (HiGHS, GLOP, Pyomo's HiGHS plugin) for the
    optimum's duals (:class:`~laissez_opt.modeling.solution.Duals`, with the
    basis on HiGHS); other routes leave ``Solution.duals`` None.

    ``highs_options``: further HiGHS options by name for the HiGHS route (a
    method's measured tuning, e.g. the interior point method on large LPs); the
    other routes ignore them.
    """
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time limit must be > 0 seconds, got {time_limit!r}", path="time_limit")
    time_limit = remaining(time_limit)
    if time_limit is not None and time_limit <= 0.0:
        reason = (f"the time limit ran out before {model.name!r} reached the solver "
                  f"({model.n_cols} columns, {model.n_rows} rows declared)")
        if start is None:
            raise NoSolutionError(reason)
        return _start_solution(model, _vector(start), solver, via, reason)
    reason = None
    if solver == AUTO:
        if via != "direct":
            solver, reason = "highs", "via pyomo: HiGHS"
        else:
            solver, picked, route_options, reason = pick_route(model, duals=duals)
            backend = backend or picked
            highs_options = {**route_options, **(highs_options or {})}
    if model.n_cols == 0:
        return _empty_solution(model, solver, via)
    try:
        solution = _route_in_range(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals,
                                   highs_options)
    except NoSolutionError as exc:
        if start is None:
            raise
        return _start_solution(model, _vector(start), solver, via, f"{exc}; the heuristic start is the incumbent")
    if start is not None and solution.status in ("time_limit", "feasible") and solution.values is not None:
        start = _vector(start)
        own = model.objective_value(start)
        better = own > solution.objective if model.sense == "max" else own < solution.objective
        if better:
            solution.values, solution.objective = start, own
            solution.gap = relative_gap(own, solution.bound)
            solution.message = (solution.message + "; " if solution.message else "") + (
                "the heuristic start beat the solver's incumbent")
    if reason is not None:
        solution.details = {**(solution.details or {}), "route_choice": reason}
    return solution


def _vector(start) -> np.ndarray:
    return np.asarray(start() if callable(start) else start, dtype=np.float64)


def _start_solution(model: LinearModel, start: np.ndarray, solver: str, via: str, reason: str) -> Solution:
    """The method's heuristic start as a ``time_limit`` incumbent, bounded by the column bounds."""
    values = np.asarray(start, dtype=np.float64)
    objective = model.objective_value(values)
    bound = model.trivial_bound()
    return Solution("time_limit", values, objective, bound, relative_gap(objective, bound), solver,
                    f"{via}-{solver} (heuristic start)", 0.0, 0.0, "no solution", reason)


def _route(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals=False,
           highs_options=None) -> Solution:
    if via == "pyomo":
        from .pyomo_route import solve_pyomo

        return solve_pyomo(model, solver=solver, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose,
                           duals=duals)
    if via != "direct":
        raise InputError(f"unknown route {via!r}; choose one of {', '.join(ROUTES)}", path="via")
    if solver == "highs":
        from .highs_route import solve_highs

        return solve_highs(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose,
                           duals=duals, highs_options=highs_options)
    if solver == "ortools":
        from .ortools_route import solve_ortools

        return solve_ortools(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, backend=backend,
                             duals=duals)
    raise InputError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}", path="solver")
