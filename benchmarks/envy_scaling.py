"""Time of the envy figures (``envy_report``) on its two exact routes, from 10^2 to 10^5 agents.

Routes, timed alternately ``--repeat`` times each on the same allocation (median kept;
the machine may be shared):

* ``sparse``: one sparse product ``U X^T`` (scipy), the route of every size before
  and still the route up to ``ENVY_BLOCKED_FROM`` agents; its memory grows with the
  nonzero (agent, agent) pairs, so it is skipped where that count passes
  ``--sparse-limit`` (default 2 x 10^8 pairs, about 3 GB of sparse entries);
* ``blocked``: agents holding the same bundle at the same weight as one column,
  the ``n x D`` values formed in row blocks of bounded size (numpy); above
  ``ENVY_MAX_PAIRS`` (agent, distinct bundle) pairs it only reports why it skips
  (the time shown is then that of grouping the bundles).

Two allocations per size, both on ``uniform`` instances with 10 pools (density 0.3,
about 3 edges per agent):

* ``integral``: each agent holds one device of one of its pools with probability 1/2
  (the shape of a welfare or heuristic result: few distinct bundles);
* ``fractional``: every edge holds a distinct random amount (every bundle distinct:
  the worst case of the blocked route, ``D = n``).

The two routes must give the same figures (largest envy to 1e-9, envious pairs and
pair equal); the script stops with exit 1 if they do not.  Results go to
``envy_scaling.json`` and ``envy_scaling.md`` in ``--out`` (default
``benchmarks/results``), written atomically.

    python benchmarks/envy_scaling.py            # 10^2 .. 10^5 agents (a few minutes on 2 cores)
    python benchmarks/envy_scaling.py --quick    # 10^2 .. 10^3 agents
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.analysis import fairness  # noqa: E402
from laissez_opt.io.jsonfile import write_atomic  # noqa: E402

SIZES = "100,1000,3000,10000,30000,100000"
QUICK_SIZES = "100,300,1000"
POOLS = 10
SEED = 3


def allocation(inst, kind: str, seed: int) -> np.ndarray:
    """An ``E x 1`` allocation of ``kind`` (module docstring); feasibility does not matter to the envy figures."""
    rng = np.random.default_rng(seed)
    e = inst.n_edges
    if kind == "fractional":
        return rng.random((e, 1))
    amounts = np.zeros((e, 1))
    starts = np.searchsorted(inst.edge_agent, np.arange(inst.n_agents))
    degree = np.diff(np.r_[starts, e])
    pick = starts + (rng.random(inst.n_agents) * degree).astype(np.int64)
    holds = rng.random(inst.n_agents) < 0.5
    amounts[pick[holds], 0] = 1.0
    return amounts


def sparse_pairs(inst, amounts) -> int:
    """Nonzero entries of the sparse product ``U X^T`` (its memory), without forming it."""
    bundle, utility = fairness._bundle_matrix(inst, amounts)
    bundle.eliminate_zeros()
    held = np.asarray((bundle != 0).sum(axis=0)).ravel()  # holders per (pool, round)
    able = np.asarray((utility != 0).sum(axis=0)).ravel()
    return int(min(float(inst.n_agents) ** 2, float(held @ able)))


def route(inst, amounts, name: str):
    limit = 10**12 if name == "sparse" else 0
    with mock.patch.object(fairness, "ENVY_BLOCKED_FROM", limit):
        return fairness.envy_report(inst, amounts, keep_matrix=False)


def run(n: int, kind: str, repeat: int, sparse_limit: int) -> dict:
    inst = lo.generate("uniform", n, POOLS, seed=SEED)
    amounts = allocation(inst, kind, SEED + n)
    pairs = sparse_pairs(inst, amounts)
    groups = fairness._bundle_groups(fairness._bundle_matrix(inst, amounts)[0], inst.weights)
    distinct = int(groups[3].size)
    skipped = inst.n_agents * distinct > fairness.ENVY_MAX_PAIRS  # the blocked route only reports why
    names = ["blocked"] + (["sparse"] if pairs <= sparse_limit and not skipped else [])
    times = {name: [] for name in names}
    reports = {}
    for _ in range(repeat):
        for name in names:
            gc.collect()
            t0 = time.perf_counter()
            reports[name] = route(inst, amounts, name)
            times[name].append(time.perf_counter() - t0)
    same = None
    if "sparse" in reports:
        a, b = reports["blocked"], reports["sparse"]
        same = (a.envious_pairs == b.envious_pairs and a.pair == b.pair
                and math.isclose(a.largest_envy, b.largest_envy, rel_tol=1e-9, abs_tol=1e-12)
                and bool(np.allclose(a.worst_by_agent, b.worst_by_agent, rtol=1e-9, atol=1e-12)))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "agents": n, "allocation": kind, "edges": inst.n_edges, "distinct_bundles": distinct,
        "product_nonzeros": pairs, "blocked_s": med["blocked"], "sparse_s": med.get("sparse"),
        "ratio": None if "sparse" not in med else med["blocked"] / med["sparse"], "same": same,
        "skipped": reports["blocked"].skipped,
        "runs_s": times,
    }


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Envy figures: sparse product against the blocked route",
        "",
        f"Machine: {meta['machine']} (shared); Python {meta['python']}; numpy {meta['numpy']}; scipy {meta['scipy']}; "
        f"load average at the start {meta['load_average']}. Median of {meta['repeat']} alternating runs. "
        f"`uniform` instances, {POOLS} pools. `sparse` is skipped where its product would hold more than "
        f"{meta['sparse_limit']:,} entries.",
        "",
        "| agents | allocation | distinct bundles | product nonzeros | sparse (s) | blocked (s) | blocked / sparse | same figures |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        sparse = "skipped" if r["sparse_s"] is None else f"{r['sparse_s']:.4f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        same = "" if r["same"] is None else ("yes" if r["same"] else "NO")
        if r["skipped"]:
            same = "skipped: n x D above ENVY_MAX_PAIRS"
        lines.append(f"| {r['agents']:,} | {r['allocation']} | {r['distinct_bundles']:,} | {r['product_nonzeros']:,} | "
                     f"{sparse} | {r['blocked_s']:.4f} | {ratio} | {same} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help=f"agents per size (default {SIZES})")
    parser.add_argument("--allocations", default="integral,fractional")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sparse-limit", type=int, default=2 * 10**8)
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or (QUICK_SIZES if args.quick else SIZES)).split(",")]
    kinds = [k for k in args.allocations.split(",") if k]
    if args.repeat < 1 or not set(kinds) <= {"integral", "fractional"}:
        print("envy_scaling.py: --repeat must be >= 1 and --allocations integral and/or fractional", file=sys.stderr)
        return 2
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version(),
        "numpy": metadata.version("numpy"), "scipy": metadata.version("scipy"),
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()), "repeat": args.repeat,
        "sparse_limit": args.sparse_limit, "blocked_from": fairness.ENVY_BLOCKED_FROM,
        "max_pairs": fairness.ENVY_MAX_PAIRS,
    }
    rows = []
    for n in sizes:
        for kind in kinds:
            row = run(n, kind, args.repeat, args.sparse_limit)
            rows.append(row)
            print(f"n={n:>7,} {kind:10s} D={row['distinct_bundles']:>7,} nnz={row['product_nonzeros']:>13,} "
                  f"sparse={row['sparse_s']} blocked={row['blocked_s']:.4f} same={row['same']}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "envy_scaling.json", json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    text = markdown(rows, meta)
    write_atomic(out / "envy_scaling.md", text)
    print(text)
    return 0 if all(r["same"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
