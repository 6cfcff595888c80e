"""``laissez-opt simulate``: presets, outputs, byte-identical reruns, resume, one-line errors."""

from __future__ import annotations

import json

import pytest

import laissez_opt as lo
from laissez_opt.simulate.presets import PRESETS

from conftest import INSTANCES, run_cli, write_json

SMALL = {
    "format": "laissez-opt/simulation", "version": 1, "name": "small",
    "generate": {"family": "gemmini", "agents": 4, "pools": 2, "params": {"weights": "1-2"}},
    "rounds": 12, "seeds": 2,
    "workload": {"load": 1.2, "deadline": 2},
    "policies": [{"name": "mtf", "options": {"threshold": "hedge"}}, "gandiva_fair", "welfare"],
    "hindsight": True,
}


def test_list_presets():
    out = run_cli("simulate", "--list-presets")
    assert out.returncode == 0
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert names == sorted(PRESETS)
    assert "thesis-r5-equal" in names


def test_preset_writes_tables_plots_and_summary(tmp_path):
    out = run_cli("simulate", "--preset", "thesis-r1", "-o", tmp_path / "r1", "--workers", "1")
    assert out.returncode == 0, out.stderr
    assert "| time_equal |" in out.stdout and "| min_backlog |" in out.stdout
    for name in ("rounds.csv", "agents.csv", "runs.csv", "summary.csv", "summary.json", "summary.md", "timing.csv",
                 "hindsight.csv", "backlog.png", "utility.png", "phi.png", "agents.png"):
        assert (tmp_path / "r1" / name).is_file(), name
    rows = (tmp_path / "r1" / "rounds.csv").read_text().splitlines()
    assert rows[0].startswith("policy,seed,round,arrived_jobs")
    assert len(rows) == 1 + 2 * 2
    summary = json.loads((tmp_path / "r1" / "summary.json").read_text())
    assert summary["policies"] == ["time_equal", "min_backlog"]


