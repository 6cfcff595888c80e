"""Weighted welfare under fairness constraints (``fair_welfare``): the best allocation that is provably fair.

.. math::

    \\max_x \\sum_i w_i U_i(x) \\quad\\text{s.t.}\\quad x \\text{ feasible (capacity, demand, windows), and any of}

* ``sharing`` (option ``sharing = alpha``): ``U_i(x) >= alpha U_i^ex`` for every
  agent with ``U_i^ex > 0``, i.e. ``phi_i >= alpha`` (thesis 002, eqs. 3.3-3.4;
  ``alpha = 1`` is sharing incentive);
* ``envy`` (option ``envy = epsilon``): ``w_j U_i(X_i) - w_i U_i(X_j) >= -epsilon w_j``
  for every ordered pair ``i != j`` with ``U_i(X_j)`` not identically 0, i.e. the
  weighted envy ``e_ij = (w_i / w_j) U_i(X_j) - U_i(X_i)`` is at most ``epsilon``
  (eq. 3.5; ``epsilon = 0`` is weighted envy-freeness, as
  :mod:`laissez_opt.analysis.fairness` measures it);
* ``floor`` (option ``floor = tau``): ``U_i(x) >= tau w_i E_i`` for every agent
  that can get a positive utility, i.e. the max-min level ``min_i U_i / (w_i E_i)``
  is at least ``tau`` (``normalizer`` as in ``maxmin``: ``E_i = U_i^ex / w_i`` or 1).

``U_i(X_j) = sum_{c,r} u_{i,c,r} x_{j,c,r}`` over the pools ``i`` has an edge to:
agent ``j``'s bundle valued by ``i`` (whole bundle, demands not applied, as in
the thesis).  Fractional mode is an LP (time sharing), integral mode a MILP.
The fairness rows break the transportation structure, so no route relaxes
integrality.  When the constraints admit no allocation, the result has status
``infeasible`` and names an irreducible infeasible subset of the fairness rows
in ``details["conflict"]``: rows that together with capacity and demand admit no
allocation, while dropping any one of them leaves a feasible set.  It is found
by QuickXplain (Junker 2004), a divide-and-conquer deletion filter: ``O(k log(n/k))``
feasibility solves for ``k`` conflicting rows out of ``n``.

With no constraint chosen the model is ``welfare``.  ``models/fair_welfare.md``
states the formulation; ``laissez-opt frontier`` uses it for the price of fairness.

References: thesis 002, ch. 3 (SI, EF); Bertsimas, Farias & Trichakis,
"The price of fairness", Oper. Res. 59(1), 2011; Junker, "QuickXplain",
AAAI 2004; Chinneck, *Feasibility and Infeasibility in Optimization* (2008), ch. 6.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)])
>>> lo.solve(inst, "welfare").utilities
{'A': 1.8, 'B': 0.0}
>>> fair = lo.solve(inst, "fair_welfare", sharing=1.0)      # each gets at least its equal share
>>> fair.utilities, round(fair.objective, 9)
({'A': 0.9, 'B': 0.5}, 1.4)
>>> lo.solve(inst, "fair_welfare", sharing=1.5).details["conflict"]
['sharing["A"]', 'sharing["B"]']
"""

from __future__ import annotations

import json

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..method_spec import Method, Option, solver_options
from ..modeling import LinearModel, solve_model
from ..modeling.solution import relative_gap
from ..result import Result
from ..shares import equal_share_utilities
from .common import AllocationColumns, add_allocation, allocation_result, allocation_size

__all__ = ["FAMILIES", "build_fair_welfare", "solve_fair_welfare", "fair_welfare_size", "equal_share_start", "welfare_ceiling"]

