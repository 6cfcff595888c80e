"""The linear programs behind the certificates, written from the model reference in exact arithmetic.

Each builder states one LP of ``models.md`` over an :class:`~laissez_opt.analysis.rational.ExactInstance`
as an :class:`~laissez_opt.analysis.exact_lp.ExactLP`, independently of the
floating-point models of :mod:`laissez_opt.exact`, so that a certificate checked
against it does not trust the code that produced the result.

Shared by every builder: one column ``x[i,c,r]`` per edge ``(i, c)`` and round
``r`` (edge order, then round), ``0 <= x <= min(d_i, k_c)`` inside the agent's
window ``a_i <= r <= D_i`` and ``x = 0`` outside it; rows
``capacity[c,r]``: ``sum_i x[i,c,r] <= k_c`` and ``demand[i,r]``:
``sum_c x[i,c,r] <= d_i`` (agents with a finite demand).  ``U_i(x) = sum_{c,r} u_{i,c,r} x[i,c,r]``.

* :func:`welfare_lp`: ``max sum_i w_i U_i(x)`` (``models.md`` item 1).
* :func:`vcg_lp`: ``max W(x) = sum (v_{i,c,r} - b_c) x + R sum_c b_c k_c``, optionally
  without one agent (item 5; ``W*`` and ``W*_{-i}``).
* :func:`level_lp`: one waterfilling LP of the leximin (item 3):
  ``max t`` s.t. ``level[i]``: ``U_i(x) - S_i t >= 0`` for the free agents and
  ``U_j(x) >= S_j ell_j`` for the frozen ones, ``S_i = w_i E_i`` (rows scaled by
  ``S_i > 0``, which changes no feasible set).
* :func:`themis_lp`: ``F(rho) = max delta`` s.t. ``finish[i]``:
  ``X_i(x) - X^id_i delta >= X^id_i / (rho - a_i)`` for the bidders (item 4; rows
  scaled by ``X^id_i``), non-bidders' columns at 0 (they only take capacity).
* :func:`pareto_lp`: ``max sum_i s_i`` s.t. ``gain[i]``: ``U_i(y) - s_i = T_i``, ``s >= 0``
  (item 2, thesis eq. 3.6).
* :func:`fair_welfare_lp`: welfare subject to ``sharing[i]``: ``U_i(x) >= alpha U_i^ex``,
  ``envy[i,j]``: ``w_j U_i(X_i) - w_i U_i(X_j) >= -epsilon w_j`` and ``floor[i]``:
  ``U_i(x) >= tau S_i`` (``models/fair_welfare.md``).

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.analysis.rational import exact_instance
>>> from laissez_opt.analysis.exact_lp import solve_exact
>>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)])
>>> lp = welfare_lp(exact_instance(inst))
>>> lp.n_cols, lp.n_rows, solve_exact(lp).verdict.objective
(2, 1, Fraction(9, 10))
"""

from __future__ import annotations

import json
from fractions import Fraction

from .exact_lp import ExactLP, Number, label
from .rational import ExactInstance

__all__ = [
    "NORMALIZERS",
    "add_allocation",
    "utility_terms",
    "taking_part",
    "scales",
    "ideal_rates",
    "themis_lags",
    "welfare_lp",
    "vcg_lp",
    "level_lp",
    "themis_lp",
    "pareto_lp",
    "fair_welfare_lp",
]

#: ``S_i`` of the level rows: ``U_i^ex`` (equal_share: values are phi_i), ``w_i`` (raw), ``X^id_i`` (ideal_rate: Themis).
NORMALIZERS = ("equal_share", "raw", "ideal_rate")


def _q(value) -> Number:
    value = Fraction(value)
    return int(value) if value.denominator == 1 else value


