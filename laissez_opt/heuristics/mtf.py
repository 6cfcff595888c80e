"""Most-Token-First (MTF): a token-budget scheduler with per-agent utility thresholds.

``models.md`` item 7; thesis 002, chapter 4.1 (eq. 4.1, Algorithm 1) and 4.2
(threshold learning, in :mod:`laissez_opt.heuristics.thresholds`).

Tokens
    A pool of ``T`` tokens (option ``tokens``; default ``D = sum_c k_c``, the number of
    devices in one round, so that every agent starts with its weighted share of one
    round's supply and the token phase can, in principle, place every device).
    Initial budgets ``B_i^1 = w_i T / sum_j w_j`` (eq. 4.1), rounded to integers by the
    largest-remainder rule below; an agent's ``budget`` field overrides its share.
    The total ``sum_i B_i^r`` is the same in every round (tokens are conserved).

Round ``r`` (only agents with ``a_i <= r <= D_i`` take part)
    Each agent's preference list holds the pools of its edges with ``u_{i,c,r} > 0``,
    by ``u_{i,c,r}`` descending, ties by pool order (an edge of zero utility is not
    wanted).  Devices of one pool are interchangeable, so a list entry stands for all
    remaining devices of that pool.  Thresholds ``tau_i`` compare to the normalised
    utility ``u~_{i,c,r} = u_{i,c,r} / (M_i (1 + 1e-9))`` in ``[0, 1)``, with ``M_i``
    the agent's largest utility over all its edges and rounds (option
    ``normalize="agent"``, default), over the edges of this round (``"round"``), or
    ``M_i (1 + 1e-9) = 1`` (``"none"``: thresholds compare to the raw utilities).

    1. Token phase: repeatedly take the agent with the largest budget ``B_i > 0`` (ties:
       lowest agent index) whose best remaining pool ``c`` has ``u~_{i,c,r} >= tau_i`` and
       which is below its demand ``d_i``; give it one device of ``c``; ``B_i -= 1``; the
       token goes to the pool of spent tokens.  An agent that does not qualify when it
       is at the top leaves the token phase of this round (it cannot qualify later:
       devices and budgets only shrink).
    2. The ``S`` spent tokens are redistributed to the agents present in the round in
       proportion to their weights: ``floor(S w_i / W)`` each, and the ``S - sum floor``
       left over one each to the largest remainders ``S w_i mod W`` (ties: lowest agent
       index), computed exactly in integers (weights are scaled to integers without
       rounding), so tokens are conserved exactly.
    3. Round-robin phase: the remaining devices are handed out one at a time, to the
       agent whose turn it is (agent index order, cyclic; the turn starts where the
       previous round's round-robin phase stopped: after the last agent served), each
       its most preferred remaining pool regardless of its threshold; an agent with no
       wanted device left or at its demand ``d_i`` is skipped.  Devices nobody wants stay
       idle.

Complexity per round, once the preference lists are built (a sort of the round's
edges, ``O(E log E)``): ``O((d + n) log n)`` for ``d`` devices and ``n`` agents, in fact
``O(d + n + L log L)`` with ``L <= n`` distinct budget values.  Agents are kept in
buckets by budget (each bucket in agent-index order) under a max-heap of the distinct
budgets: the top bucket is served in index order, which is exactly "largest budget,
then lowest index"; an agent that buys a device drops into the next bucket (a linear
merge of two sorted runs), one that does not qualify leaves the token phase (a lazy
deletion: it is simply not re-inserted).  Every visit places a device or removes an
agent.  Each agent keeps a pointer into its preference list that only moves forward
past exhausted pools (total ``O(E)`` per round, and only as far as agents actually
look).  The round-robin phase is a queue, ``O(d + n)``.  (Thesis 4.1.4 gives ``O(m n)``
for a linear scan for the richest agent and list removals.)

The result's ``objective`` is the weighted welfare ``sum_i w_i U_i`` of the raw utilities.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("fast", count=1), lo.Pool("slow", count=2)],
...                    agents=[lo.Agent("A"), lo.Agent("B")],
...                    edges=[lo.Edge("A", "fast", 0.9), lo.Edge("A", "slow", 0.2),
...                           lo.Edge("B", "fast", 0.5), lo.Edge("B", "slow", 0.4)])
>>> res = lo.solve(inst, "mtf", tokens=2, threshold="fixed:0.5")
>>> sorted((a["agent"], a["pool"], a["amount"]) for a in res.allocation)
[('A', 'fast', 1.0), ('A', 'slow', 1.0), ('B', 'slow', 1.0)]
>>> log = res.details["rounds"][0]
>>> log["token_devices"], log["pooled"], log["budgets_end"], log["round_robin_devices"]
(2, 2, [1, 1], 1)

Both agents start with one token; A (tie on budget: lowest index) buys ``fast``, B buys
a ``slow`` device (``u~ = 0.4 / 0.5 >= 0.5``); the two tokens go back one each; A's turn
gives it the last ``slow`` device by round-robin although ``0.2 / 0.9 < 0.5``.
"""

from __future__ import annotations

import heapq
import sys
import time
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from itertools import product
from math import gcd, lcm
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method, Option
from ..result import Result, agent_values, allocation_columns
from ._fastpaths import edges_in_order, touched_utilities, use_compiled
from ._baseline_common import PICK_BYTES, agent_of, heuristic_size, read_state, state_option
from .thresholds import GRID, ThresholdPolicy, make_policy

__all__ = [
    "Preferences",
    "RoundOutcome",
    "RoundContext",
    "integer_weights",
    "apportion",
    "preferences_from_matrix",
    "mtf_round",
    "solve_mtf",
    "initial_budgets",
    "search_fixed_thresholds",
]

_UNBOUNDED = sys.maxsize
_NORMALIZE = ("agent", "round", "none")
# Options passed through to the threshold policy when given (``thresholds.make_policy`` checks
# that they apply to the chosen policy); ``None`` leaves the policy's own default.
_POLICY_OPTIONS = ("eta", "reward", "counterfactual", "gamma", "lr_actor", "lr_critic", "hidden")


# --------------------------------------------------------------------------- data


