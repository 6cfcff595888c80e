"""What every method module exports as ``METHOD``: its name, kind, declared options and size estimate.

One rule for options: each method declares every option it accepts
(:class:`Option`: name, type, default, range, help).  :meth:`Method.check_options`
rejects an unknown or ill-typed option with an :class:`~laissez_opt.errors.InputError`
naming the option and listing the valid ones, before any work starts, for the
Python API and the command line alike; ``laissez-opt methods METHOD`` prints the
declarations.

Example
-------
>>> opt = Option("tokens", "int", None, "token pool T", minimum=1, nullable=True)
>>> opt.coerce(7.0, "mtf")
7
>>> opt.coerce("7", "mtf")
Traceback (most recent call last):
...
laissez_opt.errors.InputError: option tokens: mtf expects an integer, got '7' (str)
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Callable, Sequence

from .errors import InputError

__all__ = ["Option", "Method", "OPTION_TYPES", "SOLVER_OPTIONS", "solver_options", "suggest"]

#: ``any`` options (policies, orders) carry a value the method itself checks against the instance.
OPTION_TYPES = ("bool", "int", "float", "str", "choice", "any")


def suggest(name: str, known) -> str:
    """``" (did you mean 'x'?)"`` for a near miss of ``name`` among ``known`` (else ``""``).

    >>> suggest("normaliser", ["normalizer", "freeze"])
    " (did you mean 'normalizer'?)"
    """
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _number(value: float) -> str:
    """A bound as a user types it: whole numbers in full (``4294967295``, not ``4.29497e+09``).

    >>> _number(2**32 - 1), _number(0.5), _number(1e-9)
    ('4294967295', '0.5', '1e-09')
    """
    if float(value).is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:g}"


def _kind(value) -> str:
    return type(value).__name__


@dataclass(frozen=True)
class Option:
    """One declared option: ``type`` in :data:`OPTION_TYPES`, a default and its admissible values.

    ``minimum``/``maximum`` bound numbers (inclusive); ``above`` is a strict lower
    bound; ``nullable`` admits ``None``; ``choices`` lists the values of a
    ``choice``; ``accepts`` describes the values of an ``any`` option, whose
    ``types`` tuple is checked here and whose content the method checks.
    """

    name: str
    type: str
    default: Any
    help: str
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    nullable: bool = False
    accepts: str = ""
    types: tuple = ()

    def __post_init__(self):
        if self.type not in OPTION_TYPES:  # pragma: no cover - a declaration bug
            raise ValueError(f"option {self.name}: unknown type {self.type!r}")

    def describe_type(self) -> str:
        """Human-readable type and range, as ``laissez-opt methods METHOD`` prints it."""
        if self.type == "choice":
            text = " | ".join(str(c) for c in self.choices)
        elif self.type == "any":
            text = self.accepts or "any"
        else:
            text = {"bool": "true | false", "int": "integer", "float": "number", "str": "text"}[self.type]
            bounds = []
            if self.above is not None:
                bounds.append(f"> {self.above:g}")
            if self.minimum is not None:
                bounds.append(f">= {_number(self.minimum)}")
            if self.maximum is not None:
                bounds.append(f"<= {_number(self.maximum)}")
            if bounds:
                text += " " + ", ".join(bounds)
        return text + (" | null" if self.nullable else "")

    def coerce(self, value: Any, method: str) -> Any:
        """``value`` checked against the declaration (integral floats become ints); InputError otherwise."""
        where = f"option {self.name}"
        if value is None:
            if self.nullable:
                return None
            raise InputError(f"{method} needs a value ({self.describe_type()}), got null", path=where)
        expected = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "text",
                    "choice": "one of " + ", ".join(repr(c) for c in self.choices)}.get(self.type)
        if self.type == "bool":
            if isinstance(value, bool):
                return value
        elif self.type == "int":
            if isinstance(value, Integral) and not isinstance(value, bool):
                return self._in_range(int(value), method, where)
            if isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and float(value).is_integer():
                return self._in_range(int(value), method, where)
        elif self.type == "float":
            if isinstance(value, Real) and not isinstance(value, bool):
                if not math.isfinite(float(value)):
                    raise InputError(f"{method} expects a finite number, got {value!r}", path=where)
                return self._in_range(float(value), method, where)
        elif self.type == "str":
            if isinstance(value, str):
                return value
        elif self.type == "choice":
            if isinstance(value, str) and value in self.choices:
                return value
            if isinstance(value, str):
                raise InputError(f"{method} expects {expected}, got {value!r}{suggest(value, self.choices)}", path=where)
        else:  # any: a light type check; the method checks the content against the instance
            if not self.types or isinstance(value, self.types):
                return value
            expected = self.accepts or "another type"
        raise InputError(f"{method} expects {expected}, got {value!r} ({_kind(value)})", path=where)

    def _in_range(self, value, method: str, where: str):
        if self.above is not None and not value > self.above:
            raise InputError(f"{method} expects a value > {self.above:g}, got {value!r}", path=where)
        if self.minimum is not None and value < self.minimum:
            raise InputError(f"{method} expects a value >= {self.minimum:g}, got {value!r}", path=where)
        if self.maximum is not None and value > self.maximum:
            raise InputError(f"{method} expects a value <= {self.maximum:g}, got {value!r}", path=where)
        return value


def solver_options(*, fractional: bool, mip_gap: float | None = 1e-7, backend: bool = True,
                   auto: bool = False) -> tuple[Option, ...]:
    """The options every exact method takes from the solver plumbing, declared once.

    ``mip_gap=None`` leaves the MIP gap out (methods that solve only LPs).
    ``auto=True``: the solver defaults to ``auto``, the fastest exact route for the
    model (:func:`laissez_opt.modeling.solve.pick_route`).
    """
    options = [
        Option("solver", "str", "auto", "auto (min-cost flow for a transportation structure with exactly "
               "scaled costs, else HiGHS), highs or ortools; with via=pyomo any solver Pyomo knows")
        if auto else Option("solver", "str", "highs", "highs or ortools; with via=pyomo any solver Pyomo knows"),
        Option("via", "choice", "direct", "direct: highspy matrix API / OR-Tools; pyomo: a Pyomo model",
               choices=("direct", "pyomo")),
        Option("time_limit", "float", None, "seconds for building and solving together", above=0, nullable=True),
    ]
    if fractional:
        options.append(Option("fractional", "bool", False, "solve the time-sharing (LP) version"))
    options += [
        Option("threads", "int", None, "solver threads", minimum=1, maximum=1024, nullable=True),
    ]
    if mip_gap is not None:
        options.append(Option("mip_gap", "float", mip_gap, "relative MIP gap at which the solver stops", minimum=0, maximum=1))
    options.append(Option("verbose", "bool", False, "print the solver's log"))
    if backend:
        options.append(Option("backend", "choice", None, "force an OR-Tools backend (implies solver=ortools; refused with any other solver or via=pyomo)",
                              choices=("min_cost_flow", "glop", "cp_sat", "scip"), nullable=True))
    return tuple(options)


#: The solver options of an exact method with a fractional mode.
SOLVER_OPTIONS = solver_options(fractional=True)


#: Names of the partitioned-solving options (:func:`partition_options`).
PARTITION_OPTION_NAMES = ("partitions", "partition_seed", "capacity_split", "executor", "workers", "scheduler")


def refuse_partitions(method: str, partitions) -> None:
    """The exact entry points solve the whole instance; ``partitions=K`` runs through ``lo.solve``.

    >>> refuse_partitions("welfare", None) is None
    True
    """
    if partitions is not None:
        raise InputError(f"{method}: partitioned solving runs through lo.solve (laissez_opt.partition.solve), "
                         "not the method's entry point", path="option partitions")


def partition_options() -> tuple[Option, ...]:
    """The options of POP-style partitioned solving (``laissez_opt.partition``), declared once.

    ``partitions=None`` (default) solves the whole instance; an integer ``K >= 1``
    or ``"auto"`` splits the agents at random into ``K`` parts with ``1/K`` of every
    pool each and reports the merged allocation with a proven gap.
    """
    return (
        Option("partitions", "any", None, "split into K random sub-problems with proportional capacity "
               "(POP) and report the proven gap; null: solve the whole instance",
               accepts="integer >= 1 | auto", types=(int, str), nullable=True),
        Option("partition_seed", "int", 0, "seed of the random split (partitions)", minimum=0, maximum=2**32 - 1),
        Option("capacity_split", "choice", "equal", "each part's share of a pool (partitions, time-sharing "
               "models): equal k_c/K (POP), or sqrt, in proportion to the square root of the part's edges "
               "at the pool", choices=("equal", "sqrt")),
        Option("executor", "choice", "inline", "where the parts run (partitions): this process, local "
               "worker processes or a Dask cluster", choices=("inline", "local", "dask")),
        Option("workers", "int", None, "worker processes for executor local or dask (partitions; "
               "default: the CPU count, at most the number of parts)", minimum=1, maximum=1024, nullable=True),
        Option("scheduler", "str", None, "Dask scheduler address (executor dask); null: a local cluster",
               nullable=True),
    )


@dataclass(frozen=True)
class Method:
    """A method's name, kind (``exact`` or ``heuristic``), objective, solvers, options and entry point.

    ``run(instance, **options) -> Result`` receives only declared options.
    ``estimate(instance, options) -> SizeEstimate`` sizes a run before it starts
    (:mod:`laissez_opt.limits`); ``None`` for methods whose size is linear in
    the instance's edges and rounds (the default estimate covers them).

    ``build(instance, options) -> LinearModel`` (exact methods) declares the
    optimisation model the method solves, for export (``lo.build``,
    ``laissez-opt solve --write-model``); ``options`` holds every declared
    option, defaults filled in, and the ``build_options`` (options only the
    export takes, such as the level of a parametric model).  ``exported``
    says in one sentence which model that is when the method solves several
    (the first level of a leximin, the parametric model at its optimum).
    """

    name: str
    kind: str
    objective: str
    solvers: tuple[str, ...]
    fractional: bool
    summary: str
    run: Callable
    options: tuple[Option, ...] = ()
    estimate: Callable | None = None
    references: tuple[str, ...] = field(default=())
    build: Callable | None = None
    build_options: tuple[Option, ...] = ()
    exported: str = ""

    def option(self, name: str) -> Option:
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(name)

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options)

    def check_options(self, options: dict) -> dict:
        """The given options, each checked and coerced; InputError for an unknown or ill-typed one."""
        declared = {o.name: o for o in self.options}
        out = {}
        for name, value in options.items():
            if name not in declared:
                valid = ", ".join(declared) or "none"
                raise InputError(
                    f"{self.name} has no option {name!r}{suggest(name, declared)}; valid options: {valid}",
                    path=f"option {name}",
                )
            out[name] = declared[name].coerce(value, self.name)
        return out

    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}


def state_option(fields: str) -> Option:
    """The declared ``state`` option of a method that carries ``fields`` from one run to the next.

    A simulation hands each round's run the ``details["state"]`` of the previous one, so
    budgets, turns and tickets (or, for an exact model, the last optimum that seeds a search)
    continue across rounds instead of restarting.

    >>> state_option("turn").describe_type()
    "details['state'] of an earlier run | null"
    """
    return Option("state", "any", None, f"continue an earlier run from its details['state'] ({fields})",
                  nullable=True, types=(dict,), accepts="details['state'] of an earlier run")


def read_state(state, method: str, fields: Sequence[str]) -> dict | None:
    """Check the ``state`` option of ``method``: ``None``, or a dict with exactly ``fields``.

    Returns the dict (``None`` when no state is given); the caller checks the values.

    >>> read_state({"turn": "A"}, "round_robin", ["turn"])
    {'turn': 'A'}
    >>> read_state({"turn": "A", "x": 1}, "round_robin", ["turn"])
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: state: round_robin state has fields turn, got turn, x
    """
    if state is None:
        return None
    if not isinstance(state, dict) or sorted(state) != sorted(fields):
        got = (", ".join(sorted(state)) or "no fields") if isinstance(state, dict) else type(state).__name__
        raise InputError(f"{method} state has fields {', '.join(fields)}, got {got}", path="state")
    return state
