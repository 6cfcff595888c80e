"""The vocabulary of the field as expressions and named constraint families over the allocation ``x``.

Notation of ``models.md``: agents ``i`` with weight ``w_i``, demand ``d_i``,
arrival ``a_i`` and migration cost ``mu_i``; pools ``c`` with ``k_c`` devices
and base price ``b_c`` per device-hour; rounds ``r`` of ``h`` hours; edge
utilities ``u_{i,c,r}``; ``U_i(x) = sum_{c,r} u_{i,c,r} x_{i,c,r}``.

Expressions (use them in objectives, rows and other expressions):

* :func:`utility` ``U_i(x)``, one entry per agent; :func:`welfare` ``sum_i w_i U_i(x)``;
* :func:`cost` ``sum_{i,c,r} p_c h x_{i,c,r}`` (money, default prices ``b_c``), total or per agent;
* :func:`value` ``sum_{i,c,r} v_{i,c,r} x_{i,c,r}`` for any table ``v`` over the edges and rounds, total or per label;
* :func:`share` an agent's fraction of the device-time of all pools (or of one pool or cluster);
* :func:`migration_cost` ``sum_{c, r > a_i} mu_i moved_{i,c,r}`` per agent.

Constraint families (add them with :meth:`Model.add <laissez_opt.declare.model.Model.add>`;
each has a default name, the name of its function):

* :func:`capacity` ``sum_i x_{i,c,r} <= k_c``; :func:`demand` ``sum_c x_{i,c,r} <= d_i``;
* :func:`budget` ``sum_{c,r} p_c h x_{i,c,r} <= B_i``;
* :func:`sharing_incentive` ``U_i(x) >= alpha U_i^ex``;
* :func:`envy_free` ``(w_i / w_j) U_i(x_j) - U_i(x_i) <= eps``;
* :func:`maxmin_floor` ``U_i(x) / (w_i E_i) >= t``.

Every family and expression is built with a few vectorised passes over the
edges; none creates a Python object per variable.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.load("instances/hotos25-table1.json")
>>> m = lo.Model(inst)
>>> x = m.x
>>> capacity(x).size, demand(x).size, utility(x).dims, welfare(x).dims
(3, 2, ('agent',), ())
"""

from __future__ import annotations

import math

import numpy as np

from ..shares import capped_share_ratios, equal_share_utilities
from .expression import Constraint, Expression, _frozen, _is_number, _per_label
from .index import Index, SelectionError

__all__ = [
    "utility", "welfare", "cost", "value", "share", "migration_cost",
    "capacity", "demand", "budget", "sharing_incentive", "envy_free", "maxmin_floor", "ENVY_MAX_COEFFICIENTS",
]

#: envy_free needs about (n - 1) E R coefficients; refuse a family larger than this.
ENVY_MAX_COEFFICIENTS = 5 * 10**7


# ----------------------------------------------------------------- helpers
def _allocation_problem(x, what: str) -> str | None:
    """Why ``x`` is not a model's whole allocation variable (None if it is)."""
    if not isinstance(x, Expression):
        return f"{what} takes the model's allocation m.x, got {type(x).__name__}"
    if x.error:
        return x.error
    if x.model._x is not x:
        return f"{what} takes the model's whole allocation m.x, got {x.text}"
    return None


def _edge_problem(x, what: str) -> str | None:
    """Why ``x`` is not indexed by agent, pool and round (None if it is)."""
    if not isinstance(x, Expression):
        return f"{what} takes an expression of the allocation such as m.x, got {type(x).__name__}"
    if x.error:
        return x.error
    if set(x.dims) != {"agent", "pool", "round"}:
        return (f"{what} needs entries indexed by agent, pool and round (the allocation m.x or a selection of it "
                f"with .select(...)), but {x.text} is indexed by {', '.join(x.dims) or 'nothing'}")
    return None


