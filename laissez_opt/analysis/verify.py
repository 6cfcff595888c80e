"""Independent verification of any result against its instance.

This module shares no code with the models: it never reads a constraint
matrix, a declaration, a lowering or a model-derived view, and imports
nothing from ``exact``, ``heuristics``, ``modeling`` or the result-building
helpers.  It recomputes feasibility, every agent's utility and the objective
of the methods whose objective it knows, so a bug in a model, a lowering or a
solver's tolerance shows up here as a violation.

What it reads from the instance: the raw data as given in the file, either as
records (:class:`~laissez_opt.instance.Agent`, ``Pool``, ``Edge``) or as the
plain columns that hold exactly the same numbers: ``agent_index`` /
``pool_index`` (id -> row), ``edge_agent``, ``edge_pool``, ``edge_utility``
(``E x R``), ``edge_cost``, ``counts``, ``base_prices``, ``weights`` and
``demands`` (``inf`` where null).  Agents' arrivals, deadlines, work,
elapsed time, migration costs, tasks, queue arrivals and required flags, and
edges' bids, are read from the records.  Everything else it derives itself:
the last usable round of each agent (``Instance.last_rounds``, which the models
use, is not read), the edge of each allocation record, the loads per pool and
round and per agent and round, utilities, equal shares, dominant shares, the
migration replay and the objectives.  From the result it reads the allocation
records (or, while a result holds its allocation as
:class:`~laissez_opt.result.AllocationColumns` and its records are not built
yet, those columns: the edge row, round and amount that each record will
carry), the reported utilities, payments, objective, status and gap; the
result's ``amounts`` array serves only as a guess of each record's edge that
is confirmed against the record's own agent and pool ids (a wrong guess costs
time, never a verdict).

Two implementations of the same checks:

* :func:`verify` reads the allocation into columns once and runs every check
  on whole arrays with numpy (sums per pool-round and agent-round with
  ``np.bincount``, the edges found by binary search on sorted keys); its cost
  is a few passes over the allocation records plus array work, a small share
  of any solve;
* :func:`_verify_records`, the reference, walks the records one by one with
  plain Python loops.  :func:`verify` hands over to it when any check fails,
  so the violation messages are exactly the reference's, and when a record is
  not a plain ``dict`` of the expected types.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..arrays import distinct
from ..instance import Instance
from ..result import AgentValues, Result

__all__ = ["Verification", "verify"]

# Methods whose objective is the weighted welfare sum_i w_i U_i.
_WEIGHTED_WELFARE = {"welfare", "greedy", "mtf", "round_robin", "time_equal", "fixed_partition", "dynamic_partition", "gandiva_fair", "auction"}


@dataclass
class Verification:
    """Outcome of :func:`verify`: ``ok``, the violations found and the recomputed utilities by agent id."""

    ok: bool
    violations: list[str] = field(default_factory=list)
    utilities: Mapping[str, float] = field(default_factory=dict)
    objective: float | None = None

    def __str__(self) -> str:
        if self.ok:
            return "verified: feasible, utilities and objective agree"
        return "verification failed: " + "; ".join(self.violations[:5]) + (
            f" (+{len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        )


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def _last_round(agent, rounds: int) -> int:
    """The agent's last usable round: its deadline, or the horizon's last round when none or later.

    Written here rather than read from the instance's views, to keep the check
    independent of the models (which use ``Instance.last_rounds``).
    """
    return rounds - 1 if agent.deadline is None else min(agent.deadline, rounds - 1)


def _named_edges(instance: Instance, allocation: list[dict], agents: dict, pools: dict) -> dict:
    """The instance's edges for the (agent, pool) pairs the allocation names, keyed by the pair.

    One pass over the edge records that keeps only the named pairs: an
    allocation names far fewer pairs than a dense instance has edges, and
    building a dictionary of every edge would cost more than the whole check.
    """
    wanted: dict[str, set] = {}
    for rec in allocation:
        agent_id, pool_id = rec.get("agent"), rec.get("pool")
        if agent_id in agents and pool_id in pools:
            wanted.setdefault(agent_id, set()).add(pool_id)
    found = {}
    if not wanted:
        return found
    pools_of = wanted.get
    for edge in instance.edges:
        named = pools_of(edge.agent)
        if named is not None and edge.pool in named:
            found[(edge.agent, edge.pool)] = edge
    return found


def _verify_records(instance: Instance, result: Result, *, tol: float = 1e-6) -> Verification:
    """The reference check: walk the instance's and the allocation's records one by one.

    Same checks and messages as :func:`verify`; :func:`verify` runs this when its
    column check finds any violation (so the messages come from here) or meets a
    record that is not a clean ``dict`` of the expected types.

    Checks: every record names a known agent, pool and edge and a round inside
    the horizon; amounts are finite, non-negative and integral in integral
    mode; no agent runs before its arrival or after its deadline; every pool
    holds at most ``k_c`` devices per round; every agent at most ``d_i`` per round;
    reported utilities and (for methods with a known objective) the objective
    match the recomputed ones.  An infeasible result carries no allocation.
    """
    problems: list[str] = []
    agents = {a.id: a for a in instance.agents}
    pools = {p.id: p for p in instance.pools}
    # Only the (agent, pool) pairs the allocation names: look up no other pair in it.
    edges = _named_edges(instance, result.allocation, agents, pools)
    if result.status == "infeasible":
        if result.allocation:
            problems.append("an infeasible result carries an allocation")
        return Verification(not problems, problems)
    pool_load: dict[tuple[str, int], float] = defaultdict(float)
    agent_load: dict[tuple[str, int], float] = defaultdict(float)
    utilities = {a.id: 0.0 for a in instance.agents}
    for k, rec in enumerate(result.allocation):
        where = f"allocation[{k}]"
        agent_id, pool_id, rnd, amount = rec.get("agent"), rec.get("pool"), rec.get("round", 0), rec.get("amount")
        if agent_id not in agents:
            problems.append(f"{where}: unknown agent {agent_id!r}")
            continue
        if pool_id not in pools:
            problems.append(f"{where}: unknown pool {pool_id!r}")
            continue
        edge = edges.get((agent_id, pool_id))
        if edge is None:
            problems.append(f"{where}: agent {agent_id!r} is incompatible with pool {pool_id!r}")
            continue
        if not isinstance(rnd, int) or not 0 <= rnd < instance.rounds:
            problems.append(f"{where}: round {rnd!r} outside 0..{instance.rounds - 1}")
            continue
        if not isinstance(amount, (int, float)) or not math.isfinite(amount):
            problems.append(f"{where}: amount {amount!r} is not a finite number")
            continue
        if amount < -tol:
            problems.append(f"{where}: negative amount {amount}")
        if result.mode == "integral" and abs(amount - round(amount)) > tol:
            problems.append(f"{where}: fractional amount {amount} in an integral result")
        agent = agents[agent_id]
        last = _last_round(agent, instance.rounds)
        if amount > tol and not agent.arrival <= rnd <= last:
            problems.append(f"{where}: agent {agent_id!r} runs in round {rnd} outside {agent.arrival}..{last}")
        # drf amounts count tasks; a task takes task["accelerator"] devices of the pool.
        pool_load[(pool_id, rnd)] += amount * (agent.task_vector.get("accelerator", 0.0) if result.method == "drf" else 1.0)
        agent_load[(agent_id, rnd)] += amount
        utilities[agent_id] += edge.utility_in(rnd) * amount
    for (pool_id, rnd), load in sorted(pool_load.items()):
        if load > pools[pool_id].count + tol:
            problems.append(f"pool {pool_id!r} round {rnd}: {load:g} devices used of {pools[pool_id].count}")
    for (agent_id, rnd), load in sorted(agent_load.items()):
        demand = agents[agent_id].demand
        if demand is not None and load > demand + tol:
            problems.append(f"agent {agent_id!r} round {rnd}: {load:g} devices exceed demand {demand}")
    for agent_id, value in utilities.items():
        reported = result.utilities.get(agent_id)
        if reported is None:
            problems.append(f"utility of agent {agent_id!r} not reported")
        elif not _close(reported, value, tol):
            problems.append(f"utility of agent {agent_id!r}: reported {reported!r}, recomputed {value!r}")
    objective = None
    if result.method == "min_cost":
        placed = {(rec["agent"], rec["pool"]) for rec in result.allocation if rec.get("amount", 0) > tol}
        for agent in instance.agents:
            if agent.required and not any(a == agent.id for a, _ in placed):
                problems.append(f"required agent {agent.id!r} is not placed")
            on = sorted(p for a, p in placed if a == agent.id)
            if len(on) > 1:
                problems.append(f"agent {agent.id!r} is placed on more than one pool ({', '.join(on)})")
        objective = sum(edges[key].cost or 0.0 for key in placed if key in edges)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed placement cost {objective!r}")
    if result.method == "vcg":
        # Money per device-round (a round lasts h hours): an agent values a device at bid * h (bids are per
        # device-hour), else at the round's utility; the operator each unsold device-round at b_c * h.
        # W = the agents' values of what they hold + the reserves of the unsold device-rounds; 0 <= p_i <= v_i.
        h = instance.round_hours
        value = defaultdict(float)
        for rec in result.allocation:
            edge = edges.get((rec.get("agent"), rec.get("pool")))
            if edge is not None and isinstance(rec.get("round"), int) and 0 <= rec["round"] < instance.rounds:
                worth = edge.bid * h if edge.bid is not None else edge.utility_in(rec["round"])
                value[edge.agent] += worth * rec["amount"]
        sold = defaultdict(float)
        for (pool_id, _), load in pool_load.items():
            sold[pool_id] += load
        objective = sum(value.values()) + sum(p.base_price * h * (p.count * instance.rounds - sold[p.id]) for p in instance.pools)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed welfare with reserves {objective!r}")
        for agent in instance.agents:
            pay = (result.payments or {}).get(agent.id)
            if pay is None or not -tol <= pay <= value[agent.id] + tol * max(1.0, value[agent.id]):
                problems.append(f"payment of agent {agent.id!r} is {pay!r}, outside [0, its value {value[agent.id]!r}]")
    if result.method in _WEIGHTED_WELFARE:
        objective = sum(agents[a].weight * u for a, u in utilities.items())
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {objective!r}")
    if result.method == "themis" and result.details.get("bidders"):
        # max rho_i over the bidders; rho_i = (t_i + W_i/X_i) X^id_i / W_i, X^id_i from the weighted equal share.
        total_weight = sum(a.weight for a in instance.agents)
        held, full = defaultdict(float), defaultdict(float)
        for e in instance.edges:
            held[e.agent] += pools[e.pool].count
            full[e.agent] += pools[e.pool].count * e.utility_in(0)
        objective = 0.0
        for agent_id in result.details["bidders"]:
            agent, share = agents[agent_id], agents[agent_id].weight / total_weight
            scale = 1.0 if agent.demand is None or share * held[agent_id] <= agent.demand else agent.demand / (share * held[agent_id])
            work = 1.0 if agent.work is None else agent.work
            rate = utilities[agent_id]
            rho = math.inf if rate <= 0 else (agent.elapsed + work / rate) * scale * share * full[agent_id] / work
            objective = max(objective, rho)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed max rho {objective!r}")
    if result.method in ("maxmin", "drf"):
        # Leximin objective: min over agents able to get value of U_i/(w_i E_i) (maxmin) or s_i/w_i (drf).
        total_weight, rounds = sum(a.weight for a in instance.agents), instance.rounds
        own, used, tasks = defaultdict(list), defaultdict(float), defaultdict(float)
        for e in instance.edges:
            own[e.agent].append(e)
        for rec in result.allocation:
            if result.method == "drf" and rec.get("agent") in agents and rec.get("pool") in pools:
                tasks[rec["agent"]] += rec["amount"]
                for kind, need in agents[rec["agent"]].task_vector.items():
                    used[(rec["pool"], kind, rec.get("round", 0))] += need * rec["amount"]
        for (pool_id, kind, rnd), load in sorted(used.items()):
            if load > pools[pool_id].capacity_vector.get(kind, 0.0) + tol * max(1.0, load):
                problems.append(f"pool {pool_id!r} round {rnd}: {load:g} of resource {kind!r} used of {pools[pool_id].capacity_vector.get(kind, 0.0):g}")
        values = []
        for agent in instance.agents:
            window = range(agent.arrival, _last_round(agent, rounds) + 1)
            task = agent.task_vector
            need = {k: v for k, v in task.items() if v > 0}
            if result.method == "maxmin":
                usable = any(e.utility_in(r) > 0 for e in own[agent.id] for r in window)
                if result.params.get("normalizer", "equal_share") == "raw":
                    scale = agent.weight
                else:
                    scale = agent.weight / total_weight * sum(pools[e.pool].count * e.utility_in(r) for e in own[agent.id] for r in range(rounds))
                value = utilities[agent.id] / scale if scale > 0 else 0.0
            else:
                least = 1.0 if result.mode == "integral" else 1e-300
                usable = bool(window) and any(all(pools[e.pool].capacity_vector.get(k, 0.0) >= v * least for k, v in need.items()) for e in own[agent.id])
                basis = [pools[e.pool] for e in own[agent.id]] if result.params.get("capacity_basis", "compatible") == "compatible" else instance.pools
                pooled = {k: sum(p.capacity_vector.get(k, 0.0) for p in basis) for k in need}
                delta = max((v / pooled[k] if pooled[k] > 0 else math.inf) for k, v in need.items())
                value = delta * tasks[agent.id] / rounds / agent.weight if math.isfinite(delta) else 0.0
            if usable and agent.demand != 0:
                values.append(value)
        objective = min(values) if values else 0.0
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed smallest normalised value {objective!r}")
    if result.method in ("migration", "migration_free", "fcfs_static", "myopic"):
        # Replay each job: progress u*x, minus mu on a pool other than its last; one pool a round, none after completing.
        kind, on = result.params.get("objective", "work"), defaultdict(list)
        for rec in result.allocation:
            if (rec.get("agent"), rec.get("pool")) in edges and isinstance(rec.get("round"), int) and rec.get("amount", 0) > tol:
                on[(rec["agent"], rec["round"])].append(rec)
        objective = 0.0
        for agent in instance.agents:
            work, done, last, when = 1.0 if agent.work is None else agent.work, 0.0, None, None
            for rnd in range(agent.arrival, instance.rounds):
                for k, rec in enumerate(on[(agent.id, rnd)]):
                    if when is not None or k:
                        problems.append(f"agent {agent.id!r} runs in round {rnd} after completing or on two pools")
                    done -= agent.migration_cost if last not in (None, rec["pool"]) else 0.0
                    done += edges[(agent.id, rec["pool"])].utility_in(rnd) * rec["amount"]
                    last = rec["pool"]
                    objective += pools[last].base_price * instance.round_hours * rec["amount"] if kind == "cost" else 0.0
                when = rnd if when is None and done >= work - 1e-6 * max(1.0, work) else when
            if kind == "work":
                objective += agent.weight * work if when is not None else 0.0
            elif when is None:
                problems.append(f"agent {agent.id!r} does not complete its work by its deadline")
            elif kind == "completion":
                objective += agent.weight * (when + 1)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {kind} objective {objective!r}")
    if result.method == "backlog":
        # Queues (thesis eq. 3.2): backlog = max(0, carried + arrivals - service), service = sum u x of the round.
        kind, objective = result.params.get("objective", "total"), 0.0
        service = defaultdict(float)
        for rec in result.allocation:
            edge = edges.get((rec.get("agent"), rec.get("pool")))
            if edge is not None and isinstance(rec.get("round"), int) and 0 <= rec["round"] < instance.rounds:
                service[(edge.agent, rec["round"])] += edge.utility_in(rec["round"]) * rec["amount"]
        for agent in instance.agents:
            carried, total = 0.0, 0.0
            for rnd in range(instance.rounds):
                arrived = carried + (agent.arrivals[rnd] if agent.arrivals is not None else 0.0)
                carried = max(0.0, arrived - service[(agent.id, rnd)])
                carried = 0.0 if carried <= 1e-9 * max(1.0, arrived) else carried
                total += carried
            objective = objective + agent.weight * total if kind == "total" else max(objective, total / agent.weight)
        if result.objective is None or not _close(result.objective, objective, tol):
            problems.append(f"objective: reported {result.objective!r}, recomputed {kind} backlog {objective!r}")
    if result.status == "optimal" and result.gap not in (None, 0.0) and result.gap > 1e-6:
        problems.append(f"labelled optimal with a gap of {result.gap:g}")
    return Verification(not problems, problems, utilities, objective)


# ------------------------------------------------------------------ the column check
class _Fallback(Exception):
    """The column check met a violation or a record it does not read: the record walk decides."""


#: Errors the column check turns into a fallback: a value of a type or size the record walk
#: reports (or raises on) by itself.
_UNREADABLE = (_Fallback, KeyError, TypeError, ValueError, OverflowError, IndexError, AttributeError)
#: Numbers the record walk reads as numbers (``bool`` and ``np.float64`` are ``int`` and ``float`` to it).
_NUMBER_TYPES = {float, int, bool, np.float64}


def verify(instance: Instance, result: Result, *, tol: float = 1e-6) -> Verification:
    """Recompute feasibility, utilities and objective of ``result`` from ``instance``.

    With ``x_{i,c,r}`` the allocation's amounts, ``k_c`` the pool sizes, ``d_i``
    the demands, ``[a_i, D_i]`` the agents' windows (``D_i = min(deadline, R-1)``)
    and ``u_{i,c,r}`` the edge utilities, a result passes when every record
    names a known agent, pool, edge ``(i, c)`` and round ``0 <= r < R``, its
    amount is finite, ``>= -tol`` and (integral mode) within ``tol`` of an
    integer, ``x > tol`` only for ``a_i <= r <= D_i``, ``sum_i x_{i,c,r} <= k_c + tol``,
    ``sum_c x_{i,c,r} <= d_i + tol``, every reported ``U_i`` matches
    ``sum_{c,r} u_{i,c,r} x_{i,c,r}`` (``|a - b| <= tol max(1, |a|, |b|)``), and the
    objective of the methods this module knows (weighted welfare, min_cost,
    vcg with its payment bounds, themis's ``max rho``, the leximin level of
    maxmin and drf with drf's resource loads, the migration family's replay,
    backlog) matches its recomputation (:func:`_verify_records` states each
    formula in its comments; the feasibility conditions are the models' of
    ``models/`` and the result format's of ``docs/getting-started.md``,
    section Verification).  Cost: ``O(L + n + E R)`` array work for ``L``
    allocation records, ``n`` agents and ``E`` edges, and one Python-level
    read of each record's four fields.
    An infeasible result carries no allocation; an optimal one has no gap.

    The allocation is read once into columns and every check runs on whole
    arrays (``np.bincount`` per pool-round and agent-round, a sorted-key
    ``np.searchsorted`` for the edges); when any check fails, or a record is
    not a plain ``dict`` of the expected types, the record-by-record reference
    :func:`_verify_records` runs and its messages are returned, so the
    messages never depend on the path.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/hotos25-table1.json")
    >>> result = lo.solve(inst, "welfare", check=False)
    >>> verify(inst, result).ok
    True
    >>> result.utilities[inst.agents[0].id] += 1.0
    >>> verify(inst, result).violations[0].startswith("utility of agent")
    True
    """
    if result.status != "infeasible":
        try:
            return _verify_columns(instance, result, tol)
        except _UNREADABLE:
            pass
    return _verify_records(instance, result, tol=tol)


def _check(passed) -> None:
    """Hand over to the record walk when a whole-array check does not hold everywhere."""
    if not np.all(passed):
        raise _Fallback


def _allocation_columns(instance: Instance, result: Result):
    """Agent row, pool column, round, amount and edge row of every record, after checking their types in bulk.

    The edge row is ``None`` when it must be looked up (:func:`_edge_of`).
    """
    columns = result.allocation_columns
    if columns is not None and columns.instance is instance:
        # The records are not built yet: read the result's own columns. They name each entry's
        # edge row, round and amount; the records built later carry exactly these
        # (Result.allocation), so checking them checks what the result reports.
        edge, rounds, amounts = columns.edge, columns.round, columns.amount
        if not (edge.dtype.kind == rounds.dtype.kind == "i" and amounts.dtype == np.float64
                and edge.shape == rounds.shape == amounts.shape and edge.ndim == 1):
            raise _Fallback
        if edge.size:
            _check(edge.min() >= 0 and edge.max() < instance.n_edges)
        return instance.edge_agent[edge], instance.edge_pool[edge], rounds.astype(np.int64, copy=False), amounts, edge
    allocation = result.allocation
    size = len(allocation)
    if size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0), empty
    if set(map(type, allocation)) != {dict}:
        raise _Fallback
    rounds, amounts = (list(map(operator.itemgetter(key), allocation)) for key in ("round", "amount"))
    if not set(map(type, rounds)) <= {int, bool} or not set(map(type, amounts)) <= _NUMBER_TYPES:
        raise _Fallback
    rounds = np.fromiter(rounds, dtype=np.int64, count=size)
    amounts = np.fromiter(amounts, dtype=np.float64, count=size)
    edge = _hinted_edges(instance, result)
    if edge is not None:
        return instance.edge_agent[edge], instance.edge_pool[edge], rounds, amounts, edge
    # Ids need no type check: only an equal string finds an agent or a pool, as in the record walk.
    missing = itertools.repeat(-1)
    agent = np.fromiter(map(instance.agent_index.get, map(operator.itemgetter("agent"), allocation), missing),
                        dtype=np.int64, count=size)
    pool = np.fromiter(map(instance.pool_index.get, map(operator.itemgetter("pool"), allocation), missing),
                       dtype=np.int64, count=size)
    return agent, pool, rounds, amounts, None


def _hinted_edges(instance: Instance, result: Result) -> np.ndarray | None:
    """The edge row of every record, guessed from ``result.amounts`` and confirmed on the records, or ``None``.

    A result produced in this process carries its amounts as an ``E x R``
    array; its nonzero entries, in row order, are a guess of the edge each
    record is on.  The guess is only a hint: it is kept when every record's
    agent and pool ids equal the ids of its guessed edge's agent and pool
    (string equality, what a lookup by id finds), and dropped otherwise, so a
    wrong or stale array costs the id lookups and never a wrong verdict.
    Comparing ids in order is several times faster than hashing a million ids.
    """
    amounts = result.amounts
    if not isinstance(amounts, np.ndarray) or amounts.shape != (instance.n_edges, instance.rounds):
        return None
    guess = np.nonzero(amounts > 1e-9)[0]
    allocation = result.allocation
    if guess.size != len(allocation):
        return None
    for key, ids, rows in (("agent", list(instance.agent_index), instance.edge_agent),
                           ("pool", list(instance.pool_index), instance.edge_pool)):
        if list(map(operator.itemgetter(key), allocation)) != list(map(ids.__getitem__, rows[guess].tolist())):
            return None
    return guess


def _edge_of(instance: Instance, agent: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """The edge row of each (agent, pool) pair, by binary search on the sorted keys ``i * m + c``."""
    m = instance.n_pools
    keys = instance.edge_agent * m + instance.edge_pool
    order = None
    if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
    wanted = agent * m + pool
    if wanted.size and not keys.size:
        raise _Fallback
    at = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
    _check(keys[at] == wanted)
    return at if order is None else order[at]


def _sums_by(keys: np.ndarray, weights: np.ndarray, size: int) -> tuple[np.ndarray | None, np.ndarray]:
    """``(key, sum of weights)`` per key, each sum taken in record order (as the record walk adds).

    The keys are ``None`` when the sums cover every key ``0 .. size - 1`` in order.
    """
    if size <= max(1 << 22, 4 * keys.size):
        return None, np.bincount(keys, weights=weights, minlength=size)
    present, inverse = np.unique(keys, return_inverse=True)
    return present, np.bincount(inverse, weights=weights, minlength=present.size)


def _at_most(load: np.ndarray, keys: np.ndarray | None, limit: np.ndarray, rounds: int, slack) -> None:
    """``load <= limit + slack`` for the sums of :func:`_sums_by` over keys ``row * rounds + r``, ``limit`` per row."""
    if keys is None:
        bound = limit if rounds == 1 else np.repeat(limit, rounds)
    else:
        bound = limit[keys // rounds]
    _check(load <= bound + slack)


def _field(instance: Instance, name: str, rows) -> list:
    """The agents' field ``name`` for ``rows``, read from the instance's columns (no record built when deferred)."""
    values = instance.agent_field(name)
    return values if isinstance(rows, range) and len(rows) == len(values) else [values[i] for i in rows]


def _windows(instance: Instance, rows) -> tuple[np.ndarray, np.ndarray]:
    """Arrival ``a_i`` and last usable round ``min(deadline, R - 1)`` of the agents ``rows``."""
    size = len(rows)
    arrival = np.fromiter(_field(instance, "arrival", rows), dtype=np.int64, count=size)
    # Deadlines are integers below 2**31 (checked on construction), exact as floats; null reads as NaN.
    deadline = np.fromiter(_field(instance, "deadline", rows), dtype=np.float64, count=size)
    last = np.where(np.isnan(deadline), instance.rounds - 1, np.minimum(deadline, instance.rounds - 1))
    return arrival, last.astype(np.int64)


def _column(instance: Instance, name: str, rows, default: float) -> np.ndarray:
    """The agents' field ``name`` (``default`` where null) as floats."""
    values = np.fromiter(_field(instance, name, rows), dtype=np.float64, count=len(rows))
    return np.where(np.isnan(values), default, values)


