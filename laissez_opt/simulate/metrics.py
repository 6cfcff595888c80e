"""What one run records, round by round and agent by agent.

Notation (thesis 002, chapters 3 and 5): agent ``i`` with weight ``w_i``, backlog ``q_i^r``
(work in its queue at the end of round ``r``), work processed ``p_i^r``, arrivals, drops.

Per round (overall; sums over agents unless said)
    arrived, processed, completed and dropped work and jobs; backlog at the end of the
    round; ``conservation``: ``sum_r arrived - (sum_r processed + backlog + sum_r dropped)``,
    zero up to rounding in every round; devices in use and the work they could do;
    mean and largest queueing delay (arrival to completion, in rounds) and finish-time
    ratio ``rho`` of the jobs completed in the round; the round's utility ``u_i^r`` summed,
    and the weighted social welfare ``sum_i w_i u_i^r / sum_i w_i`` (thesis section 5.3);
    the sharing-incentive ratios ``phi_i^r = sum_{s<=r} p_i^s / sum_{s<=r} e_i^s`` with ``e_i^s``
    the work the agent's weighted time-equal share would have processed on the same
    arrivals (eq. 3.3; :mod:`laissez_opt.simulate.share`) (min, mean, and Jain's index over
    the agents with ``sum e > 0``); envy (below); payments.

Utility ``u_i^r`` (option ``utility``): ``throughput`` = ``p_i^r`` (the thesis's chapter-5
utility, "the accumulated throughput"), ``goodput`` = the work of jobs completed in the
round, ``negative_backlog`` = ``-q_i^r`` (eq. 3.2).

Finish-time fairness of a completed job (Themis, thesis 5.1): ``rho = T_sh / T_id`` with
``T_sh`` its time from arrival to completion and ``T_id = s / C_i`` the time its size ``s``
takes on the agent's weighted equal share ``C_i`` (work per round).

Envy (eq. 3.5, queue-aware): agent ``i`` values a bundle ``X`` at
``v_i(X) = min(q_i, sum_c u_{i,c} X_c)``, the work it could do with it this round; its
envy of ``j`` is ``((w_i / w_j) v_i(X_j) - v_i(X_i)) / q_i``, a fraction of its backlog.
The round reports the largest envy and the number of envious agents (envy > 1e-9).

Example
-------
>>> import numpy as np
>>> jain(np.array([1.0, 1.0, 1.0])), jain(np.array([1.0, 0.0]))
(1.0, 0.5)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ROUND_FIELDS", "AGENT_FIELDS", "AGENT_ROUND_FIELDS", "Recorder", "jain", "envy_figures"]

ROUND_FIELDS = (
    "round", "arrived_jobs", "arrived_work", "processed_work", "completed_jobs", "completed_work",
    "dropped_jobs", "dropped_work", "backlog_jobs", "backlog_work", "conservation", "devices_used",
    "capacity_work", "delay_mean", "delay_max", "rho_mean", "rho_max", "utility", "weighted_welfare",
    "min_phi", "mean_phi", "jain_phi", "max_envy", "envious_agents", "payments",
)
AGENT_FIELDS = (
    "agent", "weight", "rate", "job_size", "share_capacity", "arrived_jobs", "arrived_work", "processed_work",
    "completed_jobs", "completed_work", "dropped_jobs", "dropped_work", "backlog_jobs", "backlog_work",
    "throughput", "delay_mean", "delay_max", "rho_mean", "rho_max", "utility", "phi", "share_work",
    "payments", "base_cost",
)
AGENT_ROUND_FIELDS = ("processed_work", "completed_work", "dropped_work", "backlog_work", "utility", "phi")


def jain(values: np.ndarray) -> float:
    """Jain's index ``(sum x)^2 / (n sum x^2)`` (1 when all are equal; 1 for no values)."""
    x = np.asarray(values, dtype=float)
    squares = float(np.sum(x * x))
    return float(x.sum() ** 2 / (x.size * squares)) if squares > 0 else 1.0


