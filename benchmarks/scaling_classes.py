"""Exact symmetry compression at scale: fractional leximin (``maxmin``) and Themis on the gavel family.

For each size (``generate("gavel", N, 3, seed=0)``, three accelerator types; the
``:caps`` sizes use ``max_count=N``, pools of up to N GPUs, where demand caps bind
and the leximin has many levels) the script times, separately:

* ``generate``: building the instance (Python records; reported, not part of a solve);
* ``classes on``: the method's run function with ``compress="on"`` (finding the
  classes, the class solve, the exact expansion, the result records);
* ``classes off``: the same with ``compress="off"`` (the model over every agent),
  only up to ``--off-max`` jobs (it grows about quadratically);
* ``verify``: the independent verifier on the expanded allocation.

The compressed and uncompressed objectives must agree (relative 1e-6), else the
script exits with status 1.  Times are medians over ``--repeat`` runs, the two
routes alternating (one run at sizes of 10^6 jobs and more).

    python benchmarks/scaling_classes.py                       # 1,024 .. 1,000,000 jobs, both pool sizes
    python benchmarks/scaling_classes.py --sizes 1024,8192 --repeat 1 --out scratch-results

Writes ``scaling_classes.json`` and ``scaling_classes.md`` to ``--out`` (default
``benchmarks/results``), each through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "1024,8192,131072,1000000,1024:caps,8192:caps,131072:caps,1000000:caps"
TARGET_S = 10.0
TARGET_JOBS = 1_000_000
METHODS = ("maxmin", "themis")


def _run(method: str, inst, compress: str):
    from laissez_opt.exact.maxmin import solve_maxmin
    from laissez_opt.exact.themis import solve_themis

    start = time.perf_counter()
    if method == "maxmin":
        result = solve_maxmin(inst, fractional=True, compress=compress)
    else:
        result = solve_themis(inst, fractional=True, compress=compress)
    return result, time.perf_counter() - start


def measure(jobs: int, caps: bool, repeat: int, off_max: int) -> list[dict]:
    import laissez_opt as lo
    from laissez_opt.analysis.verify import verify

    t0 = time.perf_counter()
    inst = lo.generate("gavel", jobs, 3, seed=0, **({"max_count": jobs} if caps else {}))
    gen_s = time.perf_counter() - t0
    rows = []
    runs = 1 if jobs >= 1_000_000 else repeat
    for method in METHODS:
        routes = ["on"] + (["off"] if jobs <= off_max else [])
        times = {r: [] for r in routes}
        results = {}
        for _ in range(runs):
            for route in routes:
                result, seconds = _run(method, inst, route)
                times[route].append(seconds)
                results[route] = result
        on = results["on"]
        t1 = time.perf_counter()
        verified = verify(inst, on).ok
        verify_s = time.perf_counter() - t1
        off = results.get("off")
        agree = off is None or abs(on.objective - off.objective) <= 1e-6 * max(1.0, abs(off.objective))
        row = {
            "method": method, "jobs": jobs, "caps": caps, "classes": on.details["compression"]["classes"],
            "generate_s": gen_s, "on_s": statistics.median(times["on"]),
            "off_s": statistics.median(times["off"]) if off is not None else None,
            "verify_s": verify_s, "status": on.status, "objective": on.objective,
            "bound": on.bound, "gap": on.gap,
            "levels": len(on.details.get("levels", [])) if method == "maxmin" else None,
            "off_objective": off.objective if off is not None else None, "agree": agree, "verified": verified,
            "runs": runs,
        }
        rows.append(row)
        off_text = "-" if row["off_s"] is None else f"{row['off_s']:.2f} s"
        print(f"{method:7s} {jobs:>9,d} jobs{':caps' if caps else '':5s}  classes {row['classes']:3d}  on {row['on_s']:7.2f} s  off {off_text:>9s}  "
              f"verify {verify_s:6.2f} s  generate {gen_s:6.2f} s  {on.status} gap {on.gap}  agree {agree}",
              flush=True)
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| method | jobs | pools | classes | levels | status | gap | solve, classes on (s) | solve, classes off (s) | speed-up | "
        "verify (s) | generate (s) | runs |",
        "| --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        off = "-" if r["off_s"] is None else f"{r['off_s']:.2f}"
        speed = "-" if r["off_s"] is None else f"{r['off_s'] / r['on_s']:.2g}x"
        gap = "n/a" if r["gap"] is None else f"{r['gap']:.1e}"
        pools = "up to N GPUs" if r["caps"] else "up to 8 GPUs"
        levels = "-" if r["levels"] is None else r["levels"]
        lines.append(f"| {r['method']} | {r['jobs']:,} | {pools} | {r['classes']} | {levels} | {r['status']} | {gap} | {r['on_s']:.2f} | "
                     f"{off} | {speed} | {r['verify_s']:.2f} | {r['generate_s']:.2f} | {r['runs']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--off-max", type=int, default=8192)
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--quick", action="store_true", help="1,024 jobs only (both pool sizes), one run")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeat = "1024,1024:caps", 1
    sizes = []
    for part in filter(None, (p.strip() for p in args.sizes.split(","))):
        jobs, _, kind = part.partition(":")
        if kind not in ("", "caps") or not jobs.isdigit():
            raise SystemExit(f"bad size {part!r}: expected JOBS or JOBS:caps")
        sizes.append((int(jobs), kind == "caps"))
    import laissez_opt as lo

    warm = lo.generate("gavel", 64, 3, seed=0)  # imports and first-call costs, not measured
    for method in METHODS:
        for route in ("on", "off"):
            _run(method, warm, route)
    rows = []
    for jobs, caps in sizes:
        rows.extend(measure(jobs, caps, args.repeat, args.off_max))
    text = table(rows)
    print()
    print(text)
    met = {m: (lambda big: None if not big else all(r["on_s"] < TARGET_S for r in big))(
        [r for r in rows if r["method"] == m and r["jobs"] >= TARGET_JOBS]) for m in METHODS}
    summary = {m: ("not measured" if v is None else ("met" if v else "missed")) for m, v in met.items()}
    print(f"target (< {TARGET_S:g} s at {TARGET_JOBS:,} jobs, solve only): {summary}")
    import highspy  # noqa: F401
    from importlib import metadata

    machine = {"cpu_count": os.cpu_count(), "python": platform.python_version(),
               "highspy": metadata.version("highspy"), "ortools": metadata.version("ortools")}
    out = Path(args.out)
    write_report(out / "scaling_classes.json", json.dumps({"rows": rows, "target": summary, "machine": machine}, indent=2))
    write_report(out / "scaling_classes.md", "# Exact symmetry compression (gavel, 3 types)\n\n" + text
           + f"\nTarget (< {TARGET_S:g} s at {TARGET_JOBS:,} jobs, solve only): {summary}\n")
    return 0 if all(r["agree"] and r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
