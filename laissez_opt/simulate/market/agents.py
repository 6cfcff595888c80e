"""Tenant economic agents: the protocol the exchange calls, and three built-in agents.

LaissezCloud (HotOS'25, seed 000, sections 4.3 and 5) gives every tenant an
*economic agent*: code of the tenant that watches the exchange table and, at the
points where the job can move cheaply (its checkpoints), decides to keep its
device, re-bid, migrate or stop.  Here an agent is any object with the methods of
:class:`TenantAgent`; one object serves all tenants of a run that name it (the
tenant's state is passed in), so it should keep per-tenant memory keyed by
``tenant.id`` if it needs any.

The exchange calls

* ``launch_table(tenant, market)`` once, when the tenant's request arrives: the
  launch table, a list of ``(pool, max_price)`` in priority order (a max price per
  device-hour; pools missing from the list are never used);
* ``on_checkpoint(tenant, market)`` at each of the job's checkpoints (every
  ``checkpoint_ticks`` ticks on a device);
* ``on_price(tenant, market, pool, price)`` when the price of a pool in the
  tenant's launch table changes, only if the agent's ``on_price`` attribute is not
  ``None`` (the built-in agents do not listen: they re-decide at checkpoints).

Each hook returns an :class:`Action`: :data:`KEEP`, :func:`rebid` (a new launch
table), :func:`migrate` (put one pool first; the move happens at a checkpoint),
or :data:`STOP` (leave now; unfinished work is lost).

Built-in agents (``"paper"``, ``"truthful"``, ``"static"``):

* :class:`PaperAgent`, section 5: rank the compatible pools by the money to
  complete the job there at base prices (``C_c``, the edge's ``cost`` scaled by
  the remaining work, or the base price times the remaining hours); the max price
  for pool ``c_k`` is the break-even price against the next option,

  .. math:: b_{c_k} = \\frac{C_{c_{k+1}} \\cdot f + R_i b_{c_k}^0}{T_{c_k} \\cdot f},

  where ``f`` is the fraction of the job left, ``T_c`` the job's runtime on ``c``
  in hours, ``R_i`` its checkpoint-restart time in hours (``restart_hours``,
  priced at the pool's base price ``b^0``), counted only in the launch bid; the
  last pool's max price is its base price (the tenant accepts the posted price).
  At each checkpoint it recomputes the table without the restart term and
  re-bids if it changed.
* :class:`TruthfulAgent`: bids its true value per device-hour, ``V_i / T_c`` with
  ``V_i`` the job's value (``budget``, else 1.5 times its cheapest completion
  cost at base prices), pools ordered by value per money; never re-bids.
* :class:`StaticAgent`: the paper agent's launch table, never re-bids.

A user agent is a class with these methods (subclass :class:`BaseAgent` to inherit
the defaults), passed as a class or instance from Python, or named in a
configuration as ``"module:Class"`` (:func:`load_agent`).

Example
-------
>>> from laissez_opt.simulate.market.agents import BaseAgent, rebid, KEEP
>>> class Cheapskate(BaseAgent):
...     '''Bid the base price on every pool, cheapest first; never re-bid.'''
...     def launch_table(self, tenant, market):
...         pools = sorted(tenant.pools, key=market.base)
...         return [(p, market.base(p)) for p in pools]
>>> load_agent(Cheapskate).launch_table.__name__
'launch_table'
>>> load_agent("paper").name
'paper'
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...errors import InputError

__all__ = ["Action", "KEEP", "STOP", "rebid", "migrate", "TenantAgent", "BaseAgent", "PaperAgent",
           "TruthfulAgent", "StaticAgent", "BUILTIN_AGENTS", "load_agent", "paper_table"]


@dataclass(frozen=True)
class Action:
    """An agent's answer: ``kind`` in ``keep``, ``rebid``, ``migrate``, ``stop``; ``table`` or ``pool`` as needed."""

    kind: str
    table: tuple = ()
    pool: str | None = None


#: Keep the device and the launch table.
KEEP = Action("keep")
#: Leave the exchange now (release every device; the unfinished work is lost).
STOP = Action("stop")


def rebid(table) -> Action:
    """A new launch table ``[(pool, max_price), ...]`` in priority order.

    >>> rebid([("A10", 0.652), ("L4", 0.48)]).table
    (('A10', 0.652), ('L4', 0.48))
    """
    return Action("rebid", tuple((str(p), float(b)) for p, b in table))


def migrate(pool: str) -> Action:
    """Move ``pool`` to the head of the launch table (keeping its max price); the job moves at a checkpoint.

    >>> migrate("L4").pool
    'L4'
    """
    return Action("migrate", pool=str(pool))


