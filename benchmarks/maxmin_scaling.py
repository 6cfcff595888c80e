"""Exact fractional leximin (``maxmin``) on the ``gavel`` family: every LP timed.

For each size (jobs on three accelerator types, ``generate("gavel", N, 3)``,
seed 0: the issue's instance at 1,024 jobs) the script times the whole exact
leximin, the fractional maxmin with the equal-share normaliser (``phi_i``):

* ``highs-dual``: the default, one highspy model kept across the LPs,
  freezing by the dual certificate;
* ``highs-probe``: the same, freezing by probe LPs instead of duals;
* ``ortools-glop``: OR-Tools GLOP, the declaration lowered afresh per LP
  (probes; skipped above ``--ortools-max`` jobs);

(on the ``:caps`` sizes only ``highs-dual`` and ``lo.solve`` run, unless ``--all``: the
probe routes need hundreds of LPs there)
* ``lo.solve``: the public entry point end to end (declaration, every LP,
  the result, the independent verification and the metrics), default route.

Per route it reports the number of LPs (levels and probes), the time inside the
solver (sum of the LP runs, and the slowest single LP) against the route's total
wall time, and the number of levels.  Each time is the minimum over ``--repeat``
runs, after one warm-up solve that pays the imports (reported separately as the
first call).  All routes must agree on every agent's leximin value (relative
``1e-6``); the script says so and exits with status 1 otherwise.

The ``gavel`` default pools (at most 8 GPUs each, so 18 GPUs at seed 0 for
1,024 jobs) never let a demand cap bind: the leximin is a single level.  The
``:caps`` sizes use ``max_count`` = jobs (pools of up to N GPUs), where caps
bind and the leximin has dozens of levels: the harder case.

    python benchmarks/maxmin_scaling.py                 # 1024, 2048, 4096, 8192, 1024:caps, 4096:caps
    python benchmarks/maxmin_scaling.py --quick         # 1024 and 1024:caps, one run each
    python benchmarks/maxmin_scaling.py --sizes 1024,2048:caps --repeat 5 --out maxmin-results

Writes ``maxmin_scaling.json`` and ``maxmin_scaling.md`` to ``--out`` (default
``benchmarks/results``), each through a temporary file and ``os.replace``.

``--integral`` runs the integral leximin with general demands instead
(``lo.solve(inst, "maxmin", time_limit=T)``, the ``first_level`` route above 32
jobs): ``gavel`` with ``max_count`` = jobs (Gavel's demands 1/2/4/8, about 2
GPUs per job) and ``neocloud`` with ``max_demand=4`` and ``max_count`` = jobs/2
(about one device per job: whole devices decide), at 64, 256 and 1,000 jobs, one
run each (``--quick``: 64 jobs, 10 s).  It reports status, the incumbent's
smallest value, the bound and the gap, the start and the MILP's status, and
writes ``maxmin_integral.{json,md}``:

    python benchmarks/maxmin_scaling.py --integral               # 64, 256, 1000 jobs, 60 s limit
    python benchmarks/maxmin_scaling.py --integral --quick       # 64 jobs, 10 s limit
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from _common import write_report  # noqa: E402

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "1024,2048,4096,8192,1024:caps,4096:caps"
QUICK_SIZES = "1024,1024:caps"
TARGET_S = 1.0
TARGET_JOBS = 1024
RTOL = 1e-6


def parse_sizes(text: str) -> list[tuple[int, bool]]:
    sizes = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        jobs, _, kind = part.partition(":")
        if kind not in ("", "caps") or not jobs.isdigit() or int(jobs) < 1:
            raise SystemExit(f"bad size {part!r}: expected JOBS or JOBS:caps")
        sizes.append((int(jobs), kind == "caps"))
    return sizes


def make_instance(jobs: int, caps: bool):
    import laissez_opt as lo

    params = {"max_count": jobs} if caps else {}
    return lo.generate("gavel", jobs, 3, seed=0, **params)


def run_route(inst, route: str) -> dict:
    import laissez_opt as lo
    from laissez_opt.exact.maxmin import solve_maxmin

    start = time.perf_counter()
    if route == "lo.solve":
        r = lo.solve(inst, "maxmin", fractional=True)
    elif route == "highs-dual":
        r = solve_maxmin(inst, fractional=True, freeze="dual")
    elif route == "highs-probe":
        r = solve_maxmin(inst, fractional=True, freeze="probe")
    elif route == "ortools-glop":
        r = solve_maxmin(inst, fractional=True, solver="ortools")
    else:
        raise ValueError(route)
    total = time.perf_counter() - start
    d = r.details
    return {
        "status": r.status,
        "total": total,
        "solver": float(d["solver_s"]),
        "slowest_lp": max(d["solve_times"], default=0.0),
        "lp_times": [float(t) for t in d["solve_times"]],
        "build": float(r.timing.get("build_s", 0.0)),
        "lps": int(d["solves"]),
        "probes": int(d["probes"]),
        "levels": len(d["levels"]),
        "objective": r.objective,
        "leximin": np.array([d["leximin"][a.id] for a in inst.agents]),
    }


def best_of(inst, route: str, repeat: int) -> dict:
    runs = [run_route(inst, route) for _ in range(repeat)]
    best = min(runs, key=lambda row: row["total"])
    best["runs"] = len(runs)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help=f"comma-separated JOBS or JOBS:caps (default {DEFAULT_SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, one run each")
    parser.add_argument("--repeat", type=int, default=3, help="runs per route; the minimum is reported")
    parser.add_argument("--ortools-max", type=int, default=2048, help="largest job count for the OR-Tools route")
    parser.add_argument("--all", action="store_true", help="also the probe and OR-Tools routes on the :caps sizes (slow)")
    parser.add_argument("--out", default=str(HERE / "results"), help="directory for the JSON and Markdown reports")
    parser.add_argument("--integral", action="store_true",
                        help="integral leximin with general demands (gavel max_count=N, neocloud dense)")
    parser.add_argument("--time-limit", type=float, default=None, help="--integral: seconds per solve (default 60)")
    args = parser.parse_args(argv)
    if args.integral:
        return integral_main(args)
    sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    repeat = 1 if args.quick else max(1, args.repeat)

    t0 = time.perf_counter()
    import laissez_opt as lo  # noqa: F401  (the import is part of the first call)

    first_inst = make_instance(TARGET_JOBS, False)
    first = run_route(first_inst, "lo.solve")
    first_call = {"jobs": TARGET_JOBS, "import_and_solve_s": time.perf_counter() - t0, "solve_s": first["total"]}
    print(f"first call in this process (import + lo.solve, gavel {TARGET_JOBS}x3): "
          f"{first_call['import_and_solve_s']:.3f} s, of which lo.solve {first_call['solve_s']:.3f} s")

    report = {"benchmark": "maxmin_scaling", "target_s": TARGET_S, "target_jobs": TARGET_JOBS, "repeat": repeat,
              "first_call": first_call, "machine": machine(), "sizes": []}
    agree_all = True
    header = f"{'size':>10} {'route':>13} {'LPs':>4} {'probes':>6} {'levels':>6} {'solver s':>9} {'slowest LP':>10} {'total s':>8} {'in solver':>9}"
    print(header)
    for jobs, caps in sizes:
        inst = make_instance(jobs, caps)
        label = f"{jobs}" + (":caps" if caps else "")
        routes = ["highs-dual", "lo.solve"]
        if args.all or not caps:
            routes.insert(1, "highs-probe")
            if args.all or jobs <= args.ortools_max:
                routes.append("ortools-glop")
        rows = {}
        for route in routes:
            rows[route] = best_of(inst, route, repeat if route != "ortools-glop" else 1)
        reference = rows["highs-dual"]["leximin"]
        agree = all(np.allclose(row["leximin"], reference, rtol=RTOL, atol=1e-9) for row in rows.values())
        agree_all &= agree
        entry = {"size": label, "jobs": jobs, "caps_bind": caps, "devices": int(inst.counts.sum()),
                 "edges": inst.n_edges, "routes_agree": agree, "routes": {}}
        for route, row in rows.items():
            share = row["solver"] / row["total"] if row["total"] > 0 else 0.0
            print(f"{label:>10} {route:>13} {row['lps']:>4} {row['probes']:>6} {row['levels']:>6} "
                  f"{row['solver']:>9.3f} {row['slowest_lp']:>10.3f} {row['total']:>8.3f} {share:>8.0%}")
            entry["routes"][route] = {k: v for k, v in row.items() if k != "leximin"}
        entry["target_met"] = (jobs != TARGET_JOBS or caps) or rows["lo.solve"]["total"] < TARGET_S
        report["sizes"].append(entry)
    report["routes_agree"] = agree_all
    print(f"routes agree on every size: {'yes' if agree_all else 'NO'}")
    target = [s for s in report["sizes"] if s["jobs"] == TARGET_JOBS and not s["caps_bind"]]
    if target:
        total = target[0]["routes"]["lo.solve"]["total"]
        print(f"target: gavel {TARGET_JOBS}x3 whole leximin in {total:.3f} s (lo.solve, warm) < {TARGET_S} s: "
              f"{'met' if total < TARGET_S else 'NOT met'}")
    out = Path(args.out)
    write_report(out / "maxmin_scaling.json", json.dumps(report, indent=2) + "\n")
    write_report(out / "maxmin_scaling.md", markdown(report))
    return 0 if agree_all else 1


INTEGRAL_SIZES = "64,256,1000"


def integral_instance(family: str, jobs: int):
    import laissez_opt as lo

    if family == "gavel":
        return lo.generate("gavel", jobs, 3, seed=0, max_count=jobs)
    return lo.generate("neocloud", jobs, 4, seed=0, max_demand=4, max_count=max(1, jobs // 2))


def integral_main(args) -> int:
    """Integral leximin, general demands: status, incumbent, bound and gap per workload and size."""
    import laissez_opt as lo

    sizes = [int(s) for s in (args.sizes or ("64" if args.quick else INTEGRAL_SIZES)).split(",") if s.strip()]
    limit = args.time_limit if args.time_limit is not None else (10.0 if args.quick else 60.0)
    report = {"benchmark": "maxmin_integral", "time_limit": limit, "machine": machine(), "rows": []}
    print(f"{'workload':>9} {'jobs':>5} {'route':>16} {'devices':>7} {'status':>10} {'smallest':>9} {'bound':>9} {'gap':>8} "
          f"{'start':>9} {'MILP':>10} {'total s':>8}")
    honest = True
    repeat = 1 if args.quick else max(1, args.repeat)
    report["repeat"] = repeat
    runs = [(family, jobs, "auto") for family in ("gavel", "neocloud") for jobs in sizes]
    if not args.quick:  # the reference: the ordered-outcome MILPs, same instances, same limit, one run
        runs += [(family, jobs, "ordered_outcomes") for family in ("gavel", "neocloud") for jobs in sizes
                 if jobs <= 64]
    for family, jobs, levels in runs:
            inst = integral_instance(family, jobs)
            times = []
            for _ in range(repeat if levels == "auto" else 1):
                t0 = time.perf_counter()
                r = lo.solve(inst, "maxmin", time_limit=limit, levels=levels)
                times.append(time.perf_counter() - t0)
            total = float(np.median(times))
            d = r.details
            row = {"workload": family, "jobs": jobs, "devices": int(inst.counts.sum()), "status": r.status,
                   "objective": r.objective, "bound": r.bound, "gap": r.gap, "total_s": total, "runs": len(times),
                   "levels_option": levels,
                   "route": d.get("levels_route", "ordered_outcomes"), "start_level": d.get("start_level"),
                   "start": d.get("start"), "milp_status": d.get("milp_status"),
                   "fractional_first_level": d.get("fractional_first_level"),
                   "device_count_bound": d.get("device_count_bound"), "cover_bound": d.get("cover_bound"),
                   "symmetry_rows": d.get("symmetry_rows"), "message": r.message}
            # Honest: a bound never below the incumbent, never "optimal" from the first-level route.
            honest &= r.bound is None or r.bound >= r.objective - 1e-9 * max(1.0, abs(r.objective))
            honest &= not (row["route"] == "first_level" and r.status == "optimal" and d.get("start_level") is not None)
            report["rows"].append(row)
            gap = "n/a" if r.gap is None else f"{r.gap:.2%}"
            start = "-" if row["start_level"] is None else f"{row['start_level']:.4f}"
            print(f"{family:>9} {jobs:>5} {row['route']:>16} {row['devices']:>7} {r.status:>10} {r.objective:>9.4f} "
                  f"{(r.bound if r.bound is not None else float('nan')):>9.4f} {gap:>8} {start:>9} "
                  f"{str(row['milp_status']):>10} {total:>8.2f}")
    report["honest"] = honest
    out = Path(args.out)
    write_report(out / "maxmin_integral.json", json.dumps(report, indent=2) + "\n")
    lines = ["# maxmin_integral: integral leximin, general demands", "",
             f"`lo.solve(inst, \"maxmin\", time_limit={limit:g})`; `total s` the median of {repeat} run(s) "
             "(the ordered-outcome reference: one run); gap relative to the bound.", "",
             "| workload | jobs | route | devices | status | smallest value | bound | gap | start | MILP | total s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in report["rows"]:
        gap = "n/a" if row["gap"] is None else f"{row['gap']:.2%}"
        start = "-" if row["start_level"] is None else f"{row['start_level']:.4f}"
        bound = "-" if row["bound"] is None else f"{row['bound']:.4f}"
        lines.append(f"| {row['workload']} | {row['jobs']} | {row['route']} | {row['devices']} | {row['status']} | "
                     f"{row['objective']:.4f} | {bound} | {gap} | {start} | {row['milp_status']} | "
                     f"{row['total_s']:.2f} |")
    lines += ["", f"Machine: {report['machine']}.", ""]
    write_report(out / "maxmin_integral.md", "\n".join(lines))
    print(f"bounds honest on every row: {'yes' if honest else 'NO'}")
    return 0 if honest else 1


def machine() -> dict:
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "highspy": version("highspy"), "ortools": version("ortools"), "numpy": version("numpy")}


def markdown(report: dict) -> str:
    lines = [
        "# maxmin_scaling: exact fractional leximin on gavel (N jobs x 3 GPU types)",
        "",
        f"Minimum over {report['repeat']} run(s) per route; times in seconds. `in solver` is the time inside",
        "HiGHS / GLOP (sum over LPs) as a share of the route's total wall time.",
        f"First call in a fresh process (import + `lo.solve`, {report['first_call']['jobs']} jobs): "
        f"{report['first_call']['import_and_solve_s']:.3f} s, of which `lo.solve` {report['first_call']['solve_s']:.3f} s.",
        "",
        "| size | devices | route | LPs | probes | levels | solver | slowest LP | total | in solver |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for size in report["sizes"]:
        for route, row in size["routes"].items():
            share = row["solver"] / row["total"] if row["total"] > 0 else 0.0
            lines.append(
                f"| {size['size']} | {size['devices']} | {route} | {row['lps']} | {row['probes']} | {row['levels']} | "
                f"{row['solver']:.3f} | {row['slowest_lp']:.3f} | {row['total']:.3f} | {share:.0%} |"
            )
    lines += ["", f"Routes agree on every size: {'yes' if report['routes_agree'] else 'NO'}.",
              f"Machine: {report['machine']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
