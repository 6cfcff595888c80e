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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..display import html_block, html_table, readable, readable_time, text
from ..instance import Instance

__all__ = ["Result", "RESULT_FORMAT", "METRICS", "AgentTable", "AllocationColumns", "allocation_columns", "allocation_records",
           "AgentValues", "agent_values", "edge_utilities", "readable_copy", "utility_map"]

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
    """Entries of an ``E x R`` amount array above ``tol`` as ``{"agent", "pool", "round", "amount"}`` records."""
    # Through the edge views: a large instance read from a file need not build its edge records.
    return allocation_columns(instance, amounts, tol=tol).build()


class AllocationColumns:
    """An allocation kept as columns until its records are asked for.

    ``edge``, ``round`` and ``amount`` list the nonzero entries ``x_{e,r}`` of an
    ``E x R`` amount array (edge rows of ``instance``, in row order).  A result
    holding one builds its ``{"agent", "pool", "round", "amount"}`` records on
    first use of :attr:`Result.allocation` (:meth:`build`); until then the
    verifier reads the columns themselves, so a solve of a million jobs that is
    checked but never written pays no Python object per record.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/hotos25-table1.json")
    >>> amounts = np.zeros((inst.n_edges, inst.rounds)); amounts[1, 0] = 2.0
    >>> columns = allocation_columns(inst, amounts)
    >>> len(columns), columns.build() == allocation_records(inst, amounts)
    (1, True)
    """

    __slots__ = ("instance", "edge", "round", "amount")

    def __init__(self, instance: Instance, edge: np.ndarray, round: np.ndarray, amount: np.ndarray):
        self.instance, self.edge, self.round, self.amount = instance, edge, round, amount

    def __len__(self) -> int:
        return int(self.edge.size)

    def build(self) -> list[dict]:
        """The records, built from the instance's edge columns and ids (no edge or agent records needed)."""
        instance = self.instance
        agent_ids, pool_ids = list(instance.agent_index), [pool.id for pool in instance.pools]
        return [{"agent": agent_ids[i], "pool": pool_ids[c], "round": r, "amount": a}
                for i, c, r, a in zip(instance.edge_agent[self.edge].tolist(), instance.edge_pool[self.edge].tolist(),
                                      self.round.tolist(), self.amount.tolist())]


def allocation_columns(instance: Instance, amounts: np.ndarray, *, tol: float = 1e-9) -> AllocationColumns:
    """The entries of an ``E x R`` amount array above ``tol`` as :class:`AllocationColumns` (records deferred)."""
    edges, rounds = np.nonzero(amounts > tol)
    return AllocationColumns(instance, edges, rounds, amounts[edges, rounds])


def utility_map(instance: Instance, utilities) -> dict[str, float]:
    """``{agent id: U_i}`` in the instance's order from one value per agent row (no agent record needed)."""
    return dict(zip(instance.agent_index, np.asarray(utilities, dtype=np.float64).tolist()))


class AgentValues(Mapping):
    """One value per agent row of ``instance`` (``U_i``): a read-only mapping by agent id over an array.

    A result holding one as its utilities builds the ``{agent id: U_i}`` dict on
    first use of :attr:`Result.utilities` (:meth:`build`); the verifier and the
    metrics read the array.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/hotos25-table1.json")
    >>> values = agent_values(inst, [1.0, 2.0])
    >>> values["B"], values.build()
    (2.0, {'A': 1.0, 'B': 2.0})
    """

    __slots__ = ("instance", "values")

    def __init__(self, instance: Instance, values: np.ndarray):
        self.instance, self.values = instance, values

    def __len__(self) -> int:
        return int(self.values.size)

    def __iter__(self):
        return iter(self.instance.agent_index)

    def __getitem__(self, agent_id: str) -> float:
        return float(self.values[self.instance.agent_index[agent_id]])

    def build(self) -> dict[str, float]:
        return utility_map(self.instance, self.values)


