"""What re-declaring the built-in ``vcg`` welfare and fractional ``maxmin`` level LP with ``lo.Model`` costs.

Both models were declared on the library's internal ``LinearModel`` before;
they are now declared through the public modelling API (``lo.Model``:
``demand``, ``capacity``, ``value``, ``maxmin_floor``, ``Model.bound``).  For
each size the script times, taking turns, the two declarations of each model:

* ``vcg``: ``internal`` is the former ``build_vcg`` (a ``LinearModel``,
  :func:`laissez_opt.exact.common.add_allocation`, the surplus ``v - beta`` as
  objective, the columns at or below the reserve bounded by 0); ``declared``
  is :func:`laissez_opt.exact.vcg.build_vcg`.  Instances: ``uniform`` family,
  ``AGENTSxPOOLS``, seed 1.
* ``maxmin``: ``internal`` is the former fractional ``build_maxmin``
  (``add_allocation`` and :func:`laissez_opt.exact.leximin.declare_leximin`);
  ``declared`` is :func:`laissez_opt.exact.maxmin.build_maxmin` with
  ``fractional=True``.  Instances: ``gavel`` family, ``JOBS`` jobs on three
  accelerator types, seed 0 (``:caps``: pools of up to ``JOBS`` devices), as in
  ``benchmarks/maxmin_scaling.py``.

Each declaration is timed alone (until the lowered model is ready) and
followed by passing the model to a fresh ``highspy.Highs`` (what the default
route does before its first solve), so a difference in the matrix the solver
receives is counted too.  The script also solves both declarations (VCG:
``solve_vcg`` on the HiGHS route is what ships; here the welfare LP of each
declaration; maxmin: the whole leximin through the engine) and checks that
they reach the same optimum (relative ``1e-9``) and, for maxmin, the same
leximin values; it exits with status 1 if not.  Times are medians over at
least ``--repeat`` runs (3 with ``--quick``), the declarations taking turns;
one faster than ``--min-time`` (0.5 s) in total is repeated until it has run
that long (at most 200 runs).  The
target, at most 1.5 times the internal declaration, is checked at each
model's largest size.  Results go to
``declared_builtins.json`` and ``declared_builtins.md`` in ``--out`` (default
``benchmarks/results``), written atomically.

    python benchmarks/declared_builtins.py              # vcg 10000x100, maxmin 8192 and 4096:caps
    python benchmarks/declared_builtins.py --quick      # vcg 1000x100, maxmin 1024 and 1024:caps
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
from pathlib import Path

import numpy as np

import laissez_opt as lo
from laissez_opt.exact.common import add_allocation
from laissez_opt.exact.leximin import declare_leximin, solve_leximin
from laissez_opt.exact.maxmin import build_maxmin, normalizers
from laissez_opt.exact.vcg import build_vcg, vcg_reserves, vcg_values
from laissez_opt.io.jsonfile import write_atomic
from laissez_opt.modeling import LinearModel, solve_model

HERE = Path(__file__).resolve().parent
TARGET = 1.5


def vcg_internal(instance):
    """The former ``build_vcg``, on the internal ``LinearModel``."""
    model = LinearModel("vcg", sense="max")
    columns = add_allocation(model, instance, integral=True)
    values = vcg_values(instance)[columns.edge, columns.round]
    reserves = vcg_reserves(instance)
    surplus = values - reserves[columns.pool]
    columns.block.upper[surplus <= 0] = 0.0
    model.set_objective(columns.block, np.where(surplus > 0, surplus, 0.0),
                        offset=float(instance.rounds * np.dot(reserves, instance.counts.astype(float))))
    model.transportation()
    return model


def vcg_declared(instance):
    model, _ = build_vcg(instance)
    model.transportation()
    return model


def maxmin_internal(instance):
    """The former fractional ``build_maxmin``: ``add_allocation`` and ``declare_leximin``."""
    E = normalizers(instance, "equal_share")
    model = LinearModel("maxmin", sense="max")
    columns = add_allocation(model, instance, integral=False)
    u = instance.edge_utility[columns.edge, columns.round]
    scale = instance.weights[columns.agent] * E[columns.agent]
    coef = np.where(scale > 0, u / np.where(scale > 0, scale, 1.0), 0.0)
    rounds = instance.rounds
    plan = declare_leximin(model, columns.block, agent=columns.agent, coef=coef,
                           group=columns.agent * rounds + columns.round,
                           group_cap=np.repeat(instance.demands, rounds), fractional=True,
                           n_agents=instance.n_agents)
    return model, plan


def maxmin_declared(instance):
    return build_maxmin(instance, fractional=True)


def to_highs(model: LinearModel) -> None:
    import highspy

    from laissez_opt.modeling.highs_route import _pass_model

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    _pass_model(h, model, False)


MIN_SECONDS = 0.5  # fast declarations are repeated until each has run this long in total
MAX_RUNS = 200


def medians(runs: dict, repeat: int, min_seconds: float = MIN_SECONDS) -> dict[str, float]:
    done = {name: [] for name in runs}
    while any(len(t) < repeat or (sum(t) < min_seconds and len(t) < MAX_RUNS) for t in done.values()):
        for name, run in runs.items():  # take turns: load on the machine hits both alike
            gc.collect()
            t0 = time.perf_counter()
            run()
            done[name].append(time.perf_counter() - t0)
    return {name: statistics.median(times) for name, times in done.items()}


def vcg_row(size: str, repeat: int, min_seconds: float) -> dict:
    n, m = (int(v) for v in size.split("x"))
    instance = lo.generate("uniform", n, m, seed=1)
    a, b = vcg_internal(instance), vcg_declared(instance)
    sa, sb = solve_model(a, solver="highs"), solve_model(b, solver="highs")
    same = abs(sa.objective - sb.objective) <= 1e-9 * max(1.0, abs(sa.objective))
    times = medians({"internal": lambda: to_highs(vcg_internal(instance)),
                     "declared": lambda: to_highs(vcg_declared(instance)),
                     "internal_only": lambda: vcg_internal(instance),
                     "declared_only": lambda: vcg_declared(instance)}, repeat, min_seconds)
    return {"model": "vcg", "size": size, "columns": instance.n_edges * instance.rounds, **times,
            "ratio": times["declared"] / times["internal"],
            "ratio_only": times["declared_only"] / times["internal_only"], "same": bool(same),
            "objective": sa.objective}


def maxmin_row(size: str, repeat: int, min_seconds: float) -> dict:
    jobs, _, kind = size.partition(":")
    instance = lo.generate("gavel", int(jobs), 3, seed=0, **({"max_count": int(jobs)} if kind == "caps" else {}))
    outcomes = []
    for build in (maxmin_internal, maxmin_declared):
        model, plan = build(instance)
        outcomes.append(solve_leximin(model, plan).agent_values / plan.unit)
    same = np.allclose(outcomes[0], outcomes[1], rtol=1e-6, atol=1e-9)
    times = medians({"internal": lambda: to_highs(maxmin_internal(instance)[0]),
                     "declared": lambda: to_highs(maxmin_declared(instance)[0]),
                     "internal_only": lambda: maxmin_internal(instance),
                     "declared_only": lambda: maxmin_declared(instance)}, repeat, min_seconds)
    return {"model": "maxmin (fractional levels)", "size": size, "columns": instance.n_edges * instance.rounds,
            **times, "ratio": times["declared"] / times["internal"],
            "ratio_only": times["declared_only"] / times["internal_only"], "same": bool(same),
            "objective": float(np.min(outcomes[1][outcomes[1] > 0])) if np.any(outcomes[1] > 0) else 0.0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 runs each")
    parser.add_argument("--vcg", default=None, help="comma-separated AGENTSxPOOLS (default 10000x100)")
    parser.add_argument("--maxmin", default=None, help="comma-separated JOBS or JOBS:caps (default 8192,4096:caps)")
    parser.add_argument("--repeat", type=int, default=None, help="least runs of each timing (default 5; 3 with --quick)")
    parser.add_argument("--min-time", type=float, default=MIN_SECONDS,
                        help=f"repeat a timing until it has run this long in total (default {MIN_SECONDS} s)")
    parser.add_argument("--out", default=str(HERE / "results"), help="output folder")
    args = parser.parse_args(argv)
    vcg_sizes = (args.vcg or ("1000x100" if args.quick else "10000x100")).split(",")
    maxmin_sizes = (args.maxmin or ("1024,1024:caps" if args.quick else "8192,4096:caps")).split(",")
    repeat = max(3, args.repeat if args.repeat is not None else (3 if args.quick else 5))
    rows = ([vcg_row(s, repeat, args.min_time) for s in vcg_sizes]
            + [maxmin_row(s, repeat, args.min_time) for s in maxmin_sizes])
    lines = [
        f"Declaration alone, and with the HiGHS build; median of {repeat} runs, {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}):",
        "",
        "| model | size | columns | declare: internal | declared | ratio | with HiGHS build: internal | declared "
        "| ratio | same optimum |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['size']} | {r['columns']:,} | {1e3 * r['internal_only']:.1f} ms | "
                     f"{1e3 * r['declared_only']:.1f} ms | {r['ratio_only']:.2f}x | {1e3 * r['internal']:.1f} ms | "
                     f"{1e3 * r['declared']:.1f} ms | {r['ratio']:.2f}x | {'yes' if r['same'] else 'NO'} |")
    # The target holds at each model's largest size: below a millisecond, fixed costs dominate the ratio.
    largest = {}
    for r in rows:
        if r["columns"] >= largest.get(r["model"], {"columns": -1})["columns"]:
            largest[r["model"]] = r
    worst = max(max(r["ratio"], r["ratio_only"]) for r in largest.values())
    lines += ["", f"ratio at each model's largest size at most {worst:.2f}x (target at most {TARGET}x): "
                  f"{'met' if worst <= TARGET else 'NOT met'}"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "declared_builtins.json", json.dumps({"repeat": repeat, "rows": rows}, indent=2) + "\n")
    write_atomic(out / "declared_builtins.md", "# Built-in models declared with lo.Model\n\n" + text)
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