def test_reruns_are_byte_identical_and_resume(tmp_path):
    config = write_json(tmp_path / "small.json", SMALL)
    first = run_cli("simulate", config, "-o", tmp_path / "a", "--workers", "2", "--no-plots")
    assert first.returncode == 0, first.stderr
    # Computed again, in this process and with one worker: the same bytes.
    lo.simulate(config, workers=1, progress=False).write(tmp_path / "b", plots=False)
    for name in ("rounds.csv", "agents.csv", "runs.csv", "summary.csv", "summary.json", "summary.md", "hindsight.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    again = run_cli("simulate", config, "-o", tmp_path / "a", "--workers", "1", "--no-plots")
    assert "0 tasks computed, 8 reused" in again.stderr
    for name in ("rounds.csv", "summary.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_overrides_from_the_command_line(tmp_path):
    config = write_json(tmp_path / "small.json", SMALL)
    out = run_cli("simulate", config, "-o", tmp_path / "o", "--policies", "gandiva_fair,round_robin", "--rounds", "3",
                  "--seeds", "1", "--no-plots", "-p", "round_robin.bogus=1")
    assert out.returncode == 2
    assert out.stderr_lines == ["laissez-opt: error: --param round_robin.bogus: round_robin has no option 'bogus'; valid options: state"]
    out = run_cli("simulate", config, "-o", tmp_path / "o", "--policies", "gandiva_fair,round_robin", "--rounds", "3",
                  "--seeds", "1", "--no-plots")
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "o" / "rounds.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 3


@pytest.mark.parametrize("change,message", [
    ({"workload": {"load": 1.2, "colour": 2}}, "$.workload.colour: unknown field 'colour'"),
    ({"balancer": "fastest"}, "$.balancer: 'fastest' is not one of"),
    ({"rounds": 0}, "$.rounds: must be >= 1, got 0"),
    ({"policies": ["gandiva_fair", {"name": "x", "method": "nope"}]}, "$.policies[1].method: unknown policy 'nope'"),
    ({"workload": {"load": {"by_weight": {"1": 0.5}}}}, "$.workload.load.by_weight: no load for weight 2"),
])
def test_bad_config_one_line_exit_2(tmp_path, change, message):
    path = write_json(tmp_path / "bad.json", {**SMALL, **change})
    out = run_cli("simulate", path, "-o", tmp_path / "o", "--workers", "1")
    assert out.returncode == 2, out.stderr
    assert len(out.stderr_lines) == 1, out.stderr
    assert out.stderr_lines[0].startswith(f"laissez-opt: error: {path}: ")
    assert message in out.stderr_lines[0]


def test_bad_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "laissez-opt/simulation", "version": 1, "policies": [NaN]}')
    out = run_cli("simulate", path, "-o", tmp_path / "o")
    assert out.returncode == 2
    assert out.stderr_lines == [f"laissez-opt: error: {path}: $.policies[0]: number NaN is not finite or overflows; "
                                "numbers must be finite"]
    out = run_cli("simulate", tmp_path / "nothing.json", "-o", tmp_path / "o")
    assert out.returncode == 2 and out.stderr_lines == [f"laissez-opt: error: {tmp_path / 'nothing.json'}: $: file not found"]


@pytest.mark.parametrize("args,message", [
    ((), "CONFIG: give a CONFIG file or --preset NAME"),
    (("--preset", "nope"), "--preset: unknown preset 'nope'"),
    (("--preset", "thesis-r1", "--rounds", "0"), "--rounds: must be >= 1, got 0"),
    (("--preset", "thesis-r1", "--seeds", "0"), "--seeds: must be >= 1, got 0"),
    (("--preset", "thesis-r1", "--policies", "time_equal,nope"), "--policies: unknown policy 'nope'"),
    (("--preset", "thesis-r1", "-p", "novalue"), "--param: expected POLICY.KEY=VALUE"),
    (("--preset", "thesis-r1", "-p", "welfare.x=1"), "--param: options given for 'welfare'"),
])
def test_usage_errors(tmp_path, args, message):
    out = run_cli("simulate", *args, "-o", tmp_path / "o")
    assert out.returncode == 2
    assert len(out.stderr_lines) == 1 and message in out.stderr_lines[0], out.stderr


def test_instance_path_relative_to_the_config(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r1.json").write_bytes((INSTANCES / "thesis-r1-fair-vs-efficient.json").read_bytes())
    config = write_json(tmp_path / "sub" / "cfg.json", {"format": "laissez-opt/simulation", "version": 1,
                                                         "instance": "r1.json", "workload": {"arrivals": "instance"},
                                                         "balancer": "pooled", "policies": ["time_equal"]})
    res = lo.simulate(config, progress=False)
    assert res.run("time_equal", 0).rounds["backlog_work"] == [0.0, 90.0]


def test_dataframes():
    res = lo.simulate(preset="thesis-r1", progress=False)
    frame = res.to_dataframe("agents")
    assert list(frame["agent"]) == ["A1", "A2", "A1", "A2"]
    assert set(res.to_dataframe("summary")["policy"]) == {"time_equal", "min_backlog"}


def test_dask_and_local_pool_agree():
    local = lo.simulate(preset="thesis-r1", workers=1, progress=False)
    dasked = lo.simulate(preset="thesis-r1", executor="dask", workers=2, progress=False)
    assert [r.to_dict()["rounds"] for r in local.runs] == [r.to_dict()["rounds"] for r in dasked.runs]
    assert local.hindsight[0]["weighted_welfare"] == dasked.hindsight[0]["weighted_welfare"]


@pytest.mark.parametrize("options, problem", [({"foo": 1}, "mtf has no option 'foo'"),
                                              ({"tokens": "x"}, "mtf expects an integer")])
def test_a_refused_policy_option_is_named_by_its_file_and_json_path(tmp_path, options, problem):
    config = {**SMALL, "policies": [{"name": "mtf", "options": options}]}
    path = write_json(tmp_path / "bad.json", config)
    with pytest.raises(lo.InputError) as caught:
        lo.simulate(path, workers=1, progress=False)
    option = next(iter(options))
    assert caught.value.source == str(path) and caught.value.path == f"$.policies[0].options.{option}"
    assert problem in caught.value.problem


def test_list_policies_names_every_simulator_policy_with_its_options():
    out = run_cli("simulate", "--list-policies")
    assert out.returncode == 0, out.stderr
    for name, option in (("market", 'price_rule="second"'), ("min_backlog", "fractional=false"),
                         ("optimum", "time_limit=60.0"), ("replay", 'method="migration"')):
        line = next(i for i, text in enumerate(out.stdout.splitlines()) if text.split()[:1] == [name])
        assert option in out.stdout.splitlines()[line + 1]
    refused = run_cli("simulate", "--list-policies", "--preset", "thesis-r1")
    assert refused.returncode == 2 and "--list-policies takes no configuration" in refused.stderr
