"""Independent check of a solution against the model as the user declared it.

The lowering turns the declaration into a solver's matrix (compressed sparse
columns, folded constants, merged bounds); this module does not use any of
it.  It re-evaluates every declared row from the user's own expression
triplets with one ``numpy.bincount`` per constraint family, adds the
expression's constant, and compares with the declared bounds; it checks every
variable block's declared bounds and integrality and re-evaluates every
objective.  A bug in the lowering, a route or a solver tolerance shows up as
a violation named in the user's terms (constraint name and row labels).

A row ``lower <= a.v + c <= upper`` holds when
``a.v + c >= lower - tol max(1, |lower|)`` and ``a.v + c <= upper + tol max(1, |upper|)``.

Example
-------
>>> import numpy as np, laissez_opt as lo
>>> from laissez_opt.declare import capacity
>>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 1.0), lo.Edge("B", "A10", 1.0)])
>>> m = lo.Model(inst)
>>> _ = m.add(capacity(m.x))
>>> check_declaration(m, np.array([1.0, 1.0])).violations
["constraint 'capacity' row A10, round 0: 2 > upper bound 1"]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .model import Model

__all__ = ["DeclaredCheck", "check_declaration", "row_activity", "TOLERANCE"]

#: Relative feasibility tolerance of declared rows and bounds.
TOLERANCE = 1e-6
#: Violations listed in full; the rest are counted.
_LISTED = 20


@dataclass
class DeclaredCheck:
    """Outcome of :func:`check_declaration`.

    ``activities`` holds the re-evaluated value of every row of every
    constraint family (by name); ``objectives`` the re-evaluated objectives,
    in order; ``max_violation`` the largest violation found (absolute).

    >>> str(DeclaredCheck(ok=True))
    'every declared row, bound and objective holds'
    """

    ok: bool
    violations: list[str] = field(default_factory=list)
    count: int = 0
    max_violation: float = 0.0
    activities: dict[str, np.ndarray] = field(default_factory=dict)
    objectives: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        """A JSON-ready summary for a result's ``details``.

        >>> DeclaredCheck(ok=True).summary()
        {'ok': True, 'violations': [], 'count': 0, 'max_violation': 0.0}
        """
        return {"ok": self.ok, "violations": self.violations[:_LISTED], "count": self.count,
                "max_violation": self.max_violation}

    def __str__(self) -> str:
        if self.ok:
            return "every declared row, bound and objective holds"
        more = f" (+{self.count - len(self.violations[:5])} more)" if self.count > 5 else ""
        return "declared model violated: " + "; ".join(self.violations[:5]) + more


def row_activity(rows: np.ndarray | None, cols: np.ndarray, coefs: np.ndarray, const: np.ndarray | None,
                 size: int, values: np.ndarray) -> np.ndarray:
    """``sum a v + c`` per row, from coefficient triplets (``rows`` None: every coefficient in row 0).

    >>> import numpy as np
    >>> row_activity(np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0]), None, 2,
    ...              np.array([1.0, 10.0])).tolist()
    [1.0, 32.0]
    """
    terms = coefs * values[cols]
    if rows is None:
        activity = np.array([terms.sum()]) if size else np.zeros(0)
    else:
        activity = np.bincount(rows, weights=terms, minlength=size).astype(np.float64)
    if const is not None:
        activity = activity + const
    return activity


def _format(value: float) -> str:
    return f"{value:.12g}"


def check_declaration(model: "Model", values: np.ndarray, *, objective_values=(), tol: float = TOLERANCE) -> DeclaredCheck:
    """Check the column vector ``values`` against ``model``'s declared bounds, rows and objectives.

    ``objective_values`` are the objective values a solver reported, in the
    order of the model's objectives; each is compared with the re-evaluation.

    >>> import numpy as np, laissez_opt as lo
    >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)]))
    >>> m.maximize(2 * m.x.sum())
    >>> check_declaration(m, np.array([1.0]), objective_values=[2.5]).violations
    ["objective 'objective': reported 2.5, re-evaluated 2"]
    """
    out = DeclaredCheck(ok=True)

    def violated(text: str, amount: float) -> None:
        out.count += 1
        out.max_violation = max(out.max_violation, float(amount))
        if len(out.violations) < _LISTED:
            out.violations.append(text)

    values = np.asarray(values, dtype=np.float64)
    if values.shape != (model.n_columns,):
        violated(f"expected {model.n_columns} variable values, got shape {values.shape}", np.inf)
        out.ok = False
        return out
    if not np.all(np.isfinite(values)):
        violated("a variable value is not a finite number", np.inf)
    for block in model.variables.values():
        v = values[block.start : block.start + block.size]
        low = block.lower - tol * np.maximum(1.0, np.abs(block.lower))
        high = block.upper + tol * np.maximum(1.0, np.abs(block.upper))
        for k in np.flatnonzero((v < low) | (v > high))[:_LISTED].tolist():
            side, bound = ("lower", block.lower[k]) if v[k] < low[k] else ("upper", block.upper[k])
            violated(f"variable {block.name!r} entry {block.label(k)}: {_format(v[k])} outside its {side} bound "
                     f"{_format(bound)}", abs(v[k] - bound))
        if block.integer and v.size:
            gap = np.abs(v - np.round(v))
            for k in np.flatnonzero(gap > tol)[:_LISTED].tolist():
                violated(f"variable {block.name!r} entry {block.label(k)}: {_format(v[k])} is not an integer", gap[k])
    for name, constraint in model.constraints.items():
        expr = constraint.expr
        activity = row_activity(expr.rows, expr.cols, expr.coefs, expr.const, expr.size, values)
        out.activities[name] = activity
        low = constraint.lower - tol * np.maximum(1.0, np.abs(np.where(np.isfinite(constraint.lower), constraint.lower, 0.0)))
        high = constraint.upper + tol * np.maximum(1.0, np.abs(np.where(np.isfinite(constraint.upper), constraint.upper, 0.0)))
        bad = np.flatnonzero((activity < low) | (activity > high))
        for k in bad.tolist():
            if activity[k] < low[k]:
                text, amount = f"{_format(activity[k])} < lower bound {_format(constraint.lower[k])}", constraint.lower[k] - activity[k]
            else:
                text, amount = f"{_format(activity[k])} > upper bound {_format(constraint.upper[k])}", activity[k] - constraint.upper[k]
            where = expr.index.label(model.space, k)
            violated(f"constraint {name!r}" + (f" row {where}" if where else "") + f": {text}", amount)
    for k, objective in enumerate(model.objectives):
        expr = objective.expr
        value = float(row_activity(expr.rows, expr.cols, expr.coefs, expr.const, 1, values)[0])
        out.objectives.append(value)
        if k < len(objective_values) and objective_values[k] is not None:
            reported = float(objective_values[k])
            if abs(reported - value) > tol * max(1.0, abs(value), abs(reported)):
                violated(f"objective {objective.name!r}: reported {_format(reported)}, re-evaluated {_format(value)}",
                         abs(reported - value))
    out.ok = out.count == 0
    return out
