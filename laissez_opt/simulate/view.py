"""The round's view of the world: a one-round :class:`~laissez_opt.instance.Instance`.

Every policy, and through it every registered method, sees round ``r`` as an ordinary
one-round instance built from the base instance and the queues:

* pools and edges are the base instance's; the edge utility is ``u_{i,c,r}`` (round ``r``
  of the base instance, cyclically when the simulation runs longer) times the tick
  scale ``h / h_0`` (simulated round length over the instance's): the work one device
  does for the agent in this round;
* agent ``i`` keeps its id, weight, migration cost, task and flags, and carries the queue:
  ``work`` ``W_i`` = its backlog ``q_i^r`` (Themis's remaining work), ``elapsed`` ``t_i`` =
  rounds since its oldest queued job arrived (Themis's time in the system);
* its demand ``d_i^r`` (``demand`` rule ``"clear"``, the default) is the fewest devices that
  surely clear its backlog, ``ceil(q_i^r / u^min_{i,r})`` with ``u^min_{i,r}`` its slowest
  positive throughput, capped by the instance's ``d_i`` (rule ``"instance"``: ``d_i``
  itself).  Either way an agent with an empty queue asks for nothing (``d_i^r = 0``):
  it values no device this round (thesis 002, section 5.2: "agents submit their
  demand for the resources they require").

Building it does not re-check what the base instance already checked (the ids, edges
and numbers are the base instance's), and shares the base instance's arrays, so a
view costs ``O(n)`` per round plus, once per distinct round of the base instance,
``O(E)``: the simulation's per-round overhead stays small next to the policy.

Example
-------
>>> import numpy as np, laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("g", count=4)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "g", 2.0), lo.Edge("B", "g", 1.0)])
>>> views = ViewBuilder(inst, tick_scale=1.0, demand_rule="clear")
>>> v = views.view(0, backlog=np.array([3.0, 0.0]), elapsed=np.array([1.0, 0.0]))
>>> [(a.id, a.demand, a.work, a.elapsed) for a in v.agents], v.rounds
([('A', 2, 3.0, 1.0), ('B', 0, 0.0, 0.0)], 1)
>>> lo.solve(v, "welfare").utilities
{'A': 4.0, 'B': 0.0}
"""

from __future__ import annotations

import math

import numpy as np

from ..instance import Agent, Edge, Instance, check_instance

__all__ = ["ViewBuilder", "demands_to_clear"]


