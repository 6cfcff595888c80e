"""The exact welfare / max-min frontier (``lo.frontier``, ``laissez-opt frontier``).

Claims:

* the breakpoints are exact points of ``f``: ``f(0)`` is the welfare optimum,
  the last level is the fractional leximin's first level, slopes only fall
  (concavity), and a floating-point LP at any level between breakpoints gives
  the interpolated value;
* no allocation lies above the frontier (every placed method has gap >= 0);
* the command writes JSON, Markdown, CSV and a PNG, prints the tables, and
  plotting leaves pyplot alone.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.frontier import trace_frontier

from conftest import INSTANCES, run_cli, short_decimals, small_instances

R2 = INSTANCES / "thesis-r2-table3-1.json"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(utilities=short_decimals), st.floats(0.0, 1.0))
def test_breakpoints_are_exact_points_of_the_curve(inst, where):
    curve = trace_frontier(inst)
    assert curve.complete
    points = curve.breakpoints
    best = lo.solve(inst, "welfare", fractional=True).objective
    assert float(points[0][1]) == pytest.approx(best, rel=1e-9, abs=1e-9)
    first = lo.solve(inst, "maxmin", fractional=True).objective
    assert float(points[-1][0]) == pytest.approx(first, rel=1e-6, abs=1e-9)
    slopes = [(Fraction(w1) - w0) / (Fraction(t1) - t0) for (t0, w0), (t1, w1) in zip(points, points[1:])]
    assert all(a > b for a, b in zip(slopes, slopes[1:]))  # strictly falling: only true breakpoints kept
    level = float(points[-1][0]) * where
    value = lo.solve(inst, "fair_welfare", fractional=True, floor=level)
    # The float level may round above the exact last breakpoint; the curve is read at the exact point.
    exact = min(Fraction(level), Fraction(points[-1][0]))
    assert value.objective == pytest.approx(float(curve.welfare_at(exact)), rel=1e-7, abs=1e-7)


def test_methods_never_lie_above_the_frontier():
    report = lo.frontier(R2, integral=False)
    assert report.placements and "themis" in report.skipped  # R2 has three rounds
    for p in report.placements:
        assert p.gap is not None and p.gap >= 0, p.name
    by_name = {p.name: p for p in report.placements}
    # Both optima lie on the curve: welfare exactly, the leximin LP's floats within their last place.
    assert by_name["welfare"].gap == 0 and by_name["welfare"].on_frontier
    assert by_name["maxmin:fractional"].on_frontier and by_name["maxmin:fractional"].gap < Fraction(1, 10**14)
    levels = [Fraction(t) for t, _ in report.frontier.breakpoints]
    assert levels[-1] == Fraction(414, 317)  # the fractional leximin level of the thesis's Table 3.1 instance
    fair = {(row["notion"], row["mode"]): row for row in report.fair}
    assert fair[("max_min", "fractional")]["exact"] == "13248/1585"


def test_cli_writes_and_prints(tmp_path):
    out = tmp_path / "fr"
    run = run_cli("frontier", R2, "-o", out, "--methods", "welfare,mtf,maxmin:fractional")
    assert run.returncode == 0, run.stderr
    assert "| 1.30599 | 8.35836 | 414/317 | 13248/1585 |" in run.stdout
    assert sorted(p.name for p in out.iterdir()) == ["frontier.csv", "frontier.json", "frontier.md", "frontier.png"]
    data = json.loads((out / "frontier.json").read_text())
    assert data["welfare_optimum"] == "43/5" and [m["name"] for m in data["methods"]] == [
        "welfare", "mtf", "maxmin:fractional"]
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run_cli("frontier", R2, "-o", tmp_path / "x", "--methods", "welfar")
    assert bad.returncode == 2 and "did you mean 'welfare'" in bad.stderr


def test_plotting_leaves_pyplot_alone():
    import matplotlib

    backend = matplotlib.get_backend()
    inst = lo.load(INSTANCES / "uniform-small.json")
    figure = lo.frontier(inst, methods=["greedy"], integral=False).figure()
    assert figure.axes and matplotlib.get_backend() == backend
    assert "matplotlib.pyplot" not in sys.modules or sys.modules["matplotlib.pyplot"].get_fignums() == []
