"""The registry of methods: every exact model and heuristic behind one interface.

Each method module exports ``METHOD`` (a :class:`~laissez_opt.method_spec.Method`);
this module imports the modules listed in ``_MODULES``, in listing order.
"""

from __future__ import annotations

from importlib import import_module

from .errors import InputError
from .instance import Instance
from .method_spec import Method, suggest
from .result import Result

__all__ = ["Method", "METHODS", "get_method", "run_method", "check_options"]

_MODULES = (
    "laissez_opt.exact.welfare",
    "laissez_opt.exact.min_cost",
    "laissez_opt.exact.vcg",
    "laissez_opt.exact.themis",
    "laissez_opt.exact.maxmin",
    "laissez_opt.exact.drf",
    "laissez_opt.heuristics.greedy",
    "laissez_opt.heuristics.mtf",
    "laissez_opt.exact.migration",
    "laissez_opt.exact.migration_free",
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
for _name in _MODULES:
    _spec = import_module(_name).METHOD
    METHODS[_spec.name] = _spec


def get_method(name: str) -> Method:
    """The registered method ``name``; :class:`InputError` listing the known ones otherwise.

    >>> get_method("min-cost")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: method: unknown method 'min-cost' (did you mean 'min_cost'?); known methods: ...
    """
    try:
        return METHODS[name]
    except (KeyError, TypeError):
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
