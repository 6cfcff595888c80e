"""Declared linear models: structure detection, matrices, violations, and every solver route."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.errors import InputError, SolverUnavailableError
from laissez_opt.exact.welfare import build_welfare
from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.modeling import LinearModel, solve_model
from laissez_opt.modeling.highs_route import solve_highs
from laissez_opt.modeling.pyomo_route import write_model

INF = float("inf")


def _welfare_model(*, fractional=False, demand=1):
    inst = Instance(
        [Pool("g", count=2), Pool("h")],
        [Agent("a", demand=demand), Agent("b")],
        [Edge("a", "g", 3.0), Edge("a", "h", 2.0), Edge("b", "g", 1.0)],
    )
    return build_welfare(inst, fractional=fractional)


# ----------------------------------------------------------------------------- structure


def test_transportation_detected_and_lost():
    model, _ = _welfare_model()
    t = model.transportation()
    assert t is not None and t.arcs == "x"
    assert {t.left_block, t.right_block} == {"demand", "capacity"}
    assert model.is_integer and model.integrality_is_free()
    assert model.summary()["transportation"] is True
    # Any further constraint breaks the bipartite incidence structure.
    x = model.variables["x"]
    model.add_constraints("budget", rows=np.zeros(2, dtype=np.int64), cols=x.columns([0, 2]),
                          coefs=np.array([1.0, 1.0]), upper=np.array([1.0]))
    assert model.transportation() is None
    assert not model.integrality_is_free()
    assert model.summary()["transportation"] is False
    assert model.summary()["constraints"] == {"demand": 1, "capacity": 2, "budget": 1}


def test_transportation_lost_with_another_variable_block():
    model, _ = _welfare_model()
    model.add_variables("slack", 1)
    assert model.transportation() is None and not model.integrality_is_free()


def test_transportation_lost_with_a_nonzero_lower_bound():
    model, _ = _welfare_model()
    model.variables["x"].lower[0] = 1.0
    assert model.transportation() is None


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from(["min", "max"]), st.data())
def test_left_nodes_that_must_ship_on_the_flow_route(n_left, n_right, sense, data):
    """Rows ``lower <= sum <= capacity`` on the first block (an agent that must be placed) keep the
    transportation structure: OR-Tools min-cost flow then equals HiGHS's MIP, infeasible cases included."""
    arcs = [(i, j) for i in range(n_left) for j in range(n_right) if data.draw(st.booleans())]
    if not arcs:
        return
    left, right = (np.array(v, dtype=np.int64) for v in zip(*arcs))
    m = LinearModel("must_ship", sense=sense)
    x = m.add_variables("x", len(arcs), upper=np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, np.inf]),
                                                                           min_size=len(arcs), max_size=len(arcs)))),
                        integer=True)
    upper = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n_left, max_size=n_left)), dtype=float)
    lower = np.array([data.draw(st.integers(0, int(u))) for u in upper], dtype=float)
    m.add_constraints("placed", rows=left, cols=x.columns(np.arange(len(arcs))), coefs=np.ones(len(arcs)),
                      lower=lower, upper=upper, n_rows=n_left)
    m.add_constraints("capacity", rows=right, cols=x.columns(np.arange(len(arcs))), coefs=np.ones(len(arcs)),
                      upper=np.array(data.draw(st.lists(st.integers(0, 3), min_size=n_right, max_size=n_right)), float),
                      n_rows=n_right)
    m.set_objective(x, np.array(data.draw(st.lists(st.integers(-3, 3), min_size=len(arcs), max_size=len(arcs))), float))
    t = m.detect_transportation()
    assert t is not None and m.integrality_is_free()
    assert (t.left_lower is not None) == bool(np.any(lower > 0))
    flow = solve_model(m, solver="ortools", backend="min_cost_flow")
    mip = solve_highs(m, relax_integrality=False)
    assert flow.status == mip.status, (flow.status, mip.status)
    if flow.status == "optimal":
        assert flow.objective == pytest.approx(mip.objective, abs=1e-9)
        assert m.max_violation(flow.values) <= 1e-9


