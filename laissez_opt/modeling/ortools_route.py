"""Lowering to Google OR-Tools, choosing the solver the structure allows.

* A declaration carrying a :class:`~laissez_opt.modeling.linear.Transportation`
  structure is a min-cost flow: ``SimpleMinCostFlow`` (integer arithmetic, so
  objective coefficients are scaled to integers; the scaling error is bounded
  and reported, and ``optimal`` is claimed only when it is negligible).
* Any other LP goes to GLOP (primal-dual simplex), loaded from the
  declaration's sparse arrays in one call.
* An integer program goes to CP-SAT when it is small and its rows have integer
  coefficients and bounds, otherwise to SCIP through ``pywraplp``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..errors import NoSolutionError, SolverError, SolverUnavailableError
from .linear import LinearModel
from .solution import Duals, Solution, relative_gap

__all__ = ["solve_ortools", "CP_SAT_MAX_COLUMNS"]

CP_SAT_MAX_COLUMNS = 5000
_EXACT_TOLERANCE = 1e-9


def _integer_scale(costs: np.ndarray, total_flow: float) -> tuple[float, float]:
    """Pick ``10**k`` so ``costs * 10**k`` are integers (or as close as int64 allows).

    Returns (scale, worst rounding error per unit of flow in original units).
    """
    biggest = float(np.max(np.abs(costs), initial=0.0))
    if biggest == 0.0:
        return 1.0, 0.0
    # Total cost must stay below 2**62 in the flow solver's int64 arithmetic.
    limit = 2.0**62 / max(1.0, total_flow) / biggest
    worst = lambda values, scale: float(np.max(np.abs(np.round(values * scale) / scale - values)))  # noqa: E731
    # A scale that leaves a probe of the costs inexact leaves them all inexact: each power of ten
    # is tried on about 4,096 of them first, and on all only when the probe passes.
    probe = costs[:: max(1, costs.size // 4096)] if costs.size > 8192 else costs
    tried = None
    for k in range(0, 16):
        scale = 10.0**k
        if scale > limit:
            break
        tried = scale
        if worst(probe, scale) <= 1e-12 * biggest and worst(costs, scale) <= 1e-12 * biggest:
            return scale, 0.0
    return (1.0, math.inf) if tried is None else (tried, worst(costs, tried))


def _exact_integer_costs(model: LinearModel) -> bool:
    """Whether the transportation model's costs scale to int64 without rounding (min-cost flow is then exact)."""
    t = model.transportation()
    arcs = model.variables[t.arcs]
    costs = model.objective[arcs.slice]
    caps = [c[np.isfinite(c)] for c in (t.left_capacity, t.right_capacity)]
    total = min((float(np.sum(c)) for c, full in zip(caps, (t.left_capacity, t.right_capacity))
                 if c.size == full.size), default=math.inf)
    if not math.isfinite(total):
        finite = arcs.upper[np.isfinite(arcs.upper)]
        total = float(np.sum(np.minimum(finite, 2**40))) + 2.0**40 * float(np.sum(~np.isfinite(arcs.upper)))
    return _integer_scale(costs, total)[1] == 0.0


