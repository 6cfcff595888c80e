"""Canonical writing: load/dump is a fixed point, shipped files are canonical, writes are atomic."""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laissez_opt.errors import InputError
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.io import (
    dumps_instance,
    instance_from_dict,
    instance_to_dict,
    load_instance,
    parse_json,
    save_instance,
    write_atomic,
)

from conftest import INSTANCE_FILES, INSTANCES, ROOT, run_cli_many


def _reload(text: str):
    return instance_from_dict(parse_json(text, "<text>"), "<text>")


# ----------------------------------------------------------------------------- shipped files


def test_there_are_instance_files():
    assert len(INSTANCE_FILES) >= 8


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: p.name)
def test_shipped_file_is_canonical_and_a_fixed_point(path):
    raw = path.read_bytes()
    first = dumps_instance(load_instance(path))
    assert first.encode("utf-8") == raw, f"{path.name} is not in canonical form"
    second = dumps_instance(_reload(first))
    assert second == first


# ----------------------------------------------------------------------------- README commands


def _readme_commands():
    text = (INSTANCES / "README.md").read_text(encoding="utf-8")
    return re.findall(r"`(laissez-opt generate [^`]+)`", text)


def test_readme_lists_a_command_for_every_generated_file():
    commands = _readme_commands()
    assert len(commands) >= 4
    targets = {shlex.split(c)[shlex.split(c).index("-o") + 1] for c in commands}
    assert all((ROOT / t).is_file() for t in targets), targets


def test_readme_generate_commands_reproduce_the_files(tmp_path):
    runs, expected = [], []
    arglists = []
    for command in _readme_commands():
        argv = shlex.split(command)
        assert argv[0] == "laissez-opt"
        out = argv.index("-o") + 1
        target = ROOT / argv[out]
        fresh = tmp_path / target.name
        argv[out] = str(fresh)
        arglists.append(tuple(argv[1:]))
        expected.append((target, fresh))
    runs = run_cli_many(arglists, cwd=ROOT)
    for run, (target, fresh) in zip(runs, expected):
        assert run.returncode == 0, run
        assert fresh.read_bytes() == target.read_bytes(), f"{target.name} differs from `{' '.join(run.args)}`"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(t.name for t, _ in expected)  # no temp files


# ----------------------------------------------------------------------------- hypothesis

ids = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FFF, exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
    min_size=1,
    max_size=8,
)
# The format's range: magnitudes up to MAX_MAGNITUDE (1e9); tiny values round-trip too.
finite = st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-300, max_value=1e9, allow_nan=False, allow_infinity=False)


