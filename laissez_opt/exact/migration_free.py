"""The migration-aware schedule with migrations forbidden (``models.md`` item 6 baseline).

The model of :mod:`laissez_opt.exact.migration` with every ``m_{i,r}`` fixed
to 0 by its bounds: a job may pause and resume, but only on the pool it first
ran on (``mig_lower`` then reads ``z_{i,c,r} + sum_{c' != c} y_{i,c',r-1} <= 1``).
The model adds the job's one pool ``p_{i,c}`` with ``z, y <= p``, ``sum_c p <= 1``
and the completion row per pool (``pin_*`` in ``models/migration.md``): valid for
every schedule without a move, and a much tighter LP relaxation (8 jobs over 20
rounds: proven in about 2 s instead of a 1.6% gap at a 30 s limit).
Every schedule it allows is a ``migration`` schedule without moves, so its
optimum is never better than ``migration``'s; the difference is the value of
migration.  Unlike ``fcfs_static`` it chooses pools and start rounds with
the whole horizon in view, and may hold a job back.

Reference: seed 000, section 2 (static allocation).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("fast"), lo.Pool("slow")],
...                    agents=[lo.Agent("A", work=1.5)],
...                    edges=[lo.Edge("A", "fast", (0.0, 1.0, 1.0)), lo.Edge("A", "slow", 0.5)], rounds=3)
>>> lo.solve(inst, "migration", objective="completion").objective
2.0
>>> lo.solve(inst, "migration_free", objective="completion").objective
3.0
"""

from __future__ import annotations

from ..instance import Instance
from ..method_spec import Method
from ..result import Result
from .migration import MIGRATION_OPTIONS, _export_migration_free, migration_size, solve_migration

__all__ = ["solve_migration_free"]


def solve_migration_free(
    instance: Instance,
    *,
    objective: str = "cost",
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
    strategy: str = "auto",
    window: int = 4,
    overlap: int = 2,
    starts: bool = True,
) -> Result:
    """:func:`~laissez_opt.exact.migration.solve_migration` with ``allow_migration=False``."""
    return solve_migration(instance, objective=objective, solver=solver, via=via, time_limit=time_limit,
                           threads=threads, mip_gap=mip_gap, verbose=verbose, backend=backend,
                           allow_migration=False, method="migration_free", strategy=strategy, window=window,
                           overlap=overlap, starts=starts)


METHOD = Method(
    name="migration_free",
    kind="exact",
    objective="the migration model's objective (work, completion or cost) with every m_{i,r} = 0",
    solvers=("highs", "ortools"),
    fractional=False,
    summary="Exact multi-round schedule with migrations forbidden (pauses allowed on the same pool).",
    run=solve_migration_free,
    options=MIGRATION_OPTIONS,
    estimate=migration_size,
    build=_export_migration_free,
)
