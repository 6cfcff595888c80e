"""Importers for the field's data: Gavel's throughput and trace files, the Philly and Alibaba PAI cluster traces.

Each importer reads one file in a published layout (``docs/import.md`` cites where
each layout is defined) and returns an :class:`Imported`: an instance in this
package's format and, for job traces, a simulation configuration that replays the
trace's arrivals (``workload.arrivals: "instance"``, ``docs/simulate.md``).

The mapping, in short (``docs/import.md`` has the details):

* **pools** are the accelerator types (Gavel worker types, PAI ``gpu_type``; Philly
  records none, so one pool named by ``gpu_type``); their size is given
  (``gpus={"v100": 36}``) or, for traces, the most GPUs of that type the trace used
  at once;
* **agents** are the tenants whose queues the simulator keeps: Gavel job types
  (Gavel traces carry no users), Philly virtual clusters, PAI users (with the job
  table) or requested GPU types (without it);
* **work** is in the edge utility's unit: training steps for Gavel (utility = steps
  per device per round), reference-GPU hours for Philly and PAI (utility =
  ``speed`` times ``round_hours``, speed 1 unless given per type);
* an agent's ``arrivals`` list is the work that arrived in each round, in units of
  the configuration's ``job_size`` (the median job's work), so the work is replayed
  exactly and the split into jobs approximately.

Every problem in a file is one :class:`~laissez_opt.errors.InputError` naming the
file and the line and column (text files) or the JSON path (JSON files).

Example
-------
>>> imp = import_data("alibaba-pai", "instances/imports/pai_task_table.csv")
>>> imp.instance.n_pools, imp.instance.n_agents, imp.jobs
(3, 3, 12)
>>> imp.simulation["workload"]["arrivals"]
'instance'
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError
from ..instance import Instance
from .instance_file import instance_from_dict
from .jsonfile import json_path, make_output_dir, read_json, read_text

__all__ = ["FORMATS", "Imported", "import_data", "import_gavel_throughputs", "import_gavel_trace",
           "import_philly", "import_alibaba_pai"]

SIMULATION_POLICIES = ["time_equal", "gandiva_fair", "welfare"]


@dataclass
class Imported:
    """What an importer read: the instance, a simulation configuration (traces only), counts and notes.

    ``simulation`` is a configuration dict (``format: "laissez-opt/simulation"``)
    whose ``instance`` is the file name :meth:`write` gives the instance.

    >>> imp = import_data("gavel-throughputs", "instances/imports/gavel_throughputs.json")
    >>> imp.simulation is None, imp.instance.n_pools
    (True, 3)
    """

    instance: Instance
    simulation: dict | None = None
    jobs: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)

    def write(self, directory: str | os.PathLike) -> list[Path]:
        """Write ``instance.json`` (and ``simulation.json`` for a trace) into ``directory``; return the paths.

        >>> import tempfile
        >>> imp = import_data("philly", "instances/imports/philly_cluster_job_log.json")
        >>> [p.name for p in imp.write(tempfile.mkdtemp())]
        ['instance.json', 'simulation.json']
        """
        import json

        from .instance_file import save_instance
        from .jsonfile import write_atomic

        out = Path(directory)
        make_output_dir(out)
        written = [out / "instance.json"]
        save_instance(self.instance, written[0])
        if self.simulation is not None:
            written.append(out / "simulation.json")
            write_atomic(written[1], json.dumps(self.simulation, indent=2) + "\n")
        return written

    def __repr__(self) -> str:
        kind = "instance and simulation" if self.simulation is not None else "instance"
        return (f"<Imported {kind} {self.instance.name!r}: {self.instance.n_agents} agents, "
                f"{self.instance.n_pools} pools, {self.jobs} jobs ({self.skipped} skipped)>")


# ----------------------------------------------------------------------------- helpers
def _number(text: Any, source: str, where: str, *, minimum: float | None = None, integer: bool = False) -> float:
    try:
        value = float(text) if not integer else int(str(text).strip())
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a number"
        raise InputError(f"expected {kind}, got {text!r}", source=source, path=where) from None
    if not math.isfinite(value):
        raise InputError(f"expected a finite number, got {text!r}", source=source, path=where)
    if minimum is not None and value < minimum:
        raise InputError(f"must be >= {minimum:g}, got {text!r}", source=source, path=where)
    return value


def _speeds(speed: dict | None, source: str) -> Callable[[str], float]:
    table = {str(k): _number(v, source, f"speed[{k}]", minimum=0) for k, v in (speed or {}).items()}
    return lambda kind: table.get(kind, 1.0)


def _peak(intervals: list[tuple[float, float, float]]) -> float:
    """The most of a resource in use at once, from (start, end, amount) intervals."""
    events = sorted([(s, a) for s, e, a in intervals] + [(e, -a) for s, e, a in intervals], key=lambda t: (t[0], t[1]))
    level = peak = 0.0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def _pool_counts(used: dict[str, float], gpus: dict | None, source: str) -> dict[str, int]:
    counts = {kind: max(1, math.ceil(amount - 1e-9)) for kind, amount in used.items()}
    for kind, value in (gpus or {}).items():
        if kind not in counts:
            raise InputError(f"no pool {kind!r}; the file has {', '.join(sorted(counts)) or 'none'}",
                             source=source, path="gpus")
        counts[kind] = int(_number(value, source, f"gpus[{kind}]", minimum=1, integer=True))
    return counts


#: Largest ``rounds x agents`` of a replay's arrival lists: each entry costs a Python float in the
#: instance dict and about 10 bytes of its JSON (2 x 10^7: about 1 GB of memory, 200 MB of file).
MAX_ARRIVAL_CELLS = 20_000_000


def _replay(source: str, name: str, description: str, jobs: list[dict], pools: dict[str, int],
            utility: Callable[[str, str], float], round_hours: float, weights: dict[str, float] | None = None,
            demands: dict[str, int | None] | None = None) -> tuple[dict, dict]:
    """The instance dict and the simulation config of ``jobs`` (agent, submit seconds, work)."""
    if not jobs:
        raise InputError("no job to import (every row was skipped)", source=source, path="$")
    start = min(j["submit"] for j in jobs)
    seconds = 3600.0 * round_hours
    rounds = max(int((j["submit"] - start) // seconds) for j in jobs) + 1
    n_agents = len({j["agent"] for j in jobs})
    if rounds * n_agents > MAX_ARRIVAL_CELLS:
        raise InputError(f"the replay would need {rounds:,} rounds x {n_agents:,} agents = {rounds * n_agents:,} "
                         f"arrival entries (at most {MAX_ARRIVAL_CELLS:,}); choose a longer round_hours (--round-hours) "
                         f"than {round_hours:g}", source=source, path="round_hours")
    job_size = statistics.median(j["work"] for j in jobs) or 1.0
    agents: dict[str, list[float]] = {}
    for j in sorted(jobs, key=lambda j: (j["agent"], j["submit"])):
        arrivals = agents.setdefault(j["agent"], [0.0] * rounds)
        arrivals[int((j["submit"] - start) // seconds)] += j["work"] / job_size
    agent_rows = []
    edges = []
    for agent_id in sorted(agents):
        arrivals = [float(f"{a:.6g}") for a in agents[agent_id]]
        first = next(r for r, a in enumerate(arrivals) if a > 0)
        row = {"id": agent_id, "weight": (weights or {}).get(agent_id, 1.0),
               "work": float(f"{sum(arrivals) * job_size:.6g}"), "arrival": first, "arrivals": arrivals}
        if demands and demands.get(agent_id) is not None:
            row["demand"] = demands[agent_id]
        agent_rows.append(row)
        for pool in sorted(pools):
            u = utility(agent_id, pool)
            if u > 0:
                edges.append({"agent": agent_id, "pool": pool, "utility": float(f"{u:.6g}")})
    instance = {
        "format": "laissez-opt/instance", "version": 1, "name": name, "description": description,
        "rounds": rounds, "round_hours": round_hours,
        "pools": [{"id": p, "count": pools[p]} for p in sorted(pools)],
        "agents": agent_rows, "edges": edges,
    }
    simulation = {
        "format": "laissez-opt/simulation", "version": 1, "name": name, "instance": "instance.json",
        "rounds": rounds, "seeds": 1,
        "workload": {"arrivals": "instance", "job_size": float(f"{job_size:.6g}")},
        "balancer": "pooled", "policies": list(SIMULATION_POLICIES),
    }
    return instance, simulation


def _limit(jobs: list[dict], limit: int | None) -> list[dict]:
    jobs.sort(key=lambda j: (j["submit"], j["id"]))
    return jobs if limit is None else jobs[:limit]


# ---------------------------------------------------------------------- Gavel throughputs
_JOB_KEY = re.compile(r"^\('(.+)', (\d+)\)$")


def _gavel_key(key: str) -> tuple[str, int]:
    """``"('ResNet-18 (batch size 16)', 1)"`` -> ``("ResNet-18 (batch size 16)", 1)``; a bare name has scale 1."""
    match = _JOB_KEY.match(key)
    return (match.group(1), int(match.group(2))) if match else (key, 1)


def _gavel_agent(job_type: str, scale: int) -> str:
    return job_type if scale == 1 else f"{job_type} x{scale}"


def _read_throughputs(path: str | os.PathLike) -> dict[str, dict[tuple[str, int], float]]:
    """Worker type -> (job type, scale factor) -> isolated throughput (steps per second)."""
    source = str(path)
    data = read_json(path)
    if not isinstance(data, dict) or not data:
        raise InputError("expected an object of worker types", source=source, path="$")
    table: dict[str, dict[tuple[str, int], float]] = {}
    for worker, jobs in data.items():
        if not isinstance(jobs, dict):
            raise InputError("expected an object of job types", source=source, path=json_path([worker]))
        for key, value in jobs.items():
            where = [worker, key]
            if isinstance(value, dict):  # colocation table: "null" is the job alone
                if "null" not in value:
                    raise InputError("no isolated throughput (key \"null\")", source=source, path=json_path(where))
                value, where = value["null"], where + ["null"]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"expected a throughput (number), got {value!r}", source=source, path=json_path(where))
            if not math.isfinite(value) or value < 0:
                raise InputError(f"throughput must be finite and >= 0, got {value!r}", source=source,
                                 path=json_path(where))
            table.setdefault(worker, {})[_gavel_key(key)] = float(value)
    return table


def import_gavel_throughputs(path: str | os.PathLike, *, gpus: dict | None = None, round_hours: float = 1.0,
                             scale_factors: tuple[int, ...] | None = (1,)) -> Imported:
    """An instance from Gavel's throughput file: pools = worker types, agents = job types.

    Utility of an edge = the job type's isolated throughput on one device of the
    worker type, in steps per round (``3600 * round_hours`` seconds); a job type
    measured at scale factor ``s`` (``s`` devices) gets ``1/s`` of its throughput
    per device and demand ``s``. A zero throughput (the job does not fit) is no
    edge. ``scale_factors=None`` keeps every scale factor in the file.

    >>> imp = import_gavel_throughputs("instances/imports/gavel_throughputs.json", gpus={"v100": 4})
    >>> [(p.id, p.count) for p in imp.instance.pools]
    [('k80', 1), ('p100', 1), ('v100', 4)]
    >>> import laissez_opt as lo
    >>> lo.solve(imp.instance, "welfare").status
    'optimal'
    """
    source = str(path)
    table = _read_throughputs(path)
    counts = _pool_counts({w: 1 for w in table}, gpus, source)
    types = sorted({k for jobs in table.values() for k in jobs if scale_factors is None or k[1] in scale_factors})
    if not types:
        raise InputError(f"no job type with scale factor in {list(scale_factors or [])}", source=source, path="$")
    agents = [{"id": _gavel_agent(t, s), "demand": s} for t, s in types]
    edges = []
    for t, s in types:
        for worker in sorted(table):
            value = table[worker].get((t, s), 0.0)
            if value > 0:
                edges.append({"agent": _gavel_agent(t, s), "pool": worker,
                              "utility": float(f"{value * 3600 * round_hours / s:.6g}")})
    data = {
        "format": "laissez-opt/instance", "version": 1, "name": Path(source).stem,
        "description": (f"Imported from Gavel throughputs {Path(source).name}: one agent per job type, "
                        f"utility = isolated training steps per device per round of {round_hours:g} h."),
        "round_hours": round_hours,
        "pools": [{"id": w, "count": counts[w]} for w in sorted(table)],
        "agents": agents, "edges": edges,
    }
    return Imported(instance=instance_from_dict(data, source), jobs=0,
                    notes=[] if gpus else ["pool sizes not given: 1 device per worker type (pass gpus)"])


# ---------------------------------------------------------------------------- Gavel trace
_GAVEL_FIELDS = ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "scale_factor",
                 "priority_weight", "SLO", "arrival_time")


def import_gavel_trace(path: str | os.PathLike, *, throughputs: str | os.PathLike, gpus: dict | None = None,
                       round_hours: float = 1.0, limit: int | None = None) -> Imported:
    """A simulation from a Gavel job trace (tab-separated, one job a line) and its throughput file.

    Fields (Gavel's layout): job type, command, steps argument, needs-data-dir flag,
    total steps, scale factor, priority weight, SLO, arrival time in seconds; a
    10-field line also carries the working directory after the command. Agents are
    the (job type, scale factor) pairs; a job's work is its total steps.

    >>> imp = import_gavel_trace("instances/imports/gavel.trace",
    ...                          throughputs="instances/imports/gavel_throughputs.json")
    >>> imp.jobs, imp.instance.rounds, imp.simulation["workload"]["arrivals"]
    (8, 3, 'instance')
    """
    source = str(path)
    table = _read_throughputs(throughputs)
    jobs = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) == 10:
            fields = fields[:2] + fields[3:]  # the working directory
        if len(fields) != 9:
            raise InputError(f"expected 9 or 10 tab-separated fields ({', '.join(_GAVEL_FIELDS)}), got {len(fields)}",
                             source=source, path=f"line {number}")

        def where(name: str) -> str:
            return f"line {number}, field {_GAVEL_FIELDS.index(name) + 1} ({name})"

        job_type = fields[0].strip()
        if not job_type:
            raise InputError("empty job type", source=source, path=where("job_type"))
        steps = _number(fields[4], source, where("total_steps"), minimum=1, integer=True)
        scale = int(_number(fields[5], source, where("scale_factor"), minimum=1, integer=True))
        weight = _number(fields[6], source, where("priority_weight"), minimum=0)
        arrival = _number(fields[8], source, where("arrival_time"), minimum=0)
        if not any((job_type, scale) in jobs_ for jobs_ in table.values()):
            raise InputError(f"job type {job_type!r} at scale factor {scale} is not in {Path(str(throughputs)).name}",
                             source=source, path=where("job_type"))
        jobs.append({"id": number, "agent": _gavel_agent(job_type, scale), "submit": arrival, "work": float(steps),
                     "weight": weight or 1.0, "key": (job_type, scale)})
    jobs = _limit(jobs, limit)
    keys = {j["agent"]: j["key"] for j in jobs}
    weights = {a: statistics.mean(j["weight"] for j in jobs if j["agent"] == a) for a in keys}
    counts = _pool_counts({w: 1 for w in table}, gpus, source)

    def utility(agent: str, pool: str) -> float:
        job_type, scale = keys[agent]
        return table[pool].get((job_type, scale), 0.0) * 3600 * round_hours / scale

    name = Path(source).stem
    instance, simulation = _replay(
        source, name, f"Imported from the Gavel trace {Path(source).name} with throughputs "
        f"{Path(str(throughputs)).name}: one agent per job type, work in training steps, utility in steps "
        f"per device per round of {round_hours:g} h.", jobs, counts, utility, round_hours, weights,
        {a: k[1] for a, k in keys.items()})
    notes = [] if gpus else ["pool sizes not given: 1 device per worker type (pass gpus)"]
    return Imported(instance_from_dict(instance, source), simulation, jobs=len(jobs), notes=notes)


# ---------------------------------------------------------------------------------- Philly
def _philly_time(value: Any, source: str, parts: list) -> float | None:
    if value is None or value == "None":
        return None
    if not isinstance(value, str):
        raise InputError(f"expected a time 'YYYY-MM-DD HH:MM:SS', got {value!r}", source=source, path=json_path(parts))
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").timestamp()
    except ValueError:
        raise InputError(f"expected a time 'YYYY-MM-DD HH:MM:SS', got {value!r}", source=source,
                         path=json_path(parts)) from None


def import_philly(path: str | os.PathLike, *, gpu_type: str = "gpu", gpus: dict | None = None,
                  round_hours: float = 1.0, limit: int | None = None) -> Imported:
    """A simulation from the Philly trace's job log (``cluster_job_log``, a JSON list of jobs).

    Per job: ``jobid``, ``vc`` (the virtual cluster: the agent), ``submitted_time``,
    and ``attempts``, each with ``start_time``, ``end_time`` and ``detail`` (machines
    with their ``gpus``). Duration = last attempt's end minus first attempt's start;
    GPU count = the GPUs of the first attempt; work = duration (hours) times GPUs.
    Jobs that never ran (no attempt with both times) are skipped and counted.

    >>> imp = import_philly("instances/imports/philly_cluster_job_log.json")
    >>> imp.jobs, imp.skipped, [a.id for a in imp.instance.agents]
    (6, 1, ['vc1', 'vc2'])
    """
    source = str(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("expected a list of jobs", source=source, path="$")
    jobs, skipped, intervals = [], 0, []
    for k, job in enumerate(data):
        if not isinstance(job, dict):
            raise InputError("expected a job object", source=source, path=json_path([k]))
        for key in ("jobid", "vc", "submitted_time", "attempts"):
            if key not in job:
                raise InputError(f"missing {key!r}", source=source, path=json_path([k]))
        if not isinstance(job["vc"], str) or not job["vc"].strip():
            raise InputError(f"expected a virtual cluster name, got {job['vc']!r}", source=source,
                             path=json_path([k, "vc"]))
        submit = _philly_time(job["submitted_time"], source, [k, "submitted_time"])
        attempts = job["attempts"]
        if not isinstance(attempts, list):
            raise InputError("expected a list of attempts", source=source, path=json_path([k, "attempts"]))
        times, count = [], None
        for a, attempt in enumerate(attempts):
            if not isinstance(attempt, dict):
                raise InputError("expected an attempt object", source=source, path=json_path([k, "attempts", a]))
            begin = _philly_time(attempt.get("start_time"), source, [k, "attempts", a, "start_time"])
            end = _philly_time(attempt.get("end_time"), source, [k, "attempts", a, "end_time"])
            if begin is not None and end is not None:
                if end < begin:
                    raise InputError("end_time is before start_time", source=source,
                                     path=json_path([k, "attempts", a, "end_time"]))
                times.append((begin, end))
            detail = attempt.get("detail", [])
            if not isinstance(detail, list) or not all(isinstance(d, dict) and isinstance(d.get("gpus", []), list)
                                                       for d in detail):
                raise InputError("expected a list of machines, each with a list 'gpus'", source=source,
                                 path=json_path([k, "attempts", a, "detail"]))
            if count is None and detail:
                count = sum(len(d.get("gpus", [])) for d in detail)
        if submit is None or not times or not count:
            skipped += 1
            continue
        begin, end = times[0][0], times[-1][1]
        jobs.append({"id": str(job["jobid"]), "agent": job["vc"].strip(), "submit": submit,
                     "work": (end - begin) / 3600.0 * count})
        intervals.append((begin, end, float(count)))
    jobs = _limit(jobs, limit)
    counts = _pool_counts({gpu_type: _peak(intervals) if intervals else 1}, gpus, source)
    instance, simulation = _replay(
        source, Path(source).stem, f"Imported from the Philly job log {Path(source).name}: one agent per "
        f"virtual cluster, work in GPU-hours, one pool '{gpu_type}' (the trace records no GPU model) sized at the "
        f"most GPUs in use at once.", jobs, counts, lambda agent, pool: round_hours, round_hours)
    return Imported(instance_from_dict(instance, source), simulation, jobs=len(jobs), skipped=skipped,
                    notes=[f"skipped {skipped} job(s) that never ran"] if skipped else [])


# ------------------------------------------------------------------------------ Alibaba PAI
PAI_TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                    "plan_mem", "plan_gpu", "gpu_type")
PAI_JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")


def _csv_rows(path: str | os.PathLike, columns: tuple[str, ...]):
    """(line number, {column: text}) of a headerless CSV in ``columns`` order (a header line is skipped)."""
    source = str(path)
    for number, row in enumerate(csv.reader(io.StringIO(read_text(path))), start=1):
        if not row or (number == 1 and row[0] == columns[0]):
            continue
        if len(row) != len(columns):
            raise InputError(f"expected {len(columns)} columns ({', '.join(columns)}), got {len(row)}",
                             source=source, path=f"line {number}")
        yield number, dict(zip(columns, row))


def import_alibaba_pai(path: str | os.PathLike, *, jobs_table: str | os.PathLike | None = None,
                       speed: dict | None = None, gpus: dict | None = None, round_hours: float = 1.0,
                       limit: int | None = None) -> Imported:
    """A simulation from the Alibaba PAI GPU trace's task table (``pai_task_table.csv``).

    Columns: job_name, task_name, inst_num, status, start_time, end_time, plan_cpu,
    plan_mem, plan_gpu (percent of one GPU per instance), gpu_type. A job is its
    GPU tasks: submitted at their earliest start, lasting to their latest end, using
    ``inst_num * plan_gpu / 100`` GPUs of the task's type. Agents are the users
    (with ``jobs_table``, ``pai_job_table.csv``) or else the GPU types asked for;
    an agent has an edge to each type its jobs ran on, with utility ``speed[type]``
    (default 1) times ``round_hours``. Tasks not ``Terminated``, without GPUs or
    without both times are skipped and counted.

    >>> imp = import_alibaba_pai("instances/imports/pai_task_table.csv",
    ...                          jobs_table="instances/imports/pai_job_table.csv", speed={"T4": 0.5})
    >>> sorted(a.id for a in imp.instance.agents), imp.skipped
    (['user_a', 'user_b', 'user_c'], 3)
    """
    source = str(path)
    users: dict[str, str] = {}
    if jobs_table is not None:
        for number, row in _csv_rows(jobs_table, PAI_JOB_COLUMNS):
            if not row["user"].strip():
                raise InputError("empty user", source=str(jobs_table), path=f"line {number}, column 3 (user)")
            users[row["job_name"]] = row["user"].strip()
    speeds = _speeds(speed, source)
    per_job: dict[str, dict] = {}
    skipped = 0
    for number, row in _csv_rows(path, PAI_TASK_COLUMNS):
        def where(name: str) -> str:
            return f"line {number}, column {PAI_TASK_COLUMNS.index(name) + 1} ({name})"

        if row["status"] != "Terminated" or not row["start_time"] or not row["end_time"] or not row["plan_gpu"]:
            skipped += 1
            continue
        inst = _number(row["inst_num"], source, where("inst_num"), minimum=0)
        plan = _number(row["plan_gpu"], source, where("plan_gpu"), minimum=0)
        begin = _number(row["start_time"], source, where("start_time"), minimum=0)
        end = _number(row["end_time"], source, where("end_time"), minimum=0)
        if end < begin:
            raise InputError("end_time is before start_time", source=source, path=where("end_time"))
        kind = row["gpu_type"].strip()
        if not kind:
            raise InputError("empty gpu_type", source=source, path=where("gpu_type"))
        if inst * plan <= 0:
            skipped += 1
            continue
        if jobs_table is not None and row["job_name"] not in users:
            raise InputError(f"job {row['job_name']!r} is not in {Path(str(jobs_table)).name}", source=source,
                             path=where("job_name"))
        job = per_job.setdefault(row["job_name"], {"id": row["job_name"], "begin": begin, "end": end, "tasks": []})
        job["begin"], job["end"] = min(job["begin"], begin), max(job["end"], end)
        job["tasks"].append((kind, inst * plan / 100.0, begin, end))
    jobs, intervals, kinds = [], [], {}
    for job in per_job.values():
        gpus_used = sum(g for _, g, _, _ in job["tasks"])
        kind = max(job["tasks"], key=lambda t: t[1])[0]
        agent = users.get(job["id"], kind)
        work = sum(g * (e - b) / 3600.0 * speeds(k) for k, g, b, e in job["tasks"])
        jobs.append({"id": job["id"], "agent": agent, "submit": job["begin"], "work": work})
        kinds.setdefault(agent, set()).update(k for k, _, _, _ in job["tasks"])
        intervals.extend((b, e, g, k) for k, g, b, e in job["tasks"])
        del gpus_used
    jobs = _limit(jobs, limit)
    kept = {j["agent"] for j in jobs}
    used = {k: _peak([(b, e, g) for b, e, g, kk in intervals if kk == k]) for k in {i[3] for i in intervals}}
    counts = _pool_counts(used, gpus, source)
    instance, simulation = _replay(
        source, Path(source).stem, f"Imported from the Alibaba PAI task table {Path(source).name}: one agent per "
        f"{'user' if jobs_table else 'requested GPU type'}, work in reference-GPU hours, one pool per gpu_type "
        f"sized at the most GPUs of that type in use at once.", jobs, counts,
        lambda agent, pool: speeds(pool) * round_hours if agent in kept and pool in kinds[agent] else 0.0,
        round_hours)
    return Imported(instance_from_dict(instance, source), simulation, jobs=len(jobs), skipped=skipped,
                    notes=[f"skipped {skipped} task row(s): not Terminated, no GPU or no times"] if skipped else [])


# ---------------------------------------------------------------------------------- dispatch
FORMATS: dict[str, Callable[..., Imported]] = {
    "gavel-throughputs": import_gavel_throughputs,
    "gavel-trace": import_gavel_trace,
    "philly": import_philly,
    "alibaba-pai": import_alibaba_pai,
}


def import_data(fmt: str, path: str | os.PathLike, **options) -> Imported:
    """Read ``path`` in format ``fmt`` (one of :data:`FORMATS`) with that importer's ``options``.

    >>> import_data("gavel-throughputs", "instances/imports/gavel_throughputs.json").instance.n_agents
    4
    >>> import_data("slurm", "x.csv")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: format: unknown format 'slurm'; formats: gavel-throughputs, gavel-trace, philly, alibaba-pai
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}", path="format")
    import inspect

    accepted = set(inspect.signature(FORMATS[fmt]).parameters) - {"path"}
    for key in options:
        if key not in accepted:
            raise InputError(f"{fmt} has no option {key!r}; options: {', '.join(sorted(accepted))}", path=key)
    return FORMATS[fmt](path, **options)
