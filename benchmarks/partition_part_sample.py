"""Every-level leximin of sampled parts, as the partitioned run solves them: CPU per part, and the paths compared.

A partitioned fractional ``maxmin`` with every level solves, in each of ``K``
parts, a leximin by waterfilling (``laissez_opt.partition.levels.leximin_part``),
with a pilot part's common level as the other parts' ``cap_below`` hint
(``laissez_opt.partition.run.solve_arrays``).  The parts of a random split have the
same distribution, so ``N`` parts spread over the split (every ``K / N``-th),
solved one after the other in this process, estimate the CPU seconds of the whole
run (``K`` times their mean) and show where they go.  This script takes the
heterogeneous instance of ``benchmarks/scaling_partition.py``, solves the pilot
(part 1) and then the sampled parts with its hint, and reports per part the CPU
seconds, the LPs, whether the capped first level held or missed, and the HiGHS
time split into the first LP (interior point) and the later ones.
``--compare-plain`` also solves every sampled part on one model without the
optimal face and the capped jumps (``face=False, caps=False``) and reports the
largest relative difference between the two sorted value vectors: both are the
part's leximin, so they should agree to the solver's tolerance.  Results go to
``NAME.json`` and ``NAME.md`` in ``--out``.

    python benchmarks/partition_part_sample.py                                 # 10^6 x 10^3, K = 1,600, 60 parts
    python benchmarks/partition_part_sample.py --size 20000x1000 --parts 32 --sample 8 --compare-plain
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_results  # noqa: E402
from scaling_partition import make_problem  # noqa: E402

from laissez_opt.partition.core import CAPACITY_SPLITS, equal_share_normalizer, part_tasks  # noqa: E402
from laissez_opt.partition.levels import CAP_HINT_SHARE, leximin_part  # noqa: E402


class SolverClock:
    """CPU seconds inside HiGHS's ``run``, split into interior-point runs and the others."""

    def __init__(self):
        import highspy

        self.highs, self.original = highspy.Highs, highspy.Highs.run
        self.ipm_s = self.simplex_s = 0.0
        clock = self

        def timed_run(h):
            start = time.process_time()
            status = clock.original(h)
            spent = time.process_time() - start
            if h.getInfo().ipm_iteration_count > 0:
                clock.ipm_s += spent
            else:
                clock.simplex_s += spent
            return status

        self.highs.run = timed_run

    def take(self) -> tuple[float, float]:
        out = (self.ipm_s, self.simplex_s)
        self.ipm_s = self.simplex_s = 0.0
        return out

    def close(self) -> None:
        self.highs.run = self.original


