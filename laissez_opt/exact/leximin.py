"""Exact lexicographic max-min (leximin) over a declared allocation model.

The shared engine of :mod:`laissez_opt.exact.maxmin` and :mod:`laissez_opt.exact.drf`.
An allocation block (``x`` or ``y``, one column per edge and round) carries a
linear *normalised value* per agent,

.. math::

    v_i(x) = \\sum_{(c,r)} a_{i,c,r}\\, x_{i,c,r}, \\qquad a \\ge 0,

and the leximin allocation maximises the smallest ``v_i``, then the next
smallest, and so on (the sorted vector of values is lexicographically
maximal).  Agents whose value is 0 in every feasible allocation (``v_i^max = 0``
below) are fixed at 0 and take no part in the levels.

**Fractional mode: waterfilling.**  Level ``l`` solves

.. math::

    \\max t \\quad\\text{s.t.}\\quad v_i(x) \\ge t \\ (i \\text{ free}),\\qquad
    v_j(x) \\ge \\ell_j \\ (j \\text{ frozen}),\\qquad x \\text{ feasible},

then freezes, at ``ell_i = t*``, free agents that *provably* cannot exceed
``t*`` while every other free agent keeps ``t*`` and every frozen agent its
level.  Two exact certificates decide it (no epsilon perturbation):

* *dual*: an agent whose row ``v_i - t >= 0`` has a nonzero dual in an optimal
  dual solution is tight in every optimal solution (complementary slackness),
  so it cannot exceed ``t*``; the duals sum to 1 over the free agents, so at
  least one agent is certified per LP.  Agents with a zero dual stay free: if
  they too are stuck, the next LP returns ``t*`` again and certifies them;
* *standalone bound*: ``v_i^max``, the agent's value when it is alone (its own
  column bounds and demand rows only), is an upper bound; ``v_i^max <= t*``
  certifies it;
* *probe* (routes that report no duals, or ``freeze="probe"``): with ``t``
  fixed at ``t*``, maximise ``sum_{i in U} v_i / a_i^max`` over an undecided set
  ``U`` (each value capped a little above ``t*``, which spreads the gain).
  Agents clearly above ``t*`` in the optimum can exceed it; if none is and the
  total gain is negligible, every agent of ``U`` is stuck (an agent able to rise
  alone would add at least its threshold).  Otherwise single-agent probes
  (maximise ``v_j``) decide the rest.

The convex combination of allocations that raise single agents raises them all
at once, so in fractional mode "cannot exceed the level" is a per-agent test
and the values ``v_i`` of the leximin allocation are unique.

**Integral mode: ordered outcomes.**  With integrality that argument fails
(two agents, one device: each alone can get it, not both), so freezing by
per-agent tests is not exact.  Instead (Ogryczak & Sliwinski 2003) step
``k = 1..K`` maximises ``theta_k``, the sum of the ``k`` smallest values,

.. math::

    \\theta_k = \\max_{r_k, d_k} \\; k\\, r_k - \\sum_j d_{k,j},\\qquad
    d_{k,j} \\ge r_k - v_j(x),\\ d_{k,j} \\ge 0,

subject to ``theta_h >= theta_h*`` for the steps ``h < k`` already solved.
Lexicographically maximal ``(theta_1, ..., theta_K)`` is exactly a leximin
allocation; the ``k``-th smallest value is ``theta_k* - theta_{k-1}*``.  ``theta_k*``
is recomputed from the rounded allocation (a MILP may lift ``r_k`` within its
feasibility tolerance, and fixing that would cut off the true optimum).  ``K``
mixed-integer programs, ``K^2`` auxiliary columns: for small instances.

Tolerances: a frozen agent's row is bounded below by its level; ``theta_k`` is
fixed with a relative slack of ``1e-7``; an agent counts as above a level ``t``
when its value exceeds it by ``1e-7 max(1, |t|) + 1e-6 a_i^max`` (see
:func:`_above_tol`); a dual counts as nonzero above ``1e-9`` (the duals of the
free rows sum to 1).

References: Radunovic & Le Boudec, "A unified framework for max-min and
min-max fairness with applications", IEEE/ACM ToN 15(5), 2007 (waterfilling
on polytopes, the dual test); Ogryczak & Sliwinski, "On direct methods for
lexicographic min-max optimization", ICCSA 2006, and Ogryczak, Pioro &
Tomaszewski, Networks 2005 (ordered outcomes); thesis 002, ch. 3 (fairness).

Example
-------
>>> import numpy as np
>>> from laissez_opt.modeling import LinearModel
>>> m = LinearModel("toy", sense="max")
>>> x = m.add_variables("x", 2, upper=1.0)      # two agents, one unit to share
>>> _ = m.add_constraints("capacity", rows=np.array([0, 0]), cols=x.columns([0, 1]),
...                       coefs=np.ones(2), upper=np.array([1.0]))
>>> plan = declare_leximin(m, x, agent=np.array([0, 1]), coef=np.array([1.0, 3.0]),
...                        group=np.array([0, 1]), group_cap=np.array([np.inf, np.inf]), fractional=True)
>>> out = solve_leximin(m, plan)
>>> out.status, out.agent_values.round(6).tolist()
('optimal', [0.75, 0.75])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, NoSolutionError
from ..limits import SizeEstimate, remaining
from ..method_spec import Option
from ..modeling import LinearModel, solve_model
from ..modeling.highs_route import limit_next_run
from ..modeling.linear import ConstraintBlock, VariableBlock
from .common import allocation_size, refuse_overflow

__all__ = [
    "LeximinPlan", "LeximinOutcome", "standalone_max", "declare_leximin", "levels_plan", "solve_leximin", "FREEZE_TESTS",
    "leximin_size", "LEXIMIN_OPTIONS", "hold_optimal_face", "face_bounds", "FACE_REDUCED_COST",
]

FREEZE_TESTS = ("dual", "probe")
_DUAL_NONZERO = 1e-9
_IPM_MIN_ROWS = 500  # level LPs with at least this many rows start with the interior point method
_THETA_SLACK = 1e-7  # relative slack when fixing theta_k
# The cold routes of a level LP in numerical trouble, in order: (solver, presolve).
COLD_ROUTES = (("simplex", "off"), ("simplex", "choose"), ("ipm", "choose"))
# Shares of their values by which the frozen agents' floors are eased, one after the other, when
# a level LP fails on every route (the floors are met by the earlier points only to tolerance).
# Smaller than the parts' shares (laissez_opt.partition.levels.FLOOR_EASING): the whole model's
# floors are met to HiGHS's tolerance without the parts' tiny demands.
FLOOR_EASING = (1e-10, 1e-9, 1e-8)
#: A level LP's column whose reduced cost exceeds this (in magnitude, with the sign of its bound) is
#: held at that bound for every later level (:func:`hold_optimal_face`); the partitioned parts'
#: face cut uses the same threshold (:func:`laissez_opt.partition.levels.optimal_face`).
FACE_REDUCED_COST = 1e-9


def trouble_statuses():
    """HiGHS model statuses that mean numerical trouble for a level LP (every level LP is feasible and bounded)."""
    import highspy

    S = highspy.HighsModelStatus
    return (S.kUnknown, S.kSolveError, S.kNotset, S.kInfeasible)


def leximin_size(instance, options: dict) -> SizeEstimate:
    """Size of a leximin model over the allocation of ``instance`` (``options["fractional"]``).

    Fractional: one ``level`` row per agent.  Integral (ordered outcomes): ``K^2``
    columns ``d`` and rows ``excess``, each ``excess`` row of step ``k`` repeating
    agent ``j``'s value terms, so ``K`` copies of the allocation's coefficients
    (``K <= n`` agents take part).
    """
    n, edge_rounds = float(instance.n_agents), float(instance.n_edges) * float(instance.rounds)
    if options.get("fractional"):
        return allocation_size(instance, extra_variables=1, extra_constraints=n, extra_nonzeros=edge_rounds + n,
                               note="waterfilling: one level row per agent")
    return allocation_size(instance, extra_variables=n * n + n, extra_constraints=n * n + n,
                           extra_nonzeros=3 * n * n + n * edge_rounds,
                           note=f"ordered outcomes: {n:.3g}^2 auxiliary columns (integral mode)")


#: Options of the leximin solves (``maxmin``, ``drf``) beyond the solver options.
LEXIMIN_OPTIONS = (
    Option("freeze", "choice", "dual", "how a level's stuck agents are certified (fractional): LP duals or probes",
           choices=FREEZE_TESTS),
)


def _fix_tol(value: float) -> float:
    return 1e-9 * max(1.0, abs(value))


def _above_tol(value: float, a_max: np.ndarray) -> np.ndarray:
    """Per agent: how far above a level a value must be to count as above it.

    ``1e-7 max(1, |t|)`` plus a millionth of a device of the agent's best column:
    an LP solution may break each row by the solver's feasibility tolerance
    (``1e-7``), which can lift a value by about ``a_max`` times that.
    """
    return 1e-7 * max(1.0, abs(value)) + 1e-6 * a_max


def standalone_max(
    agent: np.ndarray,
    group: np.ndarray,
    coef: np.ndarray,
    upper: np.ndarray,
    group_cap: np.ndarray,
    n_agents: int,
) -> np.ndarray:
    """``v_i^max``: each agent's largest value when it is alone.

    Columns of one group (an agent-round) share the cap ``group_cap[g]``; each
    column is bounded by ``upper``.  A fractional knapsack with unit weights per
    group: fill the columns in decreasing ``coef`` order.

    >>> standalone_max(np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([2.0, 1.0, 5.0]),
    ...                np.array([1.0, 3.0, 1.0]), np.array([2.0, np.inf]), 2).tolist()
    [3.0, 5.0]
    """
    useful = (coef > 0) & (upper > 0)
    order = np.lexsort((-coef, group))
    order = order[useful[order]]
    g = group[order]
    cap = upper[order]
    total = np.cumsum(cap)
    first = np.searchsorted(g, g, side="left")
    before = total - cap - np.where(first > 0, total[first - 1], 0.0)  # taken earlier in the group
    take = np.clip(np.minimum(cap, group_cap[g] - before), 0.0, None)
    return np.bincount(agent[order], weights=take * coef[order], minlength=n_agents)


@dataclass
class LeximinPlan:
    """What the engine needs to know about a declared leximin model.

    ``block`` is the allocation block; ``agent`` and ``coef`` give, per column
    of the block, the agent and ``a_{i,c,r}``; ``included`` marks the agents with
    ``v_i^max > 0`` (``vmax``); ``rows_agent`` lists, in row order, the agents
    that have a ``level`` row (fractional) or an ordered-outcome index (integral).
    """

    block: VariableBlock
    agent: np.ndarray
    coef: np.ndarray
    included: np.ndarray
    vmax: np.ndarray
    fractional: bool
    rows_agent: np.ndarray
    t: VariableBlock | None = None
    level: ConstraintBlock | None = None
    t_entries: np.ndarray | None = None
    r: VariableBlock | None = None
    d: VariableBlock | None = None
    cumulative: ConstraintBlock | None = None
    columns: object = None  # the model module's index arithmetic (AllocationColumns)
    unit: float = 1.0  # engine values are v_i * unit (see declare_leximin)

    @property
    def n_agents(self) -> int:
        return self.included.size

    @property
    def a_max(self) -> np.ndarray:
        """Largest ``a_{i,c,r}`` of each agent (0 for agents with no valued column)."""
        out = np.zeros(self.n_agents)
        np.maximum.at(out, self.agent, np.where(self.block.upper > 0, self.coef, 0.0))
        return out

    def values(self, block_values: np.ndarray) -> np.ndarray:
        """``v_i`` per agent from the allocation block's values."""
        return np.bincount(self.agent, weights=self.coef * block_values, minlength=self.n_agents)


