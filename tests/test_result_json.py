"""The fast result-file text (:mod:`laissez_opt.result.writer`) is the plain encoder's text, character for character."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.result import Result, agent_values, allocation_columns, readable_copy
from laissez_opt.result.writer import result_text

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=40)


def plain(result: Result) -> str:
    return json.dumps(readable_copy(result.to_dict()), indent=2, allow_nan=False) + "\n"


def _instance(ids: list[str], pools: list[str], seed: int) -> lo.Instance:
    rng = np.random.default_rng(seed)
    edges = [lo.Edge(a, p, float(rng.uniform(0.1, 1.0))) for a in ids for p in pools if rng.random() < 0.7]
    covered = {e.agent for e in edges}
    edges += [lo.Edge(a, pools[0], 0.5) for a in ids if a not in covered]
    return lo.Instance([lo.Pool(p, count=int(rng.integers(1, 4))) for p in pools],
                       [lo.Agent(a, demand=int(rng.integers(1, 3))) for a in ids], edges, name="j")


# Ids with quotes, backslashes, control characters and non-ASCII text: the key encoder must agree with json's.
ID = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6).filter(
    lambda s: s == s.strip())
FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 2.5e15,
                                                                                 0.30000000000000004]))


@settings(**SETTINGS)
@given(ids=st.lists(ID, min_size=1, max_size=8, unique=True), pools=st.lists(ID, min_size=1, max_size=3, unique=True),
       seed=st.integers(0, 10**6), amounts=st.lists(FLOAT, min_size=1, max_size=30),
       extra=st.dictionaries(ID, FLOAT, max_size=12))
def test_fast_text_is_the_plain_text(ids, pools, seed, amounts, extra):
    inst = _instance(ids, pools, seed)
    x = np.zeros((inst.n_edges, 1))
    x[:, 0] = np.resize(np.abs(np.array(amounts, dtype=float)), inst.n_edges)
    x[~np.isfinite(x)] = 1.0
    utilities = np.resize(np.array(amounts, dtype=float), inst.n_agents)
    details = {"leximin": dict(extra), "nested": [{"v": dict(extra)}, dict(extra)], "ints": {k: 1 for k in extra},
               "array": np.array(amounts[:3])}
    for large in (1, 3, 10**9):
        # Two results made alike: reading one's records for the plain text must not help the other.
        made = [_fresh(inst, x, utilities, float(amounts[0]), details, dict(extra) or None) for _ in range(2)]
        assert result_text(made[0], large=large) == plain(made[1])


def _fresh(inst, x, utilities, objective, details, payments) -> Result:
    """A result with its allocation and utilities still held as columns (reading them builds records)."""
    return Result(instance=inst.name, method="welfare", status="feasible", objective=objective,
                  allocation=allocation_columns(inst, x), utilities=agent_values(inst, utilities),
                  details=details, payments=payments)


@pytest.mark.parametrize("method,options", [
    ("welfare", {}), ("welfare", {"fractional": True}), ("maxmin", {"fractional": True}), ("vcg", {}),
    ("mtf", {}), ("auction", {}), ("themis", {"fractional": True}),
])
def test_every_route_writes_the_plain_text(method, options):
    inst = lo.generate("uniform", 60, 5, seed=4)
    result = lo.solve(inst, method, **options)
    fast, default = result_text(result, large=1), result.to_json()  # before anything builds the records
    assert fast == default == plain(result)


def test_records_given_as_a_list_take_the_fast_path_and_agree():
    inst = lo.generate("uniform", 40, 4, seed=1)
    r = lo.solve(inst, "welfare", fractional=True)
    records = r.allocation  # built: a plain list of contract records
    assert isinstance(records, list) and len(records) > 3
    assert result_text(r, large=2) == plain(r)
    r.allocation = records + [{"agent": records[0]["agent"], "pool": records[0]["pool"], "round": 0, "amount": 2}]
    assert result_text(r, large=2) == plain(r)  # an int amount stays an int


def test_a_result_file_round_trips(tmp_path):
    inst = lo.generate("uniform", 3000, 20, seed=2)
    r = lo.solve(inst, "maxmin", fractional=True, partitions=2, levels="first_level")
    path = tmp_path / "r.json"
    lo.io.save_result(r, path)
    back = lo.io.load_result(path)
    assert back.objective == pytest.approx(r.objective, rel=1e-11)
    assert len(back.allocation) == r.allocation_size() and math.isclose(
        sum(back.utilities.values()), float(r.utility_array(inst).sum()), rel_tol=1e-9)


@pytest.mark.parametrize("method, options, seed", [
    ("welfare", {}, None), ("greedy", {}, None), ("themis", {"fractional": True}, None),
    ("mtf", {"seed": 5, "threshold": "hedge"}, 5), ("mtf", {}, 0),
    ("maxmin", {"fractional": True, "partitions": 2, "partition_seed": 3}, 3),
])
def test_every_result_records_the_contracts_params(method, options, seed):
    # The contract's result file has params.time_limit and params.seed: null when nothing random was drawn.
    inst = lo.generate("gavel", 40, 4, seed=2)
    data = json.loads(lo.solve(inst, method, **options).to_json())
    assert "time_limit" in data["params"] and data["params"]["seed"] == seed


@settings(deadline=None, derandomize=True, max_examples=300)
@given(values=st.lists(st.one_of(st.floats(), st.floats(min_value=-1e12, max_value=1e12),
                                 st.integers(-10**13, 10**13).map(float),
                                 st.sampled_from([5e-324, 1e-290, 9.99999999999e-291, 1e11, 99999999999.99995,
                                                  999999999999.9, 1e-4, 9.9999999999999e-5])),
                       max_size=40))
def test_the_fast_float_text_is_the_definition(values):
    """``"%.12g"`` with the shortcuts of ``_floats`` writes what ``repr(float(f"{v:.12g}"))`` writes."""
    from laissez_opt.result.writer import _floats

    expected = [json.dumps(readable_copy(v), allow_nan=True) if math.isfinite(v) else "null" for v in values]
    assert _floats(values) == expected
    assert _floats(np.array(values, dtype=np.float64)) == expected
