"""The whole fractional leximin against the partitioned path on one part, level by level, with an independent check.

``lo.solve(inst, "maxmin", fractional=True)`` (one persistent HiGHS model, every
level on the whole instance) and ``lo.solve(..., partitions=1)`` (the partitioned
path's waterfilling on one part: capped jumps, levels on the optimal face) must
give the same leximin vector.  On ill-conditioned instances they need not: the
frozen floors are met only to HiGHS's tolerance, and past a few hundred levels a
change of 1e-9 in them can move the next level by 1e-4.  This script measures how
far the two agree and, at the first entry of their sorted vectors where they part
(relative difference over ``--rel``), asks an independent LP which is right:

    max t  s.t.  v_i(x) >= v*_i  for every agent with v*_i < L,  v_i(x) >= t  for the others,

with capacities and demands, ``L`` the path's own value at that entry and ``v*`` its
own vector.  For a leximin vector ``t* = L`` (``t* > L`` means the others could all
have got more while nobody below gained less: that path is not leximin-optimal
there).  The LP is built here from the instance's arrays with scipy's sparse
matrices and solved by ``scipy.optimize.linprog`` (scipy's own HiGHS build, no
warm start, presolve off: presolve judges these nearly tight floors infeasible),
with the floors lowered by 1e-9 of their values, exact and raised by 1e-9, to show how sensitive
the level is.

The instances are ``scaling_partition.py``'s heterogeneous arrays (``n`` agents,
``m`` pools, about 5 random pools each), written as a binary instance file.

    python benchmarks/leximin_paths.py --quick          # 300 x 300: both paths agree
    python benchmarks/leximin_paths.py                  # 1,000 x 1,000: the whole model takes 5 to 12 minutes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_results  # noqa: E402
from partition_public_path import write_npz  # noqa: E402
from scaling_partition import make_problem  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.partition.core import equal_share_normalizer  # noqa: E402
from laissez_opt.partition.run import problem_of  # noqa: E402

#: Floors of the independent check: lowered by 1e-9 of their values, exact, raised by 1e-9 (a level that moves
#: between these is set by rounding, not by the path).
CHECK_SLACKS = (1e-9, 0.0, -1e-9)


def next_level(problem, values: np.ndarray, level: float, slack: float) -> tuple[str, float | None]:
    """The independent LP above: its status and ``t*`` (None without an optimum)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    E, n, m = problem.n_edges, problem.n_agents, problem.counts.shape[0]
    below = values < level * (1 - 1e-12)
    cols = np.arange(E)
    worth = sp.csr_matrix((problem.coef, (problem.edge_agent, cols)), shape=(n, E))
    level_rows = sp.hstack([-worth, sp.csr_matrix((~below).astype(float).reshape(-1, 1))])
    floors = np.where(below, -(values - slack * np.abs(values)), 0.0)
    pools = sp.hstack([sp.csr_matrix((np.ones(E), (problem.edge_pool, cols)), shape=(m, E)), sp.csr_matrix((m, 1))])
    demand = sp.hstack([sp.csr_matrix((np.ones(E), (problem.edge_agent, cols)), shape=(n, E)), sp.csr_matrix((n, 1))])
    finite = np.isfinite(problem.demands)
    rows = sp.vstack([level_rows, pools, demand.tocsr()[finite]]).tocsr()
    rhs = np.concatenate([floors, problem.counts.astype(float), problem.demands[finite]])
    upper = np.minimum(problem.demands[problem.edge_agent], problem.counts[problem.edge_pool].astype(float))
    upper[problem.coef <= 0] = 0.0
    cost = np.zeros(E + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=rows, b_ub=rhs, bounds=list(zip(np.zeros(E), upper)) + [(0, None)], method="highs",
                  options={"presolve": False})
    return res.message.split(".")[0], (-res.fun if res.status == 0 else None)


def first_difference(a: np.ndarray, b: np.ndarray, rel: float) -> int | None:
    differ = np.abs(a - b) > rel * np.maximum(1.0, np.abs(b))
    return int(np.argmax(differ)) if differ.any() else None


