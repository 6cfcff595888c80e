"""The result of a simulation sweep: every run's records, tables, summaries with intervals.

The core is plain Python and numpy: :class:`SimulationResult` holds one
:class:`~laissez_opt.simulate.engine.RunRecord` per (policy, seed) with per-round and
per-agent lists.  Tables come as lists of row dicts (:meth:`SimulationResult.table`);
``to_dataframe`` turns them into :class:`pandas.DataFrame` when pandas is installed
(``pip install 'laissez-opt[pandas]'``).

Example
-------
>>> import laissez_opt as lo
>>> res = lo.simulate(preset="thesis-r1", progress=False)
>>> [(row["policy"], row["round"], row["backlog_work"]) for row in res.table("rounds")]
[('time_equal', 0, 0.0), ('time_equal', 1, 90.0), ('min_backlog', 0, 0.0), ('min_backlog', 1, 20.0)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .config import SimulationConfig
from .engine import RunRecord
from .metrics import AGENT_FIELDS, AGENT_ROUND_FIELDS, ROUND_FIELDS
from .summary import SCALARS, paired_ratios, run_scalars, summarise

__all__ = ["SimulationResult", "TABLES"]

#: Tables of a result (``table(name)``, ``to_dataframe(name)``, CSV files of the same names).
TABLES = ("rounds", "agents", "agent_rounds", "runs", "summary", "hindsight", "events", "timing")


@dataclass
class SimulationResult:
    """Runs of every policy and seed of one configuration (see the module docstring)."""

    config: SimulationConfig
    policies: list[str]
    runs: list[RunRecord]
    hindsight: dict[int, dict] = field(default_factory=dict)
    computed: int = 0
    reused: int = 0

    def run(self, policy: str, seed: int) -> RunRecord:
        """The record of one run."""
        for record in self.runs:
            if record.policy == policy and record.seed == seed:
                return record
        raise KeyError((policy, seed))

    @property
    def seeds(self) -> list[int]:
        return sorted({r.seed for r in self.runs} | set(self.hindsight))

    def summary(self) -> dict[str, dict[str, dict]]:
        """``policy -> scalar -> {mean, std, n, ci, low, high}`` over the seeds (95% Student t)."""
        return summarise(self.runs, self.policies)

    def compare(self, policy: str, reference: str, metric: str = "weighted_welfare") -> dict:
        """``metric(policy) / metric(reference)`` paired by seed, with its 95% interval."""
        return paired_ratios(self.runs, policy, reference, metric)

    def table(self, name: str) -> list[dict]:
        """Rows of table ``name`` (one of :data:`TABLES`)."""
        if name == "rounds":
            return [{"policy": r.policy, "seed": r.seed, **{f: _cell(r.rounds[f][k], f == "round")
                                                             for f in ROUND_FIELDS}}
                    for r in self.runs for k in range(len(r.rounds["round"]))]
        if name == "agents":
            return [{"policy": r.policy, "seed": r.seed, **{f: r.agents[f][k] for f in AGENT_FIELDS}}
                    for r in self.runs for k in range(len(r.agents["agent"]))]
        if name == "agent_rounds":
            rows = []
            for r in self.runs:
                if not r.agent_rounds:
                    continue
                ids = r.agents["agent"]
                for k in range(len(r.rounds["round"])):
                    for i, agent in enumerate(ids):
                        rows.append({"policy": r.policy, "seed": r.seed, "round": k, "agent": agent,
                                     **{f: r.agent_rounds[f][k][i] for f in AGENT_ROUND_FIELDS}})
            return rows
        if name == "runs":
            return [{"policy": r.policy, "seed": r.seed, **run_scalars(r)} for r in self.runs]
        if name == "summary":
            rows = []
            for policy, metrics in self.summary().items():
                for metric, stats in metrics.items():
                    rows.append({"policy": policy, "metric": metric, **stats})
            return rows
        if name == "hindsight":
            # solve_s is a measured time: it stays out of the tables that must be reproducible.
            return [{k: v for k, v in self.hindsight[s].items() if k != "solve_s"} for s in sorted(self.hindsight)]
        if name == "events":
            return [{"policy": r.policy, "seed": r.seed, **e} for r in self.runs for e in (r.events or ())]
        if name == "timing":
            return [{"policy": r.policy, "seed": r.seed, **r.timing} for r in self.runs]
        raise ValueError(f"unknown table {name!r}: one of {', '.join(TABLES)}")

    def to_dataframe(self, name: str = "rounds"):
        """Table ``name`` as a :class:`pandas.DataFrame` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - exercised only without pandas
            raise ImportError("to_dataframe needs pandas: pip install 'laissez-opt[pandas]'") from exc
        return pd.DataFrame(self.table(name))

    def write(self, directory, *, plots: bool = True) -> list:
        """Write the CSV tables, ``summary.md``, ``summary.json`` and the PNG plots (atomically)."""
        from .report import write_outputs

        return write_outputs(self, directory, plots=plots)

    def markdown(self) -> str:
        """The Markdown summary (what ``summary.md`` holds)."""
        from .report import summary_markdown

        return summary_markdown(self)

    def scalars(self) -> Sequence[str]:
        return SCALARS


def _cell(value, integer: bool):
    return int(value) if integer else value