def _solve_min_cost_flow(model: LinearModel, time_limit, t0) -> Solution:
    from ortools.graph.python import min_cost_flow

    t = model.transportation()
    arcs = model.variables[t.arcs]
    costs = model.objective[arcs.slice]
    if model.sense == "max":
        costs = -costs
    left_cap = t.left_capacity.copy()
    right_cap = t.right_capacity.copy()
    arc_cap = arcs.upper  # read only: the int64 capacities below are a new array
    # Any flow is at most the total capacity of either side (a side bounds it only if all its nodes are finite).
    total = min(
        float(np.sum(right_cap)) if np.all(np.isfinite(right_cap)) else math.inf,
        float(np.sum(left_cap)) if np.all(np.isfinite(left_cap)) else math.inf,
    )
    if not math.isfinite(total):
        total = float(np.sum(np.minimum(arc_cap, 2**40)))
    lower = np.zeros(left_cap.size) if t.left_lower is None else t.left_lower
    big = int(min(max(total, float(lower.sum())), 2**50))
    left_cap = np.where(np.isfinite(left_cap), left_cap, big).astype(np.int64)
    right_cap = np.where(np.isfinite(right_cap), right_cap, big).astype(np.int64)
    arc_cap = np.minimum(arc_cap, big).astype(np.int64)  # an infinite bound becomes big (no NaN reaches here)
    must = np.round(lower).astype(np.int64)
    scale, err = _integer_scale(costs, total)
    int_costs = np.round(costs * scale).astype(np.int64)
    # Arcs that cannot improve the objective never carry flow in some optimum; drop them, except
    # the arcs of a left node that must ship (a lower bound: it may have to use a costly arc).
    useful = (int_costs < 0) | (must[t.left] > 0)
    n_left, n_right = left_cap.size, right_cap.size
    source, sink = n_left + n_right, n_left + n_right + 1
    flow = min_cost_flow.SimpleMinCostFlow()
    # Arcs: source -> left nodes, the useful edges, right nodes -> sink, source -> sink.  Filled in
    # place (tens of millions of edges: no concatenated temporaries, no gather when all are useful).
    every = bool(useful.all())
    pick = (lambda a: a) if every else (lambda a: a[useful])  # noqa: E731
    k = arcs.size if every else int(np.count_nonzero(useful))
    mid, end = slice(n_left, n_left + k), n_left + k
    tails, heads, caps, unit = (np.empty(end + n_right + 1, dtype=np.int64) for _ in range(4))
    tails[:n_left], tails[mid], tails[end:-1], tails[-1] = source, pick(t.left), n_left + np.arange(n_right), source
    heads[:n_left], heads[mid], heads[end:-1], heads[-1] = np.arange(n_left), pick(t.right), sink, sink
    heads[mid] += n_left
    # A left node's lower bound l is its own supply; the source tops it up to its capacity u (arc u - l).
    caps[:n_left], caps[mid], caps[end:-1], caps[-1] = left_cap - must, pick(arc_cap), right_cap, big
    unit[:n_left], unit[mid], unit[end:] = 0, pick(int_costs), 0
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, unit)
    del tails, heads, caps, unit
    supplies = np.zeros(n_left + n_right + 2, dtype=np.int64)
    supplies[:n_left] = must
    supplies[source], supplies[sink] = big - int(must.sum()), -big
    flow.set_nodes_supplies(np.arange(supplies.size), supplies)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    status = flow.solve()
    solve_s = time.perf_counter() - t1
    if status != flow.OPTIMAL:
        if status == flow.INFEASIBLE:
            return Solution("infeasible", None, None, None, None, "ortools", "ortools-min-cost-flow", build_s, solve_s, str(status))
        raise NoSolutionError(f"OR-Tools min-cost flow returned status {status}")
    values = np.zeros(model.n_cols)
    carried = flow.flows(np.arange(n_left, end))
    if every:
        values[arcs.slice] = carried
    else:
        values[arcs.slice][useful] = carried
    objective = model.objective_value(values)
    # With rounded costs, any flow's true value is within err per unit of its rounded value.
    slack = 2.0 * err * total
    bound = objective + (slack if model.sense == "max" else -slack)
    gap = relative_gap(objective, bound)
    proven = gap is not None and gap <= _EXACT_TOLERANCE
    return Solution(
        "optimal" if proven else "feasible",
        values,
        objective,
        bound,
        gap,
        "ortools",
        "ortools-min-cost-flow",
        build_s,
        solve_s,
        "OPTIMAL",
        "" if err == 0 else f"objective coefficients scaled by {scale:g}; rounding bound {slack:.3g}",
        {"cost_scale": scale},
    )


#: Rows whose largest coefficient lies outside ``[1/ROW_SCALE_BAND, ROW_SCALE_BAND]`` are rescaled for GLOP.
ROW_SCALE_BAND = 64.0


