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

Usage::

    python benchmarks/migration_scaling.py [--quick] [--out DIR] [--time-limit S]

Writes ``DIR/migration_scaling.json`` and ``DIR/migration_scaling.md`` (default
DIR: ``benchmarks/results``), each through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from laissez_opt.io.jsonfile import write_atomic as write_file_atomic
import laissez_opt as lo
from laissez_opt.errors import NoSolutionError
from laissez_opt.exact.migration import build_migration
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
        no_trainium = rng.random() < 0.3
        for name, _, speed, _ in TYPES:
            factor = float(rng.uniform(0.7, 1.3)) if name != "A10" else 1.0
            if name == "Trainium" and no_trainium:
                continue
            edges.append(Edge(f"j{j}", name, round(speed * factor / length, 6)))
    return Instance(pools, agents, edges, rounds=rounds, round_hours=5 / 60, name=f"jobs-{n}x{rounds}")


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
        no_trainium = rng.random() < 0.3
        for name, _, speed, _ in TYPES:
            factor = float(rng.uniform(0.7, 1.3)) if name != "A10" else 1.0
            if name == "Trainium" and no_trainium:
                continue
            edges.append(Edge(f"j{j}", name, round(speed * factor / length, 6)))
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


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, text)  # readers see the old report or the whole new one


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and a 5 s limit (smoke test)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per exact solve (default 60, quick 5)")
    args = parser.parse_args(argv)
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
    _write(out / "migration_scaling.json", json.dumps(report, indent=2, default=float) + "\n")
    text = (f"# migration scaling ({'quick' if args.quick else 'full'})\n\n"
            f"HiGHS, one thread, objective cost, time limit {limit:g} s per solve. "
            f"Baseline gaps are against the proven bound.\n\n{table(rows)}\n\n"
            f"First point needing the time limit: {summary['first_point_needing_the_limit']}\n")
    _write(out / "migration_scaling.md", text)
    print(table(rows))
    print(f"first point needing the time limit: {summary['first_point_needing_the_limit']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
