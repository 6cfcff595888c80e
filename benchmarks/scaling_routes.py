"""The default route of ``welfare`` and ``vcg`` (``solver="auto"``) against the routes it chooses between.

Cases:

* ``welfare 1000x2000:assignment``: family ``uniform`` with density 1, one device
  per pool and demand 1 (a 2-million-column assignment LP), the model of
  ``benchmarks/welfare_scaling.py``; routes: HiGHS with its default options (the
  default route before ``auto``), HiGHS with presolve off, OR-Tools min-cost flow,
  and ``auto`` (what ``lo.solve(inst, "welfare")`` runs now), each through
  ``solve_welfare`` (declaration, solve, result);
* ``vcg neocloud N``: family ``neocloud`` with ``max(4, N // 10)`` pools, seed 1, at
  ``--vcg`` agents; routes ``solver="highs"`` (the default before ``auto``) and
  ``auto``.

Times are medians over ``--repeat`` runs with the routes alternating within each
repetition (a case whose first repetition takes longer than ``--long`` seconds runs once) (the machine may be shared: compare ratios within one run).  All
routes of a case must agree on the objective (relative 1e-7), else exit status 1.

    python benchmarks/scaling_routes.py                          # both cases, 3 repetitions
    python benchmarks/scaling_routes.py --vcg 1000 --no-assignment --repeat 1 --out scratch-results

Writes ``scaling_routes.json`` and ``scaling_routes.md`` to ``--out`` (default
``benchmarks/results``), atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent


def assignment_case():
    from laissez_opt.exact.welfare import build_welfare, solve_welfare
    from laissez_opt.exact.common import allocation_result
    from laissez_opt.generate import generate
    from laissez_opt.io import instance_from_dict
    from laissez_opt.modeling.highs_route import solve_highs

    data = generate("uniform", 1000, 2000, seed=0, density=1.0, max_count=1, max_demand=1)
    for agent in data["agents"]:
        agent["demand"] = 1
    inst = instance_from_dict(data, "uniform 1000x2000 assignment")

    def highs_with(options):
        def run():
            model, columns = build_welfare(inst)
            solution = solve_highs(model, highs_options=options)
            return allocation_result(inst, "welfare", columns, solution, fractional=False, params={})
        return run

    routes = {
        "HiGHS, default options (the default before auto)": highs_with({}),
        "HiGHS, presolve off": highs_with({"presolve": "off"}),
        "OR-Tools min-cost flow": lambda: solve_welfare(inst, solver="ortools"),
        "auto (the default now)": lambda: solve_welfare(inst),
    }
    return "welfare 1000x2000:assignment", inst, routes


def vcg_case(agents: int):
    import laissez_opt as lo
    from laissez_opt.exact.vcg import solve_vcg

    inst = lo.generate("neocloud", agents, max(4, agents // 10), seed=1)
    routes = {
        "HiGHS (the default before auto)": lambda: solve_vcg(inst, solver="highs"),
        "auto (the default now)": lambda: solve_vcg(inst),
    }
    return f"vcg neocloud {agents}", inst, routes


def measure(name, inst, routes, repeat: int, long_s: float) -> dict:
    times = {k: [] for k in routes}
    last = {}
    for rep in range(repeat):
        for key, run in routes.items():
            start = time.perf_counter()
            last[key] = run()
            times[key].append(time.perf_counter() - start)
        if rep == 0 and sum(t[0] for t in times.values()) > long_s:
            break  # a slow case runs once (its row says so)
    objectives = [r.objective for r in last.values()]
    agree = max(objectives) - min(objectives) <= 1e-7 * max(1.0, abs(max(objectives)))
    rows = []
    base = statistics.median(next(iter(times.values())))
    for key, result in last.items():
        med = statistics.median(times[key])
        rows.append({"route": key, "median_s": med, "runs": times[key], "ratio_to_first": med / base,
                     "status": result.status, "objective": result.objective, "solver_route": result.route,
                     "route_choice": result.details.get("route_choice")})
        print(f"{name:30s} {key:50s} {med:8.2f} s  x{med / base:5.2f}  {result.status}  {result.route}", flush=True)
    return {"case": name, "agents": inst.n_agents, "pools": inst.n_pools, "edges": inst.n_edges,
            "agree": agree, "rows": rows}


def table(cases: list[dict]) -> str:
    lines = ["| case | route | median (s) | runs | vs first row | status | route that ran |",
             "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    for case in cases:
        for r in case["rows"]:
            lines.append(f"| {case['case']} | {r['route']} | {r['median_s']:.2f} | {len(r['runs'])} | "
                         f"{r['ratio_to_first']:.2f} | {r['status']} | {r['solver_route']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vcg", default="1000,4000", help="neocloud agent counts for vcg")
    parser.add_argument("--no-assignment", action="store_true", help="skip the 1000x2000 assignment case")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long", type=float, default=120.0,
                        help="a case whose first repetition takes longer than this (s) is not repeated")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--quick", action="store_true", help="vcg at 200 agents only, one run")
    args = parser.parse_args(argv)
    if args.quick:
        args.vcg, args.no_assignment, args.repeat = "200", True, 1
    _, _, warm = vcg_case(50)  # imports and first calls of every solver, not measured
    for run in warm.values():
        run()
    import laissez_opt as lo

    tiny = lo.generate("uniform", 50, 20, seed=0)
    for solver in ("highs", "ortools", "auto"):
        lo.solve(tiny, "welfare", solver=solver)
    cases = []
    makers = [] if args.no_assignment else [assignment_case]
    makers += [lambda n=int(n): vcg_case(n) for n in args.vcg.split(",") if n.strip()]
    for make in makers:
        name, inst, routes = make()
        cases.append(measure(name, inst, routes, args.repeat, args.long))
    text = table(cases)
    print()
    print(text)
    out = Path(args.out)
    from importlib import metadata

    machine = {"cpu_count": os.cpu_count(), "highspy": metadata.version("highspy"),
               "ortools": metadata.version("ortools")}
    write_report(out / "scaling_routes.json", json.dumps({"cases": cases, "repeat": args.repeat, "machine": machine},
                                                   indent=2))
    write_report(out / "scaling_routes.md", "# Default route of welfare and vcg\n\n" + text
           + f"\nMedian of {args.repeat} alternating runs; highspy {machine['highspy']}, ortools {machine['ortools']}.\n")
    return 0 if all(c["agree"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
