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
* price of fairness ``(W* - W(x)) / W*`` against the welfare optimum;
* market-clearing prices ``p_{c,r}`` (the duals of the welfare LP's capacity rows,
  :func:`laissez_opt.exact.welfare.market_prices`; for a ``vcg`` result, of the
  auction's LP on bids with reserves, :func:`laissez_opt.exact.vcg.vcg_prices`)
  and what each agent's bundle costs at them, ``sum_{c,r} p_{c,r} x_{i,c,r}``,
  beside the result's payments (VCG's Clarke pivots) when it has any.

A report prints as one line, shows its verdicts and a per-agent table in a
notebook, converts to pandas (:meth:`CheckReport.to_dataframe`) and plots
``phi`` and envy (:meth:`CheckReport.plot`).

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
from ..display import html_block, html_table, text
from ..result import Result, readable_copy
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
    market: dict[str, Any] | None = None  # prices, unit, charges and payments (module docstring)

    def summary(self) -> dict[str, Any]:
        """The verdicts: verified, SI, EF, PE (None: undecided or not checked) and the price of fairness."""
        return {
            "verified": self.verification_ok,
            "sharing_incentive": self.sharing.holds,
            "envy_free": None if self.envy.skipped else self.envy.envy_free,
            "pareto_efficient": None if self.pareto is None else self.pareto.efficient,
            "price_of_fairness": None if self.price is None else round(self.price["price_of_fairness"], 12),
        }

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` report, numbers rounded to twelve significant digits (:mod:`laissez_opt.display`)."""
        ids = self.agents
        return readable_copy(
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
                "market": self.market,
                "timing": self.timing,
                **({"truthfulness": self.truthfulness.to_dict()} if self.truthfulness is not None else {}),
            }
        )

    def to_dataframe(self, what: str = "agents"):
        """A :class:`pandas.DataFrame`: ``"agents"`` (default) or ``"summary"``.

        ``agents``: one row per agent with its utility, equal-share utility,
        ``phi``, largest envy and the agent it is directed at, the cost of its
        bundle at the market-clearing prices and its payment (when the result
        charges one); ``summary``: one row of the verdicts.

        >>> import laissez_opt as lo
        >>> inst = lo.load("instances/hotos25-table1.json")
        >>> lo.check(inst, lo.solve(inst, "greedy")).to_dataframe().columns.tolist()
        ['agent', 'utility', 'equal_share', 'phi', 'largest_envy', 'toward', 'charge_at_prices', 'payment']
        """
        import pandas as pd

        if what == "summary":
            return pd.DataFrame([{"instance": self.instance, "method": self.method, **self.summary()}])
        if what != "agents":
            raise ValueError(f"unknown table {what!r}: agents or summary")
        return pd.DataFrame(self._agent_rows(),
                            columns=["agent", "utility", "equal_share", "phi", "largest_envy", "toward",
                                     "charge_at_prices", "payment"])

    def _agent_rows(self) -> list[list]:
        charges = (self.market or {}).get("charges") or {}
        payments = (self.market or {}).get("payments") or {}
        rows = []
        for k, agent in enumerate(self.agents):
            target = int(self.envy.target_by_agent[k]) if k < self.envy.target_by_agent.size else -1
            envy = float(self.envy.worst_by_agent[k]) if k < self.envy.worst_by_agent.size else None
            rows.append([agent, float(self.utilities[k]), float(self.sharing.equal_share[k]), float(self.sharing.phi[k]),
                         envy if envy is None or np.isfinite(envy) else None,
                         self.agents[target] if target >= 0 else None, charges.get(agent), payments.get(agent)])
        return rows

    def __repr__(self) -> str:
        verdicts = self.summary()
        word = {True: "holds", False: "fails", None: "undecided"}
        return (f"<CheckReport {self.method} on {self.instance}: verified {text(verdicts['verified'])}, "
                f"SI {word[verdicts['sharing_incentive']]} (min phi {text(self.sharing.min_phi, 4)}), "
                f"EF {word[verdicts['envy_free']]}, PE {word[verdicts['pareto_efficient']]}, "
                f"price of fairness {text(verdicts['price_of_fairness'], 4)}>")

    def _repr_html_(self) -> str:
        """The notebook view: the verdicts, then one row per agent (first 20)."""
        verdicts = self.summary()
        word = {True: "holds", False: "fails", None: "undecided / not checked"}
        envy = self.envy
        facts = [
            ("verified", "yes (independent check)" if self.verification_ok else "NO: " + "; ".join(self.violations[:3])),
            ("sharing incentive", f"{word[verdicts['sharing_incentive']]} (min phi {text(self.sharing.min_phi, 4)})"),
            ("envy-free", word[verdicts["envy_free"]] + ("" if envy.pair is None else
                          f" (largest envy {text(envy.largest_envy, 4)}: {self.agents[envy.pair[0]]} toward "
                          f"{self.agents[envy.pair[1]]})")),
            ("Pareto-efficient", word[verdicts["pareto_efficient"]] + (f" ({self.pareto_note})" if self.pareto_note else "")),
            ("price of fairness", verdicts["price_of_fairness"]),
        ]
        if self.market and self.market.get("prices"):
            shown = ", ".join(f"{pool} {text(v if not isinstance(v, list) else v[0], 4)}"
                              for pool, v in list(self.market["prices"].items())[:8])
            facts.append(("market-clearing prices", f"{shown} ({self.market['unit']})"))
        rows = self._agent_rows()[:20]
        caption = "agents" + (f" (first 20 of {len(self.agents)})" if len(self.agents) > 20 else "")
        table = html_table(["agent", "utility", "equal share", "phi", "largest envy", "toward", "charge at prices",
                            "payment"], rows, caption=caption)
        return html_block(f"check of {self.method} on {self.instance} ({self.mode})", facts, [table])

    def plot(self, axes=None):
        """Two panels: ``phi_i`` per agent (the line at 1 is sharing incentive) and each agent's largest envy.

        Returns the two matplotlib axes; ``axes`` (a pair) draws on the
        caller's, by default new ones from pyplot with the user's backend.

        >>> import laissez_opt as lo, matplotlib.pyplot as plt
        >>> inst = lo.load("instances/thesis-r2-table3-1.json")
        >>> left, right = lo.check(inst, lo.solve(inst, "greedy")).plot()
        >>> left.get_ylabel(), right.get_ylabel()
        ('phi_i = U_i / U_i^ex', 'largest weighted envy')
        >>> plt.close(left.figure)
        """
        from ..display import axes as new_axes

        left, right = new_axes(axes, ncols=2, figsize=(10.0, 4.0)) if axes is None else axes
        positions = np.arange(len(self.agents))
        phi = np.where(np.isfinite(self.sharing.phi), self.sharing.phi, np.nan)
        left.bar(positions, phi, color=["tab:green" if v >= 1 - 1e-9 else "tab:red" for v in np.nan_to_num(phi)])
        left.axhline(1.0, color="black", linewidth=1, linestyle="--", label="equal share (SI)")
        left.set_ylabel("phi_i = U_i / U_i^ex")
        left.set_title(f"sharing incentive: min phi {text(self.sharing.min_phi, 4)}")
        left.legend(fontsize="small")
        envy = np.where(np.isfinite(self.envy.worst_by_agent), self.envy.worst_by_agent, 0.0)
        right.bar(positions, envy, color=["tab:red" if v > 1e-9 else "tab:green" for v in envy])
        right.axhline(0.0, color="black", linewidth=1)
        right.set_ylabel("largest weighted envy")
        right.set_title("envy-free" if self.envy.envy_free else f"{self.envy.envious_pairs} envious pair(s)")
        for ax in (left, right):
            ax.set_xticks(positions, labels=self.agents if len(self.agents) <= 30 else [""] * len(self.agents),
                          rotation=45, ha="right")
            ax.set_xlabel("agent")
        left.figure.suptitle(f"check of {self.method} on {self.instance}")
        return left, right


def _market(instance: Instance, result: Result, amounts: np.ndarray) -> dict[str, Any] | None:
    """Market-clearing prices of the instance, each agent's bundle priced at them, and the result's payments."""
    if result.method == "drf":
        return None  # drf's amounts count tasks, not devices
    if result.method == "vcg":
        from ..exact.vcg import vcg_prices

        prices = vcg_prices(instance)
        unit = "money per device-round: bids and reserves of the VCG auction"
    else:
        from ..exact.welfare import market_prices

        prices = market_prices(instance)
        unit = "weighted utility per device and round: duals of the welfare LP's capacity rows"
    if prices is None:
        return None
    per_pool = np.array([[v] if not isinstance(v, list) else v for v in prices.values()], dtype=np.float64)
    cost = per_pool[instance.edge_pool]  # E x R: the price of each edge's pool in each round
    charges = np.bincount(instance.edge_agent, weights=np.sum(cost * amounts, axis=1), minlength=instance.n_agents)
    return {
        "prices": prices,
        "unit": unit,
        "charges": {a.id: float(c) for a, c in zip(instance.agents, charges)},
        "payments": dict(result.payments) if result.payments is not None else None,
    }


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
    market = _market(instance, result, amounts) if outcome.ok else None
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
        market=market,
        timing={
            "metrics_s": t_pareto - start,
            "pareto_s": t_price - t_pareto,
            "welfare_s": end - t_price,
            "total_s": end - start,
        },
    )
