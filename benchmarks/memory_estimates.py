"""Size estimates against measured peak memory: the calibration of ``laissez_opt.limits``.

Every method estimates its peak memory before building anything
(``lo.estimate``; ``lo.solve`` refuses a run over its ``max_memory`` budget).
This script checks that the estimates err on the large side: for each case it
runs ``lo.solve`` in a fresh process (the instance generated there, so the
parent's memory does not count) and reads the child's peak resident memory
(``ru_maxrss``) after subtracting the same process's peak with the instance
generated and loaded but not solved.  It prints, per case, the estimate, the
measured increase and their ratio; a ratio below 1 means the estimate is
too small, and the script exits with status 1.

    python benchmarks/memory_estimates.py            # the default cases (about a minute)
    python benchmarks/memory_estimates.py --quick    # the three smallest

Results go to ``memory_estimates.json`` and ``memory_estimates.md`` in ``--out``
(default ``benchmarks/results``), written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (method, family, agents, pools, rounds, options)
CASES = [
    ("welfare", "uniform", 2_000, 50, 1, {}),
    ("greedy", "uniform", 2_000, 50, 4, {}),
    ("mtf", "gavel", 2_000, 6, 4, {}),
    ("welfare", "uniform", 20_000, 100, 1, {}),
    ("maxmin", "gavel", 2_000, 6, 1, {"fractional": True}),
    ("maxmin", "gavel", 300, 6, 1, {"time_limit": 20}),
    ("vcg", "neocloud", 1_000, 20, 1, {}),
    ("themis", "gavel", 2_000, 6, 1, {"fractional": True}),
    ("migration", "uniform", 30, 4, 8, {"time_limit": 20}),
    ("auction", "uniform", 2_000, 50, 1, {}),
    ("auction", "uniform", 20_000, 100, 1, {}),
    ("greedy", "uniform", 20_000, 100, 1, {}),  # 600,000 edge-rounds: the compiled passes
    ("mtf", "uniform", 20_000, 100, 1, {}),
]

_CHILD = r"""
import json, resource, sys
import laissez_opt as lo
method, family, n, m, rounds, options, solve = json.loads(sys.argv[1])
params = {"rounds": rounds} if rounds > 1 else {}
inst = lo.generate(family, n, m, seed=1, **params)
inst.edge_utility, inst.counts, inst.weights  # the array views every run needs
estimate = lo.estimate(inst, method, **options)
if solve:
    result = lo.solve(inst, method, **options)
    status = result.status
else:
    status = "not solved"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"estimate": estimate.bytes(), "peak": peak, "status": status, "describe": estimate.describe()}))
"""


def measure(case, solve: bool) -> dict:
    method, family, n, m, rounds, options = case
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([method, family, n, m, rounds, options, solve])],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"{case}: {run.stderr.strip().splitlines()[-1]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the three smallest cases")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    from laissez_opt.io import write_atomic
    from laissez_opt.limits import format_bytes

    cases = CASES[:3] if args.quick else CASES
    rows = []
    print(f"{'method':<10} {'instance':<26} {'estimate':>11} {'measured':>11} {'ratio':>7}  status")
    for case in cases:
        base = measure(case, solve=False)
        full = measure(case, solve=True)
        used = max(full["peak"] - base["peak"], 0)
        # Below a megabyte the peak did not move measurably: no ratio to report.
        ratio = full["estimate"] / used if used >= 2**20 else None
        method, family, n, m, rounds, options = case
        label = f"{family} {n}x{m}x{rounds}" + (" frac" if options.get("fractional") else "")
        rows.append({"method": method, "instance": label, "options": options, "estimate_bytes": full["estimate"],
                     "measured_bytes": used, "ratio": ratio, "status": full["status"], "estimate": full["describe"]})
        shown = "-" if ratio is None else f"{ratio:.2f}"
        print(f"{method:<10} {label:<26} {format_bytes(full['estimate']):>11} {format_bytes(used):>11} "
              f"{shown:>7}  {full['status']}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "cpus": os.cpu_count()}
    write_atomic(out / "memory_estimates.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["| method | instance | estimate | measured peak increase | estimate / measured | status |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {r['method']} | {r['instance']} | {format_bytes(r['estimate_bytes'])} | "
              f"{format_bytes(r['measured_bytes'])} | {'-' if r['ratio'] is None else format(r['ratio'], '.2f')} | "
              f"{r['status']} |" for r in rows]
    write_atomic(out / "memory_estimates.md", "\n".join(lines) + "\n")
    low = [r for r in rows if r["ratio"] is not None and r["ratio"] < 1.0]
    if low:
        print(f"{len(low)} estimate(s) below the measured peak: " + ", ".join(r["method"] for r in low))
        return 1
    print("every estimate is at least the measured peak increase")
    return 0


if __name__ == "__main__":
    sys.exit(main())
