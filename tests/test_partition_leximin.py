"""Partitioned fractional leximin (``lo.solve(inst, "maxmin", fractional=True, partitions=K)``).

Each part runs every leximin level (``laissez_opt.partition.core.leximin_part``);
one part must reproduce the library's whole fractional leximin agent by agent, the
merged allocation must be feasible, and the certified bound of the first level
must be at least the whole max-min optimum.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.analysis.verify import verify
from laissez_opt.errors import InputError
from laissez_opt.partition import Problem, solve_arrays
from laissez_opt.partition.core import check_feasible, part_tasks
from laissez_opt.partition.levels import leximin_part

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, max_examples=20)


def _instance(seed: int, n: int, m: int, top: int = 8) -> lo.Instance:
    """Agents with demands 1-2, weights 0.5-2 and up to 3 random pools of 1 to ``top`` devices: several leximin levels."""
    rng = np.random.default_rng(seed)
    pools = [lo.Pool(f"P{c}", count=int(rng.integers(1, top + 1))) for c in range(m)]
    agents = [lo.Agent(f"A{i}", weight=float(rng.uniform(0.5, 2.0)), demand=int(rng.integers(1, 3))) for i in range(n)]
    edges = [lo.Edge(f"A{i}", f"P{c}", float(rng.uniform(0.1, 1.0)))
             for i in range(n) for c in sorted(set(rng.integers(0, m, size=3).tolist()))]
    return lo.Instance(pools=pools, agents=agents, edges=edges, name=f"lex-{seed}")


def _vector(result, ids):
    return np.array([result.details["leximin"][a] for a in ids])


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 24), m=st.integers(1, 8),
       normalizer=st.sampled_from(["raw", "equal_share"]))
def test_one_part_is_the_whole_leximin(seed, n, m, normalizer):
    inst = _instance(seed, n, m)
    whole = lo.solve(inst, "maxmin", fractional=True, normalizer=normalizer)
    one = lo.solve(inst, "maxmin", fractional=True, normalizer=normalizer, partitions=1)
    ids = [a.id for a in inst.agents]
    a, b = _vector(whole, ids), _vector(one, ids)
    assert np.allclose(a, b, rtol=1e-5, atol=1e-6 * max(1.0, float(a.max())))
    assert one.status == "feasible" and one.verified
    assert one.details["partition"]["parts"][0]["levels"] >= 1


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 30), m=st.integers(1, 6), k=st.integers(2, 4))
def test_partitioned_leximin_is_feasible_and_its_bound_holds(seed, n, m, k):
    inst = _instance(seed, n, m)
    whole = lo.solve(inst, "maxmin", fractional=True, normalizer="raw")
    split = lo.solve(inst, "maxmin", fractional=True, normalizer="raw", partitions=k, partition_seed=seed)
    assert verify(inst, split).ok and split.status == "feasible"
    scale = max(1.0, abs(whole.objective))
    assert split.objective <= whole.objective + 1e-6 * scale      # feasible for the whole: at most the optimum
    assert split.bound >= whole.objective - 1e-6 * scale          # the certified first-level bound holds
    ids = [a.id for a in inst.agents]
    values = _vector(split, ids)
    assert values.min() == pytest.approx(split.objective, rel=1e-9, abs=1e-12)
    assert "first level" in split.details["partition"]["levels_note"]


def test_parts_run_every_level_and_freeze_every_agent():
    inst = _instance(3, 40, 8)
    r = lo.solve(inst, "maxmin", fractional=True, normalizer="raw", partitions=2)
    for part in r.details["partition"]["parts"]:
        assert part["status"] == "optimal" and part["lps"] >= part["levels"] > 1
    first = lo.solve(inst, "maxmin", fractional=True, normalizer="raw", partitions=1)
    # The first-level-only run and the full leximin share the max-min value.
    from laissez_opt.partition.run import problem_of

    p = problem_of(inst).for_method("maxmin")
    only = solve_arrays(p, "maxmin", partitions=1, levels="first")
    assert only["objective"] == pytest.approx(first.objective, rel=1e-7)
    assert only["details"]["parts"][0]["lps"] == 1


def test_leximin_part_on_arrays_raises_the_second_level():
    # Agent 1 is held at its demand 0.5; agent 0 then takes what is left of both pools.
    task = {"part": 0, "method": "maxmin", "edge_agent": np.array([0, 0, 1]), "edge_pool": np.array([0, 1, 0]),
            "coef": np.array([1.0, 2.0, 1.0]), "demands": np.array([2.0, 0.5]), "capacity": np.array([1.0, 1.0])}
    out = leximin_part(task)
    assert out["values"] == pytest.approx([2.5, 0.5])
    assert out["levels"] == pytest.approx([0.5, 2.5])
    assert out["lam"].sum() == pytest.approx(1.0)
    assert out["objective"] == pytest.approx(0.5)


def test_merged_arrays_are_feasible_on_a_heterogeneous_problem():
    rng = np.random.default_rng(5)
    n, m = 3000, 60
    agent = np.repeat(np.arange(n), 3)
    pool = rng.integers(0, m, size=agent.shape[0])
    p = Problem(agent, pool, rng.uniform(0.1, 1.0, agent.shape[0]), rng.integers(1, 40, m), rng.uniform(0.5, 2, n),
                rng.integers(1, 3, n).astype(float)).for_method("maxmin")
    out = solve_arrays(p, "maxmin", partitions=4, seed=1)
    assert check_feasible(p, out["amounts"]) <= 1e-9
    assert out["objective"] <= out["bound"] and out["gap"] is not None
    tasks, _ = part_tasks(p, 4, 1, "maxmin", integral=False)
    assert sum(t["agents"].shape[0] for t in tasks) == n
    assert out["details"]["levels"] == "all" and out["details"]["parts_cpu_s"] > 0


def test_levels_option_is_checked():
    p = Problem(np.array([0]), np.array([0]), np.ones(1), np.array([1]), np.ones(1), np.ones(1)).for_method("maxmin")
    with pytest.raises(InputError, match="levels"):
        solve_arrays(p, "maxmin", partitions=1, levels="second")


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 30), m=st.integers(1, 6), k=st.integers(1, 4))
def test_first_level_through_lo_solve_keeps_the_certified_max_min(seed, n, m, k):
    # levels="first_level" runs the max-min LP alone in each part (interior point, no
    # crossover): the same max-min value as the every-level run, an allocation the
    # verifier accepts, and a bound that holds (its duals may differ from a vertex's).
    inst = _instance(seed, n, m)
    whole = lo.solve(inst, "maxmin", fractional=True)
    every = lo.solve(inst, "maxmin", fractional=True, partitions=k, partition_seed=seed)
    first = lo.solve(inst, "maxmin", fractional=True, partitions=k, partition_seed=seed, levels="first_level")
    scale = max(1.0, abs(every.objective))
    assert first.verified and first.status == "feasible"
    assert first.objective == pytest.approx(every.objective, rel=1e-6, abs=1e-9 * scale)
    assert first.bound >= whole.objective - 1e-6 * scale and first.gap is not None and first.gap >= 0
    assert first.params["levels"] == "first_level" and first.details["partition"]["levels"] == "first"
    assert all(part["lps"] == 1 for part in first.details["partition"]["parts"] if part["levels"])
    assert "first level only" in first.details["partition"]["levels_note"]


def test_partitioned_levels_option_is_checked_on_the_public_path():
    inst = _instance(2, 12, 3)
    with pytest.raises(InputError, match="levels auto .* or first_level"):
        lo.solve(inst, "maxmin", fractional=True, partitions=2, levels="ordered_outcomes")
    with pytest.raises(InputError, match="levels"):
        lo.solve(inst, "maxmin", fractional=True, partitions=2, levels="second")
    with pytest.raises(InputError, match="levels"):
        lo.solve(inst, "themis", fractional=True, partitions=2, levels="first_level")


def test_whole_leximin_recovers_from_a_level_lp_ending_unknown(tmp_path):
    """The heterogeneous benchmark family at 500 x 1,000: a warm-started dual simplex run of the
    whole fractional leximin's 415th level LP ended "unknown" (numerical trouble) and the solve
    raised NoSolutionError.  That level is now solved again from scratch, and the whole leximin
    agrees with one part of the partitioned path, agent by agent."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from partition_public_path import write_npz
    from scaling_partition import make_problem

    write_npz(make_problem(500, 1000), tmp_path / "het.npz", "het")
    inst = lo.load(tmp_path / "het.npz")
    whole = lo.solve(inst, "maxmin", fractional=True)
    assert whole.status == "optimal" and whole.verified
    one = lo.solve(inst, "maxmin", fractional=True, partitions=1)
    mine = np.array([whole.utilities[a.id] for a in inst.agents])
    theirs = np.array([one.utilities[a.id] for a in inst.agents])
    assert np.abs(mine - theirs).max() <= 1e-6 * mine.max()


