"""``fair_welfare``: welfare under sharing incentive, envy bounds and a max-min floor.

Claims (``models/fair_welfare.md``):

* integral mode equals the best allocation of brute-force enumeration among
  those meeting the constraints (written here from the definitions), and is
  infeasible exactly when none does;
* fractional mode equals the exact optimum of the certificate LP (an
  independent formulation, in rationals), and ``lo.certify`` proves it;
* HiGHS, OR-Tools and Pyomo agree;
* the result meets its constraints (``lo.check``: SI, envy);
* an infeasible model names an irreducible conflicting set: infeasible as a
  whole, feasible without any one of its rows.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.exact.fair_welfare import build_fair_welfare
from laissez_opt.modeling import solve_model
from laissez_opt.shares import equal_share_utilities

from brute_force import all_allocations
from conftest import INSTANCES, run_cli, short_decimals, small_instances

TOL = 1e-7
options = st.fixed_dictionaries({
    "sharing": st.sampled_from([None, 0.5, 1.0]),
    "envy": st.sampled_from([None, 0.0, 0.5]),
    "floor": st.sampled_from([None, 0.5]),
})


def _utility(edge, r):
    return edge.utility[r] if isinstance(edge.utility, tuple) else edge.utility


def _brute_force(inst, sharing, envy, floor):
    """Best weighted welfare among integral allocations meeting the constraints (None: none does)."""
    ids = [a.id for a in inst.agents]
    w = {a.id: a.weight for a in inst.agents}
    total_weight = sum(w.values())
    counts = {p.id: p.count for p in inst.pools}
    value = {(e.agent, e.pool, r): _utility(e, r) for e in inst.edges for r in range(inst.rounds)}
    share = {a: w[a] / total_weight * sum(counts[e.pool] * _utility(e, r) for e in inst.edges if e.agent == a
                                          for r in range(inst.rounds)) for a in ids}
    best = None
    for alloc in all_allocations(inst):
        bundle = {(inst.edges[k].agent, inst.edges[k].pool, r): amount for (k, r), amount in alloc.items()}

        def worth(i, j):  # U_i(X_j)
            return math.fsum(value.get((i, c, r), 0.0) * amount for (a, c, r), amount in bundle.items() if a == j)

        u = {a: worth(a, a) for a in ids}
        ok = True
        if sharing is not None:
            ok &= all(u[a] >= sharing * share[a] - TOL for a in ids if share[a] > 0)
        if envy is not None:
            ok &= all(w[j] * u[i] - w[i] * worth(i, j) >= -envy * w[j] - TOL for i in ids for j in ids if i != j)
        if floor is not None:
            can = {e.agent for e in inst.edges for r in range(inst.rounds) if _utility(e, r) > 0
                   and _window(inst, e.agent, r) and (inst.agents[inst.agent_index[e.agent]].demand or 1) > 0}
            ok &= all(u[a] >= floor * share[a] - TOL for a in can if share[a] > 0)
        if ok:
            welfare = math.fsum(w[a] * u[a] for a in ids)
            best = welfare if best is None else max(best, welfare)
    return best


def _window(inst, agent_id, r):
    agent = inst.agents[inst.agent_index[agent_id]]
    last = inst.rounds - 1 if agent.deadline is None else agent.deadline
    return agent.arrival <= r <= last


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_agents=3, max_pools=2, max_rounds=2, utilities=short_decimals), options)
def test_integral_mode_equals_brute_force(inst, opts):
    expected = _brute_force(inst, **opts)
    result = lo.solve(inst, "fair_welfare", **opts)
    if expected is None:
        assert result.status == "infeasible"
        assert result.details["conflict"], result.message
    else:
        assert result.status == "optimal"
        assert result.objective == pytest.approx(expected, rel=1e-6, abs=1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(utilities=short_decimals), options)
def test_fractional_mode_is_proven_exactly(inst, opts):
    result = lo.solve(inst, "fair_welfare", fractional=True, **opts)
    if result.status == "infeasible":
        return
    report = lo.certify(inst, result)
    assert report.proven, report.failure
    assert float(Fraction(report.exact["optimum"])) == pytest.approx(result.objective, rel=1e-7, abs=1e-9)
    check = lo.check(inst, result)
    if opts["sharing"] == 1.0:
        assert check.sharing.min_phi >= 1 - 1e-6
    if opts["envy"] == 0.0:
        assert check.envy.envy_free is not False


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(max_rounds=1, utilities=short_decimals), options, st.booleans())
def test_solvers_and_routes_agree(inst, opts, fractional):
    reference = lo.solve(inst, "fair_welfare", fractional=fractional, explain=False, **opts)
    for kw in (dict(solver="ortools"), dict(via="pyomo")):
        other = lo.solve(inst, "fair_welfare", fractional=fractional, explain=False, **opts, **kw)
        assert other.status == reference.status, kw
        if reference.status == "optimal":
            assert other.objective == pytest.approx(reference.objective, rel=1e-6, abs=1e-6), kw


def test_conflict_is_irreducible():
    inst = lo.load(INSTANCES / "thesis-r2-table3-1.json")
    result = lo.solve(inst, "fair_welfare", sharing=1.2, envy=0.0, floor=1.3)
    assert result.status == "infeasible"
    conflict = result.details["conflict"]
    assert conflict and "an irreducible conflicting set" in result.message

    def feasible(rows):
        model, _, labels = build_fair_welfare(inst, sharing=1.2, envy=0.0, floor=1.3)
        for name, names in labels.items():
            block = model.constraints[name]
            for k, label in enumerate(names):
                if label not in rows:
                    block.lower[k] = -np.inf
        return solve_model(model).status != "infeasible"

    assert not feasible(set(conflict))
    for row in conflict:
        assert feasible(set(conflict) - {row}), row


def test_no_constraint_is_welfare_and_options_are_checked():
    inst = lo.load(INSTANCES / "uniform-small.json")
    assert lo.solve(inst, "fair_welfare").objective == pytest.approx(lo.solve(inst, "welfare").objective)
    with pytest.raises(lo.InputError, match="sharing"):
        lo.solve(inst, "fair_welfare", sharing=-1)
    with pytest.raises(lo.InputError, match="did you mean 'envy'"):
        lo.solve(inst, "fair_welfare", envyy=0.0)


def test_cli_reports_the_conflict(tmp_path):
    r2 = INSTANCES / "thesis-r2-table3-1.json"
    run = run_cli("solve", r2, "--method", "fair_welfare", "-p", "sharing=1.4")
    assert run.returncode == 3
    assert "irreducible conflicting set" in run.stderr_lines[-1]
    run = run_cli("solve", r2, "--method", "fair_welfare", "--fractional", "-p", "envy=0", "-p", "sharing=1",
                  "-o", tmp_path / "fair.json")
    assert run.returncode == 0, run.stderr
    assert run_cli("certify", r2, tmp_path / "fair.json").returncode == 0


def test_certify_rejects_an_allocation_that_breaks_a_fairness_row():
    inst = lo.load(INSTANCES / "thesis-r2-table3-1.json")
    result = lo.solve(inst, "fair_welfare", fractional=True, floor=1.3)
    assert lo.certify(inst, result).proven
    # The welfare optimum has the same welfare on this instance but a max-min level of 66/61 < 1.3.
    result.allocation = lo.solve(inst, "welfare").allocation
    report = lo.certify(inst, result)
    assert not report.proven and report.failure.startswith('row floor["'), report.failure


def test_a_stopped_time_sharing_run_returns_the_equal_share_with_the_welfare_ceiling():
    """A limit that leaves the solver nothing: the equal-share allocation (each agent exactly U_i^ex,
    weighted envy 0) is the incumbent, verified, and the welfare ceiling bounds it."""
    from laissez_opt.analysis.verify import verify
    from laissez_opt.exact.fair_welfare import solve_fair_welfare, welfare_ceiling

    inst = lo.generate("uniform", 300, 12, seed=4)
    whole = lo.solve(inst, "fair_welfare", sharing=1.0, envy=0.0, fractional=True)
    # Outside lo.solve the limit goes to HiGHS alone (lo.solve's limit would stop the build first).
    stopped = solve_fair_welfare(inst, sharing=1.0, envy=0.0, fractional=True, time_limit=1e-9)
    assert stopped.status == "time_limit" and "heuristic start" in stopped.route
    assert not verify(inst, stopped).violations
    assert stopped.bound == pytest.approx(welfare_ceiling(inst)) and stopped.bound >= whole.objective
    assert stopped.objective <= whole.objective + 1e-9
    assert stopped.gap == pytest.approx((stopped.bound - stopped.objective) / stopped.objective)
    share = equal_share_utilities(inst)
    assert [stopped.utilities[a.id] for a in inst.agents] == pytest.approx(share.tolist())


def test_equal_share_start_is_refused_where_a_demand_cuts_it():
    from laissez_opt.exact.fair_welfare import equal_share_start

    inst = lo.Instance([lo.Pool("P", count=4)], [lo.Agent("A", demand=1), lo.Agent("B")],
                       [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    model, columns, _ = build_fair_welfare(inst, fractional=True, sharing=1.0)
    assert equal_share_start(inst, model, columns) is None  # A's equal share is 2 devices, its demand 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(utilities=short_decimals), options)
def test_the_interior_point_route_of_large_lps_is_proven_exactly(inst, opts):
    """Above ``INTERIOR_POINT_ROWS`` the LP runs HiGHS's interior point with crossover; forced on
    small instances here (threshold 0), it certifies exactly and equals the simplex optimum."""
    from laissez_opt.exact import fair_welfare as module

    simplex = lo.solve(inst, "fair_welfare", fractional=True, explain=False, **opts)
    original = module.INTERIOR_POINT_ROWS
    module.INTERIOR_POINT_ROWS = 0
    try:
        interior = lo.solve(inst, "fair_welfare", fractional=True, explain=False, **opts)
    finally:
        module.INTERIOR_POINT_ROWS = original
    assert interior.status == simplex.status
    assert "lp_method" not in simplex.details
    if interior.status != "optimal":
        return
    assert "interior point" in interior.details["lp_method"]
    assert interior.objective == pytest.approx(simplex.objective, rel=1e-7, abs=1e-9)
    report = lo.certify(inst, interior)
    assert report.proven, report.failure