def sorted_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest relative difference between the sorted vectors ``a`` and ``b``."""
    sa, sb = np.sort(a), np.sort(b)
    return float(np.max(np.abs(sa - sb) / np.maximum(np.abs(sb), 1e-300), initial=0.0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1000000x1000", help="AGENTSxPOOLS (default 1000000x1000)")
    ap.add_argument("--parts", type=int, default=1600, help="K of the split (default 1600)")
    ap.add_argument("--sample", type=int, default=60, help="parts solved, spread over the split (default 60)")
    ap.add_argument("--compare-plain", action="store_true",
                    help="also solve each sampled part with face=False, caps=False and compare the values")
    ap.add_argument("--capacity-split", default="equal", choices=CAPACITY_SPLITS,
                    help="how each pool's devices are shared among the parts (default equal, as lo.solve)")
    ap.add_argument("--cold-face", action="store_true",
                    help="start each model rebuilt on an optimal face cold (warm_face=False), for comparison")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--name", default="partition_part_sample")
    args = ap.parse_args(argv)
    n, m = (int(v) for v in args.size.lower().split("x"))
    if args.parts < 2 or not 1 <= args.sample < args.parts:
        ap.error("need --parts >= 2 and 1 <= --sample < --parts")
    problem = make_problem(n, m)
    ready = problem.for_method("maxmin", equal_share_normalizer(problem))
    tasks, _ = part_tasks(ready, args.parts, 0, "maxmin", integral=False, capacity_split=args.capacity_split)
    for task in tasks:
        task["levels"] = "all"
        task["warm_face"] = not args.cold_face
    step = max(1, (len(tasks) - 1) // args.sample)
    sampled = tasks[1::step][:args.sample]
    leximin_part(tasks[0])  # loads and warms the solver library, off the clock
    pilot = leximin_part(tasks[0])
    hint = None if pilot["common_level"] is None else CAP_HINT_SHARE * pilot["common_level"]
    clock = SolverClock()
    rows = []
    try:
        for task in sampled:
            out = leximin_part(dict(task, cap_below=hint))
            ipm_s, simplex_s = clock.take()
            row = {"part": task["part"] + 1, "agents": int(task["demands"].shape[0]),
                   "edges": int(task["edge_agent"].shape[0]), "cpu_s": out["cpu_s"], "lps": out["lps"],
                   "ipm_cpu_s": ipm_s, "simplex_cpu_s": simplex_s, "capped": out["first_capped"] > 0,
                   "missed": bool(out["first_cap_failed"]), "retries": out["retries"],
                   "floor_easings": out["floor_easings"], "status": out["status"]}
            if args.compare_plain:
                plain = leximin_part(dict(task, face=False, caps=False))
                clock.take()
                row["plain_cpu_s"] = plain["cpu_s"]
                row["plain_max_rel_diff"] = sorted_difference(out["values"], plain["values"])
            rows.append(row)
            print(row, flush=True)
    finally:
        clock.close()
    mean = lambda key: statistics.mean(r[key] for r in rows)  # noqa: E731
    summary = {"size": args.size, "k": args.parts, "capacity_split": args.capacity_split,
               "warm_face": not args.cold_face, "sampled": len(rows), "pilot_common_level": pilot["common_level"],
               "cap_below": hint, "cpu_ms_per_part": 1000 * mean("cpu_s"), "ipm_ms_per_part": 1000 * mean("ipm_cpu_s"),
               "simplex_ms_per_part": 1000 * mean("simplex_cpu_s"), "lps_per_part": mean("lps"),
               "capped": sum(r["capped"] for r in rows), "missed": sum(r["missed"] for r in rows),
               "retries": sum(r["retries"] for r in rows), "estimated_parts_cpu_s": args.parts * mean("cpu_s")}
    summary["outside_solver_ms_per_part"] = (summary["cpu_ms_per_part"] - summary["ipm_ms_per_part"]
                                             - summary["simplex_ms_per_part"])
    lines = ["| size | K | parts sampled | CPU ms per part | first-LP (interior point) ms | simplex ms | "
             "outside HiGHS ms | LPs per part | capped | missed | retries | K x mean CPU s |",
             "|" + "---|" * 12,
             f"| {args.size} | {args.parts} | {len(rows)} | {summary['cpu_ms_per_part']:.1f} | "
             f"{summary['ipm_ms_per_part']:.1f} | {summary['simplex_ms_per_part']:.1f} | "
             f"{summary['outside_solver_ms_per_part']:.1f} | {summary['lps_per_part']:.2f} | {summary['capped']} | "
             f"{summary['missed']} | {summary['retries']} | {summary['estimated_parts_cpu_s']:.0f} |"]
    if args.compare_plain:
        diffs = sorted((r["plain_max_rel_diff"], r["part"]) for r in rows)
        summary["plain_max_rel_diff"] = diffs[-1][0]
        summary["parts_over_1e-7"] = sum(d > 1e-7 for d, _ in diffs)
        summary["plain_cpu_ms_per_part"] = 1000 * mean("plain_cpu_s")
        lines += ["", "| parts | largest sorted difference, default vs plain path | parts above 1e-7 | "
                  "largest three (part: difference) | plain path CPU ms per part |", "|---|---|---|---|---|",
                  f"| {len(rows)} | {diffs[-1][0]:.2e} | {summary['parts_over_1e-7']} | "
                  + ", ".join(f"{p}: {d:.1e}" for d, p in reversed(diffs[-3:]))
                  + f" | {summary['plain_cpu_ms_per_part']:.1f} |"]
    meta = dict(machine("highspy", "numpy"), note="one process, parts one after the other; CPU seconds of this process")
    write_results(Path(args.out), args.name, {"meta": meta, "summary": summary, "rows": rows}, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
