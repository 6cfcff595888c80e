"""Misreport probes: can an agent gain by lying to a mechanism?  (``models.md``, truthfulness probe.)

For a mechanism ``M`` (any registered method) and an agent ``i``, the probe runs
``M`` on the truthful reports, then on reports where only ``i`` lies, and
compares ``i``'s *true* payoff: ``U_i(x')`` with its true utilities, or, for
``vcg`` (money, quasi-linear), ``v_i(x') - p_i'`` with its true values.  A lie is
profitable when the true payoff rises by more than ``1e-9 max(1, |payoff|)``.

Families of lies (each enumerated completely when it has at most ``budget``
members, otherwise every single-round deviation plus a seeded sample of the
rest, and reported as not exhaustive):

* ``scale``: all of ``i``'s reported utilities (``vcg``: bids) times one factor of
  :data:`SCALES` (0 withdraws the agent);
* ``per_pool``: each of ``i``'s edges scaled by its own factor of
  :data:`POOL_SCALES` (0 hides a compatibility), the same in every round;
* ``order`` (methods that act on preference orders: ``mtf`` and the
  heuristics): in each round, ``i``'s own utility values reported in another
  order over its pools (a different preference list whose scores are the
  agent's values in the reported order);
* ``threshold`` (``mtf`` with fixed thresholds): ``i``'s threshold ``tau_{i,r}``
  per round from the thesis's grid ``{0, 0.1, ..., 0.9}`` instead of the
  configured one (others keep theirs).

The report gives, per agent and family, the largest profitable lie with its
data (reported utilities or thresholds), so the finding can be replayed.

Reference: thesis 002, ch. 4 (MTF's preference lists and thresholds);
Vickrey (1961), Clarke (1971), Groves (1973) (VCG is dominant-strategy truthful).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="one")
>>> report = probe(inst, "greedy", run=lambda i, m, o: lo.solve(i, m, **o), families=("scale",))
>>> report.largest["agent"], report.largest["lie"], round(report.largest["gain"], 9)
('B', 'reports every value times 2', 0.5)
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..instance import Edge, Instance
from ..result import Result

__all__ = ["FAMILIES", "SCALES", "POOL_SCALES", "THRESHOLDS", "TruthfulnessReport", "probe", "families_for"]

FAMILIES = ("scale", "per_pool", "order", "threshold")
SCALES = (0.0, 0.25, 0.5, 0.8, 0.9, 1.1, 1.25, 2.0, 4.0)
POOL_SCALES = (0.0, 0.5, 1.0, 2.0)
THRESHOLDS = tuple(k / 10 for k in range(10))
#: Agents probed by default at most (the first ones in instance order).
MAX_AGENTS = 10
_MONEY = ("vcg",)


def families_for(method: str) -> tuple[str, ...]:
    """The lie families that apply to ``method``: money mechanisms take bids, MTF also thresholds.

    >>> families_for("vcg"), families_for("mtf")
    (('scale', 'per_pool'), ('scale', 'per_pool', 'order', 'threshold'))
    """
    if method in _MONEY:
        return ("scale", "per_pool")
    if method == "mtf":
        return FAMILIES
    return ("scale", "per_pool", "order")


@dataclass
class TruthfulnessReport:
    """Outcome of :func:`probe`: the truthful payoffs, what was tried, and the profitable lies found."""

    instance: str
    method: str
    options: dict
    agents: list[str]
    truthful: dict[str, float]
    tried: dict[str, dict[str, Any]]
    findings: list[dict]
    runs: int
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def profitable(self) -> bool:
        return bool(self.findings)

    @property
    def largest(self) -> dict | None:
        return max(self.findings, key=lambda f: f["gain"]) if self.findings else None

    def to_dict(self) -> dict:
        return {
            "instance": self.instance,
            "method": self.method,
            "options": self.options,
            "agents": self.agents,
            "truthful_payoff": self.truthful,
            "families": self.tried,
            "profitable_misreport": self.profitable,
            "largest": self.largest,
            "findings": self.findings,
            "runs": self.runs,
            "seconds": self.seconds,
            "notes": self.notes,
        }


def _values(instance: Instance, money: bool) -> list[tuple[float, ...]]:
    """Per edge, the reported quantity per round: for money mechanisms the value of a device-round
    (``bid h`` where the edge has a bid, ``h`` = ``round_hours``), else the utility."""
    out = []
    for edge in instance.edges:
        if money:
            if edge.bid is not None:
                out.append((float(edge.bid) * instance.round_hours,) * instance.rounds)
            else:
                out.append(tuple(edge.utility_in(r) for r in range(instance.rounds)))
        else:
            out.append(tuple(edge.utility_in(r) for r in range(instance.rounds)))
    return out


def _with_report(instance: Instance, edges: list[int], reported: dict[int, tuple[float, ...]], money: bool) -> Instance:
    """The instance with agent ``i``'s edges carrying ``reported`` values (bids, where a money mechanism has them)."""
    new = list(instance.edges)
    for e in edges:
        values = reported[e]
        edge = instance.edges[e]
        if money and edge.bid is not None:
            # A bid is one price per device-hour, the same in every round.
            new[e] = replace(edge, bid=float(values[0]) / instance.round_hours)
        else:
            # Without a bid the mechanism values the edge by its utility, round by round: report that.
            new[e] = replace(edge, utility=values if instance.rounds > 1 else float(values[0]))
    return Instance(instance.pools, instance.agents, new, rounds=instance.rounds, round_hours=instance.round_hours,
                    name=instance.name, description=instance.description)


