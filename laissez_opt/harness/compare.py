"""Every method on every instance: objectives, gaps to the exact optimum, runtimes.

For each instance and method the harness records the run's status, runtime,
the objectives of :data:`OBJECTIVES` evaluated on its allocation, and the
fairness figures attached to every result.  Then, per instance and
objective, it computes each method's gap to the exact reference method for
that objective (``models.md``): ``(F(opt) - F(m)) / |F(opt)|`` for a maximised
objective, sign flipped for a minimised one.  When the reference solve hit
its time limit the gap is taken against its proven bound, so it stays an
upper bound on the true gap; it is reported only from a proven bound.

Example
-------
>>> import laissez_opt as lo
>>> table = lo.compare(["instances/hotos25-table1.json"], ["welfare", "greedy"])
>>> sorted(row["method"] for row in table.rows)
['greedy', 'welfare']
>>> [row["gap_weighted_welfare"] for row in table.rows if row["method"] == "welfare"]
[0.0]
"""

from __future__ import annotations

import math
import os
import pickle
import sys
import time
import traceback
import warnings
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import InputError, SolverUnavailableError
from ..instance import Instance
from ..io import load_instance
from ..io.digest import columnar_copy, instance_digest
from ..method_spec import suggest
from ..limits import format_bytes, parse_memory
from ..methods import get_method, registered_at_runtime
from .executors import EXECUTORS, WAIT, Failure, Limits, ListFeed, pick_preferred, run_dask, run_inline, run_local_pool
from .store import RESULT_STATUSES, DamagedRecord, RunStore, RunStoreWarning, run_key

__all__ = ["Objective", "OBJECTIVES", "Comparison", "compare", "default_objectives", "parse_run_memory", "parse_run_time"]


@dataclass(frozen=True)
class Objective:
    """An objective evaluated on any allocation, with the exact method that optimises it.

    ``evaluate(instance, result)`` computes the objective of any result (``None``
    where it does not apply); ``bound(row)`` reads a proven bound from the
    reference method's row when its solve stopped early (``None`` if unproven).
    ``reference_options`` are passed to the reference method.
    """

    name: str
    sense: str  # "max" or "min"
    reference: str  # exact method whose optimum defines the gap
    evaluate: Callable
    bound: Callable[[dict], float | None]
    reference_options: dict = field(default_factory=dict)
    description: str = ""


def _metric(name):
    def evaluate(instance, result):
        value = result.metrics.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return evaluate


def _weighted_bound(row):
    # welfare's objective is sum_i w_i U_i; the metric divides by sum_i w_i.
    if row.get("bound") is None or not row.get("weight_sum"):
        return None
    return row["bound"] / row["weight_sum"]


def _own_bound(row):
    return row.get("bound")


def _max_rho(instance, result):
    """Themis's largest finish-time ratio ``max_i rho_i`` of any one-round allocation."""
    if instance.rounds != 1 or result.amounts is None:
        return None
    from ..exact.themis import finish_times, themis_data

    data = themis_data(instance, fractional=result.mode == "fractional")
    rhos = [a["rho"] for a in finish_times(instance, data, result.amounts[:, 0]).values() if a["rho"] is not None]
    return float(max(rhos)) if rhos else None


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("weighted_welfare", "max", "welfare", _metric("weighted_welfare"), _weighted_bound,
                  description="sum_i w_i U_i / sum_i w_i; exact reference: welfare"),
        Objective("min_phi", "max", "maxmin", _metric("min_phi"), _own_bound, {"normalizer": "equal_share"},
                  description="min_i U_i / U_i^ex (sharing incentive); exact reference: maxmin, equal_share"),
        Objective("max_rho", "min", "themis", _max_rho, _own_bound,
                  description="max_i rho_i (finish-time fairness, one round); exact reference: themis"),
        Objective("money", "min", "migration", _metric("money"), _own_bound, {"objective": "cost"},
                  description="money spent on devices (multi-round schedules); exact reference: migration"),
    )
}


def default_objectives(methods: Sequence[str]) -> list[str]:
    """``weighted_welfare``, plus every objective whose exact reference is among ``methods``."""
    chosen = ["weighted_welfare"]
    chosen += [name for name, o in OBJECTIVES.items() if o.reference in methods and name not in chosen]
    return chosen


#: Instances this process unpacked, by (hash, source), most recent last: a worker that runs several
#: methods of one instance unpacks it once and reuses its cached array views.
_PARSED: "OrderedDict[tuple[str, str], Instance]" = OrderedDict()
_PARSED_MAX = 4


