"""The independent verifier at 10^3 to 10^6 edges and at 10^6 gavel jobs, against the record walk and the solve.

For each case the instance is generated, solved with ``lo.solve(..., check=False)``
and its result verified three ways:

* ``verify``: the column check (``laissez_opt.analysis.verify.verify``), the one
  every ``lo.solve`` runs;
* ``reference``: the record-by-record walk it falls back on
  (``laissez_opt.analysis.verify._verify_records``, the verifier before the
  column check), run once and only when the previous size of the same case
  projects it under ``--reference-limit`` seconds;
* ``verify / solve``: the column check's share of the solve time (target of
  issue 16: at most 10% at every size).

Each repeat runs as ``lo.solve`` does: a garbage-collection pass, the solve, then
at once the check of its result, each timed; the share is of the two medians.
The table also gives the check timed alone right after a garbage-collection pass
(``verify, cold``): at the smallest sizes that pass evicts the caches and the
fixed numpy overhead of the check doubles, which ``lo.solve`` never sees.

Solve and verify times are medians of ``--repeat`` runs in the same process;
both verifiers must give the same verdict and objective.  Results go to
``verify_scaling.json`` and ``verify_scaling.md`` in ``--out`` (default
``benchmarks/results``), each written atomically.

    python benchmarks/verify_scaling.py             # uniform 10^3..10^6 edges, gavel 10^4..10^6 jobs
    python benchmarks/verify_scaling.py --quick     # three small cases, seconds
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from _common import machine as machine_of  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.analysis.verify import _verify_records, verify  # noqa: E402
from laissez_opt.io.jsonfile import write_atomic  # noqa: E402

#: (family, agents, pools, generator params, method, solve options)
FULL = [
    ("uniform", 100, 10, {"density": 1.0}, "welfare", {}),
    ("uniform", 1000, 10, {"density": 1.0}, "welfare", {}),
    ("uniform", 1000, 100, {"density": 1.0}, "welfare", {}),
    ("uniform", 10000, 100, {"density": 1.0}, "welfare", {}),
    ("gavel", 10_000, 3, {}, "maxmin", {"fractional": True}),
    ("gavel", 100_000, 3, {}, "maxmin", {"fractional": True}),
    ("gavel", 1_000_000, 3, {}, "maxmin", {"fractional": True}),
    ("gavel", 10_000, 3, {}, "welfare", {}),
    ("gavel", 100_000, 3, {}, "welfare", {}),
    ("gavel", 1_000_000, 3, {}, "welfare", {}),
    ("assignment", 1000, 2000, {}, "auction", {}),
]
QUICK = [FULL[0], FULL[2], ("gavel", 1000, 3, {}, "maxmin", {"fractional": True})]
TARGET_SHARE = 0.10
SEED = 0


def build(family: str, n: int, m: int, params: dict) -> lo.Instance:
    """A generated instance, or (``assignment``) every agent on every single-device pool, demand 1, utilities 0..1000."""
    if family != "assignment":
        return lo.generate(family, n, m, seed=SEED, **params)
    import numpy as np

    values = np.random.default_rng(SEED).integers(0, 1001, size=(n, m)).astype(float)
    pools = [lo.Pool(f"d{c}") for c in range(m)]
    agents = [lo.Agent(f"a{i}", demand=1) for i in range(n)]
    edges = [lo.Edge(f"a{i}", f"d{c}", v) for i, row in enumerate(values.tolist()) for c, v in enumerate(row)]
    return lo.Instance(pools, agents, edges, name=f"assignment-{n}x{m}")


def timed(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls and the last value."""
    times, value = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def same(a, b) -> bool:
    if a.ok != b.ok or a.violations != b.violations:
        return False
    if (a.objective is None) != (b.objective is None):
        return False
    return a.objective is None or math.isclose(a.objective, b.objective, rel_tol=1e-12, abs_tol=1e-12)


