"""The round-based simulation engine: one policy, one seed, ``R`` rounds.

Time is divided into rounds (ticks) of ``h`` hours (``round_hours``; the instance's by
default).  Round ``r`` runs these steps, always in this order; inside a step, agents go
by index and an agent's jobs by arrival order (their sequence numbers), so every tie
is broken the same way and a run is a deterministic function of the configuration,
the policy and the seed:

1. **drop**: jobs whose deadline has passed leave the queues (their remaining work is
   dropped work);
2. **arrive**: the round's jobs join the queues (thesis 002, section 5.2: Poisson,
   rate ``lambda_0 w_i``; or the instance's ``arrivals``);
3. **view**: the round's one-round instance is built from the queues
   (:mod:`laissez_opt.simulate.view`): backlog ``q_i^r`` as ``work``, the age of the oldest
   job as ``elapsed`` ``t_i``, the demand ``d_i^r`` (0 for an empty queue);
4. **decide**: the policy returns ``x_{i,c}`` (and, if it runs a market, payments and
   prices); allocations not produced by ``lo.solve`` are verified here
   (:func:`laissez_opt.analysis.verify.verify`);
5. **place**: the allocation becomes device slices, no device over-booked
   (:mod:`laissez_opt.simulate.execution`);
6. **serve**: every agent's jobs are spread over its slices by the balancer and served
   for the round at ``u_{i,c,r} * share`` work per slice (:mod:`laissez_opt.simulate.kernel`);
   the same arrivals are also served by the agent's weighted time-equal share, as an
   ideal fluid queue (:mod:`laissez_opt.simulate.share`), the reference of the
   sharing-incentive ratio ``phi``;
7. **complete**: finished jobs leave (completion time inside the round), the rest carry
   over with their remaining work;
8. **record**: the round's metrics (:mod:`laissez_opt.simulate.metrics`), the ledger of
   payments, and (``record_events``) the event log; the policy observes the outcome.

Random numbers come from generators keyed by (seed, purpose) (arrivals, job sizes,
balancer), so all policies see the same arrivals and a run is reproducible bit for
bit.  A market (LaissezCloud, HotOS'25) plugs in as a policy: see ``docs/simulate.md``.

Example
-------
>>> from laissez_opt.simulate.config import config_from_dict
>>> cfg = config_from_dict({"format": "laissez-opt/simulation", "version": 1,
...     "instance": "instances/thesis-r1-fair-vs-efficient.json", "balancer": "pooled",
...     "workload": {"arrivals": "instance"}, "policies": ["time_equal"]})
>>> setup = prepare(cfg, seed=0)
>>> from laissez_opt.simulate.policies import resolve
>>> record = run(setup, resolve("time_equal", {}).build(), seed=0)
>>> record.rounds["backlog_work"], record.agents["backlog_work"]
([0.0, 90.0], [85.0, 5.0])
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..analysis.verify import verify
from ..errors import InputError, VerificationError
from ..instance import Instance
from ..io import instance_from_dict, load_instance
from ..result import Result, allocation_records, edge_utilities, utility_map
from .config import SimulationConfig
from .execution import place, serve
from .metrics import Recorder, envy_figures
from .policies import Decision, Policy, RoundView
from .share import ShareReference
from .state import JobQueue
from .view import ViewBuilder
from .workload import ArrivalPlan, plan_arrivals, reference_capacity, stream

__all__ = ["SimulationSetup", "RunRecord", "prepare", "run", "load_base_instance", "estimate_bytes", "ENVY_AUTO_LIMIT",
           "EVENT_KINDS"]

#: ``envy="auto"`` computes the envy matrix up to this many agents (it costs ``n^2 m`` per round).
ENVY_AUTO_LIMIT = 200
#: Event kinds in their order within one instant.
EVENT_KINDS = ("drop", "arrive", "allocate", "price", "pay", "complete", "policy")
_KIND_ORDER = {k: i for i, k in enumerate(EVENT_KINDS)}


def load_base_instance(config: SimulationConfig, seed: int) -> Instance:
    """The configuration's instance for run ``seed`` (a generated family draws it with the seed).

    >>> from laissez_opt.simulate.sweep import build_config
    >>> load_base_instance(build_config(preset="thesis-r5-equal"), 3).name
    'gemmini-n20-m2-s3'
    """
    if config.generate is not None:
        from ..api import generate

        spec = config.generate
        instance_seed = seed if spec.get("seed") is None else spec["seed"]
        try:
            return generate(spec["family"], spec["agents"], spec["pools"], seed=instance_seed, **spec.get("params", {}))
        except InputError as err:
            raise InputError(err.problem, source=config.source, path="$.generate") from None
    if isinstance(config.instance, dict):
        try:
            return instance_from_dict(config.instance, config.source)
        except InputError as err:
            path = "$.instance" + (err.path[1:] if err.path and err.path.startswith("$") else "")
            raise InputError(err.problem, source=config.source, path=path) from None
    return load_instance(config.instance)


@dataclass
class SimulationSetup:
    """Everything one run needs besides the policy: instance, horizon, arrivals, views."""

    config: SimulationConfig
    seed: int
    base: Instance
    rounds: int
    round_hours: float
    tick_scale: float
    plan: ArrivalPlan
    views: ViewBuilder
    share_capacity: np.ndarray
    _share_capacity: dict = field(default_factory=dict, repr=False)

    def share_round_capacity(self, r: int) -> np.ndarray:
        """``C_i^r = (w_i / W) sum_c k_c u_{i,c,r}``: the work of every agent's equal share in round ``r``."""
        k = self.views.base_round(r)
        if k not in self._share_capacity:
            base, work = self.base, self.views.edge_utility(r)
            share = base.weights[base.edge_agent] / base.weights.sum() * base.counts[base.edge_pool]
            self._share_capacity[k] = np.bincount(base.edge_agent, weights=share * work, minlength=base.n_agents)
        return self._share_capacity[k]