#: The fairness constraint families, in declaration order.
FAMILIES = ("sharing", "envy", "floor")
NORMALIZERS = ("equal_share", "raw")
#: From this many rows an LP (``fractional=True``) runs HiGHS's interior point method with
#: crossover instead of its simplex default.  Measured on the sharing-incentive LP of the
#: uniform family (100 pools): 24,707 rows simplex 4.2 s, interior point 5.4 s; 49,314 rows
#: 19.4 s against 14.8 s; 98,371 rows simplex over 60 s, interior point 32.8 s.
INTERIOR_POINT_ROWS = 40_000


def _agent_terms(instance: Instance, columns: AllocationColumns):
    """Per agent: its columns, and per pool its edge (for ``U_i(X_j)``)."""
    n = instance.n_agents
    cols_of = [[] for _ in range(n)]
    for k, i in enumerate(columns.agent.tolist()):
        cols_of[i].append(k)
    edge_of = [dict() for _ in range(n)]
    for e, (i, c) in enumerate(zip(instance.edge_agent.tolist(), instance.edge_pool.tolist())):
        edge_of[i][c] = e
    return cols_of, edge_of


def _taking_part(instance: Instance, columns: AllocationColumns) -> np.ndarray:
    """Agents with a column of positive utility and positive upper bound (they can get a positive ``U_i``)."""
    u = instance.edge_utility[columns.edge, columns.round]
    useful = (u > 0) & (columns.block.upper > 0)
    return np.bincount(columns.agent[useful], minlength=instance.n_agents) > 0


def _labels(ids, keys) -> list[str]:
    return [name + "[" + ",".join(json.dumps(ids[k]) for k in key) + "]" for name, key in keys]


