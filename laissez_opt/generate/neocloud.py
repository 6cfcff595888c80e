"""Family ``neocloud``: tenant jobs bidding for A10, L4, H100 and Trainium pools
of a heterogeneous "neocloud", in the setting of LaissezCloud (HotOS'25).

Sources and assumptions
-----------------------
Base prices per device-hour (:data:`BASE_PRICES`):

* A10 $0.606 and Trainium $0.804: stated in the LaissezCloud paper (seed 000,
  section 5);
* L4 $0.48: implied by its Table 1 (cost / execution time: App A
  $0.25 / 0.51 h = $0.49, App B $0.15 / 0.32 h = $0.47; about $0.48);
* H100 $2.49: an ASSUMPTION, not from the seeds: the low end of the on-demand
  list prices that specialised GPU clouds quote for one H100 80 GB (about
  $2.49 to $3.99 per GPU-hour in 2026 price comparisons).

Speeds relative to the A10 (:data:`SPEED_RANGES`, each job draws its own
factor uniformly in the range):

* L4 0.65 to 0.75: Table 1 gives 0.35/0.51 = 0.69 for App A and
  0.23/0.32 = 0.72 for App B;
* Trainium 1.05 to 1.30: Table 1 gives 0.35/0.30 = 1.17 for App A;
* H100 3 to 6: an ASSUMPTION (the H100's dense FP16 tensor peak is about eight
  times the A10's; training speed-ups seen in practice are lower).

Jobs and values: each agent is one tenant job with a value per hour of
A10-equivalent progress ``v = 0.606 * exp(N(0.15, 0.25))`` (median about $0.70,
near the paper's bids of $0.687 and $0.762 for the A10).  Its value for one
device-hour of a pool is ``v`` times its speed there: that is both the edge
``utility`` and the edge ``bid`` (money per device-hour).  With
``with_cost=True`` each edge also carries ``cost``, the money to finish the job
there: the job's work ``W`` (A10-hours, ``0.3 * exp(N(0, 0.5))``, median 0.3 h as
in Table 1) divided by its speed on the pool, times the pool's base price.

Compatibility: a fraction ``no_trainium`` of the jobs cannot run on Trainium
(like App B, a vision-transformer job); when an H100 pool exists, a fraction
``large_memory`` of the jobs need the H100's 80 GB and run only there.  Every
job keeps at least one pool (the A10 pool ``A10-0`` always exists).

Encoding
--------
* pools cycle over ``A10, L4, H100, Trainium``: ``A10-0, L4-1, H100-2,
  Trainium-3, A10-4, ...``; counts uniform on ``1..max_count``; all pools in one
  functional cluster ``"gpu"`` (they serve the same function, DL training, so a
  market keeps one exchange table for them);
* demand uniform on ``1..max_demand`` (default 1), weights 1;
* utilities, bids and costs rounded to 4 decimal places.

Parameters (keyword, with defaults)
-----------------------------------
max_count : int >= 1, default 8
no_trainium : float in [0, 1], default 0.4
large_memory : float in [0, 1], default 0.1
with_cost : bool, default True
max_demand : int >= 1, default 1
rounds : int >= 1, default 1 (utilities equal in every round)
"""

from __future__ import annotations

import numpy as np

from ._common import (
    Family,
    agent_ids,
    assemble,
    dict_output,
    check_bool,
    check_fraction,
    check_int,
    cycled_pools,
    format_params,
    round_values,
)

__all__ = ["FAMILY", "ACCELERATORS", "BASE_PRICES", "SPEED_RANGES", "generate_neocloud", "draft_neocloud"]

#: Accelerator types in pool order.
ACCELERATORS = ("A10", "L4", "H100", "Trainium")

#: Base price per device-hour (US$): seed 000 for A10 and Trainium, implied by
#: its Table 1 for L4, assumed for H100.
BASE_PRICES = {"A10": 0.606, "L4": 0.48, "H100": 2.49, "Trainium": 0.804}

#: Speed relative to the A10, drawn per job uniformly in [low, high].
SPEED_RANGES = {"A10": (1.0, 1.0), "L4": (0.65, 0.75), "H100": (3.0, 6.0), "Trainium": (1.05, 1.30)}

DEFAULTS = {
    "max_count": 8,
    "no_trainium": 0.4,
    "large_memory": 0.1,
    "with_cost": True,
    "max_demand": 1,
    "rounds": 1,
}