def estimate_bytes(config: SimulationConfig, base: Instance, plan_jobs: float, rounds: int) -> float:
    """A generous estimate of a run's memory in bytes: queues, records, event log, the instance.

    ``plan_jobs`` jobs arrive over ``rounds`` rounds; with a deadline of ``D`` rounds at most
    ``D`` rounds' worth of them wait at once.

    >>> from laissez_opt.simulate.sweep import build_config
    >>> cfg = build_config(preset="thesis-r5-equal")
    >>> estimate_bytes(cfg, load_base_instance(cfg, 0), 240_000, 300) < 2**30
    True
    """
    deadline = config.workload.deadline
    per_round = plan_jobs / max(rounds, 1)
    in_flight = per_round * (min(deadline, rounds) if deadline else rounds)
    queues = 2 * 200.0 * in_flight
    records = rounds * 40 * 8 + rounds * base.n_agents * 8
    if config.record_agent_rounds:
        records += rounds * base.n_agents * 6 * 8 * 3
    if config.record_events:
        records += plan_jobs * 3 * 200.0 + rounds * (base.n_pools + base.n_agents) * 200.0
    return queues + records + base.n_edges * 400.0


def prepare(config: SimulationConfig, seed: int) -> SimulationSetup:
    """Resolve the instance, horizon and arrivals of run ``seed``; refuse runs that would not fit in memory.

    >>> from laissez_opt.simulate.sweep import build_config
    >>> setup = prepare(build_config(preset="thesis-r5-1-2"), seed=0)
    >>> setup.rounds, setup.plan.counts.shape, sorted(set(setup.plan.rates.tolist()))
    (300, (300, 20), [40.0, 80.0])
    """
    base = load_base_instance(config, seed)
    rounds = config.rounds if config.rounds is not None else base.rounds
    round_hours = config.round_hours if config.round_hours is not None else base.round_hours
    tick_scale = round_hours / base.round_hours
    # A cheap upper estimate before drawing anything: expected jobs of the whole horizon.
    if config.workload.arrivals == "poisson":
        weights = base.weights if config.workload.rate_scaling == "weight" else np.ones(base.n_agents)
        expected = float(config.workload.base_rate * weights.sum() * rounds) * 1.1 + 100
    else:
        expected = float(sum(math.ceil(sum(a.arrivals or ())) for a in base.agents))
    need = estimate_bytes(config, base, expected, rounds) + rounds * base.n_agents * 16.0
    limit = config.max_memory_gb * 2**30
    if need > limit:
        raise InputError(
            f"this simulation would need about {need / 2**30:.1f} GiB ({expected:.3g} jobs over {rounds} rounds, "
            f"{base.n_agents} agents), more than max_memory_gb = {config.max_memory_gb:g}; shorten the horizon, "
            "add a deadline or raise max_memory_gb", source=config.source, path="$.max_memory_gb")
    try:
        plan = plan_arrivals(config.workload, base, rounds=rounds, tick_scale=tick_scale, seed=seed)
    except InputError as err:
        raise err.located(config.source) from None
    views = ViewBuilder(base, tick_scale=tick_scale, demand_rule=config.demand, round_hours=round_hours)
    share = reference_capacity(base, "equal_share", tick_scale)
    return SimulationSetup(config, seed, base, rounds, round_hours, tick_scale, plan, views, share)


