"""Themis finish-time fairness (``models.md`` item 4): run time against size.

Workloads (all seeded):

* ``gavel`` (3 GPU types, one pool per type: V100, P100, K80) with two cluster
  sizes: ``scarce`` (the family's default, pool counts uniform on 1..8, far fewer
  devices than jobs) and ``large`` (counts uniform on 1..n/2, about 0.75 n devices);
* ``uniform`` with 10 pool types (density 0.3, counts uniform on 1..ceil(0.15 n),
  about 0.75 n devices; demands null or 1..3);
* ``neocloud`` with 8 pools cycling over its 4 types (A10, L4, H100, Trainium;
  counts uniform on 1..ceil(n/10)).

Generated instances carry no work or elapsed time, so each job gets an ideal
duration ``h_i`` uniform on 1..10 hours (its work ``W_i = h_i X^id_i``, so
``T_id,i = h_i``) and, for half of the jobs chosen at random, an elapsed time
``t_i`` uniform on 0..3 hours (the others 0).

Rows: fractional mode at 1,024 jobs on 3 types (the Gavel-scale policy
computation; each configuration repeated, minimum and median reported), and
integral mode from 100 to 2,000 jobs on 3 to 10 types.  ``solver`` is the time
inside the solvers (the sum over every LP/ILP of the search), ``total`` the
wall time of ``lo.solve`` (data, bidder choice, model building, the search, the
second stage, verification and metrics), ``cpu`` the process CPU time of the
same call (the machine may be shared: CPU time is the steadier figure).

Usage::

    python benchmarks/themis_scaling.py [--quick] [--out DIR] [--repeat K] [--time-limit S]
    python benchmarks/themis_scaling.py --scale [--quick]    # integral at 4,000 to 16,000 jobs, 60 s limit

``--scale`` runs integral mode beyond the sizes it proves quickly (``gavel (large)``
with works and elapsed times, and ``gavel (dense)``: counts uniform on 1..n, no works,
so identical jobs form classes) under a 60 s limit (``--quick``: 2,000 jobs, 10 s), one
run each, and checks that every result carries an incumbent, a bound at most its
``rho`` and a finite gap, ``optimal`` only with the bracket closed; it writes
``DIR/themis_scale.{json,md}``.

Writes ``DIR/themis_scaling.json`` and ``DIR/themis_scaling.md`` (default DIR:
``benchmarks/results``), each through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.exact.themis import ideal_rates
from laissez_opt.instance import Instance

TARGET_S = 0.3  # fractional, 1,024 jobs on 3 types

FRACTIONAL = [("gavel", "scarce", 1024, 3), ("gavel", "large", 1024, 3)]
INTEGRAL = [
    ("gavel", "scarce", 100, 3), ("gavel", "large", 100, 3), ("uniform", "large", 100, 10),
    ("gavel", "scarce", 500, 3), ("gavel", "large", 500, 3), ("uniform", "large", 500, 10),
    ("neocloud", "large", 500, 8),
    ("gavel", "scarce", 1000, 3), ("gavel", "large", 1000, 3), ("uniform", "large", 1000, 10),
    ("neocloud", "large", 1000, 8),
    ("gavel", "scarce", 2000, 3), ("gavel", "large", 2000, 3), ("uniform", "large", 2000, 10),
    ("neocloud", "large", 2000, 8),
]
QUICK_FRACTIONAL = [("gavel", "large", 1024, 3)]
QUICK_INTEGRAL = [("gavel", "scarce", 100, 3), ("gavel", "large", 300, 3), ("uniform", "large", 300, 10)]
ORTOOLS_MAX_INTEGRAL = 500  # OR-Tools (SCIP) rows only up to this many jobs


def workload(family: str, cluster: str, jobs: int, pools: int, seed: int) -> Instance:
    """A generated instance with works and elapsed times (see the module docstring)."""
    if family == "gavel":
        params = {} if cluster == "scarce" else {"max_count": max(1, jobs // 2)}
    elif family == "uniform":
        params = {"max_count": max(1, math.ceil(0.15 * jobs))}
    else:
        params = {"max_count": max(1, math.ceil(jobs / 10))}
    inst = lo.generate(family, jobs, pools, seed=seed, **params)
    rng = np.random.default_rng(seed + 7919)
    hours = rng.uniform(1.0, 10.0, jobs)
    elapsed = np.where(rng.random(jobs) < 0.5, rng.uniform(0.0, 3.0, jobs), 0.0)
    ideal = ideal_rates(inst)
    agents = [
        dataclasses.replace(a, work=float(h * x), elapsed=float(t))
        for a, h, x, t in zip(inst.agents, hours, ideal, elapsed)
    ]
    return Instance(inst.pools, agents, inst.edges, name=f"{family}-{cluster}-n{jobs}-m{pools}-s{seed}",
                    description=inst.description)


def measure(inst: Instance, *, fractional: bool, solver: str, time_limit: float) -> dict:
    cpu = time.process_time()
    wall = time.perf_counter()
    result = lo.solve(inst, "themis", fractional=fractional, solver=solver, time_limit=time_limit)
    total = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    return {
        "status": result.status,
        "rho": result.objective,
        "bound": result.bound,
        "gap": result.gap,
        "bidders": len(result.details["bidders"]),
        "solves": result.details["solves"],
        "solver_s": result.details["solver_s"],
        "total_s": total,
        "cpu_s": cpu,
        "route": result.route,
        "work_conserving": result.details["work_conserving"],
    }


def _warm_up() -> None:
    inst = workload("gavel", "large", 20, 3, 0)
    for solver in ("highs", "ortools"):
        for fractional in (False, True):
            lo.solve(inst, "themis", fractional=fractional, solver=solver)


def run(fractional_rows, integral_rows, *, repeat: int, time_limit: float, seed: int) -> list[dict]:
    _warm_up()
    rows = []
    for family, cluster, jobs, pools in fractional_rows:
        inst = workload(family, cluster, jobs, pools, seed)
        for solver in ("highs", "ortools"):
            runs = [measure(inst, fractional=True, solver=solver, time_limit=time_limit) for _ in range(repeat)]
            row = dict(runs[0])
            for key in ("solver_s", "total_s", "cpu_s"):
                row[key] = min(r[key] for r in runs)
                row[key + "_median"] = statistics.median(r[key] for r in runs)
            row.update(mode="fractional", family=family, cluster=cluster, jobs=jobs, pools=pools,
                       devices=int(inst.counts.sum()), solver=solver, repeat=repeat)
            rows.append(row)
            _print(row)
    for family, cluster, jobs, pools in integral_rows:
        inst = workload(family, cluster, jobs, pools, seed)
        solvers = ("highs", "ortools") if jobs <= ORTOOLS_MAX_INTEGRAL else ("highs",)
        for solver in solvers:
            row = measure(inst, fractional=False, solver=solver, time_limit=time_limit)
            row.update(mode="integral", family=family, cluster=cluster, jobs=jobs, pools=pools,
                       devices=int(inst.counts.sum()), solver=solver, repeat=1)
            rows.append(row)
            _print(row)
    return rows


HEADER = ("| mode | family | jobs | pools | devices | bidders | solver | status | rho | gap | solves "
          "| solver s | total s | cpu s |")


def _line(row: dict) -> str:
    return (f"| {row['mode']} | {row['family']} ({row['cluster']}) | {row['jobs']} | {row['pools']} "
            f"| {row['devices']} | {row['bidders']} | {row['solver']} | {row['status']} | {row['rho']:.6g} "
            f"| {row['gap']:.1e} | {row['solves']} | {row['solver_s']:.3f} | {row['total_s']:.3f} "
            f"| {row['cpu_s']:.3f} |")


def _print(row: dict) -> None:
    print(_line(row), flush=True)


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Themis scaling",
        "",
        f"Seed {meta['seed']}, time limit {meta['time_limit']} s per solve call, fractional rows best of "
        f"{meta['repeat']}; {meta['machine']}; load average (1/5/15 min) {meta['load_average']['before']} "
        f"before, {meta['load_average']['after']} after.",
        "`solver s`: time inside the LP/ILP solvers; `total s`: wall time of `lo.solve`; `cpu s`: its CPU time.",
        "",
        HEADER,
        "| --- " * 14 + "|",
    ]
    lines += [_line(r) for r in rows]
    target = [r for r in rows if r["mode"] == "fractional" and r["solver"] == "highs" and r["jobs"] == 1024]
    if target:
        lines += ["", f"Fractional, 1,024 jobs on 3 types, HiGHS: total "
                      + ", ".join(f"{r['cluster']} {r['total_s']:.3f} s (median {r['total_s_median']:.3f} s, "
                                  f"CPU {r['cpu_s']:.3f} s)" for r in target)
                      + f"; target {TARGET_S} s."]
    return "\n".join(lines) + "\n"


SCALE_SIZES = (4000, 8000, 16000)


def scale_main(args) -> int:
    """Integral Themis under a time limit at sizes its search does not close: incumbent, bound, gap."""
    sizes = (2000,) if args.quick else SCALE_SIZES
    limit = 10.0 if args.quick else 60.0
    rows, honest = [], True
    print("| cluster | jobs | devices | bidders | status | rho | bound | gap | solves | total s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for cluster in ("large", "dense"):
        for jobs in sizes:
            if cluster == "large":
                inst = workload("gavel", "large", jobs, 3, args.seed)
            else:
                inst = lo.generate("gavel", jobs, 3, seed=args.seed, max_count=jobs)
            row = measure(inst, fractional=False, solver="highs", time_limit=limit)
            row.update(cluster=cluster, jobs=jobs, devices=int(inst.counts.sum()), time_limit=limit)
            ok = (row["bound"] is not None and math.isfinite(row["rho"]) and row["bound"] <= row["rho"] * (1 + 1e-9)
                  and row["gap"] is not None and math.isfinite(row["gap"])
                  and (row["status"] != "optimal" or row["gap"] <= 1e-6))
            honest &= ok
            row["honest"] = ok
            rows.append(row)
            gap = "n/a" if row["gap"] is None else f"{row['gap']:.2%}"
            print(f"| gavel ({cluster}) | {jobs} | {row['devices']} | {row['bidders']} | {row['status']} | "
                  f"{row['rho']:.5f} | {row['bound']:.5f} | {gap} | {row['solves']} | {row['total_s']:.1f} |")
    out = Path(args.out)
    write_report(out / "themis_scale.json", json.dumps({"time_limit": limit, "seed": args.seed, "rows": rows},
                                                       indent=2) + "\n")
    lines = ["# themis_scale: integral Themis under a time limit", "",
             f"`lo.solve(inst, \"themis\", time_limit={limit:g})`, one run each (the limit decides the time).", "",
             "| cluster | jobs | devices | bidders | status | rho | bound | gap | solves | total s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        gap = "n/a" if row["gap"] is None else f"{row['gap']:.2%}"
        lines.append(f"| gavel ({row['cluster']}) | {row['jobs']} | {row['devices']} | {row['bidders']} | "
                     f"{row['status']} | {row['rho']:.5f} | {row['bound']:.5f} | {gap} | {row['solves']} | "
                     f"{row['total_s']:.1f} |")
    write_report(out / "themis_scale.md", "\n".join(lines) + "\n")
    print(f"incumbent, bound and finite gap on every row: {'yes' if honest else 'NO'}")
    return 0 if honest else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of each fractional row")
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", action="store_true", help="integral mode at 4,000-16,000 jobs under a time limit")
    args = parser.parse_args(argv)
    if args.scale:
        return scale_main(args)
    frac = QUICK_FRACTIONAL if args.quick else FRACTIONAL
    integ = QUICK_INTEGRAL if args.quick else INTEGRAL
    repeat = 1 if args.quick else max(1, args.repeat)
    print(HEADER)
    load_before = os.getloadavg()
    rows = run(frac, integ, repeat=repeat, time_limit=args.time_limit, seed=args.seed)
    load_after = os.getloadavg()
    from importlib.metadata import version

    meta = {
        "seed": args.seed,
        "time_limit": args.time_limit,
        "repeat": repeat,
        "quick": args.quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
                   f"highspy {version('highspy')}, ortools {version('ortools')}",
        "target_s": TARGET_S,
        "load_average": {"before": [round(v, 2) for v in load_before], "after": [round(v, 2) for v in load_after]},
    }
    out = Path(args.out)
    write_report(out / "themis_scaling.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    write_report(out / "themis_scaling.md", markdown(rows, meta))
    bad = [r for r in rows if r["status"] != "optimal"]
    print(f"all optimal: {'yes' if not bad else 'no (' + str(len(bad)) + ' rows)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
