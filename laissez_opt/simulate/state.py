"""The job queues of all agents, held as flat arrays grouped by agent.

Agent ``i``'s queue ``q_i`` (thesis 002, section 3.1) is the list of its unfinished jobs in
arrival order (first in, first out).  Each job carries its agent, a global sequence
number (the tie-breaker of every event), its arrival round, its size, its remaining
work and its expiry round: a job that arrives in round ``a`` with deadline ``d`` may be
served in rounds ``a .. a + d - 1`` and is dropped at the start of round ``a + d``
(:data:`~laissez_opt.simulate.workload.NEVER` without a deadline).  The arrays are kept
sorted by (agent, sequence), so one agent's jobs are a contiguous slice and its head
is its oldest job.

Backlog ``q_i^r`` (eq. 3.2) is the remaining work of the queue; conservation, checked
every round by the engine's records, reads
``arrived work = processed work + backlog + dropped work``.

Example
-------
>>> import numpy as np
>>> q = JobQueue(n_agents=2)
>>> q.add(np.array([0, 0, 1]), np.array([1.0, 2.0, 5.0]), round_=0, deadline=2).tolist()
[0, 1, 2]
>>> q.agent.tolist(), q.remaining.tolist(), q.backlog().tolist()
([0, 0, 1], [1.0, 2.0, 5.0], [3.0, 5.0])
>>> q.remaining[0] = 0.0
>>> q.remove(q.remaining <= 0)
>>> q.drop_expired(2)
(array([1, 1]), array([2., 5.]))
>>> len(q)
0
"""

from __future__ import annotations

import numpy as np

from .workload import NEVER

__all__ = ["JobQueue"]


class JobQueue:
    """Unfinished jobs of every agent (see the module docstring)."""

    FIELDS = ("agent", "seq", "arrival", "size", "remaining", "expires")

    def __init__(self, n_agents: int):
        self.n_agents = n_agents
        self.agent = np.zeros(0, dtype=np.int64)
        self.seq = np.zeros(0, dtype=np.int64)
        self.arrival = np.zeros(0, dtype=np.int64)
        self.size = np.zeros(0)
        self.remaining = np.zeros(0)
        self.expires = np.zeros(0, dtype=np.int64)
        self.next_seq = 0

    def __len__(self) -> int:
        return int(self.agent.size)

    def _keep(self, mask: np.ndarray) -> None:
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[mask])

    def add(self, agents: np.ndarray, sizes: np.ndarray, *, round_: int, deadline: int | None) -> np.ndarray:
        """Append jobs arriving at the start of ``round_`` (given in agent order); their sequence numbers."""
        k = int(agents.size)
        seq = np.arange(self.next_seq, self.next_seq + k, dtype=np.int64)
        self.next_seq += k
        if not k:
            return seq
        expires = NEVER if deadline is None else round_ + int(deadline)
        agents = agents.astype(np.int64)
        sizes = sizes.astype(np.float64)
        if agents.size > 1 and np.any(agents[1:] < agents[:-1]):
            order = np.argsort(agents, kind="stable")
            agents, sizes = agents[order], sizes[order]
            seq = seq[order]
        # Merge two runs grouped by agent, the queued jobs of each agent before its new ones (FIFO):
        # a queued job moves past the new jobs of lower agents, a new job past the queued jobs of
        # its own and lower agents.  Linear time, no sort.
        new_count = np.bincount(agents, minlength=self.n_agents)
        old_count = np.bincount(self.agent, minlength=self.n_agents)
        before_new = np.concatenate([[0], np.cumsum(new_count)[:-1]])
        up_to_old = np.cumsum(old_count)
        old_at = np.arange(self.agent.size) + before_new[self.agent]
        new_at = np.arange(k) + up_to_old[agents]
        total = self.agent.size + k

        def merged(old, new, dtype):
            out = np.empty(total, dtype=dtype)
            out[old_at] = old
            out[new_at] = new
            return out

        self.agent = merged(self.agent, agents, np.int64)
        self.seq = merged(self.seq, seq, np.int64)
        self.arrival = merged(self.arrival, round_, np.int64)
        self.size = merged(self.size, sizes, np.float64)
        self.remaining = merged(self.remaining, sizes, np.float64)
        self.expires = merged(self.expires, expires, np.int64)
        return seq

    def drop_expired(self, round_: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove the jobs whose deadline has passed at the start of ``round_``.

        Returns the jobs dropped and their remaining work, per agent.
        """
        expired = self.expires <= round_
        if not expired.any():
            return np.zeros(self.n_agents, dtype=np.int64), np.zeros(self.n_agents)
        jobs = np.bincount(self.agent[expired], minlength=self.n_agents)
        work = np.bincount(self.agent[expired], weights=self.remaining[expired], minlength=self.n_agents)
        self._keep(~expired)
        return jobs, work

    def expired_mask(self, round_: int) -> np.ndarray:
        return self.expires <= round_

    def remove(self, finished: np.ndarray) -> None:
        """Remove the jobs flagged in ``finished``."""
        if finished.any():
            self._keep(~finished)

    def bounds(self) -> np.ndarray:
        """``ptr``: agent ``i``'s jobs are positions ``ptr[i] .. ptr[i+1]-1``."""
        return np.searchsorted(self.agent, np.arange(self.n_agents + 1))

    def backlog(self) -> np.ndarray:
        """Remaining work per agent (``q_i``)."""
        return np.bincount(self.agent, weights=self.remaining, minlength=self.n_agents)

    def jobs(self) -> np.ndarray:
        """Unfinished jobs per agent."""
        return np.bincount(self.agent, minlength=self.n_agents)

    def head_age(self, round_: int) -> np.ndarray:
        """Rounds since the oldest unfinished job of each agent arrived (0 for an empty queue)."""
        out = np.zeros(self.n_agents)
        if self.agent.size:
            ptr = self.bounds()
            has = ptr[1:] > ptr[:-1]
            out[has] = round_ - self.arrival[ptr[:-1][has]]
        return out