#: The smallest positive normalised coefficient, relative to 1, that the engine hands a solver:
#: well above HiGHS's ``small_matrix_value`` (1e-9), below which it drops an entry.
COEF_FLOOR = 1e-6
#: The widest spread ``max coef / min coef`` (over positive coefficients) the engine accepts.
#: Measured on 4 agents, one of weight ``w`` (spread about ``4 w``) against enumeration: every
#: integral route (HiGHS and OR-Tools, ordered outcomes and first level) exact up to ``w = 1e7``;
#: at ``1e8`` HiGHS's first-level route, SCIP's ordered outcomes and HiGHS's fractional levels
#: returned wrong values (0.375, 0 and 0 against 0.5, 0.5 and 1).  OR-Tools GLOP, which stopped
#: ABNORMAL from ``w = 1e5`` on the fractional model, solves it up to the limit since its rows are
#: scaled (:func:`laissez_opt.modeling.ortools_route.glop_row_scale`).
COEF_SPREAD_LIMIT = 1e8


def value_unit(coef: np.ndarray) -> float:
    """The unit the leximin engine works in for normalised value coefficients ``coef``.

    Solvers drop coefficients below about 1e-9 and lose accuracy above 1e9: pools of millions
    of devices make equal-share normalised values tiny, and a weight many orders above the
    others makes theirs huge.  With ``lo`` and ``top`` the smallest and largest positive
    coefficients: 1 when ``top`` lies within ``[1e-3, 1e3]`` and ``lo >= COEF_FLOOR``; else
    ``1 / top`` when ``lo / top >= COEF_FLOOR``; else ``1 / sqrt(lo top)``, the spread centred on
    1 (a single scale ``1 / top`` would push ``lo`` under the solver's drop threshold, which then
    reads that agent's values as 0).  Refuses coefficients that overflowed and spreads wider
    than ``COEF_SPREAD_LIMIT``.

    >>> value_unit(np.array([0.5, 2.0])), value_unit(np.array([1e-6, 4e-6]))
    (1.0, 250000.0)
    >>> float(value_unit(np.array([1e-3, 1e5])))   # the widest spread accepted, centred on 1
    0.1
    """
    refuse_overflow(coef)
    positive = coef[coef > 0]
    if not positive.size:
        return 1.0
    lo, top = float(positive.min()), float(positive.max())
    if 1e-3 <= top <= 1e3 and lo >= COEF_FLOOR:
        return 1.0
    if lo >= COEF_FLOOR * top:
        return 1.0 / top
    if top > COEF_SPREAD_LIMIT * lo:
        raise InputError(f"the normalised value coefficients span {lo:.3g} to {top:.3g}, more than "
                         f"{COEF_SPREAD_LIMIT:.0e} apart: no solver tells the smallest agents' values from 0 "
                         "beside the largest; rescale the weights (or choose normalizer=raw)", path="instance")
    return 1.0 / math.sqrt(lo * top)


