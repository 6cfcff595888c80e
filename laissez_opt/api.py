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
from .generate import generate_instance as _generate_family
from .instance import Instance
from .io import instance_from_dict, load_instance
from .limits import (DEFAULT_MAX_MEMORY, EXAMINE_BYTES, SizeEstimate, TimeLimitReached, deadline, parse_memory,
                     refuse_if_too_large)
from .methods import get_method
from .result import Result

__all__ = [
    "load", "solve", "estimate", "generate", "verify", "check", "solve_options", "check_time_limit", "certify",
    "check_certificate", "load_certificate", "frontier", "FRONTIER_METHODS", "probe_truthfulness", "options_of",
    "build", "write_model", "linear_model",
]


def load(path: str | os.PathLike) -> Instance:
    """Read, validate and check an instance file: JSON, or the binary ``.npz`` form (by suffix or zip signature).

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
    if opts.get("backend") is not None:
        # A forced backend is an OR-Tools one: it implies solver="ortools" and contradicts any other route.
        if opts.get("via", "direct") == "pyomo":
            raise InputError(f"backend {opts['backend']!r} is an OR-Tools backend; it does not apply with via='pyomo'",
                             path="backend")
        if opts.setdefault("solver", "ortools") not in ("ortools", "auto"):
            raise InputError(f"backend {opts['backend']!r} is an OR-Tools backend; it does not apply with "
                             f"solver={opts['solver']!r} (use solver='ortools')", path="backend")
    auto = "solver" in spec.option_names and spec.option("solver").default == "auto"
    if (spec.kind == "exact" and opts.get("via", "direct") == "direct" and opts.get("solver", "highs") not in spec.solvers
            and not (auto and opts.get("solver") == "auto")):
        from .method_spec import suggest

        raise SolverUnavailableError(
            f"method {method!r} supports solvers {', '.join(spec.solvers)}, not {opts['solver']!r}"
            f"{suggest(opts['solver'], spec.solvers)} (with via='pyomo', any solver Pyomo knows)",
            path="solver",
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


def _estimate(instance: Instance, spec, opts: dict, budget: float | None = None) -> SizeEstimate:
    full = {**spec.defaults(), **opts}
    if getattr(spec.estimate, "examines_classes", False):
        # Methods that compress: over this size the estimate counts the class model the solve would build.
        budget = budget or DEFAULT_MAX_MEMORY
        return spec.estimate(instance, full, examine_over=min(EXAMINE_BYTES, budget), budget=budget)
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
    splittable = "partitions" in spec.option_names
    if splittable:
        from .method_spec import PARTITION_OPTION_NAMES

        given = {name: opts.pop(name) for name in PARTITION_OPTION_NAMES if name in opts}
        if given.get("partitions") is not None:
            raise InputError("partitioned solving runs through lo.solve (laissez_opt.partition.solve), "
                             "not laissez_opt.api.solve", path="option partitions")
        given.pop("partitions", None)
        if given:
            raise InputError(f"option {sorted(given)[0]} applies only with partitions=K", path=f"option {sorted(given)[0]}")
    # The clock and the time limit cover the size estimate: on a large instance it may find the agent classes.
    start = time.perf_counter()
    with deadline(time_limit):
        refuse_if_too_large(_estimate(instance, spec, opts, budget), spec.name, max_memory=budget,
                            partitions=splittable)
        estimated = time.perf_counter()
        try:
            result = spec.run(instance, **opts)
        except TimeLimitReached as exc:
            raise NoSolutionError(f"{spec.name} on {instance.name}: {exc}; no allocation to return") from None
    result.timing["estimate_s"] = estimated - start
    result.timing["total_s"] = time.perf_counter() - start
    result.params.setdefault("time_limit", time_limit)
    # Every result records its seed (the contract's params.seed): null for a method that draws no random number.
    result.params.setdefault("seed", opts.get("seed", spec.option("seed").default) if "seed" in spec.option_names else None)
    if result.status == "infeasible":
        if raise_infeasible:
            raise InfeasibleError(result.message or f"instance {instance.name!r} is infeasible for {spec.name}", result=result)
        return result
    if check:
        outcome = verify(instance, result)
        if not outcome.ok:
            raise VerificationError(f"{spec.name} on {instance.name}: {outcome}")
        result.verified = True
    result.metrics.update(basic_metrics(instance, result.utility_array(instance)))
    return result


def linear_model(instance, method: str = "welfare", *, fractional: bool | None = None, **options):
    """The optimisation model that exact ``method`` solves on ``instance``, as a declared :class:`~laissez_opt.modeling.LinearModel`.

    The model reads ``max (or min) c^T x + c_0  s.t.  L <= A x <= U,  l <= x <= u,
    x_j integer for j in I``, with the variable and constraint blocks named as in
    the formulation documents (``models/``).  ``options`` are the method's
    declared options (solver options are accepted and ignored) and the options
    only its export takes (``laissez-opt methods METHOD``); a method that solves
    a sequence of models exports the one its ``exported`` note names (the first
    level of a leximin; Themis's ``F(rho)`` at ``rho*``).  Heuristics have no
    model: :class:`InputError`.

    >>> import laissez_opt as lo
    >>> model = lo.linear_model("instances/hotos25-table1.json", "welfare")
    >>> model.name, model.sense, model.n_cols, sorted(model.constraints)
    ('welfare', 'max', 5, ['capacity', 'demand'])
    """
    from dataclasses import replace

    instance = _as_instance(instance)
    if not isinstance(method, str):
        raise InputError(f"expected a method name, got {method!r}", path="method")
    spec = get_method(method)
    if spec.build is None:
        what = "a heuristic: it runs an algorithm, not an optimisation model" if spec.kind == "heuristic" \
            else "an exact method that declares no model to export"
        raise InputError(f"{method} is {what}; exact methods with a model: "
                         f"{', '.join(sorted(n for n, m in _all_methods().items() if m.build is not None))}",
                         path="method")
    extra = {o.name for o in spec.build_options}
    own = {k: v for k, v in options.items() if k not in extra}
    built = replace(spec, options=spec.options + spec.build_options).check_options(
        {k: v for k, v in options.items() if k in extra})
    _, opts, _ = solve_options(method, fractional=fractional, **own)
    full = {**spec.defaults(), **{o.name: o.default for o in spec.build_options}, **opts, **built}
    return spec.build(instance, full)


def _all_methods():
    from .methods import all_methods

    return all_methods()


def build(instance, method: str = "welfare", *, fractional: bool | None = None, **options):
    """The model exact ``method`` solves on ``instance`` as a :class:`pyomo.environ.ConcreteModel`.

    One Pyomo component per declared block: a ``Var`` per variable block (``x``,
    ``t``, ...), a ``Constraint`` per family (``capacity``, ``demand``, ...) and
    ``objective``; solve it with any solver Pyomo knows and compare with
    ``lo.solve``.  ``options`` as for :func:`linear_model`.

    >>> import laissez_opt as lo, pyomo.environ as pyo
    >>> m = lo.build("instances/hotos25-table1.json", "welfare")
    >>> _ = pyo.SolverFactory("appsi_highs").solve(m)
    >>> round(pyo.value(m.objective), 6)       # lo.solve(..., "welfare").objective
    7.681159
    """
    from .modeling.pyomo_route import to_pyomo

    return to_pyomo(linear_model(instance, method, fractional=fractional, **options))


def write_model(instance, method: str, path: str | os.PathLike, *, fractional: bool | None = None, **options) -> str:
    """Write the model exact ``method`` solves on ``instance`` as an LP or MPS file (by suffix), atomically.

    Names in the file are the declared ones (``capacity(0)``, ``x(3)``), so the
    file reads like the formulation document.  ``options`` as for
    :func:`linear_model`.  Returns the path written.  Any LP/MPS reader (HiGHS,
    CBC, Gurobi, CPLEX, SCIP) solves it to the same optimum.

    >>> import os, tempfile, highspy, laissez_opt as lo
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = lo.write_model("instances/hotos25-table1.json", "min_cost", os.path.join(folder, "m.mps"))
    ...     h = highspy.Highs(); _ = h.setOptionValue("output_flag", False)
    ...     _ = h.readModel(path); _ = h.run()
    ...     round(h.getInfo().objective_function_value, 6)
    0.36
    """
    from .io import check_destination
    from .modeling.pyomo_route import write_model as write

    path = os.fspath(path)
    if not str(path).lower().endswith((".lp", ".mps")):
        raise InputError(f"write the model to a file ending in .lp or .mps, not {path!r}", path="path")
    check_destination(path)
    write(linear_model(instance, method, fractional=fractional, **options), path)
    return path


def generate(family: str, agents: int, pools: int, *, seed: int = 0, **params) -> Instance:
    """A seeded random instance of a named family (see :mod:`laissez_opt.generate`)."""
    try:
        return _generate_family(family, agents, pools, seed=seed, **params)
    except ValueError as exc:
        # The message starts with what it is about: the family, or the argument or parameter named.
        text = str(exc)
        word, _, rest = text.partition(" ")
        if word in ("agents", "pools", "seed") and rest:
            raise InputError(rest, path=word) from None
        raise InputError(text, path="family") from None


def check(instance, result, *, truthfulness: bool = False, budget: int = 2000, **opts):
    """Fairness and efficiency report of an allocation: SI, EF, PE (with certificate), welfare.

    ``instance``: an :class:`Instance` or a path; ``result``: a
    :class:`~laissez_opt.result.Result`, a result-file dictionary or a path to a
    result file.  ``opts`` go to :func:`laissez_opt.analysis.check.check`
    (``solver``, ``fractional``, ``via``, ``time_limit``).  Returns a
    :class:`~laissez_opt.analysis.check.CheckReport` (``.summary()``, ``.to_dict()``).
    ``truthfulness=True`` also probes the result's method, run again with the
    result's options, for profitable misreports (:func:`probe_truthfulness`, at
    most ``budget`` lies per agent and family); the report's ``truthfulness``.

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
    report = run_check(instance, result, **opts)
    if _flag(truthfulness, "truthfulness"):
        report.truthfulness = probe_truthfulness(instance, result.method, options=options_of(result), budget=budget)
    return report


