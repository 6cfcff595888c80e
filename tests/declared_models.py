"""Models declared with ``lo.Model`` at the top level of a module, for tests that send them to other processes.

Functions defined inside a test cannot be pickled; a comparison with several
workers and a plugin need build functions that another process can import.
"""

from __future__ import annotations

import laissez_opt as lo
from laissez_opt.declare import budget, capacity, demand, welfare


def capped_welfare(instance, cap: int = 1):
    """Welfare with at most ``cap`` devices per agent and round."""
    m = lo.Model(instance, name="capped_welfare")
    m.add(capacity(m.x))
    m.add(demand(m.x))
    m.add(m.x.sum(by=("agent", "round")) <= cap, name="cap")
    m.maximize(welfare(m.x))
    return m


def frugal_welfare(instance, fractional: bool = False):
    """Welfare where every agent spends at most 0.5 per round-hour at the pools' base prices."""
    m = lo.Model(instance, name="frugal_welfare", integral=not fractional)
    m.add(capacity(m.x))
    m.add(demand(m.x))
    m.add(budget(m.x, 0.5))
    m.maximize(welfare(m.x))
    return m


#: What a plugin exports: a Method, named as its entry point.
CAPPED = lo.declared_method(
    "capped_welfare", capped_welfare, summary="welfare, at most cap devices per agent and round",
    options=(lo.Option("cap", "int", 1, "devices per agent and round", minimum=0),),
)
