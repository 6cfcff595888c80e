"""The description every method module exports as ``METHOD`` (read by :mod:`laissez_opt.methods`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Method"]


@dataclass(frozen=True)
class Method:
    """A method's name, kind (``exact`` or ``heuristic``), objective, solvers and entry point.

    ``run(instance, **options) -> Result``; exact methods accept ``solver``, ``via``,
    ``time_limit`` and ``fractional``.
    """

    name: str
    kind: str
    objective: str
    solvers: tuple[str, ...]
    fractional: bool
    summary: str
    run: Callable