def test_a_transportation_lp_with_fractional_capacities_goes_to_glop():
    """The OR-Tools route sent every transportation LP to min-cost flow, which then refused
    fractional capacities ("min-cost flow needs integer capacities") instead of solving the LP."""
    m = LinearModel("t", sense="max")
    x = m.add_variables("x", 2, upper=np.inf)
    m.add_transportation(x, left=np.array([0, 1]), right=np.array([0, 0]), left_capacity=np.array([1.0, 1.0]),
                         right_capacity=np.array([1.5]), left_block="demand", right_block="capacity")
    m.set_objective(x, np.array([2.0, 1.0]))
    solution = solve_model(m, solver="ortools")
    assert solution.status == "optimal" and solution.objective == pytest.approx(2.5)
    assert "glop" in solution.route.lower()


def test_integrality_not_free_with_fractional_capacity():
    m = LinearModel("t")
    x = m.add_variables("x", 2, upper=[1.0, 1.0], integer=True)
    m.add_transportation(
        x, left=np.array([0, 0]), right=np.array([0, 1]),
        left_capacity=np.array([1.5]), right_capacity=np.array([1.0, 1.0]),
        left_block="l", right_block="r",
    )
    assert m.transportation() is not None
    assert not m.integrality_is_free()
    m.variables["x"].upper[:] = 0.5
    m.constraints["l"].upper[:] = 1.0
    m._transportation.left_capacity[:] = 1.0
    assert not m.integrality_is_free()  # a fractional variable bound breaks it too


def test_infinite_capacity_makes_no_row():
    inst = Instance([Pool("g", count=3)], [Agent("a"), Agent("b", demand=2)], [Edge("a", "g", 1.0), Edge("b", "g", 1.0)])
    model, _ = build_welfare(inst)
    assert model.constraints["demand"].size == 1  # only b has a finite demand
    assert model.constraints["capacity"].size == 1
    assert model.integrality_is_free()


def test_declaration_errors():
    m = LinearModel("t")
    m.add_variables("x", 1)
    with pytest.raises(ValueError):
        m.add_variables("x", 1)
    m.add_constraints("c", rows=np.array([0]), cols=np.array([0]), coefs=np.array([1.0]), upper=1.0)
    with pytest.raises(ValueError):
        m.add_constraints("c", rows=np.array([0]), cols=np.array([0]), coefs=np.array([1.0]), upper=1.0)
    with pytest.raises(ValueError):
        LinearModel("t", sense="maximise")


# ----------------------------------------------------------------------------- matrices


def test_csc_of_the_welfare_model():
    model, _ = _welfare_model()
    dense = model.csc().toarray()
    # Rows: demand(a), capacity(g), capacity(h); columns: x[a,g], x[a,h], x[b,g].
    assert dense.tolist() == [[1, 1, 0], [1, 0, 1], [0, 1, 0]]
    lower, upper, integer = model.bounds()
    assert lower.tolist() == [0, 0, 0] and upper.tolist() == [1, 1, 2] and integer.all()
    rl, ru = model.row_bounds()
    assert np.isinf(rl).all() and ru.tolist() == [1, 2, 1]


@st.composite
def block_models(draw):
    m = LinearModel("h")
    n = draw(st.integers(1, 6))
    m.add_variables("x", n)
    dense = []
    for k in range(draw(st.integers(0, 4))):
        rows_n = draw(st.integers(1, 4))
        entries = draw(st.lists(st.tuples(st.integers(0, rows_n - 1), st.integers(0, n - 1),
                                          st.integers(-5, 5).map(float)), max_size=10))
        block = np.zeros((rows_n, n))
        for r, c, v in entries:
            block[r, c] += v  # repeated coordinates add up
        dense.append(block)
        rows = np.array([e[0] for e in entries], dtype=np.int64)
        cols = np.array([e[1] for e in entries], dtype=np.int64)
        coefs = np.array([e[2] for e in entries], dtype=np.float64)
        m.add_constraints(f"c{k}", rows=rows, cols=cols, coefs=coefs, upper=1.0, n_rows=rows_n)
    expected = np.vstack(dense) if dense else np.zeros((0, n))
    return m, expected


@settings(max_examples=150, deadline=None)
@given(block_models())
def test_csc_equals_the_summed_triplets(case):
    model, expected = case
    matrix = model.csc()
    assert matrix.shape == expected.shape
    assert np.array_equal(matrix.toarray(), expected)
    # canonical CSC: row indices strictly ascending within each column
    for j in range(matrix.shape[1]):
        rows = matrix.indices[matrix.indptr[j]:matrix.indptr[j + 1]]
        assert np.all(np.diff(rows) > 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.data())
