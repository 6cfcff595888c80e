"""Every exact model can be exported (LP, MPS, Pyomo) and any solver reaches our optimum from the file.

For each exact method of the registry, the model it solves is written as an LP
and as an MPS file (``lo.write_model``), read back by HiGHS (highspy's own
reader, not our lowering) and solved; the optimum must equal the one
``lo.solve`` reports (for Themis: ``F(rho*) = 0`` at the optimum it found).
``lo.build`` gives the same model as a Pyomo ``ConcreteModel``, solved here by
Pyomo's HiGHS plugin.
"""

from __future__ import annotations

import json
import math

import highspy
import pyomo.environ as pyo
import pytest

import laissez_opt as lo
from laissez_opt.cli import main as cli_main
from laissez_opt.errors import InputError
from laissez_opt.methods import METHODS

TABLE1 = "instances/hotos25-table1.json"
BIDS = "instances/hotos25-section5-bids.json"

#: A two-job, two-pool, three-round schedule: small enough for the migration MIP to take milliseconds.
MIGRATION = lo.Instance(
    pools=[lo.Pool("fast", base_price=1.0), lo.Pool("slow", base_price=0.5)],
    agents=[lo.Agent("A", work=2.0, migration_cost=0.1), lo.Agent("B", work=1.0, arrival=1)],
    edges=[lo.Edge("A", "fast", (0.0, 1.0, 1.0)), lo.Edge("A", "slow", 0.5), lo.Edge("B", "fast", 1.0),
           lo.Edge("B", "slow", 0.5)],
    rounds=3, name="two-jobs",
)

#: method -> (instance, options); each exact built-in method appears once.
CASES = {
    "welfare": (TABLE1, {}),
    "min_cost": (TABLE1, {}),
    "vcg": (BIDS, {}),
    "maxmin": (TABLE1, {}),
    "drf": (TABLE1, {}),
    "fair_welfare": ("instances/thesis-r1-fair-vs-efficient.json", {"sharing": 1.0}),
    "themis": (TABLE1, {}),
    "migration": (MIGRATION, {"objective": "completion"}),
    "migration_free": (MIGRATION, {"objective": "completion"}),
    "backlog": ("instances/thesis-r1-fair-vs-efficient.json", {}),
}


def test_every_exact_method_is_covered():
    exact = sorted(name for name, spec in METHODS.items() if spec.kind == "exact")
    assert sorted(CASES) == exact
    assert all(METHODS[name].build is not None for name in exact)


def _highs_optimum(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return h.getInfo().objective_function_value


def _cases():
    for name, (instance, options) in CASES.items():
        modes = (False, True) if METHODS[name].fractional else (False,)
        for fractional in modes:
            yield pytest.param(name, instance, options, fractional, id=f"{name}-{'fractional' if fractional else 'integral'}")


@pytest.mark.parametrize("name, instance, options, fractional", list(_cases()))
def test_written_model_resolves_to_the_same_optimum(tmp_path, name, instance, options, fractional):
    frac = True if fractional else None
    result = lo.solve(instance, name, fractional=frac, **options)
    assert result.status == "optimal"
    expected = 0.0 if name == "themis" else result.objective
    for suffix in ("lp", "mps"):
        path = lo.write_model(instance, name, tmp_path / f"{name}.{suffix}", fractional=frac, **options)
        found = _highs_optimum(path)
        assert math.isclose(found, expected, rel_tol=1e-6, abs_tol=1e-6), (suffix, found, expected)


@pytest.mark.parametrize("name", ["welfare", "vcg", "maxmin", "min_cost"])
def test_pyomo_model_solves_to_the_same_optimum(name):
    instance, options = CASES[name]
    model = lo.build(instance, name, **options)
    assert isinstance(model, pyo.ConcreteModel)
    assert {c.name for c in model.component_objects(pyo.Constraint)} >= {"capacity"}
    pyo.SolverFactory("appsi_highs").solve(model)
    assert math.isclose(pyo.value(model.objective), lo.solve(instance, name, **options).objective, rel_tol=1e-9)


def test_themis_exports_the_parametric_model_at_any_level():
    rho = lo.solve(TABLE1, "themis").objective
    at_optimum = lo.linear_model(TABLE1, "themis")
    below = lo.linear_model(TABLE1, "themis", rho=rho * 0.9)
    from laissez_opt.modeling import solve_model

    assert abs(solve_model(at_optimum).objective) < 1e-6
    assert solve_model(below).objective < -1e-3   # no allocation lets every bidder finish that early
    with pytest.raises(InputError, match="rho"):
        lo.linear_model(TABLE1, "themis", rho=-1.0)


def test_declared_methods_export_their_model(tmp_path):
    from laissez_opt.declare import capacity, demand, welfare

    def closed(instance):
        m = lo.Model(instance, name="closed")
        m.add(capacity(m.x)); m.add(demand(m.x))
        m.add(m.x.sum(pool="A10") <= 0, name="a10_closed")
        m.maximize(welfare(m.x))
        return m

    lo.register_method("closed_a10", closed)
    try:
        path = lo.write_model(TABLE1, "closed_a10", tmp_path / "closed.lp")
        assert "a10_closed" in open(path).read()
        assert math.isclose(_highs_optimum(path), lo.solve(TABLE1, "closed_a10").objective, rel_tol=1e-9)
    finally:
        lo.unregister_method("closed_a10")


def test_heuristics_have_no_model_and_say_so():
    with pytest.raises(InputError, match="greedy is a heuristic"):
        lo.build(TABLE1, "greedy")
    with pytest.raises(InputError, match="did you mean 'min_cost'"):
        lo.build(TABLE1, "min-cost")
    with pytest.raises(InputError, match="no option 'rhoo'"):
        lo.build(TABLE1, "themis", rhoo=1.0)


def test_cli_writes_every_exact_model(tmp_path, capsys):
    for name in ("min_cost", "maxmin"):
        target = tmp_path / f"{name}.mps"
        with pytest.raises(SystemExit) as stop:
            cli_main(["solve", TABLE1, "--method", name, "--write-model", str(target)])
        assert stop.value.code in (0, None)
        result = json.loads(capsys.readouterr().out)
        assert math.isclose(_highs_optimum(target), result["objective"], rel_tol=1e-9)
    with pytest.raises(SystemExit) as stop:
        cli_main(["solve", TABLE1, "--method", "greedy", "--write-model", str(tmp_path / "g.lp")])
    assert stop.value.code == 2
    assert "greedy is a heuristic" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        cli_main(["solve", TABLE1, "--write-model", str(tmp_path / "model.txt")])
    assert stop.value.code == 2
    assert "--write-model" in capsys.readouterr().err