def measure(case, repeat: int, projected: float | None, limit: float, log) -> dict:
    family, n, m, params, method, options = case
    start = time.perf_counter()
    inst = build(family, n, m, params)
    t_generate = time.perf_counter() - start
    solves, checks = [], []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = lo.solve(inst, method, check=False, **options)
        middle = time.perf_counter()
        outcome = verify(inst, result)
        checks.append(time.perf_counter() - middle)
        solves.append(middle - start)
    t_solve, t_verify = statistics.median(solves), statistics.median(checks)
    t_cold, _ = timed(lambda: verify(inst, result), repeat)
    row = {
        "family": family, "agents": n, "pools": m, "edges": inst.n_edges, "method": method,
        "options": options, "records": len(result.allocation), "status": result.status,
        "times_s": {"generate": t_generate, "solve": t_solve, "verify": t_verify, "verify_cold": t_cold},
        "verified": outcome.ok, "verify_share": t_verify / t_solve, "verify_cold_share": t_cold / t_solve,
    }
    if projected is None or projected <= limit:
        t_reference, reference = timed(lambda: _verify_records(inst, result), 1)
        row["times_s"]["reference"] = t_reference
        row["same_verdict"] = same(outcome, reference)
    else:
        row["reference_skipped"] = f"projected {projected:.0f} s > {limit:g} s"
    ref = row["times_s"].get("reference")
    log(f"{family} {n}x{m} {method}: {inst.n_edges:,} edges, {len(result.allocation):,} records, solve {t_solve:.3f} s, "
        f"verify {t_verify:.4f} s ({100 * row['verify_share']:.1f}%; cold {100 * row['verify_cold_share']:.1f}%), reference "
        + (f"{ref:.3f} s ({ref / t_verify:.0f}x)" if ref is not None else row["reference_skipped"]))
    return row


def machine() -> dict:
    return machine_of("laissez-opt", "highspy", "numpy")

def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# The independent verifier: column check against the record walk and the solve",
        "",
        f"Machine: {m['cpu_count']} CPUs, {m['system']}, Python {m['python']}, highspy {m['highspy']}, "
        f"numpy {m['numpy']}.  Solve and verify: median of {report['repeat']} runs, the check right after its solve "
        f"as in `lo.solve`; verify, cold: the check alone after a garbage-collection pass; the record walk: one run, "
        f"skipped when projected over {report['reference_limit_s']:g} s.  Times in seconds.  Target: verify at most "
        f"{100 * TARGET_SHARE:.0f}% of the solve.",
        "",
        "| instance | method | edges | records | solve | verify | verify / solve | verify, cold | cold / solve "
        "| record walk | walk / verify | same verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rows"]:
        t = r["times_s"]
        method = r["method"] + (" (fractional)" if r["options"].get("fractional") else "")
        ref = t.get("reference")
        walk = f"{ref:.3f}" if ref is not None else f"skipped ({r['reference_skipped']})"
        speedup = f"{ref / t['verify']:.0f}x" if ref is not None else "-"
        lines.append(
            f"| {r['family']} {r['agents']:,} x {r['pools']} | {method} | {r['edges']:,} | {r['records']:,} | "
            f"{t['solve']:.4f} | {t['verify']:.4f} | {100 * r['verify_share']:.1f}% | {t['verify_cold']:.4f} | "
            f"{100 * r['verify_cold_share']:.1f}% | {walk} | "
            f"{speedup} | "
            f"{('yes' if r['same_verdict'] else 'NO') if 'same_verdict' in r else '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="three small cases only")
    parser.add_argument("--repeat", type=int, default=3, help="runs of solve and verify; the median is kept (default 3)")
    parser.add_argument("--reference-limit", type=float, default=60.0,
                        help="skip the record walk when projected over this many seconds (default 60)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.reference_limit <= 0:
        parser.error("--repeat must be >= 1 and --reference-limit > 0")
    log = functools.partial(print, flush=True)
    report = {"benchmark": "verify_scaling", "machine": machine(), "repeat": args.repeat,
              "reference_limit_s": args.reference_limit, "target_share": TARGET_SHARE, "rows": []}
    log(f"verify_scaling: {report['machine']}")
    last: dict[tuple, tuple[int, float]] = {}
    for case in QUICK if args.quick else FULL:
        key = (case[0], case[4], case[2])
        projected = None
        if key in last:
            edges, seconds = last[key]
            projected = seconds * case[1] * case[2] / max(edges, 1)
        row = measure(case, args.repeat, projected, args.reference_limit, log)
        report["rows"].append(row)
        if "reference" in row["times_s"]:
            last[key] = (row["agents"] * row["pools"], row["times_s"]["reference"])
        else:
            last.pop(key, None)
            last[key] = (row["agents"] * row["pools"], projected)
    table = markdown(report)
    log("\n" + table)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "verify_scaling.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_atomic(args.out / "verify_scaling.md", table)
    ok = all(r["verified"] and r.get("same_verdict", True) for r in report["rows"])
    log(f"every result verified and both verifiers agree: {'yes' if ok else 'NO'}; "
        f"results in {args.out.name}/verify_scaling.{{json,md}}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