def build_fair_welfare(
    instance: Instance,
    *,
    fractional: bool = False,
    sharing: float | None = None,
    envy: float | None = None,
    floor: float | None = None,
    normalizer: str = "equal_share",
) -> tuple[LinearModel, AllocationColumns, dict[str, list[str]]]:
    """Declare the model; returns ``(model, allocation columns, row labels per fairness block)``.

    Blocks: ``x`` with ``capacity`` and ``demand`` (:func:`~laissez_opt.exact.common.add_allocation`),
    then ``sharing``, ``envy`` and ``floor`` for the options that are not None
    (module docstring).  Row labels read ``sharing["A"]``, ``envy["A","B"]``, ``floor["A"]``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> model, _, labels = build_fair_welfare(inst, sharing=1.0, envy=0.0, floor=0.5)
    >>> model.summary()["constraints"], labels["envy"]
    ({'demand': 0, 'capacity': 1, 'sharing': 2, 'envy': 2, 'floor': 2}, ['envy["A","B"]', 'envy["B","A"]'])
    """
    for name, value in (("sharing", sharing), ("envy", envy), ("floor", floor)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0
                                  or not np.isfinite(value)):
            raise InputError(f"{name} must be a finite number >= 0 or null, got {value!r}", path=f"option {name}")
    if normalizer not in NORMALIZERS:
        raise InputError(f"unknown normalizer {normalizer!r}; choose one of {', '.join(NORMALIZERS)}",
                         path="option normalizer")
    model = LinearModel("fair_welfare", sense="max")
    columns = add_allocation(model, instance, integral=not fractional)
    x = columns.block
    u = instance.edge_utility[columns.edge, columns.round]
    w = instance.weights
    model.set_objective(x, w[columns.agent] * u)
    ids = [a.id for a in instance.agents]
    labels: dict[str, list[str]] = {}
    cols_of, edge_of = _agent_terms(instance, columns)
    share = equal_share_utilities(instance)

    def utility_rows(agents):
        rows, cols, coefs = [], [], []
        for k, i in enumerate(agents):
            local = np.asarray(cols_of[i], dtype=np.int64)
            rows.append(np.full(local.size, k))
            cols.append(x.columns(local))
            coefs.append(u[local])
        cat = (lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype))
        return cat(rows, np.int64), cat(cols, np.int64), cat(coefs, np.float64)

    if sharing is not None:
        agents = np.flatnonzero(share > 0)
        rows, cols, coefs = utility_rows(agents)
        model.add_constraints("sharing", rows=rows, cols=cols, coefs=coefs, lower=sharing * share[agents],
                              n_rows=agents.size,
                              description="U_i(x) >= alpha U_i^ex (phi_i >= alpha) for each agent with U_i^ex > 0")
        labels["sharing"] = _labels(ids, [("sharing", (i,)) for i in agents.tolist()])
    if envy is not None:
        rows, cols, coefs, lower, keys = [], [], [], [], []
        for i in range(instance.n_agents):
            own = np.asarray(cols_of[i], dtype=np.int64)
            for j in range(instance.n_agents):
                if j == i:
                    continue
                # j's columns on pools that i values: U_i(X_j) uses u_{i,c,r}.
                theirs, value = [], []
                for k in cols_of[j]:
                    e = edge_of[i].get(int(columns.pool[k]))
                    if e is not None:
                        v = instance.edge_utility[e, columns.round[k]]
                        if v:
                            theirs.append(k)
                            value.append(v)
                if not theirs:
                    continue  # i values none of j's possible devices: the row always holds
                row = len(keys)
                keys.append(("envy", (i, j)))
                rows += [np.full(own.size + len(theirs), row)]
                cols += [x.columns(np.concatenate([own, np.asarray(theirs, dtype=np.int64)]))]
                coefs += [np.concatenate([w[j] * u[own], -w[i] * np.asarray(value)])]
                lower.append(-envy * w[j])
        model.add_constraints(
            "envy",
            rows=np.concatenate(rows) if rows else np.zeros(0, np.int64),
            cols=np.concatenate(cols) if cols else np.zeros(0, np.int64),
            coefs=np.concatenate(coefs) if coefs else np.zeros(0),
            lower=np.asarray(lower, dtype=np.float64), n_rows=len(keys),
            description="w_j U_i(X_i) - w_i U_i(X_j) >= -epsilon w_j for each ordered pair i != j",
        )
        labels["envy"] = _labels(ids, keys)
    if floor is not None:
        scale = share if normalizer == "equal_share" else w
        agents = np.flatnonzero(_taking_part(instance, columns) & (scale > 0))
        rows, cols, coefs = utility_rows(agents)
        model.add_constraints("floor", rows=rows, cols=cols, coefs=coefs, lower=floor * scale[agents],
                              n_rows=agents.size,
                              description="U_i(x) >= tau w_i E_i for each agent that can get a positive utility")
        labels["floor"] = _labels(ids, [("floor", (i,)) for i in agents.tolist()])
    return model, columns, labels


def _feasible(model: LinearModel, options: dict) -> bool:
    solution = solve_model(model, **options)
    return solution.status != "infeasible"


def _conflict(model: LinearModel, labels: dict[str, list[str]], options: dict) -> list[str]:
    """An irreducible infeasible subset of the fairness rows, by QuickXplain (module docstring)."""
    rows = [(name, k) for name in FAMILIES if name in labels for k in range(len(labels[name]))]
    lower = {name: model.constraints[name].lower.copy() for name in labels}
    probe = {**options, "time_limit": options.get("time_limit")}
    saved_objective = model.objective.copy()
    model.objective[:] = 0.0  # feasibility only

    def enable(active) -> bool:
        for name in labels:
            model.constraints[name].lower[:] = -np.inf
        for name, k in active:
            model.constraints[name].lower[k] = lower[name][k]
        return _feasible(model, probe)

    def explain(background: list, delta_nonempty: bool, candidates: list) -> list:
        if delta_nonempty and not enable(background):
            return []
        if len(candidates) == 1:
            return candidates
        half = len(candidates) // 2
        first, second = candidates[:half], candidates[half:]
        found_second = explain(background + first, bool(first), second)
        found_first = explain(background + found_second, bool(found_second), first)
        return found_first + found_second

    try:
        if enable(rows):  # a numerical disagreement: the full model was reported infeasible
            return []
        found = explain([], False, rows) if rows else []
    finally:
        for name in labels:
            model.constraints[name].lower[:] = lower[name]
        model.objective[:] = saved_objective
    return [labels[name][k] for name, k in sorted(found, key=lambda r: (FAMILIES.index(r[0]), r[1]))]


