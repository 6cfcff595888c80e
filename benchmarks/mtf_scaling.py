"""Per-round time of Most-Token-First against sorting the agents' utility rows.

For each size ``AGENTSxPOOLSxDEVICES_PER_POOL`` the script draws one seeded dense
utility matrix (every agent compatible with every pool, uniform ``[0, 1)`` utilities,
normalised per agent by its row maximum as ``mtf`` does with ``normalize="agent"``)
and runs ``--rounds`` consecutive MTF rounds (budgets and the round-robin turn carry
over; tokens ``T = `` the number of devices; equal weights; unbounded demands) with
fixed thresholds.  A round has two parts:

* ``prefs``: building the preference lists, :func:`~laissez_opt.heuristics.mtf.preferences_from_matrix`
  (one ``np.argsort`` of the ``n x m`` matrix, gathering the sorted scores, re-sorting
  rows with ties stably);
* ``allocate``: :func:`~laissez_opt.heuristics.mtf.mtf_round` (token phase over the
  budget buckets, redistribution, round-robin), pure Python;

and, in the same run, the reference: ``np.argsort`` of the same ``n x m`` matrix
(``sort``).  The utilities are the same in every round, so the preference build is the
same computation in each: it and the reference sort are timed alternately (``--repeat``
times, and more for small sizes, until one second is spent) and the fastest of each is
kept (the machine may be shared; alternating exposes both to the same load).  ``allocate`` is the median over the rounds of the fastest of
repeated runs of each round on its inputs.  ``ratio = (prefs + allocate) / sort``; the
target is ``ratio <= 3`` at the largest size.  Token-phase visits and preference-pointer
moves are reported as complexity counters (visits <= devices + agents per round).

The public path (``--public-sizes``): the same dense utilities as an instance built
from records (``lo.Instance``, as a user's script does; above 2 x 10^6 edges with the
column constructor the file reader uses, its array views dropped so that the first
call builds them from the records), then, in the same run and
alternately: the reference row sort; ``public prefs``, the preference lists built
from the instance's edges as ``lo.solve`` builds them; ``lo.solve(inst, "mtf")``
(one round, verifier included) on the warm instance (views cached) and ``cold``, its
first call (the instance's array views built from the records).  The parts of
``lo.solve`` outside the method's own path are timed on the same result: ``verify``,
``records`` (the allocation records) and ``metrics`` (welfare and sharing figures);
``own = lo.solve - verify - records - metrics``.  Ratios are against the row sort of
the same run (medians of ``--public-repeat`` alternating runs, at least 3).
``--public-only`` runs this table alone (results in ``mtf_public.{json,md}``).

A further table runs ``lo.solve(..., "mtf")`` end to end on a thesis-scale instance (20
agents, 40 single-device pools, ``--thesis-rounds`` rounds of fresh utilities) with
each threshold policy, to show what learning costs per round.

Results go to ``mtf_scaling.json`` and ``mtf_scaling.md`` in ``--out`` (default
``benchmarks/results``), written atomically.

    python benchmarks/mtf_scaling.py             # all sizes up to 10000 x 1000 pools (100,000 devices)
    python benchmarks/mtf_scaling.py --quick     # the three small sizes, fewer rounds
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.heuristics.mtf import apportion, mtf_round, preferences_from_matrix

HERE = Path(__file__).resolve().parent
SIZES = "20x40x1,200x100x5,1000x200x10,2000x500x20,10000x1000x100"
QUICK_SIZES = "20x40x1,200x100x5,1000x200x10"
PUBLIC_SIZES = "1000x200x10,2000x500x20,10000x1000x100"
QUICK_PUBLIC_SIZES = "200x100x5"
THRESHOLDS = (0.0, 0.5)
TARGET = 3.0
SEED = 1


def _best(fn, *, min_seconds: float = 0.3, max_runs: int = 30):
    """``(fastest time, result)`` of ``fn()`` over repeated runs (at least 2, until ``min_seconds``)."""
    best, spent, runs, result = float("inf"), 0.0, 0, None
    while runs < 2 or (spent < min_seconds and runs < max_runs):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        took = time.perf_counter() - t0
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best, result


def _parse(size: str) -> tuple[int, int, int]:
    n, m, k = (int(v) for v in size.lower().split("x"))
    return n, m, k


def run_size(n: int, m: int, k: int, taus: tuple[float, ...], rounds: int, seed: int, repeat: int) -> list[dict]:
    """One size: the sort and the preference build timed alternately, then the rounds per ``tau``."""
    rng = np.random.default_rng(seed)
    utility = rng.random((n, m))
    scores = utility / (utility.max(axis=1, keepdims=True) * (1.0 + 1e-9))
    counts = [k] * m
    devices = m * k
    weights = [1] * n
    active = list(range(n))
    # The utilities are the same in every round, so every round's preference build is the
    # same computation: time it (and the reference sort) alternately, ``repeat`` times each,
    # and keep the fastest of each (the machine may be shared).
    sort_s, prefs_s = [], []
    while len(sort_s) < repeat or (sum(sort_s) + sum(prefs_s) < 1.0 and len(sort_s) < 300):
        sort_s.append(_best(lambda: np.argsort(scores, axis=1), min_seconds=0.0, max_runs=1)[0])
        t, prefs = _best(lambda: preferences_from_matrix(scores), min_seconds=0.0, max_runs=1)
        prefs_s.append(t)
    rows = []
    for tau in taus:
        shares = apportion(devices, weights, active)
        budgets = [shares[i] for i in range(n)]
        thresholds = [tau] * n
        turn = 0
        alloc_s, visits, steps, token, rr, idle = [], [], [], [], [], []
        for _ in range(rounds):
            t_alloc, out = _best(
                lambda: mtf_round(prefs, counts, budgets, thresholds, active=active, turn=turn, int_weights=weights),
                min_seconds=1.0,
            )
            alloc_s.append(t_alloc)
            assert sum(out.budgets) == devices, "tokens not conserved"
            assert out.visits <= devices + n
            budgets, turn = out.budgets, out.turn
            visits.append(out.visits)
            steps.append(out.steps)
            token.append(out.n_token)
            rr.append(len(out.picks_agent) - out.n_token)
            idle.append(out.unallocated)
        sort_best, prefs_best, alloc_med = min(sort_s), min(prefs_s), statistics.median(alloc_s)
        rows.append(
            {
                "agents": n,
                "pools": m,
                "devices": devices,
                "tau": tau,
                "tokens": devices,
                "rounds": rounds,
                "sort_s": sort_best,
                "prefs_s": prefs_best,
                "allocate_s": alloc_med,
                "round_s": prefs_best + alloc_med,
                "ratio": (prefs_best + alloc_med) / sort_best,
                "allocate_us_per_device": 1e6 * alloc_med / devices,
                "visits": max(visits),
                "pointer_steps": max(steps),
                "token_devices": token[-1],
                "round_robin_devices": rr[-1],
                "idle_devices": idle[-1],
            }
        )
    del prefs
    return rows


def public_path(n: int, m: int, k: int, seed: int, repeat: int) -> dict:
    """``lo.solve(inst, "mtf")`` on an instance built from records, against the row sort (module docstring)."""
    from laissez_opt.analysis.metrics import basic_metrics
    from laissez_opt.analysis.verify import verify
    from laissez_opt.heuristics.mtf import _denominators, _preferences_from_edges
    from laissez_opt.result import allocation_records

    rng = np.random.default_rng(seed)
    utility = np.round(rng.random((n, m)), 6) + 1e-6
    pools = [lo.Pool(f"c{c}", count=k) for c in range(m)]
    if n * m > 2_000_000:  # the column constructor (the file reader's and generators' route): records are slow here
        from laissez_opt.io.columns import instance_from_columns

        inst = instance_from_columns(pools, [f"a{i}" for i in range(n)], np.repeat(np.arange(n), m),
                                     np.tile(np.arange(m), n), utility.reshape(-1), name=f"mtf-{n}x{m}x{k}")
        for view in ("edge_agent", "edge_pool", "edge_utility", "weights", "demands"):
            inst.__dict__.pop(view, None)  # so that the first call builds them from the records, as cold
    else:
        agents = [lo.Agent(f"a{i}") for i in range(n)]
        values = utility.tolist()
        edges = [lo.Edge(f"a{i}", f"c{c}", values[i][c]) for i in range(n) for c in range(m)]
        inst = lo.Instance(pools, agents, edges, name=f"mtf-{n}x{m}x{k}")
        del edges, values
    scores = utility / (utility.max(axis=1, keepdims=True) * (1.0 + 1e-9))
    gc.collect()
    t0 = time.perf_counter()
    lo.solve(inst, "mtf")
    cold = time.perf_counter() - t0
    den = _denominators(inst, "agent")[:, 0]
    active = np.ones(n, dtype=bool)
    sort_s, prefs_s, solve_s, verify_s, records_s, metrics_s = [], [], [], [], [], []
    for _ in range(repeat):
        sort_s.append(_best(lambda: np.argsort(scores, axis=1), min_seconds=0.0, max_runs=1)[0])
        prefs_s.append(_best(lambda: _preferences_from_edges(inst, 0, None, active, den=den), min_seconds=0.0,
                             max_runs=1)[0])
        t, res = _best(lambda: lo.solve(inst, "mtf"), min_seconds=0.0, max_runs=1)
        solve_s.append(t)
        verify_s.append(_best(lambda: verify(inst, res), min_seconds=0.0, max_runs=1)[0])
        records_s.append(_best(lambda: allocation_records(inst, res.amounts), min_seconds=0.0, max_runs=1)[0])
        utilities = np.array([res.utilities[a.id] for a in inst.agents])
        metrics_s.append(_best(lambda: basic_metrics(inst, utilities), min_seconds=0.0, max_runs=1)[0])
    med = statistics.median
    sort_m = med(sort_s)
    outside = med(verify_s) + med(records_s) + med(metrics_s)
    row = {
        "agents": n, "pools": m, "devices": m * k, "edges": inst.n_edges, "repeat": repeat,
        "sort_s": sort_m, "public_prefs_s": med(prefs_s), "solve_s": med(solve_s),
        "solve_cold_s": cold, "verify_s": med(verify_s), "records_s": med(records_s), "metrics_s": med(metrics_s),
        "own_s": med(solve_s) - outside,
    }
    row.update(prefs_ratio=row["public_prefs_s"] / sort_m, solve_ratio=row["solve_s"] / sort_m,
               cold_ratio=cold / sort_m, outside_ratio=outside / sort_m, own_ratio=row["own_s"] / sort_m)
    return row


def public_markdown(rows: list[dict]) -> list[str]:
    lines = [
        "",
        "Public path: `lo.solve(inst, \"mtf\")` (one round, verifier included) on an instance built from records, "
        "against the row sort of the same run (medians of alternating runs; `cold` is the first call):",
        "",
        "| agents | pools | devices | edges | sort (s) | public prefs (s) | prefs / sort | lo.solve (s) | lo.solve / sort "
        "| verify (s) | records (s) | metrics (s) | (verify + records + metrics) / sort | own / sort | cold lo.solve (s) "
        "| cold / sort |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['agents']} | {r['pools']} | {r['devices']} | {r['edges']:,} | {r['sort_s']:.4f} | "
            f"{r['public_prefs_s']:.4f} | {r['prefs_ratio']:.2f} | {r['solve_s']:.3f} | {r['solve_ratio']:.1f} | "
            f"{r['verify_s']:.3f} | {r['records_s']:.3f} | {r['metrics_s']:.3f} | {r['outside_ratio']:.1f} | "
            f"{r['own_ratio']:.1f} | {r['solve_cold_s']:.3f} | {r['cold_ratio']:.1f} |"
        )
    return lines


def thesis_scale(rounds: int, seed: int) -> list[dict]:
    """``lo.solve`` end to end: 20 agents, 40 single-device pools, ``rounds`` rounds."""
    rng = np.random.default_rng(seed)
    pools = [lo.Pool(f"c{c}") for c in range(40)]
    agents = [lo.Agent(f"a{i}") for i in range(20)]
    util = rng.random((20, 40, rounds)).round(3)
    edges = [lo.Edge(f"a{i}", f"c{c}", tuple(util[i, c].tolist())) for i in range(20) for c in range(40)]
    inst = lo.Instance(pools, agents, edges, rounds=rounds, name="thesis-scale")
    optimum = lo.solve(inst, "welfare").objective
    lo.solve(inst, "mtf")  # warm-up (imports, caches)
    rows = []
    for policy in ("fixed:0", "fixed:0.5", "hedge", "actor_critic"):
        t0 = time.perf_counter()
        res = lo.solve(inst, "mtf", threshold=policy, seed=seed)
        total = time.perf_counter() - t0
        rows.append(
            {
                "threshold": policy,
                "rounds": rounds,
                "total_s": total,
                "per_round_ms": 1e3 * total / rounds,
                "welfare": res.objective,
                "welfare_over_optimum": res.objective / optimum,
            }
        )
    return rows


def markdown(rows: list[dict], thesis: list[dict], meta: dict, public: list[dict] = ()) -> str:
    lines = [
        "# MTF per-round time against sorting the utility rows",
        "",
        f"Machine: {meta['machine']}; Python {meta['python']}; numpy {meta['numpy']}; load average at the start "
        f"{meta.get('load', 'n/a')}. "
        "sort and prefs: fastest of alternating runs; allocate: median over the rounds; `ratio = (prefs + allocate) / sort`, target <= 3 at the largest size.",
        "",
        "| agents | pools | devices | tau | sort (s) | prefs (s) | allocate (s) | round (s) | ratio | us/device | visits | pointer moves | token / RR / idle |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    if not rows:
        del lines[-3:]  # a public-only run: no per-round table
    for r in rows:
        lines.append(
            f"| {r['agents']} | {r['pools']} | {r['devices']} | {r['tau']:.1f} | {r['sort_s']:.4g} | {r['prefs_s']:.4g} | "
            f"{r['allocate_s']:.4g} | {r['round_s']:.4g} | {r['ratio']:.2f} | {r['allocate_us_per_device']:.2f} | "
            f"{r['visits']} | {r['pointer_steps']} | {r['token_devices']} / {r['round_robin_devices']} / {r['idle_devices']} |"
        )
    if public:
        lines += public_markdown(public)
    if thesis:
        lines += [
            "",
            f"`lo.solve(inst, \"mtf\")` end to end, 20 agents x 40 single-device pools, {thesis[0]['rounds']} rounds:",
            "",
            "| threshold | total (s) | per round (ms) | welfare / optimum |",
            "| --- | ---: | ---: | ---: |",
        ]
        for t in thesis:
            lines.append(
                f"| {t['threshold']} | {t['total_s']:.3f} | {t['per_round_ms']:.2f} | {t['welfare_over_optimum']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help=f"comma-separated AGENTSxPOOLSxDEVICES (default {SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, 3 rounds, 20 thesis rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per size (default 5; 3 with --quick)")
    parser.add_argument("--repeat", type=int, default=7, help="least number of alternating timings of sort and preference build (default 7)")
    parser.add_argument("--thesis-rounds", type=int, default=None, help="rounds of the end-to-end table (default 300)")
    parser.add_argument("--public-sizes", default=None,
                        help=f"sizes of the public-path table (default {PUBLIC_SIZES}; 'none' skips it)")
    parser.add_argument("--public-repeat", type=int, default=3, help="alternating runs of the public-path table "
                        "(median; default 3)")
    parser.add_argument("--public-only", action="store_true", help="only the public-path table")
    parser.add_argument("--out", default=str(HERE / "results"), help="output directory")
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    if args.public_only:
        sizes = ""
    rounds = args.rounds or (3 if args.quick else 5)
    thesis_rounds = args.thesis_rounds or (20 if args.quick else 300)
    meta = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "laissez_opt": metadata.version("laissez-opt"),
        "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
    }
    rows = []
    print(f"{'agents':>7} {'pools':>6} {'devices':>8} {'tau':>4} {'sort s':>9} {'prefs s':>9} {'alloc s':>9} {'ratio':>6}")
    for size in [v for v in sizes.split(",") if v]:
        n, m, k = _parse(size)
        for row in run_size(n, m, k, THRESHOLDS, rounds, SEED, args.repeat):
            rows.append(row)
            print(
                f"{n:>7} {m:>6} {m * k:>8} {row['tau']:>4.1f} {row['sort_s']:>9.4f} {row['prefs_s']:>9.4f} "
                f"{row['allocate_s']:>9.4f} {row['ratio']:>6.2f}",
                flush=True,
            )
    public_sizes = args.public_sizes or (QUICK_PUBLIC_SIZES if args.quick else PUBLIC_SIZES)
    public = []
    for size in ([] if public_sizes == "none" else public_sizes.split(",")):
        n, m, k = _parse(size)
        row = public_path(n, m, k, SEED, max(3, args.public_repeat))
        public.append(row)
        print(f"public path {size}: sort {row['sort_s']:.4f}s, public prefs {row['public_prefs_s']:.4f}s "
              f"({row['prefs_ratio']:.2f}x), lo.solve {row['solve_s']:.3f}s ({row['solve_ratio']:.1f}x; verify "
              f"{row['verify_s']:.3f}s, records {row['records_s']:.3f}s, metrics {row['metrics_s']:.3f}s: "
              f"{row['outside_ratio']:.1f}x; own {row['own_ratio']:.1f}x), cold {row['solve_cold_s']:.3f}s "
              f"({row['cold_ratio']:.1f}x)", flush=True)
    thesis = [] if args.public_only else thesis_scale(thesis_rounds, SEED)
    for t in thesis:
        print(f"thesis scale {t['threshold']:>12}: {t['per_round_ms']:.2f} ms/round, welfare/optimum {t['welfare_over_optimum']:.3f}")
    if rows:
        largest = max(rows, key=lambda r: (r["devices"], r["agents"]))
        worst = max((r for r in rows if r["devices"] == largest["devices"]), key=lambda r: r["ratio"])
        verdict = "meets" if worst["ratio"] <= TARGET else "misses"
        print(f"largest size of this run ({worst['agents']} agents, {worst['devices']} devices): ratio "
              f"{worst['ratio']:.2f} ({verdict} the target {TARGET:g})")
    out = Path(args.out)
    payload = {"meta": meta, "target": TARGET, "sizes": rows, "public_path": public, "thesis_scale": thesis}
    stem = "mtf_public" if args.public_only else "mtf_scaling"  # a public-only run keeps the full report
    write_report(out / f"{stem}.json", json.dumps(payload, indent=2) + "\n")
    write_report(out / f"{stem}.md", markdown(rows, thesis, meta, public))
    return 0


if __name__ == "__main__":
    sys.exit(main())
