"""The command line: outputs and exit codes (0 result, 2 bad input/usage, 3 infeasible, 1 internal)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from click.testing import CliRunner

from laissez_opt.cli.main import cli
from laissez_opt.io import load_instance, load_result, result_from_dict
from laissez_opt.io.jsonfile import parse_json

from conftest import INSTANCES, R4, run_cli, run_cli_many, write_json


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def infeasible_file(tmp_path):
    """Two required agents, one device: no placement exists."""
    return write_json(
        tmp_path / "crowded.json",
        {
            "format": "laissez-opt/instance",
            "version": 1,
            "name": "crowded",
            "pools": [{"id": "only", "count": 1}],
            "agents": [{"id": "x", "required": True}, {"id": "y", "required": True}],
            "edges": [
                {"agent": "x", "pool": "only", "utility": 1.0, "cost": 1.0},
                {"agent": "y", "pool": "only", "utility": 1.0, "cost": 2.0},
            ],
        },
    )


# ----------------------------------------------------------------------------- exit code 0


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "welfare"],
        ["--method", "welfare", "--solver", "ortools"],
        ["--method", "welfare", "--fractional"],
        ["--method", "welfare", "--via", "pyomo"],
        ["--method", "min_cost"],
        ["--method", "min_cost", "--solver", "ortools"],
        ["--method", "greedy"],
        ["--method", "welfare", "--time-limit", "30"],
        ["--method", "welfare", "--solver", "ortools", "--backend", "scip"],
    ],
    ids=lambda a: " ".join(a),
)
def test_solve_prints_a_valid_result(args):
    result = invoke("solve", R4, *args)
    assert result.exit_code == 0, result.output
    data = parse_json(result.stdout, "<stdout>")
    parsed = result_from_dict(data, "<stdout>")  # validates against the result schema
    method = args[args.index("--method") + 1]
    assert parsed.method == method and parsed.instance == "hotos25-table1"
    assert parsed.status == ("feasible" if method == "greedy" else "optimal")
    assert data["verified"] is True
    assert parsed.allocation and set(parsed.utilities) == {"A", "B"}
    if "--fractional" in args:
        assert parsed.mode == "fractional"
    if "--time-limit" in args:
        assert parsed.params["time_limit"] == 30.0


def test_solve_objectives_are_the_known_ones():
    welfare = json.loads(invoke("solve", R4).stdout)
    assert welfare["objective"] == pytest.approx(7.681159)
    cost = json.loads(invoke("solve", R4, "--method", "min_cost").stdout)
    assert cost["objective"] == pytest.approx(0.36)


def test_solve_table_format():
    result = invoke("solve", R4, "--format", "table")
    assert result.exit_code == 0
    out = result.stdout
    assert "hotos25-table1" in out and "optimal" in out and "Trainium" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_solve_output_file_matches_stdout_and_is_atomic(tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    result = invoke("solve", R4, "-o", out)
    assert result.exit_code == 0
    assert out.read_text() == result.stdout
    assert load_result(out).status == "optimal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    # A failing replace leaves the previous result untouched and no temporary file behind.
    before = out.read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    failed = CliRunner().invoke(cli, ["solve", str(R4), "--method", "greedy", "-o", str(out)])
    monkeypatch.undo()
    assert failed.exit_code != 0
    assert "Traceback" not in failed.output
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_solve_output_into_missing_directory_is_exit_2(tmp_path):
    result = CliRunner().invoke(cli, ["solve", str(R4), "-o", str(tmp_path / "nope" / "r.json")])
    assert result.exit_code == 2
    assert "nope" in result.stderr


def test_write_model_names_the_constraints(tmp_path):
    lp = tmp_path / "welfare.lp"
    result = invoke("solve", R4, "--write-model", lp)
    assert result.exit_code == 0
    text = lp.read_text()
    assert "capacity" in text and "demand" in text
    assert "max" in text.split()  # the objective sense


def test_methods_lists_every_registered_method():
    from laissez_opt.methods import METHODS

    result = invoke("methods")
    assert result.exit_code == 0
    for name in METHODS:
        assert name in result.stdout
    listing = json.loads(invoke("methods", "--json").stdout)
    by_name = {m["name"]: m for m in listing}
    assert set(by_name) == set(METHODS)
    assert {"welfare", "min_cost", "greedy"} <= set(by_name)
    assert by_name["welfare"]["kind"] == "exact" and by_name["welfare"]["fractional"] is True
    assert set(by_name["welfare"]["solvers"]) == {"highs", "ortools"}
    assert by_name["greedy"]["kind"] == "heuristic" and by_name["greedy"]["solvers"] == []
    for m in listing:
        assert m["kind"] in ("exact", "heuristic") and m["objective"] and m["summary"]


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.json")), ids=lambda p: p.name)
def test_validate_every_instance(path):
    result = invoke("validate", path)
    assert result.exit_code == 0
    inst = load_instance(path)
    assert result.stdout.startswith(f"ok: {path}: {inst.name}: {inst.n_agents} agents, {inst.n_pools} pools")
    assert result.stderr == ""


def test_generate_to_stdout_and_to_a_file(tmp_path):
    printed = invoke("generate", "--family", "uniform", "--agents", 5, "--pools", 3, "--seed", 4)
    assert printed.exit_code == 0
    out = tmp_path / "u.json"
    written = invoke("generate", "--family", "uniform", "--agents", 5, "--pools", 3, "--seed", 4, "-o", out)
    assert written.exit_code == 0
    assert written.stdout == ""
    assert f"wrote {out}" in written.stderr
    assert out.read_text() == printed.stdout
    inst = load_instance(out)
    assert inst.n_agents == 5 and inst.n_pools == 3
    other = invoke("generate", "--family", "uniform", "--agents", 5, "--pools", 3, "--seed", 5)
    assert other.stdout != printed.stdout


def test_generate_with_params():
    result = invoke("generate", "-f", "uniform", "-n", 6, "-m", 2, "--param", "rounds=3")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["rounds"] == 3


def test_version_and_help():
    assert invoke("--version").exit_code == 0
    helped = invoke("--help")
    assert helped.exit_code == 0
    for command in ("solve", "methods", "validate", "generate"):
        assert command in helped.stdout


# ----------------------------------------------------------------------------- exit code 3


def test_infeasible_min_cost_is_exit_3(infeasible_file):
    result = CliRunner().invoke(cli, ["solve", str(infeasible_file), "--method", "min_cost"])
    assert result.exit_code == 3, result.output
    data = result_from_dict(json.loads(result.stdout))
    assert data.status == "infeasible" and data.allocation == []
    line = result.stderr.strip()
    assert "\n" not in line and "infeasible" in line and "'x'" in line and "'y'" in line


# ----------------------------------------------------------------------------- exit code 1


def test_internal_error_is_exit_1_one_line(monkeypatch):
    from laissez_opt import methods

    def explode(instance, **_):
        raise ZeroDivisionError("boom")

    spec = methods.METHODS["greedy"]
    monkeypatch.setitem(methods.METHODS, "greedy", dataclasses.replace(spec, run=explode))
    result = CliRunner().invoke(cli, ["solve", str(R4), "--method", "greedy"])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" in lines[0] and "boom" in lines[0]
    assert "Traceback" not in result.stderr


# ----------------------------------------------------------------------------- real processes


def test_console_script_end_to_end(tmp_path, infeasible_file):
    out = tmp_path / "r.json"
    runs = run_cli_many(
        [
            ("solve", R4, "--method", "welfare", "--solver", "ortools", "-o", out),
            ("solve", infeasible_file, "--method", "min_cost"),
            ("methods", "--json"),
            ("validate", R4),
        ]
    )
    solved, infeasible, listing, valid = runs
    assert solved.returncode == 0 and solved.stderr == ""
    assert result_from_dict(json.loads(solved.stdout)).status == "optimal"
    assert out.read_text() == solved.stdout
    assert infeasible.returncode == 3 and "Traceback" not in infeasible.stderr
    assert len(infeasible.stderr_lines) == 1
    assert listing.returncode == 0 and json.loads(listing.stdout)
    assert valid.returncode == 0 and valid.stdout.startswith("ok: ")


def test_python_dash_m(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "laissez_opt", "validate", str(R4)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.startswith("ok: ")


def test_unknown_pyomo_solver_is_one_line():
    run = run_cli("solve", R4, "--via", "pyomo", "--solver", "nosuch")
    assert run.returncode == 2
    assert "Traceback" not in run.stdout + run.stderr
    assert run.stdout == ""
    assert len(run.stderr_lines) == 1, run.stderr


# ----------------------------------------------------------------------------- repeated and contradicting options


@pytest.mark.parametrize(
    "args, problem",
    [
        (["solve", R4, "--method", "mtf", "-p", "tokens=3", "-p", "tokens=7"], "--param: tokens given twice (3 and 7)"),
        (["compare", R4, "--methods", "mtf", "-p", "mtf.tokens=3", "-p", "mtf.tokens=7"],
         "--param: mtf.tokens given twice (3 and 7)"),
        (["simulate", "--preset", "thesis-r1", "-p", "mtf.tokens=3", "-p", "mtf.tokens=4"],
         "--param: mtf.tokens given twice (3 and 4)"),
        (["generate", "-f", "gavel", "-n", "3", "-m", "2", "-p", "x=1", "-p", "x=2"], "--param: x given twice (1 and 2)"),
        (["solve", R4, "--method", "welfare", "--solver", "highs", "--backend", "glop"],
         "--backend: backend 'glop' is an OR-Tools backend; it does not apply with solver='highs'"),
        (["solve", R4, "--method", "welfare", "--via", "pyomo", "--backend", "glop"],
         "--backend: backend 'glop' is an OR-Tools backend; it does not apply with via='pyomo'"),
    ],
    ids=["solve", "compare", "simulate", "generate", "backend-highs", "backend-pyomo"],
)
def test_a_repeated_or_contradicting_option_is_refused_in_one_line(tmp_path, args, problem):
    result = CliRunner().invoke(cli, [str(a) for a in args] + (["-o", str(tmp_path / "out")] if args[0] in ("compare", "simulate") else []))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_forced_backend_implies_ortools_for_every_exact_method():
    import laissez_opt as lo

    inst = load_instance(R4)
    assert lo.solve(inst, "fair_welfare", backend="glop", fractional=True).solver == "ortools"
    assert lo.solve(inst, "themis", backend="scip").solver == "ortools"
    with pytest.raises(lo.InputError, match="backend: backend 'scip' is an OR-Tools backend.*solver='highs'"):
        lo.solve(inst, "themis", solver="highs", backend="scip")


@pytest.mark.parametrize(
    "args, problem",
    [
        (["solve", R4, "--formt", "table"], "laissez-opt solve: No such option '--formt'. Did you mean '--format'?"),
        (["solve"], "laissez-opt solve: Missing argument 'INSTANCE'."),
        (["solve", R4, "--format", "xml"], "laissez-opt solve: Invalid value for '--format'"),
        (["--nosuch"], "laissez-opt: No such option '--nosuch'."),
        (["nosuch"], "laissez-opt: No such command 'nosuch'."),
    ],
)
def test_option_parser_errors_are_one_line_with_exit_2(args, problem):
    run = run_cli(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("laissez-opt: error: ") and problem in lines[0]
    assert lines[0].endswith("--help')")


@pytest.mark.parametrize(
    "args, problem",
    [
        (["solve", R4, "--threads", "0"], "--threads: welfare expects a value >= 1, got 0"),
        (["solve", R4, "-p", "threads=0"], "-p threads: welfare expects a value >= 1, got 0"),
        (["solve", R4, "--method", "greedy", "--threads", "2"], "--threads: greedy has no option 'threads'"),
        (["generate", "-f", "gavel", "-n", "-3", "-m", "2"], "--agents: must be >= 1, got -3"),
        (["generate", "-f", "gavel", "-n", "3", "-m", "0"], "--pools: must be >= 1, got 0"),
    ],
)
def test_an_option_error_names_the_flag_it_was_given_as(args, problem):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 2
    assert result.output.strip().startswith(f"laissez-opt: error: {problem}")
