"""The market against the status quo, a myopic re-optimiser and the offline optimum, on generated scenarios.

A **market scenario** is a multi-round job instance (the ``migration`` model's
format: one round = one checkpoint interval of ``h`` hours): ``n`` tenants, one job
each, arriving by a Poisson process of rate ``lambda`` tenants per round; each job
has work 1, runs on one device, and pays ``mu_i`` work units per move.  Families:

* ``table1``: App A or App B of HotOS'25 Table 1 (equal odds), times jittered by
  up to 10%, pools A10 / L4 / Trainium at 0.606 / 0.48 / 0.804 $/h, B without
  Trainium, ``h`` = 0.1 h (6 minutes);
* ``gavel``: the ``gavel`` family's throughputs (V100 / P100 / K80) as relative
  speeds; base prices 2.48 / 1.46 / 0.45 $/h (an assumption: typical public-cloud
  list prices of these GPUs), ``h`` = 0.25 h;
* ``neocloud``: the ``neocloud`` family (A10 / L4 / H100 with its prices and speed
  ranges), ``h`` = 0.25 h.

For ``gavel`` and ``neocloud`` a job's runtime on its fastest pool is drawn
uniformly in 2 to 6 rounds and its other runtimes follow the family's speeds;
``mu_i`` is a quarter of a round on the fastest pool.  ``scarce``: one or two
devices per pool; ``plentiful``: ``n / 2`` per pool.  The horizon leaves room for
every job (deadline ``R - 1`` for all).

Each method sees the same arrivals; the offline ``migration`` optimum knows them all
in advance and minimises the money at base prices, ``sum b_c h x_{i,c,r}``, with
every job done by the horizon.  Per method (:func:`evaluate`): ``base_cost``
(device time held, at base prices; the social cost), ``tenant_cost`` (what tenants
pay: base prices for the baselines, exchange prices for the market),
``provider_revenue`` (= tenant cost), ``utilisation`` (busy device-rounds over
devices x makespan), ``mean_completion`` (rounds from arrival to completion),
``migrations`` and ``completed``.  The price of decentralisation is
``base_cost(market) / base_cost(optimum)``.

>>> inst = scenario("table1", "scarce", n=4, seed=0)
>>> inst.name, inst.n_agents, [p.count for p in inst.pools]
('table1-scarce-n4-s0', 4, [1, 2, 2])
>>> rows = evaluate(inst, methods=("market", "fcfs_static"))
>>> sorted(rows) == ["fcfs_static", "market"] and rows["market"]["completed"] == 4
True
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InfeasibleError, InputError
from ...instance import Agent, Edge, Instance, Pool
from .exchange import Exchange, MarketConfig

__all__ = ["scenario", "evaluate", "FAMILIES", "METHODS"]

FAMILIES = ("table1", "gavel", "neocloud")
METHODS = ("market", "fcfs_static", "myopic", "optimum")
_GAVEL_PRICES = {"V100": 2.48, "P100": 1.46, "K80": 0.45}


def _arrivals(rng: np.random.Generator, n: int, rate: float) -> list:
    gaps = rng.exponential(1.0 / rate, size=n)
    return [int(x) for x in np.floor(np.cumsum(gaps) - gaps[0])]


def scenario(family: str, supply: str = "scarce", *, n: int = 8, seed: int = 0, rate: float = 0.6) -> Instance:
    """A seeded market scenario (see the module docstring)."""
    if family not in FAMILIES:
        raise InputError(f"unknown market scenario family {family!r}; one of {', '.join(FAMILIES)}", path="family")
    if supply not in ("scarce", "plentiful"):
        raise InputError(f"supply must be 'scarce' or 'plentiful', got {supply!r}", path="supply")
    rng = np.random.default_rng([seed, 10, FAMILIES.index(family)])
    arrivals = _arrivals(rng, n, rate)
    many = max(2, n // 2)
    if family == "table1":
        h = 0.1
        names = ["A10", "L4", "Trainium"]
        prices = [0.606, 0.48, 0.804]
        counts = [1, 2, 2] if supply == "scarce" else [max(1, n // 4), many, many]
        table = {"A": {"A10": 0.35, "L4": 0.51, "Trainium": 0.30}, "B": {"A10": 0.23, "L4": 0.32}}
        jobs = []
        for i in range(n):
            kind = "A" if rng.random() < 0.5 else "B"
            jitter = 1.0 + rng.uniform(-0.1, 0.1)
            jobs.append({c: t * jitter / h for c, t in table[kind].items()})  # runtime in rounds per pool
    else:
        from ...api import generate

        h = 0.25
        base = generate(family, n, 3, seed=seed)
        names = [p.id.split("-")[0] for p in base.pools]
        prices = [_GAVEL_PRICES.get(nm, p.base_price) if family == "gavel" else p.base_price
                  for nm, p in zip(names, base.pools)]
        counts = [int(rng.integers(1, 3)) for _ in names] if supply == "scarce" else [many] * len(names)
        speed = np.zeros((n, len(names)))
        for e in base.edges:
            speed[base.agent_index[e.agent], base.pool_index[e.pool]] = e.utility_in(0)
        jobs = []
        for i in range(n):
            best = speed[i].max()
            fastest = rng.uniform(2.0, 6.0)
            jobs.append({names[c]: fastest * best / speed[i, c] for c in range(len(names)) if speed[i, c] > 0})
    pools = [Pool(nm, count=k, cluster="gpu", base_price=p) for nm, k, p in zip(names, counts, prices)]
    agents, edges = [], []
    for i, runtimes in enumerate(jobs):
        tid = f"t{i:03d}"
        fastest = min(runtimes.values())
        agents.append(Agent(tid, work=1.0, arrival=arrivals[i], demand=1, migration_cost=0.25 / fastest))
        for c, rounds in runtimes.items():
            edges.append(Edge(tid, c, 1.0 / rounds, cost=prices[names.index(c)] * rounds * h))
    slowest = max(max(r.values()) for r in jobs)
    total = sum(min(r.values()) for r in jobs)
    horizon = int(arrivals[-1] + math.ceil(slowest) + math.ceil(total / max(1, sum(counts))) * 2 + 8)
    return Instance(pools, agents, edges, rounds=horizon, round_hours=h,
                    name=f"{family}-{supply}-n{n}-s{seed}")


def _schedule_metrics(inst: Instance, result) -> dict:
    details = result.details or {}
    schedule = details.get("schedule") or {}
    h = inst.round_hours
    base = {p.id: p.base_price for p in inst.pools}
    cost = busy = 0.0
    last = 0
    completions, migrations, done = [], 0, 0
    for a in inst.agents:
        row = schedule.get(a.id) or []
        prev = None
        for r, pool in enumerate(row):
            if pool is None:
                continue
            cost += base[pool] * h
            busy += 1
            last = max(last, r + 1)
            if prev is not None and pool != prev:
                migrations += 1
            prev = pool
        stats = (details.get("agents") or {}).get(a.id) or {}
        when = stats.get("completion_round")
        if when is not None:
            done += 1
            completions.append(when + 1 - a.arrival)
    devices = int(inst.counts.sum())
    return {"base_cost": cost, "tenant_cost": cost, "provider_revenue": cost,
            "utilisation": busy / (devices * last) if last else 0.0,
            "mean_completion": float(np.mean(completions)) if completions else math.nan,
            "migrations": migrations, "completed": done, "status": result.status}


def _solve(inst, method, **options):
    from ...api import solve

    try:
        return solve(inst, method, **options)
    except InfeasibleError as err:
        if getattr(err, "result", None) is not None:
            return err.result
        raise


def evaluate(inst: Instance, methods=METHODS, *, market: MarketConfig | None = None,
             time_limit: float = 60.0) -> dict:
    """``{method: metrics}`` for the market and the schedule methods on scenario ``inst``."""
    out = {}
    for method in methods:
        if method == "market":
            cfg = market or MarketConfig(checkpoint_ticks=1, agent="paper")
            res = Exchange(inst, cfg, record_events=False).run()
            summary = res.summary()
            done = [r for r in res.tenants if r["status"] == "done"]
            busy = sum(e["t1"] - e["t0"] for e in res.ledger)
            out[method] = {"base_cost": summary["base_cost"], "tenant_cost": summary["tenant_cost"],
                           "provider_revenue": summary["provider_revenue"],
                           "utilisation": busy / (res.devices * res.last_tick) if res.last_tick else 0.0,
                           "mean_completion": (float(np.mean([r["completion_min"] for r in done]))
                                               / res.tick_minutes) if done else math.nan,
                           "migrations": summary["migrations"], "completed": len(done), "status": "feasible"}
        elif method == "optimum":
            result = _solve(inst, "migration", objective="cost", time_limit=time_limit)
            out[method] = _schedule_metrics(inst, result)
            out[method]["gap"] = result.gap
            out[method]["bound"] = result.bound
        else:
            out[method] = _schedule_metrics(inst, _solve(inst, method, objective="cost"))
    return out
