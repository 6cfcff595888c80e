"""The binary instance form (``.npz``): exact round trips, the JSON form's checks, dispatch everywhere.

* Every shipped instance, every generator family, the importers' instances and
  hypothesis-drawn instances (per-round utilities and arrivals, tasks,
  resources, nulls) read back from the binary form to an instance whose
  canonical JSON text is byte-identical, with equal records and array views.
* Damaged files (truncated, not a zip, wrong version, missing or unknown
  arrays, wrong dtype or shape, pickled object arrays, NaN, bad references,
  repeated ids or edges) get one line ``file: array[index]: problem`` from the
  API and exit code 2 from the command line, never a traceback.
* ``solve``, ``validate``, ``check``, ``convert``, ``generate -o x.npz`` and
  ``compare`` (whose run-store hash is the same for both forms) accept it.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.cli.main import cli
from laissez_opt.errors import InputError
from laissez_opt.generate import FAMILIES, generate
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.io import dumps_instance, instance_from_dict, load_instance, save_instance
from laissez_opt.io.binary import BINARY_FORMAT, instance_from_npz, instance_to_npz, is_binary
from laissez_opt.io.importers import import_data
from tests.test_adversarial import BASE
from tests.test_io_fast import _same
from tests.test_roundtrip import finite, ids, instances, positive

from conftest import INSTANCES, ROOT

SHIPPED = sorted(INSTANCES.rglob("*.json"))


def _instance_files():
    for path in SHIPPED:
        try:
            yield path, load_instance(path)
        except InputError:  # raw inputs of the importers (instances/imports/) are not instance files
            continue


def _round_trip(inst: Instance, source: str = "x.npz", **kw) -> Instance:
    return instance_from_npz(instance_to_npz(inst, **kw), source)


def _arrays(data: bytes) -> dict:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _npz(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------- round trips

def test_every_shipped_instance_file_round_trips_byte_identically(tmp_path):
    checked = 0
    for path, inst in _instance_files():
        for compressed in (False, True):
            target = tmp_path / f"{path.stem}.npz"
            save_instance(inst, target, compressed=compressed)
            again = load_instance(target)
            assert dumps_instance(again) == dumps_instance(inst) == path.read_text(encoding="utf-8"), path
            assert again.source == str(target)
            again.source = inst.source
            _same(inst, again)
            checked += 1
    assert checked >= 2 * 9


def test_importer_instances_round_trip():
    imports = ROOT / "instances" / "imports"
    for fmt, name in (("gavel-throughputs", "gavel_throughputs.json"), ("philly", "philly_cluster_job_log.json")):
        inst = import_data(fmt, imports / name).instance
        assert dumps_instance(_round_trip(inst)) == dumps_instance(inst), fmt


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_generator_family_round_trips(family):
    for params in ({}, {"rounds": 3} if "rounds" in FAMILIES[family].params else {}):
        inst = instance_from_dict(generate(family, 30, 6, seed=4, **params))
        again = _round_trip(inst, inst.source)
        assert dumps_instance(again) == dumps_instance(inst)
        _same(inst, again)


@st.composite
def rich_instances(draw):
    """The round-trip strategy's instances, with task vectors and pool resources added to some records."""
    inst = draw(instances())
    kinds = st.sampled_from(["accelerator", "cpu", "memory", "n\u00e9t"])
    vector = st.dictionaries(kinds, finite, min_size=1, max_size=3)
    pools = [Pool(p.id, count=p.count, cluster=p.cluster, base_price=p.base_price,
                  resources=draw(st.one_of(st.none(), vector.map(lambda v: {k: x for k, x in v.items()
                                                                            if k != "accelerator"}))))
             for p in inst.pools]
    agents = []
    for a in inst.agents:
        task = draw(st.one_of(st.none(), vector.filter(lambda v: any(x > 0 for x in v.values()))))
        agents.append(Agent(a.id, weight=a.weight, demand=a.demand, work=a.work, arrival=a.arrival,
                            deadline=a.deadline, elapsed=a.elapsed, migration_cost=a.migration_cost,
                            budget=a.budget, arrivals=a.arrivals, required=a.required, task=task))
    return Instance(pools, agents, inst.edges, rounds=inst.rounds, round_hours=inst.round_hours, name=inst.name,
                    description=inst.description)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rich_instances(), st.booleans())