def options_of(result: Result) -> dict:
    """The declared options a result was produced with, to run its method again (``params`` and ``details``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
    >>> options_of(lo.solve(inst, "mtf", threshold="fixed:0.3", tokens=2))
    {'tokens': 2, 'threshold': 0.3, 'seed': 0, 'episodes': 1, 'normalize': 'agent'}
    """
    spec = get_method(result.method)
    out = {}
    for name, value in (result.params or {}).items():
        if name in spec.option_names and name != "time_limit" and value is not None:
            out[name] = value
    policy = (result.details or {}).get("threshold_policy")
    if result.method == "mtf" and isinstance(policy, dict):
        # params keep only the policy's name; a fixed policy's thresholds are in the details.
        out["threshold"] = policy.get("tau", 0.0) if policy.get("name") == "fixed" else policy.get("name")
    return spec.check_options(out)


def probe_truthfulness(instance, method: str = "mtf", *, options=None, agents=None, families=None,
                       budget: int = 2000, seed: int = 0):
    """Search for profitable misreports of ``method`` on ``instance``: the truthfulness probe.

    Runs the method truthfully, then with one agent at a time lying (scaled
    utilities or bids, per-pool scaling, other preference orders, and for
    ``mtf`` other fixed thresholds), and compares the liar's true payoff
    (:mod:`laissez_opt.analysis.truthfulness`).  ``options``: the method's
    options (checked as for :func:`solve`); ``budget``: most lies per agent and
    family (a family that is larger is sampled, with every single-round
    deviation).  Returns a :class:`~laissez_opt.analysis.truthfulness.TruthfulnessReport`
    (``.profitable``, ``.largest``, ``.findings``, ``.to_dict()``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A", demand=1), lo.Agent("B", demand=1)],
    ...                    [lo.Edge("A", "A10", 0.687), lo.Edge("B", "A10", 0.762)], name="bids")
    >>> lo.probe_truthfulness(inst, "vcg").profitable          # second price: no lie pays
    False
    >>> lo.probe_truthfulness(inst, "greedy").largest["lie"]   # first come, highest report: A overbids
    'reports every value times 1.25'
    """
    from .analysis.truthfulness import probe

    instance = _as_instance(instance)
    if options is not None and not isinstance(options, dict):
        raise InputError(f"options must be a mapping of option name to value, got {type(options).__name__}",
                         path="options")
    spec, opts, _ = solve_options(method, **(options or {}))
    opts = {k: v for k, v in opts.items() if k != "time_limit"}

    def run(inst, name, given):
        return solve(inst, name, **given)

    return probe(instance, spec.name, run=run, options=opts, agents=agents, families=families, budget=budget,
                 seed=seed)


