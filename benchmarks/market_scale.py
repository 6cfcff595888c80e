"""Exchange throughput: 10,000 tenants on 1,000 devices over one simulated week of one-minute ticks.

Scenario (seeded): eight pools in two functional clusters (A10 / L4 / Trainium / H100
in ``gpu``; two FPGA-like pools in ``codec``), 1,000 devices in all; tenants arrive by a
Poisson process over the week (about one a minute); each job's runtime on its fastest
pool is log-normal around 10 hours (clipped to 1..48 h), slower pools take 1.2 to 2
times as long; 30% of the jobs skip one pool; checkpoints every 30 minutes; reload 1
minute; the paper's agents on the second-price exchange.  The exchange runs on its own
clock (:meth:`Exchange.run`): an event heap, nothing done on a tick without events.

Usage::

    python benchmarks/market_scale.py [--tenants N] [--devices D] [--days X] [--out DIR]

Writes ``DIR/market_scale.json`` and ``.md`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.simulate.market import Exchange, MarketConfig

POOLS = [("A10", "gpu", 0.606, 1.0), ("L4", "gpu", 0.48, 0.7), ("Trainium", "gpu", 0.804, 1.15),
         ("H100", "gpu", 2.49, 3.0), ("A100", "gpu", 1.6, 2.0), ("T4", "gpu", 0.35, 0.45),
         ("FPGA-a", "codec", 1.1, 1.0), ("FPGA-b", "codec", 0.9, 0.8)]


def build(tenants: int, devices: int, minutes: int, seed: int = 0) -> Instance:
    rng = np.random.default_rng(seed)
    shares = np.array([0.2, 0.2, 0.12, 0.08, 0.1, 0.1, 0.1, 0.1])
    counts = np.maximum(1, np.floor(shares * devices).astype(int))
    counts[0] += devices - counts.sum()
    pools = [Pool(name, count=int(k), cluster=cl, base_price=p) for (name, cl, p, _), k in zip(POOLS, counts)]
    arrivals = np.sort(rng.integers(0, minutes - 1, size=tenants))
    agents, edges = [], []
    for i in range(tenants):
        tid = f"t{i:05d}"
        fastest_h = float(np.clip(rng.lognormal(np.log(10.0), 0.6), 1.0, 48.0))
        cluster = "codec" if rng.random() < 0.2 else "gpu"
        names = [k for k, (n, cl, _, _) in enumerate(POOLS) if cl == cluster]
        if len(names) > 2 and rng.random() < 0.3:
            names.pop(int(rng.integers(len(names))))
        slow = {k: rng.uniform(1.0, 2.0) for k in names}
        best = min(slow.values())
        agents.append(Agent(tid, work=1.0, arrival=int(arrivals[i]), demand=1,
                            migration_cost=1.0 / (fastest_h * 60.0)))
        for k in names:
            runtime_min = fastest_h * 60.0 * slow[k] / best
            edges.append(Edge(tid, POOLS[k][0], 1.0 / runtime_min, cost=POOLS[k][2] * runtime_min / 60.0))
    return Instance(pools, agents, edges, rounds=minutes, round_hours=1.0 / 60.0, name="market-scale")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--devices", type=int, default=1_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    minutes = int(args.days * 24 * 60)
    t0 = time.perf_counter()
    inst = build(args.tenants, args.devices, minutes)
    built = time.perf_counter() - t0
    cfg = MarketConfig(checkpoint_ticks=30, agent="paper", horizon=minutes, timeout_ticks=24 * 60)
    t1 = time.perf_counter()
    ex = Exchange(inst, cfg, record_events=False)
    out = ex.run()
    ran = time.perf_counter() - t1
    s = out.summary()
    result = {"tenants": args.tenants, "devices": args.devices, "ticks": minutes, "build_s": built, "run_s": ran,
              "events": ex._seq, "summary": s, "load": os.getloadavg(), "machine": platform.platform(),
              "cpus": os.cpu_count()}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "market_scale.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    md = [f"# Exchange scale: {args.tenants} tenants, {args.devices} devices, {minutes} one-minute ticks", "",
          f"- instance built in {built:.1f} s; exchange run {ran:.1f} s ({ex._seq} events scheduled)",
          f"- completed {s['completed']} of {s['tenants']}; utilisation {s['utilisation']:.3f}; "
          f"migrations {s['migrations']}; tenant cost = revenue {s['tenant_cost']:.1f}",
          f"- load average during the run: {', '.join(f'{x:.1f}' for x in result['load'])} "
          f"(the machine is shared; {os.cpu_count()} cores)", ""]
    (Path(args.out) / "market_scale.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
