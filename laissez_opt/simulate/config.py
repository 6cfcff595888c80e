"""The simulation configuration: a JSON file (``format: "laissez-opt/simulation"``) or a dict.

The file is read with the strict JSON reader and validated against the shipped
schema (``laissez_opt/io/schemas/simulation.schema.json``); what a schema cannot
say (exactly one instance source, known policy names, loads per weight) is checked
here.  Every problem is one :class:`~laissez_opt.errors.InputError` naming the
file, the JSON path and what is wrong, before any simulation work starts.

A configuration names the instance (a file, an inline instance, or a generated
family), the workload (thesis 002, section 5.2: Poisson arrivals with base rate
``lambda_0`` scaled by weight, ``lambda_i = lambda_0 w_i``; job sizes set by the offered
load ``rho_i``; deadlines), the execution model (balancer, demand rule, tick
length), the policies and the seeds.  Job size from the load:

.. math::

    s_i = \\frac{\\rho_i \\, C_i}{\\lambda_i}, \\qquad
    C_i = \\frac{w_i}{\\sum_j w_j} \\sum_c k_c u_{i,c} \\quad (\\texttt{equal\\_share}),

so agent ``i`` offers ``rho_i`` times the work its weighted time-equal share can do per
round (``best_pool`` / ``worst_pool``: that many devices, ``(w_i / W) sum_c k_c``, all of
its best / worst pool).

Example
-------
>>> cfg = config_from_dict({"format": "laissez-opt/simulation", "version": 1,
...     "instance": "instances/thesis-r1-fair-vs-efficient.json",
...     "workload": {"arrivals": "instance"}, "policies": ["time_equal", "min_backlog"]})
>>> [p.name for p in cfg.policies], cfg.seeds, cfg.balancer
(['time_equal', 'min_backlog'], (0,), 'power_of_two')
>>> config_from_dict({"format": "laissez-opt/simulation", "version": 1, "policies": ["welfare"]})
Traceback (most recent call last):
...
laissez_opt.errors.InputError: <dict>: $: give the instance: exactly one of 'instance' and 'generate'
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import read_json, validate
from ..io.jsonfile import json_path

__all__ = [
    "FORMAT",
    "Workload",
    "PolicySpec",
    "SimulationConfig",
    "config_from_dict",
    "load_config",
    "BALANCERS",
    "DEMAND_RULES",
    "UTILITIES",
]

FORMAT = "laissez-opt/simulation"
BALANCERS = ("power_of_two", "least_loaded", "random", "pooled")
DEMAND_RULES = ("clear", "instance")
UTILITIES = ("throughput", "goodput", "negative_backlog")


@dataclass(frozen=True)
class Workload:
    """Where jobs come from (``arrivals``), how big they are, when they expire.

    ``load``: ``None``, a number (every agent), ``("by_weight", {w: rho})`` or
    ``("by_agent", {id: rho})``.
    """

    arrivals: str = "poisson"
    base_rate: float = 40.0
    rate_scaling: str = "weight"
    load: Any = None
    load_reference: str = "equal_share"
    job_size: float | None = None
    size_distribution: str = "fixed"
    deadline: int | None = None

    def to_dict(self) -> dict:
        load = self.load
        if isinstance(load, tuple):
            load = {load[0]: {(_weight_key(k) if load[0] == "by_weight" else k): v for k, v in load[1].items()}}
        return {"arrivals": self.arrivals, "base_rate": self.base_rate, "rate_scaling": self.rate_scaling,
                "load": load, "load_reference": self.load_reference, "job_size": self.job_size,
                "size_distribution": self.size_distribution, "deadline": self.deadline}


@dataclass(frozen=True)
class PolicySpec:
    """A policy to run: its label ``name``, the ``method`` (or policy) it runs, and options."""

    name: str
    method: str
    options: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "method": self.method, "options": self.options}


@dataclass(frozen=True)
class SimulationConfig:
    """A checked simulation configuration (see the module docstring).

    ``instance`` is a path (resolved), an inline instance dict, or ``None`` with
    ``generate`` set; ``source`` names where the configuration came from.
    """

    policies: tuple[PolicySpec, ...]
    instance: Any = None
    generate: dict | None = None
    name: str = "simulation"
    description: str = ""
    rounds: int | None = None
    round_hours: float | None = None
    seeds: tuple[int, ...] = (0,)
    workload: Workload = field(default_factory=Workload)
    balancer: str = "power_of_two"
    demand: str = "clear"
    utility: str = "throughput"
    verify: bool = True
    envy: str = "auto"
    hindsight: bool = False
    record_agent_rounds: bool = False
    record_events: bool = False
    max_memory_gb: float = 2.0
    source: str = "<dict>"

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict in the file format (paths as given)."""
        out: dict[str, Any] = {"format": FORMAT, "version": 1, "name": self.name}
        if self.description:
            out["description"] = self.description
        if self.generate is not None:
            out["generate"] = self.generate
        else:
            out["instance"] = str(self.instance) if isinstance(self.instance, Path) else self.instance
        if self.rounds is not None:
            out["rounds"] = self.rounds
        if self.round_hours is not None:
            out["round_hours"] = self.round_hours
        out.update(
            seeds=list(self.seeds),
            policies=[p.to_dict() for p in self.policies],
            workload=self.workload.to_dict(),
            balancer=self.balancer, demand=self.demand, utility=self.utility, verify=self.verify,
            envy=self.envy, hindsight=self.hindsight, record_agent_rounds=self.record_agent_rounds,
            record_events=self.record_events, max_memory_gb=self.max_memory_gb,
        )
        return _strip_none_load(out)

    def digest(self, *, exclude=("seeds", "policies", "name", "description", "hindsight", "max_memory_gb")) -> str:
        """Content hash of everything that shapes one run except ``exclude`` (run-store keys).

        Left out by default: what names or selects runs (seeds, policies, name,
        description) and what does not change a run's records (the hindsight bound is a
        task of its own; the memory limit only refuses).
        """
        data = {k: v for k, v in self.to_dict().items() if k not in exclude}
        if isinstance(self.instance, Path):
            data["instance"] = hashlib.sha256(self.instance.read_bytes()).hexdigest()
        text = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def replace(self, **changes) -> "SimulationConfig":
        """A copy with some fields changed (checked like a new configuration)."""
        from dataclasses import replace

        return replace(self, **changes)