def envy_figures(backlog: np.ndarray, weights: np.ndarray, work: np.ndarray, bundles: np.ndarray) -> tuple[float, int]:
    """Largest queue-aware envy and the number of envious agents (module docstring).

    ``work``: ``u_{i,c}`` per device, ``n x m``; ``bundles``: devices per agent and pool, ``n x m``.

    >>> envy_figures(np.array([4.0, 4.0]), np.ones(2), np.array([[1.0, 1.0], [1.0, 1.0]]),
    ...              np.array([[1.0, 0.0], [0.0, 3.0]]))
    (0.5, 1)
    """
    # value[i, j] = v_i(X_j).  einsum's own loop, not BLAS: a threaded BLAS sharing the cores with
    # solver threads can take a hundred times longer on these small products.
    value = np.minimum(np.einsum("ic,jc->ij", work, bundles), backlog[:, None])
    own = np.diag(value).copy()
    scaled = value * (weights[:, None] / weights[None, :])
    np.fill_diagonal(scaled, -np.inf)
    waiting = backlog > 0
    if not waiting.any() or len(backlog) < 2:
        return 0.0, 0
    envy = (scaled.max(axis=1) - own)[waiting] / backlog[waiting]
    return float(max(envy.max(), 0.0)), int(np.sum(envy > 1e-9))


