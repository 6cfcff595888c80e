"""Pareto-check time against one welfare solve, on the ``uniform`` family.

For each size (agents x pools) the script generates one seeded ``uniform``
instance, times ``lo.solve(instance, "welfare")`` (HiGHS), and then times
``pareto_check`` on several allocations of that instance:

* ``welfare``: the welfare optimum (efficient: the check has to prove a zero optimum);
* ``greedy``: the greedy heuristic's allocation;
* ``half_welfare``: every other record of the welfare optimum (not efficient);
* ``time_equal``: each agent ``w_i / sum w`` of every device (a fractional allocation),
  checked in integral mode too, which asks whether whole devices can do better for everyone.

Each allocation is checked in integral and fractional mode with HiGHS and OR-Tools;
the ratio column is the check's total time over the welfare solve's total time.
Rows ``ilp_only`` skip the LP stage of the integral check (the plain ILP), for sizes
up to ``--ilp-only-max-agents``.  Every check has a time limit (``--time-limit``).

Usage::

    python benchmarks/pareto_scaling.py [--quick] [--out DIR] [--time-limit S]

Writes ``DIR/pareto_scaling.json`` and ``DIR/pareto_scaling.md`` (default DIR:
``benchmarks/results``), each through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.exact.pareto import pareto_check

SIZES = [(100, 10), (1000, 100), (5000, 100)]
QUICK_SIZES = [(100, 10), (1000, 100)]


def time_equal_amounts(inst) -> np.ndarray:
    """``x_{i,c,r} = k_c w_i / sum w`` on every edge (feasible when demands allow it)."""
    share = inst.weights[inst.edge_agent] / inst.weights.sum()
    amounts = share[:, None] * inst.counts[inst.edge_pool][:, None] * np.ones((1, inst.rounds))
    # Respect finite demands by scaling an agent's shares down to d_i devices per round.
    per_agent = np.bincount(inst.edge_agent, weights=amounts[:, 0], minlength=inst.n_agents)
    scale = np.minimum(1.0, np.where(per_agent > 0, inst.demands / np.maximum(per_agent, 1e-300), 1.0))
    return amounts * scale[inst.edge_agent][:, None]


def _warm_up() -> None:
    """Import and initialise both solvers once, so the first timed row does not pay for it."""
    inst = lo.generate("uniform", 4, 2, seed=0)
    for solver in ("highs", "ortools"):
        for fractional in (False, True):
            pareto_check(inst, [], fractional=fractional, solver=solver, relaxation_first=False)


def run(sizes, time_limit: float, ilp_only_max: int, seed: int) -> list[dict]:
    _warm_up()
    rows = []
    for agents, pools in sizes:
        inst = lo.generate("uniform", agents, pools, seed=seed)
        t = time.perf_counter()
        best = lo.solve(inst, "welfare")
        welfare_s = time.perf_counter() - t
        greedy = lo.solve(inst, "greedy")
        allocations = {
            "welfare": best,
            "greedy": greedy,
            "half_welfare": best.allocation[::2],
            "time_equal": time_equal_amounts(inst),
        }
        print(
            f"{agents} x {pools}: {inst.n_edges} edges, welfare solve {welfare_s:.3f}s ({best.route})",
            file=sys.stderr, flush=True,
        )
        plans = [(name, fractional, solver, True) for name in allocations for fractional in (False, True)
                 for solver in ("highs", "ortools")]
        if agents <= ilp_only_max:
            plans += [(name, False, "highs", False) for name in allocations]
        for name, fractional, solver, relaxation_first in plans:
            t = time.perf_counter()
            try:
                check = pareto_check(
                    inst, allocations[name], fractional=fractional, solver=solver, time_limit=time_limit,
                    relaxation_first=relaxation_first,
                )
                outcome = dict(
                    efficient=check.efficient, status=check.status, total_gain=check.total_gain,
                    route=check.route, build_s=check.timing["build_s"], solve_s=check.timing["solve_s"],
                )
            except lo.LaissezOptError as err:  # e.g. no incumbent before the time limit
                outcome = dict(efficient=None, status="error", total_gain=None, route=str(err), build_s=None, solve_s=None)
            total = time.perf_counter() - t
            row = dict(
                agents=agents, pools=pools, edges=inst.n_edges, allocation=name,
                mode="fractional" if fractional else ("integral" if relaxation_first else "ilp_only"),
                solver=solver, welfare_s=welfare_s, check_s=total, ratio=total / welfare_s, **outcome,
            )
            rows.append(row)
            print(
                f"  {name:13s} {row['mode']:10s} {solver:7s} efficient={row['efficient']!s:5s} "
                f"{row['status']:10s} gain={row['total_gain'] if row['total_gain'] is None else round(row['total_gain'], 4)!s:9s} "
                f"{total:8.3f}s  x{row['ratio']:7.2f}  {row['route']}",
                file=sys.stderr, flush=True,
            )
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Pareto check vs one welfare solve (uniform family)",
        "",
        f"Seed {meta['seed']}, time limit {meta['time_limit']} s per check, {meta['machine']}.",
        "",
        "| agents x pools | edges | allocation | mode | solver | efficient | status | total gain | check (s) | welfare (s) | ratio | decided by |",
        "| --- | ---: | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        gain = "-" if r["total_gain"] is None else f"{r['total_gain']:.4g}"
        lines.append(
            f"| {r['agents']} x {r['pools']} | {r['edges']} | {r['allocation']} | {r['mode']} | {r['solver']} | "
            f"{r['efficient']} | {r['status']} | {gain} | {r['check_s']:.3f} | {r['welfare_s']:.3f} | "
            f"{r['ratio']:.2f} | {r['route']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Only the two smaller sizes.")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"), help="Output directory.")
    parser.add_argument("--time-limit", type=float, default=60.0, help="Seconds per check (default 60).")
    parser.add_argument("--ilp-only-max-agents", type=int, default=1000,
                        help="Also time the plain ILP (no LP stage) up to this many agents (default 1000).")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    rows = run(sizes, args.time_limit, args.ilp_only_max_agents, args.seed)
    meta = {
        "seed": args.seed,
        "time_limit": args.time_limit,
        "quick": args.quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
    }
    out = Path(args.out)
    write_report(out / "pareto_scaling.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, meta)
    write_report(out / "pareto_scaling.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
