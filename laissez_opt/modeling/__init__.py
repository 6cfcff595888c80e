"""Solver-neutral model declarations and their lowering to HiGHS, Pyomo and OR-Tools."""

from .linear import ConstraintBlock, LinearModel, Transportation, VariableBlock
from .solution import STATUSES, Duals, Solution, relative_gap
from .solve import ROUTES, SOLVERS, solve_model

__all__ = [
    "ConstraintBlock",
    "LinearModel",
    "Transportation",
    "VariableBlock",
    "STATUSES",
    "Solution",
    "Duals",
    "relative_gap",
    "ROUTES",
    "SOLVERS",
    "solve_model",
]
