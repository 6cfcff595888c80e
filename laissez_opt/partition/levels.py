"""Fractional leximin of one part of a partitioned ``maxmin``: waterfilling on one warm-started HiGHS model.

Level ``l`` of part ``q`` solves ``max t`` over the part's level LP
(:func:`laissez_opt.partition.core.max_t_model`) and freezes the free agents
certified stuck at ``t*`` (``models/partition.md``).  After a level, the optimal
face of its LP is read off the reduced costs (:func:`optimal_face`): every later
level's feasible points are optima of this one, so every column with a nonzero
reduced cost keeps its value, and the columns left split into connected
components of agents and pools.  A component without a free agent is final; the
later levels run on a model of the components with free agents only
(:class:`_LevelModel`), typically a few dozen columns instead of thousands.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..errors import InputError
from ..exact.leximin import face_bounds, solve_cold_routes, trouble_statuses, value_unit
from ..limits import remaining
from ..modeling.highs_route import limit_next_run
from .core import STOPPED, Problem, inner_maximum, max_t_model

__all__ = ["leximin_part", "optimal_face", "standalone_unique", "DUAL_NONZERO", "CAP_HINT_SHARE"]

#: A level dual counts as nonzero above this (the free rows' duals sum to 1).
DUAL_NONZERO = 1e-9


#: A capped agent's floor sits this share of its standalone maximum below it (:func:`hair_below`);
#: the other frozen agents' floors are their levels themselves.
FLOOR_HAIR = 1e-12


def hair_below(value):
    """``value`` less ``FLOOR_HAIR |value|``: a floor the current point meets whatever the rounding of its value.

    The hair must stay far below the solver's tolerances: a later level may lower the
    frozen agents by it, and through an agent with a small level dual ``lambda_i``
    that buys the free agents about ``hair / lambda_i``.  At 1e-9 of ``max(1, |v|)``
    (values of about 0.03 in the solver's units), the whole model's later levels
    differed from those on the optimal face by up to 1.2e-4 of a value on parts of
    2 x 10^4 x 10^3 split in 32 (with a hair of 1e-13 or none the two agreed); at
    1e-12 of ``|v|``, by at most 6.4e-9.  What remains is the solver's own tolerance,
    amplified the same way (``models/partition.md``).

    >>> float(hair_below(2.0))
    1.999999999998
    """
    return value - FLOOR_HAIR * np.abs(value)


def _value_tol(level, a_max: np.ndarray) -> np.ndarray:
    """How far above ``level`` (a number, or one per agent) a value must be to count as above it (relative, and
    per agent's largest ``a_e``)."""
    return 1e-7 * np.maximum(1.0, np.abs(level)) + 1e-6 * a_max


class _LevelModel:
    """The HiGHS level LP over a subset ``cols`` of the part's edges, with global bookkeeping.

    ``row_of[i]``: agent ``i``'s level row (``-1``: not in the model); ``base_l``: the
    first level row; ``rows_agent``: the agents of the level rows, in row order;
    ``group_of[i]``: the index ``g`` of agent ``i``'s column ``t_g`` (one per
    independent component of the model; all 0 in a model with one ``t``).
    Every agent's value outside the model is a constant (``offset``, kept by the
    caller), so a row reads ``sum_{e in cols of i} a_e x_e - t_g >= -offset_i`` (free) or
    ``>= floor_i - offset_i`` (frozen).
    """

    def __init__(self, h, cols: np.ndarray, row_of: np.ndarray, base_l: int, rows_agent: np.ndarray,
                 group_of: np.ndarray, n_groups: int = 1):
        self.h, self.cols, self.row_of, self.base_l, self.rows_agent = h, cols, row_of, base_l, rows_agent
        self.group_of, self.n_groups = group_of, n_groups
        # The t_g columns whose lower bound a warm start raised to their last level
        # (:func:`_start_at_point`); None when every bound is t_g >= 0.
        self.raised_t = None
        self.warm = False  # started from the previous level's vertex

    @property
    def n_cols(self) -> int:
        return int(self.cols.shape[0])

    def t_column(self, agents: np.ndarray) -> np.ndarray:
        """The column of each agent's ``t_g``."""
        return self.n_cols + self.group_of[agents]


def optimal_face(edge_agent: np.ndarray, edge_pool: np.ndarray, x: np.ndarray, upper: np.ndarray,
                 reduced_cost: np.ndarray, free: np.ndarray, n_pools: int) -> tuple[np.ndarray, np.ndarray]:
    """The columns later levels may still move, and the free agents that can no longer move.

    The level LP just solved is ``max t``; every feasible point of a later level
    (free agents at ``t >= t*``, frozen ones at their floors) is an optimum of it,
    so it satisfies complementary slackness with this LP's dual: a column at 0 with
    a negative reduced cost stays at 0, one at its bound ``upper_e`` with a positive
    reduced cost stays there (HiGHS's signs for a maximisation; Isermann 1982, the
    optimal face of a linear program).  The other columns form a bipartite graph of
    agents and pools; a connected component without a free agent is final (its
    agents are all frozen, and nothing outside it can change their values), so
    only the components holding free agents are kept.  A free agent with no
    column left has its value fixed: it is returned to be frozen there.

    >>> ea, ep = np.array([0, 0, 1]), np.array([0, 1, 1])
    >>> keep, stuck = optimal_face(ea, ep, np.array([0.0, 1.0, 0.0]), np.ones(3), np.array([-0.5, 0.0, 0.0]),
    ...                            np.array([False, True]), 2)
    >>> keep.tolist(), stuck.tolist()      # edge 0 is fixed at 0; edges 1, 2 join both agents at pool 1
    ([False, True, True], [False, False])
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = free.shape[0]
    at_zero, at_upper = face_bounds(x, upper, reduced_cost)
    fixed = at_zero | at_upper | (upper <= 0)
    movable = ~fixed
    graph = coo_matrix((np.ones(int(movable.sum())), (edge_agent[movable], n + edge_pool[movable])),
                       shape=(n + n_pools, n + n_pools))
    _, label = connected_components(graph, directed=False)
    live = np.zeros(label.max() + 1, dtype=bool)
    has_column = np.zeros(n, dtype=bool)
    has_column[edge_agent[movable]] = True
    live[label[:n][free & has_column]] = True
    keep = movable & live[label[edge_agent]]
    return keep, free & ~has_column


def _start_at_point(h, n_cols: int, group: np.ndarray, col_inside: np.ndarray, row_inside: np.ndarray,
                    row_group: np.ndarray, at_upper: np.ndarray, row_upper: np.ndarray,
                    level: np.ndarray) -> tuple[bool, np.ndarray | None]:
    """Give the level model ``h`` a starting basis at the previous level's optimum (a vertex).

    The face model keeps a subset of the previous model's columns and rows, with the
    dropped columns' amounts taken out of its capacities, demands and offsets, so the
    previous vertex ``(x, t_g = level[g])`` is feasible in it.  Its basic variables
    are read off the point itself: a column strictly inside its bounds, a row whose
    slack is not zero (``col_inside``, ``row_inside``); every other column sits at 0 or
    at its upper bound (``at_upper``), every other slack at its one finite bound
    (``row_upper``: capacity and demand rows are ``<=``, level rows ``>=``).  A basis
    holding all the inside variables and nonbasic ones at their current values
    reproduces the point, whatever slacks HiGHS adds to complete it (an "alien"
    basis: HiGHS completes and repairs it when it factorises).  ``t_g`` is inside
    (``level[g] > 0``) unless its component already has as many inside variables as
    rows (``group``, ``row_group``: each column's and row's component); then the
    point is a vertex only with ``t_g`` at a bound, so ``t_g``'s lower bound is raised
    to ``level[g]``: every later optimum keeps it (each component's later levels are
    at least its last one), and :func:`_release_raised_t` puts ``t_g >= 0`` back after
    the first solve.  Returns whether HiGHS took the basis (if not, the model is left
    as built, for a cold start) and the raised columns (None if none).

    Measured on 60 parts of 10^6 x 10^3 split in 2,400, back to back: the simplex runs
    after the first LP took 6.4 ms per part against 9.5 to 9.7 cold; on a part whose
    first cut kept 2,010 of 2,081 columns, the rebuilt model's first LP took 488 primal
    simplex iterations and 19.6 ms instead of 1,618 dual ones and 45 ms.  (Reading
    HiGHS's own basis instead and mapping it onto the new model took 127 iterations
    there, but converting its statuses cost more Python time than the iterations
    saved, and ``getBasicVariables`` crashed the process with a
    segmentation fault on a part of 6 edges.)
    """
    import highspy

    n_groups = level.shape[0]
    inside = np.bincount(group[col_inside], minlength=n_groups) + np.bincount(row_group[row_inside],
                                                                               minlength=n_groups)
    raise_t = (inside >= np.bincount(row_group, minlength=n_groups)) | (level <= 0)
    S = highspy.HighsBasisStatus
    statuses = np.array([S.kLower, S.kBasic, S.kUpper], dtype=object)
    col_code = np.where(col_inside, 1, np.where(at_upper, 2, 0))
    row_code = np.where(row_inside, 1, np.where(row_upper, 2, 0))
    t_code = np.where(raise_t, 0, 1)
    raised = (n_cols + np.flatnonzero(raise_t)).astype(np.int32)
    if raised.size:
        h.changeColsBounds(raised.size, raised, np.maximum(level[raise_t], 0.0),
                           np.full(raised.size, highspy.kHighsInf))
    start = highspy.HighsBasis()
    start.col_status = statuses[np.concatenate([col_code, t_code])].tolist()
    start.row_status = statuses[row_code].tolist()
    start.alien = True
    start.valid = True
    if h.setBasis(start) != highspy.HighsStatus.kOk:
        h.changeColsBounds(raised.size, raised, np.zeros(raised.size), np.full(raised.size, highspy.kHighsInf))
        h.clearSolver()
        return False, None
    return True, (raised if raised.size else None)


def _bound_carries_dual(sol, raised: np.ndarray) -> bool:
    """Whether a raised ``t_g`` bound has a nonzero reduced cost in ``sol``: that component did not
    rise, and its level's dual sits on the bound instead of its agents' rows (no certificate)."""
    return bool((np.abs(np.asarray(sol.col_dual)[raised]) > DUAL_NONZERO).any())


def _release_raised_t(model: _LevelModel) -> None:
    """Put back ``t_g >= 0`` where a warm start raised the bound (HiGHS resets the model status; a
    solution read before stays an optimum without the bound unless the bound's reduced cost is
    nonzero, which :func:`leximin_part` checks)."""
    import highspy

    cols, model.raised_t = model.raised_t, None
    model.h.changeColsBounds(cols.size, cols, np.zeros(cols.size), np.full(cols.size, highspy.kHighsInf))


def _level_model(keep, x, offset, floors, free, edge_agent, edge_pool, coef, capacity, demands, upper,
                 level=None):
    """A :class:`_LevelModel` over the edges ``keep``: capacities and demands less what the other edges hold.

    ``offset`` (per agent) is set to the value each agent of the model gets outside
    it; the frozen agents' rows get their floors, the free agents' rows ``-offset``.
    Every connected component of the kept edges gets its own ``t_g`` (the level LPs
    of independent components, solved in one model: :func:`leximin_part`).
    ``level`` (per agent, the free agents' last level ``t``; ``x`` the last level's
    vertex): the model starts from that vertex (:func:`_start_at_point`) and solves
    by primal simplex; None leaves it to a cold dual simplex start.
    """
    import highspy
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = demands.shape[0]
    cols = np.flatnonzero(keep)
    ea, ep = edge_agent[cols], edge_pool[cols]
    agents, local_agent = np.unique(ea, return_inverse=True)
    pools, local_pool = np.unique(ep, return_inverse=True)
    held_kept = np.bincount(local_pool, weights=x[cols], minlength=pools.shape[0])
    held_all = np.bincount(edge_pool, weights=x, minlength=capacity.shape[0])[pools]
    # What the other edges leave, exactly.  Raising it to the kept columns' current amounts (where
    # the last point overshot by the solver's tolerance) loosened the later levels' LPs: on the
    # heterogeneous 220 x 220 instance 4 leximin values ended up to 1.9e-4 above the exact rational
    # waterfilling.  The point stays feasible to that tolerance.
    cap = np.maximum(capacity[pools] - (held_all - held_kept), 0.0)
    taken_kept = np.bincount(local_agent, weights=x[cols], minlength=agents.shape[0])
    taken_all = np.bincount(edge_agent, weights=x, minlength=n)[agents]
    dem = np.where(np.isfinite(demands[agents]), np.maximum(demands[agents] - (taken_all - taken_kept), 0.0), np.inf)
    value_kept = np.bincount(local_agent, weights=coef[cols] * x[cols], minlength=agents.shape[0])
    value_all = np.bincount(edge_agent, weights=coef * x, minlength=n)[agents]
    offset[agents] = value_all - value_kept
    n_a = agents.shape[0]
    graph = coo_matrix((np.ones(cols.shape[0]), (local_agent, n_a + local_pool)),
                       shape=(n_a + pools.shape[0], n_a + pools.shape[0]))
    _, label = connected_components(graph, directed=False)
    _, group = np.unique(label[:n_a], return_inverse=True)
    h, local_row, base_l = max_t_model(local_agent, local_pool, coef[cols], cap, dem, upper[cols],
                                       np.arange(n_a), t_lower=0.0, group=group)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[agents] = local_row
    group_of = np.full(n, -1, dtype=np.int64)
    group_of[agents] = group
    rows = (base_l + local_row).astype(np.int32)
    frozen = ~free[agents]
    for r, g in zip(rows[frozen].tolist(), group[frozen].tolist()):
        h.changeCoeff(r, cols.shape[0] + g, 0.0)
    lower = np.where(frozen, floors[agents], 0.0) - offset[agents]
    h.changeRowsBounds(rows.size, rows, lower, np.full(rows.size, highspy.kHighsInf))
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("presolve", "off")
    h.setOptionValue("simplex_strategy", 1)
    h.setOptionValue("simplex_dual_edge_weight_strategy", DUAL_EDGE_WEIGHTS)
    model = _LevelModel(h, cols, row_of, base_l, agents, group_of, int(group.max()) + 1)
    if level is not None:
        # Inside a bound by more than this share of it: a basic variable of the vertex.
        share = 1e-9
        xc, uc = x[cols], upper[cols]
        finite = np.isfinite(dem)
        slack = value_all - np.where(frozen, floors[agents], level[agents])
        row_inside = np.concatenate([cap - held_kept > share * cap,
                                     dem[finite] - taken_kept[finite] > share * dem[finite],
                                     slack > share * np.abs(value_all)])
        pool_group = np.zeros(pools.shape[0], dtype=np.int64)
        pool_group[local_pool] = group[local_agent]
        level_of = np.zeros(model.n_groups)
        level_of[group[~frozen]] = level[agents[~frozen]]
        model.warm, model.raised_t = _start_at_point(
            h, cols.shape[0], group[local_agent], (xc > share * uc) & (xc < uc - share * uc), row_inside,
            np.concatenate([pool_group, group[finite], group]), xc >= uc - share * uc,
            np.arange(row_inside.shape[0]) < base_l, level_of)
        if model.warm:
            _set_lp(h, warm=True)
    return model


#: HiGHS's pricing for the dual simplex runs after the first level (the capped probes, a cold
#: rebuilt model's first solve, the clean-up of a primal run): Devex (1).  The default, dual steepest edge,
#: computes exact weights afresh after each change of the model; on 20 parts of 10^6 x 10^3 split
#: in 1,600, Devex took a third fewer CPU seconds in the small later levels.
DUAL_EDGE_WEIGHTS = 1

#: A partitioned run's parts hold at their maxima, in their first LP, the agents whose standalone
#: maximum is at most this share of another part's common level (``cap_below``,
#: :func:`_capped_first_level`).  On 100 parts of 10^6 x 10^3 split in 1,600, one process, CPU
#: per part's whole leximin: 108.7 ms without, 104.3 ms at 0.90, 101.2 at 0.95, 96.2 at 0.97
#: (20 parts capped, 3 missed), 96.0 at 0.98 and 95.9 at 0.99 (5 missed), 102.4 at 1.0 (11
#: missed); the values agreed to 7.4e-8.  0.97 keeps most of the gain with the fewest misses.
CAP_HINT_SHARE = 0.97

#: A level LP still infeasible after its retry eases the frozen agents' floors by these shares of
#: themselves, one after the other, until it solves (``floor_easings`` counts them).
FLOOR_EASING = (1e-8, 1e-7, 1e-6)

#: Rebuild the level model on its optimal face when this share of its columns or less remains.
#: 1.0: after every contested level.  At 0.5, parts whose face kept 51-54% of the columns ran
#: every later level on the whole model (about 45 ms and 850 simplex iterations each, 18 to 36
#: levels); on 60 parts of 10^6 x 10^3 split in 2,000 the whole leximin took 148 ms of CPU per
#: part at 0.5, 82 at 0.9 and 76 at 1.0 (split in 1,600: 97-99, 97 and 94).
FACE_REBUILD = 1.0
#: Look for the optimal face only on models of at least this many columns (below, a rebuild saves
#: less than finding the components costs).
FACE_MIN_COLUMNS = 200


def leximin_part(task: dict) -> dict:
    """Fractional leximin of one part by waterfilling on warm-started HiGHS models.

    Level ``l`` solves ``max t`` s.t. ``sum_{e of i} a_e x_e - t >= 0`` for the free
    agents, ``sum_{e of i} a_e x_e >= ell_j`` for the frozen ones, ``capacity`` and
    ``demand`` (the part's blocks, :func:`laissez_opt.partition.core.build_part`); then
    it freezes at ``ell_i = t*`` every free agent certified stuck: a nonzero ``level``
    dual (complementary slackness: the row is tight in every optimum) or a standalone
    maximum ``v_i^max <= t*`` (Radunovic & Le Boudec, ToN 2007).  At least one
    agent freezes per LP, so at most one LP per agent; each LP starts from the
    previous basis (the first by interior point with crossover, the later ones by
    primal simplex without presolve; a level that ends in numerical trouble is solved
    again from scratch by dual simplex).

    After a level whose frozen agents were not all at their standalone maxima, the
    model is cut to the level LP's optimal face (:func:`optimal_face`) when at most
    :data:`FACE_REBUILD` of its columns remain (models of :data:`FACE_MIN_COLUMNS` columns
    or more): the later levels then run on the
    components that still hold free agents, side by side: a level column ``t_g`` per
    component and ``max sum_g t_g``, which separates into the components' own level
    LPs, so one LP advances every component by a level (``task["face"]``, default
    True; False keeps one model throughout).  ``face_rebuilds`` counts the cuts and
    ``face_frozen`` the free agents they left without a column (frozen at their
    values, which nothing can change).  A rebuilt model starts from the last level's
    vertex (:func:`_start_at_point`; ``task["warm_face"]``, default True; False solves it
    cold by dual simplex); ``warm_rebuilds`` counts the models HiGHS took that start for,
    ``released_reruns`` the levels solved again because a bound of that start carried
    the level's dual.

    On parts of at most :data:`SIMPLEX_EVERY_LEVEL_MAX_EDGES` edges the first LP runs by the
    dual simplex method with presolve instead of the interior point.
    ``task["levels"] == "first"`` stops after the first LP (the max-min value), solved
    by interior point without crossover (no later level needs its basis; dual simplex
    on parts of at most :data:`SIMPLEX_FIRST_MAX_EDGES` edges).
    ``task["caps"]`` (default True): after a level at which every frozen agent was at
    its standalone maximum (on a model with one ``t``), :func:`_cap_search` freezes by capped LPs every free agent
    that all leximin optima hold at ``v_i^max`` (exact; often about ``log2`` of their
    number in LPs instead of one per agent); False runs the plain loop.  ``cap_lps`` and
    ``cap_frozen`` count its LPs (included in ``lps``) and the agents it froze.
    Returns the fields of :func:`laissez_opt.partition.core.solve_part` with the FIRST
    level's duals (``prices``, ``lam``: the max-min bound is proven for the first level)
    and ``levels`` (``t*`` of each plain LP; after a cut, ``t_g*`` of each component that
    froze an agent in it, in increasing order), ``frozen_per_level`` (the agents frozen
    there), ``lps``, ``values`` (``v_i`` per local agent).
    Values are in the units of ``a_e``; agents with ``v_i^max = 0`` get 0.

    >>> t = {"part": 0, "method": "leximin", "edge_agent": np.array([0, 0, 1]), "edge_pool": np.array([0, 1, 0]),
    ...      "coef": np.array([1.0, 1.0, 1.0]), "demands": np.array([2.0, 0.5]), "capacity": np.array([1.0, 1.0])}
    >>> out = leximin_part(t)     # agent 1 stops at its demand 0.5; agent 0 then takes the rest
    >>> out["values"].round(6).tolist(), [round(v, 6) for v in out["levels"]]
    ([1.5, 0.5], [0.5, 1.5])
    """
    import highspy

    start, cpu = time.perf_counter(), time.process_time()
    edge_agent, edge_pool = task["edge_agent"], task["edge_pool"]
    demands = task["demands"].astype(np.float64)
    capacity = task["capacity"].astype(np.float64)
    n_local, n_pools, n_edges = demands.shape[0], capacity.shape[0], edge_agent.shape[0]
    unit = value_unit(task["coef"]) if n_edges else 1.0
    coef = task["coef"] * unit
    upper = np.minimum(demands[edge_agent], capacity[edge_pool])
    upper[coef <= 0] = 0.0
    # v_i^max: the agent alone, its best edges first up to d_i devices (a fractional knapsack).
    alone = Problem(edge_agent, edge_pool, np.ones(n_edges), capacity, np.ones(n_local), demands, coef)
    vmax, alone_x = inner_maximum(alone, np.where(upper > 0, coef, 0.0), amounts=True)
    included = vmax > 0
    rows_agent = np.flatnonzero(included)
    # Rows: capacity (m), demand (finite d_i), level (agents with v_i^max > 0).  Columns: x (E), t >= 0.
    h, row_of, base_l = max_t_model(edge_agent, edge_pool, coef, capacity, demands, upper, rows_agent,
                                    t_lower=0.0)
    model = _LevelModel(h, np.arange(n_edges), row_of, base_l, rows_agent, np.zeros(n_local, dtype=np.int64))
    inf = highspy.kHighsInf
    a_max = np.zeros(n_local)
    np.maximum.at(a_max, edge_agent, np.where(upper > 0, coef, 0.0))
    free = included.copy()
    floors = np.zeros(n_local)  # the frozen agents' row floors
    offset = np.zeros(n_local)  # each agent's value outside the current model
    levels, frozen_per_level = [], []
    first = {"prices": None, "lam": None, "status": "optimal"}
    status, values, x = "optimal", np.zeros(n_local), np.zeros(n_edges)
    lps = retries = floor_easings = 0
    crossover = task.get("levels") != "first"
    _set_lp(h, warm=False, crossover=crossover, presolve=crossover and n_edges <= PRESOLVE_FIRST_MAX_EDGES,
            simplex=n_edges <= (SIMPLEX_EVERY_LEVEL_MAX_EDGES if crossover else SIMPLEX_FIRST_MAX_EDGES))
    caps, face, warm_face = task.get("caps", True), task.get("face", True), task.get("warm_face", True)
    for name, flag in (("caps", caps), ("face", face), ("warm_face", warm_face)):
        if not isinstance(flag, bool):
            raise InputError(f"{name} must be true or false, got {flag!r}", path=f"option {name}")
    cap_lps = cap_frozen = face_rebuilds = face_frozen = warm_rebuilds = released_reruns = 0
    restored = False
    hint = task.get("cap_below")
    first_cap_failed = False
    capped_first = np.zeros(0, dtype=np.int64)
    limit_next_run(h, remaining())  # the part's share of its run's time limit, if any (solve_part)
    if hint is not None and caps and task.get("levels") != "first":
        if isinstance(hint, bool) or not isinstance(hint, (int, float)) or not math.isfinite(hint) or hint < 0:
            raise InputError(f"cap_below must be a finite number >= 0, got {hint!r}", path="option cap_below")
        capped_first, tried = _capped_first_level(h, included, vmax, row_of, base_l, float(hint) * unit,
                                                  edge_agent, coef, upper, alone_x)
        if capped_first.size:
            free[capped_first] = False
            floors[capped_first] = hair_below(vmax[capped_first])
            cap_frozen += int(capped_first.size)
            _set_lp(h, warm=True)
        elif tried:
            lps += 1
            cap_lps += 1
            first_cap_failed = True
    solved = capped_first.size > 0  # the first level LP has run already
    common_level = None  # the first level that froze an agent below its standalone maximum
    while free.any():
        h = model.h
        sol = None
        left = remaining()
        if left is not None and left <= 0:
            status = STOPPED
            break
        # One limit for every LP of this level (the cap search's and the retries' too): HiGHS
        # counts them all on its run clock.
        limit_next_run(h, left)
        if not solved:
            h.run()
            if model.raised_t is not None and h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
                sol = h.getSolution()
                binding = _bound_carries_dual(sol, model.raised_t)
                _release_raised_t(model)
                if binding:
                    # The level once more with t_g >= 0 (dual simplex: the bound change leaves the
                    # basis dual feasible).
                    h.setOptionValue("simplex_strategy", 1)
                    h.run()
                    h.setOptionValue("simplex_strategy", 4)
                    lps += 1
                    released_reruns += 1
                    sol = None
        solved = False
        lps += 1
        if restored:
            h.setOptionValue("simplex_strategy", 4)
            restored = False
        # After a bound released unbinding, HiGHS reports no status, but the optimum read stands.
        model_status = highspy.HighsModelStatus.kOptimal if sol is not None else h.getModelStatus()
        if model_status == highspy.HighsModelStatus.kTimeLimit:
            status = STOPPED  # the last level's optimum stands: feasible, every level before exact
            break
        if model_status != highspy.HighsModelStatus.kOptimal:
            # Numerical trouble (a warm start ending "infeasible" although the previous optimum
            # is feasible by construction, an interior point short of its tolerances): this level
            # again from scratch by the dual simplex method with presolve.
            if model.raised_t is not None:
                _release_raised_t(model)
            sol = None
            model_status = solve_cold_routes(h)
            retries += 1
            for share in FLOOR_EASING:
                if model_status not in trouble_statuses():
                    break
                # The floors, each met by an earlier point only to HiGHS's tolerance, can miss being
                # jointly feasible by about that much (seen: by 1e-8 of their values, after 30
                # levels of a part with demands of 0.02; "unknown" on every route at the 431st LP
                # of the heterogeneous 1,000 x 1,000 instance in one part): eased by `share`, the level again.
                eased = np.flatnonzero(~free & included & (model.row_of >= 0))
                floors[eased] -= share * np.abs(floors[eased])
                h.changeRowsBounds(eased.size, (model.base_l + model.row_of[eased]).astype(np.int32),
                                   floors[eased] - offset[eased], np.full(eased.size, inf))
                model_status = solve_cold_routes(h)
                floor_easings += 1
            _set_lp(h, warm=True)
        if model_status != highspy.HighsModelStatus.kOptimal:
            # Keep the last level's optimum: feasible, with every level before this one exact.
            status = (STOPPED if model_status == highspy.HighsModelStatus.kTimeLimit
                      else f"stopped at level {lps}: HiGHS {h.modelStatusToString(model_status)}")
            break
        if sol is None:
            sol = h.getSolution()
        col = np.asarray(sol.col_value)
        row_dual = np.asarray(sol.row_dual)
        n_cols = model.n_cols
        t_group = col[n_cols:n_cols + model.n_groups]
        tstar = float(t_group.min())
        t_of = t_group[np.maximum(model.group_of, 0)]  # each agent's level: its component's t_g
        x[model.cols] = np.clip(col[:n_cols], 0.0, upper[model.cols])
        values = np.bincount(edge_agent, weights=coef * x, minlength=n_local)
        level_dual = np.abs(row_dual[model.base_l:])
        if first["prices"] is None:  # the first level LP (after a failed capped one, if any)
            # HiGHS's duals of a maximisation: >= 0 on binding <= rows, <= 0 on binding >= rows.
            first["prices"] = np.clip(row_dual[:n_pools], 0.0, None)
            lam = np.zeros(n_local)
            lam[rows_agent] = np.clip(-row_dual[base_l:], 0.0, None)
            lam[capped_first] = 0.0  # floor rows, not level rows: no share of t
            first["lam"] = lam
            # The part's max-min value: the capped agents sit at their maxima, the others at t* or more.
            first["objective"] = min(tstar, float(vmax[capped_first].min(initial=np.inf))) / unit
            _set_lp(h, warm=True)
            if task.get("levels") == "first":
                levels.append(tstar / unit)
                frozen_per_level.append(int(np.count_nonzero(level_dual > DUAL_NONZERO)))
                break
        tol = _value_tol(t_of, a_max)
        stuck = free & (vmax <= t_of + tol)
        # A nonzero dual: the row is tight in every optimum (complementary slackness).
        stuck |= free & _scatter_rows(level_dual > DUAL_NONZERO, model.rows_agent, n_local) & (values <= t_of + tol)
        # Every component's t_g has a nonzero dual on one of its rows (they sum to 1); one without
        # a certificate numerically freezes its lowest free agents.
        if model.n_groups == 1:
            uncertified = [] if stuck.any() else [0]
        else:
            uncertified = np.flatnonzero(_groups_of(model, free) & ~_groups_of(model, stuck)).tolist()
        for g in uncertified:
            members = free & (model.group_of == g)
            stuck |= members & (values <= values[members].min() + tol)
        idx = np.flatnonzero(stuck)
        level_rows = (model.base_l + model.row_of[idx]).astype(np.int32)
        for r, c in zip(level_rows.tolist(), model.t_column(idx).tolist()):
            h.changeCoeff(r, c, 0.0)
        # The level itself, as the whole model freezes: a hair below it (or the point's own value,
        # when lower by the solver's tolerance) loosened the later LPs, which these ill-conditioned
        # levels amplify (heterogeneous 220 x 220 with the rebuilt models' exact residuals:
        # 1.2e-8 off the exact rational leximin with this floor, 6.2e-8 with the hair).
        floor = np.minimum(t_of[idx], vmax[idx])
        floors[idx] = floor
        h.changeRowsBounds(idx.size, level_rows, floor - offset[idx], np.full(idx.size, inf))
        chain = bool(np.all(vmax[idx] <= t_of[idx] + tol[idx]))  # every frozen agent at its own maximum
        if common_level is None and not chain:
            common_level = tstar / unit
        free &= ~stuck
        groups, counts = np.unique(model.group_of[idx], return_counts=True)
        for g, count in sorted(zip(groups.tolist(), counts.tolist()), key=lambda gc: t_group[gc[0]]):
            levels.append(float(t_group[g]) / unit)
            frozen_per_level.append(int(count))
        if model.n_groups > 1:
            # A component left without a free agent: its t_g has no row any more and leaves the objective.
            for g in np.flatnonzero(_groups_of(model, idx) & ~_groups_of(model, free)).tolist():
                h.changeColCost(n_cols + g, 0.0)
        if caps and chain and free.any() and model.n_groups == 1:
            # The level was held by the agents' own standalone maxima: the next levels are
            # likely more of them.  Find by capped LPs the longest run of free agents (by
            # v_i^max) that can all get their maxima while the others reach the largest of
            # them, and freeze it at once (the capping lemma, models/partition.md).
            found = _cap_search(h, free, vmax, model.row_of, model.base_l, n_cols, edge_agent[model.cols],
                                coef[model.cols], upper[model.cols], offset, floors)
            cap_lps += found["lps"]
            lps += found["lps"]
            cap_frozen += found["frozen"]
            if found["x"] is not None:
                x[model.cols] = found["x"]  # the last allocation meeting every floor
            if found["failed"]:
                restored = True  # rows restored: the dual simplex method once more, then primal
            else:
                h.setOptionValue("simplex_strategy", 4)
        elif face and free.any() and n_cols >= FACE_MIN_COLUMNS:
            reduced = np.asarray(sol.col_dual)[:n_cols]
            keep_local, stranded = optimal_face(edge_agent[model.cols], edge_pool[model.cols], x[model.cols],
                                                upper[model.cols], reduced, free, n_pools)
            if stranded.any():
                # Every column of these free agents is fixed: their values are final.
                free &= ~stranded
                floors[stranded] = values[stranded]
                face_frozen += int(stranded.sum())
            if free.any() and keep_local.sum() <= FACE_REBUILD * n_cols:
                keep = np.zeros(n_edges, dtype=bool)
                keep[model.cols[keep_local]] = True
                model = _level_model(keep, x, offset, floors, free, edge_agent, edge_pool, coef, capacity,
                                     demands, upper, level=t_of if warm_face else None)
                warm_rebuilds += model.warm
                face_rebuilds += 1
    x, repaired = _repair(x, edge_agent, edge_pool, capacity, demands)
    values = np.bincount(edge_agent, weights=coef * x, minlength=n_local)
    if status == STOPPED and first.get("objective") is None:
        x = None  # stopped before its first level: no allocation of its own
    return {"part": task["part"], "status": status, "objective": first.get("objective"), "x": x,
            "prices": None if first["prices"] is None else first["prices"] / unit,
            "lam": first["lam"], "can": included, "values": values / unit, "levels": levels,
            "frozen_per_level": frozen_per_level, "lps": lps, "retries": retries, "floor_easings": floor_easings, "repaired": repaired,
            "cap_lps": cap_lps, "cap_frozen": cap_frozen, "face_rebuilds": face_rebuilds, "face_frozen": face_frozen,
            "warm_rebuilds": warm_rebuilds, "released_reruns": released_reruns,
            "first_capped": int(capped_first.size), "first_cap_failed": first_cap_failed, "common_level": common_level,
            "seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def standalone_unique(edge_agent: np.ndarray, coef: np.ndarray, upper: np.ndarray, x: np.ndarray,
                      n: int) -> np.ndarray:
    """Per agent, whether ``x`` (its standalone maximiser, :func:`~laissez_opt.partition.core.inner_maximum`)
    is the only allocation of its edges worth ``v_i^max``.

    The fractional knapsack fills edges in decreasing ``a_e``; another maximiser
    exists exactly when value can move between two edges of equal ``a_e``: one
    holding some (``x_e > 0``), the other with room left (``x_f < u_f``).  Every held
    edge has ``a_e`` at least the agent's smallest held ``a_e``, every edge with room
    at most it (or the demand is not binding and no edge has room), so only that
    smallest value can tie.

    >>> ea, a, u = np.array([0, 0, 1, 1]), np.array([2.0, 1.0, 1.0, 1.0]), np.ones(4)
    >>> standalone_unique(ea, a, u, np.array([1.0, 0.0, 1.0, 0.0]), 2).tolist()   # agent 1: either edge
    [True, False]
    """
    held = x > 0
    if not held.any():
        return np.ones(n, dtype=bool)
    lowest = np.full(n, np.inf)
    np.minimum.at(lowest, edge_agent[held], coef[held])
    at_lowest = coef == lowest[edge_agent]
    room = x < upper
    held_count = np.bincount(edge_agent, weights=at_lowest & held, minlength=n)
    room_count = np.bincount(edge_agent, weights=at_lowest & room, minlength=n)
    both = np.bincount(edge_agent, weights=at_lowest & held & room, minlength=n)
    # A pair e != f: some held edge and some edge with room at the tie, other than one edge that is both.
    tied = (held_count >= 1) & (room_count >= 1) & ~((held_count == 1) & (room_count == 1) & (both == 1))
    return ~tied


def _capped_first_level(h, included, vmax, row_of, base_l, limit, edge_agent, coef, upper,
                        alone_x) -> tuple[np.ndarray, bool]:
    """The first level LP with the agents of ``v_i^max <= limit`` held at their maxima: the chain below
    the common level and the common level in one LP, when it succeeds.

    Let ``C`` be the included agents with ``v_i^max <= limit`` and ``T = max_{i in C} v_i^max``.
    Their level rows become floors ``v_i >= v_i^max`` (less a hair, :func:`hair_below`; no ``t``)
    and ``max t`` runs over the others.  If its optimum ``t'`` is at least ``T`` (to
    ``1e-7 max(1, T)``), the capped probe at ``T`` succeeds (its point is this LP's with
    ``t = T``), so every leximin optimum holds ``C`` at their maxima (the capping lemma,
    ``models/partition.md``), and this LP is the next plain level with ``C`` frozen: its
    optimum and duals serve as the level's.  Otherwise (``t' < T``, or no optimum: the
    floors may be jointly infeasible) the rows are restored and the solver cleared, for
    the plain first level from scratch.  ``limit`` comes from another part's common
    level (:func:`laissez_opt.partition.run.solve_arrays`); any value is exact, a poor
    one only costs the extra LP.  Returns ``C`` (empty unless it succeeded) and whether
    an LP ran.  The model's options are those of a first level (:func:`_set_lp`).

    ``edge_agent``, ``coef`` and ``upper`` describe the model's columns (every edge of the
    part) and ``alone_x`` holds the standalone maximisers.  An agent of ``C`` whose
    maximiser is unique (:func:`standalone_unique`) has its columns fixed there as well:
    a floor at ``v_i^max`` alone leaves the interior point almost no interior along that
    agent's edges (on the capped parts of 10^6 x 10^3 split in 1,600: 93-102 ms for the
    LP, against 64-75 ms with the columns fixed), and in every leximin optimum these
    columns take exactly those values.
    """
    import highspy

    capped = np.flatnonzero(included & (vmax <= limit))
    if capped.size == 0 or capped.size == np.count_nonzero(included):
        return np.zeros(0, dtype=np.int64), False
    n_edges = edge_agent.shape[0]
    rows = (base_l + row_of[capped]).astype(np.int32)
    for r in rows.tolist():
        h.changeCoeff(r, n_edges, 0.0)
    floor = hair_below(vmax[capped])
    h.changeRowsBounds(capped.size, rows, floor, np.full(capped.size, highspy.kHighsInf))
    is_capped = np.zeros(row_of.shape[0], dtype=bool)
    is_capped[capped] = True
    fixable = is_capped & standalone_unique(edge_agent, coef, upper, alone_x, row_of.shape[0])
    fixed = np.flatnonzero(fixable[edge_agent]).astype(np.int32)
    h.changeColsBounds(fixed.size, fixed, alone_x[fixed], alone_x[fixed])
    h.run()
    top = float(vmax[capped].max())
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        t = float(np.asarray(h.getSolution().col_value)[n_edges])
        if t >= top - 1e-7 * max(1.0, top):
            return capped, True
    for r in rows.tolist():
        h.changeCoeff(r, n_edges, -1.0)
    h.changeRowsBounds(capped.size, rows, np.zeros(capped.size), np.full(capped.size, highspy.kHighsInf))
    h.changeColsBounds(fixed.size, fixed, np.zeros(fixed.size), upper[fixed])
    h.clearSolver()
    return np.zeros(0, dtype=np.int64), True


def _cap_search(h, free, vmax, row_of, base_l, n_edges, edge_agent, coef, upper, offset, floors) -> dict:
    """Freeze at their standalone maxima ``v_i^max`` all free agents that every leximin optimum holds there.

    A probe at ``T`` (a free agent's ``v_i^max``) caps the free agents with
    ``v_i^max <= T``: their level rows become ``v_i - t >= v_i^max - T``, the others
    keep ``v_i - t >= 0``.  Since ``v_i <= v_i^max``, the optimum ``phi(T)`` of ``max t``
    is at most ``T``.  With ``tau`` the smallest leximin value among the free agents
    below their maxima, ``models/partition.md`` proves: the probe succeeds
    (``phi(T) = T``) if and only if ``T <= tau``, and then every leximin optimum gives
    each capped agent ``v_i^max`` (they are frozen there); a failed probe bounds
    ``tau <= phi(T) < T``.  The search gallops (``1, 2, 4, ...`` more agents by
    ``v_i^max``) until a probe fails, then probes the largest ``v_i^max <= phi(T)``:
    a success there freezes every agent below ``tau``; a failure lowers the bound.
    A failed probe's rows are restored (lower bound 0).  The model's columns are
    ``edge_agent``, ``coef`` and ``upper``; ``offset`` is each agent's value outside
    the model (its rows are shifted by it), and ``floors`` receives the floors of
    the agents frozen here.  Returns ``lps``,
    ``frozen``, ``failed`` (the model was left after a failed probe) and ``x``, the
    allocation of the last successful probe (None if none).
    """
    import highspy

    inf = highspy.kHighsInf
    out = {"lps": 0, "frozen": 0, "failed": False, "x": None}
    # A probe changes only row bounds: the last basis stays dual feasible, so the dual simplex
    # method starts from it (about a seventh fewer CPU seconds than primal on the parts of a
    # 10^6 x 10^3 split in 1,600 with a chain).  The caller sets the strategy back.
    h.setOptionValue("simplex_strategy", 1)
    step, bound = 1, None  # bound: the smallest phi(T) of a failed probe, >= tau
    while True:
        idx = np.flatnonzero(free)
        if idx.size == 0:
            return out
        order = idx[np.argsort(vmax[idx], kind="stable")]
        if bound is None:
            top = float(vmax[order[min(step, order.size) - 1]])
        else:
            below = vmax[order] <= bound * (1.0 + 1e-9)
            if not below.any():
                return out  # every free agent's maximum is above tau: the next level is a contested one
            top = float(vmax[order[np.flatnonzero(below)[-1]]])
        capped = order[vmax[order] <= top]
        rows = (base_l + row_of[capped]).astype(np.int32)
        h.changeRowsBounds(capped.size, rows, vmax[capped] - top - offset[capped], np.full(capped.size, inf))
        h.run()
        out["lps"] += 1
        ok = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        col = np.asarray(h.getSolution().col_value) if ok else None
        if ok and col[n_edges] >= top - 1e-7 * max(1.0, abs(top)):
            x = np.clip(col[:n_edges], 0.0, upper)
            v = np.bincount(edge_agent, weights=coef * x, minlength=free.shape[0]) + offset
            for r in rows.tolist():
                h.changeCoeff(r, n_edges, 0.0)
            floor = np.minimum(vmax[capped], v[capped])
            floor = hair_below(floor)
            floors[capped] = floor
            h.changeRowsBounds(capped.size, rows, floor - offset[capped], np.full(capped.size, inf))
            free[capped] = False
            out.update(x=x, failed=False)
            out["frozen"] += int(capped.size)
            step *= 2
            continue
        h.changeRowsBounds(capped.size, rows, -offset[capped], np.full(capped.size, inf))
        out["failed"] = True
        if not ok:
            return out  # no bound from a probe in numerical trouble: the plain levels go on
        bound = float(col[n_edges]) if bound is None else min(bound, float(col[n_edges]))


#: The first level LP with crossover presolves on parts of at most this many edges.  Measured on 60
#: parts spread over splits of 10^6 x 10^3, CPU per part's whole leximin without and with presolve:
#: 1,600 parts (3,120 edges each) 102.1 and 109.8 ms; 2,000 parts (2,500 edges) 85.0 and 79.0;
#: 2,400 parts (2,080 edges) 68.8 and 57.8.  On the smaller parts presolve removes about 40% of
#: the rows (pools with one edge, implied demands), on the larger ones 20%, and the interior
#: point's cost falls with the rows only once they are that few.
PRESOLVE_FIRST_MAX_EDGES = 2_500
#: A run of the first level alone solves it, on parts of at most this many edges, by the dual
#: simplex method with presolve instead of the interior point without crossover: a vertex at a
#: fraction of the cost.  Mean CPU ms of one part's first LP, 20 to 30 parts of 10^6 x 10^3,
#: interior point without crossover (presolve on / off) against dual simplex with presolve:
#: 1,600 parts (3,120 edges) 72 / - against 138; 2,400 parts (2,080 edges) 43-47 / 57 against
#: 39-43; 3,200 parts (1,560 edges) 24-30 / - against 15-17; 4,000 parts (1,250 edges,
#: square-root split) 16 / 33 against 6.7.  The every-level run keeps the interior point with
#: crossover: with the dual simplex vertex, 60 parts of the 2,400-way split took more later LPs
#: (16.2 against 11.3 per part) and more CPU in all (69.1 against 64.7 ms per part).
SIMPLEX_FIRST_MAX_EDGES = 2_200
#: The every-level run solves its first LP by the dual simplex method with presolve (a vertex, as
#: the later levels need) on parts of at most this many edges, else by interior point with
#: crossover.  CPU ms per part's whole leximin, 40 parts of each split of 10^6 x 10^3, interior
#: point against dual simplex: 2,400 equal parts (2,080 edges) 52.6 against 56.6 (more later LPs
#: from the simplex vertex: 15.4 against 11.1); 2,800 (1,785 edges) 67.5 against 62.6 equal,
#: 74.4 against 60.8 square-root; 3,200 (1,560) 70.8 against 67.9 equal, 63.9 against 48.6
#: square-root; 4,000 square-root (1,250) 73.9 against 62.7.  The dual simplex first LP alone is
#: 2.2 to 2.5 times cheaper on the smaller parts, and the later levels lose less than that.
SIMPLEX_EVERY_LEVEL_MAX_EDGES = 1_900


def _set_lp(h, warm: bool, crossover: bool = True, presolve: bool = False, simplex: bool = False) -> None:
    """HiGHS options of a level LP: the first by interior point with crossover to a vertex (the dual
    simplex method took 10x longer on some large parts), later ones by primal simplex from the previous
    level's basis, without presolve.  ``crossover=False`` (a run of the first level alone: no later
    level starts from its basis) keeps the interior point's solution, about a fifth fewer CPU seconds
    on the parts of a 10^6 x 10^3 split; its small excesses over a capacity or a demand are scaled
    away by :func:`_repair`, and the bound needs no vertex.  That run never presolves: after
    presolve, HiGHS's interior point without crossover ends with status "unknown" on these LPs (the
    postsolved duals are infeasible), which the level loop would have to solve again by simplex.
    With crossover, ``presolve`` (for parts of at most :data:`PRESOLVE_FIRST_MAX_EDGES` edges) turns
    it on: it costs time on larger parts (on 60 parts of 10^6 x 10^3 split in 1,600: 113 against
    116-120 ms of CPU per part's whole leximin, the same values to 7e-8 and no retry) and saves it on
    smaller ones.  ``simplex`` (a small part: at most :data:`SIMPLEX_FIRST_MAX_EDGES` edges for the
    first level alone, :data:`SIMPLEX_EVERY_LEVEL_MAX_EDGES` for every level) takes the dual simplex
    method with presolve instead, either way."""
    if not warm and simplex:
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("presolve", "on")
        h.setOptionValue("simplex_strategy", 1)
    elif not warm:
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "on" if crossover else "off")
        h.setOptionValue("presolve", "on" if presolve and crossover else "off")
    else:
        # The previous basis stays primal feasible after a freeze (the floors sit a hair
        # below the values): primal simplex from it, no presolve.
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("presolve", "off")
        h.setOptionValue("simplex_strategy", 4)
        h.setOptionValue("simplex_dual_edge_weight_strategy", DUAL_EDGE_WEIGHTS)


def _repair(x, edge_agent, edge_pool, capacity, demands) -> tuple[np.ndarray, float]:
    """``x`` scaled down where an interior point left a pool or a demand over by its tolerance; the largest excess."""
    used = np.bincount(edge_pool, weights=x, minlength=capacity.shape[0])
    over = used > capacity
    excess = float(np.max(used - capacity, initial=0.0))
    if over.any():
        x = x * np.where(over, capacity / np.where(used > 0, used, 1.0), 1.0)[edge_pool]
    taken = np.bincount(edge_agent, weights=x, minlength=demands.shape[0])
    over = taken > demands
    excess = max(excess, float(np.max(np.where(np.isfinite(demands), taken - demands, 0.0), initial=0.0)))
    if over.any():
        x = x * np.where(over, demands / np.where(taken > 0, taken, 1.0), 1.0)[edge_agent]
    return x, excess


def _groups_of(model: _LevelModel, agents: np.ndarray) -> np.ndarray:
    """A boolean mask over the model's components ``g`` in ``0..n_groups-1``: which hold at least
    one of ``agents`` (agent indices or a boolean mask over all agents; agents outside the model
    belong to no component)."""
    held = np.zeros(model.n_groups, dtype=bool)
    g = model.group_of[agents]
    held[g[g >= 0]] = True
    return held


def _scatter_rows(mask_rows: np.ndarray, rows_agent: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    out[rows_agent[mask_rows]] = True
    return out