def _parsed_instance(task: dict) -> Instance:
    """The task's instance, unpacked at most once per process while it is among the last :data:`_PARSED_MAX`.

    The parent read the file once and sends the instance as columns (a pickled
    :func:`~laissez_opt.io.digest.columnar_copy`: a few arrays, no per-edge
    object); nothing is parsed here.  Keyed by the instance's content digest
    (and its source), so a cache hit is the same instance.
    """
    key = (task["hash"], task["source"])
    instance = _PARSED.get(key)
    if instance is None:
        instance = pickle.loads(task["instance"])
        instance.source = task["source"]
        _PARSED[key] = instance
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    else:
        _PARSED.move_to_end(key)
    return instance


def _read_task(task: dict) -> dict:
    """Worker: read and check one instance file for the plan, and keep it for this worker's runs of it.

    Returns ``{"loaded": _Loaded}``, or ``{"error": (problem, source, path)}`` of the
    file's :class:`InputError` (the parent raises it, exactly as if it had read the
    file itself).
    """
    try:
        instance = load_instance(task["read"])
    except InputError as err:
        return {"error": (err.problem, err.source, err.path)}
    loaded = _loaded(instance, affinity=task["affinity"])
    # The copy every other worker would unpack: this worker's runs of it then start with no unpacking.
    _parsed_instance({"instance": loaded.payload, "hash": loaded.digest, "source": loaded.source})
    return {"loaded": loaded}


def _run_task(task: dict) -> dict:
    """Worker: solve one (instance, method) pair and summarise it as a flat row (or read a file: _read_task).

    A method that raises gives an error row; running out of memory is not
    caught here, so the executor reports it against the run's memory cap.
    """
    from ..api import estimate, solve

    if "read" in task:
        return _read_task(task)
    instance = _parsed_instance(task)
    if task.get("method_spec") is not None:
        _ensure_registered(task["method_spec"])
    spec = get_method(task["method"])
    options = dict(task["options"])
    row = _instance_fields(instance, task["hash"])
    row.update(method=spec.name, kind=spec.kind)
    cap = task.get("run_memory")
    start = time.perf_counter()
    try:
        if cap is not None:
            size = estimate(instance, spec.name, **options)
            if size.bytes() > cap:
                # Refused before anything is allocated: the same cap, known in advance.
                row.update(status="error", error_kind="memory_cap", runtime_s=time.perf_counter() - start,
                           message=f"run memory cap of {format_bytes(cap)} exceeded by the estimate: "
                                   f"{spec.name} would need {size.describe()}; refused before running")
                return row
        result = solve(instance, spec.name, max_memory=cap if cap is not None else _NO_BUDGET, **options)
    except MemoryError:
        raise
    except Exception as exc:  # a failed run is a row, never a crashed comparison
        row.update(status="error", error_kind="exception", message=f"{type(exc).__name__}: {exc}",
                   runtime_s=time.perf_counter() - start)
        row["traceback"] = traceback.format_exc(limit=3)
        return row
    row.update(
        status=result.status,
        solver=result.solver,
        route=result.route,
        objective=result.objective,
        bound=result.bound,
        solver_gap=result.gap,
        runtime_s=result.timing.get("total_s", time.perf_counter() - start),
        verified=result.verified,
        message=result.message,
    )
    for name, value in result.metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            row[name] = value
    for name in task.get("objectives", ()):
        try:
            row[f"value_{name}"] = OBJECTIVES[name].evaluate(instance, result)
        except MemoryError:
            raise
        except Exception as exc:  # an objective that cannot be evaluated here is blank, with the reason
            row[f"value_{name}"] = None
            row.setdefault("notes", []).append(f"{name}: {type(exc).__name__}: {exc}")
    if isinstance(row.get("min_phi"), float):
        row["sharing_incentive"] = row["min_phi"] >= 1 - 1e-9
    if result.amounts is not None and spec.name != "drf":  # drf amounts are tasks, not devices
        from ..analysis.fairness import envy_report

        envy = envy_report(instance, result.amounts, keep_matrix=False)
        row["max_envy"] = envy.largest_envy
        row["envy_free"] = None if envy.skipped else envy.envy_free
        if envy.skipped:
            row.setdefault("notes", []).append(envy.skipped)
        if task.get("pareto"):
            from ..exact.pareto import pareto_check

            check = pareto_check(instance, result, fractional=result.mode == "fractional",
                                 solver=task.get("pareto_solver", "highs"),
                                 time_limit=task.get("pareto_time_limit"))
            row["pareto_efficient"] = check.efficient
            row["pareto_gain"] = check.total_gain
    return row