def glop_row_scale(matrix) -> np.ndarray | None:
    """Powers of two ``s_i`` that bring each row's largest ``|a_ij|`` near 1, or None when every row is near 1.

    GLOP's own scaling does not save rows far from the others: a leximin level LP
    whose frozen row reads ``5e-6 x_0 + 2.5e-6 x_1 >= 2e-5`` (one agent weighted
    ``10^5`` times the others) stopped ABNORMAL, and with the row multiplied by
    ``2^18`` it is solved at once.  Powers of two keep every coefficient, bound and
    value exact; rows near 1 are left alone so ordinary models are passed as built.

    >>> import scipy.sparse as sp
    >>> glop_row_scale(sp.csr_matrix([[1.0, 3.0], [5e-6, 2.5e-6]])).tolist()
    [1.0, 262144.0]
    >>> glop_row_scale(sp.csr_matrix([[1.0, 3.0]])) is None
    True
    """
    biggest = np.asarray(abs(matrix).max(axis=1).todense()).ravel()
    far = (biggest > 0) & ((biggest > ROW_SCALE_BAND) | (biggest < 1.0 / ROW_SCALE_BAND))
    if not far.any():
        return None
    scale = np.ones(biggest.shape[0])
    scale[far] = np.exp2(-np.round(np.log2(biggest[far])))
    return scale


def _solve_glop(model: LinearModel, time_limit, t0, duals: bool = False) -> Solution:
    """GLOP on the declaration's arrays, passed in one call (``model_builder``'s sparse-data loader).

    Integrality is dropped: callers only come here for LPs and for models whose
    LP relaxation is integral.  ``duals=True`` attaches GLOP's row duals and
    reduced costs (no basis) to an optimal solution; GLOP's signs already follow
    :class:`~laissez_opt.modeling.solution.Duals` (``z = c - A^T y``).
    """
    from ortools.linear_solver.python import model_builder_helper as mbh

    lower, upper, _ = model.bounds()
    row_lower, row_upper = model.row_bounds()
    matrix = model.csc().tocsr()
    row_scale = glop_row_scale(matrix)
    if row_scale is not None:
        matrix = matrix.multiply(row_scale[:, None]).tocsr()
        row_lower, row_upper = row_lower * row_scale, row_upper * row_scale
    helper = mbh.ModelBuilderHelper()
    helper.fill_model_from_sparse_data(
        lower, upper, np.ascontiguousarray(model.objective, dtype=np.float64), row_lower, row_upper, matrix,
    )
    helper.set_maximize(model.sense == "max")
    helper.set_objective_offset(float(model.objective_offset))
    solver = mbh.ModelSolverHelper("glop")
    if not solver.solver_is_supported():
        raise SolverUnavailableError("OR-Tools backend GLOP is not available")
    if time_limit is not None:
        solver.set_time_limit_in_seconds(float(time_limit))
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    solver.solve(helper)
    solve_s = time.perf_counter() - t1
    status = solver.status()
    text = status.name
    route = "ortools-glop"
    if status == mbh.SolveStatus.INFEASIBLE:
        return Solution("infeasible", None, None, None, None, "ortools", route, build_s, solve_s, text)
    if status not in (mbh.SolveStatus.OPTIMAL, mbh.SolveStatus.FEASIBLE) or not solver.has_solution():
        raise NoSolutionError(f"OR-Tools GLOP returned {text}")
    values = np.asarray(solver.variable_values(), dtype=np.float64)
    value = float(solver.objective_value())
    if model.is_integer:
        # Only totally unimodular models come here; their optimal vertex is integral.
        # Check rather than trust it, and fall back to a MIP solver if it is not.
        _, _, integer = model.bounds()
        rounded = np.where(integer, np.round(values), values)
        if np.max(np.abs(values - rounded), initial=0.0) > 1e-9:
            return _solve_pywraplp(model, "SCIP", False, time_limit, None, 1e-7, time.perf_counter())
        values = rounded
        value = model.objective_value(values)
    if status == mbh.SolveStatus.OPTIMAL:
        solution = Solution("optimal", values, value, value, 0.0, "ortools", route, build_s, solve_s, text)
        if duals:
            row_dual = np.asarray(solver.dual_values(), dtype=np.float64)
            if row_scale is not None:
                row_dual = row_dual * row_scale  # the dual of row s_i a_i x is y_i / s_i
            solution.duals = Duals(row_dual, np.asarray(solver.reduced_costs(), dtype=np.float64))
        return solution
    hit_limit = time_limit is not None and solve_s >= 0.95 * time_limit
    state = "time_limit" if hit_limit else "feasible"
    bound = model.trivial_bound()
    return Solution(state, values, value, bound, relative_gap(value, bound), "ortools", route, build_s, solve_s, text)


