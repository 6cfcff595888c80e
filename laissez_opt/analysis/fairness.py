"""Fairness properties of an allocation (``models.md``, "Metrics and fairness properties").

All in numpy, no solver (except :func:`price_of_fairness`, which needs the
welfare optimum).  Notation of ``models.md``: ``U_i(X) = sum_{c,r} u_{i,c,r} X_{c,r}``
is the utility agent ``i`` draws from a bundle ``X`` (devices per pool and
round), summed over all rounds; ``X_j`` is agent ``j``'s bundle under the
allocation.

* **Envy matrix** ``M[i, j] = U_i(X_j)``: what agent ``i`` would get from
  agent ``j``'s bundle, valued with ``i``'s utilities.  ``j``'s devices on pools
  incompatible with ``i`` are worth 0 to ``i``; demands are not applied (the
  whole bundle is valued, as in the thesis).  The diagonal holds ``U_i(X_i)``.
* **Weighted envy-freeness** (thesis 002, eq. 3.5): ``U_i(X_i) / w_i >= U_i(X_j) / w_j``
  for all ``i, j``.  The envy of ``i`` toward ``j`` is reported in ``i``'s
  utility units, ``e_ij = (w_i / w_j) U_i(X_j) - U_i(X_i)``: the utility ``i``
  would gain from a copy of ``j``'s bundle rescaled to ``i``'s weight.  EF holds
  iff ``max_{i != j} e_ij <= tol``; the largest ``e_ij`` (negative when every
  agent strictly prefers its own bundle) and its pair are reported.
* **Sharing incentive** (eqs. 3.3, 3.4): ``phi_i = U_i / U_i^ex`` with ``U_i^ex``
  the utility of the weighted time-equal share
  (:func:`laissez_opt.analysis.metrics.equal_share_utilities`); SI iff every
  ``phi_i >= 1`` (an agent whose equal share is worth 0 has ``phi_i = inf``).
  Utilities here are gains (non-negative), so the cost-type reversal of the
  thesis does not arise.
* **Price of fairness**: ``(W* - W(x)) / W*`` with ``W(x) = sum_i w_i U_i(x)`` and
  ``W*`` the welfare optimum (method ``welfare``); 0 when ``W* = 0``.

Example
-------
>>> import numpy as np
>>> report = envy_free_from_matrix(np.array([[3.0, 4.0], [1.0, 2.0]]))
>>> report.envy_free, report.largest_envy, report.pair
(False, 1.0, (0, 1))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, VerificationError
from ..exact.pareto import allocation_amounts
from ..instance import Instance
from ..result import _clean, edge_utilities
from .metrics import equal_share_utilities, sharing_ratios

__all__ = [
    "allocation_amounts",
    "bundles",
    "envy_matrix",
    "EnvyReport",
    "envy_free_from_matrix",
    "envy_report",
    "SharingReport",
    "sharing_incentive",
    "price_of_fairness",
    "ENVY_TOLERANCE",
    "ENVY_BLOCKED_FROM",
    "ENVY_MAX_PAIRS",
]

#: Relative tolerance of the envy-freeness and sharing-incentive tests.
ENVY_TOLERANCE = 1e-9


# ----------------------------------------------------------------- allocations as arrays

# ``allocation_amounts`` (records -> ``E x R`` array, strict about unknown ids) lives in
# :mod:`laissez_opt.exact.pareto`, below this layer, and is re-exported here.


def bundles(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``X[j, c, r]``: devices of pool ``c`` held by agent ``j`` in round ``r``, shape ``(n, m, R)``."""
    out = np.zeros((instance.n_agents, instance.n_pools, instance.rounds), dtype=np.float64)
    out[instance.edge_agent, instance.edge_pool, :] = np.asarray(amounts, dtype=np.float64)
    return out


def _bundle_matrix(instance: Instance, amounts: np.ndarray):
    """Sparse ``n x (m R)`` bundle matrix and sparse ``n x (m R)`` utility matrix."""
    from scipy.sparse import csr_matrix

    n, m, rounds = instance.n_agents, instance.n_pools, instance.rounds
    cols = (instance.edge_pool[:, None] * rounds + np.arange(rounds)[None, :]).ravel()
    rows = np.repeat(instance.edge_agent, rounds)
    amounts = np.asarray(amounts, dtype=np.float64).ravel()
    utility = instance.edge_utility.ravel()
    shape = (n, m * rounds)
    return csr_matrix((amounts, (rows, cols)), shape=shape), csr_matrix((utility, (rows, cols)), shape=shape)


