"""Exact symmetry compression: agents that no model can tell apart are solved as one class.

Two agents ``i`` and ``j`` are *interchangeable* for a model when swapping them
maps every feasible allocation to a feasible allocation of the same objective:
the same pools with the same utilities in every round (``u_{i,c,r} = u_{j,c,r}``
on the same edge set), the same weight, demand, arrival and last round, and
equal values of every model-specific key (Themis: work and elapsed time; DRF:
the task vector).  The classes of interchangeable agents partition ``N``; a
class ``g`` of ``n_g`` members with member data ``(w, d)`` becomes one agent of
the *class instance* with demand ``n_g d`` and weight ``w`` (``weight="member"``)
or ``n_g w`` (``weight="total"``), on the member's edges.  Its allocation
``X_{g,c,r}`` is the class's total, and

* **fractional expansion**: ``x_{i,c,r} = X_{g,c,r} / n_g`` for every member ``i``
  (:meth:`AgentClasses.expand_fractional`);
* **integral expansion**: the ``X_{g,c,r}`` devices of each round dealt round
  robin to the members in index order, pools in order
  (:meth:`AgentClasses.expand_integral`): every member gets ``floor`` or ``ceil``
  of ``sum_c X_{g,c,r} / n_g <= d`` devices and at most ``ceil(X_{g,c,r} / n_g) <= k_c``
  of pool ``c``.

Both expansions are feasible allocations of the original instance whenever
``X`` is one of the class instance (capacities are unchanged, demands are
split evenly, windows are shared).  ``models/compression.md`` proves for which
models an optimum of the class instance expands to an optimum of the original
one (welfare, fractional leximin, DRF and Themis) and why integral leximin is
not among them in general.

Classes are found in ``O(E R log E)``: one 64-bit hash per agent over its
sorted edges and scalars, then every agent is compared, entry by entry, with
its class's first member; a hash collision can only split a class, never merge
two different agents.

Reference: symmetry reduction by orbits of the formulation's automorphism
group, Margot, "Symmetry in integer linear programming", in *50 Years of
Integer Programming* (2010), sec. 4; for the convex case, the averaging of an
optimum over a group of symmetries (a convex combination of optima) is the
standard argument, e.g. Gatermann & Parrilo, J. Pure Appl. Algebra 192 (2004).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("P", count=3)],
...                    agents=[lo.Agent("A"), lo.Agent("B"), lo.Agent("C", weight=2.0)],
...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0), lo.Edge("C", "P", 1.0)])
>>> cls = agent_classes(inst)
>>> cls.label.tolist(), cls.size.tolist()
([0, 0, 1], [2, 1])
>>> small = cls.class_instance(inst, weight="total")
>>> [(a.id, a.weight) for a in small.agents]
[('A', 2.0), ('C', 2.0)]
>>> cls.expand_integral(inst, np.array([[3.0], [0.0]])).ravel().tolist()
[2.0, 1.0, 0.0]
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..arrays import distinct
from ..instance import Instance
from ..limits import DEFAULT_MAX_MEMORY, EXAMINE_BYTES
from ..method_spec import Option
from ..result import Result, agent_values, allocation_columns, edge_utilities

__all__ = ["AgentClasses", "agent_classes", "COMPRESS_CHOICES", "compression_wanted", "compress_option",
           "solve_on_classes", "class_estimate", "cached_agent_classes", "classes_if_wanted",
           "classes_lower_bound"]

#: Values of the ``compress`` option of the methods that compress.
COMPRESS_CHOICES = ("auto", "on", "off")
#: ``compress="auto"`` compresses when the classes are at most this share of the agents.
AUTO_SHARE = 0.5

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on ``uint64`` values (a bijection spreading every input bit)."""
    z = np.asarray(values, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _bits(values: np.ndarray) -> np.ndarray:
    """The IEEE bit pattern of float64 values as ``uint64`` (``-0.0`` read as ``0.0``)."""
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)


