"""VCG: welfare-maximising allocation with reserve prices and Clarke pivot payments, ``models.md`` item 5.

Every value is money per device-round (a round lasts ``h`` = ``round_hours``
hours).  Agent ``i`` values one device of pool ``c`` in round ``r`` at
``v_{i,c,r}``: ``bid_{i,c} h`` when the edge states a bid (a bid is a price
per device-hour, the same in every round), otherwise its utility ``u_{i,c,r}``
(the value of one device for that round).  The operator values each device of
pool ``c`` it keeps for a round at its reserve ``beta_c = b_c h`` (the base
price ``b_c`` is per device-hour).  The welfare of a feasible allocation ``x``
(the families ``capacity`` and ``demand`` of
:mod:`laissez_opt.declare.families`) is the agents' values plus the operator's
reserve value of the unsold device-rounds:

.. math::

    W(x) = \\sum_{i,c,r} v_{i,c,r} x_{i,c,r}
           + \\sum_{c,r} \\beta_c \\Big(k_c - \\sum_i x_{i,c,r}\\Big)
         = \\sum_{i,c,r} (v_{i,c,r} - \\beta_c)\\, x_{i,c,r} + R \\sum_c \\beta_c k_c .

``x*`` maximises ``W``; an edge with ``v_{i,c,r} <= beta_c`` is fixed to 0 (the
operator keeps the device; this never changes ``W* = W(x*)``).  ``W*_{-i}``
is the same maximum with agent ``i``'s columns fixed to 0, and agent ``i``
pays the Clarke pivot

.. math::

    p_i = W^*_{-i} - \\big(W^* - v_i(x^*)\\big), \\qquad
    v_i(x^*) = \\sum_{c,r} v_{i,c,r} x^*_{i,c,r},

so its surplus is ``v_i(x*) - p_i = W* - W*_{-i}``.  The constraint matrix is
a bipartite incidence matrix (totally unimodular), so every one of the
``n + 1`` maximisations is an LP (or a min-cost flow) whose optimum equals the
integral one.  An agent that receives nothing in ``x*`` has ``W*_{-i} = W*``
and pays 0 (``x*`` stays feasible without it, and removing an agent never
raises the maximum), so only the winners need work.  By default
(``pivots="auto"``) their ``W*_{-i}`` come from the exchange graph of ``x*``
(:class:`ExchangeGraph`): one vectorised Bellman-Ford pass certifies ``x*``
and prices every winner that holds one device per round at its full demand;
successive shortest paths price the others.  With ``pivots="resolve"`` each
winner is re-solved instead: with HiGHS the model is passed once, the
winner's columns get upper bound 0 and the dual simplex warm-starts from the
optimal basis of ``x*``; with OR-Tools each re-solve is one min-cost flow.

Prices: with HiGHS (the default route) ``details["prices"]`` holds
market-clearing (Walrasian) prices per pool and round, ``beta_c + y_{c,r}`` with
``y`` the dual of the ``capacity`` row of ``x*``'s LP, in money per device-round.
At these prices every winner's bundle is one it prefers most and unsold
devices are priced at the reserve.  In the assignment game (unit demands)
the VCG payments equal the smallest Walrasian prices (Leonard, 1983), so a
winner's payment never exceeds what its bundle costs at any such prices; the
prices HiGHS returns are one vertex of that set, not always the smallest.

Guarantees (proofs in ``models/vcg.md``): truthful bidding is a dominant
strategy; ``0 <= p_i <= v_i(x*)`` (individually rational, no positive
transfers); with one device this is the second-price (Vickrey) auction with
reserve.  Money is quasi-linear, so the agents' weights ``w_i`` play no part.
Payments are money for the whole horizon; with one round of one hour (the
HotOS'25 example) they are prices per device-hour.

References: Vickrey (1961), Clarke (1971), Groves (1973); Leonard (1983) for
the assignment game; HotOS'25 LaissezCloud paper (seed 000), section 5, for
the second-price example; Ahuja, Magnanti & Orlin, *Network Flows* (1993).

Example (HotOS'25 section 5: one A10 with reserve 0.606, bids 0.687 and 0.762)
-------------------------------------------------------------------------------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10", count=1, base_price=0.606)],
...                    agents=[lo.Agent("A", demand=1), lo.Agent("B", demand=1)],
...                    edges=[lo.Edge("A", "A10", 0.687, bid=0.687),
...                           lo.Edge("B", "A10", 0.762, bid=0.762)])
>>> result = lo.solve(inst, "vcg")
>>> result.status, result.allocation[0]["agent"], round(result.payments["B"], 9), result.payments["A"]
('optimal', 'B', 0.687, 0.0)
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..declare import Model, capacity, demand, value
from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..limits import remaining
from ..method_spec import Method, Option, solver_options
from ..modeling import LinearModel
from ..modeling.highs_route import limit_next_run
from ..modeling.linear import Transportation
from ..modeling.solve import Solution, pick_route, solve_model
from ..result import Result
from .common import (AllocationColumns, allocation_result, allocation_size, capacity_prices, flow_route_size,
                     takes_flow_route)

__all__ = ["vcg_values", "vcg_reserves", "vcg_size", "build_vcg", "allocation_structure", "ExchangeGraph", "solve_vcg",
           "vcg_prices"]

# Worst last: the status of the whole mechanism is the worst of its n + 1 solves.
_STATUS_RANK = {"optimal": 0, "feasible": 1, "time_limit": 2}
_INTEGRAL_TOL = 1e-9


def vcg_values(instance: Instance) -> np.ndarray:
    """``v_{i,c,r}`` in money per device-round, shape ``(E, R)``: ``bid h`` in every round, else ``u_{i,c,r}``.

    A bid is a price per device-hour (the instance format's unit), so a round
    of ``h`` hours is worth ``bid h``; an edge without a bid is valued at its
    utility, which is already the value of one device for one round.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", (1.0, 2.0), bid=0.5), lo.Edge("B", "P", (3.0, 4.0))],
    ...                    rounds=2, round_hours=2.0)
    >>> vcg_values(inst).tolist()
    [[1.0, 1.0], [3.0, 4.0]]
    """
    has_bid = instance.edge_bid_given
    bids = np.repeat(instance.edge_bid[:, None] * instance.round_hours, instance.rounds, axis=1)
    return np.where(has_bid[:, None], bids, instance.edge_utility)


def vcg_reserves(instance: Instance) -> np.ndarray:
    """``beta_c = b_c h`` per pool, shape ``(m,)``: the operator's value of keeping one device for a round.

    The base price ``b_c`` is money per device-hour; values are per
    device-round (:func:`vcg_values`), so the reserve is taken for the same
    ``h`` hours.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", base_price=0.5)], agents=[lo.Agent("A")],
    ...                    edges=[lo.Edge("A", "P", 0.75)], round_hours=2.0)
    >>> vcg_reserves(inst).tolist()
    [1.0]
    """
    return instance.base_prices * instance.round_hours


def _surplus(instance: Instance, values: np.ndarray | None = None, reserves: np.ndarray | None = None) -> np.ndarray:
    """``v_{i,c,r} - beta_c`` per edge and round (negative where the reserve is not met)."""
    reserves = vcg_reserves(instance) if reserves is None else reserves
    return (vcg_values(instance) if values is None else values) - reserves[instance.edge_pool][:, None]


def build_vcg(
    instance: Instance, *, fractional: bool = False, values: np.ndarray | None = None
) -> tuple[LinearModel, AllocationColumns]:
    """Declare ``max_x W(x) = sum (v_{i,c,r} - beta_c) x_{i,c,r} + R sum_c beta_c k_c`` with ``beta_c = b_c h``.

    Declared with the public modelling API (:class:`laissez_opt.Model`): the
    allocation ``x`` with the ``demand`` and ``capacity`` families (a
    transportation structure, detected by the lowering), entries with
    ``v_{i,c,r} <= beta_c`` bounded by 0 (reserve: the operator keeps the
    device; a bound, not a row, so the structure stays), and the objective
    ``value(x, v - beta) + R sum_c beta_c k_c`` (the constant is the objective
    offset, so the objective is ``W(x)``).  ``values`` may pass
    :func:`vcg_values` of the instance when already computed.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("A10", base_price=0.5)], agents=[lo.Agent("A")],
    ...                    edges=[lo.Edge("A", "A10", 0.4)])
    >>> model, columns = build_vcg(inst)
    >>> model.summary()["transportation"], model.variables["x"].upper.tolist(), model.objective_offset
    (True, [0.0], 0.5)
    """
    reserves = vcg_reserves(instance)
    surplus = _surplus(instance, values, reserves)
    reserve_total = float(instance.rounds * np.dot(reserves, instance.counts.astype(float)))
    m = Model(instance, name="vcg", integral=not fractional)
    m.bound(m.x, upper=np.where(surplus.reshape(-1) > 0, np.inf, 0.0))
    m.add(demand(m.x))
    m.add(capacity(m.x))
    m.maximize(value(m.x, np.maximum(surplus, 0.0)) + reserve_total)
    model = m.lower()
    return model, AllocationColumns(instance, model.variables["x"])


#: Bytes per edge-round beyond :func:`allocation_size` that the HiGHS route holds (its LP copy, the
#: basis and the exchange graph): 845 bytes per edge were measured on it at 4,096 neocloud agents.
HIGHS_EXTRA_BYTES = 300


def vcg_size(instance: Instance, options: dict):
    """Size of a VCG run: one welfare model (re-used by every pivot) and the exchange graph of its optimum.

    What the run holds depends on the route: on the min-cost flow
    (``solver="auto"`` when the surplus values scale exactly to integers, or
    ``"ortools"``) about a quarter of the HiGHS route's bytes per edge.  The
    route is told from the options and the values before anything is built.

    >>> import laissez_opt as lo
    >>> inst = lo.generate("neocloud", 200, 20, seed=1)
    >>> vcg_size(inst, {}).bytes() < vcg_size(inst, {"solver": "highs"}).bytes()
    True
    """
    if takes_flow_route(instance, options, lambda: np.maximum(_surplus(instance), 0.0)):
        return flow_route_size(instance, "min-cost flow route: the welfare arcs and the exchange graph, "
                                         "re-used by every pivot")
    base = allocation_size(instance, note="HiGHS route: one welfare model re-used by every pivot, and the exchange graph")
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    return dataclasses.replace(base, dense_bytes=base.dense_bytes + edge_rounds * HIGHS_EXTRA_BYTES)


def allocation_structure(columns: AllocationColumns) -> Transportation:
    """The transportation structure of an allocation model, one left node per agent-round ``i R + r``.

    Left nodes have capacity ``d_i`` (``inf`` for an agent without a demand
    cap, which has no ``demand`` row), right nodes are pool-rounds ``c R + r``
    with capacity ``k_c``.  The lowering of a declared model numbers only the
    rows it has; the pivots need one node per agent-round.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B", demand=1)],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> t = allocation_structure(AllocationColumns(inst, None))
    >>> t.left.tolist(), t.left_capacity.tolist(), t.right_capacity.tolist()
    ([0, 1], [inf, 1.0], [2.0])
    """
    instance = columns.instance
    rounds = instance.rounds
    return Transportation(
        "x", columns.agent * rounds + columns.round, columns.pool * rounds + columns.round,
        np.repeat(instance.demands.astype(float), rounds), np.repeat(instance.counts.astype(float), rounds),
        "demand", "capacity",
    )


# ------------------------------------------------------------------ pivots by exchange paths
#: The most held units :meth:`ExchangeGraph.removal_loss` cancels one path at a time; beyond it
#: (agents holding thousands of devices) one re-solve without the agent is the faster proof.
MAX_PATH_UNITS = 256


class ExchangeGraph:
    """The residual (exchange) graph of an integral optimum of a transportation model.

    ``model`` carries a transportation structure (max ``sum_k w_k x_k`` subject
    to ``sum_{k in l} x_k <= d_l`` per left node, ``sum_{k in rho} x_k <= k_rho``
    per right node, ``0 <= x_k <= u_k``); ``values`` is an integral solution.
    Source and sink merge into one node ``o`` (the operator), and the arcs are

    * ``o -> l`` if ``x(l) < min(d_l, sum_k u_k)`` and ``l -> o`` if ``x(l) > 0`` (cost 0);
    * ``l -> rho`` if ``x_k < u_k`` (cost ``-w_k``) and ``rho -> l`` if ``x_k > 0`` (cost ``+w_k``);
    * ``rho -> o`` if ``x(rho) < k_rho`` and ``o -> rho`` if ``x(rho) > 0`` (cost 0).

    ``x`` is optimal iff the graph has no negative cycle.  A Bellman-Ford pass
    from ``o``, vectorised over the arcs, either finds the distances ``d(o, .)``
    (:attr:`certified`: an optimality certificate that does not trust the
    solver) or a negative cycle.  Removing a left node ``l`` that holds
    ``x(l) = 1`` with ``o -> l`` absent (:attr:`unit`) lowers the optimum by
    exactly ``d(o, l)`` (``models/vcg.md``, lemma 3), so one pass prices every
    such node at once.  :meth:`removal_loss` handles any other set of left
    nodes by successive shortest paths: each held unit is cancelled along the
    cheapest cycle through ``l -> o``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("A10", count=1, base_price=0.606)],
    ...                    agents=[lo.Agent("A", demand=1), lo.Agent("B", demand=1)],
    ...                    edges=[lo.Edge("A", "A10", 0.687), lo.Edge("B", "A10", 0.762)])
    >>> model, columns = build_vcg(inst)
    >>> graph = ExchangeGraph.build(model, np.array([0.0, 1.0]))   # B holds the A10
    >>> graph.certified, graph.unit.tolist(), round(float(graph.left_distances[1]), 12)
    (True, [False, True], 0.075)
    >>> round(graph.removal_loss([1]), 12)                        # W* - W*_{-B} = 0.762 - 0.687
    0.075
    """

    def __init__(self, t, x, upper, profit):
        self.t, self.x, self.upper, self.profit = t, x, upper, profit
        n_left, n_right = t.left_capacity.size, t.right_capacity.size
        self.n_left, self.n_right = n_left, n_right
        self.n_nodes = 1 + n_left + n_right
        reach = np.bincount(t.left, weights=np.minimum(upper, 2.0**52), minlength=n_left)
        self.left_cap = np.minimum(t.left_capacity, reach)
        self.right_cap = t.right_capacity
        self.left_flow = np.bincount(t.left, weights=x, minlength=n_left)
        self.right_flow = np.bincount(t.right, weights=x, minlength=n_right)
        self.unit = (self.left_flow == 1) & (self.left_cap == 1)
        # Candidate arcs, six groups (o->l, l->o, l->rho, rho->l, rho->o, o->rho); residual masks change.
        lefts, rights = 1 + np.arange(n_left), 1 + n_left + np.arange(n_right)
        left_node, right_node = 1 + t.left, 1 + n_left + t.right
        zl, zr = np.zeros(n_left, np.int64), np.zeros(n_right, np.int64)
        self.tails = np.concatenate([zl, lefts, left_node, right_node, rights, zr])
        self.heads = np.concatenate([lefts, zl, right_node, left_node, zr, rights])
        self.costs = np.concatenate([np.zeros(2 * n_left), -profit, profit, np.zeros(2 * n_right)])
        self.eps = 1e-13 * max(1.0, float(np.max(np.abs(profit), initial=0.0)))
        self.distances = None
        self._bellman_ford()

    @classmethod
    def build(cls, model: LinearModel, values: np.ndarray, structure: Transportation | None = None
              ) -> "ExchangeGraph | None":
        """The exchange graph of ``values`` in ``model``; None without a transportation structure or integral values.

        ``structure`` numbers the nodes (:func:`allocation_structure`: one left
        node per agent-round) instead of the model's detected structure; the
        model must still have a transportation structure.
        """
        t = model.transportation()
        if t is None:
            return None
        t = structure if structure is not None else t
        block = model.variables[t.arcs]
        x = values[block.slice]
        if not np.array_equal(x, np.round(x)):
            return None
        sign = 1.0 if model.sense == "max" else -1.0
        return cls(t, x.copy(), block.upper, sign * model.objective[block.slice])

    @property
    def left_distances(self) -> np.ndarray:
        """``d(o, l)`` per left node (``inf`` where unreachable)."""
        return self.distances[1 : 1 + self.n_left]

    @property
    def certified(self) -> bool:
        """True when no negative cycle exists: the solution is optimal."""
        return self.distances is not None

    def residual(self, x, left_flow, right_flow, left_cap) -> np.ndarray:
        """Mask of the candidate arcs present in the residual graph of the given flows."""
        return np.concatenate([
            left_flow < left_cap, left_flow > 0, x < self.upper, x > 0,
            right_flow < self.right_cap, right_flow > 0,
        ])

    def _bellman_ford(self) -> None:
        keep = self.residual(self.x, self.left_flow, self.right_flow, self.left_cap)
        tails, heads, costs = self.tails[keep], self.heads[keep], self.costs[keep]
        order = np.argsort(heads, kind="stable")
        tails, heads, costs = tails[order], heads[order], costs[order]
        targets, starts = np.unique(heads, return_index=True)
        dist = np.full(self.n_nodes, np.inf)
        dist[0] = 0.0
        for _ in range(self.n_nodes + 1):
            if targets.size == 0:
                break
            best = np.minimum.reduceat(dist[tails] + costs, starts)
            # Float sums of one cycle in different orders differ by ~1e-16: ignore gains below eps.
            better = best < dist[targets] - self.eps
            if not better.any():
                break
            dist[targets[better]] = best[better]
        else:
            return  # still improving after |V| passes: a negative cycle, x is not optimal
        self.distances = dist

    # ------------------------------------------------------------ removals
    def _prepare(self) -> None:
        """Indexes and the state every removal starts from (built once, on first use)."""
        if hasattr(self, "_by_left"):
            return
        t, w, x, upper = self.t, self.profit, self.x, self.upper
        size = self.n_right + 1
        self._by_left = np.argsort(t.left, kind="stable")
        self._left_ptr = np.searchsorted(t.left[self._by_left], np.arange(self.n_left + 1))
        # Arcs grouped by right node, best (largest w) first within each group.
        self._by_right = np.lexsort((-w, t.right))
        self._right_ptr = np.searchsorted(t.right[self._by_right], np.arange(self.n_right + 1))
        # Arcs with room (o -> l -> rho usable) and the two best of them into each right node.
        room = (self.left_flow[t.left] < self.left_cap[t.left]) & (x < upper)
        ordered = self._by_right[room[self._by_right]]
        group = t.right[ordered]
        first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if ordered.size else np.zeros(0, np.int64)
        second = first + 1
        second_ok = second < ordered.size
        second_ok[second_ok] = group[second[second_ok]] == group[first[second_ok]]
        best = [np.full(self.n_right, -1), np.full(self.n_right, -1)]
        best[0][group[first]] = ordered[first]
        best[1][group[first[second_ok]]] = ordered[second[second_ok]]
        self._room, self._spare_arcs = room, best
        # Swap candidates of x*: a holder of rho (arc give) could take rho' instead (arc take), at
        # cost w_give - w_take on the contracted arc rho -> rho'.  Grouped by left node, and indexed
        # by matrix entry rho * size + rho' so that dropping one left node's candidates is local.
        give, take = self._swaps(x, np.unique(t.left[x > 0]))
        entry = t.right[give] * size + t.right[take]
        cost = w[give] - w[take]
        by_entry = np.argsort(entry, kind="stable")
        keys, starts = np.unique(entry[by_entry], return_index=True)
        matrix = np.full(size * size, np.inf)
        if keys.size:
            matrix[keys] = np.minimum.reduceat(cost[by_entry], starts)
        self._base = {
            "give": give, "take": take, "owner": t.left[give], "entry": entry, "cost": cost,
            "by_entry": by_entry, "keys": keys, "starts": starts,
            "ends": np.append(starts[1:], entry.size), "matrix": matrix,
        }

    def _swaps(self, x, left_nodes) -> tuple[np.ndarray, np.ndarray]:
        """(give, take) arc pairs of ``left_nodes`` under ``x``: give held, take with room, distinct."""
        gives, takes = [], []
        for a in np.asarray(left_nodes, dtype=np.int64).tolist():
            arcs = self._by_left[self._left_ptr[a] : self._left_ptr[a + 1]]
            held, free = arcs[x[arcs] > 0], arcs[x[arcs] < self.upper[arcs]]
            give, take = np.repeat(held, free.size), np.tile(free, held.size)
            keep = give != take
            gives.append(give[keep])
            takes.append(take[keep])
        if not gives:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(gives), np.concatenate(takes)

    def removal_loss(self, left_nodes) -> float | None:
        """Optimum minus the optimum with every left node in ``left_nodes`` forced to 0.

        Successive shortest paths on a copy of the flow: the node's capacity is
        cut to its flow (removing ``o -> l``), then each held unit is cancelled
        along the cheapest cycle through ``l -> o``.  The cycle is found on the
        graph contracted to ``o`` and the right nodes: a left node in the middle
        of a path only swaps one held unit for another (arc ``rho -> rho'`` of
        cost ``w_{l,rho} - w_{l,rho'}``); a left node with room starts a path
        (arc ``o -> rho'`` of cost ``-w_{l,rho'}``); ``o -> rho`` of cost 0
        unsells a unit.  Bellman-Ford runs on the dense ``(|right| + 1)^2``
        matrix of the contracted arcs, which is updated, not rebuilt, as flows
        change.  Returns None when a check fails, or when the nodes hold more than
        :data:`MAX_PATH_UNITS` units (the caller then re-solves).
        """
        if self.distances is None:
            return None
        self._prepare()
        t, w, upper, base = self.t, self.profit, self.upper, self._base
        n_right = o = self.n_right
        size = n_right + 1
        by_left, left_ptr, by_right, right_ptr = self._by_left, self._left_ptr, self._by_right, self._right_ptr
        x = self.x.copy()
        left_cap = self.left_cap.copy()
        left_flow = self.left_flow.copy()
        right_flow = self.right_flow.copy()
        nodes = [int(l) for l in left_nodes if left_flow[l] > 0]
        if float(left_flow[nodes].sum()) > MAX_PATH_UNITS:
            return None  # one path per held unit: many units are priced faster by a re-solve
        left_cap[nodes] = left_flow[nodes]

        # The best arc with room into each right node (o -> l -> rho), kept up to date.
        room = self._room.copy()
        spare_arc = self._spare_arcs[0].copy()

        def rescan(rhos):
            """Best arc with room into each right node of ``rhos`` (segments are sorted best first)."""
            rhos = np.asarray(rhos, dtype=np.int64)
            starts, lens = right_ptr[rhos], right_ptr[rhos + 1] - right_ptr[rhos]
            rhos, starts, lens = rhos[lens > 0], starts[lens > 0], lens[lens > 0]
            if not rhos.size:
                return
            offsets = np.cumsum(lens) - lens
            pos = np.repeat(starts, lens) + np.arange(lens.sum()) - np.repeat(offsets, lens)
            ranked = np.where(room[by_right[pos]], np.arange(pos.size), pos.size)
            first = np.minimum.reduceat(ranked, offsets)
            found = first < pos.size
            spare_arc[rhos] = np.where(found, by_right[pos[np.minimum(first, pos.size - 1)]], -1)

        cut = np.concatenate([by_left[left_ptr[l] : left_ptr[l + 1]] for l in nodes]) if nodes else np.zeros(0, np.int64)
        room[cut] = False
        lost = []
        for rho in np.unique(t.right[cut]).tolist():
            if spare_arc[rho] >= 0 and not room[spare_arc[rho]]:
                runner_up = self._spare_arcs[1][rho]
                if runner_up >= 0 and room[runner_up]:
                    spare_arc[rho] = runner_up
                else:
                    lost.append(rho)
        rescan(lost)

        # Contracted swap arcs: those of x* (minus the left nodes whose flow changed) and the
        # recomputed ones of those nodes.
        matrix_base = base["matrix"].copy()
        base_ok = np.ones(base["give"].size, dtype=bool)
        redone: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def drop_base(a):
            lo_, hi_ = np.searchsorted(base["owner"], a), np.searchsorted(base["owner"], a, side="right")
            if lo_ == hi_:
                return
            base_ok[lo_:hi_] = False
            entries = base["entry"][lo_:hi_]  # distinct: one arc per (left node, right node)
            group = np.searchsorted(base["keys"], entries)
            starts, lens = base["starts"][group], base["ends"][group] - base["starts"][group]
            offsets = np.cumsum(lens) - lens
            idx = base["by_entry"][np.repeat(starts, lens) + np.arange(lens.sum()) - np.repeat(offsets, lens)]
            matrix_base[entries] = np.minimum.reduceat(np.where(base_ok[idx], base["cost"][idx], np.inf), offsets)

        loss = 0.0
        for l in nodes:
            while left_flow[l] > 0:
                if redone:
                    r_give = np.concatenate([g for g, _ in redone.values()])
                    r_take = np.concatenate([k for _, k in redone.values()])
                else:
                    r_give = r_take = np.zeros(0, np.int64)
                r_entry = t.right[r_give] * size + t.right[r_take]
                r_cost = w[r_give] - w[r_take]
                matrix_redone = np.full(size * size, np.inf)
                np.minimum.at(matrix_redone, r_entry, r_cost)
                matrix = np.minimum(matrix_base, matrix_redone).reshape(size, size)
                # Arcs from o: a left node with room takes a unit (cost -w), or a unit is unsold (cost 0).
                spare = np.where(spare_arc >= 0, -w[spare_arc], np.inf)
                direct = np.where(right_flow > 0, 0.0, np.inf)
                matrix[o, :n_right] = np.minimum(spare, direct)
                dist = matrix[o].copy()
                dist[o] = 0.0
                pred = np.full(size, o)
                for _ in range(size + 1):
                    cand = dist[:, None] + matrix
                    best_from = np.argmin(cand, axis=0)
                    best = cand[best_from, np.arange(size)]
                    better = best < dist - self.eps
                    better[o] = False
                    if not better.any():
                        break
                    dist[better] = best[better]
                    pred[better] = best_from[better]
                else:
                    return None
                # Final arc: l gives up one unit of a pool it holds; trace the path back to o.
                held = by_left[left_ptr[l] : left_ptr[l + 1]]
                held = held[x[held] > 0]
                final = held[np.argmin(dist[t.right[held]] + w[held])]
                changed, delta = [int(final)], [-1.0]
                v = int(t.right[final])
                for _ in range(size + 1):
                    u = int(pred[v])
                    if u == o:
                        if spare[v] < direct[v]:
                            changed.append(int(spare_arc[v]))
                            delta.append(1.0)
                        break
                    e, value = u * size + v, matrix[u, v]
                    if matrix_redone[e] <= matrix_base[e]:
                        k = np.flatnonzero((r_entry == e) & (r_cost == value))[0]
                        give, take = r_give[k], r_take[k]
                    else:
                        g = np.searchsorted(base["keys"], e)
                        idx = base["by_entry"][base["starts"][g] : base["ends"][g]]
                        k = idx[np.flatnonzero(base_ok[idx] & (base["cost"][idx] == value))[0]]
                        give, take = base["give"][k], base["take"][k]
                    changed += [int(give), int(take)]
                    delta += [-1.0, 1.0]
                    v = u
                else:
                    return None
                # An arc may appear twice, in opposite directions (a left node takes a unit it then
                # gives up): the two cancel, and the walk costs what the path without them costs.
                changed, delta = np.asarray(changed, dtype=np.int64), np.asarray(delta)
                loss += float(np.sum(-delta * w[changed]))
                np.add.at(x, changed, delta)
                np.add.at(left_flow, t.left[changed], delta)
                np.add.at(right_flow, t.right[changed], delta)
                left_cap[l] -= 1
                touched = sorted(set(t.left[changed].tolist()))
                if (np.any(x[changed] < 0) or np.any(x[changed] > upper[changed])
                        or np.any(left_flow[touched] > left_cap[touched])
                        or np.any(right_flow[t.right[changed]] > self.right_cap[t.right[changed]])):
                    return None  # pragma: no cover - a bookkeeping error; re-solve instead
                for a in touched:
                    drop_base(a)
                    redone[a] = self._swaps(x, [a])
                # Refresh room of the arcs whose status may have flipped, and the affected spare arcs.
                arcs = np.concatenate([by_left[left_ptr[a] : left_ptr[a + 1]] for a in touched])
                now = (left_flow[t.left[arcs]] < left_cap[t.left[arcs]]) & (x[arcs] < upper[arcs])
                flipped = arcs[now != room[arcs]]
                room[arcs] = now
                lost = []
                for arc in flipped.tolist():
                    rho = int(t.right[arc])
                    if room[arc] and (spare_arc[rho] < 0 or w[arc] > w[spare_arc[rho]]):
                        spare_arc[rho] = arc
                    elif not room[arc] and spare_arc[rho] == arc:
                        lost.append(rho)
                rescan(lost)
        return loss


# ------------------------------------------------------------------ pivots by re-solving
class _Outcome:
    """One maximisation: status, column values (integral when the vertex is), welfare W, seconds."""

    __slots__ = ("status", "values", "welfare", "solver_s", "route", "text")

    def __init__(self, status, values, welfare, solver_s, route, text=""):
        self.status, self.values, self.welfare = status, values, welfare
        self.solver_s, self.route, self.text = solver_s, route, text


def _welfare(model: LinearModel, values: np.ndarray) -> float:
    """``W(x)``: the objective with its offset (a plain pairwise sum: no BLAS call, whose threads can stall)."""
    return float(np.sum(model.objective * values)) + model.objective_offset


def _snap(values: np.ndarray) -> np.ndarray:
    """Round a vertex of the totally unimodular model to the integers it represents (within 1e-9)."""
    rounded = np.round(values)
    if np.max(np.abs(values - rounded), initial=0.0) <= _INTEGRAL_TOL:
        return rounded
    return values


class _HighsSession:
    """One highspy model, re-solved with one agent's columns fixed to 0, warm-started from ``x*``'s basis."""

    def __init__(self, model: LinearModel, *, threads=None, verbose=False, **_ignored):
        import highspy

        from ..modeling.highs_route import _pass_model

        self.highspy = highspy
        self.model = model
        self.upper = model.bounds()[1]
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", bool(verbose))
        if threads is not None:
            self.h.setOptionValue("threads", int(threads))
        # An LP: the transportation matrix is totally unimodular (integrality is free).
        _pass_model(self.h, model, False)
        self.basis = None
        self.row_dual = None

    def _run(self, time_limit) -> tuple[str, float, str]:
        h = self.h
        limit_next_run(h, time_limit)
        t0 = time.perf_counter()
        h.run()
        seconds = time.perf_counter() - t0
        status = h.getModelStatus()
        S = self.highspy.HighsModelStatus
        text = h.modelStatusToString(status)
        if status in (S.kOptimal, S.kModelEmpty):  # empty: no edge at all
            return "optimal", seconds, text
        if status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt):
            return "time_limit", seconds, text
        raise NoSolutionError(f"HiGHS returned {text} on a VCG welfare problem (x = 0 is always feasible)")

    def _values(self) -> np.ndarray:
        return _snap(np.asarray(self.h.getSolution().col_value, dtype=np.float64))

    def solve(self, time_limit=None) -> _Outcome:
        status, seconds, text = self._run(time_limit)
        if status != "optimal":
            info = self.h.getInfo()
            if info.primal_solution_status != self.highspy.SolutionStatus.kSolutionStatusFeasible:
                raise NoSolutionError(f"HiGHS stopped ({text}) before finding a feasible allocation")
        values = self._values()
        self.basis = self.h.getBasis()
        # The duals of x*'s LP, read before any pivot re-solve changes them: the market-clearing prices.
        self.row_dual = np.asarray(self.h.getSolution().row_dual, dtype=np.float64) if status == "optimal" else None
        return _Outcome(status, values, _welfare(self.model, values), seconds, "highspy-lp", text)

    def solve_without(self, cols: np.ndarray, time_limit=None) -> _Outcome:
        h = self.h
        cols32 = cols.astype(np.int32)
        zeros = np.zeros(cols.size)
        h.changeColsBounds(cols.size, cols32, zeros, zeros)
        try:
            status, seconds, text = self._run(time_limit)
            values = self._values() if status == "optimal" else None
        finally:
            h.changeColsBounds(cols.size, cols32, zeros, self.upper[cols])
            h.setBasis(self.basis)
        welfare = _welfare(self.model, values) if values is not None else None
        return _Outcome(status, values, welfare, seconds, "highspy-lp (warm start)", text)


class _RouteSession:
    """Any route of :func:`~laissez_opt.modeling.solve_model` (OR-Tools: one min-cost flow per solve)."""

    def __init__(self, model: LinearModel, *, solver: str, via: str, **options):
        self.model, self.solver, self.via, self.options = model, solver, via, options
        self.block = model.variables["x"]

    def solve(self, time_limit=None) -> _Outcome:
        sol = solve_model(self.model, solver=self.solver, via=self.via, time_limit=time_limit, **self.options)
        if sol.status == "infeasible":  # pragma: no cover - x = 0 is always feasible
            raise NoSolutionError(f"{sol.route} called a VCG welfare problem infeasible ({sol.solver_status})")
        values = _snap(sol.values)
        status = sol.status if sol.status != "feasible" or time_limit is None else "time_limit"
        return _Outcome(status, values, _welfare(self.model, values), sol.solve_s,
                        sol.route, sol.solver_status)

    def solve_without(self, cols: np.ndarray, time_limit=None) -> _Outcome:
        local = cols - self.block.start
        saved = self.block.upper[local].copy()
        self.block.upper[local] = 0.0
        try:
            return self.solve(time_limit)
        finally:
            self.block.upper[local] = saved


def _remaining(time_limit, start) -> float | None:
    """Seconds left of ``time_limit`` counted from ``start``, and of the run's deadline inside lo.solve."""
    own = None if time_limit is None else time_limit - (time.perf_counter() - start)
    return remaining(own)


def solve_vcg(
    instance: Instance,
    *,
    fractional: bool = False,
    solver: str = "auto",
    via: str = "direct",
    time_limit: float | None = None,
    pivots: str = "auto",
    threads: int | None = None,
    verbose: bool = False,
    backend: str | None = None,
) -> Result:
    """Welfare-maximising allocation ``x*`` and Clarke pivot payments; see the module docstring.

    ``p_i = W*_{-i} - (W* - v_i(x*))``; ``payments`` lists every agent (0 for
    those that receive nothing).  ``pivots`` chooses how each winner's
    ``W*_{-i}`` is found: ``"resolve"`` re-solves the model without ``i``
    (HiGHS: one model, bounds changed, warm start; OR-Tools: one min-cost flow
    each); ``"auto"`` (default) certifies ``x*`` with an :class:`ExchangeGraph`
    and reads ``W*_{-i} = W* - sum_r d(o, (i, r))`` for every winner holding
    one device per round at its full demand, and prices the other winners by
    successive shortest paths on the same graph (re-solving only if the
    certificate fails).

    ``details`` holds ``welfare`` (``W*``), ``welfare_without`` (``W*_{-i}``
    per agent), ``values`` (``v_i(x*)``), ``surplus`` (``v_i(x*) - p_i``),
    ``revenue`` (``sum_i p_i``), ``reserve_value`` (``beta_c = b_c h`` times
    unsold device-rounds), counts (``resolved``, ``by_paths``, ``skipped`` losers) and
    times (``solver_s`` inside the solver, ``paths_s``).  ``utilities`` are
    ``U_i(x*)`` as for every method (from the edges' utilities; equal to
    ``v_i(x*)`` when no edge states a bid, or bids equal utilities and rounds
    last one hour).  The status is
    ``optimal`` only if every solve was proven optimal, otherwise the worst
    one; ``details["unproven"]`` then names the agents whose payment is only
    a lower bound (``W*_{-i}`` replaced by ``W* - sum_{c,r} (v_{i,c,r} - beta_c) x*_{i,c,r}``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("A10", count=1, base_price=0.606)],
    ...                    agents=[lo.Agent("B", demand=1)], edges=[lo.Edge("B", "A10", 0.762)])
    >>> solve_vcg(inst, solver="ortools").payments  # a single bidder pays the reserve
    {'B': 0.606}
    """
    if pivots not in ("auto", "resolve"):
        raise InputError(f"pivots must be 'auto' or 'resolve', got {pivots!r}", path="option pivots")
    options = {"threads": threads, "verbose": verbose}
    if backend is not None:
        options["backend"] = backend
    start = time.perf_counter()
    edge_values = vcg_values(instance)
    model, columns = build_vcg(instance, fractional=fractional, values=edge_values)
    route_choice = None
    if solver == "auto":
        if via == "direct":
            solver, picked, _, route_choice = pick_route(model)
            if picked is not None and backend is None:
                options["backend"] = picked
        else:
            solver, route_choice = "highs", "via pyomo: HiGHS"
    direct_highs = solver == "highs" and via == "direct"
    if direct_highs:
        session = _HighsSession(model, **options)
    else:
        session = _RouteSession(model, solver=solver, via=via, **options)
    build_s = time.perf_counter() - start
    main = session.solve(_remaining(time_limit, start))
    block = columns.block
    x_star = main.values[block.slice]
    values_er = edge_values[columns.edge, columns.round]
    reserves = vcg_reserves(instance)
    reserve = reserves[columns.pool]
    n, rounds = instance.n_agents, instance.rounds
    agent_value = np.bincount(columns.agent, weights=values_er * x_star, minlength=n)
    agent_gain = np.bincount(columns.agent, weights=(values_er - reserve) * x_star, minlength=n)
    received = np.bincount(columns.agent, weights=np.abs(x_star), minlength=n) > 1e-9
    welfare = main.welfare

    t_paths = time.perf_counter()
    by_paths = np.zeros(n, dtype=bool)
    without = np.full(n, welfare)
    graph = None
    if pivots == "auto" and main.status == "optimal" and received.any():
        graph = ExchangeGraph.build(model, main.values, allocation_structure(columns))
    if graph is not None and graph.certified:
        # Left nodes are agent-rounds, numbered i * R + r (allocation_structure).
        holds = graph.left_flow.reshape(n, rounds) > 0
        unit = graph.unit.reshape(n, rounds)
        dist = graph.left_distances.reshape(n, rounds)
        simple = received & np.all(unit | ~holds, axis=1)
        without[simple] = welfare - np.where(holds, dist, 0.0).sum(axis=1)[simple]
        by_paths = simple.copy()
        for i in np.flatnonzero(received & ~simple).tolist():
            loss = graph.removal_loss(i * rounds + np.flatnonzero(holds[i]))
            if loss is not None:
                without[i] = welfare - loss
                by_paths[i] = True
    paths_s = time.perf_counter() - t_paths

    order = np.argsort(columns.agent, kind="stable")
    bounds = np.searchsorted(columns.agent[order], np.arange(n + 1))
    statuses = [main.status]
    solver_s = main.solver_s
    unproven: list[str] = []
    resolved = 0
    for i in np.flatnonzero(received & ~by_paths).tolist():
        cols = block.start + order[bounds[i] : bounds[i + 1]]
        left = _remaining(time_limit, start)
        outcome = None
        if left is None or left > 0:
            outcome = session.solve_without(cols, left)
            resolved += 1
            solver_s += outcome.solver_s
            statuses.append(outcome.status)
        if outcome is not None and outcome.status == "optimal":
            without[i] = outcome.welfare
        else:
            without[i] = welfare - agent_gain[i]  # lower bound: x* without i is feasible for the others
            unproven.append(instance.agents[i].id)
            if outcome is None:
                statuses.append("time_limit")
    payments = without - (welfare - agent_value)
    payments[~received] = 0.0
    payments = np.where(np.abs(payments) <= 1e-12 * max(1.0, abs(welfare)), 0.0, payments)
    status = max(statuses, key=_STATUS_RANK.__getitem__)

    sold = np.bincount(columns.pool, weights=x_star, minlength=instance.n_pools)
    reserve_value = float(np.dot(reserves, rounds * instance.counts - sold))
    ids = [a.id for a in instance.agents]
    revenue = float(payments.sum())
    details = {
        "welfare": welfare,
        "welfare_without": dict(zip(ids, without.tolist())),
        "values": dict(zip(ids, agent_value.tolist())),
        "surplus": dict(zip(ids, (agent_value - payments).tolist())),
        "revenue": revenue,
        "reserve_value": reserve_value,
        "operator_total": revenue + reserve_value,
        "pivots": pivots,
        "by_paths": int(by_paths.sum()),
        "resolved": resolved,
        "skipped": int(n - received.sum()),
        "solver_s": solver_s,
        "paths_s": paths_s,
        "statuses": {s: statuses.count(s) for s in sorted(set(statuses), key=_STATUS_RANK.__getitem__)},
        "unproven": unproven,
        "value_unit": "money per device-round (bids and base prices per device-hour times round_hours), summed over rounds",
    }
    if route_choice is not None:
        details["route_choice"] = route_choice
    prices = capacity_prices(instance, model, getattr(session, "row_dual", None), base=reserves)
    if prices is not None:
        details["prices"] = prices
    proven = main.status == "optimal"
    solution = Solution(
        status, main.values, welfare, welfare if proven else None, 0.0 if proven else None,
        "highs" if direct_highs else solver,
        main.route + (" + exchange paths" if by_paths.any() else "") + (" + re-solves" if resolved else ""),
        build_s, solver_s, main.text,
        f"payments of {len(unproven)} agent(s) are lower bounds (a solve was not proven optimal)" if unproven else "",
    )
    params = {"time_limit": time_limit, "fractional": fractional, "via": via, "pivots": pivots}
    result = allocation_result(instance, "vcg", columns, solution, fractional=fractional, params=params, details=details)
    result.payments = dict(zip(ids, payments.tolist()))
    result.timing["paths_s"] = paths_s
    result.timing["vcg_s"] = time.perf_counter() - start
    return result


def vcg_prices(instance: Instance) -> dict | None:
    """Walrasian prices on bids with reserves: ``beta_c + y_{c,r}`` from the VCG allocation LP (money per device-round).

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/hotos25-section5-bids.json")
    >>> vcg_prices(inst)         # the losing bid clears the market, as the second price does
    {'A10': 0.687}
    """
    model, _ = build_vcg(instance, fractional=True)
    solution = solve_model(model, duals=True)
    return capacity_prices(instance, model, None if solution.duals is None else solution.duals.row,
                           base=vcg_reserves(instance))


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The allocation model ``lo.build(instance, "vcg", fractional=...)`` exports (the payments need one per winner)."""
    return build_vcg(instance, fractional=bool(options.get("fractional")))[0]


METHOD = Method(
    name="vcg",
    kind="exact",
    objective="max W = sum_i v_i(x) + sum_c b_c h * unsold device-rounds_c; Clarke pivot payments p_i = W*_{-i} - (W* - v_i(x*))",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="VCG auction with reserves b_c: welfare-maximising allocation on bids, Clarke pivot payments (exchange paths or re-solves).",
    run=solve_vcg,
    options=solver_options(fractional=True, mip_gap=None, auto=True) + (
        Option("pivots", "choice", "auto", "how W*_{-i} is found: exchange paths with re-solve fallback (auto) or one re-solve per winner",
               choices=("auto", "resolve")),
    ),
    estimate=vcg_size,
    build=_export_model,
    exported="the welfare-maximising allocation on bids with reserves, W(x); each Clarke pivot W*_{-i} is the same "
             "model with agent i's columns fixed to 0",
)
