"""maxmin: exact weighted leximin, HiGHS vs OR-Tools vs independent references.

* integral: every allocation enumerated (``brute_force_maxmin.brute_force_leximin``);
* fractional: a slow waterfilling with ``scipy.optimize.linprog`` and one LP per
  agent per level (``brute_force_maxmin.reference_waterfilling``);
* properties of ``models/maxmin.md``: the first level is ``min phi`` (equal_share),
  ``min phi >= min q`` (demand-capped share) and so SI without binding caps,
  agents with no possible utility are fixed at 0, every allocation verifies
  (``lo.solve`` verifies each result and raises otherwise).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import laissez_opt as lo
from laissez_opt.analysis.metrics import sharing_ratios
from laissez_opt.exact.maxmin import build_maxmin
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.shares import capped_share_ratios

from brute_force_maxmin import brute_force_leximin, maxmin_polytope, reference_waterfilling, taking_part

NORMALIZERS = ("equal_share", "raw")


@st.composite
def tiny_instances(draw, max_cells: int = 8):
    """1-3 agents, 1-2 pools of 1-2 devices, 1-2 rounds (at most ``max_cells`` edge-rounds), sparse edges.

    Utilities are short decimals in [0, 3] (zero included), weights in {0.5, 1, 2, 3},
    demands None/0/1/2 and random windows when there are two rounds.
    """
    n = draw(st.integers(1, 3))
    m = draw(st.integers(1, 2))
    rounds = draw(st.integers(1, 2)) if n * m * 2 <= max_cells else 1
    pools = [Pool(f"p{c}", count=draw(st.integers(1, 2))) for c in range(m)]
    agents = []
    for i in range(n):
        arrival, deadline = 0, None
        if rounds > 1:
            arrival = draw(st.integers(0, rounds - 1))
            deadline = draw(st.one_of(st.none(), st.integers(arrival, rounds - 1)))
        agents.append(Agent(f"a{i}", weight=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
                            demand=draw(st.sampled_from([None, None, 0, 1, 2])), arrival=arrival, deadline=deadline))
    utility = st.one_of(st.just(0.0), st.integers(1, 30).map(lambda k: k / 10))
    edges = []
    for i in range(n):
        for c in range(m):
            if draw(st.integers(0, 3)) > 0:
                u = tuple(draw(utility) for _ in range(rounds)) if rounds > 1 and draw(st.booleans()) else draw(utility)
                edges.append(Edge(f"a{i}", f"p{c}", u))
    return Instance(pools, agents, edges, rounds=rounds, name="tiny")


def close(a, b, tol=1e-6) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


# ------------------------------------------------------------------ integral: brute force
@settings(max_examples=200, deadline=None)
@given(inst=tiny_instances(), normalizer=st.sampled_from(NORMALIZERS))
def test_integral_leximin_agrees_with_enumeration(inst, normalizer):
    poly = maxmin_polytope(inst, normalizer)
    best = brute_force_leximin(poly)
    part = {poly.ids[i] for i in taking_part(poly, integral=True)}
    for solver in ("highs", "ortools"):
        r = lo.solve(inst, "maxmin", solver=solver, normalizer=normalizer)
        assert r.status == "optimal" and r.verified
        got = sorted(v for a, v in r.details["leximin"].items() if a in part)
        assert close(got, best), (solver, got, best)
        assert close(sorted(r.details["levels"]), best), (solver, r.details["levels"], best)
        assert set(r.details["excluded"]) == {a.id for a in inst.agents} - part
        assert all(r.details["leximin"][a] == 0 for a in r.details["excluded"])
        assert math.isclose(r.objective, best[0] if best else 0.0, rel_tol=1e-6, abs_tol=1e-9)


def test_one_huge_weight_keeps_every_agent_in_the_model():
    # One weight 10^7 times the others: the equal-share normalised coefficients span about 4e7.
    # Scaled by the largest alone, the heavy agent's fell to about 1e-8 and HiGHS read its values
    # as 0, so step 1 "proved" a max-min of 0; value_unit now centres the spread on 1.
    inst = Instance(
        [Pool("p0", count=3), Pool("p1", count=2)],
        [Agent("heavy", weight=1e7), Agent("a1"), Agent("a2"), Agent("a3")],
        [Edge("heavy", "p0", 2.0), Edge("heavy", "p1", 1.0), Edge("a1", "p0", 1.0), Edge("a2", "p1", 3.0),
         Edge("a3", "p0", 1.5), Edge("a3", "p1", 0.5)],
    )
    poly = maxmin_polytope(inst, "equal_share")
    best = brute_force_leximin(poly)
    assert best[0] > 0
    for solver in ("highs", "ortools"):
        r = lo.solve(inst, "maxmin", solver=solver, levels="ordered_outcomes")
        assert r.status == "optimal" and r.verified
        assert close(sorted(r.details["levels"]), best), (solver, r.details["levels"], best)
        assert math.isclose(r.objective, best[0], rel_tol=1e-6)
    first = lo.solve(inst, "maxmin", levels="first_level")
    assert math.isclose(first.objective, best[0], rel_tol=1e-6) and first.bound >= best[0] * (1 - 1e-6)


@pytest.mark.parametrize("weight", [1e5, 1e6, 1e7])
def test_fractional_routes_agree_under_one_heavy_weight(weight):
    # GLOP stopped ABNORMAL here: a frozen heavy agent's level row has coefficients near 1e-6
    # (ortools_route.glop_row_scale now scales such rows by powers of two).
    inst = Instance(
        [Pool("p0", count=3), Pool("p1", count=2)],
        [Agent("heavy", weight=weight, work=1.0), Agent("a1", work=1.0), Agent("a2", work=2.0),
         Agent("a3", work=1.0)],
        [Edge("heavy", "p0", 2.0), Edge("heavy", "p1", 1.0), Edge("a1", "p0", 1.0), Edge("a2", "p1", 3.0),
         Edge("a3", "p0", 1.5), Edge("a3", "p1", 0.5)],
    )
    for method in ("maxmin", "drf"):
        results = [lo.solve(inst, method, fractional=True, solver=solver) for solver in ("highs", "ortools")]
        for r in results:
            assert r.status == "optimal" and r.verified, (method, r.status)
        assert math.isclose(results[0].objective, results[1].objective, rel_tol=1e-6), method
    levels = [sorted(lo.solve(inst, "maxmin", fractional=True, solver=s).details["levels"]) for s in ("highs", "ortools")]
    assert close(levels[0], levels[1])


def test_glop_duals_survive_row_scaling():
    from laissez_opt.modeling import solve_model
    from laissez_opt.modeling.linear import LinearModel

    # max x0 + x1  s.t.  1e-6 x0 + 2e-6 x1 <= 3e-6,  x0 + x1 <= 2.5 (x <= 2): the first row is rescaled.
    model = LinearModel("scaled", sense="max")
    x = model.add_variables("x", 2, upper=2.0)
    model.add_constraints("tiny", rows=np.array([0, 0]), cols=x.columns(np.arange(2)), coefs=np.array([1e-6, 2e-6]), upper=3e-6)
    model.add_constraints("sum", rows=np.array([0, 0]), cols=x.columns(np.arange(2)), coefs=np.ones(2), upper=2.5)
    model.set_objective(x, np.ones(2))
    glop, highs = (solve_model(model, duals=True, solver="ortools", backend="glop"),
                   solve_model(model, duals=True, solver="highs"))
    assert glop.status == highs.status == "optimal"
    assert math.isclose(glop.objective, highs.objective, rel_tol=1e-9)
    assert np.allclose(glop.duals.row, highs.duals.row, rtol=1e-7, atol=1e-9), (glop.duals.row, highs.duals.row)
    assert np.allclose(glop.duals.column, model.objective - model.csc().T @ glop.duals.row, atol=1e-7)


def test_normalised_spread_beyond_the_solvers_is_refused():
    # Weight 10^9 against 1 (spread about 4e9): several routes returned wrong values there.
    inst = Instance(
        [Pool("p0", count=3), Pool("p1", count=2)],
        [Agent("heavy", weight=1e9), Agent("a1"), Agent("a2")],
        [Edge("heavy", "p0", 2.0), Edge("heavy", "p1", 1.0), Edge("a1", "p0", 1.0), Edge("a2", "p1", 3.0)],
    )
    for options in ({}, {"levels": "first_level"}, {"fractional": True}, {"solver": "ortools"}):
        with pytest.raises(lo.InputError, match="span"):
            lo.solve(inst, "maxmin", **options)



def test_cli_names_the_file_of_a_refused_spread(tmp_path):
    from click.testing import CliRunner

    from laissez_opt.cli.main import cli

    inst = Instance([Pool("p0", count=3)], [Agent("heavy", weight=1e9), Agent("a1")],
                    [Edge("heavy", "p0", 2.0), Edge("a1", "p0", 1.0)])
    path = tmp_path / "heavy.json"
    lo.save_instance(inst, path)
    run = CliRunner().invoke(cli, ["solve", str(path), "--method", "maxmin"])
    assert run.exit_code == 2 and "Traceback" not in run.output
    assert f"{path}: $: the normalised value coefficients span" in run.output.replace("\n", " ")


@pytest.mark.parametrize("method, options", [("maxmin", {}), ("maxmin", {"fractional": True}), ("themis", {}),
                                             ("themis", {"fractional": True}), ("drf", {}), ("drf", {"fractional": True})])
def test_subnormal_weight_is_refused_naming_the_agent(method, options):
    # w = 1e-320 is > 0, as the format asks, but u / (w E) or delta / w overflow float64.
    import warnings

    inst = Instance([Pool("p0", count=2), Pool("p1")], [Agent("tiny", weight=1e-320, work=1.0), Agent("a1", work=1.0)],
                    [Edge("tiny", "p0", 1.0), Edge("tiny", "p1", 2.0), Edge("a1", "p0", 1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(lo.InputError, match="overflow") as err:
            lo.solve(inst, method, **options)
    assert "agent 'tiny'" in str(err.value) or method == "maxmin"


# ------------------------------------------------------------- fractional: slow reference
@settings(max_examples=200, deadline=None)
@given(inst=tiny_instances(), normalizer=st.sampled_from(NORMALIZERS))
def test_fractional_leximin_agrees_with_reference(inst, normalizer):
    poly = maxmin_polytope(inst, normalizer)
    reference = reference_waterfilling(poly)
    part = [poly.ids[i] for i in taking_part(poly, integral=False)]
    for solver, freeze in (("highs", "dual"), ("highs", "probe"), ("ortools", "dual")):
        r = lo.solve(inst, "maxmin", fractional=True, solver=solver, freeze=freeze, normalizer=normalizer)
        assert r.status == "optimal" and r.verified
        for agent, value in reference.items():
            assert math.isclose(r.details["leximin"][agent], value, rel_tol=1e-6, abs_tol=1e-7), (solver, freeze, agent)
        levels = r.details["levels"]
        # Waterfilling levels never go down (a level re-solved after a partial freeze may repeat).
        assert all(b >= a - 1e-9 * max(1.0, abs(a)) for a, b in zip(levels, levels[1:]))
        if part:
            assert math.isclose(r.objective, min(reference[a] for a in part), rel_tol=1e-6, abs_tol=1e-9)
            assert math.isclose(levels[0], r.objective, rel_tol=1e-6, abs_tol=1e-9)
        if normalizer == "equal_share" and part:
            _check_sharing_incentive(inst, r, part)


def _check_sharing_incentive(inst, r, part):
    """models/maxmin.md, guarantees G3-G4: first level = min phi; min phi >= min q; SI without binding caps."""
    utilities = np.array([r.utilities[a.id] for a in inst.agents])
    phi = dict(zip((a.id for a in inst.agents), sharing_ratios(inst, utilities)))
    q = dict(zip((a.id for a in inst.agents), capped_share_ratios(inst)))
    min_phi = min(phi[a] for a in part)
    assert math.isclose(r.details["levels"][0], min_phi, rel_tol=1e-6, abs_tol=1e-9)
    assert min_phi >= min(q[a] for a in part) - 1e-7
    if all(q[a] >= 1.0 for a in part):
        assert min_phi >= 1 - 1e-7


def test_sharing_incentive_needs_uncapped_demand():
    """A demand cap can make SI impossible: A may use 1 device but its equal share is 2."""
    inst = Instance([Pool("P", count=4)], [Agent("A", demand=1), Agent("B")],
                    [Edge("A", "P", 1.0), Edge("B", "P", 1.0)])
    r = lo.solve(inst, "maxmin", fractional=True)
    assert math.isclose(r.objective, 0.5) and math.isclose(r.details["leximin"]["B"], 1.5)
    assert capped_share_ratios(inst).tolist() == [0.5, 1.0]
    assert r.details["levels"] == pytest.approx([0.5, 1.5])


# ------------------------------------------------------------------------ fixed examples
def _example():
    return Instance(
        [Pool("V100", count=2), Pool("K80", count=2)],
        [Agent("A"), Agent("B", weight=2.0), Agent("C", demand=1), Agent("D")],
        [Edge("A", "V100", 4.0), Edge("A", "K80", 1.0), Edge("B", "V100", 2.0), Edge("B", "K80", 2.0),
         Edge("C", "V100", 3.0), Edge("D", "K80", 0.0)],
        name="example",
    )


@pytest.mark.parametrize("fractional", [True, False])
@pytest.mark.parametrize("normalizer", NORMALIZERS)
def test_every_route_agrees(fractional, normalizer):
    inst = _example()
    results = [
        lo.solve(inst, "maxmin", fractional=fractional, normalizer=normalizer, solver=solver, via=via)
        for solver, via in (("highs", "direct"), ("ortools", "direct"), ("highs", "pyomo"))
    ]
    vectors = [sorted(r.details["leximin"].values()) for r in results]
    for r, vec in zip(results, vectors):
        assert r.status == "optimal" and r.verified
        assert close(vec, vectors[0]), (r.route, vec, vectors[0])
    assert results[0].details["excluded"] == ["D"]  # no positive utility anywhere
    assert results[0].details["leximin"]["D"] == 0.0


def test_details_and_result_file():
    r = lo.solve(_example(), "maxmin", fractional=True)
    d = r.details
    assert d["normalizer"] == "equal_share" and d["freeze"] == "dual"
    assert d["solves"] == len(d["solve_times"]) >= len(d["levels"])
    assert sum(d["frozen_per_level"]) == 3  # A, B, C take part
    assert r.to_dict()["details"]["leximin"].keys() == {"A", "B", "C", "D"}
    model, plan = build_maxmin(_example(), fractional=True)
    assert set(model.variables) == {"x", "t"} and set(model.constraints) == {"capacity", "demand", "level"}
    model, plan = build_maxmin(_example(), fractional=False)
    assert set(model.variables) == {"x", "r", "d"}
    assert set(model.constraints) == {"capacity", "demand", "excess", "cumulative"}


def test_bad_options():
    with pytest.raises(lo.InputError, match="normalizer"):
        lo.solve(_example(), "maxmin", normalizer="gavel")
    with pytest.raises(lo.InputError, match="freeze"):
        lo.solve(_example(), "maxmin", fractional=True, freeze="epsilon")


def test_nothing_to_share():
    inst = Instance([Pool("P")], [Agent("A", demand=0), Agent("B")], [Edge("A", "P", 1.0)])
    r = lo.solve(inst, "maxmin", fractional=True)
    assert r.status == "optimal" and r.objective == 0.0 and r.allocation == []
    assert r.details["excluded"] == ["A", "B"]


def test_gavel_1024_jobs_three_types_is_fast():
    """The issue's target: the whole fractional leximin of gavel(1024, 3) in well under a second of solving."""
    inst = lo.generate("gavel", 1024, 3)
    lo.solve(lo.generate("gavel", 16, 3), "maxmin", fractional=True)  # imports, first-call costs
    start = time.perf_counter()
    r = lo.solve(inst, "maxmin", fractional=True)
    elapsed = time.perf_counter() - start
    assert r.status == "optimal" and r.verified
    assert elapsed < 3.0  # about 0.1-0.3 s here; generous for a loaded machine
    assert math.isclose(r.objective, r.metrics["min_phi"], rel_tol=1e-7)
    assert r.objective >= 1 - 1e-9  # no binding caps on this instance: SI holds


