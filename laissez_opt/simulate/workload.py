"""Job arrivals: how many jobs each agent receives per round, and how big they are.

Thesis 002, section 5.2: arrivals per agent are Poisson with a base rate
``lambda_0 = 40`` jobs per round scaled by the agent's weight, ``lambda_i = lambda_0 w_i``
(``rate_scaling="none"``: ``lambda_i = lambda_0``).  The offered load ("queue utility",
section 5.3) ``rho_i`` fixes the mean job size ``s_i = rho_i C_i / lambda_i`` against a
reference capacity ``C_i`` per round (see :mod:`laissez_opt.simulate.config`), so that
agent ``i`` offers ``rho_i C_i`` work per round on average whatever its weight.

With ``arrivals="instance"`` the agents' ``arrivals`` lists give the jobs of each round
(thesis Table 2.1): ``a`` arrivals are ``ceil(a)`` jobs of size ``job_size`` (default 1),
the last one holding the fraction when ``a`` is not whole; rounds past the list's end
bring nothing.  Poisson arrivals come only in an agent's window ``a_i .. D_i``.

Every random number comes from generators seeded with the run seed and a purpose
tag (:func:`stream`), so arrivals are the same whatever policy runs: policies are
compared on common random numbers.

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.simulate.config import Workload
>>> inst = lo.Instance([lo.Pool("g", count=4)], [lo.Agent("A"), lo.Agent("B", weight=2)],
...                    [lo.Edge("A", "g", 10.0), lo.Edge("B", "g", 10.0)])
>>> plan = plan_arrivals(Workload(base_rate=4, load=0.5), inst, rounds=3, tick_scale=1.0, seed=0)
>>> plan.rates.tolist(), plan.reference.tolist(), plan.sizes.tolist()
([4.0, 8.0], [13.333333333333332, 26.666666666666664], [1.6666666666666665, 1.6666666666666665])
>>> plan.counts.shape
(3, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..instance import Instance
from .config import Workload

__all__ = ["ArrivalPlan", "plan_arrivals", "reference_capacity", "stream", "NEVER"]

#: Expiry round of a job without a deadline.
NEVER = np.iinfo(np.int64).max // 4

_PURPOSES = {"arrivals": 1, "sizes": 2, "balancer": 3, "policy": 4}


def stream(seed: int, purpose: str) -> np.random.Generator:
    """The random generator of one purpose (``arrivals``, ``sizes``, ``balancer``, ``policy``) of a run.

    >>> int(stream(7, "arrivals").integers(100)) == int(stream(7, "arrivals").integers(100))
    True
    """
    return np.random.default_rng([int(seed), _PURPOSES[purpose]])


def mean_utilities(instance: Instance) -> np.ndarray:
    """``u_{i,c}`` averaged over the instance's rounds, dense ``n x m``.

    >>> import laissez_opt as lo
    >>> mean_utilities(lo.load("instances/thesis-r2-table3-1.json"))[0].round(3).tolist()
    [0.6, 0.7, 0.633, 0.3]
    """
    return instance.utility.mean(axis=2)


def reference_capacity(instance: Instance, reference: str, tick_scale: float) -> np.ndarray:
    """``C_i``: work per round of agent ``i``'s weighted share under ``reference``.

    ``equal_share``: ``(w_i / W) sum_c k_c u_{i,c}``; ``best_pool`` / ``worst_pool``:
    ``(w_i / W) sum_{c: u_{i,c} > 0} k_c`` devices of its best / worst pool.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("f", count=2), lo.Pool("s", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "f", 3.0), lo.Edge("A", "s", 1.0), lo.Edge("B", "s", 1.0)])
    >>> [reference_capacity(inst, ref, 1.0).tolist() for ref in ("equal_share", "best_pool", "worst_pool")]
    [[4.0, 1.0], [6.0, 1.0], [2.0, 1.0]]
    """
    u = mean_utilities(instance) * tick_scale
    share = instance.weights / instance.weights.sum()
    k = instance.counts.astype(float)
    if reference == "equal_share":
        return share * (u @ k)
    usable = share * ((u > 0) @ k)
    if reference == "best_pool":
        return usable * u.max(axis=1, initial=0.0)
    if reference == "worst_pool":
        positive = np.where(u > 0, u, np.inf).min(axis=1, initial=np.inf)
        return usable * np.where(np.isfinite(positive), positive, 0.0)
    raise InputError(f"unknown load reference {reference!r}", path="workload.load_reference")


@dataclass
class ArrivalPlan:
    """Arrivals of a whole run.

    ``counts[r, i]`` jobs arrive for agent ``i`` at the start of round ``r``, each of mean
    size ``sizes[i]`` (``last[r, i]``: size of the last of them when it is a fraction of a
    job, else 0); ``rates`` are ``lambda_i`` (Poisson) and ``reference`` the capacities ``C_i``.
    """

    counts: np.ndarray
    sizes: np.ndarray
    rates: np.ndarray
    reference: np.ndarray
    last: np.ndarray | None
    exponential: bool

    def round_jobs(self, r: int, size_rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Agent index and size of every job arriving in round ``r`` (agent order)."""
        counts = self.counts[r]
        agents = np.repeat(np.arange(counts.size), counts)
        sizes = self.sizes[agents]
        if self.exponential and agents.size:
            sizes = sizes * size_rng.exponential(1.0, agents.size)
        if self.last is not None and agents.size:
            fraction = self.last[r]
            ends = np.cumsum(counts) - 1
            has = (counts > 0) & (fraction > 0)
            sizes[ends[has]] = fraction[has] * self.sizes[has]
        return agents, sizes

    def expected_jobs(self) -> float:
        return float(self.counts.sum())


