"""The offline hindsight bound: the most weighted work any policy could process, knowing all arrivals.

With every round's arrivals known in advance, time shares instead of whole devices
and each agent's devices pooled (no balancer losses), the weighted work processed
over the horizon is at most the optimum of the linear program

.. math::

    \\max \\frac{1}{R \\sum_i w_i} \\sum_i w_i \\sum_{a, r} y_{i,a,r}
    \\quad\\text{s.t.}\\quad
    \\sum_{a} y_{i,a,r} \\le \\sum_c u_{i,c,r} x_{i,c,r} \\ (\\texttt{service}),\\quad
    \\sum_{r} y_{i,a,r} \\le A_{i,a} \\ (\\texttt{cohort}),

    \\sum_i x_{i,c,r} \\le k_c \\ (\\texttt{capacity}),\\quad
    \\sum_c x_{i,c,r} \\le d_i \\ (\\texttt{demand}),\\quad x, y \\ge 0,

where ``A_{i,a}`` is the work that arrives for agent ``i`` in round ``a`` and ``y_{i,a,r}`` the
part of it processed in round ``r``, allowed only in ``a <= r <= a + D - 1`` for a job
deadline of ``D`` rounds.  Without deadlines the cohorts merge into a backlog
``b_{i,r} = b_{i,r-1} + A_{i,r} - y_{i,r} >= 0`` (``flow`` rows).  Any run of any policy on the
same seed processes at most this weighted work per round (its allocations are
feasible points with ``y`` = the work its balancer got done), so the bound caps the
``weighted_welfare`` of the throughput utility.  Solved by HiGHS.

Example
-------
>>> from laissez_opt.simulate.config import config_from_dict
>>> from laissez_opt.simulate.engine import prepare
>>> cfg = config_from_dict({"format": "laissez-opt/simulation", "version": 1,
...     "instance": "instances/thesis-r1-fair-vs-efficient.json",
...     "workload": {"arrivals": "instance"}, "policies": ["time_equal"]})
>>> hindsight_bound(prepare(cfg, 0))["processed_work"]
1075.0
"""

from __future__ import annotations

import numpy as np

from ..modeling import LinearModel, solve_model
from .workload import stream

__all__ = ["hindsight_bound", "build_hindsight"]


def _arrived_work(setup) -> np.ndarray:
    """``A[r, i]``: the work arriving per round and agent, exactly as the runs draw it."""
    rng = stream(setup.seed, "sizes")
    out = np.zeros((setup.rounds, setup.base.n_agents))
    for r in range(setup.rounds):
        agents, sizes = setup.plan.round_jobs(r, rng)
        out[r] = np.bincount(agents, weights=sizes, minlength=setup.base.n_agents)
    return out


