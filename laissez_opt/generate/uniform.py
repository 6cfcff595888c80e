"""Family ``uniform``: random utilities on a sparse random compatibility graph.

A neutral stress family with no hardware behind it, for testing models and
heuristics on shapes the published examples do not cover.

Construction (all draws from ``numpy.random.default_rng(seed)``):

* pools ``acc-0 .. acc-{m-1}``, each with ``count`` drawn uniformly from
  ``1..max_count``, base price 0;
* each (agent, pool) pair is compatible with probability ``density``; an agent
  left without a pool gets one pool chosen uniformly, so every agent has at
  least one edge;
* each edge's utility is uniform on (0, 1], rounded to 4 decimal places (never
  below 0.0001); with ``rounds > 1`` every round gets its own independent draw
  (a per-round list on the edge);
* weights are all 1 (omitted); each agent's demand is null (unbounded) with
  probability 1/2 and otherwise uniform on ``1..max_demand``.

Parameters (keyword, with defaults)
-----------------------------------
density : float in (0, 1], default 0.3
    Probability that a given agent can use a given pool.
max_count : int >= 1, default 4
    Largest number of identical devices in a pool.
max_demand : int >= 1 or None, default 3
    Largest finite demand; ``None`` makes every demand null.
rounds : int >= 1, default 1
    Number of rounds; above 1 utilities become per-round lists.
"""

from __future__ import annotations

import numpy as np

from ._common import (
    Family,
    agent_ids,
    assemble,
    dict_output,
    check_fraction,
    check_int,
    format_params,
    round_values,
)

__all__ = ["FAMILY", "generate_uniform", "draft_uniform"]

DEFAULTS = {"density": 0.3, "max_count": 4, "max_demand": 3, "rounds": 1}


def draft_uniform(
    agents: int,
    pools: int,
    seed: int = 0,
    *,
    density: float = 0.3,
    max_count: int = 4,
    max_demand: int | None = 3,
    rounds: int = 1,
) -> dict:
    """A ``uniform`` instance as whole columns, a :class:`~laissez_opt.generate._common.Draft` (see the module docstring)."""
    density = check_fraction(density, "density", allow_zero=False)
    max_count = check_int(max_count, "max_count", 1)
    if max_demand is not None:
        max_demand = check_int(max_demand, "max_demand", 1)
    rounds = check_int(rounds, "rounds", 1)
    n, m = agents, pools
    rng = np.random.default_rng(seed)

    counts = rng.integers(1, max_count + 1, size=m)
    mask = rng.random((n, m)) < density
    lonely = np.flatnonzero(~mask.any(axis=1))
    if lonely.size:
        mask[lonely, rng.integers(0, m, size=lonely.size)] = True
    # 1 - U[0, 1) lies in (0, 1].
    util = round_values(1.0 - rng.random((n, m, rounds)))
    if rounds == 1:
        util = util[:, :, 0]
    finite = rng.random(n) >= 0.5
    demand = rng.integers(1, (max_demand or 1) + 1, size=n)

    pool_names = [f"acc-{c}" for c in range(m)]
    pool_records = [
        {"id": pid, "count": k, "base_price": 0.0} for pid, k in zip(pool_names, counts.tolist())
    ]
    names = agent_ids(n)
    agent_fields = [] if max_demand is None else [("demand", demand, finite)]
    params = {"density": density, "max_count": max_count, "max_demand": max_demand, "rounds": rounds}
    description = (
        f"Seeded random instance, family 'uniform' (laissez_opt.generate): {n} agents, {m} pools, "
        f"seed {seed}, {format_params(params)}. Synthetic, no published source: each agent-pool pair "
        f"is compatible with probability density (every agent keeps at least one pool), utilities "
        f"are uniform on (0, 1] rounded to 4 decimals"
        + (", drawn independently for each round" if rounds > 1 else "")
        + ", pool counts uniform on 1..max_count, weights 1, demand null or uniform on 1..max_demand."
    )
    return assemble(
        family="uniform",
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
generate_uniform = dict_output(draft_uniform)

FAMILY = Family(
    name="uniform",
    description="Synthetic: uniform (0, 1] utilities on a sparse random compatibility graph.",
    func=draft_uniform,
    params=DEFAULTS,
)