def _payoff(instance: Instance, result: Result, agent: str, truth: list[tuple[float, ...]], money: bool) -> float:
    edge_of = {(e.agent, e.pool): k for k, e in enumerate(instance.edges)}
    total = math.fsum(truth[edge_of[(rec["agent"], rec["pool"])]][rec.get("round", 0)] * rec["amount"]
                      for rec in result.allocation if rec["agent"] == agent)
    if money:
        total -= (result.payments or {}).get(agent, 0.0)
    return total


def _limited(candidates, budget: int, singles, rng) -> tuple[list, bool]:
    """All candidates when at most ``budget``, else the single deviations plus a seeded sample."""
    pool = list(candidates) if not isinstance(candidates, list) else candidates
    if len(pool) <= budget:
        return pool, True
    chosen = list(dict.fromkeys(singles))[:budget]
    rest = [c for c in pool if c not in set(chosen)]
    chosen += rng.sample(rest, min(len(rest), budget - len(chosen)))
    return chosen, False


def probe(instance: Instance, method: str, *, run: Callable[[Instance, str, dict], Result], options: dict | None = None,
          agents=None, families=None, budget: int = 2000, seed: int = 0) -> TruthfulnessReport:
    """Probe ``method`` on ``instance`` for profitable misreports (module docstring).

    ``run(instance, method, options) -> Result`` runs the mechanism (``lo.solve``);
    ``agents``: ids to probe (default: the first :data:`MAX_AGENTS`); ``families``: a
    subset of :func:`families_for` ``(method)``; ``budget``: most lies per agent and
    family; ``seed``: the sample of a family too large to enumerate.
    """
    import time

    start = time.perf_counter()
    options = dict(options or {})
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"budget must be an integer >= 1, got {budget!r}", path="budget")
    allowed = families_for(method)
    chosen = allowed if families is None else tuple(families)
    for family in chosen:
        if family not in FAMILIES:
            raise InputError(f"unknown lie family {family!r}; choose from {', '.join(FAMILIES)}", path="families")
    chosen = tuple(f for f in chosen if f in allowed)
    notes = []
    ids = [a.id for a in instance.agents]
    if agents is None:
        probed = ids[:MAX_AGENTS]
        if len(ids) > MAX_AGENTS:
            notes.append(f"probed the first {MAX_AGENTS} of {len(ids)} agents")
    else:
        probed = list(agents)
        for a in probed:
            if a not in instance.agent_index:
                raise InputError(f"unknown agent id {a!r}", path="agents")
    money = method in _MONEY
    truth = _values(instance, money)
    true_utility = [tuple(e.utility_in(r) for r in range(instance.rounds)) for e in instance.edges]
    payoff_basis = truth if money else true_utility
    baseline = run(instance, method, options)
    truthful = {a: _payoff(instance, baseline, a, payoff_basis, money) for a in ids}
    thresholds = None
    if "threshold" in chosen:
        thresholds = _threshold_table(instance, options, baseline)
        if thresholds is None:
            chosen = tuple(f for f in chosen if f != "threshold")
            notes.append("threshold lies need fixed thresholds; the configured policy learns its own")
    rng = random.Random(seed)
    tried: dict[str, dict[str, Any]] = {f: {"lies": 0, "exhaustive": True, "profitable": 0} for f in chosen}
    findings: list[dict] = []
    runs = 1
    for agent in probed:
        i = instance.agent_index[agent]
        edges = [k for k, e in enumerate(instance.edges) if e.agent == agent]
        pools = [instance.edges[k].pool for k in edges]
        if not edges:
            continue
        base = truthful[agent]
        tol = 1e-9 * max(1.0, abs(base))
        for family in chosen:
            lies, exhaustive = _lies(family, instance, edges, pools, truth, budget, rng, thresholds, i)
            stats = tried[family]
            stats["lies"] += len(lies)
            stats["exhaustive"] &= exhaustive
            best = None
            for description, data, reported, opts in lies:
                variant = _with_report(instance, edges, reported, money) if reported is not None else instance
                result = run(variant, method, {**options, **opts})
                runs += 1
                if result.status == "infeasible":
                    continue
                gain = _payoff(instance, result, agent, payoff_basis, money) - base
                if gain > tol and (best is None or gain > best["gain"]):
                    best = {"agent": agent, "family": family, "lie": description, "report": data,
                            "truthful_payoff": base, "payoff": base + gain, "gain": gain}
            if best is not None:
                stats["profitable"] += 1
                findings.append(best)
    findings.sort(key=lambda f: -f["gain"])
    return TruthfulnessReport(instance.name, method, {k: v for k, v in options.items() if k != "threshold"}
                              | ({"threshold": _jsonable(options["threshold"])} if "threshold" in options else {}),
                              probed, truthful, tried, findings, runs, time.perf_counter() - start, notes)


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _threshold_table(instance: Instance, options: dict, baseline: Result) -> np.ndarray | None:
    """The fixed ``n x R`` thresholds of the configured MTF run (None for a learning policy)."""
    from ..heuristics.thresholds import FixedThresholds, make_policy

    policy = make_policy(options.get("threshold", "fixed:0"), instance)
    if not isinstance(policy, FixedThresholds):
        return None
    return np.array(policy.table, dtype=float)