def _result_and_allocation(result):
    """A :class:`Result` and its allocation records with exact amounts (a file's decimals when read from a path)."""
    from .io import load_result, result_from_dict

    if isinstance(result, Result):
        return result, None, None
    if isinstance(result, dict):
        return result_from_dict(result), None, None
    if isinstance(result, (str, os.PathLike)):
        from .analysis.rational import read_exact_json

        loaded = load_result(result)
        exact = read_exact_json(result)
        records = [{**rec, "round": rec.get("round", 0)} for rec in exact.get("allocation", [])]
        return loaded, records, str(result)
    raise InputError(f"expected a Result, a result dictionary or the path of a result file, got {type(result).__name__}",
                     path="result")


def load_certificate(path: str | os.PathLike):
    """Read a certificate file (``format: laissez-opt/certificate``) written by :func:`certify` or ``laissez-opt certify -o``.

    >>> import json, os, tempfile, laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 0.5)], name="one")
    >>> cert = lo.certify(inst, lo.solve(inst, "welfare")).certificate.to_dict()
    >>> with tempfile.TemporaryDirectory() as scratch:
    ...     path = os.path.join(scratch, "cert.json")
    ...     _ = open(path, "w").write(json.dumps(cert))
    ...     lo.load_certificate(path).lps[0].value
    Fraction(1, 2)
    """
    from .analysis.certify import Certificate
    from .io import read_json

    return Certificate.from_dict(read_json(path), str(path))


