"""A declared model as a method of the registry: ``declared_method(name, build, ...)``.

``build(instance, **options) -> Model`` declares the model; the method runs
it like a built-in exact method: its options are declared
(:class:`~laissez_opt.method_spec.Option`, checked before any work), the
solver options are the ones every exact method takes, its size estimate is
the declared size of the model (declared once: the run reuses it), and its
result is verified twice, against the declared rows
(:mod:`laissez_opt.declare.verify`) and, through ``lo.solve``, against the
instance.  Because every method's allocation must be feasible for the
instance, the model must keep the families ``capacity(m.x)`` and
``demand(m.x)``.  Register it with :func:`laissez_opt.register_method`.

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.declare import capacity, demand, welfare
>>> def no_a10(instance):
...     m = lo.Model(instance, name="no_a10")
...     m.add(capacity(m.x)); m.add(demand(m.x))
...     m.add(m.x.sum(pool="A10") <= 0, name="a10_closed")
...     m.maximize(welfare(m.x))
...     return m
>>> spec = declared_method("no_a10", no_a10, summary="welfare without the A10")
>>> result = spec.run(lo.load("instances/hotos25-table1.json"))
>>> result.method, result.status, round(result.objective, 6)
('no_a10', 'optimal', 6.458333)
"""

from __future__ import annotations

import hashlib
import inspect
import re
from typing import Callable

from ..errors import InputError
from ..instance import Instance
from ..limits import SizeEstimate
from ..method_spec import Method, Option, solver_options
from ..result import Result
from .model import Model

__all__ = ["declared_method", "DeclaredRun", "SOLVER_KEYS"]

#: Options the runner hands to :meth:`Model.solve`, not to the build function.
SOLVER_KEYS = ("solver", "via", "time_limit", "threads", "mip_gap", "verbose", "backend")
_METHOD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def _fingerprint(build: Callable, options: tuple[Option, ...]) -> str:
    """A digest of the build function's source (or code) and the declared options: changes when either does."""
    try:
        text = inspect.getsource(build)
    except (OSError, TypeError):
        code = getattr(build, "__code__", None)
        text = repr((code.co_code, code.co_consts)) if code is not None else repr(build)
    where = f"{getattr(build, '__module__', '')}.{getattr(build, '__qualname__', '')}"
    return hashlib.sha256(f"{where}\n{text}\n{options!r}".encode("utf-8", "replace")).hexdigest()[:16]


