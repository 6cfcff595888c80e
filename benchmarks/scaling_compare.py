"""Parallel efficiency of ``lo.compare``: one worker against two, and what planning an instance costs.

Instances: ``--instances`` seeded ``neocloud`` instances of ``--agents`` agents and
``max(4, agents // 10)`` pools, written to a temporary directory; methods
``--methods`` (default welfare, greedy, mtf).  For 1 and 2 workers the
script times ``lo.compare`` on the files (fresh, no run store), medians of
``--repeat`` alternating runs, and reports the parallel efficiency
``T_1 / (2 T_2)``.

``--solver`` is passed to ``lo.compare`` (default: none, each exact method on
its own default route, as ``lo.solve`` takes it; ``--solver highs`` gives the
heavier runs that earlier versions of this table timed).

It also times, in this process (medians of 3), what reading an instance
costs before its runs: reading the file, hashing its typed columns
(``instance_digest``) and pickling a columnar copy for the other workers; and
what a worker that did not read it does once: unpickling the copy.  With one
worker the parent reads every file; with two, the workers read them side by
side and keep what they read for their own runs.  For reference, in the same run: the former plan (read, write
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
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parent


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its reaped children (the comparison's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def main(argv=None) -> int:
    import hashlib
    import pickle

    import laissez_opt as lo
    from laissez_opt.generate import generate
    from laissez_opt.io import dumps_instance, instance_from_dict, load_instance

    try:
        from laissez_opt.io.digest import columnar_copy, instance_digest
    except ImportError:  # a library from before the column digest: time the former route only
        columnar_copy = instance_digest = None

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--agents", type=int, default=2000)
    parser.add_argument("--methods", default="welfare,greedy,mtf")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--solver", default=None, help="solver of the exact methods (default: their own routes)")
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--quick", action="store_true", help="2 instances of 200 agents, one run")
    args = parser.parse_args(argv)
    if args.quick:
        args.instances, args.agents, args.repeat = 2, 200, 1
    methods = args.methods.split(",")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for seed in range(args.instances):
            data = generate("neocloud", args.agents, max(4, args.agents // 10), seed=seed)
            path = Path(tmp) / f"neocloud-{seed}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            paths.append(path)

        def timed(fn, fresh=False):
            """Median of 3 wall times of ``fn()`` (of ``fn(instance)`` on a freshly read instance when ``fresh``)."""
            spent = []
            for _ in range(3):
                inst = load_instance(paths[0]) if fresh else None
                start = time.perf_counter()
                value = fn(inst) if fresh else fn()
                spent.append(time.perf_counter() - start)
            return statistics.median(spent), value

        per_instance = {}
        per_instance["read_s"], _ = timed(lambda: load_instance(paths[0]))
        if instance_digest is not None:
            per_instance["digest_and_pickle_s"], payload = timed(
                lambda inst: (instance_digest(inst), pickle.dumps(columnar_copy(inst), pickle.HIGHEST_PROTOCOL))[1],
                fresh=True)
            per_instance["worker_unpack_s"], _ = timed(lambda: pickle.loads(payload))
            per_instance["payload_bytes"] = len(payload)

        def former(inst):
            text = dumps_instance(inst)
            hashlib.sha256(text.encode("utf-8")).hexdigest()
            return text

        per_instance["former_text_and_hash_s"], text = timed(former, fresh=True)
        per_instance["former_worker_parse_s"], _ = timed(lambda: instance_from_dict(json.loads(text), "parse"))
        times = {1: [], 2: []}
        cpu = {1: [], 2: []}
        runtimes = []
        for _ in range(args.repeat):
            for workers in (1, 2):
                own, children = _cpu()
                start = time.perf_counter()
                table = lo.compare(paths, methods, workers=workers, progress=False, time_limit=120,
                                   solver=args.solver)
                times[workers].append(time.perf_counter() - start)
                own_after, children_after = _cpu()
                cpu[workers].append((own_after - own, children_after - children))
                runtimes = [row.get("runtime_s") for row in table.rows if row.get("runtime_s") is not None]
    t1, t2 = statistics.median(times[1]), statistics.median(times[2])
    efficiency = t1 / (2 * t2)
    # Two idle cores: the parent plans, then the workers share their CPU work evenly (an estimate that leaves
    # out the end of the run, where one worker may finish alone, and the workers' start-up).
    parent1, workers1 = (statistics.median(c[k] for c in cpu[1]) for k in (0, 1))
    parent2, workers2 = (statistics.median(c[k] for c in cpu[2]) for k in (0, 1))
    cpu_efficiency = (parent1 + workers1) / (2 * (parent2 + workers2 / 2))
    task_s = statistics.median(runtimes) if runtimes else float("nan")
    tasks = args.instances * len(methods)
    summary = {"instances": args.instances, "agents": args.agents, "methods": methods, "tasks": tasks,
               "solver": args.solver,
               "one_worker_s": t1, "two_workers_s": t2, "efficiency": efficiency,
               "cpu_s": {"one_worker": {"parent": parent1, "workers": workers1},
                         "two_workers": {"parent": parent2, "workers": workers2}},
               "cpu_efficiency_estimate": cpu_efficiency, "per_instance": per_instance,
               "median_task_s": task_s, "runs": times, "cpu_runs": cpu, "cpu_count": os.cpu_count(),
               "load_average_before": load_before, "load_average_after": os.getloadavg()}
    load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
    cell = lambda key: f"{per_instance[key]:.3f}" if key in per_instance else "n/a"  # noqa: E731
    lines = ["| instances x methods | 1 worker (s) | 2 workers (s) | efficiency T1/(2 T2) | CPU s, parent + workers: "
             "1 worker; 2 workers | CPU-time estimate on 2 idle cores | load average before; after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
             f"| {args.instances} x {len(methods)} ({', '.join(methods)}; neocloud {args.agents} agents; "
             f"solver {args.solver or 'default routes'}) | {t1:.1f} | "
             f"{t2:.1f} | {efficiency:.0%} | {parent1:.1f} + {workers1:.1f}; {parent2:.1f} + {workers2:.1f} | "
             f"{cpu_efficiency:.0%} | {load(load_before)}; {load(os.getloadavg())} |",
             "",
             "| per instance (s, median of 3) | read the file | digest + columnar pickle (reader) | unpickle (other worker) | "
             "former: canonical text + SHA-256 (parent) | former: parse the text (worker) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |",
             f"| neocloud {args.agents} agents | {cell('read_s')} | {cell('digest_and_pickle_s')} | "
             f"{cell('worker_unpack_s')} | {cell('former_text_and_hash_s')} | {cell('former_worker_parse_s')} |"]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    write_report(out / "scaling_compare.json", json.dumps(summary, indent=2))
    write_report(out / "scaling_compare.md", "# compare: parallel efficiency\n\n" + text
           + f"\nMedian of {args.repeat} alternating runs. The efficiency needs 2 idle cores: with a load average"
             " above 2 the second worker competes with other processes. The CPU-time estimate"
             " (P1 + W1) / (2 (P2 + W2 / 2)), from the CPU seconds of the parent (P) and of the workers (W),"
             " is what two idle cores would give if the workers shared their work evenly; it leaves out the"
             " end of the run where one worker finishes alone.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
