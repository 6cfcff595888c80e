"""Build and solve times of every solver route on the welfare model, at growing sizes.

For each size the script generates one seeded instance and times, separately,
building the model and solving it, on every route:

* ``highs-direct``: the default, ``build_welfare`` + ``solve_model`` lowered to
  highspy's matrix API;
* ``highs-pyomo``: the same declaration built as a Pyomo model and solved by
  Pyomo's HiGHS interface (``via="pyomo"``);
* ``ortools-default``: OR-Tools' default for this model, the min-cost flow
  (``solver="ortools"``);
* ``ortools-glop``: OR-Tools' GLOP simplex, forced (``backend="glop"``);
* ``hand-highspy``: a hand-written highspy model of the same LP, built straight
  from the instance's numpy arrays and passed to HiGHS in one call: the
  reference of the ratios.  The script checks that it is the declared model
  array for array (same columns, rows, bounds and coefficients);
* ``scipy-lsa``: ``scipy.optimize.linear_sum_assignment`` on the dense
  agent x pool utility matrix (assignment sizes only, "n/a" otherwise);
* ``lo.solve``: the public entry point end to end on an instance whose cached
  array views are cleared first (views, declaration, solve, result, independent
  verification and metrics).

Build and solve of the routes start from an instance whose array views are
already built (the hand-written model starts from those arrays too); their
one-off cost is printed per size as "array views".  Build is everything before
the solver runs (declaration and lowering); solve is the solver's own run;
total is the wall time of the whole call, reading the solution back included.

The routes run in turns (one run each per round) so that load on the machine
hits them alike; each time is the minimum over at least ``--repeat`` runs, and
routes faster than ``--min-time`` seconds in total are repeated until they
have run that long (at most 200 runs).  The Pyomo route is skipped above
400,000 columns unless ``--all`` is given ("skipped (use --all)").

All routes must agree on the optimal objective (relative 1e-7); the script says
so per size and exits with status 1 if they do not.  Results go to
``welfare_scaling.json`` and ``welfare_scaling.md`` in ``--out`` (default
``benchmarks/results``), each written atomically, with the machine's CPU count
and the Python, highspy, ortools, pyomo, numpy and scipy versions.

Sizes are ``AGENTSxPOOLS`` (family ``uniform``: density 0.3, pools of 1 to 4
devices, demands unbounded or 1 to 3) or ``AGENTSxPOOLS:assignment`` (every
agent compatible with every pool, one device per pool, demand 1: an
assignment problem).

    python benchmarks/welfare_scaling.py                 # the four default sizes
    python benchmarks/welfare_scaling.py --quick         # 100x10 and 1000x100 only
    python benchmarks/welfare_scaling.py --all           # Pyomo at every size too
    python benchmarks/welfare_scaling.py --sizes 2000x50,500x500:assignment --repeat 5
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

from _common import write_report  # noqa: E402
import laissez_opt as lo
from laissez_opt.exact.welfare import build_welfare
from laissez_opt.generate import generate
from laissez_opt.instance import Instance
from laissez_opt.io import instance_from_dict
from laissez_opt.modeling import solve_model

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "100x10,1000x100,10000x100,1000x2000:assignment"
QUICK_SIZES = "100x10,1000x100"
SEED = 1
RTOL = 1e-7
TARGET = 1.5
#: Routes skipped without ``--all`` once a model has more columns than this: Pyomo
#: builds Python objects per variable and row (about 15 s per run at 300,000 columns
#: on two cores; a 2-million-column model would take minutes and gigabytes).
SLOW_ROUTE_MAX_COLUMNS = 400_000
SLOW_ROUTES = ("highs-pyomo",)
#: Fast routes are repeated until they have run this long in total ...
MIN_SECONDS = 1.0
#: ... but at most this many times.
MAX_RUNS = 200

ROUTES = {
    "highs-direct": ("HiGHS direct (default)", dict(solver="highs")),
    "highs-pyomo": ("HiGHS via Pyomo", dict(solver="highs", via="pyomo")),
    "ortools-default": ("OR-Tools default (min-cost flow)", dict(solver="ortools")),
    "ortools-glop": ("OR-Tools GLOP (backend=glop)", dict(solver="ortools", backend="glop")),
    "hand-highspy": ("hand-written highspy", None),
    "scipy-lsa": ("scipy linear_sum_assignment", None),
    "lo.solve": ("lo.solve end to end (default route)", None),
}


# ----------------------------------------------------------------- instances
@dataclass(frozen=True)
class Size:
    agents: int
    pools: int
    assignment: bool

    @property
    def label(self) -> str:
        return f"{self.agents}x{self.pools}" + (":assignment" if self.assignment else "")

    @property
    def kind(self) -> str:
        return "assignment" if self.assignment else "b-matching"


def parse_sizes(text: str) -> list[Size]:
    sizes = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        shape, _, kind = part.partition(":")
        if kind not in ("", "assignment"):
            raise SystemExit(f"unknown size kind {kind!r} in {part!r} (only ':assignment')")
        try:
            n, m = (int(v) for v in shape.lower().split("x"))
        except ValueError:
            raise SystemExit(f"bad size {part!r}: expected AGENTSxPOOLS or AGENTSxPOOLS:assignment") from None
        if n < 1 or m < 1:
            raise SystemExit(f"bad size {part!r}: agents and pools must be >= 1")
        sizes.append(Size(n, m, kind == "assignment"))
    return sizes


def make_instance(size: Size) -> Instance:
    if size.assignment:
        data = generate("uniform", size.agents, size.pools, seed=SEED, density=1.0, max_count=1, max_demand=1)
        for agent in data["agents"]:
            agent["demand"] = 1
    else:
        data = generate("uniform", size.agents, size.pools, seed=SEED)
    return instance_from_dict(data, f"<benchmark {size.label}>")


@functools.cache
def _cached_views() -> tuple[str, ...]:
    return tuple(k for k, v in vars(Instance).items() if isinstance(v, functools.cached_property))


def cold_copy(instance: Instance) -> Instance:
    """A shallow copy of ``instance`` whose cached array views are not built yet."""
    fresh = copy.copy(instance)
    for name in _cached_views():
        fresh.__dict__.pop(name, None)
    return fresh


def warm_views(instance: Instance) -> None:
    for name in ("edge_agent", "edge_pool", "edge_utility", "counts", "weights", "demands", "effective_demands"):
        getattr(instance, name)


# ------------------------------------------------------------------- routes
@dataclass
class Timing:
    build: float
    solve: float
    total: float
    objective: float
    status: str
    note: str = ""
    runs: int = 1


def run_route(instance: Instance, options: dict) -> Timing:
    t0 = time.perf_counter()
    model, _ = build_welfare(instance)
    declared = time.perf_counter() - t0
    solution = solve_model(model, **options)
    total = time.perf_counter() - t0
    return Timing(declared + solution.build_s, solution.solve_s, total, solution.objective, solution.status, solution.route)


def run_lo_solve(instance: Instance) -> Timing:
    fresh = cold_copy(instance)
    t0 = time.perf_counter()
    result = lo.solve(fresh, "welfare")
    total = time.perf_counter() - t0
    assert result.verified
    return Timing(result.timing["build_s"], result.timing["solve_s"], total, result.objective, result.status, result.route)


def hand_arrays(instance: Instance) -> dict:
    """The instance as the plain numpy arrays a hand-written model starts from."""
    return dict(
        agent=instance.edge_agent,
        pool=instance.edge_pool,
        utility=instance.edge_utility[:, 0],
        weight=instance.weights,
        demand=instance.demands,
        count=instance.counts.astype(np.float64),
    )


def hand_lp(a: dict) -> dict:
    """max sum w u x  s.t.  sum_c x <= d_i (finite d_i),  sum_i x <= k_c,  0 <= x <= min(d_i, k_c).

    Columns in edge order; rows: the finite-demand agents, then the pools: the
    same LP, array for array, as the declared model (one round;
    :func:`same_lp` checks it).  Each column has its pool's row and, when the
    agent's demand is finite, its agent's row above it.
    """
    agent, pool = a["agent"], a["pool"]
    demand, count = a["demand"], a["count"]
    n_edges = agent.size
    finite = np.isfinite(demand)
    n_demand_rows = int(finite.sum())
    has_row = finite[agent]
    start = np.zeros(n_edges + 1, dtype=np.int32)
    np.cumsum(1 + has_row, out=start[1:])
    index = np.empty(int(start[-1]), dtype=np.int32)
    first = start[:-1]
    index[first[has_row]] = (np.cumsum(finite) - 1)[agent[has_row]]
    index[first + has_row] = n_demand_rows + pool
    row_upper = np.concatenate([demand[finite], count])
    return dict(
        cost=a["weight"][agent] * a["utility"],
        col_lower=np.zeros(n_edges),
        col_upper=np.minimum(demand[agent], count[pool]),
        row_lower=np.full(row_upper.size, -np.inf),
        row_upper=row_upper,
        start=start,
        index=index,
        value=np.ones(index.size),
    )


def run_hand_highspy(a: dict) -> Timing:
    """Build :func:`hand_lp` from the arrays, pass it to highspy in one call, solve."""
    import highspy

    t0 = time.perf_counter()
    lp = hand_lp(a)
    n_cols, n_rows = lp["cost"].size, lp["row_upper"].size
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(
        n_cols, n_rows, lp["index"].size, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
        0.0, lp["cost"], lp["col_lower"], lp["col_upper"], lp["row_lower"], lp["row_upper"],
        lp["start"][:-1], lp["index"], lp["value"], np.zeros(n_cols, dtype=np.int32),
    )
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    h.run()
    solve = time.perf_counter() - t1
    status = h.modelStatusToString(h.getModelStatus())
    x = np.asarray(h.getSolution().col_value)  # the allocation, as any user would read it
    objective = float(h.getInfo().objective_function_value)
    return Timing(build, solve, time.perf_counter() - t0, objective, status.lower())


def same_lp(instance: Instance, a: dict) -> bool:
    """Whether the declared welfare model and :func:`hand_lp` are the same arrays."""
    model, _ = build_welfare(instance)
    lp = hand_lp(a)
    indptr, indices, data = model.csc_arrays()
    lower, upper, _ = model.bounds()
    row_lower, row_upper = model.row_bounds()
    pairs = [
        (model.objective, lp["cost"]), (lower, lp["col_lower"]), (upper, lp["col_upper"]),
        (row_lower, lp["row_lower"]), (row_upper, lp["row_upper"]),
        (indptr, lp["start"]), (indices, lp["index"]), (data, lp["value"]),
    ]
    return model.sense == "max" and all(x.shape == y.shape and np.array_equal(x, y) for x, y in pairs)


def run_scipy_lsa(a: dict, n_agents: int, n_pools: int) -> Timing:
    from scipy.optimize import linear_sum_assignment

    t0 = time.perf_counter()
    value = np.zeros((n_agents, n_pools))
    value[a["agent"], a["pool"]] = a["weight"][a["agent"]] * a["utility"]
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    rows, cols = linear_sum_assignment(value, maximize=True)
    solve = time.perf_counter() - t1
    objective = float(value[rows, cols].sum())
    return Timing(build, solve, time.perf_counter() - t0, objective, "optimal")


def best_of(runs: dict, repeat: int, min_seconds: float = MIN_SECONDS) -> dict:
    """Run every route of ``runs`` (name -> callable) in turns; the minimum of each time.

    Routes take turns, one run each per round, so that a burst of load on the
    machine hits all of them alike.  A route runs at least ``repeat`` times;
    one faster than ``min_seconds`` in total keeps running until it has taken
    that long (at most :data:`MAX_RUNS` runs), so that the minimum of a
    millisecond run is not one scheduler hiccup away from the truth.  Each
    result carries the objective and status of the route's last run.
    """
    done: dict[str, list[Timing]] = {name: [] for name in runs}

    def wanted(name: str) -> bool:
        got = done[name]
        return len(got) < repeat or (sum(t.total for t in got) < min_seconds and len(got) < MAX_RUNS)

    while any(wanted(name) for name in runs):
        for name, run in runs.items():
            if wanted(name):
                gc.collect()
                done[name].append(run())
    out = {}
    for name, got in done.items():
        last = got[-1]
        out[name] = Timing(
            min(t.build for t in got), min(t.solve for t in got), min(t.total for t in got),
            last.objective, last.status, last.note, len(got),
        )
    return out


def time_views(instance: Instance, repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        fresh = cold_copy(instance)
        t0 = time.perf_counter()
        warm_views(fresh)
        best = min(best, time.perf_counter() - t0)
    return best


# -------------------------------------------------------------------- one size
def measure(size: Size, repeat: int, min_seconds: float, include_all: bool, log) -> dict:
    t0 = time.perf_counter()
    instance = make_instance(size)
    setup = time.perf_counter() - t0
    views = time_views(instance, repeat)
    warm_views(instance)
    columns = instance.n_edges * instance.rounds
    log(f"\n{size.label} ({size.kind}): {instance.n_agents} agents, {instance.n_pools} pools, "
        f"{int(instance.counts.sum())} devices, {instance.n_edges} edges = columns; "
        f"instance made in {setup:.1f} s, array views {views:.3f} s")
    arrays = hand_arrays(instance)
    identical = same_lp(instance, arrays)
    log(f"  declared model and hand-written LP identical, array for array: {'yes' if identical else 'NO'}")
    rows: dict[str, dict] = {}
    runs = {}
    for key in ROUTES:
        if key == "scipy-lsa" and not size.assignment:
            rows[key] = {"state": "n/a"}
        elif key in SLOW_ROUTES and columns > SLOW_ROUTE_MAX_COLUMNS and not include_all:
            rows[key] = {"state": "skipped"}
        elif key == "hand-highspy":
            runs[key] = functools.partial(run_hand_highspy, arrays)
        elif key == "scipy-lsa":
            runs[key] = functools.partial(run_scipy_lsa, arrays, instance.n_agents, instance.n_pools)
        elif key == "lo.solve":
            runs[key] = functools.partial(run_lo_solve, instance)
        else:
            runs[key] = functools.partial(run_route, instance, ROUTES[key][1])
    timings = best_of(runs, repeat, min_seconds)
    for key in ROUTES:
        if key in timings:
            timing = timings[key]
            rows[key] = {"state": "ran", **timing.__dict__}
            log(f"  {key:16s} build {timing.build:8.4f} s  solve {timing.solve:8.4f} s  total {timing.total:8.4f} s"
                f"  ({timing.runs} runs)  objective {timing.objective!r}")
        elif rows[key]["state"] == "skipped":
            log(f"  {key:16s} skipped (use --all)")
    rows = {key: rows[key] for key in ROUTES}  # table order
    hand = rows["hand-highspy"]
    reference = hand["objective"]
    worst = 0.0
    for key, row in rows.items():
        if row["state"] != "ran":
            continue
        diff = abs(row["objective"] - reference) / max(1.0, abs(reference))
        row["rel_diff"] = diff
        row["agrees"] = diff <= RTOL and row["status"] == "optimal"
        worst = max(worst, diff)
        row["total_ratio"] = row["total"] / hand["total"]
        row["build_ratio"] = row["build"] / hand["build"]
    agree = all(row["agrees"] for row in rows.values() if row["state"] == "ran")
    ours = rows["highs-direct"]
    met = ours["total_ratio"] <= TARGET
    log(f"  objectives agree (relative {RTOL:g}): {'yes' if agree else 'NO'}, largest relative difference {worst:.1e}")
    log(f"  default route / hand-written highspy: total {ours['total_ratio']:.2f}x, build {ours['build_ratio']:.2f}x"
        f" -> target {TARGET}x {'met' if met else 'NOT met'}")
    return {
        "size": size.label,
        "kind": size.kind,
        "agents": instance.n_agents,
        "pools": instance.n_pools,
        "devices": int(instance.counts.sum()),
        "edges": instance.n_edges,
        "columns": columns,
        "rows": int(np.isfinite(instance.demands).sum()) + instance.n_pools,
        "seed": SEED,
        "instance_setup_s": setup,
        "array_views_s": views,
        "routes": rows,
        "identical_lp": identical,
        "objectives_agree": agree,
        "largest_rel_diff": worst,
        "default_total_ratio": ours["total_ratio"],
        "default_build_ratio": ours["build_ratio"],
        "target_met": met,
    }


# ------------------------------------------------------------------ reporting
def machine() -> dict:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.machine()}",
        "highspy": version("highspy"),
        "ortools": version("ortools"),
        "pyomo": version("pyomo"),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
    }


def _s(value: float) -> str:
    return f"{value:.4f}" if value < 10 else f"{value:.2f}"


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# welfare_scaling results",
        "",
        f"Machine: {m['cpu_count']} CPUs, {m['system']}, {m['implementation']} {m['python']}; "
        f"highspy {m['highspy']}, ortools {m['ortools']}, pyomo {m['pyomo']}, numpy {m['numpy']}, scipy {m['scipy']}.",
        f"Each time is the minimum over at least {report['repeat']} runs (fast routes: as many runs as fit in "
        f"{report['min_time_s']:g} s, at most {MAX_RUNS}), in seconds.  Ratios are to the hand-written "
        f"highspy model of the same LP.  Objectives agree when within relative {RTOL:g} of the hand-written model's.",
        "",
        "| size | route | build s | solve s | total s | total / hand | build / hand | objective agrees |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for size in report["sizes"]:
        for key, row in size["routes"].items():
            name = ROUTES[key][0]
            if row["state"] == "n/a":
                lines.append(f"| {size['size']} | {name} | n/a | n/a | n/a | n/a | n/a | n/a |")
            elif row["state"] == "skipped":
                lines.append(f"| {size['size']} | {name} | skipped (use --all) | | | | | |")
            else:
                agrees = f"yes ({row['rel_diff']:.0e})" if row["agrees"] else f"NO ({row['rel_diff']:.1e}, {row['status']})"
                # lo.solve's own timing covers the lowering only, not the declaration: no build column.
                build = "-" if key == "lo.solve" else _s(row["build"])
                build_ratio = "-" if key == "lo.solve" else f"{row['build_ratio']:.2f}"
                lines.append(
                    f"| {size['size']} | {name} | {build} | {_s(row['solve'])} | {_s(row['total'])} "
                    f"| {row['total_ratio']:.2f} | {build_ratio} | {agrees} |"
                )
    lines += [
        "",
        "| size | kind | columns | rows | array views s | routes agree | default / hand total | default / hand build | within 1.5x |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for s in report["sizes"]:
        lines.append(
            f"| {s['size']} | {s['kind']} | {s['columns']} | {s['rows']} | {_s(s['array_views_s'])} "
            f"| {'yes' if s['objectives_agree'] else 'NO'} | {s['default_total_ratio']:.2f} "
            f"| {s['default_build_ratio']:.2f} | {'yes' if s['target_met'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per route; the minimum is kept (default 3)")
    parser.add_argument("--min-time", type=float, default=MIN_SECONDS, metavar="SECONDS",
                        help="repeat fast routes until they have run this long (default %(default)s; at most "
                        f"{MAX_RUNS} runs)")
    parser.add_argument("--all", action="store_true", help="also run the Pyomo route above "
                        f"{SLOW_ROUTE_MAX_COLUMNS:,} columns (slow)")
    parser.add_argument("--quick", action="store_true", help=f"only the small sizes {QUICK_SIZES}")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.quick and args.sizes:
        parser.error("--quick and --sizes are exclusive")
    sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    log = functools.partial(print, flush=True)
    report = {
        "benchmark": "welfare_scaling",
        "machine": machine(),
        "repeat": args.repeat,
        "min_time_s": args.min_time,
        "all_routes": args.all,
        "rtol": RTOL,
        "target_ratio": TARGET,
        "sizes": [],
    }
    log(f"welfare_scaling: {report['machine']}")
    for size in sizes:
        report["sizes"].append(measure(size, args.repeat, args.min_time, args.all, log))
    table = markdown(report)
    log("\n" + table)
    write_report(args.out / "welfare_scaling.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_report(args.out / "welfare_scaling.md", table)
    agree = all(s["objectives_agree"] for s in report["sizes"])
    log(f"routes agree on every size: {'yes' if agree else 'NO'}; results in {args.out.name}/welfare_scaling.{{json,md}}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