def declare_leximin(
    model: LinearModel,
    block: VariableBlock,
    *,
    agent: np.ndarray,
    coef: np.ndarray,
    group: np.ndarray,
    group_cap: np.ndarray,
    fractional: bool,
    n_agents: int | None = None,
) -> LeximinPlan:
    """Declare the leximin blocks on ``model`` over allocation block ``block``.

    Fractional: variable ``t`` (the level, objective ``max t``) and constraint
    ``level`` (``v_i - t >= 0``, one row per included agent).  Integral: the
    ordered-outcome variables ``r`` (``K``) and ``d`` (``K x K``), constraints
    ``excess`` (``d_{k,j} + v_j - r_k >= 0``) and ``cumulative``
    (``(k+1) r_k - sum_j d_{k,j} >= theta_k*``, inactive until step ``k`` is solved).
    Columns with ``coef = 0`` are fixed at 0 (they add no value).
    """
    coef = np.asarray(coef, dtype=np.float64)
    unit = value_unit(coef)
    coef = coef * unit
    agent = np.asarray(agent, dtype=np.int64)
    n = int(agent.max(initial=-1)) + 1 if n_agents is None else int(n_agents)
    block.upper[coef <= 0] = 0.0
    integral = block.integer and not fractional
    if block.integer:
        # Integral bounds for integer columns: the same model, and HiGHS 1.13's MIP presolve
        # can return a wrong "optimal" on fractional bounds of integer columns.
        block.upper[:] = np.floor(block.upper + 1e-9)
    upper = block.upper
    cap = np.floor(np.asarray(group_cap, float) + 1e-9) if integral else np.asarray(group_cap, float)
    vmax = standalone_max(agent, group, coef, upper, cap, n)
    included = vmax > 0
    rows_agent = np.flatnonzero(included)
    K = rows_agent.size
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[rows_agent] = np.arange(K)
    use = (coef > 0) & included[agent] & (block.upper > 0)
    local = np.flatnonzero(use)
    x_rows = row_of[agent[local]]
    x_cols = block.columns(local)
    x_coefs = coef[local]
    plan = LeximinPlan(block, agent, coef, included, vmax, fractional, rows_agent, unit=unit)
    if fractional:
        t = model.add_variables("t", 1, lower=0.0, upper=np.inf if K else 0.0, description="the level being raised")
        order = np.lexsort((x_cols, x_rows))
        level = model.add_constraints(
            "level",
            rows=np.concatenate([x_rows[order], np.arange(K)]),
            cols=np.concatenate([x_cols[order], np.full(K, t.start)]),
            coefs=np.concatenate([x_coefs[order], -np.ones(K)]),
            lower=0.0,
            n_rows=K,
            description="v_i(x) - t >= 0 for a free agent; v_i(x) >= ell_i once frozen at level ell_i",
        )
        model.set_objective(t, np.ones(1))
        plan.t, plan.level, plan.t_entries = t, level, x_rows.size + np.arange(K)
        return plan
    r = model.add_variables("r", K, lower=0.0, upper=0.0, description="threshold of ordered-outcome step k")
    d = model.add_variables("d", K * K, lower=0.0, upper=0.0, description="shortfall of agent j below r_k")
    # excess row k*K + j: d[k, j] + v_j(x) - r_k >= 0
    kk = np.repeat(np.arange(K), K)
    rows_v = (np.arange(K)[:, None] * K + x_rows[None, :]).ravel()
    model.add_constraints(
        "excess",
        rows=np.concatenate([np.arange(K * K), rows_v, np.arange(K * K)]),
        cols=np.concatenate([d.columns(np.arange(K * K)), np.tile(x_cols, K), r.columns(kk)]),
        coefs=np.concatenate([np.ones(K * K), np.tile(x_coefs, K), -np.ones(K * K)]),
        lower=0.0,
        n_rows=K * K,
        description="d[k,j] >= r_k - v_j(x)",
    )
    cumulative = model.add_constraints(
        "cumulative",
        rows=np.concatenate([np.arange(K), kk]),
        cols=np.concatenate([r.columns(np.arange(K)), d.columns(np.arange(K * K))]),
        coefs=np.concatenate([np.arange(1, K + 1, dtype=float), -np.ones(K * K)]),
        lower=0.0,  # theta_k >= 0 holds for r_k = d_k = 0, so it restricts no allocation
        n_rows=K,
        description="theta_k = (k+1) r_k - sum_j d[k,j] >= theta_k* once step k is solved (>= 0 before)",
    )
    plan.r, plan.d, plan.cumulative = r, d, cumulative
    return plan


def levels_plan(
    model: LinearModel,
    *,
    agent: np.ndarray,
    group: np.ndarray,
    group_cap: np.ndarray,
    n_agents: int,
) -> LeximinPlan:
    """The fractional plan of a declared level LP: blocks ``x`` and ``t``, family ``level``, objective ``max t``.

    ``model`` is the lowering of a :class:`laissez_opt.Model` whose ``level``
    family holds one row ``v_i(x) - t >= 0`` per agent taking part, in agent
    order (``maxmin_floor(x, t)`` declares it), and whose other columns of
    ``x`` without value are bounded by 0.  ``v_i``'s coefficients ``a`` are read
    from those rows, so the engine and the matrix cannot disagree.  As in
    :func:`declare_leximin`, when every coefficient lies outside
    ``[1e-3, 1e3]`` the rows are rescaled to units of the largest one
    (``plan.unit``); the engine owns the lowered model and changes it between
    solves (coefficients of ``t``, row bounds), so the arrays it changes are
    copied away from the declaration first.

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import capacity, maxmin_floor
    >>> inst = lo.Instance([lo.Pool("P", count=1)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 3.0)])
    >>> m = lo.Model(inst, integral=False)
    >>> t = m.variable("t")
    >>> _ = m.add(capacity(m.x)), m.add(maxmin_floor(m.x, t, "raw"), name="level")
    >>> m.maximize(t)
    >>> plan = levels_plan(m.lower(), agent=inst.edge_agent, group=inst.edge_agent, group_cap=inst.demands, n_agents=2)
    >>> plan.coef.tolist(), plan.rows_agent.tolist(), solve_leximin(m.lower(), plan).agent_values.round(6).tolist()
    ([1.0, 3.0], [0, 1], [0.75, 0.75])
    """
    block, t, level = model.variables["x"], model.variables["t"], model.constraints["level"]
    level.coefs = level.coefs.copy()
    on_t = level.cols == t.start
    t_entries = np.flatnonzero(on_t)
    t_entries = t_entries[np.argsort(level.rows[t_entries], kind="stable")]  # entry of t in row k
    valued = np.flatnonzero(~on_t)
    coef = np.bincount(level.cols[valued] - block.start, weights=level.coefs[valued], minlength=block.size)
    unit = value_unit(coef)
    if unit != 1.0:
        coef = coef * unit
        level.coefs[valued] *= unit
    agent = np.asarray(agent, dtype=np.int64)
    vmax = standalone_max(agent, group, coef, block.upper, np.asarray(group_cap, float), n_agents)
    included = vmax > 0
    rows_agent = np.flatnonzero(included)
    if rows_agent.size != level.size or not np.array_equal(
            agent[level.cols[valued] - block.start], rows_agent[level.rows[valued]]):
        raise ValueError("the level rows must be one per agent with a positive standalone value, in agent order")
    plan = LeximinPlan(block, agent, coef, included, vmax, True, rows_agent, unit=unit)
    plan.t, plan.level, plan.t_entries = t, level, t_entries
    return plan


def first_level(model: LinearModel, plan: LeximinPlan) -> LinearModel:
    """``model`` set up to maximise the first leximin level ``min_i v_i`` (in the engine's units), for export.

    Fractional: the declared ``max t`` already is.  Integral: step 1 of the
    ordered outcomes, ``max theta_1 = r_1 - sum_j d_{1,j}`` with ``r_1`` and
    ``d_{1,.}`` freed, whose optimum is the largest smallest value
    (Ogryczak & Sliwinski, 2003).  Values are ``v_i`` times ``plan.unit``
    (1 unless every value lies outside ``[1e-3, 1e3]``).

    >>> import laissez_opt as lo
    >>> from laissez_opt.exact.maxmin import build_maxmin
    >>> from laissez_opt.modeling import solve_model
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan = build_maxmin(inst, normalizer="raw")
    >>> solve_model(first_level(model, plan)).objective     # one gets 1 device, the other 2
    1.0
    """
    if plan.fractional or plan.r is None:
        return model
    K = plan.rows_agent.size
    if K == 0:
        return model
    plan.r.upper[0] = np.inf
    plan.d.upper[:K] = np.inf
    objective = np.zeros(model.n_cols)
    objective[plan.r.start] = 1.0
    objective[plan.d.start : plan.d.start + K] = -1.0
    model.objective = objective
    return model


