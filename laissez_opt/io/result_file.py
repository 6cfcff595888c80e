"""Result files: ``format: "laissez-opt/result"``, ``version: 1``.

Reading validates against the shipped schema; allocation records that name
agents, pools or edges the instance lacks are caught later by the verifier,
which knows the instance.
"""

from __future__ import annotations

import os
from typing import Any

from ..result import Result
from .jsonfile import read_json, write_atomic
from .schema import validate

__all__ = ["result_from_dict", "load_result", "save_result"]

_FIELDS = (
    "solver", "objective", "bound", "gap", "payments", "route", "solver_status", "verified",
)


def result_from_dict(data: Any, source: str = "<dict>") -> Result:
    """A :class:`Result` from result-file data (validated)."""
    validate(data, "result", source)
    allocation = [
        {"agent": r["agent"], "pool": r["pool"], "round": r.get("round", 0), "amount": float(r["amount"])}
        for r in data["allocation"]
    ]
    extra = {name: data.get(name) for name in _FIELDS}
    return Result(
        instance=data["instance"],
        method=data["method"],
        status=data["status"],
        allocation=allocation,
        utilities={k: float(v) for k, v in data["utilities"].items()},
        metrics=dict(data.get("metrics", {})),
        timing=dict(data.get("timing", {})),
        params=dict(data.get("params", {})),
        mode=data.get("mode", "integral"),
        message=data.get("message", ""),
        details=dict(data.get("details", {})),
        **extra,
    )


def load_result(path: str | os.PathLike) -> Result:
    """Read and validate the result file at ``path``."""
    return result_from_dict(read_json(path), str(path))


def save_result(result: Result, path: str | os.PathLike) -> None:
    """Write ``result`` as JSON, atomically."""
    write_atomic(path, result.to_json())
