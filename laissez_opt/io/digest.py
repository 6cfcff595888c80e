"""The content digest of an instance: SHA-256 over its typed columns, without writing its text.

:func:`instance_digest` is what a comparison's run store keys an instance by
(``laissez_opt.harness.store``).  It hashes the values an instance holds, not
one of its spellings, so the JSON and the binary (``.npz``) form of one
instance, an instance built in Python and one made by a generator all have
the same digest, and any change of a number, an id, a name or a present /
absent optional field changes it.

Scheme ``laissez-opt/instance-digest/1`` (:data:`DIGEST_SCHEME`).  The digest
is ``SHA-256(frame(part_1) || frame(part_2) || ...)`` where each part is a
name and either UTF-8 text or a numpy array, framed as
``name ":" dtype ":" shape ":" byte-count "\\n"`` followed by the bytes (arrays
little-endian, C order), so no two different sequences of parts give the same
byte stream.  The parts, in order:

* ``scheme``: the scheme's name;
* ``head``: JSON (sorted keys, no spaces) of ``name``, ``description``,
  ``rounds``, ``round_hours`` and the canonical pool records (as in the file);
* ``agent_id``: the agent ids in UTF-8, each followed by the byte 0xFF (which
  UTF-8 never contains);
* per agent, float64: ``weight``, ``work``, ``elapsed``, ``migration_cost``,
  ``budget``; int64: ``demand``, ``arrival``, ``deadline``; bool: ``required``;
  a nullable field (``work``, ``budget``, ``demand``, ``deadline``) also
  contributes its ``*_given`` mask, its value being 0 where absent;
* ``arrivals_rows`` (int64) and ``arrivals`` (float64, rows x rounds): the
  agents with per-round arrivals; ``task``: JSON of ``[[agent row, [[kind,
  amount], ...]], ...]`` with kinds sorted;
* per edge: ``edge_agent`` and ``edge_pool`` (int64 row and column numbers),
  ``edge_utility`` (float64, the round-0 utility), ``utility_rows`` (int64)
  and ``utility_rounds`` (float64, rows x rounds) for the edges whose utility
  is a per-round list, ``bid`` and ``cost`` (float64, 0 where absent) with
  their ``*_given`` masks.

Numbers are hashed as float64 or int64 values, so ``1`` and ``1.0`` are the
same number here, as they are in the canonical text.  The columns are read
from where the readers left them (the lazily built records' columns), so
hashing an instance read from a file builds no per-edge Python object.

Example
-------
>>> import laissez_opt as lo
>>> a = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
>>> b = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A")], [lo.Edge("A", "P", 1)])
>>> c = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A")], [lo.Edge("A", "P", 1.5)])
>>> instance_digest(a) == instance_digest(b), instance_digest(a) == instance_digest(c), len(instance_digest(a))
(True, False, 64)
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from typing import Any, Sequence

import numpy as np

from ..instance import Instance

__all__ = ["DIGEST_SCHEME", "instance_digest", "columnar_copy"]

#: Name and version of the digest recipe; a change of recipe changes the name.
DIGEST_SCHEME = "laissez-opt/instance-digest/1"

_AGENT_FIELDS = ("id", "weight", "demand", "work", "arrival", "deadline", "elapsed", "migration_cost", "budget",
                 "arrivals", "required", "task")


def instance_digest(instance: Instance) -> str:
    """Hex SHA-256 of ``instance``'s content under :data:`DIGEST_SCHEME` (see the module's text).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0, bid=1.0)])
    >>> instance_digest(inst) == instance_digest(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)]))
    False
    """
    from .instance_file import pool_record

    if not isinstance(instance, Instance):
        raise TypeError(f"expected an Instance, got {type(instance).__name__}")
    h = hashlib.sha256()

    def text(name: str, value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        h.update(f"{name}:text:{len(data)}\n".encode("ascii"))
        h.update(data)

    def array(name: str, values: np.ndarray, dtype: str) -> None:
        values = np.ascontiguousarray(values, dtype=np.dtype(dtype))
        h.update(f"{name}:{dtype}:{values.shape}:{values.nbytes}\n".encode("ascii"))
        h.update(values.tobytes())

    text("scheme", DIGEST_SCHEME)
    head = {"name": instance.name, "description": instance.description, "rounds": instance.rounds,
            "round_hours": float(instance.round_hours), "pools": [pool_record(p) for p in instance.pools]}
    text("head", json.dumps(head, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False))

    cols = _agent_columns(instance)
    n = len(cols[0])
    ids = "".join(f"{i}\udcff" for i in cols[0])
    h.update(f"agent_id:ids:{n}\n".encode("ascii"))
    h.update(ids.encode("utf-8", "surrogateescape"))
    field = dict(zip(_AGENT_FIELDS, cols))
    for name in ("weight", "elapsed", "migration_cost"):
        array(name, _reals(field[name], n), "<f8")
    for name in ("work", "budget"):
        values, given = _nullable(field[name], n, np.float64)
        array(name, values, "<f8")
        array(f"{name}_given", given, "|b1")
    for name in ("demand", "deadline"):
        values, given = _nullable(field[name], n, np.int64)
        array(name, values, "<i8")
        array(f"{name}_given", given, "|b1")
    array("arrival", np.fromiter(field["arrival"], np.int64, n), "<i8")
    array("required", np.fromiter(field["required"], np.bool_, n), "|b1")
    rows = [i for i, v in enumerate(field["arrivals"]) if v is not None]
    array("arrivals_rows", np.array(rows, np.int64), "<i8")
    array("arrivals", np.array([field["arrivals"][i] for i in rows], np.float64).reshape(len(rows), instance.rounds),
          "<f8")
    tasks = [[i, sorted([str(k), float(v)] for k, v in task)] for i, task in enumerate(field["task"]) if task is not None]
    text("task", json.dumps(tasks, separators=(",", ":"), ensure_ascii=False, allow_nan=False))

    edges = _edge_columns(instance)
    array("edge_agent", instance.edge_agent, "<i8")
    array("edge_pool", instance.edge_pool, "<i8")
    array("edge_utility", edges["utility"], "<f8")
    array("utility_rows", edges["rows"], "<i8")
    array("utility_rounds", edges["rounds"].reshape(len(edges["rows"]), instance.rounds), "<f8")
    for name in ("bid", "cost"):
        values, given = edges[name]
        array(name, values, "<f8")
        array(f"{name}_given", given, "|b1")
    return h.hexdigest()


#: Array views a columnar copy carries (the rest, such as the dense ``utility`` or the graph, are rebuilt on use).
_CARRIED_VIEWS = ("agent_index", "pool_index", "edge_agent", "edge_pool", "edge_utility", "edge_bid", "edge_bid_given",
                  "edge_cost", "weights", "demands", "counts", "base_prices", "last_rounds")


def columnar_copy(instance: Instance) -> Instance:
    """The same instance, its records held as columns (arrays) until first used: cheap to pickle and send.

    Pickling an instance whose records were built pickles one Python object
    per edge (seconds for a few hundred thousand edges); the copy pickles a
    few arrays.  Its records, views, text and digest equal the original's.
    The copy is a plain :class:`Instance` even when ``instance`` is of a
    subclass (read through its records and properties, none of its cached views
    carried), so it unpickles wherever the library is installed.

    >>> import pickle, laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", (1.0, 2.0), cost=3.0)], rounds=2)
    >>> copy = pickle.loads(pickle.dumps(columnar_copy(inst)))
    >>> copy.edges == inst.edges, lo.dumps_instance(copy) == lo.dumps_instance(inst)
    (True, True)
    """
    from .binary import _EdgeRecords
    from .columns import DeferredAgents

    if not isinstance(instance, Instance):
        raise TypeError(f"expected an Instance, got {type(instance).__name__}")
    agents = _agent_columns(instance)
    edges = _edge_columns(instance)
    own = instance.__dict__ if type(instance) is Instance else {}
    views = {name: own[name] for name in _CARRIED_VIEWS if name in own}
    edge_agent, edge_pool = instance.edge_agent, instance.edge_pool
    views.update(edge_agent=edge_agent, edge_pool=edge_pool)
    copy = Instance._prechecked(tuple(instance.pools), (None,), (), rounds=instance.rounds,
                                round_hours=instance.round_hours, name=instance.name,
                                description=instance.description, source=instance.source, views=views)
    copy._records_later("agents", len(agents[0]), DeferredAgents(len(agents[0]), [list(c) for c in agents]))
    rows = edges["rows"] if len(edges["rows"]) else None
    pairs = [pair if pair[1].any() else None for pair in (edges["bid"], edges["cost"])]
    copy._records_later("edges", instance.n_edges, _EdgeRecords(
        list(agents[0]), [p.id for p in instance.pools], edge_agent, edge_pool,
        np.asarray(edges["utility"], np.float64), rows, None if rows is None else edges["rounds"], *pairs))
    return copy


def _reals(values: Sequence, n: int) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.fromiter(values, np.float64, n)


def _nullable(values: Sequence, n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``values`` (None where absent) as an array with 0 where absent, and the mask of the present ones."""
    values = list(values)
    given = np.fromiter((v is not None for v in values), np.bool_, n)
    if given.all():
        return np.fromiter(values, dtype, n), given
    return np.fromiter((0 if v is None else v for v in values), dtype, n), given


