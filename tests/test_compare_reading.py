"""compare with several files and local workers: the workers read and check the files side by side.

Every file is read and checked before the first run (a bad file is the same
error as when this process reads it, and nothing runs); the worker that read a
file keeps it for its runs; a read whose worker failed is done again here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import laissez_opt as lo
from laissez_opt.harness import compare
from laissez_opt.harness.executors import WAIT, Failure, ListFeed
from laissez_opt.io import load_instance, save_instance
from laissez_opt.io.digest import instance_digest

compare_module = importlib.import_module("laissez_opt.harness.compare")


def _files(tmp_path: Path, count: int = 3) -> list[str]:
    paths = []
    for seed in range(count):
        path = tmp_path / f"inst-{seed}.json"
        save_instance(lo.generate("uniform", 6 + seed, 3, seed=seed), path)
        paths.append(str(path))
    return paths


def _summary(table) -> list[tuple]:
    return [(r["instance"], r["method"], r["status"], round(r["objective"], 9), r["instance_hash"]) for r in table.rows]


def test_two_workers_read_the_files_and_give_the_rows_of_one(tmp_path, monkeypatch):
    paths = _files(tmp_path)
    one = compare(paths, ["welfare", "greedy"], workers=1)
    # With two workers this process reads no file: a reader that fails here changes nothing.
    monkeypatch.setattr(compare_module, "load_instance", lambda *a, **k: pytest.fail("read in the parent"))
    two = compare(paths, ["welfare", "greedy"], workers=2)
    assert _summary(two) == _summary(one)
    assert [r["source"] for r in two.rows] == [r["source"] for r in one.rows]


def test_a_bad_file_among_several_is_the_same_error_and_nothing_runs(tmp_path):
    paths = _files(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "P", "count": -1}], '
                   '"agents": [], "edges": []}')
    worse = tmp_path / "worse.json"
    worse.write_text("{ not json")
    given = [paths[0], str(bad), paths[1], str(worse)]
    errors = []
    for workers in (1, 2):
        store = tmp_path / f"runs-{workers}"
        with pytest.raises(lo.InputError) as caught:
            compare(given, ["welfare"], workers=workers, store=store)
        errors.append(str(caught.value))
        assert not store.exists() or not any(store.iterdir())  # no run started
    assert errors[0] == errors[1]
    assert errors[0].startswith(f"{bad}: $.")  # the first bad file in the order given, not the worse one after it


def test_a_read_whose_worker_failed_is_done_here_and_errors_keep_their_order(tmp_path):
    paths = _files(tmp_path, 2)
    stream = iter([({"read": paths[1]}, Failure("worker_died", "gone")),
                   ({"read": paths[0]}, Failure("time_cap", "slow"))])
    loaded = compare_module._read_in_workers(stream, list(paths))
    assert [entry.source for entry in loaded] == paths
    assert [entry.affinity for entry in loaded] == paths
    assert loaded[0].digest == instance_digest(load_instance(paths[0]))
    stream = iter([({"read": paths[1]}, {"error": ("second", paths[1], "$.pools")}),
                   ({"read": paths[0]}, {"error": ("first", paths[0], "$.agents")})])
    with pytest.raises(lo.InputError) as caught:
        compare_module._read_in_workers(stream, list(paths))
    assert str(caught.value) == f"{paths[0]}: $.agents: first"


def test_the_phased_feed_gives_the_reads_then_waits_then_the_runs():
    feed = compare_module._PhasedFeed([{"read": "a"}, {"read": "b"}], runs_bound=6)
    assert len(feed) == 8 and feed.poll_interval == 0
    assert feed.take()["read"] == "a"
    assert feed.take(lambda task: 0)["read"] == "b"
    assert feed.take() is WAIT and feed.take() is WAIT
    feed.runs = ListFeed([{"method": "x"}, {"method": "y"}])
    assert len(feed) == 2
    assert feed.take(lambda task: task["method"] == "x")["method"] == "y"
    assert feed.take()["method"] == "x"
    assert feed.take() is None
