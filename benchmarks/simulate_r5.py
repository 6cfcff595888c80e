"""The thesis's chapter-5 evaluation (reproduce.md R5): which of its quoted claims hold, with intervals.

Runs, through ``lo.simulate`` with a shared run store (so an interrupted run resumes and
repeated configurations are computed once):

1. the six ``thesis-r5-*`` presets with all their policies (``mtf`` actor-critic,
   ``themis``, ``gandiva_fair``, ``welfare``, ``leximin``, ``min_backlog``) and the
   hindsight bound, ``--seeds`` seeds, 300 rounds;
2. the load sweep of section 5.3: the four weight setups at loads 40% to 80%
   (``--sweep-seeds`` seeds; the load of each quoted claim with ``--seeds``), with
   ``mtf``, ``themis``, ``gandiva_fair`` and ``welfare``, and the same setups overloaded
   (100%, 120%, 150% of the equal share) with ``--overload-seeds`` seeds;
3. the deadline sweep of Figure 5.13 (setup 1/2/4 at 70%, deadlines 1, 2, 5, 10, 20
   rounds, ``--sweep-seeds`` seeds);
4. the sensitivity of the headline to the choices the thesis leaves open (setup 1/2/4
   at 70% and at 120%, ``--sensitivity-seeds`` seeds, one choice changed at a time:
   deadline, balancer, what the load is relative to, the token pool, the demand rule,
   unit-size jobs, Hedge thresholds).

"MTF over X" is the ratio of the weighted social welfare (thesis section 5.3: the
weighted average over agents of the work processed per round, averaged over the 300
rounds) of ``mtf`` to that of ``X`` on the same seed (same instance, same arrivals),
minus 1; "over the other two" averages the ratios over Themis and Gandiva_fair per seed;
intervals are 95% Student t over the seeds.  A quoted improvement "holds" when it lies in
our interval.

Writes ``simulate_r5.json`` and ``simulate_r5.md``, and per preset its ``summary.md`` and
plots, to ``--out`` (default ``benchmarks/results/simulate_r5``).

    python benchmarks/simulate_r5.py                  # everything: about an hour on 2 cores
    python benchmarks/simulate_r5.py --quick          # 2 seeds, 40 rounds, a few minutes
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import laissez_opt as lo
from laissez_opt.io import write_atomic
from laissez_opt.simulate.presets import R5_SETUPS
from laissez_opt.simulate.report import summary_data, summary_markdown, write_plots
from laissez_opt.simulate.summary import interval, run_scalars

HERE = Path(__file__).resolve().parent
COMPARED = ["mtf", "themis", "gandiva_fair", "welfare"]
BASELINES = ("themis", "gandiva_fair")
#: setup -> (load of the quoted claim, improvement over Themis, average improvement over the two).
CLAIMS = {"equal": (0.6, 1.52, 0.39), "1-2": (0.6, 1.83, 0.43), "1-2-4": (0.7, 0.73, 0.25), "1-2-8": (0.5, 0.62, 0.14)}
LOADS = (0.4, 0.5, 0.6, 0.7, 0.8)
OVERLOADS = (1.0, 1.2, 1.5)
DEADLINES = (1, 2, 5, 10, 20)
SENSITIVITY = {
    "as chosen (deadline 5, power of two, equal share, T = 40, clear demand)": {},
    "deadline 1 round": {"workload": {"deadline": 1}},
    "deadline 2 rounds": {"workload": {"deadline": 2}},
    "deadline 20 rounds": {"workload": {"deadline": 20}},
    "no deadline": {"workload": {"deadline": None}},
    "balancer pooled": {"balancer": "pooled"},
    "balancer least loaded": {"balancer": "least_loaded"},
    "balancer random": {"balancer": "random"},
    "load relative to the best pool": {"workload": {"load_reference": "best_pool"}},
    "load relative to the worst pool": {"workload": {"load_reference": "worst_pool"}},
    "token pool T = 400": {"policy_options": {"mtf": {"tokens": 400}}},
    "Hedge thresholds": {"policy_options": {"mtf": {"threshold": "hedge"}}},
    "demand: the instance's (all devices)": {"demand": "instance"},
    "unit jobs (size 1, no load)": {"workload": {"load": None, "job_size": 1.0}},
}


def ratios(result, policy: str = "mtf") -> dict[int, dict[str, float]]:
    """Per seed: F(policy) / F(X) for each baseline, and their average."""
    value = {(r.policy, r.seed): run_scalars(r)["weighted_welfare"] for r in result.runs}
    out = {}
    for seed in sorted({s for _, s in value}):
        row = {b: value[(policy, seed)] / value[(b, seed)] for b in BASELINES if (b, seed) in value}
        row["two"] = float(np.mean([row[b] for b in BASELINES]))
        out[seed] = row
    return out


def improvement(values) -> dict:
    stats = interval([v - 1.0 for v in values])
    return {k: stats[k] for k in ("mean", "ci", "low", "high", "n")}


def verdict(claim: float, stats: dict) -> str:
    if stats["n"] < 2 or not math.isfinite(stats["ci"]):
        return "n/a"
    if stats["low"] <= claim <= stats["high"]:
        return "holds"
    return "does not hold" if claim > stats["high"] else "does not hold (ours higher)"


#: (configuration digest, policy, seed) -> seconds the run took when it was computed (reused runs keep theirs).
RUN_SECONDS: dict[tuple, float] = {}


def run(preset: str, *, store: Path, seeds: int, rounds: int, workers: int, policies=None, **overrides):
    options = overrides.pop("policy_options", None)
    workload = overrides.pop("workload", None)
    if workload is not None:
        overrides["workload"] = workload
    result = lo.simulate(preset=preset, policies=policies, seeds=seeds, rounds=rounds, workers=workers,
                         store=store, progress=False, policy_options=options, check=False, **overrides)
    digest = result.config.digest()
    for record in result.runs:
        RUN_SECONDS[(digest, record.policy, record.seed)] = record.timing["total_s"]
    return result


def fmt(stats: dict) -> str:
    if stats["n"] == 0:
        return "-"
    ci = f" ± {100 * stats['ci']:.2g}" if math.isfinite(stats["ci"]) else ""
    return f"{100 * stats['mean']:+.3g}%{ci}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, 40 rounds, fewer sweeps")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--sweep-seeds", type=int, default=5, help="seeds of the load and deadline sweeps")
    parser.add_argument("--overload-seeds", type=int, default=5)
    parser.add_argument("--sensitivity-seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "simulate_r5")
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "laissez-opt-simulate-r5-store",
                        help="run store shared by every part (reused across invocations)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = args.sweep_seeds = args.overload_seeds = args.sensitivity_seeds = 2
        args.rounds = 40
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    common = dict(store=args.store, rounds=args.rounds, workers=args.workers)
    report: dict = {"seeds": args.seeds, "rounds": args.rounds, "presets": {}, "loads": {}, "deadlines": {},
                    "sensitivity": {}}

    print("1. presets", flush=True)
    for setup in R5_SETUPS:
        name = f"thesis-r5-{setup}"
        result = run(name, seeds=args.seeds, **common)
        (args.out / name).mkdir(exist_ok=True)
        write_atomic(args.out / name / "summary.md", summary_markdown(result))
        write_atomic(args.out / name / "summary.json", json.dumps(summary_data(result), indent=2) + "\n")
        write_plots(result, args.out / name)
        per_seed = ratios(result)
        report["presets"][setup] = {
            "summary": summary_data(result)["summary"],
            "over": {b: improvement(r[b] for r in per_seed.values()) for b in (*BASELINES, "two")},
            "bound_share": {p: interval([run_scalars(r)["weighted_welfare"] / result.hindsight[r.seed]["weighted_welfare"]
                                         for r in result.runs if r.policy == p]) for p in result.policies},
        }
        print(f"   {name}: mtf over themis {fmt(report['presets'][setup]['over']['themis'])}, "
              f"over the two {fmt(report['presets'][setup]['over']['two'])} ({time.perf_counter() - started:.0f} s)",
              flush=True)

    print("2. loads", flush=True)
    every_cell: list[dict[int, float]] = []
    for setup in ("equal", "1-2", "1-2-4", "1-2-8"):
        for load in (*LOADS, *OVERLOADS):
            claimed = CLAIMS[setup][0] == load
            seeds = args.seeds if claimed else args.sweep_seeds if load <= 0.8 else args.overload_seeds
            if args.quick and load not in (0.6, 1.2):
                continue
            result = run(f"thesis-r5-{setup}", seeds=seeds, policies=COMPARED, hindsight=False,
                         workload={"load": load}, **common)
            per_seed = ratios(result)
            cell = {b: improvement(r[b] for r in per_seed.values()) for b in (*BASELINES, "two")}
            cell["served"] = {p: interval(run_scalars(r)["served"] for r in result.runs if r.policy == p)["mean"]
                              for p in COMPARED}
            report["loads"][f"{setup}@{load:g}"] = cell
            if load <= 0.8:
                every_cell.append({s: r["two"] for s, r in per_seed.items()})
            print(f"   {setup} at {load:.0%}: over the two {fmt(cell['two'])} ({time.perf_counter() - started:.0f} s)",
                  flush=True)
    seeds_all = sorted(set.intersection(*(set(c) for c in every_cell))) if every_cell else []
    per_seed_mean = [float(np.mean([c[s] for c in every_cell])) for s in seeds_all]
    report["headline"] = {"cells": len(every_cell), **improvement(per_seed_mean)}
    report["headline"]["ratio"] = report["headline"]["mean"] + 1.0

    print("3. deadlines", flush=True)
    over_g, over_two = [], []
    for deadline in DEADLINES:
        if args.quick and deadline not in (1, 5):
            continue
        result = run("thesis-r5-1-2-4", seeds=args.sweep_seeds, policies=["mtf", "themis", "gandiva_fair"],
                     hindsight=False, workload={"deadline": deadline}, **common)
        per_seed = ratios(result)
        report["deadlines"][deadline] = {b: improvement(r[b] for r in per_seed.values()) for b in (*BASELINES, "two")}
        over_g.append({s: r["gandiva_fair"] for s, r in per_seed.items()})
        over_two.append({s: r["two"] for s, r in per_seed.items()})
        print(f"   deadline {deadline}: over gandiva {fmt(report['deadlines'][deadline]['gandiva_fair'])}", flush=True)
    common_seeds = sorted(set.intersection(*(set(c) for c in over_g)))
    report["deadline_average"] = {
        "gandiva_fair": improvement([np.mean([c[s] for c in over_g]) for s in common_seeds]),
        "two": improvement([np.mean([c[s] for c in over_two]) for s in common_seeds]),
    }

    print("4. sensitivity", flush=True)
    for load in (0.7, 1.2):
        for label, change in SENSITIVITY.items():
            if args.quick and label not in list(SENSITIVITY)[:2]:
                continue
            change = json.loads(json.dumps(change))
            change["workload"] = {"load": load, **change.get("workload", {})}
            if "load" in change["workload"] and change["workload"]["load"] is None and load != 0.7:
                continue  # unit jobs ignore the load: one run is enough
            result = run("thesis-r5-1-2-4", seeds=args.sensitivity_seeds, policies=["mtf", "themis", "gandiva_fair"],
                         hindsight=False, **change, **common)
            per_seed = ratios(result)
            served = {p: interval(run_scalars(r)["served"] for r in result.runs if r.policy == p)["mean"]
                      for p in ("mtf", "themis", "gandiva_fair")}
            report["sensitivity"][f"{label} @ {load:g}"] = {
                **{b: improvement(r[b] for r in per_seed.values()) for b in (*BASELINES, "two")}, "served": served}
            print(f"   {label} @ {load:.0%}: over the two {fmt(report['sensitivity'][f'{label} @ {load:g}']['two'])}",
                  flush=True)
    report["wall_s"] = time.perf_counter() - started
    report["run_s"] = sum(RUN_SECONDS.values())

    lines = ["# R5: the thesis's chapter-5 claims, simulated", "",
             f"{args.seeds} seeds, {args.rounds} rounds (load and deadline sweeps {args.sweep_seeds} seeds, overload "
             f"{args.overload_seeds}, sensitivity "
             f"{args.sensitivity_seeds}); {len(RUN_SECONDS)} runs taking {report['run_s'] / 60:.0f} min in all "
             "(summed over the workers, measured when each run was computed).  Improvement of MTF over X: mean "
             "over seeds of WSW(mtf) / WSW(X) - 1 (same seed: same instance and arrivals), ± the half-width of the "
             "95% Student-t interval.", "",
             "| claim | quoted | ours | verdict |", "|---|---|---|---|"]
    for setup, (load, over_themis, over_two_claim) in CLAIMS.items():
        cell = report["presets"][setup]["over"]
        lines.append(f"| {setup} weights at {load:.0%}: over Themis | {100 * over_themis:+.0f}% | {fmt(cell['themis'])} | "
                     f"{verdict(over_themis, cell['themis'])} |")
        lines.append(f"| {setup} weights at {load:.0%}: over the other two | {100 * over_two_claim:+.0f}% | "
                     f"{fmt(cell['two'])} | {verdict(over_two_claim, cell['two'])} |")
    d = report["deadline_average"]
    lines.append(f"| deadlines 1-20 (1/2/4 at 70%): over Gandiva_fair | +8% | {fmt(d['gandiva_fair'])} | "
                 f"{verdict(0.08, d['gandiva_fair'])} |")
    lines.append(f"| deadlines 1-20 (1/2/4 at 70%): over the other two | +13% | {fmt(d['two'])} | {verdict(0.13, d['two'])} |")
    h = report["headline"]
    lines.append(f"| about 1.28x over the standard approaches (4 setups x loads 40-80%) | +28% | {fmt(h)} | "
                 f"{verdict(0.28, h)} |")
    lines += ["", "## Loads (MTF over the other two; share of the arrived work served)", "",
              "| setup | load | over Themis | over Gandiva_fair | over the two | served mtf / themis / gandiva / welfare |",
              "|---|---|---|---|---|---|"]
    for key, cell in report["loads"].items():
        setup, load = key.split("@")
        served = " / ".join(f"{cell['served'][p]:.4f}" for p in COMPARED)
        lines.append(f"| {setup} | {float(load):.0%} | {fmt(cell['themis'])} | {fmt(cell['gandiva_fair'])} | "
                     f"{fmt(cell['two'])} | {served} |")
    lines += ["", "## Deadlines (setup 1/2/4 at 70%)", "", "| deadline | over Themis | over Gandiva_fair |", "|---|---|---|"]
    lines += [f"| {k} | {fmt(v['themis'])} | {fmt(v['gandiva_fair'])} |" for k, v in report["deadlines"].items()]
    lines += ["", "## Sensitivity (setup 1/2/4; MTF over the other two)", "",
              "| choice | over the two | served mtf / themis / gandiva |", "|---|---|---|"]
    for key, cell in report["sensitivity"].items():
        served = " / ".join(f"{cell['served'][p]:.4f}" for p in ("mtf", "themis", "gandiva_fair"))
        lines.append(f"| {key} | {fmt(cell['two'])} | {served} |")
    lines += ["", "## Presets: share of the hindsight bound", "", "| setup | " + " | ".join(
        ["mtf", "themis", "gandiva_fair", "welfare", "leximin", "min_backlog"]) + " |", "|---|" + "---|" * 6]
    for setup, block in report["presets"].items():
        lines.append(f"| {setup} | " + " | ".join(f"{block['bound_share'][p]['mean']:.5f}"
                                                  for p in ("mtf", "themis", "gandiva_fair", "welfare", "leximin",
                                                            "min_backlog")) + " |")
    text = "\n".join(lines) + "\n"
    write_atomic(args.out / "simulate_r5.json", json.dumps(report, indent=2, default=float) + "\n")
    write_atomic(args.out / "simulate_r5.md", text)
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
