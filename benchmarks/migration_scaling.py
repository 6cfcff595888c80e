"""Migration-aware scheduling (``models.md`` item 6): solve time against horizon and number of jobs.

Workload (seeded, ``jobs_instance``): ``n`` jobs on four pool types with the
HotOS'25 prices (A10 0.606, L4 0.48, Trainium 0.804 per device-hour) and an
assumed H100 (2.50, three times the A10's speed); about ``n / 2`` devices in
all (10 % A10, 20 % L4, 15 % Trainium, 5 % H100, at least one each).  Rounds
of 5 minutes.  Job ``j`` arrives uniformly in the first half of the horizon,
has work 1 and needs ``L_j`` rounds on an A10 (``L_j`` uniform on
``2 .. max(2, R / 4)``); its speed on the other types is the type's ratio
(L4 0.69, Trainium 1.17, H100 3.0, from Table 1 and the assumption) times a
job-specific factor uniform on 0.7 .. 1.3; 30 % of the jobs cannot use
Trainium.  Migration costs 2 % of the job.  No deadlines; objective ``cost``
(every job must finish within the horizon, at least money).

Two sweeps: the horizon ``R`` from 10 to 200 rounds at 10 jobs, and the
number of jobs from 10 to 500 at 20 rounds.  Each point solves ``migration``
with HiGHS under a time limit and runs the ``fcfs_static`` and ``myopic``
baselines.  ``time_limit`` rows give the incumbent, the proven bound and the
gap at the limit; the baselines' gaps are taken against the proven bound.

The cluster sweep (``--sweep cluster``, issue 12's sizes) uses
``cluster_instance``: ``n`` jobs on a fixed number of devices (20 jobs x 20
rounds on 10 devices up to 500 jobs x 48 rounds on 50), solved by the default
``lo.solve(inst, "migration")`` (strategy auto: whole horizon when small,
after a column-generation pre-step; column generation and price-and-branch
when large), median of ``--repeats`` runs, next to the old
formulation (``build_migration(tight=False)``: no floors, no starts, whole
horizon) with the same time limit.

Usage::

    python benchmarks/migration_scaling.py [--quick] [--out DIR] [--time-limit S]
    python benchmarks/migration_scaling.py --sweep cluster [--quick] [--repeats K] [--no-old]

Writes ``DIR/migration_scaling.{json,md}`` (classic) or
``DIR/migration_cluster.{json,md}`` (cluster; default DIR:
``benchmarks/results``), each atomically (``write_atomic``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.errors import NoSolutionError
from laissez_opt.exact.migration import build_migration
from laissez_opt.modeling import solve_model
from laissez_opt.instance import Agent, Edge, Instance, Pool

TYPES = (("A10", 0.606, 1.0, 0.10), ("L4", 0.48, 0.69, 0.20), ("Trainium", 0.804, 1.17, 0.15), ("H100", 2.50, 3.0, 0.05))
HORIZONS = (10, 20, 50, 100, 200)
AGENTS = (10, 20, 50, 100, 200, 500)


def jobs_instance(n: int, rounds: int, seed: int = 0) -> Instance:
    """The seeded workload described in the module docstring."""
    rng = np.random.default_rng(seed)
    pools = [Pool(name, count=max(1, round(share * n)), base_price=price) for name, price, _, share in TYPES]
    agents, edges = [], []
    for j in range(n):
        length = int(rng.integers(2, max(2, rounds // 4) + 1))
        arrival = int(rng.integers(0, max(1, rounds // 2)))
        agents.append(Agent(f"j{j}", work=1.0, demand=1, arrival=arrival, migration_cost=0.02))
        edges += _job_edges(rng, f"j{j}", length)
    return Instance(pools, agents, edges, rounds=rounds, round_hours=5 / 60, name=f"jobs-{n}x{rounds}")


def _job_edges(rng, job: str, length: int) -> list[Edge]:
    """A job's edges: each type's speed times a job factor 0.7 .. 1.3 (1 on A10), over ``length``;
    30 % of the jobs cannot use Trainium.  The draws' order is part of the seeded workload."""
    no_trainium = rng.random() < 0.3
    edges = []
    for name, _, speed, _ in TYPES:
        factor = float(rng.uniform(0.7, 1.3)) if name != "A10" else 1.0
        if name == "Trainium" and no_trainium:
            continue
        edges.append(Edge(job, name, round(speed * factor / length, 6)))
    return edges