@dataclass(frozen=True)
class AgentClasses:
    """A partition of the agents into classes of interchangeable agents.

    ``label[i]`` is agent ``i``'s class; classes are numbered by their first
    member, whose index is ``representative[g]``; ``size[g]`` is ``n_g``;
    ``rank[i]`` is agent ``i``'s position among its class's members (index order).
    """

    label: np.ndarray
    representative: np.ndarray
    size: np.ndarray
    rank: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.size.size)

    @property
    def n_agents(self) -> int:
        return int(self.label.size)

    def worthwhile(self, share: float = AUTO_SHARE) -> bool:
        """True when there are at most ``share`` times as many classes as agents."""
        return self.n_classes <= share * self.n_agents

    # ------------------------------------------------------------- the class instance
    def class_instance(self, instance: Instance, *, weight: str = "total", work: bool = False,
                       integral: bool = False) -> Instance:
        """One agent per class, on its first member's edges (see the module docstring).

        ``weight="total"``: weight ``n_g w`` (the class's share of the weights, as the
        equal share and the normalisers need); ``"member"``: ``w`` (a weighted sum over
        members is ``w`` times the class's total).  ``work=True`` gives the class
        ``n_g W`` work (``W`` defaulting to 1) so that ``W / X^id`` is the member's.
        Demands are ``n_g d`` (unbounded stays unbounded), or ``n_g floor(d)`` with
        ``integral=True`` (a member holds whole devices, so at most ``floor(d)``).
        Agent ids are the first members' ids.
        """
        if weight not in ("total", "member"):
            raise ValueError(f"weight must be 'total' or 'member', got {weight!r}")
        agents = []
        for g, a in enumerate(instance.agent_rows(self.representative.tolist())):
            n_g = int(self.size[g])
            agents.append(dataclasses.replace(
                a,
                weight=a.weight * n_g if weight == "total" else a.weight,
                demand=None if a.demand is None else (math.floor(a.demand) if integral else a.demand) * n_g,
                work=(n_g * (1.0 if a.work is None else a.work)) if work else a.work,
            ))
        is_rep = np.zeros(instance.n_agents, dtype=bool)
        is_rep[self.representative] = True
        keep = np.flatnonzero(is_rep[instance.edge_agent])
        edges = instance.edge_rows(keep.tolist())
        return Instance(instance.pools, agents, edges, rounds=instance.rounds, round_hours=instance.round_hours,
                        name=f"{instance.name} (classes)", description=instance.description)

    def edge_map(self, instance: Instance, small: Instance) -> np.ndarray:
        """For every edge of ``instance``, the index of its class's edge to the same pool in ``small``."""
        m = instance.n_pools
        class_key = small.edge_agent.astype(np.int64) * m + small.edge_pool
        order = np.argsort(class_key, kind="stable")
        wanted = self.label[instance.edge_agent].astype(np.int64) * m + instance.edge_pool
        at = np.searchsorted(class_key[order], wanted)
        return order[at]

    # ----------------------------------------------------------------- expansions
    def expand_fractional(self, instance: Instance, class_amounts: np.ndarray, small: Instance | None = None,
                          edge_map: np.ndarray | None = None) -> np.ndarray:
        """``x_{i,c,r} = X_{g,c,r} / n_g``: an ``E x R`` array for ``instance``."""
        if edge_map is None:
            edge_map = self.edge_map(instance, small if small is not None else self.class_instance(instance))
        share = 1.0 / self.size[self.label[instance.edge_agent]]
        return np.asarray(class_amounts, dtype=np.float64)[edge_map] * share[:, None]

    def expand_integral(self, instance: Instance, class_amounts: np.ndarray, small: Instance | None = None,
                        edge_map: np.ndarray | None = None) -> np.ndarray:
        """The class totals dealt round robin to the members (an ``E x R`` integer array for ``instance``).

        Per class and round the devices form one sequence, pools in the order of the
        class's edges; the ``u``-th device (from 0) goes to the member of rank
        ``u mod n_g``.  Member ``j`` gets of pool ``c`` the integers of
        ``[s_c, s_c + X_c)`` congruent to ``j`` modulo ``n_g``, where ``s_c`` is the number
        of devices of the pools before ``c``.
        """
        if small is None:
            small = self.class_instance(instance)
        if edge_map is None:
            edge_map = self.edge_map(instance, small)
        X = np.rint(np.asarray(class_amounts, dtype=np.float64)).astype(np.int64)
        # s_c: devices of the class's earlier edges, per round (small's edges are grouped by agent in order).
        before = np.zeros_like(X)
        agent = small.edge_agent
        order = np.argsort(agent, kind="stable")
        run = np.cumsum(X[order], axis=0) - X[order]
        first = np.searchsorted(agent[order], agent[order])
        before[order] = run - run[first]
        n = self.size[self.label[instance.edge_agent]].astype(np.int64)[:, None]
        j = self.rank[instance.edge_agent].astype(np.int64)[:, None]
        s, x = before[edge_map], X[edge_map]
        # Integers k in [s, s + x) with k = j (mod n): floor((s + x - 1 - j) / n) - floor((s - 1 - j) / n).
        got = np.floor_divide(s + x - 1 - j, n) - np.floor_divide(s - 1 - j, n)
        return got.astype(np.float64)

    def expand_result(self, instance: Instance, small: Instance, result: Result, *, fractional: bool,
                      same: Sequence[str] = (), shared: Sequence[str] = (), members: Sequence[str] = ()) -> Result:
        """The class instance's ``result`` as a result of ``instance`` (allocation expanded).

        Amounts are expanded (:meth:`expand_fractional` or :meth:`expand_integral`),
        utilities and allocation records recomputed on ``instance``; status,
        objective, bound and gap are kept (``models/compression.md`` proves them
        equal).  Per-agent dictionaries of ``details``: keys in ``same`` give every
        member its class's value, keys in ``shared`` the class's value divided by
        ``n_g``; lists of agent ids in ``members`` list every member of the
        classes named.
        """
        details = dict(result.details)
        new = dataclasses.replace(result, instance=instance.name, details=details)
        if result.amounts is not None:
            edge_map = self.edge_map(instance, small)
            expand = self.expand_fractional if fractional else self.expand_integral
            amounts = expand(instance, result.amounts, small, edge_map)
            amounts = np.where(np.abs(amounts) < 1e-12, 0.0, amounts)
            new.amounts = amounts
            new.allocation = allocation_columns(instance, amounts)
            new.utilities = agent_values(instance, edge_utilities(instance, amounts))
        ids = list(instance.agent_index)
        small_ids = list(small.agent_index)
        for key in (*same, *shared):
            if isinstance(details.get(key), Mapping):
                per_class = [details[key][a] for a in small_ids]
                if key in shared:
                    values = (np.asarray(per_class, dtype=np.float64)[self.label] / self.size[self.label]).tolist()
                else:
                    values = np.asarray(per_class, dtype=object)[self.label].tolist()
                details[key] = dict(zip(ids, values))
        if members:
            index = {a: g for g, a in enumerate(small_ids)}
            by_class = np.argsort(self.label, kind="stable")
            start = np.concatenate([[0], np.cumsum(self.size)])
            for key in members:
                if isinstance(details.get(key), list):
                    details[key] = [ids[i] for a in details[key]
                                    for i in by_class[start[index[a]]:start[index[a] + 1]].tolist()]
        return new

    def spread(self, per_class: np.ndarray) -> np.ndarray:
        """A per-class array read per agent (``per_class[label]``)."""
        return np.asarray(per_class)[self.label]


