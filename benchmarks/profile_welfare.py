"""Where the time of the default welfare route goes, stage by stage.

For each size (same instances as ``welfare_scaling.py``) the script times, on
an instance whose cached array views are cleared first:

* ``array views``: the instance's numpy views (``edge_agent``, ``edge_pool``,
  ``edge_utility``, ``effective_demands``, ...), built once from the records;
* ``declare``: ``build_welfare`` (the solver-neutral model);
* ``lower``: ``solve_highs`` up to the model being in HiGHS (``Solution.build_s``);
* ``HiGHS run``: ``Highs.run`` (``Solution.solve_s``);
* ``read back``: the rest of ``solve_highs`` (solution values, the integrality
  check of the LP vertex, the objective);
* ``result``: ``allocation_result`` (amounts, utilities, allocation records);
* ``verify``: the independent verifier (pure Python over the records);
* ``metrics``: the welfare figures attached to every result;

and then ``lo.solve`` end to end on a fresh cold copy, which should come to
about the sum.  Each stage is the minimum over ``--repeat`` runs.  Prints a
table; writes nothing.

    python benchmarks/profile_welfare.py                          # 10000x100 and 1000x2000:assignment
    python benchmarks/profile_welfare.py --sizes 1000x100 --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import welfare_scaling as ws  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.analysis.metrics import basic_metrics  # noqa: E402
from laissez_opt.analysis.verify import verify  # noqa: E402
from laissez_opt.exact.common import allocation_result  # noqa: E402
from laissez_opt.exact.welfare import build_welfare  # noqa: E402
from laissez_opt.modeling.highs_route import solve_highs  # noqa: E402

STAGES = ("array views", "declare", "lower", "HiGHS run", "read back", "result", "verify", "metrics")


def stages(instance) -> dict[str, float]:
    fresh = ws.cold_copy(instance)
    out = {}
    t = time.perf_counter()
    ws.warm_views(fresh)
    out["array views"] = time.perf_counter() - t
    t = time.perf_counter()
    model, columns = build_welfare(fresh)
    out["declare"] = time.perf_counter() - t
    t = time.perf_counter()
    solution = solve_highs(model)
    spent = time.perf_counter() - t
    out["lower"], out["HiGHS run"] = solution.build_s, solution.solve_s
    out["read back"] = spent - solution.build_s - solution.solve_s
    t = time.perf_counter()
    result = allocation_result(fresh, "welfare", columns, solution, fractional=False, params={})
    out["result"] = time.perf_counter() - t
    t = time.perf_counter()
    outcome = verify(fresh, result)
    out["verify"] = time.perf_counter() - t
    assert outcome.ok, str(outcome)
    t = time.perf_counter()
    basic_metrics(fresh, np.array([result.utilities[a.id] for a in fresh.agents]))
    out["metrics"] = time.perf_counter() - t
    gc.collect()
    t = time.perf_counter()
    lo.solve(ws.cold_copy(instance), "welfare")
    out["lo.solve"] = time.perf_counter() - t
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000x100,1000x2000:assignment", help="comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the minimum of each stage is kept")
    args = parser.parse_args(argv)
    for size in ws.parse_sizes(args.sizes):
        instance = ws.make_instance(size)
        runs = []
        for _ in range(max(1, args.repeat)):
            gc.collect()
            runs.append(stages(instance))
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        total = sum(best[k] for k in STAGES)
        print(f"\n{size.label}: {instance.n_edges} columns, minimum over {len(runs)} runs")
        print(f"  {'stage':12s} {'seconds':>9s} {'share':>6s}")
        for k in STAGES:
            print(f"  {k:12s} {best[k]:9.4f} {best[k] / total:6.1%}")
        print(f"  {'sum':12s} {total:9.4f}")
        print(f"  {'lo.solve':12s} {best['lo.solve']:9.4f}   (end to end, cold instance views)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