# --------------------------------------------------------------------------- sessions
@dataclass
class _Run:
    status: str  # optimal, feasible, time_limit, infeasible, trouble (an LP every cold route failed on)
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    duals: np.ndarray | None
    solve_s: float
    text: str
    route: str
    reduced: np.ndarray | None = None  # the columns' reduced costs (HiGHS LP sessions only)


class _ModelSession:
    """Mutate the declared model and solve it again through :func:`solve_model` (any route)."""

    def __init__(self, model: LinearModel, solver: str, via: str, options: dict):
        self.model = model
        self.solver, self.via, self.options = solver, via, options
        self.build_s = 0.0

    def set_bounds(self, block: VariableBlock, local, lower, upper) -> None:
        block.lower[local] = lower
        block.upper[local] = upper

    def set_row_bounds(self, block: ConstraintBlock, local, lower, upper=None) -> None:
        block.lower[local] = lower
        if upper is not None:
            block.upper[local] = upper

    def set_coefs(self, block: ConstraintBlock, entries, value: float) -> None:
        block.coefs[entries] = value

    def set_objective(self, vector: np.ndarray) -> None:
        self.model.objective[:] = vector

    def set_start(self, values: np.ndarray) -> None:
        """A feasible column vector the next solve may start from (a MIP start where the route takes one)."""
        self.start = values

    def solve(self, time_limit: float | None) -> _Run:
        start, self.start = getattr(self, "start", None), None
        sol = solve_model(self.model, solver=self.solver, via=self.via, time_limit=time_limit, start=start,
                          **self.options)
        self.build_s += sol.build_s
        return _Run(sol.status, sol.values, sol.objective, sol.bound, None, sol.solve_s, sol.solver_status, sol.route)


class _HighsSession(_ModelSession):
    """One highspy model kept across all solves; changes go to bounds, costs and coefficients.

    The declaration is lowered once by the HiGHS route's matrix lowering; every
    change is applied to the declaration too, so the two never disagree.
    """

    def __init__(self, model: LinearModel, integral: bool, options: dict):
        import highspy

        from ..modeling import highs_route

        super().__init__(model, "highs", "direct", options)
        t0 = time.perf_counter()
        self.highspy = highspy
        self.integral = integral
        self.h = h = highspy.Highs()
        h.setOptionValue("output_flag", bool(options.get("verbose", False)))
        if options.get("threads") is not None:
            h.setOptionValue("threads", int(options["threads"]))
        if integral:
            h.setOptionValue("mip_rel_gap", float(options.get("mip_gap", 1e-9)))
            h.setOptionValue("mip_abs_gap", 1e-9)
        if hasattr(highs_route, "_pass_model"):
            highs_route._pass_model(h, model, integral)
        else:  # older lowering: a HighsLp object
            h.passModel(highs_route._highs_lp(model, integral))
        self.row_upper = model.row_bounds()[1]
        self.runs = 0
        self.build_s = time.perf_counter() - t0

    def set_bounds(self, block, local, lower, upper) -> None:
        super().set_bounds(block, local, lower, upper)
        cols = block.columns(np.atleast_1d(local)).astype(np.int32)
        lo = np.broadcast_to(np.asarray(lower, float), cols.shape).astype(np.float64)
        up = np.broadcast_to(np.asarray(upper, float), cols.shape).astype(np.float64)
        self.h.changeColsBounds(cols.size, cols, lo, up)

    def set_row_bounds(self, block, local, lower, upper=None) -> None:
        super().set_row_bounds(block, local, lower, upper)
        local = np.atleast_1d(local)
        rows = (block.start + local).astype(np.int32)
        lo = block.lower[local].astype(np.float64)
        lo = np.where(np.isinf(lo), -self.highspy.kHighsInf, lo)
        up = block.upper[local].astype(np.float64)
        up = np.where(np.isinf(up), self.highspy.kHighsInf, up)
        self.h.changeRowsBounds(rows.size, rows, lo, up)

    def set_coefs(self, block, entries, value) -> None:
        super().set_coefs(block, entries, value)
        for e in np.atleast_1d(entries).tolist():
            self.h.changeCoeff(int(block.start + block.rows[e]), int(block.cols[e]), float(value))

    def set_objective(self, vector) -> None:
        super().set_objective(vector)
        cols = np.arange(self.model.n_cols, dtype=np.int32)
        self.h.changeColsCost(cols.size, cols, np.ascontiguousarray(vector, dtype=np.float64))

    def solve(self, time_limit) -> _Run:
        hs = self.highspy
        h = self.h
        limit_next_run(h, time_limit)
        S = hs.HighsModelStatus
        large = self.model.n_rows >= _IPM_MIN_ROWS
        if not self.integral:
            # The first LP from scratch: interior point (with crossover to a vertex) beats the
            # simplex method on large level LPs; later LPs are warm-started simplex runs.
            h.setOptionValue("solver", "ipm" if large and self.runs == 0 else "simplex")
        self.runs += 1
        t1 = time.perf_counter()
        h.run()
        status = h.getModelStatus()
        if status == S.kUnboundedOrInfeasible and not self.integral:
            h.setOptionValue("presolve", "off")
            h.run()
            h.setOptionValue("presolve", "choose")
            status = h.getModelStatus()
        if status in trouble_statuses() and not self.integral:
            # Numerical trouble, not the LP (every level LP is feasible: the last level's point is
            # feasible in it): again from scratch, within what is left of the limit.
            status = self._retry_from_scratch(None if time_limit is None
                                              else max(float(time_limit) - (time.perf_counter() - t1), 1e-3))
        solve_s = time.perf_counter() - t1
        text = h.modelStatusToString(status)
        info = h.getInfo()
        route = "highspy-mip" if self.integral else "highspy-lp"
        if status in trouble_statuses() and not self.integral:
            return _Run("trouble", None, None, None, None, solve_s, text, route)
        if status == S.kInfeasible:
            return _Run("infeasible", None, None, None, None, solve_s, text, route)
        has_solution = info.primal_solution_status == hs.SolutionStatus.kSolutionStatusFeasible
        if status == S.kOptimal or (has_solution and status in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit)):
            sol = h.getSolution()
            values = np.asarray(sol.col_value)
            duals = None if self.integral or not sol.dual_valid else np.asarray(sol.row_dual)
            reduced = None if duals is None else np.asarray(sol.col_dual)
            objective = float(info.objective_function_value)
            bound = float(info.mip_dual_bound) if self.integral else (objective if status == S.kOptimal else None)
            state = "optimal" if status == S.kOptimal else ("time_limit" if status == S.kTimeLimit else "feasible")
            return _Run(state, values, objective, bound, duals, solve_s, text, route, reduced)
        if status == S.kTimeLimit and not self.integral:
            # A level LP cut short: the caller keeps the last level's optimum (or has none, after the first).
            return _Run("time_limit", None, None, None, None, solve_s, text, route)
        if status == S.kTimeLimit:
            raise NoSolutionError(f"HiGHS hit the time limit before finding a feasible solution ({text})")
        raise NoSolutionError(f"HiGHS returned {text}")

    def _retry_from_scratch(self, time_limit):
        """The level LP again from scratch by each of :data:`COLD_ROUTES` until one ends cleanly; its status.

        A warm-started simplex run can end "unknown" (numerical trouble: seen on the 415th level LP of
        a heterogeneous 500 x 1,000 instance, after 140 dual simplex iterations), or "infeasible" (the
        328th level LP of a heterogeneous 1,000 x 1,000 instance, whose previous point violates it by
        3e-9), although the LP is feasible and bounded.  Cold dual simplex without presolve solves the
        second (presolve's reductions judged the tiny slack infeasible), with presolve the first; the
        336th level LP of the 1,000 x 1,000 instance ends "unknown" under every simplex route and is
        solved by the interior point method with crossover in 0.24 s.  The options are put back so the
        later levels stay warm-started.
        """
        h = self.h
        kept = {name: h.getOptionValue(name)[1] for name in ("solver", "presolve", "simplex_strategy", "run_crossover")}
        try:
            return solve_cold_routes(h, time_limit)
        finally:
            for name, value in kept.items():
                h.setOptionValue(name, value)