def _failed_constraint(x, name: str, text: str, problem: str) -> Constraint:
    model = x.model if isinstance(x, Expression) else None
    expr = Expression.failed(model, text, problem)
    empty = np.zeros(0)
    return Constraint(expr, empty, empty, name=name, error=problem, text=text)


def _edge_values(x: Expression, table: np.ndarray) -> np.ndarray | None:
    """``table[edge, round]`` for every entry of ``x`` (``table`` is ``E x R``); None if an entry is no edge."""
    model = x.model
    full = model._x
    codes = x.index.reordered(("agent", "pool", "round")).codes
    if full is not None and all(a is b for a, b in zip(codes, full.index.codes)):
        return table.reshape(-1)  # x itself: entries are edges in order, rounds fastest
    keys, order = model.edge_lookup()
    wanted = codes[0] * model.instance.n_pools + codes[1]
    at = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
    if keys.size == 0 or not np.all(keys[at] == wanted):
        return None
    return table[order[at], codes[2]]


def _agent_codes(x: Expression) -> np.ndarray:
    return x.index.codes[x.dims.index("agent")]


def _pool_codes(x: Expression) -> np.ndarray:
    return x.index.codes[x.dims.index("pool")]


def _weighted(x: Expression, factor: np.ndarray, text: str) -> Expression:
    """``x`` with entry ``k`` multiplied by ``factor[k]``; the allocation itself keeps its column array."""
    if x.model._x is x:
        # x's coefficients are ones over its own columns: the product is the factor.
        return Expression(x.model, x.index, x.rows, x.cols, _frozen(np.asarray(factor, dtype=np.float64)), None, text)
    return x._scaled(factor, text)


def _prices(x: Expression, prices, text: str) -> tuple[np.ndarray | None, str | None]:
    inst = x.model.instance
    if prices is None:
        return inst.base_prices, None
    return _per_label(x.space, "pool", prices, missing=0.0)


# ------------------------------------------------------------- expressions
def utility(x: Expression) -> Expression:
    """``U_i(x) = sum_{c,r} u_{i,c,r} x_{i,c,r}``: one entry per agent (also agents with no edge: 0).

    ``x`` is the allocation ``m.x`` or a selection of it that keeps the
    agent, pool and round dimensions (``m.x.select(round=0)``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 2.0), lo.Edge("B", "P", 3.0)])
    >>> m = lo.Model(inst)
    >>> utility(m.x).value([1.0, 0.0]).tolist()
    [2.0, 0.0]
    """
    text = f"utility({getattr(x, 'text', x)})"
    problem = _edge_problem(x, "utility")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    u = _edge_values(x, x.model.instance.edge_utility)
    if u is None:
        return Expression.failed(x.model, text, f"{x.text} has entries that are no edge of the instance")
    out = _weighted(x, u, text).sum(by="agent")
    out.text = text
    return out


def welfare(x: Expression, weights=None) -> Expression:
    """``sum_i w_i U_i(x)``: the weighted welfare, one number (``weights`` default to the agents' ``w_i``).

    ``weights`` may be an array with one number per agent or a dict keyed by
    agent id (agents left out weigh 0).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A", weight=2.0)], [lo.Edge("A", "P", 3.0)])
    >>> welfare(lo.Model(inst).x).value([1.0])
    6.0
    """
    text = f"welfare({getattr(x, 'text', x)})"
    problem = _edge_problem(x, "welfare")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    inst = x.model.instance
    if weights is None:
        w = inst.weights
    else:
        w, problem = _per_label(x.space, "agent", weights, missing=0.0)
        if problem:
            return Expression.failed(x.model, text, problem)
    u = _edge_values(x, inst.edge_utility)
    if u is None:
        return Expression.failed(x.model, text, f"{x.text} has entries that are no edge of the instance")
    factor = w[_agent_codes(x)] * u
    weighted = _weighted(x, factor, text)
    return Expression(x.model, Index.scalar(), None, weighted.cols, weighted.coefs, None, text)


