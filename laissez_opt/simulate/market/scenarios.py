"""Market scenarios: the paper's section-5 run as a simulation configuration.

:func:`section5_config` is the ``hotos25-section5`` preset: the instance of
:func:`~laissez_opt.simulate.market.exchange.paper_scenario` (Table 1, one-minute
ticks, one A10, eight L4 and eight Trainium, 5 s reload) with App B's job arriving
in round 0 and App A's in round 5, run by the ``market`` policy with the paper's
agents.

>>> cfg = section5_config()
>>> cfg["policies"][0]["options"]["checkpoint_ticks"], cfg["rounds"]
({'B': 7, 'A': 6}, 30)
"""

from __future__ import annotations

from .exchange import paper_scenario

__all__ = ["section5_config", "instance_dict", "SECTION5_QUOTED"]

#: The paper's quoted numbers (section 5): bids and prices per device-hour.
SECTION5_QUOTED = {"bid_A": 0.687, "bid_B": 0.762, "rebid_B": 0.652, "base_A10": 0.606, "base_Trainium": 0.804}


def instance_dict(instance, arrivals: dict | None = None) -> dict:
    """An instance as the file format's dict; ``arrivals``: ``{agent: [jobs per round]}`` (engine arrivals).

    >>> from laissez_opt.simulate.market.exchange import paper_scenario
    >>> instance_dict(paper_scenario()[0])["pools"][0]
    {'id': 'A10', 'count': 1, 'cluster': 'gpu', 'base_price': 0.606}
    """
    arrivals = arrivals or {}
    agents = []
    for a in instance.agents:
        row = {"id": a.id, "demand": 1, "work": a.work, "arrival": a.arrival, "deadline": a.deadline,
               "migration_cost": a.migration_cost}
        if a.id in arrivals:
            row["arrivals"] = list(arrivals[a.id])
        agents.append(row)
    edges = []
    for e in instance.edges:
        row = {"agent": e.agent, "pool": e.pool, "utility": e.utility}
        if e.cost is not None:
            row["cost"] = e.cost
        edges.append(row)
    return {"format": "laissez-opt/instance", "version": 1, "name": instance.name,
            "rounds": instance.rounds, "round_hours": instance.round_hours,
            "pools": [{"id": p.id, "count": p.count, "cluster": p.cluster, "base_price": p.base_price}
                      for p in instance.pools],
            "agents": agents, "edges": edges}


def section5_config(*, restart_minutes: float = 2.5, checkpoint_a: int = 6, checkpoint_b: int = 7) -> dict:
    """The ``hotos25-section5`` simulation configuration (see the module docstring and ``docs/market.md``)."""
    inst, cfg = paper_scenario(restart_minutes=restart_minutes, checkpoint_a=checkpoint_a, checkpoint_b=checkpoint_b)
    arrivals = {a.id: [0.0] * a.arrival + [a.work] + [0.0] * (inst.rounds - a.arrival - 1) for a in inst.agents}
    return {
        "format": "laissez-opt/simulation",
        "version": 1,
        "name": "hotos25-section5",
        "description": "LaissezCloud (HotOS'25) section 5: App B launched at minute 0, App A requested at minute 5; "
                       "Table 1 times and costs; one A10 (base 0.606/h), L4 (0.48/h) and Trainium (0.804/h) "
                       "plentiful; one-minute ticks; the paper's economic agents on a second-price exchange.",
        "instance": instance_dict(inst, arrivals),
        "rounds": 30,
        "round_hours": 1.0 / 60.0,
        "seeds": 1,
        "policies": [{"name": "market", "method": "market", "options": {
            "price_rule": cfg.price_rule, "checkpoint_ticks": dict(cfg.checkpoint_ticks),
            "restart_hours": dict(cfg.restart_hours), "agent": "paper"}},
            {"name": "fcfs_static", "method": "replay", "options": {"method": "fcfs_static"}},
            {"name": "myopic", "method": "replay", "options": {"method": "myopic"}},
            {"name": "optimum", "method": "optimum", "options": {}}],
        "workload": {"arrivals": "instance"},
        "balancer": "pooled",
        "record_events": True,
    }
