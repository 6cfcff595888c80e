"""Time to prove a result exactly (``lo.certify``) against the time to compute it (``lo.solve``).

For each case the script writes one seeded ``uniform`` instance to a temporary
JSON file and loads it back (so that certificates read the file's decimals, as
they do for users), solves it with ``lo.solve``, and times:

* ``certify``: ``lo.certify(instance, result)`` end to end: reading the
  instance's decimals exactly, building the certificate (HiGHS finds bases,
  each basis is solved again in rationals, repaired by exact pivots when
  needed), checking it without a solver and comparing it with the result;
* of which ``build`` (certificate) and ``check`` (the exact, solver-free check);
* ``reviewer``: what a reviewer runs later: ``lo.check_certificate`` on the
  certificate read back from its file, in a fresh process-like state (the
  instance reloaded, nothing cached).

Cases (``AGENTSxPOOLS`` of family ``uniform``, density 0.3 unless marked
``dense``: every agent compatible with every pool):

* ``welfare``: 100x10, 1000x100, 1000x100 dense (100,000 edges), 5000x100;
* ``maxmin`` (fractional, the leximin's level LPs): 100x10, 1000x100;
* ``themis`` (fractional: ``F(rho)`` at both ends of the bracket): 100x10, 1000x100;
* ``vcg`` (one LP per winner): 100x10, 300x30.

The target of issue 13 is welfare at 1,000 agents x 100 pools certified in
under 10 s.  ``--quick`` runs the 100x10 cases and welfare at 1000x100.

    python benchmarks/certify_scaling.py            # every case, a few minutes on 2 cores
    python benchmarks/certify_scaling.py --quick    # seconds
    python benchmarks/certify_scaling.py --out DIR  # results elsewhere

Writes ``certify_scaling.json`` and ``certify_scaling.md`` to ``--out``
(default ``benchmarks/results``), each atomically.  Exit status 1 if a case is
not proven.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import laissez_opt as lo
from laissez_opt.generate import generate
from laissez_opt.io import write_atomic

HERE = Path(__file__).resolve().parent
SEED = 1
TARGET_S = 10.0
CASES = [
    ("welfare", 100, 10, 0.3, {}),
    ("welfare", 1000, 100, 0.3, {}),
    ("welfare", 1000, 100, 1.0, {}),
    ("welfare", 5000, 100, 0.3, {}),
    ("maxmin", 100, 10, 0.3, {"fractional": True}),
    ("maxmin", 1000, 100, 0.3, {"fractional": True}),
    ("themis", 100, 10, 0.3, {"fractional": True}),
    ("themis", 1000, 100, 0.3, {"fractional": True}),
    ("vcg", 100, 10, 0.3, {}),
    ("vcg", 300, 30, 0.3, {}),
]
QUICK = [c for c in CASES if c[1] == 100 or (c[0] == "welfare" and c[1:4] == (1000, 100, 0.3))]


def run_case(method: str, agents: int, pools: int, density: float, options: dict, scratch: Path) -> dict:
    data = generate("uniform", agents, pools, seed=SEED, density=density)
    path = scratch / f"{method}-{agents}x{pools}-{density}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    inst = lo.load(path)
    t0 = time.perf_counter()
    result = lo.solve(inst, method, **options)
    solve_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    report = lo.certify(inst, result)
    certify_s = time.perf_counter() - t1
    cert_path = scratch / "certificate.json"
    reviewer_s = None
    reviewer_ok = None
    if report.certificate is not None:
        cert_path.write_text(json.dumps(report.certificate.to_dict()), encoding="utf-8")
        fresh = lo.load(path)
        t2 = time.perf_counter()
        check = lo.check_certificate(fresh, cert_path)
        reviewer_s = time.perf_counter() - t2
        reviewer_ok = check.ok
    return {
        "method": method,
        "size": f"{agents}x{pools}" + (" dense" if density == 1.0 else ""),
        "agents": agents,
        "pools": pools,
        "edges": inst.n_edges,
        "options": options,
        "proven": report.proven,
        "failure": report.failure,
        "lps": len(report.lps),
        "repaired": report.repaired,
        "solve_s": solve_s,
        "certify_s": certify_s,
        "build_s": report.timing["build_s"],
        "check_s": report.timing["check_s"],
        "reviewer_s": reviewer_s,
        "reviewer_ok": reviewer_ok,
        "certificate_bytes": cert_path.stat().st_size if cert_path.exists() else None,
    }


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Exact certificates: certify time against solve time (uniform family)",
        "",
        f"Seed {meta['seed']}; {meta['machine']}; highspy {meta['highspy']}.",
        "",
        "| method | size | edges | LPs | proven | solve (s) | certify (s) | build (s) | exact check (s) | reviewer check (s) | certificate (kB) |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        reviewer = "-" if r["reviewer_s"] is None else f"{r['reviewer_s']:.2f}"
        size_kb = "-" if r["certificate_bytes"] is None else f"{r['certificate_bytes'] / 1024:.0f}"
        lines.append(
            f"| {r['method']} | {r['size']} | {r['edges']} | {r['lps']} | {'yes' if r['proven'] else 'NO'} | "
            f"{r['solve_s']:.2f} | {r['certify_s']:.2f} | {r['build_s']:.2f} | {r['check_s']:.2f} | {reviewer} | {size_kb} |"
        )
    target = [r for r in rows if r["method"] == "welfare" and r["size"] == "1000x100"]
    if target:
        r = target[0]
        met = "met" if r["proven"] and r["certify_s"] < TARGET_S else "NOT met"
        lines += ["", f"Target (welfare at 1000 x 100 certified in under {TARGET_S:g} s): {met} "
                      f"({r['certify_s']:.2f} s)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="The 100x10 cases and welfare at 1000x100 only.")
    parser.add_argument("--out", default=str(HERE / "results"), help="Output directory (default benchmarks/results).")
    args = parser.parse_args(argv)
    cases = QUICK if args.quick else CASES
    rows = []
    with tempfile.TemporaryDirectory(prefix="laissez-opt-certify-") as scratch:
        for method, agents, pools, density, options in cases:
            row = run_case(method, agents, pools, density, options, Path(scratch))
            rows.append(row)
            print(f"{method:8s} {row['size']:15s} edges {row['edges']:7d}  LPs {row['lps']:4d}  "
                  f"proven {row['proven']!s:5s}  solve {row['solve_s']:7.2f}s  certify {row['certify_s']:7.2f}s  "
                  f"reviewer {row['reviewer_s'] if row['reviewer_s'] is None else round(row['reviewer_s'], 2)}s"
                  + (f"  FAILURE: {row['failure']}" if not row["proven"] else ""), file=sys.stderr, flush=True)
    meta = {
        "seed": SEED,
        "quick": args.quick,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "highspy": metadata.version("highspy"),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "certify_scaling.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    text = markdown(rows, meta)
    write_atomic(out / "certify_scaling.md", text)
    print(text)
    return 0 if all(r["proven"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
