"""The simulation engine: hand-computed rounds, R1, conservation, placement, verification, determinism."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.result import Result, allocation_records, edge_utilities
from laissez_opt.simulate import Decision, Policy, config_from_dict, prepare, run
from laissez_opt.simulate.execution import PlacementError, place
from laissez_opt.simulate.policies import MethodPolicy, register_policy, resolve, unregister_policy

from conftest import INSTANCES


def config(**fields) -> dict:
    data = {"format": "laissez-opt/simulation", "version": 1, "policies": ["time_equal"]}
    data.update(fields)
    return data


def three_round_instance() -> dict:
    """One pool of two devices; A does 3 work per device and round, B does 1; unit jobs."""
    return {
        "format": "laissez-opt/instance", "version": 1, "name": "three-rounds", "rounds": 3,
        "pools": [{"id": "g", "count": 2}],
        "agents": [{"id": "A", "arrivals": [4, 0, 2]}, {"id": "B", "arrivals": [1, 3, 0]}],
        "edges": [{"agent": "A", "pool": "g", "utility": 3.0}, {"agent": "B", "pool": "g", "utility": 1.0}],
    }


def simulate_one(policy="time_equal", seed=0, **fields):
    cfg = config_from_dict(config(**fields))
    return run(prepare(cfg, seed), resolve(policy, {}).build(), seed)


# ------------------------------------------------------------------ hand-computed examples


def test_three_rounds_by_hand_without_deadline():
    """time_equal gives each agent one device's worth; pooled FIFO service.

    Round 0: A has 4 jobs, serves 3 (done at 1/3, 2/3, 1), keeps 1; B serves its job (done at 1).
    Round 1: B gets 3 jobs, serves 1; A serves its leftover at 1/3 (delay 1 + 1/3).
    Round 2: A serves its 2 new jobs; B serves 1 of its 2 left.
    """
    rec = simulate_one(instance=three_round_instance(), workload={"arrivals": "instance"}, balancer="pooled",
                       record_agent_rounds=True)
    r = rec.rounds
    assert r["arrived_work"] == [5.0, 3.0, 2.0]
    assert r["processed_work"] == [4.0, 2.0, 3.0]
    assert r["backlog_work"] == [1.0, 2.0, 1.0]
    assert r["completed_jobs"] == [4.0, 2.0, 3.0]
    assert r["dropped_work"] == [0.0, 0.0, 0.0]
    assert r["delay_mean"][0] == pytest.approx((1 / 3 + 2 / 3 + 1 + 1) / 4)
    assert r["delay_max"][1] == pytest.approx(4 / 3)  # A's fourth job waited a round
    assert rec.agents["processed_work"] == [6.0, 3.0]
    assert rec.agents["backlog_work"] == [0.0, 1.0]
    assert rec.agent_rounds["backlog_work"] == [[1.0, 0.0], [0.0, 2.0], [0.0, 1.0]]
    # The time-equal share is the phi reference: phi = 1 for time_equal itself.
    assert rec.agents["phi"] == [1.0, 1.0]


def test_three_rounds_by_hand_with_deadline_one_round():
    """Deadline 1: a job may only be served in its arrival round; A's 4th job and B's 2 leftovers drop."""
    rec = simulate_one(instance=three_round_instance(), workload={"arrivals": "instance", "deadline": 1},
                       balancer="pooled")
    r = rec.rounds
    assert r["processed_work"] == [4.0, 1.0, 2.0]
    assert r["dropped_work"] == [0.0, 1.0, 2.0]
    assert r["dropped_jobs"] == [0.0, 1.0, 2.0]
    assert r["backlog_work"] == [1.0, 2.0, 0.0]
    assert rec.agents["dropped_work"] == [1.0, 2.0]
    assert all(abs(c) < 1e-12 for c in r["conservation"])


def test_r1_fair_scheduler_and_minimum_backlog():
    """Thesis 002 section 2.2.3: the fair scheduler and the efficient alternative, backlog per agent and round.

    The text's fair scheduler: A1 clears 150, then keeps 85 (reproduced); A2 keeps 50, then 105.  Half of
    every accelerator gives A2 (200 + 100 + 50 + 200) / 2 = 275 jobs per round, not 225: it clears round 1
    and keeps 280 - 275 = 5 after round 2 (a finding: no half share of Table 2.2 gives 225).
    The exact per-round minimum backlog: both clear round 1; round 2 leaves A1 with 20 (A1 on R3, R4).
    """
    res = lo.simulate(preset="thesis-r1", record_agent_rounds=True, progress=False)
    fair = res.run("time_equal", 0).agent_rounds["backlog_work"]
    best = res.run("min_backlog", 0).agent_rounds["backlog_work"]
    assert fair == [[0.0, 0.0], [85.0, 5.0]]
    assert best == [[0.0, 0.0], [20.0, 0.0]]
    assert res.run("time_equal", 0).rounds["utility"] == [0.0, -90.0]  # eq. 3.2 summed over agents
    # Same numbers from the shipped instance file, with the power-of-two balancer of chapter 5.
    cfg = config(instance=str(INSTANCES / "thesis-r1-fair-vs-efficient.json"), workload={"arrivals": "instance"},
                 policies=["min_backlog"], record_agent_rounds=True)
    again = lo.simulate(cfg, progress=False, balancer="pooled")
    assert again.run("min_backlog", 0).agent_rounds["backlog_work"] == best


# ------------------------------------------------------------------ placement


def test_placement_slices_never_double_book():
    inst = Instance([Pool("p", count=3), Pool("q", count=1)], [Agent("A"), Agent("B"), Agent("C")],
                    [Edge("A", "p", 1.0), Edge("B", "p", 2.0), Edge("C", "p", 1.0), Edge("A", "q", 5.0)])
    amounts = np.array([1.25, 0.5, 1.25, 1.0])
    p = place(inst, amounts, inst.edge_utility[:, 0])
    assert np.all(p.device_load(4) <= 1 + 1e-12)
    assert np.allclose(np.bincount(p.edge, weights=p.share, minlength=4), amounts)
    assert set(p.device[p.pool == 1].tolist()) == {3}
    with pytest.raises(PlacementError, match="pool 'p' is allocated"):
        place(inst, np.array([2.0, 1.0, 0.5, 0.0]), inst.edge_utility[:, 0])


# ------------------------------------------------------------------ every policy verified


class Recording(Policy):
    """Wraps a policy and keeps every (view, decision) for an independent check afterwards."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, []

    def start(self, base, seed):
        self.inner.start(base, seed)

    def decide(self, view):
        decision = self.inner.decide(view)
        self.seen.append((view.instance, decision))
        return decision

    def finish(self):
        self.inner.finish()