def cost(x: Expression, prices=None, *, by=None) -> Expression:
    """Money spent on devices: ``sum_{i,c,r} p_c h x_{i,c,r}``, one number or one per label of ``by``.

    ``p_c`` is per device-hour: the pools' base prices ``b_c`` unless
    ``prices`` gives one per pool (array or dict); ``h`` is the instance's
    ``round_hours``.  ``by="agent"`` gives each agent's spending.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2, base_price=0.5)], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)],
    ...                    round_hours=2.0)
    >>> cost(lo.Model(inst).x).value([2.0])
    2.0
    """
    text = f"cost({getattr(x, 'text', x)})"
    problem = _edge_problem(x, "cost")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    table, problem = _prices(x, prices, text)
    if problem:
        return Expression.failed(x.model, text, problem)
    factor = table[_pool_codes(x)] * float(x.model.instance.round_hours)
    out = _weighted(x, factor, text).sum(by=by)
    out.text = text
    return out


def _edge_round_table(x: Expression, table) -> tuple[np.ndarray | None, str | None]:
    """``table`` as a finite ``E x R`` float array (edges in instance order), or the problem in the user's terms."""
    inst = x.model.instance
    n_edges, rounds = inst.n_edges, inst.rounds
    if hasattr(table, "items"):
        out = np.zeros((n_edges, rounds))
        keys, order = x.model.edge_lookup()
        space = x.space
        for key, number in table.items():
            if not isinstance(key, tuple) or len(key) not in (2, 3):
                return None, (f"a key of the table is {key!r}; use (agent id, pool id) for every round or "
                              f"(agent id, pool id, round)")
            try:
                (i,) = space.codes("agent", [key[0]])
                (c,) = space.codes("pool", [key[1]])
                chosen = slice(None) if len(key) == 2 else space.codes("round", key[2])
            except SelectionError as exc:
                return None, f"key {key!r}: {exc}"
            at = int(np.searchsorted(keys, i * inst.n_pools + c))
            if at >= keys.size or keys[at] != i * inst.n_pools + c:
                return None, f"key {key!r}: agent {key[0]!r} has no edge to pool {key[1]!r} in the instance"
            if not _is_number(number) or not math.isfinite(float(number)):
                return None, f"the value for {key!r} is {number!r}, not a finite number"
            out[order[at], chosen] = float(number)
        return out, None
    if _is_number(table):
        return None, "table must give one value per edge and round (an array or a dict), not one number"
    try:
        array = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError):
        return None, f"table must be an array or a dict keyed by (agent id, pool id[, round]), got {type(table).__name__}"
    if array.shape == (n_edges,):
        array = np.repeat(array[:, None], rounds, axis=1)
    elif array.shape == (n_edges * rounds,):
        array = array.reshape(n_edges, rounds)
    if array.shape != (n_edges, rounds):
        return None, (f"dimension mismatch: the table needs one value per edge and round, shape ({n_edges}, {rounds}) "
                      f"with edges in instance order (or ({n_edges},), the same in every round), got shape "
                      f"{array.shape}")
    bad = np.flatnonzero(~np.isfinite(array.reshape(-1)))
    if bad.size:
        e, r = divmod(int(bad[0]), rounds)
        edge = inst.edges[e]
        where = f"edge ({edge.agent!r}, {edge.pool!r})" + (f", round {r}" if rounds > 1 else "")
        return None, f"the table holds {array.reshape(-1)[bad[0]]} at {where}; every value must be a finite number"
    return array, None


