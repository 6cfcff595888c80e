"""Themis finish-time fairness, ``models.md`` item 4 (thesis 002 section 5.1; Themis, NSDI'20).

Agent ``i`` has work ``W_i`` (``Agent.work``; 1.0 when not given) and has
already spent ``t_i`` hours in the system (``Agent.elapsed``).  Its rate under
an allocation ``x`` is ``X_i = sum_c u_{i,c} x_{i,c}`` (one round).  Its ideal
rate ``X^id_i`` is the rate of the weighted equal share, ``s_i = w_i / sum_j w_j``
of every pool, scaled by ``min(1, d_i / (s_i sum_{c:(i,c) in E} k_c))`` when that
share holds more devices of the agent's compatible pools than its demand ``d_i``
(Gavel's isolated allocation).  Then

.. math::

    T^{id}_i = \\frac{W_i}{X^{id}_i}, \\qquad
    T^{sh}_i = t_i + \\frac{W_i}{X_i}, \\qquad
    \\rho_i = \\frac{T^{sh}_i}{T^{id}_i} = a_i + \\frac{1}{r_i},
    \\quad a_i = \\frac{t_i}{T^{id}_i}, \\quad r_i = \\frac{X_i}{X^{id}_i},

and the model minimises ``rho = max_{i in B} rho_i`` over the bidders ``B``
(below).  For a fixed ``rho > max_B a_i``, ``rho_i <= rho`` is the linear
constraint ``r_i >= 1 / (rho - a_i)``, so the model is a parametric linear
(fractional) or integer (integral) program in ``rho``:

.. math::

    F(\\rho) = \\max_{x, \\delta} \\delta \\quad\\text{s.t.}\\quad
    \\sum_c \\frac{u_{i,c}}{X^{id}_i} x_{i,c} - \\delta \\ge \\frac{1}{\\rho - a_i}
    \\ (i \\in B,\\ \\texttt{finish}),
    \\quad x \\text{ feasible } (\\texttt{capacity}, \\texttt{demand}).

``F`` is continuous and increasing and ``F(rho*) = 0``.  Fractional mode:
every LP evaluation certifies a bracket: the allocation found gives
``hi = max_B (a_i + 1/r_i)``, and the proven value ``F(rho)`` gives
``lo = min_i a_i + 1 / (F(rho) + 1/(rho - a_i))`` (an allocation reaching ``rho'``
has ``delta >= min_i [1/(rho' - a_i) - 1/(rho - a_i)]`` at ``rho``); a safeguarded
secant search on ``F`` shrinks ``[lo, hi]`` to a relative width of ``1e-7``.
With all ``t_i = 0`` the first evaluation is exact: ``rho* = 1 / max_x min_B r_i``.
Integral mode: the LP relaxation gives ``lo``, the placement that chose the
bidders gives ``hi``, and feasibility ILPs (``delta = 0``) alternate between a
bisection (with a margin above the solver's tolerance) and an exact descent
step at ``hi`` that asks every bidder for the next rate an integral allocation
can give it (:func:`next_rates`): infeasible proves ``hi`` optimal.

Bidders (Themis's auction): the active agents (``W_i > 0`` and ``X^id_i > 0``)
sorted by ``a_i`` descending (ties: instance order); the first
``max(1, ceil((1 - f) n_active))`` are candidates (``f`` = option
``fairness_knob``, default 0).  In integral mode a candidate bids only if it can
be served together with the bidders before it: each needs at least one device
of a pool it values (``u > 0``), checked by augmenting paths (the greedy basis
of a transversal matroid); fractional time shares serve everyone.  A second
stage makes the allocation work-conserving: with every bidder held at
``rho_i <= hi``, it maximises the weighted welfare of the non-bidders
(``others``), then, with that welfare held, the weighted welfare of all.

References: Mahajan et al., "Themis: Fair and Efficient GPU Cluster
Scheduling", NSDI 2020 (finish-time fairness, fairness knob, leftover
allocation); thesis 002 section 5.1; Narayanan et al., Gavel, OSDI 2020
(isolated allocation); Dinkelbach (1967) and Crouzeix, Ferland & Schaible
(1985) for parametric min-max ratio programs.

Example (two agents, two single-device pools; worked by hand in ``models/themis.md``)
--------------------------------------------------------------------------------------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("P"), lo.Pool("Q")],
...                    agents=[lo.Agent("A", work=1.0), lo.Agent("B", work=1.0)],
...                    edges=[lo.Edge("A", "P", 2.0), lo.Edge("A", "Q", 1.0),
...                           lo.Edge("B", "P", 1.0), lo.Edge("B", "Q", 1.0)])
>>> ideal_rates(inst).tolist()
[1.5, 1.0]
>>> result = lo.solve(inst, "themis")
>>> result.status, round(result.objective, 9), sorted((a["agent"], a["pool"]) for a in result.allocation)
('optimal', 1.0, [('A', 'P'), ('B', 'Q')])
>>> round(lo.solve(inst, "themis", fractional=True).objective, 6)
0.875
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..limits import TimeLimitReached, check_deadline, remaining
from ..method_spec import Method, Option, partition_options, read_state, refuse_partitions, solver_options, state_option
from ..modeling import LinearModel, solve_model
from ..modeling.highs_route import limit_next_run
from ..modeling.solution import Solution
from ..result import AgentTable, Result
from .classes import COMPRESS_CHOICES, class_estimate, compress_option, solve_on_classes
from .common import AllocationColumns, add_allocation, allocation_result, allocation_size, refuse_overflow

__all__ = [
    "DEFAULT_WORK",
    "ThemisData",
    "ideal_rates",
    "best_rates",
    "themis_data",
    "select_bidders",
    "build_themis",
    "finish_times",
    "rounded_incumbent",
    "bipartite_rounding",
    "improve_by_moves",
    "solve_themis",
]

#: Work ``W_i`` of an agent whose ``work`` is null.
DEFAULT_WORK = 1.0
#: Relative width of ``[lo, hi]`` the search aims for.
TARGET = 1e-7
#: Largest relative width still labelled ``optimal``.
PROVEN = 1e-6
#: Relative slack on ``hi`` when the second stage holds the bidders at ``rho_i <= hi``.
HOLD = 1e-9
#: Largest relative excess over ``hi`` of a second-stage allocation's ``max rho`` (LP row tolerance).
ACCEPT = 1e-7
_STAGES = ("fair", "probe", "others", "welfare")


# ----------------------------------------------------------------------------- data


def ideal_rates(instance: Instance) -> np.ndarray:
    """``X^id_i``: the rate of the weighted equal share, scaled to the demand.

    ``X^id_i = min(1, d_i / H_i) * s_i * sum_c u_{i,c} k_c`` with
    ``s_i = w_i / sum_j w_j`` and ``H_i = s_i * sum_{c:(i,c) in E} k_c`` the
    devices of compatible pools that the share holds (round 0's utilities).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=4)], agents=[lo.Agent("A", demand=1), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 3.0), lo.Edge("B", "P", 1.0)])
    >>> ideal_rates(inst).tolist()  # A's share holds 2 devices but it uses 1: halved
    [3.0, 2.0]
    """
    share = instance.weights / instance.weights.sum()
    k = instance.counts[instance.edge_pool].astype(np.float64)
    n = instance.n_agents
    usable = np.bincount(instance.edge_agent, weights=k, minlength=n)
    full = np.bincount(instance.edge_agent, weights=instance.edge_utility[:, 0] * k, minlength=n)
    held = share * usable
    demand = instance.demands
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(held > demand, demand / np.where(held > 0, held, 1.0), 1.0)
    return scale * share * full


def best_rates(instance: Instance) -> np.ndarray:
    """``X^max_i``: the best rate of agent ``i`` alone (its ``d_i`` best devices, round 0).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=1), lo.Pool("Q", count=3)], agents=[lo.Agent("A", demand=2)],
    ...                    edges=[lo.Edge("A", "P", 3.0), lo.Edge("A", "Q", 1.0)])
    >>> best_rates(inst).tolist()
    [4.0]
    """
    u = instance.edge_utility[:, 0]
    agent = instance.edge_agent
    order = np.lexsort((-u, agent))
    k = instance.counts[instance.edge_pool[order]].astype(np.float64)
    a = agent[order]
    cum = np.cumsum(k)
    starts = np.searchsorted(a, np.arange(instance.n_agents))
    before = np.concatenate([[0.0], cum])[starts]  # devices of earlier agents' edges
    used_before = cum - k - before[a]  # devices of this agent's better edges
    take = np.clip(instance.demands[a] - used_before, 0.0, k)
    return np.bincount(a, weights=u[order] * take, minlength=instance.n_agents)


@dataclass
class ThemisData:
    """Per-agent quantities of the model and the bidders (see :func:`themis_data`)."""

    work: np.ndarray  # W_i
    elapsed: np.ndarray  # t_i
    ideal_rate: np.ndarray  # X^id_i
    ideal_time: np.ndarray  # T_id,i (inf where X^id_i = 0)
    lag: np.ndarray  # a_i = t_i / T_id,i
    best_rate: np.ndarray  # X^max_i
    active: np.ndarray  # W_i > 0 and X^id_i > 0
    candidates: np.ndarray  # the ceil((1 - f) n_active) worst, in priority order
    bidders: np.ndarray  # the candidates that bid, in priority order
    fairness_knob: float
    fractional: bool
    welfare_weight: np.ndarray | None = None  # w_i of the second stage's welfare (None: instance.weights)
    is_bidder: np.ndarray = field(init=False)

    def __post_init__(self):
        self.is_bidder = np.zeros(self.work.size, dtype=bool)
        self.is_bidder[self.bidders] = True

    def rates(self, instance: Instance, amounts: np.ndarray) -> np.ndarray:
        """``X_i`` of an ``E``-vector of amounts (round 0)."""
        return np.bincount(instance.edge_agent, weights=instance.edge_utility[:, 0] * amounts, minlength=self.work.size)

    def max_rho(self, instance: Instance, amounts: np.ndarray) -> float:
        """``max_{i in B} rho_i`` of an ``E``-vector of amounts (``inf`` if a bidder gets no rate)."""
        if self.bidders.size == 0:
            return 0.0
        b = self.bidders
        r = self.rates(instance, amounts)[b] / self.ideal_rate[b]
        if np.any(r <= 0):
            return math.inf
        with np.errstate(over="ignore"):  # a rate below 1/DBL_MAX of the ideal: rho is inf, as with none
            return float(np.max(self.lag[b] + 1.0 / r))


def _check(instance: Instance, fairness_knob) -> float:
    if instance.rounds != 1:
        raise InputError(
            f"themis schedules one round; this instance has {instance.rounds} rounds "
            "(give the round to schedule as a one-round instance)",
            source=instance.source, path="$.rounds",
        )
    if isinstance(fairness_knob, bool) or not isinstance(fairness_knob, (int, float)) or not 0 <= fairness_knob <= 1:
        raise InputError(f"fairness_knob must be a number in [0, 1], got {fairness_knob!r}", path="option fairness_knob")
    return float(fairness_knob)


def select_bidders(instance: Instance, order: np.ndarray, *, placement: bool = False):
    """The candidates (in priority ``order``) that can all get a useful device at once.

    Greedy in priority order: a candidate is kept when an integral allocation
    gives it and every kept candidate at least one device of a pool it values
    (``u > 0``); found by an augmenting path over pools (an agent of a full pool
    moves to another pool it can use).  This is the greedy basis of a
    transversal matroid, so the kept set is the lexicographically first
    servable set.  With ``placement=True`` also returns the pool each kept
    agent was placed on (a dict), an integral allocation serving all of them.

    >>> import laissez_opt as lo, numpy as np
    >>> inst = lo.Instance(pools=[lo.Pool("P"), lo.Pool("Q")], agents=[lo.Agent("A"), lo.Agent("B"), lo.Agent("C")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 1.0), lo.Edge("B", "P", 1.0),
    ...                           lo.Edge("C", "P", 1.0)])
    >>> select_bidders(inst, np.array([0, 1, 2])).tolist()  # A moves to Q for B; C cannot be served too
    [0, 1]
    """
    useful = instance.edge_utility[:, 0] > 0
    pools_of: dict[int, list[int]] = {}
    for i, c in zip(instance.edge_agent[useful].tolist(), instance.edge_pool[useful].tolist()):
        pools_of.setdefault(i, []).append(c)
    free = instance.counts.astype(np.int64).tolist()
    left = sum(free)
    # movers[c][c2]: agents placed on pool c that could use pool c2 instead.
    movers: dict[int, dict[int, set]] = {c: {} for c in range(instance.n_pools)}

    where: dict[int, int] = {}

    def place(j: int, c: int, sign: int) -> None:
        if sign > 0:
            where[j] = c
        for c2 in pools_of[j]:
            if c2 != c:
                group = movers[c].setdefault(c2, set())
                group.add(j) if sign > 0 else group.discard(j)

    kept = []
    for i in order.tolist():
        if left == 0:
            break
        start = pools_of.get(i, [])
        parent: dict[int, int | None] = {c: None for c in start}
        queue = deque(start)
        found = None
        while queue:
            c = queue.popleft()
            if free[c] > 0:
                found = c
                break
            for c2, group in movers[c].items():
                if group and c2 not in parent:
                    parent[c2] = c
                    queue.append(c2)
        if found is None:
            continue
        free[found] -= 1
        left -= 1
        c = found
        while parent[c] is not None:
            prev = parent[c]
            j = min(movers[prev][c])  # deterministic choice
            place(j, prev, -1)
            place(j, c, +1)
            c = prev
        place(i, c, +1)
        kept.append(i)
    kept = np.array(kept, dtype=np.int64)
    return (kept, where) if placement else kept


#: Largest a_i = t_i / T_id,i Themis accepts: rho - a_i keeps at least 4 significant digits below it.
MAX_LAG = 1e12


def work_and_elapsed(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """``W_i`` (``DEFAULT_WORK`` when unset) and ``t_i`` of every agent, read as columns."""
    work = np.array([DEFAULT_WORK if w is None else float(w) for w in instance.agent_field("work")], dtype=np.float64)
    elapsed = np.array(instance.agent_field("elapsed"), dtype=np.float64)
    return work, elapsed


def themis_data(instance: Instance, *, fractional: bool = False, fairness_knob: float = 0.0) -> ThemisData:
    """``W_i``, ``t_i``, ``X^id_i``, ``T_id,i``, ``a_i``, ``X^max_i`` and the bidders.

    Priority: active agents by ``a_i = t_i / T_id,i`` descending, ties in
    instance order; candidates: the first ``max(1, ceil((1 - f) n_active))``;
    bidders: all candidates (fractional) or :func:`select_bidders` of them
    (integral).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A", work=2.0, elapsed=1.0), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> d = themis_data(inst)
    >>> d.ideal_time.tolist(), d.lag.tolist(), d.bidders.tolist()
    ([4.0, 2.0], [0.25, 0.0], [0])
    """
    knob = _check(instance, fairness_knob)
    work, elapsed = work_and_elapsed(instance)
    ideal = ideal_rates(instance)
    active = (work > 0) & (ideal > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ideal_time = np.where(ideal > 0, work / np.where(ideal > 0, ideal, 1.0), np.inf)
        lag = np.where(active, elapsed / np.where(active, ideal_time, 1.0), 0.0)
    on_active = active[instance.edge_agent]
    with np.errstate(over="ignore"):
        refuse_overflow(instance.edge_utility[on_active, 0] / ideal[instance.edge_agent[on_active]], instance,
                        instance.edge_agent[on_active])
    if np.any(lag > MAX_LAG):
        worst = int(np.argmax(lag))
        raise InputError(
            f"agent {instance.agents[worst].id!r} has waited {lag[worst]:.3g} times its ideal finish time; "
            f"themis needs these ratios a_i = t_i / T_id,i below {MAX_LAG:g} (levels rho > a_i are told apart "
            "in floating point only there)", source=instance.source, path=f"$.agents[{worst}].elapsed")
    idx = np.flatnonzero(active)
    order = idx[np.lexsort((idx, -lag[idx]))]
    count = 0
    if idx.size:
        count = max(1, math.ceil((1.0 - knob) * idx.size - 1e-9))
    candidates = order[:count]
    bidders = candidates if fractional else select_bidders(instance, candidates)
    return ThemisData(work, elapsed, ideal, ideal_time, lag, best_rates(instance), active, candidates, bidders,
                      knob, bool(fractional))


# ----------------------------------------------------------------------------- the declared model


def build_themis(
    instance: Instance,
    *,
    rho: float | None = None,
    fractional: bool = False,
    fairness_knob: float = 0.0,
    stage: str = "fair",
    others_floor: float | None = None,
    data: ThemisData | None = None,
    targets: np.ndarray | None = None,
) -> tuple[LinearModel, AllocationColumns]:
    """Declare the Themis model at level ``rho``; returns ``(model, allocation columns)``.

    Blocks: ``x`` (with ``capacity`` and ``demand``), ``delta`` and the rows

    * ``finish``: ``sum_c (u_{i,c} / X^id_i) x_{i,c} - delta >= 1 / (rho - a_i)`` for ``i in B``;
    * ``others``: ``sum_{i not in B} w_i X_i >= others_floor`` (0, always true, unless a floor is given).

    ``stage`` sets objective and bounds: ``"fair"`` maximises ``delta`` (free) with
    non-bidders at 0 (``F(rho)``); ``"probe"`` fixes ``delta = 0`` with no
    objective (is ``rho`` reachable?); ``"others"`` and ``"welfare"`` fix
    ``delta = 0`` and maximise the weighted welfare of the non-bidders, or of
    all active agents.  ``rho`` defaults to ``max_B a_i + 1`` (the equal share's
    level).  In fractional mode the matrix does not depend on ``rho``, ``stage``
    or the floor (so HiGHS re-solves warm).  In integral mode, with ``delta``
    fixed to 0, the row of bidder ``i`` asks ``r_i >= T_i`` (``T_i = 1/(rho - a_i)``,
    or ``targets[i]`` in bidder order) in the normalised, capped form
    ``sum_c min(u_{i,c} / (X^id_i T_i), 1) x_{i,c} >= 1``: the same integer points
    (one device of such a pool already meets the row), a tighter LP relaxation,
    and a solver tolerance that is relative to ``T_i``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> model, _ = build_themis(inst, fractional=True)
    >>> model.summary()["constraints"]
    {'demand': 0, 'capacity': 1, 'finish': 2, 'others': 1}
    """
    if stage not in _STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(_STAGES)}")
    if data is None:
        data = themis_data(instance, fractional=fractional, fairness_knob=fairness_knob)
    bidders = data.bidders
    lag_b = data.lag[bidders]
    if rho is None:
        rho = float(np.max(lag_b, initial=0.0)) + 1.0
    if bidders.size and not rho > float(np.max(lag_b)):
        raise ValueError(f"rho = {rho!r} must exceed every bidder's a_i = t_i / T_id,i (max {np.max(lag_b)!r})")
    model = LinearModel("themis", sense="max")
    columns = add_allocation(model, instance, integral=not data.fractional)
    x = columns.block
    agent = columns.agent
    u = instance.edge_utility[columns.edge, 0]
    bid = data.is_bidder[agent]
    act = data.active[agent]
    x.upper[~(bid if stage in ("fair", "probe") else act)] = 0.0
    free = stage == "fair"
    delta = model.add_variables(
        "delta", 1, lower=-np.inf if free else 0.0, upper=np.inf if free else 0.0,
        description="common slack of the finish rows (F(rho) when maximised)",
    )
    nb = int(bidders.size)
    row_of = np.full(instance.n_agents, -1, dtype=np.int64)
    row_of[bidders] = np.arange(nb)
    keep = np.flatnonzero(bid & (u > 0))
    need = 1.0 / (rho - lag_b) if targets is None else np.asarray(targets, dtype=np.float64)
    coefs = u[keep] / data.ideal_rate[agent[keep]]
    if not data.fractional and not free:
        # Integral rows, normalised to right-hand side 1 with capped coefficients.
        coefs = np.minimum(coefs / need[row_of[agent[keep]]], 1.0)
        need = np.ones(nb)
    model.add_constraints(
        "finish",
        rows=np.concatenate([row_of[agent[keep]], np.arange(nb)]),
        cols=np.concatenate([x.columns(keep), np.full(nb, delta.start)]),
        coefs=np.concatenate([coefs, -np.ones(nb)]),
        lower=need if nb else None,
        n_rows=nb,
        description="r_i - delta >= 1/(rho - a_i) for each bidder i, r_i = X_i / X^id_i",
    )
    others = np.flatnonzero(~bid & act & (u > 0))
    weighted = (instance.weights if data.welfare_weight is None else data.welfare_weight)[agent] * u
    model.add_constraints(
        "others",
        rows=np.zeros(others.size, dtype=np.int64),
        cols=x.columns(others),
        coefs=weighted[others],
        lower=0.0 if others_floor is None else others_floor,  # 0 holds always (no free row)
        n_rows=1,
        description="sum_{i not in B} w_i X_i >= floor (second stage only)",
    )
    if stage == "fair":
        model.set_objective(delta, [1.0])
    elif stage == "others":
        model.set_objective(x, np.where(~bid & act, weighted, 0.0))
    elif stage == "welfare":
        model.set_objective(x, np.where(act, weighted, 0.0))
    return model, columns


# ----------------------------------------------------------------------------- solving


@dataclass
class _Outcome:
    status: str
    amounts: np.ndarray | None  # E-vector of x
    objective: float | None
    bound: float | None
    build_s: float
    solve_s: float
    route: str
    text: str


class _Route:
    """Each solve rebuilds the declared model and calls :func:`solve_model` (any solver and route)."""

    def __init__(self, instance, data, *, solver, via, options):
        self.instance, self.data, self.solver, self.via, self.options = instance, data, solver, via, options

    def solve(self, rho, stage, floor, time_limit, targets=None) -> _Outcome:
        t0 = time.perf_counter()
        model, columns = build_themis(self.instance, rho=rho, stage=stage, others_floor=floor, data=self.data,
                                      targets=targets)
        build = time.perf_counter() - t0
        sol = solve_model(model, solver=self.solver, via=self.via, time_limit=time_limit, **self.options)
        amounts = None if sol.values is None else sol.values[columns.block.slice]
        return _Outcome(sol.status, amounts, sol.objective, sol.bound, build + sol.build_s, sol.solve_s,
                        sol.route, sol.solver_status)


class _HighsSession:
    """One highspy LP, passed once; each solve rebuilds the declaration and pushes only its
    bounds and costs (the matrix never changes), so the dual simplex warm-starts."""

    def __init__(self, instance, data, *, threads=None, verbose=False, **_ignored):
        import highspy

        from ..modeling.highs_route import _pass_model

        self.highspy, self.instance, self.data = highspy, instance, data
        t0 = time.perf_counter()
        model, self.columns = build_themis(instance, data=data)
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", bool(verbose))
        if threads is not None:
            self.h.setOptionValue("threads", int(threads))
        _pass_model(self.h, model, False)
        self.n_cols, self.n_rows = model.n_cols, model.n_rows
        self.cold = True
        self.setup_s = time.perf_counter() - t0

    def solve(self, rho, stage, floor, time_limit, targets=None) -> _Outcome:
        hs, h = self.highspy, self.h
        t0 = time.perf_counter()
        model, _ = build_themis(self.instance, rho=rho, stage=stage, others_floor=floor, data=self.data)
        assert (model.n_cols, model.n_rows) == (self.n_cols, self.n_rows)
        lower, upper, _ = model.bounds()
        row_lower, row_upper = model.row_bounds()
        cols = np.arange(self.n_cols, dtype=np.int32)
        rows = np.arange(self.n_rows, dtype=np.int32)
        h.changeColsBounds(self.n_cols, cols, lower, upper)
        h.changeColsCost(self.n_cols, cols, model.objective)
        h.changeRowsBounds(self.n_rows, rows, row_lower, row_upper)
        limit_next_run(h, time_limit)
        build = time.perf_counter() - t0 + self.setup_s
        self.setup_s = 0.0
        # The first (cold) solve uses the interior-point method with crossover, which is faster
        # here than a cold simplex; every later solve warm-starts the simplex from its basis.
        h.setOptionValue("solver", "ipm" if self.cold else "simplex")
        t1 = time.perf_counter()
        h.run()
        seconds = time.perf_counter() - t1
        self.cold = False
        status = h.getModelStatus()
        text = h.modelStatusToString(status)
        S = hs.HighsModelStatus
        route = "highspy-lp (warm-started)"
        if status == S.kInfeasible:
            return _Outcome("infeasible", None, None, None, build, seconds, route, text)
        has = h.getInfo().primal_solution_status == hs.SolutionStatus.kSolutionStatusFeasible
        if status == S.kOptimal or (status == S.kTimeLimit and has):
            values = np.asarray(h.getSolution().col_value)
            value = model.objective_value(values)
            state = "optimal" if status == S.kOptimal else "time_limit"
            return _Outcome(state, values[self.columns.block.slice], value, value if state == "optimal" else None,
                            build, seconds, route, text)
        if status == S.kTimeLimit:
            raise NoSolutionError(f"HiGHS stopped ({text}) before finding a feasible allocation")
        # Anything else (a numerical trouble of the re-solve): solve this one from scratch.
        out = _Route(self.instance, self.data, solver="highs", via="direct", options={}).solve(
            rho, stage, floor, time_limit)
        out.build_s += build
        out.solve_s += seconds
        return out


def _lo_from(rho: float, f_upper: float, lag: np.ndarray) -> float:
    """Certified lower bound on ``rho*`` from ``F(rho) <= f_upper``."""
    inv = f_upper + 1.0 / (rho - lag)
    ok = inv > 0
    if not np.any(ok):
        return math.inf
    return float(np.min(lag[ok] + 1.0 / inv[ok]))


def _closed(lo: float, hi: float, tol: float) -> bool:
    return math.isfinite(hi) and hi - lo <= tol * hi


def _next_point(points, lo, hi, lag_binding, widths) -> float:
    """The next ``rho`` to evaluate: a secant (or first-step Newton) estimate of the root of ``F``,
    kept inside ``[lo + w/100, hi - w/100]`` (``w = hi - lo``); a bisection when the bracket
    did not halve over the last three evaluations."""
    width = hi - lo
    if len(widths) >= 3 and width > 0.5 * widths[-3]:
        return lo + 0.5 * width
    cand = None
    if len(points) >= 2:
        (r0, f0), (r1, f1) = sorted(points, key=lambda p: abs(p[1]))[:2]
        if f1 != f0:
            cand = r1 - f1 * (r1 - r0) / (f1 - f0)
    elif points and lag_binding is not None and lag_binding.size:
        r1, f1 = points[-1]
        slope = float(np.mean(1.0 / (r1 - lag_binding) ** 2))
        cand = r1 - f1 / slope
    if cand is None or not math.isfinite(cand):
        return lo + 0.5 * width
    return min(max(cand, lo + 0.01 * width), hi - 0.01 * width)


def finish_times(instance: Instance, data: ThemisData, amounts: np.ndarray) -> AgentTable:
    """Per agent: ``W``, ``t``, ``X^id``, ``T_id``, ``a``, rate ``X``, ``T_sh``, ``rho``, bidder flag.

    An :class:`~laissez_opt.result.AgentTable` over the columns: an agent's record is
    built when read (``rho`` is ``None`` for an agent outside the auction).
    """
    rates = data.rates(instance, amounts)
    work, elapsed = data.work.astype(np.float64), data.elapsed.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        shared = np.where(rates > 0, elapsed + work / np.where(rates > 0, rates, 1.0),
                          np.where(work == 0, elapsed, np.inf))
        rho = shared / data.ideal_time
    active = np.asarray(data.active, dtype=bool)
    columns = {"work": work, "elapsed": elapsed, "ideal_rate": data.ideal_rate.astype(np.float64),
               "ideal_time": data.ideal_time.astype(np.float64), "lag": data.lag.astype(np.float64),
               "rate": np.asarray(rates, dtype=np.float64), "shared_time": shared, "rho": rho, "active": active,
               "bidder": np.asarray(data.is_bidder, dtype=bool)}
    return AgentTable(instance, columns, {"rho": ~active})


class _Log:
    """Every solve of one run: stage, level, status, values; totals of build and solver time."""

    def __init__(self):
        self.entries: list[dict] = []
        self.build_s = self.solve_s = 0.0
        self.routes: set[str] = set()

    def run(self, oracle, rho, stage, floor, time_limit, targets=None) -> _Outcome:
        out = oracle.solve(rho, stage, floor, time_limit, targets)
        self.build_s += out.build_s
        self.solve_s += out.solve_s
        self.routes.add(out.route)
        self.entries.append({"stage": stage, "rho": rho, "status": out.status, "objective": out.objective,
                             "bound": out.bound, "solve_s": out.solve_s})
        return out


def _fractional_search(log, oracle, data, instance, lo, hi, best, *, tol, clock, max_iterations):
    """Secant search on the LP value ``F(rho)``; returns ``(lo, hi, best, proven, timed_out)``."""
    bidders = data.bidders
    lag_b = data.lag[bidders]
    points: list[tuple[float, float]] = []
    widths: list[float] = []
    proven, timed_out = True, False
    rho = hi if math.isfinite(hi) else lo
    binding = None
    for _ in range(max_iterations):
        if _closed(lo, hi, tol):
            break
        if clock.out():
            timed_out = True
            break
        try:
            out = log.run(oracle, rho, "fair", None, clock.left())
        except NoSolutionError:  # stopped by the time limit before any solution
            timed_out = True
            break
        if out.status == "time_limit":
            timed_out = True
        elif out.status != "optimal":
            proven = False
        if out.amounts is not None:
            value = data.max_rho(instance, out.amounts)
            if value < hi:
                hi, best = value, out.amounts
            r = data.rates(instance, out.amounts)[bidders] / data.ideal_rate[bidders]
            slack = r - 1.0 / (rho - lag_b) - out.objective
            binding = lag_b[slack <= 1e-9 * max(1.0, abs(out.objective))]
        if out.bound is not None and math.isfinite(out.bound):
            lo = max(lo, _lo_from(rho, out.bound, lag_b))
        if timed_out:
            break
        points.append((rho, out.objective))
        widths.append(hi - lo)
        rho = _next_point(points, lo, hi, binding, widths) if math.isfinite(hi) else 2.0 * rho
    else:
        proven = proven and _closed(lo, hi, tol)
    return lo, hi, best, proven, timed_out


#: Margin of a bisection probe: it asks ``r_i >= (1 + KAPPA) / (rho - a_i)``, above the MILP's
#: relative row tolerance (1e-6), so an allocation it finds truly reaches ``rho``.
KAPPA = 3e-6
#: Relative width below which two rates count as equal when the descent probe looks for a better one.
TIE = 1e-9


def next_rates(instance: Instance, data: ThemisData, floor: np.ndarray, *, node_limit: int = 20000) -> np.ndarray:
    """For each bidder ``i``: the least rate ``r_i = X_i / X^id_i`` above ``floor[i]`` that an
    integral allocation can give it alone (``<= d_i`` devices, ``<= k_c`` of pool ``c``);
    ``inf`` if none; NaN when the enumeration would pass ``node_limit`` nodes.

    Depth-first over the pools in decreasing rate, pruned when the partial sum already
    exceeds the best found or cannot exceed ``floor[i]``.

    >>> import laissez_opt as lo, numpy as np
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2), lo.Pool("Q", count=2)], agents=[lo.Agent("A", demand=2)],
    ...                    edges=[lo.Edge("A", "P", 3.0), lo.Edge("A", "Q", 2.0)])
    >>> d = themis_data(inst)  # X^id = 5: the share holds 4 devices, scaled to d = 2
    >>> next_rates(inst, d, np.array([0.8])).tolist()   # rates 0.4, 0.6, 0.8, 1.0, 1.2
    [1.0]
    """
    u = instance.edge_utility[:, 0]
    out = np.empty(data.bidders.size)
    by_agent: dict[int, list[int]] = {}
    for e, i in enumerate(instance.edge_agent.tolist()):
        if u[e] > 0:
            by_agent.setdefault(i, []).append(e)
    for row, i in enumerate(data.bidders.tolist()):
        edges = by_agent.get(i, [])
        vals = [u[e] / data.ideal_rate[i] for e in edges]
        caps = [int(instance.counts[instance.edge_pool[e]]) for e in edges]
        order = sorted(range(len(vals)), key=lambda k: -vals[k])
        vals = [vals[k] for k in order]
        caps = [caps[k] for k in order]
        d = instance.demands[i]
        d = sum(caps) if not math.isfinite(d) else int(min(d, sum(caps)))
        target = float(floor[row])
        best = math.inf
        nodes = 0
        # stack of (pool index, devices used, partial sum)
        stack = [(0, 0, 0.0)]
        while stack:
            c, used, total = stack.pop()
            nodes += 1
            if nodes > node_limit:
                best = math.nan
                break
            if total > target:
                best = min(best, total)
                continue
            if c == len(vals) or total >= best:
                continue
            room, reach = d - used, total
            for k in range(c, len(vals)):  # the most the remaining pools can add
                take = min(room, caps[k])
                reach += take * vals[k]
                room -= take
            if reach <= target:
                continue
            for n in range(min(caps[c], d - used), -1, -1):
                stack.append((c + 1, used + n, total + n * vals[c]))
        out[row] = best
    return out


def _integral_search(log, oracle, data, instance, lo, hi, best, *, tol, clock, max_iterations, hint=None):
    """Feasibility ILPs (``probe``), alternating two kinds:

    * bisection: at ``rho`` in the middle of ``[lo, hi]``, rows ``r_i >= (1 + KAPPA) / (rho - a_i)``;
      infeasible proves ``rho* >= min_i a_i + (rho - a_i) / (1 + KAPPA)``, feasible gives an
      allocation with ``max rho < rho``;
    * descent: rows ``r_i >= nu_i``, the next rate above ``(1 + TIE)/(hi - a_i)`` an integral
      allocation can give (:func:`next_rates`); infeasible proves ``hi`` optimal up to ``TIE``
      (an allocation beating ``hi`` by more gives every bidder a rate above that floor, hence
      at least ``nu_i``), feasible improves ``hi``.

    ``hint`` (a guess of ``rho*``, such as the previous round's optimum in a simulation) adds one
    exact probe first, rows ``r_i >= nu_i`` with ``nu_i`` the next rate above ``(1 - TIE)/(hint - a_i)``:
    feasible brings ``hi`` to at most ``hint`` and the search goes on with a descent, infeasible
    lifts ``lo`` to about ``hint``.  Either way the bracket stays certified, so the hint changes
    how many probes the search needs, never what it proves.

    Returns ``(lo, hi, best, proven, timed_out)``."""
    bidders = data.bidders
    lag_b = data.lag[bidders]
    proven, timed_out = True, False
    first = used = 0
    # lo may sit a rounding below an optimum that equals the LP bound: probe such a hint too.
    if hint is not None and lo * (1 - 2 * TIE) <= hint < hi and not clock.out():
        floor = (1 - TIE) / (hint - lag_b)
        targets = next_rates(instance, data, floor)
        if np.all(np.isfinite(targets)):  # NaN: too many combinations; inf: hint below some bidder's best
            used = 1
            try:
                out = log.run(oracle, hint, "probe", None, clock.left(), targets)
            except NoSolutionError:
                return lo, hi, best, proven, True
            if out.status == "infeasible":
                lo = max(lo, float(np.min(lag_b + 1.0 / floor)))
            elif out.amounts is not None:
                if out.status == "time_limit":
                    return lo, hi, best, proven, True
                proven = proven and out.status == "optimal"
                amounts = np.round(out.amounts)
                value = data.max_rho(instance, amounts)
                if value < hi:
                    hi, best = value, amounts
                    first = 1  # next: the descent probe at the new hi
    for k in range(first, first + max_iterations - used):
        if _closed(lo, hi, tol):
            break
        if clock.out():
            timed_out = True
            break
        if k % 2 == 1 or hi - lo <= 4 * KAPPA * hi:  # a margin probe cannot narrow further
            rho = hi
            # Rates within TIE of 1/(hi - a_i) count as equal to it (rounding of hi = a_j + 1/r_j).
            floor = (1 + TIE) / (hi - lag_b)
            targets = next_rates(instance, data, floor)
            if np.any(np.isnan(targets)):  # too many combinations to enumerate: a margin probe below hi
                if hi - lo <= 8 * KAPPA * hi:
                    break  # as narrow as margin probes can prove; the gap decides the status
                rho = max(hi * (1 - 4 * KAPPA), lo + 0.5 * (hi - lo))
                targets = (1 + KAPPA) / (rho - lag_b)
            exact = rho == hi
        else:
            rho = lo + 0.5 * (hi - lo)
            targets = (1 + KAPPA) / (rho - lag_b)
            exact = False
        if not np.all(np.isfinite(targets)):  # a bidder cannot do better alone: hi is optimal
            lo = hi
            break
        try:
            out = log.run(oracle, rho, "probe", None, clock.left(), targets)
        except NoSolutionError:  # stopped by the time limit before deciding feasibility
            timed_out = True
            break
        if out.status == "infeasible":
            lo = max(lo, float(np.min(lag_b + 1.0 / (floor if exact else targets))))
            continue
        if out.amounts is None:
            timed_out = timed_out or out.status == "time_limit"
            proven = False
            break
        if out.status == "time_limit":
            timed_out = True
        elif out.status != "optimal":
            proven = False
        amounts = np.round(out.amounts)
        value = data.max_rho(instance, amounts)
        if value < hi:
            hi, best = value, amounts
        elif exact:  # the solver's tolerance accepted a rate just short of nu_i: no progress possible
            proven = False
            break
        if timed_out:
            break
    else:
        proven = proven and _closed(lo, hi, tol)
    return lo, hi, best, proven, timed_out


class _Clock:
    def __init__(self, time_limit):
        # Inside lo.solve the run's deadline also counts the time spent before this point.
        self.start, self.limit = time.perf_counter(), remaining(time_limit)

    def left(self):
        if self.limit is None:
            return None
        return max(self.limit - (time.perf_counter() - self.start), 1e-3)

    def out(self) -> bool:
        return self.limit is not None and time.perf_counter() - self.start >= self.limit


def _equal_share(instance: Instance) -> np.ndarray:
    """The weighted equal share scaled to the demands, as an ``E``-vector (it reaches every ``r_i = 1``)."""
    share = instance.weights / instance.weights.sum()
    k = instance.counts[instance.edge_pool].astype(np.float64)
    held = share * np.bincount(instance.edge_agent, weights=k, minlength=instance.n_agents)
    demand = instance.demands
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(held > demand, demand / np.where(held > 0, held, 1.0), 1.0)
    return (scale * share)[instance.edge_agent] * k


def _placement_amounts(instance: Instance, where: dict[int, int]) -> np.ndarray:
    """One device per placed agent, as an ``E``-vector."""
    edge_of = {(i, c): e for e, (i, c) in enumerate(zip(instance.edge_agent.tolist(), instance.edge_pool.tolist()))}
    amounts = np.zeros(instance.n_edges)
    for i, c in where.items():
        amounts[edge_of[(i, c)]] += 1.0
    return amounts


def bipartite_rounding(instance: Instance, data: ThemisData, amounts: np.ndarray) -> np.ndarray | None:
    """A feasible fractional allocation rounded edge by edge, agent and pool totals kept within one device.

    Every ``y_{i,c}`` lies in ``[floor x_{i,c}, ceil x_{i,c}]``, each agent's total in
    ``[floor, ceil]`` of ``sum_c x_{i,c}`` (and within ``d_i``), each pool's in ``[floor, ceil]`` of
    ``sum_i x_{i,c}`` (and within ``k_c``).  The constraint matrix is a bipartite incidence
    matrix, totally unimodular, and ``x`` itself is feasible, so a vertex of this polytope is
    integral (the bipartite rounding theorem); the LP picks the vertex with the largest sum of
    ``u_{i,c} / X^id_i``, weighted by ``1 / r_i`` of ``x`` (bidders with small rates first).
    None when the LP fails or its vertex is not integral within ``1e-6``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=1), lo.Pool("Q", count=1)],
    ...                    [lo.Agent("A", work=1.0), lo.Agent("B", work=1.0)],
    ...                    [lo.Edge("A", "P", 2.0), lo.Edge("A", "Q", 1.0), lo.Edge("B", "P", 1.0),
    ...                     lo.Edge("B", "Q", 1.0)])
    >>> float(bipartite_rounding(inst, themis_data(inst), np.array([0.5, 0.5, 0.5, 0.5])).sum())
    2.0
    """
    x = np.maximum(np.asarray(amounts, dtype=np.float64), 0.0)
    low, high = np.floor(x + 1e-9), np.ceil(x - 1e-9)
    high = np.maximum(high, low)
    agent_total = np.bincount(instance.edge_agent, weights=x, minlength=instance.n_agents)
    pool_total = np.bincount(instance.edge_pool, weights=x, minlength=instance.n_pools)
    model = LinearModel("themis-rounding", sense="max")
    y = model.add_variables("y", instance.n_edges, lower=low, upper=high)
    edges = np.arange(instance.n_edges)
    a_hi = np.minimum(np.ceil(agent_total - 1e-9), np.floor(instance.demands + 1e-9))
    p_hi = np.minimum(np.ceil(pool_total - 1e-9), instance.counts.astype(np.float64))
    model.add_constraints("agent", rows=instance.edge_agent, cols=y.columns(edges), coefs=np.ones(edges.size),
                          lower=np.minimum(np.floor(agent_total + 1e-9), a_hi), upper=a_hi, n_rows=instance.n_agents)
    model.add_constraints("pool", rows=instance.edge_pool, cols=y.columns(edges), coefs=np.ones(edges.size),
                          lower=np.minimum(np.floor(pool_total + 1e-9), p_hi), upper=p_hi, n_rows=instance.n_pools)
    rate = data.rates(instance, x) / np.where(data.ideal_rate > 0, data.ideal_rate, 1.0)
    urgency = np.where(data.is_bidder & (rate > 0), 1.0 / np.where(rate > 0, rate, 1.0), 0.0)
    urgency = np.where(data.is_bidder & (rate <= 0), 1e3, urgency)
    gain = instance.edge_utility[:, 0] / np.where(data.ideal_rate > 0, data.ideal_rate, 1.0)[instance.edge_agent]
    model.set_objective(y, gain * urgency[instance.edge_agent] + 1e-6)
    try:
        sol = solve_model(model, solver="highs")
    except NoSolutionError:
        return None
    if sol.status != "optimal" or sol.values is None:
        return None
    out = sol.values[y.slice]
    if np.max(np.abs(out - np.round(out)), initial=0.0) > 1e-6:
        return None
    return np.round(out)


#: Largest ``n x m`` for the (agent, pool) edge table of :func:`improve_by_moves`.
_MOVE_TABLE_MAX = 50_000_000


def improve_by_moves(instance: Instance, data: ThemisData, amounts: np.ndarray, *, max_steps: int = 5000,
                     seconds: float | None = None) -> np.ndarray:
    """Lower ``max_B rho_i`` of a feasible integral allocation by single-device moves.

    Repeatedly, for the bidder ``w`` with the largest ``rho_w``: the best of (a) taking one
    device of a pool ``c`` from another agent ``j`` (within ``d_w``), and (b) swapping one of
    ``w``'s devices of pool ``c'`` for one of ``j``'s devices of pool ``c`` (``j`` must value
    ``c'``; totals unchanged), judged by ``max(rho_w', rho_j')`` (non-bidders' ``rho`` does not
    count); a move is made only if that is below ``rho_w``.  Every move keeps every
    ``capacity`` and ``demand`` row.  Stops when no move helps, after ``max_steps`` moves or
    ``seconds``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("V", count=1), lo.Pool("K", count=1)],
    ...                    [lo.Agent("A", demand=1, work=1.0), lo.Agent("B", demand=1, work=1.0)],
    ...                    [lo.Edge("A", "V", 4.0), lo.Edge("A", "K", 1.0), lo.Edge("B", "V", 1.0),
    ...                     lo.Edge("B", "K", 1.0)])
    >>> data = themis_data(inst)
    >>> x = np.array([0.0, 1.0, 1.0, 0.0])            # A on the K80, B on the V100
    >>> improve_by_moves(inst, data, x).tolist()       # the swap: A takes V, B takes K
    [1.0, 0.0, 0.0, 1.0]
    """
    n, m = instance.n_agents, instance.n_pools
    x = np.asarray(amounts, dtype=np.float64).copy()
    if data.bidders.size == 0 or n * m > _MOVE_TABLE_MAX:
        return x
    stop = None if seconds is None else time.perf_counter() + seconds
    ea, ep, u = instance.edge_agent, instance.edge_pool, instance.edge_utility[:, 0]
    table = np.full((n, m), -1, dtype=np.int64)
    table[ea, ep] = np.arange(instance.n_edges)
    by_pool = [np.flatnonzero(ep == c) for c in range(m)]
    rate = data.rates(instance, x)
    held = np.bincount(ea, weights=x, minlength=n)
    ideal, lag, bidder = data.ideal_rate, data.lag, data.is_bidder
    bidders = data.bidders

    def rho_of(agents, r):
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(r > 1e-12, lag[agents] + ideal[agents] / np.where(r > 1e-12, r, 1.0), np.inf)
        return np.where(bidder[agents], out, -np.inf)

    for _ in range(max_steps):
        if stop is not None and time.perf_counter() > stop:
            break
        rho_b = rho_of(bidders, rate[bidders])
        w = int(bidders[int(np.argmax(rho_b))])
        current = float(rho_b.max())
        best = (current * (1 - 1e-12), None)
        mine = [c for c in range(m) if table[w, c] >= 0 and x[table[w, c]] >= 1 - 1e-9]
        for c in range(m):
            e_w = table[w, c]
            if e_w < 0 or u[e_w] <= 0:
                continue
            H = by_pool[c]
            H = H[(x[H] >= 1 - 1e-9) & (ea[H] != w)]
            if H.size == 0:
                continue
            j = ea[H]
            lose = rate[j] - u[H]
            if held[w] + 1 <= instance.demands[w] + 1e-9:  # (a) take one device of c from j
                rho_w = float(rho_of(np.array([w]), np.array([rate[w] + u[e_w]]))[0])
                value = np.maximum(rho_w, rho_of(j, lose))
                k = int(np.argmin(value))
                if value[k] < best[0]:
                    best = (float(value[k]), ("take", int(H[k]), e_w, -1, -1))
            for c2 in mine:  # (b) swap w's device of c2 for j's device of c
                if c2 == c:
                    continue
                e_w2 = table[w, c2]
                e_j2 = table[j, c2]
                ok = e_j2 >= 0
                ok[ok] = u[e_j2[ok]] > 0  # j takes only a device it values
                if not ok.any():
                    continue
                rho_w = float(rho_of(np.array([w]), np.array([rate[w] + u[e_w] - u[e_w2]]))[0])
                gain = np.where(ok, u[np.where(ok, e_j2, 0)], 0.0)
                value = np.where(ok, np.maximum(rho_w, rho_of(j, lose + gain)), np.inf)
                k = int(np.argmin(value))
                if value[k] < best[0]:
                    best = (float(value[k]), ("swap", int(H[k]), e_w, int(e_w2), int(e_j2[k])))
        move = best[1]
        if move is None:
            break
        kind, e_j, e_w, e_w2, e_j2 = move
        j = int(ea[e_j])
        x[e_j] -= 1.0
        x[e_w] += 1.0
        rate[j] -= u[e_j]
        rate[w] += u[e_w]
        if kind == "take":
            held[w] += 1.0
            held[j] -= 1.0
        else:
            x[e_w2] -= 1.0
            x[e_j2] += 1.0
            rate[w] -= u[e_w2]
            rate[j] += u[e_j2]
    return x


def rounded_incumbent(instance: Instance, data: ThemisData, base: np.ndarray | None) -> np.ndarray:
    """A feasible integral allocation with a small ``max_B rho_i``: ``base`` rounded down, then filled.

    ``floor`` of a feasible (fractional) allocation keeps every ``capacity`` and
    ``demand`` row.  Then, repeatedly, the bidder with the largest ``rho_i`` (``inf``
    without a rate) takes one more device of its most useful pool with a free device,
    within its demand; the fill stops when that bidder can take none (``max rho`` can
    then fall no further by adding devices), when a device leaves its ``rho_i`` where it
    was (a utility too small to register in its rate), or when no device is free.  A
    bidder left alone takes its best pool's devices at once, up to its demand, as the
    one-by-one fill would; the time limit is looked at every 4,096 devices.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", work=1.0), lo.Agent("B", work=1.0)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> data = themis_data(inst)
    >>> rounded_incumbent(inst, data, np.array([0.5, 1.5])).tolist()   # floor gives A nothing: A first
    [1.0, 1.0]
    """
    import heapq

    x = np.zeros(instance.n_edges) if base is None else np.floor(np.maximum(np.asarray(base, float), 0.0) + 1e-9)
    free = instance.counts.astype(np.float64) - np.bincount(instance.edge_pool, weights=x, minlength=instance.n_pools)
    room = instance.demands - np.bincount(instance.edge_agent, weights=x, minlength=instance.n_agents)
    if np.any(free < -1e-9) or np.any(room < -1e-9):  # not a feasible base: start from nothing
        return rounded_incumbent(instance, data, None)
    u = instance.edge_utility[:, 0]
    order = np.lexsort((-u, instance.edge_agent))
    order = order[u[order] > 0]
    starts = np.searchsorted(instance.edge_agent[order], np.arange(instance.n_agents + 1))
    rate = data.rates(instance, x)

    def rho(i: int) -> float:
        # Python floats: a rate below 1/DBL_MAX of the ideal (a subnormal utility) gives 1/r = inf
        # quietly, the same rho as no rate at all.
        r = float(rate[i] / data.ideal_rate[i])
        return math.inf if r <= 0 else float(data.lag[i]) + 1.0 / r

    heap = [(-rho(i), i) for i in data.bidders.tolist()]
    heapq.heapify(heap)
    steps = 0
    while heap:
        worst, i = heapq.heappop(heap)
        if room[i] < 1 - 1e-9:
            break
        cols = order[starts[i]:starts[i + 1]]
        usable = cols[free[instance.edge_pool[cols]] >= 1 - 1e-9]
        if usable.size == 0:
            break  # the worst bidder can take nothing more
        e = int(usable[0])
        # Alone in the heap, the bidder would take this pool's devices one by one up to its room:
        # take them at once (pools may hold billions of devices).
        take = 1.0
        if not heap:
            take = float(math.floor(min(free[instance.edge_pool[e]], room[i]) + 1e-9))
        x[e] += take
        free[instance.edge_pool[e]] -= take
        room[i] -= take
        rate[i] += take * u[e]
        if -rho(i) <= worst:
            break  # devices too small to register in the rate: max rho cannot fall any further
        heapq.heappush(heap, (-rho(i), i))
        steps += 1
        if steps % 4096 == 0:
            check_deadline("filling the rounded Themis incumbent")
    return x


def solve_themis(
    instance: Instance,
    *,
    fractional: bool = False,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    fairness_knob: float = 0.0,
    tolerance: float = TARGET,
    max_iterations: int = 200,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
    compress: str = "auto",
    state: dict | None = None,
    partitions=None,
    partition_seed: int = 0,
    capacity_split: str = "equal",
    executor: str = "inline",
    workers: int | None = None,
    scheduler: str | None = None,
) -> Result:
    """Minimise ``max_{i in B} rho_i`` and make the rest work-conserving; see the module docstring.

    ``partitions`` and the other partition options: the partitioned solve of ``lo.solve``
    (:mod:`laissez_opt.partition`); this entry point solves the whole instance and refuses them.

    Fractional mode: a safeguarded secant search on the LP value ``F(rho)``
    (HiGHS: one model, warm-started re-solves).  Integral mode: the same search
    on the LP relaxation gives a lower bound, the placement that selected the
    bidders an upper bound, and feasibility ILPs bisect between them.  Then the
    second stage holds every bidder at ``rho_i <= hi``.

    Returns that allocation; ``objective`` is its ``max_B rho_i``, ``bound`` the
    certified lower bound ``lo`` and ``gap = (objective - lo) / objective``.
    The status is ``optimal`` only when the gap is at most ``1e-6`` and every
    solve of the search was proven (optimal, or infeasible for a probe);
    ``time_limit`` when the time ran out.  ``details`` holds ``agents`` (each
    agent's ``rho``, ``ideal_time`` ``T_id``, ``shared_time`` ``T_sh``,
    ``ideal_rate`` ``X^id``, rate, lag and flags), ``bidders`` (priority
    order), ``bracket``, the solve counts and times.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2)],
    ...                    agents=[lo.Agent("A", work=4.0, elapsed=1.0), lo.Agent("B", work=2.0)],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> r = solve_themis(inst)
    >>> r.objective, r.details["agents"]["A"]["rho"], r.details["agents"]["B"]["rho"]
    (1.25, 1.25, 1.0)

    ``compress`` (fractional mode with ``fairness_knob = 0``, where every active
    agent bids): solve on classes of agents with identical edges, weight,
    demand, work and elapsed time (:mod:`laissez_opt.exact.classes`): class ``g``
    has weight ``n_g w``, demand ``n_g d`` and work ``n_g W``, so its ``X^id``, rate
    and ``rho`` under the even split are each member's, while the second stage
    weighs its welfare by the member weight ``w`` (``models/compression.md``).

    ``state`` (integral mode): the ``details["state"]`` of an earlier run, ``{"rho": rho*}``,
    which a simulation hands from one round to the next.  Its ``rho*`` is probed first
    (see :func:`_integral_search`); when consecutive rounds share their optimum, as they
    mostly do under a steady load, the search then needs two probes instead of six to
    ten.  The bracket stays certified, so the optimum found does not depend on the state.
    """
    refuse_partitions("themis", partitions)
    hint = _hint(read_state(state, "themis", ["rho"]))
    if compress not in COMPRESS_CHOICES:
        raise InputError(f"unknown compress {compress!r}; choose one of {', '.join(COMPRESS_CHOICES)}",
                         path="option compress")
    kwargs = dict(solver=solver, via=via, time_limit=time_limit, fairness_knob=fairness_knob, tolerance=tolerance,
                  max_iterations=max_iterations, threads=threads, mip_gap=mip_gap, verbose=verbose, backend=backend)
    if fractional and fairness_knob == 0 and instance.rounds == 1:
        work, elapsed = work_and_elapsed(instance)
        out = solve_on_classes(
            instance, compress,
            lambda small, classes: _solve_themis(small, fractional=True,
                                                 welfare_weight=instance.weights[classes.representative], **kwargs),
            keys=(work, elapsed), weight="total", work=True, members=("bidders",))
        if out is not None:
            if out.amounts is not None:
                data = themis_data(instance, fractional=True, fairness_knob=fairness_knob)
                out.details["agents"] = finish_times(instance, data, out.amounts[:, 0])
                out.details["candidates"] = int(data.candidates.size)
            return out
    relaxed, relax_s = None, 0.0
    if not fractional and fairness_knob == 0 and instance.rounds == 1 and compress != "off":
        t0 = time.perf_counter()
        relaxed = _relaxation_on_classes(instance, compress, kwargs)
        relax_s = time.perf_counter() - t0
        if relaxed is not None and time_limit is not None:
            kwargs["time_limit"] = max(time_limit - relax_s, 1e-3)
    result = _solve_themis(instance, fractional=fractional, hint=hint, relaxed=relaxed, **kwargs)
    if relaxed is not None:
        result.details["relaxation"] = f"LP relaxation solved on classes of identical agents in {relax_s:.3f} s"
        result.timing["build_s"] = result.timing.get("build_s", 0.0) + relax_s
    return result


def _lp_oracle(instance: Instance, lp_data: ThemisData, solver: str, via: str, options: dict):
    """The LP evaluations' oracle: one persistent highspy model (``highs``/``direct``), else a route."""
    if solver == "highs" and via == "direct":
        try:
            return _HighsSession(instance, lp_data, **options)
        except ImportError:  # pragma: no cover - a highs route without the array lowering
            pass
    return _Route(instance, lp_data, solver=solver, via=via, options=options)