def _solve_pywraplp(model: LinearModel, backend: str, relax: bool, time_limit, threads, mip_gap, t0) -> Solution:
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver(backend)
    if solver is None:
        raise SolverUnavailableError(f"OR-Tools backend {backend} is not available")
    inf = solver.infinity()
    lower, upper, integer = model.bounds()
    variables = [
        solver.Var(
            -inf if math.isinf(lo) else lo,
            inf if math.isinf(up) else up,
            bool(flag and not relax),
            f"v{j}",
        )
        for j, (lo, up, flag) in enumerate(zip(lower.tolist(), upper.tolist(), integer.tolist()))
    ]
    matrix = model.csc().tocsr()
    row_lower, row_upper = model.row_bounds()
    indptr, indices, data = matrix.indptr, matrix.indices.tolist(), matrix.data.tolist()
    for r in range(model.n_rows):
        row = solver.RowConstraint(
            -inf if math.isinf(row_lower[r]) else float(row_lower[r]),
            inf if math.isinf(row_upper[r]) else float(row_upper[r]),
            "",
        )
        for k in range(indptr[r], indptr[r + 1]):
            row.SetCoefficient(variables[indices[k]], data[k])
    objective = solver.Objective()
    for j in np.flatnonzero(model.objective).tolist():
        objective.SetCoefficient(variables[j], float(model.objective[j]))
    objective.SetOffset(model.objective_offset)
    objective.SetMaximization() if model.sense == "max" else objective.SetMinimization()
    if time_limit is not None:
        solver.SetTimeLimit(int(time_limit * 1000))
    if threads is not None:
        solver.SetNumThreads(int(threads))
    params = pywraplp.MPSolverParameters()
    is_mip = bool(integer.any() and not relax)
    if is_mip:
        params.SetDoubleParam(params.RELATIVE_MIP_GAP, mip_gap)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    status = solver.Solve(params)
    solve_s = time.perf_counter() - t1
    route = f"ortools-{backend.lower()}"
    names = {
        solver.OPTIMAL: "OPTIMAL", solver.FEASIBLE: "FEASIBLE", solver.INFEASIBLE: "INFEASIBLE",
        solver.UNBOUNDED: "UNBOUNDED", solver.ABNORMAL: "ABNORMAL", solver.NOT_SOLVED: "NOT_SOLVED",
    }
    text = names.get(status, str(status))
    if status == solver.INFEASIBLE:
        return Solution("infeasible", None, None, None, None, "ortools", route, build_s, solve_s, text)
    if status == solver.UNBOUNDED or status == solver.ABNORMAL:
        raise SolverError(f"OR-Tools {backend} returned {text} for model {model.name!r}")
    if status not in (solver.OPTIMAL, solver.FEASIBLE):
        raise NoSolutionError(f"OR-Tools {backend} stopped ({text}) before finding a feasible solution")
    values = np.array([v.solution_value() for v in variables])
    value = float(objective.Value())
    bound = float(objective.BestBound()) if is_mip else (value if status == solver.OPTIMAL else None)
    if bound is None or not math.isfinite(bound):
        bound = model.trivial_bound()
    if status == solver.OPTIMAL:
        state = "optimal"
    else:
        hit_limit = time_limit is not None and solve_s >= 0.95 * time_limit
        state = "time_limit" if hit_limit else "feasible"
    return Solution(state, values, value, bound, relative_gap(value, bound), "ortools", route, build_s, solve_s, text)


# CP-SAT works in int64 and rejects a model in which a sum may overflow; every
# activity and objective sum is kept below this (with room for its own arithmetic).
_CP_SAT_RANGE = 2.0**62
# Bounds and coefficients must be integers that a float holds exactly.
_EXACT_INTEGERS = 2.0**53


