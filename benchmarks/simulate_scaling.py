"""Speed of the multi-round simulator: rounds per second per policy, the engine's own overhead, the R5 grid.

Three measurements, each printed as a table and written to ``simulate_scaling.json`` and
``simulate_scaling.md`` in ``--out`` (default ``benchmarks/results``), atomically:

1. **Thesis size** (20 agents x 40 accelerators: family ``gemmini``, 2 pools of 20,
   Poisson arrivals of 40 jobs per round and weight at 60% load, deadline 5 rounds,
   power-of-two balancer): ``--thesis-rounds`` rounds of every policy of the R5 presets
   and a few baselines, one process.  Per policy: rounds per second, the policy's time
   per round (``lo.solve`` and its verification included), the engine's time per round.
2. **Large** (1,000 agents x 200 pools, 2,000 accelerators, 200,000 edges; the same
   workload at 80% load): ``--large-rounds`` rounds of the policies that finish a round
   in seconds.  The engine's overhead is its time over the policy's time; the target
   is below 20%.  The engine's time is split into its phases (arrivals, view, serve,
   completions, records).
3. **The R5 grid**: the six ``thesis-r5-*`` presets x 4 policies (``mtf`` with
   actor-critic thresholds, ``themis``, ``gandiva_fair``, ``welfare``) x ``--seeds``
   seeds x 300 rounds through ``lo.simulate`` with ``--workers`` processes (the local
   pool), no hindsight bound, no files; wall time against the target of 10 minutes on
   2 cores.

Every measurement runs after a warm-up round (numba's compiled kernel is loaded from
its cache once per process).  The machine may be shared: times are wall-clock.

    python benchmarks/simulate_scaling.py            # everything (about 10-15 minutes on 2 cores)
    python benchmarks/simulate_scaling.py --quick    # small versions of the three, about a minute
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

import laissez_opt as lo
from laissez_opt.io import write_atomic
from laissez_opt.simulate import config_from_dict, prepare, run
from laissez_opt.simulate.policies import resolve
from laissez_opt.simulate.presets import R5_SETUPS

HERE = Path(__file__).resolve().parent
THESIS_POLICIES = [
    ("mtf", {"threshold": "actor_critic"}), ("mtf", {"threshold": "hedge"}), ("mtf", {"threshold": "fixed:0.5"}),
    ("themis", {}), ("gandiva_fair", {}), ("welfare", {}), ("maxmin", {"fractional": True}), ("min_backlog", {}),
    ("time_equal", {}), ("round_robin", {}), ("auction", {}),
]
LARGE_POLICIES = [
    ("mtf", {"threshold": "fixed:0.5"}), ("mtf", {"threshold": "actor_critic"}), ("gandiva_fair", {}),
    ("round_robin", {}), ("time_equal", {}), ("welfare", {}),
]
GRID_POLICIES = ["mtf", "themis", "gandiva_fair", "welfare"]
OVERHEAD_TARGET = 0.20
GRID_TARGET_S = 600.0


def _config(agents: int, pools: int, rounds: int, load: float) -> dict:
    return {"format": "laissez-opt/simulation", "version": 1,
            "generate": {"family": "gemmini", "agents": agents, "pools": pools, "seed": 0}, "rounds": rounds,
            "workload": {"load": load, "deadline": 5}, "policies": ["time_equal"]}


def _label(method: str, options: dict) -> str:
    return method + (f" ({options['threshold']})" if "threshold" in options else "") + (
        " (fractional)" if options.get("fractional") else "")


def time_policies(agents: int, pools: int, rounds: int, load: float, policies) -> list[dict]:
    cfg = config_from_dict(_config(agents, pools, rounds, load))
    setup = prepare(cfg, 0)
    warm = config_from_dict(_config(agents, pools, 1, load))
    run(prepare(warm, 0), resolve("round_robin", {}).build(), 0)  # loads the compiled kernel
    rows = []
    for method, options in policies:
        record = run(setup, resolve(method, options).build(), 0)
        t = record.timing
        row = {"policy": _label(method, options), "rounds": rounds, "rounds_per_s": t["rounds_per_s"],
               "policy_ms": 1e3 * t["policy_s"] / rounds, "engine_ms": 1e3 * t["engine_s"] / rounds,
               "overhead": t["engine_s"] / t["policy_s"] if t["policy_s"] > 0 else None,
               "phases_ms": {k[:-2]: 1e3 * v / rounds for k, v in t.items()
                             if k.endswith("_s") and k not in ("policy_s", "engine_s", "total_s", "rounds_per_s")},
               "jobs": sum(record.rounds["arrived_jobs"]) / rounds}
        rows.append(row)
        print(f"  {row['policy']:<28} {row['rounds_per_s']:9.2f} rounds/s  policy {row['policy_ms']:9.2f} ms  "
              f"engine {row['engine_ms']:7.2f} ms  overhead {100 * (row['overhead'] or 0):6.1f}%", flush=True)
    return rows


def time_grid(seeds: int, rounds: int, workers: int) -> dict:
    started = time.perf_counter()
    per_setup = {}
    policy_s: dict[str, float] = {}
    for setup in R5_SETUPS:
        tick = time.perf_counter()
        result = lo.simulate(preset=f"thesis-r5-{setup}", policies=GRID_POLICIES, seeds=seeds, rounds=rounds,
                             workers=workers, progress=False, hindsight=False, check=False)
        per_setup[setup] = time.perf_counter() - tick
        for record in result.runs:
            policy_s[record.policy] = policy_s.get(record.policy, 0.0) + record.timing["total_s"]
        print(f"  thesis-r5-{setup:<8} {per_setup[setup]:8.1f} s", flush=True)
    wall = time.perf_counter() - started
    return {"setups": len(R5_SETUPS), "policies": GRID_POLICIES, "seeds": seeds, "rounds": rounds,
            "workers": workers, "wall_s": wall, "per_setup_s": per_setup, "run_s_by_policy": policy_s,
            "target_s": GRID_TARGET_S, "met": wall <= GRID_TARGET_S}


def _markdown(report: dict) -> str:
    lines = ["# Simulator speed", "", f"Machine: {report['machine']['cpu_count']} CPUs, Python "
             f"{report['machine']['python']}, numba {report['machine']['numba']}.", ""]
    if report.get("reused"):
        lines += [f"(Run with `--grid-only`: {report['reused']}.)", ""]
    for key, title in (("thesis", "Thesis size: 20 agents x 40 accelerators"),
                       ("large", "Large: 1,000 agents x 200 pools (2,000 accelerators, 200,000 edges)")):
        block = report[key]
        lines += [f"## {title}", "", f"{block['rounds']} rounds, about {block['rows'][0]['jobs']:.0f} jobs per round.",
                  "", "| policy | rounds/s | policy ms/round | engine ms/round | engine / policy |",
                  "|---|---|---|---|---|"]
        for row in block["rows"]:
            overhead = "-" if row["overhead"] is None else f"{100 * row['overhead']:.1f}%"
            lines.append(f"| {row['policy']} | {row['rounds_per_s']:.2f} | {row['policy_ms']:.2f} | "
                         f"{row['engine_ms']:.2f} | {overhead} |")
        lines.append("")
    large = report["large"]["rows"]
    worst = max(large, key=lambda r: r["overhead"] or 0)
    phases = ", ".join(f"{k} {v:.2f} ms" for k, v in worst["phases_ms"].items())
    lines += [f"Engine overhead at 1,000 agents: at most {100 * worst['overhead']:.1f}% ({worst['policy']}; target "
              f"below {100 * OVERHEAD_TARGET:.0f}%: {'met' if worst['overhead'] < OVERHEAD_TARGET else 'NOT met'}). "
              f"Its phases per round there: {phases}.", ""]
    grid = report["grid"]
    lines += ["## The R5 grid", "",
              f"{grid['setups']} setups x {len(grid['policies'])} policies ({', '.join(grid['policies'])}) x "
              f"{grid['seeds']} seeds x {grid['rounds']} rounds on {grid['workers']} workers: "
              f"**{grid['wall_s']:.0f} s** (target {grid['target_s']:.0f} s: {'met' if grid['met'] else 'NOT met'}).", "",
              "| setup | wall s |", "|---|---|"]
    lines += [f"| thesis-r5-{k} | {v:.1f} |" for k, v in grid["per_setup_s"].items()]
    lines += ["", "Run time summed over all runs, by policy (CPU seconds, both workers): "
              + ", ".join(f"{k} {v:.0f} s" for k, v in grid["run_s_by_policy"].items()) + ".", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small versions of every measurement")
    parser.add_argument("--thesis-rounds", type=int, default=300)
    parser.add_argument("--large-rounds", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--grid-only", action="store_true",
                        help="measure only the R5 grid; the other sections are kept from the report in --out")
    args = parser.parse_args(argv)
    if args.quick:
        args.thesis_rounds, args.large_rounds, args.seeds = 30, 2, 1
        large = (200, 40)
    else:
        large = (1000, 200)
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                          "numba": metadata.version("numba"), "laissez_opt": lo.__version__}}
    earlier = args.out / "simulate_scaling.json"
    if args.grid_only:
        if not earlier.exists():
            parser.error(f"--grid-only keeps the other sections of {earlier.name} in --out, and there is none")
        previous = json.loads(earlier.read_text(encoding="utf-8"))
        report["thesis"], report["large"] = previous["thesis"], previous["large"]
        report["reused"] = "thesis and large sections from an earlier run; the grid measured in this one"
    else:
        print(f"thesis size, 20 x 40, {args.thesis_rounds} rounds")
        report["thesis"] = {"rounds": args.thesis_rounds,
                            "rows": time_policies(20, 2, args.thesis_rounds, 0.6, THESIS_POLICIES)}
        print(f"large, {large[0]} x {large[1]}, {args.large_rounds} rounds")
        report["large"] = {"rounds": args.large_rounds, "agents": large[0], "pools": large[1],
                           "rows": time_policies(*large, args.large_rounds, 0.8, LARGE_POLICIES)}
    grid_rounds = 30 if args.quick else 300
    print(f"R5 grid: 6 setups x {len(GRID_POLICIES)} policies x {args.seeds} seeds x {grid_rounds} rounds, "
          f"{args.workers} workers")
    report["grid"] = time_grid(args.seeds, grid_rounds, args.workers)
    print(f"  total {report['grid']['wall_s']:.1f} s (target {GRID_TARGET_S:.0f} s)")
    text = _markdown(report)
    write_atomic(args.out / "simulate_scaling.json", json.dumps(report, indent=2) + "\n")
    write_atomic(args.out / "simulate_scaling.md", text)
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
