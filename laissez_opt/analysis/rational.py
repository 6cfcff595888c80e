"""An instance and an allocation read as exact rational numbers.

Certificates are checked against the numbers the instance file states, not
their binary floating-point approximations: ``0.1`` in the JSON text is the
rational ``1/10`` here.  An instance loaded from a file is re-read from its
text with every decimal parsed as a :class:`fractions.Fraction`; an instance
built in Python (no file), or read from the binary ``.npz`` form (which holds
the floats themselves, no decimal text), is read from its floats' shortest
decimal representations (``repr``), which is what :func:`laissez_opt.save_instance`
writes in JSON: the JSON and binary forms of one instance give the same numbers.  Either way every exact number is checked to round to the float the
solvers saw, so a file changed since it was loaded is refused.

Notation (``models.md``): weights ``w_i``, demands ``d_i`` (None: unbounded),
counts ``k_c``, base prices ``b_c``, utilities ``u_{i,c,r}`` per edge and
round, bids ``v_{i,c}`` (None: the utility), work ``W_i`` and elapsed time ``t_i``.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A", weight=0.1)], [lo.Edge("A", "P", 0.3)])
>>> ex = exact_instance(inst)
>>> ex.weights, ex.utility, ex.counts
([Fraction(1, 10)], [[Fraction(3, 10)]], [2])
>>> exact_amounts(ex, [{"agent": "A", "pool": "P", "round": 0, "amount": 0.5}])
[[Fraction(1, 2)]]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..io.binary import is_binary
from ..io.jsonfile import read_text
from .exact_lp import Number, as_fraction

__all__ = ["ExactInstance", "exact_instance", "exact_amounts", "read_exact_json"]


def _exact(value) -> Number:
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else value
    return as_fraction(value)


def read_exact_json(path: str | os.PathLike):
    """The JSON file at ``path`` with every decimal number parsed as an exact :class:`Fraction`.

    >>> import pathlib
    >>> root = pathlib.Path(__file__).resolve().parent.parent.parent
    >>> read_exact_json(root / "instances" / "hotos25-section5-bids.json")["pools"][0]["base_price"]
    Fraction(303, 500)
    """
    text = read_text(path)
    try:
        return json.loads(text, parse_float=Fraction)
    except (json.JSONDecodeError, ValueError) as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path), path="$") from None


@dataclass
class ExactInstance:
    """The numbers of an :class:`Instance`, exact; lists follow the instance's agent, pool and edge order."""

    instance: Instance
    weights: list[Number]
    demands: list[int | None]
    counts: list[int]
    base_prices: list[Number]
    utility: list[list[Number]]  # [edge][round]
    bids: list[Number | None]
    work: list[Number | None]
    elapsed: list[Number]
    arrival: list[int]
    deadline: list[int]
    edge_agent: list[int]
    edge_pool: list[int]
    origin: str  # "file" or "repr"
    round_hours: Number = 1

    @property
    def rounds(self) -> int:
        return self.instance.rounds

    def upper(self, e: int, r: int) -> int:
        """Largest ``x_{i,c,r}`` on edge ``e`` in round ``r``: ``min(d_i, k_c)`` inside the agent's window, else 0."""
        i, c = self.edge_agent[e], self.edge_pool[e]
        if not self.arrival[i] <= r <= self.deadline[i]:
            return 0
        d = self.demands[i]
        return self.counts[c] if d is None else min(d, self.counts[c])

    def equal_share(self) -> list[Number]:
        """``U_i^ex = (w_i / W) sum_{c,r} k_c u_{i,c,r}`` (thesis 002, eq. 3.3), exactly (computed once)."""
        cached = self.__dict__.get("_equal_share")
        if cached is not None:
            return list(cached)
        total_weight = sum(self.weights)
        raw = [0] * len(self.weights)
        for e, (i, c) in enumerate(zip(self.edge_agent, self.edge_pool)):
            raw[i] += self.counts[c] * sum(self.utility[e])
        self._equal_share = [_exact(Fraction(w) / total_weight * s) for w, s in zip(self.weights, raw)]
        return list(self._equal_share)


def _same(exact, value, where: str, source: str | None) -> None:
    if exact is None and value is None:
        return
    if exact is None or value is None or float(exact) != float(value):
        raise InputError(
            f"the file now says {exact!r} where the loaded instance had {value!r}; reload the instance",
            source=source, path=where,
        )


def _from_file(instance: Instance) -> dict | None:
    source = instance.source
    if not source or source.startswith("<") or not Path(source).is_file():
        return None
    try:
        with open(source, "rb") as f:
            head = f.read(4)
    except OSError:
        return None
    if is_binary(source, head):  # the binary form holds the floats themselves: their repr is exact, as below
        return None
    data = read_exact_json(source)
    if not isinstance(data, dict) or len(data.get("agents", ())) != instance.n_agents \
            or len(data.get("pools", ())) != instance.n_pools or len(data.get("edges", ())) != instance.n_edges:
        raise InputError("the file no longer matches the loaded instance; reload it", source=source, path="$")
    return data


