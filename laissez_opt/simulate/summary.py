"""Summaries over seeds: one number per run, then means with confidence intervals.

Each run is reduced to scalars (:func:`run_scalars`); across the seeds of a policy the
summary gives the mean and a two-sided 95% Student-t confidence interval
``mean +- t_{0.975, k-1} s / sqrt(k)`` (``k`` seeds, ``s`` the sample standard deviation;
no interval for one seed).  Comparisons pair runs by seed (the seeds share their
arrivals, so the pairing removes the arrival noise): the ratio of a metric,
``F(policy) / F(reference)``, is computed per seed, then summarised the same way.

Scalars of a run
    ``weighted_welfare``: the weighted social welfare per round, averaged over the rounds,
    ``(1/R) sum_r sum_i w_i u_i^r / sum_i w_i`` (thesis 002, section 5.3);
    ``throughput``: work processed per agent and round, ``sum_{i,r} p_i^r / (n R)`` (the
    thesis's "average throughput of all agents"), and ``throughput_w<w>`` for the agents
    of weight ``w``; ``served``: processed over arrived work; ``dropped``: dropped over
    arrived work; ``backlog``: work queued at the end; ``delay``: mean delay of the
    completed jobs (rounds); ``rho_mean``/``rho_max``: finish-time ratios of the
    completed jobs; ``min_phi``, ``mean_phi``, ``jain_phi``: the sharing-incentive ratios
    at the end; ``max_envy``: the largest envy, averaged over the rounds; ``payments``.

Example
-------
>>> interval([1.0, 2.0, 3.0])["mean"], round(interval([1.0, 2.0, 3.0])["ci"], 4)
(2.0, 2.4841)
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

__all__ = ["interval", "run_scalars", "SCALARS", "summarise", "paired_ratios"]

#: Scalars of a run, in report order.
SCALARS = ("weighted_welfare", "throughput", "served", "dropped", "backlog", "delay", "rho_mean", "rho_max",
           "min_phi", "mean_phi", "jain_phi", "max_envy", "payments")


def interval(values: Iterable[float], level: float = 0.95) -> dict:
    """Mean, standard deviation, count and the half-width ``ci`` of the Student-t interval.

    Non-finite values are left out (``n`` counts the rest).
    """
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    k = int(x.size)
    if k == 0:
        return {"mean": math.nan, "std": math.nan, "n": 0, "ci": math.nan, "low": math.nan, "high": math.nan}
    mean = float(x.mean())
    if k == 1:
        return {"mean": mean, "std": math.nan, "n": 1, "ci": math.nan, "low": math.nan, "high": math.nan}
    from scipy.stats import t

    std = float(x.std(ddof=1))
    half = float(t.ppf(0.5 + level / 2, k - 1) * std / math.sqrt(k))
    return {"mean": mean, "std": std, "n": k, "ci": half, "low": mean - half, "high": mean + half}


def _nanmean(values) -> float:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else math.nan


def run_scalars(record) -> dict:
    """The scalars of one run (see the module docstring); ``record`` is a :class:`RunRecord`.

    >>> import laissez_opt as lo
    >>> res = lo.simulate(preset="thesis-r1", progress=False)
    >>> scalars = run_scalars(res.run("min_backlog", 0))
    >>> scalars["weighted_welfare"], scalars["served"], scalars["backlog"]
    (-5.0, 0.9813953488372092, 20.0)
    """
    rounds, agents = record.rounds, record.agents
    R = max(len(rounds["round"]), 1)
    arrived = float(np.sum(agents["arrived_work"]))
    processed = np.asarray(agents["processed_work"], dtype=float)
    weights = np.asarray(agents["weight"], dtype=float)
    completed = float(np.sum(agents["completed_jobs"]))
    delay_sum = float(np.nansum(np.asarray(agents["delay_mean"], dtype=float) * np.asarray(agents["completed_jobs"])))
    rho_sum = float(np.nansum(np.asarray(agents["rho_mean"], dtype=float) * np.asarray(agents["completed_jobs"])))
    out = {
        "weighted_welfare": float(np.mean(rounds["weighted_welfare"])),
        "throughput": float(processed.sum() / (processed.size * R)),
        "served": float(processed.sum() / arrived) if arrived > 0 else math.nan,
        "dropped": float(np.sum(agents["dropped_work"]) / arrived) if arrived > 0 else math.nan,
        "backlog": float(rounds["backlog_work"][-1]) if rounds["backlog_work"] else 0.0,
        "delay": delay_sum / completed if completed else math.nan,
        "rho_mean": rho_sum / completed if completed else math.nan,
        "rho_max": float(np.nanmax(np.asarray(agents["rho_max"], dtype=float))) if completed else math.nan,
        "min_phi": float(rounds["min_phi"][-1]) if rounds["min_phi"] else math.nan,
        "mean_phi": float(rounds["mean_phi"][-1]) if rounds["mean_phi"] else math.nan,
        "jain_phi": float(rounds["jain_phi"][-1]) if rounds["jain_phi"] else math.nan,
        "max_envy": _nanmean(rounds["max_envy"]),
        "payments": float(np.sum(rounds["payments"])),
    }
    for w in sorted(set(weights.tolist())):
        group = processed[weights == w]
        out[f"throughput_w{w:g}"] = float(group.sum() / (group.size * R))
    return out


def summarise(records: Sequence, policies: Sequence[str]) -> dict[str, dict[str, dict]]:
    """``policy -> scalar -> interval`` over the seeds.

    >>> import laissez_opt as lo
    >>> res = lo.simulate(preset="thesis-r1", seeds=2, progress=False)
    >>> stats = summarise(res.runs, res.policies)["time_equal"]["backlog"]
    >>> stats["mean"], stats["n"], stats["ci"]
    (90.0, 2, 0.0)
    """
    by_policy: dict[str, list[dict]] = {p: [] for p in policies}
    for record in records:
        by_policy.setdefault(record.policy, []).append(run_scalars(record))
    out = {}
    for policy, rows in by_policy.items():
        names = list(dict.fromkeys(k for row in rows for k in row))
        out[policy] = {name: interval(row.get(name, math.nan) for row in rows) for name in names}
    return out


def paired_ratios(records: Sequence, policy: str, reference: str, metric: str = "weighted_welfare") -> dict:
    """``F(policy) / F(reference)`` per seed (runs paired by seed), with its interval and the per-seed values.

    >>> import laissez_opt as lo
    >>> res = lo.simulate(preset="thesis-r1", progress=False)
    >>> paired_ratios(res.runs, "min_backlog", "time_equal", "served")["ratios"]
    [1.0710659898477157]
    """
    value: dict[tuple[str, int], float] = {}
    for record in records:
        value[(record.policy, record.seed)] = run_scalars(record)[metric]
    seeds = sorted(s for p, s in value if p == policy and (reference, s) in value)
    ratios = [value[(policy, s)] / value[(reference, s)] if value[(reference, s)] else math.nan for s in seeds]
    return {**interval(ratios), "seeds": seeds, "ratios": ratios}
