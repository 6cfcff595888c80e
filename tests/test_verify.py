"""The independent verifier catches every kind of bad allocation; ``lo.solve`` refuses them."""

from __future__ import annotations

import copy
import dataclasses

import pytest

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import VerificationError
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.result import Result


@pytest.fixture(scope="module")
def inst():
    """Pools g (2 devices) and h (1); A (demand 1, rounds 0-1), B (arrives in round 1); 3 rounds."""
    return Instance(
        [Pool("g", count=2), Pool("h", count=1)],
        [Agent("A", weight=2.0, demand=1, deadline=1), Agent("B", arrival=1)],
        [Edge("A", "g", 1.0), Edge("B", "g", (0.0, 3.0, 4.0)), Edge("B", "h", 5.0)],
        rounds=3,
    )


def _result(inst, records, *, method="welfare", mode="integral", status="optimal", gap=0.0, objective=None, utilities=None):
    """A result whose utilities and objective are computed correctly from ``records`` (unless given)."""
    edges = {(e.agent, e.pool): e for e in inst.edges}
    weights = {a.id: a.weight for a in inst.agents}
    computed = {a.id: 0.0 for a in inst.agents}
    for r in records:
        edge = edges.get((r["agent"], r["pool"]))
        if edge is not None and r["agent"] in computed and isinstance(r["round"], int) and 0 <= r["round"] < inst.rounds:
            computed[r["agent"]] += edge.utility_in(r["round"]) * r["amount"]
    if utilities is None:
        utilities = computed
    if objective is None:
        objective = sum(weights[a] * u for a, u in computed.items())
    return Result(
        instance=inst.name, method=method, status=status, objective=objective, bound=objective,
        gap=gap, allocation=[dict(r) for r in records], utilities=dict(utilities), mode=mode,
    )


def rec(agent, pool, rnd, amount):
    return {"agent": agent, "pool": pool, "round": rnd, "amount": amount}


GOOD = [rec("A", "g", 0, 1.0), rec("B", "g", 1, 2.0), rec("B", "h", 1, 1.0), rec("B", "g", 2, 2.0), rec("A", "h", 0, 0.0)]


def test_a_good_allocation_passes(inst):
    good = [r for r in GOOD if r["pool"] != "h" or r["agent"] != "A"]
    outcome = verify(inst, _result(inst, good))
    assert outcome.ok, outcome.violations
    assert outcome.utilities == {"A": 1.0, "B": 2 * 3.0 + 5.0 + 2 * 4.0}
    assert outcome.objective == pytest.approx(2.0 * 1.0 + 19.0)
    assert str(outcome).startswith("verified")


def test_empty_allocation_passes(inst):
    assert verify(inst, _result(inst, [])).ok