def solve_cold_routes(h, time_limit: float | None = None):
    """Solve HiGHS model ``h`` from scratch by each of :data:`COLD_ROUTES` in turn until one ends out of
    numerical trouble (:func:`trouble_statuses`); its model status.

    ``time_limit`` (seconds) is shared by the routes (``kTimeLimit`` if none got to run); None leaves
    ``h``'s own limit as it is.  The options stay set; the caller restores its own.  Used by the whole
    leximin's level LPs (:class:`_HighsSession`) and the partitioned parts'
    (:func:`laissez_opt.partition.levels.leximin_part`).
    """
    import highspy

    start = time.perf_counter()
    status = None
    for solver, presolve in COLD_ROUTES:
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - start)
            if left <= 0:
                break
            limit_next_run(h, left)
        status = solve_cold(h, presolve, solver)
        if status not in trouble_statuses():
            break
    return status if status is not None else highspy.HighsModelStatus.kTimeLimit


def solve_cold(h, presolve: str = "choose", solver: str = "simplex"):
    """Solve HiGHS model ``h`` from scratch; its model status.

    ``solver`` "simplex" (the dual simplex method) or "ipm" (interior point, with crossover to a
    vertex so that the duals and the basis are those of a simplex solve); ``presolve`` "choose" or
    "off".  The way out of a warm start that ended in numerical trouble, for the whole leximin's
    level LPs (:class:`_HighsSession`) and the partitioned parts'
    (:func:`laissez_opt.partition.levels.leximin_part`).  The options stay set; the caller restores
    its own.
    """
    if solver not in ("simplex", "ipm") or presolve not in ("choose", "off"):
        raise ValueError(f"solve_cold: unknown route solver={solver!r}, presolve={presolve!r}")
    h.clearSolver()
    h.setOptionValue("solver", solver)
    h.setOptionValue("presolve", presolve)
    if solver == "simplex":
        h.setOptionValue("simplex_strategy", 1)
    else:
        h.setOptionValue("run_crossover", "on")
    h.run()
    return h.getModelStatus()


# --------------------------------------------------------------------------- outcome
@dataclass
class LeximinOutcome:
    """The engine's answer.

    ``values`` is the full column vector of the last solve (None if nothing was
    solved); ``agent_values`` the ``v_i`` of that allocation; ``levels`` the level
    of each level LP (fractional) or the sorted leximin vector (integral);
    ``solve_times`` the solver's own time for each LP/MILP.
    """

    status: str
    values: np.ndarray | None
    agent_values: np.ndarray
    levels: list[float]
    frozen_per_level: list[int]
    solves: int
    probes: int
    solve_times: list[float]
    build_s: float
    route: str
    solver_status: str
    bound: float | None = None
    message: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def solver_s(self) -> float:
        return float(sum(self.solve_times))


def solve_leximin(
    model: LinearModel,
    plan: LeximinPlan,
    *,
    max_served: float | None = None,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    freeze: str = "dual",
    threads: int | None = None,
    mip_gap: float = 1e-9,
    backend: str | None = None,
    verbose: bool = False,
) -> LeximinOutcome:
    """Leximin-optimal allocation of the model declared by :func:`declare_leximin`.

    ``solver="highs"`` with ``via="direct"`` keeps one highspy model and changes
    bounds, costs and coefficients between solves (warm-started simplex after a
    first interior-point LP); other routes lower the mutated declaration
    afresh for each solve through :func:`~laissez_opt.modeling.solve_model`.
    ``freeze`` picks the fractional freezing certificate: ``"dual"`` (nonzero dual
    or standalone bound; needs duals, so only on the highspy route, elsewhere
    ``"probe"`` is used) or ``"probe"``.  See the module docstring.
    """
    if freeze not in FREEZE_TESTS:
        raise ValueError(f"freeze must be one of {FREEZE_TESTS}, got {freeze!r}")
    options = {"threads": threads, "mip_gap": mip_gap, "verbose": verbose}
    if solver == "highs" and via == "direct":
        session: _ModelSession = _HighsSession(model, not plan.fractional, options)
    else:
        extra = {"threads": threads, "mip_gap": mip_gap, "verbose": verbose}
        if backend is not None:
            extra["backend"] = backend
        session = _ModelSession(model, solver, via, extra)
        freeze = "probe"
    # What is left of the run's limit (building counted), or the given limit outside lo.solve.
    time_limit = remaining(time_limit)
    deadline = None if time_limit is None else time.perf_counter() + max(float(time_limit), 0.0)
    if plan.fractional:
        outcome = _waterfill(session, plan, deadline, freeze)
        outcome.extra["freeze"] = freeze
        return outcome
    return _ordered_outcomes(session, plan, deadline, max_served)


def _remaining(deadline):
    if deadline is None:
        return None
    return max(deadline - time.perf_counter(), 1e-3)


def _empty(plan: LeximinPlan, session, message: str) -> LeximinOutcome:
    return LeximinOutcome(
        "optimal", np.zeros(session.model.n_cols), np.zeros(plan.n_agents), [], [], 0, 0, [],
        session.build_s, "none (nothing to solve)", "", 0.0, message,
    )


class _Floors:
    """The frozen agents' rows of the level block, the floors set on them, and how far they were eased."""

    def __init__(self, session: _ModelSession, plan: LeximinPlan):
        self.session, self.plan = session, plan
        self.rows = np.zeros(0, dtype=np.int64)
        self.values = np.zeros(0)
        self.easings: list[tuple[int, float]] = []  # (LP number, share) of each easing

    def freeze(self, rows: np.ndarray, values: np.ndarray) -> None:
        self.session.set_row_bounds(self.plan.level, rows, values)
        self.rows = np.concatenate([self.rows, rows])
        self.values = np.concatenate([self.values, values])

    def solve(self, deadline, lp_number: int) -> _Run:
        """The session's LP; if it ends in numerical trouble on every route, again with the floors eased.

        Each floor ``v_i >= t_k`` was met by the point of its level only to HiGHS's feasibility
        tolerance, so after hundreds of levels the floors together can leave a set so thin that no
        route solves the LP (the 338th level LP of a heterogeneous 1,000 x 1,000 instance: the
        previous point violates it by 2e-9, yet dual and primal simplex and the interior point
        method all end "unknown" with 9e-3 infeasibility).  Lowering every floor by
        :data:`FLOOR_EASING` shares of its value in turn (1e-10 solved it; its level moved by
        1e-8 of its value) gives the LP room again; the easing stays for the later levels.
        """
        run = self.session.solve(_remaining(deadline))
        spent = run.solve_s
        for share in FLOOR_EASING:
            if run.status not in ("trouble", "infeasible") or not self.rows.size:
                break
            self.values = self.values - share * np.abs(self.values)
            self.session.set_row_bounds(self.plan.level, self.rows, self.values)
            self.easings.append((lp_number, share))
            run = self.session.solve(_remaining(deadline))
            spent += run.solve_s
            run.solve_s = spent
        return run

    def note(self) -> str:
        if not self.easings:
            return ""
        total = 1.0 - math.prod(1.0 - share for _, share in self.easings)
        lps = sorted({n for n, _ in self.easings})
        return (f"the frozen agents' floors were eased by {total:.3g} of their values in all (numerical "
                f"trouble at level LP {', '.join(map(str, lps))})")


