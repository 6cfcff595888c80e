"""Exact certificates (``lo.certify``, ``laissez-opt certify``): proofs hold, perturbed results and certificates fail.

Claims checked here:

* every shipped instance's ``welfare`` (integral and fractional) and fractional
  ``maxmin`` results are proven in exact arithmetic (the issue's "done when");
* the exact optimum equals brute-force enumeration on tiny instances, and the
  exact leximin levels equal the floating-point engine's;
* a perturbed result (objective, allocation, level, payment) or a tampered
  certificate (a multiplier, a primal value) is rejected, naming the row;
* checking a certificate runs no solver;
* the exact linear algebra (:func:`solve_sparse`, :func:`basis_solution`) and
  the sign rules of the dual bound are right on their own.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.certify import Certificate, certify
from laissez_opt.analysis.exact_lp import ExactLP, SingularBasisError, basis_solution, solve_exact, solve_sparse
from laissez_opt.analysis.exact_models import welfare_lp
from laissez_opt.analysis.rational import exact_instance
from laissez_opt.io import result_from_dict

from brute_force import best_welfare
from conftest import INSTANCE_FILES, INSTANCES, run_cli, short_decimals, small_instances, write_json

R2 = INSTANCES / "thesis-r2-table3-1.json"


def _roundtrip(result):
    """The result as a file would give it back (floats through JSON)."""
    return result_from_dict(json.loads(result.to_json()))


# --------------------------------------------------------------------------- done criterion
@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: p.name)
def test_every_shipped_instance_is_proven(path):
    inst = lo.load(path)
    for method, options in (("welfare", {}), ("welfare", {"fractional": True}), ("maxmin", {"fractional": True})):
        result = _roundtrip(lo.solve(inst, method, **options))
        report = lo.certify(inst, result)
        assert report.proven, (method, options, report.failure)
        cert = report.certificate.to_dict()
        again = lo.certify(inst, result, certificate=json.loads(json.dumps(cert)))
        assert again.proven and again.exact == report.exact


def test_cli_proves_and_rejects(tmp_path):
    result = tmp_path / "welfare.json"
    cert = tmp_path / "cert.json"
    assert run_cli("solve", R2, "--method", "welfare", "-o", result).returncode == 0
    run = run_cli("certify", R2, result, "-o", cert)
    assert run.returncode == 0, run.stderr
    assert "PROVEN" in run.stdout and "43/5" in run.stdout
    run = run_cli("certify", R2, result, "--certificate", cert, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["proven"] is True
    data = json.loads(result.read_text())
    data["allocation"][0]["amount"] = 2.0  # one device too many on a pool of one
    bad = write_json(tmp_path / "bad.json", data)
    run = run_cli("certify", R2, bad)
    assert run.returncode == 5
    last = run.stderr_lines[-1]
    assert last.startswith(("laissez-opt: not proven: row capacity[", 'laissez-opt: not proven: column x["')), last
    assert last.endswith("breaks it by 1")
    mtf = tmp_path / "mtf.json"
    assert run_cli("solve", R2, "--method", "mtf", "-o", mtf).returncode == 0
    run = run_cli("certify", R2, mtf)
    assert run.returncode == 2 and "--claim pareto" in run.stderr
    assert run_cli("certify", R2, mtf, "--claim", "pareto").returncode in (0, 5)


# --------------------------------------------------------------------------- rejections
@pytest.fixture(scope="module")
def r2():
    return lo.load(R2)


def test_perturbed_objective_is_rejected(r2):
    result = _roundtrip(lo.solve(r2, "welfare"))
    result.objective = result.objective * (1 + 1e-6)
    report = lo.certify(r2, result)
    assert not report.proven and report.failure.startswith("objective: the result reports")


def test_wrong_reported_utility_or_bound_is_rejected(r2):
    result = _roundtrip(lo.solve(r2, "welfare"))
    assert lo.certify(r2, result).proven
    agent = next(iter(result.utilities))
    edited = copy.deepcopy(result)
    edited.utilities = {**result.utilities, agent: result.utilities[agent] + 99.0}
    report = lo.certify(r2, edited)
    assert not report.proven and report.failure.startswith(f"utilities[{agent}]: the result reports")
    edited = copy.deepcopy(result)
    edited.bound = result.objective - 1.0  # below the optimum of a maximisation
    report = lo.certify(r2, edited)
    assert not report.proven and report.failure.startswith("bound: the result reports")


def test_suboptimal_allocation_is_rejected(r2):
    result = _roundtrip(lo.solve(r2, "welfare"))
    moved = copy.deepcopy(result.allocation)
    moved[0]["amount"] = 0.0  # an idle device: still feasible, no longer optimal
    result.allocation = moved
    report = lo.certify(r2, result)
    assert not report.proven and report.failure.startswith("allocation: the result's allocation reaches")


def test_infeasible_allocation_names_the_row(r2):
    result = _roundtrip(lo.solve(r2, "welfare"))
    result.allocation = [dict(rec, amount=rec["amount"] + 1) for rec in result.allocation]
    report = lo.certify(r2, result)
    assert not report.proven and report.failure.startswith(("row capacity[", "row demand[", "column x[")), report.failure


def test_wrong_leximin_level_is_rejected(r2):
    result = _roundtrip(lo.solve(r2, "maxmin", fractional=True))
    result.details["leximin"]["A1"] *= 1.001
    report = lo.certify(r2, result)
    assert not report.proven and report.failure.startswith('level[A1]: the result reports')


def test_wrong_payment_is_rejected():
    inst = lo.load(INSTANCES / "hotos25-section5-bids.json")
    result = _roundtrip(lo.solve(inst, "vcg"))
    assert lo.certify(inst, result).proven
    winner = next(a for a, p in result.payments.items() if p > 0)
    result.payments[winner] += 0.01
    report = lo.certify(inst, result)
    assert not report.proven and report.failure.startswith(f"payment[{winner}]")


def test_tampered_certificate_names_the_failing_row(r2):
    result = _roundtrip(lo.solve(r2, "welfare"))
    cert = lo.certify(r2, result).certificate.to_dict()
    row, value = next(iter(cert["lps"][0]["dual"].items()))
    tampered = copy.deepcopy(cert)
    tampered["lps"][0]["dual"][row] = str(Fraction(value) + 100)
    check = lo.check_certificate(r2, tampered)
    assert not check.ok and "LP 1 (welfare)" in check.failure
    tampered = copy.deepcopy(cert)
    name = next(iter(tampered["allocation"]))
    tampered["allocation"][name] = "3"
    check = lo.check_certificate(r2, tampered)
    assert not check.ok and f"column {name}" in check.failure or "row capacity" in check.failure
    tampered = copy.deepcopy(cert)
    tampered["lps"][0]["dual"]["capacity[\"nowhere\",0]"] = "1"
    check = lo.check_certificate(r2, tampered)
    assert not check.ok and "unknown row" in check.failure
    report = lo.certify(r2, result, certificate=tampered)
    assert not report.proven


def test_checking_a_certificate_runs_no_solver(r2, monkeypatch):
    result = _roundtrip(lo.solve(r2, "maxmin", fractional=True))
    cert = lo.certify(r2, result).certificate.to_dict()

    def refuse(*args, **kwargs):
        raise AssertionError("a solver ran while checking a certificate")

    import laissez_opt.analysis.exact_lp as exact_lp
    import laissez_opt.modeling.highs_route as highs_route

    monkeypatch.setattr(highs_route, "solve_highs", refuse)
    monkeypatch.setattr(exact_lp, "_highs_basis", refuse)
    assert lo.check_certificate(r2, cert).ok
    assert lo.certify(r2, result, certificate=cert).proven


def test_certificate_file_errors(tmp_path, r2):
    path = write_json(tmp_path / "c.json", {"format": "something else"})
    with pytest.raises(lo.InputError, match="not a certificate file"):
        lo.check_certificate(r2, path)
    result = _roundtrip(lo.solve(r2, "welfare"))
    cert = lo.certify(r2, result).certificate.to_dict()
    cert["instance"] = "other"
    with pytest.raises(lo.InputError, match="is for instance 'other'"):
        lo.check_certificate(r2, cert)


def test_integral_maxmin_is_refused(r2):
    with pytest.raises(lo.InputError, match="not an LP result"):
        lo.certify(r2, lo.solve(r2, "maxmin"))


# --------------------------------------------------------------------------- exactness
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_exact_welfare_optimum_equals_brute_force(inst):
    report = certify(inst, lo.solve(inst, "welfare"))
    assert report.proven, report.failure
    best, _ = best_welfare(inst)
    exact = Fraction(report.exact["optimum"])
    assert abs(float(exact) - best) <= 1e-9 * max(1.0, abs(best))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(utilities=short_decimals))
def test_exact_leximin_matches_the_engine(inst):
    result = lo.solve(inst, "maxmin", fractional=True)
    report = certify(inst, result)
    assert report.proven, report.failure
    for agent, value in report.exact["leximin"].items():
        assert abs(float(Fraction(value)) - result.details["leximin"][agent]) <= 1e-6 * max(1.0, abs(float(Fraction(value))))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_rounds=1, windows=False))
def test_vcg_and_pareto_certificates(inst):
    vcg = lo.solve(inst, "vcg")
    report = certify(inst, vcg)
    assert report.proven, report.failure
    for agent, paid in report.exact["payments"].items():
        assert Fraction(paid) >= 0  # no positive transfers, exactly
    welfare = lo.solve(inst, "welfare")
    if certify(inst, welfare, tolerance=0).proven:  # an exact welfare optimum is Pareto-efficient (all w_i > 0)
        assert certify(inst, welfare, claim="pareto").proven
    # (a utility below floating point's resolution, 1e-300 say, can make the float optimum inexact: then
    # certify says so, and the Pareto check exhibits the improvement)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_rounds=1, windows=False, utilities=short_decimals))
def test_themis_bracket_is_proven(inst):
    result = lo.solve(inst, "themis", fractional=True)
    if not result.details.get("bidders"):
        return
    report = certify(inst, result)
    assert report.proven, report.failure
    lo_, hi = (Fraction(v) for v in report.exact["bracket"])
    assert lo_ <= hi
    if "rho" in report.exact:
        assert lo_ <= Fraction(report.exact["rho"]) <= hi


def test_file_decimals_are_read_exactly(tmp_path):
    data = {
        "format": "laissez-opt/instance", "version": 1, "name": "digits",
        "pools": [{"id": "P", "count": 1}],
        "agents": [{"id": "A"}, {"id": "B"}],
        "edges": [{"agent": "A", "pool": "P", "utility": "LONG"},
                  {"agent": "B", "pool": "P", "utility": 0.3}],
    }
    path = tmp_path / "digits.json"
    path.write_text(json.dumps(data).replace('"LONG"', "0.30000000000000000001"), encoding="utf-8")
    inst = lo.load(path)
    ex = exact_instance(inst)
    assert ex.utility[0][0] == Fraction("0.30000000000000000001") and ex.utility[1][0] == Fraction(3, 10)
    report = lo.certify(inst, lo.solve(inst, "welfare"))
    # the float solver sees a tie; exactly, A's device is worth 10^-20 more
    assert Fraction(report.exact["optimum"]) == Fraction("0.30000000000000000001")
    path.write_text(json.dumps({**data, "edges": [dict(e, utility=0.5) for e in data["edges"]]}), encoding="utf-8")
    with pytest.raises(lo.InputError, match="reload"):
        exact_instance(inst)


# --------------------------------------------------------------------------- the exact algebra
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(st.integers(-3, 3), min_size=n, max_size=n),
                                                    min_size=n, max_size=n)),
       st.data())
def test_solve_sparse_matches_numpy(matrix, data):
    a = np.array(matrix, dtype=float)
    b = data.draw(st.lists(st.integers(-5, 5), min_size=len(matrix), max_size=len(matrix)))
    equations = [{j: v for j, v in enumerate(row) if v} for row in matrix]
    if abs(np.linalg.det(a)) < 1e-9:
        with pytest.raises(SingularBasisError):
            solve_sparse(equations, b)
        return
    x = solve_sparse(equations, b)
    for row, rhs in zip(matrix, b):
        assert sum(Fraction(v) * x[j] for j, v in enumerate(row)) == rhs
    assert np.allclose([float(x[j]) for j in range(len(matrix))], np.linalg.solve(a, b))


def test_dual_bound_sign_rules():
    # min x0 + 2 x1  s.t.  x0 + x1 >= 1, 0 <= x <= 1: optimum 1 at x = (1, 0)
    lp = ExactLP("min", "min")
    x = lp.add_columns("x", 2, lower=[0, 0], upper=[1, 1], objective=[1, 2])
    lp.add_rows("cover", [[(x, 1), (x + 1, 1)]], lower=[1], upper=[None])
    assert lp.dual_bound([1]) == (1, "")                  # z = (0, 1) at lower bounds
    bound, failure = lp.dual_bound([-1])                  # a negative multiplier needs an upper bound
    assert bound is None and "no upper bound" in failure
    assert lp.verify([1, 0], [1]).ok
    assert lp.verify([Fraction(1, 2), 0], [1]).failure.startswith("row cover")
    solution = solve_exact(lp)
    assert solution.status == "optimal" and solution.verdict.objective == 1
    x_, y_ = basis_solution(lp, [1, 0], [0])              # x0 basic, x1 at 0, the row at its lower bound
    assert x_ == [1, 0] and y_ == [1]


def test_route_duals_agree():
    from laissez_opt.exact.welfare import build_welfare
    from laissez_opt.modeling import solve_model

    inst = lo.load(INSTANCES / "uniform-small.json")
    model, _ = build_welfare(inst, fractional=True)
    model.variables["x"].integer = False
    values = []
    for options in (dict(solver="highs"), dict(solver="ortools", backend="glop"), dict(solver="highs", via="pyomo")):
        sol = solve_model(model, duals=True, **options)
        d = sol.duals
        assert d is not None, options
        assert np.allclose(d.column, model.objective - model.csc().T @ d.row, atol=1e-7)
        lower, upper, _ = model.bounds()
        _, row_upper = model.row_bounds()
        bound = float(np.sum(np.where(d.row > 0, d.row * row_upper, 0.0))) + float(
            np.sum(np.where(d.column > 1e-12, d.column * upper, 0.0)))
        assert bound == pytest.approx(sol.objective, rel=1e-7)
        values.append(sol.objective)
    assert np.allclose(values, values[0])
    assert solve_model(model).duals is None  # only on request


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.sampled_from(["slack", "all_upper"]), st.booleans())
def test_exact_simplex_from_any_basis(inst, start, fair):
    """From the slack basis (phase 2 only) or with every column at its upper bound (phase 1 first)."""
    from laissez_opt.analysis.exact_lp import exact_simplex
    from laissez_opt.analysis.exact_models import fair_welfare_lp

    ex = exact_instance(inst)
    lp = fair_welfare_lp(ex, envy=Fraction(1, 2)) if fair else welfare_lp(ex)
    column_status = [0 if start == "slack" else 2] * lp.n_cols
    x, y, message = exact_simplex(lp, column_status, [1] * lp.n_rows, max_pivots=2000)
    reference = solve_exact(lp)
    assert reference.status == "optimal"
    assert x is not None, message
    verdict = lp.verify(x, y)
    assert verdict.ok, verdict.failure
    assert verdict.objective == reference.verdict.objective


def test_differences_below_float_resolution_are_repaired(tmp_path):
    """Three bids equal in floating point, different in the file: the exact optimum is the largest."""
    values = ["0.5", "0.50000000000000000001", "0.50000000000000000002"]
    edges = ",".join(f'{{"agent": "{a}", "pool": "P", "utility": {v}}}' for a, v in zip("ABC", values))
    text = ('{"format": "laissez-opt/instance", "version": 1, "name": "ties", "pools": [{"id": "P"}], '
            '"agents": [{"id": "A"}, {"id": "B"}, {"id": "C"}], "edges": [' + edges + "]}")
    path = tmp_path / "ties.json"
    path.write_text(text, encoding="utf-8")
    inst = lo.load(path)
    solution = solve_exact(welfare_lp(exact_instance(inst)))
    assert solution.status == "optimal" and solution.verdict.objective == Fraction(values[2])
    assert solution.primal == [0, 0, 1]
    # HiGHS sees a three-way tie; when its basis is not the exact optimum, exact pivots repair it
    assert solution.attempts[0] == "default basis: proven" or "exact simplex" in solution.attempts[1]
    result = lo.solve(inst, "welfare")
    report = lo.certify(inst, result)  # whichever agent the float solve picked: within the tolerance
    assert report.proven and Fraction(report.exact["optimum"]) == Fraction(values[2])
    assert report.repaired == (result.allocation[0]["agent"] != "C")


def test_themis_claims_are_checked():
    inst = lo.load(INSTANCES / "hotos25-table1.json")
    result = _roundtrip(lo.solve(inst, "themis", fractional=True))
    assert lo.certify(inst, result).proven
    low = copy.deepcopy(result)
    low.objective *= 0.9  # claims a finish-time fairness no allocation reaches
    report = lo.certify(inst, low)
    assert not report.proven
    starved = copy.deepcopy(result)
    bidder = result.details["bidders"][0]
    starved.allocation = [rec for rec in result.allocation if rec["agent"] != bidder]
    report = lo.certify(inst, starved)
    assert not report.proven and report.failure.startswith(f"finish[{bidder}]"), report.failure


def test_vcg_with_bids_and_long_rounds_is_proven():
    """Bids are per device-hour and reserves per device-hour: a round of h hours is worth h times both."""
    inst = lo.Instance([lo.Pool("A10", count=1, base_price=0.606), lo.Pool("L4", count=2, base_price=0.3)],
                       [lo.Agent("A", demand=1), lo.Agent("B", demand=1), lo.Agent("C", demand=2)],
                       [lo.Edge("A", "A10", 1.0, bid=0.687), lo.Edge("B", "A10", 1.0, bid=0.762),
                        lo.Edge("B", "L4", 1.0, bid=0.652), lo.Edge("C", "L4", 1.0, bid=0.5)],
                       rounds=2, round_hours=2.5, name="hours")
    result = lo.solve(inst, "vcg")
    report = lo.certify(inst, result)
    assert report.proven, report.failure
    assert {a: float(Fraction(p)) for a, p in report.exact["payments"].items()} == pytest.approx(result.payments)
    assert not lo.probe_truthfulness(inst, "vcg", budget=40).profitable


def test_tiny_utilities_are_not_rounded_away():
    """A utility of 1.192092896e-8 (found by hypothesis) sits below HiGHS's absolute reduced-cost tolerance (1e-7): without the
    objective scale the LP stopped at zero and the certificate caught it."""
    inst = lo.Instance(pools=[lo.Pool("P", count=1)], agents=[lo.Agent("A")],
                       edges=[lo.Edge("A", "P", 1.192092896e-08)], name="tiny")
    for solver in ("auto", "highs"):
        result = lo.solve(inst, "welfare", solver=solver)
        assert result.objective == 1.192092896e-08, (solver, result.objective, result.route)
        assert certify(inst, result).proven


@pytest.mark.parametrize("sense", ["min", "max"])
def test_mip_bound_of_a_scaled_objective_is_in_the_model_units(sense):
    """HiGHS 1.13 reports a MIP's dual bound in the units of ``user_objective_scale`` (found by the
    migration_free horizon test: cost 0.25 / 60 per device-round, bound 2^7 times the optimum, gap 127)."""
    import numpy as np

    from laissez_opt.modeling import LinearModel
    from laissez_opt.modeling.highs_route import objective_scale, solve_highs

    m = LinearModel("scaled", sense=sense)
    x = m.add_variables("x", 3, upper=1.0, integer=True)
    m.add_constraints("pick", rows=np.zeros(3, dtype=np.int64), cols=x.columns(np.arange(3)), coefs=np.array([2.0, 3.0, 4.0]),
                      lower=3.5 if sense == "min" else -np.inf, upper=np.inf if sense == "min" else 6.5, n_rows=1)
    m.set_objective(x, np.array([1e-3, 2e-3, 2.5e-3]))
    assert objective_scale(m.objective) > 0 and not m.integrality_is_free()
    solution = solve_highs(m)
    assert solution.status == "optimal"
    assert solution.bound == pytest.approx(solution.objective, rel=1e-7)
    assert solution.objective == pytest.approx(2.5e-3 if sense == "min" else 3.5e-3)


def test_subnormal_utilities_solve():
    """A subnormal utility (2.2e-311, found by hypothesis) asked for a scale 2^1032, which is not a
    finite double; the scale is capped and the solve still finds the optimum."""
    inst = lo.Instance(pools=[lo.Pool("P", count=1)], agents=[lo.Agent("A", weight=0.1)],
                       edges=[lo.Edge("A", "P", 2.225073858507e-311)], name="subnormal")
    for solver in ("auto", "highs"):
        result = lo.solve(inst, "welfare", solver=solver)
        assert result.status == "optimal" and result.allocation, (solver, result.objective)


def test_exact_numbers_of_thousands_of_digits_are_written_and_read():
    """Level LPs of a few hundred agents have exact duals with numerators past Python's 4,300-digit
    guard on integer text; certificates write and read them whole and leave the guard as it was."""
    import sys

    from laissez_opt.analysis.exact_lp import parse_rational, rational_text

    limit = sys.get_int_max_str_digits()
    big = Fraction(10**6000 + 7, 3 * 10**4500 + 1)
    text = rational_text(big)
    assert len(text) > 10_000 and parse_rational(text) == big
    assert rational_text(10**5000) == "1" + "0" * 5000
    assert sys.get_int_max_str_digits() == limit


def _cover_lp() -> ExactLP:
    # min x0 + 2 x1  s.t.  x0 + x1 >= 1, 0 <= x <= 1: optimum 1 at x = (1, 0)
    lp = ExactLP("min", "min")
    x = lp.add_columns("x", 2, lower=[0, 0], upper=[1, 1], objective=[1, 2])
    lp.add_rows("cover", [[(x, 1), (x + 1, 1)]], lower=[1], upper=[None])
    return lp


def test_a_route_in_numerical_trouble_hands_over_to_the_next(monkeypatch):
    """HiGHS ending "unknown" (a SolverError) on a route used to escape certify as a traceback; now
    the next route runs, down to the LP with its row bounds eased, whose basis is proven exactly."""
    from laissez_opt.analysis import exact_lp
    from laissez_opt.errors import SolverError

    original, calls = exact_lp._highs_basis, []

    def failing_twice(lp, model, strict):
        calls.append(strict)
        if len(calls) <= 2:
            raise SolverError("HiGHS returned Unknown for model 'min'")
        return original(lp, model, strict)

    monkeypatch.setattr(exact_lp, "_highs_basis", failing_twice)
    solution = solve_exact(_cover_lp())
    assert calls == [False, True, True]
    assert solution.status == "optimal" and solution.verdict.objective == 1 and solution.primal == [1, 0]
    assert solution.attempts[:2] == ["default HiGHS: HiGHS returned Unknown for model 'min'",
                                     "strict HiGHS: HiGHS returned Unknown for model 'min'"]
    assert solution.attempts[2] == "eased basis: proven"


def test_an_infeasible_lp_stays_infeasible_on_every_route():
    lp = ExactLP("empty", "max")
    x = lp.add_columns("x", 1, lower=[0], upper=[None], objective=[1])
    lp.add_rows("both", [[(x, 1)], [(x, 1)]], lower=[1, None], upper=[None, 0])
    solution = solve_exact(lp)
    assert solution.status == "infeasible" and solution.primal is None
    assert [a.split(":")[0] for a in solution.attempts] == ["default HiGHS", "strict HiGHS", "eased HiGHS"]


def test_eased_model_widens_only_finite_row_bounds():
    block = _cover_lp().to_linear_model(ease=1e-3).constraints["cover"]
    assert block.lower[0] == pytest.approx(1 - 1e-3) and np.isinf(block.upper[0])
    assert _cover_lp().to_linear_model().constraints["cover"].lower[0] == 1.0


def test_failure_messages_write_long_fractions_briefly():
    lp = _cover_lp()
    huge = Fraction(-(10**900) - 1, 10**899)
    failure = lp.verify([huge, 1], [1]).failure
    assert failure.startswith("column x[0]: value -10.0 (a fraction of 901/900 digits) is below its lower bound 0")
    assert len(failure) < 120