POLICIES = [
    ("welfare", {}), ("maxmin", {"fractional": True}), ("themis", {}), ("drf", {"fractional": True}),
    ("mtf", {"threshold": "fixed:0.3"}), ("mtf", {"threshold": "hedge"}), ("mtf", {"threshold": "actor_critic"}),
    ("auction", {}), ("gandiva_fair", {}), ("round_robin", {}), ("time_equal", {}), ("fixed_partition", {}),
    ("dynamic_partition", {}), ("greedy", {}), ("vcg", {}), ("min_backlog", {}),
]


@pytest.mark.parametrize("method,options", POLICIES, ids=[f"{m}-{o}" for m, o in POLICIES])
def test_every_policy_allocation_passes_the_verifier(method, options):
    cfg = config_from_dict(config(generate={"family": "gemmini", "agents": 5, "pools": 2, "seed": 3},
                                  rounds=6, workload={"load": 0.9, "deadline": 3}))
    policy = Recording(resolve(method, options).build())
    record = run(prepare(cfg, 1), policy, 1)
    assert len(policy.seen) == 6
    for view, decision in policy.seen:
        amounts = np.asarray(decision.amounts)[:, None]
        utilities = edge_utilities(view, amounts)
        result = Result(instance=view.name, method="check", status="feasible", mode=decision.mode,
                        allocation=allocation_records(view, amounts),
                        utilities={a.id: float(u) for a, u in zip(view.agents, utilities)})
        outcome = verify(view, result)
        assert outcome.ok, outcome
    assert max(abs(c) for c in record.rounds["conservation"]) < 1e-9 * max(1.0, sum(record.rounds["arrived_work"]))