def _ensure_registered(spec) -> None:
    """Register a method sent from the parent process (``lo.register_method`` there) unless this process has it."""
    from ..methods import METHODS, register_method

    if spec.name not in METHODS:
        register_method(spec)


def _travel_problem(name: str) -> str | None:
    """Why method ``name``, registered in this process, cannot be sent to a worker process (``None``: it can).

    A method registered in this process exists in no other; it travels with
    its tasks, so its build function must be picklable by reference (defined at
    the top level of an importable module or script file).
    """
    import pickle

    spec = registered_at_runtime(name)
    if spec is None:
        return None  # built in, or a plugin: every process has it
    try:
        payload = pickle.dumps(spec)
    except Exception as exc:
        return f"it cannot be pickled ({type(exc).__name__}: {exc})"
    if b"__main__" in payload and not getattr(sys.modules.get("__main__"), "__file__", None):
        return "it was defined in an interactive session, which no other process can import"
    return None


def _shipped(name: str, executor: str):
    """The method to send to worker processes with each task (None for built-in and plugin methods).

    Only ``inline`` runs in this process; the local executor's workers are
    processes even with one worker.
    """
    if executor != "inline":
        problem = _travel_problem(name)
        if problem is not None:
            raise InputError(
                f"method {name!r} was registered in this process, and worker processes need it sent to them, but "
                f"{problem}; define its build function at the top level of a module or script, publish it as a "
                f"plugin, or compare with executor='inline'", path="methods",
            )
    return registered_at_runtime(name)


def _fingerprint(name: str) -> str | None:
    """A digest of a declared method's definition, so the run store never reuses runs of an older one."""
    return getattr(get_method(name).run, "fingerprint", None)


#: ``max_memory`` of a run without a memory cap: the estimate never refuses it.
_NO_BUDGET = 2**62


def _instance_fields(instance: Instance, digest: str) -> dict:
    return {
        "instance": instance.name,
        "instance_hash": digest,
        "agents": instance.n_agents,
        "pools": instance.n_pools,
        "devices": int(instance.counts.sum()),
        "edges": instance.n_edges,
        "rounds": instance.rounds,
        "weight_sum": float(instance.weights.sum()),
    }


