"""First-come-first-served static pinning: the status quo of HotOS'25 section 2 (``models.md`` items 6, 10).

The multi-round job setting of the ``migration`` model: job ``i`` arrives in
round ``a_i``, needs work ``W_i`` (default 1), runs on ``s_i`` devices of one
pool (``d_i``, or 1), stops at completion or after its deadline ``D_i``.

Rule: every round, jobs still waiting are considered in arrival order (ties
by agent order); each takes its *best* pool among those with ``s_i`` free
devices and positive utility this round, and keeps it until it completes or
its deadline passes; a job finding no free pool waits (jobs behind it may
still be placed: first fit, no head-of-line blocking).  It never migrates and
never pauses once placed.  Best depends on ``objective``:

* ``work`` and ``completion``: highest per-device utility ``u_{i,c,r}``;
* ``cost``: lowest money per unit of work ``b_c h / u_{i,c,r}`` (the cheapest
  pool to finish on), ties to the faster pool.

Remaining ties go to the pool listed first.  The objective is evaluated as in
the ``migration`` model (completed weighted work, weighted completion round
``t_i + 1``, or money ``b_c h s_i`` per round held).  With ``completion`` or
``cost``, a job left unfinished by its deadline makes the result
``infeasible`` (no allocation; the schedule stays in ``details``).

Cost: ``O(R (n log n + E))``.  Reference: seed 000, section 2 ("allocated in
the order they arrive and remain static for the application's lifetime").

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10"), lo.Pool("L4", count=4)],
...                    agents=[lo.Agent("B"), lo.Agent("A", arrival=1)],
...                    edges=[lo.Edge("A", "A10", 0.5), lo.Edge("A", "L4", 0.25),
...                           lo.Edge("B", "A10", 0.5), lo.Edge("B", "L4", 0.4)], rounds=5)
>>> lo.solve(inst, "fcfs_static", objective="work").details["schedule"]
{'B': ['A10', 'A10', None, None, None], 'A': [None, 'L4', 'L4', 'L4', 'L4']}
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method, Option
from ..result import Result, agent_values, allocation_columns, edge_utilities
from ._baseline_common import heuristic_size

__all__ = ["OBJECTIVES", "SCHEDULE_OBJECTIVE", "Simulation", "solve_fcfs_static"]

OBJECTIVES = ("work", "completion", "cost")

#: The objective option of the schedule baselines (the migration model's objectives).
SCHEDULE_OBJECTIVE = Option(
    "objective", "choice", "cost", "which objective of the migration model the schedule is scored on and "
    "steers by: cost, work or completion", choices=OBJECTIVES)
TOL = 1e-6


class Simulation:
    """Round-by-round accounting of a schedule built as it goes (shared by ``fcfs_static`` and ``myopic``).

    :meth:`present` lists the jobs that may run in a round; :meth:`step` runs
    the chosen ``{job: edge}`` assignment: progress ``u_{i,c,r} s_i``, minus
    ``mu_i`` when the pool differs from the one the job last ran on; money
    ``b_c h s_i``; a job completes at the end of the first round ``r >= a_i``
    whose progress reaches ``W_i`` (within ``1e-6 max(1, W_i)``).
    """

    def __init__(self, instance: Instance, objective: str):
        if objective not in OBJECTIVES:
            raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}", path="option objective")
        self.instance, self.objective = instance, objective
        n, R = instance.n_agents, instance.rounds
        self.sizes = [1 if a.demand is None else a.demand for a in instance.agents]
        self.work = [1.0 if a.work is None else float(a.work) for a in instance.agents]
        self.last = instance.last_rounds.tolist()
        self.edges_of: list[list[int]] = [[] for _ in range(n)]
        for e, i in enumerate(instance.edge_agent.tolist()):
            self.edges_of[i].append(e)
        self.pool_of = instance.edge_pool.tolist()
        self.utility = instance.edge_utility
        self.done = [0.0] * n
        self.last_pool: list[int | None] = [None] * n
        self.when: list[int | None] = [None] * n
        self.moves: list[list[int]] = [[] for _ in range(n)]
        self.money = [0.0] * n
        self.chosen = np.full((n, R), -1, dtype=np.int64)

    def present(self, r: int) -> list[int]:
        """Jobs arrived by round ``r``, not completed, not past their deadline (agent order)."""
        return [i for i, a in enumerate(self.instance.agents)
                if a.arrival <= r <= self.last[i] and self.when[i] is None]

    def usable(self, i: int, r: int, free: list[float]) -> list[int]:
        """Edges of job ``i`` whose pool has ``s_i`` free devices and positive utility in round ``r``."""
        s = self.sizes[i]
        return [e for e in self.edges_of[i] if s > 0 and free[self.pool_of[e]] >= s and self.utility[e, r] > 0]

    def step(self, r: int, assignment: dict[int, int]) -> None:
        inst = self.instance
        for i, e in assignment.items():
            pool = self.pool_of[e]
            if self.last_pool[i] is not None and pool != self.last_pool[i]:
                self.moves[i].append(r)
                self.done[i] -= inst.agents[i].migration_cost
            self.done[i] += float(self.utility[e, r]) * self.sizes[i]
            self.money[i] += inst.pools[pool].base_price * inst.round_hours * self.sizes[i]
            self.last_pool[i] = pool
            self.chosen[i, r] = e
        for i, a in enumerate(inst.agents):
            if a.arrival <= r and self.when[i] is None and self.done[i] >= self.work[i] - TOL * max(1.0, self.work[i]):
                self.when[i] = r

    def result(self, method: str, started: float, params: dict) -> Result:
        """The schedule as a :class:`Result` (same ``details`` layout as the ``migration`` model)."""
        inst, h = self.instance, self.instance.round_hours
        ok = [t is not None and t <= d for t, d in zip(self.when, self.last)]
        weights = [a.weight for a in inst.agents]
        work_value = float(sum(w * W for w, W, good in zip(weights, self.work, ok) if good))
        completion = float(sum(w * (t + 1) for w, t in zip(weights, self.when))) if all(ok) else None
        value = {"work": work_value, "completion": completion, "cost": float(sum(self.money)) if all(ok) else None}[self.objective]
        names = [p.id for p in inst.pools]
        stats = {a.id: {"work": self.work[i], "work_done": self.done[i], "completion_round": self.when[i],
                        "completion_hours": None if self.when[i] is None else (self.when[i] + 1) * h,
                        "migrations": len(self.moves[i]), "migration_rounds": self.moves[i], "money": self.money[i]}
                 for i, a in enumerate(inst.agents)}
        totals = {"money": float(sum(self.money)), "migrations": int(sum(len(m) for m in self.moves)),
                  "migration_loss": float(sum(a.migration_cost * len(m) for a, m in zip(inst.agents, self.moves))),
                  "completed_weighted_work": work_value, "weighted_completion": completion}
        details = {"objective": self.objective, "round_hours": h,
                   "schedule": {a.id: [None if e < 0 else names[self.pool_of[e]] for e in self.chosen[i].tolist()]
                                for i, a in enumerate(inst.agents)},
                   "agents": stats, "totals": totals}
        params = dict(params, objective=self.objective)
        timing = {"build_s": 0.0, "solve_s": time.perf_counter() - started}
        if value is None:
            late = [a.id for a, good in zip(inst.agents, ok) if not good]
            return Result(instance=inst.name, method=method, status="infeasible", route=method, params=params,
                          timing=timing, details=details,
                          message=f"jobs {', '.join(map(repr, late))} do not finish by their deadline under {method}")
        amounts = np.zeros((inst.n_edges, inst.rounds))
        rows, rounds = np.nonzero(self.chosen >= 0)
        amounts[self.chosen[rows, rounds], rounds] = np.asarray(self.sizes, dtype=float)[rows]
        utilities = edge_utilities(inst, amounts)
        return Result(
            instance=inst.name, method=method, status="feasible", solver=None, objective=value,
            allocation=allocation_columns(inst, amounts),
            utilities=agent_values(inst, utilities),
            payments={a.id: m for a, m in zip(inst.agents, self.money)},
            metrics={k: v for k, v in totals.items() if v is not None}, details=details,
            timing=timing, route=method, mode="integral", params=params, amounts=amounts,
        )


def solve_fcfs_static(instance: Instance, *, objective: str = "cost") -> Result:
    """Run first-come-first-served static pinning; see the module docstring."""
    started = time.perf_counter()
    sim = Simulation(instance, objective)
    pinned: dict[int, int] = {}
    order = sorted(range(instance.n_agents), key=lambda i: (instance.agents[i].arrival, i))
    prices = instance.base_prices
    for r in range(instance.rounds):
        check_deadline(f"in round {r} of {instance.rounds}")
        present = set(sim.present(r))
        pinned = {i: e for i, e in pinned.items() if i in present}
        free = instance.counts.astype(float).tolist()
        for i, e in pinned.items():
            free[sim.pool_of[e]] -= sim.sizes[i]
        for i in order:
            if i not in present or i in pinned:
                continue
            options = sim.usable(i, r, free)
            if not options:
                continue
            if objective == "cost":
                e = min(options, key=lambda e: (prices[sim.pool_of[e]] / sim.utility[e, r], -sim.utility[e, r], sim.pool_of[e]))
            else:
                e = min(options, key=lambda e: (-sim.utility[e, r], sim.pool_of[e]))
            pinned[i] = e
            free[sim.pool_of[e]] -= sim.sizes[i]
        sim.step(r, dict(pinned))
    return sim.result("fcfs_static", started, {})


METHOD = Method(
    name="fcfs_static",
    kind="heuristic",
    objective="objective=cost (default)|work|completion of the migration model; arrival order, best free pool, pinned until done",
    solvers=(),
    fractional=False,
    summary="First-come-first-served static pinning, no migration (HotOS'25 status quo).",
    run=solve_fcfs_static,
    options=(SCHEDULE_OBJECTIVE,),
    estimate=heuristic_size,
)