def _relaxation_on_classes(instance: Instance, compress: str, kwargs: dict) -> tuple[float, np.ndarray] | None:
    """Integral mode's LP relaxation ``(lo, x)`` by the compressed fractional solve, when it is the same LP.

    With ``fairness_knob = 0`` and every candidate bidding (each can hold a device at
    once), the integral bidders are the fractional ones, so the relaxation is the
    fractional Themis problem, whose class solve is exact (``models/compression.md``);
    its certified ``lo`` bounds the integral ``rho*`` below.  None when the classes do
    not pay, some candidate does not bid, or the solve gave no bound.
    """
    from .classes import classes_if_wanted

    work, elapsed = work_and_elapsed(instance)
    if classes_if_wanted(instance, compress, (work, elapsed))[0] is None:
        return None
    data = themis_data(instance, fractional=False, fairness_knob=0.0)
    if data.bidders.size == 0 or data.bidders.size != data.candidates.size:
        return None
    limit = remaining(kwargs.get("time_limit"))
    options = {**kwargs, "time_limit": None if limit is None else 0.3 * limit}
    try:
        out = solve_on_classes(
            instance, compress,
            lambda small, classes: _solve_themis(small, fractional=True, second_stage=False,
                                                 welfare_weight=instance.weights[classes.representative], **options),
            keys=(work, elapsed), weight="total", work=True, members=("bidders",))
    except (NoSolutionError, TimeLimitReached):
        return None
    if out is None:
        return None
    if out.bound is None or out.amounts is None or not math.isfinite(out.bound):
        return None
    return float(out.bound), out.amounts[:, 0]


