"""The worked notebooks of docs/notebooks/ run from top to bottom (as `make notebooks` runs them for the site)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "site"))
import notebooks  # noqa: E402  (docs/site/notebooks.py)


@pytest.mark.parametrize("path", notebooks.NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_matches_its_stored_cells(path):
    import nbformat

    start = time.perf_counter()
    executed = notebooks.execute(path)  # raises CellExecutionError, naming the cell, on any error
    assert time.perf_counter() - start < 60
    stored = nbformat.read(path, as_version=4)
    assert [c.source for c in executed.cells] == [c.source for c in stored.cells]
    for fresh, kept in zip(executed.cells, stored.cells):
        if fresh.cell_type == "code":
            assert kept.outputs, f"{path.name}: a code cell has no stored output; run `make notebooks`"
            # What the cell shows (tables, plots, text); streams such as a first run's font-cache notice are not compared.
            def kinds(outs):
                return sorted({k for o in outs if o.output_type in ("execute_result", "display_data") for k in o.data})
            assert kinds(fresh.outputs) == kinds(kept.outputs), f"{path.name}: outputs changed; run `make notebooks`"
            assert not any(o.output_type == "stream" and o.name == "stderr" for o in kept.outputs), path.name


def test_there_are_three_worked_notebooks():
    assert [p.stem for p in notebooks.NOTEBOOKS] == ["fairness", "first-solve", "heuristics-vs-exact"]
