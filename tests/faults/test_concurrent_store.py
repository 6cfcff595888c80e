"""Two comparisons on one run store compute each run once; claims of dead owners are taken over."""

from __future__ import annotations

import json
import re
import time

import laissez_opt as lo
from laissez_opt.harness import RunStore

from .conftest import (INSTANCES, assert_group_gone, assert_store_sound, communicate_or_dump, outcome_rows, run, start,
                       wait_for)


def _files(tmp_path, count: int) -> list:
    files = [INSTANCES / "hotos25-table1.json", INSTANCES / "thesis-r2-table3-1.json"]
    for seed in range(count - 2):
        path = tmp_path / f"uniform-{seed}.json"
        lo.save_instance(lo.generate("uniform", 5, 3, seed=100 + seed), path)
        files.append(path)
    return files


def _counts(stderr: str) -> tuple[int, int]:
    match = re.search(r"(\d+) runs computed, (\d+) reused", stderr)
    assert match, stderr
    return int(match.group(1)), int(match.group(2))


def test_two_comparisons_on_one_store_compute_each_run_once(tmp_path):
    files = _files(tmp_path, 6)
    store = tmp_path / "shared"
    base = ["compare", *files, "--methods", "greedy,mtf", "-p", "mtf.episodes=8000", "--workers", "1",
            "--no-plots", "--store", store]
    first = start(base + ["-o", tmp_path / "a"], tmp_path)
    second = start(base + ["-o", tmp_path / "b"], tmp_path)
    results = [proc.communicate(timeout=120) for proc in (first, second)]
    for proc, (_, err) in zip((first, second), results):
        assert proc.returncode == 0, err
        assert_group_gone(proc.pid)
    counts = [_counts(err) for _, err in results]
    runs = 6 * 3  # greedy, mtf and the welfare reference on six instances
    assert sum(computed for computed, _ in counts) == runs, counts
    assert all(computed + reused == runs for computed, reused in counts)
    assert min(computed for computed, _ in counts) > 0, "the second comparison did not share the work"
    assert outcome_rows(tmp_path / "a" / "results.csv") == outcome_rows(tmp_path / "b" / "results.csv")
    assert assert_store_sound(store, finished=True) == runs


def test_a_held_claim_is_waited_for_and_a_dead_owners_claim_is_taken_over(tmp_path):
    files = _files(tmp_path, 2)
    store_dir = tmp_path / "runs"
    args = ["compare", *files, "--methods", "greedy", "--workers", "1", "--no-plots", "--store", store_dir,
            "-o", tmp_path / "out"]
    done = run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    store = RunStore(store_dir)
    keys = store.keys()
    for key in keys:
        (store_dir / f"{key}.json").unlink()
    # One claim left by a comparison that was killed (its lock died with it), one held by a live process.
    stale, held = keys[0], keys[1]
    store.claim_path(stale).write_text(json.dumps({"pid": 2**22 + 12345, "host": "elsewhere", "claimed": 0}))
    (store_dir / f".{stale}.999.dead.tmp").write_text('{"format": "laissez-opt/run", "ro')  # its half-written record
    claim = store.try_claim(held)
    assert claim is not None
    proc = start(args, tmp_path)
    wait_for(lambda: (store_dir / f"{stale}.json").exists() and len(store.keys()) == len(keys) - 1,
             what="every unclaimed run to finish")
    time.sleep(0.5)
    assert proc.poll() is None, "the comparison did not wait for the run another process holds"
    store.release(claim)  # the other process gave up without a result: the comparison takes the run
    _, err = communicate_or_dump(proc, 60)
    assert proc.returncode == 0, err
    assert_group_gone(proc.pid)
    assert _counts(err) == (len(keys), 0)
    assert assert_store_sound(store_dir, finished=True) == len(keys)


def test_leftovers_of_dead_comparisons_are_swept_and_live_claims_are_left_alone(tmp_path):
    from laissez_opt.harness import compare

    store = RunStore(tmp_path / "runs")
    dead, live = "a" * 40, "b" * 40  # runs of other comparisons, not of this one
    store.claim_path(dead).write_text(json.dumps({"pid": 1, "host": "elsewhere", "claimed": 0}))
    (tmp_path / "runs" / f".{dead}.4242.0a0b.tmp").write_text("{")
    held = store.try_claim(live)
    try:
        compare([INSTANCES / "hotos25-table1.json"], ["greedy"], store=tmp_path / "runs", executor="inline")
        assert store.claims() == [live]
        assert not list((tmp_path / "runs").glob(".*.tmp"))
    finally:
        store.release(held)
    assert store.claims() == []
