"""The result of any method, exact or heuristic, in the contract's result format.

A :class:`Result` prints as one line, shows a summary with its allocation in a
notebook (``_repr_html_``), converts to pandas (:meth:`Result.to_dataframe`)
and draws its allocation (:meth:`Result.plot`).  Written files keep twelve
significant digits of every solver value (:func:`laissez_opt.display.readable`).

>>> import laissez_opt as lo
>>> inst = lo.load("instances/hotos25-table1.json")
>>> lo.solve(inst, "welfare")            # doctest: +ELLIPSIS
<Result welfare on hotos25-table1: optimal, objective 7.68116 (bound 7.68116, gap 0), 2 allocation records, verified, ... s>
>>> lo.solve(inst, "welfare").to_dict()["objective"]
7.681159
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .display import html_block, html_table, readable, readable_time, text
from .instance import Instance

__all__ = ["Result", "RESULT_FORMAT", "METRICS", "allocation_records", "edge_utilities", "readable_copy"]

#: What each figure of ``Result.metrics`` means (``U_i`` agent i's utility, ``w_i`` its weight).
METRICS: dict[str, str] = {
    "total_welfare": "sum_i w_i U_i: the weighted welfare, the objective that method welfare maximises",
    "weighted_welfare": "sum_i w_i U_i / sum_i w_i: the weighted mean utility (total_welfare per unit of weight)",
    "utilitarian": "sum_i U_i: the agents' utilities added, weights ignored",
    "egalitarian": "min_i U_i: the worst-off agent's utility",
    "nash": "sum_i log U_i: Nash welfare (-inf when an agent gets nothing)",
    "jain": "(sum_i U_i)^2 / (n sum_i U_i^2): Jain's fairness index, 1 when every agent gets the same",
    "min_phi": "min_i U_i / U_i^ex: the worst sharing-incentive ratio against the weighted equal share (>= 1: SI holds)",
}

RESULT_FORMAT = "laissez-opt/result"
#: The notebook view lists at most this many agents and pools.
MAX_HTML_ROWS, MAX_HTML_COLUMNS = 20, 12


def allocation_records(instance: Instance, amounts: np.ndarray, *, tol: float = 1e-9) -> list[dict]:
    """Nonzero entries of an ``E x R`` amount array as ``{"agent", "pool", "round", "amount"}`` records."""
    edges, rounds = np.nonzero(amounts > tol)
    # Through the edge views: a large instance read from a file need not build its edge records.
    agents, pools = instance.agents, instance.pools
    return [{"agent": agents[i].id, "pool": pools[c].id, "round": r, "amount": a}
            for i, c, r, a in zip(instance.edge_agent[edges].tolist(), instance.edge_pool[edges].tolist(),
                                  rounds.tolist(), amounts[edges, rounds].tolist())]


def edge_utilities(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}`` per agent from an ``E x R`` amount array."""
    per_edge = np.sum(instance.edge_utility * amounts, axis=1)
    return np.bincount(instance.edge_agent, weights=per_edge, minlength=instance.n_agents)