def test_per_agent_sharing_incentive_can_fail():
    """Only min phi >= min q holds: B's window (q_B = 0.5) pulls A below its own q_A = 1.

    One device, two rounds; A (w 0.5) is worth 0.1 in round 1 only, B (w 1) arrives in
    round 1 and is worth 0.1 per round.  Leximin splits round 1 as 0.2 : 0.8, so both get
    phi = 0.6: A below its capped share (1), B above its own (0.5).
    """
    inst = Instance([Pool("P")], [Agent("A", weight=0.5), Agent("B", arrival=1)],
                    [Edge("A", "P", (0.0, 0.1)), Edge("B", "P", 0.1)], rounds=2)
    r = lo.solve(inst, "maxmin", fractional=True)
    assert r.details["leximin"] == pytest.approx({"A": 0.6, "B": 0.6})
    assert capped_share_ratios(inst).tolist() == pytest.approx([1.0, 0.5])
    assert r.details["leximin"]["A"] < 1.0 and r.objective >= min(capped_share_ratios(inst)) - 1e-9


@settings(max_examples=40, deadline=None)
@given(inst=tiny_instances(), fractional=st.booleans(), normalizer=st.sampled_from(NORMALIZERS))
def test_leximin_is_pareto_efficient(inst, fractional, normalizer):
    """A Pareto improvement would raise the sorted vector of values: the exact Pareto check finds none."""
    from laissez_opt.exact.pareto import pareto_check

    r = lo.solve(inst, "maxmin", fractional=fractional, normalizer=normalizer)
    assert pareto_check(inst, r, fractional=fractional).efficient


