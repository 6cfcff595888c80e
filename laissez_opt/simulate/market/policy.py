"""The ``market`` policy: the LaissezCloud exchange driving the round engine.

Each engine round is one exchange tick (``round_hours``: set it to the tick, 1/60 for
minutes).  In round ``r`` the policy hands the round's new work to the exchange as
requests (one tenant per agent; more work for an active tenant extends its job),
advances the exchange to tick ``r`` (its own events: checkpoints, completions,
time-outs, clearings; see :mod:`~laissez_opt.simulate.market.exchange`) and returns

* ``amounts``: for every running tenant, the fraction of the tick its device
  computes (1, or less in the tick of a reload), so the engine serves exactly the
  work the exchange accounts for; reserved devices and reload time are held and
  paid but not served;
* ``payments``: the money each tenant owes for the tick (price, or own bid when
  outbid, per device-hour held);
* ``prices``: every pool's price after the tick's clearing;
* ``events``: the exchange's events of the tick (requests, bids, starts,
  reservations, migrations, prices, checkpoints, evictions, completions).

Options (all declared here, checked by :class:`~laissez_opt.simulate.market.exchange.MarketConfig`):
``price_rule`` (``second``, ``posted``, ``vcg``), ``checkpoint_ticks``, ``timeout_ticks``,
``preemption``, ``restart_hours``, ``agent``, ``value``.

Example
-------
>>> import laissez_opt as lo
>>> res = lo.simulate(preset="hotos25-section5", policies=["market"], progress=False)
>>> [(e["round"], round(e["price"], 3)) for e in res.run("market", 0).events
...  if e["kind"] == "price" and e.get("pool") == "A10" and e.get("source") == "exchange"]
[(5, 0.686), (7, 0.652), (17, 0.606)]
"""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..policies import Decision, Policy, RoundView
from .exchange import Exchange, MarketConfig

__all__ = ["MarketPolicy"]


class MarketPolicy(Policy):
    """The exchange as a round-engine policy (see the module docstring)."""

    name = "market"
    summary = "the LaissezCloud exchange: tenant agents bid for devices on a tick clock, cleared by price_rule"
    needs_verification = True

    def __init__(self, price_rule: str = "second", checkpoint_ticks=1, timeout_ticks: int | None = None,
                 preemption: str = "checkpoint", restart_hours: dict | None = None, agent="paper",
                 value: dict | None = None):
        self.config = MarketConfig(price_rule=price_rule, checkpoint_ticks=checkpoint_ticks,
                                   timeout_ticks=timeout_ticks, preemption=preemption,
                                   restart_hours=dict(restart_hours or {}), agent=agent, value=dict(value or {}))
        try:
            self.config.check(where="market")
        except InputError as err:
            raise InputError(err.problem, path=f"$.policies[market].options.{err.path.split('.', 1)[1]}") from None
        self.exchange: Exchange | None = None

    def start(self, base, seed: int) -> None:
        self.base = base
        self.exchange = None
        self._paid: dict = {}
        self._events_seen = 0
        self._prices: dict = {}
        edge_of = {}
        for e, (i, c) in enumerate(zip(base.edge_agent.tolist(), base.edge_pool.tolist())):
            edge_of[(i, c)] = e
        self._edge_of = edge_of

    def _ensure(self, view: RoundView) -> Exchange:
        if self.exchange is None:
            hours = view.base.round_hours
            # The engine's tick may differ from the instance's round: throughputs scale with it.
            scale = float(view.work_per_device[0] / view.base.edge_utility[0, 0]) if view.base.n_edges and \
                view.base.edge_utility[0, 0] > 0 else 1.0
            tick_hours = hours * scale
            try:
                self.exchange = Exchange(view.base, self.config, external_arrivals=True, tick_hours=tick_hours,
                                         rate_scale=scale)
            except InputError as err:
                where = (err.path or "market").split(".", 1)
                raise InputError(err.problem, path=f"$.policies[{self.name}].options"
                                 + (f".{where[1]}" if len(where) > 1 else "")) from None
        return self.exchange

    def decide(self, view: RoundView) -> Decision:
        ex = self._ensure(view)
        r = view.round
        for i in np.nonzero(view.arrived > 0)[0].tolist():
            ex.submit(view.base.agents[i].id, float(view.arrived[i]), r)
        ex.advance(r)
        n_edges = view.instance.n_edges
        amounts = np.zeros(n_edges)
        for i, c, frac in ex.computing(r):
            e = self._edge_of.get((i, c))
            if e is not None and view.backlog[i] > 0:  # the engine's queue decides what is left to serve
                amounts[e] = frac
        # Money of the tick [r, r + 1): accrued up to r + 1 minus what was reported.
        ex.now = r + 1
        accrued = ex.accrued(changed_only=True)
        ex.now = r
        payments = {}
        for agent, money in accrued.items():
            delta = money - self._paid.get(agent, 0.0)
            if abs(delta) > 0:
                payments[agent] = delta
                self._paid[agent] = money
        events = []
        for e in ex.events[self._events_seen:]:
            record = {k: v for k, v in e.items() if k not in ("tick", "minute")}
            record["time"] = 0.0  # exchange events happen at the tick boundary
            record["source"] = "exchange"
            events.append(record)
        self._events_seen = len(ex.events)
        # Prices in the engine's log only when they change (the exchange's own price events say why).
        prices = {q.id: q.price for q in ex.pools if self._prices.get(q.id) != q.price}
        self._prices.update(prices)
        integral = bool(np.all(np.abs(amounts - np.round(amounts)) < 1e-12))
        return Decision(amounts, "integral" if integral else "fractional", payments=payments, prices=prices,
                        events=events)