def _clean(value: Any, digits: int | None = None) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to None.

    With ``digits`` every float is rounded to that many significant digits
    (:func:`laissez_opt.display.readable`): what the result and report files store.
    """
    if isinstance(value, dict):
        return {str(k): _clean(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, digits) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist(), digits)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return None
        return value if digits is None else readable(value, digits)
    return value


def readable_copy(value: Any) -> Any:
    """A JSON-safe copy of ``value`` with solver noise removed: twelve significant digits (see :mod:`laissez_opt.display`).

    >>> readable_copy({"objective": 7.681159000000001, "timing": [np.float64(0.1) + 0.2]})
    {'objective': 7.681159, 'timing': [0.3]}
    """
    return _clean(value, 12)


@dataclass
class Result:
    """An allocation with its provenance: method, solver, status, bound, gap, timings.

    ``status`` is ``optimal``, ``feasible``, ``time_limit`` or ``infeasible``
    (heuristics report ``feasible``: they prove nothing).  ``allocation`` lists
    ``{"agent", "pool", "round", "amount"}`` records; ``amounts`` holds the same
    as an ``E x R`` array aligned with ``instance.edges`` when the result was
    produced in this process.
    """

    instance: str
    method: str
    status: str
    solver: str | None = None
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    allocation: list[dict] = field(default_factory=list)
    utilities: dict[str, float] = field(default_factory=dict)
    payments: dict[str, float] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    route: str | None = None
    solver_status: str | None = None
    mode: str = "integral"
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    verified: bool | None = None
    amounts: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    def to_dict(self) -> dict:
        """The result-file dictionary (contract order first, extensions after)."""
        out = {
            "format": RESULT_FORMAT,
            "version": 1,
            "instance": self.instance,
            "method": self.method,
            "solver": self.solver,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "allocation": self.allocation,
            "utilities": self.utilities,
            "payments": self.payments,
            "metrics": self.metrics,
            "timing": {k: readable_time(v) for k, v in self.timing.items()},
            "params": self.params,
            "route": self.route,
            "solver_status": self.solver_status,
            "mode": self.mode,
            "verified": self.verified,
            "message": self.message,
            "details": self.details,
        }
        return readable_copy(out)

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"

    def to_dataframe(self, what: str = "allocation"):
        """A :class:`pandas.DataFrame`: ``"allocation"`` (default), ``"utilities"``, ``"metrics"``, ``"prices"``, ``"summary"``.

        ``allocation``: one row per (agent, pool, round) with its amount;
        ``utilities``: one row per agent with its utility (and payment when the
        method charges one); ``metrics``: each figure of :attr:`metrics` with
        its meaning (:data:`METRICS`); ``prices``: the market-clearing price of
        each pool and round, where the method's model is an LP
        (``details["prices"]``; empty otherwise); ``summary``: one row of
        the scalar fields.  Needs pandas (``pip install laissez-opt[pandas]``).

        >>> import laissez_opt as lo
        >>> r = lo.solve("instances/hotos25-table1.json", "welfare")
        >>> r.to_dataframe().columns.tolist(), len(r.to_dataframe("metrics")) > 5
        (['agent', 'pool', 'round', 'amount'], True)
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - exercised only without pandas
            raise ImportError("to_dataframe needs pandas: pip install 'laissez-opt[pandas]'") from exc
        if what == "allocation":
            return pd.DataFrame(self.allocation, columns=["agent", "pool", "round", "amount"])
        if what == "utilities":
            frame = pd.DataFrame({"agent": list(self.utilities), "utility": list(self.utilities.values())})
            if self.payments is not None:
                frame["payment"] = [self.payments.get(a, 0.0) for a in self.utilities]
            return frame
        if what == "metrics":
            rows = [(k, v, METRICS.get(k, "")) for k, v in self.metrics.items() if not isinstance(v, (list, dict))]
            return pd.DataFrame(rows, columns=["metric", "value", "meaning"])
        if what == "prices":
            return pd.DataFrame(self.price_records(), columns=["pool", "round", "price"])
        if what == "summary":
            row = {k: v for k, v in self.to_dict().items() if not isinstance(v, (list, dict))}
            row.update({f"metric.{k}": v for k, v in self.metrics.items() if not isinstance(v, (list, dict))})
            row.update({f"time.{k}": v for k, v in self.timing.items()})
            return pd.DataFrame([row])
        raise ValueError(f"unknown table {what!r}: allocation, utilities, metrics, prices or summary")

    # ------------------------------------------------------------ display
    def price_records(self) -> list[dict]:
        """``details["prices"]`` as ``{"pool", "round", "price"}`` records (empty when the method has no prices).

        >>> Result("i", "welfare", "optimal", details={"prices": {"A10": 0.5, "L4": [0.0, 1.0]}}).price_records()
        [{'pool': 'A10', 'round': 0, 'price': 0.5}, {'pool': 'L4', 'round': 0, 'price': 0.0}, {'pool': 'L4', 'round': 1, 'price': 1.0}]
        """
        prices = (self.details or {}).get("prices") or {}
        records = []
        for pool, value in prices.items():
            values = value if isinstance(value, list) else [value]
            records += [{"pool": pool, "round": r, "price": v} for r, v in enumerate(values)]
        return records

    def allocation_matrix(self, round: int | None = None) -> tuple[list[str], list[str], np.ndarray]:
        """``(agents, pools, amounts)``: devices per agent (rows) and pool (columns), summed over rounds or in ``round``.

        Agents and pools are listed in the order they first appear in the
        allocation, after every agent of :attr:`utilities` (agents that got
        nothing keep their row).

        >>> r = Result("i", "m", "feasible", allocation=[{"agent": "A", "pool": "P", "round": 0, "amount": 2.0}],
        ...            utilities={"A": 1.0, "B": 0.0})
        >>> r.allocation_matrix()
        (['A', 'B'], ['P'], array([[2.],
               [0.]]))
        """
        agents = list(dict.fromkeys([*self.utilities, *(rec["agent"] for rec in self.allocation)]))
        pools = list(dict.fromkeys(rec["pool"] for rec in self.allocation))
        row = {a: k for k, a in enumerate(agents)}
        col = {p: k for k, p in enumerate(pools)}
        matrix = np.zeros((len(agents), len(pools)))
        for rec in self.allocation:
            if round is None or rec.get("round", 0) == round:
                matrix[row[rec["agent"]], col[rec["pool"]]] += rec["amount"]
        return agents, pools, matrix

    def __repr__(self) -> str:
        parts = [self.status]
        if self.objective is not None:
            extra = f" (bound {text(self.bound)}, gap {text(self.gap)})" if self.bound is not None else ""
            parts[0] += f", objective {text(self.objective)}{extra}"
        if self.status != "infeasible":
            parts.append(f"{len(self.allocation)} allocation records")
        if self.verified is not None:
            parts.append("verified" if self.verified else "NOT verified")
        if "total_s" in self.timing:
            parts.append(f"{text(self.timing['total_s'], 3)} s")
        return f"<Result {self.method} on {self.instance}: {', '.join(parts)}>"

    def _repr_html_(self) -> str:
        """The notebook view: status, objective, bound, gap, timing, metrics, payments, prices and the allocation."""
        facts = [
            ("status", self.status + (f" ({self.solver_status})" if self.solver_status else "")),
            ("objective", self.objective), ("bound", self.bound), ("gap", self.gap),
            ("solver", f"{text(self.solver)} via {text(self.route)}" if self.solver else "(heuristic)"),
            ("mode", self.mode),
            ("verified", {True: "yes (independent check)", False: "NO", None: "not checked"}[self.verified]),
            ("time", ", ".join(f"{k} {text(v, 3)} s" for k, v in self.timing.items()) or "-"),
        ]
        tables = []
        if self.allocation:
            agents, pools, matrix = self.allocation_matrix()
            shown = agents[:MAX_HTML_ROWS]
            rows = [[a, text(self.utilities.get(a)), *matrix[k, :MAX_HTML_COLUMNS]] for k, a in enumerate(shown)]
            if self.payments is not None:
                rows = [r + [self.payments.get(r[0], 0.0)] for r in rows]
            headers = ["agent", "utility", *pools[:MAX_HTML_COLUMNS]] + (["payment"] if self.payments is not None else [])
            caption = "allocation (devices per agent and pool, summed over rounds)"
            if len(agents) > MAX_HTML_ROWS or len(pools) > MAX_HTML_COLUMNS:
                caption += f"; first {len(shown)} of {len(agents)} agents, {min(len(pools), MAX_HTML_COLUMNS)} of {len(pools)} pools"
            tables.append(html_table(headers, rows, caption=caption))
        prices = self.price_records()
        if prices:
            tables.append(html_table(["pool", "round", "price"], [[p["pool"], p["round"], p["price"]] for p in prices],
                                     caption="market-clearing prices (duals of the capacity rows)"))
        metrics = [(k, v, METRICS.get(k, "")) for k, v in self.metrics.items() if not isinstance(v, (list, dict))]
        if metrics:
            tables.append(html_table(["metric", "value", "meaning"], metrics, caption="metrics"))
        return html_block(f"{self.method} on {self.instance}", facts, tables, self.message)

    def plot(self, ax=None, *, round: int | None = None):
        """Heat map of the allocation, agents (rows) by pools (columns); returns the matplotlib axes.

        ``round``: one round (default: every round added up).  ``ax``: axes to
        draw on; by default new ones from pyplot, with the user's backend.

        >>> import laissez_opt as lo, matplotlib.pyplot as plt
        >>> ax = lo.solve("instances/hotos25-table1.json", "welfare").plot()
        >>> ax.get_title()
        'welfare on hotos25-table1: devices per agent and pool'
        >>> plt.close(ax.figure)
        """
        from .display import axes, heatmap

        agents, pools, matrix = self.allocation_matrix(round)
        when = "" if round is None else f" in round {round}"
        return heatmap(axes(ax), matrix, agents, pools,
                       title=f"{self.method} on {self.instance}: devices per agent and pool{when}", colorbar="devices")