def test_method_state_carries_over_rounds():
    """round_robin's turn and gandiva_fair's passes continue across the per-round calls."""
    policy = MethodPolicy("gandiva_fair", "gandiva_fair")
    cfg = config_from_dict(config(generate={"family": "gemmini", "agents": 4, "pools": 2, "seed": 0}, rounds=3,
                                  workload={"load": 2.0}))
    run(prepare(cfg, 0), policy, 0)
    assert sorted(policy.state) == ["passes", "previous"] and any(policy.state["passes"].values())


# ------------------------------------------------------------------ user policies


def give_everything_to_the_first(view):
    inst = view.instance
    return np.where(inst.edge_agent == 0, np.minimum(inst.counts[inst.edge_pool], inst.demands[0]), 0.0)


def test_user_policy_function_and_class():
    class Idle(Policy):
        def decide(self, view):
            return Decision(np.zeros(view.instance.n_edges))

    register_policy("first_only", give_everything_to_the_first, replace=True)
    register_policy("idle", Idle, replace=True)
    try:
        res = lo.simulate(config(instance=three_round_instance(), workload={"arrivals": "instance"},
                                 policies=["first_only", "idle"]), progress=False)
        assert res.run("first_only", 0).agents["processed_work"][1] == 0.0
        assert res.run("idle", 0).rounds["processed_work"] == [0.0, 0.0, 0.0]
        with pytest.raises(InputError, match="already registered"):
            register_policy("idle", Idle)
        with pytest.raises(InputError, match="is a method"):
            register_policy("welfare", Idle)
    finally:
        unregister_policy("first_only")
        unregister_policy("idle")


def test_user_policy_that_overbooks_is_stopped():
    def greedy_everything(view):
        return view.instance.counts[view.instance.edge_pool].astype(float)  # every agent all devices

    register_policy("overbook", greedy_everything, replace=True)
    try:
        with pytest.raises(Exception, match="verification failed|allocated"):
            lo.simulate(config(instance=three_round_instance(), workload={"arrivals": "instance"},
                               policies=["overbook"]), progress=False)
    finally:
        unregister_policy("overbook")


# ------------------------------------------------------------------ determinism, seeds, parallel runs


def test_same_seed_same_records_and_seeds_differ():
    cfg = config(generate={"family": "gemmini", "agents": 6, "pools": 2}, rounds=20,
                 workload={"load": 1.1, "deadline": 2, "size_distribution": "exponential"},
                 policies=[{"name": "mtf", "options": {"threshold": "actor_critic"}}], record_events=True)
    a = lo.simulate(cfg, seeds=2, progress=False)
    b = lo.simulate(cfg, seeds=2, progress=False)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "timing"}  # noqa: E731
    assert [strip(r) for r in a.runs] == [strip(r) for r in b.runs]
    assert a.run("mtf", 0).rounds != a.run("mtf", 1).rounds
    kinds = {e["kind"] for e in a.run("mtf", 0).events}
    assert {"arrive", "allocate", "complete", "drop"} <= kinds


def test_policies_share_their_arrivals():
    cfg = config(generate={"family": "gemmini", "agents": 4, "pools": 2, "seed": 1}, rounds=10,
                 workload={"load": 0.7}, policies=["time_equal", "round_robin"])
    res = lo.simulate(cfg, progress=False)
    assert res.run("time_equal", 0).rounds["arrived_work"] == res.run("round_robin", 0).rounds["arrived_work"]


def test_memory_bound_refuses_huge_runs():
    cfg = config(generate={"family": "gemmini", "agents": 4, "pools": 2}, rounds=10_000_000, workload={"load": 0.5})
    with pytest.raises(InputError, match=r"max_memory_gb"):
        lo.simulate(cfg, progress=False)


