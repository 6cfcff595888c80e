"""Integral leximin at scale: a rounded fractional leximin, a first-level MILP, a certified bound.

The ordered-outcome MILPs of :mod:`laissez_opt.exact.leximin` need ``K^2``
auxiliary columns for ``K`` agents taking part and stall beyond a few dozen
agents.  For general demands (the unit-demand case is exact by
:mod:`laissez_opt.exact.bottleneck`) this module gives, at every size, an
integral allocation with a proven bound on its smallest value:

1. **Bound.**  Every integral allocation is a fractional one, so the integral
   max-min value is at most the first level of the fractional leximin,

   .. math::

       \\max_{x \\in X \\cap \\mathbb{Z}} \\min_i v_i(x) \\;\\le\\; t_1^{frac}
       = \\max_{x \\in X} \\min_i v_i(x).

   When fewer agents can be served than take part (whole devices: at most
   ``sum_c k_c`` per round), the integral value is 0, proven without a solve.
   Tighter, where whole devices decide: device counting over sets of pools
   (:func:`device_count_bound`), the LP with device-count covers
   (:func:`cover_bound`) and the configuration LP (:func:`configuration_bound`,
   one integral device vector per agent).
2. **Incumbent (always).**  The fractional leximin allocation ``x^f``, rounded
   down (``floor`` keeps every packing row ``capacity``/``demand`` satisfied),
   then filled greedily: the agent with the smallest value takes one more unit
   of its best column that fits (:func:`laissez_opt.exact.leximin.packing_start`).
   The result is checked against the rows and bounds (:func:`check_allocation`).
3. **First-level MILP.**  ``max t`` s.t. ``v_i(x) >= t`` for the agents taking
   part, ``x`` integral, with ``t >= t_0`` (the incumbent's smallest value, a
   cutoff that prunes every node below it) and **symmetry breaking** among
   interchangeable agents (:mod:`laissez_opt.exact.classes`: identical utility
   rows, weight, demand and window, hence identical ``E_i``): for the members
   ``i_1 < i_2 < ... < i_{n_g}`` of a class,

   .. math::

       v_{i_{k+1}}(x) - v_{i_k}(x) \\ge 0 \\quad (k < n_g), \\qquad
       v_{i_1}(x) - t \\ge 0 \\text{ (one level row per class)}.

   Valid: swapping two members' allocation columns maps a feasible allocation
   to a feasible one with the same sorted vector of values, so sorting each
   class's members by value keeps an optimum (Margot 2010, orbit ordering).
   Identical devices of a pool are one integer column per (agent, pool), so
   device symmetry never enters the model.
4. **Polish.**  The best allocation found is filled greedily again (units only
   added, so its smallest value never drops).

``status`` is ``optimal`` only when the whole leximin is proven (never here:
the levels above the first are the greedy fill's); ``feasible`` when the
smallest value is proven (gap 0) or the MILP stopped for another reason,
``time_limit`` when the time ran out.  ``bound`` is the smaller of
``t_1^frac`` and the MILP's dual bound; the gap is relative to it, and
undefined (reported with the absolute gap) when the incumbent's smallest
value is 0 and the bound is not.

References: Ogryczak, Pioro & Tomaszewski, Networks 2005 (max-min and
leximin MILPs); Margot, "Symmetry in integer linear programming", 50 Years of
Integer Programming (2010) (orbit ordering constraints); Raghavan & Thompson,
Combinatorica 1987 (rounding a fractional solution as an incumbent).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.generate("gavel", 40, 3, seed=0, max_count=40)
>>> r = lo.solve(inst, "maxmin", levels="first_level", time_limit=30)
>>> r.status in ("feasible", "time_limit"), r.bound >= r.objective > 0
(True, True)
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import NoSolutionError
from ..instance import Instance
from ..limits import remaining
from ..modeling import LinearModel, solve_model
from .classes import agent_classes
from .common import AllocationColumns, add_allocation
from .leximin import LeximinOutcome, LeximinPlan, packing_start, standalone_max, value_unit

__all__ = ["declare_first_level", "rounded_start", "check_allocation", "order_by_class",
           "device_count_bound", "unit_leximin_base", "cover_bound", "configuration_bound", "solve_first_level",
           "LEVEL_ROUTES"]

#: Values of option ``levels`` (integral leximin with general demands).
LEVEL_ROUTES = ("auto", "ordered_outcomes", "first_level")
#: ``levels="auto"`` runs the ordered outcomes up to this many agents taking part.
ORDERED_MAX_AGENTS = 32
#: Seconds at most for the unit-demand leximin start (its stages grow with the distinct values).
UNIT_START_S = 10.0
#: Relative margin of the cutoff ``t >= t_0`` below the incumbent's value (row tolerance).
_CUTOFF_SLACK = 1e-9


def declare_first_level(instance: Instance, coef: np.ndarray, *, symmetry: bool = True, integral: bool = True,
                        cover: np.ndarray | None = None) -> tuple[LinearModel, LeximinPlan, np.ndarray]:
    """The first-level MILP: ``x`` (integral), ``capacity``, ``demand``, ``t``, ``level`` and ``order``.

    ``coef[j]`` is ``a_{i,c,r}`` of block column ``j`` (the normalised value per
    device).  ``level``: ``v_i(x) - t >= 0`` for each agent taking part
    (``v_i^max > 0``), only for the first such member of its class when
    ``symmetry``; ``order``: ``v_{i_{k+1}}(x) - v_{i_k}(x) >= 0`` between
    consecutive members of a class; ``cover`` (per agent, optional): ``sum_{c,r} x_{i,c,r} >= cover_i``
    (whole devices an agent needs for a level, see :func:`cover_bound`).  Returns the model, a plan (engine units
    ``plan.unit``) and the class label of each agent (``-1``: no class row).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, label = declare_first_level(inst, np.ones(2))
    >>> sorted(model.constraints), model.constraints["level"].size, label.tolist()
    (['capacity', 'demand', 'level', 'order'], 1, [0, 0])
    """
    model = LinearModel("maxmin-first-level", sense="max")
    columns = add_allocation(model, instance, integral=integral)
    block = columns.block
    coef = np.asarray(coef, dtype=np.float64)
    unit = value_unit(coef)
    coef = coef * unit
    block.upper[coef <= 0] = 0.0
    block.upper[:] = np.floor(block.upper + 1e-9)
    rounds = instance.rounds
    group = columns.agent * rounds + columns.round
    cap = np.floor(np.repeat(instance.demands, rounds) + 1e-9)
    n = instance.n_agents
    vmax = standalone_max(columns.agent, group, coef, block.upper, cap, n)
    included = vmax > 0
    rows_agent = np.flatnonzero(included)
    label = agent_classes(instance).label.copy() if symmetry else np.arange(n)
    label[~included] = -1
    # Members of each class in index order: a level row for the first, an order row for each next one.
    order = np.lexsort((np.arange(n), label))
    order = order[label[order] >= 0]
    first = np.ones(order.size, dtype=bool)
    first[1:] = label[order[1:]] != label[order[:-1]]
    heads, followers, previous = order[first], order[~first], order[np.flatnonzero(~first) - 1]
    use = np.flatnonzero((coef > 0) & (block.upper > 0))
    agent_of = columns.agent[use]
    t = model.add_variables("t", 1, lower=0.0, upper=np.inf if rows_agent.size else 0.0,
                            description="the smallest value, raised")
    row_head = np.full(n, -1, dtype=np.int64)
    row_head[heads] = np.arange(heads.size)
    mine = row_head[agent_of] >= 0
    model.add_constraints(
        "level",
        rows=np.concatenate([row_head[agent_of[mine]], np.arange(heads.size)]),
        cols=np.concatenate([block.columns(use[mine]), np.full(heads.size, t.start)]),
        coefs=np.concatenate([coef[use[mine]], -np.ones(heads.size)]),
        lower=0.0, n_rows=heads.size,
        description="v_i(x) - t >= 0 for the first member i of each class taking part")
    # order row k: v_{followers[k]} - v_{previous[k]} >= 0
    row_next = np.full(n, -1, dtype=np.int64)
    row_next[followers] = np.arange(followers.size)
    row_prev = np.full(n, -1, dtype=np.int64)
    row_prev[previous] = np.arange(followers.size)
    plus, minus = row_next[agent_of] >= 0, row_prev[agent_of] >= 0
    model.add_constraints(
        "order",
        rows=np.concatenate([row_next[agent_of[plus]], row_prev[agent_of[minus]]]),
        cols=np.concatenate([block.columns(use[plus]), block.columns(use[minus])]),
        coefs=np.concatenate([coef[use[plus]], -coef[use[minus]]]),
        lower=0.0, n_rows=followers.size,
        description="v of a class member >= v of the member before it (symmetry breaking)")
    if cover is not None:
        need = np.flatnonzero(included & (np.asarray(cover) > 0))
        row_cover = np.full(n, -1, dtype=np.int64)
        row_cover[need] = np.arange(need.size)
        on = np.flatnonzero(row_cover[columns.agent] >= 0)
        model.add_constraints("cover", rows=row_cover[columns.agent[on]], cols=block.columns(on),
                              coefs=np.ones(on.size), lower=np.asarray(cover, float)[need], n_rows=need.size,
                              description="sum_c x[i,c,r] >= m_i: the whole devices agent i needs for the level")
    model.set_objective(t, np.ones(1))
    plan = LeximinPlan(block, columns.agent, coef, included, vmax, False, rows_agent, t=t, unit=unit)
    columns.block = block
    plan.columns = columns
    return model, plan, label


def check_allocation(model: LinearModel, plan: LeximinPlan, block_values: np.ndarray, *, tol: float = 1e-9) -> None:
    """Raise ``AssertionError`` unless ``block_values`` is integral, within its bounds and every
    ``capacity`` / ``demand`` row (the checked rows of a rounded start).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=1)], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.ones(1))
    >>> check_allocation(model, plan, np.array([1.0]))
    """
    x = np.asarray(block_values, dtype=np.float64)
    assert np.all(np.abs(x - np.round(x)) <= tol), "not integral"
    assert np.all(x >= plan.block.lower - tol) and np.all(x <= plan.block.upper + tol), "outside the column bounds"
    for name in ("capacity", "demand"):
        c = model.constraints[name]
        activity = np.bincount(c.rows, weights=c.coefs * x[c.cols - plan.block.start], minlength=c.size)
        assert np.all(activity <= c.upper + tol) and np.all(activity >= c.lower - tol), f"breaks a {name} row"


def order_by_class(plan: LeximinPlan, label: np.ndarray, block_values: np.ndarray) -> np.ndarray:
    """Deal each class's allocation rows to its members in nondecreasing order of value.

    Members of a class have the same (pool, round) columns with the same
    coefficients, so permuting whole rows among them keeps every row and the
    multiset of values; afterwards the ``order`` rows hold.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, label = declare_first_level(inst, np.ones(2))
    >>> order_by_class(plan, label, np.array([2.0, 1.0])).tolist()
    [1.0, 2.0]
    """
    x = np.asarray(block_values, dtype=np.float64).copy()
    cols = plan.columns
    agent = cols.agent
    # Each agent's columns sorted by (pool, round): the same positions across a class.
    by_agent = np.lexsort((cols.round, cols.pool, agent))
    starts = np.searchsorted(agent[by_agent], np.arange(plan.n_agents + 1))
    values = plan.values(x)
    valid = np.flatnonzero(label >= 0)
    members = valid[np.lexsort((valid, label[valid]))]
    bounds = np.flatnonzero(np.r_[True, label[members[1:]] != label[members[:-1]], True])
    source = x.copy()
    for a, b in zip(bounds[:-1], bounds[1:]):
        group = members[a:b]
        if group.size < 2:
            continue
        ranked = group[np.argsort(values[group], kind="stable")]
        for dst, src in zip(group.tolist(), ranked.tolist()):
            if dst != src:
                x[by_agent[starts[dst]:starts[dst + 1]]] = source[by_agent[starts[src]:starts[src + 1]]]
    return x


def rounded_start(model: LinearModel, plan: LeximinPlan, fractional_block: np.ndarray | None) -> np.ndarray:
    """The fractional allocation rounded down, then filled greedily from the smallest value up.

    ``floor`` of a feasible fractional allocation satisfies every packing row
    (nonnegative coefficients, upper bounds), so the start is feasible; the
    greedy fill (:func:`laissez_opt.exact.leximin.packing_start`) only adds
    units that fit.  ``None``: the fill alone, from nothing.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.ones(2))
    >>> rounded_start(model, plan, np.array([1.5, 1.5])).tolist()
    [2.0, 1.0]
    """
    return packing_start(model, plan, fractional_block)


def _lex_key(plan: LeximinPlan, block_values: np.ndarray) -> tuple:
    return tuple(np.sort(plan.values(block_values)[plan.rows_agent]).round(12).tolist())


def unit_leximin_base(instance: Instance, plan: LeximinPlan, time_limit: float | None = None) -> np.ndarray | None:
    """One device per agent, placed by the exact unit-demand leximin (one round; else None).

    Capping every demand at 1 makes the leximin a lexicographic bottleneck b-matching
    (:func:`laissez_opt.exact.bottleneck.lexicographic_unit_matching`); its placement,
    one unit in the chosen (agent, pool) column, is a feasible integral allocation of the
    general-demand instance that leaves nobody without a device while one can be had.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=1), lo.Pool("Q", count=1)],
    ...                    [lo.Agent("A", demand=2), lo.Agent("B", demand=2)],
    ...                    [lo.Edge("A", "P", 2.0), lo.Edge("A", "Q", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.array([2.0, 1.0, 1.0]), symmetry=False)
    >>> unit_leximin_base(inst, plan).tolist()    # B can only use P, so A takes Q
    [0.0, 1.0, 1.0]
    """
    if instance.rounds != 1:
        return None
    from .bottleneck import lexicographic_unit_matching

    usable = plan.block.upper > 0
    placed, _ = lexicographic_unit_matching(instance, plan.coef, usable, time_limit)
    return (placed[instance.edge_agent] == instance.edge_pool).astype(np.float64)


def _best_start(model: LinearModel, plan: LeximinPlan, base: np.ndarray | None, instance: Instance,
                time_limit: float | None) -> tuple[np.ndarray, str]:
    """The lexicographically best (sorted values) of three feasible integral allocations, each
    filled greedily: the rounded fractional leximin, the exact unit-demand leximin (one device
    each; it wins when whole devices are about as many as agents, where rounding down leaves
    agents with nothing while others keep several) and nothing."""
    candidates = [(rounded_start(model, plan, None), "greedy fill from nothing")]
    if base is not None:
        candidates.append((rounded_start(model, plan, base), "rounded fractional leximin + greedy fill"))
    unit = unit_leximin_base(instance, plan, time_limit)
    if unit is not None:
        candidates.append((rounded_start(model, plan, unit), "unit-demand leximin + greedy fill"))
    return max(candidates, key=lambda c: _lex_key(plan, c[0]))


#: Pools up to which :func:`device_count_bound` tries every subset of pools (Hall's condition).
HALL_MAX_POOLS = 10


def _count_level(a: np.ndarray, d: np.ndarray, total: float) -> float:
    """Largest ``t`` with ``ceil(t / a_i) <= d_i`` for all ``i`` and ``sum_i ceil(t / a_i) <= total``."""
    if a.size > total:
        return 0.0
    cap = float(np.min(a * d))

    def need(t: float) -> float:
        return float(np.sum(np.ceil(t / a - 1e-12)))

    if need(cap) <= total:
        return cap
    lo, hi = 0.0, cap
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if need(mid) <= total:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(1.0, hi):
            break
    # The count is constant between breakpoints j a_i and steps up just after each: the feasible
    # values form (0, b] for a breakpoint b, the smallest breakpoint at or above lo.
    j = np.maximum(np.ceil(lo / a - 1e-12), 1.0)
    b = float(np.min(j * a))
    return b if need(b) <= total else hi


def device_count_bound(instance: Instance, plan: LeximinPlan) -> float | None:
    """A bound on the integral max-min value from counting whole devices (one round only).

    Agent ``i`` reaches ``v_i >= t`` only with at least ``m_i(t) = ceil(t / a_i^max)``
    whole devices (``a_i^max`` its largest value per device), at most ``d_i``.  For any
    set ``S`` of pools, the agents ``A_S`` whose usable pools all lie in ``S`` hold only
    devices of ``S`` (Hall's condition), so ``t`` is feasible only if

    .. math::

        \\sum_{i \\in A_S} \\lceil t / a_i^{max} \\rceil \\le \\sum_{c \\in S} k_c
        \\quad\\text{and}\\quad \\lceil t / a_i^{max} \\rceil \\le d_i .

    The bound is the smallest, over ``S``, of the largest such ``t`` (every subset up to
    ``HALL_MAX_POOLS`` pools, else ``S`` = all pools).  ``None`` with several rounds.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A", demand=3), lo.Agent("B", demand=3)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.ones(2))
    >>> device_count_bound(inst, plan)   # 3 devices, 2 agents: someone holds 1
    1.0
    """
    if instance.rounds != 1:
        return None
    idx = plan.rows_agent
    if idx.size == 0:
        return None
    a_all = plan.a_max
    m = instance.n_pools
    counts = instance.counts.astype(np.float64)
    d_all = np.floor(np.minimum(instance.demands, counts.sum()) + 1e-9)  # an unbounded demand holds at most every device
    if m > HALL_MAX_POOLS:
        return _count_level(a_all[idx], d_all[idx], float(counts.sum()))
    usable = (plan.block.upper > 0) & (plan.coef > 0)
    mask = np.zeros(instance.n_agents, dtype=np.int64)
    np.bitwise_or.at(mask, instance.edge_agent[usable], np.left_shift(1, instance.edge_pool[usable]).astype(np.int64))
    mask = mask[idx]
    a, d = a_all[idx], d_all[idx]
    best = np.inf
    for S in np.unique(mask).tolist() + [(1 << m) - 1]:
        # Only the unions that some agent's own pool set forms, and all pools: a cheap family of subsets.
        inside = (mask & ~S) == 0
        if inside.any():
            total = float(counts[[c for c in range(m) if S >> c & 1]].sum())
            best = min(best, _count_level(a[inside], d[inside], total))
    for S in range(1, 1 << m):
        inside = (mask & ~S) == 0
        if inside.any():
            total = float(counts[[c for c in range(m) if S >> c & 1]].sum())
            best = min(best, _count_level(a[inside], d[inside], total))
    return float(best) if np.isfinite(best) else None


def cover_bound(instance: Instance, coef: np.ndarray, plan: LeximinPlan, level: float, *,
                time_limit: float | None = None) -> float | None:
    """A bound on the integral max-min value ``t*`` from the LP with device-count covers.

    ``level`` is ``tau`` in engine units (an incumbent's smallest value).  If
    ``t* > tau``, every agent ``i`` taking part has ``v_i > tau``, so it holds at least
    ``m_i = floor(tau / a_i^max) + 1`` whole devices; the fractional first level with the
    rows ``sum_c x_{i,c} >= m_i`` (:func:`declare_first_level`, ``cover``) then bounds
    ``t*``.  Hence ``t* <= max(tau, LP)``, and ``t* <= tau`` (the incumbent is optimal)
    when that LP is infeasible.  ``None`` if the LP did not finish.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A", demand=3), lo.Agent("B", demand=3)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.ones(2))
    >>> cover_bound(inst, np.ones(2), plan, 1.0)   # above 1 both need 2 of the 3 devices: 1 is optimal
    1.0
    """
    a = plan.a_max
    cover = np.where(plan.included, np.floor(level / np.where(a > 0, a, 1.0) + 1e-12) + 1.0, 0.0)
    lp, lp_plan, _ = declare_first_level(instance, coef, symmetry=False, integral=False, cover=cover)
    try:
        sol = solve_model(lp, solver="highs", time_limit=time_limit)
    except NoSolutionError:
        return None
    if sol.status == "infeasible":
        return float(level)
    if sol.status != "optimal":
        return None
    return max(float(level), float(sol.values[lp_plan.t.start]) * lp_plan.unit / plan.unit)


#: Largest number of integral configurations (device vectors) per class of agents for :func:`configuration_bound`.
MAX_CONFIGURATIONS = 2000


def _configurations(caps: list[int], demand: int, limit: int) -> np.ndarray | None:
    """Every integral vector ``q`` with ``0 <= q_j <= caps[j]`` and ``0 < sum q <= demand``; None past ``limit``."""
    out: list[tuple[int, ...]] = []

    def walk(j: int, left: int, prefix: tuple[int, ...]) -> bool:
        if j == len(caps):
            if sum(prefix):
                out.append(prefix)
            return len(out) <= limit
        for q in range(min(caps[j], left) + 1):
            if not walk(j + 1, left - q, prefix + (q,)):
                return False
        return True

    if not walk(0, demand, ()):
        return None
    return np.array(out, dtype=np.float64).reshape(len(out), len(caps))


def configuration_bound(instance: Instance, plan: LeximinPlan, level: float, upper: float, *,
                        deadline: float | None = None) -> tuple[float | None, int]:
    """The configuration LP's bound on the integral max-min value ``t*`` (one round), in engine units.

    A *configuration* of agent ``i`` is an integral device vector ``q`` over its usable
    columns (``q_j <= min(d_i, k_c)``, ``sum_j q_j <= d_i``); it *reaches* ``t`` when
    ``sum_j a_j q_j >= t``.  If ``t*`` is reached, the integral optimum is a choice of one
    reaching configuration per agent within the pools' capacities, so the LP

    .. math::

        \\sum_{q \\in Q_g(t)} \\lambda_{g,q} = n_g \\ (g), \\qquad
        \\sum_{g, q} \\lambda_{g,q}\\, q_c \\le k_c \\ (c), \\qquad \\lambda \\ge 0

    (``Q_g(t)``: the minimal configurations of class ``g`` reaching ``t``; classes of
    interchangeable agents share them) is feasible at ``t = t*``.  Feasibility only
    shrinks as ``t`` grows and ``t*`` is a configuration value, so a bisection over the
    configuration values in ``(level, upper]`` finds the largest candidate not proven
    infeasible: a bound, ``level`` itself (the incumbent is optimal) when the first value
    above it is infeasible.  This is the configuration LP of the max-min allocation
    ("Santa Claus") problem, stronger than the plain relaxation: a configuration holds
    whole devices.  Returns ``(bound or None, LPs solved)``; None when an agent has more
    than ``MAX_CONFIGURATIONS`` configurations, there are several rounds, or time ran out
    before any LP.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("H", count=1), lo.Pool("A", count=2)],
    ...                    [lo.Agent("x", demand=2), lo.Agent("y", demand=2)],
    ...                    [lo.Edge("x", "H", 3.0), lo.Edge("x", "A", 1.0), lo.Edge("y", "H", 3.0),
    ...                     lo.Edge("y", "A", 1.0)])
    >>> model, plan, _ = declare_first_level(inst, np.array([3.0, 1.0, 3.0, 1.0]))
    >>> configuration_bound(inst, plan, 2.0, 4.0)   # one gets H, the other 2 A: 2 is optimal
    (2.0, 1)
    """
    if instance.rounds != 1 or plan.rows_agent.size == 0:
        return None, 0
    classes = agent_classes(instance)
    total = float(instance.counts.sum())
    usable = (plan.coef > 0) & (plan.block.upper > 0)
    cols_of = {}
    for j in np.flatnonzero(usable).tolist():
        cols_of.setdefault(int(plan.agent[j]), []).append(j)
    reps = [int(classes.representative[g]) for g in range(classes.n_classes)]
    sizes = classes.size
    conf_cols, conf_q, conf_v, conf_g = [], [], [], []
    for g, i in enumerate(reps):
        if not plan.included[i]:
            continue
        cols = cols_of.get(i, [])
        demand = int(np.floor(min(instance.demands[i], total) + 1e-9))
        Q = _configurations([int(plan.block.upper[j]) for j in cols], demand, MAX_CONFIGURATIONS)
        if Q is None:
            return None, 0
        conf_cols.append(np.array(cols, dtype=np.int64))
        conf_q.append(Q)
        conf_v.append(Q @ plan.coef[cols])
        conf_g.append(g)
    values = np.unique(np.concatenate(conf_v))
    tol = 1e-9 * max(1.0, abs(level))
    candidates = values[(values > level + tol) & (values <= upper + tol)]
    pools = instance.edge_pool

    def feasible(t: float) -> bool | None:
        model = LinearModel("configuration-lp", sense="min")
        rows, cols, coefs, n_var, cap_rows, cap_cols, cap_coefs = [], [], [], 0, [], [], []
        for r, (cols_i, Q, v, g) in enumerate(zip(conf_cols, conf_q, conf_v, conf_g)):
            reach = v >= t - 1e-9 * max(1.0, abs(t))
            # minimal: removing any one held unit drops below t
            minimal = reach.copy()
            for j in range(Q.shape[1]):
                held = Q[:, j] > 0
                minimal &= ~held | (v - plan.coef[cols_i[j]] < t - 1e-9 * max(1.0, abs(t)))
            keep = np.flatnonzero(minimal)
            if keep.size == 0:
                return False
            idx = n_var + np.arange(keep.size)
            rows.append(np.full(keep.size, r)); cols.append(idx); coefs.append(np.ones(keep.size))
            nz_k, nz_j = np.nonzero(Q[keep])
            cap_rows.append(pools[cols_i[nz_j]]); cap_cols.append(idx[nz_k]); cap_coefs.append(Q[keep][nz_k, nz_j])
            n_var += keep.size
        lam = model.add_variables("lambda", n_var, lower=0.0, upper=np.inf)
        size = np.array([float(sizes[g]) for g in conf_g])
        model.add_constraints("choose", rows=np.concatenate(rows), cols=lam.start + np.concatenate(cols),
                              coefs=np.concatenate(coefs), lower=size, upper=size, n_rows=len(conf_g))
        model.add_constraints("capacity", rows=np.concatenate(cap_rows), cols=lam.start + np.concatenate(cap_cols),
                              coefs=np.concatenate(cap_coefs), upper=instance.counts.astype(np.float64),
                              n_rows=instance.n_pools)
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.01:
            return None
        try:
            sol = solve_model(model, solver="highs", time_limit=left)
        except NoSolutionError:
            return None
        if sol.status == "infeasible":
            return False
        return True if sol.status == "optimal" else None

    lo, hi, solves = -1, candidates.size, 0  # candidates[:lo+1] feasible (level: the incumbent), [hi:] infeasible
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok = feasible(float(candidates[mid]))
        solves += 1
        if ok is None:
            break
        if ok:
            lo = mid
        else:
            hi = mid
    if solves == 0 and candidates.size:
        return None, 0
    if hi == candidates.size:
        return float(upper), solves  # nothing above the last feasible candidate was refuted
    return (float(candidates[hi - 1]) if hi > 0 else float(level)), solves


def _smallest(plan: LeximinPlan, block_values: np.ndarray) -> float:
    values = plan.values(block_values)[plan.rows_agent]
    return float(values.min()) if values.size else 0.0


def solve_first_level(
    instance: Instance,
    coef: np.ndarray,
    fractional_amounts: np.ndarray | None,
    fractional_level: float | None,
    *,
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-9,
    verbose: bool = False,
    symmetry: bool = True,
    solver: str = "highs",
    via: str = "direct",
) -> tuple[LeximinOutcome, LeximinPlan]:
    """Steps 1-4 of the module docstring; returns the engine outcome and the plan.

    ``fractional_amounts`` (``E x R``) and ``fractional_level`` (``t_1^frac`` in
    units of ``v_i``) come from the fractional leximin; either may be None (the
    fill starts from nothing; the bound is the MILP's own).  ``solver`` and ``via`` pick the
    MILP's route (:func:`laissez_opt.modeling.solve_model`); the bounding LPs run on HiGHS.
    """
    t0 = time.perf_counter()
    time_limit = remaining(time_limit)
    deadline = None if time_limit is None else t0 + max(float(time_limit), 0.0)
    model, plan, label = declare_first_level(instance, coef, symmetry=symmetry)
    columns: AllocationColumns = plan.columns
    K = plan.rows_agent.size
    base = None if fractional_amounts is None else np.asarray(fractional_amounts, float)[columns.edge, columns.round]
    # The unit-demand start is a heuristic here: at most a quarter of the time left, and UNIT_START_S.
    left = UNIT_START_S if deadline is None else min(max(0.25 * (deadline - time.perf_counter()), 1e-3),
                                                     UNIT_START_S)
    start, start_kind = _best_start(model, plan, base, instance, left)
    start = order_by_class(plan, label, start)
    check_allocation(model, plan, start)
    start_level = _smallest(plan, start)
    count_bound = device_count_bound(instance, plan)
    cover_value = None
    build_s = time.perf_counter() - t0
    bounds: list[float] = []
    message: list[str] = []
    served = float(instance.counts.sum())  # whole devices: at most this many agents per round hold one
    rounds_ok = instance.rounds == 1
    if rounds_ok and K > served:
        bounds.append(0.0)
        message.append(f"at most {int(served)} of {K} agents can hold a device: the smallest value is 0 in every "
                       "allocation")
    if fractional_level is not None and np.isfinite(fractional_level):
        bounds.append(float(fractional_level) * plan.unit)
    if count_bound is not None:
        bounds.append(count_bound)
    if K and rounds_ok and not (bounds and min(bounds) <= start_level + 1e-9 * max(1.0, abs(start_level))):
        left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        covered = cover_bound(instance, coef, plan, start_level, time_limit=left)
        if covered is not None:
            bounds.append(covered)
            cover_value = covered
    config_value, config_lps = None, 0
    if K and rounds_ok and not (bounds and min(bounds) <= start_level + 1e-9 * max(1.0, abs(start_level))):
        upper = min(bounds) if bounds else float(plan.vmax[plan.rows_agent].min())
        share = None if deadline is None else time.perf_counter() + 0.5 * max(deadline - time.perf_counter(), 0.0)
        config_value, config_lps = configuration_bound(instance, plan, start_level, upper, deadline=share)
        if config_value is not None:
            bounds.append(config_value)
    incumbent, inc_level = start, start_level
    run_status, run_text, solve_s, route = "not run", "", 0.0, "rounded fractional leximin + greedy fill"
    proven = bool(bounds) and min(bounds) <= inc_level + 1e-9 * max(1.0, abs(inc_level))
    if K and not proven:
        full = np.zeros(model.n_cols)
        full[plan.block.slice] = start
        full[plan.t.start] = start_level
        plan.t.lower[0] = start_level - _CUTOFF_SLACK * max(1.0, abs(start_level))  # cutoff: the incumbent's level
        if bounds:  # t* <= every bound: a solution reaching it ends the search at once
            plan.t.upper[0] = min(bounds) + _CUTOFF_SLACK * max(1.0, abs(min(bounds)))
        left = None if deadline is None else deadline - time.perf_counter()
        if left is None or left > 0.05:
            try:
                sol = solve_model(model, solver=solver, via=via, time_limit=left, threads=threads, mip_gap=mip_gap,
                                  verbose=verbose, start=full)
                run_status, run_text, solve_s = sol.status, sol.solver_status, sol.solve_s
                build_s += sol.build_s
                route = f"{sol.route} first-level MILP from the rounded fractional leximin"
                if sol.values is not None:
                    found = np.round(sol.values[plan.block.slice])
                    try:
                        check_allocation(model, plan, found)
                        if _smallest(plan, found) > inc_level:
                            incumbent, inc_level = found, _smallest(plan, found)
                    except AssertionError:
                        message.append("the MILP's point broke a row after rounding; the start is kept")
                if sol.status == "optimal":
                    bounds.append(inc_level if sol.bound is None else max(float(sol.bound), inc_level))
                elif sol.bound is not None and np.isfinite(sol.bound):
                    bounds.append(float(sol.bound))
            except NoSolutionError as exc:
                run_status, run_text = "time_limit", str(exc)
        else:
            run_status, run_text = "time_limit", "no time left for the MILP"
    polished = packing_start(model, plan, incumbent)
    check_allocation(model, plan, polished)
    bound = min(bounds) if bounds else None
    level = _smallest(plan, polished)
    proven = bound is not None and bound <= level + 1e-9 * max(1.0, abs(level))
    if K == 0:
        status = "optimal"
        message.append("no agent can get a positive value; all are fixed at 0")
    elif run_status in ("time_limit",) or (deadline is not None and time.perf_counter() >= deadline and not proven):
        status = "time_limit"
    else:
        status = "feasible"
    if K:
        message.append(("the smallest value is proven optimal" if proven else
                        "the smallest value is not proven (see bound and gap)")
                       + "; the levels above it come from a greedy fill and are not certified")
    values_all = np.zeros(model.n_cols)
    values_all[plan.block.slice] = polished
    agent_values = plan.values(polished)
    outcome = LeximinOutcome(
        status, values_all, agent_values, np.sort(agent_values[plan.rows_agent]).tolist(), [], 1 if solve_s else 0,
        0, [solve_s] if solve_s else [], build_s, route, run_text, bound, "; ".join(message),
        extra={"start_level": start_level / plan.unit, "start": start_kind,
               "device_count_bound": None if count_bound is None else count_bound / plan.unit,
               "cover_bound": None if cover_value is None else cover_value / plan.unit,
               "configuration_bound": None if config_value is None else config_value / plan.unit,
               "configuration_lps": config_lps, "milp_status": run_status,
               "fractional_first_level": fractional_level,
               "symmetry_rows": int(model.constraints["order"].size), "level_rows": int(model.constraints["level"].size),
               "first_level_proven": bool(proven)},
    )
    if bound is not None and K and level - 1e-6 * max(1.0, abs(level)) <= bound < level:
        outcome.bound = level  # the LP's tolerance, not a gap: never a bound below the incumbent
    return outcome, plan
