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
        ``func(agents, pools, seed, **params) -> dict``; it receives every
        parameter, defaults filled in and already checked by :meth:`__call__`.
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
        agents = check_int(agents, "agents", self.min_agents)
        pools = check_int(pools, "pools", self.min_pools)
        seed = check_int(seed, "seed", 0)
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            known = ", ".join(sorted(self.params)) or "none"
            raise ValueError(
                f"unknown parameter {unknown[0]!r} for family {self.name!r} (known: {known})"
            )
        merged = dict(self.params)
        merged.update(params)
        data = self.func(agents, pools, seed, **merged)
        changed = {k: v for k, v in params.items() if v != self.params[k]}
        if changed:
            data["name"] = f"{data['name']}-{params_tag(changed)}"
        return data


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
    return [f"{prefix}{i:0{width}d}" for i in range(1, n + 1)]


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


def assemble(
    *,
    family: str,
    agents: int,
    pools: int,
    seed: int,
    description: str,
    rounds: int,
    pool_records: list[dict],
    agent_records: list[dict],
    agent_names: Sequence[str],
    pool_names: Sequence[str],
    mask: np.ndarray,
    utility: np.ndarray,
    edge_extra: Mapping[str, np.ndarray] | None = None,
    round_hours: float = 1.0,
) -> dict:
    """Build the instance dictionary from dense ``n x m`` arrays.

    ``mask[i, c]`` marks the compatible pairs (every row must have one).
    ``utility`` is ``n x m`` (one number for every round) or ``n x m x R``
    (a per-round list on every edge).  ``edge_extra`` maps further edge fields
    (``bid``, ``cost``) to ``n x m`` arrays.  Edges come out ordered by agent,
    then pool.
    """
    mask = np.asarray(mask, dtype=bool)
    if not mask.any(axis=1).all():  # a generator bug, never a user error
        raise AssertionError("every generated agent needs at least one edge")
    rows, cols = np.nonzero(mask)
    names_a = [agent_names[i] for i in rows.tolist()]
    names_p = [pool_names[c] for c in cols.tolist()]
    values = utility[rows, cols].tolist()
    columns = [names_a, names_p, values]
    keys = ["agent", "pool", "utility"]
    for key, arr in (edge_extra or {}).items():
        keys.append(key)
        columns.append(np.asarray(arr)[rows, cols].tolist())
    # Building a million small dicts is dominated by the cyclic garbage
    # collector's repeated passes over the young objects; none of them can
    # form a cycle, so it is paused while they are made.
    enabled = gc.isenabled()
    gc.disable()
    try:
        if len(keys) == 3:
            edges = [{"agent": a, "pool": p, "utility": u} for a, p, u in zip(names_a, names_p, values)]
        elif keys[3:] == ["bid", "cost"]:
            edges = [
                {"agent": a, "pool": p, "utility": u, "bid": b, "cost": c}
                for a, p, u, b, c in zip(*columns)
            ]
        else:
            edges = [dict(zip(keys, row)) for row in zip(*columns)]
    finally:
        if enabled:
            gc.enable()
    return {
        "format": FORMAT,
        "version": 1,
        "name": f"{family}-n{agents}-m{pools}-s{seed}",
        "description": description,
        "rounds": int(rounds),
        "round_hours": float(round_hours),
        "pools": pool_records,
        "agents": agent_records,
        "edges": edges,
    }