def test_drawn_instances_round_trip_exactly(inst, compressed):
    again = _round_trip(inst, compressed=compressed)
    assert dumps_instance(again) == dumps_instance(inst)
    assert again.edges == inst.edges
    # The records equal those of the JSON form (which lists resource kinds in order), types and views included.
    via_json = instance_from_dict(json.loads(dumps_instance(inst)), "x.npz")
    _same(via_json, again)


def test_edges_are_built_on_first_use_and_the_instance_pickles():
    inst = instance_from_dict(generate("uniform", 40, 5, seed=1))
    again = _round_trip(inst)
    assert "_edges" not in again.__dict__ and again.n_edges == inst.n_edges and again.n_agents == inst.n_agents
    assert np.array_equal(again.utility, inst.utility)  # array views need no records
    assert "_edges" not in again.__dict__
    copy = pickle.loads(pickle.dumps(again))
    assert copy.edges == inst.edges and again.edges == inst.edges and "_edges_later" not in again.__dict__
    assert copy.agents == inst.agents and "_agents_later" not in copy.__dict__


def test_the_header_names_the_form_and_pools_are_json_records():
    inst = load_instance(INSTANCES / "hotos25-table1.json")
    arrays = _arrays(instance_to_npz(inst))
    header = json.loads(arrays["header"].tobytes())
    assert header["format"] == BINARY_FORMAT and header["version"] == 1
    assert header["pools"] == json.loads(dumps_instance(inst))["pools"]
    assert all(a.dtype != object for a in arrays.values())


def test_dispatch_by_suffix_and_by_zip_signature(tmp_path):
    inst = load_instance(INSTANCES / "hotos25-table1.json")
    odd = tmp_path / "binary-without-suffix.dat"
    odd.write_bytes(instance_to_npz(inst))
    assert dumps_instance(lo.load(odd)) == dumps_instance(inst)
    assert is_binary("X.NPZ") and not is_binary("x.json", b'{"a"')
    with pytest.raises(InputError, match="compressed applies to the binary form"):
        save_instance(inst, tmp_path / "x.json", compressed=True)
    with pytest.raises(InputError, match="compressed must be true or false"):
        save_instance(inst, tmp_path / "x.npz", compressed="yes")


# ------------------------------------------------------------------------------------------- bad files

def _valid() -> bytes:
    data = json.loads(json.dumps(BASE))
    data["edges"].append({"agent": "A", "pool": "L4", "utility": 0.2, "bid": 0.1})
    data["agents"][1]["demand"] = 3
    return instance_to_npz(instance_from_dict(data))


def _with(**changes) -> bytes:
    arrays = _arrays(_valid())
    for key, value in changes.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # allow_pickle defaults to True on writing: object arrays get pickled
    return buffer.getvalue()


def _header(**changes) -> np.ndarray:
    header = json.loads(_arrays(_valid())["header"].tobytes())
    header.update(changes)
    return np.frombuffer(json.dumps(header).encode(), np.uint8)