def compress_option():
    """The declared ``compress`` option of the methods that solve on classes."""
    return Option("compress", "choice", "auto",
                  "solve on classes of identical agents and expand exactly (auto: when classes <= half the agents)",
                  choices=COMPRESS_CHOICES)


def solve_on_classes(instance: Instance, compress: str, solve: Callable[[Instance, AgentClasses], Result], *,
                     keys: Sequence[np.ndarray] = (), weight: str = "total", work: bool = False,
                     integral: bool = False, same: Sequence[str] = (), shared: Sequence[str] = (),
                     members: Sequence[str] = ()) -> Result | None:
    """Solve on the class instance when ``compress`` asks for it; ``None`` when it does not.

    ``solve(small, classes)`` runs the model on the class instance; the
    result is expanded with :meth:`AgentClasses.expand_result` and its details
    gain ``compression`` (classes, agents, seconds to find and expand them).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=3)], agents=[lo.Agent(a) for a in "ABCD"],
    ...                    edges=[lo.Edge(a, "P", 1.0) for a in "ABCD"])
    >>> r = solve_on_classes(inst, "on", lambda small, _: lo.solve(small, "maxmin", fractional=True, compress="off"))
    >>> r.details["compression"]["classes"], [round(x["amount"], 6) for x in r.allocation]
    (1, [0.75, 0.75, 0.75, 0.75])
    """
    t0 = time.perf_counter()
    classes, cached = classes_if_wanted(instance, compress, keys)
    if classes is None:
        return None
    small = classes.class_instance(instance, weight=weight, work=work, integral=integral)
    t1 = time.perf_counter()
    result = solve(small, classes)
    t2 = time.perf_counter()
    out = classes.expand_result(instance, small, result, fractional=not integral, same=same, shared=shared,
                                members=members)
    t3 = time.perf_counter()
    # classes_cached: found before this solve (by its size estimate, counted in estimate_s, or an earlier solve).
    out.details["compression"] = {"classes": classes.n_classes, "agents": classes.n_agents,
                                  "largest_class": int(classes.size.max(initial=0)),
                                  "classes_s": t1 - t0, "classes_cached": cached, "expand_s": t3 - t2}
    out.timing = dict(out.timing)
    out.timing["build_s"] = out.timing.get("build_s", 0.0) + (t1 - t0) + (t3 - t2)
    return out


