"""Bounds on every run: a wall-clock deadline and a memory budget, checked before work starts.

A run of any method is bounded twice:

* **time**: :func:`deadline` opens a context in which the whole call (building the
  model, solving it, constructing an incumbent) shares one time limit.  Solver
  routes ask :func:`remaining` for what is left; loops of the heuristics call
  :func:`check_deadline` at safe points.
* **memory**: every method declares an estimator of its size
  (:class:`SizeEstimate`: variables, constraints, non-zeros, dense arrays and,
  for heuristics that hand out devices one by one, elementary steps), and
  :func:`refuse_if_too_large` turns an estimate over the budget into an
  :class:`~laissez_opt.errors.InputError` (exit code 2) that states the estimate,
  before anything is allocated.

The per-item byte costs below were measured with peak resident memory of
HiGHS solves of welfare and leximin models at 10^4 to 10^6 non-zeros
(``benchmarks/memory_estimates.py``); they err on the large side.

Example
-------
>>> est = SizeEstimate(variables=10**6, constraints=10**4, nonzeros=2 * 10**6)
>>> est.bytes() > 100 * 2**20
True
>>> refuse_if_too_large(est, "welfare", max_memory=2**30) is None
True
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import time
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import InputError
from .jit import HAVE_NUMBA

__all__ = [
    "SizeEstimate",
    "DEFAULT_MAX_MEMORY",
    "EXAMINE_BYTES",
    "MAX_STEPS",
    "BYTES_PER_NONZERO",
    "BYTES_PER_VARIABLE",
    "BYTES_PER_CONSTRAINT",
    "BYTES_FIXED",
    "BYTES_COMPILER",
    "compiler_bytes",
    "parse_memory",
    "format_bytes",
    "refuse_if_too_large",
    "deadline",
    "remaining",
    "check_deadline",
    "TimeLimitReached",
]

#: Bytes per constraint-matrix non-zero across the declaration, the solver's row- and
#: column-wise copies, presolve and factorisation (measured: 60 to 140 on HiGHS 1.13).
BYTES_PER_NONZERO = 160
#: Bytes per variable: bounds, costs, integrality, solution, basis and solver work arrays.
BYTES_PER_VARIABLE = 200
#: Bytes per constraint: bounds, duals, basis status and solver work arrays.
BYTES_PER_CONSTRAINT = 200
#: Memory every run takes whatever its size: the solver library's working set, result records,
#: metrics and verification (measured: 10 to 25 MiB on small models; rounded up).
BYTES_FIXED = 48 * 2**20
#: Memory the first compiled kernel of a process takes: numba, llvmlite and the cached machine
#: code (measured: 124 MiB of peak resident memory for the auction's kernels, numba 0.68 on
#: Linux x86_64; rounded up).  Counted only while numba is not loaded yet.
BYTES_COMPILER = 160 * 2**20
#: Heuristics that place devices one at a time refuse more elementary steps than this:
#: at the 10^7 steps per second of their loops, several minutes of work in one round.
MAX_STEPS = 2**32


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def _default_max_memory() -> int:
    """Half the machine's physical memory (8 GiB where it cannot be read)."""
    physical = _physical_memory()
    return physical // 2 if physical else 8 * 2**30


#: The default budget: half the physical memory of this machine.
DEFAULT_MAX_MEMORY = _default_max_memory()
#: Methods that solve on classes of identical agents take a plain size estimate under this many bytes (or
#: under the memory budget, if smaller) as it is, an upper bound of the class model's; over it, the estimate
#: finds the classes first, as the solve will, rather than refuse a run that fits on them.
EXAMINE_BYTES = 1 << 30

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


def parse_memory(value, *, path: str = "max_memory") -> int:
    """A memory size in bytes from an integer or a string such as ``"8G"``, ``"512MiB"``, ``"2.5GB"``.

    Single letters are binary (``G`` = 2^30), ``GB`` decimal, ``GiB`` binary.

    >>> parse_memory("8G"), parse_memory("1.5k"), parse_memory(4096)
    (8589934592, 1536, 4096)
    """
    if isinstance(value, bool):
        raise InputError(f"expected a size such as 8G or a number of bytes, got {value!r}", path=path)
    if isinstance(value, (int, float)):
        amount, unit = float(value), ""
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*", value)
        if not match or match.group(2).lower() not in _UNITS:
            raise InputError(f"expected a size such as 8G, 512MiB or 2.5GB, got {value!r}", path=path)
        amount, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise InputError(f"expected a size such as 8G or a number of bytes, got {value!r}", path=path)
    size = amount * _UNITS[unit]
    if not math.isfinite(size) or size < 1 or size > 2**62:
        raise InputError(f"must be between 1 byte and 4 EiB, got {value!r}", path=path)
    return int(size)