@pytest.mark.parametrize("ending", ["trouble", "infeasible"])
def test_whole_leximin_eases_the_floors_when_every_route_fails(monkeypatch, ending):
    """A level LP after the first that fails on every cold route (the 338th of the heterogeneous
    1,000 x 1,000 instance) is solved again with the frozen floors eased by ``FLOOR_EASING``; the
    result is verified, says so, and its leximin vector is the unperturbed one to solver tolerance."""
    from laissez_opt.exact import leximin as lex

    inst = _instance(1, 40, 6)  # six level LPs
    clean = lo.solve(inst, "maxmin", fractional=True)
    assert clean.status == "optimal" and "eased" not in (clean.message or "")
    real = lex._HighsSession.solve
    calls = {"n": 0}

    def failing_once(self, time_limit=None):
        calls["n"] += 1
        if calls["n"] == 3:  # after two levels, so floors are frozen
            return lex._Run(ending, None, None, None, None, 0.0, "Unknown (injected)", "highspy-lp")
        return real(self, time_limit)

    monkeypatch.setattr(lex._HighsSession, "solve", failing_once)
    eased = lo.solve(inst, "maxmin", fractional=True)
    assert calls["n"] > 3
    assert eased.verified and eased.status == "optimal"
    assert "floors were eased by 1e-10" in eased.message and "level LP 3" in eased.message
    ids = [a.id for a in inst.agents]
    assert np.abs(_vector(eased, ids) - _vector(clean, ids)).max() <= 1e-6 * max(_vector(clean, ids).max(), 1.0)