@dataclass
class Preferences:
    """The preference lists of one round, flattened.

    Agent ``i``'s list is positions ``start[i] .. end[i]-1``: ``pool[p]`` is a pool index
    and ``score[p]`` its normalised utility ``u~_{i,c,r}``, non-increasing along the list.
    ``edge[p]`` (instance path only) is the edge index of the position.  Any sequences
    with integer indexing work (lists, or memoryviews of numpy arrays for large rounds).
    """

    pool: Sequence[int]
    score: Sequence[float]
    start: list[int]
    end: list[int]
    edge: Sequence[int] | None = None
    owner: np.ndarray | None = None  # agent of each position (numpy), for summaries
    width: int = 0  # > 0: the dense layout, agent i on positions i width .. (i+1) width - 1 (owner on demand)

    def scores_of(self, i: int) -> list[float]:
        """``u~`` along agent ``i``'s list (descending)."""
        return [self.score[p] for p in range(self.start[i], self.end[i])]



def _owner_of(prefs: Preferences) -> np.ndarray | None:
    owner = prefs.__dict__.get("_owner")
    if owner is None and prefs.width:  # the dense layout: agent i's list is positions i m .. (i+1) m - 1
        owner = prefs.__dict__["_owner"] = np.repeat(np.arange(len(prefs.start), dtype=np.int64), prefs.width)
    return owner


def _set_owner(prefs: Preferences, value) -> None:
    prefs.__dict__["_owner"] = value


# ``owner`` is read through a property: the dense layout (``width > 0``) builds it on first use
# (the dataclass's ``__init__`` assigns the field through the setter).
Preferences.owner = property(_owner_of, _set_owner, doc="The agent of each position (numpy), or None.")


@dataclass
class RoundOutcome:
    """What one MTF round did.

    ``picks_agent[k]`` received one device at preference position ``picks_pos[k]``; the
    first ``n_token`` picks were bought with tokens, the rest came from round-robin.
    ``budgets`` are after redistribution; ``spent[i]`` tokens paid, ``shares[i]`` tokens
    received back; ``turn`` is the round-robin turn for the next round.  ``visits`` and
    ``steps`` count agent visits in the token phase (each buys a device or leaves the
    phase, so ``visits <= d + n``) and preference-pointer moves (complexity checks).
    """

    picks_agent: list[int]
    picks_pos: list[int]
    n_token: int
    budgets: list[int]
    spent: list[int]
    shares: list[int]
    pooled: int
    turn: int
    turn_start: int
    unallocated: int
    visits: int = 0
    steps: int = 0

    def reward(self, i: int, score: Sequence[float]) -> float:
        """``sum`` of ``u~`` over the devices agent ``i`` received (thesis eq. 4.3)."""
        return sum(score[p] for a, p in zip(self.picks_agent, self.picks_pos) if a == i)


@dataclass
class RoundContext:
    """Everything a threshold policy may look at in round ``r`` (see ``thresholds``)."""

    round: int
    active: list[int]
    prefs: Preferences
    counts: list[int]
    weights: np.ndarray
    int_weights: list[int]
    demand: list[int]
    total_tokens: int
    n_agents: int
    simulate: object = field(default=None, repr=False)  # callable(taus) -> RoundOutcome

    @cached_property
    def devices(self) -> int:
        return int(sum(self.counts))

    @cached_property
    def mean_score(self) -> np.ndarray:
        """``E[u~_i^r]``: the mean normalised utility over all devices of the round (0 off edges)."""
        out = np.zeros(self.n_agents)
        owner = self.prefs.owner
        if owner is None or not self.devices:
            return out
        pool = np.asarray(self.prefs.pool, dtype=np.int64)
        score = np.asarray(self.prefs.score, dtype=float)
        cnt = np.asarray(self.counts, dtype=float)[pool]
        np.add.at(out, owner, score * cnt)
        return out / self.devices

    @cached_property
    def histogram(self) -> np.ndarray:
        """``n x 10``: share of the round's devices whose ``u~`` falls in ``[k/10, (k+1)/10)``."""
        out = np.zeros((self.n_agents, 10))
        owner = self.prefs.owner
        if owner is None or not self.devices:
            return out
        pool = np.asarray(self.prefs.pool, dtype=np.int64)
        score = np.asarray(self.prefs.score, dtype=float)
        bins = np.minimum((score * 10).astype(np.int64), 9)
        cnt = np.asarray(self.counts, dtype=float)[pool]
        np.add.at(out, (owner, bins), cnt / self.devices)
        return out


# --------------------------------------------------------------------------- tokens