def compiler_bytes(compiles: bool) -> float:
    """:data:`BYTES_COMPILER` for a run that takes compiled kernels in a process without numba loaded yet, else 0.

    Read when the estimate is made: once the run has loaded numba, the memory is the process's.

    >>> compiler_bytes(False)
    0.0
    """
    return float(BYTES_COMPILER) if compiles and HAVE_NUMBA and "numba" not in sys.modules else 0.0


def format_bytes(size: float) -> str:
    """``1536`` -> ``'1.5 KiB'``.

    >>> format_bytes(3 * 2**30), format_bytes(12)
    ('3.0 GiB', '12 B')
    """
    if size < 1024:
        return f"{int(size)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        size /= 1024
        if size < 1024 or unit == "PiB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class SizeEstimate:
    """The size of one run, known before anything is built.

    ``variables``, ``constraints`` and ``nonzeros`` of the largest model solved
    (for sequences of solves, the largest one alive at a time); ``dense_bytes``
    for arrays held outside the model (utility tensors, per-device tables);
    ``steps`` for heuristics that hand out devices one at a time.  ``note`` says
    what dominates.
    """

    variables: float = 0
    constraints: float = 0
    nonzeros: float = 0
    dense_bytes: float = 0
    steps: float = 0
    note: str = ""

    def bytes(self) -> float:
        """Estimated peak memory in bytes (float: an estimate may exceed any integer type)."""
        return (
            BYTES_FIXED
            + float(self.nonzeros) * BYTES_PER_NONZERO
            + float(self.variables) * BYTES_PER_VARIABLE
            + float(self.constraints) * BYTES_PER_CONSTRAINT
            + float(self.dense_bytes)
        )

    def describe(self) -> str:
        parts = []
        if self.variables or self.constraints:
            parts.append(f"{self.variables:.3g} variables, {self.constraints:.3g} constraints, {self.nonzeros:.3g} non-zeros")
        if self.steps:
            parts.append(f"{self.steps:.3g} steps")
        parts.append(f"about {format_bytes(self.bytes())}")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


def refuse_if_too_large(estimate: SizeEstimate, method: str, *, max_memory: int | None = None,
                        max_steps: float = MAX_STEPS, partitions: bool = False) -> None:
    """Raise :class:`InputError` when ``estimate`` exceeds the memory budget or the step budget.

    ``partitions``: the method can be split into random sub-problems; the message
    then suggests the ``partitions`` option with a number of parts that fits.
    """
    budget = DEFAULT_MAX_MEMORY if max_memory is None else max_memory
    if estimate.bytes() > budget:
        hint = ""
        if partitions:
            parts = max(2, math.ceil(2 * estimate.bytes() / budget))
            hint = f", or split it into random parts with a proven gap: partitions={parts} (or partitions=auto)"
        raise InputError(
            f"{method} would need {estimate.describe()}, over the memory budget of {format_bytes(budget)} "
            f"(raise it with --max-memory / max_memory=, or solve a smaller instance{hint})",
            path="max_memory",
        )
    if estimate.steps > max_steps:
        raise InputError(
            f"{method} would take {estimate.steps:.3g} elementary steps ({estimate.describe()}), "
            f"more than the {max_steps:.3g} it accepts",
            path="instance size",
        )


class TimeLimitReached(Exception):
    """Raised by :func:`check_deadline` inside a run whose time limit has passed."""

    def __init__(self, where: str, limit: float):
        self.where = where
        self.limit = limit
        super().__init__(f"time limit of {limit:g} s reached {where}")


_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("laissez_opt_deadline", default=None)


@contextlib.contextmanager
def deadline(time_limit: float | None):
    """Run the body under one wall-clock limit (``None``: none, unless an outer one is tighter)."""
    outer = _DEADLINE.get()
    if time_limit is None:
        token = _DEADLINE.set(outer)
    else:
        end = time.perf_counter() + float(time_limit)
        if outer is not None and outer[0] < end:
            token = _DEADLINE.set(outer)
        else:
            token = _DEADLINE.set((end, float(time_limit)))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining(time_limit: float | None = None) -> float | None:
    """Seconds left: the smaller of ``time_limit`` and the open deadline's rest (``None``: unbounded).

    May be ``<= 0`` when the deadline has passed.
    """
    current = _DEADLINE.get()
    if current is None:
        return time_limit
    left = current[0] - time.perf_counter()
    return left if time_limit is None else min(time_limit, left)


def check_deadline(where: str = "") -> None:
    """Raise :class:`TimeLimitReached` when the open deadline has passed (cheap: one clock read)."""
    current = _DEADLINE.get()
    if current is not None and time.perf_counter() >= current[0]:
        raise TimeLimitReached(where, current[1])