#: Shares of the devices per type in :func:`cluster_instance`.
CLUSTER_SHARES = {"A10": 0.3, "L4": 0.3, "Trainium": 0.25, "H100": 0.15}


def cluster_instance(n: int, rounds: int, devices: int, seed: int = 0) -> Instance:
    """A cluster of ``devices`` devices over the four types (shares :data:`CLUSTER_SHARES`) and ``n`` jobs.

    Job ``j`` arrives uniformly in the first three quarters of the horizon, has
    work 1 and needs ``L_j`` rounds on an A10 (``L_j`` uniform on ``1 .. 5``);
    speeds as in :func:`jobs_instance` (type ratio times a job factor 0.7 .. 1.3,
    30 % cannot use Trainium); a quarter of the jobs have the deadline
    ``min(R - 1, a_j + 4 L_j)``.  Migration costs 2 % of the job.
    """
    rng = np.random.default_rng(seed)
    pools = [Pool(name, count=max(1, round(CLUSTER_SHARES[name] * devices)), base_price=price) for name, price, _, _ in TYPES]
    agents, edges = [], []
    for j in range(n):
        length = int(rng.integers(1, 6))
        arrival = int(rng.integers(0, max(1, (3 * rounds) // 4)))
        deadline = min(rounds - 1, arrival + 4 * length) if rng.random() < 0.25 else None
        agents.append(Agent(f"j{j}", work=1.0, demand=1, arrival=arrival, deadline=deadline, migration_cost=0.02))
        edges += _job_edges(rng, f"j{j}", length)
    return Instance(pools, agents, edges, rounds=rounds, round_hours=5 / 60, name=f"cluster-{n}x{rounds}x{devices}")


def run_point(n: int, rounds: int, time_limit: float) -> dict:
    inst = jobs_instance(n, rounds)
    model, _ = build_migration(inst, objective="cost")
    row = {"agents": n, "rounds": rounds, "edges": inst.n_edges, "devices": int(inst.counts.sum()),
           "columns": model.n_cols, "rows": model.n_rows, "time_limit": time_limit}
    del model
    start = time.perf_counter()
    try:
        result = lo.solve(inst, "migration", objective="cost", time_limit=time_limit, threads=1)
        row.update(status=result.status, objective=result.objective, bound=result.bound, gap=result.gap,
                   build_s=result.timing["build_s"], solve_s=result.timing["solve_s"],
                   total_s=time.perf_counter() - start, migrations=result.details["totals"]["migrations"])
    except NoSolutionError as exc:
        row.update(status="no incumbent", objective=None, bound=None, gap=None, build_s=None, solve_s=None,
                   total_s=time.perf_counter() - start, migrations=None, message=str(exc))
    for method in ("fcfs_static", "myopic"):
        t0 = time.perf_counter()
        other = lo.solve(inst, method, objective="cost")
        row[f"{method}_s"] = time.perf_counter() - t0
        row[method] = other.objective if other.status != "infeasible" else None
        reference = row.get("bound")
        if row[method] is not None and reference:
            row[f"{method}_gap"] = (row[method] - reference) / abs(reference)
    return row


def _fmt(value, digits=4):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def table(rows: list[dict]) -> str:
    head = ("| sweep | jobs | rounds | columns | rows | status | solve s | objective | bound | gap | "
            "migrations | fcfs_static (gap) | myopic (gap) |")
    lines = [head, "|" + " --- |" * 13]
    for r in rows:
        lines.append(
            f"| {r['sweep']} | {r['agents']} | {r['rounds']} | {r['columns']} | {r['rows']} | {r['status']} | "
            f"{_fmt(r.get('solve_s'), 3)} | {_fmt(r.get('objective'))} | {_fmt(r.get('bound'))} | {_fmt(r.get('gap'), 3)} | "
            f"{_fmt(r.get('migrations'))} | {_fmt(r.get('fcfs_static'))} ({_fmt(r.get('fcfs_static_gap'), 3)}) | "
            f"{_fmt(r.get('myopic'))} ({_fmt(r.get('myopic_gap'), 3)}) |"
        )
    return "\n".join(lines)


#: The cluster sweep: (jobs, rounds, devices, time limit s); the first and last are issue 12's targets.
CLUSTER_POINTS = ((20, 20, 10, 10.0), (50, 24, 10, 60.0), (100, 48, 20, 60.0), (200, 48, 30, 60.0), (500, 48, 50, 60.0))
CLUSTER_QUICK = ((20, 20, 10, 5.0), (50, 24, 10, 5.0))


def _median(values):
    return float(np.median(values)) if values else None


def run_cluster_point(n: int, rounds: int, devices: int, time_limit: float, repeats: int, old: bool,
                      make=None) -> dict:
    """One cluster point: the default solve (``strategy="auto"``, median of ``repeats``) and the formulation before
    the floors, starts and rolling horizon (``build_migration(tight=False)`` solved whole, once)."""
    inst = (make or cluster_instance)(n, rounds, devices)
    row = {"agents": n, "rounds": rounds, "devices": int(inst.counts.sum()), "edges": inst.n_edges,
           "time_limit": time_limit}
    runs, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = lo.solve(inst, "migration", objective="cost", time_limit=time_limit, threads=1)
        runs.append((time.perf_counter() - start, result))
        cpu.append(time.process_time() - start_cpu)
    seconds = [s for s, _ in runs]
    _, result = runs[int(np.argsort(seconds)[len(seconds) // 2])]
    row.update(strategy=result.params.get("strategy"), status=result.status, objective=result.objective,
               bound=result.bound, gap=result.gap, total_s=_median(seconds), total_s_runs=seconds,
               cpu_s=_median(cpu), cpu_s_runs=cpu,
               statuses=[r.status for _, r in runs], migrations=result.details["totals"]["migrations"],
               enumeration=result.details.get("enumeration"),
               incumbent_from=(result.message or "").split(";")[0])
    for method in ("fcfs_static", "myopic"):
        other = lo.solve(inst, method, objective="cost")
        row[method] = other.objective if other.status != "infeasible" else None
    if old:
        start = time.perf_counter()
        model, _ = build_migration(inst, objective="cost", tight=False)
        try:
            solution = solve_model(model, solver="highs", time_limit=time_limit, threads=1)
            row.update(old_status=solution.status, old_objective=solution.objective, old_bound=solution.bound,
                       old_gap=solution.gap)
        except NoSolutionError:
            row.update(old_status="no incumbent", old_objective=None, old_bound=None, old_gap=None)
        row["old_s"] = time.perf_counter() - start
    return row


def cluster_table(rows: list[dict]) -> str:
    head = ("| instance | jobs | rounds | devices | limit s | strategy | status | seconds (median) | CPU s (median) | "
            "money | bound | gap | fcfs_static | myopic | old formulation: status, money, bound, gap, seconds |")
    lines = [head, "|" + " --- |" * 16]
    for r in rows:
        old = (f"{r.get('old_status', '-')}, {_fmt(r.get('old_objective'))}, {_fmt(r.get('old_bound'))}, "
               f"{_fmt(r.get('old_gap'), 3)}, {_fmt(r.get('old_s'), 3)}") if "old_status" in r else "not run"
        lines.append(
            f"| {r['family']} | {r['agents']} | {r['rounds']} | {r['devices']} | {_fmt(r['time_limit'])} | {r['strategy']} | "
            f"{r['status']} | {_fmt(r['total_s'], 3)} | {_fmt(r.get('cpu_s'), 3)} | {_fmt(r['objective'])} | {_fmt(r['bound'])} | {_fmt(r['gap'], 3)} | "
            f"{_fmt(r.get('fcfs_static'))} | {_fmt(r.get('myopic'))} | {old} |")
    return "\n".join(lines)


def main_cluster(quick: bool, out: Path, repeats: int, old: bool) -> int:
    points = [("cluster", cluster_instance, *p) for p in (CLUSTER_QUICK if quick else CLUSTER_POINTS)]
    points.insert(1, ("jobs", lambda n, r, d: jobs_instance(n, r), 20, 20, 10, 5.0 if quick else 10.0))
    rows = []
    for family, make, n, rounds, devices, limit in points:
        # Medians of `repeats` runs where a run takes at most 10 s; the 60 s points run once (their time is the limit).
        row = {"family": family, **run_cluster_point(n, rounds, devices, limit, repeats if limit <= 10 else 1, old,
                                                     make=make)}
        rows.append(row)
        print(f"{family:8s} n={n:4d} R={rounds:3d} devices={row['devices']:3d} {row['strategy']:10s} {row['status']:10s} "
              f"{_fmt(row['total_s'], 3):>7s}s cpu={_fmt(row.get('cpu_s'), 3)}s money={_fmt(row['objective'])} bound={_fmt(row['bound'])} "
              f"gap={_fmt(row['gap'], 3)} old={row.get('old_status', '-')} {_fmt(row.get('old_objective'))} "
              f"gap={_fmt(row.get('old_gap'), 3)}", flush=True)
    machine = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()}
    report = {"benchmark": "migration_cluster", "quick": quick, "repeats": repeats, "machine": machine, "points": rows}
    out.mkdir(parents=True, exist_ok=True)
    write_report(out / "migration_cluster.json", json.dumps(report, indent=2, default=float) + "\n")
    text = (f"# migration at cluster scale ({'quick' if quick else 'full'})\n\n"
            f"`lo.solve(inst, \"migration\", objective=\"cost\", time_limit=L, threads=1)` (strategy auto), median of "
            f"{repeats} runs at the 10 s points, one run at the 60 s points; the old formulation (no floors, no starts, whole horizon) once with the same limit. "
            f"Gaps are against each route's own certified bound.\n\n{cluster_table(rows)}\n")
    write_report(out / "migration_cluster.md", text)
    print(cluster_table(rows))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and a 5 s limit (smoke test)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per exact solve (default 60, quick 5)")
    parser.add_argument("--sweep", choices=("classic", "cluster"), default="classic",
                        help="classic: horizon and jobs sweeps (migration_scaling.*); cluster: the issue 12 sizes "
                             "(migration_cluster.*)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per cluster point (default 3, quick 1)")
    parser.add_argument("--no-old", action="store_true", help="cluster sweep: skip the old formulation")
    args = parser.parse_args(argv)
    if args.sweep == "cluster":
        return main_cluster(args.quick, Path(args.out), args.repeats or (1 if args.quick else 3), not args.no_old)
    limit = args.time_limit or (5.0 if args.quick else 60.0)
    horizons = (10, 20) if args.quick else HORIZONS
    agents = (10, 20) if args.quick else AGENTS
    points = [("horizon", 10, r) for r in horizons] + [("jobs", n, 20) for n in agents if n != 10]
    rows = []
    for sweep, n, rounds in points:
        row = {"sweep": sweep, **run_point(n, rounds, limit)}
        rows.append(row)
        print(f"{sweep:8s} n={n:4d} R={rounds:4d} cols={row['columns']:7d} {row['status']:13s} "
              f"solve={_fmt(row.get('solve_s'), 3):>7s}s obj={_fmt(row.get('objective'))} gap={_fmt(row.get('gap'), 3)} "
              f"fcfs={_fmt(row.get('fcfs_static'))} myopic={_fmt(row.get('myopic'))}", flush=True)
    first_limit = next((r for r in rows if r["status"] != "optimal"), None)
    summary = {
        "time_limit_s": limit,
        "first_point_needing_the_limit": None if first_limit is None else
        {k: first_limit[k] for k in ("sweep", "agents", "rounds", "status", "gap")},
    }
    machine = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "migration_scaling", "quick": args.quick, "machine": machine, "summary": summary, "points": rows}
    write_report(out / "migration_scaling.json", json.dumps(report, indent=2, default=float) + "\n")
    text = (f"# migration scaling ({'quick' if args.quick else 'full'})\n\n"
            f"HiGHS, one thread, objective cost, time limit {limit:g} s per solve. "
            f"Baseline gaps are against the proven bound.\n\n{table(rows)}\n\n"
            f"First point needing the time limit: {summary['first_point_needing_the_limit']}\n")
    write_report(out / "migration_scaling.md", text)
    print(table(rows))
    print(f"first point needing the time limit: {summary['first_point_needing_the_limit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
