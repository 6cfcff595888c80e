"""Smoke tests of the benchmark scripts: quick sizes run and their own checks pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "welfare_scaling.py"


def test_welfare_scaling_quick(tmp_path):
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--repeat", "1", "--min-time", "0", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "welfare_scaling.json").read_text())
    table = (out / "welfare_scaling.md").read_text()
    assert [s["size"] for s in report["sizes"]] == ["100x10", "1000x100"]
    assert report["machine"]["cpu_count"] >= 1 and report["machine"]["highspy"]
    for size in report["sizes"]:
        assert size["identical_lp"], size["size"]
        assert size["objectives_agree"], size["size"]
        ran = {key: row for key, row in size["routes"].items() if row["state"] == "ran"}
        # At the quick sizes every route runs; the assignment-only one does not apply.
        assert set(ran) == {"highs-direct", "highs-pyomo", "ortools-default", "ortools-glop", "hand-highspy", "lo.solve"}
        assert size["routes"]["scipy-lsa"]["state"] == "n/a"
        objectives = {row["objective"] for row in ran.values()}
        assert max(objectives) - min(objectives) <= 1e-7 * max(1.0, max(objectives))
        for row in ran.values():
            assert row["status"] == "optimal" and row["build"] >= 0 and row["solve"] >= 0 and row["total"] > 0
    assert "routes agree on every size: yes" in run.stdout
    assert "| 100x10 | HiGHS direct (default) |" in table
    assert "| 1000x100 | scipy linear_sum_assignment | n/a |" in table
    # Written atomically: no temporary file is left behind.
    assert sorted(p.name for p in out.iterdir()) == ["welfare_scaling.json", "welfare_scaling.md"]


def test_memory_estimates_quick(tmp_path):
    """The estimates of the quick cases are at least the measured peak memory (the script's own check)."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "memory_estimates.py"), "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = json.loads((out / "memory_estimates.json").read_text())["rows"]
    assert [r["method"] for r in rows] == ["welfare", "greedy", "mtf"]
    assert all(r["ratio"] is None or r["ratio"] >= 1.0 for r in rows)


def test_modelling_overhead_quick(tmp_path):
    """The modelling-API benchmark runs at its quick sizes and finds both declarations the same LP."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "modelling_overhead.py"), "--quick", "--repeat", "1",
         "--min-time", "0", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "modelling_overhead.json").read_text())
    assert [s["size"] for s in report["sizes"]] == ["100x10", "1000x100"]
    for size in report["sizes"]:
        assert size["identical_lp"]
        assert set(size["times_s"]) == {"internal", "public", "internal+highs", "public+highs"}
        assert all(t > 0 for t in size["times_s"].values())
    assert "| 1000x100 |" in (out / "modelling_overhead.md").read_text()
    assert "same LP on every size: yes" in run.stdout
    assert sorted(p.name for p in out.iterdir()) == ["modelling_overhead.json", "modelling_overhead.md"]


def test_declared_builtins_small(tmp_path):
    """The re-declared vcg and maxmin levels: the benchmark runs and finds the same optimum both ways."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "declared_builtins.py"), "--vcg", "100x10",
         "--maxmin", "64,64:caps", "--repeat", "3", "--min-time", "0", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "declared_builtins.json").read_text())
    assert [(r["model"], r["size"]) for r in report["rows"]] == [
        ("vcg", "100x10"), ("maxmin (fractional levels)", "64"), ("maxmin (fractional levels)", "64:caps")]
    assert all(r["same"] and r["internal"] > 0 and r["declared_only"] > 0 for r in report["rows"])
    assert "| vcg | 100x10 |" in (out / "declared_builtins.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["declared_builtins.json", "declared_builtins.md"]


def _run_quick(script: str, out: Path) -> subprocess.CompletedProcess:
    """Run ``benchmarks/SCRIPT --quick --out OUT``; it must exit 0."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run


def test_certify_scaling_quick(tmp_path):
    """``benchmarks/certify_scaling.py --quick``: every case proven, the reviewer's check agrees, files written."""
    out = tmp_path / "results"
    _run_quick("certify_scaling.py", out)
    report = json.loads((out / "certify_scaling.json").read_text())
    assert {(r["method"], r["size"]) for r in report["rows"]} >= {("welfare", "1000x100"), ("maxmin", "100x10")}
    assert all(r["proven"] and r["reviewer_ok"] for r in report["rows"])
    assert "Target (welfare at 1000 x 100 certified in under 10 s)" in (out / "certify_scaling.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["certify_scaling.json", "certify_scaling.md"]


def test_io_scaling_quick(tmp_path):
    """The I/O benchmark runs at its quick sizes: both reading paths give the same instance, results verify."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "io_scaling.py"), "--quick", "--repeat", "1",
         "--process-repeat", "0", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "io_scaling.json").read_text())
    assert [s["size"] for s in report["sizes"]] == ["100x10:dense", "1000x100"]
    assert all(s["same_instance"] and s["verified"] for s in report["sizes"])
    assert sorted(p.name for p in out.iterdir()) == ["io_scaling.json", "io_scaling.md"]


def test_io_binary_quick(tmp_path):
    """The binary-form reading benchmark runs at its quick sizes; both forms give the same instance."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "io_binary.py"), "--quick", "--repeat", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "io_binary.json").read_text())
    assert [s["size"] for s in report["sizes"]] == ["100x10:dense", "1000x10:dense"]
    assert all(s["same_instance"] and s["median_s"]["npz read + check"] > 0 for s in report["sizes"])
    assert "| 1000x10:dense | 10,000 |" in (out / "io_binary.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["io_binary.json", "io_binary.md"]


def test_generate_scaling_quick(tmp_path):
    """The generator benchmark runs at its quick sizes: the column route gives the reference's text."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "generate_scaling.py"), "--quick", "--repeat", "1",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "generate_scaling.json").read_text())
    assert report["meta"]["same_output"] is True
    assert {(r["family"], r["agents"]) for r in report["rows"]} == {
        (f, n) for f in ("uniform", "gavel", "neocloud", "gemmini") for n in (1000, 10000)}
    assert sorted(p.name for p in out.iterdir()) == ["generate_scaling.json", "generate_scaling.md"]


def test_envy_scaling_quick(tmp_path):
    """The envy benchmark runs at its quick sizes and both routes give the same figures."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "envy_scaling.py"), "--quick", "--repeat", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "envy_scaling.json").read_text())
    assert [r["agents"] for r in report["rows"]] == [100, 100, 300, 300, 1000, 1000]
    assert all(r["same"] for r in report["rows"])
    assert sorted(p.name for p in out.iterdir()) == ["envy_scaling.json", "envy_scaling.md"]


def test_verify_scaling_quick(tmp_path):
    """The verifier benchmark runs at its quick sizes: every result verifies and both verifiers agree."""
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "verify_scaling.py"), "--quick", "--repeat", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "verify_scaling.json").read_text())
    assert len(report["rows"]) == 3
    assert all(r["verified"] and r["same_verdict"] for r in report["rows"])
    assert "verify / solve" in (out / "verify_scaling.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["verify_scaling.json", "verify_scaling.md"]


def test_scaling_compare_quick(tmp_path):
    """``benchmarks/scaling_compare.py --quick``: one and two workers timed on the default routes, files written."""
    out = tmp_path / "results"
    _run_quick("scaling_compare.py", out)
    report = json.loads((out / "scaling_compare.json").read_text())
    assert report["tasks"] == 6 and report["solver"] is None
    assert report["one_worker_s"] > 0 and report["two_workers_s"] > 0
    assert 0 < report["cpu_efficiency_estimate"] and report["per_instance"]["payload_bytes"] > 0
    assert "solver default routes" in (out / "scaling_compare.md").read_text()


def test_partition_lp_routes_small(tmp_path):
    """``benchmarks/partition_lp_routes.py`` on a small split: every route solves the same level LP."""
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "partition_lp_routes.py"), "--sizes", "2000x50",
                          "--parts", "4", "--sample-parts", "1", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "partition_lp_routes.json").read_text())
    routes = {r["route"]: r for r in report["rows"]}
    assert len(routes) == 6 and routes["HiGHS ipm + crossover"]["status"] == "Optimal"
    for row in report["rows"]:
        if row["status"] == "Optimal":
            assert row["rel_diff"] < 1e-6, row
    assert {p["k"] for p in report["passes"]} == {4}
    assert (out / "partition_lp_routes.md").read_text().count("| 2000x50 |") == 6 + 6


def test_partition_part_sample_small(tmp_path):
    """``benchmarks/partition_part_sample.py`` on a small split: the face path and the plain one agree."""
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "partition_part_sample.py"), "--size", "4000x200",
                          "--parts", "8", "--sample", "3", "--compare-plain", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads((out / "partition_part_sample.json").read_text())
    summary, rows = report["summary"], report["rows"]
    assert summary["sampled"] == len(rows) == 3 and summary["k"] == 8
    assert all(r["status"] == "optimal" and r["lps"] >= 1 for r in rows)
    # The solver's share and the rest add up to the part's CPU.
    for r in rows:
        assert 0 <= r["ipm_cpu_s"] + r["simplex_cpu_s"] <= r["cpu_s"] + 1e-3
    assert summary["plain_max_rel_diff"] <= 1e-7
    assert sorted(p.name for p in out.iterdir()) == ["partition_part_sample.json", "partition_part_sample.md"]
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "partition_part_sample.py"), "--parts", "1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--parts" in bad.stderr
