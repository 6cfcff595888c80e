"""Myopic per-round re-optimisation that ignores migration cost (``models.md`` item 6 baseline).

The multi-round job setting of the ``migration`` model.  Every round ``r``
the jobs present (arrived, unfinished, not past their deadline) are assigned
afresh, one pool each with ``s_i`` devices, by a small integer program over
that round alone (capacity ``sum_i s_i v_{i,c} <= k_c``, ``sum_c v_{i,c} <= 1``)
that does not see ``mu_i``:

* ``work`` and ``completion``: maximise this round's weighted useful work
  ``sum w_i min(u_{i,c,r} s_i, W_i - P_i) v_{i,c}`` (``P_i``: progress so far);
* ``cost``: run as many present jobs as possible, then minimise the summed
  money per unit of work ``b_c h / u_{i,c,r}`` of the chosen pools
  (lexicographic, by a big-M weight).

Only edges with positive utility this round are offered.  Exact ties, and
near-ties within ``1e-7`` of the largest score, go to the pool the job last
ran on; the rest are the solver's (deterministic for a given instance).
With every ``s_i = 1`` a round is a b-matching, so it is solved by the
fastest exact route for that structure (``solver="auto"``: a min-cost flow
when the scores scale exactly to integers, else HiGHS's LP, whose optimal
vertex is integral) instead of a MIP.
The jobs then pay the migration losses the moves incur, exactly as in the
``migration`` model; the objective is evaluated the same way, and with
``completion`` or ``cost`` a job unfinished by its deadline makes the result
``infeasible`` (schedule kept in ``details``).

Reference: seed 000, section 2 ("an operator blindly migrating a tenant to a
faster accelerator at the wrong time can do more harm than good").

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10"), lo.Pool("L4", count=4)],
...                    agents=[lo.Agent("B", migration_cost=0.1), lo.Agent("A", arrival=1)],
...                    edges=[lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 0.25),
...                           lo.Edge("B", "A10", 0.5), lo.Edge("B", "L4", 0.4)], rounds=5)
>>> result = lo.solve(inst, "myopic", objective="work")
>>> result.details["schedule"]["B"], result.details["agents"]["B"]["migrations"]
(['A10', 'L4', 'L4', None, None], 1)
"""

from __future__ import annotations

import time

import numpy as np

from ..instance import Instance
from ..limits import check_deadline
from ..method_spec import Method
from ..modeling import LinearModel, solve_model
from ..result import Result
from ._baseline_common import heuristic_size
from .fcfs_static import SCHEDULE_OBJECTIVE, Simulation

__all__ = ["solve_myopic"]

STAY = 1e-7
#: Cost rates above this (dollars per unit of work: a pool on which a job barely progresses) count
#: as this much: the score stays a finite number, and such a pool still loses to any cheaper one.
MAX_RATE = 1e12


def _round_assignment(sim: Simulation, r: int) -> dict[int, int]:
    """This round's assignment ``{job: edge}`` maximising the myopic score."""
    inst = sim.instance
    jobs = sim.present(r)
    free = inst.counts.astype(float).tolist()
    options = [(i, e) for i in jobs for e in sim.usable(i, r, free)]
    if not options:
        return {}
    job = np.array([i for i, _ in options])
    edge = np.array([e for _, e in options])
    pool = np.array([sim.pool_of[e] for e in edge.tolist()])
    u = inst.edge_utility[edge, r]
    sizes = np.array([sim.sizes[i] for i in job.tolist()], dtype=float)
    if sim.objective == "cost":
        with np.errstate(divide="ignore", over="ignore"):
            rate = np.minimum(inst.base_prices[pool] * inst.round_hours / u, MAX_RATE)
        top = {}
        for i, value in zip(job.tolist(), rate.tolist()):
            top[i] = max(top.get(i, 0.0), value)
        score = 1.0 + sum(top.values()) - rate
    else:
        remaining = np.maximum(np.array([sim.work[i] - sim.done[i] for i in job.tolist()]), 0.0)
        score = inst.weights[job] * np.minimum(u * sizes, remaining)
    stay = np.array([sim.last_pool[i] == c for i, c in zip(job.tolist(), pool.tolist())])
    score = score + STAY * max(1.0, float(np.max(np.abs(score)))) * stay
    model = LinearModel("myopic_round", sense="max")
    v = model.add_variables("v", len(options), upper=1.0, integer=True)
    local_job = np.unique(job, return_inverse=True)[1]
    model.add_constraints("one_pool", rows=local_job, cols=v.columns(np.arange(len(options))),
                          coefs=np.ones(len(options)), upper=1.0)
    model.add_constraints("capacity", rows=pool, cols=v.columns(np.arange(len(options))), coefs=sizes,
                          upper=inst.counts.astype(float), n_rows=inst.n_pools)
    model.set_objective(v, score)
    # With every size 1 the round is a b-matching: its LP has an integral optimal vertex, and the
    # fastest exact route (a min-cost flow, or HiGHS's LP) replaces the MIP.
    model.detect_transportation()
    solution = solve_model(model, solver="auto", mip_gap=0.0, threads=1)
    picked = np.round(solution.values) > 0.5
    return {int(i): int(e) for i, e, keep in zip(job, edge, picked) if keep}


def solve_myopic(instance: Instance, *, objective: str = "cost") -> Result:
    """Run the myopic re-optimisation; see the module docstring."""
    started = time.perf_counter()
    sim = Simulation(instance, objective)
    for r in range(instance.rounds):
        check_deadline(f"in round {r} of {instance.rounds}")
        sim.step(r, _round_assignment(sim, r))
    return sim.result("myopic", started, {})


METHOD = Method(
    name="myopic",
    kind="heuristic",
    objective="objective=cost (default)|work|completion of the migration model; per-round optimum ignoring mu",
    solvers=(),
    fractional=False,
    summary="Per-round re-optimisation of the present jobs, blind to migration cost.",
    run=solve_myopic,
    options=(SCHEDULE_OBJECTIVE,),
    estimate=heuristic_size,
)