def test_whole_leximin_keeps_the_last_levels_when_the_easing_fails(monkeypatch):
    """If the eased LPs fail too, the solve keeps the last level's optimum: status feasible, verified,
    and the message names the level it stopped at; a failure of the first LP is a NoSolutionError."""
    from laissez_opt.errors import NoSolutionError
    from laissez_opt.exact import leximin as lex

    inst = _instance(1, 40, 6)  # six level LPs
    real = lex._HighsSession.solve
    calls = {"n": 0}
    fail_from = {"n": 3}

    def failing(self, time_limit=None):
        calls["n"] += 1
        if calls["n"] >= fail_from["n"]:
            return lex._Run("trouble", None, None, None, None, 0.0, "Unknown (injected)", "highspy-lp")
        return real(self, time_limit)

    monkeypatch.setattr(lex._HighsSession, "solve", failing)
    kept = lo.solve(inst, "maxmin", fractional=True)
    assert kept.status == "feasible" and kept.verified
    assert "stopped" in kept.message and "Unknown (injected)" in kept.message
    assert kept.objective > 0
    calls["n"], fail_from["n"] = 0, 1
    with pytest.raises(NoSolutionError):
        lo.solve(inst, "maxmin", fractional=True)


def test_whole_leximin_keeps_its_levels_at_the_time_limit(monkeypatch):
    """A level LP after the first that HiGHS stops at the time limit keeps the last level's optimum:
    status time_limit, verified, and the max-min value still proven by the first level (gap 0);
    a first LP stopped there keeps HiGHS's feasible point, with no bound."""
    from laissez_opt.exact import leximin as lex

    inst = _instance(1, 40, 6)  # six level LPs
    clean = lo.solve(inst, "maxmin", fractional=True)
    real = lex.limit_next_run
    calls = {"n": 0, "from": 3}

    def out_of_time(h, seconds):
        calls["n"] += 1
        real(h, 0.0 if calls["n"] >= calls["from"] else seconds)

    monkeypatch.setattr(lex, "limit_next_run", out_of_time)
    cut = lo.solve(inst, "maxmin", fractional=True, time_limit=600)
    assert cut.status == "time_limit" and cut.verified
    assert "stopped at level 3" in cut.message and len(cut.details["levels"]) == 2
    assert cut.objective == pytest.approx(clean.objective, rel=1e-7)
    assert cut.bound == pytest.approx(clean.objective, rel=1e-7) and cut.gap == pytest.approx(0.0, abs=1e-7)
    # The first LP stopped: HiGHS's point (x = 0, t = 0 is feasible) is kept without a bound.
    calls["n"], calls["from"] = 0, 1
    first = lo.solve(inst, "maxmin", fractional=True, time_limit=600)
    assert first.status == "time_limit" and first.verified and first.bound is None and first.gap is None
    assert "stopped at level 1" in first.message and first.details["levels"] == []