def _numbers(mapping, ids: list[str]) -> np.ndarray:
    """``mapping[id]`` for every id as floats; a missing or non-numeric value hands over to the record walk."""
    # A result lists its agents in the instance's order: read the values without a lookup per agent.
    in_order = type(mapping) is dict and len(mapping) == len(ids) and list(mapping) == ids
    values = list(mapping.values()) if in_order else list(map(mapping.get, ids))
    if not set(map(type, values)) <= _NUMBER_TYPES:
        raise _Fallback
    return np.fromiter(values, dtype=np.float64, count=len(values))


def _agrees(reported, recomputed: float, tol: float) -> None:
    if reported is None or not _close(reported, recomputed, tol):
        raise _Fallback


def _sequential_sum(values: np.ndarray) -> float:
    """``v_0 + v_1 + ...`` left to right, as Python's ``sum`` adds (``np.sum`` pairs terms)."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def _verify_columns(instance: Instance, result: Result, tol: float) -> Verification:
    """:func:`verify` on whole columns; raises :class:`_Fallback` at the first check that does not hold."""
    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    agent, pool, rnd, amount, edge = _allocation_columns(instance, result)
    if edge is None:
        _check(agent >= 0)
        _check(pool >= 0)
        edge = _edge_of(instance, agent, pool)
    if rnd.size:
        _check(rnd.min() >= 0 and rnd.max() < rounds)
        # A finite total has no NaN or infinite term (either would make it NaN or infinite).
        _check(np.isfinite(amount.sum()) or np.all(np.isfinite(amount)))
        _check(amount.min() >= -tol)
    if result.mode == "integral":
        _check(np.abs(amount - np.round(amount)) <= tol)
    running = amount > tol
    # Windows of the agents that run (all agents when most of them do); with one round every
    # window is round 0 (the instance's checks: 0 <= a_i < R, deadline >= a_i).
    arrival = last = None
    if rounds > 1:
        busy = np.flatnonzero(np.bincount(agent[running], minlength=n))
        rows = range(n) if 4 * busy.size > n or result.method in ("maxmin", "drf") else busy.tolist()
        arrival, last = np.zeros(n, dtype=np.int64), np.full(n, rounds - 1, dtype=np.int64)
        arrival[rows], last[rows] = _windows(instance, rows)
        _check((arrival[agent[running]] <= rnd[running]) & (rnd[running] <= last[agent[running]]))
    weights = instance.weights
    counts = instance.counts
    edge_utility = instance.edge_utility
    tasks = kinds = None
    if result.method == "drf":
        tasks, capacity, kinds = _drf_vectors(instance)
        per_device = tasks[agent, kinds.index("accelerator")]
        load_weights = amount * per_device
    else:
        load_weights = amount
    keys, load = _sums_by(pool if rounds == 1 else pool * rounds + rnd, load_weights, m * rounds)
    _at_most(load, keys, counts, rounds, tol)
    keys, load = _sums_by(agent if rounds == 1 else agent * rounds + rnd, amount, n * rounds)
    _at_most(load, keys, instance.demands, rounds, tol)
    earned = np.take(edge_utility.ravel(), edge if rounds == 1 else edge * rounds + rnd)
    earned *= amount
    utility = np.bincount(agent, weights=earned, minlength=n)
    deferred = result.utility_values
    if deferred is not None and deferred.instance is instance:
        # Not yet a dict: the array its entries will be built from, one value per agent row.
        reported = deferred.values
        if reported.dtype != np.float64 or reported.shape != (n,):
            raise _Fallback
    else:
        reported = _numbers(result.utilities, list(instance.agent_index))
    difference = np.abs(reported - utility)
    # Within tol everywhere passes at once; otherwise each value gets its relative tolerance.
    if difference.size and not difference.max() <= tol:
        _check(difference <= tol * np.maximum(1.0, np.maximum(np.abs(reported), np.abs(utility))))
    objective = None
    method = result.method
    if method == "min_cost":
        pairs = distinct(agent[running] * m + pool[running])
        placements = np.bincount(pairs // m, minlength=n)
        _check(placements <= 1)
        required = np.fromiter(map(operator.attrgetter("required"), instance.agents), dtype=bool, count=n)
        _check(~required | (placements > 0))
        cost = instance.edge_cost[distinct(edge[running])]
        objective = float(np.where(np.isnan(cost), 0.0, cost).sum())
        _agrees(result.objective, objective, tol)
    if method == "vcg":
        h = instance.round_hours
        # The instance's bid columns (not its records: building millions of them cost more than the check).
        has_bid = instance.edge_bid_given[edge]
        worth = np.where(has_bid, instance.edge_bid[edge] * h, edge_utility[edge, rnd])
        value = np.bincount(agent, weights=worth * amount, minlength=n)
        sold = np.bincount(pool, weights=amount, minlength=m)
        unsold = instance.base_prices * h * (counts * rounds - sold)
        objective = float(value.sum() + unsold.sum())
        _agrees(result.objective, objective, tol)
        pay = _numbers(result.payments or {}, list(instance.agent_index))
        _check((pay >= -tol) & (pay <= value + tol * np.maximum(1.0, value)))
    if method in _WEIGHTED_WELFARE:
        objective = _sequential_sum(weights * utility)
        _agrees(result.objective, objective, tol)
    if method == "themis" and result.details.get("bidders"):
        objective = _themis_objective(instance, result.details["bidders"], utility)
        _agrees(result.objective, objective, tol)
    if method in ("maxmin", "drf"):
        if method == "drf":
            objective = _drf_objective(instance, result, agent, pool, rnd, amount, tasks, capacity, kinds, (arrival, last), tol)
        else:
            objective = _maxmin_objective(instance, result, utility, (arrival, last))
        _agrees(result.objective, objective, tol)
    if method in ("migration", "migration_free", "fcfs_static", "myopic"):
        objective = _replay(instance, result, agent, pool, rnd, amount, edge, running)
        _agrees(result.objective, objective, tol)
    if method == "backlog":
        objective = _backlog(instance, result, agent * rounds + rnd, earned)
        _agrees(result.objective, objective, tol)
    if result.status == "optimal" and result.gap not in (None, 0.0) and result.gap > 1e-6:
        raise _Fallback
    return Verification(True, [], AgentValues(instance, utility), objective)


def _themis_objective(instance: Instance, bidders, utility: np.ndarray) -> float:
    """``max rho_i`` over the bidders, ``rho_i = (t_i + W_i / X_i) X^id_i / W_i`` against the weighted equal share."""
    n, counts = instance.n_agents, instance.counts
    edge_agent, edge_pool = instance.edge_agent, instance.edge_pool
    total_weight = _sequential_sum(instance.weights)
    held = np.bincount(edge_agent, weights=counts[edge_pool].astype(np.float64), minlength=n)
    full = np.bincount(edge_agent, weights=counts[edge_pool] * instance.edge_utility[:, 0], minlength=n)
    rows = [instance.agent_index[b] for b in bidders]
    share = instance.weights[rows] / total_weight
    demand, held, full = instance.demands[rows], held[rows], full[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(share * held <= demand, 1.0, demand / (share * held))
    work = _column(instance, "work", rows, 1.0)
    elapsed = _column(instance, "elapsed", rows, 0.0)
    rate = utility[rows]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a subnormal rate gives rho = inf
        rho = np.where(rate <= 0, np.inf, (elapsed + work / rate) * scale * share * full / work)
    _check(~np.isnan(rho))
    return max(0.0, float(rho.max())) if rho.size else 0.0


def _maxmin_objective(instance: Instance, result: Result, utility: np.ndarray, windows) -> float:
    """``min U_i / (w_i E_i)`` over the agents able to get value (``E_i``: the weighted equal share, or 1 when raw)."""
    n, rounds = instance.n_agents, instance.rounds
    edge_agent, edge_utility = instance.edge_agent, instance.edge_utility
    raw = result.params.get("normalizer", "equal_share") == "raw"
    full = None
    if rounds == 1 and not raw:
        full, usable = _one_round_shares(instance)
    if full is None:
        arrival, last = windows
        if rounds == 1:
            positive = edge_utility[:, 0] > 0
        else:
            in_window = (np.arange(rounds) >= arrival[edge_agent, None]) & (np.arange(rounds) <= last[edge_agent, None])
            positive = np.any((edge_utility > 0) & in_window, axis=1)
        usable = np.zeros(n, dtype=bool)
        usable[edge_agent[positive]] = True
    if raw:
        scale = instance.weights
    else:
        if full is None:
            # Edge by edge, round by round: the order in which the record walk adds.
            counts = instance.counts[instance.edge_pool]
            worth = counts * edge_utility[:, 0] if rounds == 1 else (counts[:, None] * edge_utility).ravel()
            full = np.bincount(edge_agent if rounds == 1 else np.repeat(edge_agent, rounds), weights=worth, minlength=n)
        scale = instance.weights / _sequential_sum(instance.weights) * full
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(scale > 0, utility / scale, 0.0)
    chosen = value[usable & (instance.demands != 0)]
    return float(chosen.min()) if chosen.size else 0.0


def _one_round_shares(instance: Instance) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(sum_c k_c u_ic, usable)`` per agent in one pass over the edges, or ``(None, None)`` off its domain.

    With one round, every utility ``>= 0`` and every pool holding a device, an agent
    has an edge of positive utility exactly when ``sum_c k_c u_ic > 0``: the usable
    agents come with the equal-share sum, without a second pass over the edges or an
    edge-sized mask (at 10^5 agents the separate passes were a third of the check).
    """
    counts = instance.counts
    utility = instance.edge_utility[:, 0]
    if not counts.size or counts.min() <= 0 or (utility.size and utility.min() < 0):
        return None, None
    worth = np.take(counts.astype(np.float64), instance.edge_pool)
    worth *= utility
    full = np.bincount(instance.edge_agent, weights=worth, minlength=instance.n_agents)
    return full, full > 0