def _frozen(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


_new = object.__new__
_set = object.__setattr__


def _agent(base: Agent, demand, work: float, elapsed: float) -> Agent:
    """``base`` with the round's demand, work and elapsed time, present from round 0 with no deadline.

    Built field by field: ``Agent``'s own constructor re-normalises ``task`` (already normal
    in a checked instance), which would triple the cost of a view with many agents.
    """
    agent = _new(Agent)
    _set(agent, "id", base.id)
    _set(agent, "weight", base.weight)
    _set(agent, "demand", demand)
    _set(agent, "work", work)
    _set(agent, "arrival", 0)
    _set(agent, "deadline", None)
    _set(agent, "elapsed", elapsed)
    _set(agent, "migration_cost", base.migration_cost)
    _set(agent, "budget", base.budget)
    _set(agent, "arrivals", None)
    _set(agent, "required", base.required)
    _set(agent, "task", base.task)
    return agent


def demands_to_clear(backlog: np.ndarray, slowest: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``min(d_i, ceil(q_i / u^min_i))``; 0 for an empty queue or an agent with no usable edge.

    >>> demands_to_clear(np.array([0.0, 5.0, 5.0]), np.array([2.0, 2.0, 0.0]), np.array([9.0, 2.0, 9.0])).tolist()
    [0, 2, 0]
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        need = np.where((backlog > 0) & (slowest > 0), np.ceil(backlog / np.where(slowest > 0, slowest, 1.0) - 1e-9), 0.0)
    # A vanishing throughput would ask for infinitely many devices: no more than exist in any instance.
    return np.minimum(np.minimum(need, cap), float(2**62)).astype(np.int64)


class ViewBuilder:
    """Builds the round views of one base instance (see the module docstring)."""

    def __init__(self, base: Instance, *, tick_scale: float, demand_rule: str, round_hours: float | None = None,
                 check: bool = False):
        self.base = base
        self.tick_scale = float(tick_scale)
        self.demand_rule = demand_rule
        self.round_hours = base.round_hours * self.tick_scale if round_hours is None else round_hours
        self.check = check
        self._edges_round: int | None = None
        self._edges: tuple[Edge, ...] = ()
        self._utility: np.ndarray | None = None
        self._slowest_round: int | None = None
        self._slowest = np.zeros(0)
        constant = base.rounds == 1 or bool(np.all(base.edge_utility == base.edge_utility[:, :1]))
        self._constant = constant
        self._caps = np.array([np.inf if a.demand is None else float(a.demand) for a in base.agents])
        self._shared = {
            "agent_index": base.agent_index,
            "pool_index": base.pool_index,
            "edge_agent": _frozen(base.edge_agent),
            "edge_pool": _frozen(base.edge_pool),
            "counts": _frozen(base.counts),
            "base_prices": _frozen(base.base_prices),
            "weights": _frozen(base.weights),
            "compatible": _frozen(base.compatible),
        }

    def base_round(self, r: int) -> int:
        """The base instance's round whose utilities hold in simulated round ``r``."""
        return 0 if self._constant else r % self.base.rounds

    def edge_utility(self, r: int) -> np.ndarray:
        """``u_{i,c,r}`` times the tick scale per edge, shape ``(E,)``: the work of one device in round ``r``."""
        self._prepare(self.base_round(r))
        return self._utility[:, 0]

    def _prepare(self, k: int) -> None:
        if self._edges_round == k:
            return
        column = self.base.edge_utility[:, k] * self.tick_scale
        self._utility = _frozen(column[:, None].copy())
        if self._constant and self.tick_scale == 1.0 and not any(isinstance(e.utility, tuple) for e in self.base.edges):
            self._edges = self.base.edges
        else:
            values = column.tolist()
            self._edges = tuple(Edge(e.agent, e.pool, u, e.bid, e.cost) for e, u in zip(self.base.edges, values))
        self._edges_round = k

    def slowest(self, r: int) -> np.ndarray:
        """``u^min_{i,r}``: each agent's smallest positive per-device work in round ``r`` (0: none)."""
        k = self.base_round(r)
        if self._slowest_round != k:
            u = self.edge_utility(r)
            out = np.full(self.base.n_agents, np.inf)
            positive = u > 0
            np.minimum.at(out, self.base.edge_agent[positive], u[positive])
            self._slowest = np.where(np.isfinite(out), out, 0.0)
            self._slowest_round = k
        return self._slowest

    def demands(self, r: int, backlog: np.ndarray) -> np.ndarray:
        """``d_i^r`` under the demand rule."""
        if self.demand_rule == "clear":
            return demands_to_clear(backlog, self.slowest(r), self._caps)
        caps = np.where(np.isfinite(self._caps), self._caps, np.iinfo(np.int64).max // 4)
        return np.where(backlog > 0, caps, 0).astype(np.int64)

    def view(self, r: int, *, backlog: np.ndarray, elapsed: np.ndarray, demands: np.ndarray | None = None) -> Instance:
        """The one-round instance of round ``r``."""
        base = self.base
        self._prepare(self.base_round(r))
        if demands is None:
            demands = self.demands(r, backlog)
        unbounded = np.iinfo(np.int64).max // 4
        agents = tuple(
            _agent(a, None if d >= unbounded else d, q, t)
            for a, d, q, t in zip(base.agents, demands.tolist(), backlog.tolist(), elapsed.tolist())
        )
        view = Instance.__new__(Instance)
        view.pools = base.pools
        view.agents = agents
        view.edges = self._edges
        view.rounds = 1
        view.round_hours = self.round_hours
        view.name = f"{base.name}@r{r}"
        view.description = ""
        view.source = None
        view.__dict__.update(self._shared)
        view.__dict__["edge_utility"] = self._utility
        if self.check:  # tests: the view is a valid instance in its own right
            check_instance(view)
            assert all(math.isfinite(a.work) for a in agents)
        return view