@pytest.mark.parametrize(
    "name,records,kwargs,expect",
    [
        ("over-capacity", [rec("A", "g", 0, 1.0), rec("B", "g", 1, 2.0), rec("A", "g", 1, 1.0)], {}, "devices used of 2"),
        ("over-capacity-single", [rec("B", "h", 1, 2.0)], {}, "devices used of 1"),
        ("over-demand", [rec("A", "g", 0, 2.0)], {}, "exceed demand 1"),
        ("incompatible-pair", [rec("A", "h", 0, 1.0)], {}, "incompatible"),
        ("unknown-agent", [rec("Q", "g", 0, 1.0)], {}, "unknown agent"),
        ("unknown-pool", [rec("A", "zz", 0, 1.0)], {}, "unknown pool"),
        ("round-outside-horizon", [rec("B", "h", 3, 1.0)], {}, "outside 0..2"),
        ("round-negative", [rec("B", "h", -1, 1.0)], {}, "outside 0..2"),
        ("fractional-in-integral-mode", [rec("B", "g", 1, 0.5)], {}, "fractional amount"),
        ("before-arrival", [rec("B", "h", 0, 1.0)], {}, "runs in round 0 outside 1..2"),
        ("after-deadline", [rec("A", "g", 2, 1.0)], {}, "runs in round 2 outside 0..1"),
        ("negative-amount", [rec("B", "g", 1, -1.0)], {}, "negative amount"),
        ("nan-amount", [rec("B", "g", 1, float("nan"))], {"objective": 0.0}, "not a finite number"),
        ("wrong-utility", [rec("B", "h", 1, 1.0)], {"utilities": {"A": 0.0, "B": 4.0}}, "utility of agent 'B'"),
        ("missing-utility", [rec("B", "h", 1, 1.0)], {"utilities": {"B": 5.0}}, "utility of agent 'A' not reported"),
        ("wrong-objective-welfare", [rec("A", "g", 0, 1.0)], {"objective": 1.0}, "objective: reported 1.0"),
        ("wrong-objective-greedy", [rec("A", "g", 0, 1.0)], {"objective": 3.0, "method": "greedy", "status": "feasible"}, "objective"),
        ("missing-objective-welfare", [rec("A", "g", 0, 1.0)], {"objective": None}, "objective"),
        ("optimal-with-gap", [rec("A", "g", 0, 1.0)], {"gap": 0.01}, "labelled optimal with a gap"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_violations_are_caught(inst, name, records, kwargs, expect):
    kw = dict(kwargs)
    result = _result(inst, records, **kw)
    if kw.get("objective", 0) is None:
        result.objective = None
    outcome = verify(inst, result)
    assert not outcome.ok
    assert any(expect in v for v in outcome.violations), outcome.violations
    assert str(outcome).startswith("verification failed")


def test_fractional_amount_is_fine_in_fractional_mode(inst):
    outcome = verify(inst, _result(inst, [rec("B", "g", 1, 0.5), rec("A", "g", 0, 0.25)], mode="fractional"))
    assert outcome.ok, outcome.violations


def test_objective_of_other_methods_is_not_judged(inst):
    # min_cost's objective is a placement cost, not welfare: a welfare-looking mismatch is fine
    # for unknown methods, and the feasibility checks still apply.
    ok = _result(inst, [rec("A", "g", 0, 1.0)], method="something_else", objective=123.0)
    assert verify(inst, ok).ok
    bad = _result(inst, [rec("A", "g", 0, 2.0)], method="something_else", objective=123.0)
    assert not verify(inst, bad).ok


def test_small_tolerance_is_accepted(inst):
    result = _result(inst, [rec("A", "g", 0, 1.0 + 1e-9), rec("B", "h", 1, 1.0 - 1e-9)])
    assert verify(inst, result).ok


def test_optimal_with_tiny_gap_and_time_limit_with_gap_pass(inst):
    assert verify(inst, _result(inst, [rec("A", "g", 0, 1.0)], gap=1e-9)).ok
    assert verify(inst, _result(inst, [rec("A", "g", 0, 1.0)], status="time_limit", gap=0.5)).ok


def test_infeasible_result_must_not_carry_an_allocation(inst):
    empty = Result(instance=inst.name, method="welfare", status="infeasible")
    assert verify(inst, empty).ok
    carrying = Result(instance=inst.name, method="welfare", status="infeasible", allocation=[rec("A", "g", 0, 1.0)])
    assert not verify(inst, carrying).ok


def test_min_cost_checks(r4):
    good = lo.solve(r4, "min_cost")
    assert verify(r4, good).ok
    wrong_cost = copy.deepcopy(good)
    wrong_cost.objective = 0.35
    assert any("placement cost" in v for v in verify(r4, wrong_cost).violations)
    unplaced = _result(r4, [rec("A", "A10", 0, 1.0)], method="min_cost", objective=0.21)
    assert any("'B' is not placed" in v for v in verify(r4, unplaced).violations)
    twice = _result(r4, [rec("A", "A10", 0, 1.0), rec("A", "L4", 0, 1.0), rec("B", "L4", 0, 1.0)], method="min_cost", objective=0.61)
    assert any("more than one pool" in v for v in verify(r4, twice).violations)


def test_every_solver_result_on_r4_verifies(r4):
    for method in ("welfare", "min_cost"):
        for solver in ("highs", "ortools"):
            result = lo.solve(r4, method, solver=solver, check=False)
            assert verify(r4, result).ok
    assert verify(r4, lo.solve(r4, "greedy", check=False)).ok


# ----------------------------------------------------------------------------- lo.solve refuses


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda r: r.allocation.append({"agent": "A", "pool": "A10", "round": 0, "amount": 1.0}),  # A10 twice
        lambda r: r.allocation.__setitem__(0, {**r.allocation[0], "amount": 0.5}),
        lambda r: r.utilities.__setitem__("A", r.utilities["A"] + 1.0),
        lambda r: setattr(r, "objective", r.objective * 2),
        lambda r: r.allocation.append({"agent": "B", "pool": "Trainium", "round": 0, "amount": 1.0}),
    ],
    ids=["over-capacity", "fractional", "utility", "objective", "incompatible"],
)
@pytest.mark.parametrize("method", ["welfare", "greedy"])
def test_solve_raises_verification_error(r4, monkeypatch, method, corrupt):
    from laissez_opt import methods

    spec = methods.METHODS[method]
    real = spec.run

    def bad_run(instance, **options):
        result = real(instance, **options)
        corrupt(result)
        return result

    monkeypatch.setitem(methods.METHODS, method, dataclasses.replace(spec, run=bad_run))
    with pytest.raises(VerificationError) as info:
        lo.solve(r4, method)
    assert method in str(info.value) and "verification failed" in str(info.value)
    assert info.value.exit_code == 1
    # With check=False the bad result comes back unverified.
    result = lo.solve(r4, method, check=False)
    assert result.verified is None and not verify(r4, result).ok


def test_solve_marks_good_results_verified(r4):
    assert lo.solve(r4, "welfare").verified is True
