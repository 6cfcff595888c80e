"""What a solver route returns: status, values, objective, bound, gap, timings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Solution", "relative_gap", "STATUSES"]

STATUSES = ("optimal", "feasible", "time_limit", "infeasible")


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|bound - objective| / |objective|``; 0 when they agree; None when unknown or undefined.

    Undefined: no finite bound, or an objective of (nearly) 0 while the bound is
    not, where a relative gap would be meaningless (``1e10`` for an objective of
    ``1e-10``); the absolute gap ``|bound - objective|`` is then the figure to report.

    >>> relative_gap(9.0, 10.0), relative_gap(0.0, 1.16), relative_gap(0.0, 0.0)
    (0.1111111111111111, None, 0.0)
    """
    if objective is None or bound is None or not math.isfinite(bound):
        return None
    diff = abs(bound - objective)
    if diff <= 1e-12 * max(1.0, abs(objective)):
        return 0.0
    if abs(objective) <= 1e-9 * max(1.0, abs(bound)):
        return None
    return diff / abs(objective)


@dataclass
class Solution:
    """One solve of a declared model.

    ``status`` is one of :data:`STATUSES`; ``optimal`` only when the route proved
    it (within the solver's stated tolerances).  ``bound`` is the best proven
    bound on the objective (dual bound), ``gap`` the relative distance between
    them.  ``values`` is the full column vector (None when infeasible).
    ``duals`` holds one value per row when the route solved an LP to
    optimality and reports duals: the rate of change of the optimal objective
    per unit increase of the row's active bound (``d objective / d bound``,
    in the model's own sense); None otherwise.
    """

    status: str
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    gap: float | None
    solver: str
    route: str
    build_s: float
    solve_s: float
    solver_status: str = ""
    message: str = ""
    details: dict = field(default_factory=dict)
    duals: np.ndarray | None = None

    def block(self, model, name: str) -> np.ndarray:
        """Values of variable block ``name`` of ``model``."""
        return self.values[model.variables[name].slice]
