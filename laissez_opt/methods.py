"""The registry of methods: every exact model and heuristic behind one interface.

Each method module exports ``METHOD`` (a :class:`~laissez_opt.method_spec.Method`);
this module imports the modules listed in ``_MODULES``, in listing order.
Three more sources add methods, each a ``Method`` like the built-in ones:

* :func:`register_method` in this process, typically a model declared with
  :class:`laissez_opt.Model` (``register_method(name, build_fn, ...)``);
* plugins: installed distributions that name a ``Method`` (or a module
  exporting ``METHOD``) in the entry point group :data:`ENTRY_POINT_GROUP`
  (``[project.entry-points."laissez_opt.methods"]`` in their
  ``pyproject.toml``, the entry point's name being the method's).  They are
  loaded lazily: the first time a name is not found, or the list of every
  method is asked for (:func:`all_methods`).
"""

from __future__ import annotations

from importlib import import_module

from .errors import InputError
from .instance import Instance
from .method_spec import Method, suggest
from .result import Result

__all__ = [
    "Method", "METHODS", "ENTRY_POINT_GROUP", "get_method", "run_method", "check_options", "register_method",
    "unregister_method", "all_methods", "load_plugins", "registered_at_runtime",
]

#: The entry point group in which plugins declare methods.
ENTRY_POINT_GROUP = "laissez_opt.methods"

_MODULES = (
    "laissez_opt.exact.welfare",
    "laissez_opt.exact.min_cost",
    "laissez_opt.exact.vcg",
    "laissez_opt.exact.themis",
    "laissez_opt.exact.maxmin",
    "laissez_opt.exact.drf",
    "laissez_opt.exact.fair_welfare",
    "laissez_opt.heuristics.greedy",
    "laissez_opt.heuristics.mtf",
    "laissez_opt.exact.migration",
    "laissez_opt.exact.migration_free",
    "laissez_opt.exact.backlog",
    "laissez_opt.heuristics.fcfs_static",
    "laissez_opt.heuristics.myopic",
    "laissez_opt.heuristics.auction",
    "laissez_opt.heuristics.round_robin",
    "laissez_opt.heuristics.time_equal",
    "laissez_opt.heuristics.fixed_partition",
    "laissez_opt.heuristics.dynamic_partition",
    "laissez_opt.heuristics.gandiva_fair",
)

METHODS: dict[str, Method] = {}
"""The registry: method name -> :class:`Method` (built-in, from plugins, or registered), e.g. ``"welfare" in METHODS``."""
for _name in _MODULES:
    _spec = import_module(_name).METHOD
    METHODS[_spec.name] = _spec

_BUILT_IN = frozenset(METHODS)
#: Methods registered by :func:`register_method` in this process (sent along to worker processes).
_RUNTIME: dict[str, Method] = {}
#: Plugin methods: name -> "entry point = object (distribution)".
_PLUGINS: dict[str, str] = {}
#: Plugins that failed to load: entry point name -> the reason.
_BROKEN: dict[str, str] = {}
_plugins_loaded = False


def get_method(name: str) -> Method:
    """The registered method ``name``; :class:`InputError` listing the known ones otherwise.

    >>> get_method("min-cost")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: method: unknown method 'min-cost' (did you mean 'min_cost'?); known methods: ...
    """
    if isinstance(name, str) and name not in METHODS:
        load_plugins()
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        if name in _BROKEN:
            raise InputError(f"method {name!r} comes from a plugin that failed to load: {_BROKEN[name]}",
                             path="method") from None
        known = sorted(METHODS)
        raise InputError(
            f"unknown method {name!r}{suggest(name, known)}; known methods: {', '.join(known)}",
            path="method",
        ) from None


def check_options(name: str, options: dict) -> dict:
    """The options of method ``name``, checked and coerced against its declarations.

    Raises :class:`InputError` naming an unknown option (with the valid ones) or
    an ill-typed value, before any work.

    >>> check_options("maxmin", {"normalizer": "raw", "threads": 2.0})
    {'normalizer': 'raw', 'threads': 2}
    """
    if not isinstance(options, dict):
        raise InputError(f"options must be a mapping of name to value, got {type(options).__name__}", path="options")
    return get_method(name).check_options(options)


def run_method(instance: Instance, name: str, **options) -> Result:
    """Run method ``name`` on ``instance`` with solver options (no verification)."""
    return get_method(name).run(instance, **options)