@dataclass
class Comparison:
    """The rows of a comparison (one per instance and method) with gaps filled in."""

    rows: list[dict]
    methods: list[str]
    objectives: list[str]
    computed: int = 0
    reused: int = 0
    meta: dict = field(default_factory=dict)

    def to_dataframe(self):
        """One row per instance and method (the CSV's columns) as a :class:`pandas.DataFrame`."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def __repr__(self) -> str:
        from .report import comparison_repr

        return comparison_repr(self)

    def _repr_html_(self) -> str:
        from .report import comparison_html

        return comparison_html(self)

    def plot(self, what: str = "gap", objective: str | None = None, ax=None):
        """Gap (``what="gap"``, of ``objective``, default the first) or runtime (``"runtime"``) against size.

        Returns the matplotlib axes (:func:`laissez_opt.harness.report.plot_comparison`).
        """
        from .report import plot_comparison

        return plot_comparison(self, what, objective=objective, ax=ax)

    def columns(self) -> list[str]:
        first = ["instance", "agents", "pools", "devices", "method", "kind", "status", "objective", "runtime_s"]
        values = [f"value_{name}" for name in self.objectives]
        gaps = [f"gap_{name}" for name in self.objectives]
        rest = sorted({k for row in self.rows for k in row} - set(first) - set(values) - set(gaps) - {"traceback"})
        return first + values + gaps + rest


def _fill_gaps(rows: list[dict], objectives: Sequence[str]) -> None:
    by_instance: dict[str, list[dict]] = {}
    for row in rows:
        by_instance.setdefault(row["instance_hash"], []).append(row)
    for group in by_instance.values():
        for name in objectives:
            objective = OBJECTIVES[name]
            reference = next((r for r in group if r["method"] == objective.reference), None)
            best = None
            if reference is not None and reference.get("status") == "optimal":
                best = reference.get(f"value_{name}")
            elif reference is not None and reference.get("status") in ("time_limit", "feasible"):
                best = objective.bound(reference)
            for row in group:
                value = row.get(f"value_{name}") if row.get("status") not in ("error", "infeasible") else None
                gap = None
                if best is not None and value is not None and math.isfinite(best) and math.isinf(value):
                    # e.g. a finish-time ratio of inf: an agent starved where the optimum serves all
                    worse = (value < 0) if objective.sense == "max" else (value > 0)
                    gap = math.inf if worse else None
                elif best is not None and value is not None and math.isfinite(best) and math.isfinite(value):
                    diff = best - value if objective.sense == "max" else value - best
                    gap = diff / abs(best) if abs(best) > 1e-12 else (0.0 if abs(diff) <= 1e-12 else math.inf)
                    if abs(gap) < 1e-9:
                        gap = 0.0
                row[f"gap_{name}"] = gap
                row[f"reference_{name}"] = objective.reference if best is not None else None


def compare(
    instances: Sequence[Instance | str | os.PathLike],
    methods: Sequence[str],
    *,
    solver: str | None = None,
    time_limit: float | None = None,
    fractional: bool = False,
    workers: int = 1,
    executor: str | None = None,
    scheduler: str | None = None,
    store: str | os.PathLike | None = None,
    progress: bool | None = None,
    objectives: Sequence[str] | None = None,
    method_options: dict[str, dict] | None = None,
    pareto: bool = False,
    run_memory: int | str | None = "auto",
    run_time: float | str | None = "auto",
) -> Comparison:
    """Run every method on every instance; fill in gaps to the exact optimum of each objective.

    ``store``: a directory of finished runs; runs found there are reused, new
    ones are saved as they finish, and concurrent comparisons on one store
    share the work (:mod:`laissez_opt.harness.store`).  ``executor``:
    ``"local"`` (``workers`` supervised worker processes), ``"inline"`` (this
    process: no isolation, no caps) or ``"dask"`` (``scheduler`` address, or a
    local cluster).  Left at ``None`` it is ``"local"``, except that with one
    worker a comparison of a method registered in this process that cannot be
    sent to another (defined interactively, or not picklable) runs ``"inline"``,
    with a warning.  ``objectives`` default to :func:`default_objectives`
    (weighted welfare, plus each objective whose exact reference method is
    listed).  The exact reference methods of the objectives are added to the
    runs when not listed (their rows are marked ``"reference_only"``).
    ``method_options`` maps a method name to its options (``{"mtf": {"tokens": 7}}``).
    ``solver``: the solver of every exact method; ``None`` (default) leaves each
    method on its own default route, the one :func:`laissez_opt.solve` takes
    (``welfare`` and ``vcg``: ``"auto"``, min-cost flow for a transportation
    structure), so a comparison times what a user's solve costs.

    ``run_memory`` (bytes, or a size such as ``"2GiB"``) and ``run_time``
    (seconds) cap each run; a run over a cap, or whose worker dies, becomes an
    error row naming the cause, and the other runs go on.  ``"auto"``: 80% of
    the physical memory divided by ``workers``, and twice ``time_limit`` plus
    60 s (no time cap without a ``time_limit``); ``None``: no cap.

    Every argument, method option and the solver are checked before any run
    starts: bad input raises :class:`InputError` naming the argument or option.
    """
    plan = _plan(instances, methods, solver=solver, time_limit=time_limit, fractional=fractional,
                 workers=workers, executor=executor, scheduler=scheduler, objectives=objectives,
                 method_options=method_options, pareto=pareto, run_memory=run_memory, run_time=run_time)
    if progress is not None and not isinstance(progress, bool):
        raise InputError(f"must be true, false or None, got {progress!r}", path="progress")
    stream = phased = None
    paths = list(dict.fromkeys(entry for entry in plan.entries if isinstance(entry, str)))
    if paths:
        reads = [{"read": path, "affinity": path} for path in paths]
        phased = _PhasedFeed(reads, len(plan.entries) * len(plan.run_methods))
        stream = run_local_pool(_run_task, phased, workers=plan.workers, limits=plan.limits, affinity=_instance_of)
        try:
            plan.entries = _read_in_workers(stream, plan.entries)
        except BaseException:
            stream.close()  # stops the workers
            raise
    try:
        return _run_plan(plan, stream, phased, store, progress)
    finally:
        if stream is not None:
            stream.close()  # a no-op once the runs are done; stops the workers on the way out otherwise


def _run_plan(plan: "_Plan", stream, phased: "_PhasedFeed | None", store, progress) -> Comparison:
    """Look the runs up in the store, compute the others (on ``stream`` when the workers read the files)."""
    plan.build_tasks(plan.entries)
    run_store = RunStore(store) if store is not None else None
    if run_store is not None:
        run_store.sweep()  # what killed comparisons left behind, whichever runs they were
    rows: dict[str, dict] = {}
    warned: set = set()
    unique = list({task["key"]: task for task in plan.tasks}.values())
    if run_store is None:
        pending, feed = unique, None
    else:
        pending = []
        for task in unique:
            row = _lookup(run_store, task, warned)
            if row is not None:
                rows[task["key"]] = row
                task.pop("instance", None)  # its columns are not sent anywhere
            else:
                pending.append(task)
    reused_before = len(rows)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    try:
        if show and pending:
            from rich.progress import Progress

            bar = Progress(transient=True)
            bar.start()
            job = bar.add_task("comparing", total=len(pending))
            advance = lambda: bar.advance(job)  # noqa: E731
        else:
            advance = lambda: None  # noqa: E731
        feed = _StoreFeed(run_store, pending, rows, advance, warned) if run_store is not None else ListFeed(pending)
        try:
            if phased is not None:
                phased.runs = feed  # the workers that read the files go on with the runs
            else:
                stream = _executor_stream(plan, feed)
            for task, outcome in stream:
                row = _row_from(task, outcome)
                rows[task["key"]] = row
                task.pop("instance", None)  # done: let the instance's columns go once its last run is back
                if run_store is not None:
                    _save(run_store, task, row)
                    feed.done(task)
                advance()
        finally:
            if run_store is not None:
                feed.release_all()
    finally:
        if bar is not None:
            bar.stop()
    computed = len(rows) - reused_before - (feed.reused if run_store is not None else 0)
    ordered = []
    for task in plan.tasks:
        row = dict(rows[task["key"]])
        row["source"] = task["source"]
        row["options"] = task["options"]
        row["reference_only"] = task["method"] not in plan.methods
        ordered.append(row)
    _fill_gaps(ordered, plan.objectives)
    reused = len(rows) - computed
    return Comparison(ordered, plan.methods, plan.objectives, computed=computed, reused=reused,
                      meta={"limits": {"run_memory": plan.limits.memory, "run_time": plan.limits.time}})


@dataclass
class _Plan:
    entries: list  # per instance: a _Loaded, or the path of a file the workers read (_read_task)
    methods: list[str]
    objectives: list[str]
    executor: str
    workers: int
    scheduler: str | None
    limits: Limits
    run_methods: list[str] = field(default_factory=list)
    per_method: dict = field(default_factory=dict)
    shipped: dict = field(default_factory=dict)
    pareto: bool = False
    solver: str | None = None
    time_limit: float | None = None
    tasks: list[dict] = field(default_factory=list)

    def build_tasks(self, loaded: Sequence["_Loaded"]) -> None:
        """The runs of every (instance, method) pair, each keyed for the run store."""
        self.tasks = []
        for entry in loaded:
            for name in self.run_methods:
                options = self.per_method[name]
                keyed = {**options, "objectives": self.objectives, "pareto": self.pareto}
                fingerprint = _fingerprint(name)
                if fingerprint is not None:
                    keyed["definition"] = fingerprint
                task = {"instance": entry.payload, "hash": entry.digest, "source": entry.source,
                        "affinity": entry.affinity, "instance_name": entry.name, "fields": entry.fields,
                        "method": name, "options": options, "objectives": self.objectives, "pareto": self.pareto,
                        "run_memory": self.limits.memory, "method_spec": self.shipped.get(name)}
                if self.pareto:
                    pareto_options = {"pareto_solver": self.solver or "highs", "pareto_time_limit": self.time_limit}
                    task.update(pareto_options)
                    keyed.update(pareto_options)
                task["key"] = run_key(entry.digest, name, keyed)
                self.tasks.append(task)


@dataclass(frozen=True)
class _Loaded:
    """One instance as its runs carry it: content digest, pickled columnar copy, and the row fields."""

    digest: str
    payload: bytes
    source: str
    name: str
    fields: dict
    affinity: object  # what the local pool keeps a worker to (the file's path, or digest and source)


def _loaded(inst: Instance, affinity=None) -> _Loaded:
    """Key ``inst`` by its typed columns (no text written) and pack the columns the workers get."""
    digest = instance_digest(inst)
    payload = pickle.dumps(columnar_copy(inst), protocol=pickle.HIGHEST_PROTOCOL)
    source = str(inst.source or inst.name)
    return _Loaded(digest, payload, source, inst.name, _instance_fields(inst, digest),
                   (digest, source) if affinity is None else affinity)


def _positive_number(value, path: str, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"must be a number > 0{' or None' if allow_none else ''}, got {value!r}", path=path)
    return float(value)


def _plan(instances, methods, *, solver, time_limit, fractional, workers, executor, scheduler, objectives,
          method_options, pareto, run_memory, run_time) -> _Plan:
    """Check every argument and option, load the instances and lay out the runs; nothing runs yet."""
    chosen = executor
    executor = "local" if executor is None else executor
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}", path="executor")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"must be an integer >= 1, got {workers!r}", path="workers")
    if scheduler is not None and (executor != "dask" or not isinstance(scheduler, str) or not scheduler.strip()):
        raise InputError("a scheduler address goes with --executor dask only" if executor != "dask"
                         else f"must be a scheduler address, got {scheduler!r}", path="scheduler")
    time_limit = _positive_number(time_limit, "time_limit")
    for value, path in ((fractional, "fractional"), (pareto, "pareto")):
        if not isinstance(value, bool):
            raise InputError(f"must be true or false, got {value!r}", path=path)
    if solver is not None and not isinstance(solver, str):
        raise InputError(f"must be a solver name, got {solver!r}", path="solver")
    limits = Limits(memory=parse_run_memory(run_memory, workers), time=parse_run_time(run_time, time_limit))
    if isinstance(instances, (str, os.PathLike, Instance)):
        instances = [instances]
    instances = list(instances)
    if not instances:
        raise InputError("no instances given", path="instances")
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(dict.fromkeys(methods))
    if not methods:
        raise InputError("no methods given", path="methods")
    for name in methods:
        if not isinstance(name, str):
            raise InputError(f"method names are strings, got {name!r}", path="methods")
        try:
            get_method(name)
        except InputError as err:
            err.path = "methods"
            raise
    objectives = list(objectives) if objectives else default_objectives(methods)
    for name in objectives:
        if name not in OBJECTIVES:
            raise InputError(f"unknown objective {name!r}{suggest(name, OBJECTIVES)}; known: {', '.join(OBJECTIVES)}",
                             path="objectives")
    run_methods = methods + [OBJECTIVES[o].reference for o in objectives if OBJECTIVES[o].reference not in methods]
    run_methods = list(dict.fromkeys(run_methods))
    user_options = _user_options(method_options, run_methods)
    per_method = {name: _checked_options(name, methods, objectives, user_options.get(name, {}), solver=solver,
                                         time_limit=time_limit, fractional=fractional)
                  for name in run_methods}
    stays = {name: problem for name in run_methods if (problem := _travel_problem(name))}
    if chosen is None and workers == 1 and stays:
        name, problem = next(iter(stays.items()))
        warnings.warn(f"method {name!r} cannot be sent to a worker process ({problem}); the comparison runs in "
                      "this process, without the run memory and time caps", stacklevel=4)
        executor = "inline"
    shipped = {name: _shipped(name, executor) for name in run_methods}
    for item in instances:
        if not isinstance(item, (Instance, str, os.PathLike)):
            raise InputError(f"expected an Instance or the path of an instance file, got {type(item).__name__}",
                             path="instances")
    # Several files and several local workers: the workers read them, side by side (_read_task); each
    # keeps what it read for its own runs.  Otherwise this process reads them, one after the other.
    files = sum(not isinstance(item, Instance) for item in instances)
    read_here = executor != "local" or workers < 2 or files < 2
    entries = []
    for item in instances:
        if isinstance(item, Instance):
            entries.append(_loaded(item))
        elif read_here:
            entries.append(_loaded(load_instance(item)))
        else:
            entries.append(os.fspath(item))
    return _Plan(entries, methods, objectives, executor, workers, scheduler, limits, run_methods=run_methods,
                 per_method=per_method, shipped=shipped, pareto=pareto, solver=solver, time_limit=time_limit)


def _user_options(method_options, run_methods: list[str]) -> dict[str, dict]:
    """``method_options`` checked for shape: a mapping of methods of this comparison to mappings."""
    if method_options is None:
        return {}
    if not isinstance(method_options, dict):
        raise InputError(f"must map method names to options, got {type(method_options).__name__}", path="method_options")
    for name, options in method_options.items():
        if name not in run_methods:
            raise InputError(f"options given for {name!r}, which is not in this comparison; "
                             f"methods: {', '.join(run_methods)}", path=f"method_options.{name}")
        if not isinstance(options, dict):
            raise InputError(f"options of {name!r} must be a mapping, got {type(options).__name__}", path=f"method_options.{name}")
    return method_options


#: The comparison-wide arguments that become method options.
_SHARED = ("solver", "time_limit", "fractional")


def _checked_options(name: str, methods: list[str], objectives: list[str], user: dict, *, solver, time_limit,
                     fractional) -> dict:
    """The options a run of ``name`` gets, checked exactly as :func:`laissez_opt.solve` will check them.

    Exact methods get the comparison's solver, time limit and fractional mode and
    one solver thread (workers run side by side); a reference method not asked for
    gets its objective's reference options; ``user`` options override all of them.
    """
    from ..api import solve_options

    spec = get_method(name)
    given = {}
    if spec.kind == "exact":
        given = {"time_limit": time_limit, "fractional": fractional and spec.fractional, "threads": 1}
        if solver is not None:  # else the method's own default route, as lo.solve takes it
            given["solver"] = solver
    for objective in objectives:
        if OBJECTIVES[objective].reference == name and name not in methods:
            given.update(OBJECTIVES[objective].reference_options)
    given.update(user)
    try:
        _, options, _ = solve_options(name, **given)
    except SolverUnavailableError as err:
        where = f"method_options.{name}.solver" if "solver" in user else "solver"
        raise InputError(err.problem, path=where) from None
    except InputError as err:
        option = err.path[len("option "):] if (err.path or "").startswith("option ") else err.path
        if option in user:
            err.path = f"method_options.{name}.{option}"
        elif option in _SHARED:
            err.path = option
        else:
            err.path = f"method_options.{name}" + (f".{option}" if option else "")
        raise err from None
    return options


def _executor_stream(plan: _Plan, feed):
    if plan.executor == "dask":
        return run_dask(_run_task, feed, workers=plan.workers, scheduler=plan.scheduler, limits=plan.limits)
    if plan.executor == "inline":
        return run_inline(_run_task, feed, limits=plan.limits)
    return run_local_pool(_run_task, feed, workers=plan.workers, limits=plan.limits, affinity=_instance_of)


def _instance_of(task: dict):
    """What the local pool keeps a worker to: the task's instance (its file's path, or digest and source)."""
    return task["affinity"]


class _PhasedFeed:
    """The files to read first (:func:`_read_task`), then the runs of the feed set as ``runs``.

    Between the two the pool waits (:data:`WAIT`): every file is read and checked
    before the first run starts.  Asking is free, hence ``poll_interval = 0``.
    """

    poll_interval = 0.0

    def __init__(self, reads: list[dict], runs_bound: int):
        self.reads = deque(reads)
        self.runs = None
        self.runs_bound = runs_bound

    def __len__(self) -> int:
        return len(self.reads) + (self.runs_bound if self.runs is None else len(self.runs))

    def take(self, rank: Callable | None = None):
        """The next file to read, then the next run; :data:`WAIT` until the runs are set."""
        if self.reads:
            return pick_preferred(self.reads, rank)
        if self.runs is None:
            return WAIT
        return self.runs.take(rank)


def _read_in_workers(stream, entries: list) -> list[_Loaded]:
    """Collect the workers' reads of the file ``entries`` (paths) from ``stream``; every entry as a :class:`_Loaded`.

    A file's own error is raised as this process would have raised it, the first
    in the order given; a read whose worker failed (died, went over a cap) is
    done again here, where its error, if any, surfaces.
    """
    wanted = {entry for entry in entries if isinstance(entry, str)}
    outcomes = {}
    for task, outcome in (stream if wanted else ()):
        outcomes[task["read"]] = outcome
        if len(outcomes) == len(wanted):
            break
    loaded = []
    for entry in entries:
        if not isinstance(entry, str):
            loaded.append(entry)
            continue
        outcome = outcomes.get(entry)
        if isinstance(outcome, dict) and "error" in outcome:
            problem, source, path = outcome["error"]
            raise InputError(problem, source=source, path=path)
        if isinstance(outcome, dict) and isinstance(outcome.get("loaded"), _Loaded):
            loaded.append(outcome["loaded"])
        else:
            loaded.append(_loaded(load_instance(entry), affinity=entry))
    return loaded


def _row_from(task: dict, outcome) -> dict:
    """The row of one run: the worker's row, or an error row for a run that could not finish."""
    if isinstance(outcome, Failure):
        row = dict(task["fields"])
        row.update(method=task["method"], kind=get_method(task["method"]).kind, status="error",
                   error_kind=outcome.kind, message=outcome.message, runtime_s=None)
        if outcome.peak_rss_mib is not None:
            row["peak_rss_mib"] = outcome.peak_rss_mib
        return row
    return outcome


