"""What declaring a model through the public modelling API costs, against the library's internal declaration.

For each size the script generates one seeded instance and times, separately,
two declarations of the same welfare model (maximise ``sum_i w_i U_i`` subject
to ``demand`` and ``capacity``):

* ``internal``: the declaration the welfare method used before it was
  re-declared with the public API: a :class:`LinearModel`,
  :func:`laissez_opt.exact.common.add_allocation` (the allocation block with
  both families declared as a transportation structure) and the objective
  coefficients ``w_i u_{i,c,r}`` set on the block;
* ``public API``: ``m = lo.Model(inst); m.add(demand(m.x));
  m.add(capacity(m.x)); m.maximize(welfare(m.x)); m.lower()`` (the lowering
  detects the transportation structure).

Each is timed twice: *declare* (until the model is ready for a route,
including the first ``transportation()`` query, which is where the public
API's detection runs) and *declare + HiGHS build* (also passing the arrays to
a fresh ``highspy.Highs``, what the default route does before solving).  The
script checks that the two declarations are the same LP, array for array
(objective, column and row bounds, compressed sparse columns) with the same
transportation structure, and exits with status 1 if they are not.

Both start from an instance whose array views are already built.  Runs take
turns (one of each per round) so that load on the machine hits them alike;
every time is the minimum over at least ``--repeat`` runs, and declarations
faster than ``--min-time`` seconds in total are repeated until they have run
that long (at most 200 runs).  Results go to ``modelling_overhead.json`` and
``modelling_overhead.md`` in ``--out`` (default ``benchmarks/results``), each
written atomically, with the machine's CPU count and library versions.

Sizes are ``AGENTSxPOOLS`` (family ``uniform``: density 0.3, pools of 1 to 4
devices, demands unbounded or 1 to 3) or ``AGENTSxPOOLS:dense`` (every agent
compatible with every pool).  The target: the public API at most 1.5 times
the internal declaration at 10,000 agents x 100 pools.

    python benchmarks/modelling_overhead.py                    # 10000x100 and 1000x1000:dense (10^6 edges)
    python benchmarks/modelling_overhead.py --quick            # 100x10 and 1000x100, seconds
    python benchmarks/modelling_overhead.py --sizes 2000x200 --repeat 10
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from _common import machine as machine_of, write_report
import laissez_opt as lo
from laissez_opt.declare import capacity, demand, welfare
from laissez_opt.exact.common import add_allocation
from laissez_opt.generate import generate
from laissez_opt.instance import Instance
from laissez_opt.io import instance_from_dict
from laissez_opt.modeling import LinearModel

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "10000x100,1000x1000:dense"
QUICK_SIZES = "100x10,1000x100"
HEADLINE = "10000x100"
SEED = 1
TARGET = 1.5
MIN_SECONDS = 1.0
MAX_RUNS = 200


def parse_sizes(text: str) -> list[tuple[int, int, bool]]:
    sizes = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        shape, _, kind = part.partition(":")
        if kind not in ("", "dense"):
            raise SystemExit(f"unknown size kind {kind!r} in {part!r} (only ':dense')")
        try:
            n, m = (int(v) for v in shape.lower().split("x"))
        except ValueError:
            raise SystemExit(f"bad size {part!r}: expected AGENTSxPOOLS or AGENTSxPOOLS:dense") from None
        if n < 1 or m < 1:
            raise SystemExit(f"bad size {part!r}: agents and pools must be >= 1")
        sizes.append((n, m, kind == "dense"))
    return sizes


def label(size: tuple[int, int, bool]) -> str:
    return f"{size[0]}x{size[1]}" + (":dense" if size[2] else "")


def make_instance(size: tuple[int, int, bool]) -> Instance:
    n, m, dense = size
    data = generate("uniform", n, m, seed=SEED, **({"density": 1.0} if dense else {}))
    instance = instance_from_dict(data, f"<benchmark {label(size)}>")
    for name in ("edge_agent", "edge_pool", "edge_utility", "counts", "weights", "demands", "effective_demands"):
        getattr(instance, name)
    return instance


# ------------------------------------------------------------ declarations
def declare_internal(instance: Instance) -> LinearModel:
    """The welfare declaration as the library wrote it before the public API."""
    model = LinearModel("welfare", sense="max")
    columns = add_allocation(model, instance, integral=True)
    weighted = instance.weights[columns.agent] * instance.edge_utility.reshape(-1)
    model.set_objective(columns.block, weighted)
    model.transportation()
    return model


def declare_public(instance: Instance) -> LinearModel:
    """The same model through ``lo.Model``."""
    m = lo.Model(instance, name="welfare")
    m.add(demand(m.x))
    m.add(capacity(m.x))
    m.maximize(welfare(m.x))
    model = m.lower()
    model.transportation()  # the detection runs on this first query
    return model


def pass_to_highs(model: LinearModel) -> None:
    import highspy

    from laissez_opt.modeling.highs_route import _pass_model

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    _pass_model(h, model, integral=False)


def same_lp(a: LinearModel, b: LinearModel) -> bool:
    """Whether two declarations are the same LP, array for array, with the same transportation structure."""
    pairs = [(a.objective, b.objective), *zip(a.bounds(), b.bounds()), *zip(a.row_bounds(), b.row_bounds()),
             *zip(a.csc_arrays(), b.csc_arrays())]
    if a.sense != b.sense or a.objective_offset != b.objective_offset:
        return False
    if not all(x.shape == y.shape and np.array_equal(x, y) for x, y in pairs):
        return False
    ta, tb = a.transportation(), b.transportation()
    return ta is not None and tb is not None and (ta.left_block, ta.right_block) == (tb.left_block, tb.right_block)


# ---------------------------------------------------------------- timing
def best_of(runs: dict, repeat: int, min_seconds: float) -> dict[str, tuple[float, int]]:
    """Minimum time of each callable of ``runs``, taking turns; (seconds, runs)."""
    done: dict[str, list[float]] = {name: [] for name in runs}

    def wanted(name: str) -> bool:
        got = done[name]
        return len(got) < repeat or (sum(got) < min_seconds and len(got) < MAX_RUNS)

    while any(wanted(name) for name in runs):
        for name, run in runs.items():
            if wanted(name):
                gc.collect()
                t0 = time.perf_counter()
                run()
                done[name].append(time.perf_counter() - t0)
    return {name: (min(got), len(got)) for name, got in done.items()}


def measure(size, repeat: int, min_seconds: float, log) -> dict:
    t0 = time.perf_counter()
    instance = make_instance(size)
    made = time.perf_counter() - t0
    columns = instance.n_edges * instance.rounds
    log(f"\n{label(size)}: {instance.n_agents} agents, {instance.n_pools} pools, {instance.n_edges:,} edges, "
        f"{columns:,} columns (instance made in {made:.1f} s)")
    identical = same_lp(declare_internal(instance), declare_public(instance))
    log(f"  same LP and transportation structure: {'yes' if identical else 'NO'}")
    runs = {
        "internal": lambda: declare_internal(instance),
        "public": lambda: declare_public(instance),
        "internal+highs": lambda: pass_to_highs(declare_internal(instance)),
        "public+highs": lambda: pass_to_highs(declare_public(instance)),
    }
    times = best_of(runs, repeat, min_seconds)
    ratio = times["public"][0] / times["internal"][0]
    ratio_highs = times["public+highs"][0] / times["internal+highs"][0]
    for name, (seconds, count) in times.items():
        log(f"  {name:15s} {seconds * 1e3:9.2f} ms  ({count} runs)")
    log(f"  public API / internal: declare {ratio:.2f}x, declare + HiGHS build {ratio_highs:.2f}x "
        f"(target at most {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})")
    return {
        "size": label(size), "agents": instance.n_agents, "pools": instance.n_pools, "edges": instance.n_edges,
        "columns": columns, "identical_lp": identical,
        "times_s": {name: seconds for name, (seconds, _) in times.items()},
        "runs": {name: count for name, (_, count) in times.items()},
        "ratio_declare": ratio, "ratio_declare_highs": ratio_highs,
    }


# ---------------------------------------------------------------- output
def machine() -> dict:
    return machine_of("laissez-opt", "highspy", "numpy")

def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Modelling API overhead: the welfare declaration",
        "",
        f"Machine: {m['cpu_count']} CPUs, {m['system']}, Python {m['python']}, highspy {m['highspy']}, "
        f"numpy {m['numpy']}.  Minimum of at least {report['repeat']} runs (fast declarations repeated for "
        f"{report['min_time_s']:g} s), runs taking turns.  Times in milliseconds.",
        "",
        "| size | edges | internal declare | public API declare | ratio | internal + HiGHS build | "
        "public API + HiGHS build | ratio | same LP |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in report["sizes"]:
        t = s["times_s"]
        lines.append(
            f"| {s['size']} | {s['edges']:,} | {_ms(t['internal'])} | {_ms(t['public'])} | {s['ratio_declare']:.2f}x | "
            f"{_ms(t['internal+highs'])} | {_ms(t['public+highs'])} | {s['ratio_declare_highs']:.2f}x | "
            f"{'yes' if s['identical_lp'] else 'NO'} |"
        )
    headline = next((s for s in report["sizes"] if s["size"] == HEADLINE), None)
    if headline is not None:
        met = "met" if headline["ratio_declare"] <= report["target_ratio"] else "NOT met"
        lines += ["", f"Target (public API at most {report['target_ratio']}x the internal declaration at "
                      f"{HEADLINE}): {met} ({headline['ratio_declare']:.2f}x)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"only the small sizes {QUICK_SIZES}")
    parser.add_argument("--repeat", type=int, default=10, help="runs per declaration; the minimum is kept (default 10)")
    parser.add_argument("--min-time", type=float, default=MIN_SECONDS, metavar="SECONDS",
                        help="repeat fast declarations until they have run this long (default %(default)s)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.quick and args.sizes:
        parser.error("--quick and --sizes are exclusive")
    if not math.isfinite(args.min_time) or args.min_time < 0:
        parser.error("--min-time must be a number >= 0")
    sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    log = functools.partial(print, flush=True)
    report = {"benchmark": "modelling_overhead", "machine": machine(), "repeat": args.repeat,
              "min_time_s": args.min_time, "target_ratio": TARGET, "sizes": []}
    log(f"modelling_overhead: {report['machine']}")
    for size in sizes:
        report["sizes"].append(measure(size, args.repeat, args.min_time, log))
    table = markdown(report)
    log("\n" + table)
    write_report(args.out / "modelling_overhead.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_report(args.out / "modelling_overhead.md", table)
    identical = all(s["identical_lp"] for s in report["sizes"])
    log(f"same LP on every size: {'yes' if identical else 'NO'}; results in {args.out.name}/modelling_overhead.{{json,md}}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