def register_method(method, build=None, *, options=(), objective: str = "", summary: str = "",
                    fractional: bool = False, replace: bool = False) -> Method:
    """Add a method to the registry of this process; it then runs in ``lo.solve`` and ``lo.compare``.

    ``register_method(name, build, ...)`` registers the model
    ``build(instance, **options) -> lo.Model`` declares, as an exact method
    (:func:`laissez_opt.declare.method.declared_method`: ``options`` are its
    :class:`~laissez_opt.method_spec.Option` declarations, ``fractional``
    whether ``build`` takes ``fractional``); ``register_method(method)``
    registers a :class:`Method` built by hand.  A built-in name cannot be
    taken; a name registered before needs ``replace=True``.  To make a method
    available to every process and to the command line, publish it as a
    plugin (:data:`ENTRY_POINT_GROUP`).

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import capacity, demand, welfare
    >>> def one_each(instance):
    ...     m = lo.Model(instance, name="one_each")
    ...     m.add(capacity(m.x)); m.add(demand(m.x))
    ...     m.add(m.x.sum(by="agent") <= 1, name="one_device")
    ...     m.maximize(welfare(m.x))
    ...     return m
    >>> spec = register_method("one_each", one_each, summary="welfare, one device per agent")
    >>> round(lo.solve("instances/hotos25-table1.json", "one_each").objective, 6)
    7.681159
    >>> _ = unregister_method("one_each")
    """
    from .declare.method import declared_method

    if isinstance(method, Method):
        if build is not None:
            raise InputError("give a Method, or a name and a build function, not both", path="method")
        spec = method
    else:
        if build is None:
            raise InputError("register_method(name, build): the build function is missing", path="method")
        spec = declared_method(method, build, options=options, objective=objective, summary=summary,
                               fractional=fractional)
    if spec.name in _BUILT_IN:
        raise InputError(f"{spec.name!r} is a built-in method; choose another name", path="method")
    if not isinstance(replace, bool):
        raise InputError(f"replace must be true or false, got {replace!r}", path="replace")
    if spec.name in METHODS and not replace:
        origin = "a plugin" if spec.name in _PLUGINS else "this process"
        raise InputError(f"method {spec.name!r} is already registered (by {origin}); pass replace=True to replace it",
                         path="method")
    METHODS[spec.name] = spec
    _RUNTIME[spec.name] = spec
    _PLUGINS.pop(spec.name, None)
    return spec


def unregister_method(name: str) -> Method:
    """Remove a method added by :func:`register_method` (built-in methods stay) and return it.

    >>> unregister_method("welfare")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: method: 'welfare' was not registered in this process
    """
    if name not in _RUNTIME:
        raise InputError(f"{name!r} was not registered in this process", path="method")
    METHODS.pop(name, None)
    return _RUNTIME.pop(name)


def registered_at_runtime(name: str) -> Method | None:
    """The method ``name`` if :func:`register_method` added it in this process (workers need it sent), else None.

    >>> registered_at_runtime("welfare") is None
    True
    """
    return _RUNTIME.get(name)


def load_plugins() -> dict[str, str]:
    """Load every plugin of :data:`ENTRY_POINT_GROUP` once; returns the plugins that failed, with the reasons.

    A plugin names a :class:`Method` or a module exporting ``METHOD``; its
    entry point's name must be the method's name, and may not be a built-in
    or already registered one.  A failing plugin never stops the others.

    >>> isinstance(load_plugins(), dict)
    True
    """
    global _plugins_loaded
    if _plugins_loaded:
        return dict(_BROKEN)
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        origin = f"{point.name} = {point.value}"
        dist = getattr(point, "dist", None)
        if dist is not None:
            origin += f" (from {dist.metadata['Name']})"
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin is reported, never fatal
            _BROKEN[point.name] = f"{origin}: {type(exc).__name__}: {exc}"
            continue
        spec = loaded if isinstance(loaded, Method) else getattr(loaded, "METHOD", None)
        if not isinstance(spec, Method):
            _BROKEN[point.name] = f"{origin}: names a {type(loaded).__name__}, not a Method or a module with METHOD"
        elif spec.name != point.name:
            _BROKEN[point.name] = f"{origin}: the entry point is named {point.name!r} but its method {spec.name!r}"
        elif spec.name in METHODS:
            _BROKEN[point.name] = f"{origin}: the name {spec.name!r} is taken by a built-in or registered method"
        else:
            METHODS[spec.name] = spec
            _PLUGINS[spec.name] = origin
    return dict(_BROKEN)


def all_methods() -> dict[str, Method]:
    """Every method: built-in, registered in this process and from plugins (loaded now if not yet).

    >>> "welfare" in all_methods() and "greedy" in all_methods()
    True
    """
    load_plugins()
    return METHODS