@dataclass
class RunRecord:
    """One run's records: per-round and per-agent tables (lists), optional detail, timings."""

    policy: str
    seed: int
    rounds: dict
    agents: dict
    agent_rounds: dict | None = None
    events: list | None = None
    timing: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"policy": self.policy, "seed": self.seed, "rounds": self.rounds, "agents": self.agents,
                "agent_rounds": self.agent_rounds, "events": self.events, "timing": self.timing, "meta": self.meta}

    @classmethod
    def from_dict(cls, data: dict) -> "RunRecord":
        return cls(**{k: data.get(k) for k in ("policy", "seed", "rounds", "agents", "agent_rounds", "events",
                                               "timing", "meta")})


def _per_agent(values: dict | None, instance: Instance, what: str) -> np.ndarray:
    out = np.zeros(instance.n_agents)
    for agent_id, value in (values or {}).items():
        if agent_id not in instance.agent_index:
            raise InputError(f"{what} names unknown agent {agent_id!r}", path=what)
        out[instance.agent_index[agent_id]] = float(value)
    return out


def _checked_amounts(decision: Decision, view: Instance, policy: Policy, verify_all: bool) -> np.ndarray:
    if not isinstance(decision, Decision):
        raise InputError(f"policy {policy.name!r} returned {type(decision).__name__}, not a Decision", path=policy.name)
    amounts = np.asarray(decision.amounts, dtype=np.float64).reshape(-1)
    if amounts.shape != (view.n_edges,):
        raise InputError(f"policy {policy.name!r} returned {amounts.size} amounts for {view.n_edges} edges",
                         path=policy.name)
    if verify_all and policy.needs_verification:
        utilities = edge_utilities(view, amounts[:, None])
        result = Result(instance=view.name, method=f"policy:{policy.name}", status="feasible", mode=decision.mode,
                        allocation=allocation_records(view, amounts[:, None]),
                        utilities=utility_map(view, utilities))
        outcome = verify(view, result)
        if not outcome.ok:
            raise VerificationError(f"policy {policy.name!r} in {view.name}: {outcome}")
    return amounts


