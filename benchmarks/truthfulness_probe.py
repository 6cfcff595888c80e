"""How often can an agent gain by lying?  Misreport probes on the thesis's R2 instance and small random instances.

Part 1, the thesis's Table 3.1 instance (``instances/thesis-r2-table3-1.json``):
MTF with the thesis's reproduction settings (``tokens=7``, ``threshold=fixed:0.7``,
which give the thesis's M2 row exactly; ``docs/mtf.md``) and with the defaults
(``fixed:0``), VCG, and the heuristics.  On the random instances MTF runs with
the default token pool, with ``fixed:0.7`` and with the defaults.  Every lie family is enumerated completely
(the budget exceeds the largest family).  For each profitable lie the script
prints the lie, the truthful and the lying allocation of the liar.

Part 2, ``--instances`` seeded random instances of family ``uniform`` (2 to 3
agents, 2 to 3 pools of 1 to 2 devices, 1 to 3 rounds, density 0.7, demands 1 to
2 or unbounded): for each mechanism, the share of instances on which some agent
has a profitable lie (overall and per lie family) and the largest gain relative
to the liar's truthful utility.

    python benchmarks/truthfulness_probe.py                  # R2 and 60 random instances, a few minutes
    python benchmarks/truthfulness_probe.py --quick          # R2 and 10 random instances
    python benchmarks/truthfulness_probe.py --instances 200 --out DIR

Writes ``truthfulness_probe.json`` and ``truthfulness_probe.md`` to ``--out``
(default ``benchmarks/results``), each atomically.  Exit status 1 if VCG shows a
profitable lie anywhere (it must not: it is dominant-strategy truthful).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import laissez_opt as lo
from laissez_opt.io import write_atomic

HERE = Path(__file__).resolve().parent
R2 = HERE.parent / "instances" / "thesis-r2-table3-1.json"
#: VCG (which must show no profitable lie) and the heuristics.
OTHERS = [
    ("vcg", "vcg", {}),
    ("greedy", "greedy", {}),
    ("round_robin", "round_robin", {}),
    ("gandiva_fair", "gandiva_fair", {}),
    ("dynamic_partition", "dynamic_partition", {}),
    ("time_equal", "time_equal", {}),
]
#: On R2, MTF as the thesis's reproduction runs it (the M2 row) and with the defaults.
R2_MECHANISMS = [
    ("mtf (T=7, tau=0.7)", "mtf", {"tokens": 7, "threshold": "fixed:0.7"}),
    ("mtf (defaults)", "mtf", {}),
] + OTHERS
#: On random instances the token pool is the default (one round's devices).
RANDOM_MECHANISMS = [
    ("mtf (tau=0.7)", "mtf", {"threshold": "fixed:0.7"}),
    ("mtf (defaults)", "mtf", {}),
] + OTHERS
BUDGET = 20000


def allocation_of(result, agent: str) -> list[str]:
    return sorted(f"{rec['pool']}@r{rec.get('round', 0)}" + ("" if rec["amount"] == 1 else f"x{rec['amount']:g}")
                  for rec in result.allocation if rec["agent"] == agent)


def replay(instance, method: str, options: dict, finding: dict):
    """The liar's allocation under the lie (the probe's report data applied again)."""
    from laissez_opt.analysis.truthfulness import _values, _with_report

    agent = finding["agent"]
    edges = [k for k, e in enumerate(instance.edges) if e.agent == agent]
    pools = [instance.edges[k].pool for k in edges]
    data = finding["report"]
    money = method == "vcg"
    truth = _values(instance, money)
    if finding["family"] == "threshold":
        from laissez_opt.heuristics.thresholds import make_policy

        table = make_policy(options.get("threshold", "fixed:0"), instance).table
        mapping = {a.id: list(map(float, table[i])) for i, a in enumerate(instance.agents)}
        mapping[agent] = data["thresholds"]
        return lo.solve(instance, method, **{**options, "threshold": mapping})
    if finding["family"] == "scale":
        reported = {e: tuple(v * data["factor"] for v in truth[e]) for e in edges}
    elif finding["family"] == "per_pool":
        reported = {e: tuple(v * data[p] for v in truth[e]) for e, p in zip(edges, pools)}
    else:
        reported = {e: tuple(truth[e]) for e in edges}
        for r, values in data["rounds"].items():
            for e, p in zip(edges, pools):
                row = list(reported[e])
                row[int(r)] = values[p]
                reported[e] = tuple(row)
    return lo.solve(_with_report(instance, edges, reported, money), method, **options)


def part_r2(budget: int) -> list[dict]:
    from laissez_opt.analysis.truthfulness import probe

    instance = lo.load(R2)
    rows = []
    for label, method, options in R2_MECHANISMS:
        report = probe(instance, method, run=lambda i, m, o: lo.solve(i, m, **o), options=options, budget=budget)
        truthful = lo.solve(instance, method, **options)
        findings = []
        for f in report.findings:
            lying = replay(instance, method, options, f)
            findings.append({**f, "truthful_allocation": allocation_of(truthful, f["agent"]),
                             "lying_allocation": allocation_of(lying, f["agent"])})
        rows.append({"mechanism": label, "method": method, "options": options, "truthful": report.truthful,
                     "families": report.tried, "findings": findings, "runs": report.runs, "seconds": report.seconds})
        print(f"R2 {label:22s} runs {report.runs:6d}  profitable lies: {len(findings)}  ({report.seconds:.1f}s)",
              file=sys.stderr, flush=True)
    return rows


def random_instances(count: int, seed: int):
    rng = random.Random(seed)
    for k in range(count):
        agents, pools, rounds = rng.choice((2, 3)), rng.choice((2, 3)), rng.choice((1, 2, 3))
        yield lo.generate("uniform", agents, pools, seed=seed * 100_000 + k, density=0.7, max_count=2,
                          max_demand=2, rounds=rounds)


def part_random(count: int, seed: int, budget: int) -> list[dict]:
    from laissez_opt.analysis.truthfulness import probe

    instances = list(random_instances(count, seed))
    rows = []
    for label, method, options in RANDOM_MECHANISMS:
        with_lie, with_report_lie, by_family, gains, runs = 0, 0, {}, [], 0
        start = time.perf_counter()
        for instance in instances:
            report = probe(instance, method, run=lambda i, m, o: lo.solve(i, m, **o), options=options, budget=budget)
            runs += report.runs
            if any(f["family"] != "threshold" for f in report.findings):
                with_report_lie += 1  # a lie about values or preferences, not a choice of threshold
            if report.findings:
                with_lie += 1
                best = report.largest
                base = abs(best["truthful_payoff"])
                gains.append(best["gain"] / base if base > 0 else float("inf"))
            for family, stats in report.tried.items():
                entry = by_family.setdefault(family, {"instances": 0, "exhaustive": 0})
                entry["instances"] += 1 if stats["profitable"] else 0
                entry["exhaustive"] += 1 if stats["exhaustive"] else 0
        finite = [g for g in gains if g != float("inf")]
        rows.append({
            "mechanism": label, "method": method, "options": options, "instances": len(instances),
            "with_profitable_lie": with_lie, "share": with_lie / len(instances),
            "with_profitable_value_or_order_lie": with_report_lie,
            "by_family": by_family, "largest_relative_gain": max(finite) if finite else None,
            "median_relative_gain": sorted(finite)[len(finite) // 2] if finite else None,
            "runs": runs, "seconds": time.perf_counter() - start,
        })
        print(f"random {label:22s} {with_lie:4d} / {len(instances)} instances with a profitable lie "
              f"({time.perf_counter() - start:.1f}s)", file=sys.stderr, flush=True)
    return rows


def markdown(r2: list[dict], rand: list[dict], meta: dict) -> str:
    lines = [
        "# Misreport probes: can an agent gain by lying?",
        "",
        f"{meta['machine']}.  Lie families: `scale` (all values times a factor), `per_pool` (each pool its own "
        "factor in {0, 0.5, 1, 2}), `order` (another preference order per round), `threshold` (MTF's tau per "
        "round from {0, 0.1, ..., 0.9}); payoff: true utility (VCG: true value minus payment).",
        "",
        "## The thesis's Table 3.1 instance (R2), every lie enumerated",
        "",
        "| mechanism | truthful utilities | lies tried | profitable lies (agent, family, gain) |",
        "| --- | --- | ---: | --- |",
    ]
    for row in r2:
        tried = sum(s["lies"] for s in row["families"].values())
        found = "; ".join(f"{f['agent']} {f['family']} +{f['gain']:.4g}" for f in row["findings"]) or "none"
        truthful = ", ".join(f"{a} {u:.4g}" for a, u in row["truthful"].items())
        lines.append(f"| {row['mechanism']} | {truthful} | {tried} | {found} |")
    lines += ["", "### The lies, replayed", ""]
    for row in r2:
        for f in row["findings"]:
            lines.append(f"- **{row['mechanism']}**, agent {f['agent']}: {f['lie']}. Utility "
                         f"{f['truthful_payoff']:.4g} -> {f['payoff']:.4g} (+{f['gain']:.4g}); devices "
                         f"{', '.join(f['truthful_allocation'])} -> {', '.join(f['lying_allocation'])}.")
    lines += ["", f"## {meta['instances']} random small instances (seed {meta['seed']})", "",
              "| mechanism | instances with a profitable lie | share | of which about values or orders | by family (instances) | largest gain (relative) | median gain |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    for row in rand:
        fam = ", ".join(f"{k} {v['instances']}" for k, v in row["by_family"].items())
        big = "-" if row["largest_relative_gain"] is None else f"{row['largest_relative_gain']:.3g}"
        med = "-" if row["median_relative_gain"] is None else f"{row['median_relative_gain']:.3g}"
        lines.append(f"| {row['mechanism']} | {row['with_profitable_lie']} / {row['instances']} | "
                     f"{row['share']:.0%} | {row['with_profitable_value_or_order_lie']} | {fam} | {big} | {med} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="R2 and 10 random instances.")
    parser.add_argument("--instances", type=int, default=60, help="Random instances (default 60).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=BUDGET, help="Most lies per agent and family.")
    parser.add_argument("--out", default=str(HERE / "results"), help="Output directory (default benchmarks/results).")
    args = parser.parse_args(argv)
    count = 10 if args.quick else args.instances
    r2 = part_r2(args.budget)
    rand = part_random(count, args.seed, args.budget)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "instances": count, "seed": args.seed, "budget": args.budget}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "truthfulness_probe.json", json.dumps({"meta": meta, "r2": r2, "random": rand}, indent=2) + "\n")
    text = markdown(r2, rand, meta)
    write_atomic(out / "truthfulness_probe.md", text)
    print(text)
    vcg_lies = [r for r in r2 + rand if r["method"] == "vcg" and (r.get("findings") or r.get("with_profitable_lie"))]
    return 1 if vcg_lies else 0


if __name__ == "__main__":
    sys.exit(main())