class DeclaredRun:
    """The ``run`` of a declared method: build the model with the method's options, solve it, name the result.

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import capacity, demand, welfare
    >>> def plain(instance):
    ...     m = lo.Model(instance); m.add(capacity(m.x)); m.add(demand(m.x)); m.maximize(welfare(m.x))
    ...     return m
    >>> run = DeclaredRun("plain", plain, (), fractional=False)
    >>> inst = lo.load("instances/hotos25-table1.json")
    >>> run.estimate(inst, {}).variables, round(run(inst, solver="ortools").objective, 6)
    (5.0, 7.681159)
    """

    def __init__(self, name: str, build: Callable, options: tuple[Option, ...], fractional: bool):
        self.name = name
        self.build = build
        self.options = options
        self.fractional = fractional
        self.fingerprint = _fingerprint(build, options)
        self._cache: tuple | None = None

    def __getstate__(self):
        # A declared model held between estimate and run never travels to another process.
        state = dict(self.__dict__)
        state["_cache"] = None
        return state

    def __repr__(self) -> str:
        return f"<declared method {self.name!r}: {getattr(self.build, '__qualname__', self.build)!r}>"

    def _arguments(self, options: dict) -> tuple[dict, dict]:
        """(build arguments with defaults, solver arguments) from checked method options."""
        solve = {k: options[k] for k in SOLVER_KEYS if options.get(k) is not None}
        build = {o.name: options.get(o.name, o.default) for o in self.options}
        if self.fractional:
            build["fractional"] = bool(options.get("fractional") or False)
        return build, solve

    def model(self, instance: Instance, options: dict | None = None) -> Model:
        """The model ``build`` declares for ``instance`` with ``options`` (checked and completed with defaults).

        Raises :class:`InputError` when ``build`` returns no ``lo.Model`` of
        this instance, or one without ``capacity(m.x)`` and ``demand(m.x)``.
        """
        build_args, _ = self._arguments(options or {})
        cached = self._cache
        if cached is not None and cached[0] is instance and cached[1] == build_args:
            self._cache = None
            return cached[2]
        model = self.build(instance, **build_args)
        where = f"method {self.name}"
        if not isinstance(model, Model):
            raise InputError(f"the build function {getattr(self.build, '__qualname__', self.build)!r} returned "
                             f"{type(model).__name__}, not an lo.Model", path=where)
        if model.instance is not instance:
            raise InputError("the build function declared its model over another instance than the one given",
                             path=where)
        kinds = {c.kind for c in model.constraints.values()}
        missing = [kind for kind in ("capacity", "demand") if kind not in kinds]
        if not model.has_allocation or missing:
            raise InputError(
                f"a method's model must keep every allocation feasible for the instance: add "
                f"{' and '.join(f'{k}(m.x)' for k in (missing or ['capacity', 'demand']))} to model {model.name!r}",
                path=where,
            )
        return model

    def lowered(self, instance: Instance, options: dict):
        """The declared model lowered to a :class:`~laissez_opt.modeling.LinearModel` (first objective), for export."""
        return self.model(instance, options).lower()

    def estimate(self, instance: Instance, options: dict) -> SizeEstimate:
        """The declared size of the model (declared here once; :meth:`__call__` reuses it)."""
        model = self.model(instance, options)
        build_args, _ = self._arguments(options)
        self._cache = (instance, build_args, model)
        return model.size()

    def __call__(self, instance: Instance, **options) -> Result:
        build_args, solve_args = self._arguments(options)
        model = self.model(instance, options)
        result = model.solve(**solve_args)
        result.method = self.name
        result.params.update(build_args)
        return result


def declared_method(name: str, build: Callable, *, options=(), objective: str = "", summary: str = "",
                    fractional: bool = False, references=()) -> Method:
    """A :class:`Method` that runs the model ``build(instance, **options)`` declares.

    ``options``: the method's own :class:`Option` declarations, passed to
    ``build`` by name (with their defaults when not given); the solver
    options (``solver``, ``via``, ``time_limit``, ``threads``, ``mip_gap``,
    ``verbose``, ``backend``) are added and go to the solver.  With
    ``fractional=True`` the method has a fractional mode and ``build``
    receives ``fractional=True/False``.
    """
    if not isinstance(name, str) or not _METHOD_NAME.match(name):
        raise InputError(f"a method name is 1 to 64 letters, digits, _ or -, starting with a letter; got {name!r}",
                         path="method")
    if not callable(build):
        raise InputError(f"build must be a function of the instance returning an lo.Model, got {type(build).__name__}",
                         path=f"method {name}")
    if not isinstance(fractional, bool):
        raise InputError(f"fractional must be true or false, got {fractional!r}", path=f"method {name}")
    options = tuple(options)
    for option in options:
        if not isinstance(option, Option):
            raise InputError(f"options are lo.Option declarations, got {type(option).__name__}", path=f"method {name}")
    plumbing = solver_options(fractional=fractional)
    taken = {o.name for o in plumbing}
    clash = sorted(taken & {o.name for o in options})
    if clash:
        raise InputError(f"option names {', '.join(clash)} are the solver's; choose others", path=f"method {name}")
    run = DeclaredRun(name, build, options, fractional)
    text = summary or (inspect.getdoc(build) or "").split("\n", 1)[0] or f"declared model {name}"
    return Method(
        name=name, kind="exact", objective=objective or "declared objective", solvers=("highs", "ortools"),
        fractional=fractional, summary=text, run=run, options=options + plumbing, estimate=run.estimate,
        references=tuple(references), build=run.lowered,
    )
