"""``lo.simulate``: every policy on every seed, in parallel, resumable.

A sweep is the configuration's policies times its seeds, each run an independent
task.  Tasks go through the harness's executors (:func:`laissez_opt.harness.executors.run_local_pool`,
a local process pool; :func:`~laissez_opt.harness.executors.run_dask`, a Dask cluster) and,
with a ``store`` directory, through its run store (:class:`laissez_opt.harness.RunStore`,
keys from :func:`laissez_opt.harness.run_key` over the configuration's content, the
policy, its options and the seed): a sweep run again reuses the finished runs, so an
interrupted sweep resumes where it stopped.  Results are ordered by policy (as
configured) and seed whatever order the runs finish in, so the outputs do not depend
on the executor.

Everything is checked before any run starts: the configuration (schema, references),
the policies (names and, by deciding round 0 of the first seed, their options), the
memory estimate.

Example
-------
>>> import laissez_opt as lo
>>> res = lo.simulate(preset="thesis-r1", progress=False)
>>> {p: res.run(p, 0).agents["backlog_work"] for p in res.policies}
{'time_equal': [85.0, 5.0], 'min_backlog': [20.0, 0.0]}
"""

from __future__ import annotations

import copy
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Sequence

from ..errors import InputError, LaissezOptError, RunsFailedError
from ..harness import RunStore, run_key
from ..harness.store import DamagedRecord, RunStoreWarning
from ..harness.executors import EXECUTORS, Failure, run_dask, run_inline, run_local_pool
from .config import SimulationConfig, config_from_dict, load_config, PolicySpec
from .engine import RunRecord, prepare, run
from .policies import PolicyFactory, resolve
from .presets import preset_dict
from .results import SimulationResult

__all__ = ["simulate", "build_config", "ENGINE_VERSION"]

#: Part of every run-store key: bump when the engine's results change for the same inputs.
ENGINE_VERSION = 1


def _merge(data: dict, overrides: dict) -> dict:
    """``data`` with ``overrides``; ``workload`` and ``generate`` merge key by key, and ``None`` removes a key."""
    out = copy.deepcopy(data)
    for key, value in overrides.items():
        if key in ("workload", "generate") and isinstance(value, dict) and isinstance(out.get(key), dict):
            merged = {**out[key], **copy.deepcopy(value)}
            out[key] = {k: v for k, v in merged.items() if v is not None}
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


def build_config(config=None, *, preset: str | None = None, rounds: int | None = None, seeds=None,
                 **overrides) -> SimulationConfig:
    """A checked configuration from a file path, a dict, a :class:`SimulationConfig` or a preset name.

    ``rounds``, ``seeds`` (a count or a list) and ``overrides`` (top-level fields of the
    file format; ``workload`` and ``generate`` are merged key by key; ``None`` removes a
    field, so its default applies) replace the configuration's own.

    >>> cfg = build_config(preset="thesis-r5-equal", seeds=3, workload={"deadline": None})
    >>> cfg.seeds, cfg.workload.deadline, cfg.workload.load
    ((0, 1, 2), None, 0.6)
    """
    if (config is None) == (preset is None):
        raise InputError("give a configuration or a preset, not both and not neither", path="config")
    changes = dict(overrides)
    if rounds is not None:
        changes["rounds"] = rounds
    if seeds is not None:
        changes["seeds"] = list(seeds) if not isinstance(seeds, int) else seeds
    if preset is not None:
        return config_from_dict(_merge(preset_dict(preset), changes), f"preset:{preset}")
    if isinstance(config, SimulationConfig):
        if not changes:
            return config
        data = config.to_dict()
        if isinstance(config.instance, Path):
            data["instance"] = str(config.instance.resolve())
        return config_from_dict(_merge(data, changes), config.source)
    if isinstance(config, dict):
        return config_from_dict(_merge(config, changes), "<dict>")
    loaded = load_config(config)  # the file itself is checked first, so its errors name it
    if not changes:
        return loaded
    from ..io import read_json

    return config_from_dict(_merge(read_json(config), changes), str(config), base_dir=Path(config).parent)


def _policies(config: SimulationConfig, names: Sequence[str] | None, options: dict | None) -> list[PolicySpec]:
    specs = list(config.policies)
    if names is not None:
        known = {p.name: p for p in specs}
        chosen = []
        for name in names:
            chosen.append(known.get(name) or PolicySpec(name, name, {}))
        specs = chosen
        if not specs:
            raise InputError("no policies given", path="policies")
        if len({s.name for s in specs}) != len(specs):
            raise InputError("a policy is named twice", path="policies")
    labels = {s.name for s in specs}
    for label in (options or {}):
        if label not in labels:
            raise InputError(f"options given for {label!r}, which is not among the policies {', '.join(sorted(labels))}",
                             path="policy_options")
    return [PolicySpec(s.name, s.method, {**s.options, **(options or {}).get(s.name, {})}) for s in specs]