def test_csc_of_transportation_blocks(n_agents, n_pools, rounds, data):
    pools = [Pool(f"p{c}", count=data.draw(st.integers(1, 3))) for c in range(n_pools)]
    agents = [Agent(f"a{i}", demand=data.draw(st.sampled_from([None, 1, 2]))) for i in range(n_agents)]
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n_agents - 1), st.integers(0, n_pools - 1)), unique=True))
    inst = Instance(pools, agents, [Edge(f"a{i}", f"p{c}", 1.0) for i, c in pairs], rounds=rounds)
    model, columns = build_welfare(inst)
    dense = model.csc().toarray()
    # Independent construction: one row per finite-demand agent-round, then one per pool-round.
    finite = [i for i, a in enumerate(agents) if a.demand is not None]
    expect = np.zeros((len(finite) * rounds + n_pools * rounds, len(pairs) * rounds))
    for k, (i, c) in enumerate(pairs):
        for r in range(rounds):
            col = k * rounds + r
            if i in finite:
                expect[finite.index(i) * rounds + r, col] = 1
            expect[len(finite) * rounds + c * rounds + r, col] = 1
    assert np.array_equal(dense, expect)


def test_max_violation():
    m = LinearModel("t")
    x = m.add_variables("x", 2, lower=0.0, upper=[2.0, INF], integer=True)
    m.add_constraints("sum", rows=np.array([0, 0]), cols=x.columns([0, 1]), coefs=np.array([1.0, 2.0]),
                      lower=1.0, upper=4.0)
    assert m.max_violation(np.array([1.0, 1.0])) == 0.0
    assert m.max_violation(np.array([2.0, 2.0])) == pytest.approx(2.0)     # row: 6 > 4
    assert m.max_violation(np.array([0.0, 0.0])) == pytest.approx(1.0)     # row: 0 < 1
    assert m.max_violation(np.array([3.0, 0.0])) == pytest.approx(1.0)     # bound: 3 > 2
    assert m.max_violation(np.array([-0.5, 1.0])) == pytest.approx(0.5)    # bound and integrality
    assert m.max_violation(np.array([1.0, 0.25])) == pytest.approx(0.25)   # integrality only
    assert m.max_violation(np.array([1.5, 0.0])) == pytest.approx(0.5)     # integrality


def test_objective_value_with_offset():
    m = LinearModel("t", sense="min")
    x = m.add_variables("x", 2)
    m.set_objective(x, [1.0, -2.0], offset=3.0)
    assert m.objective_value(np.array([2.0, 1.0])) == 3.0


# ----------------------------------------------------------------------------- infeasible


def _infeasible_model(integer: bool):
    m = LinearModel("infeasible", sense="max")
    x = m.add_variables("x", 2, upper=1.0, integer=integer)
    m.add_constraints("need", rows=np.array([0, 0]), cols=x.columns([0, 1]), coefs=np.array([1.0, 1.0]), lower=3.0)
    m.set_objective(x, [1.0, 1.0])
    return m



ROUTES = [
    ("highs", "direct", None),
    ("highs", "pyomo", None),
    ("ortools", "direct", None),
    ("ortools", "direct", "glop"),
    ("ortools", "direct", "scip"),
    ("ortools", "direct", "cp_sat"),
]


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "mip"])
@pytest.mark.parametrize("solver,via,backend", ROUTES, ids=lambda v: str(v))
def test_infeasible_on_every_route(integer, solver, via, backend):
    model = _infeasible_model(integer)
    if backend == "cp_sat" and not integer:
        with pytest.raises(SolverUnavailableError):
            solve_model(model, solver=solver, via=via, backend=backend)
        return
    if backend == "glop" and integer:
        with pytest.raises(SolverUnavailableError):
            solve_model(model, solver=solver, via=via, backend=backend)
        return
    solution = solve_model(model, solver=solver, via=via, backend=backend)
    assert solution.status == "infeasible"
    assert solution.values is None and solution.objective is None


def test_min_cost_flow_refuses_non_transportation_models():
    with pytest.raises(SolverUnavailableError):
        solve_model(_infeasible_model(False), solver="ortools", backend="min_cost_flow")


def test_unknown_solver_route_backend():
    model, _ = _welfare_model()
    with pytest.raises(InputError):
        solve_model(model, solver="cplex-please")
    with pytest.raises(InputError):
        solve_model(model, via="carrier-pigeon")
    with pytest.raises(SolverUnavailableError):
        solve_model(model, solver="ortools", backend="nosuch")
    with pytest.raises(InputError):
        solve_model(model, time_limit=0)