def run(setup: SimulationSetup, policy: Policy, seed: int | None = None) -> RunRecord:
    """Simulate ``setup`` under ``policy``; see the module docstring for the order of events.

    ``seed`` defaults to the setup's.  Returns the run's :class:`RunRecord`.

    >>> from laissez_opt.simulate.sweep import build_config
    >>> from laissez_opt.simulate.policies import resolve
    >>> setup = prepare(build_config(preset="thesis-r1"), seed=0)
    >>> run(setup, resolve("min_backlog", {}).build()).agents["backlog_work"]
    [20.0, 0.0]
    """
    config, base = setup.config, setup.base
    seed = setup.seed if seed is None else seed
    n, rounds, plan, views = base.n_agents, setup.rounds, setup.plan, setup.views
    deadline = config.workload.deadline
    queue, reference = JobQueue(n), ShareReference(n_agents=n, deadline=deadline)
    size_rng, balancer_rng = stream(seed, "sizes"), stream(seed, "balancer")
    weights = base.weights
    envy_on = config.envy == "always" or (config.envy == "auto" and n <= ENVY_AUTO_LIMIT)
    recorder = Recorder(agent_ids=[a.id for a in base.agents], weights=weights, rates=plan.rates, sizes=plan.sizes,
                        share_capacity=setup.share_capacity, rounds=rounds, utility=config.utility,
                        keep_agent_rounds=config.record_agent_rounds)
    events: list | None = [] if config.record_events else None
    previous_events: list | None = None
    total_devices = int(base.counts.sum())
    prices_hours = base.base_prices * setup.round_hours
    instance_caps = np.array([np.iinfo(np.int64).max // 4 if a.demand is None else a.demand for a in base.agents],
                             dtype=np.int64)
    policy.start(base, seed)
    clock = _Clock()
    for r in range(rounds):
        # 1-2. drops and arrivals
        drop_events = _drop_events(r, base, queue) if events is not None and deadline else []
        dropped_jobs, dropped_work = queue.drop_expired(r) if deadline else (np.zeros(n, np.int64), np.zeros(n))
        new_agents, new_sizes = plan.round_jobs(r, size_rng)
        new_seq = queue.add(new_agents, new_sizes, round_=r, deadline=deadline)
        arrived_jobs = np.bincount(new_agents, minlength=n).astype(float)
        arrived_work = np.bincount(new_agents, weights=new_sizes, minlength=n)
        backlog = queue.backlog()
        elapsed = queue.head_age(r)
        clock.lap("arrivals")
        # 3. the round's view
        demands = views.demands(r, backlog)
        instance = views.view(r, backlog=backlog, elapsed=elapsed, demands=demands)
        work = views.edge_utility(r)

        def with_demands(d, r=r, backlog=backlog, elapsed=elapsed):
            """The round's view with demands ``d`` (``None``: the instance's own demands)."""
            return views.view(r, backlog=backlog, elapsed=elapsed,
                              demands=instance_caps if d is None else np.asarray(d, dtype=np.int64))

        view = RoundView(r, r * setup.round_hours, instance, base, backlog, queue.jobs(), arrived_work, demands,
                         elapsed, work, seed, previous_events, with_demands)
        clock.lap("view")
        # 4. the decision
        decision = policy.decide(view)
        clock.lap("policy")
        amounts = _checked_amounts(decision, instance, policy, config.verify)
        clock.lap("verify")
        # 5-6. placement and service (and the equal-share shadow)
        placement = place(instance, amounts, work)
        done, finish = serve(queue.bounds(), queue.remaining, placement, n, config.balancer, balancer_rng)
        share_processed = reference.step(r, arrived_work, setup.share_round_capacity(r))
        clock.lap("serve")
        # 7. completions
        finished = finish >= 0
        processed = np.bincount(queue.agent, weights=done, minlength=n)
        who = queue.agent[finished]
        delays = r + finish[finished] - queue.arrival[finished]
        sizes = queue.size[finished]
        with np.errstate(divide="ignore", invalid="ignore"):
            rhos = np.where(sizes > 0, delays * setup.share_capacity[who] / np.where(sizes > 0, sizes, 1.0), 0.0)
        completed_jobs = np.bincount(who, minlength=n).astype(float)
        completed_work = np.bincount(who, weights=sizes, minlength=n)
        if events is not None:
            round_events = drop_events + _events(r, base, queue, new_agents, new_seq, placement, decision, finished,
                                                 finish)
        queue.remaining = np.where(finished, 0.0, queue.remaining - done)
        queue.remove(finished)
        clock.lap("completions")
        # 8. records
        envy = None
        if envy_on:
            bundles = np.zeros((n, base.n_pools))
            np.add.at(bundles, (base.edge_agent, base.edge_pool), amounts)
            per_device = np.zeros((n, base.n_pools))
            per_device[base.edge_agent, base.edge_pool] = work
            envy = envy_figures(backlog, weights, per_device, bundles)
        payments = _per_agent(decision.payments, base, "payments")
        base_cost = np.bincount(placement.agent, weights=placement.share * prices_hours[placement.pool], minlength=n)
        backlog_end = queue.backlog()
        recorder.record(
            r, arrived_jobs=arrived_jobs, arrived_work=arrived_work, dropped_jobs=dropped_jobs.astype(float),
            dropped_work=dropped_work, processed=processed, completed_jobs=completed_jobs,
            completed_work=completed_work, delays=delays, rhos=rhos, delay_agents=who,
            backlog_jobs=queue.jobs().astype(float), backlog_work=backlog_end, share_processed=share_processed,
            devices_used=float(placement.share.sum()), capacity_work=float(placement.rate.sum()), envy=envy,
            payments=payments, base_cost=base_cost,
        )
        if events is not None:
            events.extend(round_events)
            previous_events = round_events
        clock.lap("record")
        policy.observe(view, {"processed": processed, "completed_jobs": completed_jobs,
                              "completed_work": completed_work, "dropped_work": dropped_work,
                              "backlog": backlog_end, "amounts": amounts})
        clock.lap("policy")
    policy.finish()
    timing = clock.summary(rounds)
    meta = {"instance": base.name, "agents": n, "pools": base.n_pools, "devices": total_devices,
            "rounds": rounds, "round_hours": setup.round_hours,
            "infeasible_rounds": int(getattr(policy, "infeasible_rounds", 0))}
    return RunRecord(policy.name, seed, recorder.rounds_table(), recorder.agents(), recorder.agent_rounds_table(),
                     events, timing, meta)


class _Clock:
    """Seconds spent in each phase of the loop; ``policy`` is the policy's, the rest the engine's."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.spent[phase] = self.spent.get(phase, 0.0) + now - self.last
        self.last = now

    def summary(self, rounds: int) -> dict:
        total = sum(self.spent.values())
        policy = self.spent.get("policy", 0.0)
        out = {"policy_s": policy, "engine_s": total - policy, "total_s": total,
               "rounds_per_s": rounds / total if total > 0 else math.inf}
        out.update({f"{k}_s": v for k, v in sorted(self.spent.items()) if k != "policy"})
        return out


def _drop_events(r: int, base: Instance, queue: JobQueue) -> list:
    """Event records of the jobs dropped at the start of round ``r`` (before they leave the queue)."""
    expired = np.nonzero(queue.expired_mask(r))[0].tolist()
    return [{"round": r, "time": float(r), "kind": "drop", "agent": base.agents[int(queue.agent[j])].id,
             "job": int(queue.seq[j]), "amount": float(queue.remaining[j])} for j in expired]


def _events(r, base, queue, new_agents, new_seq, placement, decision, finished, finish) -> list:
    """The event records of round ``r``, sorted by (time, kind, agent, job or device)."""
    ids = [a.id for a in base.agents]
    pools = [p.id for p in base.pools]
    out = []
    for i, s in zip(new_agents.tolist(), new_seq.tolist()):
        out.append((0.0, _KIND_ORDER["arrive"], i, s, {"kind": "arrive", "agent": ids[i], "job": s}))
    for i, c, d, share in zip(placement.agent.tolist(), placement.pool.tolist(), placement.device.tolist(),
                              placement.share.tolist()):
        out.append((0.0, _KIND_ORDER["allocate"], i, d, {"kind": "allocate", "agent": ids[i], "pool": pools[c],
                                                         "device": d, "amount": share}))
    for pool_id, price in sorted((decision.prices or {}).items()):
        out.append((0.0, _KIND_ORDER["price"], -1, base.pool_index.get(pool_id, -1),
                    {"kind": "price", "pool": pool_id, "price": float(price)}))
    for agent_id, money in sorted((decision.payments or {}).items()):
        out.append((0.0, _KIND_ORDER["pay"], base.agent_index.get(agent_id, -1), 0,
                    {"kind": "pay", "agent": agent_id, "amount": float(money)}))
    for j in np.nonzero(finished)[0].tolist():
        i = int(queue.agent[j])
        out.append((float(finish[j]), _KIND_ORDER["complete"], i, int(queue.seq[j]),
                    {"kind": "complete", "agent": ids[i], "job": int(queue.seq[j]), "amount": float(queue.size[j])}))
    for k, extra in enumerate(decision.events or ()):
        out.append((float(extra.get("time", 0.0)), _KIND_ORDER["policy"], -1, k, dict(extra)))
    out.sort(key=lambda e: e[:4])
    return [{"round": r, **record, "time": r + t} for t, _, _, _, record in out]