def certify(instance, result, *, claim: str = "auto", certificate=None, tolerance: float = 1e-9):
    """Prove ``result``'s claim in exact rational arithmetic; a :class:`~laissez_opt.analysis.certify.CertifyReport`.

    For an LP-based result (``welfare``; ``vcg`` with its payments; the
    fractional ``maxmin``, ``themis`` and ``fair_welfare``) the claim is its
    optimality; ``claim="pareto"`` proves instead that any result's allocation
    is Pareto-efficient (or exhibits an improvement).  The certificate (LP
    primal solutions and multipliers, every number a rational) is built with
    HiGHS's bases re-solved exactly, or read from ``certificate`` (a
    :class:`~laissez_opt.analysis.certify.Certificate`, a dictionary or a path),
    and checked against the instance's decimal numbers with no solver
    (:func:`laissez_opt.analysis.certify.check_certificate`).  ``report.proven``
    is the verdict, ``report.failure`` names the failing row, column or value,
    ``report.exact`` the proven values as ``p/q`` text, and
    ``report.certificate.to_dict()`` the certificate file.

    ``instance``: an :class:`Instance` or a path; ``result``: a
    :class:`Result`, a result dictionary or a path (whose decimals are read
    exactly); ``tolerance``: how far (relative) the result's floating-point
    numbers may be from the exact ones.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.3), lo.Edge("B", "P", 0.7)], name="two")
    >>> report = lo.certify(inst, lo.solve(inst, "maxmin", fractional=True))
    >>> report.proven, report.exact["leximin"]
    (True, {'A': '1', 'B': '1'})
    """
    from .analysis.certify import Certificate, certify as run_certify

    instance = _as_instance(instance)
    result, records, result_source = _result_and_allocation(result)
    source = None
    if isinstance(certificate, (str, os.PathLike)):
        source = str(certificate)
        certificate = load_certificate(certificate)
    elif certificate is not None and not isinstance(certificate, (Certificate, dict)):
        raise InputError(f"expected a certificate (object, dictionary or path), got {type(certificate).__name__}",
                         path="certificate")
    try:
        return run_certify(instance, result, claim=claim, certificate=certificate, tolerance=tolerance,
                           allocation=records, certificate_source=source)
    except InputError as err:
        # A problem with the result (another instance, an unknown id) names the result file.
        if result_source is not None and err.source is None and (err.path or "").startswith("$."):
            err.located(result_source)
        raise


