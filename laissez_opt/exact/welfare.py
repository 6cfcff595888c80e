"""Weighted welfare maximisation (Pareto-optimal matching), ``models.md`` item 1.

.. math::

    \\max_x \\sum_i w_i U_i(x), \\qquad U_i(x) = \\sum_{c,r} u_{i,c,r}\\, x_{i,c,r}

subject to the shared feasibility constraints (:mod:`laissez_opt.exact.common`):
``capacity`` ``sum_i x[i,c,r] <= k_c``, ``demand`` ``sum_c x[i,c,r] <= d_i``,
``x >= 0`` on edges, integral or fractional.

With every ``w_i > 0`` each optimum is Pareto-optimal (a Pareto improvement
would raise the weighted sum).  With unit demand and single devices it is the
weighted bipartite matching (assignment) problem; in general a weighted
b-matching.  The constraint matrix is the incidence matrix of a bipartite
graph, so the LP relaxation has integral vertices: integral and fractional
optima have the same value, and routes solve the integral model as an LP or a
min-cost flow (see ``models/welfare.md``).

Prices: the LP's duals of the ``capacity`` rows are Walrasian (market-clearing)
prices per pool and round, in units of weighted utility per device
(``details["prices"]``, from the routes that solve an LP with duals: HiGHS,
GLOP, Pyomo's HiGHS; :func:`~laissez_opt.exact.common.capacity_prices`).

References: thesis 002, eq. 3.6 (Pareto efficiency); Shapley & Shubik (1971)
(the assignment game's prices are the LP's duals); Kuhn (1955) and
Ahuja, Magnanti & Orlin, *Network Flows* (1993), ch. 9-11 (assignment, min-cost flow).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10", count=1)],
...                    agents=[lo.Agent("A"), lo.Agent("B")],
...                    edges=[lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)])
>>> result = lo.solve(inst, "welfare")
>>> result.status, result.objective, result.allocation[0]["agent"]
('optimal', 0.9, 'A')
"""

from __future__ import annotations

import numpy as np

from ..declare import Model, capacity, demand, welfare
from ..errors import InputError
from ..instance import Instance
from ..modeling import LinearModel, solve_model
from ..method_spec import Method, partition_options, refuse_partitions, solver_options
from ..result import Result
from ..starts import greedy_amounts
from .classes import COMPRESS_CHOICES, class_estimate, compress_option, solve_on_classes
from .common import (AllocationColumns, allocation_result, allocation_size, capacity_prices, flow_route_size,
                     takes_flow_route)

__all__ = ["build_welfare", "solve_welfare", "market_prices"]


def build_welfare(instance: Instance, *, fractional: bool = False) -> tuple[LinearModel, AllocationColumns]:
    """Declare the welfare model; returns ``(lowered model, allocation columns)``.

    Declared with the public modelling API (:class:`laissez_opt.Model`); the
    lowering detects the transportation structure of ``demand`` and
    ``capacity`` that the routes exploit.
    """
    m = Model(instance, name="welfare", integral=not fractional)
    m.add(demand(m.x))
    m.add(capacity(m.x))
    m.maximize(welfare(m.x))
    model = m.lower()
    return model, AllocationColumns(instance, model.variables["x"])


