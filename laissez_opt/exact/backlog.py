"""Multi-round queues: the least backlog, or the leximin of queue utilities (thesis 002, eqs. 3.1-3.2).

Each agent ``i`` keeps a queue of jobs.  ``Arr_{i,r}`` jobs arrive in round ``r``
(the instance's per-agent ``arrivals``; none for an agent without them), and
one device of pool ``c`` processes ``u_{i,c,r}`` of the agent's jobs in round
``r`` (the edge utility is a throughput in jobs per round).  Jobs not
processed stay queued for the next round.  With the shared allocation ``x``
(:mod:`laissez_opt.exact.common`: ``capacity``, ``demand``, whole devices or
time shares), ``p_{i,r}`` jobs processed and ``q_{i,r}`` the backlog after
round ``r`` (``q_{i,-1} = 0``):

.. math::

    p_{i,r} \\le \\sum_c u_{i,c,r}\\, x_{i,c,r} \\ (\\texttt{service}),\\qquad
    q_{i,r} = q_{i,r-1} + Arr_{i,r} - p_{i,r} \\ (\\texttt{balance}),\\qquad
    p, q \\ge 0 .

The thesis's round utility is minus the backlog,
``u_i^r = -max(0, q_i^r + Arr_i^r - sum_c x_i^{r,c} u_i^{r,c})`` (eq. 3.2), and an
agent's utility is ``u_i = sum_r u_i^r`` (eq. 3.1), that is ``-B_i`` with
``B_i = sum_r q_{i,r}``.  The inventory rows give ``q >= max(0, ...)``; every
objective below decreases in each ``q``, so an optimum serves as much as its
allocation allows and ``q`` equals the thesis's backlog (the result is in any
case replayed from ``x`` by :func:`queue_replay`).  Objectives (``objective=``):

* ``total`` (default): minimise the weighted total backlog ``sum_i w_i B_i``;
* ``leximin``: the leximin of the weighted queue utilities ``-B_i / w_i``, i.e. the
  sorted vector of ``B_i / w_i`` (largest first) made lexicographically smallest,
  by ordered outcomes: step ``k = 1..n`` minimises ``theta_k``, the sum of the ``k``
  largest ``B_j / w_j``,

  .. math::

      \\theta_k = \\min\\; k\\, t_k + \\sum_j e_{k,j},\\qquad
      e_{k,j} \\ge B_j / w_j - t_k \\ (\\texttt{excess}),\\ e \\ge 0,

  with ``theta_h <= theta_h*`` for the steps already solved (``ordered``).  The
  result's objective is the first level, the largest ``B_i / w_i``.  Dividing by
  ``w_i`` compares backlogs per unit of entitlement: in the thesis's evaluation an
  agent of weight ``w`` receives ``w`` times the base arrival rate.

In integral mode (``fractional=False``) devices are whole (an ILP, whole-device
queues); in fractional mode ``x`` is a time share (an LP).  Ordered outcomes are
exact in both modes (Ogryczak & Sliwinski 2003); each step's value is fixed from
the replayed allocation with a relative slack of ``1e-7``.

References: thesis 002, section 2.2.3 (the two-agent queue example, Tables 2.1 and
2.2) and eqs. 3.1-3.2; Ogryczak & Sliwinski, "On direct methods for lexicographic
min-max optimization", ICCSA 2006 (ordered outcomes); inventory balance rows as
in lot-sizing models (Pochet & Wolsey, *Production Planning by Mixed Integer
Programming*, 2006, ch. 1).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
>>> best = lo.solve(inst, "backlog")
>>> best.status, best.objective, best.details["queue_utilities"]
('optimal', 20.0, {'A1': -20.0, 'A2': 0.0})
>>> lo.solve(inst, "backlog", fractional=True).objective     # time shares clear both queues
0.0
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, NoSolutionError
from ..instance import Instance
from ..limits import SizeEstimate, remaining
from ..method_spec import Method, Option, solver_options
from ..modeling import LinearModel, solve_model
from ..modeling.solution import relative_gap
from ..result import Result, agent_values, allocation_columns, edge_utilities
from .common import AllocationColumns, add_allocation, allocation_size

__all__ = ["OBJECTIVES", "QueueTrace", "arrival_matrix", "queue_replay", "build_backlog", "solve_backlog",
           "backlog_size"]

OBJECTIVES = ("total", "leximin")
#: Relative slack with which a solved ordered-outcomes step is fixed.
_THETA_SLACK = 1e-7
#: A backlog at most this fraction of the queue is floating-point residue of time shares: the queue cleared.
_RESIDUE = 1e-9


def arrival_matrix(instance: Instance) -> np.ndarray:
    """``Arr_{i,r}`` as an ``n x R`` array: each agent's ``arrivals``, zeros for an agent without them.

    >>> import laissez_opt as lo
    >>> arrival_matrix(lo.load("instances/thesis-r1-fair-vs-efficient.json")).tolist()
    [[150.0, 370.0], [275.0, 280.0]]
    """
    out = np.zeros((instance.n_agents, instance.rounds))
    for i, agent in enumerate(instance.agents):
        if agent.arrivals is not None:
            out[i] = agent.arrivals
    return out


@dataclass
class QueueTrace:
    """Per agent and round (``n x R`` arrays): arrivals, service offered, jobs processed, backlog after the round.

    ``round_utility = -backlog`` (thesis eq. 3.2); ``utility[i] = -backlog[i].sum()``
    (eq. 3.1).  Agents are in instance order.
    """

    arrivals: np.ndarray
    service: np.ndarray
    processed: np.ndarray
    backlog: np.ndarray

    @property
    def round_utility(self) -> np.ndarray:
        return -self.backlog

    @property
    def utility(self) -> np.ndarray:
        return -self.backlog.sum(axis=1)

    def to_dict(self, instance: Instance) -> dict:
        """Per agent id: ``arrivals``, ``service``, ``processed``, ``backlog`` and ``round_utility`` lists."""
        return {
            a.id: {"arrivals": self.arrivals[i].tolist(), "service": self.service[i].tolist(),
                   "processed": self.processed[i].tolist(), "backlog": self.backlog[i].tolist(),
                   "round_utility": (-self.backlog[i] + 0.0).tolist()}
            for i, a in enumerate(instance.agents)
        }


def queue_replay(instance: Instance, amounts: np.ndarray) -> QueueTrace:
    """Run the thesis's queues under a given allocation (``E x R`` amounts, whole devices or time shares).

    Round by round, ``service_{i,r} = sum_c u_{i,c,r} x_{i,c,r}``, the queue holds
    ``q_{i,r-1} + Arr_{i,r}``, ``p_{i,r} = min(queue, service)`` jobs are processed
    and ``q_{i,r} = queue - p_{i,r} = max(0, q_{i,r-1} + Arr_{i,r} - service_{i,r})``
    stay (thesis eq. 3.2, starting from empty queues).  A backlog of at most
    ``1e-9`` of the queue (what a time share computed in floating point leaves)
    counts as a cleared queue.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
    >>> half = lo.solve(inst, "time_equal")                 # half the time on every accelerator
    >>> trace = queue_replay(inst, half.amounts)
    >>> trace.processed.tolist(), trace.backlog.tolist()
    ([[150.0, 285.0], [275.0, 275.0]], [[0.0, 85.0], [0.0, 5.0]])
    """
    amounts = np.asarray(amounts, dtype=np.float64)
    if amounts.shape != (instance.n_edges, instance.rounds):
        raise InputError(f"amounts have shape {amounts.shape}, expected {(instance.n_edges, instance.rounds)}",
                         path="amounts")
    arrivals = arrival_matrix(instance)
    service = np.zeros_like(arrivals)
    np.add.at(service, instance.edge_agent, instance.edge_utility * amounts)
    processed = np.zeros_like(arrivals)
    backlog = np.zeros_like(arrivals)
    carried = np.zeros(instance.n_agents)
    for r in range(instance.rounds):
        queue = carried + arrivals[:, r]
        processed[:, r] = np.minimum(queue, service[:, r])
        carried = queue - processed[:, r]
        # A residue of floating-point time shares (service short by ~1e-14 of the queue) is a cleared queue.
        cleared = carried <= _RESIDUE * np.maximum(1.0, queue)
        processed[cleared, r] = queue[cleared]
        carried[cleared] = 0.0
        backlog[:, r] = carried
    return QueueTrace(arrivals, service, processed, backlog)


def _check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}",
                         path="option objective")
    return objective


def _check_queues(instance: Instance) -> None:
    if all(a.arrivals is None for a in instance.agents):
        raise InputError("backlog needs per-round job arrivals: give at least one agent an 'arrivals' list "
                         "(one number per round)", source=instance.source, path="$.agents[*].arrivals")


def backlog_size(instance: Instance, options: dict) -> SizeEstimate:
    """Size of the queue model: ``x`` plus ``p, q`` per agent and round; for ``leximin`` ``n`` steps of ``n`` excess rows.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
    >>> backlog_size(inst, {"objective": "leximin"}).variables    # 16 x (8 edges, 2 rounds), 4 p, 4 q, 2 t, 4 e
    30.0
    """
    n, R, E = float(instance.n_agents), float(instance.rounds), float(instance.n_edges)
    variables, rows, nonzeros = 2 * n * R, 2 * n * R, E * R + 4 * n * R
    if options.get("objective") == "leximin":
        variables += n + n * n
        rows += n * n + n
        nonzeros += n * n * (R + 2) + n * (n + 1)
    return allocation_size(instance, extra_variables=variables, extra_constraints=rows, extra_nonzeros=nonzeros,
                           note="queues: p and q per agent and round" +
                                ("; ordered outcomes: n steps of n excess rows" if options.get("objective") == "leximin" else ""))


def build_backlog(instance: Instance, *, objective: str = "total", fractional: bool = False,
                  **_ignored) -> tuple[LinearModel, AllocationColumns]:
    """Declare the queue model; returns ``(model, allocation columns)``.

    Blocks: variables ``x p q`` (and ``t e`` for ``leximin``); constraints
    ``capacity demand service balance`` (and ``excess ordered`` for ``leximin``),
    as in ``models/backlog.md``.  For ``leximin`` the objective is step 1's and
    every ``ordered`` row starts at a bound no feasible allocation reaches
    (:func:`solve_backlog` tightens them step by step).

    >>> import laissez_opt as lo
    >>> model, _ = build_backlog(lo.load("instances/thesis-r1-fair-vs-efficient.json"), objective="leximin")
    >>> sorted(model.variables), sorted(model.constraints)
    (['e', 'p', 'q', 't', 'x'], ['balance', 'capacity', 'demand', 'excess', 'ordered', 'service'])
    """
    objective = _check_objective(objective)
    _check_queues(instance)
    n, R, E = instance.n_agents, instance.rounds, instance.n_edges
    arrivals = arrival_matrix(instance)
    model = LinearModel("backlog", sense="min")
    columns = add_allocation(model, instance, integral=not fractional)
    x = columns.block
    p = model.add_variables("p", n * R, description="jobs of agent i processed in round r")
    q = model.add_variables("q", n * R, description="backlog of agent i after round r, carried into round r + 1")
    agent_round = np.arange(n * R)  # row (i, r) = i * R + r, the column order of p and q
    # service: p[i,r] - sum_c u[i,c,r] x[i,c,r] <= 0; x's column e * R + r belongs to row agent(e) * R + r.
    x_rows = instance.edge_agent[columns.edge] * R + columns.round
    model.add_constraints(
        "service",
        rows=np.concatenate([agent_round, x_rows]),
        cols=np.concatenate([p.columns(agent_round), x.columns(np.arange(E * R))]),
        coefs=np.concatenate([np.ones(n * R), -instance.edge_utility.reshape(-1)]),
        upper=0.0, n_rows=n * R, description="p[i,r] <= sum_c u[i,c,r] x[i,c,r]",
    )
    # balance: q[i,r] - q[i,r-1] + p[i,r] = Arr[i,r] (q[i,-1] = 0).
    later = agent_round[agent_round % R != 0]
    model.add_constraints(
        "balance",
        rows=np.concatenate([agent_round, later, agent_round]),
        cols=np.concatenate([q.columns(agent_round), q.columns(later - 1), p.columns(agent_round)]),
        coefs=np.concatenate([np.ones(n * R), -np.ones(later.size), np.ones(n * R)]),
        lower=arrivals.reshape(-1), upper=arrivals.reshape(-1), n_rows=n * R,
        description="q[i,r] = q[i,r-1] + Arr[i,r] - p[i,r], q[i,-1] = 0",
    )
    if objective == "total":
        model.set_objective(q, np.repeat(instance.weights, R))
        return model, columns
    t = model.add_variables("t", n, lower=-np.inf, description="ordered-outcomes step k: the level t_k")
    e = model.add_variables("e", n * n, description="ordered-outcomes step k: excess e[k,j] of B_j / w_j over t_k")
    # excess: e[k,j] + t_k - sum_r q[j,r] / w_j >= 0, row k * n + j.
    kk, jj = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    rows_q = np.repeat(kk * n + jj, R)
    cols_q = q.columns((np.repeat(jj, R) * R) + np.tile(np.arange(R), n * n))
    model.add_constraints(
        "excess",
        rows=np.concatenate([kk * n + jj, kk * n + jj, rows_q]),
        cols=np.concatenate([e.columns(kk * n + jj), t.columns(kk), cols_q]),
        coefs=np.concatenate([np.ones(n * n), np.ones(n * n), -np.repeat(1.0 / instance.weights[jj], R)]),
        lower=0.0, n_rows=n * n, description="e[k,j] >= sum_r q[j,r] / w_j - t_k",
    )
    # ordered: (k+1) t_k + sum_j e[k,j] <= theta_k*; until solved, a bound no allocation reaches:
    # every backlog is at most the jobs arrived so far, so theta_k <= sum_j sum_r cumsum(Arr_j)_r / w_j.
    ceiling = float(np.sum(np.cumsum(arrivals, axis=1).sum(axis=1) / instance.weights)) + 1.0
    model.add_constraints(
        "ordered",
        rows=np.concatenate([np.arange(n), kk]),
        cols=np.concatenate([t.columns(np.arange(n)), e.columns(kk * n + jj)]),
        coefs=np.concatenate([np.arange(1, n + 1, dtype=float), np.ones(n * n)]),
        upper=np.full(n, ceiling), n_rows=n,
        description="(k+1) t_k + sum_j e[k,j] <= theta_k*, the sum of the k+1 largest B_j / w_j fixed at step k",
    )
    _set_step(model, 0)
    return model, columns


def _set_step(model: LinearModel, k: int) -> None:
    """Objective of ordered-outcomes step ``k`` (0-based): ``(k+1) t_k + sum_j e[k,j]``."""
    t, e = model.variables["t"], model.variables["e"]
    n = t.size
    model.objective[:] = 0.0
    model.objective[t.start + k] = k + 1
    model.objective[e.start + k * n : e.start + (k + 1) * n] = 1.0
    model.objective_offset = 0.0


def _largest_sums(values: np.ndarray) -> np.ndarray:
    """``theta_k``: the sums of the ``k`` largest entries, ``k = 1..n``."""
    return np.cumsum(np.sort(values)[::-1])


def _replayed_values(instance: Instance, columns: AllocationColumns, values: np.ndarray, fractional: bool):
    amounts = values[columns.block.slice].reshape(instance.n_edges, instance.rounds)
    if not fractional:
        amounts = np.round(amounts)
    amounts = np.where(np.abs(amounts) < 1e-12, 0.0, np.maximum(amounts, 0.0))
    return amounts, queue_replay(instance, amounts)


def _objective_of(instance: Instance, trace: QueueTrace, objective: str) -> float:
    totals = trace.backlog.sum(axis=1)
    if objective == "total":
        return float(np.dot(instance.weights, totals))
    return float(np.max(totals / instance.weights))


def solve_backlog(
    instance: Instance,
    *,
    objective: str = "total",
    fractional: bool = False,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
) -> Result:
    """Solve the queue model exactly; see the module docstring.

    ``details["queue"]`` holds per agent the arrivals, service, jobs processed,
    backlog and round utility of every round (replayed from the allocation);
    ``details["queue_utilities"]`` the thesis's ``u_i = -B_i``;
    ``details["levels"]`` (``leximin``) the sorted ``B_i / w_i``, largest first.
    ``utilities`` are the contract's ``U_i(x) = sum u x`` (service offered).

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
    >>> fair = lo.solve(inst, "backlog", objective="leximin")
    >>> fair.objective, fair.details["levels"]
    (20.0, [20.0, 0.0])
    """
    objective = _check_objective(objective)
    params = {"time_limit": time_limit, "via": via, "objective": objective, "fractional": fractional}
    model, columns = build_backlog(instance, objective=objective, fractional=fractional)
    common = dict(instance=instance.name, method="backlog", params=params,
                  mode="fractional" if fractional else "integral")
    steps = 1 if objective == "total" else instance.n_agents
    solutions, start = [], None
    build_s = solve_s = 0.0
    status, message = "optimal", ""
    began = time.perf_counter()
    for k in range(steps):
        if objective == "leximin":
            _set_step(model, k)
        # One limit for all ordered-outcomes steps, and never past the deadline lo.solve opened.
        left = remaining(None if time_limit is None else time_limit - (time.perf_counter() - began))
        if left is not None and left <= 0 and solutions:
            status, message = "time_limit", f"the time limit ended ordered-outcomes step {k + 1} of {steps}"
            break
        try:
            solution = solve_model(model, solver=solver, via=via, time_limit=None if left is None else max(left, 1e-3), threads=threads,
                                   mip_gap=mip_gap, verbose=verbose, backend=backend, start=start)
        except NoSolutionError:
            if not solutions:
                raise
            status, message = "time_limit", f"the time limit ended ordered-outcomes step {k + 1} of {steps}"
            break
        build_s += solution.build_s
        solve_s += solution.solve_s
        if solution.status == "infeasible":
            # Queues only grow when service is short: every allocation, even the empty one, is feasible.
            raise NoSolutionError(f"{solution.route} reported the queue model infeasible; x = 0 is always feasible")
        solutions.append(solution)
        if solution.status != "optimal":
            status = solution.status
            message = solution.message or f"step {k + 1} of {steps} not proven optimal"
            break
        if objective == "leximin":
            _, trace = _replayed_values(instance, columns, solution.values, fractional)
            theta = _largest_sums(trace.backlog.sum(axis=1) / instance.weights)[k]
            block = model.constraints["ordered"]
            block.upper[k] = theta + _THETA_SLACK * max(1.0, abs(theta))
            start = solution.values
    last = solutions[-1]
    amounts, trace = _replayed_values(instance, columns, last.values, fractional)
    value = _objective_of(instance, trace, objective)
    first = solutions[0]
    if objective == "total":
        reported, bound = first.objective, first.bound
    else:
        _, first_trace = _replayed_values(instance, columns, first.values, fractional)
        reported, bound = _objective_of(instance, first_trace, objective), first.bound
    if status == "optimal" and value > reported + 1e-6 * max(1.0, abs(reported)):
        status = "feasible"
        message = (f"the solver's optimum {reported!r} replays to {value!r} (rows met only within the solver's "
                   "tolerance); not proven optimal")
    if status == "optimal":
        # Proven within the solver's tolerances, and the replay agrees: the replayed value is the optimum.
        # (A MIP meets the excess rows within its feasibility tolerance, which shifts its own bound by as much.)
        bound = value
    utilities = edge_utilities(instance, amounts)
    totals = trace.backlog.sum(axis=1)
    details = {
        "objective": objective,
        "queue": trace.to_dict(instance),
        "queue_utilities": {a.id: float(-totals[i] + 0.0) for i, a in enumerate(instance.agents)},
        "total_backlog": float(totals.sum()),
        "steps": len(solutions),
    }
    if objective == "leximin":
        details["levels"] = np.sort(totals / instance.weights)[::-1].tolist()
    return Result(
        status=status, objective=value, bound=bound, gap=relative_gap(value, bound),
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        amounts=amounts, solver=last.solver, route=last.route, solver_status=last.solver_status,
        message=message or last.message, details=details,
        metrics={"total_backlog": float(totals.sum()), "weighted_backlog": float(np.dot(instance.weights, totals)),
                 "largest_backlog": float(np.max(totals / instance.weights))},
        timing={"build_s": build_s, "solve_s": solve_s}, **common,
    )


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The model ``lo.build(instance, "backlog", ...)`` exports: the whole model (``total``) or step 1 (``leximin``)."""
    return build_backlog(instance, objective=options.get("objective", "total"),
                         fractional=bool(options.get("fractional")))[0]


METHOD = Method(
    name="backlog",
    kind="exact",
    objective="objective=total (default): min sum_i w_i sum_r q_{i,r}; leximin: leximin of -sum_r q_{i,r} / w_i "
              "(queues with arrivals, backlog carried over)",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Multi-round queues (the instance's arrivals): least weighted backlog or leximin of queue utilities.",
    run=solve_backlog,
    options=solver_options(fractional=True) + (
        Option("objective", "choice", "total", "total: min weighted total backlog; leximin: leximin of the "
               "weighted queue utilities -B_i / w_i (ordered outcomes)", choices=OBJECTIVES),
    ),
    estimate=backlog_size,
    build=_export_model,
    exported="objective=total: the whole model; leximin: ordered-outcomes step 1 (min the largest B_i / w_i), "
             "each further step is the same model with the earlier steps' sums held at their optima",
    references=("thesis 002, section 2.2.3 and eqs. 3.1-3.2", "Ogryczak & Sliwinski, ICCSA 2006"),
)
