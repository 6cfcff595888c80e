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

import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InputError
from ..instance import Instance
from ..io import dumps_instance, instance_from_dict, load_instance
from ..method_spec import suggest
from ..methods import get_method, registered_at_runtime
from .executors import EXECUTORS, run_dask, run_local_pool
from .store import RunStore, run_key

__all__ = ["Objective", "OBJECTIVES", "Comparison", "compare", "default_objectives"]


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


def _run_task(task: dict) -> dict:
    """Worker: solve one (instance, method) pair and summarise it as a flat row."""
    from ..api import solve

    instance = instance_from_dict(json.loads(task["instance"]), task["source"])
    if task.get("method_spec") is not None:
        _ensure_registered(task["method_spec"])
    spec = get_method(task["method"])
    options = dict(task["options"])
    if spec.kind == "exact":
        options.setdefault("threads", 1)
    else:
        for name in ("solver", "via", "time_limit", "fractional", "threads"):
            options.pop(name, None)
    row = {
        "instance": instance.name,
        "instance_hash": task["hash"],
        "source": task["source"],
        "agents": instance.n_agents,
        "pools": instance.n_pools,
        "devices": int(instance.counts.sum()),
        "edges": instance.n_edges,
        "rounds": instance.rounds,
        "weight_sum": float(instance.weights.sum()),
        "method": spec.name,
        "kind": spec.kind,
    }
    start = time.perf_counter()
    try:
        result = solve(instance, spec.name, **options)
    except Exception as exc:  # a failed run is a row, never a crashed comparison
        row.update(status="error", message=f"{type(exc).__name__}: {exc}", runtime_s=time.perf_counter() - start)
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
        except Exception as exc:  # an objective that cannot be evaluated here is blank, with the reason
            row[f"value_{name}"] = None
            row.setdefault("notes", []).append(f"{name}: {type(exc).__name__}: {exc}")
    if isinstance(row.get("min_phi"), float):
        row["sharing_incentive"] = row["min_phi"] >= 1 - 1e-9
    if result.amounts is not None and spec.name != "drf":  # drf amounts are tasks, not devices
        from ..analysis.fairness import envy_report

        envy = envy_report(instance, result.amounts, keep_matrix=False)
        row["max_envy"] = envy.largest_envy
        row["envy_free"] = envy.envy_free
        if task.get("pareto"):
            from ..exact.pareto import pareto_check

            check = pareto_check(instance, result, fractional=result.mode == "fractional",
                                 solver=task["options"].get("solver", "highs"),
                                 time_limit=task["options"].get("time_limit"))
            row["pareto_efficient"] = check.efficient
            row["pareto_gain"] = check.total_gain
    return row


def _ensure_registered(spec) -> None:
    """Register a method sent from the parent process (``lo.register_method`` there) unless this process has it."""
    from ..methods import METHODS, register_method

    if spec.name not in METHODS:
        register_method(spec)


def _shipped(name: str, workers: int, executor: str):
    """The method to send to worker processes with each task (None for built-in and plugin methods).

    A method registered in this process exists in no other; it travels with
    its tasks, so its build function must be picklable (defined at the top
    level of an importable module or script).
    """
    import pickle

    spec = registered_at_runtime(name)
    if spec is None:
        return None
    if workers > 1 or executor == "dask":
        try:
            pickle.dumps(spec)
        except Exception as exc:
            raise InputError(
                f"method {name!r} was registered in this process, and worker processes need it sent to them, but "
                f"it cannot be pickled ({type(exc).__name__}: {exc}); define its build function at the top level "
                f"of a module or script, publish it as a plugin, or compare with workers=1",
                path="--methods",
            ) from None
    return spec


