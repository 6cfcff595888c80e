"""The whole fractional leximin and the partitioned path on one part, against the exact rational leximin.

``lo.solve(inst, "maxmin", fractional=True)`` (one persistent HiGHS model, every
level on the whole instance, the optimal face held after each level) and
``lo.solve(..., partitions=1)`` (the partitioned path's waterfilling on one part:
capped jumps, levels on a model cut to the optimal face) should give the same
leximin vector.  On the heterogeneous instances below the later levels are
ill-conditioned (lowering the lower values by about 1e-8 can lift a later one
by a percent), so a floating-point path can be far off there while every level
it reports looks optimal to its solver.  The reference is exact: ``lo.certify``
runs the waterfilling in rational arithmetic (every level LP's basis solved and
checked in fractions, the frozen agents held at their exact levels) and returns
every agent's exact leximin value, or says at which level LP it could not
finish.  For each path the script reports how far its values are from the exact
ones (the largest relative difference, how many agents miss by more than
``--rel``) and the first entry of the sorted vectors where it parts from them.

An earlier version checked each path against an LP holding that path's own lower
values as floors.  That check agreed with the whole model's wrong values at
200 x 200 (a vector can be consistent with its own slightly lowered floors), so
the exact reference replaced it.

The instances are ``scaling_partition.py``'s heterogeneous arrays (``n`` agents,
``m`` pools, about 5 random pools each), written as a binary instance file.

    python benchmarks/leximin_paths.py --quick          # 180 x 180, about 10 s
    python benchmarks/leximin_paths.py                  # 220 x 220, about 10 s (partitions=1 was off by 1.9e-4
                                                        #   there until its rebuilt models' residuals were exact)
    python benchmarks/leximin_paths.py --agents 200     # about a minute (the exact levels take most)
    python benchmarks/leximin_paths.py --agents 300     # the exact reference gives out at its 144th level LP
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine, write_results  # noqa: E402
from partition_public_path import write_npz  # noqa: E402
from scaling_partition import make_problem  # noqa: E402

import laissez_opt as lo  # noqa: E402


def run_path(inst, ids, **options) -> dict:
    """One path through ``lo.solve``: its status, LPs, time and every agent's leximin value; and the Result."""
    t0 = time.perf_counter()
    result = lo.solve(inst, "maxmin", fractional=True, **options)
    seconds = time.perf_counter() - t0
    parts = result.details.get("partition", {}).get("parts", [])
    return {"seconds": seconds, "status": result.status, "objective": result.objective, "gap": result.gap,
            "verified": result.verified, "message": result.message,
            "part_status": [p["status"] for p in parts], "lps": [p["lps"] for p in parts]
            or result.details.get("solves"),
            "values": np.array([result.details["leximin"][a] for a in ids]), "result": result}


def exact_leximin(inst, result, ids) -> dict:
    """The exact leximin values by ``lo.certify``'s rational waterfilling (``values`` None if it could not finish)."""
    t0 = time.perf_counter()
    report = lo.certify(inst, result)
    seconds = time.perf_counter() - t0
    exact = report.exact.get("leximin")
    values = None if exact is None else np.array([float(Fraction(exact[a])) for a in ids])
    return {"seconds": seconds, "values": values, "levels": len(report.exact.get("levels", [])),
            "failure": None if values is not None else report.failure}


def first_difference(a: np.ndarray, b: np.ndarray, rel: float) -> int | None:
    differ = np.abs(a - b) > rel * np.maximum(1.0, np.abs(b))
    return int(np.argmax(differ)) if differ.any() else None


def against_exact(values: np.ndarray, exact: np.ndarray, rel: float) -> dict:
    """How far one path's values are from the exact ones: per agent and on the sorted vectors."""
    diff = np.abs(values - exact) / np.maximum(1.0, np.abs(exact))
    at = first_difference(np.sort(values), np.sort(exact), rel)
    return {"max_rel": float(diff.max(initial=0.0)), "agents_off": int(np.count_nonzero(diff > rel)),
            "first_sorted_difference": at,
            "at": None if at is None else {"exact": float(np.sort(exact)[at]), "path": float(np.sort(values)[at])}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=220)
    parser.add_argument("--pools", type=int, default=None, help="default: as many as agents")
    parser.add_argument("--rel", type=float, default=1e-6, help="relative difference at which two values differ")
    parser.add_argument("--quick", action="store_true", help="180 x 180")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.agents = 180
    pools = args.pools or args.agents
    name = args.name or f"leximin_paths_{args.agents}x{pools}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.npz"
        write_npz(make_problem(args.agents, pools), path, f"heterogeneous-{args.agents}x{pools}")
        inst = lo.load(path)
    ids = [a.id for a in inst.agents]
    paths = {"whole": run_path(inst, ids), "partitions=1": run_path(inst, ids, partitions=1)}
    exact = exact_leximin(inst, paths["whole"]["result"], ids)
    compared = {label: (None if exact["values"] is None else against_exact(out["values"], exact["values"], args.rel))
                for label, out in paths.items()}
    between = first_difference(np.sort(paths["partitions=1"]["values"]), np.sort(paths["whole"]["values"]), args.rel)
    lines = [f"Heterogeneous {args.agents} x {pools}, fractional maxmin (leximin), equal-share normalised values",
             "", "| path | seconds | status | part status | LPs | max-min | verified | largest relative difference "
             "from the exact values | agents off by more than " + f"{args.rel:g}" + " | first sorted entry off |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, out in paths.items():
        c = compared[label]
        where = "-" if c is None else ("none" if c["at"] is None else
                                       f"{c['first_sorted_difference']} ({c['at']['path']:.6f}, exact {c['at']['exact']:.6f})")
        lines.append(f"| {label} | {out['seconds']:.1f} | {out['status']} | {', '.join(out['part_status']) or '-'} | "
                     f"{out['lps']} | {out['objective']:.6f} | {out['verified']} | "
                     f"{'-' if c is None else format(c['max_rel'], '.2e')} | {'-' if c is None else c['agents_off']} | "
                     f"{where} |")
    lines += ["", ("Exact reference (lo.certify's rational waterfilling): "
                   + (f"{exact['levels']} level LPs in {exact['seconds']:.1f} s." if exact["values"] is not None
                      else f"not available after {exact['seconds']:.1f} s: {exact['failure']}")),
              "", "First sorted entry where the two paths differ by more than "
              + f"{args.rel:g}: " + ("none" if between is None else str(between)) + "."]
    payload = {"machine": machine("highspy", "numpy"), "agents": args.agents, "pools": pools, "rel": args.rel,
               "paths": {k: {kk: vv for kk, vv in v.items() if kk not in ("values", "result")} for k, v in paths.items()},
               "exact": {k: v for k, v in exact.items() if k != "values"}, "against_exact": compared,
               "between_paths": between}
    write_results(Path(args.out), name, payload, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
