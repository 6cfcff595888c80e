"""POP-style partitioned solving for instances no single solve reaches, with a proven gap.

:func:`solve` is ``lo.solve``: without the ``partitions`` option it is
:func:`laissez_opt.api.solve` unchanged; with ``partitions=K`` (or ``"auto"``) on
``welfare``, fractional ``maxmin`` or fractional ``themis`` it splits the agents at random into ``K``
parts with ``1/K`` of every pool each (Narayanan et al., POP, SOSP 2021), solves
the parts on the chosen executor (``inline``, ``local``, ``dask``; ``maxmin``:
every leximin level within each part), merges them and reports the gap to a
Lagrangian bound on the whole problem (``maxmin``: of the first level, the
max-min value; ``themis``: a certified lower bound on ``rho*``; ``models/partition.md``).

>>> import laissez_opt as lo
>>> inst = lo.generate("uniform", 60, 4, seed=3)
>>> r = lo.solve(inst, "welfare", partitions=3)
>>> r.status, r.details["partition"]["k"], r.gap >= 0
('feasible', 3, True)
"""

from __future__ import annotations

from ..api import solve as _solve_whole
from ..api import solve_options
from ..errors import InputError
from ..method_spec import PARTITION_OPTION_NAMES
from .core import Problem, lagrangian_bound, split_agents, split_capacity
from .run import PART_LEVELS, solve_arrays, solve_partitioned

__all__ = ["solve", "solve_partitioned", "solve_arrays", "Problem", "split_agents", "split_capacity",
           "lagrangian_bound"]


def solve(instance, method: str = "welfare", *, solver=None, via=None, time_limit=None, fractional=None,
          check: bool = True, raise_infeasible: bool = False, max_memory=None, **options):
    """Solve ``instance`` with ``method``: :func:`laissez_opt.api.solve`, or partitioned with ``partitions=K``.

    With ``partitions`` (``welfare``; ``maxmin`` with ``fractional=True``, each part's
    full leximin, or with ``levels="first_level"`` its max-min LP only; ``themis`` with ``fractional=True``, each part's ``min max rho`` and a
    certified lower bound on the whole ``rho*``): a seeded random split into ``K`` parts of ``1/K`` capacity each, the parts solved on
    ``executor`` (``inline``, ``local`` processes, ``dask``; ``workers``,
    ``scheduler``), the merged allocation verified, and ``bound`` and ``gap``
    proven by a Lagrangian bound from the parts' duals (status ``feasible``;
    ``details["partition"]`` has ``k``, ``seed``, each part's status and time, the
    executor).  ``time_limit`` covers the parts: one it stops keeps its last feasible
    point, one not started gives its agents nothing, and the status is then
    ``time_limit`` (:func:`~laissez_opt.partition.run.solve_partitioned`).  Every other
    argument as in :func:`laissez_opt.api.solve`.

    >>> import laissez_opt as lo
    >>> inst = lo.generate("uniform", 30, 3, seed=1)
    >>> whole, split = lo.solve(inst, "welfare"), lo.solve(inst, "welfare", partitions=1)
    >>> abs(whole.objective - split.objective) < 1e-6, split.gap < 1e-6
    (True, True)
    """
    if options.get("partitions") is None:
        rest = {k: v for k, v in options.items() if k != "partitions"}
        return _solve_whole(instance, method, solver=solver, via=via, time_limit=time_limit, fractional=fractional,
                            check=check, raise_infeasible=raise_infeasible, max_memory=max_memory, **rest)
    from ..api import _as_instance

    spec, opts, _ = solve_options(method, solver=solver, via=via, time_limit=time_limit, fractional=fractional,
                                  **options)
    if "partitions" not in spec.option_names:
        raise InputError(f"{method} cannot be partitioned", path="option partitions")
    instance = _as_instance(instance)
    given = {name: opts[name] for name in PARTITION_OPTION_NAMES if name in opts}
    if method == "themis" and opts.get("fairness_knob", 0.0) != 0:
        raise InputError("partitioned themis takes fairness_knob 0 only (every active agent bids)",
                         path="option fairness_knob")
    taken = {"fractional", "normalizer", "solver", "fairness_knob", "time_limit"} | ({"levels"} if method == "maxmin" else set())
    ignored = sorted(set(opts) - set(PARTITION_OPTION_NAMES) - taken)
    if ignored:
        raise InputError(f"partitioned {method} does not take option {ignored[0]}", path=f"option {ignored[0]}")
    levels = PART_LEVELS.get(opts.get("levels", "auto"))
    if levels is None:
        raise InputError(f"partitioned maxmin takes levels auto (every leximin level in each part) or first_level "
                         f"(the max-min LP only), not {opts['levels']!r}", path="option levels")
    if opts.get("solver", "highs") not in ("auto", "highs"):
        raise InputError("partitioned solving solves the parts with HiGHS; leave solver unset",
                         path="option solver")
    return solve_partitioned(instance, method, partitions=given["partitions"],
                             partition_seed=given.get("partition_seed", 0),
                             capacity_split=given.get("capacity_split", "equal"), executor=given.get("executor", "inline"),
                             workers=given.get("workers"), scheduler=given.get("scheduler"),
                             fractional=bool(opts.get("fractional", False)),
                             normalizer=opts.get("normalizer", "equal_share"), levels=levels, check=check,
                             time_limit=opts.get("time_limit"))
