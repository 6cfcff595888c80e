"""Importers of the field's data (docs/import.md): the synthetic files in instances/imports/, bad input, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import laissez_opt as lo
from laissez_opt.io.importers import import_data

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "instances" / "imports"
CLI = [sys.executable, "-m", "laissez_opt"]
THROUGHPUTS = DATA / "gavel_throughputs.json"

CASES = [
    ("gavel-trace", "gavel.trace", {"throughputs": THROUGHPUTS, "gpus": {"v100": 2}}),
    ("philly", "philly_cluster_job_log.json", {}),
    ("alibaba-pai", "pai_task_table.csv", {"jobs_table": DATA / "pai_job_table.csv", "speed": {"T4": 0.5}}),
]


@pytest.mark.parametrize("fmt, name, options", CASES)
def test_trace_becomes_an_instance_and_a_simulation_that_replays_its_work(fmt, name, options, tmp_path):
    imp = import_data(fmt, DATA / name, **options)
    inst = imp.instance
    assert all(len(a.arrivals) == inst.rounds for a in inst.agents)
    job_size = imp.simulation["workload"]["job_size"]
    total = sum(sum(a.arrivals) for a in inst.agents) * job_size
    assert total == pytest.approx(sum(a.work for a in inst.agents), rel=1e-4)
    imp.write(tmp_path)
    res = lo.simulate(str(tmp_path / "simulation.json"), executor="inline", workers=1)
    for policy in imp.simulation["policies"]:
        arrived = sum(res.run(policy, 0).rounds["arrived_work"])
        assert arrived == pytest.approx(total, rel=1e-4)


def test_gavel_throughputs_instance_solves_and_keeps_the_file_units():
    imp = import_data("gavel-throughputs", THROUGHPUTS, gpus={"v100": 4, "p100": 2})
    inst = imp.instance
    data = json.loads(THROUGHPUTS.read_text())
    edge = next(e for e in inst.edges if e.agent == "A3C" and e.pool == "v100")
    assert edge.utility == pytest.approx(data["v100"]["('A3C', 1)"]["null"] * 3600)
    assert not any(e.agent.startswith("Transformer") and e.pool == "k80" for e in inst.edges)  # zero: no edge
    assert lo.solve(inst, "welfare").status == "optimal"
    every = import_data("gavel-throughputs", THROUGHPUTS, scale_factors=None).instance
    assert every.n_agents == inst.n_agents + 1


def test_gavel_throughputs_older_layout_with_bare_job_names(tmp_path):
    data = json.loads(THROUGHPUTS.read_text())
    bare = {w: {k[2:-5]: v for k, v in jobs.items() if k.endswith("', 1)")} for w, jobs in data.items()}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(bare))
    old = import_data("gavel-throughputs", path).instance
    new = import_data("gavel-throughputs", THROUGHPUTS).instance
    assert [(e.agent, e.pool, e.utility) for e in old.edges] == [(e.agent, e.pool, e.utility) for e in new.edges]


BAD = [
    ("gavel-trace", "gavel.trace", lambda t: t.replace("\t40000\t", "\tmany\t"), {"throughputs": THROUGHPUTS},
     "line 1, field 5 (total_steps): expected an integer, got 'many'"),
    ("gavel-trace", "gavel.trace", lambda t: t.replace("A3C\t", "Pong\t", 1), {"throughputs": THROUGHPUTS},
     "line 3, field 1 (job_type): job type 'Pong' at scale factor 1 is not in gavel_throughputs.json"),
    ("gavel-throughputs", "gavel_throughputs.json", lambda t: t.replace('"null": 1.9', '"null": "fast"', 1), {},
     "$.k80[\"('A3C', 1)\"].null: expected a throughput (number), got 'fast'"),
    ("philly", "philly_cluster_job_log.json", lambda t: t.replace('"2017-10-03 04:41:00"', '"yesterday"'), {},
     "$[1].attempts[0].start_time: expected a time 'YYYY-MM-DD HH:MM:SS', got 'yesterday'"),
    ("alibaba-pai", "pai_task_table.csv", lambda t: t.replace(",2600,", ",soon,"), {},
     "line 4, column 5 (start_time): expected a number, got 'soon'"),
]


@pytest.mark.parametrize("fmt, name, edit, options, message", BAD)
def test_bad_input_is_one_located_error(fmt, name, edit, options, message, tmp_path):
    path = tmp_path / name
    path.write_text(edit((DATA / name).read_text()))
    with pytest.raises(lo.InputError) as err:
        import_data(fmt, path, **options)
    assert str(err.value).endswith(message), str(err.value)
    assert str(err.value).startswith(str(path))


def test_cli_writes_both_files_and_exits_2_on_bad_input(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(CLI + ["import", "philly", str(DATA / "philly_cluster_job_log.json"), "-o", str(out),
                                 "--gpu-type", "P40", "--round-hours", "0.5"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "6 jobs imported (1 skipped)" in proc.stdout and "note: skipped 1 job(s) that never ran" in proc.stderr
    inst = lo.load(out / "instance.json")
    assert [p.id for p in inst.pools] == ["P40"] and inst.round_hours == 0.5
    config = json.loads((out / "simulation.json").read_text())
    assert config["instance"] == "instance.json" and config["workload"]["arrivals"] == "instance"
    bad = tmp_path / "bad.csv"
    bad.write_text("j01,worker,1,Terminated\n")
    proc = subprocess.run(CLI + ["import", "alibaba-pai", str(bad), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"laissez-opt: error: {bad}: line 1: expected 10 columns "
                                                "(job_name, task_name, inst_num, status, start_time, end_time, "
                                                "plan_cpu, plan_mem, plan_gpu, gpu_type), got 4"]
    proc = subprocess.run(CLI + ["import", "gavel-throughputs", str(THROUGHPUTS), "--limit", "3", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--limit: gavel-throughputs has no option 'limit'" in proc.stderr


def test_limit_keeps_the_first_jobs_by_submission_time():
    imp = import_data("philly", DATA / "philly_cluster_job_log.json", limit=3)
    assert imp.jobs == 3
    full = import_data("philly", DATA / "philly_cluster_job_log.json")
    assert imp.instance.rounds <= full.instance.rounds


@pytest.mark.parametrize("fmt, name, options", CASES[1:])
def test_a_replay_too_fine_to_hold_is_refused_before_it_is_built(fmt, name, options):
    # 1e-9 h rounds made billions of arrival entries (a MemoryError, or minutes and gigabytes).
    with pytest.raises(lo.InputError, match="arrival entries .*round_hours") as caught:
        import_data(fmt, DATA / name, round_hours=1e-9, **options)
    assert caught.value.path == "round_hours" and caught.value.source.endswith(name)