def integer_weights(weights: Sequence[float]) -> list[int]:
    """Positive floats scaled exactly to integers with the same ratios.

    Every float is a dyadic rational, so multiplying by the common denominator is exact;
    apportioning with these integers has no rounding error.

    >>> integer_weights([1.0, 0.5, 2.0])
    [2, 1, 4]
    """
    arr = np.asarray(weights, dtype=np.float64).reshape(-1)
    if arr.size and np.all(arr == arr[0]) and arr[0] > 0:
        return [1] * arr.size  # equal weights: w / w = 1 each (what the exact route gives)
    if arr.size and np.all(arr == np.floor(arr)) and np.all(arr > 0) and arr.max() < 2.0**53:
        ints = arr.astype(np.int64)  # whole numbers: denominators 1; divide by their gcd
        g = int(np.gcd.reduce(ints))
        return (ints // g).tolist()
    fracs = [Fraction(float(w)) for w in weights]
    if not fracs:
        return []
    den = lcm(*(f.denominator for f in fracs))
    ints = [f.numerator * (den // f.denominator) for f in fracs]
    g = 0
    for v in ints:
        g = gcd(g, v)
    return [v // g for v in ints] if g > 1 else ints


def apportion(total: int, int_weights: Sequence[int], members: Sequence[int]) -> dict[int, int]:
    """Split ``total`` tokens among ``members`` in proportion to ``w_i`` (largest remainder).

    Member ``i`` gets ``floor(total w_i / W)`` with ``W = sum_members w_j``; the tokens left
    over go one each to the largest remainders ``total w_i mod W``, ties to the lowest
    index.  The shares sum to ``total`` exactly (thesis 4.1.1, eq. 4.1, and Algorithm 1's
    ``DistributeTokens``).

    >>> apportion(3, [1, 1, 2], [0, 1, 2])
    {0: 1, 1: 1, 2: 1}
    >>> apportion(5, [1, 1], [0, 1])
    {0: 3, 1: 2}
    """
    if not members:
        return {}
    big = sum(int_weights[i] for i in members)
    shares: dict[int, int] = {}
    rems = []
    given = 0
    for i in members:
        q, rem = divmod(total * int_weights[i], big)
        shares[i] = q
        given += q
        rems.append((-rem, i))
    left = total - given
    if left:
        for _, i in heapq.nsmallest(left, rems):
            shares[i] += 1
    return shares


# --------------------------------------------------------------------------- preference lists


def preferences_from_matrix(scores: np.ndarray) -> Preferences:
    """Preference lists from a dense ``n x m`` matrix of normalised utilities ``u~_{i,c}``.

    Row ``i`` sorted descending, ties by pool (column) order; zero entries are not
    wanted.  One ``np.argsort`` of the matrix and one gather of the sorted scores; rows
    that contain ties are re-sorted stably so the tie rule holds.  Positions are
    ``i * m + k``; the arrays are exposed as memoryviews (no per-entry Python objects).

    >>> p = preferences_from_matrix(np.array([[0.2, 0.7, 0.2], [0.0, 0.1, 0.3]]))
    >>> [p.pool[k] for k in range(p.start[0], p.end[0])], [p.pool[k] for k in range(p.start[1], p.end[1])]
    ([1, 0, 2], [2, 1])
    """
    scores = np.asarray(scores, dtype=np.float64)
    n, m = scores.shape
    order = np.argsort(scores, axis=1)[:, ::-1].copy()  # descending; ties fixed below
    flat = (order + (np.arange(n, dtype=np.int64) * m)[:, None]).reshape(-1)
    ordered = scores.reshape(-1)[flat].reshape(n, m)
    tied = np.nonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))[0] if m > 1 else []
    if len(tied):
        sub = np.argsort(-scores[tied], axis=1, kind="stable")
        order[tied] = sub
        ordered[tied] = np.take_along_axis(scores[tied], sub, axis=1)
    starts = np.arange(n, dtype=np.int64) * m
    if n and m and scores.min() <= 0:
        ends = starts + (scores > 0).sum(axis=1)
    else:
        ends = starts + m
    return Preferences(
        pool=memoryview(order.reshape(-1)),
        score=memoryview(ordered.reshape(-1)),
        start=starts.tolist(),
        end=ends.tolist(),
    )


def _preferences_from_edges(instance: Instance, r: int, norm: np.ndarray | None, active: np.ndarray, *,
                            den: np.ndarray | None = None, dense: bool | None = None,
                            compiled: bool | None = None) -> Preferences:
    """Round ``r``'s preference lists from the instance's edges.

    Scores: ``norm`` (``u~`` per edge), or, when it is None, ``u_e / den[agent(e)]`` (``den``:
    ``M_i (1 + 1e-9)`` per agent, the same division edge by edge).  Each active agent's
    edges with ``u_{i,c,r} > 0``, by utility descending, ties by pool index.  When
    every agent is active on every pool with a positive utility, edges in (agent, pool)
    order, the lists are one row argsort of the ``n x m`` utility table read backwards
    (one compiled pass, :func:`~laissez_opt.heuristics._mtf_kernel.dense_lists`), rows
    with repeated values re-sorted stably.  Otherwise, when the edges are ordered by agent,
    then pool (as the file reader and the generators leave them), the lists come from one
    stable row sort of an ``n x L`` table of the negated utilities (``L`` the longest
    list, padding ``+inf`` sorting last), which keeps the pool order of ties; otherwise
    (or when the table would be much larger than the edges) from one ``np.lexsort`` by
    (agent, utility descending, pool).  All give the same order.  The arrays are exposed
    as memoryviews (no per-entry Python objects).  ``dense``: whether the edges are every
    pair in order (:func:`_dense_in_order`), when the caller knows; ``compiled``: whether to
    use the compiled pass (default :func:`~laissez_opt.heuristics._fastpaths.use_compiled`;
    otherwise a stable numpy row sort of the negated table, the same lists).
    """
    u = instance.edge_utility[:, r]
    agent = instance.edge_agent
    n, m = instance.n_agents, instance.n_pools
    if u.size == n * m and active.all() and u.min() > 0 and (_dense_in_order(instance) if dense is None else dense):
        return _dense_preferences(u, norm, den, n, m, use_compiled(instance) if compiled is None else compiled)
    idx = np.flatnonzero((u > 0) & active[agent])
    order = _row_sorted(instance, idx, u)
    if order is None:
        order = idx[np.lexsort((instance.edge_pool[idx], -u[idx], agent[idx]))]
    owner = agent[order]
    bounds = np.searchsorted(owner, np.arange(instance.n_agents + 1))
    score = np.ascontiguousarray(norm[order]) if norm is not None else u[order] / den[owner]
    return Preferences(
        pool=memoryview(instance.edge_pool[order]),
        score=memoryview(score),
        start=bounds[:-1].tolist(),
        end=bounds[1:].tolist(),
        edge=memoryview(order),
        owner=owner,
    )


class _DenseEdges:
    """The edge of each position of the dense layout, computed on access (a read-only sequence).

    Position ``q`` holds agent ``i = q // m`` and pool ``pool[q]``: edge ``i m + pool[q]``.
    """

    __slots__ = ("pool", "n", "m")

    def __init__(self, pool: np.ndarray, n: int, m: int):
        self.pool, self.n, self.m = pool, n, m

    def __len__(self) -> int:
        return self.n * self.m

    def take(self, positions) -> np.ndarray:
        q = np.asarray(positions, dtype=np.int64)
        return q - q % self.m + self.pool[q]

    def __getitem__(self, q):
        if isinstance(q, slice):
            return self.take(np.arange(len(self))[q])
        if q < 0:
            q += len(self)
        if not 0 <= q < len(self):
            raise IndexError("position out of range")
        return q - q % self.m + int(self.pool[q])

    def __iter__(self):
        return iter(self.take(np.arange(len(self))).tolist())

    def __array__(self, dtype=None, copy=None):
        out = self.take(np.arange(len(self)))
        return out if dtype is None else out.astype(dtype)


def _edges_at(prefs: Preferences, positions) -> np.ndarray:
    """``prefs.edge`` at ``positions`` (numpy), without materialising a computed edge sequence."""
    if isinstance(prefs.edge, _DenseEdges):
        return prefs.edge.take(positions)
    return np.asarray(prefs.edge)[np.asarray(positions, dtype=np.int64)]


def _dense_preferences(u: np.ndarray, norm: np.ndarray | None, den: np.ndarray | None, n: int, m: int,
                       compiled: bool = True) -> Preferences:
    """The lists when every agent is on every pool, edges in (agent, pool) order, all wanted.

    One ascending row argsort of the ``n x m`` table, turned in place into the lists
    (:func:`~laissez_opt.heuristics._mtf_kernel.descending_rows`: rows reversed, runs of
    equal values by pool), which gives the scores in the same pass; a position's edge
    is computed when asked for.
    """
    flat = np.ascontiguousarray(u)
    if compiled:
        from ._mtf_kernel import descending_rows

        perm = np.argsort(flat.reshape(n, m), axis=1)
        score, _ = descending_rows(flat, perm, np.ones(n) if den is None else den, n, m, np.empty(n * m))
    else:  # small runs: numpy only (no numba import)
        table = flat.reshape(n, m)
        perm = _stable_row_argsort(-table)
        score = (np.take_along_axis(table, perm, axis=1) / (np.ones(n) if den is None else den)[:, None]).reshape(-1)
    pool = perm.reshape(-1)
    edges = _DenseEdges(pool, n, m)
    if norm is not None:
        score = np.asarray(norm, dtype=np.float64)[edges.take(np.arange(n * m))]
    starts = np.arange(n, dtype=np.int64) * m
    return Preferences(
        pool=memoryview(pool),
        score=memoryview(score),
        start=starts.tolist(),
        end=(starts + m).tolist(),
        edge=edges,
        width=m,
    )


def _dense_in_order(instance: Instance) -> bool:
    """Whether edge ``e`` is agent ``e // m`` on pool ``e % m`` (every pair, in order)."""
    n, m = instance.n_agents, instance.n_pools
    return instance.n_edges == n * m and edges_in_order(instance.edge_agent, instance.edge_pool, m,
                                                        compiled=use_compiled(instance))


def _row_sorted(instance: Instance, idx: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """``idx`` (edges ordered by agent, then pool) sorted by agent, utility descending, pool; None: not applicable."""
    n, m = instance.n_agents, instance.n_pools
    if idx.size == 0:
        return idx
    agent, pool = instance.edge_agent[idx], instance.edge_pool[idx]
    key = agent * m + pool
    if not bool(np.all(key[1:] > key[:-1])):
        return None
    if idx.size == n * m:  # every agent on every pool, in order: idx is 0..E-1 and the table is the utilities
        perm = _stable_row_argsort(-u.reshape(n, m))
        return (perm + (np.arange(n, dtype=np.int64) * m)[:, None]).reshape(-1)
    length = np.bincount(agent, minlength=n)
    width = int(length.max())
    if n * width > 4 * idx.size + 4096:  # very uneven lists: the padded table would dwarf the edges
        return None
    first = np.r_[0, np.cumsum(length)[:-1]]
    column = np.arange(idx.size) - first[agent]
    table = np.full((n, width), np.inf)
    table[agent, column] = -u[idx]
    perm = _stable_row_argsort(table)
    keep = np.arange(width)[None, :] < length[:, None]
    return idx[(first[:, None] + perm)[keep]]


def _stable_row_argsort(table: np.ndarray) -> np.ndarray:
    """``np.argsort(table, axis=1, kind="stable")``: one unstable sort, then a stable one of the rows with ties.

    Only rows whose sorted values repeat (a finite value twice; the ``+inf``
    padding repeats harmlessly, it stays last) can differ between the two.
    """
    perm = np.argsort(table, axis=1)
    if table.shape[1] > 1:
        ordered = np.take_along_axis(table, perm, axis=1)
        tied = np.flatnonzero(((ordered[:, 1:] == ordered[:, :-1]) & np.isfinite(ordered[:, 1:])).any(axis=1))
        if tied.size:
            perm[tied] = np.argsort(table[tied], axis=1, kind="stable")
    return perm


# --------------------------------------------------------------------------- one round


def mtf_round(
    prefs: Preferences,
    counts: Sequence[int],
    budgets: Sequence[int],
    thresholds: Sequence[float],
    *,
    active: Sequence[int],
    turn: int,
    int_weights: Sequence[int],
    demand: Sequence[int] | None = None,
) -> RoundOutcome:
    """One round of Algorithm 1 (thesis 002, 4.1.3): token phase, redistribution, round-robin.

    ``budgets`` ``B_i^r`` (integers, all agents), ``thresholds`` ``tau_i`` (compared with
    ``prefs.score``), ``active`` the sorted indices of the agents present, ``turn`` the
    round-robin turn (agent index), ``int_weights`` from :func:`integer_weights`,
    ``demand`` the per-round caps ``d_i`` (``None``: unbounded).  Inputs are not modified.
    Cost ``O((d + n) log n)`` plus the forward moves of the preference pointers.

    >>> p = preferences_from_matrix(np.array([[0.9, 0.2], [0.5, 0.4]]))
    >>> out = mtf_round(p, [1, 1], [1, 1], [0.5, 0.5], active=[0, 1], turn=1, int_weights=[1, 1])
    >>> out.picks_agent, out.n_token, out.budgets, out.turn
    ([0, 1], 1, [1, 1], 0)
    """
    pool, score, end = prefs.pool, prefs.score, prefs.end
    n = len(budgets)
    rem = list(counts)
    left = sum(rem)
    budgets = list(budgets)
    ptr = list(prefs.start)
    cap = [_UNBOUNDED] * n if demand is None else list(demand)
    picks_agent: list[int] = []
    picks_pos: list[int] = []
    spent = [0] * n
    visits = steps = 0

    # 1. token phase.  Agents are grouped by budget: ``levels[b]`` lists the agents with
    # budget b in index order, and a max-heap holds the distinct budget values.  The
    # agents of the top level are served in index order (each is then the agent with the
    # largest budget and the lowest index); those that buy a device drop one level, and
    # the next level is the merge (by index) of its own agents and the demoted ones.
    levels: dict[int, list[int]] = {}
    for i in active:
        b = budgets[i]
        if b > 0:
            if b in levels:
                levels[b].append(i)
            else:
                levels[b] = [i]
    tops = [-b for b in levels]
    heapq.heapify(tops)
    heappop, heappush = heapq.heappop, heapq.heappush
    add_agent, add_pos = picks_agent.append, picks_pos.append
    while tops and left:
        b = -heappop(tops)
        members = levels.pop(b)
        demoted = []
        for i in members:
            visits += 1
            p = ptr[i]
            e = end[i]
            if p == e:
                continue
            c = pool[p]
            if not rem[c]:  # skip exhausted pools
                q = p
                p += 1
                while p < e:
                    c = pool[p]
                    if rem[c]:
                        break
                    p += 1
                steps += p - q
                ptr[i] = p
                if p == e:
                    continue
            if score[p] < thresholds[i] or not cap[i]:
                continue  # leaves the token phase of this round
            rem[c] -= 1
            left -= 1
            if not left & 0xFFFF:  # every 65,536 devices: pools of millions take a while
                check_deadline("in the token phase")
            cap[i] -= 1
            spent[i] += 1
            add_agent(i)
            add_pos(p)
            if b > 1:
                demoted.append(i)
            if not left:
                break
        if demoted and left:
            below = b - 1
            if below in levels:
                levels[below] = sorted(levels[below] + demoted)  # two sorted runs: a linear merge
            else:
                levels[below] = demoted
                heappush(tops, -below)
    n_token = len(picks_agent)

    # 2. redistribution of the spent tokens, by weight, among the agents present
    pooled = n_token
    shares = [0] * n
    for i, share in apportion(pooled, int_weights, active).items():
        shares[i] = share
    for i in active:
        budgets[i] += shares[i] - spent[i]

    # 3. round-robin over the remaining devices, the turn persisting across rounds
    turn_start = turn
    if left and active:
        k = bisect_left(active, turn)
        queue = deque(i for i in (*active[k:], *active[:k]) if cap[i])
        popleft, push = queue.popleft, queue.append
        while queue and left:
            i = popleft()
            p = ptr[i]
            e = end[i]
            if p == e:
                continue
            c = pool[p]
            if not rem[c]:
                q = p
                p += 1
                while p < e:
                    c = pool[p]
                    if rem[c]:
                        break
                    p += 1
                steps += p - q
                ptr[i] = p
                if p == e:
                    continue
            rem[c] -= 1
            left -= 1
            if not left & 0xFFFF:
                check_deadline("in the round-robin phase")
            cap[i] -= 1
            add_agent(i)
            add_pos(p)
            turn = i + 1 if i + 1 < n else 0
            if cap[i]:
                push(i)
    return RoundOutcome(
        picks_agent=picks_agent,
        picks_pos=picks_pos,
        n_token=n_token,
        budgets=budgets,
        spent=spent,
        shares=shares,
        pooled=pooled,
        turn=turn,
        turn_start=turn_start,
        unallocated=left,
        visits=visits,
        steps=steps,
    )


def _compiled_round(arrays, budgets: list[int], thresholds: np.ndarray, active: list[int], turn: int,
                    int_weights: Sequence[int]) -> RoundOutcome:
    """:func:`mtf_round` with its two phases compiled (:mod:`~laissez_opt.heuristics._mtf_kernel`), the same outcome.

    The token phase and the round-robin phase run as compiled loops over the arrays of
    the round's lists; the redistribution between them stays in exact integer Python
    (:func:`apportion`).  Unlike :func:`mtf_round` the compiled loops do not look at the
    time limit between devices (the whole round is then a few milliseconds per 10^5 devices).
    """
    from ._mtf_kernel import round_robin, token_phase

    pool, score, start, end, counts, demand, active_arr = arrays
    rem = counts.copy()
    left = int(rem.sum())
    ptr = start.copy()
    cap = demand.copy()
    budget_arr = np.asarray(budgets, dtype=np.int64)
    picks_agent, picks_pos, count, spent_arr, left, visits, steps = token_phase(
        pool, score, ptr, end, rem, left, cap, budget_arr, thresholds, active_arr)
    n_token = int(count)
    spent = spent_arr.tolist()
    shares = [0] * len(budgets)
    for i, share in apportion(n_token, int_weights, active).items():
        shares[i] = share
    budgets = list(budgets)
    for i in active:
        budgets[i] += shares[i] - spent[i]
    turn_start = turn
    picks_agent, picks_pos, count, turn, left, more = round_robin(
        pool, ptr, end, rem, left, cap, active_arr, turn, len(budgets), picks_agent, picks_pos, count)
    return RoundOutcome(
        picks_agent=picks_agent[:count].tolist(),
        picks_pos=picks_pos[:count].tolist(),
        n_token=n_token,
        budgets=budgets,
        spent=spent,
        shares=shares,
        pooled=n_token,
        turn=int(turn),
        turn_start=turn_start,
        unallocated=int(left),
        visits=int(visits),
        steps=int(steps + more),
    )


# --------------------------------------------------------------------------- the method


def _int_option(value, name: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}", path=f"option {name}")
    return int(value)


def _denominators(instance: Instance, mode: str, dense: bool | None = None) -> np.ndarray:
    """``M_i (1 + 1e-9)`` per agent, shape ``(n, 1)`` (or ``(n, R)`` per round for ``"round"``); 1 where ``M_i = 0``.

    ``M_i`` is the agent's largest utility over its edges and rounds (``"agent"``) or over
    the edges of the round (``"round"``), at least 0; ``"none"``: 1 everywhere.  ``dense``:
    whether :func:`_dense_in_order` holds, when the caller knows.
    """
    if mode == "none":
        return np.ones((instance.n_agents, 1))
    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    if n and m and (_dense_in_order(instance) if dense is None else dense):  # every pair, in order: row maxima
        table = instance.edge_utility.reshape(n, m, rounds)
        top = np.maximum(table.max(axis=1) if mode == "round" else table.max(axis=(1, 2))[:, None], 0.0)
    elif use_compiled(instance):
        from ._mtf_kernel import agent_top

        top = agent_top(instance.edge_agent, instance.edge_utility, n, 1 if mode == "round" else 0)
    else:
        u, agent = instance.edge_utility, instance.edge_agent
        top = np.zeros((n, rounds if mode == "round" else 1))
        np.maximum.at(top, agent, u if mode == "round" else (u.max(axis=1) if u.size else np.zeros(0))[:, None])
    return np.where(top > 0, top * (1.0 + 1e-9), 1.0)


def initial_budgets(instance: Instance, tokens: int) -> list[int]:
    """``B_i^1``: ``tokens`` apportioned by weight (eq. 4.1, largest remainder); ``budget`` fields override.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g")], [lo.Agent("A", weight=2), lo.Agent("B", budget=7)], [])
    >>> initial_budgets(inst, 3)
    [2, 7]
    """
    ints = integer_weights([a.weight for a in instance.agents])
    shares = apportion(tokens, ints, list(range(instance.n_agents)))
    out = []
    for i, agent in enumerate(instance.agents):
        if agent.budget is None:
            out.append(shares[i])
        elif float(agent.budget).is_integer():
            out.append(int(agent.budget))
        else:
            raise InputError(
                f"an MTF budget is a whole number of tokens, got {agent.budget!r}", path=f"$.agents[{i}].budget"
            )
    return out


class _Setup:
    """What every run on one instance shares: budgets, weights, caps and per-round preference lists."""

    def __init__(self, instance: Instance, tokens: int | None, normalize: str):
        if normalize not in _NORMALIZE:
            raise InputError(f"normalize must be one of {', '.join(_NORMALIZE)}, got {normalize!r}", path="option normalize")
        rounds = instance.rounds
        self.instance = instance
        self.counts = instance.counts.tolist()
        self.tokens = int(sum(self.counts)) if tokens is None else _int_option(tokens, "tokens")
        self.budgets0 = initial_budgets(instance, self.tokens)
        self.total = sum(self.budgets0)
        self.ints = integer_weights(instance.weights.tolist())
        self.demand = [_UNBOUNDED if a.demand is None else int(a.demand) for a in instance.agents]
        arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
        last = instance.last_rounds
        self.compiled = use_compiled(instance)
        dense = _dense_in_order(instance)
        den = _denominators(instance, normalize, dense)
        present = [(arrival <= r) & (r <= last) for r in range(rounds)]
        self.prefs = [_preferences_from_edges(instance, r, None, present[r], den=den[:, min(r, den.shape[1] - 1)],
                                              dense=dense, compiled=self.compiled) for r in range(rounds)]
        self.active = [np.nonzero(present[r])[0].tolist() for r in range(rounds)]

    def run(self, r: int, budgets: list[int], turn: int, taus) -> RoundOutcome:
        arrays = self._arrays(r)
        if arrays is not None and max(budgets, default=0) < 2**62:
            try:
                thresholds = np.asarray(taus, dtype=np.float64)
            except (TypeError, ValueError):
                thresholds = None
            if thresholds is not None and thresholds.shape == (len(budgets),):
                return _compiled_round(arrays, budgets, thresholds, self.active[r], turn, self.ints)
        return mtf_round(
            self.prefs[r], self.counts, budgets, taus,
            active=self.active[r], turn=turn, int_weights=self.ints, demand=self.demand,
        )

    def _arrays(self, r: int):
        """Round ``r``'s lists and caps as int64/float64 arrays for the compiled round (None: not applicable)."""
        cache = self.__dict__.setdefault("_cache", {})
        if r not in cache:
            prefs = self.prefs[r]
            if not self.compiled or sum(self.counts) >= 2**62:
                cache[r] = None
            else:
                cache[r] = (np.asarray(prefs.pool, dtype=np.int64), np.asarray(prefs.score, dtype=np.float64),
                            np.asarray(prefs.start, dtype=np.int64), np.asarray(prefs.end, dtype=np.int64),
                            np.asarray(self.counts, dtype=np.int64), np.asarray(self.demand, dtype=np.int64),
                            np.asarray(self.active[r], dtype=np.int64))
        return cache[r]

    def context(self, r: int, budgets: list[int], turn: int) -> RoundContext:
        ctx = RoundContext(
            round=r,
            active=self.active[r],
            prefs=self.prefs[r],
            counts=self.counts,
            weights=self.instance.weights,
            int_weights=self.ints,
            demand=self.demand,
            total_tokens=self.total,
            n_agents=self.instance.n_agents,
        )
        ctx.simulate = lambda taus: self.run(r, budgets, turn, taus)
        return ctx

    def round_amounts(self, r: int, out: RoundOutcome) -> np.ndarray:
        """Devices per edge given in round ``r`` by ``out``, shape ``(E,)``."""
        col = np.zeros(self.instance.n_edges)
        self.add_round(col, r, out)
        return col

    def add_round(self, col: np.ndarray, r: int, out: RoundOutcome) -> np.ndarray:
        """Add round ``r``'s devices per edge to ``col`` (zeros before); returns the edges touched."""
        edges = _edges_at(self.prefs[r], out.picks_pos) if out.picks_pos else np.zeros(0, np.int64)
        np.add.at(col, edges, 1.0)
        return edges


def solve_mtf(
    instance: Instance,
    *,
    tokens: int | None = None,
    threshold="fixed:0",
    seed: int = 0,
    episodes: int = 1,
    normalize: str = "agent",
    eta: float | None = None,
    reward: str | None = None,
    counterfactual: str | None = None,
    gamma: float | None = None,
    lr_actor: float | None = None,
    lr_critic: float | None = None,
    hidden: int | None = None,
    state: dict | None = None,
) -> Result:
    """Run Most-Token-First over all rounds of ``instance``; ``objective = sum_i w_i U_i``.

    ``tokens``: the token pool ``T`` (default ``sum_c k_c``); ``threshold``: ``"fixed:0.3"``,
    a number, a mapping ``{agent id: tau or [tau per round]}``, an ``n x R`` array,
    ``"hedge"`` or ``"actor_critic"`` (see :mod:`laissez_opt.heuristics.thresholds`; their
    options ``eta``, ``reward``, ``counterfactual``, ``gamma``, ``lr_actor``,
    ``lr_critic``, ``hidden`` are passed through); ``seed`` seeds the learners;
    ``episodes`` repeats the whole horizon with the learners carrying over (the result
    is the last episode's); ``normalize``: ``agent``, ``round`` or ``none``.
    ``state``: continue an earlier run, ``{"budgets": {agent id: B_i}, "turn": agent id}``
    as reported in its ``details["state"]`` (the budgets ``B_i^r`` and the round-robin turn
    carry over; a threshold learner carries over when the same policy object is passed as
    ``threshold``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=3)], [lo.Agent("A"), lo.Agent("B", weight=2)],
    ...                    [lo.Edge("A", "g", 1.0), lo.Edge("B", "g", 1.0)])
    >>> res = solve_mtf(inst)
    >>> res.utilities, res.details["initial_budgets"], res.details["state"]
    ({'A': 1.0, 'B': 2.0}, [1, 2], {'budgets': {'A': 1, 'B': 2}, 'turn': 'A'})
    >>> solve_mtf(inst, state={"budgets": {"A": 5, "B": 0}, "turn": "B"}).details["initial_budgets"]
    [5, 0]
    """
    t0 = time.perf_counter()
    given = dict(eta=eta, reward=reward, counterfactual=counterfactual, gamma=gamma, lr_actor=lr_actor,
                 lr_critic=lr_critic, hidden=hidden)
    policy_opts = {k: v for k, v in given.items() if v is not None}
    episodes = _int_option(episodes, "episodes", minimum=1)
    seed = _int_option(seed, "seed")
    setup = _Setup(instance, tokens, normalize)
    turn0 = 0
    resume = read_state(state, "mtf", ("budgets", "turn"))
    if resume is not None:
        setup.budgets0, turn0 = _resumed(instance, resume)
        setup.total = sum(setup.budgets0)
    n, rounds, total, budgets0 = instance.n_agents, instance.rounds, setup.total, setup.budgets0
    tokens = setup.tokens
    policy = make_policy(threshold, instance, seed=seed, **policy_opts)
    context = setup.context

    welfare_by_episode = []
    ids = ([a.id for a in instance.agents], [p.id for p in instance.pools])
    for episode in range(episodes):
        budgets, turn = list(budgets0), turn0
        amounts = np.zeros((instance.n_edges, rounds))
        touched = []
        log = []
        policy.start_episode()
        for r in range(rounds):
            check_deadline(f"in round {r} of {instance.rounds}")
            ctx = context(r, budgets, turn)
            taus = policy.thresholds(ctx, budgets)
            out = ctx.simulate(taus)
            policy.observe(ctx, budgets, taus, out)
            touched.append(setup.add_round(amounts[:, r], r, out))
            if sum(out.budgets) != total:  # pragma: no cover - an invariant, tested
                raise AssertionError(f"tokens not conserved in round {r}: {sum(out.budgets)} != {total}")
            if episode == episodes - 1:
                log.append(_round_log(instance, r, ctx, budgets, taus, out, ids))
            budgets, turn = out.budgets, out.turn
        policy.end_episode()
        utilities = touched_utilities(instance, amounts, touched)
        welfare_by_episode.append(float(instance.weights @ utilities))

    details = {
        "agents": [a.id for a in instance.agents],
        "tokens": tokens,
        "total_tokens": total,
        "initial_budgets": budgets0,
        "threshold_policy": policy.describe(),
        "normalize": normalize,
        "episodes": episodes,
        "welfare_by_episode": welfare_by_episode,
        "final_budgets": budgets,
        "final_turn": instance.agents[turn].id,
        "rounds": log,
        "state": {"budgets": {a.id: int(b) for a, b in zip(instance.agents, budgets)}, "turn": instance.agents[turn].id},
    }
    params = {"tokens": tokens, "threshold": policy.describe()["name"], "seed": seed, "episodes": episodes, "normalize": normalize}
    return Result(
        instance=instance.name,
        method="mtf",
        status="feasible",
        solver=None,
        objective=float(instance.weights @ utilities),
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        timing={"build_s": 0.0, "solve_s": time.perf_counter() - t0},
        route="mtf",
        mode="integral",
        params=params,
        details=details,
        amounts=amounts,
    )


def _resumed(instance: Instance, state: dict) -> tuple[list[int], int]:
    """Budgets (by agent index) and turn of a ``state`` option (see :func:`solve_mtf`)."""
    budgets = state["budgets"]
    if not isinstance(budgets, dict) or sorted(budgets) != sorted(instance.agent_index):
        raise InputError("state.budgets must give every agent id its budget", path="state.budgets")
    out = [0] * instance.n_agents
    for agent_id, value in budgets.items():
        out[instance.agent_index[agent_id]] = _int_option(value, f"state.budgets.{agent_id}")
    return out, agent_of(instance, state["turn"], "state.turn")


def search_fixed_thresholds(
    instance: Instance,
    target,
    *,
    tokens: int | None = None,
    normalize: str = "agent",
    grid: Sequence[float] = GRID,
    limit: int = 1000,
) -> list[dict[str, list[list[float]]]]:
    """Every table of fixed thresholds ``tau_{i,r}`` from ``grid`` under which MTF yields ``target``.

    ``target``: an ``E x R`` amount array (``Result.amounts``) or a list of allocation
    records.  Two thresholds of the same agent and round behave identically when they
    admit the same prefix of its preference list, so the search runs over these classes
    (at most ``|grid|`` per agent and round), round by round, keeping only branches whose
    allocation matches the target so far (budgets and turn carry over).  Each solution
    maps an agent id to, per round, the grid values that work there (any choice per
    cell combines with the rest of that solution); at most ``limit`` solutions.  The
    search is exponential in the number of agents: meant for the thesis's small examples.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g"), lo.Pool("h")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "g", 0.9), lo.Edge("A", "h", 0.3), lo.Edge("B", "h", 0.6)])
    >>> search_fixed_thresholds(inst, [{"agent": "A", "pool": "g", "round": 0, "amount": 1},
    ...                                {"agent": "B", "pool": "h", "round": 0, "amount": 1}],
    ...                         grid=(0.0, 0.5))
    [{'A': [[0.0]], 'B': [[0.0, 0.5]]}, {'A': [[0.5]], 'B': [[0.0, 0.5]]}]

    (For A, 0.0 and 0.5 are different classes: 0.0 also admits ``h``, ``u~ = 0.3 / 0.9``.)
    """
    setup = _Setup(instance, tokens, normalize)
    rounds, n = instance.rounds, instance.n_agents
    if isinstance(target, np.ndarray):
        want = np.asarray(target, dtype=float)
    else:
        want = np.zeros((instance.n_edges, rounds))
        edge_of = {(e.agent, e.pool): k for k, e in enumerate(instance.edges)}
        for rec in target:
            want[edge_of[(rec["agent"], rec["pool"])], rec.get("round", 0)] += rec["amount"]
    if want.shape != (instance.n_edges, rounds):
        raise InputError(f"target has shape {want.shape}, expected {(instance.n_edges, rounds)}", path="target")
    grid = [float(g) for g in grid]
    classes = []  # classes[r][i]: list of lists of grid values with equal behaviour
    for r in range(rounds):
        per = []
        for i in range(n):
            neg = [-v for v in setup.prefs[r].scores_of(i)]
            groups: dict[int, list[float]] = {}
            for g in grid:
                groups.setdefault(bisect_right(neg, -g), []).append(g)
            per.append(list(groups.values()))
        classes.append(per)
    found: list[dict[str, list[list[float]]]] = []

    def walk(r: int, budgets: list[int], turn: int, chosen: list[list[list[float]]]):
        if len(found) >= limit:
            return
        if r == rounds:
            found.append({a.id: [chosen[q][i] for q in range(rounds)] for i, a in enumerate(instance.agents)})
            return
        active = setup.active[r]
        options = [classes[r][i] if i in active else [grid] for i in range(n)]
        for combo in product(*options):
            out = setup.run(r, budgets, turn, [c[0] for c in combo])
            if np.array_equal(setup.round_amounts(r, out), want[:, r]):
                walk(r + 1, out.budgets, out.turn, chosen + [list(combo)])

    walk(0, list(setup.budgets0), 0, [])
    return found


def _round_log(instance: Instance, r: int, ctx: RoundContext, before, taus, out: RoundOutcome, ids=None) -> dict:
    """The per-round record in ``details["rounds"]`` (agent lists follow ``details["agents"]``).

    ``allocation`` maps agent id to pool id to devices, agents in the order of their first
    pick and pools in the order of each agent's first pick of them.  ``ids``: the agent and
    pool ids (read from the instance when not given).
    """
    agent_ids, pool_ids = ids if ids is not None else ([a.id for a in instance.agents], [p.id for p in instance.pools])
    n, m = instance.n_agents, instance.n_pools
    alloc: dict[str, dict[str, int]] = {}
    if out.picks_agent:
        agents = np.asarray(out.picks_agent, dtype=np.int64)
        pools = np.asarray(ctx.prefs.pool)[np.asarray(out.picks_pos, dtype=np.int64)].astype(np.int64)
        pairs, first, devices = np.unique(agents * m + pools, return_index=True, return_counts=True)
        present_agents, agent_first = np.unique(agents, return_index=True)
        first_of_agent = np.zeros(n, dtype=np.int64)
        first_of_agent[present_agents] = agent_first
        order = np.lexsort((first, first_of_agent[pairs // m]))
        for a, c, k in zip((pairs // m)[order].tolist(), (pairs % m)[order].tolist(), devices[order].tolist()):
            aid = agent_ids[a]
            if aid in alloc:
                alloc[aid][pool_ids[c]] = k
            else:
                alloc[aid] = {pool_ids[c]: k}
    if len(ctx.active) == n:
        thresholds = [float(taus[i]) for i in range(n)]
    else:
        present = set(ctx.active)
        thresholds = [float(taus[i]) if i in present else None for i in range(n)]
    return {
        "round": r,
        "active": [agent_ids[i] for i in ctx.active],
        "turn_start": agent_ids[out.turn_start],
        "budgets_start": list(before),
        "thresholds": thresholds,
        "spent": out.spent,
        "pooled": out.pooled,
        "redistributed": out.shares,
        "budgets_end": out.budgets,
        "token_devices": out.n_token,
        "round_robin_devices": len(out.picks_agent) - out.n_token,
        "unallocated_devices": out.unallocated,
        "allocation": alloc,
    }


METHOD = Method(
    name="mtf",
    kind="heuristic",
    objective="sum_i w_i U_i (Most-Token-First; no optimality guarantee)",
    solvers=(),
    fractional=False,
    summary="Most-Token-First token scheduler with fixed, Hedge or actor-critic thresholds (thesis 002 ch. 4).",
    run=solve_mtf,
    options=(
        Option("tokens", "int", None, "the token pool T (default: the devices of one round)", minimum=0,
               maximum=2**53, nullable=True),
        Option("threshold", "any", "fixed:0", "threshold policy: fixed:<tau>, a number, hedge, actor_critic, "
               "{agent id: tau or [tau per round]} or an n x R table",
               accepts="fixed:<tau> | <tau> | hedge | actor_critic | {agent: tau} | table | ThresholdPolicy",
               types=(str, int, float, dict, list, tuple, np.ndarray, ThresholdPolicy)),
        Option("seed", "int", 0, "seed of the threshold learners", minimum=0, maximum=2**63 - 1),
        Option("episodes", "int", 1, "repeat the horizon with the learners carrying over", minimum=1, maximum=10**6),
        Option("normalize", "choice", "agent", "utilities thresholds compare to: u / max over the agent's edges "
               "and rounds, over the round, or raw", choices=_NORMALIZE),
        Option("eta", "float", None, "Hedge learning rate (default: eta_t = sqrt(8 ln |U| / t) after t rounds)", above=0, nullable=True),
        Option("reward", "choice", None, "Hedge reward: thesis (default) or token_value",
               choices=("thesis", "token_value"), nullable=True),
        Option("counterfactual", "choice", None, "Hedge counterfactuals: resimulate (default) or approximate",
               choices=("resimulate", "approximate"), nullable=True),
        Option("gamma", "float", None, "actor-critic discount (default 0.9)", above=0, maximum=1, nullable=True),
        Option("lr_actor", "float", None, "actor learning rate (default 0.05)", above=0, nullable=True),
        Option("lr_critic", "float", None, "critic learning rate (default 0.1)", above=0, nullable=True),
        Option("hidden", "int", None, "actor-critic hidden units (default 16)", minimum=1, maximum=4096,
               nullable=True),
        state_option("budgets B_i and the round-robin turn"),
    ),
    # A round records every pick: two int64 arrays grown by doubling (compiled), or two lists of ints.
    estimate=lambda instance, options: heuristic_size(instance, per_handed_bytes=PICK_BYTES,
                                                      compiles=use_compiled(instance)),
)
