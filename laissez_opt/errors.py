"""Exceptions that the library raises on purpose.

Every error a user can cause carries enough context to be printed as one line:
the file (or ``<dict>`` for in-memory data), the JSON path inside it, and what
is wrong.  The command line maps them to the contract's exit codes.
"""

from __future__ import annotations

__all__ = [
    "LaissezOptError",
    "InputError",
    "WriteRefusedError",
    "InfeasibleError",
    "NoSolutionError",
    "SolverError",
    "SolverUnavailableError",
    "VerificationError",
    "NotProvenError",
    "RunsFailedError",
]


class LaissezOptError(Exception):
    """Base class of the library's deliberate errors."""

    exit_code = 1


class InputError(LaissezOptError, ValueError):
    """Bad input: a malformed file, an unknown id, a number out of range, a bad option.

    ``str(error)`` is ``"<source>: <json path>: <problem>"`` on one line.
    """

    exit_code = 2

    def __init__(self, problem: str, *, source: str | None = None, path: str | None = None):
        self.problem = " ".join(str(problem).split())
        self.source = source
        self.path = path
        super().__init__(self.problem)

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.path) if p]
        parts.append(self.problem)
        return ": ".join(parts)

    def located(self, source: str) -> "InputError":
        """The same error, naming ``source`` when it did not name a file yet."""
        if self.source is None:
            self.source = source
        return self


class WriteRefusedError(InputError, OSError):
    """The system refused to write or create ``source`` (read-only, full, special): exit code 2.

    It is both an :class:`InputError` (the command line reports one line naming
    the path, exit code 2) and the :class:`OSError` that caused it, with the
    same ``errno`` and ``strerror``, so code that handles disk errors as
    ``OSError`` keeps working.

    >>> error = WriteRefusedError.from_os_error("cannot write the file", "out.json", OSError(28, "No space left on device"))
    >>> isinstance(error, OSError), error.errno, str(error)
    (True, 28, 'out.json: cannot write the file: No space left on device')
    """

    @classmethod
    def from_os_error(cls, action: str, source: str, error: OSError) -> "WriteRefusedError":
        refused = cls(f"{action}: {error.strerror or error}", source=source)
        refused.errno, refused.strerror, refused.filename = error.errno, error.strerror, source
        return refused


class InfeasibleError(LaissezOptError):
    """The instance admits no solution for the requested method (exit code 3)."""

    exit_code = 3

    def __init__(self, reason: str, *, result=None):
        self.reason = reason
        self.result = result
        super().__init__(reason)


class NoSolutionError(LaissezOptError):
    """A time limit (or another solver stop) ended the search before any solution was found."""

    exit_code = 4


class SolverError(LaissezOptError):
    """A solver returned a status our models cannot produce (for example unbounded): a bug."""

    exit_code = 1


class SolverUnavailableError(LaissezOptError):
    """The requested solver or route does not exist here or cannot take this model.

    ``path`` names the argument that asked for it (``solver``), as :class:`InputError` does.

    >>> str(SolverUnavailableError("no such solver", path="solver"))
    'solver: no such solver'
    """

    exit_code = 2

    def __init__(self, problem: str, *, path: str | None = None):
        self.problem = problem
        self.path = path
        super().__init__(problem)

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}" if self.path else self.problem


class VerificationError(LaissezOptError):
    """A returned allocation failed independent verification: a bug, never a user error."""

    exit_code = 1


class NotProvenError(LaissezOptError):
    """A certificate did not prove the claim it was checked for (exit code 5); the message names the failing row."""

    exit_code = 5


class RunsFailedError(LaissezOptError):
    """A comparison finished and wrote its reports, but some of its runs failed (exit code 6).

    The reports list each failed run with its reason; the command line exits 6 so
    that scripts notice.

    >>> str(RunsFailedError("1 of 4 runs failed"))
    '1 of 4 runs failed'
    """

    exit_code = 6