def value(x: Expression, table, *, by=None) -> Expression:
    """``sum_{i,c,r} v_{i,c,r} x_{i,c,r}`` for a table ``v`` of numbers per edge and round: one number or one per label of ``by``.

    The general linear valuation of an allocation, for values the other
    expressions do not cover: bids, values net of reserve prices, a
    utility of your own.  ``table`` is an array of shape ``(E, R)`` aligned
    with the instance's edges (in instance order) and rounds, or of shape
    ``(E,)`` (the same value in every round); or a dict keyed by
    ``(agent id, pool id)`` (every round) or ``(agent id, pool id, round)``,
    entries left out being 0.  Every value must be finite.  ``x`` is the
    allocation or a selection of it that keeps the agent, pool and round
    dimensions; ``by="agent"`` gives each agent's value.
    :func:`utility` is ``value(x, u, by="agent")`` with the edges' utilities.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> x = lo.Model(inst).x
    >>> value(x, [0.5, 2.0]).value([2.0, 1.0]), value(x, {("B", "P"): 3.0}, by="agent").value([2.0, 1.0]).tolist()
    (3.0, [0.0, 3.0])
    """
    text = f"value({getattr(x, 'text', x)})"
    problem = _edge_problem(x, "value")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    array, problem = _edge_round_table(x, table)
    if problem:
        return Expression.failed(x.model, text, problem)
    factor = _edge_values(x, array)
    if factor is None:
        return Expression.failed(x.model, text, f"{x.text} has entries that are no edge of the instance")
    weighted = _weighted(x, factor, text)
    if by is None:  # one number over the entries of x, in x's column order
        return Expression(x.model, Index.scalar(), None, weighted.cols, weighted.coefs, None, text)
    out = weighted.sum(by=by)
    out.text = text
    return out


def share(x: Expression, agent: str, *, pool=None, cluster=None) -> Expression:
    """Agent ``i``'s share of device-time: ``sum_{c in S, r} x_{i,c,r} / (R sum_{c in S} k_c)``.

    ``S`` is every pool, or the pools given by ``pool`` (an id or a list) or
    ``cluster``.  One number between 0 and 1 for a feasible allocation.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=4), lo.Pool("Q")], [lo.Agent("A")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 1.0)])
    >>> share(lo.Model(inst).x, "A", pool="P").value([1.0, 1.0])
    0.25
    """
    text = f"share({getattr(x, 'text', x)}, {agent!r})"
    problem = _edge_problem(x, "share")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    selection = {"agent": agent}
    scope = {}
    if pool is not None:
        scope["pool"] = pool
    if cluster is not None:
        scope["cluster"] = cluster
    picked = x.select(**selection, **scope)
    if picked.error:
        return Expression.failed(x.model, text, picked.error)
    pools = np.arange(x.space.size("pool"))
    if scope:
        probe = x.model.space
        chosen = np.ones(pools.size, dtype=bool)
        if pool is not None:
            chosen &= np.isin(pools, probe.codes("pool", pool))
        if cluster is not None:
            chosen &= np.isin(probe.pool_cluster, probe.codes("cluster", cluster))
        pools = pools[chosen]
    devices = float(x.model.instance.counts[pools].sum()) * x.model.instance.rounds
    if devices == 0:
        return Expression.failed(x.model, text, "the selected pools hold no devices")
    out = (picked.sum() / devices)
    out.text = text
    return out