def solve_welfare(
    instance: Instance,
    *,
    fractional: bool = False,
    solver: str = "auto",
    via: str = "direct",
    time_limit: float | None = None,
    threads: int | None = None,
    mip_gap: float = 1e-7,
    verbose: bool = False,
    backend: str | None = None,
    compress: str = "auto",
    partitions=None,
    partition_seed: int = 0,
    capacity_split: str = "equal",
    executor: str = "inline",
    workers: int | None = None,
    scheduler: str | None = None,
) -> Result:
    """Maximise ``sum_i w_i U_i(x)``; see the module docstring.

    ``partitions``, ``partition_seed``, ``capacity_split``, ``executor``, ``workers``, ``scheduler``: the
    partitioned solve of ``lo.solve`` (:mod:`laissez_opt.partition`); this entry point
    solves the whole instance and refuses ``partitions``.

    ``compress``: solve on classes of agents with identical edges, weight, demand
    and window (:mod:`laissez_opt.exact.classes`): class ``g`` has weight ``w`` and
    demand ``n_g d`` (``n_g floor(d)`` integral), so ``sum_g w U_g`` is the welfare of
    the expanded allocation; integral class optima expand to integral optima by
    dealing each class's devices round robin (``models/compression.md``).

    ``solver="auto"`` (default) takes the fastest exact route
    (:func:`laissez_opt.modeling.solve.pick_route`: OR-Tools min-cost flow when the
    costs scale exactly, else HiGHS; ``details["route_choice"]`` says which and
    why).  Capacity prices (``details["prices"]``, the LP duals) come with an
    explicit ``solver="highs"`` (the flow solver reports no duals).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=3)], agents=[lo.Agent(a) for a in "ABCD"],
    ...                    edges=[lo.Edge(a, "P", 1.0) for a in "ABCD"])
    >>> r = solve_welfare(inst, compress="on")
    >>> r.objective, r.details["compression"]["classes"], [x["agent"] for x in r.allocation]
    (3.0, 1, ['A', 'B', 'C'])
    """
    refuse_partitions("welfare", partitions)
    if compress not in COMPRESS_CHOICES:
        raise InputError(f"unknown compress {compress!r}; choose one of {', '.join(COMPRESS_CHOICES)}",
                         path="option compress")
    run = lambda small, classes: solve_welfare(  # noqa: E731
        small, fractional=fractional, solver=solver, via=via, time_limit=time_limit, threads=threads,
        mip_gap=mip_gap, verbose=verbose, backend=backend, compress="off")
    out = solve_on_classes(instance, compress, run, weight="member", integral=not fractional)
    if out is not None:
        return out
    model, columns = build_welfare(instance, fractional=fractional)
    # The greedy allocation is the incumbent should the time limit stop the solver first.
    start = (lambda: greedy_amounts(instance, watch_deadline=False).reshape(-1)) if time_limit is not None else None
    solution = solve_model(model, solver=solver, via=via, time_limit=time_limit, threads=threads,
                           mip_gap=mip_gap, verbose=verbose, backend=backend, start=start,
                           duals=solver != "auto")
    params = {"time_limit": time_limit, "fractional": fractional, "via": via}
    prices = capacity_prices(instance, model, None if solution.duals is None else solution.duals.row)
    details = {"prices": prices} if prices is not None else {}
    if "route_choice" in (solution.details or {}):
        details["route_choice"] = solution.details["route_choice"]
    return allocation_result(instance, "welfare", columns, solution, fractional=fractional, params=params,
                             details=details)


def market_prices(instance: Instance) -> dict | None:
    """Walrasian prices of ``instance``: the capacity duals of the welfare LP (weighted utility per device).

    One LP solve with HiGHS; see :func:`~laissez_opt.exact.common.capacity_prices`.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2), lo.Pool("Q")], [lo.Agent("A", demand=1), lo.Agent("B", demand=1)],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5), lo.Edge("B", "Q", 0.2)])
    >>> market_prices(inst)      # P has a device to spare and Q is unsold: both free
    {'P': 0.0, 'Q': 0.0}
    """
    model, _ = build_welfare(instance, fractional=True)
    solution = solve_model(model, duals=True)
    return capacity_prices(instance, model, None if solution.duals is None else solution.duals.row)


def welfare_size(instance: Instance, options: dict):
    """Size of a welfare solve on the route it will take.

    On the min-cost flow (``solver="auto"`` when the weighted utilities scale
    exactly to integers, or ``"ortools"``) a run holds
    about 264 B per edge-round (187 to 215 measured beyond the instance); on
    HiGHS, the LP's columns, rows and non-zeros (:func:`allocation_size`).

    >>> import laissez_opt as lo
    >>> inst = lo.generate("uniform", 200, 20, seed=1)
    >>> welfare_size(inst, {}).bytes() < welfare_size(inst, {"solver": "highs"}).bytes()
    True
    """
    costs = lambda: instance.weights[instance.edge_agent][:, None] * instance.edge_utility  # noqa: E731
    if takes_flow_route(instance, options, costs):
        return flow_route_size(instance, "min-cost flow route: one arc per edge-round")
    return allocation_size(instance, options)


def _export_model(instance: Instance, options: dict) -> LinearModel:
    """The model ``lo.build(instance, "welfare", fractional=...)`` exports."""
    return build_welfare(instance, fractional=bool(options.get("fractional")))[0]


METHOD = Method(
    name="welfare",
    kind="exact",
    objective="max sum_i w_i U_i (weighted welfare; Pareto-optimal matching)",
    solvers=("highs", "ortools"),
    fractional=True,
    summary="Weighted welfare maximisation; integral optima via LP vertex or min-cost flow (TU).",
    run=solve_welfare,
    options=solver_options(fractional=True, auto=True) + (compress_option(),) + partition_options(),
    estimate=class_estimate(welfare_size, applies=lambda instance, options: True, weight="member",
                            integral=lambda options: not options.get("fractional")),
    build=_export_model,
)
