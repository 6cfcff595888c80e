"""What a solver route returns: status, values, objective, bound, gap, timings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Solution", "Duals", "relative_gap", "STATUSES", "BASIS_LOWER", "BASIS_BASIC", "BASIS_UPPER", "BASIS_ZERO"]

STATUSES = ("optimal", "feasible", "time_limit", "infeasible")

#: Basis status codes of :attr:`Duals.column_basis` and :attr:`Duals.row_basis` (HiGHS's numbering):
#: nonbasic at the lower bound, basic, nonbasic at the upper bound, nonbasic free variable at zero.
BASIS_LOWER, BASIS_BASIC, BASIS_UPPER, BASIS_ZERO = 0, 1, 2, 3


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
class Duals:
    """Dual values of an LP optimum, in one sign convention for every route.

    For the declared model ``max (or min) c x  s.t.  L <= A x <= U,  l <= x <= u``:

    * ``row[r]`` is the multiplier ``y_r`` of row ``r``;
    * ``column[j]`` is the reduced cost ``z_j = c_j - (A^T y)_j``.

    In a maximisation an optimal dual has ``y_r >= 0`` only where row ``r`` can be
    at its upper bound, ``y_r <= 0`` only where it can be at its lower bound, and
    likewise ``z_j > 0`` only at ``u_j``, ``z_j < 0`` only at ``l_j`` (signs reversed
    in a minimisation).  Weak duality then bounds the optimum by
    ``sum_r y_r (U_r or L_r) + sum_j z_j (u_j or l_j)``, each term taking the bound
    its sign selects; :mod:`laissez_opt.analysis.exact_lp` checks exactly that, in
    rational arithmetic.

    ``row_basis`` and ``column_basis`` (routes that expose a basis: HiGHS) hold
    the basis status of every row and column (:data:`BASIS_LOWER`,
    :data:`BASIS_BASIC`, :data:`BASIS_UPPER`, :data:`BASIS_ZERO`); ``None``
    elsewhere.  Reference: Chvatal, *Linear Programming* (1983), ch. 5 and 10.

    >>> d = Duals(row=np.array([1.0]), column=np.array([0.0, 2.0]))
    >>> d.row.tolist(), d.column.tolist(), d.row_basis is None
    ([1.0], [0.0, 2.0], True)
    """

    row: np.ndarray
    column: np.ndarray
    row_basis: np.ndarray | None = None
    column_basis: np.ndarray | None = None


@dataclass
class Solution:
    """One solve of a declared model.

    ``status`` is one of :data:`STATUSES`; ``optimal`` only when the route proved
    it (within the solver's stated tolerances).  ``bound`` is the best proven
    bound on the objective (dual bound), ``gap`` the relative distance between
    them.  ``values`` is the full column vector (None when infeasible).
    ``duals`` holds the LP duals (:class:`Duals`) when the caller asked for them
    (``solve_model(..., duals=True)``) and the route could provide them; None
    otherwise (integer programs, min-cost flow, CP-SAT, SCIP).
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
    duals: Duals | None = None

    def block(self, model, name: str) -> np.ndarray:
        """Values of variable block ``name`` of ``model``."""
        return self.values[model.variables[name].slice]
