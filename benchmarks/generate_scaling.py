"""Time of the seeded instance generators, per family, up to a million agents.

For each family and each number of agents the script times, alternately and
``--repeat`` times each (median kept; the machine may be shared):

* ``instance``: ``lo.generate(family, n, m, seed=...)``, the :class:`~laissez_opt.Instance`
  built from the family's numpy columns (``laissez_opt.generate.generate_instance``);
* ``dict``: ``laissez_opt.generate.generate``, the plain dictionary of the
  instance format (what ``laissez-opt generate`` serialises);
* ``via dict`` (the reference, the route ``lo.generate`` took before): the
  dictionary, then ``instance_from_dict`` (checked as whole columns).

Each family runs at its usual number of pools (``POOLS``): ``uniform`` 10
(density 0.3, about 3 edges per agent), ``gavel`` 3 (one pool per GPU type),
``neocloud`` 4 (one per accelerator type), ``gemmini`` 2 (one per clock).
The target (issue 16): every family generates 10^6 agents in under 5 s.
Before timing, the script checks that the column-built instance and the
reference have the same canonical text at the smallest size.

Results go to ``generate_scaling.json`` and ``generate_scaling.md`` in
``--out`` (default ``benchmarks/results``), written atomically.

    python benchmarks/generate_scaling.py            # 10^4, 10^5, 10^6 agents (about 5 minutes on 2 cores)
    python benchmarks/generate_scaling.py --quick    # 10^3 and 10^4 agents
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import laissez_opt as lo  # noqa: E402
from laissez_opt.generate import generate  # noqa: E402
from laissez_opt.io import dumps_instance, instance_from_dict  # noqa: E402
from laissez_opt.io.jsonfile import write_atomic  # noqa: E402

POOLS = {"uniform": 10, "gavel": 3, "neocloud": 4, "gemmini": 2}
SIZES = "10000,100000,1000000"
QUICK_SIZES = "1000,10000"
TARGET_S = 5.0
SEED = 1


def _timed(fn) -> tuple[float, object]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_family(family: str, n: int, repeat: int) -> dict:
    """The three routes for one family and size, alternately, ``repeat`` times each."""
    m = POOLS[family]
    times = {"instance": [], "dict": [], "via dict": []}
    edges = None
    for _ in range(repeat):
        t, inst = _timed(lambda: lo.generate(family, n, m, seed=SEED))
        times["instance"].append(t)
        edges = inst.n_edges
        del inst
        t, data = _timed(lambda: generate(family, n, m, seed=SEED))
        times["dict"].append(t)
        del data
        t, inst = _timed(lambda: instance_from_dict(generate(family, n, m, seed=SEED), f"<generated {family}>"))
        times["via dict"].append(t)
        del inst
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "family": family,
        "agents": n,
        "pools": m,
        "edges": edges,
        "repeat": repeat,
        "instance_s": med["instance"],
        "dict_s": med["dict"],
        "via_dict_s": med["via dict"],
        "speedup": med["via dict"] / med["instance"],
        "runs_s": times,
    }


def same_output(n: int) -> bool:
    """The column-built instance and the reference route give the same canonical text for every family."""
    return all(
        dumps_instance(lo.generate(f, n, m, seed=SEED))
        == dumps_instance(instance_from_dict(generate(f, n, m, seed=SEED)))
        for f, m in POOLS.items()
    )


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Instance generators, per family, up to a million agents",
        "",
        f"Machine: {meta['machine']} (shared); Python {meta['python']}; numpy {meta['numpy']}; "
        f"load average at the start {meta['load_average']}. Median of {meta['repeat']} alternating runs. "
        f"`instance` = `lo.generate` (columns to records); `dict` = `laissez_opt.generate.generate`; "
        f"`via dict` = the dictionary then `instance_from_dict` (the route `lo.generate` took before). "
        f"Same canonical text on both routes: {meta['same_output']}.",
        "",
    ]
    for family in POOLS:
        fam_rows = [r for r in rows if r["family"] == family]
        if not fam_rows:
            continue
        lines += [
            f"`{family}`, {fam_rows[0]['pools']} pools:",
            "",
            "| agents | edges | instance (s) | dict (s) | via dict (s) | via dict / instance | under 5 s |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for r in fam_rows:
            ok = "yes" if r["instance_s"] < TARGET_S else "no"
            lines.append(
                f"| {r['agents']:,} | {r['edges']:,} | {r['instance_s']:.3f} | {r['dict_s']:.3f} | "
                f"{r['via_dict_s']:.3f} | {r['speedup']:.2f}x | {ok} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help=f"agents per size, comma-separated (default {SIZES})")
    parser.add_argument("--families", default=",".join(POOLS), help="families to time")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each route per size (median kept)")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--out", default=str(HERE / "results"), help="folder for the reports")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or (QUICK_SIZES if args.quick else SIZES)).split(",")]
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in POOLS]
    if unknown or args.repeat < 1:
        print(f"generate_scaling.py: unknown family {unknown[0]!r}" if unknown else "--repeat must be >= 1",
              file=sys.stderr)
        return 2
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numpy": metadata.version("numpy"),
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "repeat": args.repeat,
        "same_output": same_output(min(sizes[0], 2000)),
    }
    rows = []
    for n in sizes:
        for family in families:
            row = run_family(family, n, args.repeat)
            rows.append(row)
            print(f"{family:9s} n={n:>9,} edges={row['edges']:>10,} instance {row['instance_s']:7.3f}s  "
                  f"dict {row['dict_s']:7.3f}s  via dict {row['via_dict_s']:7.3f}s  ({row['speedup']:.2f}x)",
                  flush=True)
    text = markdown(rows, meta)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "generate_scaling.json", json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    write_atomic(out / "generate_scaling.md", text + "\n")
    print(text)
    return 0 if meta["same_output"] else 1


if __name__ == "__main__":
    sys.exit(main())