def run_path(inst, ids, **options) -> dict:
    t0 = time.perf_counter()
    result = lo.solve(inst, "maxmin", fractional=True, **options)
    seconds = time.perf_counter() - t0
    parts = result.details.get("partition", {}).get("parts", [])
    return {"seconds": seconds, "status": result.status, "objective": result.objective, "gap": result.gap,
            "verified": result.verified, "message": result.message,
            "part_status": [p["status"] for p in parts], "lps": [p["lps"] for p in parts]
            or result.details.get("solves"),
            "values": np.array([result.details["leximin"][a] for a in ids])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--rel", type=float, default=1e-6, help="relative difference at which two entries differ")
    parser.add_argument("--quick", action="store_true", help="300 x 300")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.agents, args.pools = 300, 300
    name = args.name or f"leximin_paths_{args.agents}x{args.pools}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.npz"
        write_npz(make_problem(args.agents, args.pools), path, f"heterogeneous-{args.agents}x{args.pools}")
        inst = lo.load(path)
    ids = [a.id for a in inst.agents]
    base = problem_of(inst)
    problem = base.for_method("maxmin", equal_share_normalizer(base))
    paths = {"whole": run_path(inst, ids), "partitions=1": run_path(inst, ids, partitions=1)}
    sorted_values = {k: np.sort(v["values"]) for k, v in paths.items()}
    at = first_difference(sorted_values["partitions=1"], sorted_values["whole"], args.rel)
    checks = []
    for label in paths:
        for index in ([] if at is None else [at]):
            level = float(sorted_values[label][index])
            for slack in CHECK_SLACKS:
                status, t = next_level(problem, paths[label]["values"], level, slack)
                checks.append({"path": label, "index": index, "level": level, "slack": slack, "status": status,
                               "t": t, "rel_above": None if t is None else (t - level) / level})
    lines = [f"Heterogeneous {args.agents} x {args.pools}, fractional maxmin (leximin), equal-share normalised values",
             "", "| path | seconds | status | part status | LPs | max-min | sum of values | verified |",
             "|---|---|---|---|---|---|---|---|"]
    for label, out in paths.items():
        lines.append(f"| {label} | {out['seconds']:.1f} | {out['status']} | {', '.join(out['part_status']) or '-'} | "
                     f"{out['lps']} | {out['objective']:.6f} | {out['values'].sum():.3f} | {out['verified']} |")
    diff = np.abs(sorted_values["partitions=1"] - sorted_values["whole"]) / np.maximum(1.0, sorted_values["whole"])
    lines += ["", f"First sorted entry differing by more than {args.rel:g} relative: "
              + ("none" if at is None else f"{at} (whole {sorted_values['whole'][at]:.6f}, partitions=1 "
                                           f"{sorted_values['partitions=1'][at]:.6f})")
              + f"; largest relative difference {diff.max():.3g}."]
    if checks:
        lines += ["", "Independent next-level LP at that entry (t* > L: that path is not leximin-optimal there):", "",
                  "| path | entry | its value L | floors lowered by (share) | status | t* | (t* - L) / L |", "|---|---|---|---|---|---|---|"]
        for c in checks:
            t = "-" if c["t"] is None else f"{c['t']:.6f}"
            rel = "-" if c["rel_above"] is None else f"{c['rel_above']:.2e}"
            lines.append(f"| {c['path']} | {c['index']} | {c['level']:.6f} | {c['slack']:g} | {c['status']} | {t} | {rel} |")
    payload = {"machine": machine("highspy", "scipy", "numpy"), "agents": args.agents, "pools": args.pools,
               "paths": {k: {kk: vv for kk, vv in v.items() if kk != "values"} | {"sum": float(v["values"].sum())}
                         for k, v in paths.items()},
               "first_difference": at, "max_rel_difference": float(diff.max()), "checks": checks}
    write_results(Path(args.out), name, payload, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
