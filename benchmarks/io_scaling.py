"""Reading, checking, generating, verifying and the whole ``laissez-opt solve`` process, each against its reference.

For each size (``AGENTSxPOOLS``, family ``uniform``; ``:dense`` makes every
agent compatible with every pool, so ``10000x100:dense`` has 10^6 edges) the
script generates one seeded instance, writes it as a JSON file and times:

* ``generate``: ``laissez_opt.generate.generate`` (the instance dictionary);
* ``read (std json)``: the reference, ``json.load`` of the file and nothing else;
* ``read + check``: ``laissez_opt.io.load_instance``: one parse, the checks as
  numpy columns, the records (the fast path);
* ``read + check, precise path``: the strict reader, the JSON Schema and the
  record-by-record checks, which every file took before and which a file
  that fails a check still takes to get its message;
* ``solve`` and ``verify``: ``lo.solve(inst, "welfare")`` and, on its result,
  the independent ``laissez_opt.analysis.verify.verify`` (the ratio is the
  share of the solve time);
* ``whole process``: ``laissez-opt solve FILE --method welfare -o OUT`` in a
  fresh interpreter against a hand-written script in a fresh interpreter
  (standard ``json`` load of the same file, the same LP built with numpy and
  passed to highspy in one call, solved, the solution read back); and
  ``laissez-opt solve ... --solver highs`` against the same script, which
  compares the same solver and so isolates what the library adds.  The two
  take turns; the median of ``--repeat`` runs of each is kept.  Both run
  with their bytecode cached, as an installed package does.

In-process times are the minimum of ``--repeat`` runs.  Results go to
``io_scaling.json`` and ``io_scaling.md`` in ``--out`` (default
``benchmarks/results``), each written atomically, with the machine's CPU count
and library versions.  Targets (issue 16): 10^6 edges read and checked in
under 2 s; the whole process at most 1.3x the hand-written script at
10000x100; verification at most 10% of the solve time.

    python benchmarks/io_scaling.py                     # 10^3 to 10^6 edges and the 10000x100 headline
    python benchmarks/io_scaling.py --quick             # 100x10:dense and 1000x100, seconds
    python benchmarks/io_scaling.py --sizes 2000x50 --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from _common import machine as machine_of, write_report  # noqa: E402

import laissez_opt as lo  # noqa: E402
from laissez_opt.analysis.verify import verify  # noqa: E402
from laissez_opt.generate import generate  # noqa: E402
from laissez_opt.io import instance_from_dict, load_instance, parse_json  # noqa: E402
from laissez_opt.io import instance_file  # noqa: E402
from laissez_opt.io.jsonfile import read_text  # noqa: E402

DEFAULT_SIZES = "100x10:dense,1000x10:dense,1000x100:dense,10000x100:dense,10000x100"
QUICK_SIZES = "100x10:dense,1000x100"
HEADLINE = "10000x100"
SEED = 0
TARGETS = {"read_check_1e6_s": 2.0, "whole_process_ratio": 1.3, "verify_share": 0.10}

#: The reference of the whole process: what a user would write by hand with the standard json module and highspy.
HAND_SCRIPT = '''
import json, sys
import numpy as np
import highspy
with open(sys.argv[1], encoding="utf-8") as f:
    d = json.load(f)
pid = {p["id"]: c for c, p in enumerate(d["pools"])}
aid = {a["id"]: i for i, a in enumerate(d["agents"])}
count = np.array([p.get("count", 1) for p in d["pools"]], float)
demand = np.array([np.inf if a.get("demand") is None else a["demand"] for a in d["agents"]], float)
weight = np.array([a.get("weight", 1.0) for a in d["agents"]], float)
E = d["edges"]
agent = np.fromiter((aid[e["agent"]] for e in E), np.int64, len(E))
pool = np.fromiter((pid[e["pool"]] for e in E), np.int64, len(E))
util = np.fromiter((e["utility"] for e in E), float, len(E))
n = agent.size
finite = np.isfinite(demand)
has_row = finite[agent]
start = np.zeros(n + 1, dtype=np.int32)
np.cumsum(1 + has_row, out=start[1:])
index = np.empty(int(start[-1]), dtype=np.int32)
index[start[:-1][has_row]] = (np.cumsum(finite) - 1)[agent[has_row]]
index[start[:-1] + has_row] = int(finite.sum()) + pool
row_upper = np.concatenate([demand[finite], count])
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.passModel(n, row_upper.size, index.size, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
            0.0, weight[agent] * util, np.zeros(n), np.minimum(demand[agent], count[pool]),
            np.full(row_upper.size, -np.inf), row_upper, start[:-1], index, np.ones(index.size),
            np.zeros(n, dtype=np.int32))
h.run()
x = np.asarray(h.getSolution().col_value)
print(json.dumps({"objective": h.getInfo().objective_function_value}))
'''


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
        sizes.append((n, m, kind == "dense"))
    return sizes


def label(size) -> str:
    return f"{size[0]}x{size[1]}" + (":dense" if size[2] else "")


def best(fn, repeat: int) -> tuple[float, object]:
    times, value = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return min(times), value


def precise(path: Path):
    """The precise path alone: strict parse, schema, records, record-by-record checks."""
    saved = instance_file.instance_fast
    instance_file.instance_fast = lambda *args: None
    try:
        return instance_from_dict(parse_json(read_text(path), str(path)), str(path))
    finally:
        instance_file.instance_fast = saved


def process_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package runs from cached bytecode
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def whole_process(path: Path, work: Path, repeat: int) -> dict:
    hand = work / "hand_welfare.py"
    hand.write_text(HAND_SCRIPT, encoding="utf-8")
    out = work / "result.json"
    commands = {
        "laissez-opt solve": [sys.executable, "-m", "laissez_opt", "solve", str(path), "--method", "welfare",
                              "-o", str(out)],
        # The same solver as the hand-written script: what the library adds around one HiGHS solve.
        "laissez-opt solve --solver highs": [sys.executable, "-m", "laissez_opt", "solve", str(path), "--method",
                                             "welfare", "--solver", "highs", "-o", str(work / "result-highs.json")],
        "hand-written script": [sys.executable, str(hand), str(path)],
    }
    env = process_env()
    times: dict[str, list[float]] = {name: [] for name in commands}
    stdout: dict[str, str] = {}
    for name, cmd in commands.items():  # one warm-up each: bytecode written, files in the page cache
        subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=work)
    for _ in range(repeat):
        for name, cmd in commands.items():
            t0 = time.perf_counter()
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=work)
            times[name].append(time.perf_counter() - t0)
            if run.returncode != 0:
                raise SystemExit(f"{name} failed: {run.stderr[-2000:]}")
            stdout[name] = run.stdout
    hand_objective = json.loads(stdout["hand-written script"])["objective"]
    solved = json.loads(out.read_text())
    medians = {name: statistics.median(values) for name, values in times.items()}
    solved_highs = json.loads((work / "result-highs.json").read_text())
    return {
        "median_s": medians, "runs_s": times,
        "ratio": medians["laissez-opt solve"] / medians["hand-written script"],
        "ratio_same_solver": medians["laissez-opt solve --solver highs"] / medians["hand-written script"],
        "route": solved.get("route"),
        "objectives": {"laissez-opt solve": solved.get("objective"), "hand-written script": hand_objective,
                       "laissez-opt solve --solver highs": solved_highs.get("objective")},
    }


def measure(size, repeat: int, process_repeat: int, work: Path, log) -> dict:
    n, m, dense = size
    params = {"density": 1.0} if dense else {}
    t_gen, data = best(lambda: generate("uniform", n, m, seed=SEED, **params), max(1, repeat // 2))
    path = work / f"{label(size).replace(':', '-')}.json"
    lo.save_instance(instance_from_dict(data), path)
    edges = len(data["edges"])
    del data
    t_json, _ = best(lambda: json.loads(path.read_text(encoding="utf-8")), repeat)
    t_fast, inst = best(lambda: load_instance(path), repeat)
    t_precise, slow = best(lambda: precise(path), max(1, repeat // 2))
    same = (inst.pools, inst.agents, inst.edges) == (slow.pools, slow.agents, slow.edges)
    del slow
    t_solve, result = best(lambda: lo.solve(load_instance(path), "welfare"), 1)
    t_solve = min(t_solve, best(lambda: lo.solve(inst, "welfare"), max(1, repeat // 2))[0])
    t_verify, checked = best(lambda: verify(inst, result), repeat)
    row = {
        "size": label(size), "agents": n, "pools": m, "edges": edges, "bytes": path.stat().st_size,
        "times_s": {"generate": t_gen, "read std json": t_json, "read+check": t_fast, "read+check precise": t_precise,
                    "solve": t_solve, "verify": t_verify},
        "same_instance": same, "verified": bool(checked.ok), "verify_share": t_verify / t_solve,
    }
    if process_repeat and (label(size) == HEADLINE or edges >= 10**6):
        row["whole_process"] = whole_process(path, work, process_repeat)
    log(f"{label(size)}: {edges:,} edges, read+check {t_fast:.3f} s (std json {t_json:.3f} s, precise path "
        f"{t_precise:.3f} s), verify {100 * row['verify_share']:.1f}% of solve"
        + (f", whole process {row['whole_process']['ratio']:.2f}x ({row['whole_process']['ratio_same_solver']:.2f}x "
           f"with --solver highs)" if "whole_process" in row else ""))
    path.unlink()
    return row


# ---------------------------------------------------------------- output
def machine() -> dict:
    return machine_of("laissez-opt", "highspy", "numpy", "orjson")

def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Reading, checking, verifying and the whole solve process",
        "",
        f"Machine: {m['cpu_count']} CPUs, {m['system']}, Python {m['python']}, highspy {m['highspy']}, "
        f"numpy {m['numpy']}, orjson {m['orjson']}.  In-process times: minimum of {report['repeat']} runs; "
        f"whole process: median of {report['process_repeat']} alternating runs.  Times in seconds.",
        "",
        "| size | edges | generate | read: std json | read + check | read + check, precise path | solve (welfare) | "
        "verify | verify / solve | same instance |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in report["sizes"]:
        t = s["times_s"]
        lines.append(
            f"| {s['size']} | {s['edges']:,} | {t['generate']:.3f} | {t['read std json']:.3f} | {t['read+check']:.3f} | "
            f"{t['read+check precise']:.3f} | {t['solve']:.3f} | {t['verify']:.3f} | {100 * s['verify_share']:.1f}% | "
            f"{'yes' if s['same_instance'] else 'NO'} |")
    lines += ["", "Whole process, `laissez-opt solve FILE --method welfare -o OUT` against the hand-written script "
              "(standard `json` load, the same LP in highspy with its default options), each in a fresh "
              "interpreter.  The default route is the library's choice for this model (its `route` column); "
              "`--solver highs` runs the hand script's solver, so its ratio is what the library adds around "
              "one HiGHS solve (reading, checking, the result, verification and the result file):", "",
              "| size | edges | laissez-opt solve | route | ratio | laissez-opt solve --solver highs | ratio | "
              "hand-written script |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in report["sizes"]:
        w = s.get("whole_process")
        if w:
            lines.append(f"| {s['size']} | {s['edges']:,} | {w['median_s']['laissez-opt solve']:.2f} | "
                         f"{w.get('route', '')} | {w['ratio']:.2f}x | "
                         f"{w['median_s']['laissez-opt solve --solver highs']:.2f} | {w['ratio_same_solver']:.2f}x | "
                         f"{w['median_s']['hand-written script']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"only the small sizes {QUICK_SIZES}")
    parser.add_argument("--repeat", type=int, default=3, help="in-process runs; the minimum is kept (default 3)")
    parser.add_argument("--process-repeat", type=int, default=5,
                        help="alternating whole-process runs; the median is kept (default 5; 0 skips them)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.process_repeat < 0:
        parser.error("--repeat must be >= 1 and --process-repeat >= 0")
    sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    log = functools.partial(print, flush=True)
    report = {"benchmark": "io_scaling", "machine": machine(), "repeat": args.repeat,
              "process_repeat": args.process_repeat, "targets": TARGETS, "sizes": []}
    log(f"io_scaling: {report['machine']}")
    with tempfile.TemporaryDirectory(prefix="io_scaling.") as tmp:
        for size in sizes:
            report["sizes"].append(measure(size, args.repeat, args.process_repeat, Path(tmp), log))
    table = markdown(report)
    log("\n" + table)
    write_report(args.out / "io_scaling.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_report(args.out / "io_scaling.md", table)
    ok = all(s["same_instance"] and s["verified"] for s in report["sizes"])
    log(f"same instance on both paths and verified on every size: {'yes' if ok else 'NO'}; "
        f"results in {args.out.name}/io_scaling.{{json,md}}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