def equal_share_start(instance: Instance, model: LinearModel, columns: AllocationColumns) -> np.ndarray | None:
    """The equal-share allocation ``x_{i,c,r} = k_c w_i / sum_j w_j`` as a start, if ``model`` admits it; else None.

    It gives every agent exactly ``U_i^ex`` and weighted envy 0, so it meets
    ``sharing <= 1``, any ``envy >= 0`` and ``floor <= 1`` (equal-share normaliser)
    whenever no demand, window or column bound cuts it, which is checked against
    every row and bound of the model (a time-sharing start: fractional mode only).
    Then a run stopped by its time limit still returns a fair allocation.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B", weight=3.0)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> model, columns, _ = build_fair_welfare(inst, fractional=True, sharing=1.0, envy=0.0)
    >>> equal_share_start(inst, model, columns).tolist()
    [0.5, 1.5]
    """
    values = np.zeros(model.n_cols)
    share = instance.weights / instance.weights.sum()
    values[columns.block.slice] = instance.counts[columns.pool] * share[columns.agent]
    # Relative to the largest row activity: the sums reproduce U_i^ex up to rounding.
    scale = max(1.0, float(np.max(np.abs(equal_share_utilities(instance)), initial=0.0)))
    return values if model.max_violation(values) <= 1e-9 * scale else None


def welfare_ceiling(instance: Instance) -> float:
    """``sum_{c,r} k_c max_i w_i u_{i,c,r}``: every device to the agent that values it most, demands ignored.

    An upper bound on weighted welfare over every allocation, so on
    ``fair_welfare`` under any fairness rows (the Lagrangian bound of the
    capacity rows at prices ``p_{c,r} = max_i w_i u_{i,c,r}``).  One pass over the edges.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> welfare_ceiling(inst)
    4.0
    """
    best = np.zeros((instance.n_pools, instance.rounds))
    value = instance.weights[instance.edge_agent][:, None] * instance.edge_utility
    np.maximum.at(best, instance.edge_pool, value)
    return float(np.sum(best * instance.counts[:, None]))


def fair_welfare_size(instance: Instance, options: dict):
    """Size: the allocation plus ``n`` rows per chosen utility family and ``n (n - 1)`` envy rows.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent(f"a{k}") for k in range(10)],
    ...                    [lo.Edge(f"a{k}", "P", 1.0) for k in range(10)])
    >>> fair_welfare_size(inst, {"envy": 0.0}).constraints   # 11 allocation rows, 90 envy rows
    101.0
    """
    n = float(instance.n_agents)
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    rows = nonzeros = 0.0
    for name in ("sharing", "floor"):
        if options.get(name) is not None:
            rows += n
            nonzeros += edge_rounds
    if options.get("envy") is not None:
        rows += n * (n - 1)
        nonzeros += 2 * (n - 1) * edge_rounds
    return allocation_size(instance, extra_constraints=rows, extra_nonzeros=nonzeros,
                           note="fairness rows: n per utility family, n(n-1) for envy")