def _lookup(run_store: RunStore, task: dict, warned: set) -> dict | None:
    """The stored row of ``task``, or ``None``; a damaged record is reported once (``warned``) and ignored."""
    try:
        return run_store.get(task["key"], method=task["method"], instance_hash=task["hash"],
                             objectives=task["objectives"])
    except DamagedRecord as damage:
        path = run_store.directory / f"{task['key']}.json"
        if path not in warned:
            warned.add(path)
            warnings.warn(RunStoreWarning(f"run store: {path}: damaged record ({damage}); the run is recomputed"),
                          stacklevel=3)
        return None


def _save(run_store: RunStore, task: dict, row: dict) -> None:
    """Store ``row`` if it is an outcome another run would reproduce; never an error row."""
    if row.get("status") not in RESULT_STATUSES:
        return
    stored = {k: v for k, v in row.items() if k not in _NOT_STORED}
    try:
        run_store.put(task["key"], stored)
    except (OSError, DamagedRecord) as exc:
        # The comparison's own result stands; only the cache entry is lost.
        what = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        warnings.warn(RunStoreWarning(f"run store: {run_store.directory / (task['key'] + '.json')}: "
                                      f"cannot store the run ({what}); it will be recomputed next time"),
                      stacklevel=3)


#: Row fields that belong to this comparison only (paths on this machine, our own options view).
_NOT_STORED = ("source", "traceback", "options", "reference_only")


