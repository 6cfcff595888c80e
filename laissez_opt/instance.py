"""The typed instance graph: agents, accelerator pools, compatibility edges, rounds.

Notation (``models.md``): agents ``i in N`` with weight ``w_i`` and demand ``d_i``;
pools ``c in C`` with ``k_c`` identical devices and base price ``b_c``; rounds
``r in R``; an edge ``(i, c)`` carries ``u_{i,c,r}``, the utility of one device
of pool ``c`` to agent ``i`` in round ``r``.  A missing edge means incompatible.

The graph is held twice, each built once and only when first asked for:

* as arrays for model building: the edge list (``edge_agent``, ``edge_pool``,
  ``edge_utility`` of shape ``E x R``) and the dense views ``utility``
  (``n x m x R``), ``counts``, ``weights``, ``demands``;
* as a :mod:`networkx` bipartite graph (:attr:`Instance.graph`) for analysis.

Example
-------
>>> from laissez_opt.instance import Instance, Pool, Agent, Edge
>>> inst = Instance(pools=[Pool("A10", count=1)], agents=[Agent("A"), Agent("B")],
...                 edges=[Edge("A", "A10", 0.9), Edge("B", "A10", 0.5)])
>>> inst.utility.shape
(2, 1, 1)
>>> sorted(inst.graph.neighbors("pool:A10"))
['agent:A', 'agent:B']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .errors import InputError

__all__ = ["Pool", "Agent", "Edge", "Instance", "MAX_INTEGER", "MAX_MAGNITUDE"]

#: Largest count, demand, round number or horizon the format accepts (int32: every
#: consumer can hold it, and sums over pools stay exact in float64).
MAX_INTEGER = 2**31 - 1
#: Largest magnitude of a real number (utility, bid, cost, price, weight, work, ...):
#: products of two such numbers stay below the 1e20 that HiGHS treats as infinite.
MAX_MAGNITUDE = 1e9



@dataclass(frozen=True, slots=True)
class Pool:
    """``k_c`` identical devices of one hardware type, with base price ``b_c`` per device-hour.

    ``resources`` (``drf``) gives the pool's capacity per resource kind, for
    example ``{"cpu": 32, "memory": 256}``; see :attr:`capacity_vector`.
    """

    id: str
    count: int = 1
    cluster: str | None = None
    base_price: float = 0.0
    resources: tuple[tuple[str, float], ...] | None = None

    def __post_init__(self):
        if isinstance(self.resources, Mapping):
            object.__setattr__(self, "resources", tuple(self.resources.items()))

    @property
    def capacity_vector(self) -> dict[str, float]:
        """Capacity per resource kind (``drf``): ``resources``, with ``accelerator`` defaulting to ``count``.

        Kinds not listed have capacity 0.
        """
        out = {"accelerator": float(self.count)}
        out.update((k, float(v)) for k, v in (self.resources or ()))
        return out


@dataclass(frozen=True, slots=True)
class Agent:
    """A tenant, application or job ``i``.

    ``demand`` is ``d_i``, the most devices usable in one round (``None``: unbounded);
    ``work`` is ``W_i``; ``arrival`` ``a_i`` and ``deadline`` ``D_i`` are rounds;
    ``elapsed`` is ``t_i``; ``migration_cost`` is ``mu_i``; ``arrivals`` holds the
    per-round job arrivals of queue models; ``required`` agents must be placed
    (``min_cost``); ``task`` (``drf``) is the demand of one task per resource
    kind, for example ``{"accelerator": 1, "cpu": 4}``; see :attr:`task_vector`.
    """

    id: str
    weight: float = 1.0
    demand: int | None = None
    work: float | None = None
    arrival: int = 0
    deadline: int | None = None
    elapsed: float = 0.0
    migration_cost: float = 0.0
    budget: float | None = None
    arrivals: tuple[float, ...] | None = None
    required: bool = False
    task: tuple[tuple[str, float], ...] | None = None

    def __post_init__(self):
        if isinstance(self.task, Mapping):
            object.__setattr__(self, "task", tuple(self.task.items()))

    @property
    def task_vector(self) -> dict[str, float]:
        """Demand of one task per resource kind (``drf``); ``{"accelerator": 1}`` when not given.

        Kinds not listed are not needed (0).
        """
        if self.task is None:
            return {"accelerator": 1.0}
        return {k: float(v) for k, v in self.task}


@dataclass(frozen=True, slots=True)
class Edge:
    """Compatibility of agent ``i`` with pool ``c``: ``u_{i,c,r}`` per device, optional bid and cost."""

    agent: str
    pool: str
    utility: float | tuple[float, ...]
    bid: float | None = None
    cost: float | None = None

    def utility_in(self, round_index: int) -> float:
        """``u_{i,c,r}`` for round ``r`` (a scalar utility holds in every round)."""
        if isinstance(self.utility, tuple):
            return self.utility[round_index]
        return self.utility


def _finite(value, path: str, *, minimum: float | None = None, strict: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {value!r}", path=path)
    if minimum is not None and (value <= minimum if strict else value < minimum):
        relation = ">" if strict else ">="
        raise InputError(f"must be {relation} {minimum:g}, got {value!r}", path=path)
    magnitude = abs(value)
    if magnitude > MAX_MAGNITUDE:
        raise InputError(f"{value!r} is larger than {MAX_MAGNITUDE:g} in magnitude; rescale the unit", path=path)


def _integer(value, path: str, what: str, *, minimum: int = 0, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INTEGER:
        suffix = " or null" if nullable else ""
        raise InputError(f"{what} must be an integer from {minimum} to {MAX_INTEGER}{suffix}, got {value!r}", path=path)


def _text(value, path: str, *, identifier: bool = False, nullable: bool = False) -> None:
    """A string of valid Unicode (no lone surrogates); an identifier is also 1..200 characters, trimmed."""
    if value is None and nullable:
        return
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {value!r} ({type(value).__name__})", path=path)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"not valid Unicode text: lone surrogate {value[exc.start]!r} at character {exc.start}", path=path
            ) from None
    if identifier and (not value or len(value) > 200 or value != value.strip()):
        raise InputError(
            f"ids are 1 to 200 characters with no leading or trailing whitespace, got {value[:60]!r}", path=path
        )


def _check_vector(pairs, path: str) -> None:
    """A resource vector: distinct non-empty kind names with finite amounts >= 0."""
    seen = set()
    for kind, value in pairs:
        if not isinstance(kind, str) or not kind.strip():
            raise InputError(f"resource kind names must be non-empty strings, got {kind!r}", path=path)
        _text(kind, path)
        if kind in seen:
            raise InputError(f"resource kind {kind!r} given twice", path=f"{path}.{kind}")
        seen.add(kind)
        _finite(value, f"{path}.{kind}", minimum=0)


def check_instance(instance: "Instance") -> None:
    """Reference and range checks that a JSON Schema cannot express.

    Raises :class:`~laissez_opt.errors.InputError` naming the JSON path of the
    first problem: duplicate ids, edges to unknown agents or pools, repeated
    (agent, pool) pairs, per-round lists whose length is not ``rounds``, rounds
    outside the horizon, non-finite numbers, malformed resource vectors
    (``resources``, ``task``).
    """
    for field_name, kind in (("pools", Pool), ("agents", Agent), ("edges", Edge)):
        for k, item in enumerate(getattr(instance, field_name)):
            if not isinstance(item, kind):
                raise InputError(
                    f"expected a {kind.__name__}, got {type(item).__name__} (build one with lo.{kind.__name__}(...))",
                    path=f"$.{field_name}[{k}]",
                )
    _check_head(instance)
    _check_agents_and_edges(instance)


def _check_head(instance: "Instance") -> None:
    """The checks of :func:`check_instance` up to and including the pools (agents and edges not read)."""
    rounds = instance.rounds
    _integer(rounds, "$.rounds", "rounds", minimum=1)
    _finite(instance.round_hours, "$.round_hours", minimum=0, strict=True)
    _text(instance.name, "$.name")
    _text(instance.description, "$.description")
    if not instance.pools:
        raise InputError("an instance needs at least one pool", path="$.pools")
    if not instance.agents:
        raise InputError("an instance needs at least one agent", path="$.agents")
    pool_ids: dict[str, int] = {}
    for c, pool in enumerate(instance.pools):
        where = f"$.pools[{c}]"
        _text(pool.id, f"{where}.id", identifier=True)
        _text(pool.cluster, f"{where}.cluster", nullable=True)
        if pool.id in pool_ids:
            raise InputError(
                f"duplicate pool id {pool.id!r} (first at $.pools[{pool_ids[pool.id]}])",
                path=f"{where}.id",
            )
        pool_ids[pool.id] = c
        _integer(pool.count, f"{where}.count", "count", minimum=1)
        _finite(pool.base_price, f"{where}.base_price", minimum=0)
        if pool.resources is not None:
            _check_vector(pool.resources, f"{where}.resources")
            accelerators = dict(pool.resources).get("accelerator")
            if accelerators is not None and accelerators > pool.count:
                raise InputError(
                    f"resources.accelerator {accelerators!r} exceeds the pool's count {pool.count}",
                    path=f"{where}.resources.accelerator",
                )


def _check_agents_and_edges(instance: "Instance") -> None:
    rounds = instance.rounds
    pool_ids = {pool.id: c for c, pool in enumerate(instance.pools)}
    agent_ids: dict[str, int] = {}
    for i, agent in enumerate(instance.agents):
        where = f"$.agents[{i}]"
        _text(agent.id, f"{where}.id", identifier=True)
        if agent.id in agent_ids:
            raise InputError(
                f"duplicate agent id {agent.id!r} (first at $.agents[{agent_ids[agent.id]}])",
                path=f"{where}.id",
            )
        agent_ids[agent.id] = i
        _finite(agent.weight, f"{where}.weight", minimum=0, strict=True)
        _integer(agent.demand, f"{where}.demand", "demand", nullable=True)
        if not isinstance(agent.required, bool):
            raise InputError(f"required must be true or false, got {agent.required!r}", path=f"{where}.required")
        for name in ("work", "elapsed", "migration_cost", "budget"):
            value = getattr(agent, name)
            if value is not None:
                _finite(value, f"{where}.{name}", minimum=0)
        _integer(agent.arrival, f"{where}.arrival", "arrival")
        _integer(agent.deadline, f"{where}.deadline", "deadline", nullable=True)
        if not (0 <= agent.arrival < rounds):
            raise InputError(
                f"arrival round {agent.arrival} is outside the horizon 0..{rounds - 1}",
                path=f"{where}.arrival",
            )
        if agent.deadline is not None and agent.deadline < agent.arrival:
            raise InputError(
                f"deadline {agent.deadline} is before the arrival round {agent.arrival}",
                path=f"{where}.deadline",
            )
        if agent.arrivals is not None:
            if len(agent.arrivals) != rounds:
                raise InputError(
                    f"arrivals has {len(agent.arrivals)} entries but the instance has {rounds} rounds",
                    path=f"{where}.arrivals",
                )
            for r, value in enumerate(agent.arrivals):
                _finite(value, f"{where}.arrivals[{r}]", minimum=0)
        if agent.task is not None:
            _check_vector(agent.task, f"{where}.task")
            if not any(value > 0 for _, value in agent.task):
                raise InputError("a task needs a positive amount of at least one resource kind", path=f"{where}.task")
    seen: dict[tuple[str, str], int] = {}
    for e, edge in enumerate(instance.edges):
        where = f"$.edges[{e}]"
        if edge.agent not in agent_ids:
            raise InputError(f"unknown agent id {edge.agent!r}", path=f"{where}.agent")
        if edge.pool not in pool_ids:
            raise InputError(f"unknown pool id {edge.pool!r}", path=f"{where}.pool")
        key = (edge.agent, edge.pool)
        if key in seen:
            raise InputError(
                f"second edge for agent {edge.agent!r} and pool {edge.pool!r} "
                f"(first at $.edges[{seen[key]}])",
                path=where,
            )
        seen[key] = e
        if isinstance(edge.utility, tuple):
            if len(edge.utility) != rounds:
                raise InputError(
                    f"utility has {len(edge.utility)} entries but the instance has {rounds} rounds",
                    path=f"{where}.utility",
                )
            for r, value in enumerate(edge.utility):
                _finite(value, f"{where}.utility[{r}]", minimum=0)
        else:
            _finite(edge.utility, f"{where}.utility", minimum=0)
        for name in ("bid", "cost"):
            value = getattr(edge, name)
            if value is not None:
                _finite(value, f"{where}.{name}", minimum=0)


_AGENT_OF, _POOL_OF, _UTILITY_OF = attrgetter("agent"), attrgetter("pool"), attrgetter("utility")


class Instance:
    """One allocation problem: pools, agents, compatibility edges and rounds.

    Construction checks references and ranges (:func:`check_instance`); the
    array and graph views are built on first use and cached.  Instances are
    treated as immutable.
    """

    def __init__(
        self,
        pools: Sequence[Pool],
        agents: Sequence[Agent],
        edges: Iterable[Edge],
        *,
        rounds: int = 1,
        round_hours: float = 1.0,
        name: str = "instance",
        description: str = "",
        source: str | None = None,
    ):
        self.pools: tuple[Pool, ...] = tuple(pools)
        self.agents: tuple[Agent, ...] = tuple(agents)
        self.edges: tuple[Edge, ...] = tuple(edges)
        self.rounds = rounds
        self.round_hours = round_hours
        self.name = name
        self.description = description
        self.source = source
        try:
            check_instance(self)
        except InputError as err:
            raise err.located(source or "<python>")

    @classmethod
    def _prechecked(cls, pools: tuple, agents: tuple, edges: tuple, *, rounds: int, round_hours: float, name: str,
                    description: str, source: str | None, views: Mapping[str, object] = {}) -> "Instance":
        """An instance whose records passed every check of :func:`check_instance` already, as whole columns.

        Used by the fast file reader (``laissez_opt.io``), which checks the
        columns with numpy and builds the records without re-checking them one
        by one; ``views`` are array views it computed on the way (``edge_agent``,
        ``weights``, ...), stored as if they had been built on first use.
        """
        self = cls.__new__(cls)
        self.pools, self.agents, self.edges = pools, agents, edges
        self.rounds, self.round_hours, self.name, self.description, self.source = (
            rounds, round_hours, name, description, source)
        self.__dict__.update(views)
        return self

    def _records_later(self, field: str, count: int, build: Callable[[], tuple]) -> None:
        """Make ``agents`` or ``edges`` (``field``) a tuple of ``count`` records that ``build()`` makes on first use.

        A solver reads the array views, not the records: a file read for a
        solve need not pay a Python object per edge (about a third of reading
        a large file) unless something asks for the records.  ``build`` must
        be picklable (a ``functools.partial`` of a module function), since
        instances travel to worker processes.
        """
        self.__dict__.pop("_" + field, None)
        self.__dict__[f"_{field}_later"] = (count, build)

    def _records(self, field: str) -> tuple:
        records = self.__dict__.get("_" + field)
        if records is None:
            _, build = self.__dict__.pop(f"_{field}_later")
            records = self.__dict__["_" + field] = build()
        return records

    def _count(self, field: str) -> int:
        later = self.__dict__.get(f"_{field}_later")
        return later[0] if later is not None else len(self.__dict__["_" + field])

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The agent records, in the order of every array view's rows."""
        return self._records("agents")

    @agents.setter
    def agents(self, value) -> None:
        self.__dict__.pop("_agents_later", None)
        self.__dict__["_agents"] = value

    def agent_field(self, name: str) -> list:
        """Field ``name`` of every agent in row order, read from the columns while the records are unbuilt.

        A reader that defers the agent records (a file read, a generated or
        binary instance) keeps its columns; reading one of them costs a list,
        not a million records.  Otherwise the records are read.

        >>> inst = Instance([Pool("P")], [Agent("A", work=2.0), Agent("B")], [Edge("A", "P", 1.0), Edge("B", "P", 1.0)])
        >>> inst.agent_field("work")
        [2.0, None]
        """
        if name not in Agent.__dataclass_fields__:
            raise ValueError(f"agents have no field {name!r}")
        later = self.__dict__.get("_agents_later")
        column = getattr(later[1], "column", None) if later is not None else None
        if column is not None:
            return column(name)
        return [getattr(agent, name) for agent in self.agents]

    def agent_rows(self, rows: Iterable[int]) -> list[Agent]:
        """The agent records of ``rows`` (in that order), without building the others where the reader allows.

        >>> inst = Instance([Pool("P")], [Agent("A"), Agent("B", weight=2.0)], [Edge("A", "P", 1.0)])
        >>> [agent.id for agent in inst.agent_rows([1, 0])]
        ['B', 'A']
        """
        return self._record_rows("agents", rows)

    def _record_rows(self, field: str, rows: Iterable[int]) -> list:
        """Records ``rows`` of ``agents`` or ``edges``: from the deferred builder's ``rows`` when it has one."""
        rows = list(rows)
        later = self.__dict__.get(f"_{field}_later")
        subset = getattr(later[1], "rows", None) if later is not None else None
        if callable(subset):
            return list(subset(rows))
        records = self._records(field)
        return [records[i] for i in rows]

    @property
    def edges(self) -> tuple[Edge, ...]:
        """The edge records, in the order of every edge view."""
        return self._records("edges")

    @edges.setter
    def edges(self, value) -> None:
        self.__dict__.pop("_edges_later", None)
        self.__dict__["_edges"] = value

    def edge_rows(self, rows: Iterable[int]) -> list[Edge]:
        """The edge records of ``rows`` (in that order), without building the others where the reader allows.

        >>> inst = Instance([Pool("P"), Pool("Q")], [Agent("A")], [Edge("A", "P", 1.0), Edge("A", "Q", 2.0)])
        >>> [edge.pool for edge in inst.edge_rows([1])]
        ['Q']
        """
        return self._record_rows("edges", rows)

    def __repr__(self) -> str:
        return (
            f"Instance({self.name!r}: {self.n_agents} agents, {self.n_pools} pools "
            f"({int(self.counts.sum())} devices), {self.n_edges} edges, {self.rounds} rounds)"
        )

    # ----------------------------------------------------------------- sizes
    @property
    def n_agents(self) -> int:
        return self._count("agents")

    @property
    def n_pools(self) -> int:
        return len(self.pools)

    @property
    def n_edges(self) -> int:
        return self._count("edges")

    # --------------------------------------------------------------- indices
    @cached_property
    def agent_index(self) -> dict[str, int]:
        """Agent id -> row ``i`` of every array view."""
        ids = self.agent_field("id")
        return dict(zip(ids, range(len(ids))))

    @cached_property
    def pool_index(self) -> dict[str, int]:
        """Pool id -> column ``c`` of every array view."""
        return {pool.id: c for c, pool in enumerate(self.pools)}

    # ------------------------------------------------------------ edge views
    @cached_property
    def edge_agent(self) -> np.ndarray:
        """Agent row of each edge, shape ``(E,)``."""
        index = self.agent_index
        return np.fromiter(map(index.__getitem__, map(_AGENT_OF, self.edges)), dtype=np.int64, count=self.n_edges)

    @cached_property
    def edge_pool(self) -> np.ndarray:
        """Pool column of each edge, shape ``(E,)``."""
        index = self.pool_index
        return np.fromiter(map(index.__getitem__, map(_POOL_OF, self.edges)), dtype=np.int64, count=self.n_edges)

    @cached_property
    def edge_utility(self) -> np.ndarray:
        """``u_{i,c,r}`` per edge and round, shape ``(E, R)``."""
        values = list(map(_UTILITY_OF, self.edges))
        if not any(issubclass(kind, tuple) for kind in set(map(type, values))):
            # Scalar utilities (the common case): one C-level pass instead of a row copy per edge.
            scalar = np.fromiter(values, dtype=np.float64, count=self.n_edges)
            return np.repeat(scalar[:, None], self.rounds, axis=1) if self.rounds > 1 else scalar[:, None].copy()
        out = np.empty((self.n_edges, self.rounds), dtype=np.float64)
        for e, edge in enumerate(self.edges):
            out[e, :] = edge.utility
        return out

    @cached_property
    def edge_bid(self) -> np.ndarray:
        """Bid per edge (max price per device-hour); the utility's first round where no bid is given."""
        return np.array(
            [e.bid if e.bid is not None else e.utility_in(0) for e in self.edges], dtype=np.float64
        )

    @cached_property
    def edge_bid_given(self) -> np.ndarray:
        """Whether each edge states a bid (where not, :attr:`edge_bid` holds its round-0 utility)."""
        return np.fromiter((e.bid is not None for e in self.edges), dtype=bool, count=self.n_edges)

    @cached_property
    def edge_cost(self) -> np.ndarray:
        """Money to run the whole job on the edge's pool; NaN where the file gives none."""
        return np.array(
            [e.cost if e.cost is not None else np.nan for e in self.edges], dtype=np.float64
        )

    # ----------------------------------------------------------- dense views
    @cached_property
    def utility(self) -> np.ndarray:
        """Dense utility tensor ``u[i, c, r]``, shape ``(n, m, R)``, 0 off edges."""
        out = np.zeros((self.n_agents, self.n_pools, self.rounds), dtype=np.float64)
        out[self.edge_agent, self.edge_pool, :] = self.edge_utility
        return out

    @cached_property
    def compatible(self) -> np.ndarray:
        """Boolean ``(n, m)``: True where an edge exists."""
        out = np.zeros((self.n_agents, self.n_pools), dtype=bool)
        out[self.edge_agent, self.edge_pool] = True
        return out

    @cached_property
    def counts(self) -> np.ndarray:
        """``k_c`` per pool, shape ``(m,)``, integer."""
        return np.array([p.count for p in self.pools], dtype=np.int64)

    @cached_property
    def base_prices(self) -> np.ndarray:
        """``b_c`` per pool, shape ``(m,)``."""
        return np.array([p.base_price for p in self.pools], dtype=np.float64)

    @cached_property
    def weights(self) -> np.ndarray:
        """``w_i`` per agent, shape ``(n,)``."""
        return np.array(self.agent_field("weight"), dtype=np.float64)

    @cached_property
    def demands(self) -> np.ndarray:
        """``d_i`` per agent, shape ``(n,)``; ``inf`` where unbounded."""
        return np.array(
            [np.inf if demand is None else float(demand) for demand in self.agent_field("demand")], dtype=np.float64
        )

    @cached_property
    def last_rounds(self) -> np.ndarray:
        """The last round ``D_i`` each agent may use, clamped to the horizon, shape ``(n,)``, integer.

        ``min(deadline, R - 1)``, and ``R - 1`` when the deadline is null: a
        deadline after the last round constrains nothing, the same as none
        (``docs/instance-format.md``).  This is the one place where deadlines
        meet the horizon; models index rounds with it, so a deadline past the
        horizon (however large) can never select a round that does not exist.
        The minimum is taken on Python integers before the conversion, so no
        deadline overflows the array's integer type.
        """
        last = self.rounds - 1
        return np.array(
            [last if deadline is None else min(deadline, last) for deadline in self.agent_field("deadline")],
            dtype=np.int64,
        )

    @cached_property
    def effective_demands(self) -> np.ndarray:
        """``min(d_i, sum of k_c over the agent's compatible pools)``: a finite per-round cap."""
        reachable = np.zeros(self.n_agents, dtype=np.float64)
        np.add.at(reachable, self.edge_agent, self.counts[self.edge_pool].astype(np.float64))
        return np.minimum(self.demands, reachable)

    # ------------------------------------------------------------ the graph
    @cached_property
    def graph(self):
        """The bipartite :class:`networkx.Graph`.

        Nodes are ``"agent:<id>"`` (``bipartite=0``) and ``"pool:<id>"`` (``bipartite=1``)
        with their records as the ``data`` attribute; edges carry ``utility`` (a tuple
        over rounds), ``bid`` and ``cost``.
        """
        import networkx as nx

        g = nx.Graph(name=self.name, rounds=self.rounds, round_hours=self.round_hours)
        g.add_nodes_from((f"agent:{a.id}", {"bipartite": 0, "data": a}) for a in self.agents)
        g.add_nodes_from((f"pool:{p.id}", {"bipartite": 1, "data": p}) for p in self.pools)
        g.add_edges_from(
            (
                f"agent:{e.agent}",
                f"pool:{e.pool}",
                {
                    "utility": tuple(e.utility) if isinstance(e.utility, tuple) else (e.utility,) * self.rounds,
                    "bid": e.bid,
                    "cost": e.cost,
                },
            )
            for e in self.edges
        )
        return g
