"""The forward auction against ``scipy.optimize.linear_sum_assignment`` and against ``welfare``.

Table 1 (assignment): for each ``n`` in ``--sizes`` and each shape (``n x n`` and
``n x 2n``) and value kind (integers uniform on ``0..1000``; floats uniform on
``[0, 1000)``), one seeded dense value matrix is solved by

* ``scipy``: ``linear_sum_assignment(values, maximize=True)`` (compiled C++,
  shortest augmenting paths), whose objective is the optimum;
* ``auction``: :func:`laissez_opt.heuristics.auction.auction_matrix` (the same
  numba kernel ``lo.solve(inst, "auction")`` runs), default options: final eps
  ``1/(n+1)`` on integers (provably optimal), ``max(1e-9 * max value / n, max value * 2**-40)`` on floats.

Both are timed alternately, ``--repeat`` times, and the fastest of each is kept
(the machine may be shared).  ``auction`` is the whole call (input checks, transposed
copy, kernel, dual bound); ``kernel`` is the compiled part alone.  ``ratio =
auction / scipy``; ``gap = (optimum - auction) / optimum``; ``bound gap`` is the
auction's own certified ``(bound - objective) / objective``.

Table 2 (``lo.solve`` end to end, verification included): ``welfare`` on its default
route (``solver="auto"``: min-cost flow for these transportation structures), on HiGHS
(``solver="highs"``, the default before), on OR-Tools (min-cost flow) and ``auction``, on instances of
the ``uniform`` family (b-matching: pools of 1-4 devices, demands 1-3 or unbounded,
utilities with 4 decimals) and ``NxM:assignment`` instances (dense, demand 1,
single-device pools, integer utilities 0..1000).

Table 3 (the public path, ``--public``): ``lo.solve(inst, "auction")`` (verifier
included) on a dense ``n x 2n`` assignment instance built from records, against
``linear_sum_assignment`` on the same values in the same run (medians of 3
alternating runs; ``--repeat`` runs when more than 3); ``cold`` is the first call on the
new instance (its array views built from the records).  The parts ``lo.solve`` spends
outside the method are timed on the same result: ``verify`` (the independent check),
``records`` (the allocation records) and ``metrics`` (the welfare and sharing figures);
``own = lo.solve - verify - records - metrics`` is the method's path.  ``--public-only``
runs this table alone (results in ``auction_public.{json,md}``).

Compilation: the first call on a machine compiles the kernel (``cache=True`` stores it
on disk); the script measures a cold compile and a cached first call in fresh
processes, with a temporary ``NUMBA_CACHE_DIR`` so the repository's cache is untouched.

Results go to ``auction_scaling.json`` and ``auction_scaling.md`` in ``--out``
(default ``benchmarks/results``), written atomically.

    python benchmarks/auction_scaling.py            # n = 500, 1000, 2000, 4000
    python benchmarks/auction_scaling.py --quick    # n = 200, 500; small end-to-end sizes
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.heuristics.auction import auction_matrix

HERE = Path(__file__).resolve().parent
SIZES = "500,1000,2000,4000"
QUICK_SIZES = "200,500"
E2E = "1000x100,10000x100,1000x2000:assignment"
QUICK_E2E = "200x20,100x200:assignment"
PUBLIC = "1000x2000,2000x4000"
QUICK_PUBLIC = "200x400"
SEED = 7

COMPILE_PROBE = """
import time
t0 = time.perf_counter()
from laissez_opt.heuristics.auction import auction_matrix
t1 = time.perf_counter()
auction_matrix([[3.0, 1.0], [2.0, 2.5]])
t2 = time.perf_counter()
auction_matrix([[3.0, 1.0], [2.0, 2.5]])
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def compile_times() -> dict:
    """Cold compile and cached first call, each in a fresh process with a private numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        runs = []
        for _ in range(2):  # the first run compiles and stores; the second loads
            proc = subprocess.run([sys.executable, "-c", COMPILE_PROBE], capture_output=True, text=True, env=env,
                                  timeout=600, check=True)
            runs.append([float(v) for v in proc.stdout.split()])
    (imp0, call0, warm0), (imp1, call1, _warm1) = runs
    return {"import_s": imp1, "cold_first_call_s": call0, "cached_first_call_s": call1, "warm_call_s": warm0,
            "cold_import_s": imp0}


def assignment_row(n: int, shape: str, kind: str, repeat: int, rng) -> dict:
    m = n if shape == "square" else 2 * n
    if kind == "int":
        values = rng.integers(0, 1001, size=(n, m)).astype(np.float64)
    else:
        values = rng.random((n, m)) * 1000.0
    best_scipy = best_auction = best_kernel = float("inf")
    for _ in range(repeat):
        t, (rows, cols) = _timed(lambda: linear_sum_assignment(values, maximize=True))
        best_scipy = min(best_scipy, t)
        t, out = _timed(lambda: auction_matrix(values))
        best_auction, best_kernel = min(best_auction, t), min(best_kernel, out.solve_s)
    optimum = float(values[rows, cols].sum())
    return {
        "n": n,
        "m": m,
        "shape": shape,
        "values": kind,
        "scipy_s": best_scipy,
        "auction_s": best_auction,
        "kernel_s": best_kernel,
        "ratio": best_auction / best_scipy,
        "kernel_ratio": best_kernel / best_scipy,
        "optimum": optimum,
        "auction": out.welfare,
        "gap": (optimum - out.welfare) / optimum,
        "bound_gap": (out.bound - out.welfare) / out.welfare,
        "guarantee": out.guarantee,
        "eps_final": out.eps_final,
        "proven_optimal": out.proven_optimal,
        "phases": out.phases,
        "bids": out.bids,
        "reverse_steps": out.reverse_steps,
    }


def _assignment_instance(n: int, m: int, seed: int) -> "lo.Instance":
    """Every agent compatible with every single-device pool, demand 1, integer utilities 0..1000."""
    rng = np.random.default_rng(seed)
    util = rng.integers(0, 1001, size=(n, m)).astype(float)
    pools = [lo.Pool(f"c{c}") for c in range(m)]
    agents = [lo.Agent(f"a{i}", demand=1) for i in range(n)]
    edges = [lo.Edge(f"a{i}", f"c{c}", float(util[i, c])) for i in range(n) for c in range(m)]
    return lo.Instance(pools, agents, edges, name=f"assignment-{n}x{m}")


def end_to_end_row(size: str, repeat: int) -> dict:
    """``lo.solve`` with welfare on its default route, on HiGHS and on OR-Tools (min-cost flow), and auction."""
    shape, _, kind = size.partition(":")
    n, m = (int(v) for v in shape.split("x"))
    inst = _assignment_instance(n, m, SEED) if kind == "assignment" else lo.generate("uniform", n, m, seed=SEED)
    runs = {"welfare_default": ("welfare", {}), "welfare_highs": ("welfare", {"solver": "highs"}),
            "welfare_ortools": ("welfare", {"solver": "ortools"}), "auction": ("auction", {})}
    best, results = {}, {}
    for _ in range(repeat):
        for key, (method, opts) in runs.items():
            t, res = _timed(lambda: lo.solve(inst, method, **opts))
            best[key] = min(best.get(key, float("inf")), t)
            results[key] = res
    optimum, auction = results["welfare_highs"].objective, results["auction"]
    return {
        "size": size,
        "kind": kind or "uniform",
        "agents": n,
        "pools": m,
        "devices": int(inst.counts.sum()),
        "edges": inst.n_edges,
        "welfare_default_s": best["welfare_default"],
        "welfare_default_route": results["welfare_default"].route,
        "welfare_highs_s": best["welfare_highs"],
        "welfare_ortools_s": best["welfare_ortools"],
        "auction_s": best["auction"],
        "auction_solve_s": auction.timing["solve_s"],
        "ratio_default": best["auction"] / best["welfare_default"],
        "ratio_highs": best["auction"] / best["welfare_highs"],
        "ratio_ortools": best["auction"] / best["welfare_ortools"],
        "optimum": optimum,
        "auction": auction.objective,
        "gap": (optimum - auction.objective) / optimum,
        "bound_gap": auction.gap,
        "proven_optimal": auction.details["proven_optimal"],
        "guarantee": auction.details["guarantee"],
        "persons": auction.details["persons"][0],
    }


def public_row(n: int, m: int, repeat: int) -> dict:
    """``lo.solve(inst, "auction")`` on a record-built assignment instance against scipy (module docstring).

    Besides the whole call, the parts ``lo.solve`` spends outside the method are timed on
    the same result: the verifier, the allocation records (``allocation_records``) and the
    welfare/sharing figures (``basic_metrics``); ``own`` is what is left, the method's path.
    """
    import statistics

    from laissez_opt.analysis.metrics import basic_metrics
    from laissez_opt.analysis.verify import verify
    from laissez_opt.result import allocation_records

    inst = _assignment_instance(n, m, SEED)
    values = np.random.default_rng(SEED).integers(0, 1001, size=(n, m)).astype(float)  # the instance's utilities
    gc.collect()
    cold, res = _timed(lambda: lo.solve(inst, "auction"))
    scipy_s, solve_s, verify_s, records_s, metrics_s = [], [], [], [], []
    for _ in range(repeat):
        t, (rows, cols) = _timed(lambda: linear_sum_assignment(values, maximize=True))
        scipy_s.append(t)
        t, res = _timed(lambda: lo.solve(inst, "auction"))
        solve_s.append(t)
        verify_s.append(_timed(lambda: verify(inst, res))[0])
        records_s.append(_timed(lambda: allocation_records(inst, res.amounts))[0])
        utilities = np.array([res.utilities[a.id] for a in inst.agents])
        metrics_s.append(_timed(lambda: basic_metrics(inst, utilities))[0])
    optimum = float(values[rows, cols].sum())
    med = statistics.median
    outside = med(verify_s) + med(records_s) + med(metrics_s)
    return {
        "agents": n, "pools": m, "edges": inst.n_edges, "repeat": repeat, "scipy_s": med(scipy_s),
        "solve_s": med(solve_s), "solve_cold_s": cold, "verify_s": med(verify_s), "records_s": med(records_s),
        "metrics_s": med(metrics_s), "own_s": med(solve_s) - outside,
        "kernel_s": res.timing["solve_s"], "ratio": med(solve_s) / med(scipy_s), "cold_ratio": cold / med(scipy_s),
        "outside_ratio": outside / med(scipy_s), "own_ratio": (med(solve_s) - outside) / med(scipy_s),
        "gap": (optimum - res.objective) / optimum,
    }


def markdown(rows: list[dict], e2e: list[dict], compile_info: dict, meta: dict, public: list[dict] = ()) -> str:
    lines = [
        "# Forward auction against scipy's linear_sum_assignment and the exact welfare model",
        "",
        f"Machine: {meta['machine']}; Python {meta['python']}; numpy {meta['numpy']}; scipy {meta['scipy']}; "
        f"numba {meta['numba']}; load average at the start {meta['load']}. Fastest of {meta['repeat']} alternating runs.",
        "",
        "| n | m | values | scipy (s) | auction (s) | kernel (s) | ratio | gap | certified bound gap | proven optimal | phases | bids | reverse steps |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    if not rows:
        del lines[-3:]  # a public-only run: no Table 1
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['m']} | {r['values']} | {r['scipy_s']:.4g} | {r['auction_s']:.4g} | {r['kernel_s']:.4g} | "
            f"{r['ratio']:.2f} | {r['gap']:.1e} | {r['bound_gap']:.1e} | {'yes' if r['proven_optimal'] else 'no'} | "
            f"{r['phases']} | {r['bids']} | {r['reverse_steps']} |"
        )
    lines += [
        "",
        "`lo.solve` end to end (verification included); `uniform` family, or a dense assignment "
        "(demand 1, single-device pools, integer utilities 0..1000):",
        "",
        "| instance | devices | edges | persons | welfare default (s) | welfare HiGHS (s) | welfare OR-Tools (s) | auction (s) "
        "| auction kernel (s) | auction / default | auction / HiGHS | auction / OR-Tools | gap | certified bound gap "
        "| proven optimal |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    if not e2e:
        del lines[-5:]  # no Table 2
    for r in e2e:
        lines.append(
            f"| {r['size']} | {r['devices']} | {r['edges']} | {r['persons']} | {r['welfare_default_s']:.4g} | "
            f"{r['welfare_highs_s']:.4g} | {r['welfare_ortools_s']:.4g} | {r['auction_s']:.4g} | {r['auction_solve_s']:.4g} | "
            f"{r['ratio_default']:.2g} | {r['ratio_highs']:.2g} | "
            f"{r['ratio_ortools']:.2g} | {r['gap']:.1e} | {r['bound_gap']:.1e} | {'yes' if r['proven_optimal'] else 'no'} |"
        )
    if public:
        lines += [
            "",
            "Public path: `lo.solve(inst, \"auction\")` (verifier included) on a dense assignment instance built from "
            "records, against `linear_sum_assignment` on the same values (medians of alternating runs; `cold` is the "
            "first call on the instance):",
            "",
            "| n | m | edges | scipy (s) | lo.solve (s) | lo.solve / scipy | kernel (s) | verify (s) | records (s) "
            "| metrics (s) | (verify + records + metrics) / scipy | own / scipy | cold lo.solve (s) | cold / scipy | gap |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in public:
            lines.append(
                f"| {r['agents']} | {r['pools']} | {r['edges']:,} | {r['scipy_s']:.4f} | {r['solve_s']:.4f} | "
                f"{r['ratio']:.1f} | {r['kernel_s']:.4f} | {r['verify_s']:.4f} | {r['records_s']:.4f} | "
                f"{r['metrics_s']:.4f} | {r['outside_ratio']:.1f} | {r['own_ratio']:.1f} | {r['solve_cold_s']:.3f} | "
                f"{r['cold_ratio']:.1f} | {r['gap']:.1e} |"
            )
    if compile_info:
        lines += [
            "",
            f"Compilation (fresh processes, private cache): import {compile_info['import_s']:.2f} s; first call with an "
            f"empty cache {compile_info['cold_first_call_s']:.2f} s (compiles and stores); first call with the cache "
            f"{compile_info['cached_first_call_s']:.2f} s; later calls {compile_info['warm_call_s'] * 1e3:.2f} ms.",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help=f"comma-separated n (default {SIZES})")
    parser.add_argument("--e2e", default=None, help=f"comma-separated AGENTSxPOOLS[:assignment] for lo.solve (default {E2E})")
    parser.add_argument("--quick", action="store_true", help=f"n = {QUICK_SIZES}; end to end {QUICK_E2E}")
    parser.add_argument("--repeat", type=int, default=None, help="alternating timings per case (default 3; 2 with --quick)")
    parser.add_argument("--skip-compile", action="store_true", help="do not measure compilation in fresh processes")
    parser.add_argument("--public", default=None,
                        help=f"NxM sizes of the public-path table (default {PUBLIC}; 'none' skips it)")
    parser.add_argument("--public-only", action="store_true",
                        help="only the public-path table (no Tables 1 and 2, no compile timing)")
    parser.add_argument("--out", default=str(HERE / "results"), help="output directory")
    args = parser.parse_args(argv)
    sizes = [int(v) for v in (args.sizes or (QUICK_SIZES if args.quick else SIZES)).split(",")]
    e2e_sizes = (args.e2e or (QUICK_E2E if args.quick else E2E)).split(",")
    if args.public_only:
        sizes, e2e_sizes, args.skip_compile = [], [], True
    repeat = args.repeat or (2 if args.quick else 3)
    meta = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": metadata.version("scipy"),
        "numba": metadata.version("numba"),
        "laissez_opt": metadata.version("laissez-opt"),
        "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
        "repeat": repeat,
    }
    compile_info = None if args.skip_compile else compile_times()
    if compile_info:
        print(f"compile: cold first call {compile_info['cold_first_call_s']:.2f} s, cached first call "
              f"{compile_info['cached_first_call_s']:.2f} s, import {compile_info['import_s']:.2f} s")
    auction_matrix([[1.0]])  # load the compiled kernel in this process
    rng = np.random.default_rng(SEED)
    rows = []
    print(f"{'n':>5} {'m':>5} {'values':>6} {'scipy s':>9} {'auction s':>10} {'kernel s':>9} {'ratio':>6} {'gap':>8} {'proven':>6}")
    for n in sizes:
        for shape in ("square", "rect"):
            for kind in ("int", "float"):
                r = assignment_row(n, shape, kind, repeat, rng)
                rows.append(r)
                print(f"{r['n']:>5} {r['m']:>5} {kind:>6} {r['scipy_s']:>9.4f} {r['auction_s']:>10.4f} {r['kernel_s']:>9.4f} "
                      f"{r['ratio']:>6.2f} {r['gap']:>8.1e} {str(r['proven_optimal']):>6}", flush=True)
    e2e = []
    for size in e2e_sizes:
        r = end_to_end_row(size, repeat)
        e2e.append(r)
        print(f"lo.solve {size}: welfare default ({r['welfare_default_route']}) {r['welfare_default_s']:.3f} s, "
              f"HiGHS {r['welfare_highs_s']:.3f} s, OR-Tools {r['welfare_ortools_s']:.3f} s, "
              f"auction {r['auction_s']:.3f} s (kernel {r['auction_solve_s']:.3f} s), gap {r['gap']:.1e}, "
              f"certified {r['bound_gap']:.1e}", flush=True)
    public = []
    public_sizes = args.public or (QUICK_PUBLIC if args.quick else PUBLIC)
    for size in ([] if public_sizes == "none" else public_sizes.split(",")):
        n, m = (int(v) for v in size.split("x"))
        r = public_row(n, m, max(3, repeat))
        public.append(r)
        print(f"public path {size}: scipy {r['scipy_s']:.4f} s, lo.solve {r['solve_s']:.4f} s ({r['ratio']:.1f}x; "
              f"verify {r['verify_s']:.4f} s, records {r['records_s']:.4f} s, metrics {r['metrics_s']:.4f} s: "
              f"{r['outside_ratio']:.1f}x; own {r['own_ratio']:.1f}x), cold {r['solve_cold_s']:.3f} s "
              f"({r['cold_ratio']:.1f}x)", flush=True)
    out = Path(args.out)
    payload = {"meta": meta, "compile": compile_info, "assignment": rows, "end_to_end": e2e, "public_path": public}
    stem = "auction_public" if args.public_only else "auction_scaling"  # a public-only run keeps the full report
    write_report(out / f"{stem}.json", json.dumps(payload, indent=2) + "\n")
    write_report(out / f"{stem}.md", markdown(rows, e2e, compile_info, meta, public))
    bad = [r for r in rows if r["gap"] < -1e-9 or r["bound_gap"] < -1e-12]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
