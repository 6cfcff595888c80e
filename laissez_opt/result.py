"""The result of any method, exact or heuristic, in the contract's result format."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .instance import Instance

__all__ = ["Result", "RESULT_FORMAT", "allocation_records", "edge_utilities"]

RESULT_FORMAT = "laissez-opt/result"


def allocation_records(instance: Instance, amounts: np.ndarray, *, tol: float = 1e-9) -> list[dict]:
    """Nonzero entries of an ``E x R`` amount array as ``{"agent", "pool", "round", "amount"}`` records."""
    records = []
    edges, rounds = np.nonzero(amounts > tol)
    for e, r in zip(edges.tolist(), rounds.tolist()):
        edge = instance.edges[e]
        records.append({"agent": edge.agent, "pool": edge.pool, "round": r, "amount": float(amounts[e, r])})
    return records


def edge_utilities(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}`` per agent from an ``E x R`` amount array."""
    per_edge = np.sum(instance.edge_utility * amounts, axis=1)
    return np.bincount(instance.edge_agent, weights=per_edge, minlength=instance.n_agents)


def _clean(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


@dataclass
class Result:
    """An allocation with its provenance: method, solver, status, bound, gap, timings.

    ``status`` is ``optimal``, ``feasible``, ``time_limit`` or ``infeasible``
    (heuristics report ``feasible``: they prove nothing).  ``allocation`` lists
    ``{"agent", "pool", "round", "amount"}`` records; ``amounts`` holds the same
    as an ``E x R`` array aligned with ``instance.edges`` when the result was
    produced in this process.
    """

    instance: str
    method: str
    status: str
    solver: str | None = None
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    allocation: list[dict] = field(default_factory=list)
    utilities: dict[str, float] = field(default_factory=dict)
    payments: dict[str, float] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    route: str | None = None
    solver_status: str | None = None
    mode: str = "integral"
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    verified: bool | None = None
    amounts: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    def to_dict(self) -> dict:
        """The result-file dictionary (contract order first, extensions after)."""
        out = {
            "format": RESULT_FORMAT,
            "version": 1,
            "instance": self.instance,
            "method": self.method,
            "solver": self.solver,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "allocation": self.allocation,
            "utilities": self.utilities,
            "payments": self.payments,
            "metrics": self.metrics,
            "timing": self.timing,
            "params": self.params,
            "route": self.route,
            "solver_status": self.solver_status,
            "mode": self.mode,
            "verified": self.verified,
            "message": self.message,
            "details": self.details,
        }
        return _clean(out)

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"

    def to_dataframe(self, what: str = "allocation"):
        """A :class:`pandas.DataFrame` of the allocation (or ``"utilities"``, ``"summary"``).

        Needs pandas (``pip install laissez-opt[pandas]``).
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - exercised only without pandas
            raise ImportError("to_dataframe needs pandas: pip install 'laissez-opt[pandas]'") from exc
        if what == "allocation":
            return pd.DataFrame(self.allocation, columns=["agent", "pool", "round", "amount"])
        if what == "utilities":
            frame = pd.DataFrame({"agent": list(self.utilities), "utility": list(self.utilities.values())})
            if self.payments is not None:
                frame["payment"] = [self.payments.get(a, 0.0) for a in self.utilities]
            return frame
        if what == "summary":
            row = {k: v for k, v in self.to_dict().items() if not isinstance(v, (list, dict))}
            row.update({f"metric.{k}": v for k, v in self.metrics.items() if not isinstance(v, (list, dict))})
            row.update({f"time.{k}": v for k, v in self.timing.items()})
            return pd.DataFrame([row])
        raise ValueError(f"unknown table {what!r}: allocation, utilities or summary")
