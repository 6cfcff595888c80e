"""The Dask executor: a lost worker and a run over its memory cap are error rows, as with local workers."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from laissez_opt.harness import compare
from laissez_opt.methods import METHODS

from .conftest import INSTANCES, PLUGIN, wait_for

pytest.importorskip("distributed")


def test_dask_lost_worker_and_memory_cap_are_error_rows(tmp_path, markers, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(PLUGIN))  # the Dask worker processes register the test methods too
    monkeypatch.setenv("LAISSEZ_FAULT_MARKERS", str(markers))
    monkeypatch.setenv("LAISSEZ_FAULT_METHODS", "1")
    monkeypatch.syspath_prepend(str(PLUGIN))
    import fault_methods

    for spec in fault_methods.METHODS:
        monkeypatch.setitem(METHODS, spec.name, spec)
    killed = []

    def kill_the_stalled_run():
        marker = wait_for(lambda: [p for p in markers.glob("fault_stall.*") if not p.name.endswith(".tmp")],
                          what="the stalled run")[0]
        killed.append(int(marker.read_text()))
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_stalled_run, daemon=True)
    killer.start()
    table = compare([INSTANCES / "hotos25-table1.json"], ["welfare", "fault_stall", "fault_hog"], executor="dask",
                    workers=2, run_memory="200MiB", run_time=None, store=tmp_path / "runs")
    killer.join(timeout=5)
    rows = {row["method"]: row for row in table.rows}
    assert rows["welfare"]["status"] == "optimal"
    assert rows["fault_stall"]["status"] == "error"
    assert rows["fault_stall"]["error_kind"] == "worker_died", rows["fault_stall"]["message"]
    assert "worker process died while running fault_stall on hotos25-table1" in rows["fault_stall"]["message"]
    assert rows["fault_hog"]["error_kind"] == "memory_cap"
    assert rows["fault_hog"]["message"].startswith("run memory cap of 200.0 MiB exceeded")
    assert len(list((tmp_path / "runs").glob("*.json"))) == 1  # failures are not cached