def migration_cost(x: Expression) -> Expression:
    """``sum_{c, r > a_i} mu_i moved_{i,c,r}`` per agent: migration work lost (``mu_i`` = ``migration_cost``).

    ``moved_{i,c,r} >= x_{i,c,r} - x_{i,c,r-1}`` counts the devices of pool
    ``c`` an agent starts in round ``r`` beyond those it held there in round
    ``r - 1`` (a restart after a pause counts; the first round of its stay
    does not).  The first call declares the variables ``migration_moved``
    (``0 <= moved <= x``'s bound) and the family ``migration_moves`` in the
    model; ``moved`` equals ``max(0, x_r - x_{r-1})`` wherever the model pushes
    migration cost down (minimising it, or bounding it from above), which is
    how it is meant to be used.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P"), lo.Pool("Q")], [lo.Agent("A", migration_cost=0.5)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 1.0)], rounds=2)
    >>> m = lo.Model(inst)
    >>> migration_cost(m.x).dims, sorted(m.constraints)
    (('agent',), ['migration_moves'])
    """
    text = f"migration_cost({getattr(x, 'text', x)})"
    problem = _allocation_problem(x, "migration_cost")
    if problem:
        return Expression.failed(getattr(x, "model", None), text, problem)
    model = x.model
    inst = model.instance
    mu = np.array([a.migration_cost for a in inst.agents], dtype=np.float64)
    if "migration_moved" not in model.variables:
        agent, round_ = x.index.codes[0], x.index.codes[2]
        arrival = np.array([a.arrival for a in inst.agents], dtype=np.int64)
        later = round_ > arrival[agent]
        bound = model.variables["x"].upper
        moved = model.variable("migration_moved", ("edge", "round"), where=later, upper=bound,
                               description="devices of pool c agent i starts in round r beyond those held in r - 1")
        current = x.cols[later]
        size = moved.size
        rows = np.concatenate([np.arange(size), np.arange(size), np.arange(size)])
        cols = np.concatenate([moved.cols, current, current - 1])
        coefs = np.concatenate([np.ones(size), -np.ones(size), np.ones(size)])
        expr = Expression(model, moved.index, rows, cols, coefs, None, "moved - x[r] + x[r-1]")
        model.add(Constraint(expr, np.zeros(size), np.full(size, np.inf), kind="migration",
                             description="moved[i,c,r] >= x[i,c,r] - x[i,c,r-1] for r after the agent's arrival"),
                  name="migration_moves")
    moved = model.variables["migration_moved"].expr
    out = moved.scale(agent=mu).sum(by="agent")
    out.text = text
    return out


# ----------------------------------------------------------------- families
def capacity(x: Expression) -> Constraint:
    """``sum_i x_{i,c,r} <= k_c`` for every pool ``c`` and round ``r`` (family ``capacity``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> capacity(lo.Model(inst).x).upper.tolist()
    [2.0]
    """
    problem = _allocation_problem(x, "capacity")
    if problem:
        return _failed_constraint(x, "capacity", "capacity(x)", problem)
    model, inst = x.model, x.model.instance
    rounds = inst.rounds
    pool, round_ = x.index.codes[1], x.index.codes[2]
    rows = pool if rounds == 1 else pool * rounds + round_
    index = Index.product(model.space, ("pool", "round"))
    expr = Expression(model, index, rows, x.cols, x.coefs, None, "sum_i x[i,c,r]")
    upper = np.repeat(inst.counts.astype(np.float64), rounds)
    return Constraint(expr, np.full(upper.size, -np.inf), upper, name="capacity", kind="capacity",
                      text="sum_i x[i,c,r] <= k_c", description="sum_i x[i,c,r] <= k_c for each pool c and round r")


def demand(x: Expression) -> Constraint:
    """``sum_c x_{i,c,r} <= d_i`` for every agent with a finite demand and every round (family ``demand``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", demand=1), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> demand(lo.Model(inst).x).upper.tolist()
    [1.0]
    """
    problem = _allocation_problem(x, "demand")
    if problem:
        return _failed_constraint(x, "demand", "demand(x)", problem)
    model, inst = x.model, x.model.instance
    rounds = inst.rounds
    finite = np.isfinite(inst.demands)
    agent, round_ = x.index.codes[0], x.index.codes[2]
    key = agent if rounds == 1 else agent * rounds + round_
    if finite.all():
        rows, cols, coefs = key, x.cols, x.coefs
    else:
        row_of = np.full(inst.n_agents * rounds, -1, dtype=np.int64)
        finite_rounds = np.repeat(finite, rounds)
        row_of[finite_rounds] = np.arange(int(finite_rounds.sum()))
        keep = finite[agent]
        cols = x.cols[keep]
        rows, coefs = row_of[key[keep]], np.ones(cols.size)
    index = Index.product(model.space, ("agent", "round"), {"agent": np.flatnonzero(finite)})
    upper = np.repeat(inst.demands[finite], rounds)
    expr = Expression(model, index, rows, cols, coefs, None, "sum_c x[i,c,r]")
    return Constraint(expr, np.full(upper.size, -np.inf), upper, name="demand", kind="demand",
                      text="sum_c x[i,c,r] <= d_i",
                      description="sum_c x[i,c,r] <= d_i for each agent i with finite demand and round r")