# ----------------------------------------------------------------------------- a MIP that is not TU


def _knapsack(integer_data: bool = True, *, integer: bool = True):
    """A 3-item multi-constraint knapsack: binary optimum 9 (a + b), LP optimum about 10.67.

    ``integer_data=False`` makes the data fractional (binary optimum 9.3, not CP-SAT material).
    """
    m = LinearModel("knapsack", sense="max")
    x = m.add_variables("x", 3, upper=1.0, integer=integer)
    rows = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    cols = x.columns([0, 1, 2, 0, 1, 2, 0, 1, 2])
    m.add_constraints("cap", rows=rows, cols=cols, coefs=np.array([2, 3, 1, 4, 1, 2, 3, 4, 2], float),
                      upper=np.array([5.0, 11.0, 8.0]) if integer_data else np.array([5.5, 11.0, 8.0]))
    m.set_objective(x, [5.0, 4.0, 3.0] if integer_data else [5.1, 4.2, 3.3])
    return m


def _enumerate(model):
    import itertools

    best = -INF
    for bits in itertools.product([0.0, 1.0], repeat=model.n_cols):
        v = np.array(bits)
        if model.max_violation(v) <= 1e-12:
            best = max(best, model.objective_value(v))
    return best


@pytest.mark.parametrize("integer_data", [True, False], ids=["integer-data", "fractional-data"])
def test_mip_same_optimum_on_every_route(integer_data):
    model = _knapsack(integer_data)
    assert model.transportation() is None and not model.integrality_is_free()
    expected = _enumerate(model)
    # The LP relaxation is strictly better: integrality really matters here.
    assert expected == pytest.approx(9.0 if integer_data else 9.3)
    relaxed = solve_model(_knapsack(integer_data, integer=False))
    assert relaxed.objective > expected + 1e-6
    runs = [solve_model(model), solve_model(model, via="pyomo"),
            solve_model(model, solver="ortools"), solve_model(model, solver="ortools", backend="scip")]
    if integer_data:
        runs.append(solve_model(model, solver="ortools", backend="cp_sat"))
        assert "cp-sat" in solve_model(model, solver="ortools").route  # the automatic choice
    else:
        assert "scip" in solve_model(model, solver="ortools").route
        with pytest.raises(SolverUnavailableError):
            solve_model(model, solver="ortools", backend="cp_sat")
    for s in runs:
        assert s.status == "optimal", s.route
        assert s.objective == pytest.approx(expected, rel=1e-9), s.route
        assert model.max_violation(s.values) <= 1e-9, s.route
        assert s.gap is not None and s.gap <= 1e-6


# ----------------------------------------------------------------------------- CP-SAT answers about the model it was given

#: The integer-program routes; CP-SAT takes every model below (integer data).
MIP_ROUTES = [("highs", "direct", None), ("highs", "pyomo", None), ("ortools", "direct", "scip"),
              ("ortools", "direct", "cp_sat")]


def _empty_domain():
    """An integer column with lower bound 1 and upper bound 0: infeasible, whatever the rows."""
    m = LinearModel("empty-domain", sense="max")
    x = m.add_variables("x", 2, lower=np.array([0.0, 1.0]), upper=np.array([1.0, 0.0]), integer=True)
    m.add_constraints("c", rows=np.array([0, 0]), cols=x.columns([0, 1]), coefs=np.ones(2), upper=np.array([2.0]))
    m.set_objective(x, [1.0, 1.0])
    return m


def _large(*, row_upper: float):
    """``max x + y`` with ``x, y <= 2**45`` and one row ``x + y >= 1`` (``<= row_upper``): optimum ``min(2**46, row_upper)``."""
    m = LinearModel("large", sense="max")
    x = m.add_variables("x", 2, upper=2.0**45, integer=True)
    m.add_constraints("c", rows=np.array([0, 0]), cols=x.columns([0, 1]), coefs=np.ones(2), lower=np.array([1.0]),
                      upper=np.array([row_upper]))
    m.set_objective(x, [1.0, 1.0])
    return m