def _hint(state: dict | None) -> float | None:
    if state is None:
        return None
    rho = state["rho"]
    if rho is None:
        return None
    if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho <= 0:
        raise InputError(f"themis state's rho must be a positive finite number or null, got {rho!r}", path="state.rho")
    return float(rho)


def _solve_themis(
    instance: Instance,
    *,
    fractional: bool,
    solver: str,
    via: str,
    time_limit: float | None,
    fairness_knob: float,
    tolerance: float,
    max_iterations: int,
    threads: int | None,
    mip_gap: float,
    verbose: bool,
    backend: str | None,
    welfare_weight: np.ndarray | None = None,
    hint: float | None = None,
    relaxed: tuple[float, np.ndarray] | None = None,
    second_stage: bool = True,
) -> Result:
    """:func:`solve_themis` on ``instance``; ``welfare_weight`` replaces the weights of the second
    stage's welfare (a class instance weighs it by the member weight ``w``, not ``n_g w``); ``relaxed``
    (integral mode): the LP relaxation's certified lower bound and allocation, already solved;
    ``second_stage=False`` stops after the first stage (a bound is all the caller needs)."""
    clock = _Clock(time_limit)
    options = {"threads": threads, "mip_gap": mip_gap, "verbose": verbose, "backend": backend}
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance <= 0.5:
        raise InputError(f"tolerance must be in (0, 0.5], got {tolerance!r}", path="option tolerance")
    data = themis_data(instance, fractional=fractional, fairness_knob=fairness_knob)
    data.welfare_weight = welfare_weight
    bidders = data.bidders
    lag_b = data.lag[bidders]
    route = _Route(instance, data, solver=solver, via=via, options=options)
    lp_data = data if fractional else dataclasses.replace(data, fractional=True)
    log = _Log()
    search = dict(tol=tolerance, clock=clock, max_iterations=max_iterations)

    proven, timed_out = True, False
    lo = hi = 0.0
    best = None
    frac_lo = None
    lp_oracle = None
    if bidders.size:
        # Each bidder's best rate alone bounds rho below; the equal share reaches every r_i = 1.
        lo = float(np.max(lag_b + data.ideal_rate[bidders] / data.best_rate[bidders]))
        share = _equal_share(instance)
        if not fractional:
            # The placement that chose the bidders: an incumbent before any solve, whatever the time left.
            _, where = select_bidders(instance, data.candidates, placement=True)
            placed = _placement_amounts(instance, {i: where[i] for i in bidders.tolist()})
            best = min((placed, rounded_incumbent(instance, data, placed)), key=lambda a: data.max_rho(instance, a))
            hi = data.max_rho(instance, best)
        try:
            if relaxed is not None and not fractional:  # the LP relaxation, solved on classes
                lo_f, best_f = relaxed
            else:
                lp_oracle = _lp_oracle(instance, lp_data, solver, via, options)
                lo_f, hi_f, best_f, proven_f, timed_f = _fractional_search(
                    log, lp_oracle, data, instance, lo, data.max_rho(instance, share), share, **search)
            if fractional:
                lo, hi, best, proven, timed_out = lo_f, hi_f, best_f, proven_f, timed_f
            else:
                frac_lo = lo = max(lo, lo_f)
                # The incumbent: the better of the placement and the rounded fractional optimum, each filled.
                if best_f is not None:
                    paired = bipartite_rounding(instance, data, best_f)
                    for base in (best_f,) if paired is None else (best_f, paired):
                        rounded = rounded_incumbent(instance, data, base)
                        if data.max_rho(instance, rounded) < hi:
                            best, hi = rounded, data.max_rho(instance, rounded)
                left = clock.left()
                moved = improve_by_moves(instance, data, best, seconds=5.0 if left is None else min(5.0, 0.1 * left))
                if data.max_rho(instance, moved) < hi:
                    best, hi = moved, data.max_rho(instance, moved)
                lo, hi, best, proven, timed_out = _integral_search(log, route, data, instance, lo, hi, best,
                                                                    hint=hint, **search)
        except TimeLimitReached:  # the run's deadline passed while a model was being built
            timed_out = True
            if fractional and best is None:
                best, hi = share, data.max_rho(instance, share)

    # Second stage: bidders held at rho_i <= hi; the others' welfare first, then everyone's.
    final = best if best is not None else np.zeros(instance.n_edges)
    hold = hi * (1 + HOLD) if bidders.size else None
    welfare_weight = instance.weights if data.welfare_weight is None else data.welfare_weight
    others_weight = np.where(~data.is_bidder & data.active, welfare_weight, 0.0)[instance.edge_agent]
    others_weight = others_weight * instance.edge_utility[:, 0]

    def accepted(out):
        """The stage's allocation (rounded in integral mode) if it keeps every bidder at rho_i <= hi."""
        if out is None or out.amounts is None or out.status == "infeasible":
            return None
        amounts = out.amounts if fractional else np.round(out.amounts)
        if bidders.size and data.max_rho(instance, amounts) > hi * (1 + ACCEPT):
            return None
        return amounts

    stage_status = "skipped (time limit)" if second_stage else "skipped (bound only)"
    if second_stage and not clock.out():
        try:
            oracle = (lp_oracle or _lp_oracle(instance, lp_data, solver, via, options)) if fractional else route
            floor, fallback = None, None
            if np.any(others_weight > 0):
                fallback = accepted(log.run(oracle, hold, "others", None, clock.left()))
                if fallback is not None:
                    value = float(others_weight @ fallback)
                    floor = value - 1e-7 * max(1.0, abs(value))
            second = None if clock.out() else log.run(oracle, hold, "welfare", floor, clock.left())
            amounts = accepted(second)
            if amounts is not None:
                final, stage_status = amounts, second.status
            elif fallback is not None:
                final, stage_status = fallback, "others only (the all-agents welfare solve failed)"
            else:
                stage_status = "failed"
        except (NoSolutionError, TimeLimitReached) as exc:
            stage_status = f"failed ({exc})"

    objective = data.max_rho(instance, final) if bidders.size else 0.0
    bound = min(lo, objective)
    gap = 0.0 if objective == bound else (objective - bound) / max(abs(objective), 1e-12)
    if gap <= PROVEN and proven:
        status = "optimal"
    elif timed_out or clock.out():
        status = "time_limit"
    else:
        status = "feasible"
    ids = [a.id for a in instance.agents]
    entries = log.entries
    details = {
        "objective": "max rho_i over the bidders, rho_i = (t_i + W_i / X_i) / (W_i / X^id_i)",
        "bidders": [ids[i] for i in bidders.tolist()],
        "candidates": int(data.candidates.size),
        "fairness_knob": data.fairness_knob,
        "bracket": [bound, objective],
        "fractional_bound": frac_lo,
        "work_conserving": stage_status,
        "solves": len(entries),
        "statuses": {s: sum(1 for e in entries if e["status"] == s) for s in sorted({e["status"] for e in entries})},
        "solver_s": log.solve_s,
        "search": entries if len(entries) <= 60 else entries[:30] + entries[-30:],
        "agents": finish_times(instance, data, final),
    }
    if not fractional:
        details["state"] = {"rho": objective if bidders.size else None}
    message = ""
    if not bidders.size:
        message = "no agent has positive work and a positive ideal rate: nothing to schedule fairly"
    elif stage_status.startswith("others only"):
        message = "second stage: the all-agents welfare solve failed; the others-first allocation is returned"
    elif stage_status not in ("optimal", "feasible", "time_limit"):
        message = f"second (work-conserving) stage {stage_status}; the first stage's allocation is returned"
    solution = Solution(
        status, np.asarray(final, dtype=np.float64), objective, bound, gap, solver,
        " + ".join(sorted(log.routes)) if log.routes else "none",
        log.build_s, log.solve_s, status, message,
    )
    params = {"time_limit": time_limit, "fractional": fractional, "via": via, "fairness_knob": data.fairness_knob,
              "tolerance": tolerance}
    return allocation_result(instance, "themis", _EdgeColumns(instance), solution, fractional=fractional,
                             params=params, details=details, fit_capacity=True)


