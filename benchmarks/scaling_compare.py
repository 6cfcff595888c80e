"""Parallel efficiency of ``lo.compare``: one worker against two, and what planning an instance costs.

Instances: ``--instances`` seeded ``neocloud`` instances of ``--agents`` agents and
``max(4, agents // 10)`` pools, written to a temporary directory; methods
``--methods`` (default welfare, greedy, mtf).  For 1 and 2 workers the
script times ``lo.compare`` on the files (fresh, no run store), medians of
``--repeat`` alternating runs, and reports the parallel efficiency
``T_1 / (2 T_2)``.

It also times, in this process (medians of 3), what the parent does for
each instance before the workers get it, and what a worker does once per
instance: the parent reads the file and hashes its typed columns
(``instance_digest``) and pickles a columnar copy for the workers; a worker
unpickles it.  For reference, in the same run: the former plan (read, write
the canonical text, SHA-256 of the text) and the former worker's parse of
that text (``instance_from_dict(json.loads(text))``).  The load average
before and after the runs is recorded: the efficiency needs two idle cores.

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
    import hashlib
    import pickle

    from laissez_opt.io import dumps_instance, instance_from_dict, load_instance
    from laissez_opt.io.digest import columnar_copy, instance_digest

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
        def timed(fn):
            spent = []
            for _ in range(3):
                start = time.perf_counter()
                value = fn()
                spent.append(time.perf_counter() - start)
            return statistics.median(spent), value

        def plan_now():
            inst = load_instance(paths[0])
            return instance_digest(inst), pickle.dumps(columnar_copy(inst), protocol=pickle.HIGHEST_PROTOCOL)

        def plan_before():
            text = dumps_instance(load_instance(paths[0]))
            return text, hashlib.sha256(text.encode("utf-8")).hexdigest()

        load_before = os.getloadavg()
        read_s, _ = timed(lambda: load_instance(paths[0]))
        plan_s, (_, payload) = timed(plan_now)
        unpack_s, _ = timed(lambda: pickle.loads(payload))
        plan_before_s, (text, _) = timed(plan_before)
        parse_s, _ = timed(lambda: instance_from_dict(json.loads(text), "parse"))
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
               "one_worker_s": t1, "two_workers_s": t2, "efficiency": efficiency,
               "per_instance": {"read_s": read_s, "plan_s": plan_s, "worker_unpack_s": unpack_s,
                                "former_plan_s": plan_before_s, "former_worker_parse_s": parse_s,
                                "payload_bytes": len(payload)},
               "median_task_s": task_s, "runs": times, "cpu_count": os.cpu_count(),
               "load_average_before": load_before, "load_average_after": os.getloadavg()}
    load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
    lines = ["| instances x methods | 1 worker (s) | 2 workers (s) | efficiency T1/(2 T2) | median run of a task (s) | "
             "load average before; after |",
             "| --- | ---: | ---: | ---: | ---: | --- |",
             f"| {args.instances} x {len(methods)} ({', '.join(methods)}; neocloud {args.agents} agents) | {t1:.1f} | "
             f"{t2:.1f} | {efficiency:.0%} | {task_s:.3f} | {load(load_before)}; {load(os.getloadavg())} |",
             "",
             "| per instance (s, median of 3) | read the file | parent's plan: read, digest, columnar pickle | "
             "worker: unpickle | former plan: read, canonical text, SHA-256 | former worker: parse the text |",
             "| --- | ---: | ---: | ---: | ---: | ---: |",
             f"| neocloud {args.agents} agents | {read_s:.3f} | {plan_s:.3f} | {unpack_s:.3f} | {plan_before_s:.3f} | "
             f"{parse_s:.3f} |"]
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