def test_a_part_in_trouble_tries_every_cold_route_in_turn(monkeypatch):
    """A part's level LP in numerical trouble is solved again from scratch by each of the whole model's
    cold routes until one ends cleanly (the 431st level LP of the heterogeneous 1,000 x 1,000 instance,
    one part, ended "unknown" under dual simplex with presolve and stopped the part's leximin there)."""
    import highspy

    from laissez_opt.exact import leximin as lex
    from laissez_opt.partition import levels

    assert levels.solve_cold_routes is lex.solve_cold_routes  # the parts retry as the whole model does
    S = highspy.HighsModelStatus
    tried = []
    answers = iter([S.kUnknown, S.kInfeasible, S.kOptimal])

    def fake_cold(h, presolve, solver):
        tried.append((solver, presolve))
        return next(answers)

    monkeypatch.setattr(lex, "solve_cold", fake_cold)
    assert lex.solve_cold_routes(object()) == S.kOptimal
    assert tried == list(lex.COLD_ROUTES)
    tried.clear()
    answers = iter([S.kTimeLimit])
    assert lex.solve_cold_routes(object()) == S.kTimeLimit and len(tried) == 1  # a limit is no trouble


def test_a_part_whose_leximin_stopped_short_is_named_in_the_message(monkeypatch):
    from laissez_opt.partition import run

    inst = _instance(3, 60, 8)
    real = run.solve_part

    def short_part(task):
        out = real(task)
        if task["part"] == 1:
            out["status"] = "stopped at level 4: HiGHS Unknown"
        return out

    monkeypatch.setattr(run, "solve_part", short_part)
    r = lo.solve(inst, "maxmin", fractional=True, partitions=3)
    assert r.status == "feasible" and r.verified
    assert "part 2 stopped at level 4: HiGHS Unknown" in r.message and "not the method's" in r.message


def test_leximin_paths_benchmark_checks_both_paths(tmp_path):
    """The benchmark behind docs/reliability.md's leximin-paths figures: both paths solved and verified,
    and each compared with the exact rational leximin of lo.certify.  At 120 x 120 both agree with it to
    1e-6 (the whole model to 1e-9); a third run with --rel 0 counts every agent whose float value is not
    the exact fraction, which must be some of them (so the comparison can fail)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = str(root / "benchmarks" / "leximin_paths.py")
    for rel in ("1e-6", "0"):
        run = subprocess.run([sys.executable, script, "--agents", "120", "--rel", rel,
                              "--out", str(tmp_path), "--name", f"paths_{rel}"], cwd=root, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        out = json.loads((tmp_path / f"paths_{rel}.json").read_text())
        assert out["paths"]["whole"]["status"] == "optimal" and out["paths"]["whole"]["verified"]
        assert out["paths"]["partitions=1"]["verified"]
        assert out["exact"]["failure"] is None and out["exact"]["levels"] > 10
        whole, part = out["against_exact"]["whole"], out["against_exact"]["partitions=1"]
        assert whole["max_rel"] <= 1e-9 and part["max_rel"] <= 1e-6
        if rel == "1e-6":
            assert whole["agents_off"] == part["agents_off"] == 0 and out["between_paths"] is None
        else:
            assert part["agents_off"] > 0 and part["first_sorted_difference"] is not None
