"""Installation: the pinned solver libraries load together, versions match the pins, data ships."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata, resources

import pytest

from conftest import ROOT

HIGHSPY = """
import highspy, numpy as np
h = highspy.Highs()
h.setOptionValue("output_flag", False)
x = h.addVariable(lb=0, ub=4)
y = h.addVariable(lb=0, ub=4)
h.addConstr(x + y <= 5)
h.maximize(2 * x + 3 * y)
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
assert abs(h.getInfo().objective_function_value - 14.0) < 1e-9, h.getInfo().objective_function_value
print("highspy", highspy.Highs().version() if hasattr(highspy.Highs(), "version") else "ok")
"""

ORTOOLS = """
from ortools.linear_solver import pywraplp
from ortools.graph.python import min_cost_flow
from ortools.sat.python import cp_model

s = pywraplp.Solver.CreateSolver("GLOP")
x, y = s.NumVar(0, 4, "x"), s.NumVar(0, 4, "y")
s.Add(x + y <= 5)
s.Maximize(2 * x + 3 * y)
assert s.Solve() == s.OPTIMAL and abs(s.Objective().Value() - 14.0) < 1e-9

scip = pywraplp.Solver.CreateSolver("SCIP")
a, b = scip.IntVar(0, 1, "a"), scip.IntVar(0, 1, "b")
scip.Add(2 * a + 2 * b <= 3)
scip.Maximize(a + 2 * b)
assert scip.Solve() == scip.OPTIMAL and abs(scip.Objective().Value() - 2.0) < 1e-9

flow = min_cost_flow.SimpleMinCostFlow()
flow.add_arc_with_capacity_and_unit_cost(0, 1, 2, 1)
flow.add_arc_with_capacity_and_unit_cost(0, 2, 2, 3)
flow.add_arc_with_capacity_and_unit_cost(1, 3, 1, 0)
flow.add_arc_with_capacity_and_unit_cost(2, 3, 2, 0)
flow.set_node_supply(0, 3)
flow.set_node_supply(3, -3)
assert flow.solve() == flow.OPTIMAL and flow.optimal_cost() == 1 + 2 * 3

m = cp_model.CpModel()
u, v = m.new_int_var(0, 10, "u"), m.new_int_var(0, 10, "v")
m.add(u + 2 * v <= 14)
m.add(3 * u - v >= 0)
m.maximize(3 * u + 4 * v)
solver = cp_model.CpSolver()
assert solver.solve(m) == cp_model.OPTIMAL and solver.objective_value == 3 * 10 + 4 * 2
print("ortools ok")
"""


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("order", ["highspy-first", "ortools-first"])
def test_highspy_and_ortools_in_one_process(order):
    code = HIGHSPY + ORTOOLS if order == "highspy-first" else ORTOOLS + HIGHSPY
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ortools ok" in proc.stdout and "highspy" in proc.stdout


def test_the_library_uses_both_in_one_process():
    proc = _python(
        "import laissez_opt as lo, pathlib\n"
        f"inst = lo.load(pathlib.Path({str(ROOT / 'instances' / 'hotos25-table1.json')!r}))\n"
        "a = lo.solve(inst, 'welfare', solver='ortools').objective\n"
        "b = lo.solve(inst, 'welfare', solver='highs').objective\n"
        "c = lo.solve(inst, 'min_cost', solver='ortools').objective\n"
        "assert abs(a - b) < 1e-12 and abs(c - 0.36) < 1e-12, (a, b, c)\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


# ----------------------------------------------------------------------------- version pins


def _pins() -> dict[str, tuple[str, bool]]:
    """Package -> (pinned version, required) from pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    out = {}
    for spec, required in [(s, True) for s in project["dependencies"]] + [
        (s, False) for group in project.get("optional-dependencies", {}).values() for s in group
    ]:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*==\s*([A-Za-z0-9_.\-+]+)\s*", spec)
        assert match, f"not an exact pin: {spec!r}"
        name, version = match.groups()
        if name in out:
            assert out[name][0] == version, f"{name} pinned twice, differently"
        out[name] = (version, out.get(name, (None, False))[1] or required)
    return out


def test_every_dependency_is_pinned_exactly():
    pins = _pins()
    for name in ("numpy", "scipy", "networkx", "pyomo", "highspy", "ortools", "fastjsonschema", "click", "rich"):
        assert name in pins and pins[name][1], name
    assert "jsonschema" in pins and not pins["jsonschema"][1], "jsonschema is a test dependency only"


@pytest.mark.parametrize("name", sorted(_pins()))
def test_installed_version_matches_pin(name):
    version, required = _pins()[name]
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        if required:
            pytest.fail(f"{name} is a dependency but is not installed")
        pytest.skip(f"optional {name} not installed")
    assert installed == version, f"{name}: installed {installed}, pinned {version}"


def test_package_metadata_matches_pyproject():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    import laissez_opt

    assert metadata.version("laissez-opt") == data["version"] == laissez_opt.__version__
    scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts") if ep.name == "laissez-opt"}
    assert scripts == {"laissez-opt": data["scripts"]["laissez-opt"]}


# ----------------------------------------------------------------------------- package data


@pytest.mark.parametrize("kind", ["instance", "result", "simulation"])
def test_schemas_are_package_data(kind):
    from jsonschema import Draft202012Validator

    from laissez_opt.io import load_schema

    resource = resources.files("laissez_opt.io").joinpath("schemas", f"{kind}.schema.json")
    assert resource.is_file()
    schema = json.loads(resource.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema == load_schema(kind)
    assert schema["$id"].endswith(f"{kind}:1")


def test_package_data_is_declared_for_the_build():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["laissez_opt"]
    shipped = sorted(p.name for p in (ROOT / "laissez_opt" / "io" / "schemas").glob("*.json"))
    assert shipped == ["instance.schema.json", "result.schema.json", "simulation.schema.json"]
    assert any(pattern == "io/schemas/*.json" for pattern in patterns)
