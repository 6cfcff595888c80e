"""Results that hold their allocation and utilities as arrays until they are read.

A method may hand its allocation over as ``AllocationColumns`` (edge row, round,
amount) and its utilities as ``AgentValues``; the result builds the records and
the dict on first read, and the verifier checks the arrays themselves while they
are unbuilt.  These tests pin that the built forms are exactly what the eager
code produced, that the verifier's verdict on the arrays equals the record
walk's on the built records (also for corrupted arrays), and that pickling and
copying ship records, never the instance.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import _verify_columns, _verify_records, verify
from laissez_opt.result import AgentValues, AllocationColumns, Result, agent_values, allocation_columns, allocation_records

SHIPPED = ["hotos25-table1", "gavel-medium", "thesis-r2-table3-1", "hotos25-migration"]


def _fresh(name, method, **options):
    return lo.solve(lo.load(f"instances/{name}.json"), method, check=False, **options)


@pytest.mark.parametrize("method, options", [("welfare", {}), ("maxmin", {"fractional": True}), ("greedy", {}),
                                             ("min_cost", {}), ("round_robin", {})])
def test_methods_hand_over_arrays_and_the_built_forms_match_the_eager_ones(method, options):
    inst = lo.load("instances/gavel-medium.json")
    result = lo.solve(inst, method, check=False, time_limit=20, **options)
    columns, values = result.allocation_columns, result.utility_values
    assert isinstance(columns, AllocationColumns) and isinstance(values, AgentValues)
    assert result.allocation_size() == len(columns)
    assert np.array_equal(result.utility_array(inst), values.values)
    # The built records are those of the amount array, in row order; the dict is in the instance's order.
    assert result.allocation == allocation_records(inst, result.amounts)
    assert list(result.utilities) == [a.id for a in inst.agents]
    assert result.allocation_columns is None and result.utility_values is None
    assert isinstance(result.utilities, dict) and type(result.allocation) is list


def test_the_verifier_reads_the_arrays_without_building_the_records():
    inst = lo.generate("gavel", 2000, 3, seed=3)
    result = lo.solve(inst, "maxmin", fractional=True, check=False)
    outcome = verify(inst, result)
    assert outcome.ok
    assert result.allocation_columns is not None and result.utility_values is not None  # still unbuilt
    reference = _verify_records(inst, result)  # builds them
    assert reference.ok and outcome.objective == pytest.approx(reference.objective, rel=1e-12)
    assert dict(outcome.utilities) == pytest.approx(reference.utilities, rel=1e-12)


CORRUPT = {
    "amount perturbed": lambda c, v: c.amount.__setitem__(0, c.amount[0] + 0.3),
    "negative amount": lambda c, v: c.amount.__setitem__(0, -1.0),
    "NaN amount": lambda c, v: c.amount.__setitem__(0, np.nan),
    "round outside the horizon": lambda c, v: c.round.__setitem__(0, 7),
    "edge out of range": lambda c, v: c.edge.__setitem__(0, 10**6),
    "another edge": lambda c, v: c.edge.__setitem__(0, (c.edge[0] + 1) % c.instance.n_edges),
    "over capacity": lambda c, v: c.amount.__setitem__(0, c.amount[0] + 50.0),
    "wrong utility": lambda c, v: v.values.__setitem__(0, v.values[0] + 1.0),
}


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("corruption", sorted(CORRUPT))
def test_corrupted_arrays_get_the_record_walks_verdict(name, corruption):
    result = _fresh(name, "welfare")
    columns, values = result.allocation_columns, result.utility_values
    if not len(columns):
        pytest.skip("empty allocation")
    inst = columns.instance
    CORRUPT[corruption](columns, values)
    if corruption == "edge out of range":
        # No record can be built for it: the check refuses the column and the built records fail.
        with pytest.raises(IndexError):
            columns.build()
        with pytest.raises(IndexError):
            verify(inst, result)
        return
    shadow = copy.deepcopy(result)  # built records of the corrupted arrays
    assert shadow.allocation_columns is None
    fast, reference = verify(inst, result), _verify_records(inst, shadow)
    assert (fast.ok, fast.violations) == (reference.ok, reference.violations)
    if corruption in ("negative amount", "NaN amount", "round outside the horizon", "over capacity", "wrong utility"):
        assert not fast.ok


def test_pickle_copy_and_replace_ship_records_not_the_instance():
    result = _fresh("hotos25-table1", "welfare")
    eager_dict = copy.deepcopy(result).to_dict()
    blob = pickle.dumps(result)
    assert b"Instance" not in blob and b"AllocationColumns" not in blob and b"AgentValues" not in blob
    back = pickle.loads(blob)
    assert back.allocation_columns is None and back.utility_values is None
    assert back.to_dict() == eager_dict
    assert dataclasses.replace(result).allocation == result.allocation
    assert result == back


def test_agent_values_is_a_read_only_mapping_and_checks_its_length():
    inst = lo.load("instances/hotos25-table1.json")
    values = agent_values(inst, [1.5, 2.5])
    assert dict(values) == {"A": 1.5, "B": 2.5} and len(values) == 2 and values["A"] == 1.5
    with pytest.raises(ValueError, match="3 values for 2 agents"):
        agent_values(inst, [1.0, 2.0, 3.0])
    with pytest.raises(KeyError):
        values["nobody"]


def test_a_result_given_plain_values_keeps_them():
    result = Result("i", "welfare", "feasible", allocation=[{"agent": "A", "pool": "P", "round": 0, "amount": 1.0}],
                    utilities={"A": 1.0})
    assert result.allocation_columns is None and result.utility_values is None
    assert result.allocation_size() == 1 and result.utilities == {"A": 1.0}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 24), m=st.integers(1, 4), seed=st.integers(0, 10**6),
       method=st.sampled_from(["welfare", "maxmin", "greedy", "round_robin"]), fractional=st.booleans())
def test_verdicts_on_arrays_and_on_built_records_agree(n, m, seed, method, fractional):
    inst = lo.generate("uniform", n, m, seed=seed)
    try:
        result = lo.solve(inst, method, check=False, fractional=fractional or None, time_limit=20)
    except lo.InputError:
        return
    if result.status == "infeasible":
        return
    assert result.allocation_columns is not None and result.utility_values is not None
    on_arrays = _verify_columns(inst, result, 1e-6)  # decided on the arrays, no hand-over
    built = _verify_records(inst, result)
    assert on_arrays.ok and built.ok
    assert on_arrays.objective == pytest.approx(built.objective, rel=1e-12, abs=1e-12)
    for agent, value in built.utilities.items():
        assert on_arrays.utilities[agent] == pytest.approx(value, rel=1e-12, abs=1e-12)
    assert allocation_columns(inst, result.amounts).build() == result.allocation
