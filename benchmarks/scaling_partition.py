"""Scaling of POP-style partitioned solving (``partitions=K``): welfare, fractional max-min and Themis.

Heterogeneous instances made directly as arrays (no per-record objects): ``n``
agents and ``m`` pools; each agent has edges to ``DEGREE`` random pools (repeats
dropped) with utilities drawn independently, so no two agents share a utility row
and symmetry compression does not apply.  Pools hold about ``n / (2 m)`` devices
each (scarce: about one device per two agents), demands are 1 or 2, weights
0.5 to 2.

For every size and method the table gives the time of each stage of the
partitioned solve (split, parts, merge, vectorised feasibility check, bound), the
CPU seconds the parts used (summed over the workers: on a shared machine wall
time depends on the load, CPU time much less), the number of level LPs (maxmin),
the certified gap ``(bound - objective) / objective`` of the objective (welfare;
maxmin: the first level, the max-min value); where the un-partitioned problem is
solved too (``--whole-max``: ``K = 1``, the same code on one part), its time, the
true gap ``(opt - objective) / opt`` and the time ratio whole / partitioned.  For
maxmin with ``--levels all`` (every leximin level in each part, the default) the
last two columns compare the merged leximin vector with the whole one: the share
of agents more than 1% below their whole-leximin value, and the relative shortfall
of the 10th and 50th percentiles of the sorted vectors (no bound is certified for
levels after the first).
Themis (fractional, every active agent bids): work ``W_i`` uniform in 1 to 10 and
elapsed time ``t_i = f_i T_id,i`` with ``f_i`` uniform in [0, 1) (jobs that have already
spent up to one ideal finish time in the system, lags ``a_i = f_i``); the gap is
``(objective - bound) / objective`` with ``bound`` the certified lower bound on the
whole ``rho*``, and the column ``bound from`` says which bound certified it.
Times are medians of ``--repeat`` runs.  Results go to ``NAME.json`` and ``NAME.md``
(``--name``, default ``scaling_partition``) in ``--out`` (default ``benchmarks/results``),
written atomically.

    python benchmarks/scaling_partition.py --quick          # 2,000 x 100 and 10^4 x 10^3 (maxmin: 2,000 only)
    python benchmarks/scaling_partition.py                  # 10^4, 10^5, 10^6 agents x 10^3 pools
    python benchmarks/scaling_partition.py --methods maxmin --repeat 1 --name scaling_partition_maxmin
    python benchmarks/scaling_partition.py --methods maxmin --levels first --sizes 1000000x1000 --parts 64 \
        --repeat 1 --name scaling_partition_maxmin_first
    python benchmarks/scaling_partition.py --sizes 1000000x1000 --parts 8,16 --executor local
    python benchmarks/scaling_partition.py --sample-parts 1 --sizes 100000x1000,1000000x1000 --parts 16,160 \
        --caps on,off --name scaling_partition_caps    # leximin of sampled parts: capped jumps against the plain loop
    python benchmarks/scaling_partition.py --methods themis --sizes 100000x1000,1000000x1000 --parts 16,64 \
        --repeat 1 --whole-max 100000 --name scaling_partition_themis
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from laissez_opt.io.jsonfile import write_atomic
from laissez_opt.partition.core import Problem, equal_share_normalizer, part_tasks
from laissez_opt.partition.levels import leximin_part
from laissez_opt.partition.run import solve_arrays
from laissez_opt.partition.themis import themis_arrays

HERE = Path(__file__).resolve().parent
DEGREE = 5
SEED = 7


def make_problem(n: int, m: int, seed: int = SEED) -> Problem:
    """``n`` agents, ``m`` pools, about ``DEGREE`` random edges per agent, built with numpy only."""
    rng = np.random.default_rng(seed)
    pools = np.sort(rng.integers(0, m, size=(n, DEGREE)), axis=1)
    keep = np.ones_like(pools, dtype=bool)
    keep[:, 1:] = pools[:, 1:] != pools[:, :-1]
    agent = np.repeat(np.arange(n), DEGREE).reshape(n, DEGREE)[keep]
    pool = pools[keep]
    utility = rng.uniform(0.1, 1.0, size=agent.shape[0]) * rng.uniform(0.5, 2.0, size=n)[agent]
    counts = rng.integers(1, max(2, n // m) + 1, size=m)
    weights = rng.uniform(0.5, 2.0, size=n)
    demands = rng.integers(1, 3, size=n).astype(np.float64)
    return Problem(agent, pool, utility, counts, weights, demands)


def themis_problem(problem: Problem, seed: int = SEED) -> tuple[Problem, np.ndarray, np.ndarray]:
    """``problem`` with Themis coefficients ``u_e / X^id_i``, work uniform in 1 to 10 and lags ``a_i`` uniform in [0, 1)."""
    rng = np.random.default_rng([seed, 2])
    n = problem.n_agents
    work = rng.uniform(1.0, 10.0, n)
    coef, _, active = themis_arrays(problem, work, np.zeros(n))
    # X^id_i = u_e / coef_e on any edge of i with coef_e > 0; t_i = f_i W_i / X^id_i gives a_i = f_i.
    ideal = np.zeros(n)
    np.maximum.at(ideal, problem.edge_agent, np.divide(problem.utility, coef, out=np.zeros_like(coef), where=coef > 0))
    elapsed = np.where(active, rng.uniform(0.0, 1.0, n) * work / np.where(ideal > 0, ideal, 1.0), 0.0)
    coef, lag, active = themis_arrays(problem, work, elapsed)
    ready = Problem(problem.edge_agent, problem.edge_pool, problem.utility, problem.counts, problem.weights,
                    problem.demands, coef)
    return ready, lag, active


def run_one(problem: Problem, method: str, parts, executor: str, workers: int | None, levels: str = "all",
            caps: bool = True) -> dict:
    lag = active = None
    if method == "themis":
        ready, lag, active = themis_problem(problem)
    else:
        norm = equal_share_normalizer(problem) if method == "maxmin" else None
        ready = problem.for_method(method, norm)
    start = time.perf_counter()
    out = solve_arrays(ready, method, partitions=parts, seed=0, executor=executor, workers=workers,
                       integral=method == "welfare", levels=levels, caps=caps, lag=lag, active=active)
    total = time.perf_counter() - start
    info = out["details"]["parts"]
    return {"total_s": total, **out["timing"], "objective": out["objective"], "bound": out["bound"],
            "gap": out["gap"], "k": out["details"]["k"], "parts_cpu_s": out["details"]["parts_cpu_s"],
            "slowest_part_s": max(p["seconds"] or 0.0 for p in info),
            "lps": sum(p["lps"] or 0 for p in info) if method in ("maxmin", "themis") else None,
            "cap_lps": sum(p.get("cap_lps") or 0 for p in info) if method == "maxmin" else None,
            "bound_from": out["details"]["bound_from"],
            "part_status": sorted({p["status"] for p in info}), "values": out["values"]}


def sample_parts(problem: Problem, parts: int, count: int, caps_modes: list[bool]) -> list[dict]:
    """The leximin of the first ``count`` parts of a ``parts``-way split, solved in this process, per caps mode.

    Every part of the split has the same distribution (a random ``1/K`` of the agents
    and of every pool), so a few sampled parts estimate the whole run's CPU seconds
    (``K`` times their mean) where running all of them would take too long.
    """
    ready = problem.for_method("maxmin", equal_share_normalizer(problem))
    tasks, _ = part_tasks(ready, parts, 0, "maxmin", integral=False)
    rows = []
    for task in tasks[:count]:
        values = {}
        for caps in caps_modes:
            out = leximin_part(dict(task, caps=caps))
            values[caps] = out["values"]
            rows.append({"part": task["part"], "agents": int(task["demands"].shape[0]),
                         "edges": int(task["edge_agent"].shape[0]), "caps": caps, "lps": out["lps"],
                         "cap_lps": out["cap_lps"], "cap_frozen": out["cap_frozen"],
                         "levels": len(out["levels"]), "cpu_s": out["cpu_s"], "wall_s": out["seconds"],
                         "status": out["status"]})
        if len(values) == 2:
            a, b = values[True], values[False]
            rows[-1]["max_rel_diff"] = rows[-2]["max_rel_diff"] = float(
                np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12), initial=0.0))
    return rows


def leximin_shortfall(whole: np.ndarray, split: np.ndarray) -> dict:
    """How far the partitioned leximin vector is below the whole one, agent by agent and sorted.

    ``agents_below_1pct``: share of agents whose value is more than 1% below their whole-leximin value;
    ``sorted_p10``, ``sorted_p50``: relative shortfall of the 10th and 50th percentile of the sorted vectors.
    """
    ws, ps = np.sort(whole), np.sort(split)
    pick = lambda v, q: float(v[min(v.shape[0] - 1, int(q * v.shape[0]))])  # noqa: E731
    rel = lambda a, b: (a - b) / a if a > 0 else 0.0  # noqa: E731
    return {"agents_below_1pct": float(np.mean(split < 0.99 * whole)),
            "sorted_p10": rel(pick(ws, 0.1), pick(ps, 0.1)), "sorted_p50": rel(pick(ws, 0.5), pick(ps, 0.5))}


def median_runs(fn, repeat: int) -> dict:
    runs = [fn() for _ in range(repeat)]
    out = dict(runs[0])
    for key, value in runs[0].items():
        if key.endswith("_s"):
            out[key] = statistics.median(r[key] for r in runs)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="2,000 x 100 and 10,000 x 1,000 only (maxmin at 2,000 only), one run each, "
                         "the whole problem at 2,000 only")
    ap.add_argument("--sizes", default=None, help="AGENTSxPOOLS,... (default 10000x1000,100000x1000,1000000x1000)")
    ap.add_argument("--parts", default="auto", help="comma-separated K values or auto (default auto)")
    ap.add_argument("--methods", default="welfare,maxmin", help="comma-separated: welfare, maxmin, themis")
    ap.add_argument("--levels", default="all", choices=("all", "first"),
                    help="maxmin: every leximin level in each part (default) or the first (max-min) only")
    ap.add_argument("--caps", default="on", help="maxmin: capped jumps on, off or on,off (default on)")
    ap.add_argument("--sample-parts", type=int, default=0,
                    help="maxmin leximin of only the first N parts of each split, in this process (caps modes compared)")
    ap.add_argument("--executor", default="local", choices=("inline", "local", "dask"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--whole-max", type=int, default=100_000,
                    help="solve the un-partitioned LP up to this many agents (default 100000)")
    ap.add_argument("--out", default=str(HERE / "results"), help="output folder (default benchmarks/results)")
    ap.add_argument("--name", default="scaling_partition", help="file stem of the results (default scaling_partition)")
    args = ap.parse_args(argv)
    sizes = args.sizes or ("2000x100,10000x1000" if args.quick else "10000x1000,100000x1000,1000000x1000")
    repeat = 1 if args.quick else args.repeat
    if args.quick:
        # The whole leximin at 10^4 agents runs hundreds of level LPs: compare with it at 2,000 only.
        args.whole_max = min(args.whole_max, 2000)
    parts_list = [p if p == "auto" else int(p) for p in args.parts.split(",")]
    caps_modes = []
    for word in args.caps.split(","):
        if word not in ("on", "off"):
            ap.error(f"--caps takes on, off or on,off, got {word!r}")
        caps_modes.append(word == "on")
    if args.sample_parts:
        return _sampled(args, sizes, parts_list, caps_modes)
    rows = []
    for text in sizes.split(","):
        n, m = (int(v) for v in text.lower().split("x"))
        t0 = time.perf_counter()
        problem = make_problem(n, m)
        build = time.perf_counter() - t0
        for method in args.methods.split(","):
            if args.quick and method == "maxmin" and n > 2000:
                continue  # quick: leximin's level LPs take minutes at 10^4 agents
            whole = None
            if n <= args.whole_max:
                whole = median_runs(lambda: run_one(problem, method, 1, "inline", None, args.levels), repeat)
            for parts, caps in [(p, c) for p in parts_list for c in (caps_modes if method == "maxmin" else [True])]:
                res = median_runs(lambda: run_one(problem, method, parts, args.executor, args.workers, args.levels,
                                                  caps), repeat)
                row = {"size": text, "agents": n, "pools": m, "edges": problem.n_edges, "method": method,
                       "levels": args.levels if method == "maxmin" else None, "caps": caps,
                       "build_s": build, "executor": args.executor, "workers": args.workers, **res}
                if whole is not None:
                    opt = whole["objective"]
                    row["whole_s"] = whole["total_s"]
                    row["true_gap"] = (opt - res["objective"]) / opt if opt else None
                    if method == "themis":  # a minimisation: the merged max rho is above the optimum
                        row["true_gap"] = (res["objective"] - opt) / res["objective"] if res["objective"] else None
                    row["speedup"] = whole["total_s"] / res["total_s"]
                    if method == "maxmin" and args.levels == "all":
                        row["leximin"] = leximin_shortfall(whole["values"], res["values"])
                row.pop("values")
                rows.append(row)
                print(_line(row), flush=True)
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "repeat": repeat,
            "note": "2-core machine shared with other work; times are medians of the runs"}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / f"{args.name}.json", json.dumps({"meta": meta, "rows": rows}, indent=1))
    write_atomic(out / f"{args.name}.md", _table(rows))
    print(_table(rows))
    return 0


def _sampled(args, sizes: str, parts_list: list, caps_modes: list[bool]) -> int:
    rows = []
    for text in sizes.split(","):
        n, m = (int(v) for v in text.lower().split("x"))
        problem = make_problem(n, m)
        for parts in parts_list:
            if parts == "auto" or parts > n:
                continue
            for row in sample_parts(problem, parts, args.sample_parts, caps_modes):
                row.update(size=text, k=parts)
                rows.append(row)
                print(row, flush=True)
    meta = {"cpus": os.cpu_count(), "python": platform.python_version(), "mode": "sampled parts, inline",
            "note": "2-core machine shared with other work; one run per part and mode"}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = ("size", "K", "part", "agents", "edges", "caps", "LPs", "capped-probe LPs", "agents frozen by caps",
            "level LPs", "CPU s", "wall s", "max rel. diff on/off", "status")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = (r["size"], r["k"], r["part"] + 1, r["agents"], r["edges"], "on" if r["caps"] else "off", r["lps"],
                 r["cap_lps"], r["cap_frozen"], r["levels"], _fmt(r["cpu_s"]), _fmt(r["wall_s"]),
                 _fmt(r.get("max_rel_diff"), 2), r["status"])
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    write_atomic(out / f"{args.name}.json", json.dumps({"meta": meta, "rows": rows}, indent=1))
    write_atomic(out / f"{args.name}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _fmt(value, digits=3):
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


HEADER = ("size", "edges", "method", "K", "split s", "parts s", "parts CPU s", "LPs", "merge s", "check s",
          "bound s", "total s", "certified gap", "whole s", "true gap", "whole / partitioned",
          "agents >1% below whole leximin", "sorted p10 / p50 shortfall", "bound from")


def _pct(v, digits=3):
    return "-" if v is None else f"{100 * v:.{digits}f}%"


def _cells(r):
    lex = r.get("leximin")
    method = r["method"] if r.get("levels") is None else f"{r['method']} ({r['levels']})"
    if r.get("levels") == "all":
        method += ", caps " + ("on" if r.get("caps", True) else "off")
    return (r["size"], r["edges"], method, r["k"], _fmt(r["split_s"]), _fmt(r["solve_s"]), _fmt(r["parts_cpu_s"]),
            _fmt(r.get("lps")), _fmt(r["merge_s"]), _fmt(r["verify_s"]), _fmt(r["bound_s"]), _fmt(r["total_s"]),
            _pct(r["gap"]), _fmt(r.get("whole_s")), _pct(r.get("true_gap")), _fmt(r.get("speedup"), 2),
            "-" if lex is None else _pct(lex["agents_below_1pct"], 1),
            "-" if lex is None else f"{_pct(lex['sorted_p10'], 2)} / {_pct(lex['sorted_p50'], 2)}",
            _bound_from(r.get("bound_from")))


def _bound_from(text) -> str:
    if not text:
        return "-"
    if text.startswith("standalone"):
        return "standalone"
    return "duals" if "subgradient" not in text else "duals + subgradient"


def _line(r) -> str:
    return "  ".join(f"{h}={c}" for h, c in zip(HEADER, _cells(r)))


def _table(rows) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(c) for c in _cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
