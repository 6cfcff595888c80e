"""Welfare figures and the sharing-incentive ratio of an allocation (``models.md``, metrics).

* total weighted welfare ``sum_i w_i U_i`` (``total_welfare``: the objective of
  method ``welfare``); weighted mean utility ``sum_i w_i U_i / sum_i w_i``
  (``weighted_welfare``, comparable across instances of different total weight);
  utilitarian ``sum_i U_i``;
  egalitarian ``min_i U_i``; Nash ``sum_i log U_i`` (``-inf`` if some ``U_i = 0``);
  Jain's index ``(sum U)^2 / (n sum U^2)``.
* equal-share utility ``U_i^ex = (w_i / sum_j w_j) sum_{c,r} k_c u_{i,c,r}``, the
  utility of the weighted time-equal share; ``phi_i = U_i / U_i^ex`` (thesis 002,
  eq. 3.3); sharing incentive holds iff ``min_i phi_i >= 1`` (eq. 3.4).

Example
-------
>>> import numpy as np
>>> welfare_figures(np.array([1.0, 3.0]), np.array([1.0, 1.0]))["jain"]
0.8
"""

from __future__ import annotations

import math

import numpy as np

from ..instance import Instance
from ..shares import equal_share_utilities

__all__ = ["welfare_figures", "equal_share_utilities", "sharing_ratios", "basic_metrics"]


def welfare_figures(utilities: np.ndarray, weights: np.ndarray) -> dict[str, float]:
    """Total and mean weighted welfare, utilitarian, egalitarian, Nash welfare and Jain's index.

    Names and meanings: :data:`laissez_opt.result.METRICS`.

    >>> welfare_figures(np.array([1.0, 3.0]), np.array([2.0, 1.0]))["total_welfare"]
    5.0
    """
    u = np.asarray(utilities, dtype=float)
    w = np.asarray(weights, dtype=float)
    squares = float(np.sum(u * u))
    total = float(np.sum(w * u))
    return {
        "total_welfare": total,
        "weighted_welfare": total / float(w.sum()),
        "utilitarian": float(u.sum()),
        "egalitarian": float(u.min()) if u.size else 0.0,
        "nash": float(np.sum(np.log(u))) if np.all(u > 0) else -math.inf,
        "jain": float(u.sum() ** 2 / (u.size * squares)) if squares > 0 else 1.0,
    }


def sharing_ratios(instance: Instance, utilities: np.ndarray) -> np.ndarray:
    """``phi_i = U_i / U_i^ex``; ``inf`` where the equal share is worth nothing."""
    ex = equal_share_utilities(instance)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ex > 0, utilities / np.where(ex > 0, ex, 1.0), np.inf)


def basic_metrics(instance: Instance, utilities: np.ndarray) -> dict[str, float]:
    """The figures attached to every result: welfare figures and ``min_phi``."""
    out = welfare_figures(utilities, instance.weights)
    phi = sharing_ratios(instance, utilities)
    finite = phi[np.isfinite(phi)]
    out["min_phi"] = float(finite.min()) if finite.size else math.inf
    return out
