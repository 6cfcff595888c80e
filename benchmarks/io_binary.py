"""Reading and checking the binary instance form (``.npz``) against the JSON fast path and a bare ``np.load``.

For each size (``AGENTSxPOOLS``, family ``uniform``; ``:dense`` makes every
agent compatible with every pool, so ``10000x100:dense`` has 10^6 edges) the
script generates one seeded instance, writes it in both forms
(``save_instance``: canonical JSON, uncompressed and compressed ``.npz``) and
times, alternating the readers, the median of ``--repeat`` runs of:

* ``np.load (bare)``: the floor, ``numpy.load`` of the same archive with every
  array read and nothing checked;
* ``npz read + check``: ``load_instance`` of the ``.npz`` file: every check of
  the JSON form over whole columns and the array views; the ``Edge`` records
  are left to be built on first use;
* ``npz + records``: the same, then ``inst.edges`` built;
* ``npz compressed``: ``load_instance`` of the deflated archive;
* ``JSON read + check``: ``load_instance`` of the JSON file (one ``orjson``
  parse, column checks, records), the reference;
* ``std json``: ``json.load`` of the JSON file and nothing else.

Each size also checks that both forms give the same canonical text.  With
``--process-repeat`` (0 in ``--quick``), ``laissez-opt solve FILE --method
welfare`` runs in fresh interpreters on both forms at the headline size,
alternating; the median is kept.  Results go to ``io_binary.json`` and
``io_binary.md`` in ``--out`` (default ``benchmarks/results``), written
atomically.  Target (issue 16): 10^6 edges read and checked in well under 1 s.

    python benchmarks/io_binary.py                 # 10^3 to 10^6 edges, a few minutes on 2 cores
    python benchmarks/io_binary.py --quick         # 10^3 and 10^4 edges, seconds
"""

from __future__ import annotations

import argparse
import functools
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

import numpy as np  # noqa: E402

from laissez_opt.generate import generate  # noqa: E402
from laissez_opt.io import dumps_instance, instance_from_dict, load_instance, save_instance  # noqa: E402

DEFAULT_SIZES = "100x10:dense,1000x10:dense,1000x100:dense,10000x100:dense"
QUICK_SIZES = "100x10:dense,1000x10:dense"
HEADLINE_EDGES = 10**6
TARGET_S = 1.0
READERS = ("np.load (bare)", "npz read + check", "npz + records", "npz compressed", "JSON read + check", "std json")


def parse_sizes(text: str) -> list[tuple[int, int, bool]]:
    out = []
    for item in text.split(","):
        shape, _, flag = item.strip().partition(":")
        n, _, m = shape.partition("x")
        if not (n.isdigit() and m.isdigit()) or flag not in ("", "dense"):
            raise SystemExit(f"bad size {item!r}: expected AGENTSxPOOLS or AGENTSxPOOLS:dense")
        out.append((int(n), int(m), flag == "dense"))
    return out


def label(size) -> str:
    n, m, dense = size
    return f"{n}x{m}" + (":dense" if dense else "")