@st.composite
def instances(draw):
    rounds = draw(st.integers(1, 3))
    pool_ids = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    agent_ids = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    pools = [
        Pool(
            p,
            count=draw(st.integers(1, 2**31 - 1)),
            cluster=draw(st.one_of(st.none(), st.text(max_size=5))),
            base_price=draw(finite),
        )
        for p in pool_ids
    ]
    agents = []
    for a in agent_ids:
        arrival = draw(st.integers(0, rounds - 1))
        agents.append(
            Agent(
                a,
                weight=draw(positive),
                demand=draw(st.one_of(st.none(), st.integers(0, 2**31 - 1))),
                work=draw(st.one_of(st.none(), finite)),
                arrival=arrival,
                deadline=draw(st.one_of(st.none(), st.integers(arrival, rounds - 1))),
                elapsed=draw(finite),
                migration_cost=draw(finite),
                budget=draw(st.one_of(st.none(), finite)),
                arrivals=draw(st.one_of(st.none(), st.tuples(*[finite] * rounds))),
                required=draw(st.booleans()),
            )
        )
    pairs = draw(
        st.lists(st.tuples(st.sampled_from(agent_ids), st.sampled_from(pool_ids)), unique=True, max_size=8)
    )
    edges = [
        Edge(
            a,
            p,
            draw(st.one_of(finite, st.tuples(*[finite] * rounds))),
            bid=draw(st.one_of(st.none(), finite)),
            cost=draw(st.one_of(st.none(), finite)),
        )
        for a, p in pairs
    ]
    return Instance(
        pools,
        agents,
        edges,
        rounds=rounds,
        round_hours=draw(positive),
        name=draw(ids),
        description=draw(st.text(max_size=30)),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_dump_load_dump_is_byte_identical(inst):
    first = dumps_instance(inst)
    again = _reload(first)
    assert dumps_instance(again) == first
    # Nothing is lost on the way: the records compare equal.
    assert again.pools == inst.pools
    assert again.agents == inst.agents
    assert again.edges == inst.edges
    assert (again.rounds, again.round_hours, again.name, again.description) == (
        inst.rounds, inst.round_hours, inst.name, inst.description,
    )
    # The text is strict JSON that the standard library reads the same way.
    assert json.loads(first) == instance_to_dict(inst)


@settings(max_examples=30, deadline=None)
@given(instances())
def test_save_instance_then_load(tmp_path_factory, inst):
    path = tmp_path_factory.mktemp("save") / "inst.json"
    save_instance(inst, path)
    assert path.read_text(encoding="utf-8") == dumps_instance(inst)
    assert dumps_instance(load_instance(path)) == dumps_instance(inst)


def test_defaults_are_omitted_and_keys_ordered():
    text = dumps_instance(Instance([Pool("g")], [Agent("a")], [Edge("a", "g", 2)]))
    data = json.loads(text)
    assert list(data) == ["format", "version", "name", "rounds", "round_hours", "pools", "agents", "edges"]
    assert data["agents"] == [{"id": "a", "weight": 1.0}]
    assert data["edges"] == [{"agent": "a", "pool": "g", "utility": 2.0}]
    assert text.endswith("}\n") and "\n    {" in text


def test_loading_non_canonical_text_canonicalises(tmp_path):
    path = tmp_path / "messy.json"
    path.write_text(
        '{"edges":[{"utility":3,"pool":"g","agent":"a"}],"agents":[{"id":"a","weight":1}],'
        '"pools":[{"id":"g"}],"version":1,"format":"laissez-opt/instance"}'
    )
    text = dumps_instance(load_instance(path))
    assert text != path.read_text()
    assert dumps_instance(_reload(text)) == text
    assert json.loads(text)["name"] == "messy"  # named after the file when the file gives no name


# ----------------------------------------------------------------------------- atomic writes


def test_write_atomic_writes_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "first\n")
    write_atomic(target, b"second\n")
    assert target.read_bytes() == b"second\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_failed_replace_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old contents\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_atomic(target, "new contents\n")
    monkeypatch.undo()
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old contents\n")

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        save_instance(Instance([Pool("g")], [Agent("a")], []), target)
    monkeypatch.undo()
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old contents\n")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new contents\n")
    monkeypatch.undo()
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_write_into_missing_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="directory does not exist"):
        write_atomic(tmp_path / "no" / "such" / "out.json", "x")
    assert list(tmp_path.iterdir()) == []


def test_lo_generate_stays_a_function():
    """``lo.generate`` must survive the first call (which imports ``laissez_opt.generate``)."""
    import subprocess
    import sys

    code = (
        "import laissez_opt as lo\n"
        "a = lo.generate('uniform', 4, 2, seed=3)\n"
        "b = lo.generate('uniform', 4, 2, seed=3)\n"
        "import laissez_opt.generate\n"
        "from laissez_opt.generate import FAMILIES\n"
        "c = lo.generate('gavel', 3, 2)\n"
        "assert lo.dumps_instance(a) == lo.dumps_instance(b) and c.n_agents == 3 and 'gavel' in FAMILIES\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


_IDS = st.text(alphabet=st.sampled_from(list('ab"\\\x01\x1f é✓z_-. ')), min_size=1, max_size=6).filter(lambda s: s == s.strip())
_REALS = st.one_of(st.floats(min_value=0, max_value=1e9, allow_nan=False), st.integers(0, 10**6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_IDS, _IDS, _REALS, st.one_of(st.none(), _REALS), st.one_of(st.none(), _REALS),
                          st.booleans()), min_size=1, max_size=8, unique_by=lambda t: (t[0], t[1])))
def test_edge_lines_are_the_json_module_lines(rows):
    """The directly formatted edge lines equal ``json.dumps`` of the canonical records, escapes included."""
    from laissez_opt.io.instance_file import _edge_lines, _one_line, instance_to_dict

    agents = sorted({a for a, *_ in rows})
    pools = sorted({p for _, p, *_ in rows})
    edges = [Edge(a, p, (u, u) if per_round else u, bid=b, cost=c) for a, p, u, b, c, per_round in rows]
    inst = Instance(pools=[Pool(p) for p in pools], agents=[Agent(a) for a in agents], edges=edges, rounds=2)
    assert _edge_lines(inst) == [_one_line(e) for e in instance_to_dict(inst)["edges"]]
