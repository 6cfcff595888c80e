"""Incentives: does a tenant gain by misreporting its launch table?

Each tenant ``i`` has a true value ``V_i`` for finishing its job (``MarketConfig.value``);
its truthful launch table bids ``V_i / T_{i,c}`` per device-hour on every compatible
pool ``c`` (the highest hourly price at which finishing there is still worth it),
cheapest completion first (:class:`~laissez_opt.simulate.market.agents.TruthfulAgent`).
Its quasi-linear utility from a run is

.. math:: U_i = V_i [\\text{job done}] - \\text{payments}_i .

:func:`probe` keeps everyone else truthful and tries, for one tenant, every
misreport of a small family: the truthful table with all bids scaled by each factor,
and every other priority order of its pools (truthful bids), each submitted once and
never revised.  A misreport is *profitable* when it raises ``U_i`` by more than
``1e-9``.

In a one-shot second-price auction (everyone arrives at once, one device, losers
time out before the device frees up) truth-telling is dominant (Vickrey 1961), and
the probe finds nothing.  In the dynamic exchange it is not: a holder that is
outbid loses its device at its next checkpoint and with it the value of the job,
so overbidding to keep the device can pay; a tenant may also gain by bidding low
to wait for a cheaper moment.  ``docs/market.md`` shows an example.

>>> from laissez_opt.instance import Agent, Edge, Instance, Pool
>>> inst = Instance([Pool("P", base_price=0.1)], [Agent(t, work=1.0) for t in "XYZ"],
...                 [Edge(t, "P", 0.5) for t in "XYZ"], rounds=4)
>>> cfg = MarketConfig(timeout_ticks=1, value={"X": 2.0, "Y": 3.0, "Z": 1.0})
>>> [row for row in probe(inst, cfg, "Y") if row["profitable"]]
[]
"""

from __future__ import annotations

import copy
import itertools

from .agents import BaseAgent
from .exchange import Exchange, MarketConfig

__all__ = ["FixedTable", "probe", "utility", "FACTORS"]

#: Bid scale factors tried by :func:`probe`.
FACTORS = (0.25, 0.5, 0.75, 0.9, 1.1, 1.25, 1.5, 2.0, 4.0)


class FixedTable(BaseAgent):
    """An agent that submits one given launch table and never revises it."""

    name = "fixed"

    def __init__(self, table):
        self.table = [(str(p), float(b)) for p, b in table]

    def launch_table(self, tenant, market):
        return list(self.table)


def utility(outcome, tenant: str, value: float) -> float:
    """``U_i = V_i [done] - payments_i`` from a run's outcome."""
    row = next(r for r in outcome.tenants if r["tenant"] == tenant)
    return (value if row["status"] == "done" else 0.0) - outcome.payments[tenant]


def _truthful_table(ex: Exchange, tenant: str) -> list:
    from .agents import TruthfulAgent

    return TruthfulAgent().launch_table(ex.tenant_view(tenant), ex.market_view())


def probe(instance, config: MarketConfig, tenant: str, *, factors=FACTORS, orders: bool = True) -> list:
    """Every misreport of ``tenant`` tried against truthful others: rows with its utility and the gain.

    ``config.value`` gives the true values (default 1.5 times the cheapest completion
    cost); every agent is truthful except the probed tenant's misreport.
    """
    base_cfg = copy.deepcopy(config)
    base_cfg.agent = "truthful"
    truthful = Exchange(instance, base_cfg, record_events=False)
    value = truthful.tenants[truthful.tenant_index[tenant]].value
    table = _truthful_table(truthful, tenant)
    u0 = utility(truthful.run(), tenant, value)
    reports = [("truthful", table)]
    reports += [(f"scale x{f:g}", [(p, b * f) for p, b in table]) for f in factors]
    if orders and len(table) > 1:
        for perm in itertools.permutations(table):
            if list(perm) != table:
                reports.append(("order " + ">".join(p for p, _ in perm), list(perm)))
    rows = []
    for label, report in reports:
        cfg = copy.deepcopy(config)
        cfg.agent = {"*": "truthful", tenant: FixedTable(report)}
        u = utility(Exchange(instance, cfg, record_events=False).run(), tenant, value)
        rows.append({"tenant": tenant, "report": label, "table": report, "utility": u, "truthful_utility": u0,
                     "gain": u - u0, "profitable": u > u0 + 1e-9})
    return rows
