"""laissez_opt: exact allocation models for heterogeneous-accelerator clouds.

>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10")], agents=[lo.Agent("A")],
...                    edges=[lo.Edge("A", "A10", 1.5)])
>>> lo.solve(inst, "welfare").objective
1.5
"""

from .api import check, generate, load, solve, verify
from .errors import (
    InfeasibleError,
    InputError,
    LaissezOptError,
    NoSolutionError,
    SolverUnavailableError,
    VerificationError,
)
from .instance import Agent, Edge, Instance, Pool
from .harness import compare
from .simulate import simulate
from .io import dumps_instance, instance_from_dict, instance_to_dict, save_instance
from .methods import METHODS
from .result import Result

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Edge",
    "Instance",
    "Pool",
    "Result",
    "METHODS",
    "load",
    "compare",
    "simulate",
    "solve",
    "generate",
    "verify",
    "check",
    "dumps_instance",
    "instance_from_dict",
    "instance_to_dict",
    "save_instance",
    "InfeasibleError",
    "InputError",
    "LaissezOptError",
    "NoSolutionError",
    "SolverUnavailableError",
    "VerificationError",
]
