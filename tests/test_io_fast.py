"""The fast instance reader accepts exactly what the precise one accepts, and builds the same instance.

The fast path (``laissez_opt.io.columns``) only ever accepts; on any doubt
the precise path runs and gives its message.  So two properties carry every
bad-input test over: on every file the precise path refuses, the fast path
answers None; on every file it accepts, the fast path gives an equal instance
(or None) with equal array views.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import laissez_opt as lo
from laissez_opt.errors import InputError
from laissez_opt.generate import FAMILIES, generate
from laissez_opt.io import instance_from_dict, instance_to_dict, load_instance, parse_json, save_instance
from laissez_opt.io.columns import instance_fast, keys_repeated, loads_fast
from laissez_opt.io.instance_file import _name, _pools
from tests.test_adversarial import BASE, CORPUS

VIEWS = ("edge_agent", "edge_pool", "edge_utility", "weights", "demands", "agent_index", "pool_index", "counts",
         "edge_bid", "edge_cost", "last_rounds")


def _slow(data, source):
    """The precise path alone: schema, records, check_instance."""
    from laissez_opt.io import instance_file

    saved = instance_file.instance_fast
    instance_file.instance_fast = lambda *args: None
    try:
        return instance_file.instance_from_dict(data, source)
    finally:
        instance_file.instance_fast = saved


def _same(a: lo.Instance, b: lo.Instance) -> None:
    assert (a.pools, a.agents, a.edges) == (b.pools, b.agents, b.edges)
    assert (a.rounds, a.round_hours, a.name, a.description, a.source) == (
        b.rounds, b.round_hours, b.name, b.description, b.source)
    for agent_a, agent_b in zip(a.agents, b.agents):
        assert [type(getattr(agent_a, f)) for f in agent_a.__slots__] == [
            type(getattr(agent_b, f)) for f in agent_b.__slots__]
    for edge_a, edge_b in zip(a.edges, b.edges):
        assert [type(getattr(edge_a, f)) for f in edge_a.__slots__] == [
            type(getattr(edge_b, f)) for f in edge_b.__slots__]
    for view in VIEWS if a.rounds <= 1000 else ():  # (E, R) views of a billion rounds would not fit
        x, y = getattr(a, view), getattr(b, view)
        if isinstance(x, dict):
            assert x == y, view
        else:
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True), view


def _texts():
    for label, content in CORPUS:
        if isinstance(content, bytes):
            try:
                content = content.decode("utf-8")
            except UnicodeDecodeError:
                continue
        yield label, content


@pytest.mark.parametrize("chunk", range(4))
def test_fast_path_refuses_what_the_precise_path_refuses_and_agrees_on_the_rest(chunk):
    for k, (label, text) in enumerate(_texts()):
        if k % 4 != chunk:
            continue
        fast_data = loads_fast(text)
        try:
            strict = parse_json(text, "case.json")
        except InputError:
            assert fast_data is None, label
            continue
        if fast_data is not None:
            assert fast_data == strict or json.dumps(fast_data) == json.dumps(strict), label
        try:
            slow = _slow(strict, "case.json")
        except InputError:
            if isinstance(fast_data, dict):
                assert instance_fast(fast_data, "case.json", _name(fast_data, "case.json"), _pools) is None, label
            if isinstance(strict, dict):
                assert instance_fast(strict, "case.json", _name(strict, "case.json"), _pools) is None, label
            continue
        if isinstance(fast_data, dict):
            fast = instance_fast(fast_data, "case.json", _name(fast_data, "case.json"), _pools)
            if fast is not None:
                _same(fast, slow)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("rounds", [1, 3])
def test_generated_instances_go_the_fast_way_and_match(family, rounds):
    params = {"rounds": rounds} if "rounds" in FAMILIES[family].params else {}
    if rounds > 1 and not params:
        pytest.skip("family without rounds")
    data = generate(family, agents=40, pools=5, seed=3, **params)
    fast = instance_fast(data, "<dict>", _name(data, "<dict>"), _pools)
    assert fast is not None
    _same(fast, _slow(data, "<dict>"))


MUTATIONS = [
    ("agents", 1, "demand", -1), ("agents", 1, "demand", 1.0), ("agents", 1, "demand", True),
    ("agents", 1, "weight", None), ("agents", 1, "weight", 0), ("agents", 1, "weight", float("nan")),
    ("agents", 1, "work", float("nan")), ("agents", 1, "budget", -1.0), ("agents", 1, "arrival", 5),
    ("agents", 1, "deadline", -1), ("agents", 1, "required", 1), ("agents", 1, "id", "a0001"),
    ("agents", 1, "id", " x"), ("agents", 1, "id", "x\ny"), ("agents", 1, "id", "\ud800"), ("agents", 1, "colour", 1),
    ("agents", 1, "elapsed", 2e9), ("agents", 1, "migration_cost", float("inf")), ("agents", 1, "arrival", None),
    ("edges", 2, "utility", -0.5), ("edges", 2, "utility", [1.0, 2.0]), ("edges", 2, "utility", "1"),
    ("edges", 2, "utility", float("nan")), ("edges", 2, "bid", -1.0), ("edges", 2, "cost", 10**30),
    ("edges", 2, "agent", "nobody"), ("edges", 2, "pool", "nowhere"), ("edges", 2, "agent", 7),
    ("edges", 2, "utility", True), ("edges", 2, "utility", 10**20), ("edges", 2, "extra", 0),
    ("agents", 1, "arrivals", [1.0, 2.0]), ("agents", 1, "arrivals", [-1.0]), ("agents", 1, "arrivals", [True]),
    ("agents", 1, "arrivals", [float("nan")]), ("agents", 1, "task", {}), ("agents", 1, "task", {"cpu": 0}),
    ("agents", 1, "task", None), ("agents", 1, "task", {" cpu": 1}), ("agents", 1, "task", {"cpu": -1}),
    ("agents", 1, "task", [["cpu", 1]]), ("agents", 1, "arrivals", "1"),
]


@pytest.mark.parametrize("where, k, field, value", MUTATIONS)
def test_every_broken_rule_sends_the_data_the_precise_way(where, k, field, value):
    data = generate("uniform", agents=6, pools=3, seed=1)
    data[where][k][field] = value
    assert instance_fast(data, "<dict>", _name(data, "<dict>"), _pools) is None
    with pytest.raises(InputError):
        _slow(data, "<dict>")


def test_a_repeated_pair_and_a_repeated_id_go_the_precise_way():
    data = generate("uniform", agents=6, pools=3, seed=1)
    data["edges"].append(dict(data["edges"][0]))
    assert instance_fast(data, "<dict>", "x", _pools) is None
    data = generate("uniform", agents=6, pools=3, seed=1)
    data["agents"][2]["id"] = data["agents"][0]["id"]
    assert instance_fast(data, "<dict>", "x", _pools) is None


def test_duplicate_keys_are_found_with_escaped_colons_about():
    assert loads_fast('{"a": 1, "a": 2, "b": "\\u003a"}') is None
    assert loads_fast('{"a": 1, "b": "\\u003a:"}') == {"a": 1, "b": "::"}
    assert loads_fast('{"a": "x\\\\", "b": 1}') == {"a": "x\\", "b": 1}


def test_round_trip_through_the_fast_path(tmp_path):
    inst = instance_from_dict(generate("neocloud", agents=30, pools=4, seed=2))
    again = instance_from_dict(instance_to_dict(inst))
    _same(inst, again)
    path = tmp_path / "i.json"
    save_instance(inst, path)
    _same(load_instance(path), _slow(json.loads(path.read_text()), str(path)))


def test_the_corpus_base_goes_the_fast_way_with_and_without_arrivals_and_task():
    base = json.loads(json.dumps(BASE))
    data = loads_fast(json.dumps(base))
    assert data == base
    _same(instance_fast(data, "b.json", _name(data, "b.json"), _pools), _slow(base, "b.json"))
    for key in ("arrivals", "task"):
        del base["agents"][0][key]
    data = loads_fast(json.dumps(base))
    _same(instance_fast(data, "b.json", _name(data, "b.json"), _pools), _slow(base, "b.json"))


@pytest.mark.parametrize("text, repeated", [
    ('{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "P:1"}], "agents": [{"id": "a:b"}], '
     '"edges": [{"agent": "a:b", "pool": "P:1", "utility": 1}]}', False),
    ('{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "P"}], "agents": [{"id": "a"}], '
     '"edges": [{"agent": "a", "pool": "P", "utility": 1, "utility": 2}]}', True),
    ('{"format": "laissez-opt/instance", "version": 1, "description": "x\\u003a", "pools": [{"id": "P"}], '
     '"agents": [{"id": "a", "weight": 1, "weight": 2}], "edges": []}', True),
    ('{"format": "laissez-opt/instance", "version": 1, "description": "x\\u003a", "pools": [{"id": "P"}], '
     '"agents": [{"id": "a", "weight": 1}], "edges": []}', False),
    ('{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "P", "resources": {"c:1": 1, "c:1": 2}}], '
     '"agents": [{"id": "a"}], "edges": []}', True),
])
def test_repeated_keys_are_counted_on_accepted_data(text, repeated, tmp_path):
    data = loads_fast(text, keys_checked=False)
    assert instance_fast(data, "x.json", "x", _pools) is not None
    assert keys_repeated(text, data) is repeated
    path = tmp_path / "x.json"
    path.write_text(text)
    if repeated:
        with pytest.raises(InputError, match="duplicate key"):
            load_instance(path)
    else:
        load_instance(path)


def test_repeated_task_keys_are_found(tmp_path):
    text = ('{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "P"}], '
            '"agents": [{"id": "a", "task": {"cpu": 1, "cpu": 2}}], "edges": []}')
    data = loads_fast(text, keys_checked=False)
    assert instance_fast(data, "x.json", "x", _pools) is not None and keys_repeated(text, data)
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(InputError, match="duplicate key"):
        load_instance(path)
