"""The exact per-round minimum-backlog policy (thesis 002, eq. 3.2 and section 2.2.3).

With the queue utility ``u_i^r = -max(0, q_i^r - sum_c x_{i,c} u_{i,c})`` (the backlog after
the round; ``q_i^r`` already holds this round's arrivals), maximising the weighted sum of
the round's utilities is

.. math::

    \\max_{x, y} \\sum_i w_i y_i \\quad\\text{s.t.}\\quad
    y_i \\le \\sum_c u_{i,c} x_{i,c} \\ (\\texttt{service}), \\quad
    0 \\le y_i \\le q_i^r, \\quad x \\text{ feasible } (\\texttt{capacity}, \\texttt{demand}),

since ``sum_i w_i (-max(0, q_i - X_i)) = sum_i w_i min(q_i, X_i) - sum_i w_i q_i``: ``y_i`` is the
work agent ``i`` gets done.  ``x`` is integral (whole devices; option ``fractional``
for time shares), built with the shared allocation block of
:mod:`laissez_opt.exact.common`; the model is a MILP solved by HiGHS through
:func:`laissez_opt.modeling.solve_model`.  It is myopic: it looks at this round only.

It is the "efficient alternative" of thesis section 2.2.3 (two agents, four
accelerators, arrivals 150/275 then 370/280): both queues clear in round 1 and the
second round leaves A1 with 20 jobs (A1 on R3 and R4, A2 on R1 and R2).

Options: ``fractional`` (default false), ``solver`` (``highs``), ``time_limit``
(seconds, default none), ``weighted`` (default true: ``w_i``; false: all 1).

Example
-------
>>> import numpy as np, laissez_opt as lo
>>> from laissez_opt.simulate.view import ViewBuilder
>>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
>>> v = ViewBuilder(inst, tick_scale=1.0, demand_rule="clear").view(1, backlog=np.array([370.0, 280.0]),
...                                                                   elapsed=np.zeros(2))
>>> res = solve_min_backlog(v)
>>> res.status, res.objective, sorted((a["agent"], a["pool"]) for a in res.allocation)
('optimal', 630.0, [('A1', 'R3'), ('A1', 'R4'), ('A2', 'R1'), ('A2', 'R2')])
"""

from __future__ import annotations

import numpy as np

from ..analysis.verify import verify
from ..errors import InputError, VerificationError
from ..exact.common import add_allocation, allocation_result
from ..instance import Instance
from ..modeling import LinearModel, solve_model
from ..result import Result
from .policies import Decision, Policy, RoundView

__all__ = ["build_min_backlog", "solve_min_backlog", "MinBacklogPolicy"]


def build_min_backlog(instance: Instance, *, fractional: bool = False, weighted: bool = True):
    """Declare the model; the backlog ``q_i`` is the agent's ``work`` field of the round view.

    Returns ``(model, allocation columns)``; blocks ``x`` (with ``capacity`` and
    ``demand``), ``y`` and ``service``.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A", work=3.0)], [lo.Edge("A", "g", 2.0)])
    >>> model, _ = build_min_backlog(inst)
    >>> sorted(model.variables), sorted(model.constraints)
    (['x', 'y'], ['capacity', 'demand', 'service'])
    """
    model = LinearModel("min_backlog", sense="max")
    columns = add_allocation(model, instance, integral=not fractional)
    n = instance.n_agents
    backlog = np.array([a.work or 0.0 for a in instance.agents], dtype=np.float64)
    done = model.add_variables("y", n, lower=0.0, upper=backlog,
                               description="work agent i gets done this round, at most its backlog q_i")
    u = instance.edge_utility[:, 0]
    rows = np.concatenate([np.arange(n), instance.edge_agent])
    cols = np.concatenate([done.columns(np.arange(n)), columns.block.columns(np.arange(instance.n_edges))])
    coefs = np.concatenate([np.ones(n), -u])
    model.add_constraints("service", rows=rows, cols=cols, coefs=coefs, upper=np.zeros(n), n_rows=n,
                          description="y_i <= sum_c u_ic x_ic for each agent i")
    model.set_objective(done, instance.weights if weighted else np.ones(n))
    return model, columns


def solve_min_backlog(instance: Instance, *, fractional: bool = False, solver: str = "highs",
                      time_limit: float | None = None, weighted: bool = True) -> Result:
    """Solve the round's minimum-backlog model and verify the allocation independently.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A", work=3.0), lo.Agent("B", work=2.0)],
    ...                    [lo.Edge("A", "g", 2.0), lo.Edge("B", "g", 2.0)])
    >>> res = solve_min_backlog(inst)  # one device each: 2 + 2 done, rather than min(3, 4) for A alone
    >>> res.objective, res.utilities
    (4.0, {'A': 2.0, 'B': 2.0})
    """
    if not isinstance(fractional, bool) or not isinstance(weighted, bool):
        raise InputError("fractional and weighted are true or false", path="min_backlog")
    model, columns = build_min_backlog(instance, fractional=fractional, weighted=weighted)
    solution = solve_model(model, solver=solver, time_limit=time_limit, threads=1)
    result = allocation_result(instance, "min_backlog", columns, solution, fractional=fractional,
                               params={"time_limit": time_limit, "fractional": fractional, "weighted": weighted})
    if result.status != "infeasible":
        outcome = verify(instance, result)
        if not outcome.ok:
            raise VerificationError(f"min_backlog on {instance.name}: {outcome}")
        result.verified = True
    return result


class MinBacklogPolicy(Policy):
    """:func:`solve_min_backlog` on every round's view."""

    name = "min_backlog"
    summary = "each round the allocation of least weighted backlog after service (thesis 002, section 2.2.3)"
    needs_verification = False

    def __init__(self, fractional: bool = False, solver: str = "highs", time_limit: float | None = None,
                 weighted: bool = True):
        self.options = {"fractional": fractional, "solver": solver, "time_limit": time_limit, "weighted": weighted}

    def decide(self, view: RoundView) -> Decision:
        result = solve_min_backlog(view.instance, **self.options)
        amounts = result.amounts[:, 0] if result.amounts is not None else np.zeros(view.instance.n_edges)
        return Decision(amounts, result.mode, result)