class AgentTable(Mapping):
    """Per-agent records ``{agent id: {field: value}}`` read from columns, each built when first read.

    A method that reports a few figures for every agent (Themis's ``details["agents"]``:
    ``rho_i``, rates, finish times) hands over its numpy columns; a million per-agent dicts
    cost seconds that a solve should not pay when nobody reads them.  ``columns`` maps each
    field to an array with one entry per agent row of ``instance``; ``absent`` maps a field
    to a boolean array that is True where its value is ``None``.  Values come out as Python
    numbers (``float``, ``bool``, ``int``), exactly what ``tolist`` gives.  Pickling and
    copying give the built dict.

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.load("instances/hotos25-table1.json")
    >>> table = AgentTable(inst, {"rho": np.array([1.5, 2.0]), "active": np.array([True, False])},
    ...                    {"rho": np.array([False, True])})
    >>> table["A"], table["B"]
    ({'rho': 1.5, 'active': True}, {'rho': None, 'active': False})
    """

    __slots__ = ("instance", "columns", "absent", "_built")

    def __init__(self, instance: Instance, columns: dict[str, np.ndarray], absent: dict[str, np.ndarray] | None = None):
        for name, column in columns.items():
            if column.shape != (instance.n_agents,):
                raise ValueError(f"column {name!r} has shape {column.shape}, expected ({instance.n_agents},)")
        self.instance, self.columns, self.absent, self._built = instance, columns, absent or {}, None

    def __len__(self) -> int:
        return self.instance.n_agents

    def __iter__(self):
        return iter(self.instance.agent_index)

    def __getitem__(self, agent_id: str) -> dict:
        if self._built is not None:
            return self._built[agent_id]
        row = self.instance.agent_index[agent_id]
        absent = self.absent
        return {name: None if name in absent and absent[name][row] else column[row].item()
                for name, column in self.columns.items()}

    def build(self) -> dict[str, dict]:
        """The whole ``{agent id: record}`` dict (built once, then kept)."""
        if self._built is None:
            names = tuple(self.columns)
            values = []
            for name in names:
                column = self.columns[name].tolist()
                mask = self.absent.get(name)
                if mask is not None and mask.any():
                    column = [None if gone else v for v, gone in zip(column, mask.tolist())]
                values.append(column)
            self._built = {agent: dict(zip(names, row)) for agent, row in zip(self.instance.agent_index, zip(*values))}
        return self._built

    def __reduce__(self):
        return dict, (self.build(),)


def agent_values(instance: Instance, values) -> AgentValues:
    """``values`` (one per agent row of ``instance``) as :class:`AgentValues`, checked for length."""
    values = np.array(values, dtype=np.float64).reshape(-1)
    if values.size != instance.n_agents:
        raise ValueError(f"{values.size} values for {instance.n_agents} agents")
    return AgentValues(instance, values)