class Recorder:
    """Accumulates one run's records (see the module docstring)."""

    def __init__(self, *, agent_ids, weights, rates, sizes, share_capacity, rounds: int, utility: str,
                 keep_agent_rounds: bool):
        n = len(agent_ids)
        self.n, self.rounds, self.utility_kind = n, rounds, utility
        self.agent_ids = list(agent_ids)
        self.weights = np.asarray(weights, dtype=float)
        self.rates, self.sizes = np.asarray(rates, dtype=float), np.asarray(sizes, dtype=float)
        self.share_capacity = np.asarray(share_capacity, dtype=float)
        self.round = {name: np.zeros(rounds) for name in ROUND_FIELDS}
        self.round["round"] = np.arange(rounds, dtype=float)
        zeros = lambda: np.zeros(n)  # noqa: E731
        self.totals = {name: zeros() for name in ("arrived_jobs", "arrived_work", "processed_work", "completed_jobs",
                                                   "completed_work", "dropped_jobs", "dropped_work", "delay_sum",
                                                   "rho_sum", "utility", "share_work", "payments", "base_cost")}
        self.delay_max = np.zeros(n)
        self.rho_max = np.zeros(n)
        self.backlog_jobs = np.zeros(n)
        self.backlog_work = np.zeros(n)
        self.agent_rounds = {name: np.zeros((rounds, n)) for name in AGENT_ROUND_FIELDS} if keep_agent_rounds else None

    def phi(self) -> np.ndarray:
        """Cumulative ``phi_i`` so far (``nan`` where the shadow share did no work yet)."""
        done, share = self.totals["processed_work"], self.totals["share_work"]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(share > 0, done / np.where(share > 0, share, 1.0), np.nan)

    def record(self, r: int, *, arrived_jobs, arrived_work, dropped_jobs, dropped_work, processed, completed_jobs,
               completed_work, delays, rhos, delay_agents, backlog_jobs, backlog_work, share_processed,
               devices_used: float, capacity_work: float, envy: tuple[float, int] | None, payments, base_cost) -> None:
        """Add round ``r`` (per-agent arrays of length ``n``; ``delays``/``rhos`` per completed job)."""
        t = self.totals
        for name, value in (("arrived_jobs", arrived_jobs), ("arrived_work", arrived_work),
                            ("dropped_jobs", dropped_jobs), ("dropped_work", dropped_work),
                            ("processed_work", processed), ("completed_jobs", completed_jobs),
                            ("completed_work", completed_work), ("share_work", share_processed),
                            ("payments", payments), ("base_cost", base_cost)):
            t[name] += value
        if delays.size:
            t["delay_sum"] += np.bincount(delay_agents, weights=delays, minlength=self.n)
            t["rho_sum"] += np.bincount(delay_agents, weights=rhos, minlength=self.n)
            np.maximum.at(self.delay_max, delay_agents, delays)
            np.maximum.at(self.rho_max, delay_agents, rhos)
        if self.utility_kind == "throughput":
            utility = processed
        elif self.utility_kind == "goodput":
            utility = completed_work
        else:
            utility = -backlog_work
        t["utility"] += utility
        self.backlog_jobs, self.backlog_work = backlog_jobs, backlog_work
        phi = self.phi()
        known = phi[np.isfinite(phi)]
        row = self.round
        row["arrived_jobs"][r] = arrived_jobs.sum()
        row["arrived_work"][r] = arrived_work.sum()
        row["processed_work"][r] = processed.sum()
        row["completed_jobs"][r] = completed_jobs.sum()
        row["completed_work"][r] = completed_work.sum()
        row["dropped_jobs"][r] = dropped_jobs.sum()
        row["dropped_work"][r] = dropped_work.sum()
        row["backlog_jobs"][r] = backlog_jobs.sum()
        row["backlog_work"][r] = backlog_work.sum()
        row["conservation"][r] = t["arrived_work"].sum() - (t["processed_work"].sum() + backlog_work.sum()
                                                              + t["dropped_work"].sum())
        row["devices_used"][r] = devices_used
        row["capacity_work"][r] = capacity_work
        row["delay_mean"][r] = float(delays.mean()) if delays.size else math.nan
        row["delay_max"][r] = float(delays.max()) if delays.size else math.nan
        row["rho_mean"][r] = float(rhos.mean()) if rhos.size else math.nan
        row["rho_max"][r] = float(rhos.max()) if rhos.size else math.nan
        row["utility"][r] = utility.sum()
        row["weighted_welfare"][r] = float(self.weights @ utility / self.weights.sum())
        row["min_phi"][r] = float(known.min()) if known.size else math.nan
        row["mean_phi"][r] = float(known.mean()) if known.size else math.nan
        row["jain_phi"][r] = jain(known) if known.size else math.nan
        row["max_envy"][r] = envy[0] if envy is not None else math.nan
        row["envious_agents"][r] = envy[1] if envy is not None else math.nan
        row["payments"][r] = float(np.sum(payments))
        if self.agent_rounds is not None:
            ar = self.agent_rounds
            ar["processed_work"][r] = processed
            ar["completed_work"][r] = completed_work
            ar["dropped_work"][r] = dropped_work
            ar["backlog_work"][r] = backlog_work
            ar["utility"][r] = utility
            ar["phi"][r] = phi

    def agents(self) -> dict[str, list]:
        """Per-agent totals over the run (columns of :data:`AGENT_FIELDS`)."""
        t = self.totals
        done = t["completed_jobs"]
        with np.errstate(divide="ignore", invalid="ignore"):
            delay_mean = np.where(done > 0, t["delay_sum"] / np.where(done > 0, done, 1), np.nan)
            rho_mean = np.where(done > 0, t["rho_sum"] / np.where(done > 0, done, 1), np.nan)
        columns = {
            "agent": self.agent_ids,
            "weight": self.weights,
            "rate": self.rates,
            "job_size": self.sizes,
            "share_capacity": self.share_capacity,
            "arrived_jobs": t["arrived_jobs"],
            "arrived_work": t["arrived_work"],
            "processed_work": t["processed_work"],
            "completed_jobs": done,
            "completed_work": t["completed_work"],
            "dropped_jobs": t["dropped_jobs"],
            "dropped_work": t["dropped_work"],
            "backlog_jobs": self.backlog_jobs,
            "backlog_work": self.backlog_work,
            "throughput": t["processed_work"] / self.rounds,
            "delay_mean": delay_mean,
            "delay_max": np.where(done > 0, self.delay_max, np.nan),
            "rho_mean": rho_mean,
            "rho_max": np.where(done > 0, self.rho_max, np.nan),
            "utility": t["utility"],
            "phi": self.phi(),
            "share_work": t["share_work"],
            "payments": t["payments"],
            "base_cost": t["base_cost"],
        }
        return {k: (v if isinstance(v, list) else np.asarray(v, dtype=float).tolist()) for k, v in columns.items()}

    def rounds_table(self) -> dict[str, list]:
        return {name: self.round[name].tolist() for name in ROUND_FIELDS}

    def agent_rounds_table(self) -> dict[str, list] | None:
        if self.agent_rounds is None:
            return None
        return {name: values.tolist() for name, values in self.agent_rounds.items()}
