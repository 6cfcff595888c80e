"""Compiled inner loop of the simulator: one round of job dispatch and service, all agents.

Inputs are flat arrays grouped by agent (CSR): agent ``i``'s jobs are positions
``job_ptr[i] .. job_ptr[i+1]-1`` in FIFO order with remaining work ``remaining``, and its
servers (the device slices it holds this round) are ``srv_ptr[i] .. srv_ptr[i+1]-1`` with
rates ``rate`` (work per round).  Time runs from 0 to 1 within the round.

``mode`` selects the balancer (thesis 002, section 5.2, "power-of-two-choices"):

* ``POOLED`` (0): all the agent's servers drain one FIFO queue at their total rate
  (the fluid model of eq. 3.2: work done ``min(q, sum_c u_{i,c} x_{i,c})``);
* ``POWER_OF_TWO`` (1): each job, in FIFO order, samples two distinct servers uniformly
  and joins the one that would finish its queued work first (ties: the lower index);
  one server only: that one;
* ``LEAST_LOADED`` (2): each job joins the server that would finish its queued work
  first, among all of the agent's servers (ties: the lower index);
* ``RANDOM`` (3): each job joins one server drawn uniformly.

The samples come from a Park-Miller generator (``s <- 48271 s mod (2^31 - 1)``, uniform
``(s - 1) / (2^31 - 2)``) started at ``seed`` (in ``1 .. 2^31 - 2``) and advanced only for
the jobs dispatched, so a round costs nothing for the jobs that wait; integer
arithmetic makes the compiled and the plain-Python paths draw the same numbers.

A server serves its jobs in the order they joined.  Dispatch of an agent stops when
every server of the agent is busy to the end of the round (later jobs could not
start this round; they stay queued without consuming further choices).  Outputs per
job: work ``done`` this round and the finishing time ``finish`` in ``[0, 1]`` (``-1`` if
not finished).  A job finishes when its service ends by ``1 + 1e-12`` (a float margin).

With numba installed the function is compiled once (``cache=True``); without it the
same code runs as plain Python with the same results.

>>> import numpy as np
>>> done, finish = np.zeros(3), np.zeros(3)
>>> dispatch(np.array([0, 3]), np.array([1.0, 2.0, 4.0]), np.array([0, 2]), np.array([2.0, 2.0]),
...          12345, POWER_OF_TWO, done, finish)
>>> done.tolist(), finish.tolist()
([1.0, 2.0, 1.0], [0.5, 1.0, -1.0])

Two servers of rate 2: the first job (1 unit) takes server 0 until 0.5, the second (2
units) the idle server 1 until 1.0, the third waits for server 0 and gets 1 unit done.
"""

from __future__ import annotations

import numpy as np

from ..jit import HAVE_NUMBA, jit as _jit


__all__ = ["POOLED", "POWER_OF_TWO", "LEAST_LOADED", "RANDOM", "MODES", "dispatch", "HAVE_NUMBA", "SEED_RANGE"]

POOLED, POWER_OF_TWO, LEAST_LOADED, RANDOM = 0, 1, 2, 3
#: Balancer name -> mode code.
MODES = {"pooled": POOLED, "power_of_two": POWER_OF_TWO, "least_loaded": LEAST_LOADED, "random": RANDOM}
_SLACK = 1e-12
_MODULUS = 2147483647
_MULTIPLIER = 48271
#: Valid seeds of the generator: ``1 <= seed < SEED_RANGE``.
SEED_RANGE = _MODULUS - 1


@_jit
def dispatch(job_ptr, remaining, srv_ptr, rate, seed, mode, done, finish):
    n = job_ptr.shape[0] - 1
    state = seed
    busy = np.zeros(rate.shape[0])  # time at which each server's queued work ends
    for i in range(n):
        j0 = job_ptr[i]
        j1 = job_ptr[i + 1]
        s0 = srv_ptr[i]
        s1 = srv_ptr[i + 1]
        for j in range(j0, j1):
            done[j] = 0.0
            finish[j] = -1.0
        ns = s1 - s0
        if ns == 0:
            continue
        if mode == POOLED:
            total = 0.0
            for s in range(s0, s1):
                total += rate[s]
            t = 0.0
            for j in range(j0, j1):
                if t >= 1.0:
                    break
                need = remaining[j] / total
                if t + need <= 1.0 + _SLACK:
                    done[j] = remaining[j]
                    t = t + need
                    finish[j] = min(t, 1.0)
                else:
                    done[j] = (1.0 - t) * total
                    t = 1.0
            continue
        full = 0
        for j in range(j0, j1):
            if full == ns:
                break
            if mode == LEAST_LOADED or ns == 1:
                pick = s0
                for s in range(s0 + 1, s1):
                    if busy[s] < busy[pick]:
                        pick = s
            elif mode == RANDOM:
                state = (state * _MULTIPLIER) % _MODULUS
                pick = s0 + min(int((state - 1) / (_MODULUS - 1) * ns), ns - 1)
            else:
                state = (state * _MULTIPLIER) % _MODULUS
                a = min(int((state - 1) / (_MODULUS - 1) * ns), ns - 1)
                state = (state * _MULTIPLIER) % _MODULUS
                b = min(int((state - 1) / (_MODULUS - 1) * (ns - 1)), ns - 2)
                if b >= a:
                    b += 1
                first = s0 + min(a, b)
                second = s0 + max(a, b)
                pick = second if busy[second] < busy[first] else first
            start = busy[pick]
            end = start + remaining[j] / rate[pick]
            busy[pick] = end
            if start < 1.0:
                if end <= 1.0 + _SLACK:
                    done[j] = remaining[j]
                    finish[j] = min(end, 1.0)
                else:
                    done[j] = (1.0 - start) * rate[pick]
                if end >= 1.0:
                    full += 1
