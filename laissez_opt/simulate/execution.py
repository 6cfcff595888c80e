"""Executing an allocation: which device slices each agent holds, and the work they do.

Placement
    A policy returns ``x_{i,c}`` per edge: whole devices, or time shares in fractional
    mode.  Pool ``c``'s ``k_c`` devices form a line ``[0, k_c)``; the agents holding some
    of the pool take consecutive stretches of it in agent order, agent ``i`` the stretch
    ``[s, s + x_{i,c})``.  Every device ``d`` the stretch meets is a *slice*
    ``(i, c, d, share)`` with ``share = |[s, s + x) cap [d, d + 1)|``: whole devices for
    integral allocations, time shares of devices otherwise.  A device's shares never sum
    past 1 when the pool is not over-allocated, which :func:`place` checks: no device is
    double-booked.

Service
    A slice serves ``u_{i,c} * share`` work in the round (the tick); the agent's jobs are
    spread over its slices by the balancer of :mod:`laissez_opt.simulate.kernel`.

Example
-------
>>> import numpy as np, laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "g", 3.0), lo.Edge("B", "g", 1.0)])
>>> p = place(inst, np.array([0.5, 1.5]), inst.edge_utility[:, 0])
>>> p.agent.tolist(), p.device.tolist(), p.share.tolist(), p.rate.tolist()
([0, 1, 1], [0, 0, 1], [0.5, 0.5, 1.0], [1.5, 0.5, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import LaissezOptError
from ..instance import Instance
from .kernel import MODES, SEED_RANGE, dispatch

__all__ = ["Placement", "place", "serve", "PlacementError"]

_SNAP = 1e-9


class PlacementError(LaissezOptError):
    """A policy's allocation over-books a pool or an edge (a bug in the policy)."""

    exit_code = 1


@dataclass
class Placement:
    """The round's device slices, sorted by (agent, device).

    ``device`` is global: pool ``c``'s devices are ``offset[c] .. offset[c] + k_c - 1``.
    ``rate`` is the slice's work per round for its agent.
    """

    agent: np.ndarray
    pool: np.ndarray
    device: np.ndarray
    share: np.ndarray
    rate: np.ndarray
    edge: np.ndarray

    def servers(self, n_agents: int) -> tuple[np.ndarray, np.ndarray]:
        """CSR pointer by agent and rates of the slices that do work (rate > 0)."""
        useful = self.rate > 0
        agents = self.agent[useful]
        return np.searchsorted(agents, np.arange(n_agents + 1)), self.rate[useful]

    def device_load(self, total_devices: int) -> np.ndarray:
        """Sum of shares on every device (at most 1)."""
        return np.bincount(self.device, weights=self.share, minlength=total_devices)


def _snap(values: np.ndarray) -> np.ndarray:
    nearest = np.round(values)
    return np.where(np.abs(values - nearest) < _SNAP, nearest, values)


def place(instance: Instance, amounts: np.ndarray, rate_per_edge: np.ndarray) -> Placement:
    """Slices of the allocation ``amounts`` (shape ``(E,)``); see the module docstring.

    Raises :class:`PlacementError` when a pool holds more than ``k_c`` devices.
    """
    amounts = np.asarray(amounts, dtype=np.float64)
    if np.any(amounts < -_SNAP) or not np.all(np.isfinite(amounts)):
        raise PlacementError("an allocation has a negative or non-finite amount")
    edges = np.nonzero(amounts > _SNAP)[0]
    if edges.size:
        amounts = amounts.copy()
        amounts[edges] = _snap(amounts[edges])
    pools = instance.edge_pool[edges]
    agents = instance.edge_agent[edges]
    order = np.lexsort((agents, pools))
    edges, pools, agents = edges[order], pools[order], agents[order]
    size = amounts[edges]
    ends = np.cumsum(size)
    first = np.r_[True, pools[1:] != pools[:-1]] if edges.size else np.zeros(0, dtype=bool)
    group = np.cumsum(first) - 1
    base = (ends - size)[np.flatnonzero(first)][group] if edges.size else np.zeros(0)
    start = _snap(ends - size - base)
    stop = _snap(ends - base)
    counts = instance.counts
    if edges.size and np.any(stop > counts[pools] + _SNAP):
        c = int(pools[np.argmax(stop - counts[pools])])
        raise PlacementError(f"pool {instance.pools[c].id!r} is allocated {stop[pools == c].max():g} "
                             f"devices but has {int(counts[c])}")
    low = np.floor(start).astype(np.int64)
    high = np.maximum(np.ceil(stop).astype(np.int64), low + 1)
    pieces = high - low
    owner = np.repeat(np.arange(edges.size), pieces)
    local = low[owner] + (np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces))
    share = np.minimum(stop[owner], local + 1) - np.maximum(start[owner], local)
    keep = share > _SNAP
    owner, local, share = owner[keep], local[keep], share[keep]
    offset = np.concatenate([[0], np.cumsum(counts)[:-1]])
    device = offset[pools[owner]] + local
    edge = edges[owner]
    agent = agents[owner]
    sort = np.lexsort((device, agent))
    edge, agent, device, share = edge[sort], agent[sort], device[sort], share[sort]
    return Placement(agent, instance.edge_pool[edge], device, share, rate_per_edge[edge] * share, edge)


def serve(job_ptr: np.ndarray, remaining: np.ndarray, placement: Placement, n_agents: int,
          balancer: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Work done and finishing time (``-1``: not finished) of every queued job this round.

    ``job_ptr``: agent ``i``'s jobs are positions ``job_ptr[i] .. job_ptr[i+1]-1`` of
    ``remaining`` (FIFO order).  The balancer's generator is seeded from ``rng`` with one
    draw per round, whatever the balancer, so the stream does not depend on how far
    dispatch went.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A")], [lo.Edge("A", "g", 1.0)])
    >>> p = place(inst, np.array([2.0]), inst.edge_utility[:, 0])
    >>> done, finish = serve(np.array([0, 3]), np.array([0.5, 0.5, 1.5]), p, 1, "pooled", np.random.default_rng(0))
    >>> done.tolist(), finish.tolist()
    ([0.5, 0.5, 1.0], [0.25, 0.5, -1.0])
    """
    mode = MODES[balancer]
    srv_ptr, rate = placement.servers(n_agents)
    seed = int(rng.integers(1, SEED_RANGE))
    jobs = remaining.size
    done = np.zeros(jobs)
    finish = np.zeros(jobs)
    dispatch(job_ptr.astype(np.int64), remaining, srv_ptr.astype(np.int64), rate, seed, mode, done, finish)
    return done, finish
