"""Why a declared model is infeasible: a minimal set of conflicting named rows, by deletion filtering.

Deletion filtering (Chinneck, *Feasibility and Infeasibility in
Optimization*, 2008, ch. 6) over the named constraint families: starting from
every family, drop one family at a time; if the rest is still infeasible, it
stays dropped, otherwise it is needed and kept.  What remains is an
irreducible set of families: together (with the variables' bounds and
integrality) they cannot hold, and without any one of them the rest can.
When those families hold at most :data:`CONFLICT_ROW_LIMIT`
rows, the same filter runs over their rows, so the answer names rows
(``budget[B]``) rather than whole families.  Each test is one feasibility solve
(objective 0) with HiGHS; the search stops early, and says so, when the run's
time limit is reached.

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.declare import capacity
>>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 1.0), lo.Edge("B", "A10", 1.0)])
>>> m = lo.Model(inst)
>>> _ = m.add(capacity(m.x))
>>> _ = m.add(m.x.sum(by="agent") >= 1, name="everyone")
>>> m.maximize(m.x.sum())
>>> result = m.solve()
>>> result.status, result.details["conflict"]
('infeasible', ['capacity[A10, round 0]', 'everyone[A]', 'everyone[B]'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import NoSolutionError
from ..limits import remaining
from ..modeling import solve_model

if TYPE_CHECKING:  # pragma: no cover
    from .model import Model

__all__ = ["Conflict", "find_conflict", "CONFLICT_ROW_LIMIT"]

#: Rows refined one by one when the conflicting families hold at most this many.
CONFLICT_ROW_LIMIT = 64


@dataclass
class Conflict:
    """Conflicting rows (``"name[entry]"``, or family names when not refined) and how the search ended.

    >>> Conflict(rows=["budget[B]", "floor[B]"], families=["budget", "floor"]).describe()
    "budget[B], floor[B] cannot hold together (with the variables' bounds); removing any one of them makes the rest feasible"
    """

    rows: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    complete: bool = True
    solves: int = 0

    def describe(self) -> str:
        if not self.families and self.complete:
            return ("the variables' bounds and integrality alone admit no solution (no constraint family is needed "
                    "for the conflict)")
        shown = ", ".join(self.rows[:12]) + (f" and {len(self.rows) - 12} more" if len(self.rows) > 12 else "")
        if not self.complete:
            return (f"the conflict search stopped at the time limit after {self.solves} solves; "
                    f"these rows conflict but may not be a minimal set: {shown}")
        if len(self.rows) == 1:
            return f"{shown} cannot hold (with the variables' bounds)"
        return (f"{shown} cannot hold together (with the variables' bounds); removing any one of them makes the rest "
                f"feasible")


def find_conflict(model: "Model", opts: dict) -> Conflict:
    """An irreducible set of conflicting families of ``model``, refined to rows when small.

    ``opts`` are the solve's options (its ``time_limit`` and ``threads`` apply).

    >>> import laissez_opt as lo
    >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)]))
    >>> _ = m.add(m.x.sum() >= 2, name="two"), m.add(m.x.sum() <= 5, name="five")
    >>> find_conflict(m, {}).rows
    ['two']
    """
    conflict = Conflict()

    def feasible(keep: dict) -> bool:
        left = remaining(opts.get("time_limit"))
        if left is not None and left <= 0:
            raise NoSolutionError("time limit")
        lowered = model._lower(None, keep)
        conflict.solves += 1
        return solve_model(lowered, solver="highs", time_limit=left, threads=opts.get("threads")).status != "infeasible"

    families = [name for name, c in model.constraints.items() if c.size]
    active = list(families)
    try:
        for name in families:
            trial = [f for f in active if f != name]
            if not feasible({f: None for f in trial}):
                active = trial
        conflict.families = active
        sizes = {name: model.constraints[name].size for name in active}
        if 0 < sum(sizes.values()) <= CONFLICT_ROW_LIMIT:
            kept = {name: np.ones(size, dtype=bool) for name, size in sizes.items()}
            for name in active:
                for k in range(sizes[name]):
                    kept[name][k] = False
                    if feasible(kept):
                        kept[name][k] = True
            conflict.rows = [_row_name(model, name, k) for name in active for k in np.flatnonzero(kept[name]).tolist()]
        else:
            conflict.rows = list(active)
    except NoSolutionError:
        conflict.complete = False
        conflict.families = active
        conflict.rows = list(active)
    return conflict


def _row_name(model: "Model", name: str, k: int) -> str:
    label = model.constraints[name].expr.index.label(model.space, k)
    return f"{name}[{label}]" if label else name