def add_allocation(lp: ExactLP, ex: ExactInstance, *, objective=None, fixed_agents=()) -> int:
    """Columns ``x[i,c,r]`` with their bounds and the ``capacity`` and ``demand`` rows; returns the first column.

    ``objective(e, r)`` gives the cost of column ``(e, r)`` (0 when None);
    agents in ``fixed_agents`` get upper bound 0 on every column.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", demand=1)], [lo.Edge("A", "P", 1.0)])
    >>> lp = ExactLP("toy", "max")
    >>> add_allocation(lp, exact_instance(inst)), lp.column_name(0), lp.col_upper, lp.row_name(1)
    (0, 'x["A","P",0]', [1], 'demand["A",0]')
    """
    inst = ex.instance
    R = inst.rounds
    # Quoted once: names are label("x", agent, pool, r), built for every column.
    quoted_a = [json.dumps(a.id) for a in inst.agents]
    quoted_p = [json.dumps(p.id) for p in inst.pools]
    ids_a = [a.id for a in inst.agents]
    ids_p = [p.id for p in inst.pools]
    E = inst.n_edges
    fixed = set(fixed_agents)
    upper = [0 if ex.edge_agent[e] in fixed else ex.upper(e, r) for e in range(E) for r in range(R)]
    costs = [0] * (E * R) if objective is None else [objective(e, r) for e in range(E) for r in range(R)]
    ea, ep = ex.edge_agent, ex.edge_pool

    def name(k: int) -> str:
        e, r = divmod(k, R)
        return f"x[{quoted_a[ea[e]]},{quoted_p[ep[e]]},{r}]"

    start = lp.add_columns("x", E * R, lower=[0] * (E * R), upper=upper, objective=costs, namer=name)
    capacity = [[] for _ in range(inst.n_pools * R)]
    demand_row = {}
    finite = [i for i, d in enumerate(ex.demands) if d is not None]
    for i in finite:
        for r in range(R):
            demand_row[i, r] = len(demand_row)
    demand = [[] for _ in range(len(demand_row))]
    for e in range(E):
        for r in range(R):
            col = start + e * R + r
            capacity[ep[e] * R + r].append((col, 1))
            row = demand_row.get((ea[e], r))
            if row is not None:
                demand[row].append((col, 1))
    lp.add_rows("capacity", capacity, lower=[None] * len(capacity),
                upper=[ex.counts[c] for c in range(inst.n_pools) for _ in range(R)],
                namer=lambda k: label("capacity", ids_p[k // R], k % R))
    keys = list(demand_row)
    lp.add_rows("demand", demand, lower=[None] * len(demand), upper=[ex.demands[i] for i, _ in keys],
                namer=lambda k: label("demand", ids_a[keys[k][0]], keys[k][1]))
    return start


def _edge_lists(ex: ExactInstance):
    """Per agent: its edges, and pool -> its edge (cached on ``ex``)."""
    cached = getattr(ex, "_edge_lists", None)
    if cached is None:
        n = len(ex.weights)
        edges_of = [[] for _ in range(n)]
        pool_edge = [{} for _ in range(n)]
        for e, (i, c) in enumerate(zip(ex.edge_agent, ex.edge_pool)):
            edges_of[i].append(e)
            pool_edge[i][c] = e
        cached = ex._edge_lists = (edges_of, pool_edge)
    return cached


def utility_terms(ex: ExactInstance, start: int, agent: int, *, valued_by: int | None = None) -> list[tuple[int, Number]]:
    """``U(x)`` of ``agent``'s bundle as ``(column, coefficient)`` pairs, valued by ``valued_by`` (default: the agent).

    ``U_i(X_j)`` (``valued_by=i``, ``agent=j``) values ``j``'s devices of the pools
    that ``i`` has an edge to with ``i``'s utilities; the rest are worth 0 to ``i``.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P"), lo.Pool("Q")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.5), lo.Edge("B", "P", 0.25), lo.Edge("B", "Q", 1.0)])
    >>> ex = exact_instance(inst)
    >>> utility_terms(ex, 0, 1), utility_terms(ex, 0, 1, valued_by=0)   # B's bundle to B, and to A
    ([(1, Fraction(1, 4)), (2, 1)], [(1, Fraction(1, 2))])
    """
    R = ex.rounds
    judge = agent if valued_by is None else valued_by
    edges_of, pool_edge = _edge_lists(ex)
    own_edge = pool_edge[judge]
    out = []
    for e in edges_of[agent]:
        valued = own_edge.get(ex.edge_pool[e])
        if valued is None:
            continue
        for r in range(R):
            u = ex.utility[valued][r]
            if u:
                out.append((start + e * R + r, u))
    return out


def taking_part(ex: ExactInstance) -> list[int]:
    """The agents that can get a positive utility: an edge with ``u > 0`` and a positive upper bound.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B", demand=0), lo.Agent("C")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0), lo.Edge("C", "P", 0.0)])
    >>> taking_part(exact_instance(inst))     # B may use nothing, C values nothing
    [0]
    """
    R = ex.rounds
    part = set()
    for e, i in enumerate(ex.edge_agent):
        if i not in part and any(ex.utility[e][r] > 0 and ex.upper(e, r) > 0 for r in range(R)):
            part.add(i)
    return sorted(part)


def ideal_rates(ex: ExactInstance) -> list[Number]:
    """Themis's ``X^id_i = min(1, d_i / H_i) s_i sum_c u_{i,c} k_c`` (round 0), ``s_i = w_i / W``, ``H_i = s_i sum_c k_c``.

    The exact counterpart of :func:`laissez_opt.exact.themis.ideal_rates` (Gavel's isolated allocation).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P", count=4)], [lo.Agent("A", demand=1), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 3.0), lo.Edge("B", "P", 1.0)])
    >>> ideal_rates(exact_instance(inst))     # A's share holds 2 devices but it uses 1: halved
    [3, 2]
    """
    W = sum(ex.weights)
    n = len(ex.weights)
    usable = [0] * n
    full = [0] * n
    for e, (i, c) in enumerate(zip(ex.edge_agent, ex.edge_pool)):
        usable[i] += ex.counts[c]
        full[i] += ex.utility[e][0] * ex.counts[c]
    out = []
    for i in range(n):
        share = Fraction(ex.weights[i]) / W
        held = share * usable[i]
        d = ex.demands[i]
        scale = Fraction(d) / held if d is not None and held > d else 1
        out.append(_q(scale * share * full[i]))
    return out


def themis_lags(ex: ExactInstance, rates: list[Number]) -> tuple[list[Number], list[bool]]:
    """``a_i = t_i X^id_i / W_i`` and whether agent ``i`` is active (``W_i > 0``, ``X^id_i > 0``; ``W_i`` defaults to 1).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A", work=2.0, elapsed=1.0), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> ex = exact_instance(inst)
    >>> themis_lags(ex, ideal_rates(ex))
    ([Fraction(1, 4), 0], [True, True])
    """
    lags, active = [], []
    for i, rate in enumerate(rates):
        work = 1 if ex.work[i] is None else ex.work[i]
        is_active = work > 0 and rate > 0
        active.append(is_active)
        lags.append(_q(Fraction(ex.elapsed[i]) * rate / work) if is_active else 0)
    return lags, active


def scales(ex: ExactInstance, normalizer: str) -> list[Number]:
    """``S_i`` of the level rows for ``normalizer`` (:data:`NORMALIZERS`).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P", count=4)], [lo.Agent("A", weight=3.0), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0)])
    >>> ex = exact_instance(inst)
    >>> scales(ex, "equal_share"), scales(ex, "raw")   # U_i^ex = (w_i / W) k u;  w_i
    ([3, 2], [3, 1])
    """
    if normalizer == "equal_share":
        return ex.equal_share()
    if normalizer == "raw":
        return list(ex.weights)
    if normalizer == "ideal_rate":
        return ideal_rates(ex)
    raise ValueError(f"unknown normalizer {normalizer!r}; one of {', '.join(NORMALIZERS)}")


def _weighted(w: Number, u: Number) -> Number:
    return u if w == 1 else w * u


def welfare_lp(ex: ExactInstance) -> ExactLP:
    """``max sum_i w_i U_i(x)`` over the allocation polytope (built once per instance; treat it as read-only).

    See the module docstring for an example.
    """
    cached = ex.__dict__.get("_welfare_lp")
    if cached is not None:
        return cached
    lp = ExactLP("welfare", "max")
    w, u, ea = ex.weights, ex.utility, ex.edge_agent
    add_allocation(lp, ex, objective=lambda e, r: _weighted(w[ea[e]], u[e][r]))
    ex._welfare_lp = lp
    return lp


def vcg_values(ex: ExactInstance) -> list[list[Number]]:
    """``v_{i,c,r}`` in money per device-round: ``bid h`` (a bid is per device-hour, ``h`` = ``round_hours``), else ``u``.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", (1.0, 2.0), bid=0.5), lo.Edge("B", "P", (3.0, 4.0))],
    ...                    rounds=2, round_hours=2.0)
    >>> vcg_values(exact_instance(inst))
    [[1, 1], [3, 4]]
    """
    h = ex.round_hours
    return [[_q(b * h)] * ex.rounds if b is not None else list(u) for b, u in zip(ex.bids, ex.utility)]


def vcg_lp(ex: ExactInstance, without: int | None = None) -> ExactLP:
    """``max W(x) = sum (v - beta_c) x + R sum_c beta_c k_c``, ``beta_c = b_c h``; ``without``: that agent at 0 (``W*_{-i}``).

    The reserve ``beta_c`` is the operator's value of keeping a device for a round
    (the base price ``b_c`` is per device-hour), as in :mod:`laissez_opt.exact.vcg`.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> from laissez_opt.analysis.exact_lp import solve_exact
    >>> inst = lo.Instance([lo.Pool("A10", base_price=0.606)], [lo.Agent("A", demand=1), lo.Agent("B", demand=1)],
    ...                    [lo.Edge("A", "A10", 0.687), lo.Edge("B", "A10", 0.762)])
    >>> ex = exact_instance(inst)
    >>> [solve_exact(vcg_lp(ex, without=w)).verdict.objective for w in (None, 1)]   # W* and W*_{-B}
    [Fraction(381, 500), Fraction(687, 1000)]
    """
    lp = ExactLP("vcg", "max")
    v = vcg_values(ex)
    b = [_q(price * ex.round_hours) for price in ex.base_prices]
    ep = ex.edge_pool
    add_allocation(lp, ex, objective=lambda e, r: v[e][r] - b[ep[e]], fixed_agents=() if without is None else (without,))
    lp.offset = _q(ex.rounds * sum(bc * k for bc, k in zip(b, ex.counts)))
    return lp


def level_lp(ex: ExactInstance, scale: list[Number], frozen: dict[int, Number], free: list[int]) -> ExactLP:
    """One waterfilling LP: ``max t`` with ``level`` rows for the free and the frozen agents (module docstring).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> from laissez_opt.analysis.exact_lp import solve_exact
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)])
    >>> ex = exact_instance(inst)
    >>> solve_exact(level_lp(ex, scales(ex, "equal_share"), {}, [0, 1])).verdict.objective   # phi = 1 each
    1
    """
    lp = ExactLP("level", "max")
    start = add_allocation(lp, ex)
    members = sorted(set(free) | set(frozen))
    # With no free agent there is no level to raise: t is held at 0 (as in the floating-point model).
    t = lp.add_columns("t", 1, lower=[0], upper=[None if free else 0], objective=[1], namer=lambda k: "t")
    ids = [a.id for a in ex.instance.agents]
    rows, lower = [], []
    for i in members:
        terms = utility_terms(ex, start, i)
        if i in frozen:
            rows.append(terms)
            lower.append(scale[i] * frozen[i])
        else:
            rows.append(terms + [(t, -scale[i])])
            lower.append(0)
    lp.add_rows("level", rows, lower=lower, upper=[None] * len(rows), namer=lambda k: label("level", ids[members[k]]))
    lp.level_agents = members
    return lp


def themis_lp(ex: ExactInstance, rho: Number, bidders: list[int]) -> ExactLP:
    """``F(rho) = max delta`` over the bidders' ``finish`` rows (module docstring); needs ``rho > a_i``.

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> from laissez_opt.analysis.exact_lp import solve_exact
    >>> inst = lo.Instance([lo.Pool("P"), lo.Pool("Q")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 2.0), lo.Edge("A", "Q", 1.0), lo.Edge("B", "P", 1.0),
    ...                     lo.Edge("B", "Q", 1.0)])
    >>> ex = exact_instance(inst)
    >>> [solve_exact(themis_lp(ex, rho, [0, 1])).verdict.objective for rho in (Fraction(7, 8), 1)]   # rho* = 7/8
    [0, Fraction(1, 7)]
    """
    rates = ideal_rates(ex)
    lags, _ = themis_lags(ex, rates)
    bidder_set = set(bidders)
    lp = ExactLP("themis", "max")
    others = [i for i in range(len(ex.weights)) if i not in bidder_set]
    start = add_allocation(lp, ex, fixed_agents=others)
    delta = lp.add_columns("delta", 1, lower=[None], upper=[None], objective=[1], namer=lambda k: "delta")
    ids = [a.id for a in ex.instance.agents]
    order = sorted(bidder_set)
    rows, lower = [], []
    for i in order:
        if not rho > lags[i]:
            raise ValueError(f"rho = {rho} must exceed a_i = {lags[i]} of bidder {ids[i]!r}")
        rows.append(utility_terms(ex, start, i) + [(delta, -rates[i])])
        lower.append(_q(Fraction(rates[i]) / (rho - lags[i])))
    lp.add_rows("finish", rows, lower=lower, upper=[None] * len(rows), namer=lambda k: label("finish", ids[order[k]]))
    return lp


def pareto_lp(ex: ExactInstance, targets: list[Number]) -> ExactLP:
    """``max sum_i s_i`` s.t. ``U_i(y) - s_i = T_i``, ``s_i >= 0``, ``y`` feasible (block ``x`` holds ``y``).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> from laissez_opt.analysis.exact_lp import solve_exact
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)])
    >>> solve_exact(pareto_lp(exact_instance(inst), [0, 0])).verdict.objective   # nobody served: 9/10 to gain
    Fraction(9, 10)
    """
    lp = ExactLP("pareto", "max")
    start = add_allocation(lp, ex)
    n = len(ex.weights)
    ids = [a.id for a in ex.instance.agents]
    s = lp.add_columns("s", n, lower=[0] * n, upper=[None] * n, objective=[1] * n,
                       namer=lambda k: label("s", ids[k]))
    rows = [utility_terms(ex, start, i) + [(s + i, -1)] for i in range(n)]
    lp.add_rows("gain", rows, lower=list(targets), upper=list(targets), namer=lambda k: label("gain", ids[k]))
    return lp


def fair_welfare_lp(ex: ExactInstance, *, sharing: Number | None = None, envy: Number | None = None,
                    floor: Number | None = None, normalizer: str = "equal_share") -> ExactLP:
    """Weighted welfare under the chosen fairness rows (module docstring; ``models/fair_welfare.md``).

    >>> import laissez_opt as lo
    >>> from laissez_opt.analysis.rational import exact_instance
    >>> from laissez_opt.analysis.exact_lp import solve_exact
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)])
    >>> solve_exact(fair_welfare_lp(exact_instance(inst), sharing=1)).verdict.objective
    Fraction(7, 5)
    """
    lp = ExactLP("fair_welfare", "max")
    w, u, ea = ex.weights, ex.utility, ex.edge_agent
    start = add_allocation(lp, ex, objective=lambda e, r: _weighted(w[ea[e]], u[e][r]))
    ids = [a.id for a in ex.instance.agents]
    n = len(w)
    if sharing is not None:
        share = ex.equal_share()
        agents = [i for i in range(n) if share[i] > 0]
        lp.add_rows("sharing", [utility_terms(ex, start, i) for i in agents],
                    lower=[sharing * share[i] for i in agents], upper=[None] * len(agents),
                    namer=lambda k: label("sharing", ids[agents[k]]))
    if envy is not None:
        pairs, rows = [], []
        for i in range(n):
            own = utility_terms(ex, start, i)
            for j in range(n):
                if j == i:
                    continue
                other = utility_terms(ex, start, j, valued_by=i)
                if not other:
                    continue  # i values none of j's possible devices: the row always holds
                pairs.append((i, j))
                rows.append([(col, w[j] * a) for col, a in own] + [(col, -w[i] * a) for col, a in other])
        lp.add_rows("envy", rows, lower=[-envy * w[j] for _, j in pairs], upper=[None] * len(rows),
                    namer=lambda k: label("envy", ids[pairs[k][0]], ids[pairs[k][1]]))
    if floor is not None:
        scale = scales(ex, normalizer)
        agents = [i for i in taking_part(ex) if scale[i] > 0]
        lp.add_rows("floor", [utility_terms(ex, start, i) for i in agents],
                    lower=[floor * scale[i] for i in agents], upper=[None] * len(agents),
                    namer=lambda k: label("floor", ids[agents[k]]))
    return lp

