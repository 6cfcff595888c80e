"""Instance files: ``format: "laissez-opt/instance"``, ``version: 1``.

Reading validates against the shipped JSON Schema, then checks references
(:func:`laissez_opt.instance.check_instance`); files that pass are read by a
fast path that checks whole columns at once (:mod:`laissez_opt.io.columns`).  Writing produces canonical JSON:
fixed key order, defaults omitted, one pool/agent/edge per line, floats in
their shortest round-trip form.  ``dumps_instance(load_instance(f))`` is a fixed
point: loading and writing it again gives the same bytes.

Example
-------
>>> from laissez_opt.io import instance_from_dict, dumps_instance
>>> inst = instance_from_dict({"format": "laissez-opt/instance", "version": 1,
...     "pools": [{"id": "A10"}], "agents": [{"id": "A"}],
...     "edges": [{"agent": "A", "pool": "A10", "utility": 2}]})
>>> print(dumps_instance(inst))  # doctest: +NORMALIZE_WHITESPACE
{
  "format": "laissez-opt/instance",
  "version": 1,
  "name": "instance",
  "rounds": 1,
  "round_hours": 1.0,
  "pools": [
    {"id": "A10", "count": 1, "base_price": 0.0}
  ],
  "agents": [
    {"id": "A", "weight": 1.0}
  ],
  "edges": [
    {"agent": "A", "pool": "A10", "utility": 2.0}
  ]
}
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..instance import Agent, Edge, Instance, Pool
from .columns import instance_fast, keys_repeated, loads_fast
from .jsonfile import decode_text, parse_json, read_bytes, write_atomic
from .schema import validate

__all__ = [
    "FORMAT",
    "instance_from_dict",
    "load_instance",
    "instance_to_dict",
    "dumps_instance",
    "save_instance",
    "pool_record",
]

FORMAT = "laissez-opt/instance"

_AGENT_DEFAULTS = {
    "demand": None,
    "work": None,
    "arrival": 0,
    "deadline": None,
    "elapsed": 0.0,
    "migration_cost": 0.0,
    "budget": None,
    "arrivals": None,
    "required": False,
    "task": None,
}


def _float(value):
    return None if value is None else float(value)


def _vector(value):
    """A resource vector (``resources``, ``task``) as (kind, amount) pairs, or None."""
    return None if value is None else tuple((str(k), float(v)) for k, v in value.items())


def _pools(data: dict) -> list[Pool]:
    return [
        Pool(
            id=p["id"],
            count=p.get("count", 1),
            cluster=p.get("cluster"),
            base_price=float(p.get("base_price", 0.0)),
            resources=_vector(p.get("resources")),
        )
        for p in data["pools"]
    ]


def _name(data: dict, source: str):
    return data.get("name") or (Path(source).stem if source not in ("<dict>", "<python>") else "instance")


def instance_from_dict(data: Any, source: str = "<dict>") -> Instance:
    """Build an :class:`Instance` from instance-file data, validating it fully.

    Data that passes every check as whole columns (:func:`~laissez_opt.io.columns.instance_fast`)
    is built without the per-item checks; anything else takes the precise
    path, whose message names the first problem.
    """
    if isinstance(data, dict):
        inst = instance_fast(data, source, _name(data, source), _pools)
        if inst is not None:
            return inst
    validate(data, "instance", source)
    pools = _pools(data)
    agents = []
    for a in data["agents"]:
        arrivals = a.get("arrivals")
        agents.append(
            Agent(
                id=a["id"],
                weight=float(a.get("weight", 1.0)),
                demand=a.get("demand"),
                work=_float(a.get("work")),
                arrival=a.get("arrival", 0),
                deadline=a.get("deadline"),
                elapsed=float(a.get("elapsed", 0.0)),
                migration_cost=float(a.get("migration_cost", 0.0)),
                budget=_float(a.get("budget")),
                arrivals=None if arrivals is None else tuple(float(v) for v in arrivals),
                required=bool(a.get("required", False)),
                task=_vector(a.get("task")),
            )
        )
    edges = []
    for e in data["edges"]:
        utility = e["utility"]
        utility = tuple(float(v) for v in utility) if isinstance(utility, list) else float(utility)
        edges.append(
            Edge(agent=e["agent"], pool=e["pool"], utility=utility, bid=_float(e.get("bid")), cost=_float(e.get("cost")))
        )
    return Instance(
        pools,
        agents,
        edges,
        rounds=data.get("rounds", 1),
        round_hours=float(data.get("round_hours", 1.0)),
        name=_name(data, source),
        description=data.get("description", ""),
        source=source,
    )


def load_instance(path: str | os.PathLike) -> Instance:
    """Read, validate and check the instance file at ``path``, in either form.

    A name ending in ``.npz`` or bytes starting with a zip signature are read
    as the binary form (:mod:`laissez_opt.io.binary`), with the same checks;
    anything else as JSON text.  The text is parsed once by the fast parser
    and checked as columns; only a file that fails (or may fail) a rule is
    parsed again by the strict reader, to name the problem exactly.

    >>> import laissez_opt as lo, pathlib
    >>> load_instance(pathlib.Path(lo.__file__).parent.parent / "instances" / "hotos25-table1.json").n_pools
    3
    """
    from .binary import instance_from_npz, is_binary

    source = str(path)
    raw = read_bytes(path)
    if is_binary(source, raw[:4]):
        return instance_from_npz(raw, source)
    text = decode_text(raw, source)
    # Parsing makes a million objects, none of which can form a cycle: the cyclic collector's passes
    # over them would find nothing to free, so it is paused meanwhile.
    enabled = gc.isenabled()
    gc.disable()
    try:
        data = loads_fast(text, keys_checked=False)
        if isinstance(data, dict):
            inst = instance_fast(data, source, _name(data, source), _pools)
            if inst is not None and not keys_repeated(text, data):
                return inst
    finally:
        if enabled:
            gc.enable()
    return instance_from_dict(parse_json(text, source), source)


def pool_record(p: Pool) -> dict:
    """The canonical dictionary of one pool (as in the instance file's ``pools`` list)."""
    pool: dict[str, Any] = {"id": p.id, "count": p.count}
    if p.cluster is not None:
        pool["cluster"] = p.cluster
    pool["base_price"] = float(p.base_price)
    if p.resources is not None:
        pool["resources"] = {k: float(v) for k, v in sorted(p.resources)}
    return pool


def instance_to_dict(instance: Instance, *, edges: bool = True) -> dict:
    """The canonical dictionary of ``instance`` (defaults omitted, fixed key order); ``edges=False`` leaves
    the edges out (:func:`dumps_instance` writes them itself)."""
    out: dict[str, Any] = {"format": FORMAT, "version": 1, "name": instance.name}
    if instance.description:
        out["description"] = instance.description
    out["rounds"] = instance.rounds
    out["round_hours"] = float(instance.round_hours)
    out["pools"] = [pool_record(p) for p in instance.pools]
    out["agents"] = []
    for a in instance.agents:
        agent: dict[str, Any] = {"id": a.id, "weight": float(a.weight)}
        for name, default in _AGENT_DEFAULTS.items():
            value = getattr(a, name)
            if value != default:
                if name == "task":
                    value = {k: float(v) for k, v in sorted(value)}
                agent[name] = list(value) if isinstance(value, tuple) else value
        out["agents"].append(agent)
    out["edges"] = []
    for e in (instance.edges if edges else ()):
        edge: dict[str, Any] = {"agent": e.agent, "pool": e.pool}
        edge["utility"] = list(e.utility) if isinstance(e.utility, tuple) else float(e.utility)
        if e.bid is not None:
            edge["bid"] = float(e.bid)
        if e.cost is not None:
            edge["cost"] = float(e.cost)
        out["edges"].append(edge)
    return out


def _one_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def _plain(text: str) -> bool:
    """Whether ``text`` is written as JSON between two quotes with nothing escaped."""
    return '"' not in text and "\\" not in text and all(ch >= " " for ch in text)


def _edge_lines(instance: Instance) -> list[str]:
    """Each edge's canonical line: ``_one_line`` of its record, written directly for the common record.

    The common record (plain ids, one scalar utility) is formatted
    without going through ``json.dumps``; ``float.__repr__`` is what ``json`` writes
    for a finite float, so the text is the same (``tests/test_roundtrip.py``).  A
    million edges take a fraction of a second instead of several seconds (``compare``
    no longer writes the text: it hashes the columns, :mod:`laissez_opt.io.digest`).
    """
    plain = {name: _plain(name) for name in {a.id for a in instance.agents} | {p.id for p in instance.pools}}
    lines = []
    append, real = lines.append, float.__repr__
    for e in instance.edges:
        u = e.utility
        if type(u) is not tuple and plain[e.agent] and plain[e.pool]:
            b, c = e.bid, e.cost
            append(f'{{"agent": "{e.agent}", "pool": "{e.pool}", "utility": {real(float(u))}'
                   + ("" if b is None else f', "bid": {real(float(b))}')
                   + ("" if c is None else f', "cost": {real(float(c))}') + "}")
        else:
            edge: dict[str, Any] = {"agent": e.agent, "pool": e.pool}
            edge["utility"] = list(u) if isinstance(u, tuple) else float(u)
            if e.bid is not None:
                edge["bid"] = float(e.bid)
            if e.cost is not None:
                edge["cost"] = float(e.cost)
            append(_one_line(edge))
    return lines


def dumps_instance(instance: Instance) -> str:
    """Canonical JSON text of ``instance``, ending with a newline."""
    items = list(instance_to_dict(instance, edges=False).items())  # "edges" keeps its place, written below
    lines = ["{"]
    for k, (key, value) in enumerate(items):
        comma = "," if k < len(items) - 1 else ""
        if key == "edges":
            rows = _edge_lines(instance)
        elif isinstance(value, list):
            rows = [_one_line(item) for item in value]
        else:
            lines.append(f"  {json.dumps(key)}: {_one_line(value)}{comma}")
            continue
        if not rows:
            lines.append(f"  {json.dumps(key)}: []{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: [")
            last = len(rows) - 1
            lines.extend(f"    {row}," for row in rows[:last])
            lines.append(f"    {rows[last]}")
            lines.append(f"  ]{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_instance(instance: Instance, path: str | os.PathLike, *, compressed: bool = False) -> None:
    """Write ``instance`` atomically to ``path``: the binary form when the name ends in ``.npz``, else canonical JSON.

    ``compressed`` (binary form only) deflates the arrays: smaller files,
    slower reading.  Either form reads back to an instance whose
    :func:`dumps_instance` is the same text.

    >>> import laissez_opt as lo, tempfile, os
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_instance(inst, os.path.join(folder, "x.npz"))
    ...     dumps_instance(load_instance(os.path.join(folder, "x.npz"))) == dumps_instance(inst)
    True
    """
    from .binary import instance_to_npz, is_binary

    if not isinstance(compressed, bool):
        raise InputError(f"compressed must be true or false, got {compressed!r}", path="compressed")
    if is_binary(path):
        write_atomic(path, instance_to_npz(instance, compressed=compressed))
        return
    if compressed:
        raise InputError("compressed applies to the binary form only (a name ending in .npz)", source=str(path),
                         path="compressed")
    write_atomic(path, dumps_instance(instance))


