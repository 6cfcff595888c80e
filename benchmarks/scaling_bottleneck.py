"""Exact integral leximin for unit-demand jobs: lexicographic bottleneck b-matching against the MILPs.

Instances: ``generate("gavel", N, 3, seed=1)`` with every demand set to 1; the
``:caps`` sizes use ``max_count=N`` (pools of up to N GPUs, about 1.7 N GPUs in
all, so most jobs can be served and the leximin is not trivially 0).  Routes:

* ``bottleneck``: ``lo.solve(inst, "maxmin")`` (integral; ``bottleneck="auto"``, the
  default for one round and unit demands): min-cost flow stages;
* ``milp``: ``lo.solve(inst, "maxmin", bottleneck="off", time_limit=--milp-limit)``,
  the ordered-outcome MILPs, at sizes up to ``--milp-max`` jobs.

Both include the independent verification.  Where both finish optimal, the
sorted leximin vectors must agree (relative 1e-6), else exit status 1.  Times
are medians over ``--repeat`` runs (the MILP runs once).

    python benchmarks/scaling_bottleneck.py
    python benchmarks/scaling_bottleneck.py --sizes 16:caps,1000:caps --repeat 1 --out scratch-results

Writes ``scaling_bottleneck.json`` and ``.md`` to ``--out`` (default ``benchmarks/results``), atomically.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "16:caps,32:caps,64:caps,1000:caps,10000:caps,10000,100000:caps"
TARGET_S, TARGET_JOBS = 10.0, 10_000


def make(jobs: int, caps: bool):
    from laissez_opt.generate import generate
    from laissez_opt.io import instance_from_dict

    data = generate("gavel", jobs, 3, seed=1, **({"max_count": jobs} if caps else {}))
    for agent in data["agents"]:
        agent["demand"] = 1
    return instance_from_dict(data, f"gavel {jobs} unit demands")


def _sorted(result, inst):
    excluded = set(result.details.get("excluded", []))
    return sorted(result.details["leximin"][a.id] for a in inst.agents if a.id not in excluded)


def main(argv=None) -> int:
    import laissez_opt as lo
    from laissez_opt.errors import NoSolutionError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--milp-max", type=int, default=64)
    parser.add_argument("--milp-limit", type=float, default=60.0)
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--quick", action="store_true", help="16 and 1,000 jobs, one run, MILP limit 20 s")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat, args.milp_limit = "16:caps,1000:caps", 1, 20.0
    lo.solve(make(8, True), "maxmin")  # imports, not measured
    rows, ok = [], True
    for part in filter(None, (p.strip() for p in args.sizes.split(","))):
        jobs_text, _, kind = part.partition(":")
        jobs, caps = int(jobs_text), kind == "caps"
        inst = make(jobs, caps)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            fast = lo.solve(inst, "maxmin")
            times.append(time.perf_counter() - start)
        row = {"jobs": jobs, "caps": caps, "gpus": int(inst.counts.sum()), "status": fast.status, "gap": fast.gap,
               "objective": fast.objective, "seconds": statistics.median(times), "verified": fast.verified,
               "stages": fast.details["bottleneck"]["stages"], "levels": fast.details["bottleneck"]["levels"],
               "milp": None}
        if jobs <= args.milp_max:
            start = time.perf_counter()
            try:
                milp = lo.solve(inst, "maxmin", bottleneck="off", time_limit=args.milp_limit)
                row["milp"] = {"status": milp.status, "objective": milp.objective, "bound": milp.bound,
                               "gap": milp.gap, "seconds": time.perf_counter() - start}
                if milp.status == "optimal":
                    a, b = _sorted(fast, inst), _sorted(milp, inst)
                    same = len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b))
                    row["milp"]["agrees"] = same
                    ok &= same
            except NoSolutionError as exc:
                row["milp"] = {"status": "no incumbent", "seconds": time.perf_counter() - start, "message": str(exc)}
        rows.append(row)
        milp_text = "-" if row["milp"] is None else f"{row['milp']['status']} {row['milp']['seconds']:.1f} s"
        print(f"{jobs:>7,d}{':caps' if caps else '':5s} GPUs {row['gpus']:>7,d}  bottleneck {row['seconds']:7.2f} s "
              f"({row['stages']} stages, {row['levels']} levels) {fast.status} min {fast.objective:.6f}  "
              f"milp {milp_text}", flush=True)
    lines = ["| jobs | GPUs | status | gap | min value | bottleneck b-matching (s) | stages | MILP route |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        m = r["milp"]
        if m is None:
            milp = "not run"
        else:
            gap = m.get("gap")
            milp = f"{m['status']}, {m['seconds']:.1f} s" + ("" if gap is None else f", gap {gap:.2g}")
        lines.append(f"| {r['jobs']:,}{' (caps)' if r['caps'] else ''} | {r['gpus']:,} | {r['status']} | {r['gap']:.1g} | "
                     f"{r['objective']:.6f} | {r['seconds']:.2f} | {r['stages']} | {milp} |")
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    target = [r for r in rows if r["jobs"] >= TARGET_JOBS and r["jobs"] <= TARGET_JOBS]
    verdict = "not measured" if not target else ("met" if all(r["seconds"] < TARGET_S for r in target) else "missed")
    print(f"target (exact, < {TARGET_S:g} s at {TARGET_JOBS:,} unit-demand jobs, verification included): {verdict}")
    out = Path(args.out)
    write_report(out / "scaling_bottleneck.json", json.dumps({"rows": rows, "target": verdict}, indent=2))
    write_report(out / "scaling_bottleneck.md", "# Integral leximin, unit demands (gavel, 3 types)\n\n" + text
           + f"\nTarget (exact, < {TARGET_S:g} s at {TARGET_JOBS:,} jobs, verification included): {verdict}\n")
    return 0 if ok and all(r["verified"] and r["status"] == "optimal" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