def _reach(model: LinearModel) -> np.ndarray:
    """``max(|l_j|, |u_j|)`` per column: the largest magnitude a column can take."""
    lower, upper, _ = model.bounds()
    return np.maximum(np.abs(lower), np.abs(upper))


def _cp_sat_objective_scale(model: LinearModel) -> float | None:
    """``10**k`` turning every objective coefficient into an integer, or None.

    CP-SAT proves optimality of integer objectives exactly; with a floating-point
    objective it stops within a tolerance, so models without such a scaling go
    to SCIP instead.  The scaling may round a coefficient by floating-point
    noise (:func:`_integer_scale`); :func:`_solve_cp_sat` widens the bound by
    what that rounding can cost, so the noise never hides behind "optimal".
    """
    reach = _reach(model)
    if not np.all(np.isfinite(reach)):
        return None
    total = float(np.sum(np.abs(model.objective) * reach)) + 1.0
    scale, err = _integer_scale(model.objective, total)
    return scale if err == 0.0 and total * scale < _CP_SAT_RANGE else None


def _row_activity(model: LinearModel) -> np.ndarray:
    """``sum_j |a_rj| max(|l_j|, |u_j|)`` per row: no row's activity leaves ``[-a, a]``."""
    return abs(model.csc()) @ _reach(model) if model.n_rows else np.zeros(0)


def _cp_sat_eligible(model: LinearModel) -> bool:
    """A small all-integer model whose data CP-SAT can hold exactly.

    Every column bound is a finite integer, every coefficient and finite row
    bound an integer, no row's activity can overflow int64, and the objective
    scales to integers.  Nothing is clamped to make a model fit: a model that
    does not fit goes to SCIP, whose answer is then about the same model.
    """
    lower, upper, integer = model.bounds()
    if not integer.all() or model.n_cols > CP_SAT_MAX_COLUMNS:
        return False
    bounds = np.concatenate([lower, upper])
    if not np.all(np.isfinite(bounds)) or np.max(np.abs(bounds), initial=0.0) >= _EXACT_INTEGERS:
        return False
    if _cp_sat_objective_scale(model) is None:
        return False
    _, _, vals = model.triplets()
    row_lower, row_upper = model.row_bounds()
    finite = np.concatenate([bounds, row_lower, row_upper, vals])
    finite = finite[np.isfinite(finite)]
    if not np.all(finite == np.round(finite)):
        return False
    return bool(np.all(_row_activity(model) < _CP_SAT_RANGE))