def _heterogeneous(tmp_path, n: int):
    """The heterogeneous ``n x n`` instance of ``benchmarks/scaling_partition.py`` (about 5 random pools per agent)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from partition_public_path import write_npz
    from scaling_partition import make_problem

    path = tmp_path / f"heterogeneous_{n}.npz"
    write_npz(make_problem(n, n), path, f"heterogeneous-{n}x{n}")
    return lo.load(path)


def test_whole_leximin_matches_the_exact_waterfilling_on_an_ill_conditioned_instance(tmp_path):
    """On the heterogeneous 180 x 180 instance the later levels are ill-conditioned: before the level
    LPs held the optimal face (``hold_optimal_face``), floors met only to HiGHS's tolerance let columns
    drift and the waterfilling gave values up to 2.4% off the exact rational waterfilling that
    ``lo.certify`` runs; holding it, every value agrees to 1e-9 and certify proves the result."""
    inst = _heterogeneous(tmp_path, 180)
    result = lo.solve(inst, "maxmin", fractional=True)
    assert result.status == "optimal" and result.verified
    report = lo.certify(inst, result, tolerance=1e-9)
    assert report.proven, report.failure
    exact = {a: float(Fraction(v)) for a, v in report.exact["leximin"].items()}
    worst = max(abs(result.details["leximin"][a] - v) / max(1.0, v) for a, v in exact.items())
    assert worst <= 1e-9
