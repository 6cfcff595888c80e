"""Lowering to highspy's matrix API: the fast default route.

The declaration's arrays go straight into HiGHS through highspy's array
overload of ``Highs.passModel`` (column-wise sparse matrix, no per-variable
Python objects), so building costs about as much as a hand-written highspy
model (``benchmarks/welfare_scaling.py`` measures the ratio).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import NoSolutionError, SolverError
from .linear import LinearModel
from .solution import Duals, Solution, relative_gap

__all__ = ["solve_highs", "highs_duals", "limit_next_run"]


def limit_next_run(h, seconds: float | None) -> None:
    """Give the next ``h.run()`` of the ``highspy.Highs`` object ``h`` at most ``seconds`` (``None``: no limit).

    HiGHS compares its ``time_limit`` option with the run clock accumulated over every
    ``run()`` of the object, ``clearSolver`` or not, so a persistent model re-solved
    level after level must set the limit to the clock's reading plus what it may
    spend (with the plain value, a leximin that had spent 30 s in HiGHS and had 20 s
    left stopped its next LP at once).

    >>> import highspy
    >>> h = highspy.Highs()
    >>> limit_next_run(h, 5.0)
    >>> h.getOptionValue("time_limit")[1] == h.getRunTime() + 5.0
    True
    """
    import highspy

    if seconds is None:
        h.setOptionValue("time_limit", highspy.kHighsInf)
    else:
        h.setOptionValue("time_limit", h.getRunTime() + max(float(seconds), 0.0))


def highs_duals(h, column_lower: np.ndarray, row_lower: np.ndarray, *, basis: bool = True) -> Duals:
    """The duals (and, with ``basis``, the basis) of the LP optimum held by the ``highspy.Highs`` object ``h``.

    HiGHS reports ``col_dual = c - A^T row_dual`` in both senses, which is the
    convention of :class:`~laissez_opt.modeling.solution.Duals`; its basis
    status numbering (lower 0, basic 1, upper 2, zero 3, nonbasic 4) is kept,
    with "nonbasic" (4, a column HiGHS never moved) read as "at its lower bound"
    when that bound (``column_lower``, ``row_lower``) is finite and "zero" otherwise.
    The basis crosses from HiGHS as one Python object per row and column (about
    a second at 300,000 columns), so only callers that use it (the exact
    certificates) ask for it.

    >>> import numpy as np
    >>> from laissez_opt.modeling import LinearModel
    >>> m = LinearModel("toy", sense="max")
    >>> x = m.add_variables("x", 2, upper=np.array([np.inf, 0.5]))
    >>> _ = m.add_constraints("budget", rows=np.array([0, 0]), cols=x.columns([0, 1]), coefs=np.ones(2),
    ...                       upper=np.array([1.0]))
    >>> m.set_objective(x, np.array([1.0, 3.0]))
    >>> d = solve_highs(m, duals="basis").duals       # filled by highs_duals
    >>> d.row.tolist(), (d.column + 0.0).tolist(), d.column_basis.tolist()   # z = c - A^T y
    ([1.0], [0.0, 2.0], [1, 2])
    >>> solve_highs(m, duals=True).duals.column_basis is None
    True
    """
    sol = h.getSolution()
    if not basis:
        return Duals(np.asarray(sol.row_dual, dtype=np.float64), np.asarray(sol.col_dual, dtype=np.float64))
    basis = h.getBasis()
    column_basis = np.fromiter(map(int, basis.col_status), dtype=np.int8, count=len(basis.col_status))
    row_basis = np.fromiter(map(int, basis.row_status), dtype=np.int8, count=len(basis.row_status))
    if np.any(column_basis == 4):
        at = np.where(np.isfinite(column_lower), 0, 3)
        column_basis = np.where(column_basis == 4, at, column_basis).astype(np.int8)
    if np.any(row_basis == 4):
        at = np.where(np.isfinite(row_lower), 0, 3)
        row_basis = np.where(row_basis == 4, at, row_basis).astype(np.int8)
    return Duals(np.asarray(sol.row_dual, dtype=np.float64), np.asarray(sol.col_dual, dtype=np.float64),
                 row_basis, column_basis)


#: Objectives whose largest coefficient is below this are scaled up by HiGHS (:func:`objective_scale`).
SMALL_OBJECTIVE = 2.0 ** -7
#: The largest exponent :func:`objective_scale` returns (``2^1020`` is a finite double).
MAX_OBJECTIVE_SCALE = 1020


def objective_scale(objective: np.ndarray, offset: float = 0.0) -> int:
    """The power-of-two exponent ``s`` that brings the largest ``|c_j|`` (and ``|offset|``) into ``[0.5, 1)``,
    when it is below :data:`SMALL_OBJECTIVE`; 0 otherwise.

    HiGHS's optimality tolerances are absolute (reduced costs of ``1e-7``), so an
    objective of tiny coefficients (utilities of ``1e-8``) would be declared optimal
    at zero.  HiGHS applies the scale ``2^s`` itself (option ``user_objective_scale``)
    and reports the objective and duals unscaled; a power of two changes no
    digit of them.  HiGHS 1.13 leaves a MIP's dual bound in the scaled units
    (its log says so: the unscaling note names the objective only), so
    :func:`mip_bound` scales it back.

    >>> objective_scale(np.array([1.1920929e-08, 0.0])), objective_scale(np.array([0.5, 3.0]))
    (26, 0)
    >>> objective_scale(np.array([2.225073858507e-311]))   # subnormal: as far as a finite 2^s goes
    1020
    """
    if objective.size == 0:
        return 0
    largest = max(float(np.max(np.abs(objective))), abs(float(offset)))
    if not 0 < largest < SMALL_OBJECTIVE or not np.isfinite(largest):
        return 0
    # Capped so that 2^s stays a finite double: subnormal coefficients (below 2^-1022) are scaled
    # only as far as that allows.
    return min(int(-np.floor(np.log2(largest))) - 1, MAX_OBJECTIVE_SCALE)


def mip_bound(reported: float, objective: float, sense: str, scale: int) -> float:
    """The MIP dual bound in the model's units, from HiGHS's ``mip_dual_bound`` under ``user_objective_scale = scale``.

    HiGHS 1.13 unscales the objective of the solution but not the dual bound.  A
    dual bound lies on one side of every feasible objective (``<=`` when
    minimising, ``>=`` when maximising), so of the value as reported and the value
    divided by ``2^scale`` the one on the right side of ``objective`` is taken,
    the divided one when both are (on 1.13 it is the bound; were a later HiGHS
    to unscale the bound itself, both candidates are valid bounds and the divided
    one may only be weaker).  Neither on the right side is a solver failure.

    >>> mip_bound(0.5333333333333333, 0.004166666666666667, "min", 7)   # 0.5333 = 2^7 x 0.0041667
    0.004166666666666667
    >>> mip_bound(2.0, 3.0, "min", 0), mip_bound(3.5, 3.0, "max", 0)
    (2.0, 3.5)
    """
    if not scale or not np.isfinite(reported):
        return reported
    unscaled = reported / 2.0 ** scale
    slack = 1e-9 * max(1.0, abs(objective))

    def right_side(bound: float) -> bool:
        return bound <= objective + slack if sense == "min" else bound >= objective - slack

    for bound in (unscaled, reported):
        if right_side(bound):
            return bound
    raise SolverError(f"HiGHS reported a MIP dual bound of {reported!r} (objective scale 2^{scale}) on the wrong "
                      f"side of its own objective {objective!r}")


def _pass_model(h, model: LinearModel, integral: bool) -> None:
    """Hand the declaration's arrays to ``h`` in one call (highspy's array overload of ``passModel``).

    The arrays cross into HiGHS without per-element Python conversion, which
    assigning them one by one to a ``HighsLp`` would incur (several times
    slower at a million columns).
    """
    import highspy

    if len(model.variables) == 1:
        # One block: its bound arrays are the column bounds already; HiGHS copies them.
        (block,) = model.variables.values()
        lower, upper, any_integer = block.lower, block.upper, block.integer
        integer = None
    else:
        lower, upper, integer = model.bounds()
        any_integer = bool(integer.any())
    row_lower, row_upper = model.row_bounds()
    if highspy.kHighsInf != np.inf:  # pragma: no cover - HiGHS uses IEEE infinity
        inf = highspy.kHighsInf
        lower, upper = np.where(np.isinf(lower), -inf, lower), np.where(np.isinf(upper), inf, upper)
        row_lower = np.where(np.isinf(row_lower), -inf, row_lower)
        row_upper = np.where(np.isinf(row_upper), inf, row_upper)
    if integral and any_integer:
        # HiGHS 1.13's MIP presolve can return a wrong optimum when an integer column has
        # a fractional bound; the integer bounds are the same set, so pass those.
        mask = np.ones(model.n_cols, dtype=bool) if integer is None else integer
        lower = np.where(mask, np.ceil(lower - 1e-9), lower)
        upper = np.where(mask, np.floor(upper + 1e-9), upper)
    indptr, indices, values = model.csc_arrays()
    sense = highspy.ObjSense.kMaximize if model.sense == "max" else highspy.ObjSense.kMinimize
    # The array overload always reads one integrality entry per column (0: continuous).
    if integral and any_integer:
        if integer is None:
            integer = np.ones(model.n_cols, dtype=bool)
        integrality = np.where(integer, int(highspy.HighsVarType.kInteger), int(highspy.HighsVarType.kContinuous))
    else:
        integrality = np.zeros(model.n_cols, dtype=np.int32)
    status = h.passModel(
        int(model.n_cols),
        int(model.n_rows),
        int(indices.size),
        int(highspy.MatrixFormat.kColwise),
        int(sense),
        float(model.objective_offset),
        np.ascontiguousarray(model.objective, dtype=np.float64),
        np.ascontiguousarray(lower, dtype=np.float64),
        np.ascontiguousarray(upper, dtype=np.float64),
        np.ascontiguousarray(row_lower, dtype=np.float64),
        np.ascontiguousarray(row_upper, dtype=np.float64),
        np.ascontiguousarray(indptr[:-1], dtype=np.int32),
        np.ascontiguousarray(indices, dtype=np.int32),
        np.ascontiguousarray(values, dtype=np.float64),
        np.ascontiguousarray(integrality, dtype=np.int32),
    )
    if status == highspy.HighsStatus.kError:
        raise NoSolutionError(f"HiGHS rejected model {model.name!r} ({model.n_cols} columns, {model.n_rows} rows)")


def solve_highs(
    model: LinearModel,
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    relax_integrality: bool | None = None,
    duals: bool | str = False,
    highs_options: dict | None = None,
) -> Solution:
    """Solve ``model`` with HiGHS through highspy's matrix API.

    When the declaration proves its LP relaxation integral
    (:meth:`LinearModel.integrality_is_free`), the model is solved as an LP and
    the vertex returned is checked to be integral; should it not be (it can only
    happen on a non-vertex solution), the MIP is solved instead.  ``duals=True``
    attaches the LP optimum's duals (:func:`highs_duals`) to an optimal LP
    solution, ``duals="basis"`` its basis as well; ``highs_options`` sets further HiGHS options by name
    (tolerances, ``presolve``) for callers that need them.
    """
    import highspy

    t0 = time.perf_counter()
    free = model.integrality_is_free() if relax_integrality is None else relax_integrality
    integral = model.is_integer and not free
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    for name, value in (highs_options or {}).items():
        h.setOptionValue(name, value)
    if integral:
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        # The default absolute gap (1e-6) would call a solution optimal that is 1e-6 short.
        h.setOptionValue("mip_abs_gap", 1e-9)
    _pass_model(h, model, integral)
    scale = objective_scale(model.objective, model.objective_offset)
    if scale:
        h.setOptionValue("user_objective_scale", scale)
    # No MIP start is handed to HiGHS (``setSolution``): HiGHS 1.13.1 then returns a worse point
    # labelled optimal on some MIPs (found by brute force on the migration model, in both senses).
    # ``solve_model`` keeps a method's start and uses it when it beats what the solver returns.
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t1
    status = h.getModelStatus()
    info = h.getInfo()
    text = h.modelStatusToString(status)
    route = "highspy-mip" if integral else "highspy-lp"
    S = highspy.HighsModelStatus
    if status == S.kModelEmpty:
        # No columns (for example no required agent): the empty solution is optimal
        # if every row admits activity 0.
        row_lower, row_upper = model.row_bounds()
        if np.all(row_lower <= 0) and np.all(row_upper >= 0):
            values = np.zeros(model.n_cols)
            objective = model.objective_offset
            return Solution("optimal", values, objective, objective, 0.0, "highs", route, build_s, solve_s, text)
        return Solution("infeasible", None, None, None, None, "highs", route, build_s, solve_s, text)
    if status == S.kUnboundedOrInfeasible and not integral:
        # Presolve cannot tell the two apart; the simplex without presolve can.
        h.setOptionValue("presolve", "off")
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        text = h.modelStatusToString(status)
        solve_s = time.perf_counter() - t1
    if status == S.kInfeasible:
        return Solution("infeasible", None, None, None, None, "highs", route, build_s, solve_s, text)
    has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    if status == S.kOptimal:
        values = np.asarray(h.getSolution().col_value)
        objective = float(info.objective_function_value)
        if free and model.is_integer:
            _, _, integer = model.bounds()
            rounded = np.where(integer, np.round(values), values)
            if np.max(np.abs(values - rounded), initial=0.0) > 1e-9:
                return solve_highs(
                    model, time_limit=time_limit, threads=threads, mip_gap=mip_gap, verbose=verbose,
                    relax_integrality=False, duals=duals, highs_options=highs_options,
                )
            values = rounded
            objective = model.objective_value(values)
            route = "highspy-lp (totally unimodular: LP vertex is integral)"
        bound = mip_bound(float(info.mip_dual_bound), objective, model.sense, scale) if integral else objective
        gap = float(info.mip_gap) if integral else 0.0
        solution = Solution("optimal", values, objective, bound, gap, "highs", route, build_s, solve_s, text)
        if duals and not integral:
            solution.duals = highs_duals(h, model.bounds()[0], model.row_bounds()[0], basis=duals == "basis")
        return solution
    if status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit) or has_solution:
        if not has_solution:
            raise NoSolutionError(f"HiGHS stopped ({text}) before finding a feasible solution")
        values = np.asarray(h.getSolution().col_value)
        objective = float(info.objective_function_value)
        bound = mip_bound(float(info.mip_dual_bound), objective, model.sense, scale) if integral else None
        if bound is None or not np.isfinite(bound):
            # The solver proved nothing (an LP stopped early): report the bound the
            # column bounds prove, so the gap stays honest rather than absent.
            bound = model.trivial_bound()
        state = "time_limit" if status == S.kTimeLimit else "feasible"
        return Solution(
            state, values, objective, bound, relative_gap(objective, bound), "highs", route, build_s, solve_s, text
        )
    raise SolverError(f"HiGHS returned {text} for model {model.name!r}")
