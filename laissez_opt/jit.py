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

__all__ = ["HAVE_NUMBA", "jit", "load_compiler"]

try:
    import numba as _numba

    HAVE_NUMBA = True

    def jit(fn):
        """``fn`` compiled in nopython mode (cached on disk, the GIL released)."""
        return _numba.njit(cache=True, nogil=True, error_model="numpy")(fn)

except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False

    def jit(fn):
        """``fn`` itself: numba is not installed."""
        return fn


def load_compiler() -> None:
    """Load what numba needs at its first compile or cache load: its target registries, and through them SciPy's BLAS.

    A process that will run kernels under an address-space limit (the harness's run
    memory cap) calls this before setting the limit: loaded under it, OpenBLAS
    cannot allocate its buffers and spins instead of failing.  Idempotent; about
    half a second the first time, nothing without numba.
    """
    if HAVE_NUMBA:
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
