"""One entry point for every route: ``solve_model(model, solver=..., via=...)``."""

from __future__ import annotations

from ..errors import InputError, NoSolutionError
from ..limits import remaining
from .linear import LinearModel
from .solution import Solution

__all__ = ["solve_model", "SOLVERS", "ROUTES"]

SOLVERS = ("highs", "ortools")
ROUTES = ("direct", "pyomo")


def _empty_solution(model: LinearModel, solver: str, via: str) -> Solution:
    """A model with no columns (nothing to decide): optimal if every row admits activity 0."""
    import numpy as np

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
) -> Solution:
    """Solve a declared model.

    ``solver``: ``"highs"`` or ``"ortools"``; with ``via="pyomo"`` any solver name
    Pyomo knows (``"highs"`` maps to Pyomo's HiGHS interface).  ``via``:
    ``"direct"`` (matrix API / OR-Tools) or ``"pyomo"``.  ``backend`` forces an
    OR-Tools solver (``min_cost_flow``, ``glop``, ``cp_sat``, ``scip``).

    Inside :func:`laissez_opt.limits.deadline` (as every ``lo.solve`` runs) the
    solver gets only what is left of the run's time limit, so building and
    solving share one limit; when nothing is left, :class:`NoSolutionError`.
    """
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time limit must be > 0 seconds, got {time_limit!r}", path="time_limit")
    time_limit = remaining(time_limit)
    if time_limit is not None and time_limit <= 0.0:
        raise NoSolutionError(
            f"the time limit ran out before {model.name!r} reached the solver "
            f"({model.n_cols} columns, {model.n_rows} rows declared)"
        )
    if model.n_cols == 0:
        return _empty_solution(model, solver, via)
    if via == "pyomo":
        from .pyomo_route import solve_pyomo

        return solve_pyomo(model, solver=solver, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose)
    if via != "direct":
        raise InputError(f"unknown route {via!r}; choose one of {', '.join(ROUTES)}", path="--via")
    if solver == "highs":
        from .highs_route import solve_highs

        return solve_highs(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose)
    if solver == "ortools":
        from .ortools_route import solve_ortools

        return solve_ortools(model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, backend=backend)
    raise InputError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}", path="--solver")