def compression_wanted(option: str, classes: AgentClasses) -> bool:
    """Whether to solve on the classes: ``on``; ``auto`` when it is worthwhile; never for ``off``."""
    if option == "off":
        return False
    if option == "on":
        return classes.n_classes < classes.n_agents
    return classes.worthwhile()


def class_estimate(estimate: Callable, *, applies: Callable[[Instance, dict], bool],
                   keys: Callable[[Instance], Sequence[np.ndarray]] = lambda instance: (), weight: str = "total",
                   work: bool = False, integral: Callable[[dict], bool] = lambda options: False) -> Callable:
    """A method's size estimate that counts the class model when the solve would compress.

    ``estimate(instance, options)`` is the plain estimate; ``applies`` says whether the
    method compresses under ``options`` (``compress`` other than ``off`` is checked
    here), ``keys``, ``weight``, ``work`` and ``integral`` are what the method passes to
    :func:`solve_on_classes`.  Finding the classes costs about as much as reading the
    instance, so it is done only when the plain estimate is over ``examine_over``
    (:data:`EXAMINE_BYTES`, or the memory budget when that is smaller) and finding them fits in the
    budget (:func:`finding_bytes`);
    the classes found are kept on the instance for the solve that follows
    (:func:`cached_agent_classes`).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=3)], agents=[lo.Agent(a) for a in "ABCD"],
    ...                    edges=[lo.Edge(a, "P", 1.0) for a in "ABCD"])
    >>> from laissez_opt.limits import SizeEstimate
    >>> plain = lambda instance, options: SizeEstimate(variables=instance.n_edges, dense_bytes=2**31)
    >>> est = class_estimate(plain, applies=lambda instance, options: True)
    >>> est(inst, {}).variables, est(inst, {"compress": "off"}).variables
    (1, 4)
    """
    def sized(instance: Instance, options: dict, examine_over: float = EXAMINE_BYTES,
              budget: float = DEFAULT_MAX_MEMORY):
        full = estimate(instance, options)
        compress = options.get("compress", "auto")
        if compress == "off" or full.bytes() <= examine_over or not applies(instance, options):
            return full
        if finding_bytes(instance) > budget:
            return full  # finding the classes would itself break the budget: the plain estimate refuses
        classes, _ = classes_if_wanted(instance, compress, keys(instance))
        if classes is None:
            return full
        small = classes.class_instance(instance, weight=weight, work=work, integral=integral(options))
        on_classes = estimate(small, options)
        return dataclasses.replace(
            on_classes, note=f"on {classes.n_classes:,} classes of identical agents "
                             f"(of {classes.n_agents:,} agents); {on_classes.note}".rstrip("; "))
    sized.examines_classes = True
    return sized


def finding_bytes(instance: Instance) -> float:
    """Peak bytes of :func:`agent_classes`: the utility view and its sorted copy, hashes and keys per edge and agent."""
    return 24.0 * instance.n_edges * instance.rounds + 48.0 * instance.n_edges + 64.0 * instance.n_agents


