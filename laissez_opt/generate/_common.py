"""Shared pieces of the instance generators: the family record, argument checks,
id formats, rounding, and fast assembly of the instance dictionary.

Every generator draws all of its randomness from one
``numpy.random.default_rng(seed)`` and works on whole numpy arrays; Python
objects (dicts, ints, floats) are only made at the very end, so that the output
is a plain, JSON-ready dictionary in the ``laissez-opt/instance`` version 1
format and identical for identical arguments.
"""

from __future__ import annotations

import gc
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = [
    "Family",
    "FORMAT",
    "agent_ids",
    "cycled_pools",
    "check_bool",
    "check_int",
    "check_fraction",
    "round_values",
    "assemble",
    "Draft",
    "dict_output",
    "format_params",
    "params_tag",
]

FORMAT = "laissez-opt/instance"

#: Decimal places kept for generated utilities, bids and costs.  A value
#: rounded this way prints as a short decimal (``0.4583``, ``109.1666``).
DECIMALS = 4
#: Smallest positive value a rounded utility may take.
MIN_POSITIVE = 10.0 ** -DECIMALS


@dataclass(frozen=True)
class Family:
    """One named generator.

    Attributes
    ----------
    name:
        The family name used by :func:`laissez_opt.generate.generate` and the
        command line (``--family``).
    description:
        One line saying what the family models and where its numbers come from.
    func:
        ``func(agents, pools, seed, **params) -> Draft``; it receives every
        parameter, defaults filled in, sizes already checked by :meth:`draft`.
    params:
        The optional parameters and their defaults.
    min_agents, min_pools:
        The smallest sizes the family accepts.
    """

    name: str
    description: str
    func: Callable[..., dict]
    params: Mapping[str, Any] = field(default_factory=dict)
    min_agents: int = 1
    min_pools: int = 1

    def __call__(self, agents: int, pools: int, seed: int = 0, **params: Any) -> dict:
        """The instance as a plain dictionary of the instance format."""
        return self.draft(agents, pools, seed, **params).to_dict()

    def draft(self, agents: int, pools: int, seed: int = 0, **params: Any) -> "Draft":
        """The instance as whole columns (:class:`Draft`), arguments checked as for a call."""
        agents = check_int(agents, "agents", self.min_agents, MAX_AGENTS)
        pools = check_int(pools, "pools", self.min_pools, MAX_POOLS)
        seed = check_int(seed, "seed", 0)
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            known = ", ".join(sorted(self.params)) or "none"
            raise ValueError(
                f"unknown parameter {unknown[0]!r} for family {self.name!r} (known: {known})"
            )
        merged = dict(self.params)
        merged.update(params)
        draft = self.func(agents, pools, seed, **merged)
        changed = {k: v for k, v in params.items() if v != self.params[k]}
        if changed:
            draft.name = f"{draft.name}-{params_tag(changed)}"
        return draft

    def instance(self, agents: int, pools: int, seed: int = 0, **params: Any):
        """The same instance as :meth:`__call__`, as an :class:`~laissez_opt.instance.Instance` built from columns."""
        return self.draft(agents, pools, seed, **params).to_instance(f"<generated {self.name}>")


def params_tag(params: Mapping[str, Any]) -> str:
    """A short, stable tag of non-default parameters for an instance name: ``weights=1-2``, ``density=0.3_max_count=4``.

    Characters other than letters, digits and ``.=+-`` become ``-``; a tag
    longer than 48 characters is replaced by the first 12 hex digits of its
    SHA-256, so distinct parameters always give distinct names.

    >>> params_tag({"weights": "1-2"}), params_tag({"max_count": 4, "density": 0.3})
    ('weights=1-2', 'density=0.3_max_count=4')
    >>> len(params_tag({"weights": list(range(40))}))
    12
    """
    import hashlib
    import re

    def value(v: Any) -> str:
        text = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
        return re.sub(r"[^A-Za-z0-9.=+-]+", "-", text).strip("-")

    tag = "_".join(f"{k}={value(params[k])}" for k in sorted(params))
    if len(tag) > 48:
        tag = hashlib.sha256(repr(sorted(params.items())).encode("utf-8")).hexdigest()[:12]
    return tag


#: Largest sizes a generator accepts: 2^24 agents (about 17 million, four times the largest
#: benchmarked) and 2^20 pools; beyond them a draw runs for minutes and out of memory.
MAX_AGENTS = 2**24
MAX_POOLS = 2**20


def check_int(value: Any, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int, or ``ValueError`` with a one-line message."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{what} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what} must be <= {maximum}, got {value}")
    return value


def check_fraction(value: Any, what: str, *, allow_zero: bool = True, allow_one: bool = True) -> float:
    """``value`` as a float in [0, 1] (ends as allowed), or ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number, got {value!r}")
    value = float(value)
    low_ok = value >= 0.0 if allow_zero else value > 0.0
    high_ok = value <= 1.0 if allow_one else value < 1.0
    if not (math.isfinite(value) and low_ok and high_ok):
        lo = "[0" if allow_zero else "(0"
        hi = "1]" if allow_one else "1)"
        raise ValueError(f"{what} must lie in {lo}, {hi}, got {value!r}")
    return value


def check_bool(value: Any, what: str) -> bool:
    """``value`` as a bool (``True``/``False`` only), or ``ValueError``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{what} must be true or false, got {value!r}")


