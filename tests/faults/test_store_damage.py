"""A run store that lies: damaged records are reported (one warning naming the file) and recomputed."""

from __future__ import annotations

import json
import os
import warnings

import pytest

import laissez_opt as lo
from laissez_opt.harness import RunStore, RunStoreWarning, compare
from laissez_opt.harness.store import STORE_FORMAT

from .conftest import INSTANCES, ROOT, assert_store_sound, outcome_rows, run

TABLE1 = INSTANCES / "hotos25-table1.json"
R2 = INSTANCES / "thesis-r2-table3-1.json"
METHODS = ["welfare", "greedy"]


def _compare(store):
    return compare([TABLE1, R2], METHODS, store=store, executor="inline")


def _outcome(table):
    skip = {"runtime_s", "peak_rss_mib"}
    return sorted(sorted((k, repr(v)) for k, v in row.items() if k not in skip) for row in table.rows)


def _record(path) -> dict:
    return json.loads(path.read_text())


def _rewrite_row(change):
    def damage(path):
        record = _record(path)
        change(record["row"])
        path.write_text(json.dumps(record))
    return damage


def _rewrite_record(change):
    def damage(path):
        record = _record(path)
        change(record)
        path.write_text(json.dumps(record))
    return damage


DAMAGE = {
    "binary": lambda p: p.write_bytes(bytes(range(256)) * 4),
    "empty": lambda p: p.write_bytes(b""),
    "list": lambda p: p.write_text("[]"),
    "empty object": lambda p: p.write_text("{}"),
    "truncated": lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]),
    "missing status": _rewrite_row(lambda row: row.pop("status")),
    "missing value": _rewrite_row(lambda row: row.pop("value_weighted_welfare")),
    "objective as text": _rewrite_row(lambda row: row.update(objective="7.68")),
    "count as float": _rewrite_row(lambda row: row.update(agents=2.5)),
    "error row": _rewrite_row(lambda row: row.update(status="error")),
    "another method": _rewrite_row(lambda row: row.update(method="greedy" if row["method"] != "greedy" else "welfare")),
    "older store format": _rewrite_record(lambda record: record.update(store_version=STORE_FORMAT - 1)),
    "another key": _rewrite_record(lambda record: record.update(key="0" * 40)),
    "row is a list": _rewrite_record(lambda record: record.update(row=[1, 2])),
    "NaN literal": lambda p: p.write_text(p.read_text().replace('"status"', '"x": NaNx, "status"', 1)),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_record_is_reported_once_and_recomputed(tmp_path, kind):
    store = tmp_path / "runs"
    first = _compare(store)
    victim = sorted(store.glob("*.json"))[0]
    DAMAGE[kind](victim)
    with pytest.warns(RunStoreWarning) as caught:
        again = _compare(store)
    messages = [str(w.message) for w in caught if issubclass(w.category, RunStoreWarning)]
    assert len(messages) == 1, messages
    assert str(victim) in messages[0] and "damaged record" in messages[0] and "recomputed" in messages[0]
    assert (again.computed, again.reused) == (1, 3)
    assert _outcome(again) == _outcome(first)
    assert assert_store_sound(store, finished=True) == 4  # rewritten whole


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_record_that_is_not_a_file(tmp_path, kind):
    store = tmp_path / "runs"
    first = _compare(store)
    victim = sorted(store.glob("*.json"))[0]
    victim.unlink()
    if kind == "directory":
        victim.mkdir()
    else:
        os.mkfifo(victim)  # reading it must not block the comparison
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = _compare(store)
    messages = [str(w.message) for w in caught if issubclass(w.category, RunStoreWarning)]
    assert messages and all(str(victim) in m for m in messages)
    assert (again.computed, again.reused) == (1, 3)
    assert _outcome(again) == _outcome(first)


def test_command_line_warns_in_one_line_and_finishes(tmp_path):
    out = tmp_path / "out"
    args = ["compare", TABLE1, R2, "--methods", ",".join(METHODS), "--workers", "1", "--no-plots", "-o", out]
    assert run(args, tmp_path).returncode == 0
    expected = outcome_rows(out / "results.csv")
    victim = sorted((out / "runs").glob("*.json"))[1]
    victim.write_text("[]")
    again = run(args, tmp_path)
    assert again.returncode == 0, again.stderr
    warned = [line for line in again.stderr.splitlines() if "warning" in line]
    assert warned == [f"laissez-opt: warning: run store: {victim}: damaged record (holds a JSON list, "
                      "not a record object); the run is recomputed"]
    assert "1 runs computed, 3 reused" in again.stderr
    assert outcome_rows(out / "results.csv") == expected


def test_a_store_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "runs").write_text("not a directory")
    done = run(["compare", TABLE1, "--methods", "greedy", "--store", tmp_path / "runs", "-o", tmp_path / "out"], tmp_path)
    assert done.returncode == 2
    assert str(tmp_path / "runs") in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(lo.InputError, match="run store is not a directory"):
        compare([TABLE1], ["greedy"], store=tmp_path / "runs", executor="inline")


def test_records_hold_no_path_of_this_machine(tmp_path):
    copy = tmp_path / "instance.json"
    copy.write_text(TABLE1.read_text())
    compare([copy, lo.generate("uniform", 4, 2, seed=1)], ["welfare", "greedy"], store=tmp_path / "runs", executor="inline")
    for path in (tmp_path / "runs").glob("*.json"):
        text = path.read_text()
        assert str(tmp_path) not in text and str(ROOT) not in text and "instance.json" not in text


def test_a_new_library_version_does_not_reuse_old_records(tmp_path, monkeypatch):
    store = tmp_path / "runs"
    assert _compare(store).computed == 4
    assert _compare(store).computed == 0
    monkeypatch.setattr("laissez_opt.harness.store.library_version", lambda: "999.0.0")
    assert _compare(store).computed == 4
    assert len(RunStore(store).keys()) == 8


def test_a_dead_writers_temporary_file_goes_when_its_key_is_written_again(tmp_path):
    store = tmp_path / "runs"
    _compare(store)
    runs = RunStore(store)
    key = runs.keys()[0]
    row = json.loads((store / f"{key}.json").read_text())["row"]
    dead = store / f".{key}.999999999.0badf00d.tmp"  # above any process id Linux hands out
    live = store / f".{key}.{os.getppid()}.0badf00d.tmp"  # a live writer may still rename its file
    dead.write_text("{")
    live.write_text("{")
    runs.put(key, row)
    assert not dead.exists() and live.exists()
    assert runs.keys() == RunStore(store).keys()
