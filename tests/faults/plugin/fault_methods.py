"""Test-only methods for the fault-injection suite; never shipped with the package.

``fault_stall`` announces that it started (a marker file
``fault_stall.<pid>.<instance>`` in ``$LAISSEZ_FAULT_MARKERS``, holding its process id), then waits until a ``release``
file appears there or ``seconds`` pass, then answers like ``greedy``.  Tests
use it to kill a worker while a run is certainly in progress.

``fault_hog`` touches memory in 16 MiB steps until the allocation fails: a run
that would take the machine down without a memory cap.
"""

from __future__ import annotations

import os
import time

from laissez_opt.method_spec import Method


def _marker(method: str, instance) -> None:
    directory = os.environ.get("LAISSEZ_FAULT_MARKERS")
    if directory:
        final = os.path.join(directory, f"{method}.{os.getpid()}.{instance.name}")
        with open(final + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(final + ".tmp", final)  # a test never reads a marker before its pid is in it


def _as_greedy(instance, method: str):
    from laissez_opt.methods import get_method

    result = get_method("greedy").run(instance)
    result.method = method
    return result


def stall(instance, seconds: float = 60.0, **options):
    """Wait (until released or ``seconds`` pass), then return the greedy allocation."""
    _marker("fault_stall", instance)
    directory = os.environ.get("LAISSEZ_FAULT_MARKERS", "")
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        if directory and os.path.exists(os.path.join(directory, "release")):
            break
        time.sleep(0.02)
    return _as_greedy(instance, "fault_stall")


def hog(instance, **options):
    """Touch memory until the allocation fails (or 64 GiB, which no test machine gives)."""
    _marker("fault_hog", instance)
    chunks = []
    for _ in range(4096):
        chunks.append(b"\x01" * (16 << 20))  # written, so resident, not just reserved
    return _as_greedy(instance, "fault_hog")


METHODS = [
    Method(name="fault_stall", kind="heuristic", objective="as greedy, after a wait", solvers=(),
           fractional=False, summary="test only: waits, then greedy", run=stall),
    Method(name="fault_hog", kind="heuristic", objective="none: exhausts memory", solvers=(),
           fractional=False, summary="test only: allocates until it fails", run=hog),
]


def register(registry=None) -> None:
    """Add the test methods to the method registry (``laissez_opt.methods.METHODS``)."""
    if registry is None:
        from laissez_opt.methods import METHODS as registry
    for spec in METHODS:
        registry[spec.name] = spec