def agent_ids(n: int, prefix: str = "a") -> list[str]:
    """``["a0001", "a0002", ...]``: 1-based, zero-padded to at least 4 digits."""
    width = max(4, len(str(n)))
    return list(map(f"{prefix.replace('%', '%%')}%0{width}d".__mod__, range(1, n + 1)))


def cycled_pools(m: int, types: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Pool ids cycling over hardware ``types`` (``"V100-0", "P100-1", ...``)
    and, for each pool, the index of its type in ``types``."""
    kind = np.arange(m) % len(types)
    ids = [f"{types[k]}-{c}" for c, k in enumerate(kind.tolist())]
    return ids, kind


def round_values(values: np.ndarray, minimum: float | None = MIN_POSITIVE) -> np.ndarray:
    """Round to :data:`DECIMALS` decimal places (and clip below at ``minimum``).

    ``numpy.round`` divides an exact integer by an exact power of ten, so each
    result is the double nearest to a short decimal and prints as one.
    """
    out = np.round(np.asarray(values, dtype=float), DECIMALS)
    if minimum is not None:
        out = np.maximum(out, minimum)
    return out


def format_params(params: Mapping[str, Any]) -> str:
    """``"density=0.3, max_count=4"``: parameters in a stable order for descriptions."""
    return ", ".join(f"{k}={params[k]!r}" for k in sorted(params))


@dataclass
class Draft:
    """A generated instance as whole numpy columns, before it becomes a dictionary or an :class:`Instance`.

    Built by :func:`assemble`; :meth:`to_dict` gives the plain dictionary of
    the instance format (what :func:`laissez_opt.generate.generate` returns)
    and :meth:`to_instance` the same instance built from the columns
    directly, without a million small dictionaries on the way
    (:func:`laissez_opt.io.columns.instance_from_columns`).  Both describe
    the same instance: ``instance_from_dict(draft.to_dict())`` and
    ``draft.to_instance()`` have equal records and the same canonical text.

    ``agent_fields`` holds ``(key, values, present)`` per optional agent field
    in the dictionary's key order; ``present`` (a boolean array, or None for
    every agent) says which agents carry the key.  ``rows`` and ``cols`` are
    the agent and pool of each edge, ordered by agent, then pool;
    ``utility`` is ``(E,)`` or ``(E, R)`` (a per-round list on every edge);
    ``edge_extra`` maps further edge fields (``bid``, ``cost``) to ``(E,)``
    arrays.
    """

    name: str
    description: str
    rounds: int
    round_hours: float
    pool_records: list
    agent_names: list
    agent_fields: list
    pool_names: list
    rows: np.ndarray
    cols: np.ndarray
    utility: np.ndarray
    edge_extra: dict

    def to_dict(self) -> dict:
        """The instance as a plain, JSON-ready dictionary (edges and agents in the columns' order)."""
        # Building a million small dicts is dominated by the cyclic garbage
        # collector's repeated passes over the young objects; none of them can
        # form a cycle, so it is paused while they are made.
        enabled = gc.isenabled()
        gc.disable()
        try:
            agents = _agent_records(self.agent_names, self.agent_fields)
            edges = self._edge_records()
        finally:
            if enabled:
                gc.enable()
        return {
            "format": FORMAT,
            "version": 1,
            "name": self.name,
            "description": self.description,
            "rounds": int(self.rounds),
            "round_hours": float(self.round_hours),
            "pools": [dict(p) for p in self.pool_records],
            "agents": agents,
            "edges": edges,
        }

    def _edge_records(self) -> list:
        names_a = np.array(self.agent_names, dtype=object)[self.rows].tolist()
        names_p = np.array(self.pool_names, dtype=object)[self.cols].tolist()
        values = self.utility.tolist()
        keys = ["agent", "pool", "utility", *self.edge_extra]
        columns = [names_a, names_p, values, *(np.asarray(v).tolist() for v in self.edge_extra.values())]
        if len(keys) == 3:
            return [{"agent": a, "pool": p, "utility": u} for a, p, u in zip(names_a, names_p, values)]
        if keys[3:] == ["bid", "cost"]:
            return [
                {"agent": a, "pool": p, "utility": u, "bid": b, "cost": c}
                for a, p, u, b, c in zip(*columns)
            ]
        return [dict(zip(keys, row)) for row in zip(*columns)]

    def to_instance(self, source: str = "<generated>"):
        """The instance as an :class:`~laissez_opt.instance.Instance`, built from the columns.

        Falls back to ``instance_from_dict(self.to_dict())`` when a column
        fails a check (a parameter that pushes a value out of range), so the
        error message is the one the instance format gives.
        """
        from ..instance import Pool
        from ..io import instance_from_dict
        from ..io.columns import instance_from_columns

        pools = [
            Pool(id=p["id"], count=p.get("count", 1), cluster=p.get("cluster"),
                 base_price=float(p.get("base_price", 0.0)))
            for p in self.pool_records
        ]
        columns = {}
        for key, values, present in self.agent_fields:
            if key not in ("weight", "demand"):  # pragma: no cover - no family writes other agent fields
                columns = None
                break
            default = 1.0 if key == "weight" else -1
            values = np.asarray(values)
            columns[key] = values if present is None else np.where(present, values, default)
        inst = None
        if columns is not None and all(k in ("bid", "cost") for k in self.edge_extra):
            enabled = gc.isenabled()
            gc.disable()
            try:
                inst = instance_from_columns(
                    pools, self.agent_names, self.rows, self.cols, self.utility,
                    weight=columns.get("weight"), demand=columns.get("demand"),
                    bid=self.edge_extra.get("bid"), cost=self.edge_extra.get("cost"),
                    rounds=int(self.rounds), round_hours=float(self.round_hours), name=self.name,
                    description=self.description, source=source)
            finally:
                if enabled:
                    gc.enable()
        if inst is None:
            inst = instance_from_dict(self.to_dict(), source)
        return inst


def _agent_records(names: Sequence[str], fields: list) -> list:
    """One dictionary per agent: ``id`` first, then each field where present, in ``fields``' order."""
    if not fields:
        return [{"id": a} for a in names]
    keys = [key for key, _, _ in fields]
    cols = [np.asarray(values).tolist() for _, values, _ in fields]
    masks = [present for _, _, present in fields]
    if all(p is None for p in masks):
        if len(fields) == 1:
            (k,) = keys
            return [{"id": a, k: v} for a, v in zip(names, cols[0])]
        if len(fields) == 2:
            k1, k2 = keys
            return [{"id": a, k1: v1, k2: v2} for a, v1, v2 in zip(names, *cols)]
    if len(fields) == 1:
        (k,) = keys
        return [{"id": a, k: v} if f else {"id": a} for a, f, v in zip(names, masks[0].tolist(), cols[0])]
    flags = [[True] * len(names) if p is None else p.tolist() for p in masks]
    out = []
    for i, a in enumerate(names):
        record = {"id": a}
        for k, col, flag in zip(keys, cols, flags):
            if flag[i]:
                record[k] = col[i]
        out.append(record)
    return out


def assemble(
    *,
    family: str,
    agents: int,
    pools: int,
    seed: int,
    description: str,
    rounds: int,
    pool_records: list[dict],
    agent_names: Sequence[str],
    agent_fields: Sequence[tuple] = (),
    pool_names: Sequence[str],
    mask: np.ndarray,
    utility: np.ndarray,
    edge_extra: Mapping[str, np.ndarray] | None = None,
    round_hours: float = 1.0,
) -> Draft:
    """The :class:`Draft` of an instance given as dense ``n x m`` arrays.

    ``mask[i, c]`` marks the compatible pairs (every row must have one).
    ``utility`` is ``n x m`` (one number for every round) or ``n x m x R``
    (a per-round list on every edge).  ``edge_extra`` maps further edge fields
    (``bid``, ``cost``) to ``n x m`` arrays; ``agent_fields`` lists
    ``(key, values, present)`` per optional agent field (see :class:`Draft`).
    Edges come out ordered by agent, then pool.
    """
    mask = np.asarray(mask, dtype=bool)
    if not mask.any(axis=1).all():  # a generator bug, never a user error
        raise AssertionError("every generated agent needs at least one edge")
    if mask.all():  # dense: the nonzero pattern is known, and the arrays are read in order
        n, m = mask.shape
        rows = np.repeat(np.arange(n, dtype=np.int64), m)
        cols = np.tile(np.arange(m, dtype=np.int64), n)
        take = lambda arr: np.asarray(arr).reshape(n * m, *np.shape(arr)[2:])  # noqa: E731
    else:
        rows, cols = np.nonzero(mask)
        take = lambda arr: np.asarray(arr)[mask]  # noqa: E731  (boolean selection: row-major, as nonzero)
    return Draft(
        name=f"{family}-n{agents}-m{pools}-s{seed}",
        description=description,
        rounds=int(rounds),
        round_hours=float(round_hours),
        pool_records=pool_records,
        agent_names=list(agent_names),
        agent_fields=list(agent_fields),
        pool_names=list(pool_names),
        rows=rows,
        cols=cols,
        utility=take(utility),
        edge_extra={key: take(arr) for key, arr in (edge_extra or {}).items()},
    )


def dict_output(draft_func: Callable[..., Draft]) -> Callable[..., dict]:
    """``draft_func`` made to return the plain dictionary (``Draft.to_dict``), same signature."""
    import functools

    @functools.wraps(draft_func)
    def wrapper(*args: Any, **kwargs: Any) -> dict:
        return draft_func(*args, **kwargs).to_dict()

    return wrapper
