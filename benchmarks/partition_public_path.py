"""Partitioned solving through the paths a user calls: ``lo.solve`` and ``laissez-opt solve``, against the array core.

The heterogeneous arrays of ``scaling_partition.py`` (``n`` agents, ``m`` pools,
about 5 random pools per agent, independent utilities, demands 1 or 2, weights
0.5 to 2) are written as a binary instance file (``.npz``, the documented
``laissez-opt/instance-columns`` layout, straight from the arrays) and solved
three ways in the same run, one after the other:

* ``core``: :func:`laissez_opt.partition.solve_arrays` on the arrays (the reference);
* ``lo.solve``: the file read by ``lo.load`` (timed apart), then
  ``lo.solve(inst, METHOD, partitions=K, executor=..., workers=...)``, which adds
  the Result's per-record columns, the library's verifier and the metrics;
* ``cli``: ``laissez-opt solve FILE.npz --method METHOD -p ... -o OUT.json``, the
  whole command (interpreter start, reading, solving, writing the result file).

Jobs: ``welfare`` (integral; parts as min-cost flows), ``maxmin_first``
(fractional, ``levels=first_level``: each part's max-min LP, the level whose bound
and gap are certified), ``maxmin_first_sqrt`` (the same on smaller parts, each
pool shared by ``capacity_split=sqrt``) and ``maxmin_all`` (fractional, every leximin level of each
part, the default ``levels``; its certified gap is the first level's).  Columns: the seconds of each path, the ratio of each to
the core, the certified gap and the parts' CPU seconds (summed over the workers).
Results go to ``NAME.json`` and ``NAME.md`` in ``--out`` (atomically).

    python benchmarks/partition_public_path.py --quick      # 20,000 x 100, inline
    python benchmarks/partition_public_path.py              # 10^6 x 10^3: welfare K=16, max-min K=640, 2 workers
    python benchmarks/partition_public_path.py --jobs maxmin_all,maxmin_first --name partition_public_path_levels
                                                            # every level (K=2,200) against the first level (K=640)
    python benchmarks/partition_public_path.py --jobs maxmin_first,maxmin_first_sqrt --name partition_public_path_first
                                                            # the first level: K=640 equal shares against K=4,000 sqrt shares
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_report  # noqa: E402
from scaling_partition import make_problem  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.partition.core import Problem, equal_share_normalizer  # noqa: E402
from laissez_opt.partition.run import solve_arrays  # noqa: E402

#: Job name -> (method, lo.solve options besides partitions and the executor, the array core's keyword arguments).
JOBS = {
    "welfare": ("welfare", {}, {"integral": True}),
    "maxmin_first": ("maxmin", {"fractional": True, "levels": "first_level"}, {"levels": "first"}),
    "maxmin_all": ("maxmin", {"fractional": True}, {"levels": "all"}),
    "maxmin_first_sqrt": ("maxmin", {"fractional": True, "levels": "first_level", "capacity_split": "sqrt"},
                          {"levels": "first", "capacity_split": "sqrt"}),
    "maxmin_all_sqrt": ("maxmin", {"fractional": True, "capacity_split": "sqrt"},
                        {"levels": "all", "capacity_split": "sqrt"}),
}


def write_npz(problem: Problem, path: Path, name: str) -> None:
    """``problem`` as a binary instance file, member by member (``laissez_opt.io.binary`` documents the layout)."""
    n, m = problem.n_agents, problem.counts.shape[0]
    header = {"format": "laissez-opt/instance-columns", "version": 1, "name": name, "rounds": 1, "round_hours": 1.0,
              "pools": [{"id": f"p{c}", "count": int(k)} for c, k in enumerate(problem.counts)]}
    ids = "".join(f"a{i}\udcff" for i in range(n)).encode("utf-8", "surrogateescape")
    finite = np.isfinite(problem.demands)
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode(), np.uint8),
        "agent_id": np.frombuffer(ids, np.uint8),
        "agent_weight": problem.weights.astype(np.float64),
        "agent_demand": np.where(finite, problem.demands, 0).astype(np.int32),
        "agent_demand_given": finite,
        "edge_agent": problem.edge_agent.astype(np.int32),
        "edge_pool": problem.edge_pool.astype(np.int32),
        "edge_utility": problem.utility.astype(np.float64),
    }
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def core(problem: Problem, method: str, parts: int, executor: str, workers: int | None, kwargs: dict) -> dict:
    norm = equal_share_normalizer(problem) if method == "maxmin" else None
    ready = problem.for_method(method, norm)
    start = time.perf_counter()
    out = solve_arrays(ready, method, partitions=parts, seed=0, executor=executor, workers=workers, **kwargs)
    return {"seconds": time.perf_counter() - start, "objective": out["objective"], "gap": out["gap"],
            "parts_cpu_s": out["details"]["parts_cpu_s"]}


def public(path: Path, method: str, parts: int, executor: str, workers: int | None, options: dict) -> dict:
    start = time.perf_counter()
    inst = lo.load(path)
    loaded = time.perf_counter()
    result = lo.solve(inst, method, partitions=parts, executor=executor, workers=workers, **options)
    end = time.perf_counter()
    assert result.verified and result.status == "feasible"
    return {"load_s": loaded - start, "seconds": end - loaded, "objective": result.objective, "gap": result.gap,
            "parts_cpu_s": result.details["partition"]["parts_cpu_s"],
            "timing": {k: round(v, 4) for k, v in result.timing.items()}}


def command(path: Path, method: str, parts: int, executor: str, workers: int | None, options: dict,
            work: Path) -> dict:
    out = work / "result.json"
    params = {"partitions": parts, "executor": executor, **({"workers": workers} if workers else {}), **options}
    argv = [sys.executable, "-m", "laissez_opt", "solve", str(path), "--method", method, "-o", str(out)]
    for key, value in params.items():
        argv += ["-p", f"{key}={json.dumps(value) if isinstance(value, bool) else value}"]
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"laissez-opt solve failed ({run.returncode}): {run.stderr[-2000:]}")
    data = json.loads(out.read_text())
    size = out.stat().st_size
    out.unlink()
    return {"seconds": seconds, "objective": data["objective"], "gap": data["gap"], "result_mb": size / 1e6}


def measure(problem: Problem, path: Path, job: str, parts: int, executor: str, workers: int | None, work: Path,
            log) -> dict:
    method, options, kwargs = JOBS[job]
    n, m = problem.n_agents, problem.counts.shape[0]
    row = {"size": f"{n}x{m}", "edges": problem.n_edges, "job": job, "k": parts, "executor": executor,
           "workers": workers}
    row["core"] = core(problem, method, parts, executor, workers, kwargs)
    log(f"{job} {n}x{m} K={parts}: core {row['core']['seconds']:.1f} s")
    row["solve"] = public(path, method, parts, executor, workers, options)
    log(f"  lo.solve {row['solve']['seconds']:.1f} s (load {row['solve']['load_s']:.1f} s)")
    row["cli"] = command(path, method, parts, executor, workers, options, work)
    log(f"  cli {row['cli']['seconds']:.1f} s")
    base = row["core"]["seconds"]
    row["solve_over_core"] = row["solve"]["seconds"] / base
    row["cli_over_core"] = row["cli"]["seconds"] / base
    scale = max(1.0, abs(row["core"]["objective"]))
    row["same_objective"] = all(abs(row[p]["objective"] - row["core"]["objective"]) <= 1e-6 * scale
                                for p in ("solve", "cli"))
    return row


def markdown(report: dict) -> str:
    lines = ["# Partitioned solving through lo.solve and the command line", "",
             f"machine: {report['machine']}", "",
             "| size | edges | job | K | executor | core s | lo.solve s | load s | CLI s | lo.solve / core | "
             "CLI / core | certified gap | parts CPU s | result MB | same objective |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        gap = r["solve"]["gap"]
        lines.append(
            f"| {r['size']} | {r['edges']} | {r['job']} | {r['k']} | {r['executor']} | {r['core']['seconds']:.3g} | "
            f"{r['solve']['seconds']:.3g} | {r['solve']['load_s']:.3g} | {r['cli']['seconds']:.3g} | "
            f"{r['solve_over_core']:.2f} | {r['cli_over_core']:.2f} | "
            f"{'n/a' if gap is None else f'{100 * gap:.3f}%'} | {r['solve']['parts_cpu_s']:.3g} | "
            f"{r['cli']['result_mb']:.1f} | {'yes' if r['same_objective'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 parts each, inline, 20,000 x 100 unless --size")
    parser.add_argument("--size", default=None, help="AGENTSxPOOLS (default 1000000x1000)")
    parser.add_argument("--jobs", default="welfare,maxmin_first", help=f"comma list of {', '.join(JOBS)}")
    parser.add_argument("--welfare-parts", type=int, default=16)
    parser.add_argument("--maxmin-parts", type=int, default=640)
    parser.add_argument("--maxmin-sqrt-parts", type=int, default=4000,
                        help="K of maxmin_first_sqrt (default 4000: within a 0.5%% gap under the sqrt split)")
    parser.add_argument("--maxmin-all-parts", type=int, default=2200,
                        help="K of maxmin_all (default 2200: the fastest split measured, gap 0.25%%; 2,400 is the largest within 2%%)")
    parser.add_argument("--executor", default="local", choices=("inline", "local", "dask"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="partition_public_path")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.executor = args.size or "20000x100", "inline"
        args.welfare_parts = args.maxmin_parts = args.maxmin_all_parts = args.maxmin_sqrt_parts = 4
    n, m = (int(v) for v in (args.size or "1000000x1000").split("x"))
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        parser.error(f"unknown job {unknown[0]!r}; choose from {', '.join(JOBS)}")
    workers = None if args.executor == "inline" else args.workers
    rows = []
    problem = make_problem(n, m)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"het-{n}x{m}.npz"
        write_npz(problem, path, f"het-{n}x{m}")
        for job in jobs:
            parts = {"welfare": args.welfare_parts, "maxmin_all": args.maxmin_all_parts,
                     "maxmin_first_sqrt": args.maxmin_sqrt_parts,
                     "maxmin_all_sqrt": args.maxmin_all_parts}.get(job, args.maxmin_parts)
            rows.append(measure(problem, path, job, parts, args.executor, workers, Path(tmp), print))
    report = {"machine": machine("highspy", "ortools", "numpy"), "rows": rows}
    write_report(args.out / f"{args.name}.json", json.dumps(report, indent=2))
    write_report(args.out / f"{args.name}.md", markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