def build_hindsight(setup) -> tuple[LinearModel, dict]:
    """Declare the bound's LP for one run's setup; returns the model and ``{"arrived": A}`` (rounds x agents).

    >>> from laissez_opt.simulate.sweep import build_config
    >>> from laissez_opt.simulate.engine import prepare
    >>> model, info = build_hindsight(prepare(build_config(preset="thesis-r1"), 0))
    >>> sorted(model.variables), sorted(model.constraints), info["arrived"].tolist()
    (['b', 'x', 'y'], ['capacity', 'flow', 'service'], [[150.0, 275.0], [370.0, 280.0]])
    """
    base, R = setup.base, setup.rounds
    n, E = base.n_agents, base.n_edges
    arrived = _arrived_work(setup)
    deadline = setup.config.workload.deadline
    u = np.stack([setup.views.edge_utility(r) for r in range(R)], axis=1)  # E x R
    e_idx, r_idx = np.nonzero(u > 0)
    model = LinearModel("hindsight", sense="max")
    counts = base.counts.astype(float)
    upper = np.minimum(counts[base.edge_pool[e_idx]], base.demands[base.edge_agent[e_idx]])
    x = model.add_variables("x", e_idx.size, lower=0.0, upper=upper,
                            description="time shares of pool c given to agent i in round r (edge, round)")
    cols = x.columns(np.arange(e_idx.size))
    model.add_constraints("capacity", rows=base.edge_pool[e_idx] * R + r_idx, cols=cols, coefs=np.ones(e_idx.size),
                          upper=np.repeat(counts, R), n_rows=base.n_pools * R,
                          description="sum_i x[i,c,r] <= k_c")
    finite = np.isfinite(base.demands)
    if finite.any():
        agent = base.edge_agent[e_idx]
        keep = finite[agent]
        model.add_constraints("demand", rows=agent[keep] * R + r_idx[keep], cols=cols[keep],
                              coefs=np.ones(int(keep.sum())), upper=np.repeat(np.where(finite, base.demands, 0.0), R),
                              n_rows=n * R, description="sum_c x[i,c,r] <= d_i")
    service_rows = [base.edge_agent[e_idx] * R + r_idx]
    service_cols = [cols]
    service_coefs = [-u[e_idx, r_idx]]
    weights = base.weights
    if deadline is None:
        i_idx, t_idx = np.meshgrid(np.arange(n), np.arange(R), indexing="ij")
        i_idx, t_idx = i_idx.ravel(), t_idx.ravel()
        y = model.add_variables("y", n * R, lower=0.0, description="work processed by agent i in round r")
        b = model.add_variables("b", n * R, lower=0.0, description="backlog of agent i after round r")
        ycols, bcols = y.columns(np.arange(n * R)), b.columns(np.arange(n * R))
        prev = np.nonzero(t_idx > 0)[0]
        rows = np.concatenate([i_idx * R + t_idx, i_idx * R + t_idx, (i_idx * R + t_idx)[prev]])
        fcols = np.concatenate([bcols, ycols, bcols[prev - 1]])
        coefs = np.concatenate([np.ones(n * R), np.ones(n * R), -np.ones(prev.size)])
        flow = arrived.T.reshape(-1)  # agent-major: A[i, r]
        model.add_constraints("flow", rows=rows, cols=fcols, coefs=coefs, lower=flow, upper=flow, n_rows=n * R,
                              description="b[i,r] - b[i,r-1] + y[i,r] = A[i,r]")
        service_rows.append(i_idx * R + t_idx)
        service_cols.append(ycols)
        service_coefs.append(np.ones(n * R))
        objective_block, objective = y, weights[i_idx]
    else:
        a_idx, i_idx = np.nonzero(arrived > 0)
        span = np.minimum(a_idx + deadline, R) - a_idx
        cohort = np.repeat(np.arange(a_idx.size), span)
        t_idx = a_idx[cohort] + (np.arange(cohort.size) - np.repeat(np.cumsum(span) - span, span))
        y = model.add_variables("y", cohort.size, lower=0.0,
                                description="work of agent i's round-a arrivals processed in round r")
        ycols = y.columns(np.arange(cohort.size))
        model.add_constraints("cohort", rows=cohort, cols=ycols, coefs=np.ones(cohort.size),
                              upper=arrived[a_idx, i_idx], n_rows=a_idx.size,
                              description="sum_r y[i,a,r] <= A[i,a]")
        service_rows.append(i_idx[cohort] * R + t_idx)
        service_cols.append(ycols)
        service_coefs.append(np.ones(cohort.size))
        objective_block, objective = y, weights[i_idx[cohort]]
    model.add_constraints("service", rows=np.concatenate(service_rows), cols=np.concatenate(service_cols),
                          coefs=np.concatenate(service_coefs), upper=np.zeros(n * R), n_rows=n * R,
                          description="sum_a y[i,a,r] <= sum_c u[i,c,r] x[i,c,r]")
    model.set_objective(objective_block, objective / (R * weights.sum()))
    return model, {"arrived": arrived}


def hindsight_bound(setup, *, time_limit: float | None = None) -> dict:
    """Solve the bound for one run's setup: ``weighted_welfare`` (per round), ``processed_work``, status."""
    model, info = build_hindsight(setup)
    solution = solve_model(model, time_limit=time_limit, threads=1)
    processed = None
    if solution.values is not None:
        processed = float(solution.block(model, "y").sum())
    bound = solution.bound if solution.status != "optimal" else solution.objective
    return {"seed": setup.seed, "status": solution.status, "weighted_welfare": bound,
            "processed_work": processed, "arrived_work": float(info["arrived"].sum()),
            "solve_s": solution.solve_s}