def _lies(family, instance, edges, pools, truth, budget, rng, thresholds, i):
    """``(description, data, reported values per edge or None, extra options)`` for each lie of the family."""
    R = instance.rounds
    own = {e: truth[e] for e in edges}
    out = []
    if family == "scale":
        for f in SCALES:
            reported = {e: tuple(v * f for v in own[e]) for e in edges}
            out.append((f"reports every value times {f:g}", {"factor": f}, reported, {}))
        return out, True
    if family == "per_pool":
        combos = [c for c in itertools.product(POOL_SCALES, repeat=len(edges)) if any(f != 1.0 for f in c)]
        singles = [c for c in combos if sum(f != 1.0 for f in c) == 1]
        combos, exhaustive = _limited(combos, budget, singles, rng)
        for combo in combos:
            reported = {e: tuple(v * f for v in own[e]) for e, f in zip(edges, combo)}
            text = ", ".join(f"{p} x{f:g}" for p, f in zip(pools, combo) if f != 1.0)
            out.append((f"scales its values per pool: {text}", {p: f for p, f in zip(pools, combo)}, reported, {}))
        return out, exhaustive
    if family == "order":
        per_round = []
        for r in range(R):
            values = [own[e][r] for e in edges]
            perms = list(dict.fromkeys(itertools.permutations(values)))
            per_round.append(perms)
        truth_round = [tuple(own[e][r] for e in edges) for r in range(R)]
        combos = [c for c in itertools.product(*per_round) if list(c) != truth_round]
        singles = [tuple(p if q == r else truth_round[q] for q in range(R))
                   for r in range(R) for p in per_round[r] if p != truth_round[r]]
        combos, exhaustive = _limited(combos, budget, singles, rng)
        for combo in combos:
            reported = {e: tuple(combo[r][k] for r in range(R)) for k, e in enumerate(edges)}
            changed = [r for r in range(R) if combo[r] != truth_round[r]]
            text = "; ".join(
                f"round {r}: " + " > ".join(p for _, p in sorted(zip(combo[r], pools), key=lambda t: -t[0]) if _ > 0)
                for r in changed)
            data = {"rounds": {str(r): dict(zip(pools, combo[r])) for r in changed}}
            out.append((f"reports another preference order ({text})", data, reported, {}))
        return out, exhaustive
    # threshold
    base = thresholds[i]
    combos = [c for c in itertools.product(THRESHOLDS, repeat=R) if not np.allclose(c, base)]
    singles = [tuple(t if q == r else base[q] for q in range(R)) for r in range(R) for t in THRESHOLDS if t != base[r]]
    combos, exhaustive = _limited(combos, budget, singles, rng)
    agent = instance.agents[i].id
    for combo in combos:
        table = {a.id: list(map(float, thresholds[k])) for k, a in enumerate(instance.agents)}
        table[agent] = [float(t) for t in combo]
        text = ", ".join(f"round {r}: {t:g}" for r, t in enumerate(combo))
        out.append((f"reports thresholds {text} (configured: {', '.join(f'{t:g}' for t in base)})",
                    {"thresholds": list(combo)}, None, {"threshold": table}))
    return out, exhaustive