def _drf_vectors(instance: Instance) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Task demand per agent and capacity per pool, one column per resource kind, from the records."""
    tasks = list(map(operator.attrgetter("task"), instance.agents))
    special = [i for i, t in enumerate(tasks) if t is not None]
    kinds = ["accelerator"]
    for p in instance.pools:
        kinds += [k for k, _ in (p.resources or ()) if k not in kinds]
    for i in special:
        kinds += [k for k, _ in tasks[i] if k not in kinds]
    column = {k: j for j, k in enumerate(kinds)}
    need = np.zeros((instance.n_agents, len(kinds)))
    need[:, 0] = 1.0
    for i in special:
        need[i, 0] = 0.0
        for k, v in tasks[i]:
            need[i, column[k]] = float(v)
    capacity = np.zeros((instance.n_pools, len(kinds)))
    for c, p in enumerate(instance.pools):
        for k, v in p.capacity_vector.items():
            capacity[c, column[k]] = v
    return need, capacity, kinds


def _drf_objective(instance, result, agent, pool, rnd, amount, need, capacity, kinds, windows, tol) -> float:
    """drf's resource loads per pool and round, then ``min s_i / w_i`` (dominant shares of tasks per round)."""
    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    edge_agent, edge_pool = instance.edge_agent, instance.edge_pool
    for k in range(len(kinds)):
        keys, load = _sums_by(pool * rounds + rnd, need[agent, k] * amount, m * rounds)
        _at_most(load, keys, capacity[:, k], rounds, tol * np.maximum(1.0, load))
    held = np.bincount(agent, weights=amount, minlength=n)
    needed = need > 0
    _check(needed.any(axis=1))
    least = 1.0 if result.mode == "integral" else 1e-300
    fits = np.all((capacity[edge_pool] >= need[edge_agent] * least) | ~needed[edge_agent], axis=1)
    arrival, last = windows
    usable = np.bincount(edge_agent, weights=fits, minlength=n) > 0
    if rounds > 1:
        usable &= arrival <= last
    if result.params.get("capacity_basis", "compatible") == "compatible":
        pooled = np.stack([np.bincount(edge_agent, weights=capacity[edge_pool, k], minlength=n)
                           for k in range(len(kinds))], axis=1)
    else:
        pooled = np.broadcast_to(np.cumsum(capacity, axis=0)[-1] if m else np.zeros(len(kinds)), need.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pooled > 0, need / pooled, np.inf)
    delta = np.where(needed, ratio, -np.inf).max(axis=1)
    with np.errstate(invalid="ignore"):
        value = np.where(np.isfinite(delta), delta * held / rounds / instance.weights, 0.0)
    chosen = value[usable & (instance.demands != 0)]
    return float(chosen.min()) if chosen.size else 0.0


