"""A deadline at or after the last round means the same as none, for every method.

The instance format documents it; the library clamps deadlines to the horizon
in one place (:attr:`laissez_opt.instance.Instance.last_rounds`), and every
model, heuristic, share and the independent verifier must read them the same
way.  Each method is run on an instance and on its copy with those deadlines
removed: the outcomes must be identical, and every result must verify.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.errors import LaissezOptError
from laissez_opt.instance import Agent, Edge, Instance, Pool

from conftest import small_instances

METHODS = sorted(lo.METHODS)


def _with_deadlines(inst: Instance, deadlines: list) -> Instance:
    agents = [dataclasses.replace(a, deadline=d) for a, d in zip(inst.agents, deadlines)]
    return Instance(inst.pools, agents, inst.edges, rounds=inst.rounds, round_hours=inst.round_hours, name=inst.name)


@st.composite
def late_deadlines(draw):
    """A small instance and the same with deadlines at or past the horizon (up to 10**6) where it had none."""
    inst = draw(small_instances(max_rounds=3, with_costs=True, required=True, min_edges=1))
    R = inst.rounds
    late = [a.deadline if a.deadline is not None and a.deadline < R - 1
            else draw(st.sampled_from([R - 1, R, R + 1, 2 * R, 10**6])) for a in inst.agents]
    nulled = [a.deadline if a.deadline is not None and a.deadline < R - 1 else None for a in inst.agents]
    return _with_deadlines(inst, late), _with_deadlines(inst, nulled)


def _outcome(inst: Instance, method: str):
    try:
        result = lo.solve(inst, method)
    except LaissezOptError as err:
        return type(err).__name__
    assert result.verified or result.status == "infeasible", (method, result.message)
    return result.status, result.objective, result.allocation, result.payments


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(late_deadlines())
def test_every_method_reads_a_deadline_past_the_horizon_as_none(pair):
    late, nulled = pair
    assert list(late.last_rounds) == list(nulled.last_rounds)
    for method in METHODS:
        assert _outcome(late, method) == _outcome(nulled, method), method


def test_verifier_clamps_windows_with_per_round_utilities():
    """maxmin's verification walks each agent's window; a deadline past the horizon stays inside it.

    It read the utility of rounds after the last one (an IndexError) for an agent with no use
    for any round of the horizon.
    """
    inst = Instance([Pool("p", count=1)], [Agent("A", deadline=5), Agent("B", arrival=1, deadline=10**6)],
                    [Edge("A", "p", (0.0, 0.0, 0.0)), Edge("B", "p", (0.0, 0.0, 2.0))], rounds=3, name="late")
    for method in ("maxmin", "welfare", "drf"):
        result = lo.solve(inst, method)
        assert result.verified, (method, result.message)
    assert lo.solve(inst, "maxmin").objective == 2.0
    assert list(inst.last_rounds) == [2, 2]
