"""The Python API: ``lo.load``, ``lo.solve``, ``lo.generate``, ``lo.verify``.

Everything the command line does is one call away here.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from .analysis.metrics import basic_metrics
from .analysis.verify import verify
from .errors import InfeasibleError, InputError, NoSolutionError, SolverUnavailableError, VerificationError
# Imported here, not lazily inside generate(): importing the ``laissez_opt.generate``
# subpackage binds it as an attribute of the package, and done after ``laissez_opt``
# bound this module's ``generate`` function it would replace ``lo.generate``.
from .generate import generate as _generate_family
from .instance import Instance
from .io import instance_from_dict, load_instance
from .limits import SizeEstimate, TimeLimitReached, deadline, parse_memory, refuse_if_too_large
from .methods import get_method
from .result import Result

__all__ = ["load", "solve", "estimate", "generate", "verify", "check", "solve_options", "check_time_limit"]


def load(path: str | os.PathLike) -> Instance:
    """Read, validate and check an instance file.

    >>> import laissez_opt as lo, pathlib
    >>> lo.load(pathlib.Path(lo.__file__).parent.parent / "instances" / "hotos25-table1.json").n_agents
    2
    """
    return load_instance(path)


def _as_instance(instance) -> Instance:
    if isinstance(instance, Instance):
        return instance
    if isinstance(instance, (str, os.PathLike)):
        return load_instance(instance)
    raise InputError(
        f"expected an Instance or the path of an instance file, got {type(instance).__name__}"
        + (" (build one from a dict with lo.instance_from_dict)" if isinstance(instance, dict) else ""),
        path="instance",
    )


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"expected true or false, got {value!r} ({type(value).__name__})", path=name)
    return value


def check_time_limit(value, path: str = "time_limit") -> float | None:
    """``None`` or a finite number of seconds > 0 (integers accepted); :class:`InputError` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not value > 0:
        raise InputError(f"expected a finite number of seconds > 0, got {value!r}", path=path)
    return float(value)


def solve_options(method: str, *, solver=None, via=None, time_limit=None, fractional=None, **options) -> tuple:
    """The method's spec and its checked options, from the arguments of :func:`solve`.

    Every argument is checked before any work: an unknown method, an option the
    method does not declare, an ill-typed value (``time_limit="5"``,
    ``fractional="no"``), a solver the method cannot use.
    """
    if not isinstance(method, str):
        raise InputError(f"expected a method name, got {method!r}", path="method")
    spec = get_method(method)
    given = dict(options)
    if solver is not None:
        given["solver"] = solver
    if via is not None:
        given["via"] = via
    time_limit = check_time_limit(time_limit)
    if time_limit is not None and "time_limit" in spec.option_names:
        given["time_limit"] = time_limit
    if fractional is not None and _flag(fractional, "fractional"):
        if not spec.fractional:
            raise InputError(f"method {method!r} has no fractional mode", path="fractional")
        if "fractional" in spec.option_names:
            given["fractional"] = True
    if spec.kind == "heuristic":
        for name in ("solver", "via"):
            if name in given:
                raise InputError(f"{method} is a heuristic: it takes no {name} (the exact methods do)", path=name)
    opts = spec.check_options(given)
    if spec.kind == "exact" and opts.get("via", "direct") == "direct" and opts.get("solver", "highs") not in spec.solvers:
        raise SolverUnavailableError(
            f"method {method!r} supports solvers {', '.join(spec.solvers)}, not {opts['solver']!r} "
            f"(with via='pyomo', any solver Pyomo knows)"
        )
    return spec, opts, time_limit


def estimate(instance: Instance | str | os.PathLike, method: str = "welfare", **options) -> SizeEstimate:
    """The size of a run of ``method`` on ``instance``, known before anything is built.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
    >>> lo.estimate(inst, "welfare").variables
    1.0
    """
    instance = _as_instance(instance)
    spec, opts, _ = solve_options(method, **options)
    return _estimate(instance, spec, opts)


def _estimate(instance: Instance, spec, opts: dict) -> SizeEstimate:
    full = {**spec.defaults(), **opts}
    if spec.estimate is not None:
        return spec.estimate(instance, full)
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    return SizeEstimate(variables=edge_rounds, constraints=edge_rounds, nonzeros=2 * edge_rounds,
                        dense_bytes=64 * edge_rounds, note="linear in edges x rounds")


def solve(
    instance: Instance | str | os.PathLike,
    method: str = "welfare",
    *,
    solver: str | None = None,
    via: str | None = None,
    time_limit: float | None = None,
    fractional: bool | None = None,
    check: bool = True,
    raise_infeasible: bool = False,
    max_memory: int | str | None = None,
    **options,
) -> Result:
    """Solve ``instance`` with ``method`` and verify the allocation independently.

    ``solver`` is ``"highs"`` (default, matrix API) or ``"ortools"``; ``via="pyomo"``
    builds a Pyomo model instead (exact methods only).  ``time_limit`` is in
    seconds and covers building and solving; a result that hit it has status
    ``time_limit`` and reports its bound and gap; a heuristic that cannot finish
    in time raises :class:`NoSolutionError`.  ``fractional`` solves the
    time-sharing relaxation where the method supports it.  ``options`` are the
    method's declared options (``laissez-opt methods METHOD`` lists them); an
    unknown or ill-typed one raises :class:`InputError` before any work.

    ``max_memory`` (bytes, or a size such as ``"8G"``; default half the physical
    memory) bounds the run: the method's size is estimated before anything is
    built, and a run over the budget raises :class:`InputError` stating the
    estimate.

    The result is re-verified by :func:`laissez_opt.analysis.verify.verify`; a
    failed verification raises :class:`VerificationError` rather than returning
    an infeasible allocation as a success.  An infeasible instance returns a
    result with status ``infeasible`` (or raises :class:`InfeasibleError` when
    ``raise_infeasible``).
    """
    instance = _as_instance(instance)
    spec, opts, time_limit = solve_options(method, solver=solver, via=via, time_limit=time_limit,
                                           fractional=fractional, **options)
    check = _flag(check, "check")
    raise_infeasible = _flag(raise_infeasible, "raise_infeasible")
    budget = None if max_memory is None else parse_memory(max_memory)
    refuse_if_too_large(_estimate(instance, spec, opts), spec.name, max_memory=budget)
    start = time.perf_counter()
    with deadline(time_limit):
        try:
            result = spec.run(instance, **opts)
        except TimeLimitReached as exc:
            raise NoSolutionError(f"{spec.name} on {instance.name}: {exc}; no allocation to return") from None
    result.timing["total_s"] = time.perf_counter() - start
    result.params.setdefault("time_limit", time_limit)
    if "seed" in spec.option_names:
        result.params.setdefault("seed", opts.get("seed", spec.option("seed").default))
    if result.status == "infeasible":
        if raise_infeasible:
            raise InfeasibleError(result.message or f"instance {instance.name!r} is infeasible for {spec.name}", result=result)
        return result
    if check:
        outcome = verify(instance, result)
        if not outcome.ok:
            raise VerificationError(f"{spec.name} on {instance.name}: {outcome}")
        result.verified = True
    utilities = [result.utilities[a.id] for a in instance.agents]
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