def draft_neocloud(
    agents: int,
    pools: int,
    seed: int = 0,
    *,
    max_count: int = 8,
    no_trainium: float = 0.4,
    large_memory: float = 0.1,
    with_cost: bool = True,
    max_demand: int = 1,
    rounds: int = 1,
) -> dict:
    """A ``neocloud`` instance as whole columns, a :class:`~laissez_opt.generate._common.Draft` (see the module docstring)."""
    max_count = check_int(max_count, "max_count", 1)
    no_trainium = check_fraction(no_trainium, "no_trainium")
    large_memory = check_fraction(large_memory, "large_memory")
    with_cost = check_bool(with_cost, "with_cost")
    max_demand = check_int(max_demand, "max_demand", 1)
    rounds = check_int(rounds, "rounds", 1)
    n, m = agents, pools
    rng = np.random.default_rng(seed)

    pool_names, kind = cycled_pools(m, ACCELERATORS)
    counts = rng.integers(1, max_count + 1, size=m)
    lows = np.array([SPEED_RANGES[a][0] for a in ACCELERATORS])
    highs = np.array([SPEED_RANGES[a][1] for a in ACCELERATORS])
    speed_by_type = lows + (highs - lows) * rng.random((n, len(ACCELERATORS)))  # n x 4
    value = 0.606 * np.exp(rng.normal(0.15, 0.25, size=n))
    work = 0.3 * np.exp(rng.normal(0.0, 0.5, size=n))
    skip_trn = rng.random(n) < no_trainium
    big = rng.random(n) < large_memory
    demand = rng.integers(1, max_demand + 1, size=n)

    h100 = ACCELERATORS.index("H100")
    trn = ACCELERATORS.index("Trainium")
    if not (kind == h100).any():
        big[:] = False  # large-memory jobs need an H100 pool to exist
    speed = speed_by_type[:, kind]  # n x m
    mask = np.ones((n, m), dtype=bool)
    mask[np.ix_(skip_trn, kind == trn)] = False
    mask[np.ix_(big, kind != h100)] = False

    price = np.array([BASE_PRICES[a] for a in ACCELERATORS])[kind]  # per pool
    util = round_values(value[:, None] * speed)
    extra = {"bid": util}
    if with_cost:
        extra["cost"] = round_values(work[:, None] / speed * price[None, :])

    pool_records = [
        {"id": pid, "count": k, "cluster": "gpu", "base_price": BASE_PRICES[ACCELERATORS[t]]}
        for pid, k, t in zip(pool_names, counts.tolist(), kind.tolist())
    ]
    names = agent_ids(n)
    agent_fields = [("demand", demand, None)]
    params = {"max_count": max_count, "no_trainium": no_trainium, "large_memory": large_memory,
              "with_cost": with_cost, "max_demand": max_demand, "rounds": rounds}
    description = (
        f"Seeded random instance, family 'neocloud' (laissez_opt.generate): {n} tenant jobs on {m} "
        f"pools cycling A10/L4/H100/Trainium, seed {seed}, {format_params(params)}. Setting of "
        f"LaissezCloud (HotOS'25, seed 000): base prices per device-hour A10 0.606 and Trainium 0.804 "
        f"(section 5), L4 0.48 (implied by Table 1 cost/time), H100 2.49 (assumed: low end of public "
        f"on-demand H100 prices). Speeds relative to A10 per job: L4 0.65-0.75 and Trainium 1.05-1.30 "
        f"(Table 1 ratios), H100 3-6 (assumed). Utility = bid = the job's value per device-hour "
        f"(0.606*exp(N(0.15,0.25)) per A10-hour of progress, times its speed)"
        + (
            "; cost = money to finish the job there (work 0.3*exp(N(0,0.5)) A10-hours / speed * base price)"
            if with_cost
            else ""
        )
        + ". A fraction no_trainium "
        f"of jobs cannot use Trainium (like App B); with an H100 pool a fraction large_memory needs "
        f"H100 only. Values rounded to 4 decimals."
    )
    return assemble(
        family="neocloud",
        agents=n,
        pools=m,
        seed=seed,
        description=description,
        rounds=rounds,
        pool_records=pool_records,
        agent_fields=agent_fields,
        agent_names=names,
        pool_names=pool_names,
        mask=mask,
        utility=util,
        edge_extra=extra,
    )


#: The same, as a plain dict of the instance format.
generate_neocloud = dict_output(draft_neocloud)

FAMILY = Family(
    name="neocloud",
    description="Tenant jobs bidding per device-hour for A10/L4/H100/Trainium pools (LaissezCloud).",
    func=draft_neocloud,
    params=DEFAULTS,
)