def _fingerprint(name: str) -> str | None:
    """A digest of a declared method's definition, so the run store never reuses runs of an older one."""
    return getattr(get_method(name).run, "fingerprint", None)


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
    solver: str = "highs",
    time_limit: float | None = None,
    fractional: bool = False,
    workers: int = 1,
    executor: str = "local",
    scheduler: str | None = None,
    store: str | os.PathLike | None = None,
    progress: bool | None = None,
    objectives: Sequence[str] | None = None,
    method_options: dict[str, dict] | None = None,
    pareto: bool = False,
) -> Comparison:
    """Run every method on every instance; fill in gaps to the exact optimum of each objective.

    ``store``: a directory of finished runs; runs found there are reused, new
    ones are saved as they finish.  ``executor``: ``"local"`` (a process pool
    of ``workers``) or ``"dask"`` (``scheduler`` address, or a local cluster).
    ``objectives`` default to :func:`default_objectives` (weighted welfare, plus
    each objective whose exact reference method is listed).  The exact
    reference methods of the objectives are added to the runs when not listed
    (their rows are marked ``"reference_only"``).  ``method_options`` maps a
    method name to its options (``{"mtf": {"tokens": 7}}``).
    """
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}", path="--executor")
    if not instances:
        raise InputError("no instances given", path="INSTANCE")
    methods = list(dict.fromkeys(methods))
    if not methods:
        raise InputError("no methods given", path="--methods")
    for name in methods:
        get_method(name)
    objectives = list(objectives) if objectives else default_objectives(methods)
    for name in objectives:
        if name not in OBJECTIVES:
            raise InputError(f"unknown objective {name!r}{suggest(name, OBJECTIVES)}; known: {', '.join(OBJECTIVES)}",
                             path="--objectives")
    run_methods = methods + [OBJECTIVES[o].reference for o in objectives if OBJECTIVES[o].reference not in methods]
    run_methods = list(dict.fromkeys(run_methods))
    method_options = method_options or {}
    shipped = {name: _shipped(name, workers, executor) for name in run_methods}
    tasks = []
    for item in instances:
        inst = item if isinstance(item, Instance) else load_instance(item)
        text = dumps_instance(inst)
        import hashlib

        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        source = inst.source or inst.name
        for name in run_methods:
            options = {"solver": solver, "time_limit": time_limit, "fractional": fractional and get_method(name).fractional}
            for objective in objectives:
                if OBJECTIVES[objective].reference == name and name not in methods:
                    options.update(OBJECTIVES[objective].reference_options)
            options.update(method_options.get(name, {}))
            keyed = {**options, "objectives": objectives, "pareto": pareto}
            fingerprint = _fingerprint(name)
            if fingerprint is not None:
                keyed["definition"] = fingerprint
            tasks.append({"instance": text, "hash": digest, "source": str(source), "method": name, "options": options,
                          "objectives": objectives, "pareto": pareto, "method_spec": shipped.get(name),
                          "key": run_key(digest, name, keyed)})
    run_store = RunStore(store) if store is not None else None
    rows: dict[str, dict] = {}
    pending = []
    for task in tasks:
        cached = run_store.get(task["key"]) if run_store is not None else None
        if cached is not None:
            rows[task["key"]] = cached
        else:
            pending.append(task)
    reused = len(tasks) - len(pending)
    if executor == "dask":
        stream = run_dask(_run_task, pending, workers=workers, scheduler=scheduler)
    else:
        stream = run_local_pool(_run_task, pending, workers=workers)
    show = sys.stderr.isatty() if progress is None else progress
    if show and pending:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            job = bar.add_task("comparing", total=len(pending))
            for task, row in stream:
                _record(task, row, rows, run_store)
                bar.advance(job)
    else:
        for task, row in stream:
            _record(task, row, rows, run_store)
    ordered = [rows[t["key"]] for t in tasks]
    for row, task in zip(ordered, tasks):
        row["reference_only"] = task["method"] not in methods
    _fill_gaps(ordered, objectives)
    return Comparison(ordered, methods, objectives, computed=len(pending), reused=reused)


def _record(task: dict, row: dict, rows: dict, run_store: RunStore | None) -> None:
    row["options"] = task["options"]
    rows[task["key"]] = row
    if run_store is not None:
        run_store.put(task["key"], row)
