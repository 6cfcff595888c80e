"""laissez_opt: exact allocation models for heterogeneous-accelerator clouds.

>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10")], agents=[lo.Agent("A")],
...                    edges=[lo.Edge("A", "A10", 1.5)])
>>> lo.solve(inst, "welfare").objective
1.5
"""

from .api import (
    build,
    certify,
    check,
    check_certificate,
    estimate,
    frontier,
    generate,
    linear_model,
    load,
    load_certificate,
    probe_truthfulness,
    solve,
    verify,
    write_model,
)
from .declare import Model, declared_method
from .errors import (
    InfeasibleError,
    InputError,
    LaissezOptError,
    NoSolutionError,
    NotProvenError,
    SolverUnavailableError,
    VerificationError,
)
from .instance import Agent, Edge, Instance, Pool
from .harness import compare
from .simulate import simulate
from .io import dumps_instance, instance_from_dict, instance_to_dict, save_instance
from .io.importers import import_data
from .method_spec import Option
from .methods import METHODS, register_method, unregister_method
from .result import Result

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Edge",
    "Instance",
    "Pool",
    "Result",
    "METHODS",
    "Model",
    "Option",
    "declared_method",
    "register_method",
    "unregister_method",
    "load",
    "compare",
    "simulate",
    "solve",
    "build",
    "linear_model",
    "write_model",
    "estimate",
    "generate",
    "verify",
    "check",
    "certify",
    "check_certificate",
    "load_certificate",
    "frontier",
    "probe_truthfulness",
    "dumps_instance",
    "instance_from_dict",
    "instance_to_dict",
    "save_instance",
    "import_data",
    "InfeasibleError",
    "InputError",
    "LaissezOptError",
    "NoSolutionError",
    "NotProvenError",
    "SolverUnavailableError",
    "VerificationError",
]
