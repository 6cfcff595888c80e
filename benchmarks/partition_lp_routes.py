"""What one level LP of a partitioned leximin costs, by solver route: the floor under every-level leximin.

Partitioned fractional leximin (``lo.solve(inst, "maxmin", fractional=True,
partitions=K)``) runs, in every part, a sequence of level LPs ``max t`` s.t.
``sum_c a_ic x_ic - t >= 0`` per agent, pool capacities ``k_c / K`` and demands
(``laissez_opt.partition.core.max_t_model``).  This script takes the first parts
of a ``K``-way split of the heterogeneous instance of
``benchmarks/scaling_partition.py`` and times that LP, the first level, cold, under
every route at hand: HiGHS interior point with crossover (the route the parts
take), interior point without crossover, dual simplex, primal simplex and PDLP,
and OR-Tools' GLOP (model built through ``pywraplp``; its build time is reported
apart).  Per route: CPU seconds, microseconds per edge, the status and the
objective's relative difference from the first route's.  The last columns scale
the mean CPU seconds to the whole split (``K`` parts, each one LP): the CPU seconds
of a single pass of level LPs over the instance, against the 120 CPU seconds that
60 s on 2 cores give.  Results go to ``NAME.json`` and ``NAME.md`` in ``--out``.

    python benchmarks/partition_lp_routes.py                                  # 10^6 x 10^3, K = 160, 640
    python benchmarks/partition_lp_routes.py --sizes 100000x1000 --parts 16 --sample-parts 1
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_results  # noqa: E402
from scaling_partition import make_problem  # noqa: E402

from laissez_opt.exact.leximin import value_unit  # noqa: E402
from laissez_opt.partition.core import equal_share_normalizer, max_t_model, part_tasks  # noqa: E402

#: HiGHS option sets, first the route the partitioned leximin's first level takes.
HIGHS_ROUTES = (
    ("HiGHS ipm + crossover", {"solver": "ipm", "run_crossover": "on"}),
    ("HiGHS ipm, no crossover", {"solver": "ipm", "run_crossover": "off"}),
    ("HiGHS dual simplex", {"solver": "simplex", "simplex_strategy": 1}),
    ("HiGHS primal simplex", {"solver": "simplex", "simplex_strategy": 4}),
    ("HiGHS PDLP", {"solver": "pdlp"}),
)
#: CPU seconds of 60 s wall on 2 cores.
BUDGET_CPU_S = 120.0


def _arrays(task: dict):
    edge_agent, edge_pool = task["edge_agent"], task["edge_pool"]
    demands = task["demands"].astype(np.float64)
    capacity = task["capacity"].astype(np.float64)
    coef = task["coef"] * value_unit(task["coef"])
    upper = np.minimum(demands[edge_agent], capacity[edge_pool])
    return edge_agent, edge_pool, coef, capacity, demands, upper


def highs_route(task: dict, options: dict) -> dict:
    edge_agent, edge_pool, coef, capacity, demands, upper = _arrays(task)
    h, _, _ = max_t_model(edge_agent, edge_pool, coef, capacity, demands, upper, np.arange(demands.shape[0]),
                          t_lower=0.0)
    for key, value in options.items():
        h.setOptionValue(key, value)
    cpu = time.process_time()
    h.run()
    cpu = time.process_time() - cpu
    return {"cpu_s": cpu, "build_s": 0.0, "status": h.modelStatusToString(h.getModelStatus()),
            "objective": float(h.getInfo().objective_function_value)}


def glop_route(task: dict) -> dict:
    from ortools.linear_solver import pywraplp

    edge_agent, edge_pool, coef, capacity, demands, upper = _arrays(task)
    cpu = time.process_time()
    solver = pywraplp.Solver.CreateSolver("GLOP")
    x = [solver.NumVar(0.0, float(u), "") for u in upper]
    t = solver.NumVar(0.0, solver.infinity(), "t")
    by_pool = np.argsort(edge_pool, kind="stable")
    bounds = np.searchsorted(edge_pool[by_pool], np.arange(capacity.shape[0] + 1))
    for c in range(capacity.shape[0]):
        members = by_pool[bounds[c]:bounds[c + 1]]
        if members.size:
            solver.Add(solver.Sum([x[e] for e in members]) <= float(capacity[c]))
    by_agent = np.argsort(edge_agent, kind="stable")
    bounds = np.searchsorted(edge_agent[by_agent], np.arange(demands.shape[0] + 1))
    for i in range(demands.shape[0]):
        members = by_agent[bounds[i]:bounds[i + 1]]
        if np.isfinite(demands[i]):
            solver.Add(solver.Sum([x[e] for e in members]) <= float(demands[i]))
        solver.Add(solver.Sum([float(coef[e]) * x[e] for e in members]) - t >= 0.0)
    solver.Maximize(t)
    build = time.process_time() - cpu
    cpu = time.process_time()
    code = solver.Solve()
    cpu = time.process_time() - cpu
    status = {pywraplp.Solver.OPTIMAL: "Optimal"}.get(code, f"code {code}")
    return {"cpu_s": cpu, "build_s": build, "status": status, "objective": float(t.solution_value())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000x1000", help="AGENTSxPOOLS,... (default 1000000x1000)")
    ap.add_argument("--parts", default="160,640", help="comma-separated K (default 160,640)")
    ap.add_argument("--sample-parts", type=int, default=2, help="time the first N parts of each split (default 2)")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--name", default="partition_lp_routes")
    args = ap.parse_args(argv)
    rows = []
    for text in args.sizes.split(","):
        n, m = (int(v) for v in text.lower().split("x"))
        problem = make_problem(n, m)
        ready = problem.for_method("maxmin", equal_share_normalizer(problem))
        for parts in (int(p) for p in args.parts.split(",")):
            tasks, _ = part_tasks(ready, parts, 0, "maxmin", integral=False)
            for task in tasks[:args.sample_parts]:
                runs = [(name, highs_route(task, options)) for name, options in HIGHS_ROUTES]
                runs.append(("OR-Tools GLOP", glop_route(task)))
                reference = runs[0][1]["objective"]
                for name, out in runs:
                    row = {"size": text, "k": parts, "part": task["part"], "agents": int(task["demands"].shape[0]),
                           "edges": int(task["edge_agent"].shape[0]), "route": name, **out,
                           "rel_diff": abs(out["objective"] - reference) / max(abs(reference), 1e-300)}
                    row["us_per_edge"] = 1e6 * out["cpu_s"] / row["edges"]
                    rows.append(row)
                    print(row, flush=True)
    # One pass: K parts, each one LP, by each route (the mean over the sampled parts).
    passes = {}
    for r in rows:
        passes.setdefault((r["size"], r["k"], r["route"]), []).append(r["cpu_s"])
    lines = ["| size | K | part | agents | edges | route | CPU s | us per edge | build s (GLOP) | status | "
             "objective rel. diff |", "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['size']} | {r['k']} | {r['part'] + 1} | {r['agents']} | {r['edges']} | {r['route']} | "
                     f"{r['cpu_s']:.3g} | {r['us_per_edge']:.3g} | {r['build_s']:.3g} | {r['status']} | "
                     f"{r['rel_diff']:.1e} |")
    lines += ["", "| size | K | route | one LP per part, whole split: CPU s | share of 120 CPU s |", "|---|---|---|---|---|"]
    summary = []
    for (size, k, route), cpu in passes.items():
        whole = k * statistics.mean(cpu)
        summary.append({"size": size, "k": k, "route": route, "pass_cpu_s": whole})
        lines.append(f"| {size} | {k} | {route} | {whole:.3g} | {whole / BUDGET_CPU_S:.2f}x |")
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "budget_cpu_s": BUDGET_CPU_S,
            "note": "one cold solve per route and part; CPU seconds of this process"}
    write_results(Path(args.out), args.name, {"meta": meta, "rows": rows, "passes": summary}, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
