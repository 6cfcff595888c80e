"""The every-model scaling benchmark: its quick mode, its exponent fit, its references and its coverage."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "scaling_models.py"


@pytest.fixture(scope="module")
def bench():
    """The script as a module (its sibling ``_common`` and benchmark modules importable)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("scaling_models", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["scaling_models"] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("scaling_models", None)
        sys.path.remove(str(SCRIPT.parent))


def test_fit_exponent_recovers_known_powers(bench):
    sizes = [1000, 2000, 4000, 8000, 16000]
    for power in (1.0, 2.0, 3.0):
        slope, floor, basis = bench.fit_exponent(sizes, [2e-9 * n ** power for n in sizes])
        assert slope == pytest.approx(power, abs=1e-9)
        above = [n for n in sizes if 2e-9 * n ** power >= bench.FLOOR_S]
        assert (floor, basis) == ((above[0], f"t >= {bench.FLOOR_S:g} s") if len(above) >= 3 else (sizes[-3], "last 3"))


def test_fit_exponent_ignores_fixed_costs_below_the_floor(bench):
    # t = 0.01 s fixed + c n^2: the small sizes (fixed cost dominates) must not bend the slope.
    sizes = [2 ** k for k in range(6, 19)]
    times = [0.01 + 1e-9 * n ** 2 for n in sizes]
    slope, floor, basis = bench.fit_exponent(sizes, times)
    assert basis.startswith("t >=") and floor >= 8192
    assert slope == pytest.approx(2.0, abs=0.15)
    # With too few points above the floor, the last three are used, and one point gives no fit.
    assert bench.fit_exponent([10, 20, 40], [1e-3, 2e-3, 4e-3])[2] == "last 3"
    assert bench.fit_exponent([10], [1.0])[0] is None


def test_every_builtin_method_is_covered(bench):
    assert bench.check_coverage() == []


def test_hand_references_agree_with_lo_solve(bench):
    import laissez_opt as lo

    inst = bench.uniform(300, 20)
    welfare = lo.solve(inst, "welfare").objective
    _, hand = bench.run_hand_highspy(inst)
    _, flow = bench.run_ortools_mcf(inst)
    assert hand == pytest.approx(welfare, rel=1e-7)
    assert flow == pytest.approx(welfare, rel=1e-5)  # utilities rounded to 1e-6 in the flow's integer costs
    small = bench.assignment(20)
    _, lsa = bench.run_scipy_lsa(small)
    assert lsa == pytest.approx(lo.solve(small, "welfare").objective)
    # One max-min level on utilities as given: the library's level without a normaliser.
    g = bench.gavel(64)
    _, level = bench.run_maxmin_lp(g)
    first = lo.solve(g, "maxmin", fractional=True, normalizer="raw")
    assert level == pytest.approx(min(first.utilities.values()), rel=1e-6)


def test_quick_run_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--models", "welfare,mtf", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "scaling_models.json").read_text())
    assert list(report["models"]) == ["welfare", "mtf"]
    welfare = report["models"]["welfare"]
    assert [p["size"] for p in welfare["points"]] == [64, 128, 256]
    for p in welfare["points"]:
        assert p["state"] == "finished" and p["status"] == "optimal" and p["seconds"] > 0
        assert set(p["references"]) == {"hand-highspy", "ortools-mcf"}
        assert all(r["state"] == "ran" for r in p["references"].values())
        assert p["references"]["hand-highspy"]["objective"] == pytest.approx(p["objective"], rel=1e-7)
    assert welfare["exponent"] is not None and np.isfinite(welfare["exponent"])
    assert welfare["wall"]["state"] == "cap"
    table = (out / "scaling_models.md").read_text()
    assert "| welfare | `welfare` | agents, uniform family, 100 pools | 64 .. 256 |" in table
    assert "edge-sort" in table
    assert (out / "scaling_models.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in out.iterdir()) == ["scaling_models.json", "scaling_models.md", "scaling_models.png"]


def test_a_point_over_the_limit_is_recorded_as_the_wall(tmp_path, bench):
    # migration at 8 jobs x 20 rounds does not close in 0.5 s: recorded, the sweep goes on to the report.
    row = bench.run_child("migration", 8, "solve", 0.5, timeout=120)
    assert row["state"] in {"wall", "no_solution"}
    assert bench._cause(row)


def test_an_instance_too_large_for_the_memory_cap_is_recorded_not_fatal(bench):
    # auction at 4,096 agents is a dense 4,096 x 8,192 matrix (3.4e7 edges, several GiB of arrays):
    # under a 1.5 GiB cap the child must report MemoryError as the wall, not die or take the machine.
    row = bench.run_child("auction", 4096, "solve", 10, timeout=180, memory=1500 * 2 ** 20)
    assert row["state"] == "out_of_memory", row
    assert "1.5 GiB" in row["cause"] and "building the instance" in row["cause"]
    assert bench._cause(row) == row["cause"]
    # The default cap is a share of the physical memory, and a small point runs under it.
    cap = bench.memory_cap()
    assert cap is None or 0 < cap < 2 ** 50
    assert bench.run_child("greedy", 256, "solve", 10, timeout=180)["state"] == "finished"


def test_a_merged_report_with_two_limits_names_both(tmp_path, bench):
    # Rows run with --limit 60 and (merged later) --limit 30: the header takes the limit most rows
    # used and names the other; each row's wall says its own limit; the plot draws both.
    def row(key, group, limit, seconds):
        point = {"size": 64, "state": "finished", "seconds": seconds, "status": "optimal", "references": {}}
        return {"key": key, "method": key, "options": {}, "axis": "agents", "limit_s": limit, "group": group,
                "note": "", "references": [], "points": [point], "exponent": None, "floor": None,
                "fit_basis": "too few points", "wall": {"size": 128, "state": "wall", "cause": "time limit"}}

    report = {"limit_s": 30.0, "machine": {"cpu_count": 2, "python": "3"}, "models": {
        "welfare": row("welfare", "exact", 60.0, 0.5), "vcg": row("vcg", "exact", 60.0, 0.7),
        "migration": row("migration", "multi-round", 30.0, 2.0)}}
    assert bench.row_limits(report) == [60.0, 30.0]
    text = bench.markdown(report)
    assert text.splitlines()[0] == "# Scaling of every model (limit 60 s per solve; 30 s where the row says so)"
    assert "128: time limit (limit 30 s)" in text and "128: time limit (limit 60 s)" in text
    bench.plot(report, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_fit_exponent_refuses_times_that_fall_with_size(bench):
    # An integral search that closes at once on the larger instance and slowly on the smaller
    # one (migration: 4 jobs 0.007 s, 8 jobs 7.3 s, 16 jobs 0.1 s) follows no growth law.
    slope, floor, basis = bench.fit_exponent([4, 8, 16], [0.007, 7.27, 0.099])
    assert slope is None and floor == 4
    assert basis == "not monotone: 7.27 s at 8, 0.099 s at 16"
    # A route change: 3.66 s at 32 (ordered outcomes), then a cheaper route growing as n^1.
    sizes = [32, 64, 128, 256, 512, 1024, 2048, 4096]
    times = [3.66] + [1e-4 * n for n in sizes[1:]]
    slope, floor, basis = bench.fit_exponent(sizes, times)
    assert slope == pytest.approx(1.0, abs=1e-9) and floor == 1024
    assert basis == "t >= 0.1 s; after a drop: 3.66 s at 32, 0.0064 s at 64"
    # Jitter below the floor is no drop.
    assert bench.fit_exponent([1, 2, 4, 8], [0.05, 0.01, 0.2, 0.4])[2] == "last 3"
    # Noise (a later time a little below an earlier one) keeps the fit.
    slope, _, basis = bench.fit_exponent([64, 128, 256, 512], [7.3, 19.8, 18.0, 23.3])
    assert slope is not None and basis.startswith("t >=")


def test_resume_goes_on_from_a_budget_wall_and_from_wall_re_measures(tmp_path):
    # A tiny budget stops welfare after its first quick size; --merge --resume finishes the sweep
    # from there, keeping the first point as it was.
    out = tmp_path / "results"
    base = [sys.executable, str(SCRIPT), "--quick", "--models", "welfare", "--out", str(out)]
    first = subprocess.run(base + ["--budget", "0.001"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    row = json.loads((out / "scaling_models.json").read_text())["models"]["welfare"]
    assert [p["size"] for p in row["points"]] == [64] and row["wall"] == {
        "size": 128, "state": "budget", "cause": "not run: the model's sweep budget of 0 s was spent"}
    kept = row["points"][0]
    again = subprocess.run(base + ["--merge", "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    row = json.loads((out / "scaling_models.json").read_text())["models"]["welfare"]
    assert [p["size"] for p in row["points"]] == [64, 128, 256] and row["points"][0] == kept
    assert row["wall"]["state"] == "cap" and row["exponent"] is not None
    # A finished sweep is left alone by --resume.
    third = subprocess.run(base + ["--merge", "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "kept as it is" in third.stdout
    assert json.loads((out / "scaling_models.json").read_text())["models"]["welfare"] == row
    # --from-wall re-measures from a wall of any kind (here a time limit at 256), keeping the points before it.
    report = json.loads((out / "scaling_models.json").read_text())
    walled = report["models"]["welfare"]
    walled["points"][-1] = {**walled["points"][-1], "state": "wall", "status": "time_limit"}
    walled["wall"] = {"size": 256, "state": "wall", "cause": "time limit: incumbent returned, gap n/a"}
    (out / "scaling_models.json").write_text(json.dumps(report))
    fourth = subprocess.run(base + ["--merge", "--from-wall"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert fourth.returncode == 0, fourth.stderr[-2000:]
    row4 = json.loads((out / "scaling_models.json").read_text())["models"]["welfare"]
    assert [p["size"] for p in row4["points"]] == [64, 128, 256] and row4["points"][:2] == row["points"][:2]
    assert row4["points"][2]["state"] == "finished" and row4["wall"]["state"] == "cap"
    # A sweep that reached its largest size has nothing to re-measure.
    fifth = subprocess.run(base + ["--merge", "--from-wall"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert fifth.returncode == 0 and json.loads((out / "scaling_models.json").read_text())["models"]["welfare"] == row4


def test_per_model_limits_are_parsed_and_checked(bench):
    assert bench.parse_limits("migration=30, maxmin_int=12.5,") == {"migration": 30.0, "maxmin_int": 12.5}
    assert bench.parse_limits("") == {}
    for bad in ("nosuch=30", "migration=0", "migration", "migration=abc"):
        with pytest.raises(ValueError, match="bad --limits entry"):
            bench.parse_limits(bad)