@runtime_checkable
class TenantAgent(Protocol):
    """What the exchange calls (see the module docstring); ``on_price`` may be ``None``."""

    def launch_table(self, tenant, market) -> list: ...

    def on_checkpoint(self, tenant, market) -> Action: ...


class BaseAgent:
    """Defaults: no launch table of its own (the paper agent's), keep at checkpoints, no price events."""

    name = "base"
    #: Set to a method ``on_price(tenant, market, pool, price) -> Action`` to receive price events.
    on_price = None

    def launch_table(self, tenant, market) -> list:
        return paper_table(tenant, market, restart=True)

    def on_checkpoint(self, tenant, market) -> Action:
        return KEEP


def paper_table(tenant, market, *, restart: bool) -> list:
    """The section-5 launch table: pools by cost to complete, each priced at the break-even with the next.

    ``restart``: add the checkpoint-restart cost ``R_i b^0_c`` (the launch bid does).

    >>> from laissez_opt.simulate.market.exchange import paper_scenario, Exchange
    >>> ex = Exchange(*paper_scenario())
    >>> t = ex.tenant_view("A")
    >>> [(p, round(b, 4)) for p, b in paper_table(t, ex.market_view(), restart=True)]
    [('A10', 0.6857), ('Trainium', 0.8333), ('L4', 0.48)]
    """
    cost = {p: tenant.cost_to_complete(p) for p in tenant.pools}
    pools = sorted(cost, key=lambda p: (cost[p], p))
    table = []
    for k, pool in enumerate(pools):
        hours = tenant.hours_left(pool)
        if k + 1 < len(pools) and hours > 0:
            extra = tenant.restart_hours * market.base(pool) if restart else 0.0
            bid = (cost[pools[k + 1]] + extra) / hours
        else:
            bid = market.base(pool)
        table.append((pool, bid))
    return table


class PaperAgent(BaseAgent):
    """The section-5 agent: break-even bids against the next best pool; re-bids at checkpoints."""

    name = "paper"

    def launch_table(self, tenant, market) -> list:
        return paper_table(tenant, market, restart=True)

    def on_checkpoint(self, tenant, market) -> Action:
        if tenant.remaining <= 0:
            return KEEP
        table = paper_table(tenant, market, restart=False)
        current = tenant.table
        if len(table) == len(current) and all(p == q and abs(a - b) <= 1e-12 * max(1.0, abs(a))
                                              for (p, a), (q, b) in zip(table, current)):
            return KEEP
        return rebid(table)


class StaticAgent(PaperAgent):
    """The paper agent's launch table, never re-bid (a tenant without an economic agent)."""

    name = "static"

    def on_checkpoint(self, tenant, market) -> Action:
        return KEEP


class TruthfulAgent(BaseAgent):
    """Bids the job's true value per device-hour ``V_i / T_c`` on every compatible pool; never re-bids."""

    name = "truthful"

    def launch_table(self, tenant, market) -> list:
        value = tenant.value
        rows = []
        for pool in tenant.pools:
            hours = tenant.hours_left(pool)
            rows.append((pool, value / hours if hours > 0 else 0.0))
        # Most value per unit of money at base price first (= cheapest completion first).
        rows.sort(key=lambda pb: (tenant.cost_to_complete(pb[0]), pb[0]))
        return rows


#: Names of the built-in agents.
BUILTIN_AGENTS = {"paper": PaperAgent, "truthful": TruthfulAgent, "static": StaticAgent}


def load_agent(spec, *, where: str = "agent"):
    """An agent object from a built-in name, a ``"module:Class"`` string, a class or an instance.

    A class is instantiated without arguments.  Errors are one-line :class:`InputError` naming ``where``.

    >>> load_agent("static").name
    'static'
    >>> load_agent("no_such_module_xyz:Agent")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: agent: cannot import module 'no_such_module_xyz' for agent 'no_such_module_xyz:Agent'
    """
    if isinstance(spec, str):
        if spec in BUILTIN_AGENTS:
            return BUILTIN_AGENTS[spec]()
        if ":" not in spec:
            raise InputError(f"unknown agent {spec!r}; give one of {', '.join(BUILTIN_AGENTS)} or 'module:Class'",
                             path=where)
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception:
            raise InputError(f"cannot import module {module_name!r} for agent {spec!r}", path=where) from None
        target = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise InputError(f"module {module_name!r} has no attribute {attr!r} (agent {spec!r})", path=where)
        spec = target
    if inspect.isclass(spec):
        try:
            spec = spec()
        except Exception as exc:
            raise InputError(f"cannot create agent {spec.__name__}: {exc}", path=where) from None
    if not callable(getattr(spec, "launch_table", None)) or not callable(getattr(spec, "on_checkpoint", None)):
        raise InputError(f"agent {spec!r} lacks launch_table(tenant, market) and on_checkpoint(tenant, market)",
                         path=where)
    return spec
