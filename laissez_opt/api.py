"""The Python API: ``lo.load``, ``lo.solve``, ``lo.generate``, ``lo.verify``.

Everything the command line does is one call away here.
"""

from __future__ import annotations

import os
import time

from .analysis.metrics import basic_metrics
from .analysis.verify import Verification, verify
from .errors import InfeasibleError, InputError, SolverUnavailableError, VerificationError
# Imported here, not lazily inside generate(): importing the ``laissez_opt.generate``
# subpackage binds it as an attribute of the package, and done after ``laissez_opt``
# bound this module's ``generate`` function it would replace ``lo.generate``.
from .generate import generate as _generate_family
from .instance import Instance
from .io import instance_from_dict, load_instance
from .methods import get_method
from .result import Result

__all__ = ["load", "solve", "generate", "verify", "check"]


def load(path: str | os.PathLike) -> Instance:
    """Read, validate and check an instance file.

    >>> import laissez_opt as lo, pathlib
    >>> lo.load(pathlib.Path(lo.__file__).parent.parent / "instances" / "hotos25-table1.json").n_agents
    2
    """
    return load_instance(path)


def solve(
    instance: Instance | str | os.PathLike,
    method: str = "welfare",
    *,
    solver: str = "highs",
    via: str = "direct",
    time_limit: float | None = None,
    fractional: bool = False,
    check: bool = True,
    raise_infeasible: bool = False,
    **options,
) -> Result:
    """Solve ``instance`` with ``method`` and verify the allocation independently.

    ``solver`` is ``"highs"`` (default, matrix API) or ``"ortools"``; ``via="pyomo"``
    builds a Pyomo model instead.  ``time_limit`` is in seconds; a result that hit
    it has status ``time_limit`` and reports its bound and gap.  ``fractional``
    solves the time-sharing relaxation where the method supports it.

    The result is re-verified by :func:`laissez_opt.analysis.verify.verify`; a
    failed verification raises :class:`VerificationError` rather than returning
    an infeasible allocation as a success.  An infeasible instance returns a
    result with status ``infeasible`` (or raises :class:`InfeasibleError` when
    ``raise_infeasible``).
    """
    if not isinstance(instance, Instance):
        instance = load_instance(instance)
    spec = get_method(method)
    if fractional and not spec.fractional:
        raise InputError(f"method {method!r} has no fractional mode", path="--fractional")
    if spec.kind == "exact" and solver not in spec.solvers and via == "direct":
        raise SolverUnavailableError(f"method {method!r} supports solvers {', '.join(spec.solvers)}, not {solver!r}")
    start = time.perf_counter()
    kwargs = dict(options)
    if spec.kind == "exact":
        kwargs.update(solver=solver, via=via, time_limit=time_limit, fractional=fractional)
    result = spec.run(instance, **kwargs)
    result.timing["total_s"] = time.perf_counter() - start
    result.params.setdefault("time_limit", time_limit)
    result.params.setdefault("seed", options.get("seed", 0))
    if result.status == "infeasible":
        if raise_infeasible:
            raise InfeasibleError(result.message or f"instance {instance.name!r} is infeasible for {method}", result=result)
        return result
    if check:
        outcome = verify(instance, result)
        if not outcome.ok:
            raise VerificationError(f"{method} on {instance.name}: {outcome}")
        result.verified = True
    utilities = [result.utilities[a.id] for a in instance.agents]
    import numpy as np

    result.metrics.update(basic_metrics(instance, np.asarray(utilities)))
    return result


def generate(family: str, agents: int, pools: int, *, seed: int = 0, **params) -> Instance:
    """A seeded random instance of a named family (see :mod:`laissez_opt.generate`)."""
    try:
        data = _generate_family(family, agents, pools, seed=seed, **params)
    except ValueError as exc:
        raise InputError(str(exc), path="--family") from None
    return instance_from_dict(data, f"<generated {family}>")


def check(instance, result, **opts):
    """Fairness and efficiency report of an allocation: SI, EF, PE (with certificate), welfare.

    ``instance``: an :class:`Instance` or a path; ``result``: a
    :class:`~laissez_opt.result.Result`, a result-file dictionary or a path to a
    result file.  ``opts`` go to :func:`laissez_opt.analysis.check.check`
    (``solver``, ``fractional``, ``via``, ``time_limit``).  Returns a
    :class:`~laissez_opt.analysis.check.CheckReport` (``.summary()``, ``.to_dict()``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A")], edges=[lo.Edge("A", "P", 1.0)])
    >>> lo.check(inst, lo.solve(inst, "welfare")).summary()["pareto_efficient"]
    True
    """
    from .analysis.check import check as run_check
    from .io import load_result, result_from_dict

    source = None
    if not isinstance(instance, Instance):
        instance = load_instance(instance)
    if isinstance(result, dict):
        result = result_from_dict(result)
    elif not isinstance(result, Result):
        source = str(result)
        result = load_result(result)
    opts.setdefault("source", source)
    return run_check(instance, result, **opts)
