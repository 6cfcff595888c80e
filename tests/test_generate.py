"""Tests of the seeded instance generators (``laissez_opt.generate``)."""

from __future__ import annotations

import functools
import json
import math
import time
from collections import Counter
from pathlib import Path

import pytest

from laissez_opt.errors import InputError
from laissez_opt.generate import FAMILIES, generate
from laissez_opt.generate import gavel as gavel_mod
from laissez_opt.generate import gemmini as gemmini_mod
from laissez_opt.generate import neocloud as neocloud_mod
from laissez_opt.io import instance_from_dict, instance_to_dict

NAMES = sorted(FAMILIES)
INSTANCES = Path(__file__).resolve().parent.parent / "instances"


@functools.lru_cache(maxsize=None)
def _cached(family: str, agents: int, pools: int, seed: int = 0) -> str:
    """JSON text of a generated instance (cached: big ones are shared by tests)."""
    return json.dumps(generate(family, agents, pools, seed=seed), allow_nan=False)


def _gen(family: str, agents: int, pools: int, seed: int = 0) -> dict:
    return json.loads(_cached(family, agents, pools, seed))


def _numbers(obj):
    """Every number inside a JSON-like object."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)


def _check_structure(d: dict, agents: int, pools: int) -> None:
    assert d["format"] == "laissez-opt/instance" and d["version"] == 1
    assert isinstance(d["name"], str) and d["name"]
    assert isinstance(d["description"], str) and "laissez_opt.generate" in d["description"]
    assert isinstance(d["rounds"], int) and d["rounds"] >= 1
    assert d["round_hours"] > 0
    assert len(d["agents"]) == agents and len(d["pools"]) == pools
    agent_ids = [a["id"] for a in d["agents"]]
    pool_ids = [p["id"] for p in d["pools"]]
    assert len(set(agent_ids)) == agents and len(set(pool_ids)) == pools
    assert all(isinstance(x, str) and x for x in agent_ids + pool_ids)
    for p in d["pools"]:
        assert type(p["count"]) is int and p["count"] >= 1
        assert p.get("base_price", 0.0) >= 0
    for a in d["agents"]:
        assert a.get("weight", 1.0) > 0
        demand = a.get("demand")
        assert demand is None or (type(demand) is int and demand >= 1)
    pairs = [(e["agent"], e["pool"]) for e in d["edges"]]
    assert len(set(pairs)) == len(pairs), "at most one edge per (agent, pool)"
    assert {a for a, _ in pairs} == set(agent_ids), "every agent has an edge"
    assert {p for _, p in pairs} <= set(pool_ids)
    for e in d["edges"]:
        u = e["utility"]
        values = u if isinstance(u, list) else [u]
        if isinstance(u, list):
            assert len(u) == d["rounds"]
        assert all(isinstance(v, float) and v > 0 for v in values)
        for key in ("bid", "cost"):
            if key in e:
                assert isinstance(e[key], float) and e[key] > 0
    assert all(math.isfinite(x) for x in _numbers(d))


# --------------------------------------------------------------------------- registry


def test_registry():
    assert NAMES == ["gavel", "gemmini", "neocloud", "uniform"]
    for name, fam in FAMILIES.items():
        assert fam.name == name
        assert fam.description and "\n" not in fam.description
        assert callable(fam)
        d = fam(3, 2, seed=1)
        assert d == generate(name, 3, 2, seed=1)


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("family", NAMES)
def test_same_seed_same_dict(family):
    a = generate(family, 40, 5, seed=7)
    b = generate(family, 40, 5, seed=7)
    assert a == b
    assert json.dumps(a) == json.dumps(b)


@pytest.mark.parametrize("family", NAMES)
def test_different_seed_different_instance(family):
    a = generate(family, 40, 5, seed=1)
    b = generate(family, 40, 5, seed=2)
    assert a["name"] != b["name"]
    body = lambda d: (d["pools"], d["agents"], d["edges"])  # noqa: E731
    assert body(a) != body(b)


def test_default_seed_is_zero():
    assert generate("uniform", 5, 3) == generate("uniform", 5, 3, seed=0)
    assert generate("gavel", 5, 3)["name"] == "gavel-n5-m3-s0"


# --------------------------------------------------------------------------- sizes and validity


@pytest.mark.parametrize("family", NAMES)
@pytest.mark.parametrize("agents,pools", [(1, 1), (2, 2), (3, 1), (7, 3), (60, 9), (400, 12)])
def test_sizes_are_valid_instances(family, agents, pools):
    d = _gen(family, agents, pools, seed=agents + pools)
    _check_structure(d, agents, pools)
    inst = instance_from_dict(d)
    assert len(inst.agents) == agents and len(inst.pools) == pools


@pytest.mark.parametrize("family", NAMES)
def test_ten_thousand_agents(family):
    d = _gen(family, 10_000, 4, seed=3)
    _check_structure(d, 10_000, 4)
    assert d["agents"][0]["id"] == "a00001" and d["agents"][-1]["id"] == "a10000"


@pytest.mark.parametrize("family", NAMES)
def test_large_instance_is_fast(family):
    start = time.perf_counter()
    d = generate(family, 10_000, 100, seed=5)
    elapsed = time.perf_counter() - start
    assert len(d["agents"]) == 10_000 and len(d["pools"]) == 100
    assert {e["agent"] for e in d["edges"]} == {a["id"] for a in d["agents"]}
    assert elapsed < 2.0, f"{family}: 10,000 x 100 took {elapsed:.2f} s"


@pytest.mark.parametrize(
    "family,params",
    [
        ("uniform", {"rounds": 3}),
        ("uniform", {"density": 1.0, "max_count": 1, "max_demand": None}),
        ("uniform", {"density": 0.01}),
        ("gavel", {"priorities": True, "rounds": 2}),
        ("gavel", {"multi_gpu": False}),
        ("gavel", {"models": ["A3C", "CycleGAN"]}),
        ("neocloud", {"with_cost": False, "max_demand": 3}),
        ("neocloud", {"no_trainium": 1.0, "large_memory": 1.0}),
        ("neocloud", {"rounds": 4}),
        ("gemmini", {"weights": "1-2-8", "rounds": 3}),
        ("gemmini", {"weights": "1-2", "devices_per_agent": 1}),
    ],
)
def test_parameters_give_valid_instances(family, params):
    d = generate(family, 50, 6, seed=11, **params)
    _check_structure(d, 50, 6)
    instance_from_dict(d)
    assert d == generate(family, 50, 6, seed=11, **params)


def test_values_are_short_decimals():
    for family in ("uniform", "gavel", "neocloud"):
        d = _gen(family, 400, 12, seed=16)
        for e in d["edges"]:
            for key in ("utility", "bid", "cost"):
                if key in e:
                    assert e[key] == round(e[key], 4), (family, e)
                    assert len(repr(e[key]).split(".")[1]) <= 4


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call",
    [
        lambda: generate("nope", 3, 3),
        lambda: generate(None, 3, 3),
        lambda: generate("uniform", 0, 3),
        lambda: generate("gavel", -1, 3),
        lambda: generate("gavel", 3, 0),
        lambda: generate("gemmini", 2.5, 2),
        lambda: generate("gemmini", "3", 2),
        lambda: generate("neocloud", True, 2),
        lambda: generate("uniform", 3, 3, seed=-1),
        lambda: generate("uniform", 3, 3, colour="red"),
        lambda: generate("uniform", 3, 3, density=0.0),
        lambda: generate("uniform", 3, 3, density=1.5),
        lambda: generate("uniform", 3, 3, max_count=0),
        lambda: generate("uniform", 3, 3, rounds=0),
        lambda: generate("gavel", 3, 3, models=["Foo"]),
        lambda: generate("gavel", 3, 3, models="A3C"),
        lambda: generate("gavel", 3, 3, multi_gpu="yes"),
        lambda: generate("neocloud", 3, 3, no_trainium=2.0),
        lambda: generate("gemmini", 3, 2, weights="1-3"),
    ],
)
def test_bad_arguments_raise_one_line_value_error(call):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert message and "\n" not in message


def test_schema_rejects_a_broken_generated_dict():
    d = generate("uniform", 4, 2, seed=0)
    d["edges"][0]["utility"] = -1.0
    with pytest.raises(InputError):
        instance_from_dict(d)


# --------------------------------------------------------------------------- families


def test_gavel_facts():
    d = _gen("gavel", 400, 12, seed=16)
    assert [p["id"] for p in d["pools"][:4]] == ["V100-0", "P100-1", "K80-2", "V100-3"]
    assert all(p["cluster"] == "gpu" for p in d["pools"])
    column = {"K80": 0, "P100": 1, "V100": 2}
    table = {
        tuple(round(v, 4) for v in row): name for name, row in gavel_mod.THROUGHPUTS.items()
    }
    kind = {p["id"]: p["id"].split("-")[0] for p in d["pools"]}
    per_agent: dict[str, dict[str, float]] = {}
    for e in d["edges"]:
        per_agent.setdefault(e["agent"], {})[kind[e["pool"]]] = e["utility"]
    demands = {a["id"]: a["demand"] for a in d["agents"]}
    for agent, by_type in per_agent.items():
        assert len(per_agent[agent]) == 3  # every job runs on every GPU type
        row = [0.0, 0.0, 0.0]
        for gpu, u in by_type.items():
            row[column[gpu]] = u
        job_type = table[tuple(row)]
        if demands[agent] > 1:
            assert job_type.split(" (")[0] in gavel_mod.DISTRIBUTED
    counts = Counter(demands.values())
    assert set(counts) <= {1, 2, 4, 8} and counts[1] > counts[2]
    assert "oracle_throughputs_v2.json" in d["description"] and "OSDI 2020" in d["description"]


def test_gavel_heterogeneity_span():
    ratios = {t: v[2] / v[0] for t, v in gavel_mod.THROUGHPUTS.items()}
    assert len(ratios) == 26
    core = [r for t, r in ratios.items() if not t.startswith("Recommendation")]
    assert 1.9 < min(core) < 2.2 and 11 < max(ratios.values()) < 12
    assert min(ratios.values()) < 1  # documented: Recommendation is slower on V100


def test_gavel_weights_and_single_gpu():
    d = generate("gavel", 500, 3, seed=4, priorities=True, multi_gpu=False)
    assert {a["demand"] for a in d["agents"]} == {1}
    assert {a["weight"] for a in d["agents"]} == {1.0, 5.0}


def test_neocloud_facts():
    d = _gen("neocloud", 400, 12, seed=16)
    assert [p["id"] for p in d["pools"][:5]] == ["A10-0", "L4-1", "H100-2", "Trainium-3", "A10-4"]
    prices = {p["id"].split("-")[0]: p["base_price"] for p in d["pools"]}
    assert prices == {"A10": 0.606, "L4": 0.48, "H100": 2.49, "Trainium": 0.804}
    assert prices == neocloud_mod.BASE_PRICES
    assert all(e["bid"] == e["utility"] for e in d["edges"])
    pools_of = {}
    for e in d["edges"]:
        pools_of.setdefault(e["agent"], set()).add(e["pool"].split("-")[0])
    assert any("Trainium" not in s and "A10" in s for s in pools_of.values())  # like App B
    assert any(s == {"H100"} for s in pools_of.values())  # large-memory jobs
    # With only A10 pools every job still has one.
    small = generate("neocloud", 30, 1, seed=2, large_memory=1.0, no_trainium=1.0)
    assert len(small["edges"]) == 30


def test_neocloud_speeds_follow_table1_ranges():
    d = generate("neocloud", 300, 4, seed=9, no_trainium=0.0, large_memory=0.0)
    by = {}
    for e in d["edges"]:
        by.setdefault(e["agent"], {})[e["pool"].split("-")[0]] = e["utility"]
    for u in by.values():
        assert 0.6 < u["L4"] / u["A10"] < 0.8
        assert 1.0 < u["Trainium"] / u["A10"] < 1.35
        assert 2.9 < u["H100"] / u["A10"] < 6.1


def test_gemmini_facts():
    d = _gen("gemmini", 20, 2)
    assert [(p["id"], p["count"]) for p in d["pools"]] == [("Gemmini-2GHz-0", 20), ("Gemmini-3GHz-1", 20)]
    pairs = set(gemmini_mod.THROUGHPUTS.values())
    by = {}
    for e in d["edges"]:
        by.setdefault(e["agent"], []).append(e["utility"])
    assert all(tuple(v) in pairs for v in by.values())
    assert (70.262, 86.332) in pairs and (1.48, 2.101) in pairs


@pytest.mark.parametrize(
    "weights,expected",
    [("equal", {1.0: 20}), ("1-2", {1.0: 10, 2.0: 10}), ("1-2-4", {1.0: 10, 2.0: 5, 4.0: 5}),
     ("1-2-8", {1.0: 10, 2.0: 5, 8.0: 5})],
)
def test_gemmini_weight_setups(weights, expected):
    d = generate("gemmini", 20, 2, seed=3, weights=weights)
    assert Counter(a.get("weight", 1.0) for a in d["agents"]) == expected


def test_gemmini_rounds_give_equal_lists():
    d = generate("gemmini", 6, 2, seed=1, rounds=3)
    assert d["rounds"] == 3
    for e in d["edges"]:
        assert len(e["utility"]) == 3 and len(set(e["utility"])) == 1


def test_uniform_density_and_rounds():
    d = generate("uniform", 2000, 10, seed=2, density=0.3)
    frac = len(d["edges"]) / (2000 * 10)
    assert 0.27 < frac < 0.33
    assert all(0 < e["utility"] <= 1 for e in d["edges"])
    r = generate("uniform", 50, 4, seed=2, rounds=2)
    assert all(isinstance(e["utility"], list) and len(e["utility"]) == 2 for e in r["edges"])


# --------------------------------------------------------------------------- shipped instances


@pytest.mark.parametrize(
    "filename,family,agents,pools",
    [
        ("uniform-small.json", "uniform", 8, 4),
        ("gavel-medium.json", "gavel", 200, 6),
        ("neocloud-medium.json", "neocloud", 100, 8),
        ("gemmini-small.json", "gemmini", 20, 2),
    ],
)
def test_generated_examples_regenerate(filename, family, agents, pools):
    shipped = json.loads((INSTANCES / filename).read_text())
    fresh = generate(family, agents, pools, seed=0)
    assert instance_to_dict(instance_from_dict(shipped)) == instance_to_dict(instance_from_dict(fresh))


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.json")), ids=lambda p: p.name)
def test_shipped_instances_validate(path):
    data = json.loads(path.read_text())
    inst = instance_from_dict(data, str(path.name))
    assert data.get("description")
    assert inst.agents and inst.pools


# SHA-256 (first 32 hex digits) of dumps_instance(lo.generate(...)), computed on the generators
# before they built instances from columns: the seeded output must not change.
PINNED = [
    ("uniform", 50, 7, 0, {}, "b3e439f9275ca478c1f064055817b77e"),
    ("uniform", 40, 5, 3, {"rounds": 3, "max_demand": None}, "dcbfa85dc87ea2a78b03480cfe00a336"),
    ("uniform", 30, 4, 11, {"density": 0.05}, "e91ad8600c2b039e8a39e39b50715a28"),
    ("gavel", 60, 6, 0, {}, "33f0040bab7724a8603212622223e52b"),
    ("gavel", 40, 3, 5, {"priorities": True, "models": ["LM", "A3C"]}, "5c9df5246025df89aa94ebe8367f5c0c"),
    ("gavel", 20, 4, 2, {"multi_gpu": False, "rounds": 2}, "82ad4dfba0a74c589c9b8deabeed0452"),
    ("neocloud", 50, 8, 0, {}, "af7b8dd484f3d9f2d32ecd2e48e3430f"),
    ("neocloud", 30, 3, 4, {"with_cost": False, "max_demand": 3}, "f74a4468196d364f703d93a4d3504e21"),
    ("neocloud", 25, 5, 9, {"rounds": 2, "large_memory": 0.5}, "6be5c02618a1eac51bc8d855ef5782f6"),
    ("gemmini", 40, 4, 0, {}, "07186e96df748902a1a115c4df2173eb"),
    ("gemmini", 21, 3, 6, {"weights": "1-2-8", "rounds": 3}, "aa711e510b64faa694c11c9730b4bd0b"),
]


@pytest.mark.parametrize("family, agents, pools, seed, params, digest", PINNED)
def test_seeded_output_is_pinned(family, agents, pools, seed, params, digest):
    import hashlib

    import laissez_opt as lo
    from laissez_opt.io import dumps_instance

    text = dumps_instance(lo.generate(family, agents, pools, seed=seed, **params))
    assert hashlib.sha256(text.encode()).hexdigest()[:32] == digest
    text_dict = dumps_instance(instance_from_dict(generate(family, agents, pools, seed=seed, **params)))
    assert text_dict == text


@pytest.mark.parametrize("family, agents, pools, seed, params, digest", PINNED)
def test_column_instance_equals_dict_instance(family, agents, pools, seed, params, digest):
    """Records, names and every cached array view of the column-built instance are those of the dict path."""
    import numpy as np

    from laissez_opt.generate import generate_instance

    fast = generate_instance(family, agents, pools, seed=seed, **params)
    slow = instance_from_dict(generate(family, agents, pools, seed=seed, **params), fast.source)
    assert fast.agents == slow.agents and fast.edges == slow.edges and fast.pools == slow.pools
    assert (fast.name, fast.description, fast.rounds, fast.round_hours) == (
        slow.name, slow.description, slow.rounds, slow.round_hours)
    assert [type(e.utility) for e in fast.edges] == [type(e.utility) for e in slow.edges]
    assert [type(a.demand) for a in fast.agents] == [type(a.demand) for a in slow.agents]
    for view in ("edge_agent", "edge_pool", "edge_utility", "edge_bid", "edge_cost", "weights", "demands",
                 "counts", "utility", "compatible", "effective_demands"):
        a, b = getattr(fast, view), getattr(slow, view)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert fast.agent_index == slow.agent_index and fast.pool_index == slow.pool_index


def test_column_path_falls_back_to_the_precise_message():
    """A parameter that pushes a value out of the format's range gives the instance format's own error."""
    import laissez_opt as lo

    with pytest.raises(InputError, match=r"\$\.pools\[0\]\.count: must be <= 2147483647"):
        lo.generate("uniform", 3, 2, seed=0, max_count=2**40)
    with pytest.raises(InputError, match=r"\.demand: must be <= 2147483647"):
        lo.generate("uniform", 20, 2, seed=0, max_demand=2**40)


def test_column_instance_carries_its_views():
    """The column-built instance stores its array views (built once, not again from the records)."""
    from laissez_opt.generate import generate_instance

    inst = generate_instance("neocloud", 30, 4, seed=1)
    assert {"edge_agent", "edge_pool", "edge_utility", "edge_bid", "edge_cost", "weights", "demands",
            "agent_index", "pool_index"} <= set(vars(inst))


def test_bad_sizes_are_blamed_on_their_own_argument():
    import laissez_opt as lo

    for args, path, text in [((0, 2), "agents", "must be >= 1"), ((5, 0), "pools", "must be >= 1"),
                             ((2**24 + 1, 2), "agents", "must be <= 16777216")]:
        with pytest.raises(lo.InputError, match=text) as caught:
            lo.generate("uniform", *args)
        assert caught.value.path == path
    with pytest.raises(lo.InputError) as caught:
        lo.generate("uniform", 5, 2, seed=-1)
    assert caught.value.path == "seed"