def exact_instance(instance: Instance) -> ExactInstance:
    """The exact numbers of ``instance`` (from its file's text when it came from a file; see the module docstring)."""
    data = _from_file(instance)
    rounds = instance.rounds
    if data is not None:
        source = instance.source
        pools, agents, edges = data["pools"], data["agents"], data["edges"]
        counts = [int(p.get("count", 1)) for p in pools]
        base = [_exact(p.get("base_price", 0)) for p in pools]
        weights = [_exact(a.get("weight", 1)) for a in agents]
        work = [None if a.get("work") is None else _exact(a["work"]) for a in agents]
        elapsed = [_exact(a.get("elapsed", 0)) for a in agents]
        utility, bids = [], []
        for e in edges:
            u = e["utility"]
            utility.append([_exact(v) for v in u] if isinstance(u, list) else [_exact(u)] * rounds)
            bids.append(None if e.get("bid") is None else _exact(e["bid"]))
        origin = "file"
        round_hours = _exact(data.get("round_hours", 1))
        _same(round_hours, instance.round_hours, "$.round_hours", source)
        for c, pool in enumerate(instance.pools):
            _same(base[c], pool.base_price, f"$.pools[{c}].base_price", source)
            if counts[c] != pool.count:
                _same(counts[c], pool.count, f"$.pools[{c}].count", source)
        for i, agent in enumerate(instance.agents):
            _same(weights[i], agent.weight, f"$.agents[{i}].weight", source)
            _same(work[i], agent.work, f"$.agents[{i}].work", source)
            _same(elapsed[i], agent.elapsed, f"$.agents[{i}].elapsed", source)
        for e, edge in enumerate(instance.edges):
            for r in range(rounds):
                _same(utility[e][r], edge.utility_in(r), f"$.edges[{e}].utility", source)
            _same(bids[e], edge.bid, f"$.edges[{e}].bid", source)
    else:
        counts = [int(p.count) for p in instance.pools]
        base = [as_fraction(p.base_price) for p in instance.pools]
        weights = [as_fraction(a.weight) for a in instance.agents]
        work = [None if a.work is None else as_fraction(a.work) for a in instance.agents]
        elapsed = [as_fraction(a.elapsed) for a in instance.agents]
        utility = [[as_fraction(e.utility_in(r)) for r in range(rounds)] for e in instance.edges]
        bids = [None if e.bid is None else as_fraction(e.bid) for e in instance.edges]
        origin = "repr"
        round_hours = as_fraction(instance.round_hours)
    return ExactInstance(
        instance=instance,
        weights=weights,
        demands=[a.demand for a in instance.agents],
        counts=counts,
        base_prices=base,
        utility=utility,
        bids=bids,
        work=work,
        elapsed=elapsed,
        arrival=[a.arrival for a in instance.agents],
        deadline=[rounds - 1 if a.deadline is None else a.deadline for a in instance.agents],
        edge_agent=instance.edge_agent.tolist(),
        edge_pool=instance.edge_pool.tolist(),
        origin=origin,
        round_hours=round_hours,
    )


def exact_amounts(ex: ExactInstance, allocation, *, source: str | None = None) -> list[list[Number]]:
    """The ``E x R`` amounts of allocation records, exact (decimals of a file, or floats' ``repr``).

    Records name ``agent``, ``pool``, ``round`` (default 0) and ``amount``;
    repeated records add up; unknown ids, missing edges, rounds outside the
    horizon and negative amounts raise :class:`InputError` naming ``$.allocation[k]``.
    """
    instance = ex.instance
    edge_of = {(e.agent, e.pool): k for k, e in enumerate(instance.edges)}
    out: list[list[Number]] = [[0] * instance.rounds for _ in range(instance.n_edges)]
    for k, rec in enumerate(allocation):
        where = f"$.allocation[{k}]"
        if not isinstance(rec, dict) or not {"agent", "pool", "amount"} <= set(rec):
            raise InputError("an allocation record needs agent, pool and amount", source=source, path=where)
        key = (rec["agent"], rec["pool"])
        if key not in edge_of:
            raise InputError(f"no edge between agent {key[0]!r} and pool {key[1]!r} in instance {instance.name!r}",
                             source=source, path=where)
        rnd = rec.get("round", 0)
        if isinstance(rnd, bool) or not isinstance(rnd, int) or not 0 <= rnd < instance.rounds:
            raise InputError(f"round {rnd!r} is outside the horizon 0..{instance.rounds - 1}", source=source,
                             path=f"{where}.round")
        amount = rec["amount"]
        if isinstance(amount, bool) or not isinstance(amount, (int, float, Fraction, np.floating, np.integer)):
            raise InputError(f"amount must be a number, got {amount!r}", source=source, path=f"{where}.amount")
        value = _exact(amount)
        if value < 0:
            raise InputError(f"amount must be >= 0, got {amount!r}", source=source, path=f"{where}.amount")
        out[edge_of[key]][rnd] += value
    return out
