"""Fault injection on outputs: ``solve -o`` and ``--write-model`` killed at random points.

Each run is killed with SIGKILL (no cleanup possible) or SIGTERM (the command
unwinds) at a random moment between its start and its natural end.  After every
kill the target holds either its old content or the complete new one, never a
part; the next successful run removes any temporary file a killed writer left,
and no process of the run survives it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import laissez_opt as lo

OLD = "old content\n"


#: Sizes that make each command run about a second: long enough to be killed mid-way.
SIZES = {"output": (4000, 50), "write_model": (600, 20)}


@pytest.fixture(scope="module")
def instances(tmp_path_factory):
    folder = tmp_path_factory.mktemp("faults")
    paths = {}
    for kind, (agents, pools) in SIZES.items():
        paths[kind] = folder / f"{kind}.json"
        lo.save_instance(lo.generate("uniform", agents, pools, seed=4), paths[kind])
    return paths


def _command(kind: str, instance: Path, target: Path) -> list[str]:
    base = [sys.executable, "-m", "laissez_opt", "solve", str(instance)]
    return base + (["-o", str(target)] if kind == "output" else ["--write-model", str(target)])


def _natural_duration(command) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True, timeout=300)
    return time.perf_counter() - start


def _check_target(kind: str, target: Path) -> None:
    text = target.read_text()
    if text == OLD:
        return
    if kind == "output":
        data = json.loads(text)  # complete JSON, or this raises
        assert data["format"] == "laissez-opt/result" and data["status"] == "optimal"
    else:
        assert text.rstrip().endswith("end"), text[-200:]  # an LP file ends with "end"


def _descendants_alive(pid: int) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                alive.append(int(entry.name))
    return alive


@pytest.mark.parametrize("kind", ["output", "write_model"])
def test_killed_writers_leave_the_old_file_or_the_whole_new_one(tmp_path, instances, kind):
    target = tmp_path / ("result.json" if kind == "output" else "model.lp")
    command = _command(kind, instances[kind], target)
    target.write_text(OLD)
    duration = _natural_duration(command)
    rng = random.Random(7)
    for attempt in range(4):
        target.write_text(OLD)
        log = tmp_path / "stderr.txt"
        with open(log, "wb") as err:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        sig = signal.SIGKILL if attempt % 2 == 0 else signal.SIGTERM
        process.send_signal(sig)
        code = process.wait(timeout=60)
        # Finished (0), killed (-9, -15 before the handler is installed), unwound (130); a
        # KeyboardInterrupt that reaches the interpreter's top level ends it by SIGINT (-2).
        assert code in (0, -9, -15, 130, -2), (code, log.read_text()[-2000:])
        assert not _descendants_alive(process.pid)
        _check_target(kind, target)
        if sig == signal.SIGTERM and code == 130:  # it unwound: its temporary file is gone
            assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # A run to completion replaces the target and sweeps what killed writers left behind.
    subprocess.run(command, capture_output=True, check=True, timeout=300)
    _check_target(kind, target)
    assert target.read_text() != OLD
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")], sorted(os.listdir(tmp_path))
