"""The market against fcfs_static, myopic and the offline optimum: price of decentralisation with 95% intervals.

Scenarios from :func:`laissez_opt.simulate.market.compare.scenario` (families
``table1``, ``gavel``, ``neocloud``; scarce and plentiful devices; Poisson tenant
arrivals), ``n`` tenants, seeds ``0 .. K-1``.  Per seed every method runs on the same
arrivals; the market uses the paper's agents, second-price exchange, one checkpoint
per round (the ``migration`` model's convention).  The optimum is ``migration``
(objective ``cost``) under a time limit; where it stops at the limit, the ratio is
also given against its proven lower bound (``pod_bound``, an upper estimate of the
true ratio).

Price of decentralisation ``pod = base_cost(market) / base_cost(optimum)`` (the social
cost: device time held, at base prices); the interval is the 95% Student-t interval
of the mean over seeds.

Usage::

    python benchmarks/market_vs_optimum.py [--seeds K] [--tenants N] [--time-limit S] [--out DIR]

Writes ``DIR/market_vs_optimum.json`` and ``.md`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from _common import write_report  # noqa: E402
from laissez_opt.simulate.market.compare import METHODS, evaluate, scenario

SETUPS = [("table1", "scarce"), ("table1", "plentiful"), ("gavel", "scarce"), ("neocloud", "scarce"),
          ("neocloud", "plentiful")]
METRICS = ("base_cost", "tenant_cost", "provider_revenue", "utilisation", "mean_completion", "migrations", "completed")


def interval(values):
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"mean": math.nan, "ci": math.nan, "n": 0}
    half = float(student_t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return {"mean": float(v.mean()), "ci": half, "n": int(v.size)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tenants", type=int, default=6)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    started = time.perf_counter()
    for family, supply in SETUPS:
        for seed in range(args.seeds):
            inst = scenario(family, supply, n=args.tenants, seed=seed)
            t0 = time.perf_counter()
            res = evaluate(inst, METHODS, time_limit=args.time_limit)
            opt = res["optimum"]
            for method, m in res.items():
                row = {"family": family, "supply": supply, "seed": seed, "method": method,
                       **{k: m.get(k) for k in METRICS}, "status": m.get("status")}
                row["pod"] = m["base_cost"] / opt["base_cost"] if opt["base_cost"] else math.nan
                bound = opt.get("bound")
                row["pod_bound"] = m["base_cost"] / bound if bound else math.nan
                rows.append(row)
            print(f"{inst.name}: {time.perf_counter() - t0:.1f} s, optimum {opt['status']}, market pod "
                  f"{res['market']['base_cost'] / opt['base_cost']:.3f}", flush=True)
    summary = []
    for family, supply in SETUPS:
        for method in METHODS:
            sel = [r for r in rows if r["family"] == family and r["supply"] == supply and r["method"] == method]
            entry = {"family": family, "supply": supply, "method": method}
            for k in (*METRICS, "pod", "pod_bound"):
                entry[k] = interval([r[k] for r in sel])
            entry["optimal_runs"] = sum(1 for r in rows if r["family"] == family and r["supply"] == supply
                                        and r["method"] == "optimum" and r["status"] == "optimal")
            summary.append(entry)
    meta = {"seeds": args.seeds, "tenants": args.tenants, "time_limit_s": args.time_limit,
            "wall_s": time.perf_counter() - started, "machine": platform.platform(), "cpus": os.cpu_count()}
    write_report(out / "market_vs_optimum.json", json.dumps({"meta": meta, "rows": rows, "summary": summary}, indent=1,
                                                      default=float) + "\n")
    lines = ["# Market vs fcfs_static, myopic and the offline optimum", "",
             f"{args.seeds} seeds per setting, {args.tenants} tenants, optimum time limit {args.time_limit:g} s; "
             f"mean ± 95% half-width over seeds. `pod` = base cost / optimum's base cost "
             f"(`pod_bound`: against the optimum's proven lower bound). Wall time {meta['wall_s']:.0f} s.", "",
             "| family | supply | method | pod | pod_bound | base cost | tenant cost = revenue | utilisation | "
             "mean completion (rounds) | migrations | completed | optimum proven |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def f(s, digits=3):
        if not s["n"] or not math.isfinite(s["mean"]):
            return "-"
        return f"{s['mean']:.{digits}f}" + (f" ± {s['ci']:.{digits}f}" if math.isfinite(s["ci"]) else "")

    for e in summary:
        lines.append(f"| {e['family']} | {e['supply']} | {e['method']} | {f(e['pod'])} | {f(e['pod_bound'])} | "
                     f"{f(e['base_cost'])} | {f(e['tenant_cost'])} | {f(e['utilisation'])} | "
                     f"{f(e['mean_completion'], 2)} | {f(e['migrations'], 1)} | {f(e['completed'], 1)} | "
                     f"{e['optimal_runs']}/{args.seeds} |")
    write_report(out / "market_vs_optimum.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
