"""Parallel efficiency of ``lo.compare``: one worker against two, and what parsing an instance costs.

Instances: ``--instances`` seeded ``neocloud`` instances of ``--agents`` agents and
``max(4, agents // 10)`` pools, written to a temporary directory; methods
``--methods`` (default welfare, greedy, mtf).  For 1 and 2 workers the
script times ``lo.compare`` on the files (fresh, no run store), medians of
``--repeat`` alternating runs, and reports the parallel efficiency
``T_1 / (2 T_2)``.  It also times, in this process, one parse of an instance
text (``instance_from_dict(json.loads(text))``, what a worker does for a task
whose instance it has not parsed yet) against the tasks' median run time:
since each worker keeps the last instances it parsed, a worker parses an
instance once, not once per method.

    python benchmarks/scaling_compare.py
    python benchmarks/scaling_compare.py --instances 4 --agents 500 --repeat 1 --out scratch-results

Writes ``scaling_compare.json`` and ``.md`` to ``--out`` (default ``benchmarks/results``), atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    import laissez_opt as lo
    from laissez_opt.generate import generate
    from laissez_opt.io import dumps_instance, instance_from_dict

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--agents", type=int, default=2000)
    parser.add_argument("--methods", default="welfare,greedy,mtf")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--quick", action="store_true", help="2 instances of 200 agents, one run")
    args = parser.parse_args(argv)
    if args.quick:
        args.instances, args.agents, args.repeat = 2, 200, 1
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for seed in range(args.instances):
            data = generate("neocloud", args.agents, max(4, args.agents // 10), seed=seed)
            path = Path(tmp) / f"neocloud-{seed}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            paths.append(path)
        text = dumps_instance(lo.load(paths[0]))
        parses = []
        for _ in range(3):
            start = time.perf_counter()
            instance_from_dict(json.loads(text), "parse")
            parses.append(time.perf_counter() - start)
        parse_s = statistics.median(parses)
        times = {1: [], 2: []}
        runtimes = []
        for _ in range(args.repeat):
            for workers in (1, 2):
                start = time.perf_counter()
                table = lo.compare(paths, methods, workers=workers, progress=False, time_limit=120)
                times[workers].append(time.perf_counter() - start)
                runtimes = [row.get("runtime_s") for row in table.rows if row.get("runtime_s") is not None]
    t1, t2 = statistics.median(times[1]), statistics.median(times[2])
    efficiency = t1 / (2 * t2)
    task_s = statistics.median(runtimes) if runtimes else float("nan")
    tasks = args.instances * len(methods)
    summary = {"instances": args.instances, "agents": args.agents, "methods": methods, "tasks": tasks,
               "one_worker_s": t1, "two_workers_s": t2, "efficiency": efficiency, "parse_s": parse_s,
               "median_task_s": task_s, "runs": times, "cpu_count": os.cpu_count(),
               "load_average": os.getloadavg()}
    lines = ["| instances x methods | 1 worker (s) | 2 workers (s) | efficiency T1/(2 T2) | one parse (s) | "
             "median run of a task (s) | load average at the end |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
             f"| {args.instances} x {len(methods)} ({', '.join(methods)}; neocloud {args.agents} agents) | {t1:.1f} | "
             f"{t2:.1f} | {efficiency:.0%} | {parse_s:.3f} | {task_s:.3f} | "
             f"{', '.join(f'{v:.1f}' for v in os.getloadavg())} |"]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    write_report(out / "scaling_compare.json", json.dumps(summary, indent=2))
    write_report(out / "scaling_compare.md", "# compare: parallel efficiency\n\n" + text
           + f"\nMedian of {args.repeat} alternating runs. The efficiency needs 2 idle cores: with a load average"
             " above 2 the second worker competes with other processes.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