def _waterfill(session: _ModelSession, plan: LeximinPlan, deadline, freeze: str) -> LeximinOutcome:
    model = session.model
    K = plan.rows_agent.size
    if K == 0:
        return _empty(plan, session, "no agent can get a positive value; all are fixed at 0")
    row_of = np.full(plan.n_agents, -1, dtype=np.int64)
    row_of[plan.rows_agent] = np.arange(K)
    a_max = plan.a_max
    free = plan.included.copy()
    levels: list[float] = []
    frozen_counts: list[int] = []
    times: list[float] = []
    solves = probes = 0
    last: _Run | None = None
    message = ""
    status = "optimal"
    objective_t = np.zeros(model.n_cols)
    objective_t[plan.t.start] = 1.0
    floors = _Floors(session, plan)
    held = plan.block.upper <= 0  # the x columns held at a bound (hold_optimal_face)
    while free.any():
        run = floors.solve(deadline, solves + 1)
        solves += 1
        times.append(run.solve_s)
        if run.status in ("infeasible", "trouble") and last is None:
            raise NoSolutionError(f"level LP {solves} ended {run.text} on every route; a numerical failure")
        if run.values is None and last is None:
            raise NoSolutionError(f"the time limit ended the first level LP before it found a solution ({run.text})")
        if run.status != "optimal":
            # Numerical trouble after the first level keeps the last level's optimum: feasible, and
            # every level before this one is exact.
            status = "feasible" if run.status in ("infeasible", "trouble") else run.status
            message = f"stopped at level {len(levels) + 1}: the LP ended {run.text}"
            if last is None and run.values is not None:
                last = run
            break
        last = run
        tstar = float(run.values[plan.t.start])
        values = plan.values(run.values[plan.block.slice])
        above = _above_tol(tstar, a_max)
        stuck = free & (plan.vmax <= tstar + above)
        if freeze == "dual" and run.duals is not None:
            lam = np.abs(run.duals[plan.level.start : plan.level.start + K])
            stuck |= free & _scatter(lam > _DUAL_NONZERO, plan.rows_agent, plan.n_agents)
        if freeze == "probe" or not stuck.any():
            undecided = free & ~stuck & (values <= tstar + above)
            found, t_used, ended = _probe(session, plan, undecided, tstar, above, row_of, objective_t,
                                          deadline, floors, solves)
            probes += len(t_used)
            solves += len(t_used)
            times.extend(t_used)
            if found is None:
                status = "feasible" if ended.status in ("infeasible", "trouble") else "time_limit"
                message = f"stopped while probing level {len(levels) + 1}: the LP ended {ended.text}"
                break
            stuck |= found
        if not stuck.any():  # numerically, no agent could be certified: freeze the lowest ones
            stuck = free & (values <= tstar + above)
            message = "some levels were frozen without a certificate (numerical tolerance)"
            if not stuck.any():
                stuck = free & (values <= values[free].min() + above)
        idx = np.flatnonzero(stuck)
        rows = row_of[idx]
        session.set_coefs(plan.level, plan.t_entries[rows], 0.0)
        floors.freeze(rows, np.minimum(tstar, plan.vmax[idx]))
        free &= ~stuck
        if run.reduced is not None and free.any():
            held |= hold_optimal_face(session, plan.block, run.values[plan.block.slice],
                                      run.reduced[plan.block.slice], held)
        if levels and tstar <= levels[-1] + 1e-7 * max(1.0, abs(levels[-1])):
            # Levels rise strictly in exact arithmetic; one within the solvers' tolerance of the
            # last is that level again.  It happens when a probe's fixed t (a hair below t*) lets
            # an agent rise through a heavy agent's tiny coefficients: a level LP more, no new level.
            frozen_counts[-1] += int(idx.size)
        else:
            levels.append(tstar)
            frozen_counts.append(int(idx.size))
    message = "; ".join(filter(None, [message, floors.note()]))
    values_all = last.values if last is not None else np.zeros(model.n_cols)
    agent_values = plan.values(values_all[plan.block.slice])
    kind = "persistent model" if isinstance(session, _HighsSession) else "model re-lowered per LP"
    return LeximinOutcome(
        status, values_all, agent_values, levels, frozen_counts, solves, probes, times, session.build_s,
        (last.route if last else "") + f" (leximin: {solves} LPs, {kind})",
        # The first level is the max-min LP, solved to optimality whenever it is in `levels`: its t* bounds
        # the max-min value even when a later level stopped (time limit, numerical trouble).
        last.text if last else "", levels[0] if levels else None, message,
    )