def _raw_zip(members: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def _bad_cases():
    valid = _valid()
    arrays = _arrays(valid)
    n_edges = arrays["edge_utility"].size
    utility = arrays["edge_utility"]
    return [
        ("truncated", valid[: len(valid) // 2], "$"),
        ("not a zip", b"hello, world", "$"),
        ("empty", b"", "$"),
        ("json text", json.dumps(BASE).encode(), "$"),
        ("bare npy", (lambda b: (np.save(b, utility), b.getvalue())[1])(io.BytesIO()), "$"),
        ("member not npy", _raw_zip({"header.npy": b"not an array", "agent_id.npy": b"", "edge_agent.npy": b"",
                                      "edge_pool.npy": b"", "edge_utility.npy": b""}), "header"),
        ("wrong version", _with(header=_header(version=2)), "header.version"),
        ("wrong format", _with(header=_header(format="laissez-opt/instance")), "header.format"),
        ("header not json", _with(header=np.frombuffer(b"{nope", np.uint8)), "header"),
        ("header NaN", _with(header=np.frombuffer(b'{"format": NaN}', np.uint8)), "header.format"),
        ("header unknown key", _with(header=_header(colour=1)), "header.colour"),
        ("header pool count 0", _with(header=_header(pools=[{"id": "A10", "count": 0}, {"id": "L4"}])),
         "header.pools[0].count"),
        ("header duplicate pool", _with(header=_header(pools=[{"id": "A10"}, {"id": "A10"}])), "header.pools[1].id"),
        ("header rounds 0", _with(header=_header(rounds=0)), "header.rounds"),
        ("missing array", _with(edge_utility=None), "edge_utility"),
        ("missing mask", _with(edge_bid_given=None), "edge_bid_given"),
        ("unknown array", _with(colour=np.zeros(3)), "colour"),
        ("float32 utility", _with(edge_utility=utility.astype(np.float32)), "edge_utility"),
        ("float codes", _with(edge_agent=arrays["edge_agent"].astype(np.float64)), "edge_agent"),
        ("int ids", _with(agent_id=np.arange(4)), "agent_id"),
        ("2-D utility", _with(edge_utility=utility[:, None]), "edge_utility"),
        ("short pool codes", _with(edge_pool=arrays["edge_pool"][:-1]), "edge_pool"),
        ("pickled objects", _with(edge_utility=np.array([0.5] * n_edges, dtype=object)), "edge_utility"),
        ("pickled header", _with(header=np.array([{"format": BINARY_FORMAT}], dtype=object)), "header"),
        ("NaN utility", _with(edge_utility=np.where(np.arange(n_edges) == 1, np.nan, utility)), "edge_utility[1]"),
        ("inf weight", _with(agent_weight=np.array([1.0, np.inf])), "agent_weight[1]"),
        ("zero weight", _with(agent_weight=np.array([0.0, 1.0])), "agent_weight[0]"),
        ("negative utility", _with(edge_utility=-utility), "edge_utility[0]"),
        ("huge bid", _with(edge_bid=np.full(n_edges, 1e10)), "edge_bid[0]"),
        ("agent code out of range", _with(edge_agent=np.full(n_edges, 7, np.int32)), "edge_agent[0]"),
        ("negative pool code", _with(edge_pool=np.full(n_edges, -1, np.int64)), "edge_pool[0]"),
        ("repeated edge", _with(edge_agent=np.zeros(n_edges, np.int32), edge_pool=np.zeros(n_edges, np.int32)),
         "edges[1]"),
        ("repeated agent id", _with(agent_id=np.frombuffer("A\udcffA\udcff".encode("utf-8", "surrogateescape"),
                                                           np.uint8)), "agent_id[1]"),
        ("padded agent id", _with(agent_id=np.frombuffer(b"A \xffB\xff", np.uint8)), "agent_id[0]"),
        ("empty agent id", _with(agent_id=np.frombuffer(b"\xffB\xff", np.uint8)), "agent_id[0]"),
        ("invalid utf-8 id", _with(agent_id=np.frombuffer(b"\xc3\xffB\xff", np.uint8)), "agent_id[0]"),
        ("unterminated ids", _with(agent_id=np.frombuffer(b"A\xffB", np.uint8)), "agent_id"),
        ("no agents", _with(agent_id=np.zeros(0, np.uint8)), "agent_id"),
        ("arrival past horizon", _with(agent_arrival=np.array([0, 2], np.int32)), "agent_arrival[1]"),
        ("deadline before arrival", _with(agent_arrival=np.array([1, 0], np.int32), agent_deadline=np.array([0, 0])),
         "agent_deadline[0]"),
        ("demand too large", _with(agent_demand=np.array([2, 2**40])), "agent_demand[1]"),
        ("arrivals wrong length", _with(agent_arrivals=np.ones((1, 3))), "agent_arrivals"),
        ("arrivals rows repeated", _with(agent_arrivals_rows=np.array([0, 0]), agent_arrivals=np.ones((2, 2))),
         "agent_arrivals_rows[1]"),
        ("per-round round-0 mismatch", _with(edge_utility_rounds=np.array([[0.1, 0.8]])), "edge_utility[0]"),
        ("per-round NaN", _with(edge_utility_rounds=np.array([[0.9, np.nan]])), "edge_utility_rounds[0, 1]"),
        ("task repeated kind", _with(agent_task_offsets=np.array([0, 2]),
                                     agent_task_kind=np.frombuffer(b"cpu\xffcpu\xff", np.uint8),
                                     agent_task_amount=np.array([1.0, 2.0])), "agent_task_kind[1]"),
        ("task all zero", _with(agent_task_amount=np.array([0.0])), "agent_task_rows[0]"),
        ("task offsets", _with(agent_task_offsets=np.array([0, 3])), "agent_task_offsets"),
        ("task part missing", _with(agent_task_amount=None), "agent_task_amount"),
    ]


BAD = _bad_cases()


def test_the_valid_base_reads():
    inst = instance_from_npz(_valid(), "ok.npz")
    assert inst.n_edges == 4 and inst.agents[0].task == (("accelerator", 1.0),)


@pytest.mark.parametrize("label,content,where", BAD, ids=[case[0] for case in BAD])
def test_bad_files_get_one_line_naming_file_and_array(tmp_path, label, content, where):
    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        load_instance(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: {where}: "), message
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2, (label, result.output)
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output


def test_masked_out_values_are_ignored():
    arrays = _arrays(_valid())
    bid = arrays["edge_bid"].copy()
    bid[~arrays["edge_bid_given"]] = np.nan
    inst = instance_from_npz(_with(edge_bid=bid), "x.npz")
    assert [e.bid for e in inst.edges] == [0.7, None, None, 0.1]


def test_an_oversized_archive_is_refused(monkeypatch):
    from laissez_opt.io import binary

    monkeypatch.setattr(binary, "MAX_INPUT_BYTES", 100)
    with pytest.raises(InputError, match="more than the 100 accepted"):
        instance_from_npz(_valid(), "x.npz")


# ------------------------------------------------------------------------------------------- command line

def test_convert_generate_solve_check_and_compare_accept_the_binary_form(tmp_path):
    runner = CliRunner()
    npz, json_path, back = tmp_path / "g.npz", tmp_path / "g.json", tmp_path / "back.npz"
    made = runner.invoke(cli, ["generate", "-f", "gavel", "-n", "12", "-m", "4", "-o", str(npz)])
    assert made.exit_code == 0, made.output
    assert npz.read_bytes()[:2] == b"PK"
    assert runner.invoke(cli, ["convert", str(npz), str(json_path)]).exit_code == 0
    assert runner.invoke(cli, ["convert", str(json_path), str(back), "--compressed"]).exit_code == 0
    assert dumps_instance(load_instance(back)) == json_path.read_text(encoding="utf-8")
    refused = runner.invoke(cli, ["convert", str(npz), str(npz)])
    assert refused.exit_code == 2 and "also an input" in refused.output
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 nothing else")
    refused = runner.invoke(cli, ["convert", str(bad), str(tmp_path / "out.json")])
    assert refused.exit_code == 2 and refused.output.count("\n") == 1 and not (tmp_path / "out.json").exists()
    results = {}
    for path in (npz, json_path):
        out = tmp_path / f"{path.suffix[1:]}-result.json"
        solved = runner.invoke(cli, ["solve", str(path), "--method", "welfare", "-o", str(out)])
        assert solved.exit_code == 0, solved.output
        results[path.suffix] = json.loads(out.read_text())
        checked = runner.invoke(cli, ["check", str(path), str(out)])
        assert checked.exit_code == 0, checked.output
    assert results[".npz"]["objective"] == results[".json"]["objective"]
    assert results[".npz"]["allocation"] == results[".json"]["allocation"]
    table = lo.compare([str(npz), str(json_path)], ["welfare", "greedy"], progress=False)
    hashes = {row["instance_hash"] for row in table.rows}
    assert len(hashes) == 1  # the run-store hash is of the canonical content, whatever the form


def test_simulate_reads_an_instance_file_in_the_binary_form(tmp_path):
    from laissez_opt.simulate.config import config_from_dict
    from laissez_opt.simulate.engine import prepare, run
    from laissez_opt.simulate.policies import resolve

    source = INSTANCES / "thesis-r1-fair-vs-efficient.json"
    save_instance(load_instance(source), tmp_path / "r1.npz")
    records = {}
    for path in (source, tmp_path / "r1.npz"):
        config = config_from_dict({"format": "laissez-opt/simulation", "version": 1, "instance": str(path),
                                   "balancer": "pooled", "workload": {"arrivals": "instance"},
                                   "policies": ["time_equal"]})
        record = run(prepare(config, seed=0), resolve("time_equal", {}).build(), seed=0)
        records[path.suffix] = (record.rounds, record.agents)
    assert records[".npz"] == records[".json"]


def test_unknown_ids_and_params_keep_their_own_errors_with_npz_names(tmp_path):
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "missing.npz")])
    assert result.exit_code == 2 and "file not found" in result.output
    assert ids is not None and positive is not None and Edge is not None  # strategies shared with test_roundtrip


def test_certify_and_frontier_give_the_same_answers_on_both_forms(tmp_path):
    from laissez_opt.analysis.rational import exact_instance

    source = INSTANCES / "hotos25-section5-bids.json"
    npz = tmp_path / "bids.npz"
    save_instance(load_instance(source), npz)
    from_json, from_npz = exact_instance(load_instance(source)), exact_instance(load_instance(npz))
    assert (from_json.origin, from_npz.origin) == ("file", "repr")
    for name in ("weights", "counts", "base_prices", "utility", "bids", "work", "elapsed", "round_hours"):
        assert getattr(from_json, name) == getattr(from_npz, name), name  # canonical decimals are the floats' repr
    runner = CliRunner()
    result = tmp_path / "result.json"
    assert runner.invoke(cli, ["solve", str(npz), "--method", "welfare", "-o", str(result)]).exit_code == 0
    outputs = {}
    for path in (source, npz):
        proven = runner.invoke(cli, ["certify", str(path), str(result), "--json"])
        assert proven.exit_code == 0, proven.output
        out = tmp_path / f"frontier-{path.suffix[1:]}"
        traced = runner.invoke(cli, ["frontier", str(path), "-o", str(out), "--no-plot", "--methods", "greedy"])
        assert traced.exit_code == 0, traced.output
        report = json.loads((out / "frontier.json").read_text())
        certificate = json.loads(proven.output)
        assert certificate["proven"], certificate
        curve = {k: v for k, v in report["frontier"].items() if k != "seconds"}
        outputs[path.suffix] = (certificate["exact"], certificate["lps"], curve, report["max_level"])
    assert outputs[".npz"] == outputs[".json"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bids=st.lists(st.one_of(st.none(), st.floats(0.0, 5.0)), min_size=1, max_size=6), rounds=st.integers(1, 3))
def test_bid_views_agree_with_the_records_on_every_reading_path(bids, rounds, tmp_path_factory):
    """``edge_bid`` / ``edge_bid_given`` as the records define them, whether the instance came from
    records, a JSON file, a binary file or columns (vcg and the verifier read the views, not the records)."""
    from laissez_opt.io.columns import instance_from_columns

    edges = [Edge(f"a{k}", "P", tuple(float(k + r) for r in range(rounds)) if rounds > 1 else float(k), bid=b)
             for k, b in enumerate(bids)]
    inst = Instance([Pool("P", count=2)], [Agent(f"a{k}") for k in range(len(bids))], edges, rounds=rounds)
    expected_given = np.array([b is not None for b in bids])
    expected_bid = np.array([b if b is not None else e.utility_in(0) for b, e in zip(bids, edges)])
    folder = tmp_path_factory.mktemp("bids")
    save_instance(inst, folder / "i.json")
    save_instance(inst, folder / "i.npz")
    for loaded in (inst, load_instance(folder / "i.json"), load_instance(folder / "i.npz")):
        assert loaded.edge_bid_given.tolist() == expected_given.tolist()
        assert loaded.edge_bid.tolist() == pytest.approx(expected_bid.tolist())
    if all(b is None for b in bids) or all(b is not None for b in bids):
        every = None if bids[0] is None else np.array(bids, dtype=float)
        utility = np.array([e.utility if rounds > 1 else (e.utility,) for e in edges], dtype=float)
        columns = instance_from_columns([Pool("P", count=2)], [f"a{k}" for k in range(len(bids))],
                                        np.arange(len(bids)), np.zeros(len(bids), dtype=np.int64),
                                        utility if rounds > 1 else utility[:, 0], bid=every, rounds=rounds)
        assert columns.edge_bid_given.tolist() == expected_given.tolist()
        assert columns.edge_bid.tolist() == pytest.approx(expected_bid.tolist())
        assert [e.bid for e in columns.edges] == bids  # and the records agree with the views
