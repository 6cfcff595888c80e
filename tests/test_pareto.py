"""The Pareto check (models.md item 2; models/pareto.md): brute force, both solvers, certificates.

The brute-force reference enumerates every feasible integral allocation round by
round (``brute_force.round_allocations``: plain Python over the instance's records)
and keeps, per round, the set of distinct utility vectors in exact rational
arithmetic.  The vectors of the whole horizon are the sums of one vector per
round, so ``x`` is Pareto-dominated iff some sum is ``>= U(x)`` in every
coordinate and differs from it; the largest total gain ``max sum_i (v_i - U_i(x))``
over those sums is the optimum of the check model.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

import laissez_opt as lo
from brute_force import active, round_allocations
from conftest import INSTANCES, short_decimals, small_instances
from laissez_opt.analysis.fairness import allocation_amounts
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.exact.pareto import build_pareto_check, certificate_dominates, pareto_check
from laissez_opt.result import Result


# ----------------------------------------------------------------------------- brute force


def _utility(edge, rnd):
    return edge.utility[rnd] if isinstance(edge.utility, tuple) else edge.utility


def _exact(value: float) -> Fraction:
    """Short decimals (k / 100) as exact fractions."""
    return Fraction(round(value * 100), 100)


def round_vectors(instance, rnd: int) -> dict[tuple, dict]:
    """Distinct utility vectors reachable in round ``rnd`` (exact), each with one allocation."""
    order = [a.id for a in instance.agents]
    out: dict[tuple, dict] = {}
    for alloc in round_allocations(instance, rnd):
        totals = dict.fromkeys(order, Fraction(0))
        for k, amount in alloc.items():
            edge = instance.edges[k]
            totals[edge.agent] += _exact(_utility(edge, rnd)) * amount
        out.setdefault(tuple(totals[a] for a in order), alloc)
    return out


def reachable_vectors(instance) -> set[tuple]:
    """Every utility vector (summed over rounds) of a feasible integral allocation."""
    total = {tuple(Fraction(0) for _ in instance.agents)}
    for rnd in range(instance.rounds):
        vectors = round_vectors(instance, rnd)
        total = {tuple(a + b for a, b in zip(t, v)) for t in total for v in vectors}
    return total


def brute_force_check(instance, x_vector: tuple) -> tuple[bool, Fraction]:
    """(efficient, largest total gain) of an allocation with exact utility vector ``x_vector``."""
    best = Fraction(0)
    dominated = False
    for v in reachable_vectors(instance):
        if all(a >= b for a, b in zip(v, x_vector)) and v != x_vector:
            dominated = True
            best = max(best, sum(a - b for a, b in zip(v, x_vector)))
    return (not dominated), best


def exact_utilities(instance, records) -> tuple:
    totals = {a.id: Fraction(0) for a in instance.agents}
    edges = {(e.agent, e.pool): e for e in instance.edges}
    for rec in records:
        totals[rec["agent"]] += _exact(_utility(edges[(rec["agent"], rec["pool"])], rec["round"])) * Fraction(
            rec["amount"]
        ).limit_denominator(1000)
    return tuple(totals[a.id] for a in instance.agents)


@st.composite
def instance_and_allocation(draw):
    """A tiny instance (short-decimal utilities) and a feasible allocation: integral, or halved."""
    inst = draw(small_instances(max_agents=3, max_pools=2, max_rounds=2, max_count=2, utilities=short_decimals))
    records = []
    for rnd in range(inst.rounds):
        options = list(round_allocations(inst, rnd))
        alloc = options[draw(st.integers(0, len(options) - 1))]
        for k, amount in sorted(alloc.items()):
            e = inst.edges[k]
            records.append({"agent": e.agent, "pool": e.pool, "round": rnd, "amount": float(amount)})
    if draw(st.integers(0, 3)) == 0:  # a time-sharing allocation: half of an integral one
        records = [dict(r, amount=r["amount"] / 2) for r in records]
    return inst, records


def _certificate_ok(inst, check, x_records):
    """The certificate passes the shared verifier and dominates x (pure Python)."""
    ok, reason, _ = certificate_dominates(
        inst, x_records, check.certificate, integral=check.mode == "integral", tol=check.tolerance
    )
    assert ok, reason
    probe = Result(
        instance=inst.name, method="pareto_certificate", status="feasible", allocation=check.certificate,
        utilities=check.certificate_utilities, mode=check.mode,
    )
    assert verify(inst, probe).ok


# ------------------------------------------------------------------------- property tests


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=instance_and_allocation())
def test_integral_check_matches_brute_force_with_both_solvers(case):
    inst, records = case
    x_vector = exact_utilities(inst, records)
    efficient, best_gain = brute_force_check(inst, x_vector)
    checks = [pareto_check(inst, records, solver=s) for s in ("highs", "ortools")]
    checks.append(pareto_check(inst, records, relaxation_first=False))  # the ILP alone, no LP stage
    event(f"efficient={efficient}, status={checks[0].status}, stages={checks[0].route.count('->') + 1}")
    for check in checks:
        assert check.efficient is efficient, (check.solver, check.message)
        if efficient:
            assert check.total_gain == 0.0 and check.certificate is None
        else:
            # The check maximises the total gain: the solver's optimum is the brute-force optimum.
            assert check.status == "optimal"
            assert check.total_gain == pytest.approx(float(best_gain), abs=1e-7)
            assert check.certificate_verified is True
            _certificate_ok(inst, check, records)
            gains = np.array([check.gains[a.id] for a in inst.agents])
            assert np.all(gains >= -1e-9) and gains.max() > 1e-9
    assert checks[0].total_gain == pytest.approx(checks[1].total_gain, abs=1e-7)
    assert checks[2].route.startswith("ILP")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=instance_and_allocation())
def test_fractional_check_agrees_across_solvers_and_refines_the_integral_one(case):
    inst, records = case
    highs = pareto_check(inst, records, fractional=True, solver="highs")
    ortools = pareto_check(inst, records, fractional=True, solver="ortools")
    assert highs.efficient is not None and ortools.efficient is not None
    assert highs.efficient is ortools.efficient
    assert highs.total_gain == pytest.approx(ortools.total_gain, rel=1e-7, abs=1e-7)
    for check in (highs, ortools):
        if check.efficient is False:
            _certificate_ok(inst, check, records)
    integral = pareto_check(inst, records)
    # Integral allocations are among the fractional ones: an integral improvement is a fractional one,
    # and the fractional optimum is at least the integral one.
    if integral.efficient is False:
        assert highs.efficient is False
        assert highs.total_gain >= integral.total_gain - 1e-7


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=small_instances(max_agents=3, max_pools=3, max_rounds=2), fractional=st.booleans())
def test_a_welfare_optimum_is_efficient_and_nothing_is_not(inst, fractional):
    best = lo.solve(inst, "welfare", fractional=fractional)
    for solver in ("highs", "ortools"):
        check = pareto_check(inst, best, fractional=fractional, solver=solver)
        assert check.efficient is True, check.message
        assert check.status == "optimal"
    useful = any(
        _utility(e, r) > 1e-9 and active(next(a for a in inst.agents if a.id == e.agent), r, inst.rounds)
        and next(a for a in inst.agents if a.id == e.agent).demand != 0
        for e in inst.edges
        for r in range(inst.rounds)
    )
    # Gains up to the tolerance 1e-9 (absolute here: U(x) = 0) count as zero.
    idle = pareto_check(inst, [], fractional=fractional)
    assert idle.efficient is (not useful)
    if useful:
        assert idle.total_gain > 0
        _certificate_ok(inst, idle, [])


# ------------------------------------------------------------------------------ hand cases


def _toy():
    return lo.Instance(
        pools=[lo.Pool("P", count=1), lo.Pool("Q", count=1)],
        agents=[lo.Agent("A"), lo.Agent("B")],
        edges=[lo.Edge("A", "P", 1.0), lo.Edge("A", "Q", 2.0), lo.Edge("B", "P", 3.0)],
        name="toy",
    )


def test_swap_is_found_and_certified():
    inst = _toy()
    # A holds P (worth 1 to A, 3 to B), B nothing, Q idle: giving A Q and B P helps both.
    check = pareto_check(inst, [{"agent": "A", "pool": "P", "amount": 1}])
    assert check.efficient is False
    assert check.gains == {"A": 1.0, "B": 3.0}
    assert sorted((r["agent"], r["pool"]) for r in check.certificate) == [("A", "Q"), ("B", "P")]
    assert check.to_dict()["certificate_verified"] is True


def test_the_model_blocks_are_the_documented_symbols():
    inst = _toy()
    model, columns = build_pareto_check(inst, np.zeros((3, 1)), fractional=True)
    assert set(model.variables) == {"x", "s"}
    assert set(model.constraints) == {"capacity", "demand", "gain"}
    assert not model.is_integer and model.transportation() is None
    model, _ = build_pareto_check(inst, np.zeros((3, 1)))
    assert model.variables["x"].integer and not model.variables["s"].integer
    assert not model.integrality_is_free()


def test_pyomo_route_gives_the_same_answer():
    inst = _toy()
    x = [{"agent": "A", "pool": "P", "amount": 1}]
    direct = pareto_check(inst, x)
    try:
        via = pareto_check(inst, x, via="pyomo")
    except lo.SolverUnavailableError as err:  # pragma: no cover - depends on the installed plugins
        pytest.skip(str(err))
    assert via.efficient is direct.efficient and via.total_gain == pytest.approx(direct.total_gain)


def test_infeasible_or_unknown_input_is_an_input_error():
    inst = _toy()
    with pytest.raises(InputError) as err:
        pareto_check(inst, [{"agent": "A", "pool": "P", "amount": 1}, {"agent": "B", "pool": "P", "amount": 1}])
    assert err.value.path == "$.allocation" and "infeasible" in str(err.value)
    with pytest.raises(InputError) as err:
        pareto_check(inst, [{"agent": "Z", "pool": "P", "amount": 1}])
    assert err.value.path == "$.allocation[0].agent"
    with pytest.raises(InputError) as err:
        pareto_check(inst, [{"agent": "B", "pool": "Q", "amount": 1}])
    assert "incompatible" in str(err.value)
    with pytest.raises(InputError):
        pareto_check(inst, np.zeros((2, 1)))


def test_time_limit_without_proof_is_undecided(monkeypatch):
    """A stop without a proof and without an improving incumbent decides nothing."""
    import laissez_opt.exact.pareto as pareto
    from laissez_opt.modeling.solution import Solution

    inst = _toy()
    x = [{"agent": "A", "pool": "Q", "amount": 1}, {"agent": "B", "pool": "P", "amount": 1}]

    def stopped(model, **_):
        values = np.zeros(model.n_cols)
        values[model.variables["x"].slice] = [0.0, 1.0, 1.0]  # y = x: zero gain, bound unproven
        return Solution("time_limit", values, 0.0, 1.0, None, "highs", "stub", 0.0, 0.0, "Time limit reached")

    monkeypatch.setattr(pareto, "solve_model", stopped)
    check = pareto_check(inst, x, time_limit=0.01)
    assert check.efficient is None and check.status == "time_limit" and "undecided" in check.message

    def nothing(model, **_):
        raise lo.NoSolutionError("OR-Tools SCIP returned NOT_SOLVED")

    monkeypatch.setattr(pareto, "solve_model", nothing)
    check = pareto_check(inst, x, time_limit=0.01)
    assert check.efficient is None and check.status == "time_limit" and "NOT_SOLVED" in check.message
    assert check.route == "LP: no solution -> ILP: no solution"


# ------------------------------------------------------------------------------------ R2


R2_ROWS = {
    # Table 3.2 of the thesis: A1 row, A2 row, one list per round over c1..c4.
    "time_equal": ([[0.5] * 4] * 3, [[0.5] * 4] * 3),
    "M0": ([[0, 1, 0, 1], [1, 1, 0, 0], [1, 0, 1, 0]], [[1, 0, 1, 0], [0, 0, 1, 1], [0, 1, 0, 1]]),
    "M1": ([[0, 0, 1, 1]] * 3, [[1, 1, 0, 0]] * 3),
    "MTF": ([[0, 1, 0, 0], [1, 1, 1, 0], [1, 0, 1, 0]], [[1, 0, 1, 1], [0, 0, 0, 1], [0, 1, 0, 1]]),
}


def r2_records(row: str) -> list[dict]:
    out = []
    for agent, table in zip(("A1", "A2"), R2_ROWS[row]):
        for rnd, amounts in enumerate(table):
            out += [
                {"agent": agent, "pool": f"c{c + 1}", "round": rnd, "amount": float(v)}
                for c, v in enumerate(amounts) if v
            ]
    return out


@pytest.fixture(scope="module")
def r2():
    return lo.load(INSTANCES / "thesis-r2-table3-1.json")


@pytest.mark.parametrize("solver", ["highs", "ortools"])
def test_r2_only_the_mtf_row_is_pareto_efficient(r2, solver):
    verdicts = {}
    for row in R2_ROWS:
        for fractional in (False, True):
            check = pareto_check(r2, r2_records(row), fractional=fractional, solver=solver)
            verdicts[(row, fractional)] = (check.efficient, round(check.total_gain, 9))
            if check.efficient is False:
                _certificate_ok(r2, check, r2_records(row))
    # The largest total gains are solver-independent (they are optima); the certificates may differ.
    assert verdicts == {
        ("time_equal", False): (False, 2.2), ("time_equal", True): (False, 2.2),
        ("M0", False): (False, 0.8), ("M0", True): (False, 0.8),
        ("M1", False): (False, 2.7), ("M1", True): (False, 2.7),
        ("MTF", False): (True, 0.0), ("MTF", True): (True, 0.0),
    }


def test_r2_mtf_row_dominates_m0_and_m1(r2):
    """MTF's utilities (5.3, 3.3) are above M0's (4.6, 3.2) and M1's (2.8, 3.1): M2 itself certifies both."""
    mtf = allocation_amounts(r2, r2_records("MTF"))
    from laissez_opt.result import edge_utilities

    u_mtf = edge_utilities(r2, mtf)
    for row in ("M0", "M1", "time_equal"):
        u = edge_utilities(r2, allocation_amounts(r2, r2_records(row)))
        assert np.all(u_mtf >= u) and np.any(u_mtf > u)
        ok, reason, _ = certificate_dominates(r2, r2_records(row), r2_records("MTF"), integral=True, tol=1e-9)
        assert ok, reason