def face_bounds(x: np.ndarray, upper: np.ndarray, reduced_cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The columns a level LP's optimal face holds at 0 and at their upper bound: ``(at_zero, at_upper)``.

    A column at 0 with a reduced cost below ``-FACE_REDUCED_COST``, or at a finite
    upper bound with one above ``FACE_REDUCED_COST`` (HiGHS's signs in a maximisation);
    shared by :func:`hold_optimal_face` and the parts' face cut
    (:func:`laissez_opt.partition.levels.optimal_face`).

    >>> [m.tolist() for m in face_bounds(np.array([0.0, 2.0, 0.5]), np.array([1.0, 2.0, 1.0]),
    ...                                  np.array([-0.3, 0.2, 0.0]))]
    [[True, False, False], [False, True, False]]
    """
    at_zero = (x <= 1e-12 * np.maximum(1.0, upper)) & (reduced_cost < -FACE_REDUCED_COST)
    at_upper = np.isfinite(upper) & (x >= upper * (1 - 1e-12)) & (reduced_cost > FACE_REDUCED_COST) & ~at_zero
    return at_zero, at_upper


def hold_optimal_face(session, block: VariableBlock, x: np.ndarray, reduced_cost: np.ndarray,
                      held: np.ndarray) -> np.ndarray:
    """Fix at its bound every column the level LP just solved holds there on its optimal face; the columns fixed.

    Every feasible point of a later level (the free agents at ``t >= t*``, the
    frozen ones at their floors) is an optimum of this level LP, so it satisfies
    complementary slackness with the LP's dual: a column at 0 with a reduced cost
    below ``-FACE_REDUCED_COST`` stays at 0, one at its upper bound ``u_e`` with a
    reduced cost above ``FACE_REDUCED_COST`` stays at ``u_e`` (HiGHS's signs in a
    maximisation; Isermann 1982, the optimal face of a linear program).  In exact
    arithmetic the later LPs keep them there unasked; in floating point they move
    them within the solver's tolerance, and the floors of later levels (each met
    only to that tolerance) turn those drifts into wrong levels.  Measured on the
    heterogeneous 200 x 200 instance against the exact rational waterfilling of
    :func:`laissez_opt.certify`: without holding, 30 of the 200 leximin values were
    off, the worst by 7.4%; holding the face, every value agrees to 1e-12 and the
    levels take 0.2 s instead of 1.0 s (``models/maxmin.md``).

    ``held`` marks the columns fixed already; only new ones are changed.

    >>> from laissez_opt.modeling import LinearModel
    >>> m = LinearModel("toy"); x = m.add_variables("x", 3, lower=0.0, upper=[1.0, 2.0, 1.0])
    >>> s = _ModelSession(m, "highs", "direct", {})
    >>> fixed = hold_optimal_face(s, x, np.array([0.0, 2.0, 0.5]), np.array([-0.3, 0.2, 0.0]),
    ...                           np.zeros(3, dtype=bool))
    >>> fixed.tolist(), x.lower.tolist(), x.upper.tolist()   # column 0 held at 0, column 1 at its bound 2
    ([True, True, False], [0.0, 2.0, 0.0], [0.0, 2.0, 1.0])
    """
    upper = block.upper
    at_zero, at_upper = face_bounds(x, upper, reduced_cost)
    to_zero = np.flatnonzero(at_zero & ~held)
    to_upper = np.flatnonzero(at_upper & ~held)
    if to_zero.size:
        session.set_bounds(block, to_zero, 0.0, 0.0)
    if to_upper.size:
        session.set_bounds(block, to_upper, upper[to_upper], upper[to_upper])
    fixed = np.zeros(x.shape[0], dtype=bool)
    fixed[to_zero] = True
    fixed[to_upper] = True
    return fixed


def _scatter(mask_rows: np.ndarray, rows_agent: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[rows_agent[mask_rows]] = True
    return out


def _probe(session, plan: LeximinPlan, undecided, tstar, above, row_of, objective_t, deadline, floors: _Floors,
           solves: int):
    """Split the ``undecided`` agents into stuck at ``tstar`` (returned mask) and able to exceed it.

    ``t`` is fixed at ``tstar``.  Group probes maximise ``sum_{i in U} v_i / a_i^max``
    with each ``v_i`` capped at ``tstar + 10 above_i`` (the cap spreads the gain
    over many agents): agents clearly above ``tstar`` can exceed it; if none is
    and the total gain is negligible, all of ``U`` is stuck (any agent able to
    rise would add at least its ``above_i``).  Otherwise single-agent probes
    (maximise ``v_j``) decide the rest one by one.  Each probe is solved through ``floors``
    (numbered after the ``solves`` LPs so far).  Returns ``(stuck, times, None)``, or
    ``(None, times, run)`` when probe ``run`` stopped early.
    """
    stuck = np.zeros(plan.n_agents, dtype=bool)
    times: list[float] = []
    if not undecided.any():
        return stuck, times, None
    fixed = tstar - _fix_tol(tstar)
    session.set_bounds(plan.t, 0, fixed, fixed)
    undecided = undecided.copy()
    weight = np.where(plan.a_max > 0, 1.0 / np.where(plan.a_max > 0, plan.a_max, 1.0), 0.0)
    capped = np.zeros(0, dtype=np.int64)
    group = True
    try:
        while undecided.any():
            objective = np.zeros(session.model.n_cols)
            if group:
                members = undecided
                cols = members[plan.agent]
                objective[plan.block.start + np.flatnonzero(cols)] = (plan.coef * weight[plan.agent])[cols]
                capped = row_of[np.flatnonzero(members)]
                session.set_row_bounds(plan.level, capped, 0.0, 10.0 * above[members] + _fix_tol(tstar))
            else:
                j = int(np.flatnonzero(undecided)[0])
                cols = plan.agent == j
                objective[plan.block.start + np.flatnonzero(cols)] = plan.coef[cols]
            session.set_objective(objective)
            run = floors.solve(deadline, solves + len(times) + 1)
            times.append(run.solve_s)
            if capped.size:
                session.set_row_bounds(plan.level, capped, 0.0, np.inf)
                capped = np.zeros(0, dtype=np.int64)
            if run.status != "optimal":
                return None, times, run
            values = plan.values(run.values[plan.block.slice])
            up = undecided & (values > tstar + above)
            if group:
                gain = float(np.sum(weight[undecided] * (values[undecided] - tstar)))
                if not up.any() and gain <= 0.1 * float(np.min(weight[undecided] * above[undecided])):
                    stuck |= undecided
                    break
                if not up.any():
                    group = False  # inconclusive: decide agent by agent
            else:
                if values[j] <= tstar + above[j]:
                    stuck[j] = True
                    undecided[j] = False
            undecided &= ~up
    finally:
        session.set_objective(objective_t)
        session.set_bounds(plan.t, 0, 0.0, np.inf)
    return stuck, times, None


def _allocation_blocks(model: LinearModel, plan: LeximinPlan) -> list[ConstraintBlock]:
    """The constraint blocks that touch only the allocation block (capacity, demand, ...)."""
    lo, hi = plan.block.start, plan.block.start + plan.block.size
    return [c for c in model.constraints.values() if c.cols.size and c.cols.min() >= lo and c.cols.max() < hi]


def relaxed_first_level(model: LinearModel, plan: LeximinPlan, *, time_limit: float | None = None,
                        solver: str = "highs") -> tuple[float | None, np.ndarray | None]:
    """``max t`` s.t. ``v_i(x) >= t`` for every agent taking part, ``x`` fractional and feasible.

    Over the allocation constraints of ``model`` only (the blocks that touch
    nothing but the allocation), so it is the first level of the fractional
    leximin: an upper bound on the smallest value of any integral allocation.
    Returns ``(t*, x*)`` (the block's values), or ``(None, None)`` if the LP did
    not finish.
    """
    from ..errors import NoSolutionError as _NoSolution

    lp = LinearModel(f"{model.name}-first-level", sense="max")
    x = lp.add_variables("x", plan.block.size, lower=plan.block.lower.copy(), upper=plan.block.upper.copy())
    for c in _allocation_blocks(model, plan):
        lp.add_constraints(c.name, rows=c.rows, cols=c.cols - plan.block.start + x.start, coefs=c.coefs,
                           lower=c.lower, upper=c.upper, n_rows=c.size)
    K = plan.rows_agent.size
    t = lp.add_variables("t", 1, lower=0.0, upper=np.inf)
    row_of = np.full(plan.n_agents, -1, dtype=np.int64)
    row_of[plan.rows_agent] = np.arange(K)
    use = np.flatnonzero((plan.coef > 0) & plan.included[plan.agent] & (plan.block.upper > 0))
    lp.add_constraints("level", rows=np.concatenate([row_of[plan.agent[use]], np.arange(K)]),
                       cols=np.concatenate([x.columns(use), np.full(K, t.start)]),
                       coefs=np.concatenate([plan.coef[use], -np.ones(K)]), lower=0.0, n_rows=K)
    lp.set_objective(t, np.ones(1))
    try:
        sol = solve_model(lp, solver=solver if solver in ("highs", "ortools") else "highs", time_limit=time_limit)
    except _NoSolution:
        return None, None
    if sol.status != "optimal":
        return None, None
    return float(sol.values[t.start]), sol.values[x.slice]


def packing_start(model: LinearModel, plan: LeximinPlan, base: np.ndarray | None = None) -> np.ndarray:
    """A feasible integral allocation that raises the smallest value greedily (a MIP start).

    From ``base`` (rounded down; zero when absent), repeatedly give one more unit
    to the agent with the smallest value ``v_i`` that can take one: its column
    with the largest ``a_{i,c,r}`` whose unit keeps every allocation row within
    its upper bound (the rows are packing rows: nonnegative coefficients).  An
    agent that can take nothing more leaves; ties go to the lowest agent index.
    The units an agent needs to pass the next smallest value are given in one
    batch, so the loop runs ``O(n + E)`` times per agent overtaken rather than
    once per device, with one pointer per agent into its sorted columns.
    """
    import heapq

    size = plan.block.size
    upper = np.floor(plan.block.upper + 1e-9)
    x = np.zeros(size) if base is None else np.minimum(np.floor(np.asarray(base, float) + 1e-9), upper)
    x = np.maximum(x, 0.0)
    blocks = _allocation_blocks(model, plan)
    # Row activity and slack over all allocation rows, one global row index per block row.
    offsets, total = [], 0
    for c in blocks:
        offsets.append(total)
        total += c.size
    slack = np.full(total, np.inf)
    col_rows: list[list[tuple[int, float]]] = [[] for _ in range(size)]
    activity = np.zeros(total)
    for c, off in zip(blocks, offsets):
        local = c.cols - plan.block.start
        np.add.at(activity, off + c.rows, c.coefs * x[local])
        slack[off:off + c.size] = c.upper
        for r, j, a in zip((off + c.rows).tolist(), local.tolist(), c.coefs.tolist()):
            if a > 0:
                col_rows[j].append((r, a))
    slack = slack - activity
    if np.any(slack < -1e-9):  # the rounded base breaks a row: start from nothing
        return packing_start(model, plan, None)
    values = plan.values(x)
    order = np.lexsort((-plan.coef, plan.agent))
    order = order[(plan.coef[order] > 0) & (upper[order] > 0)]
    starts = np.searchsorted(plan.agent[order], np.arange(plan.n_agents + 1))
    pointer = starts[:-1].copy()
    heap = [(float(values[i]), int(i)) for i in plan.rows_agent.tolist()]
    heapq.heapify(heap)
    while heap:
        value, i = heapq.heappop(heap)
        while pointer[i] < starts[i + 1]:
            j = int(order[pointer[i]])
            room = upper[j] - x[j]
            for r, a in col_rows[j]:
                fits = (slack[r] + 1e-9) / a  # inf for an unbounded row or a vanishing coefficient
                if math.isfinite(fits):
                    room = min(room, math.floor(fits))
            if room >= 1:
                # Units enough to pass the next smallest value (at least one): whole batches keep
                # the loop short when pools hold millions of devices.
                step = float(plan.coef[j])
                target = heap[0][0] if heap else math.inf
                gap = (target - value) / step if math.isfinite(target) else math.inf
                units = min(room, max(1.0, math.floor(gap) + 1)) if math.isfinite(gap) else room
                x[j] += units
                for r, a in col_rows[j]:
                    slack[r] -= a * units
                heapq.heappush(heap, (value + step * units, i))
                break
            pointer[i] += 1  # full column or row: never usable again (slack only shrinks)
    return x


def _sum_smallest(plan: LeximinPlan, block_values: np.ndarray, count: int) -> float:
    """``theta``: the sum of the ``count`` smallest values ``v_i`` over the agents taking part."""
    ranked = np.sort(plan.values(block_values)[plan.rows_agent])
    return float(ranked[:count].sum())


def _start_vector(model: LinearModel, plan: LeximinPlan, block_values: np.ndarray, k: int) -> np.ndarray:
    """Step ``k``'s full column vector for an allocation: ``r_k`` its ``(k+1)``-th smallest value, ``d_k`` the shortfalls.

    The objective ``(k+1) r_k - sum_j d_{k,j}`` is then the sum of its ``k+1``
    smallest values; earlier steps' columns stay 0, which satisfies their rows
    whenever their ``theta_h*`` are 0 (the steps skipped as proven 0).
    """
    full = np.zeros(model.n_cols)
    full[plan.block.slice] = block_values
    K = plan.rows_agent.size
    values = plan.values(block_values)[plan.rows_agent]
    r_k = float(np.sort(values)[k])
    full[plan.r.start + k] = r_k
    full[plan.d.start + k * K: plan.d.start + (k + 1) * K] = np.maximum(0.0, r_k - values)
    return full


def _ordered_outcomes(session: _ModelSession, plan: LeximinPlan, deadline, max_served: float | None = None
                      ) -> LeximinOutcome:
    """Steps ``k = 1..K`` of the ordered outcomes; see the module docstring.

    ``max_served`` bounds how many agents can have a positive value at once (for
    whole devices: the devices of all rounds); with ``K`` agents taking part, the
    first ``K - max_served`` values are 0 in every allocation, so those steps are
    settled (``theta_k = 0``) without a solve.  Before the first solved step, the
    fractional first level gives a bound and, rounded down and filled greedily
    (:func:`packing_start`), an incumbent that is also the MIP start, so a
    stopped search always returns an allocation with a meaningful bound.
    """
    model = session.model
    K = plan.rows_agent.size
    if K == 0:
        return _empty(plan, session, "no agent can get a positive value; all are fixed at 0")
    times: list[float] = []
    last: _Run | None = None
    status, message, bound = "optimal", "", None
    k0 = int(max(0, K - max_served)) if max_served is not None and max_served < K else 0
    thetas: list[float] = [0.0] * k0
    if k0:
        bound = 0.0  # the smallest value is 0 in every allocation: proven without a solve
        message = f"steps 1..{k0} settled at 0: at most {int(max_served)} of {K} agents can be served at once"
    t0 = time.perf_counter()
    relaxed, relaxed_x = (None, None) if k0 else relaxed_first_level(
        model, plan, time_limit=_remaining(deadline), solver=getattr(session, "solver", "highs"))
    start_block = packing_start(model, plan, relaxed_x)
    start_full = _start_vector(model, plan, start_block, k0)
    start_theta = _sum_smallest(plan, start_block, k0 + 1)
    start_s = time.perf_counter() - t0
    session.set_start(start_full)
    for k in range(k0, K):
        session.set_bounds(plan.r, k, 0.0, np.inf)
        session.set_bounds(plan.d, np.arange(k * K, (k + 1) * K), 0.0, np.inf)
        objective = np.zeros(model.n_cols)
        objective[plan.r.start + k] = k + 1.0
        objective[plan.d.start + k * K : plan.d.start + (k + 1) * K] = -1.0
        session.set_objective(objective)
        try:
            run = session.solve(_remaining(deadline))
        except NoSolutionError as exc:  # stopped before any solution of its own: the start stands
            run = _Run("time_limit", None, None, None, None, 0.0, str(exc), "highspy-mip")
        times.append(run.solve_s)
        if run.status == "infeasible":
            raise NoSolutionError(f"ordered-outcome step {k + 1} reported infeasible ({run.text}); a numerical failure")
        if run.status != "optimal":
            status = run.status
            message = "; ".join(filter(None, [message, f"stopped at ordered-outcome step {k + 1} of {K}: {run.text}"]))
            if k == 0:
                # Step 1 maximises the smallest value: its dual bound, and the fractional first level, bound it.
                finite = [b for b in (run.bound, relaxed) if b is not None and np.isfinite(b)]
                bound = min(finite) if finite else None
            if k == k0:
                found = -np.inf
                if run.values is not None:
                    found = _sum_smallest(plan, np.round(run.values[plan.block.slice]), k + 1)
                if found < start_theta:
                    run = _Run(run.status, start_full, start_theta, run.bound, None, 0.0, run.text,
                               run.route + " (incumbent: greedy start)")
                    message += "; the incumbent is the greedy start" + (
                        " from the rounded fractional first level" if relaxed_x is not None else "")
            if run.values is not None:
                last = run
            break
        last = run
        # theta_k of the rounded allocation, not the solver's objective: the MIP may lift r_k
        # within its feasibility tolerance, and fixing that would cut off the true optimum.
        block = run.values[plan.block.slice]
        theta = _sum_smallest(plan, np.round(block) if plan.block.integer else block, k + 1)
        if k == 0:
            bound = run.bound
        thetas.append(theta)
        session.set_row_bounds(plan.cumulative, k, theta - _THETA_SLACK * max(1.0, abs(theta)))
    values_all = last.values if last is not None else np.zeros(model.n_cols)
    block = values_all[plan.block.slice]
    if plan.block.integer:
        block = np.round(block)
    agent_values = plan.values(block)
    sorted_levels = np.sort(agent_values[plan.rows_agent]).tolist() if status == "optimal" else list(np.diff([0.0, *thetas]))
    return LeximinOutcome(
        status, values_all, agent_values, sorted_levels, [1] * len(thetas), len(times), 0, times,
        session.build_s,
        (last.route if last else "") + f" (leximin by ordered outcomes: {len(times)} MILPs)",
        last.text if last else "", bound, message,
        extra={"start_s": start_s, "relaxed_first_level": relaxed, "steps_settled_at_zero": k0},
    )
