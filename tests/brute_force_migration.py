"""Brute-force optimum of the migration-aware schedule, by enumeration (independent of the library's models).

Every job's schedules are enumerated: in each round of its window, idle or one
compatible pool.  A schedule is kept if the job does not run after completing
(and, without migration, never changes pool).  Progress: ``u s`` per round
run, minus ``mu`` when the pool differs from the one it last ran on.  Jobs
interact only through pool capacity, so a dynamic programme over jobs keyed
by the devices used per (pool, round) finds the optimum exactly.
"""

from __future__ import annotations

import itertools

TOL = 1e-6


def last_round(agent, rounds):
    """The job's last usable round: its deadline, or the horizon's last round when it has none or a later one."""
    return rounds - 1 if agent.deadline is None else min(agent.deadline, rounds - 1)


def job_schedules(inst, agent, *, allow_migration=True):
    """``(schedule, completion round, work done, migrations, money, usage)`` of every valid schedule of ``agent``."""
    rounds = inst.rounds
    last = last_round(agent, rounds)
    size = 1 if agent.demand is None else agent.demand
    work = 1.0 if agent.work is None else agent.work
    edges = {e.pool: e for e in inst.edges if e.agent == agent.id}
    prices = {p.id: p.base_price for p in inst.pools}
    window = list(range(agent.arrival, last + 1))
    choices = [None] + (sorted(edges) if size > 0 else [])
    out = []
    for picks in itertools.product(choices, repeat=len(window)):
        plan = dict(zip(window, picks))
        done, where, when, moves, money, usage, valid = 0.0, None, None, 0, 0.0, {}, True
        for r in range(agent.arrival, rounds):
            pool = plan.get(r)
            if pool is not None:
                if when is not None:
                    valid = False
                    break
                if where is not None and where != pool:
                    if not allow_migration:
                        valid = False
                        break
                    moves += 1
                    done -= agent.migration_cost
                done += edges[pool].utility_in(r) * size
                money += prices[pool] * inst.round_hours * size
                usage[(pool, r)] = size
                where = pool
            if when is None and done >= work - TOL * max(1.0, work):
                when = r
        if valid:
            out.append((plan, when, done, moves, money, usage))
    return out


def value(agent, when, money, objective, rounds):
    """A job's term of the objective; None when the objective needs it finished and it is not."""
    work = 1.0 if agent.work is None else agent.work
    last = last_round(agent, rounds)
    finished = when is not None and when <= last
    if objective == "work":
        return agent.weight * work if finished else 0.0
    if not finished:
        return None
    return agent.weight * (when + 1) if objective == "completion" else money


def best(inst, objective, *, allow_migration=True):
    """The optimal objective value, or None when no schedule meets the objective's requirements."""
    counts = {p.id: p.count for p in inst.pools}
    sign = 1.0 if objective == "work" else -1.0  # maximise sign * value
    states = {(): 0.0}
    for agent in inst.agents:
        options: dict[tuple, float] = {}
        for plan, when, done, moves, money, usage in job_schedules(inst, agent, allow_migration=allow_migration):
            v = value(agent, when, money, objective, inst.rounds)
            if v is None or any(n > counts[p] for (p, _), n in usage.items()):
                continue
            key = tuple(sorted(usage.items()))
            if key not in options or sign * v > options[key]:
                options[key] = sign * v
        nxt: dict[tuple, float] = {}
        for state, total in states.items():
            load = dict(state)
            for key, v in options.items():
                merged = dict(load)
                ok = True
                for slot, n in key:
                    merged[slot] = merged.get(slot, 0) + n
                    if merged[slot] > counts[slot[0]]:
                        ok = False
                        break
                if ok:
                    k = tuple(sorted(merged.items()))
                    if k not in nxt or total + v > nxt[k]:
                        nxt[k] = total + v
        states = nxt
        if not states:
            return None
    return sign * max(states.values())
