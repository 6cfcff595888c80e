"""Gap and runtime of every heuristic and baseline against the exact models.

For each instance family (``uniform``, ``gavel``, ``neocloud``, ``gemmini``) and size
(agents x pools), seeded instances are drawn with ``laissez_opt.generate.generate``
(``gemmini`` with the thesis's weight setup ``1-2-4``, so that weights matter; the other
families with their defaults) and every method runs on every instance through
``laissez_opt.harness.compare``, which verifies each allocation and computes, per
instance and objective ``F``, the gap ``(F(opt) - F(m)) / |F(opt)|`` (sign flipped for
a minimised ``F``) to the exact reference:

* ``weighted_welfare`` ``sum_i w_i U_i / sum_i w_i``, reference ``welfare`` (integral,
  exact: the transportation LP is integral);
* ``min_phi`` ``min_i U_i / U_i^ex`` (sharing incentive), reference ``maxmin`` with the
  ``equal_share`` normaliser solved **fractionally** (the time-sharing leximin: the
  integral leximin does not finish within minutes at 200 agents).  The fractional
  optimum is at least the integral one, so the gaps of integral methods are upper
  bounds that include the price of whole devices;
* ``max_rho`` ``max_i rho_i`` (Themis finish-time fairness, minimised), reference
  ``themis`` (integral) with the time limit; when it stops early the gap is taken
  against its proven bound.

Methods: the exact ``welfare``, ``maxmin``, ``themis`` and the heuristics ``greedy``,
``mtf``, ``round_robin``, ``time_equal``, ``gandiva_fair``, ``fixed_partition``,
``dynamic_partition``, plus ``auction`` when the registry has it.  Exact methods get
``--time-limit`` seconds (default 20) and one thread; ``--workers`` processes (default 2)
run the pairs.

Prints the mean gap per method and objective (over all instances), then per family and
size the mean gap of each objective and the mean runtime; writes
``heuristics_gap.json`` and ``heuristics_gap.md`` to ``--out`` (default
``benchmarks/results``, atomically) and the harness's CSV, Markdown and PNG plots to
``--out/heuristics_gap/``.

    python benchmarks/heuristics_gap.py            # 20x4 and 200x8 (3 seeds), 2000x16 (1 seed)
    python benchmarks/heuristics_gap.py --quick    # 20x4 and 100x6, 1 seed, 5 s limit
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.harness import Comparison, compare, write_reports
from laissez_opt.methods import METHODS

HERE = Path(__file__).resolve().parent
FAMILIES = ("uniform", "gavel", "neocloud", "gemmini")
FAMILY_PARAMS = {"gemmini": {"weights": "1-2-4"}}
SIZES = "20x4:3,200x8:3,2000x16:1"  # agents x pools : seeds
QUICK_SIZES = "20x4:1,100x6:1"
EXACT = ("welfare", "maxmin", "themis")
HEURISTICS = ("greedy", "mtf", "round_robin", "time_equal", "gandiva_fair", "fixed_partition", "dynamic_partition")
OBJECTIVES = ("weighted_welfare", "min_phi", "max_rho")
#: Non-default rules, run as a second comparison: (method, label in the tables, options).
VARIANTS = (
    ("time_equal", "time_equal:redistribute", {"incompatible": "redistribute"}),
    ("gandiva_fair", "gandiva_fair:trading", {"trading": True}),
)
SHORT = {"weighted_welfare": "welfare", "min_phi": "min phi", "max_rho": "max rho"}


def _sizes(text: str) -> list[tuple[int, int, int]]:
    out = []
    for item in text.split(","):
        dims, _, seeds = item.partition(":")
        n, m = dims.split("x")
        out.append((int(n), int(m), int(seeds or 1)))
    return out


def _mean(values):
    """Mean of the finite values (``None`` if there are none)."""
    values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return statistics.fmean(values) if values else None


def _infinite(values) -> int:
    """How many values are infinite (a starved agent: min phi 0 against a positive optimum, max rho inf)."""
    return sum(1 for v in values if isinstance(v, float) and math.isinf(v))


def _fmt(value, percent=False, infinite=0) -> str:
    text = "" if value is None else (f"{100 * value:.1f}%" if percent else f"{value:.3g}")
    if infinite:
        text = (text + " " if text else "") + f"(+{infinite} inf)"
    return text


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, time limit 5 s")
    parser.add_argument("--sizes", default=None, help=f"AGENTSxPOOLS:SEEDS,... (default {SIZES})")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per exact solve (default 20; 5 with --quick)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--auction-max-persons", type=float, default=1e6,
                        help="run auction only where sum_i min(d_i, reachable devices) is at most this (default 1e6)")
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    sizes = _sizes(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    families = [f for f in args.families.split(",") if f]
    limit = args.time_limit if args.time_limit is not None else (5.0 if args.quick else 20.0)
    methods = list(EXACT + HEURISTICS) + (["auction"] if "auction" in METHODS else [])
    out = Path(args.out)

    started = time.perf_counter()
    instances, meta = [], {}
    for family in families:
        for n, m, seeds in sizes:
            for seed in range(seeds):
                inst = lo.generate(family, n, m, seed=seed, **FAMILY_PARAMS.get(family, {}))
                instances.append(inst)
                meta[inst.name] = {"family": family, "size": f"{n}x{m}", "seed": seed,
                                   "devices": int(inst.counts.sum()), "edges": inst.n_edges}
    print(f"{len(instances)} instances x {len(methods)} methods and {len(VARIANTS)} variants; exact time limit {limit:g} s; {args.workers} workers",
          flush=True)
    common = dict(time_limit=limit, workers=args.workers, progress=False, objectives=list(OBJECTIVES))
    exact_options = {"maxmin": {"fractional": True}}
    # Passes: (label -> method, options), instances.  The exact rows of later passes come back from the store.
    passes = [({m: (m, {}) for m in methods if m != "auction"}, instances)]
    skipped = []
    if "auction" in methods:
        # The auction turns each unit of demand into a bidder: skip instances with too many of them.
        fits = [inst for inst in instances if float(inst.effective_demands.sum()) <= args.auction_max_persons]
        skipped = [inst.name for inst in instances if inst not in fits]
        passes.append(({"auction": ("auction", {})}, fits))
    for name, label, opts in VARIANTS:
        passes.append(({label: (name, opts)}, instances))
    merged, computed, reused = [], 0, 0
    with tempfile.TemporaryDirectory() as store:
        for labels, chosen in passes:
            if not chosen:
                continue
            run = [name for name, _ in labels.values()]
            options = dict(exact_options)
            options.update({name: opts for name, opts in labels.values() if opts})
            table = compare(chosen, list(dict.fromkeys(list(EXACT) + run)), store=store, method_options=options, **common)
            computed, reused = computed + table.computed, reused + table.reused
            back = {name: label for label, (name, _) in labels.items()}
            # Each pass keeps its own methods' rows: the exact rows once, from the first pass.
            merged += [{**row, "method": back[row["method"]]} for row in table.rows if row["method"] in back]
    methods = methods + [label for _, label, _ in VARIANTS]
    table = Comparison(merged, methods, list(OBJECTIVES), computed=computed, reused=reused)
    elapsed = time.perf_counter() - started
    write_reports(table, out / "heuristics_gap")

    rows = []
    for row in table.rows:
        info = meta.get(row["instance"], {})
        rows.append({
            "family": info.get("family"), "size": info.get("size"), "seed": info.get("seed"),
            "instance": row["instance"], "devices": info.get("devices"), "method": row["method"],
            "kind": row.get("kind"), "status": row.get("status"), "runtime_s": row.get("runtime_s"),
            "message": row.get("message") if row.get("status") == "error" else None,
            **{f"value_{o}": row.get(f"value_{o}") for o in OBJECTIVES},
            **{f"gap_{o}": row.get(f"gap_{o}") for o in OBJECTIVES},
            "sharing_incentive": row.get("sharing_incentive"), "envy_free": row.get("envy_free"),
        })

    def pick(method, family=None, size=None):
        return [r for r in rows if r["method"] == method and (family is None or r["family"] == family)
                and (size is None or r["size"] == size)]

    overall = []
    for method in methods:
        chosen = pick(method)
        overall.append({
            "method": method, "kind": METHODS[method.split(":")[0]].kind,
            **{f"gap_{o}": _mean([r[f"gap_{o}"] for r in chosen]) for o in OBJECTIVES},
            **{f"inf_{o}": _infinite([r[f"gap_{o}"] for r in chosen]) for o in OBJECTIVES},
            "instances": len(chosen),
            "runtime_s": _mean([r["runtime_s"] for r in chosen]),
            "errors": sum(r["status"] == "error" for r in chosen),
            "time_limit": sum(r["status"] == "time_limit" for r in chosen),
            "si_share": _mean([1.0 if r["sharing_incentive"] else 0.0 for r in chosen if r["sharing_incentive"] is not None]),
        })
    cells = []
    size_labels = [f"{n}x{m}" for n, m, _ in sizes]
    for family in families:
        for size in size_labels:
            for method in methods:
                chosen = pick(method, family, size)
                if not chosen:
                    continue
                cells.append({
                    "family": family, "size": size, "method": method, "instances": len(chosen),
                    **{f"gap_{o}": _mean([r[f"gap_{o}"] for r in chosen]) for o in OBJECTIVES},
                    **{f"inf_{o}": _infinite([r[f"gap_{o}"] for r in chosen]) for o in OBJECTIVES},
                    "runtime_s": _mean([r["runtime_s"] for r in chosen]),
                    "statuses": sorted({r["status"] for r in chosen}),
                })

    header = ["method", "kind"] + [f"gap {SHORT[o]}" for o in OBJECTIVES] + ["SI held", "mean runtime (s)", "errors / time limits"]
    summary = _table(header, [
        [o["method"], o["kind"], *[_fmt(o[f"gap_{k}"], True, o[f"inf_{k}"]) for k in OBJECTIVES],
         _fmt(o["si_share"], True), _fmt(o["runtime_s"]), f"{o['errors']} / {o['time_limit']}"]
        for o in overall
    ])
    per_size = []
    for objective in OBJECTIVES:
        head = ["method"] + [f"{f} {s}" for f in families for s in size_labels]
        body = []
        for method in methods:
            line = [method]
            for family in families:
                for size in size_labels:
                    cell = next((c for c in cells if c["family"] == family and c["size"] == size and c["method"] == method), None)
                    line.append(_fmt(cell[f"gap_{objective}"], True, cell[f"inf_{objective}"]) if cell else "")
            body.append(line)
        per_size.append((f"Mean gap in {objective} per family and size", _table(head, body)))
    head = ["method"] + [f"{f} {s}" for f in families for s in size_labels]
    body = []
    for method in methods:
        line = [method]
        for family in families:
            for size in size_labels:
                cell = next((c for c in cells if c["family"] == family and c["size"] == size and c["method"] == method), None)
                text = _fmt(cell["runtime_s"]) if cell else ""
                if cell and cell["statuses"] != ["feasible"] and cell["statuses"] != ["optimal"]:
                    text += " (" + ",".join(cell["statuses"]) + ")"
                line.append(text)
        body.append(line)
    per_size.append(("Mean runtime (s) per family and size", _table(head, body)))

    machine = {
        "cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
        "highspy": _version("highspy"), "ortools": _version("ortools"), "numpy": _version("numpy"),
    }
    described = ", ".join(f"{n}x{m} ({s} seed{'s' if s > 1 else ''})" for n, m, s in sizes)
    note = (
        f"{len(instances)} instances ({', '.join(families)}; sizes {described}), "
        f"{len(methods)} methods, exact time limit {limit:g} s, {args.workers} workers; wall time {elapsed:.0f} s. "
        "Gap = (F(opt) - F(method)) / |F(opt)| (sign flipped for max rho), averaged over the instances where it is "
        "finite; '(+k inf)' counts instances with an infinite gap (an agent starved: min phi 0 or max rho inf "
        "where the optimum serves everyone); blank: no finite gap (e.g. every integral allocation starves someone); "
        "min phi's reference is the fractional leximin (an upper bound for integral methods); "
        "'SI held' is the share of instances with min phi >= 1."
        + (f" auction skipped on {', '.join(skipped)} (more than {args.auction_max_persons:g} units of demand)." if skipped else "")
    )
    text = "# Heuristics against the exact models: gap and runtime\n\n" + note + "\n\n## Mean gap per method and objective (all instances)\n\n" + summary + "\n"
    for title, body_text in per_size:
        text += f"\n## {title}\n\n{body_text}\n"
    print(text)
    report = {"machine": machine, "time_limit": limit, "workers": args.workers, "wall_s": elapsed,
              "families": families, "family_params": FAMILY_PARAMS, "sizes": [list(s) for s in sizes],
              "methods": methods, "objectives": list(OBJECTIVES), "auction_skipped": skipped, "overall": overall, "cells": cells, "runs": rows}
    write_report(out / "heuristics_gap.json", json.dumps(_clean(report), indent=1) + "\n")
    write_report(out / "heuristics_gap.md", text)
    return 0


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _clean(value):
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else None)
    return value


if __name__ == "__main__":
    sys.exit(main())