def bare(path: Path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def records(path: Path):
    inst = load_instance(path)
    return inst.edges


def std_json(path: Path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def measure(size, repeat: int, work: Path, log) -> dict:
    n, m, dense = size
    data = generate("uniform", n, m, seed=0, **({"density": 1.0} if dense else {}))
    inst = instance_from_dict(data)
    paths = {"json": work / "x.json", "npz": work / "x.npz", "npz compressed": work / "xc.npz"}
    save_instance(inst, paths["json"])
    save_instance(inst, paths["npz"])
    save_instance(inst, paths["npz compressed"], compressed=True)
    text = dumps_instance(inst)
    same = all(dumps_instance(load_instance(p)) == text for p in paths.values())
    readers = {
        "np.load (bare)": functools.partial(bare, paths["npz"]),
        "npz read + check": functools.partial(load_instance, paths["npz"]),
        "npz + records": functools.partial(records, paths["npz"]),
        "npz compressed": functools.partial(load_instance, paths["npz compressed"]),
        "JSON read + check": functools.partial(load_instance, paths["json"]),
        "std json": functools.partial(std_json, paths["json"]),
    }
    times = {name: [] for name in readers}
    for _ in range(repeat):  # alternating: every reader sees the same machine load
        for name, read in readers.items():
            start = time.perf_counter()
            read()
            times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in times.items()}
    row = {
        "size": label(size), "agents": n, "pools": m, "edges": inst.n_edges, "same_instance": same,
        "bytes": {name: p.stat().st_size for name, p in paths.items()}, "median_s": median,
        "ratio_to_json": median["npz read + check"] / median["JSON read + check"],
        "ratio_to_bare": median["npz read + check"] / median["np.load (bare)"],
    }
    log(f"{row['size']}: {row['edges']:,} edges, npz read+check {median['npz read + check']:.4f} s "
        f"(JSON {median['JSON read + check']:.4f} s, bare np.load {median['np.load (bare)']:.4f} s), "
        f"same instance: {'yes' if same else 'NO'}")
    return row


def whole_process(paths: dict, repeat: int, work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = {name: [] for name in paths}
    for _ in range(repeat):
        for name, path in paths.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "laissez_opt", "solve", str(path), "--method", "welfare",
                            "-o", str(work / "result.json")], check=True, env=env, cwd=ROOT, capture_output=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def machine() -> dict:
    return machine_of("laissez-opt", "numpy", "orjson")

def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Reading the binary instance form (.npz)",
        "",
        f"Machine: {m['cpu_count']} CPUs, {m['system']}, Python {m['python']}, numpy {m['numpy']}, orjson "
        f"{m['orjson']}.  Median of {report['repeat']} alternating runs; times in seconds.",
        "",
        "| size | edges | " + " | ".join(READERS) + " | npz / JSON | npz / bare | JSON MB | npz MB | same |",
        "| --- | --- | " + " | ".join("---" for _ in READERS) + " | --- | --- | --- | --- | --- |",
    ]
    for s in report["sizes"]:
        t = s["median_s"]
        lines.append(
            f"| {s['size']} | {s['edges']:,} | " + " | ".join(f"{t[name]:.4f}" for name in READERS)
            + f" | {s['ratio_to_json']:.3f} | {s['ratio_to_bare']:.1f} | {s['bytes']['json'] / 1e6:.1f} | "
            f"{s['bytes']['npz'] / 1e6:.1f} | {'yes' if s['same_instance'] else 'NO'} |")
    w = report.get("whole_process")
    if w:
        lines += ["", f"Whole process, `laissez-opt solve FILE --method welfare -o OUT` at {w['size']} in fresh "
                  f"interpreters (median of {w['repeat']} alternating runs): JSON {w['median_s']['json']:.2f} s, "
                  f".npz {w['median_s']['npz']:.2f} s ({w['median_s']['npz'] / w['median_s']['json']:.2f}x)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"only the small sizes {QUICK_SIZES}, no whole process")
    parser.add_argument("--repeat", type=int, default=5, help="alternating runs of each reader; the median is kept")
    parser.add_argument("--process-repeat", type=int, default=None,
                        help="whole-process solves of each form at the largest size (default 3; 0 in --quick)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    args = parser.parse_args(argv)
    process_repeat = args.process_repeat if args.process_repeat is not None else (0 if args.quick else 3)
    if args.repeat < 1 or process_repeat < 0:
        parser.error("--repeat must be >= 1 and --process-repeat >= 0")
    sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES))
    log = functools.partial(print, flush=True)
    report = {"benchmark": "io_binary", "machine": machine(), "repeat": args.repeat, "target_s": TARGET_S,
              "sizes": []}
    with tempfile.TemporaryDirectory(prefix="io_binary.") as tmp:
        work = Path(tmp)
        for size in sizes:
            report["sizes"].append(measure(size, args.repeat, work, log))
        if process_repeat:
            size = sizes[-1]
            n, m, dense = size
            inst = instance_from_dict(generate("uniform", n, m, seed=0, **({"density": 1.0} if dense else {})))
            paths = {"json": work / "p.json", "npz": work / "p.npz"}
            for path in paths.values():
                save_instance(inst, path)
            report["whole_process"] = {"size": label(size), "repeat": process_repeat,
                                       "median_s": whole_process(paths, process_repeat, work)}
    table = markdown(report)
    log("\n" + table)
    write_report(args.out / "io_binary.json", json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_report(args.out / "io_binary.md", table)
    ok = all(s["same_instance"] for s in report["sizes"])
    big = [s for s in report["sizes"] if s["edges"] >= HEADLINE_EDGES]
    for s in big:
        log(f"target: {s['edges']:,} edges read and checked in {s['median_s']['npz read + check']:.3f} s "
            f"(target well under {TARGET_S:g} s): {'met' if s['median_s']['npz read + check'] < TARGET_S else 'NOT met'}")
    log(f"same instance from both forms on every size: {'yes' if ok else 'NO'}; "
        f"results in {args.out.name}/io_binary.{{json,md}}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
