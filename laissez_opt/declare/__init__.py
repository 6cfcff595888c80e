"""Declare your own allocation model: ``lo.Model(instance)`` and the vocabulary of the field.

>>> import laissez_opt as lo
>>> from laissez_opt.declare import capacity, demand, budget, welfare
>>> inst = lo.load("instances/hotos25-table1.json")
>>> m = lo.Model(inst, name="budgeted")
>>> x = m.x                                   # devices per (agent, pool, round), on the edges
>>> _ = m.add(capacity(x)), m.add(demand(x))
>>> _ = m.add(budget(x, {"B": 0.5}))          # B spends at most 0.5 per round-hour
>>> m.maximize(welfare(x))
>>> result = m.solve()
>>> result.status, sorted((a["agent"], a["pool"]) for a in result.allocation)
('optimal', [('A', 'Trainium'), ('B', 'L4')])

See ``docs/modelling.md`` for the tutorial; the modules hold the reference:
:mod:`~laissez_opt.declare.model` (``Model``, objectives, solving, results),
:mod:`~laissez_opt.declare.expression` (expressions and constraints),
:mod:`~laissez_opt.declare.families` (utility, welfare, cost, value, share,
capacity, demand, budget, sharing incentive, envy-freeness, max-min floors,
migration cost), :mod:`~laissez_opt.declare.verify` (the independent check),
:mod:`~laissez_opt.declare.conflict` (explaining infeasibility) and
:mod:`~laissez_opt.declare.method` (a model as a method).
"""

from .expression import Constraint, Expression
from .families import (
    budget,
    capacity,
    cost,
    demand,
    envy_free,
    maxmin_floor,
    migration_cost,
    share,
    sharing_incentive,
    utility,
    value,
    welfare,
)
from .method import declared_method
from .model import DeclaredVariable, Model, Objective, maximize, minimize
from .verify import check_declaration

__all__ = [
    "Model",
    "Expression",
    "Constraint",
    "Objective",
    "DeclaredVariable",
    "maximize",
    "minimize",
    "utility",
    "welfare",
    "cost",
    "value",
    "share",
    "migration_cost",
    "capacity",
    "demand",
    "budget",
    "sharing_incentive",
    "envy_free",
    "maxmin_floor",
    "declared_method",
    "check_declaration",
]