def cached_agent_classes(instance: Instance, keys: Sequence[np.ndarray] = ()) -> tuple[AgentClasses, bool]:
    """:func:`agent_classes`, kept on the instance (instances are immutable) under the keys' contents.

    A size estimate and the solve after it find the classes once.  Returns the
    classes and whether they came from the store.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> [cached_agent_classes(inst)[1] for _ in range(2)]
    [False, True]
    """
    return _kept(instance, "classes", keys, agent_classes)


def _kept(instance: Instance, what: str, keys: Sequence[np.ndarray], find: Callable):
    """``(find(instance, keys), whether it was kept from before)``, kept on the instance under ``what``
    and the keys' contents (instances are immutable)."""
    digest = hashlib.blake2b(what.encode(), digest_size=16)
    for key in keys:
        column = np.ascontiguousarray(key)
        digest.update(f"{column.dtype.str}{column.shape}".encode())
        digest.update(column.data)
    store = instance.__dict__.setdefault("_agent_classes", {})
    found = store.get(digest.hexdigest())
    if found is not None:
        return found, True
    found = store[digest.hexdigest()] = find(instance, keys)
    return found, False


def agent_classes(instance: Instance, keys: Sequence[np.ndarray] = ()) -> AgentClasses:
    """The classes of interchangeable agents (see the module docstring).

    ``keys`` are extra per-agent arrays (length ``n``, any numeric dtype, or
    ``n x K``) that members of a class must also share exactly.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P"), lo.Pool("Q")],
    ...                    agents=[lo.Agent("A"), lo.Agent("B"), lo.Agent("C")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "Q", 1.0), lo.Edge("C", "P", 1.0)])
    >>> agent_classes(inst).label.tolist()
    [0, 1, 0]
    >>> agent_classes(inst, keys=[np.array([1.0, 1.0, 2.0])]).label.tolist()
    [0, 1, 2]
    """
    n = instance.n_agents
    _, a_sorted, p_sorted, u_sorted, degree, start = _edge_layout(instance, sort=True)
    scalars = _scalar_columns(instance, keys)
    if _feature_count(degree, start, p_sorted, u_sorted, scalars) == n:  # every agent apart: no edge hashing
        return _singletons(n)
    # Edge hashes: the pool and every round's utility; summed per agent (edges are a set: pools are distinct).
    h = _mix(p_sorted.astype(np.uint64) + np.uint64(1))
    for r in range(u_sorted.shape[1]):
        h = _mix(h ^ _bits(u_sorted[:, r]))
    agent_hash = np.zeros(n, dtype=np.uint64)
    has = degree > 0
    if has.any():
        sums = np.add.reduceat(h, start[has]) if h.size else np.zeros(0, dtype=np.uint64)
        agent_hash[has] = sums
    key = _mix(agent_hash ^ _mix(degree.astype(np.uint64)))
    for column in scalars.T:
        key = _mix(key ^ _bits(column))
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rep_of = first[inverse.ravel()]  # a candidate first member of each agent's class
    # Exact check against the candidate: scalars, degree, then every edge position by position.
    bad = np.any(scalars != scalars[rep_of], axis=1) | (degree != degree[rep_of])
    if a_sorted.size:
        pos = np.arange(a_sorted.size) - start[a_sorted]
        rep_pos = start[rep_of[a_sorted]] + np.minimum(pos, np.maximum(degree[rep_of[a_sorted]] - 1, 0))
        differs = (p_sorted != p_sorted[rep_pos]) | np.any(u_sorted != u_sorted[rep_pos], axis=1)
        bad |= np.bincount(a_sorted, weights=differs, minlength=n) > 0
    if bad.any():  # a hash collision (never observed): those agents stay alone
        rep_of = rep_of.copy()
        rep_of[bad] = np.flatnonzero(bad)
    # Number classes by their first member.
    reps, label = np.unique(rep_of, return_inverse=True)
    label = label.ravel()
    size = np.bincount(label, minlength=reps.size)
    by_class = np.argsort(label, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(size)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[by_class] = np.arange(n) - offsets[label[by_class]]
    return AgentClasses(label, reps, size, rank)


def _feature_count(degree, start, p_sorted, u_sorted, scalars) -> int:
    """How many agents differ in per-agent features alone: a lower bound on the classes.

    Members of a class share their scalars, their degree and their edge list in pool
    order, so also its first and last edge (pool and utilities).  Equal features hash
    equally, so the distinct hashes are at most the distinct features, and those are at
    most the classes.  ``O(n)`` work where finding the classes hashes every edge."""
    n = degree.shape[0]
    if n < 2:
        return n
    has = degree > 0
    first = np.where(has, start, 0)
    last = np.where(has, start + degree - 1, 0)
    key = _mix(degree.astype(np.uint64))
    if p_sorted.size:
        for position in (first, last):
            key = _mix(key ^ np.where(has, p_sorted[position].astype(np.uint64) + np.uint64(1), np.uint64(0)))
            for r in range(u_sorted.shape[1]):
                key = _mix(key ^ np.where(has, _bits(u_sorted[position, r]), np.uint64(0)))
    for column in scalars.T:
        key = _mix(key ^ _bits(column))
    return int(distinct(key).size)


def classes_lower_bound(instance: Instance, keys: Sequence[np.ndarray] = ()) -> int | None:
    """At most as many classes as :func:`agent_classes` finds, from ``O(n)`` features of each agent;
    None when the edges are not in ``(agent, pool)`` order (sorting them costs what finding does).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent(a) for a in "ABC"],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 2.0), lo.Edge("C", "P", 1.0)])
    >>> classes_lower_bound(inst), agent_classes(inst).n_classes
    (2, 2)
    """
    in_order, _, pool, util, degree, start = _edge_layout(instance, sort=False)
    if not in_order:
        return None
    return _feature_count(degree, start, pool, util, _scalar_columns(instance, keys))


def _edge_layout(instance: Instance, *, sort: bool):
    """``(in_order, agent, pool, utility, degree, start)``: the edges in ``(agent, pool)`` order (sorted
    when they are not and ``sort``), each agent's edge count and first position in that order."""
    agent, pool, util = instance.edge_agent, instance.edge_pool, instance.edge_utility
    in_order = _sorted_by_agent_then_pool(agent, pool)  # as readers and generators lay them out: no sort
    if not in_order and sort:
        order = np.lexsort((pool, agent))
        agent, pool, util = agent[order], pool[order], util[order]
    degree = np.bincount(instance.edge_agent, minlength=instance.n_agents)
    start = np.concatenate([[0], np.cumsum(degree)[:-1]])
    return in_order, agent, pool, util, degree, start


def classes_if_wanted(instance: Instance, compress: str, keys: Sequence[np.ndarray] = ()):
    """``(classes, cached)`` when ``compress`` asks to solve on the classes, else ``(None, False)``.

    Under ``auto`` a lower bound on the classes above :data:`AUTO_SHARE` of the agents
    (:func:`classes_lower_bound`) settles it without finding them: heterogeneous
    instances pay ``O(n)`` for the question instead of hashing every edge.
    """
    if compress == "off":
        return None, False
    if compress == "auto":
        bound, _ = _kept(instance, "lower bound", keys, classes_lower_bound)  # the estimate's, for the solve
        if bound is not None and bound > AUTO_SHARE * instance.n_agents:
            return None, False
    classes, cached = cached_agent_classes(instance, keys)
    return (classes, cached) if compression_wanted(compress, classes) else (None, False)


def _singletons(n: int) -> AgentClasses:
    """Every agent a class of its own (numbered by agent index)."""
    every = np.arange(n, dtype=np.int64)
    return AgentClasses(every, every.copy(), np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64))


def _sorted_by_agent_then_pool(agent: np.ndarray, pool: np.ndarray) -> bool:
    """Whether the edges are already in ``(agent, pool)`` order (one vectorised pass instead of a sort)."""
    if agent.size < 2:
        return True
    later_agent = agent[1:] > agent[:-1]
    return bool(np.all(later_agent | ((agent[1:] == agent[:-1]) & (pool[1:] > pool[:-1]))))


def _scalar_columns(instance: Instance, keys: Sequence[np.ndarray]) -> np.ndarray:
    """``n x K`` float array of the per-agent data classes must share."""
    arrival = np.array(instance.agent_field("arrival"), dtype=np.float64)
    columns = [instance.weights, instance.demands, arrival, instance.last_rounds.astype(np.float64)]
    for k in keys:
        k = np.asarray(k, dtype=np.float64)
        columns.extend(k.reshape(instance.n_agents, -1).T)
    return np.column_stack(columns) if columns else np.zeros((instance.n_agents, 0))