class _EdgeColumns:
    """Amounts given as an ``E``-vector (one round): the view :func:`allocation_result` reads."""

    def __init__(self, instance: Instance):
        self.instance = instance

    def amounts(self, solution: Solution) -> np.ndarray:
        return solution.values.reshape(self.instance.n_edges, 1)


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """``F(rho)``, the model ``lo.build(instance, "themis", ...)`` exports, at option ``rho`` or at the optimum.

    Without ``rho`` the method is solved first (with the given options) and
    its ``rho*`` is used: the exported model's optimum ``F(rho*)`` is then 0 up
    to the bracket's tolerance, which certifies ``rho*`` (a larger ``F`` would
    let every bidder finish earlier; a negative one would make ``rho*`` unreachable).
    """
    fractional = bool(options.get("fractional"))
    knob = options.get("fairness_knob", 0.0)
    rho = options.get("rho")
    if rho is None:
        keep = {k: v for k, v in options.items() if k in METHOD.option_names and v is not None}
        result = solve_themis(instance, **keep)
        if result.status == "infeasible" or result.objective is None:
            raise InputError(f"themis found no allocation on {instance.name!r} to take rho from; give rho",
                             path="option rho")
        rho = float(result.objective)
    data = themis_data(instance, fractional=fractional, fairness_knob=knob)
    lag = data.lag[data.bidders]
    if lag.size and not rho > float(np.max(lag)):
        raise InputError(f"rho must exceed every bidder's t_i / T_id,i (largest {float(np.max(lag)):.6g}), got {rho!r}",
                         path="option rho")
    return build_themis(instance, rho=rho, fractional=fractional, data=data)[0]


