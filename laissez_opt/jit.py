"""Compilation of the numeric kernels with numba, shared by every module that has one.

numba is a dependency; the fallback keeps the package importable (and correct, only
slower) where it is missing.  ``error_model="numpy"`` makes a division by zero give
``inf``/``nan`` as numpy does instead of raising, so a kernel behaves the same compiled
or not.

>>> from laissez_opt.simulate.kernel import dispatch  # a kernel compiled with it
>>> isinstance(HAVE_NUMBA, bool)
True
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

__all__ = ["HAVE_NUMBA", "COMPILED_FROM", "LOAD_BEFORE_CAPS_BELOW", "jit", "load_compiler", "use_compiled"]

#: numba is installed (looked up, not imported: importing this module stays cheap).
HAVE_NUMBA = find_spec("numba") is not None
#: Edge-rounds from which a run takes the compiled passes even before numba is loaded.
COMPILED_FROM = 500_000


def jit(fn):
    """``fn`` compiled in nopython mode (cached on disk, the GIL released); ``fn`` itself without numba.

    It imports numba, so only kernel modules call it, and they are imported when a
    run takes a compiled pass (:func:`use_compiled`).
    """
    if not HAVE_NUMBA:
        return fn
    try:
        import numba
    except ImportError:  # pragma: no cover - found but not importable: plain Python, slower and the same
        return fn
    return numba.njit(cache=True, nogil=True, error_model="numpy")(fn)


def use_compiled(edge_rounds: int) -> bool:
    """Whether a run of ``edge_rounds`` edge-rounds takes the compiled passes.

    Small runs stay free of the numba import (a few tenths of a second and tens of
    MiB the first time): the compiled passes are used once numba is loaded, or from
    :data:`COMPILED_FROM` edge-rounds, where they pay for it.

    >>> use_compiled(0) == ("numba" in sys.modules and HAVE_NUMBA)
    True
    """
    return HAVE_NUMBA and ("numba" in sys.modules or edge_rounds >= COMPILED_FROM)


#: Address-space caps under which numba is loaded before the cap is set (:func:`load_compiler`): its
#: first load maps llvmlite and SciPy's OpenBLAS (built for up to 64 threads).  Measured on a 2-core
#: machine: 100 MiB over the process's size made the load fail or spin, a 3,000 MiB address space held it.
LOAD_BEFORE_CAPS_BELOW = 4 * 2**30


def load_compiler() -> None:
    """Load what numba needs at its first compile or cache load: its target registries, and through them SciPy's BLAS.

    A process that will run kernels under an address-space limit smaller than
    :data:`LOAD_BEFORE_CAPS_BELOW` (the harness's run memory cap) calls this before
    setting the limit: loaded under it, llvmlite fails to map or OpenBLAS cannot
    allocate its buffers and spins instead of failing.  Idempotent; about
    half a second the first time, nothing without numba.
    """
    if HAVE_NUMBA:  # even if this process has not imported numba yet: a large run will, under the limit
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
