"""laissez_opt: exact allocation models for heterogeneous-accelerator clouds.

>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10")], agents=[lo.Agent("A")],
...                    edges=[lo.Edge("A", "A10", 1.5)])
>>> lo.solve(inst, "welfare").objective
1.5
"""

import sys as _sys
from importlib import import_module as _import_module
from types import ModuleType as _ModuleType

# Names are imported on first use (PEP 562), so that ``import laissez_opt`` and
# ``laissez-opt --help`` do not load the solvers, numba and every method module.
_WHERE = {
    **dict.fromkeys(("build", "certify", "check", "check_certificate", "estimate", "frontier", "generate",
                     "linear_model", "load", "load_certificate", "probe_truthfulness", "verify",
                     "write_model"), ".api"),
    "Model": ".declare", "declared_method": ".declare", "value": ".declare",
    **dict.fromkeys(("InfeasibleError", "InputError", "LaissezOptError", "NoSolutionError", "NotProvenError",
                     "SolverUnavailableError", "VerificationError"), ".errors"),
    **dict.fromkeys(("Agent", "Edge", "Instance", "Pool"), ".instance"),
    "compare": ".harness",
    "simulate": ".simulate",
    "reproduce": ".reproduce",
    **dict.fromkeys(("dumps_instance", "instance_from_dict", "instance_to_dict", "save_instance"), ".io"),
    "Option": ".method_spec",
    **dict.fromkeys(("METHODS", "register_method", "unregister_method"), ".methods"),
    "Result": ".result",
    "solve": ".partition",
    "import_data": ".io.importers",
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'laissez_opt' has no attribute {name!r}")
    value = getattr(_import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


class _Package(_ModuleType):
    """``lo.generate``, ``lo.simulate`` and ``lo.reproduce`` stay the functions once their subpackages of the same names load."""

    def __setattr__(self, name, value):
        if isinstance(value, _ModuleType) and name in _WHERE:
            return  # the import system binding the subpackage: the function of that name wins, as it always did
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


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
    "reproduce",
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
