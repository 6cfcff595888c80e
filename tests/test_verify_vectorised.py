"""The column verifier (``verify``) and the record walk (``_verify_records``) agree on every result.

Random instances carry every field a method reads (windows, per-round
utilities, bids, costs, work, migration costs, arrivals, tasks, resources,
edges in any order); every registered method's result, and corrupted copies of
it, must get the same outcome from both: ``ok``, the same violation messages,
the same utilities (to 1e-12 relative) and the same objective.  On a result the
record walk accepts, the column check must decide by itself (no hand-over).
"""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import _Fallback, _verify_columns, _verify_records, verify
from laissez_opt.errors import LaissezOptError
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.methods import METHODS

_VALUES = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0])


@st.composite
def rich_instances(draw):
    rounds = draw(st.integers(1, 3))
    n_pools = draw(st.integers(1, 3))
    n_agents = draw(st.integers(1, 4))
    pools = [Pool(f"p{c}", count=draw(st.integers(1, 3)), base_price=draw(_VALUES),
                  resources=draw(st.sampled_from([None, {"cpu": 8.0}, {"cpu": 2.0, "memory": 16.0}])))
             for c in range(n_pools)]
    agents = []
    for i in range(n_agents):
        arrival = draw(st.integers(0, rounds - 1))
        deadline = draw(st.one_of(st.none(), st.integers(arrival, rounds + 1)))
        agents.append(Agent(
            f"a{i}", weight=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])), demand=draw(st.sampled_from([None, 0, 1, 2])),
            work=draw(st.sampled_from([None, 0.5, 1.0, 2.5])), arrival=arrival, deadline=deadline,
            elapsed=draw(st.sampled_from([0.0, 1.0])), migration_cost=draw(st.sampled_from([0.0, 0.1, 0.5])),
            required=draw(st.booleans()),
            arrivals=draw(st.one_of(st.none(), st.lists(_VALUES, min_size=rounds, max_size=rounds).map(tuple))),
            task=draw(st.sampled_from([None, {"accelerator": 1.0, "cpu": 2.0}, {"cpu": 1.0}])),
        ))
    edges = []
    for i in range(n_agents):
        for c in range(n_pools):
            if draw(st.booleans()):
                utility = draw(st.one_of(_VALUES, st.lists(_VALUES, min_size=rounds, max_size=rounds).map(tuple)))
                edges.append(Edge(f"a{i}", f"p{c}", utility, bid=draw(st.one_of(st.none(), _VALUES)),
                                  cost=draw(st.one_of(st.none(), _VALUES))))
    edges = draw(st.permutations(edges))
    return Instance(pools, agents, edges, rounds=rounds, round_hours=draw(st.sampled_from([1.0, 0.5])), name="rich")


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def assert_same(inst, result):
    fast, reference = verify(inst, result), _verify_records(inst, result)
    assert fast.ok == reference.ok
    assert fast.violations == reference.violations
    assert list(fast.utilities) == list(reference.utilities)
    for agent, value in reference.utilities.items():
        assert _close(fast.utilities[agent], value), agent
    assert _close(fast.objective, reference.objective)
    return reference


CORRUPTIONS = {
    "amount perturbed": lambda r: r.allocation[0].update(amount=r.allocation[0]["amount"] + 0.3),
    "unknown agent": lambda r: r.allocation[0].update(agent="nobody"),
    "unknown pool": lambda r: r.allocation[0].update(pool="nowhere"),
    "wrong round": lambda r: r.allocation[0].update(round=r.allocation[0]["round"] + 5),
    "over capacity": lambda r: r.allocation[0].update(amount=r.allocation[0]["amount"] + 10.0),
    "wrong utility": lambda r: r.utilities.update({next(iter(r.utilities)): next(iter(r.utilities.values())) + 1.0}),
    "wrong objective": lambda r: setattr(r, "objective", (r.objective or 0.0) * 2 + 1.0),
    "NaN amount": lambda r: r.allocation[0].update(amount=math.nan),
    "negative amount": lambda r: r.allocation[0].update(amount=-1.0),
    "duplicated record": lambda r: r.allocation.append(dict(r.allocation[0])),
    "round as text": lambda r: r.allocation[0].update(round="0"),
    "record without round": lambda r: r.allocation[0].pop("round"),
    "missing utility": lambda r: r.utilities.pop(next(iter(r.utilities))),
    "gap on optimal": lambda r: setattr(r, "gap", 0.5),
}


def _solved(inst, method):
    try:
        return lo.solve(inst, method, check=False, time_limit=5)
    except LaissezOptError:
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=rich_instances(), method=st.sampled_from(sorted(METHODS)),
       corruption=st.sampled_from([None, *sorted(CORRUPTIONS)]))
def test_column_verifier_matches_the_record_walk(inst, method, corruption):
    result = _solved(inst, method)
    if result is None:
        return
    if corruption is None:
        reference = assert_same(inst, result)
        if reference.ok and result.status != "infeasible":
            _verify_columns(inst, result, 1e-6)  # decided without the record walk
        return
    if not result.allocation or not result.utilities:
        return
    bad = copy.deepcopy(result)
    CORRUPTIONS[corruption](bad)
    try:
        reference = _verify_records(inst, bad)
    except (TypeError, ValueError, KeyError):
        with pytest.raises((TypeError, ValueError, KeyError)):
            verify(inst, bad)
        return
    assert_same(inst, bad)
    if corruption in ("unknown agent", "NaN amount", "negative amount", "wrong round", "over capacity"):
        assert not reference.ok


@pytest.mark.parametrize("method", ["welfare", "maxmin", "themis", "vcg", "min_cost", "drf", "migration", "backlog",
                                    "greedy", "mtf", "auction"])
def test_every_method_on_a_shipped_instance_is_decided_by_columns(method):
    for name in ("hotos25-table1", "hotos25-migration", "gavel-medium", "thesis-r2-table3-1"):
        inst = lo.load(f"instances/{name}.json")
        result = _solved(inst, method)
        if result is None or result.status == "infeasible":
            continue
        reference = assert_same(inst, result)
        if reference.ok:
            assert _verify_columns(inst, result, 1e-6).ok


def test_a_record_that_is_not_a_plain_dict_is_judged_by_the_record_walk():
    inst = lo.load("instances/hotos25-table1.json")
    result = lo.solve(inst, "welfare", check=False)

    class Record(dict):
        pass

    result.allocation = [Record(r) for r in result.allocation]
    with pytest.raises(_Fallback):
        _verify_columns(inst, result, 1e-6)
    assert verify(inst, result).ok


def test_edges_in_any_order_are_found():
    inst = Instance([Pool("g", count=2), Pool("h")], [Agent("A"), Agent("B")],
                    [Edge("B", "h", 5.0), Edge("A", "g", 1.0), Edge("B", "g", 2.0)])
    result = lo.solve(inst, "welfare", check=False)
    assert _verify_columns(inst, result, 1e-6).ok
    result.allocation.append({"agent": "A", "pool": "h", "round": 0, "amount": 1.0})
    assert any("incompatible" in v for v in verify(inst, result).violations)