def edge_utilities(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``U_i = sum_{c,r} u_{i,c,r} x_{i,c,r}`` per agent from an ``E x R`` amount array."""
    per_edge = np.sum(instance.edge_utility * amounts, axis=1)
    return np.bincount(instance.edge_agent, weights=per_edge, minlength=instance.n_agents)


def _clean(value: Any, digits: int | None = None) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to None.

    With ``digits`` every float is rounded to that many significant digits
    (:func:`laissez_opt.display.readable`): what the result and report files store.
    """
    if isinstance(value, AgentTable):
        value = value.build()
    if isinstance(value, Mapping):
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
    produced in this process.  A method may hand over its allocation as
    :class:`AllocationColumns`: the records are then built on first use of
    ``allocation`` (and before pickling), and until then
    :func:`~laissez_opt.analysis.verify.verify` checks the columns.
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

    def __post_init__(self) -> None:
        # A relative gap is undefined on an objective of 0 (relative_gap gives None there, never
        # an absurd 1e9): say so, with the absolute gap, instead of leaving a bare null.
        if (self.gap is None and self.status in ("time_limit", "feasible") and self.objective is not None
                and self.bound is not None and math.isfinite(self.bound) and "gap n/a" not in self.message):
            note = (f"gap n/a: the relative gap is undefined on an objective of {self.objective:g} "
                    f"(absolute gap {abs(self.bound - self.objective):.6g})")
            self.message = f"{self.message}; {note}" if self.message else note

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    @property
    def allocation_columns(self) -> AllocationColumns | None:
        """The allocation as columns while its records are not built yet, else ``None``."""
        return self.__dict__.get("_allocation_later")

    @property
    def utility_values(self) -> AgentValues | None:
        """The utilities as an array while their dict is not built yet, else ``None``."""
        return self.__dict__.get("_utilities_later")

    def allocation_size(self) -> int:
        """The number of allocation records, without building them."""
        deferred = self.allocation_columns
        return len(deferred) if deferred is not None else len(self.allocation)

    def utility_array(self, instance: Instance) -> np.ndarray:
        """The reported utility of every agent of ``instance``, in its row order, as floats."""
        deferred = self.utility_values
        if deferred is not None and deferred.instance is instance:
            return deferred.values
        utilities, ids = self.utilities, instance.agent_index
        if len(utilities) == len(ids) and list(utilities) == list(ids):
            return np.fromiter(utilities.values(), dtype=np.float64, count=len(utilities))
        return np.array([utilities[a] for a in ids], dtype=np.float64)

    def __getstate__(self) -> dict:
        # A deferred field holds its instance: ship the built records, not the instance.
        state = dict(self.__dict__)
        for name in _DEFERRED:
            if state.get(f"_{name}_later") is not None:
                state["_" + name], state[f"_{name}_later"] = getattr(self, name), None
        return state

    def to_dict(self, *, lazy: bool = False) -> dict:
        """The result-file dictionary (contract order first, extensions after).

        ``lazy`` (for :mod:`laissez_opt.result.writer`): the fields as held, not rounded,
        with an allocation or utilities still held as columns left as ``None``.
        """
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
            "allocation": None if lazy and self.allocation_columns is not None else self.allocation,
            "utilities": None if lazy and self.utility_values is not None else self.utilities,
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
        return out if lazy else readable_copy(out)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The result file's text: :meth:`to_dict` as JSON, ``indent`` 2 by default.

        With the default indent the text is written by :func:`laissez_opt.result.writer.result_text`
        (the same characters, with large allocations and per-agent maps made from columns).
        """
        if indent == 2:
            from .writer import result_text

            return result_text(self)
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
            parts.append(f"{self.allocation_size()} allocation records")
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
        from ..display import axes, heatmap

        agents, pools, matrix = self.allocation_matrix(round)
        when = "" if round is None else f" in round {round}"
        return heatmap(axes(ax), matrix, agents, pools,
                       title=f"{self.method} on {self.instance}: devices per agent and pool{when}", colorbar="devices")


def _deferred_field(name: str, kind: type) -> property:
    """A property for field ``name`` whose value may arrive as ``kind`` (built on first read with ``build()``)."""
    built, later = "_" + name, f"_{name}_later"

    def get(result: Result):
        state = result.__dict__
        pending = state.get(later)
        if pending is not None:
            state[built], state[later] = pending.build(), None
        return state[built]

    def set_(result: Result, value) -> None:
        pending = value if isinstance(value, kind) else None
        result.__dict__[built], result.__dict__[later] = (None, pending) if pending is not None else (value, None)

    return property(get, set_, doc=f"``{name}``, built on first read when it was given as {kind.__name__}.")


_DEFERRED = {"allocation": AllocationColumns, "utilities": AgentValues}
# Both stay dataclass fields (constructor arguments, equality, ``replace``) whose values may
# arrive as arrays; the properties build the records and the dict when they are first read.
for _name, _kind in _DEFERRED.items():
    setattr(Result, _name, _deferred_field(_name, _kind))