def _loads(workload: Workload, instance: Instance) -> np.ndarray:
    load = workload.load
    n = instance.n_agents
    if isinstance(load, float):
        return np.full(n, load)
    kind, table = load
    out = np.zeros(n)
    if kind == "by_agent":
        for agent_id in table:
            if agent_id not in instance.agent_index:
                raise InputError(f"unknown agent id {agent_id!r}", path=f"$.workload.load.by_agent.{agent_id}")
        for i, agent in enumerate(instance.agents):
            if agent.id not in table:
                raise InputError(f"no load for agent {agent.id!r}", path="$.workload.load.by_agent")
            out[i] = table[agent.id]
        return out
    for i, agent in enumerate(instance.agents):
        match = [rho for w, rho in table.items() if math.isclose(w, agent.weight, rel_tol=1e-12)]
        if not match:
            raise InputError(f"no load for weight {agent.weight:g} (agent {agent.id!r})", path="$.workload.load.by_weight")
        out[i] = match[0]
    return out


def plan_arrivals(workload: Workload, instance: Instance, *, rounds: int, tick_scale: float, seed: int) -> ArrivalPlan:
    """Draw (Poisson) or read (instance) the jobs of every round of one run.

    >>> import laissez_opt as lo
    >>> inst = lo.load("instances/thesis-r1-fair-vs-efficient.json")
    >>> plan_arrivals(Workload(arrivals="instance"), inst, rounds=3, tick_scale=1.0, seed=0).counts.tolist()
    [[150, 275], [370, 280], [0, 0]]
    """
    n = instance.n_agents
    reference = reference_capacity(instance, workload.load_reference, tick_scale)
    exponential = workload.size_distribution == "exponential"
    if workload.arrivals == "instance":
        size = workload.job_size if workload.job_size is not None else 1.0
        given = np.zeros((rounds, n))
        for i, agent in enumerate(instance.agents):
            if agent.arrivals is not None:
                span = min(rounds, len(agent.arrivals))
                given[:span, i] = agent.arrivals[:span]
        counts = np.ceil(given - 1e-12).astype(np.int64)
        whole = np.floor(given + 1e-12)
        last = np.where(given - whole > 1e-12, given - whole, 0.0)
        return ArrivalPlan(counts, np.full(n, size), np.zeros(n), reference, last if last.any() else None, exponential)
    weights = instance.weights if workload.rate_scaling == "weight" else np.ones(n)
    rates = workload.base_rate * weights
    if workload.load is not None:
        loads = _loads(workload, instance)
        servable = (reference > 0) & (rates > 0)
        rates = np.where(servable, rates, 0.0)
        sizes = np.where(servable, loads * reference / np.where(servable, rates, 1.0), 0.0)
    else:
        sizes = np.full(n, float(workload.job_size))
    r = np.arange(rounds)[:, None]
    arrival = np.array([a.arrival for a in instance.agents])
    last_round = np.array([np.inf if a.deadline is None else a.deadline for a in instance.agents])
    window = (r >= arrival[None, :]) & (r <= last_round[None, :])
    counts = stream(seed, "arrivals").poisson(rates[None, :] * window, size=(rounds, n)).astype(np.int64)
    return ArrivalPlan(counts, sizes, rates, reference, None, exponential)