def budget(x: Expression, limits, prices=None) -> Constraint:
    """``sum_{c,r} p_c h x_{i,c,r} <= B_i``: each agent spends at most its budget (family ``budget``).

    ``limits``: one number for every agent, a dict ``{agent id: B_i}`` (agents
    left out have no row) or an array per agent (``inf`` or NaN: no row).
    ``p_c`` and ``h`` as in :func:`cost`.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", base_price=2.0)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> family = budget(lo.Model(inst).x, {"B": 1.0})
    >>> family.size, family.upper.tolist()
    (1, [1.0])
    """
    problem = _allocation_problem(x, "budget")
    if problem:
        return _failed_constraint(x, "budget", "budget(x)", problem)
    space = x.space
    if hasattr(limits, "items"):
        table, problem = _per_label(space, "agent", limits, missing=np.inf)
    elif _is_number(limits) or limits is None:
        table, problem = (None, "limits is required: a number, a dict {agent id: budget} or an array") if limits is None \
            else (np.full(space.size("agent"), float(limits)), None)
    else:
        table, problem = _per_label(space, "agent", limits, missing=np.inf)
    if problem:
        return _failed_constraint(x, "budget", "budget(x)", problem)
    table = np.where(np.isnan(table), np.inf, table)
    spend = cost(x, prices, by="agent")
    if spend.error:
        return _failed_constraint(x, "budget", "budget(x)", spend.error)
    chosen = np.flatnonzero(np.isfinite(table))
    spend = spend._restrict("agent", chosen, spend.text)
    return Constraint(spend, np.full(chosen.size, -np.inf), table[chosen], name="budget", kind="budget",
                      text="cost(x, by='agent') <= B",
                      description="sum_{c,r} p_c h x[i,c,r] <= B_i for each agent i with a budget")


def sharing_incentive(x: Expression, alpha: float = 1.0, *, capped: bool = False) -> Constraint:
    """``U_i(x) >= alpha U_i^ex`` for every agent whose equal share is worth something (family ``sharing_incentive``).

    ``U_i^ex = (w_i / sum_j w_j) sum_{c,r} k_c u_{i,c,r}`` is the utility of
    the weighted time-equal share (``models.md``, sharing incentive): with
    ``alpha = 1`` every agent does at least as well as under equal time
    sharing (``phi_i >= 1``).  An agent whose demand or rounds cannot hold its
    share makes ``alpha = 1`` infeasible.  ``capped=True`` compares with the
    demand-capped equal share instead, ``U_i >= alpha q_i U_i^ex``
    (:func:`laissez_opt.shares.capped_share_ratios`): that share is itself an
    allocation, so in fractional mode every ``alpha <= 1`` is feasible.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=4)], [lo.Agent("A", demand=1), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 3.0)])
    >>> x = lo.Model(inst).x          # A's equal share is 2 devices, but it uses at most 1
    >>> sharing_incentive(x).lower.tolist(), sharing_incentive(x, capped=True).lower.tolist()
    ([2.0, 6.0], [1.0, 6.0])
    """
    if not _is_number(alpha) or not math.isfinite(float(alpha)) or float(alpha) < 0:
        return _failed_constraint(x, "sharing_incentive", "sharing_incentive(x)",
                                  f"alpha must be a finite number >= 0, got {alpha!r}")
    problem = _allocation_problem(x, "sharing_incentive")
    if problem:
        return _failed_constraint(x, "sharing_incentive", "sharing_incentive(x)", problem)
    if not isinstance(capped, bool):
        return _failed_constraint(x, "sharing_incentive", "sharing_incentive(x)",
                                  f"capped must be true or false, got {capped!r}")
    ex = equal_share_utilities(x.model.instance)
    chosen = np.flatnonzero(ex > 0)
    floor = ex[chosen]
    reference = "U^ex"
    if capped:
        floor = floor * capped_share_ratios(x.model.instance)[chosen]
        reference = "q U^ex"
    gained = utility(x)
    gained = gained._restrict("agent", chosen, gained.text)
    return Constraint(gained, float(alpha) * floor, np.full(chosen.size, np.inf), name="sharing_incentive",
                      kind="sharing_incentive", text=f"utility(x) >= {float(alpha):g} {reference}",
                      description=f"U_i(x) >= {float(alpha):g} {reference}_i for each agent i with U_i^ex > 0")


