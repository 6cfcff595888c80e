"""Family ``gemmini``: agents running neural-network inference on Gemmini
accelerators clocked at 2 GHz and 3 GHz, the simulated evaluation setting of the
Most-Token-First thesis (seed 002, chapter 5).

Source
------
Throughputs are the thesis's Table 5.1 (inferences per round of one Gemmini
accelerator), :data:`THROUGHPUTS`:

=================  ===========  ===========
workload           2 GHz        3 GHz
=================  ===========  ===========
ResNet conv        70.262       86.332
ResNet matmul      3.001        4.139
MobileNet conv     81.644       111.995
MobileNet WS       1.480        2.101
=================  ===========  ===========

Weight setups (thesis section 5.3), parameter ``weights``:

* ``"equal"``: every weight 1;
* ``"1-2"``: half the agents weight 1, half weight 2;
* ``"1-2-4"``: 50% weight 1, 25% weight 2, 25% weight 4;
* ``"1-2-8"``: 50% weight 1, 25% weight 2, 25% weight 8.

The shares are exact (25% of ``n`` rounded to the nearest integer, weight 1
for the rest) and the weights are shuffled over the agents with the seed.

Encoding
--------
* pools alternate ``Gemmini-2GHz-0, Gemmini-3GHz-1, Gemmini-2GHz-2, ...``; the
  thesis runs 20 agents on 40 accelerators, so by default the pools share
  ``devices_per_agent * agents`` devices as evenly as possible (20 agents on two
  pools: 20 devices each); cluster ``"gemmini"``, base price 0;
* each agent runs one workload, drawn uniformly from the four; it can use every
  pool; its utility is the workload's Table 5.1 throughput on the pool's clock;
* ``rounds`` (default 1): with more than one round each edge carries a
  per-round list, the same number in every round (the thesis's round-to-round
  variation comes from queues and arrivals, not from the throughputs);
* demand null (an agent spreads its jobs over any number of accelerators).

The thesis's queue model (Poisson arrivals with base rate 40 scaled by weight,
deadlines, a power-of-two-choices balancer, 300 rounds) is left to the
simulator; this family fixes only the static allocation problem.

Parameters (keyword, with defaults)
-----------------------------------
weights : "equal" | "1-2" | "1-2-4" | "1-2-8", default "equal"
rounds : int >= 1, default 1
devices_per_agent : int >= 1, default 2
"""

from __future__ import annotations

import numpy as np

from ._common import (
    Family,
    agent_ids,
    assemble,
    dict_output,
    check_int,
    cycled_pools,
    format_params,
)

__all__ = ["FAMILY", "THROUGHPUTS", "WEIGHT_SETUPS", "CLOCKS", "generate_gemmini", "draft_gemmini"]

#: Accelerator types in pool order.
CLOCKS = ("Gemmini-2GHz", "Gemmini-3GHz")

#: Workload -> (2 GHz, 3 GHz) throughput, thesis Table 5.1.
THROUGHPUTS: dict[str, tuple[float, float]] = {
    "ResNet conv": (70.262, 86.332),
    "ResNet matmul": (3.001, 4.139),
    "MobileNet conv": (81.644, 111.995),
    "MobileNet WS": (1.480, 2.101),
}

#: Weight setup -> ((weight, share), ...); weight 1 takes what is left.
WEIGHT_SETUPS: dict[str, tuple[tuple[float, float], ...]] = {
    "equal": (),
    "1-2": ((2.0, 0.5),),
    "1-2-4": ((2.0, 0.25), (4.0, 0.25)),
    "1-2-8": ((2.0, 0.25), (8.0, 0.25)),
}

DEFAULTS = {"weights": "equal", "rounds": 1, "devices_per_agent": 2}


def _weights(n: int, setup: str, rng: np.random.Generator) -> np.ndarray:
    if setup not in WEIGHT_SETUPS:
        raise ValueError(f"unknown weight setup {setup!r} (known: {', '.join(WEIGHT_SETUPS)})")
    w = np.ones(n)
    start = 0
    for weight, share in WEIGHT_SETUPS[setup]:
        k = int(np.floor(share * n + 0.5))
        w[start:start + k] = weight
        start += k
    return rng.permutation(w)


def _even_counts(total: int, m: int) -> list[int]:
    base, extra = divmod(total, m)
    return [max(1, base + (1 if c < extra else 0)) for c in range(m)]


def draft_gemmini(
    agents: int,
    pools: int,
    seed: int = 0,
    *,
    weights: str = "equal",
    rounds: int = 1,
    devices_per_agent: int = 2,
) -> dict:
    """A ``gemmini`` instance as whole columns, a :class:`~laissez_opt.generate._common.Draft` (see the module docstring)."""
    if not isinstance(weights, str):
        raise ValueError(f"weights must be one of {', '.join(WEIGHT_SETUPS)}, got {weights!r}")
    rounds = check_int(rounds, "rounds", 1)
    devices_per_agent = check_int(devices_per_agent, "devices_per_agent", 1)
    n, m = agents, pools
    rng = np.random.default_rng(seed)

    w = _weights(n, weights, rng)
    workloads = list(THROUGHPUTS)
    table = np.array([THROUGHPUTS[x] for x in workloads])  # 4 x 2
    job = rng.integers(0, len(workloads), size=n)
    pool_names, kind = cycled_pools(m, CLOCKS)
    util = table[job[:, None], kind[None, :]]  # n x m
    if rounds > 1:
        util = np.repeat(util[:, :, None], rounds, axis=2)
    mask = np.ones((n, m), dtype=bool)

    counts = _even_counts(devices_per_agent * n, m)
    pool_records = [
        {"id": pid, "count": k, "cluster": "gemmini", "base_price": 0.0}
        for pid, k in zip(pool_names, counts)
    ]
    names = agent_ids(n)
    agent_fields = [("weight", w, w != 1.0)]
    params = {"weights": weights, "rounds": rounds, "devices_per_agent": devices_per_agent}
    description = (
        f"Seeded random instance, family 'gemmini' (laissez_opt.generate): {n} agents on {m} pools "
        f"alternating Gemmini at 2 GHz / 3 GHz ({sum(counts)} accelerators), seed {seed}, "
        f"{format_params(params)}. Setting of the Most-Token-First thesis (seed 002, chapter 5): "
        f"each agent runs one of four inference workloads, drawn uniformly, and its utility on a pool "
        f"is the workload's throughput at that clock from Table 5.1 (ResNet conv 70.262/86.332, "
        f"ResNet matmul 3.001/4.139, MobileNet conv 81.644/111.995, MobileNet WS 1.480/2.101)"
        + (", the same in every round" if rounds > 1 else "")
        + f"; weights from the thesis setup '{weights}' (section 5.3), shuffled with the seed; "
        f"devices split evenly, devices_per_agent per agent; demand unbounded."
    )
    return assemble(
        family="gemmini",
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
    )


#: The same, as a plain dict of the instance format.
generate_gemmini = dict_output(draft_gemmini)

FAMILY = Family(
    name="gemmini",
    description="Inference agents on Gemmini at 2 GHz / 3 GHz with the MTF thesis's Table 5.1 throughputs.",
    func=draft_gemmini,
    params=DEFAULTS,
)
