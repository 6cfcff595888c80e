"""Offline schedules as engine policies: ``optimum`` (the exact ``migration`` model) and ``replay``.

The market is compared with schedules computed on the whole job instance at once:
``fcfs_static`` (section 2's status quo), ``myopic`` and the offline optimum
``migration``, each knowing every job's arrival and work in advance.  This policy
solves one of them once, on the run's base instance (its agents' ``arrival``,
``work`` and ``migration_cost``), and then, round by round, gives every job the
device its schedule names.  It only serves agents that have queued work, and it
charges the base price ``b_c h`` per device-round.  Use it with configurations whose
workload is the instance's own jobs (``workload.arrivals = "instance"``, one job per
agent at its ``arrival``), as in the ``hotos25-section5`` preset.  With other
arrivals the schedule and the queues disagree.

Options: ``method`` (``migration``, ``fcfs_static`` or ``myopic``; ``optimum`` is
``replay`` with ``migration``), ``objective`` (default ``cost``) and ``time_limit``
(seconds, for ``migration``).

>>> import laissez_opt as lo
>>> res = lo.simulate(preset="hotos25-section5", policies=["fcfs_static"], progress=False)
>>> [round(p, 4) for p in res.run("fcfs_static", 0).agents["payments"]]   # B pinned to the A10, A to Trainium
[0.1414, 0.2412]
"""

from __future__ import annotations

import numpy as np

from ...errors import InfeasibleError, InputError
from ..policies import Decision, Policy, RoundView

__all__ = ["ReplayPolicy", "OptimumPolicy"]

_METHODS = ("migration", "fcfs_static", "myopic")


class ReplayPolicy(Policy):
    """Solve ``method`` once on the base instance and follow its schedule (see the module docstring)."""

    name = "replay"
    summary = "solve `method` once on the whole horizon and follow its schedule"
    needs_verification = True

    def __init__(self, method: str = "migration", objective: str = "cost", time_limit: float | None = 60.0):
        if method not in _METHODS:
            raise InputError(f"method must be one of {', '.join(_METHODS)}, got {method!r}",
                             path="$.policies[replay].options.method")
        self.method, self.objective, self.time_limit = method, objective, time_limit
        self.schedule = None

    def start(self, base, seed: int) -> None:
        self.schedule = None

    def _solve(self, base) -> dict:
        from ...api import solve

        options = {"objective": self.objective}
        if self.method == "migration" and self.time_limit is not None:
            options["time_limit"] = self.time_limit
        try:
            result = solve(base, self.method, **options)
        except InfeasibleError as err:
            result = getattr(err, "result", None)
            if result is None:
                return {}
        return (result.details or {}).get("schedule") or {}

    def decide(self, view: RoundView) -> Decision:
        if self.schedule is None:
            self.schedule = self._solve(view.base)
            self._edge = {(int(i), int(c)): e for e, (i, c) in
                          enumerate(zip(view.base.edge_agent.tolist(), view.base.edge_pool.tolist()))}
        base, r = view.base, view.round
        amounts = np.zeros(view.instance.n_edges)
        payments = {}
        for i, agent in enumerate(base.agents):
            row = self.schedule.get(agent.id) or []
            if r < len(row) and row[r] is not None and view.backlog[i] > 0:
                c = base.pool_index[row[r]]
                e = self._edge.get((i, c))
                if e is not None:
                    amounts[e] = 1.0
                    payments[agent.id] = base.pools[c].base_price * base.round_hours
        return Decision(amounts, "integral", payments=payments)


class OptimumPolicy(ReplayPolicy):
    """``replay`` of the offline ``migration`` optimum."""

    name = "optimum"
    summary = "replay of the offline migration optimum (the hindsight reference)"

    def __init__(self, objective: str = "cost", time_limit: float | None = 60.0):
        super().__init__("migration", objective, time_limit)
