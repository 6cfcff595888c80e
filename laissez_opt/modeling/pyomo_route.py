"""Lowering to a readable Pyomo model: named components, LP/MPS export, any Pyomo solver.

Each variable block becomes an indexed ``Var`` and each constraint block an
indexed ``Constraint`` with the block's name, so the exported LP file reads like
the formulation document.  This route is slower to build than the matrix
route (see ``benchmarks/welfare_scaling.py``); use it to inspect or export a
model, or to reach a solver that only Pyomo talks to.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import NoSolutionError, SolverUnavailableError
from .linear import LinearModel
from .solution import Solution, relative_gap

__all__ = ["to_pyomo", "solve_pyomo", "write_model"]

# Pyomo solver plugin used for each solver name given on our side.
PYOMO_SOLVERS = {"highs": "appsi_highs"}


def to_pyomo(model: LinearModel, *, relax_integrality: bool = False):
    """Build a :class:`pyomo.environ.ConcreteModel` with one component per declared block."""
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pyo.ConcreteModel(name=model.name)
    columns = [None] * model.n_cols
    for block in model.variables.values():
        domain = pyo.Integers if block.integer and not relax_integrality else pyo.Reals
        lower = [None if np.isinf(v) else float(v) for v in block.lower]
        upper = [None if np.isinf(v) else float(v) for v in block.upper]
        var = pyo.Var(range(block.size), domain=domain, bounds=lambda _m, j: (lower[j], upper[j]))
        m.add_component(block.name, var)
        for j in range(block.size):
            columns[block.start + j] = var[j]
    for block in model.constraints.values():
        order = np.lexsort((block.cols, block.rows))
        rows, cols, coefs = block.rows[order], block.cols[order], block.coefs[order]
        bounds = np.searchsorted(rows, np.arange(block.size + 1))
        lower = [None if np.isinf(v) else float(v) for v in block.lower]
        upper = [None if np.isinf(v) else float(v) for v in block.upper]

        def rule(_m, r, rows_start=bounds, cols=cols, coefs=coefs, lower=lower, upper=upper):
            lo, hi = rows_start[r], rows_start[r + 1]
            if lo == hi:
                return pyo.Constraint.Skip
            expr = LinearExpression(
                constant=0.0,
                linear_coefs=coefs[lo:hi].tolist(),
                linear_vars=[columns[j] for j in cols[lo:hi].tolist()],
            )
            return (lower[r], expr, upper[r])

        m.add_component(block.name, pyo.Constraint(range(block.size), rule=rule))
    nz = np.flatnonzero(model.objective)
    m.objective = pyo.Objective(
        expr=LinearExpression(
            constant=model.objective_offset,
            linear_coefs=model.objective[nz].tolist(),
            linear_vars=[columns[j] for j in nz.tolist()],
        ),
        sense=pyo.maximize if model.sense == "max" else pyo.minimize,
    )
    return m


def write_model(model: LinearModel, path: str) -> None:
    """Write ``model`` as an LP or MPS file (by suffix) with the declared names."""
    fmt = "mps" if str(path).lower().endswith(".mps") else "lp"
    to_pyomo(model).write(str(path), format=fmt, io_options={"symbolic_solver_labels": True})


def solve_pyomo(
    model: LinearModel,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
) -> Solution:
    """Build the Pyomo model and solve it with Pyomo's plugin for ``solver``."""
    import pyomo.environ as pyo
    from pyomo.opt import TerminationCondition as TC

    t0 = time.perf_counter()
    relax = model.integrality_is_free()
    m = to_pyomo(model, relax_integrality=relax)
    plugin = PYOMO_SOLVERS.get(solver, solver)
    opt = pyo.SolverFactory(plugin)
    if opt is None or not opt.available(exception_flag=False):
        raise SolverUnavailableError(f"Pyomo solver {plugin!r} is not available here")
    if plugin == "appsi_highs":
        if time_limit is not None:
            opt.config.time_limit = float(time_limit)
        opt.config.mip_gap = mip_gap
        opt.config.load_solution = False
        if threads is not None:
            opt.highs_options["threads"] = int(threads)
    elif time_limit is not None:
        opt.options["time_limit"] = float(time_limit)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    results = opt.solve(m, tee=verbose, load_solutions=False) if plugin != "appsi_highs" else opt.solve(m, tee=verbose)
    solve_s = time.perf_counter() - t1
    term = results.solver.termination_condition
    route = f"pyomo-{plugin}"
    if term in (TC.infeasible, TC.infeasibleOrUnbounded):
        return Solution("infeasible", None, None, None, None, solver, route, build_s, solve_s, str(term))
    try:
        m.solutions.load_from(results) if plugin != "appsi_highs" else opt.load_vars()
    except Exception as exc:  # no incumbent to load
        raise NoSolutionError(f"Pyomo/{plugin} stopped ({term}) without a feasible solution") from exc
    t2 = time.perf_counter()
    values = np.empty(model.n_cols)
    for block in model.variables.values():
        var = m.component(block.name)
        values[block.slice] = [var[j].value if var[j].value is not None else 0.0 for j in range(block.size)]
    solve_s += time.perf_counter() - t2
    if relax and model.is_integer:
        _, _, integer = model.bounds()
        if np.max(np.abs(values[integer] - np.round(values[integer])), initial=0.0) > 1e-9:
            raise NoSolutionError("relaxation of a totally unimodular model returned a non-vertex solution")
        values = np.where(integer, np.round(values), values)
    objective = model.objective_value(values)
    sense_max = model.sense == "max"
    problem = results.problem
    bound = problem.upper_bound if sense_max else problem.lower_bound
    bound = float(bound) if bound is not None and np.isfinite(float(bound)) else None
    if term == TC.optimal:
        if bound is None or (not model.is_integer or relax):
            bound = objective
        return Solution("optimal", values, objective, bound, relative_gap(objective, bound), solver, route, build_s, solve_s, str(term))
    state = "time_limit" if term in (TC.maxTimeLimit,) else "feasible"
    return Solution(state, values, objective, bound, relative_gap(objective, bound), solver, route, build_s, solve_s, str(term))