class _StoreFeed:
    """Hands out runs this comparison has claimed in the store; collects runs others finished.

    A run held by another live comparison is deferred, then polled: when its
    record appears it is reused, and when its claim is dropped without a
    record (the other comparison failed or was killed) it is claimed here.
    """

    _POLL = 0.25

    def __init__(self, run_store: RunStore, tasks: list[dict], rows: dict, on_reused: Callable[[], None], warned: set):
        self.store = run_store
        self.warned = warned
        self.queue = deque(tasks)
        self.deferred: list[dict] = []
        self.rows = rows
        self.on_reused = on_reused
        self.claims = {}
        self.reused = 0
        self.last_poll = 0.0

    def __len__(self) -> int:
        return len(self.queue) + len(self.deferred)

    def take(self, rank: Callable | None = None):
        """The next run to compute (the preferred one under ``rank``), :data:`WAIT` while others hold the rest, ``None`` when done."""
        while self.queue:
            task = pick_preferred(self.queue, rank)
            if self._claim(task):
                return task
            if task["key"] not in self.rows:
                self.deferred.append(task)
        if not self.deferred:
            return None
        now = time.monotonic()
        if now - self.last_poll < self._POLL:
            return WAIT
        self.last_poll = now
        for task in list(self.deferred):
            claimed = self._claim(task)
            if claimed or task["key"] in self.rows:
                self.deferred.remove(task)
            if claimed:
                return task
        return WAIT if self.deferred else None

    def _claim(self, task: dict) -> bool:
        claim = self.store.try_claim(task["key"])
        row = _lookup(self.store, task, self.warned)  # finished meanwhile, by us earlier or by another comparison
        if row is not None:
            if claim is not None:
                self.store.release(claim)
            self.rows[task["key"]] = row
            self.reused += 1
            self.on_reused()
            return False
        if claim is None:
            return False
        self.claims[task["key"]] = claim
        return True

    def done(self, task: dict) -> None:
        """The run's outcome is recorded (or not to be kept): drop its claim."""
        claim = self.claims.pop(task["key"], None)
        if claim is not None:
            self.store.release(claim)

    def release_all(self) -> None:
        """Drop every claim still held (the comparison stops early)."""
        for key in list(self.claims):
            self.store.release(self.claims.pop(key), interrupted=True)


