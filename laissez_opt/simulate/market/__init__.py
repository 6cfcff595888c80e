"""The LaissezCloud exchange on the simulation engine (HotOS'25, seed 000; ``docs/market.md``).

* :mod:`~laissez_opt.simulate.market.exchange`: exchange tables, price setters, the
  work scheduler, checkpoints and migration, money (:class:`Exchange`);
* :mod:`~laissez_opt.simulate.market.agents`: the tenant-agent protocol and the
  paper's, truthful and static agents;
* :mod:`~laissez_opt.simulate.market.policy`: the ``market`` policy of the round engine.

>>> from laissez_opt.simulate.market import Exchange, paper_scenario
>>> [round(p, 3) for _, p in Exchange(*paper_scenario()).run().price_path("A10")]
[0.606, 0.686, 0.652, 0.606]
"""

from .agents import KEEP, STOP, Action, BaseAgent, PaperAgent, StaticAgent, TenantAgent, TruthfulAgent, load_agent, migrate, rebid
from .exchange import Exchange, MarketConfig, MarketOutcome, paper_scenario

__all__ = ["Exchange", "MarketConfig", "MarketOutcome", "paper_scenario", "Action", "KEEP", "STOP", "rebid",
           "migrate", "TenantAgent", "BaseAgent", "PaperAgent", "TruthfulAgent", "StaticAgent", "load_agent"]