def check_certificate(instance, certificate):
    """Check a certificate against ``instance`` in exact arithmetic, with no solver and no result.

    Returns a :class:`~laissez_opt.analysis.certify.CertificateCheck` (``ok``,
    ``failure``, the proven ``values``).  ``certificate``: a path, a dictionary
    or a :class:`~laissez_opt.analysis.certify.Certificate`.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 0.5)], name="one")
    >>> cert = lo.certify(inst, lo.solve(inst, "welfare")).certificate.to_dict()
    >>> lo.check_certificate(inst, cert).ok
    True
    >>> cert["lps"][0]["dual"] = {'capacity["P",0]': "1"}   # a multiplier too large
    >>> lo.check_certificate(inst, cert).failure
    'LP 1 (welfare): objective: the allocation reaches 1/2 but the dual bound is 1'
    """
    from .analysis.certify import check_certificate as run_check

    instance = _as_instance(instance)
    source = None
    if isinstance(certificate, (str, os.PathLike)):
        source = str(certificate)
        certificate = load_certificate(certificate)
    return run_check(instance, certificate, source=source)


#: Methods placed on the frontier by default: every heuristic and the exact allocation models
#: (``NAME:fractional`` for a time-sharing run).
FRONTIER_METHODS = (
    "welfare", "maxmin", "maxmin:fractional", "themis", "themis:fractional", "vcg", "drf",
    "greedy", "mtf", "auction", "round_robin", "time_equal", "fixed_partition", "dynamic_partition",
    "gandiva_fair", "fcfs_static", "myopic",
)


def frontier(instance, *, methods=None, normalizer: str = "equal_share", max_lps: int = 400,
             fair: bool = True, integral: bool = True, time_limit: float | None = 60.0):
    """The price of fairness as a curve: the exact welfare / max-min frontier with methods placed on it.

    Traces ``f(t)``, the largest weighted welfare ``sum_i w_i U_i`` among time-sharing
    allocations whose max-min level (``min_i phi_i`` with ``normalizer="equal_share"``)
    is at least ``t``, through its exact breakpoints
    (:func:`laissez_opt.analysis.frontier.trace_frontier`: parametric LPs solved in
    rationals, no grid); adds the best welfare under sharing incentive,
    envy-freeness and the largest max-min level, with their prices of fairness
    (``fair``; ``integral`` also solves the whole-device MILPs); and places every
    method of ``methods`` (default :data:`FRONTIER_METHODS`; ``"maxmin:fractional"``
    for a time-sharing run) by its level and welfare.  A method that cannot run
    on the instance is listed in ``report.skipped`` with the reason.  Returns a
    :class:`~laissez_opt.analysis.frontier.FrontierReport` (``.markdown()``,
    ``.figure()``, ``.to_dict()``, ``.to_dataframe()``).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="two")
    >>> report = lo.frontier(inst, methods=["welfare", "greedy"], integral=False)
    >>> [(p.name, str(p.level), str(p.gap)) for p in report.placements]
    [('welfare', '0', '0'), ('greedy', '0', '0')]
    >>> [(row["notion"], row["exact"]) for row in report.fair]
    [('sharing_incentive', '7/5'), ('envy_free', '7/5'), ('max_min', '7/5')]
    """
    from .analysis.frontier import FrontierReport, fair_optima, place, trace_frontier

    instance = _as_instance(instance)
    names = list(FRONTIER_METHODS if methods is None else methods)
    if not all(isinstance(m, str) for m in names):
        raise InputError("methods must be method names (NAME or NAME:fractional)", path="methods")
    check_time_limit(time_limit)
    start = time.perf_counter()
    curve = trace_frontier(instance, normalizer=normalizer, max_lps=max_lps)
    t_curve = time.perf_counter()
    rows = fair_optima(instance, curve, integral=_flag(integral, "integral"), time_limit=time_limit) \
        if _flag(fair, "fair") else []
    t_fair = time.perf_counter()
    placements, skipped = [], {}
    for label in names:
        name, _, mode = label.partition(":")
        if mode not in ("", "fractional"):
            raise InputError(f"unknown mode {mode!r} in {label!r}; write NAME or NAME:fractional", path="methods")
        get_method(name)  # an unknown name is a usage error, not a skipped method
        try:
            result = solve(instance, name, time_limit=time_limit, fractional=True if mode else None)
        except (InputError, NoSolutionError, InfeasibleError, SolverUnavailableError) as err:
            skipped[label] = getattr(err, "problem", None) or str(err)
            continue
        if result.status == "infeasible":
            skipped[label] = "infeasible"
            continue
        placements.append(place(curve, label, result))
    end = time.perf_counter()
    return FrontierReport(curve, rows, placements, skipped,
                          {"frontier_s": t_curve - start, "fair_s": t_fair - t_curve, "methods_s": end - t_fair,
                           "total_s": end - start})