def parse_run_memory(value, workers: int = 1) -> int | None:
    """A per-run memory cap in bytes from ``"auto"``, ``None``/``"none"``, bytes, or a size such as ``"512MiB"``.

    Sizes read as :func:`laissez_opt.limits.parse_memory` reads them (``G`` and
    ``GiB`` are 2^30, ``GB`` 10^9).  ``"auto"`` is 80% of the physical memory
    divided by ``workers``.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        try:
            physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
        return int(0.8 * physical / max(1, workers))
    try:
        size = parse_memory(value, path="run_memory")
    except InputError:
        raise InputError(f"expected 'auto', 'none' or a size such as 8G, 512MiB or 2.5GB, got {value!r}",
                         path="run_memory") from None
    if size < 2**20:
        raise InputError(f"must be at least 1 MiB, got {value!r}", path="run_memory")
    return int(size)


def parse_run_time(value, time_limit: float | None = None) -> float | None:
    """A per-run wall-clock cap in seconds from ``"auto"``, ``None``/``"none"`` or a number of seconds.

    ``"auto"`` is ``2 * time_limit + 60`` with a time limit, no cap without one.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return 2 * time_limit + 60 if time_limit else None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(f"expected seconds, 'auto' or 'none', got {value!r}", path="run_time") from None
    return _positive_number(value, "run_time", allow_none=False)