def _replay(instance, result, agent, pool, rnd, amount, edge, running) -> float:
    """The migration family's objective, replaying each job over its own records only (O(allocation)).

    Progress ``u x`` per round, minus ``mu_i`` on a pool other than its last;
    one pool a round, none after completing; the job completes in the first
    round (from its arrival) whose progress reaches ``W_i``.
    """
    n, rounds, h = instance.n_agents, instance.rounds, instance.round_hours
    kind = result.params.get("objective", "work")
    work = _column(instance, "work", range(n), 1.0)
    arrival = np.fromiter(map(operator.attrgetter("arrival"), instance.agents), dtype=np.int64, count=n)
    threshold = work - 1e-6 * np.maximum(1.0, work)
    # Jobs with no record: complete at arrival exactly when no work is needed.
    completed = np.where((0.0 >= threshold) & (arrival < rounds), arrival, -1)
    rows = np.flatnonzero(running)
    rows = rows[np.lexsort((rnd[rows], agent[rows]))]
    slot = agent[rows] * rounds + rnd[rows]
    _check(slot[1:] != slot[:-1])  # one pool a round
    objective = 0.0
    prices = instance.base_prices
    utility = instance.edge_utility[edge[rows], rnd[rows]].tolist()
    a_list, p_list, r_list, x_list = agent[rows].tolist(), pool[rows].tolist(), rnd[rows].tolist(), amount[rows].tolist()
    agents = instance.agents
    k, size = 0, len(a_list)
    while k < size:
        i = a_list[k]
        mu, need, when, done, last, upcoming = agents[i].migration_cost, float(threshold[i]), None, 0.0, None, int(arrival[i])
        while k < size and a_list[k] == i:
            r, c = r_list[k], p_list[k]
            if when is None and upcoming < r and done >= need:
                when = upcoming
            if when is not None:
                raise _Fallback  # runs after completing
            done -= mu if last not in (None, c) else 0.0
            done += utility[k] * x_list[k]
            last = c
            objective += prices[c] * h * x_list[k] if kind == "cost" else 0.0
            if done >= need:
                when = r
            upcoming = r + 1
            k += 1
        if when is None and upcoming < rounds and done >= need:
            when = upcoming
        completed[i] = -1 if when is None else when
    if kind == "work":
        return objective + float(np.sum(instance.weights * work * (completed >= 0)))
    _check(completed >= 0)
    return objective + (float(np.sum(instance.weights * (completed + 1))) if kind == "completion" else 0.0)


def _backlog(instance: Instance, result: Result, agent_round: np.ndarray, earned: np.ndarray) -> float:
    """Queues (thesis eq. 3.2): ``backlog = max(0, carried + arrivals - service)`` per agent and round."""
    n, rounds = instance.n_agents, instance.rounds
    kind = result.params.get("objective", "total")
    service = np.bincount(agent_round, weights=earned, minlength=n * rounds).reshape(n, rounds)
    arrivals = np.zeros((n, rounds))
    for i, queue in enumerate(map(operator.attrgetter("arrivals"), instance.agents)):
        if queue is not None:
            arrivals[i] = queue
    carried, total = np.zeros(n), np.zeros(n)
    for r in range(rounds):
        arrived = carried + arrivals[:, r]
        carried = np.maximum(0.0, arrived - service[:, r])
        carried = np.where(carried <= 1e-9 * np.maximum(1.0, arrived), 0.0, carried)
        total += carried
    _check(~np.isnan(total))
    if kind == "total":
        return _sequential_sum(instance.weights * total)
    return max(0.0, float((total / instance.weights).max())) if n else 0.0