def envy_matrix(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``M[i, j] = U_i(X_j)`` for all agents ``i, j`` (dense ``n x n``; the diagonal is ``U_i``).

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P"), lo.Pool("Q")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 3.0), lo.Edge("B", "P", 2.0)])
    >>> envy_matrix(inst, np.array([[1.0], [0.0], [0.0]]))   # A holds P; Q is idle; B has nothing
    array([[1., 0.],
           [2., 0.]])
    """
    bundle, utility = _bundle_matrix(instance, amounts)
    return np.asarray((utility @ bundle.T).toarray(), dtype=np.float64)


# ---------------------------------------------------------------------------- envy


@dataclass
class EnvyReport:
    """Weighted envy-freeness (eq. 3.5) of an envy matrix.

    ``largest_envy`` is ``max_{i != j} (w_i / w_j) M[i, j] - M[i, i]`` and ``pair``
    its ``(i, j)`` (None with one agent); ``envious_pairs`` counts pairs with
    envy above the tolerance; ``worst_by_agent[i]`` is agent ``i``'s largest envy
    and ``target_by_agent[i]`` the agent it is directed at.
    """

    envy_free: bool
    largest_envy: float | None
    pair: tuple[int, int] | None
    envious_pairs: int
    worst_by_agent: np.ndarray
    target_by_agent: np.ndarray
    own: np.ndarray
    matrix: np.ndarray | None = field(default=None, repr=False)
    skipped: str | None = None

    def to_dict(self, ids: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-safe dictionary; ``ids`` names agents (default: their indices)."""
        name = (lambda k: ids[k]) if ids is not None else (lambda k: k)
        if self.skipped is not None:
            return _clean({"envy_free": None, "largest_envy": None, "pair": None, "envious_pairs": None,
                           "skipped": self.skipped})
        out = {
            "envy_free": self.envy_free,
            "largest_envy": self.largest_envy,
            "pair": None if self.pair is None else [name(self.pair[0]), name(self.pair[1])],
            "envious_pairs": self.envious_pairs,
            "worst_by_agent": {
                str(name(i)): {"envy": float(v), "toward": None if t < 0 else name(int(t))}
                for i, (v, t) in enumerate(zip(self.worst_by_agent, self.target_by_agent))
            },
        }
        if self.matrix is not None:
            out["matrix"] = self.matrix
        return _clean(out)


def _envy_from_rows(own: np.ndarray, best: np.ndarray, target: np.ndarray, matrix, tol: float) -> EnvyReport:
    n = own.size
    worst = best - own
    if n < 2:
        return EnvyReport(True, None, None, 0, np.full(n, -np.inf), np.full(n, -1), own, matrix)
    i = int(np.argmax(worst))
    threshold = tol * np.maximum(1.0, np.abs(own))
    return EnvyReport(
        bool(np.all(worst <= threshold)),
        float(worst[i]),
        (i, int(target[i])),
        -1,
        worst,
        target,
        own,
        matrix,
    )


def envy_free_from_matrix(matrix, weights=None, *, tol: float = ENVY_TOLERANCE) -> EnvyReport:
    """Weighted EF check (eq. 3.5) on a given matrix: row ``i`` agent, column ``j`` bundle evaluated.

    ``matrix[i][j] = U_i(X_j)``; ``weights`` default to all 1.  Works on a matrix
    taken from a paper as well as on :func:`envy_matrix`.

    >>> r = envy_free_from_matrix([[4.0, 3.0], [1.0, 3.0]], weights=[1.0, 2.0])
    >>> r.envy_free, r.pair, r.largest_envy   # agent 1 (weight 2) has 3, agent 0's bundle at its weight: 2 * 1
    (True, (1, 0), -1.0)
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"an envy matrix must be square, got shape {m.shape}", path="matrix")
    if not np.all(np.isfinite(m)):
        raise InputError("an envy matrix must hold finite numbers", path="matrix")
    n = m.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or not np.all(w > 0):
        raise InputError(f"weights must be {n} numbers > 0", path="weights")
    own = np.diag(m).copy()
    scaled = m * (w[:, None] / w[None, :])
    np.fill_diagonal(scaled, -np.inf)
    target = np.argmax(scaled, axis=1) if n > 1 else np.full(n, -1)
    best = scaled[np.arange(n), target] if n > 1 else np.full(n, -np.inf)
    report = _envy_from_rows(own, best, target, m, tol)
    if n > 1:
        envy = scaled - own[:, None]
        report.envious_pairs = int(np.sum(envy > tol * np.maximum(1.0, np.abs(own))[:, None]))
    else:
        report.envious_pairs = 0
    return report


#: Above this many agents :func:`envy_report` takes the blocked route (measured: ``benchmarks/envy_scaling.py``).
ENVY_BLOCKED_FROM = 150
#: Entries of the ``agents x distinct bundles`` value table formed at once (32 MiB of float64).
ENVY_BLOCK_ENTRIES = 1 << 22
#: Above this many (agent, distinct bundle) pairs the envy figures are skipped, with the reason in the report:
#: the blocked product passes a few seconds there (about 10^7 to 10^8 pairs per second with ten pools on a
#: shared 2-core machine, ``benchmarks/envy_scaling.py``).
ENVY_MAX_PAIRS = 2 * 10**8


def envy_report(
    instance: Instance,
    amounts: np.ndarray,
    *,
    tol: float = ENVY_TOLERANCE,
    keep_matrix: bool | int = 50,
    max_pairs: int | None = ENVY_MAX_PAIRS,
) -> EnvyReport:
    """Weighted EF of an allocation without forming the dense ``n x n`` matrix.

    ``U_i(X_j)`` is a product of utilities and bundles.  Up to
    :data:`ENVY_BLOCKED_FROM` agents it is one sparse product (memory in
    proportion to the nonzero pairs); above, the agents holding the same
    bundle at the same weight are one column (``(w_i / w_j) U_i(X_j)`` is then
    the same for all of them, and agents holding nothing are worth 0 to
    everyone), and the ``n x D`` values of the ``D`` distinct bundles are
    formed in row blocks of at most :data:`ENVY_BLOCK_ENTRIES` entries, so
    memory stays bounded at any size.  Both routes give the same figures (to
    rounding); ties for the largest envy are broken toward the lowest agent
    index.  Utilities are non-negative, so an agent holding nothing is never
    the target unless every other bundle is worth 0 to ``i``.

    ``keep_matrix``: attach the dense matrix when the instance has at most
    this many agents (``True``: always; ``False``: never).  ``max_pairs``:
    when ``n x D`` exceeds it, the figures are not computed and
    ``report.skipped`` says why (``None``: never skip).

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P"), lo.Pool("Q")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 3.0), lo.Edge("B", "P", 2.0)])
    >>> r = envy_report(inst, np.array([[1.0], [0.0], [0.0]]))
    >>> r.envy_free, r.largest_envy, r.pair       # B values A's device at 2 and has nothing
    (False, 2.0, (1, 0))
    """
    n = instance.n_agents
    if n <= ENVY_BLOCKED_FROM:
        return _envy_sparse(instance, amounts, tol=tol, keep_matrix=keep_matrix)
    bundle, utility = _bundle_matrix(instance, amounts)
    groups = _bundle_groups(bundle, instance.weights)
    distinct = groups[3].size
    pairs = n * distinct
    if max_pairs is not None and pairs > max_pairs:
        reason = (f"envy not computed: {n:,} agents x {distinct:,} distinct bundles = {pairs:,} pairs, "
                  f"above the limit of {max_pairs:,} (ENVY_MAX_PAIRS)")
        return EnvyReport(False, None, None, -1, np.full(n, np.nan), np.full(n, -1), np.full(n, np.nan),
                          None, skipped=reason)
    report = _envy_blocked(instance, bundle, utility, groups, tol)
    if keep_matrix is True or (keep_matrix is not False and n <= int(keep_matrix)):
        report.matrix = envy_matrix(instance, amounts)
    return report


def _bundle_groups(bundle, weights: np.ndarray):
    """The agents holding something, grouped by (bundle, weight).

    Returns ``(group of each agent, -1 for none; bundle rows of the groups (sparse, D x mR);
    weight, size, lowest and second-lowest member of each group (-1: none))``.
    """
    bundle = bundle.tocsr()
    bundle.eliminate_zeros()
    bundle.sum_duplicates()
    bundle.sort_indices()
    n = bundle.shape[0]
    group = np.full(n, -1, dtype=np.int64)
    holders = np.flatnonzero(np.diff(bundle.indptr) > 0)
    keys: dict = {}
    ptr, idx, dat = bundle.indptr, bundle.indices, bundle.data
    for i in holders.tolist():
        s, e = ptr[i], ptr[i + 1]
        key = (idx[s:e].tobytes(), dat[s:e].tobytes(), float(weights[i]))
        group[i] = keys.setdefault(key, len(keys))
    d = len(keys)
    first = np.full(d, -1, dtype=np.int64)
    if d:
        members = holders[np.argsort(group[holders], kind="stable")]  # by group, then agent index
        starts = np.searchsorted(group[members], np.arange(d))
        size = np.diff(np.r_[starts, members.size])
        first = members[starts]
        second = np.where(size > 1, members[np.minimum(starts + 1, members.size - 1)], -1)
        reps = first
    else:
        size = second = reps = np.zeros(0, dtype=np.int64)
    return group, bundle[reps], weights[reps] if d else np.zeros(0), size, first, second


def _envy_blocked(instance: Instance, bundle, utility, groups, tol: float) -> EnvyReport:
    """Envy figures from the ``n x D`` values of the distinct bundles, in row blocks.

    Column ``d`` stands for the ``size[d]`` agents holding bundle ``d`` at weight
    ``rep_weight[d]``; for agent ``i`` in group ``g`` the column counts one agent
    less (itself), and is left out when ``i`` holds it alone.
    """
    group, rep_bundles, rep_weight, size, first, second = groups
    n = instance.n_agents
    w = instance.weights
    d = size.size
    own = np.asarray(utility.multiply(bundle).sum(axis=1), dtype=np.float64).ravel()
    best = np.zeros(n)
    target = np.where(np.arange(n) == 0, 1, 0).astype(np.int64)
    envious = 0
    thresholds = tol * np.maximum(1.0, np.abs(own))
    if d:
        dense_right = d * rep_bundles.shape[1] <= ENVY_BLOCK_ENTRIES
        right = rep_bundles.T.toarray() if dense_right else rep_bundles.T.tocsc()
        block = max(1, ENVY_BLOCK_ENTRIES // d)
        none = np.iinfo(np.int64).max
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            scaled = utility[lo:hi] @ right
            scaled = np.asarray(scaled if dense_right else scaled.toarray(), dtype=np.float64)
            scaled *= w[lo:hi, None]
            scaled /= rep_weight[None, :]
            agents = np.arange(lo, hi)
            rows = np.flatnonzero(group[lo:hi] >= 0)  # block rows of the agents holding something
            mine = group[lo:hi][rows]
            envious += int(((scaled - own[lo:hi, None] > thresholds[lo:hi, None]) @ size).sum())
            envious -= int(np.sum(scaled[rows, mine] - own[lo:hi][rows] > thresholds[lo:hi][rows]))
            alone = size[mine] == 1
            scaled[rows[alone], mine[alone]] = -np.inf  # i's own bundle, held by no one else
            top = scaled.max(axis=1)
            positive = np.flatnonzero(top > 0)
            if positive.size:
                sub = scaled[positive]
                candidate = np.where(sub == top[positive, None], first[None, :], none)
                # In i's own column the lowest other holder is ``second`` when i is the lowest.
                at = np.searchsorted(positive, rows)
                hit = (at < positive.size) & (positive[np.minimum(at, positive.size - 1)] == rows)
                r_sub, g = at[hit], mine[hit]
                is_first = first[g] == agents[rows[hit]]
                tied_self = candidate[r_sub, g] != none
                fix = is_first & tied_self
                candidate[r_sub[fix], g[fix]] = second[g[fix]]
                best[lo + positive] = top[positive]
                target[lo + positive] = candidate.min(axis=1)
            del scaled
    report = _envy_from_rows(own, best, target, None, tol)
    report.envious_pairs = envious if n > 1 else 0
    return report


def _envy_sparse(instance: Instance, amounts: np.ndarray, *, tol: float, keep_matrix: bool | int) -> EnvyReport:
    """:func:`envy_report` by one sparse product ``U X^T`` (the route up to :data:`ENVY_BLOCKED_FROM` agents)."""
    n = instance.n_agents
    bundle, utility = _bundle_matrix(instance, amounts)
    product = (utility @ bundle.T).tocsr()
    own = np.asarray(product.diagonal(), dtype=np.float64)
    w = instance.weights
    product = product.tocoo()
    off = product.row != product.col
    rows, cols = product.row[off], product.col[off]
    vals = product.data[off] * w[rows] / w[cols]
    best = np.zeros(n)
    target = np.full(n, -1, dtype=np.int64)
    if n > 1:
        # Unstored entries are 0: default target is the first other agent.
        target[:] = np.where(np.arange(n) == 0, 1, 0)
        if vals.size:
            # By row, then value ascending, then column descending: the last per row is the max at its lowest column.
            order = np.lexsort((-cols, vals, rows))
            last = np.r_[rows[order][1:] != rows[order][:-1], True]
            r_last = rows[order][last]
            v_last = vals[order][last]
            better = v_last > 0
            best[r_last[better]] = v_last[better]
            target[r_last[better]] = cols[order][last][better]
    else:
        best[:] = -np.inf
    keep = keep_matrix is True or (keep_matrix is not False and n <= int(keep_matrix))
    matrix = envy_matrix(instance, amounts) if keep else None
    report = _envy_from_rows(own, best, target, matrix, tol)
    if n > 1:
        thresholds = tol * np.maximum(1.0, np.abs(own))
        count = int(np.sum(vals - own[rows] > thresholds[rows]))
        # Unstored pairs have envy -U_i(X_i) <= 0; they count only if that exceeds the threshold (never).
        report.envious_pairs = count
    else:
        report.envious_pairs = 0
    return report


# ------------------------------------------------------------------- sharing incentive


@dataclass
class SharingReport:
    """Sharing incentive (eqs. 3.3, 3.4): ``phi_i = U_i / U_i^ex`` and whether all ``phi_i >= 1``."""

    holds: bool
    phi: np.ndarray
    equal_share: np.ndarray
    utilities: np.ndarray
    min_phi: float
    worst: int | None

    def to_dict(self, ids: Sequence[str] | None = None) -> dict[str, Any]:
        name = (lambda k: ids[k]) if ids is not None else (lambda k: k)
        return _clean(
            {
                "holds": self.holds,
                "min_phi": self.min_phi,
                "worst_agent": None if self.worst is None else name(self.worst),
                "phi": {str(name(i)): float(v) if math.isfinite(v) else None for i, v in enumerate(self.phi)},
                "equal_share_utility": {str(name(i)): float(v) for i, v in enumerate(self.equal_share)},
            }
        )


def sharing_incentive(instance: Instance, amounts: np.ndarray, *, tol: float = ENVY_TOLERANCE) -> SharingReport:
    """``phi_i = U_i(x) / U_i^ex`` for every agent and the SI verdict ``min_i phi_i >= 1 - tol``.

    ``phi_i`` is ``inf`` (reported as null in JSON) for an agent whose equal
    share is worth nothing; such an agent never breaks SI.

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P", count=2)], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> r = sharing_incentive(inst, np.array([[2.0], [0.0]]))   # A holds both devices
    >>> r.phi.tolist(), r.holds, r.worst
    ([2.0, 0.0], False, 1)
    """
    utilities = edge_utilities(instance, np.asarray(amounts, dtype=np.float64))
    phi = sharing_ratios(instance, utilities)
    ex = equal_share_utilities(instance)
    finite = np.isfinite(phi)
    if finite.any():
        worst = int(np.flatnonzero(finite)[np.argmin(phi[finite])])
        min_phi = float(phi[worst])
    else:
        worst, min_phi = None, math.inf
    return SharingReport(bool(min_phi >= 1.0 - tol), phi, ex, utilities, min_phi, worst)


# -------------------------------------------------------------------- price of fairness


def price_of_fairness(
    instance: Instance,
    amounts: np.ndarray,
    *,
    fractional: bool = False,
    solver: str = "highs",
    optimum: float | None = None,
) -> dict[str, Any]:
    """``(W* - W(x)) / W*`` with ``W = sum_i w_i U_i`` and ``W*`` the (verified) welfare optimum.

    ``optimum`` skips the solve when ``W*`` is known.  Returns
    ``{"price_of_fairness", "welfare", "welfare_optimum", "welfare_status"}``;
    the price is 0 when ``W* = 0``.

    >>> import numpy as np, laissez_opt as lo
    >>> inst = lo.Instance(pools=[lo.Pool("P")], agents=[lo.Agent("A"), lo.Agent("B")],
    ...                    edges=[lo.Edge("A", "P", 4.0), lo.Edge("B", "P", 1.0)])
    >>> price_of_fairness(inst, np.array([[0.0], [1.0]]))["price_of_fairness"]   # B holds the device
    0.75
    """
    utilities = edge_utilities(instance, np.asarray(amounts, dtype=np.float64))
    welfare = float(instance.weights @ utilities)
    status = "given"
    if optimum is None:
        from ..exact.welfare import solve_welfare
        from .verify import verify

        best = solve_welfare(instance, solver=solver, fractional=fractional)
        outcome = verify(instance, best)
        if not outcome.ok:  # pragma: no cover - a solver or model bug, never a user error
            raise VerificationError(f"welfare optimum of {instance.name}: {outcome}")
        optimum, status = float(best.objective), best.status
    price = 0.0 if optimum <= 0 else (optimum - welfare) / optimum
    if abs(price) <= 1e-12:  # rounding noise of an optimal allocation
        price = 0.0
    return {
        "price_of_fairness": float(price),
        "welfare": welfare,
        "welfare_optimum": float(optimum),
        "welfare_status": status,
    }