def _solve_cp_sat(model: LinearModel, time_limit, threads, t0) -> Solution:
    from ortools.sat.python import cp_model

    lower, upper, _ = model.bounds()
    row_lower, row_upper = model.row_bounds()
    activity = _row_activity(model)
    # A row's infinite side is replaced by the activity bound, which no assignment can pass: the same set.
    row_lo = np.where(np.isfinite(row_lower), np.maximum(row_lower, -activity), -activity)
    row_hi = np.where(np.isfinite(row_upper), np.minimum(row_upper, activity), activity)
    if np.any(lower > upper) or np.any(row_lo > row_hi):
        # An empty domain: CP-SAT would call the model invalid; it is infeasible, as every other route says.
        build_s = time.perf_counter() - t0
        return Solution("infeasible", None, None, None, None, "ortools", "ortools-cp-sat", build_s, 0.0,
                        "INFEASIBLE (empty bounds)")
    m = cp_model.CpModel()
    xs = [m.new_int_var(int(lo), int(up), f"v{j}") for j, (lo, up) in enumerate(zip(lower.tolist(), upper.tolist()))]
    matrix = model.csc().tocsr()
    for r in range(model.n_rows):
        lo, hi = matrix.indptr[r], matrix.indptr[r + 1]
        expr = sum(int(c) * xs[j] for j, c in zip(matrix.indices[lo:hi].tolist(), matrix.data[lo:hi].tolist()))
        m.add_linear_constraint(expr, int(math.ceil(row_lo[r])), int(math.floor(row_hi[r])))
    nz = np.flatnonzero(model.objective)
    scale = _cp_sat_objective_scale(model)
    scaled = np.round(model.objective[nz] * scale)
    # What rounding the scaled coefficients can change the objective by, over the columns' ranges.
    rounding = float(np.sum(np.abs(scaled / scale - model.objective[nz]) * _reach(model)[nz]))
    coefficients = [int(c) for c in scaled.tolist()]
    objective_expr = cp_model.LinearExpr.weighted_sum([xs[j] for j in nz.tolist()], coefficients)
    m.maximize(objective_expr) if model.sense == "max" else m.minimize(objective_expr)
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = int(threads) if threads else 2
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    status = solver.solve(m)
    solve_s = time.perf_counter() - t1
    text = solver.status_name(status)
    if status == cp_model.INFEASIBLE:
        return Solution("infeasible", None, None, None, None, "ortools", "ortools-cp-sat", build_s, solve_s, text)
    if status == cp_model.MODEL_INVALID:
        raise SolverError(f"CP-SAT rejected model {model.name!r}: {m.validate()}")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise NoSolutionError(f"CP-SAT stopped ({text}) before finding a feasible solution")
    values = np.array([solver.value(x) for x in xs], dtype=np.float64)
    objective = model.objective_value(values)
    # Any assignment's true objective is within ``rounding`` of its scaled one.
    widen = rounding if model.sense == "max" else -rounding
    if status == cp_model.OPTIMAL:
        # Proven for the scaled objective: the true optimum is at most twice the rounding better.
        bound = objective + 2.0 * widen
        gap = relative_gap(objective, bound)
        state = "optimal" if gap is not None and gap <= _EXACT_TOLERANCE else "feasible"
    else:
        bound = float(solver.best_objective_bound) / scale + model.objective_offset + widen
        state = "time_limit" if time_limit is not None else "feasible"
    gap = relative_gap(objective, bound)
    # Rounding below the gap's resolution (floating-point noise of decimal data) is no news; more is reported.
    message = "" if rounding <= 1e-12 * max(1.0, abs(objective)) else (
        f"objective coefficients scaled by {scale:g}; rounding bound {rounding:.3g}")
    return Solution(state, values, objective, bound, gap, "ortools", "ortools-cp-sat", build_s, solve_s, text, message)


def solve_ortools(
    model: LinearModel,
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    backend: str | None = None,
    duals: bool = False,
) -> Solution:
    """Solve ``model`` with the OR-Tools solver its structure calls for.

    ``backend`` forces one of ``"min_cost_flow"``, ``"glop"``, ``"cp_sat"``, ``"scip"``.
    ``duals=True``: GLOP attaches the LP duals; the other backends report none.
    """
    t0 = time.perf_counter()
    if backend is None:
        if model.transportation() is not None and model.integrality_is_free():
            backend = "min_cost_flow"  # an LP with fractional capacities goes to GLOP below
        elif not model.is_integer or model.integrality_is_free():
            backend = "glop"
        elif _cp_sat_eligible(model):
            backend = "cp_sat"
        else:
            backend = "scip"
    if backend == "min_cost_flow":
        if model.transportation() is None:
            raise SolverUnavailableError(f"model {model.name!r} is not a transportation problem; min-cost flow does not apply")
        if not model.integrality_is_free():
            raise SolverUnavailableError("min-cost flow needs integer capacities")
        return _solve_min_cost_flow(model, time_limit, t0)
    if backend == "glop":
        if model.is_integer and not model.integrality_is_free():
            raise SolverUnavailableError("GLOP solves LPs only; this model needs integrality")
        return _solve_glop(model, time_limit, t0, duals)
    if backend == "cp_sat":
        if not _cp_sat_eligible(model):
            raise SolverUnavailableError(
                "CP-SAT needs a small all-integer model with integer coefficients and an objective "
                "that scales exactly to integers"
            )
        return _solve_cp_sat(model, time_limit, threads, t0)
    if backend == "scip":
        return _solve_pywraplp(model, "SCIP", False, time_limit, threads, mip_gap, t0)
    raise SolverUnavailableError(f"unknown OR-Tools backend {backend!r} (min_cost_flow, glop, cp_sat, scip)")