def maxmin_floor(x: Expression, t, normalizer: str = "equal_share") -> Constraint:
    """``U_i(x) / (w_i E_i) >= t`` for every agent that can get value (family ``maxmin_floor``).

    ``E_i`` is 1 (``normalizer="raw"``) or ``U_i^ex / w_i`` (``"equal_share"``:
    then the left side is ``phi_i``), as in the ``maxmin`` method.  ``t`` is a
    number or a scalar expression, typically a variable to maximise:
    ``t = m.variable("t"); m.add(maxmin_floor(x, t)); m.maximize(t)`` is the
    first level of max-min fairness.  Agents with ``E_i = 0``, or no positive
    utility inside their rounds, have no row.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 3.0)])
    >>> m = lo.Model(inst, integral=False)
    >>> t = m.variable("t", upper=10.0)
    >>> _ = m.add(capacity(m.x)), m.add(maxmin_floor(m.x, t))
    >>> m.maximize(t)
    >>> round(m.solve().objective, 9)
    1.0
    """
    name, text = "maxmin_floor", "maxmin_floor(x)"
    problem = _allocation_problem(x, "maxmin_floor")
    if problem:
        return _failed_constraint(x, name, text, problem)
    inst, space = x.model.instance, x.space
    if normalizer == "raw":
        scale = inst.weights.copy()
    elif normalizer == "equal_share":
        scale = equal_share_utilities(inst)
    else:
        return _failed_constraint(x, name, text, f"unknown normalizer {normalizer!r}; choose equal_share or raw")
    upper = x.model.variables["x"].upper
    useful = (inst.edge_utility.reshape(-1) > 0) & (upper > 0)
    usable = np.bincount(x.index.codes[0], weights=useful.astype(np.float64), minlength=inst.n_agents) > 0
    chosen = np.flatnonzero(usable & (scale > 0))
    factor = np.zeros(inst.n_agents)
    with np.errstate(over="ignore"):  # an overflow is refused where the values are read (value_unit)
        factor[chosen] = 1.0 / scale[chosen]
    level = utility(x).scale(agent=factor)
    level = level._restrict("agent", chosen, "utility(x) / (w E)")
    if isinstance(t, Expression):
        constraint = Constraint.compare(level, t, ">=")
    elif _is_number(t):
        constraint = Constraint.compare(level, float(t), ">=")
    else:
        return _failed_constraint(x, name, text, f"t must be a number or a scalar expression, got {type(t).__name__}")
    constraint.name, constraint.kind = name, "maxmin_floor"
    constraint.description = f"U_i(x) / (w_i E_i) >= t ({normalizer}) for each agent that can get value"
    return constraint