def test_config_errors_name_the_path():
    with pytest.raises(InputError, match=r"\$\.workload\.colour: unknown field"):
        config_from_dict(config(instance=three_round_instance(), workload={"colour": 1}))
    with pytest.raises(InputError, match=r"\$\.policies\[1\]\.method: unknown policy 'nope'"):
        lo.simulate(config(instance=three_round_instance(), workload={"arrivals": "instance"},
                           policies=["time_equal", {"name": "x", "method": "nope"}]), progress=False)
    with pytest.raises(InputError, match=r"\$\.instance\.edges\[0\]\.pool: unknown pool id"):
        bad = copy.deepcopy(three_round_instance())
        bad["edges"][0]["pool"] = "h"
        lo.simulate(config(instance=bad, workload={"arrivals": "instance"}), progress=False)
    with pytest.raises(InputError, match="mtf has no option .colour."):
        lo.simulate(config(instance=three_round_instance(), workload={"arrivals": "instance"},
                           policies=[{"name": "mtf", "options": {"colour": 1}}]), progress=False)
    with pytest.raises(InputError, match="Poisson arrivals need a load or a job_size"):
        config_from_dict(config(instance=three_round_instance()))


def test_tick_length_scales_the_work():
    """Half-hour rounds halve the work a device does per round."""
    inst = three_round_instance()
    full = simulate_one(instance=inst, workload={"arrivals": "instance"}, balancer="pooled")
    half = simulate_one(instance=inst, workload={"arrivals": "instance"}, balancer="pooled", round_hours=0.5)
    assert full.rounds["capacity_work"][0] == 2 * half.rounds["capacity_work"][0]


def test_compiled_and_plain_kernel_agree():
    """The balancer's generator uses integer arithmetic: numba and plain Python draw the same choices."""
    from laissez_opt.simulate import kernel

    rng = np.random.default_rng(0)
    remaining = rng.random(300) * 3
    job_ptr, srv_ptr = np.array([0, 80, 200, 300]), np.array([0, 3, 3, 8])
    rate = rng.random(8) + 0.1
    plain = getattr(kernel.dispatch, "py_func", kernel.dispatch)
    for mode in kernel.MODES.values():
        out = [(np.zeros(300), np.zeros(300)) for _ in range(2)]
        kernel.dispatch(job_ptr, remaining, srv_ptr, rate, 4242, mode, *out[0])
        plain(job_ptr, remaining, srv_ptr, rate, 4242, mode, *out[1])
        assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])


@pytest.mark.parametrize("method,options", [
    ("round_robin", {}), ("dynamic_partition", {}), ("gandiva_fair", {}), ("fixed_partition", {}),
    ("mtf", {"threshold": "fixed:0.3", "normalize": "round"}), ("mtf", {"threshold": "fixed:0", "tokens": 3}),
])
def test_state_option_continues_a_multi_round_run(method, options):
    """One call over R rounds = R one-round calls, each given the previous call's details["state"]."""
    inst = lo.generate("uniform", 6, 3, seed=2, rounds=4)
    full = lo.solve(inst, method, **options).amounts
    state, columns = None, []
    for r in range(inst.rounds):
        one = Instance(inst.pools, inst.agents, [Edge(e.agent, e.pool, e.utility_in(r)) for e in inst.edges])
        res = lo.solve(one, method, state=state, **options)
        state = res.details["state"]
        columns.append(res.amounts[:, 0])
    assert np.array_equal(full, np.stack(columns, axis=1))


def test_state_option_is_checked():
    inst = lo.generate("uniform", 3, 2, seed=0)
    with pytest.raises(InputError, match="round_robin state has fields turn"):
        lo.solve(inst, "round_robin", state={"turn": "a0000", "extra": 1})
    with pytest.raises(InputError, match="unknown agent id 'zz'"):
        lo.solve(inst, "gandiva_fair", state={"passes": {a.id: 0 for a in inst.agents}, "previous": ["zz"]})
    with pytest.raises(InputError, match="state.budgets must give every agent"):
        lo.solve(inst, "mtf", state={"budgets": {}, "turn": inst.agents[0].id})
    with pytest.raises(InputError, match="which has"):
        lo.solve(inst, "fixed_partition", state={"owned": {inst.edges[0].agent: {inst.edges[0].pool: 99}}})