def _strip_none_load(out: dict) -> dict:
    if out["workload"]["load"] is None:
        del out["workload"]["load"]
    return out


def _weight_key(weight: float) -> str:
    return repr(float(weight)).removesuffix(".0") if float(weight).is_integer() else repr(float(weight))


def _error(problem: str, source: str, parts) -> InputError:
    return InputError(problem, source=source, path=json_path(parts))


def _policies(items: list, source: str) -> tuple[PolicySpec, ...]:
    seen: dict[str, int] = {}
    out = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            spec = PolicySpec(item, item, {})
        else:
            spec = PolicySpec(item["name"], item.get("method", item["name"]), copy.deepcopy(item.get("options", {})))
        if spec.name in seen:
            raise _error(f"policy name {spec.name!r} is used twice (first at $.policies[{seen[spec.name]}])",
                         source, ["policies", k])
        seen[spec.name] = k
        out.append(spec)
    return tuple(out)


def _load(value, source: str):
    if value is None or isinstance(value, (int, float)):
        return None if value is None else float(value)
    if len(value) != 1:
        raise _error("give exactly one of by_weight and by_agent", source, ["workload", "load"])
    kind, table = next(iter(value.items()))
    if not table:
        raise _error("must not be empty", source, ["workload", "load", kind])
    if kind == "by_agent":
        return ("by_agent", {k: float(v) for k, v in table.items()})
    parsed = {}
    for key, rho in table.items():
        try:
            weight = float(key)
        except ValueError:
            weight = math.nan
        if not math.isfinite(weight) or weight <= 0:
            raise _error(f"a weight key is a number > 0, got {key!r}", source, ["workload", "load", kind, key])
        parsed[weight] = float(rho)
    return ("by_weight", parsed)


def config_from_dict(data: Any, source: str = "<dict>", *, base_dir: str | os.PathLike | None = None) -> SimulationConfig:
    """Validate ``data`` (the file's JSON value) and build a :class:`SimulationConfig`.

    ``base_dir``: where relative instance paths are resolved (the config file's
    directory; default the working directory).
    """
    validate(data, "simulation", source)
    if ("instance" in data) == ("generate" in data):
        raise _error("give the instance: exactly one of 'instance' and 'generate'", source, [])
    instance = data.get("instance")
    if isinstance(instance, str):
        instance = Path(base_dir or ".") / instance
    generate = None
    if "generate" in data:
        generate = {"seed": None, "params": {}, **copy.deepcopy(data["generate"])}
    seeds = data.get("seeds", 1)
    if isinstance(seeds, int):
        seeds = tuple(range(seeds))
    else:
        seeds = tuple(seeds)
        if len(set(seeds)) != len(seeds):
            raise _error("seeds must be distinct", source, ["seeds"])
    w = data.get("workload", {})
    workload = Workload(
        arrivals=w.get("arrivals", "poisson"),
        base_rate=float(w.get("base_rate", 40.0)),
        rate_scaling=w.get("rate_scaling", "weight"),
        load=_load(w.get("load"), source),
        load_reference=w.get("load_reference", "equal_share"),
        job_size=None if w.get("job_size") is None else float(w["job_size"]),
        size_distribution=w.get("size_distribution", "fixed"),
        deadline=w.get("deadline"),
    )
    if workload.arrivals == "poisson" and workload.load is None and workload.job_size is None:
        raise _error("Poisson arrivals need a load or a job_size", source, ["workload"])
    if workload.load is not None and workload.job_size is not None:
        raise _error("give a load or a job_size, not both", source, ["workload", "job_size"])
    if workload.arrivals == "instance" and workload.load is not None:
        raise _error("a load sets Poisson job sizes; instance arrivals take job_size", source, ["workload", "load"])
    return SimulationConfig(
        policies=_policies(data["policies"], source),
        instance=instance,
        generate=generate,
        name=data.get("name", Path(source).stem if source not in ("<dict>",) else "simulation"),
        description=data.get("description", ""),
        rounds=data.get("rounds"),
        round_hours=None if data.get("round_hours") is None else float(data["round_hours"]),
        seeds=seeds,
        workload=workload,
        balancer=data.get("balancer", "power_of_two"),
        demand=data.get("demand", "clear"),
        utility=data.get("utility", "throughput"),
        verify=data.get("verify", True),
        envy=data.get("envy", "auto"),
        hindsight=data.get("hindsight", False),
        record_agent_rounds=data.get("record_agent_rounds", False),
        record_events=data.get("record_events", False),
        max_memory_gb=float(data.get("max_memory_gb", 2.0)),
        source=source,
    )


def load_config(path: str | os.PathLike) -> SimulationConfig:
    """Read, validate and check a simulation configuration file.

    >>> load_config("no-such-config.json")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: no-such-config.json: $: file not found
    """
    data = read_json(path)
    return config_from_dict(data, str(path), base_dir=Path(path).parent)