def envy_free(x: Expression, eps: float = 0.0) -> Constraint:
    """``(w_i / w_j) U_i(x_j) - U_i(x_i) <= eps`` for every ordered pair ``i != j`` (family ``envy_free``).

    ``U_i(x_j) = sum_{c,r} u_{i,c,r} x_{j,c,r}`` values agent ``j``'s bundle
    with ``i``'s utilities (pools incompatible with ``i`` are worth 0 to it),
    as the envy report of ``lo.check`` does (weighted envy-freeness, thesis
    002 eq. 3.5); ``eps`` is the envy tolerated, in ``i``'s utility units.
    Rows are indexed by ``agent`` (the one who might envy) and ``other``.
    It needs about ``(n - 1) E R`` coefficients: a family for tens to hundreds
    of agents, refused above :data:`ENVY_MAX_COEFFICIENTS`.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> family = envy_free(lo.Model(inst, integral=False).x)
    >>> family.size, family.expr.dims
    (2, ('agent', 'other'))
    """
    name, text = "envy_free", "envy_free(x)"
    if not _is_number(eps) or not math.isfinite(float(eps)) or float(eps) < 0:
        return _failed_constraint(x, name, text, f"eps must be a finite number >= 0, got {eps!r}")
    problem = _allocation_problem(x, "envy_free")
    if problem:
        return _failed_constraint(x, name, text, problem)
    model, inst = x.model, x.model.instance
    n, rounds = inst.n_agents, inst.rounds
    agent, pool, round_ = x.index.codes
    columns = x.cols.size
    by_pool = np.argsort(inst.edge_pool, kind="stable")
    degree = np.bincount(inst.edge_pool, minlength=inst.n_pools)
    first = np.concatenate([[0], np.cumsum(degree)[:-1]])
    own_terms = (n - 1) * columns
    cross_terms = int(degree[pool].sum())
    if own_terms + cross_terms > ENVY_MAX_COEFFICIENTS:
        return _failed_constraint(x, name, text, f"envy_free on {n} agents and {columns} allocation entries would need "
                                                 f"{own_terms + cross_terms:,} coefficients (more than "
                                                 f"{ENVY_MAX_COEFFICIENTS:,}); use it on fewer agents")
    pair = lambda i, j: i * (n - 1) + np.where(j < i, j, j - 1)  # noqa: E731  row of the ordered pair (i, j)
    u = inst.edge_utility.reshape(-1)
    # U_i(x_i) in every row (i, j), j != i.
    own_column = np.repeat(np.arange(columns), n - 1)
    own_agent = agent[own_column]
    other = np.tile(np.arange(n - 1), columns)
    other = other + (other >= own_agent)
    # -(w_i / w_j) U_i(x_j): each entry of j on pool c, valued by every agent i with an edge to c.
    cross_column = np.repeat(np.arange(columns), degree[pool])
    offset = np.arange(cross_terms) - np.repeat(np.cumsum(degree[pool]) - degree[pool], degree[pool])
    partner = by_pool[first[pool][cross_column] + offset]
    envier, owner = inst.edge_agent[partner], agent[cross_column]
    keep = envier != owner
    cross_column, partner, envier, owner = cross_column[keep], partner[keep], envier[keep], owner[keep]
    weights = inst.weights
    rows = np.concatenate([pair(own_agent, other), pair(envier, owner)])
    cols = np.concatenate([x.cols[own_column], x.cols[cross_column]])
    values = inst.edge_utility[partner, round_[cross_column]] if rounds > 1 else u[partner]
    coefs = np.concatenate([u[own_column], -(weights[envier] / weights[owner]) * values])
    first_agent = np.repeat(np.arange(n), n - 1)
    second = np.tile(np.arange(n - 1), n)
    second = second + (second >= first_agent)
    index = Index(("agent", "other"), (first_agent, second), n * (n - 1))
    expr = Expression(model, index, rows, cols, coefs, None, "U_i(x_i) - (w_i/w_j) U_i(x_j)")
    size = index.size
    return Constraint(expr, np.full(size, -float(eps)), np.full(size, np.inf), name=name, kind="envy_free",
                      text=f"(w_i/w_j) U_i(x_j) - U_i(x_i) <= {float(eps):g}",
                      description=f"(w_i / w_j) U_i(x_j) - U_i(x_i) <= {float(eps):g} for every ordered pair i != j")
