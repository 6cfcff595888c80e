"""Lowering to a readable Pyomo model: named components, LP/MPS export, any Pyomo solver.

Each variable block becomes an indexed ``Var`` and each constraint block an
indexed ``Constraint`` with the block's name, so the exported LP file reads like
the formulation document.  This route is slower to build than the matrix
route (see ``benchmarks/welfare_scaling.py``); use it to inspect or export a
model, or to reach a solver that only Pyomo talks to.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import NoSolutionError, SolverError, SolverUnavailableError
from .linear import LinearModel
from .solution import Duals, Solution, relative_gap

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
            if lower[r] is None and upper[r] is None:
                return pyo.Constraint.Skip  # an unbounded row constrains nothing
            if lo == hi:
                if (lower[r] is None or lower[r] <= 0) and (upper[r] is None or upper[r] >= 0):
                    return pyo.Constraint.Skip  # an empty row that 0 satisfies constrains nothing
                # An empty row that 0 violates makes the model infeasible; keep it, on a zero coefficient.
                expr = LinearExpression(constant=0.0, linear_coefs=[0.0], linear_vars=[columns[0]])
                return (lower[r], expr, upper[r])
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


def _pyomo_duals(model: LinearModel, m, opt) -> Duals:
    """Row duals and reduced costs of the Pyomo model ``m`` just solved by ``opt`` (``appsi_highs``).

    Rows the Pyomo model skipped (empty or unbounded) have dual 0.  The plugin
    reports HiGHS's own values, whose signs are those of
    :class:`~laissez_opt.modeling.solution.Duals`.
    """
    constraint_duals = opt.get_duals()
    reduced = opt.get_reduced_costs()
    row = np.zeros(model.n_rows)
    for block in model.constraints.values():
        component = m.component(block.name)
        for r in range(block.size):
            if r in component:
                row[block.start + r] = constraint_duals.get(component[r], 0.0)
    column = np.zeros(model.n_cols)
    for block in model.variables.values():
        var = m.component(block.name)
        column[block.slice] = [reduced.get(var[j], 0.0) for j in range(block.size)]
    return Duals(row, column)


def write_model(model: LinearModel, path: str) -> None:
    """Write ``model`` as an LP or MPS file (by suffix) with the declared names, atomically.

    Pyomo writes to a private temporary directory; the bytes then replace
    ``path`` in one rename (:func:`laissez_opt.io.write_atomic`), so an
    interrupted export never leaves a truncated file or destroys an old one.
    """
    import tempfile

    from ..io import check_destination, write_atomic

    from pyomo.opt import ProblemFormat

    check_destination(path)
    fmt = "mps" if str(path).lower().endswith(".mps") else "lp"
    # Pyomo's own format names: given as the strings "lp"/"mps", it prints a warning on standard output.
    problem_format = ProblemFormat.mps if fmt == "mps" else ProblemFormat.cpxlp
    with tempfile.TemporaryDirectory(prefix="laissez-opt-model-") as scratch:
        draft = os.path.join(scratch, f"model.{fmt}")
        to_pyomo(model).write(draft, format=problem_format, io_options={"symbolic_solver_labels": True})
        with open(draft, "rb") as handle:
            write_atomic(path, handle.read())


def solve_pyomo(
    model: LinearModel,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    relax_integrality: bool | None = None,
    duals: bool = False,
) -> Solution:
    """Build the Pyomo model and solve it with Pyomo's plugin for ``solver``.

    Like the matrix route, a model whose LP relaxation is provably integral is
    solved as an LP; if the solver returns a non-integral point, the MIP is
    solved instead.  ``duals=True`` attaches the LP duals (:func:`_pyomo_duals`)
    when the plugin is HiGHS's (``appsi_highs``) and the model is an LP.
    """
    import logging

    import pyomo.environ as pyo
    from pyomo.opt import TerminationCondition as TC

    t0 = time.perf_counter()
    relax = model.integrality_is_free() if relax_integrality is None else relax_integrality
    m = to_pyomo(model, relax_integrality=relax)
    plugin = PYOMO_SOLVERS.get(solver, solver)
    # Pyomo logs a warning and a traceback for an unknown solver name; we report it in one line.
    quiet = logging.getLogger("pyomo")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        opt = pyo.SolverFactory(plugin)
        available = opt is not None and opt.available(exception_flag=False)
    except Exception:
        available = False
    finally:
        quiet.setLevel(level)
    if not available:
        raise SolverUnavailableError(f"Pyomo solver {plugin!r} is not available here")
    options = {}
    if plugin == "appsi_highs":
        opt.config.mip_gap = mip_gap
        if threads is not None:
            opt.highs_options["threads"] = int(threads)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        results = opt.solve(m, tee=verbose, load_solutions=False, timelimit=time_limit, **options)
    except RuntimeError as exc:
        if "infeasible" in str(exc).lower():
            return Solution("infeasible", None, None, None, None, solver, f"pyomo-{plugin}", build_s,
                            time.perf_counter() - t1, "infeasible")
        raise
    solve_s = time.perf_counter() - t1
    term = results.solver.termination_condition
    route = f"pyomo-{plugin}"
    if term == TC.infeasible:
        return Solution("infeasible", None, None, None, None, solver, route, build_s, solve_s, str(term))
    if term in (TC.unbounded, TC.infeasibleOrUnbounded):
        raise SolverError(f"Pyomo/{plugin} returned {term} for model {model.name!r}")
    try:
        m.solutions.load_from(results)
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
        rounded = np.where(integer, np.round(values), values)
        if np.max(np.abs(values - rounded), initial=0.0) > 1e-9:
            return solve_pyomo(model, solver=solver, time_limit=time_limit, threads=threads, mip_gap=mip_gap,
                               verbose=verbose, relax_integrality=False, duals=duals)
        values = rounded
    objective = model.objective_value(values)
    sense_max = model.sense == "max"
    problem = results.problem
    bound = problem.upper_bound if sense_max else problem.lower_bound
    bound = float(bound) if bound is not None and np.isfinite(float(bound)) else None
    if term == TC.optimal:
        if bound is None or (not model.is_integer or relax):
            bound = objective
        solution = Solution("optimal", values, objective, bound, relative_gap(objective, bound), solver, route,
                            build_s, solve_s, str(term))
        if duals and plugin == "appsi_highs" and (not model.is_integer or relax):
            solution.duals = _pyomo_duals(model, m, opt)
        return solution
    if bound is None:
        bound = model.trivial_bound()
    state = "time_limit" if term in (TC.maxTimeLimit,) else "feasible"
    return Solution(state, values, objective, bound, relative_gap(objective, bound), solver, route, build_s, solve_s, str(term))