def _key_of(factory: PolicyFactory) -> dict:
    target = factory.target
    if not isinstance(target, str):
        target = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__qualname__)}"
    key = {"kind": factory.kind, "target": target, "options": factory.options}
    fingerprint = getattr(getattr(factory.method_spec, "run", None), "fingerprint", None)
    if fingerprint is not None:  # a declared method: a changed definition is never served from the store
        key["definition"] = fingerprint
    return key


def _task_config(config: SimulationConfig) -> dict:
    data = config.to_dict()
    if isinstance(config.instance, Path):
        data["instance"] = str(config.instance.resolve())
    return data


def _run_task(task: dict) -> dict:
    """Worker: one run (or one hindsight bound); errors come back as rows, never as tracebacks."""
    try:
        config = config_from_dict(task["config"], task["source"])
        setup = prepare(config, task["seed"])
        if task["kind"] == "hindsight":
            from .hindsight import hindsight_bound

            return {"hindsight": hindsight_bound(setup)}
        policy = task["policy"].build(verify=config.verify)
        return {"run": run(setup, policy, task["seed"]).to_dict()}
    except LaissezOptError as err:
        return {"error": str(err), "exit_code": err.exit_code, "type": type(err).__name__}


def check_stored_row(row) -> None:
    """A stored simulation row: ``{"run": RunRecord dict}`` or ``{"hindsight": bound}``; DamagedRecord otherwise."""
    if not isinstance(row, dict) or len(row) != 1 or not isinstance(next(iter(row.values()), None), dict):
        raise DamagedRecord("is not a simulation run or hindsight bound")
    if "run" in row:
        run_row = row["run"]
        for name, kind in (("policy", str), ("seed", int), ("rounds", dict), ("agents", dict), ("timing", dict)):
            if not isinstance(run_row.get(name), kind):
                raise DamagedRecord(f"run field {name!r} is missing or not a {kind.__name__}")
        for table in ("rounds", "agents"):
            if not all(isinstance(column, list) for column in run_row[table].values()):
                raise DamagedRecord(f"run table {table!r} has a column that is not a list")
    elif "hindsight" not in row:
        raise DamagedRecord(f"holds {next(iter(row))!r}, neither a run nor a hindsight bound")


def _raise(row: dict) -> None:
    if row.get("type") == "InputError":
        raise InputError(row["error"])
    error = LaissezOptError(row["error"])
    error.exit_code = row.get("exit_code", 1)
    raise error


def _dry_run(config: SimulationConfig, factories: list[PolicyFactory], file_options: list[dict] | None = None,
             policy_options: dict | None = None) -> None:
    """Decide round 0 of the first seed with every policy: options and names fail here, before the sweep.

    ``file_options``: each policy's options as the configuration file gives them (None when the
    policies were chosen on the command line), so a refused option is named by its JSON path;
    one the caller gave in ``policy_options`` is named ``policy_options.LABEL.NAME``.
    """
    setup = prepare(config, config.seeds[0])
    probe = config.replace(rounds=1, record_events=False, record_agent_rounds=False)
    setup.config = probe
    setup.rounds = 1
    for k, factory in enumerate(factories):
        try:
            run(setup, factory.build(verify=config.verify), config.seeds[0])
        except InputError as err:
            path = err.path or ""
            option = path[len("option "):] if path.startswith("option ") else None
            if option is not None and file_options is not None and option in file_options[k]:
                raise InputError(err.problem, source=config.source, path=f"$.policies[{k}].options.{option}") from None
            if option is not None and option in (policy_options or {}).get(factory.name, {}):
                raise InputError(err.problem, path=f"policy_options.{factory.name}.{option}") from None
            if path.startswith("$."):  # a JSON path inside the configuration: name its file
                err.located(config.source)
            raise


