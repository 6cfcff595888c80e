"""One entry point for every route: ``solve_model(model, solver=..., via=...)``."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import InputError, NoSolutionError
from ..limits import remaining
from .linear import LinearModel
from .solution import Solution, relative_gap

__all__ = ["solve_model", "SOLVERS", "ROUTES"]

SOLVERS = ("highs", "ortools")
ROUTES = ("direct", "pyomo")


def _empty_solution(model: LinearModel, solver: str, via: str) -> Solution:
    """A model with no columns (nothing to decide): optimal if every row admits activity 0."""
    row_lower, row_upper = model.row_bounds()
    route = f"{via}-{solver} (empty model)"
    if np.all(row_lower <= 0) and np.all(row_upper >= 0):
        value = model.objective_offset
        return Solution("optimal", np.zeros(0), value, value, 0.0, solver, route, 0.0, 0.0, "empty")
    return Solution("infeasible", None, None, None, None, solver, route, 0.0, 0.0, "empty")


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

    ``duals=True`` asks an LP route (HiGHS, GLOP, Pyomo's HiGHS plugin) for the
    optimum's duals (:class:`~laissez_opt.modeling.solution.Duals`, with the
    basis on HiGHS); other routes leave ``Solution.duals`` None.
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
    if model.n_cols == 0:
        return _empty_solution(model, solver, via)
    try:
        solution = _route(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals)
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


def _route(model, solver, via, time_limit, threads, mip_gap, backend, verbose, duals=False) -> Solution:
    if via == "pyomo":
        from .pyomo_route import solve_pyomo

        return solve_pyomo(model, solver=solver, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose,
                           duals=duals)
    if via != "direct":
        raise InputError(f"unknown route {via!r}; choose one of {', '.join(ROUTES)}", path="via")
    if solver == "highs":
        from .highs_route import solve_highs

        return solve_highs(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose,
                           duals=duals)
    if solver == "ortools":
        from .ortools_route import solve_ortools

        return solve_ortools(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, backend=backend,
                             duals=duals)
    raise InputError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}", path="solver")