def solve_fair_welfare(
    instance: Instance,
    *,
    sharing: float | None = None,
    envy: float | None = None,
    floor: float | None = None,
    normalizer: str = "equal_share",
    explain: bool = True,
    fractional: bool = False,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
) -> Result:
    """Maximise ``sum_i w_i U_i`` under the chosen fairness rows; see the module docstring.

    ``details`` holds the options, the number of rows per family, and on an
    infeasible model ``conflict`` (row labels of an irreducible infeasible
    subset; ``explain=False`` skips that search).
    """
    model, columns, labels = build_fair_welfare(instance, fractional=fractional, sharing=sharing, envy=envy,
                                                floor=floor, normalizer=normalizer)
    options = dict(solver=solver, via=via, time_limit=time_limit, threads=threads, mip_gap=mip_gap,
                   verbose=verbose, backend=backend)
    start = (lambda: equal_share_start(instance, model, columns)) if fractional else None
    tuned = {"solver": "ipm", "run_crossover": "on"} if fractional and model.n_rows >= INTERIOR_POINT_ROWS else None
    solution = solve_model(model, **options, start=start, highs_options=tuned)
    if solution.status in ("time_limit", "feasible") and solution.values is not None:
        # Stopped early: the welfare ceiling (no fairness rows at all) may bound tighter than the solver did.
        ceiling = welfare_ceiling(instance)
        if solution.bound is None or ceiling < solution.bound:
            solution.bound, solution.gap = ceiling, relative_gap(solution.objective, ceiling)
    params = {"time_limit": time_limit, "fractional": fractional, "via": via, "sharing": sharing, "envy": envy,
              "floor": floor, "normalizer": normalizer}
    details = {"constraints": {"sharing": sharing, "envy": envy, "floor": floor, "normalizer": normalizer},
               "rows": {name: len(rows) for name, rows in labels.items()}}
    if tuned is not None and solver == "highs" and via == "direct":
        details["lp_method"] = f"interior point with crossover ({model.n_rows:,} rows >= {INTERIOR_POINT_ROWS:,})"
    if solution.status == "infeasible" and explain:
        try:
            conflict = _conflict(model, labels, options)
        except NoSolutionError:
            # The run's time limit ended the search: the model is still proven infeasible.
            details["conflict"] = None
            solution.message = "no allocation meets the fairness constraints (the conflict search ran out of time)"
        else:
            details["conflict"] = conflict
            solution.message = ("no allocation meets the fairness constraints; an irreducible conflicting set: "
                                + ", ".join(conflict)) if conflict else "no allocation meets the fairness constraints"
    elif solution.status == "infeasible":
        solution.message = "no allocation meets the fairness constraints"
    return allocation_result(instance, "fair_welfare", columns, solution, fractional=fractional, params=params,
                             details=details)


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The model ``lo.build(instance, "fair_welfare", ...)`` exports, with the chosen fairness rows."""
    return build_fair_welfare(instance, fractional=bool(options.get("fractional")), sharing=options.get("sharing"),
                              envy=options.get("envy"), floor=options.get("floor"),
                              normalizer=options.get("normalizer", "equal_share"))[0]


METHOD = Method(
    name="fair_welfare",
    kind="exact",
    objective="max sum_i w_i U_i s.t. phi_i >= alpha (sharing), weighted envy <= epsilon (envy), "
              "U_i / (w_i E_i) >= tau (floor)",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Weighted welfare under any of sharing incentive, envy-freeness and a max-min floor; "
            "infeasibility explained by an irreducible conflicting set.",
    run=solve_fair_welfare,
    options=solver_options(fractional=True) + (
        Option("sharing", "float", None, "alpha: every agent with an equal share gets phi_i >= alpha "
               "(1: sharing incentive); null: no such rows", minimum=0, nullable=True),
        Option("envy", "float", None, "epsilon: weighted envy e_ij <= epsilon for every pair "
               "(0: envy-free); null: no such rows", minimum=0, nullable=True),
        Option("floor", "float", None, "tau: every agent that can get utility has U_i / (w_i E_i) >= tau; "
               "null: no such rows", minimum=0, nullable=True),
        Option("normalizer", "choice", "equal_share", "E_i of the floor: U_i^ex / w_i (the floor bounds phi_i) "
               "or 1 (raw)", choices=NORMALIZERS),
        Option("explain", "bool", True, "on infeasibility, find an irreducible conflicting set of fairness rows"),
    ),
    estimate=fair_welfare_size,
    build=_export_model,
)
