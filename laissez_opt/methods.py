"""The registry of methods: every exact model and heuristic behind one interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import InputError
from .exact.min_cost import solve_min_cost
from .exact.welfare import solve_welfare
from .heuristics.greedy import solve_greedy
from .instance import Instance
from .result import Result

__all__ = ["Method", "METHODS", "get_method"]


@dataclass(frozen=True)
class Method:
    """A method's name, kind, objective, solvers and entry point."""

    name: str
    kind: str  # "exact" or "heuristic"
    objective: str
    solvers: tuple[str, ...]
    fractional: bool
    summary: str
    run: Callable[..., Result]


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "welfare",
            "exact",
            "max sum_i w_i U_i (weighted welfare; Pareto-optimal matching)",
            ("highs", "ortools"),
            True,
            "Weighted welfare maximisation; integral optima via LP vertex or min-cost flow (TU).",
            solve_welfare,
        ),
        Method(
            "min_cost",
            "exact",
            "min sum cost_{i,c} y_{i,c}: place every required agent on one compatible pool",
            ("highs", "ortools"),
            False,
            "Minimum-cost placement of required agents (generalised assignment MIP).",
            solve_min_cost,
        ),
        Method(
            "greedy",
            "heuristic",
            "sum_i w_i U_i (no guarantee beyond 1/2 of the optimum)",
            (),
            False,
            "Each device to the agent valuing it most (weighted), per round.",
            solve_greedy,
        ),
    )
}


def get_method(name: str) -> Method:
    """The registered method ``name``; :class:`InputError` listing the known ones otherwise."""
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(
            f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}", path="--method"
        ) from None


def run_method(instance: Instance, name: str, **options) -> Result:
    """Run method ``name`` on ``instance`` with solver options (no verification)."""
    return get_method(name).run(instance, **options)
