"""The fairness and efficiency report of one allocation (``laissez-opt check``; ``lo.check``).

For a result (an allocation) on its instance, recompute every figure from the
allocation records and the instance data (never from the numbers the result
file reports):

* verification: :func:`laissez_opt.analysis.verify.verify` (feasibility, and
  whether the file's reported utilities and objective agree with the allocation);
* utilities ``U_i(x) = sum_{c,r} u_{i,c,r} x_{i,c,r}`` and the welfare figures of
  :func:`laissez_opt.analysis.metrics.welfare_figures`;
* sharing incentive: ``phi_i = U_i / U_i^ex`` (thesis 002, eq. 3.3) and SI iff all
  ``phi_i >= 1`` (eq. 3.4);
* weighted envy-freeness (eq. 3.5): the envy matrix ``U_i(X_j)`` (attached up to
  50 agents), the largest envy and its pair;
* Pareto efficiency (eq. 3.6): :func:`laissez_opt.exact.pareto.pareto_check`,
  with its verified certificate when ``x`` is not efficient;
* price of fairness ``(W* - W(x)) / W*`` against the welfare optimum.

The Pareto check runs in the result's mode by default (``fractional`` when the
result is a time-sharing allocation, integral otherwise).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance(pools=[lo.Pool("A10", count=1)], agents=[lo.Agent("A"), lo.Agent("B")],
...                    edges=[lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="toy")
>>> report = lo.check(inst, lo.solve(inst, "welfare"))
>>> report.summary()
{'verified': True, 'sharing_incentive': False, 'envy_free': False, 'pareto_efficient': True, 'price_of_fairness': 0.0}
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..result import Result, _clean
from .fairness import (
    EnvyReport,
    SharingReport,
    allocation_amounts,
    envy_report,
    price_of_fairness,
    sharing_incentive,
)
from .metrics import welfare_figures
from .verify import verify

__all__ = ["CheckReport", "check", "CHECK_FORMAT", "ENVY_MATRIX_MAX_AGENTS"]

CHECK_FORMAT = "laissez-opt/check"
#: The envy matrix is attached to the report up to this many agents.
ENVY_MATRIX_MAX_AGENTS = 50


@dataclass
class CheckReport:
    """Everything :func:`check` found; :meth:`to_dict` is the ``--json`` output."""

    instance: str
    method: str
    result_status: str
    mode: str
    agents: list[str]
    utilities: np.ndarray
    welfare: dict[str, float]
    sharing: SharingReport
    envy: EnvyReport
    pareto: Any  # ParetoCheck | None
    pareto_note: str
    price: dict[str, Any] | None
    verification_ok: bool
    violations: list[str]
    timing: dict[str, float] = field(default_factory=dict)
    truthfulness: Any = None  # TruthfulnessReport when the check probed for misreports

    def summary(self) -> dict[str, Any]:
        """The verdicts: verified, SI, EF, PE (None: undecided or not checked) and the price of fairness."""
        return {
            "verified": self.verification_ok,
            "sharing_incentive": self.sharing.holds,
            "envy_free": self.envy.envy_free,
            "pareto_efficient": None if self.pareto is None else self.pareto.efficient,
            "price_of_fairness": None if self.price is None else round(self.price["price_of_fairness"], 12),
        }

    def to_dict(self) -> dict[str, Any]:
        ids = self.agents
        return _clean(
            {
                "format": CHECK_FORMAT,
                "version": 1,
                "instance": self.instance,
                "method": self.method,
                "result_status": self.result_status,
                "mode": self.mode,
                "summary": self.summary(),
                "verification": {"ok": self.verification_ok, "violations": self.violations},
                "utilities": {a: float(u) for a, u in zip(ids, self.utilities)},
                "welfare": self.welfare,
                "sharing_incentive": self.sharing.to_dict(ids),
                "envy_freeness": self.envy.to_dict(ids),
                "pareto": None if self.pareto is None else self.pareto.to_dict(),
                "pareto_note": self.pareto_note,
                "price_of_fairness": self.price,
                "timing": self.timing,
                **({"truthfulness": self.truthfulness.to_dict()} if self.truthfulness is not None else {}),
            }
        )


def _check_names(instance: Instance, result: Result, source: str | None) -> None:
    if result.instance != instance.name:
        raise InputError(
            f"the result is for instance {result.instance!r}, not {instance.name!r}", source=source, path="$.instance"
        )
    if result.status == "infeasible":
        raise InputError(
            "the result has status infeasible and carries no allocation to check", source=source, path="$.status"
        )
    known = instance.agent_index
    for agent in result.utilities:
        if agent not in known:
            raise InputError(
                f"unknown agent id {agent!r} (instance {instance.name!r} has no such agent)",
                source=source, path=f"$.utilities.{agent}",
            )


def check(
    instance: Instance,
    result: Result,
    *,
    solver: str = "highs",
    fractional: bool | None = None,
    via: str = "direct",
    time_limit: float | None = None,
    keep_matrix: int | bool = ENVY_MATRIX_MAX_AGENTS,
    source: str | None = None,
) -> CheckReport:
    """Fairness and efficiency report of ``result``'s allocation on ``instance`` (module docstring).

    ``fractional`` (default: ``result.mode == "fractional"``) selects the Pareto
    check's mode; ``solver``/``via``/``time_limit`` go to the Pareto check and
    the welfare solve.  A result naming another instance, unknown agents,
    pools or edges, or rounds outside the horizon raises :class:`InputError`
    (``source`` names the result file in the message).  An allocation that
    breaks capacity or demand is reported (verification fails, the Pareto
    check and price of fairness are skipped), not raised.
    """
    from ..exact.pareto import pareto_check

    start = time.perf_counter()
    _check_names(instance, result, source)
    amounts = allocation_amounts(instance, result.allocation, source=source)
    if fractional is None:
        fractional = result.mode == "fractional"
    mode = "fractional" if fractional else "integral"
    outcome = verify(instance, result)
    sharing = sharing_incentive(instance, amounts)
    utilities = sharing.utilities
    figures = welfare_figures(utilities, instance.weights)
    envy = envy_report(instance, amounts, keep_matrix=keep_matrix)
    t_pareto = time.perf_counter()
    pareto, note, price = None, "", None
    try:
        pareto = pareto_check(instance, amounts, fractional=fractional, solver=solver, via=via, time_limit=time_limit)
        note = pareto.message
    except InputError as err:
        if err.path != "$.allocation":
            raise
        note = f"not checked: {err.problem}"
    t_price = time.perf_counter()
    if pareto is not None:
        price = price_of_fairness(instance, amounts, fractional=fractional, solver=solver)
    end = time.perf_counter()
    return CheckReport(
        instance=instance.name,
        method=result.method,
        result_status=result.status,
        mode=mode,
        agents=[a.id for a in instance.agents],
        utilities=utilities,
        welfare=figures,
        sharing=sharing,
        envy=envy,
        pareto=pareto,
        pareto_note=note,
        price=price,
        verification_ok=outcome.ok,
        violations=list(outcome.violations),
        timing={
            "metrics_s": t_pareto - start,
            "pareto_s": t_price - t_pareto,
            "welfare_s": end - t_price,
            "total_s": end - start,
        },
    )