METHOD = Method(
    name="themis",
    kind="exact",
    objective="min max_{i in B} rho_i, rho_i = T_sh,i / T_id,i (finish-time fairness over the bidders B)",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Themis finish-time fairness: min max rho over the bidders, then work-conserving leftover; "
            "certified bracket on rho*.",
    run=solve_themis,
    options=solver_options(fractional=True) + (
        Option("fairness_knob", "float", 0.0, "Themis's f: only the ceil((1-f) n) agents with the worst rho bid",
               minimum=0, maximum=1),
        Option("tolerance", "float", TARGET, "relative width of the certified bracket on rho* at which the search stops",
               above=0, maximum=0.5),
        Option("max_iterations", "int", 200, "most LP/ILP evaluations of the bracket search", minimum=1, maximum=10**6),
        compress_option(),
        state_option("rho: an earlier optimum, probed first in integral mode"),
    ) + partition_options(),
    estimate=class_estimate(
        lambda instance, options: allocation_size(
            instance, extra_constraints=instance.n_agents, extra_nonzeros=instance.n_edges,
            note="one rho-feasibility model per evaluation"),
        applies=lambda instance, options: (bool(options.get("fractional")) and options.get("fairness_knob", 0) == 0
                                           and instance.rounds == 1),
        keys=work_and_elapsed, work=True),
    build=_export_model,
    build_options=(
        Option("rho", "float", None, "level rho of the exported model F(rho) (default: the optimum rho*, found by "
               "solving first)", above=0, nullable=True),
    ),
    exported="F(rho) = max delta s.t. every bidder's finish row r_i - delta >= 1/(rho - a_i): rho* is the root of F; "
             "at rho = rho* (the default) the optimum is 0",
)