def _builder(instance: Instance, field: str):
    """The function that will build ``field``'s records on first use, or None if they are built already."""
    if type(instance) is not Instance:  # a subclass may serve its records otherwise: read them
        return None
    later = instance.__dict__.get(f"_{field}_later")
    return None if later is None else later[1]


def _agent_columns(instance: Instance) -> list[Sequence]:
    """The agents' twelve fields as columns (``Agent``'s field order), from the readers' columns when unbuilt."""
    from .columns import _AGENT_RECORD, DeferredAgents

    build = _builder(instance, "agents")
    if isinstance(build, DeferredAgents):
        return [build.column(name) for name in _AGENT_RECORD]
    agents = instance.agents
    return [[getattr(a, name) for a in agents] for name in _AGENT_FIELDS]


def _edge_columns(instance: Instance) -> dict[str, Any]:
    """Round-0 utility, per-round rows and table, bid and cost (values, given) of every edge."""
    from .binary import _EdgeRecords
    from .columns import _EDGE_RECORD, ColumnEdges, _build

    e = instance.n_edges
    build = _builder(instance, "edges")
    if isinstance(build, _EdgeRecords):
        rows = np.zeros(0, np.int64) if build.rows is None else build.rows
        table = np.zeros((0, instance.rounds)) if build.per_round is None else build.per_round
        pairs = [(np.zeros(e), np.zeros(e, np.bool_)) if pair is None else (pair[0], pair[1])
                 for pair in (build.bid, build.cost)]
        return {"utility": build.utility, "rows": rows, "rounds": table, "bid": pairs[0], "cost": pairs[1]}
    if isinstance(build, ColumnEdges):
        utility, bid, cost = build.utility, build.bid, build.cost
        utility = np.asarray(utility, np.float64)
        if utility.ndim == 2:
            out = {"utility": utility[:, 0], "rows": np.arange(e, dtype=np.int64), "rounds": utility}
        else:
            out = {"utility": utility, "rows": np.zeros(0, np.int64), "rounds": np.zeros((0, instance.rounds))}
        for name, column in (("bid", bid), ("cost", cost)):
            out[name] = ((np.zeros(e), np.zeros(e, np.bool_)) if column is None
                         else (np.asarray(column, np.float64), np.ones(e, np.bool_)))
        return out
    if isinstance(build, partial) and build.func is _build and build.args[1] == _EDGE_RECORD:
        utilities, bids, costs = build.args[2][2:5]
    else:
        edges = instance.edges
        utilities = [edge.utility for edge in edges]
        bids = [edge.bid for edge in edges]
        costs = [edge.cost for edge in edges]
    if not {tuple, list} & set(map(type, utilities)):
        out = {"utility": np.fromiter(utilities, np.float64, e), "rows": np.zeros(0, np.int64),
               "rounds": np.zeros((0, instance.rounds))}
    else:
        rows = [k for k, u in enumerate(utilities) if isinstance(u, (tuple, list))]
        table = np.array([utilities[k] for k in rows], np.float64).reshape(len(rows), instance.rounds)
        first = np.fromiter((u[0] if isinstance(u, (tuple, list)) else u for u in utilities), np.float64, e)
        out = {"utility": first, "rows": np.array(rows, np.int64), "rounds": table}
    out["bid"] = _nullable(bids, e, np.float64)
    out["cost"] = _nullable(costs, e, np.float64)
    return out
