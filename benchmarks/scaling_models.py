"""Scaling of every registered model: double the size until the time limit, fit the growth exponent.

For each model (a registered method, with ``fractional`` where the method has both forms)
the script doubles a documented size axis from a smallest size until the first size that
does not finish within ``--limit`` seconds (default 60): the *wall*.  Every solve goes
through the public path ``lo.solve(inst, method, time_limit=LIMIT, ...)`` in a fresh
subprocess, so that a crash, an out-of-memory kill or the library's memory refusal (its
size estimate, checked before anything is built) is recorded as the wall's cause instead
of ending the sweep.  The parent kills a ``lo.solve`` child that has not returned after
``2 x LIMIT + 120`` seconds (a reference child after ``LIMIT + 120``; instance generation
included) and records that too.  Each child's address space is capped at half the
physical memory, so that an instance too large for the machine is a recorded
``MemoryError``.

Each child first solves the model's smallest quick size once, untimed, so that imports and
first-call (numba JIT) costs are paid before the measured solve.  A size *finishes* when ``lo.solve`` returns within the limit with a status other than
``time_limit`` (an exact result that hit the limit returns its incumbent, bound and gap;
they are recorded, and that size is the wall).  A solve faster than 2 s is run three times
and the median is reported; slower ones once (the machine is shared: ratios against a
reference measured on the same instance in the same sweep are the figures to compare, not absolute times).

Where a reference exists for the model, a second child times it on the same instance right
after ``lo.solve`` (a reference that does not finish within the limit is not run at larger
sizes), and the table shows ``lo.solve / reference``:

* ``hand-highspy``: the welfare LP written by hand from numpy arrays and passed to highspy
  in one call (:func:`welfare_scaling.run_hand_highspy`); for ``vcg`` and
  ``fair_welfare`` it is the one welfare LP they start from (the ratio says how many
  welfare LPs the model costs);
* ``ortools-mcf``: the same welfare problem as an OR-Tools ``SimpleMinCostFlow`` written
  by hand (:func:`run_ortools_mcf`; integral, utilities scaled to integers);
* ``maxmin-lp``: the first max-min level as one hand-written highspy LP
  (:func:`run_maxmin_lp`: ``max t`` s.t. ``sum_c u_ic x_ic >= t``, pool and demand rows),
  the LP Gavel solves once per policy evaluation;
* ``scipy-lsa``: ``scipy.optimize.linear_sum_assignment`` on the dense matrix (``auction``);
* ``edge-sort``: one ``numpy.lexsort`` of the edges by agent and utility, the least work a
  preference-list heuristic does (``greedy``, ``mtf``, ``round_robin`` and the other
  one-round heuristics).

Recorded (published, not re-run) peers are printed next to the rows they concern:
Gavel's water-filling 19.8 s and its single max-min LP 0.04-0.08 s at 1,024 jobs, and POP's
285 s -> 12.6 s at 2,048 jobs.

The growth exponent is the least-squares slope of ``log time`` against ``log size`` over
the finishing sizes whose time is at least ``FLOOR_S`` (0.1 s: below it fixed costs, the
imports' first calls, verification set-up, dominate); with fewer than three such sizes it is
fitted on the last three finishing sizes and marked so.  The table names the floor used.

    python benchmarks/scaling_models.py                       # every model, 60 s wall
    python benchmarks/scaling_models.py --models welfare,mtf --limit 30
    python benchmarks/scaling_models.py --limits migration=30,maxmin_int=30   # per-model limits
    python benchmarks/scaling_models.py --quick               # tiny sizes, a few seconds per model

Writes ``scaling_models.json``, ``scaling_models.md`` and ``scaling_models.png`` to ``--out``
(default ``benchmarks/results``), each atomically.  ``--merge`` keeps the models of an
existing JSON report that this run does not repeat (to run the sweep model by model);
with ``--resume`` as well, a model whose sweep stopped on its ``--budget`` goes on from
the size it stopped at, its earlier points kept; with ``--from-wall``, a named model is
re-measured from its wall size on whatever stopped it (after a change that moves the wall).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from _common import machine, write_report  # noqa: E402

HERE = Path(__file__).resolve().parent
FLOOR_S = 0.1
REPEAT_BELOW_S = 2.0
MEMORY_SHARE = 0.5  # a child may take this share of the physical memory (address space)
GAVEL_WATERFILL = (1024, 19.8)  # Gavel (OSDI'20): water-filling at 1,024 jobs, seconds
GAVEL_LP = (1024, 0.04, 0.08)  # Gavel: one max-min LP at 1,024 jobs, seconds
POP = (2048, 285.0, 12.6)  # POP (SOSP'21): 2,048 jobs, whole vs 8 random sub-problems, seconds


# ----------------------------------------------------------------- instances
def uniform(n: int, pools: int = 100):
    """``generate("uniform", n, pools)``: sparse random graph (density 0.3), pools of 1-4 devices."""
    import laissez_opt as lo

    return lo.generate("uniform", n, pools, seed=0)


def neocloud(n: int):
    """``generate("neocloud", n, max(4, n // 10))``: dense edges, one pool per ten agents."""
    import laissez_opt as lo

    return lo.generate("neocloud", n, max(4, n // 10), seed=1)


def neocloud_required(n: int):
    """:func:`neocloud` with every fourth agent required (the placements ``min_cost`` must make)."""
    import laissez_opt as lo

    inst = neocloud(n)
    agents = [dataclasses.replace(a, required=(i % 4 == 0)) for i, a in enumerate(inst.agents)]
    return lo.Instance(inst.pools, agents, inst.edges, name=f"{inst.name}-required")


def gavel(n: int):
    """``generate("gavel", n, 3)``: Gavel's job types on V100/P100/K80 (the issue's max-min workload)."""
    import laissez_opt as lo

    return lo.generate("gavel", n, 3, seed=0)


def gavel_caps(n: int):
    """``generate("gavel", n, 3, max_count=n)``: pools of up to ``n`` GPUs, general demands 1/2/4/8."""
    from maxmin_scaling import integral_instance

    return integral_instance("gavel", n)


def drf_jobs(n: int):
    """``generate("gavel", n, 3, priorities=True)`` with ``ceil(0.45 n)`` GPUs per pool: contested (1.35 n GPUs
    for about 1.9 n demanded), weights 1 and 5, so the whole-task leximin has several levels."""
    import laissez_opt as lo

    inst = lo.generate("gavel", n, 3, seed=0, priorities=True)
    pools = [dataclasses.replace(p, count=math.ceil(0.45 * n)) for p in inst.pools]
    return lo.Instance(pools, inst.agents, inst.edges, rounds=inst.rounds, name=f"{inst.name}-gpus-0.45n")


def themis_jobs(n: int):
    """``themis_scaling.workload("gavel", "large", n, 3)``: works and elapsed times on the Gavel types."""
    from themis_scaling import workload

    return workload("gavel", "large", n, 3, 0)


def migration_jobs(n: int):
    """``migration_scaling.jobs_instance(n, 20)``: ``n`` jobs, 20 rounds, devices about ``n`` over 4 types."""
    from migration_scaling import jobs_instance

    return jobs_instance(n, 20)


def gavel_queues(n: int, rounds: int = 10):
    """``generate("gavel", n, 3, rounds=10)`` with Poisson(1) job arrivals per agent and round (``backlog``)."""
    import laissez_opt as lo

    inst = lo.generate("gavel", n, 3, seed=0, rounds=rounds)
    rng = np.random.default_rng(3)
    arrivals = rng.poisson(1.0, size=(n, rounds)).astype(float)
    agents = [dataclasses.replace(a, arrivals=tuple(row)) for a, row in zip(inst.agents, arrivals.tolist())]
    return lo.Instance(inst.pools, agents, inst.edges, rounds=rounds, name=f"{inst.name}-queues")


def assignment(n: int):
    """``n`` agents x ``2n`` single-device pools, all compatible, demand 1, integer utilities 0..1000."""
    import laissez_opt as lo
    from laissez_opt.io.columns import instance_from_columns

    m = 2 * n
    util = np.random.default_rng(0).integers(0, 1001, size=(n, m)).astype(float)
    return instance_from_columns([lo.Pool(f"c{c}") for c in range(m)], [f"a{i}" for i in range(n)],
                                 np.repeat(np.arange(n), m), np.tile(np.arange(m), n), util.reshape(-1),
                                 demand=np.ones(n), name=f"assignment-{n}x{m}")


# ----------------------------------------------------------------- references
def run_hand_highspy(inst) -> tuple[float, float]:
    """(seconds, objective) of the hand-written welfare LP (``welfare_scaling.run_hand_highspy``)."""
    from welfare_scaling import hand_arrays
    from welfare_scaling import run_hand_highspy as hand

    t0 = time.perf_counter()
    timing = hand(hand_arrays(inst))
    return time.perf_counter() - t0, timing.objective


def run_ortools_mcf(inst, scale: float = 1e6) -> tuple[float, float]:
    """(seconds, objective) of weighted welfare as a hand-written OR-Tools min-cost flow.

    Source -> agent (capacity ``d_i``, or the devices when unbounded), agent -> pool
    (capacity ``min(d_i, k_c)``, cost ``-round(scale w_i u_ic)``), pool -> sink (``k_c``),
    and a zero-cost bypass source -> sink so that unprofitable flow is not forced.  Integral
    optimum of the same b-matching the welfare LP solves (its vertices are integral).
    """
    from ortools.graph.python import min_cost_flow

    t0 = time.perf_counter()
    agent, pool = inst.edge_agent, inst.edge_pool
    n, m = len(inst.agents), len(inst.pools)
    count = inst.counts.astype(np.int64)
    total = int(count.sum())
    demand = np.where(np.isfinite(inst.demands), inst.demands, total).astype(np.int64)
    value = inst.weights[agent] * inst.edge_utility[:, 0]
    src, sink = n + m, n + m + 1
    tails = np.concatenate([np.full(n, src), agent, n + np.arange(m), [src]])
    heads = np.concatenate([np.arange(n), n + pool, np.full(m, sink), [sink]])
    caps = np.concatenate([demand, np.minimum(demand[agent], count[pool]), count, [total]])
    costs = np.concatenate([np.zeros(n), -np.round(scale * value), np.zeros(m), [0]]).astype(np.int64)
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32), caps, costs)
    supplies = np.zeros(n + m + 2, dtype=np.int64)
    supplies[src], supplies[sink] = total, -total
    flow.set_nodes_supplies(np.arange(n + m + 2, dtype=np.int32), supplies)
    if flow.solve() != flow.OPTIMAL:
        raise RuntimeError("min-cost flow did not reach optimality")
    arcs = np.arange(n, n + agent.size)
    objective = float(np.dot(flow.flows(arcs), value))
    return time.perf_counter() - t0, objective


def run_placement_mcf(inst, scale: float = 1e6) -> tuple[float, float]:
    """(seconds, objective) of ``min_cost`` with unit sizes in one round as a hand-written OR-Tools min-cost flow.

    Each required agent supplies one unit, agent -> pool arcs cost ``round(scale cost_ic)``,
    pool -> sink has capacity ``k_c`` and the sink takes one unit per required agent: the
    placement every required agent must get, with no bypass.
    """
    from ortools.graph.python import min_cost_flow

    t0 = time.perf_counter()
    required = np.array([a.required for a in inst.agents], dtype=bool)
    on = required[inst.edge_agent]
    agent, pool, cost = inst.edge_agent[on], inst.edge_pool[on], inst.edge_cost[on]
    n, m = len(inst.agents), len(inst.pools)
    sink = n + m
    tails = np.concatenate([agent, n + np.arange(m)]).astype(np.int32)
    heads = np.concatenate([n + pool, np.full(m, sink)]).astype(np.int32)
    caps = np.concatenate([np.ones(agent.size), inst.counts]).astype(np.int64)
    costs = np.concatenate([np.round(scale * cost), np.zeros(m)]).astype(np.int64)
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
    supplies = np.zeros(n + m + 1, dtype=np.int64)
    supplies[:n] = required
    supplies[sink] = -int(required.sum())
    flow.set_nodes_supplies(np.arange(n + m + 1, dtype=np.int32), supplies)
    if flow.solve() != flow.OPTIMAL:
        raise RuntimeError("min-cost flow did not reach optimality")
    objective = float(np.dot(flow.flows(np.arange(agent.size)), cost))
    return time.perf_counter() - t0, objective


def run_maxmin_lp(inst) -> tuple[float, float]:
    """(seconds, optimum) of the first max-min level as one hand-written highspy LP.

    ``max t`` s.t. ``sum_c u_ic x_ic - t >= 0`` per agent, ``sum_i x_ic <= k_c`` per pool,
    ``sum_c x_ic <= d_i`` per finite demand, ``0 <= x_ic <= min(d_i, k_c)``: utilities as
    given (no normaliser), the LP size of one water-filling level.
    """
    import highspy
    from scipy import sparse

    t0 = time.perf_counter()
    agent, pool = inst.edge_agent, inst.edge_pool
    n, m, e = len(inst.agents), len(inst.pools), agent.size
    u = inst.edge_utility[:, 0]
    demand, count = inst.demands, inst.counts.astype(float)
    finite = np.flatnonzero(np.isfinite(demand))
    drow = np.full(n, -1)
    drow[finite] = np.arange(finite.size)
    cols = np.arange(e)
    has = drow[agent] >= 0
    rows = np.concatenate([agent, n + pool, n + m + drow[agent][has], np.arange(n)])
    cidx = np.concatenate([cols, cols, cols[has], np.full(n, e)])
    vals = np.concatenate([u, np.ones(e), np.ones(int(has.sum())), -np.ones(n)])
    a = sparse.csc_matrix((vals, (rows, cidx)), shape=(n + m + finite.size, e + 1))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = e + 1, a.shape[0]
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = np.concatenate([np.zeros(e), [1.0]])
    lp.col_lower_ = np.zeros(e + 1)
    lp.col_upper_ = np.concatenate([np.minimum(demand[agent], count[pool]), [highspy.kHighsInf]])
    lp.row_lower_ = np.concatenate([np.zeros(n), np.full(m + finite.size, -highspy.kHighsInf)])
    lp.row_upper_ = np.concatenate([np.full(n, highspy.kHighsInf), count, demand[finite]])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    h.passModel(lp)
    h.run()
    return time.perf_counter() - t0, float(h.getInfo().objective_function_value)


def run_scipy_lsa(inst) -> tuple[float, float]:
    """(seconds, objective) of ``linear_sum_assignment`` on the dense weighted utility matrix."""
    from scipy.optimize import linear_sum_assignment

    t0 = time.perf_counter()
    value = np.zeros((len(inst.agents), len(inst.pools)))
    value[inst.edge_agent, inst.edge_pool] = inst.weights[inst.edge_agent] * inst.edge_utility[:, 0]
    rows, cols = linear_sum_assignment(value, maximize=True)
    return time.perf_counter() - t0, float(value[rows, cols].sum())


def run_edge_sort(inst) -> tuple[float, None]:
    """(seconds, None) of sorting the edges by agent, then by utility descending (one ``np.lexsort``)."""
    t0 = time.perf_counter()
    np.lexsort((-inst.edge_utility[:, 0], inst.edge_agent))
    return time.perf_counter() - t0, None


REFERENCES: dict[str, Callable] = {
    "hand-highspy": run_hand_highspy, "ortools-mcf": run_ortools_mcf, "placement-mcf": run_placement_mcf,
    "maxmin-lp": run_maxmin_lp,
    "scipy-lsa": run_scipy_lsa, "edge-sort": run_edge_sort,
}


# ----------------------------------------------------------------- models
@dataclass(frozen=True)
class Model:
    """One row of the sweep: a method with options, its instance family and size axis."""

    key: str
    method: str
    options: dict
    axis: str
    make: Callable
    start: int
    cap: int
    group: str
    references: tuple = ()
    quick: tuple = (8, 16, 32)
    note: str = ""
    extra: dict = field(default_factory=dict)


def _models() -> list[Model]:
    one_round = "agents, uniform family, 100 pools"
    heur = dict(make=uniform, start=1024, cap=1 << 20, group="heuristics", references=("edge-sort",),
                quick=(64, 128, 256), axis=one_round)
    multi = dict(make=migration_jobs, group="multi-round", quick=(4, 8, 16),
                 axis="jobs, 20 rounds, devices about jobs over 4 types")
    return [
        Model("welfare", "welfare", {}, "agents, uniform family, 100 pools", uniform, 1024, 1 << 20, "exact",
              ("hand-highspy", "ortools-mcf"), (64, 128, 256)),
        Model("vcg", "vcg", {}, "agents, neocloud family, agents/10 pools", neocloud, 128, 1 << 16, "exact",
              ("hand-highspy", "ortools-mcf"), (32, 64, 128)),
        # Sharing incentive in time shares: with whole devices, more agents than devices make it infeasible.
        Model("fair_welfare", "fair_welfare", {"sharing": 1.0, "fractional": True},
              "agents, uniform family, 100 pools, sharing=1 (sharing incentive), time shares", uniform, 256, 1 << 18,
              "exact", ("hand-highspy",), (64, 128, 256)),
        Model("min_cost", "min_cost", {}, "agents, neocloud family, agents/10 pools, 1 in 4 required",
              neocloud_required, 256, 1 << 18, "exact", ("placement-mcf",), (32, 64, 128)),
        Model("maxmin_frac", "maxmin", {"fractional": True}, "jobs, gavel family, 3 types", gavel, 1024, 1 << 22,
              "exact", ("maxmin-lp",), (64, 128, 256), extra={"gavel": True}),
        Model("maxmin_frac_caps", "maxmin", {"fractional": True}, "jobs, gavel family, 3 types, pools up to n GPUs",
              gavel_caps, 256, 1 << 20, "exact", ("maxmin-lp",), (64, 128, 256),
              note="caps bind: dozens of levels", extra={"gavel": True}),
        Model("maxmin_int", "maxmin", {"fractional": False}, "jobs, gavel family, 3 types, pools up to n GPUs",
              gavel_caps, 32, 1 << 16, "exact", ("maxmin-lp",), (16, 32, 64), note="general demands"),
        Model("themis_frac", "themis", {"fractional": True}, "jobs, gavel family, 3 types, works and elapsed times",
              themis_jobs, 256, 1 << 20, "exact", ("maxmin-lp",), (64, 128, 256)),
        Model("themis_int", "themis", {"fractional": False}, "jobs, gavel family, 3 types, works and elapsed times",
              themis_jobs, 64, 1 << 16, "exact", ("maxmin-lp",), (16, 32, 64)),
        Model("drf_frac", "drf", {"fractional": True}, "jobs, gavel family, 3 types", gavel, 256, 1 << 20, "exact",
              ("maxmin-lp",), (64, 128, 256)),
        Model("drf_int", "drf", {"fractional": False}, "jobs, gavel family, 3 types, weights 1 and 5, 0.45 n GPUs a pool",
              drf_jobs, 8, 1 << 20, "exact", ("maxmin-lp",), (4, 8, 16)),
        Model("migration", "migration", {}, start=4, cap=1 << 12, **multi),
        Model("migration_free", "migration_free", {}, start=4, cap=1 << 12, **multi),
        Model("backlog", "backlog", {}, "agents, gavel family, 3 types, 10 rounds, Poisson(1) arrivals", gavel_queues,
              64, 1 << 18, "multi-round", (), (16, 32, 64)),
        Model("myopic", "myopic", {}, start=64, cap=1 << 17, **multi),
        Model("fcfs_static", "fcfs_static", {}, start=64, cap=1 << 17, **multi),
        Model("auction", "auction", {}, "agents n, assignment to 2n single devices", assignment, 128, 1 << 14,
              "heuristics", ("scipy-lsa",), (32, 64, 128)),
        *(Model(name, name, {}, **heur) for name in (
            "greedy", "mtf", "round_robin", "gandiva_fair", "time_equal", "fixed_partition", "dynamic_partition")),
    ]


MODELS = {m.key: m for m in _models()}


def check_coverage() -> list[str]:
    """Registered built-in methods that no model of the sweep covers (should be empty)."""
    from laissez_opt.methods import METHODS, registered_at_runtime

    covered = {m.method for m in MODELS.values()}
    return sorted(name for name in METHODS if name not in covered and registered_at_runtime(name) is None)


# ----------------------------------------------------------------- one point (child process)
def _timed(fn, repeat_below: float = REPEAT_BELOW_S) -> tuple[float, object, int]:
    """(median seconds, last value, runs): one run, three when the first is under ``repeat_below``."""
    t0 = time.perf_counter()
    value = fn()
    times = [time.perf_counter() - t0]
    if times[0] < repeat_below:
        for _ in range(2):
            t0 = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times), value, len(times)


def _number(x):
    return None if x is None or not math.isfinite(float(x)) else float(x)


def run_point(key: str, n: int, which: str, limit: float) -> dict:
    """One size of one model in this process: ``lo.solve`` (``which="solve"``) or a reference."""
    import laissez_opt as lo
    from laissez_opt.errors import InputError, NoSolutionError

    model = MODELS[key]
    if which == "solve":  # imports and first-call (JIT) costs, paid once per process, are not measured
        lo.solve(model.make(model.quick[0]), model.method, time_limit=limit, **model.options)
    t0 = time.perf_counter()
    try:
        inst = model.make(n)
    except MemoryError:
        return {"model": key, "size": n, "which": which, "state": "out_of_memory",
                "cause": f"MemoryError while building the instance (address space capped at {_gib(_address_cap())})"}
    row = {"model": key, "size": n, "which": which, "make_s": time.perf_counter() - t0,
           "edges": int(inst.n_edges), "devices": int(sum(p.count for p in inst.pools))}
    if which != "solve":
        fn = REFERENCES[which]
        seconds, (_, objective), runs = _timed(lambda: fn(inst))
        return {**row, "state": "ran", "seconds": seconds, "runs": runs, "objective": _number(objective)}
    def cold_solve():
        # Every run finds the agent classes again: a repeat must not time the classes kept on the instance.
        inst.__dict__.pop("_agent_classes", None)
        return lo.solve(inst, model.method, time_limit=limit, **model.options)

    try:
        seconds, result, runs = _timed(cold_solve)
    except NoSolutionError as exc:
        return {**row, "state": "no_solution", "cause": f"no incumbent within the limit ({str(exc)[:160]})"}
    except InputError as exc:
        text = str(exc)
        state = "memory_refusal" if "memory budget" in text or "elementary steps" in text else "input_error"
        return {**row, "state": state, "cause": text[:240]}
    except MemoryError:
        return {**row, "state": "out_of_memory",
                "cause": f"MemoryError while solving (address space capped at {_gib(_address_cap())})"}
    status = result.status
    state = "finished" if status not in ("time_limit", "infeasible") and seconds <= limit else "wall"
    return {**row, "state": state, "seconds": seconds, "runs": runs, "status": status,
            "objective": _number(result.objective), "bound": _number(result.bound), "gap": _number(result.gap)}


def memory_cap(share: float = MEMORY_SHARE) -> int | None:
    """Bytes of address space a child may take: ``share`` of the physical memory (None if unknown)."""
    try:
        return int(share * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: int | None) -> str:
    return "no cap" if n is None else f"{n / 2 ** 30:.1f} GiB"


def _address_cap() -> int | None:
    """This process's address-space limit in bytes (None when unlimited or unknown)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        return None if soft == resource.RLIM_INFINITY else int(soft)
    except (ImportError, ValueError, OSError):
        return None


def _capper(cap: int | None):
    """A ``preexec_fn`` setting the child's address-space limit to ``cap`` bytes (None: no cap)."""
    if cap is None or sys.platform == "win32":
        return None

    def apply() -> None:  # runs in the child before it starts: a size too large raises MemoryError there
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return apply


def run_child(key: str, n: int, which: str, limit: float, timeout: float, memory: int | None = -1) -> dict:
    """:func:`run_point` in a fresh interpreter, killed after ``timeout`` seconds.

    The child's address space is capped at :func:`memory_cap` (``MEMORY_SHARE`` of the
    physical memory, on systems with ``resource``), so that an instance too large for the
    machine (``auction``'s dense ``n x 2n`` matrix grows as ``n^2``) ends in a recorded
    ``MemoryError`` instead of pushing the machine into swap or its out-of-memory killer.
    ``memory``: the cap in bytes (default ``-1``: :func:`memory_cap`; ``None``: no cap).
    """
    cmd = [sys.executable, str(Path(__file__).resolve()), "--point", key, str(n), which, "--limit", str(limit)]
    t0 = time.perf_counter()
    cap = memory_cap() if memory == -1 else memory
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE, preexec_fn=_capper(cap))
    except subprocess.TimeoutExpired:
        return {"model": key, "size": n, "which": which, "state": "killed",
                "cause": f"did not return within {timeout:.0f} s (killed)"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        why = "killed by signal (out of memory?)" if done.returncode < 0 else f"crash: {tail[:200]}"
        return {"model": key, "size": n, "which": which, "state": "crash", "cause": why, "child_s": wall}
    return {**json.loads(lines[-1]), "child_s": wall}


# ----------------------------------------------------------------- the sweep
def fit_exponent(sizes, seconds, floor_s: float = FLOOR_S) -> tuple[float | None, int | None, str]:
    """(slope, floor size, basis): least-squares slope of ``log t`` on ``log n``.

    Fitted over the points with ``t >= floor_s``; with fewer than three such points, over
    the last three points (basis ``"last 3"``); ``None`` with fewer than two points.
    When a size took less than half the time of the size before, that above the floor (a
    route change with the size, such as integral ``maxmin``'s ordered outcomes up to 32
    agents and its first-level route above; or an integral search closing early on one
    instance and not on another), only the points from the last such drop on are fitted,
    and the basis names the drop; with fewer than two of them left, ``None`` (basis
    ``"not monotone: ..."``): no growth law fits.

    >>> n = [100, 200, 400, 800]
    >>> round(fit_exponent(n, [3e-5 * x ** 2 for x in n])[0], 6)
    2.0
    """
    pairs = sorted(zip(sizes, seconds))
    drop = ""
    for k in range(len(pairs) - 1, 0, -1):  # the last point well below the one before, that above the floor
        n_top, t_top = pairs[k - 1]
        if t_top >= floor_s and pairs[k][1] < t_top / 2:
            drop = f"{_s(t_top)} s at {n_top:,}, {_s(pairs[k][1])} s at {pairs[k][0]:,}"
            if len(pairs) - k < 2:
                return None, int(pairs[0][0]), f"not monotone: {drop}"
            pairs = pairs[k:]
            break
    above = [(n, t) for n, t in pairs if t >= floor_s]
    basis = f"t >= {floor_s:g} s"
    if len(above) < 3:
        above = pairs[-3:]
        basis = f"last {len(above)}"
    if len(above) < 2:
        return None, None, "too few points"
    if drop:
        basis += f"; after a drop: {drop}"
    x = np.log([n for n, _ in above])
    y = np.log([t for _, t in above])
    slope = float(np.polyfit(x, y, 1)[0])
    return slope, int(above[0][0]), basis


def sweep(model: Model, limit: float, sizes, budget: float, log, prior: dict | None = None) -> dict:
    """Double the size until the wall; per size ``lo.solve`` and the references, each in a child.

    ``prior``: the model's row of an earlier run (stopped on its budget, or re-measured from
    its wall); its finished points are kept, the sweep goes on from its wall size, and a
    reference it dropped stays dropped.
    """
    timeout = 2 * limit + 120
    points, wall, dropped = [], None, {}
    if prior is not None:
        points = [p for p in prior["points"] if p["state"] == "finished"]
        sizes = [n for n in sizes if n > max((p["size"] for p in points), default=0)]
        for p in points:
            for ref, r in p.get("references", {}).items():
                if ref not in dropped and (r.get("state") != "ran" or r.get("seconds", 0) > limit):
                    dropped[ref] = r.get("cause") if r.get("state") == "skipped" else f"over the limit from {p['size']:,}"
    if prior is not None and not sizes:
        return prior  # it had reached the sweep's largest size: nothing left to run
    spent = time.perf_counter()
    for n in sizes:
        if time.perf_counter() - spent > budget:
            wall = {"size": n, "cause": f"not run: the model's sweep budget of {budget:.0f} s was spent",
                    "state": "budget"}
            break
        row = run_child(model.key, n, "solve", limit, timeout)
        refs = {}
        if row["state"] == "finished":
            for ref in model.references:
                if ref in dropped:
                    refs[ref] = {"state": "skipped", "cause": dropped[ref]}
                    continue
                r = run_child(model.key, n, ref, limit, limit + 120)  # past the limit it is dropped anyway
                refs[ref] = r
                if r["state"] != "ran" or r["seconds"] > limit:  # not run again at larger sizes
                    dropped[ref] = f"over the limit from {n:,}"
        row["references"] = refs
        points.append(row)
        log(_line(model, row))
        if row["state"] != "finished":
            wall = {"size": n, "state": row["state"], "cause": _cause(row)}
            break
    else:
        wall = {"size": None, "state": "cap", "cause": f"none up to the sweep's largest size {sizes[-1]:,}"}
    done = [p for p in points if p["state"] == "finished"]
    slope, floor, basis = fit_exponent([p["size"] for p in done], [p["seconds"] for p in done])
    return {"key": model.key, "method": model.method, "options": model.options, "axis": model.axis, "limit_s": limit,
            "group": model.group, "note": model.note, "references": list(model.references), "points": points,
            "wall": wall, "exponent": slope, "floor": floor, "fit_basis": basis}


def _cause(row: dict) -> str:
    if row["state"] == "wall":
        gap = row.get("gap")
        gap_text = "n/a" if gap is None else f"{100 * gap:.3g}%"
        if row.get("status") == "time_limit":
            return f"time limit: incumbent returned, gap {gap_text}"
        return f"status {row.get('status')} after {row.get('seconds', 0):.1f} s"
    return row.get("cause", row["state"])


def _line(model: Model, row: dict) -> str:
    text = f"{model.key:18} n={row['size']:>8,}  {row['state']:14}"
    if "seconds" in row:
        text += f" {row['seconds']:9.4f} s  {row.get('status', '')}"
        if row.get("gap"):
            text += f" gap {row['gap']:.3g}"
    else:
        text += f" {row.get('cause', '')[:90]}"
    for ref, r in row.get("references", {}).items():
        text += f"  | {ref} " + (f"{r['seconds']:.4f} s" if r.get("state") == "ran" else r.get("state", "?"))
    return text


def doubling(start: int, cap: int) -> list[int]:
    sizes, n = [], start
    while n <= cap:
        sizes.append(n)
        n *= 2
    return sizes


# ----------------------------------------------------------------- reports
def _s(x) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def ratios(point: dict) -> dict:
    """``lo.solve`` time / reference time per reference that ran at ``point``."""
    out = {}
    for ref, r in point.get("references", {}).items():
        if r.get("state") == "ran" and r.get("seconds"):
            out[ref] = point["seconds"] / r["seconds"]
    return out


def last_ratios(points: list[dict]) -> dict:
    """Per reference, ``(size, lo.solve / reference)`` at the largest size where both ran."""
    out = {}
    for p in points:
        for ref, value in ratios(p).items():
            out[ref] = (p["size"], value)
    return out


def recorded(report: dict) -> list[str]:
    """Lines comparing our measurements with Gavel's and POP's published times."""
    lines = []
    for key in ("maxmin_frac", "maxmin_frac_caps"):
        row = report["models"].get(key)
        if not row:
            continue
        at = {p["size"]: p for p in row["points"] if p["state"] == "finished"}
        if GAVEL_WATERFILL[0] in at:
            t = at[GAVEL_WATERFILL[0]]["seconds"]
            lp = at[GAVEL_WATERFILL[0]]["references"].get("maxmin-lp", {}).get("seconds")
            lines.append(f"- `{key}` at 1,024 jobs: {_s(t)} s, {GAVEL_WATERFILL[1] / t:.0f}x faster than Gavel's "
                         f"recorded water-filling ({GAVEL_WATERFILL[1]} s); the hand-written single max-min LP "
                         f"{_s(lp)} s against Gavel's recorded {GAVEL_LP[1]}-{GAVEL_LP[2]} s.")
        if POP[0] in at:
            t = at[POP[0]]["seconds"]
            lines.append(f"- `{key}` at 2,048 jobs, unpartitioned: {_s(t)} s against POP's recorded {POP[1]:.0f} s "
                         f"whole and {POP[2]} s with 8 random sub-problems.")
    return lines


def row_limits(report: dict) -> list[float]:
    """The distinct per-solve limits of the report's rows, most used first (a merged report may mix them)."""
    counts: dict[float, int] = {}
    for row in report["models"].values():
        lim = float(row.get("limit_s", report["limit_s"]))
        counts[lim] = counts.get(lim, 0) + 1
    return sorted(counts, key=lambda lim: (-counts[lim], -lim)) or [float(report["limit_s"])]


def markdown(report: dict) -> str:
    """The report as Markdown: one summary row per model, the recorded peers, then every point."""
    limits = row_limits(report)
    limit = limits[0]
    others = ", ".join(f"{x:g} s" for x in limits[1:])
    scope = f"; {others} where the row says so" if others else ""
    head = ("| model | method (options) | size axis | sizes finishing | time at largest (s) | status at largest | "
            "exponent (fit from) | wall (first size over the limit) and cause | lo.solve / reference at the largest size both ran |")
    lines = [f"# Scaling of every model (limit {limit:g} s per solve{scope})", "",
             f"Machine: {report['machine']['cpu_count']} cores, shared with other work; Python "
             f"{report['machine']['python']}, highspy {report['machine'].get('highspy')}, ortools "
             f"{report['machine'].get('ortools')}.  Times: median of 3 runs under {REPEAT_BELOW_S:g} s, else one run.",
             "", head, "|" + "---|" * 9]
    for key, row in report["models"].items():
        done = [p for p in row["points"] if p["state"] == "finished"]
        last = done[-1] if done else None
        span = f"{done[0]['size']:,} .. {last['size']:,}" if done else "none"
        options = ", ".join(f"{k}={v}" for k, v in row["options"].items())
        method = f"`{row['method']}`" + (f" ({options})" if options else "")
        exp = (f"n/a ({row['fit_basis']})" if row["exponent"] is None
               else f"{row['exponent']:.2f} (n >= {row['floor']:,}, {row['fit_basis']})")
        wall = row["wall"]
        wall_text = (f"{wall['size']:,}: " if wall.get("size") else "") + wall["cause"].replace("|", "/")
        wall_text += f" (limit {row.get('limit_s', limit):g} s)"
        ratio_text = ", ".join(f"{v:.2g}x {ref} (n={at:,})" for ref, (at, v) in last_ratios(done).items())
        ratio_text = ratio_text or ("no reference" if not row["references"] else "reference did not run")
        status = last.get("status", "") if last else ""
        lines.append(f"| {key} | {method} | {row['axis']} | {span} | {_s(last['seconds']) if last else 'n/a'} | "
                     f"{status} | {exp} | {wall_text} | {ratio_text} |")
    rec = recorded(report)
    if rec:
        lines += ["", "Recorded peers (published numbers, not re-run):", *rec]
    lines += ["", "## Every point", "", "| model | size | edges | state | status | lo.solve (s) | gap | references (s) |",
              "|---|---|---|---|---|---|---|---|"]
    for key, row in report["models"].items():
        for p in row["points"]:
            refs = ", ".join(f"{k} {_s(r.get('seconds'))}" for k, r in p.get("references", {}).items()) or ""
            gap = p.get("gap")
            lines.append(f"| {key} | {p['size']:,} | {p.get('edges', '')} | {p['state']} | {p.get('status', '')} | "
                         f"{_s(p.get('seconds'))} | {'' if gap is None else f'{gap:.3g}'} | {refs} |")
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> None:
    """Log-log time against size, one panel per group, the limit drawn; written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from laissez_opt.io.jsonfile import write_atomic

    groups = ["exact", "multi-round", "heuristics"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 7), sharey=True)
    for ax, group in zip(axes, groups):
        rows = [row for row in report["models"].values() if row["group"] == group]
        for i, row in enumerate(rows):  # ten colours, then the marker and line style tell rows apart
            done = [p for p in row["points"] if p["state"] == "finished"]
            if not done:
                continue
            key = row["key"]
            label = key if row["exponent"] is None else f"{key} (n^{row['exponent']:.2f})"
            ax.loglog([p["size"] for p in done], [p["seconds"] for p in done], color=f"C{i % 10}",
                      marker="osD^v"[i // 10 % 5], linestyle=("-", "--", ":")[i // 10 % 3], label=label)
        for lim in {float(r.get("limit_s", report["limit_s"])) for r in report["models"].values() if r["group"] == group}:
            ax.axhline(lim, color="grey", linestyle="--", linewidth=1)
        ax.set_title(group)
        ax.set_xlabel("size (see the table for each model's axis)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)  # below: no line hidden
    axes[0].set_ylabel("lo.solve wall time (s)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buf.getvalue())


# ----------------------------------------------------------------- main
def parse_limits(text: str, error=None) -> dict[str, float]:
    """``"migration=30,maxmin_int=30"`` -> ``{"migration": 30.0, "maxmin_int": 30.0}`` (keys checked)."""
    out = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, _, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if key not in MODELS or not seconds > 0:
            message = f"bad --limits entry {item!r}: want MODEL=SECONDS with a known model and SECONDS > 0"
            if error is None:
                raise ValueError(message)
            error(message)
        out[key] = seconds
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated model keys (default: all)")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per solve; the wall (default 60)")
    parser.add_argument("--quick", action="store_true", help="three tiny sizes per model, 10 s limit")
    parser.add_argument("--limits", default="",
                        help="per-model limits overriding --limit, e.g. migration=30,maxmin_int=30")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds of sweep per model before stopping")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--merge", action="store_true", help="keep the other models of an existing report")
    parser.add_argument("--from-wall", action="store_true",
                        help="with --merge: re-run each named model from its wall size on (after a change that "
                             "moves the wall), its finished points kept")
    parser.add_argument("--resume", action="store_true",
                        help="with --merge: a model whose sweep stopped on its budget goes on from there")
    parser.add_argument("--combine", default="", help="comma-separated JSON reports: merge their models, write, run nothing")
    parser.add_argument("--point", nargs=3, metavar=("MODEL", "N", "WHICH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.limit <= 0 or args.budget <= 0:
        parser.error("--limit and --budget must be positive")
    if args.resume and not args.merge:
        parser.error("--resume needs --merge")
    if args.from_wall and not args.merge:
        parser.error("--from-wall needs --merge")
    if args.point:
        key, n, which = args.point
        if key not in MODELS or (which != "solve" and which not in REFERENCES):
            parser.error(f"unknown model or reference: {key} {which}")
        print(json.dumps(run_point(key, int(n), which, args.limit)))
        return 0
    if args.combine:
        parts = [json.loads(Path(p).read_text()) for p in args.combine.split(",") if p]
        report = {**parts[0], "models": {}}
        for part in parts:
            report["models"].update(part["models"])
            report["limit_s"] = max(report["limit_s"], part["limit_s"])
        return write_all(report, args.out)
    keys = [k for k in args.models.split(",") if k] or list(MODELS)
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    limit = min(args.limit, 10.0) if args.quick else args.limit
    overrides = parse_limits(args.limits, parser.error)
    missing = check_coverage()
    if missing:
        print(f"warning: registered methods not covered: {missing}")
    report = {"limit_s": limit, "quick": args.quick, "floor_s": FLOOR_S,
              "machine": machine("highspy", "ortools", "numpy", "scipy"), "models": {}}
    json_path = args.out / "scaling_models.json"
    if args.merge and json_path.exists():
        report["models"] = json.loads(json_path.read_text())["models"]
    for key in keys:
        model = MODELS[key]
        sizes = list(model.quick) if args.quick else doubling(model.start, model.cap)
        prior = report["models"].get(key) if args.resume or args.from_wall else None
        own = min(overrides.get(key, limit), limit) if args.quick else overrides.get(key, limit)
        if prior is not None and args.from_wall and prior.get("limit_s") != own:
            parser.error(f"--from-wall: {key} was measured with a {prior.get('limit_s')} s limit, not {own}")
        if prior is not None and not args.from_wall and (prior["wall"].get("state") != "budget"
                                                         or prior.get("limit_s") != own):
            print(f"{key}: kept as it is (its sweep did not stop on its budget at this limit)")
            continue
        report["models"][key] = sweep(model, own, sizes, args.budget, print, prior)
        report["models"] = {k: report["models"][k] for k in MODELS if k in report["models"]}
        write_report(json_path, json.dumps(report, indent=1) + "\n")  # after every model: a partial report survives
    return write_all(report, args.out)


def refit(report: dict) -> None:
    """Recompute every row's exponent, floor and basis from its finished points (in place).

    Reports merged from runs of an older version of this script get the current fit.
    """
    floor_s = report.get("floor_s", FLOOR_S)
    for row in report["models"].values():
        done = [p for p in row["points"] if p["state"] == "finished"]
        row["exponent"], row["floor"], row["fit_basis"] = fit_exponent(
            [p["size"] for p in done], [p["seconds"] for p in done], floor_s)


def write_all(report: dict, out: Path) -> int:
    """Write the JSON report, its Markdown table and the plot to ``out``, each atomically."""
    report["models"] = {k: report["models"][k] for k in MODELS if k in report["models"]}
    refit(report)
    write_report(out / "scaling_models.json", json.dumps(report, indent=1) + "\n")
    text = markdown(report)
    write_report(out / "scaling_models.md", text)
    plot(report, out / "scaling_models.png")
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
