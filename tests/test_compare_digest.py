"""The run store's instance key: a digest of the typed columns, one per instance whatever its form.

The key (``laissez_opt.io.digest``, scheme ``laissez-opt/instance-digest/1``)
must be the same for the JSON and the binary form of one instance, for an
instance built in Python, read by the fast or the precise reader, or made by
a generator; it must change when any number, id or optional field changes;
and the columnar copy that ``compare`` sends to its workers must be the same
instance.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.generate import generate_instance
from laissez_opt.harness import compare
from laissez_opt.harness.store import STORE_FORMAT, run_key
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.io import dumps_instance, instance_from_dict, load_instance, parse_json, save_instance
from laissez_opt.io.columns import instance_from_columns
from laissez_opt.io.digest import DIGEST_SCHEME, columnar_copy, instance_digest
from tests.test_roundtrip import finite, instances


def _forms(inst: Instance, directory) -> list[Instance]:
    """``inst`` as built, read back from JSON (fast and precise readers) and from ``.npz``, and as sent to a worker."""
    save_instance(inst, directory / "i.json")
    save_instance(inst, directory / "i.npz")
    text = dumps_instance(inst)
    forms = [inst, load_instance(directory / "i.json"), instance_from_dict(parse_json(text, "t"), "t"),
             load_instance(directory / "i.npz")]
    return forms + [pickle.loads(pickle.dumps(columnar_copy(form))) for form in forms]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(instances())
def test_every_form_of_an_instance_has_one_digest(tmp_path_factory, inst):
    directory = tmp_path_factory.mktemp("forms")
    forms = _forms(inst, directory)
    digests = {instance_digest(form) for form in forms}
    assert len(digests) == 1
    text = dumps_instance(inst)
    for form in forms:  # the copy sent to workers is the same instance, records and all
        assert dumps_instance(form) == text
        assert form.edges == inst.edges and form.agents == inst.agents


def _mutations(inst: Instance, draw) -> Instance:
    """``inst`` with one field changed: a number, an id, an optional field given or dropped, a name."""
    pools, agents, edges = list(inst.pools), list(inst.agents), list(inst.edges)
    head = dict(rounds=inst.rounds, round_hours=inst.round_hours, name=inst.name, description=inst.description)
    what = draw(st.sampled_from(["pool", "agent", "edge", "head"] if edges else ["pool", "agent", "head"]))
    if what == "head":
        field = draw(st.sampled_from(["round_hours", "name", "description"]))
        head[field] = draw(st.floats(1e-3, 1e3) if field == "round_hours" else st.text(min_size=1, max_size=6))
    elif what == "pool":
        k = draw(st.integers(0, len(pools) - 1))
        field = draw(st.sampled_from(["count", "base_price", "cluster"]))
        value = {"count": st.integers(1, 50), "base_price": finite, "cluster": st.one_of(st.none(), st.text(max_size=4))}
        pools[k] = dataclasses.replace(pools[k], **{field: draw(value[field])})
    elif what == "agent":
        k = draw(st.integers(0, len(agents) - 1))
        field = draw(st.sampled_from(["id", "weight", "demand", "work", "elapsed", "migration_cost", "budget",
                                      "required", "arrivals"]))
        value = {"id": st.text(alphabet="xyz", min_size=9, max_size=9), "weight": st.floats(1e-3, 1e3),
                 "demand": st.one_of(st.none(), st.integers(0, 99)), "work": st.one_of(st.none(), finite),
                 "elapsed": finite, "migration_cost": finite, "budget": st.one_of(st.none(), finite),
                 "required": st.booleans(),
                 "arrivals": st.one_of(st.none(), st.tuples(*[finite] * inst.rounds))}[field]
        new = draw(value)
        if field == "id":
            edges = [dataclasses.replace(e, agent=new) if e.agent == agents[k].id else e for e in edges]
        agents[k] = dataclasses.replace(agents[k], **{field: new})
    else:
        k = draw(st.integers(0, len(edges) - 1))
        field = draw(st.sampled_from(["utility", "bid", "cost"]))
        value = {"utility": st.one_of(finite, st.tuples(*[finite] * inst.rounds)),
                 "bid": st.one_of(st.none(), finite), "cost": st.one_of(st.none(), finite)}[field]
        edges[k] = dataclasses.replace(edges[k], **{field: draw(value)})
    return Instance(pools, agents, edges, **head)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_the_digest_changes_exactly_when_the_instance_does(inst, data):
    """Equal digests exactly when the canonical texts are equal: any changed number, id or field shows."""
    changed = _mutations(inst, data.draw)
    same_text = dumps_instance(changed) == dumps_instance(inst)
    assert (instance_digest(changed) == instance_digest(inst)) == same_text


@settings(max_examples=100, deadline=None)
@given(instances(), st.data())
def test_any_changed_edge_number_changes_the_digest_of_a_read_file(inst, data):
    """On the columns a reader leaves (no records built), one changed utility, bid or cost changes the digest."""
    assume(inst.edges)
    k = data.draw(st.integers(0, len(inst.edges) - 1))
    field = data.draw(st.sampled_from(["utility", "bid", "cost"]))
    old = getattr(inst.edges[k], field)
    first = old[0] if isinstance(old, tuple) else old
    first = first or 0.0
    new_value = first + 1.0 if first < 5e8 else first / 2
    new = tuple([new_value, *old[1:]]) if isinstance(old, tuple) else new_value
    edges = list(inst.edges)
    edges[k] = dataclasses.replace(edges[k], **{field: new})
    changed = Instance(inst.pools, inst.agents, edges, rounds=inst.rounds, round_hours=inst.round_hours,
                       name=inst.name, description=inst.description)
    read = [load_instance_text(dumps_instance(x)) for x in (inst, changed)]
    assert "_edges_later" in read[0].__dict__  # the digest reads the reader's columns
    assert instance_digest(read[0]) != instance_digest(read[1])
    assert "_edges_later" in read[0].__dict__  # and builds no record on the way


def load_instance_text(text: str) -> Instance:
    from laissez_opt.io.columns import loads_fast
    from laissez_opt.io.instance_file import _name, _pools
    from laissez_opt.io.columns import instance_fast

    data = loads_fast(text)
    inst = instance_fast(data, "t", _name(data, "t"), _pools)
    assert inst is not None
    return inst


def test_task_vectors_count(tmp_path):
    def build(amount):
        return Instance([Pool("P", count=2, resources={"cpu": 8.0})],
                        [Agent("a", task={"accelerator": 1.0, "cpu": amount}), Agent("b")],
                        [Edge("a", "P", 1.0), Edge("b", "P", 2.0)])

    first, second = build(2.0), build(3.0)
    assert len({instance_digest(f) for f in _forms(first, tmp_path)}) == 1
    assert instance_digest(first) != instance_digest(second)


def test_generated_columns_and_their_files_agree(tmp_path):
    inst = generate_instance("neocloud", 40, 6, seed=3)
    assert "_edges_later" in inst.__dict__
    assert len({instance_digest(f) for f in _forms(inst, tmp_path)}) == 1
    per_round = instance_from_columns([Pool("P", count=3)], ["a", "b"], np.array([0, 1]), np.array([0, 0]),
                                      np.array([[1.0, 2.0], [3.0, 4.0]]), bid=np.array([0.5, 0.25]), rounds=2)
    assert len({instance_digest(f) for f in _forms(per_round, tmp_path)}) == 1


def test_a_scalar_utility_and_a_per_round_list_are_different_instances():
    scalar = Instance([Pool("P")], [Agent("a")], [Edge("a", "P", 1.0)], rounds=2)
    listed = Instance([Pool("P")], [Agent("a")], [Edge("a", "P", (1.0, 1.0))], rounds=2)
    assert dumps_instance(scalar) != dumps_instance(listed)
    assert instance_digest(scalar) != instance_digest(listed)


def test_the_scheme_is_named_and_part_of_the_store_format():
    assert DIGEST_SCHEME == "laissez-opt/instance-digest/1"
    assert STORE_FORMAT >= 3
    assert run_key("d", "welfare", {}, version="1") != run_key("d", "greedy", {}, version="1")
    with pytest.raises(TypeError):
        instance_digest({"agents": []})


def test_json_and_npz_forms_share_their_runs_in_a_store(tmp_path):
    inst = lo.Instance([lo.Pool("P", count=2), lo.Pool("Q")], [lo.Agent("a"), lo.Agent("b", demand=1)],
                       [lo.Edge("a", "P", 1.0), lo.Edge("b", "P", 2.0), lo.Edge("b", "Q", 0.5, bid=0.25)],
                       name="pair")
    save_instance(inst, tmp_path / "pair.json")
    save_instance(inst, tmp_path / "pair.npz")
    store = tmp_path / "runs"
    first = compare([tmp_path / "pair.json"], ["greedy", "welfare"], store=store, progress=False)
    second = compare([tmp_path / "pair.npz"], ["greedy", "welfare"], store=store, progress=False)
    assert (first.computed, second.computed, second.reused) == (2, 0, 2)
    assert {r["instance_hash"] for r in first.rows} == {r["instance_hash"] for r in second.rows} == {
        instance_digest(inst)}
    changed = lo.Instance(inst.pools, inst.agents, [*inst.edges[:2], lo.Edge("b", "Q", 0.5, bid=0.3)], name="pair")
    third = compare([changed], ["greedy", "welfare"], store=store, progress=False)
    assert (third.computed, third.reused) == (2, 0)


class _Renamed(Instance):
    """A subclass, as a user might write one: its copy for the workers is a plain instance."""


def test_a_subclass_travels_as_a_plain_instance():
    base = Instance([Pool("P", count=2)], [Agent("a"), Agent("b", work=3.0)], [Edge("a", "P", 1.0), Edge("b", "P", 2.0)])
    sub = _Renamed(base.pools, base.agents, base.edges)
    copy = pickle.loads(pickle.dumps(columnar_copy(sub)))
    assert type(copy) is Instance
    assert instance_digest(copy) == instance_digest(sub) == instance_digest(base)
    assert dumps_instance(copy) == dumps_instance(base)
    with pytest.raises(TypeError):
        columnar_copy("instance.json")
