"""The equal-share reference: the work each agent's weighted time-equal share would process.

The sharing-incentive ratio compares what an agent gets with what it would get from its
weighted share of every device (thesis 002, eq. 3.3: ``phi_i = u_i^sh / u_i^ex``).  With
queues, ``u_i^ex`` depends on the arrivals: the reference here serves the agent's own
arrivals (the same jobs the policy sees, common random numbers) at the capacity of its
share, ``C_i^r = (w_i / W) sum_c k_c u_{i,c,r}`` per round, first in first out, with the
same deadlines, as one fluid queue (no balancer losses: the share's ideal service).
Its state is the agent's queued work by arrival round: a ring of ``D`` cohorts for a
deadline of ``D`` rounds (the oldest is dropped when a new round starts), one backlog
without deadline.  Cost ``O(n D)`` per round, independent of the number of jobs.

Example
-------
>>> import numpy as np
>>> ref = ShareReference(n_agents=1, deadline=2)
>>> [float(ref.step(0, np.array([5.0]), np.array([3.0]))[0]),   # 5 arrive, 3 served
...  float(ref.step(1, np.array([1.0]), np.array([1.0]))[0]),   # the 2 left are served first... 1 of them
...  float(ref.step(2, np.array([0.0]), np.array([9.0]))[0])]   # round 0's last unit expired: 1 served
[3.0, 1.0, 1.0]
>>> ref.dropped.tolist(), ref.backlog().tolist()
([1.0], [0.0])
"""

from __future__ import annotations

import numpy as np

__all__ = ["ShareReference"]


class ShareReference:
    """Fluid FIFO queues of every agent served at its equal-share capacity (module docstring)."""

    def __init__(self, *, n_agents: int, deadline: int | None):
        self.width = int(deadline) if deadline else 1
        self.expires = deadline is not None
        self.cohorts = np.zeros((n_agents, self.width))
        self.dropped = np.zeros(n_agents)

    def backlog(self) -> np.ndarray:
        return self.cohorts.sum(axis=1)

    def step(self, r: int, arrived: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Round ``r``: drop the expired cohort, add ``arrived``, serve ``capacity``; the work processed."""
        column = r % self.width
        if self.expires:
            self.dropped += self.cohorts[:, column]
            self.cohorts[:, column] = arrived
        else:
            self.cohorts[:, 0] += arrived
        order = (column + 1 + np.arange(self.width)) % self.width  # oldest cohort first
        queued = self.cohorts[:, order]
        before = np.cumsum(queued, axis=1) - queued
        served = np.clip(capacity[:, None] - before, 0.0, queued)
        self.cohorts[:, order] = queued - served
        return served.sum(axis=1)