def simulate(config=None, *, preset: str | None = None, policies: Sequence[str] | None = None,
             rounds: int | None = None, seeds=None, workers: int = 1, executor: str | None = None,
             scheduler: str | None = None, store: str | os.PathLike | None = None, progress: bool | None = None,
             policy_options: dict[str, dict] | None = None, check: bool = True, **overrides) -> SimulationResult:
    """Simulate every policy of a configuration on every seed; see the module docstring.

    ``config``: a configuration file, a dict in the file format or a
    :class:`~laissez_opt.simulate.config.SimulationConfig`; or ``preset``: a name from
    ``laissez-opt simulate --list-presets``.  ``policies``: policy labels of the
    configuration or policy names to run instead; ``policy_options``: ``{label: {option:
    value}}`` added to those policies' options; ``rounds``, ``seeds`` (a count ``K`` for
    seeds ``0..K-1``, or a list) and ``overrides`` (fields of the file format, e.g.
    ``balancer="pooled"``, ``workload={"deadline": 2}``) replace the configuration's.
    ``executor``: ``"inline"`` (this process), ``"local"`` (``workers`` supervised worker
    processes) or ``"dask"`` (a Dask cluster at ``scheduler``, or a local one); left
    unnamed, one worker runs inline and more run locally.  A run whose worker dies is
    reported after the others have finished (and been stored), never in their place.
    ``store``: a directory of finished runs to
    reuse and extend; ``progress``: a progress bar (default: when standard error is a
    terminal); ``check``: decide round 0 with every policy before the sweep.

    >>> import laissez_opt as lo
    >>> res = lo.simulate(preset="thesis-r1", policies=["time_equal"], balancer="pooled", progress=False)
    >>> res.policies, res.run("time_equal", 0).rounds["backlog_work"], res.hindsight[0]["processed_work"]
    (['time_equal'], [0.0, 90.0], 1075.0)
    """
    if executor is not None and executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}", path="executor")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be an integer >= 1, got {workers!r}", path="workers")
    if executor is None:
        executor = "inline" if workers == 1 else "local"
    cfg = build_config(config, preset=preset, rounds=rounds, seeds=seeds, **overrides)
    specs = _policies(cfg, policies, policy_options)
    # The options the file itself gives each policy (those of policy_options come from the caller).
    file_options = None
    if policies is None and len(cfg.policies) == len(specs):
        file_options = [{k: v for k, v in (given.options or {}).items()
                         if k not in (policy_options or {}).get(given.name, {})} for given in cfg.policies]
    factories = []
    for k, spec in enumerate(specs):
        try:
            factories.append(resolve(spec.method, spec.options, name=spec.name))
        except InputError as err:
            where = f"$.policies[{k}].method" if policies is None else "policies"
            raise InputError(err.problem, source=cfg.source if policies is None else None, path=where) from None
    cfg = cfg.replace(policies=tuple(specs))
    if check:
        _dry_run(cfg, factories, file_options, policy_options)
    digest = cfg.digest()
    data = _task_config(cfg)
    tasks = []
    for factory in factories:
        for seed in cfg.seeds:
            key = run_key(digest, factory.name, {**_key_of(factory), "seed": seed, "engine": ENGINE_VERSION})
            tasks.append({"kind": "run", "config": data, "source": cfg.source, "policy": factory, "seed": seed,
                          "key": key})
    if cfg.hindsight:
        for seed in cfg.seeds:
            key = run_key(digest, "hindsight", {"seed": seed, "engine": ENGINE_VERSION})
            tasks.append({"kind": "hindsight", "config": data, "source": cfg.source, "seed": seed, "key": key})
    run_store = RunStore(store, check_row=check_stored_row, allow_nan=True) if store is not None else None
    rows: dict[str, dict] = {}
    pending = []
    for task in tasks:
        try:
            cached = run_store.get(task["key"]) if run_store is not None else None
        except DamagedRecord as exc:
            warnings.warn(f"run store record {task['key']} {exc}; the run is computed again", RunStoreWarning,
                          stacklevel=2)
            cached = None
        if cached is not None and "error" not in cached:
            rows[task["key"]] = cached
        else:
            pending.append(task)
    if executor == "dask":
        stream = run_dask(_run_task, pending, workers=workers, scheduler=scheduler)
    elif executor == "inline":
        stream = run_inline(_run_task, pending)
    else:
        stream = run_local_pool(_run_task, pending, workers=workers)
    failures: list[tuple[dict, Failure]] = []
    show = sys.stderr.isatty() if progress is None else progress
    if show and pending:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            job = bar.add_task(f"simulating {cfg.name}", total=len(pending))
            for task, row in stream:
                _record(task, row, rows, run_store, failures)
                bar.advance(job)
    else:
        for task, row in stream:
            _record(task, row, rows, run_store, failures)
    if failures:
        task, failure = failures[0]
        what = "the hindsight bound" if task["kind"] == "hindsight" else f"policy {task['policy'].name}"
        finished = "; the finished runs are in the store, and a rerun computes only the missing ones" \
            if run_store is not None else ""
        raise RunsFailedError(f"{len(failures)} of {len(pending)} runs failed, first {what} on seed {task['seed']}: "
                              f"{failure.message}{finished}")
    records, bounds = [], {}
    for task in tasks:
        row = rows[task["key"]]
        if task["kind"] == "hindsight":
            bounds[task["seed"]] = row["hindsight"]
        else:
            records.append(RunRecord.from_dict(row["run"]))
    return SimulationResult(cfg, [f.name for f in factories], records, bounds, computed=len(pending),
                            reused=len(tasks) - len(pending))


def _record(task: dict, row, rows: dict, run_store: RunStore | None, failures: list) -> None:
    if isinstance(row, Failure):  # the worker died: the other runs go on; reported at the end
        failures.append((task, row))
        return
    if "error" in row:
        _raise(row)
    # The pool notes each worker's peak memory; a run's record is the same whichever executor ran it.
    row = {k: v for k, v in row.items() if k != "peak_rss_mib"}
    # A fresh row takes the form a stored one has (sorted keys, lists), so that a sweep resumed
    # from the store writes the same bytes as one computed in a single go.
    row = json.loads(json.dumps(row, sort_keys=True, allow_nan=True))
    rows[task["key"]] = row
    if run_store is not None:
        run_store.put(task["key"], row)