@pytest.mark.parametrize("solver,via,backend", MIP_ROUTES, ids=lambda v: str(v))
def test_an_empty_domain_is_infeasible_on_every_route(solver, via, backend):
    """CP-SAT called such a model invalid (an internal error) where the other routes say infeasible."""
    solution = solve_model(_empty_domain(), solver=solver, via=via, backend=backend)
    assert solution.status == "infeasible" and solution.values is None


@pytest.mark.parametrize("row_upper", [INF, 2.0**44 + 3])
@pytest.mark.parametrize("solver,via,backend", MIP_ROUTES, ids=lambda v: str(v))
def test_large_bounds_and_open_rows_are_not_clamped(row_upper, solver, via, backend):
    """CP-SAT clamped bounds and open row sides to 2**40 and proved the clamped optimum ``optimal``."""
    solution = solve_model(_large(row_upper=row_upper), solver=solver, via=via, backend=backend)
    assert solution.status == "optimal", solution.route
    assert solution.objective == min(2.0**46, row_upper), solution.route


def test_cp_sat_does_not_hide_objective_rounding_behind_optimal():
    """An objective coefficient rounded away by the integer scaling must not yield a proven optimum it may miss."""
    m = LinearModel("rounded", sense="max")
    x = m.add_variables("x", 2, upper=np.array([0.0, 1.0]), integer=True)
    m.add_constraints("c", rows=np.array([0]), cols=x.columns([1]), coefs=np.ones(1), upper=np.array([1.0]))
    m.set_objective(x, [1e4, 3e-9])  # scaled by 1, the 3e-9 becomes 0: every point ties for CP-SAT
    solution = solve_model(m, solver="ortools", backend="cp_sat")
    assert solution.status == "optimal" and solution.objective == 3e-9 or solution.status == "feasible"
    assert solution.bound >= 3e-9  # the bound stays a bound on the true objective
    assert solve_model(m).objective == 3e-9


# ----------------------------------------------------------------------------- Pyomo export


@pytest.mark.parametrize("suffix", ["lp", "mps"])
def test_write_model_names_the_blocks(tmp_path, suffix):
    model, _ = _welfare_model()
    path = tmp_path / f"welfare.{suffix}"
    write_model(model, str(path))
    text = path.read_text()
    assert "capacity" in text and "demand" in text
    if suffix == "lp":
        assert text.split()[text.split().index("objective:") - 1] == "max"


def test_write_model_of_r4(tmp_path, r4):
    model, _ = build_welfare(r4)
    path = tmp_path / "r4.lp"
    write_model(model, str(path))
    text = path.read_text()
    assert text.count("capacity(") == 3 and text.count("demand(") == 2
    assert "3.333333" in text and "4.347826" in text


# ----------------------------------------------------------------------------- empty models


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(solver="ortools"), dict(via="pyomo")],
    ids=["highs", "ortools", "pyomo"],
)
def test_instance_without_edges(kwargs):
    inst = Instance([Pool("g")], [Agent("a")], [])
    result = lo.solve(inst, "welfare", **kwargs)
    assert result.status == "optimal" and result.objective == 0.0 and result.allocation == []


def _integer_scale_by_every_pass(costs, total_flow):
    """The scale search without the probe: every power of ten checked on every cost."""
    import math

    biggest = float(np.max(np.abs(costs), initial=0.0))
    if biggest == 0.0:
        return 1.0, 0.0
    limit = 2.0**62 / max(1.0, total_flow) / biggest
    best = (1.0, math.inf)
    for k in range(16):
        scale = 10.0**k
        if scale > limit:
            break
        err = float(np.max(np.abs(np.round(costs * scale) / scale - costs)))
        best = (scale, err)
        if err <= 1e-12 * biggest:
            return scale, 0.0
    return best


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 6), st.integers(1, 30_000), st.integers(0, 2**32 - 1), st.sampled_from([1.0, 1e3, 1e9, 1e15]),
       st.booleans())
def test_cost_scale_probe_agrees_with_checking_every_cost(digits, size, seed, total, odd_one_out):
    """The probe only skips powers of ten; the scale and its error are those of the full search,
    also when the one cost that needs more digits lies outside the probe."""
    from laissez_opt.modeling.ortools_route import _integer_scale

    rng = np.random.default_rng(seed)
    costs = np.round(rng.uniform(0.0, 100.0, size), digits)
    if odd_one_out:
        costs[rng.integers(size)] += 1e-7 * np.pi
    assert _integer_scale(costs, total) == _integer_scale_by_every_pass(costs, total)
