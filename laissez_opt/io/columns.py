"""The fast path of instance reading: one parse, whole-column checks, records built without re-checking.

:func:`loads_fast` parses JSON text with ``orjson`` and keeps the strict
reader's rules: ``orjson`` itself refuses ``NaN``, ``Infinity``, numbers that
overflow a double and lone surrogates; a repeated key is found by counting
colons (every key is followed by one; a dropped duplicate takes at least its
own with it, so the re-serialised data has fewer).  Integers beyond the
strict reader's range parse here, but every number of an instance is bounded
(by ``MAX_INTEGER`` or ``MAX_MAGNITUDE``), so :func:`instance_fast` refuses them.

:func:`instance_fast` accepts an instance dictionary only when every rule of
the JSON Schema and of :func:`laissez_opt.instance.check_instance` holds:
the top level and the pools (few) through the compiled schema and the
record checks themselves, the agents and edges (many) as whole columns with
numpy.  It answers None at the first doubt, and the caller then takes the
precise path (strict parse, schema errors, record checks), so that every
message about a bad file is the one that path gives; the fast path only
ever accepts, never explains.

The few agents with per-round ``arrivals`` or a ``task`` vector are checked
one by one: by the compiled schema and the records' own checks.
"""

from __future__ import annotations

import gc
import re
from collections import deque
from functools import partial
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, Sequence

import numpy as np

from ..arrays import has_repeats
from ..instance import MAX_INTEGER, MAX_MAGNITUDE, Agent, Edge, Instance, Pool, _check_head, _check_vector, _finite

__all__ = ["loads_fast", "instance_fast", "instance_from_columns", "ids_are_valid"]

_NONE = type(None)
_MISSING = object()
_TOP = frozenset(("format", "version", "name", "description", "rounds", "round_hours", "pools", "agents", "edges"))
_AGENT_FIELDS = frozenset(("id", "weight", "demand", "work", "arrival", "deadline", "elapsed", "migration_cost",
                           "budget", "required", "arrivals", "task"))
_EDGE_FIELDS = frozenset(("agent", "pool", "utility", "bid", "cost"))
_EDGE_REQUIRED = frozenset(("agent", "pool", "utility"))


def loads_fast(text: str, *, keys_checked: bool = True) -> Any:
    """``text`` parsed by ``orjson`` when it passes every strict rule; None when it may not (or orjson is missing).

    With ``keys_checked=False`` the repeated-key test is left to the caller
    (:func:`keys_repeated`, cheaper once the data's shape is known).

    >>> loads_fast('{"a": [1, 2.5, "x:y"]}')
    {'a': [1, 2.5, 'x:y']}
    >>> loads_fast('{"a": 1, "a": 2}') is None, loads_fast('[NaN]') is None, loads_fast('["\\ud800"]') is None
    (True, True, True)
    """
    try:
        import orjson
    except ImportError:  # pragma: no cover - a pinned dependency; the precise path still reads every file
        return None
    try:
        data = orjson.loads(text)
    except (orjson.JSONDecodeError, RecursionError, ValueError, TypeError):
        return None
    if keys_checked and orjson.dumps(data).count(b":") != _colons(text):
        return None
    return data


def _colons(text: str) -> int:
    """Colons in ``text``, an escaped one counted too: every key of the data has one, and a dropped duplicate its own."""
    colons = text.count(":")
    if "\\u" in text:  # an escaped colon is one colon in the data (counting more is only a doubt)
        colons += text.count("\\u003a") + text.count("\\u003A")
    return colons


def keys_repeated(text: str, data: dict) -> bool:
    """Whether the source ``text`` of instance data accepted by :func:`instance_fast` repeats a key somewhere.

    Its only objects are then the top level, the pools with their
    ``resources``, the agents with their ``task`` and the edges: their entries are
    counted directly, against the colons of the text.  Without a repeated key
    the two agree; with one, the data has fewer entries than the text has keys
    (colons inside strings appear in both, escaped or not, and dropped values
    only lower the data's side: an unequal count is at worst a doubt).
    """
    entries = len(data) + sum(map(len, data["agents"])) + sum(map(len, data["edges"]))
    for pool in data["pools"]:
        entries += len(pool) + len(pool.get("resources") or ())
    tasks = [agent["task"] for agent in data["agents"] if "task" in agent]
    entries += sum(map(len, tasks))
    inside = sum(_in_strings(data)) + sum(kind.count(":") for task in tasks for kind in task)
    return entries + inside != _colons(text)


def _in_strings(data: dict):
    """The colons inside the strings of accepted instance data (keys and text fields; ids rarely hold one)."""
    yield data.get("name", "").count(":") + data.get("description", "").count(":")
    for pool in data["pools"]:
        yield sum(k.count(":") for k in pool) + sum(k.count(":") for k in (pool.get("resources") or ()))
        yield pool["id"].count(":") + (pool.get("cluster") or "").count(":")
    ids = "\n".join(agent["id"] for agent in data["agents"])
    yield ids.count(":")
    if ":" in ids:  # the edges name agents (and pools) by id
        yield sum(edge["agent"].count(":") for edge in data["edges"])
    if any(":" in pool["id"] for pool in data["pools"]):
        yield sum(edge["pool"].count(":") for edge in data["edges"])


#: An id with leading or trailing whitespace, in ids joined by newlines (no valid id holds one).
_PADDED_ID = re.compile(r"(?:\A|\n)\s|\s(?:\n|\Z)")
#: The ASCII characters that ``str.isspace`` (and so the pattern's ``\s``) takes for whitespace, but the newline.
_ASCII_SPACE = tuple(c for c in map(chr, range(128)) if c.isspace() and c != "\n")


def ids_are_valid(ids: Sequence) -> bool:
    """Whether every id is a ``str`` of valid Unicode, 1 to 200 characters, no newline, trimmed.

    Checked on the ids joined by newlines, so a million ids cost a few C-level
    passes.  Stricter than the records' check (an id with a newline inside
    goes the precise way, whose message it then gets).

    >>> ids_are_valid(["a", "b c"]), ids_are_valid(["a", " b"]), ids_are_valid(["a\\nb"]), ids_are_valid([""])
    (True, False, False, False)
    """
    if not ids:
        return True
    if set(map(type, ids)) != {str}:
        return False
    lengths = np.fromiter(map(len, ids), np.int64, len(ids))
    if lengths.min() < 1 or lengths.max() > 200:
        return False
    joined = "\n".join(ids)
    if joined.count("\n") != len(ids) - 1:
        return False
    ascii_text = joined.isascii()
    # Padding needs a whitespace character; plain ASCII text without any other than the separators
    # (the usual case) skips the pattern's scan.
    if (not ascii_text or any(c in joined for c in _ASCII_SPACE)) and _PADDED_ID.search(joined):
        return False
    if not ascii_text:
        try:
            joined.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return False
    return True


def _values(items: list, key: str, default: Any, everywhere: bool) -> list:
    """Field ``key`` of every dict in ``items`` (``default`` where absent)."""
    if everywhere:
        return list(map(itemgetter(key), items))
    return list(map(dict.get, items, repeat(key), repeat(default)))


def _reals(values: list, *, minimum: float, strict: bool = False, nullable: bool = False):
    """``values`` as float64 and their null mask (None where not nullable) when all are numbers in range, else None."""
    types = set(map(type, values))
    if not types <= ({int, float, _NONE} if nullable else {int, float}):
        return None
    n = len(values)
    try:
        if _NONE in types:
            missing = np.fromiter(map(_NONE.__instancecheck__, values), np.bool_, n)
            out = np.fromiter((0.0 if v is None else v for v in values), np.float64, n)
            present = out[~missing]
        else:
            missing = np.zeros(n, np.bool_) if nullable else None
            out = present = np.fromiter(values, np.float64, n)
    except (OverflowError, ValueError, TypeError):
        return None
    if present.size:
        low, high = present.min(), present.max()  # min and max propagate NaN, which then fails both tests
        if not ((low > minimum) if strict else (low >= minimum)) or not high <= MAX_MAGNITUDE:
            return None
    return (out, missing) if nullable else out


def _integers(values: list, *, minimum: int, nullable: bool = False):
    """``values`` as int64 (-1 for null) when all are ints from ``minimum`` to MAX_INTEGER, else None."""
    types = set(map(type, values))
    if not types <= ({int, _NONE} if nullable else {int}):
        return None
    n = len(values)
    try:
        if _NONE in types:
            missing = np.fromiter(map(_NONE.__instancecheck__, values), np.bool_, n)
            out = np.fromiter((0 if v is None else v for v in values), np.int64, n)
            present = out[~missing]
            out[missing] = -1
        else:
            out = present = np.fromiter(values, np.int64, n)
    except (OverflowError, ValueError, TypeError):
        return None
    if present.size and (present.min() < minimum or present.max() > MAX_INTEGER):
        return None
    return out


def _optional(values: np.ndarray, missing: np.ndarray) -> list:
    """``values.tolist()`` with None where ``missing``."""
    out = values.tolist()
    if missing.any():
        if missing.all():
            return [None] * len(out)
        for k in np.flatnonzero(missing).tolist():
            out[k] = None
    return out


_AGENT_RECORD = ("id", "weight", "demand", "work", "arrival", "deadline", "elapsed", "migration_cost", "budget",
                 "arrivals", "required", "task")
_EDGE_RECORD = ("agent", "pool", "utility", "bid", "cost")


def _build(cls, names: Sequence[str], columns: Sequence[list]) -> tuple:
    """Records of the frozen, slotted dataclass ``cls``, one list of values per field.

    The slots are filled through their descriptors, one C-level pass per field
    (the dataclass ``__init__`` of a frozen class costs a Python call and a
    ``object.__setattr__`` per field).  The values were checked as columns,
    and ``Agent`` and ``Edge`` convert nothing in ``__post_init__`` for the
    fields filled here.  The cyclic garbage collector is paused meanwhile:
    records hold no cycles, and a million new objects would set off dozens of
    its passes.
    """
    size = len(columns[0])
    enabled = gc.isenabled()
    gc.disable()
    try:
        records = list(map(object.__new__, repeat(cls, size)))
        for name, values in zip(names, columns):
            deque(map(getattr(cls, name).__set__, records, values), maxlen=0)
    finally:
        if enabled:
            gc.enable()
    return tuple(records)


class _Same:
    """A column holding one value for every row (kept as the value, not as ``n`` copies)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class DeferredAgents:
    """The agent records of an instance read as columns: built on first use, each field readable before.

    ``columns`` holds one entry per field of :data:`_AGENT_RECORD`: a list of the
    rows' values, or :class:`_Same` for a field with one value everywhere.
    Calling it builds the records (:func:`_build`); :meth:`rows` builds chosen
    rows only, and :meth:`column` reads one field without building any record
    (``Instance.agent_field``), so a method that needs only, say, the agents'
    work does not pay for a million records.
    """

    __slots__ = ("size", "columns")

    def __init__(self, size: int, columns: list):
        self.size, self.columns = size, columns

    def __call__(self) -> tuple:
        return _build(Agent, _AGENT_RECORD, [repeat(c.value, self.size) if isinstance(c, _Same) else c
                                             for c in self.columns])

    def rows(self, rows: Sequence[int]) -> tuple:
        """The records of agents ``rows``, in that order (``Instance.agent_rows``)."""
        return _build(Agent, _AGENT_RECORD, [repeat(c.value, len(rows)) if isinstance(c, _Same) else [c[i] for i in rows]
                                             for c in self.columns])

    def column(self, name: str) -> list:
        """The values of field ``name`` in row order (the list itself: do not modify it)."""
        values = self.columns[_AGENT_RECORD.index(name)]
        return [values.value] * self.size if isinstance(values, _Same) else values


def _dicts(items: Any, allowed: frozenset, required: frozenset):
    """The fields present in every item and in some item, when ``items`` is a list of dicts with allowed keys."""
    if type(items) is not list or (items and set(map(type, items)) != {dict}):
        return None
    shapes = set(map(tuple, items))
    if not shapes:
        return frozenset(), frozenset()
    every = frozenset.intersection(*map(frozenset, shapes))
    some = frozenset().union(*shapes)
    if not some <= allowed or not required <= every:
        return None
    return every, some


def instance_fast(data: Any, source: str, name: str, pools_of) -> Instance | None:
    """The :class:`Instance` of instance-file data when every check passes on whole columns; None at any doubt.

    ``name`` is the instance's name (the caller's rule for a missing one);
    ``pools_of(data)`` builds the pool records as the precise path does.
    """
    from .schema import _fast_check

    if type(data) is not dict or not set(data) <= _TOP:
        return None
    agents, edges = data.get("agents"), data.get("edges")
    if type(agents) is not list or not agents or type(edges) is not list:
        return None
    # The top level and the pools, by the compiled schema, on the file without its agents and edges.
    head = {k: v for k, v in data.items() if k not in ("agents", "edges")}
    head["agents"], head["edges"] = [{"id": "-"}], []
    try:
        _fast_check("instance")(head)
    except Exception:  # fastjsonschema.JsonSchemaException, or anything else: a doubt
        return None
    rounds = data.get("rounds", 1)
    inst = Instance._prechecked(
        tuple(pools_of(data)), (None,), (), rounds=rounds, round_hours=float(data.get("round_hours", 1.0)),
        name=name, description=data.get("description", ""), source=source)
    try:
        _check_head(inst)
    except Exception:
        return None
    agent_fields = _dicts(agents, _AGENT_FIELDS, frozenset(("id",)))
    edge_fields = _dicts(edges, _EDGE_FIELDS, _EDGE_REQUIRED)
    if agent_fields is None or edge_fields is None:
        return None
    columns = _agent_columns(agents, *agent_fields, rounds)
    if columns is None:
        return None
    agent_ids, agent_cols, views = columns
    if ("arrivals" in agent_fields[1] or "task" in agent_fields[1]) and not _rare_fields(agents, rounds, agent_cols):
        return None
    pool_index = {pool.id: c for c, pool in enumerate(inst.pools)}
    edge_cols = _edge_columns(edges, *edge_fields, rounds, agent_ids, pool_index, len(inst.pools), views)
    if edge_cols is None:
        return None
    # The records are built when first asked for: a solve reads only the views.
    inst._records_later("agents", len(agent_ids), DeferredAgents(len(agent_ids), agent_cols))
    inst._records_later("edges", len(edges), partial(_build, Edge, _EDGE_RECORD, edge_cols))
    inst.__dict__.update(views)
    return inst


def _column_agents(ids: list, weights: np.ndarray, demands: np.ndarray) -> DeferredAgents:
    """The deferred agent records of :func:`instance_from_columns` (``demands[i] < 0``: unbounded)."""
    return DeferredAgents(len(ids), [ids, weights.tolist(), _optional(demands, demands < 0), _Same(None), _Same(0),
                                     _Same(None), _Same(0.0), _Same(0.0), _Same(None), _Same(None), _Same(False),
                                     _Same(None)])


class ColumnEdges:
    """The deferred edge records of :func:`instance_from_columns`: built on first use, any rows before.

    ``utility`` is ``(E,)`` or ``(E, R)``; ``bid`` and ``cost`` are ``(E,)`` or
    None (absent everywhere).  :meth:`rows` builds the records of chosen rows
    only (``Instance.edge_rows``), for a caller that copies a few edges of a
    million, such as the class instance of symmetry compression.
    """

    __slots__ = ("ids", "pool_ids", "edge_agent", "edge_pool", "utility", "bid", "cost")

    def __init__(self, ids: list, pool_ids: list, edge_agent: np.ndarray, edge_pool: np.ndarray,
                 utility: np.ndarray, bid: np.ndarray | None, cost: np.ndarray | None):
        self.ids, self.pool_ids, self.edge_agent, self.edge_pool = ids, pool_ids, edge_agent, edge_pool
        self.utility, self.bid, self.cost = utility, bid, cost

    def _columns(self, pick) -> tuple:
        names = np.array(self.ids, dtype=object)
        pool_names = np.array(self.pool_ids, dtype=object)
        utility = pick(self.utility)
        utilities = list(map(tuple, utility.tolist())) if utility.ndim == 2 else utility.tolist()
        size = len(utilities)
        extra = [repeat(None, size) if column is None else pick(column).tolist() for column in (self.bid, self.cost)]
        return _build(Edge, _EDGE_RECORD, [names[pick(self.edge_agent)].tolist(),
                                           pool_names[pick(self.edge_pool)].tolist(), utilities, *extra])

    def __call__(self) -> tuple:
        return self._columns(lambda column: column)

    def rows(self, rows: Sequence[int]) -> tuple:
        """The records of edges ``rows``, in that order."""
        index = np.asarray(rows, dtype=np.int64)
        return self._columns(lambda column: column[index])


def _rare_fields(agents: list, rounds: int, agent_cols: list) -> bool:
    """Check the agents with ``arrivals`` or ``task`` one by one and put their values in ``agent_cols``."""
    from .schema import _fast_check

    rare = [k for k, agent in enumerate(agents) if "arrivals" in agent or "task" in agent]
    document = {"format": "laissez-opt/instance", "version": 1, "pools": [{"id": "-"}],
                "agents": [agents[k] for k in rare], "edges": []}
    try:
        _fast_check("instance")(document)
    except Exception:
        return False
    arrivals_column, task_column = list(agent_cols[9]), list(agent_cols[11])
    try:
        for k in rare:
            arrivals, task = agents[k].get("arrivals"), agents[k].get("task")
            if arrivals is not None:
                if type(arrivals) is not list or len(arrivals) != rounds:
                    return False
                for value in arrivals:
                    if type(value) not in (int, float):
                        return False
                    _finite(value, "$", minimum=0)
                arrivals_column[k] = tuple(float(v) for v in arrivals)
            if task is not None:
                if type(task) is not dict:
                    return False
                vector = tuple((str(kind), float(value)) for kind, value in task.items())
                _check_vector(vector, "$")
                if not any(value > 0 for _, value in vector):
                    return False
                task_column[k] = vector
            elif "task" in agents[k]:
                return False  # null is not a task (the schema says an object)
    except Exception:
        return False
    agent_cols[9], agent_cols[11] = arrivals_column, task_column
    return True


def _agent_columns(agents: list, every: frozenset, some: frozenset, rounds):
    n = len(agents)
    ids = list(map(itemgetter("id"), agents))
    if not ids_are_valid(ids):
        return None
    index = dict(zip(ids, range(n)))
    if len(index) != n:
        return None

    def get(key, default):
        return _values(agents, key, default, key in every) if key in some else None

    nothing = [None] * n
    weight = _reals(get("weight", 1.0) or [1.0] * n, minimum=0, strict=True)
    if weight is None:
        return None
    reals = {}
    for key, default, nullable in (("work", None, True), ("elapsed", 0.0, False), ("migration_cost", 0.0, False),
                                   ("budget", None, True)):
        values = get(key, default)
        if values is None:
            reals[key] = nothing if nullable else [default] * n
            continue
        column = _reals(values, minimum=0, nullable=nullable)
        if column is None:
            return None
        reals[key] = _optional(*column) if nullable else column.tolist()
    demand_values = get("demand", None)
    arrival_values = get("arrival", 0)
    deadline_values = get("deadline", None)
    demand = np.full(n, -1, np.int64) if demand_values is None else _integers(demand_values, minimum=0, nullable=True)
    arrival = np.zeros(n, np.int64) if arrival_values is None else _integers(arrival_values, minimum=0)
    deadline = (np.full(n, -1, np.int64) if deadline_values is None
                else _integers(deadline_values, minimum=0, nullable=True))
    if demand is None or arrival is None or deadline is None:
        return None
    if arrival.max() >= rounds:
        return None
    dated = deadline != -1
    if np.any(deadline[dated] < arrival[dated]):
        return None
    required = get("required", False)
    if required is not None and not set(map(type, required)) <= {bool}:
        return None
    cols = [
        ids, weight.tolist(), nothing if demand_values is None else demand_values, reals["work"],
        [0] * n if arrival_values is None else arrival_values, nothing if deadline_values is None else deadline_values,
        reals["elapsed"], reals["migration_cost"], reals["budget"], nothing,
        [False] * n if required is None else required, nothing,
    ]
    views = {
        "agent_index": index,
        "weights": weight,
        "demands": np.where(demand < 0, np.inf, demand.astype(np.float64)),
    }
    return ids, cols, views


def _edge_columns(edges: list, every: frozenset, some: frozenset, rounds: int, agent_ids: list,
                  pool_index: dict, m: int, views: dict):
    n_edges = len(edges)
    agent_names = list(map(itemgetter("agent"), edges))
    pool_names = list(map(itemgetter("pool"), edges))
    agent_index = views["agent_index"]
    try:
        agent = np.fromiter(map(agent_index.__getitem__, agent_names), np.int64, n_edges)
        pool = np.fromiter(map(pool_index.__getitem__, pool_names), np.int64, n_edges)
    except (KeyError, TypeError):  # an unknown id, or not a string at all
        return None
    # Found in the indexes: the ids named are the agents' and pools' own strings, checked already.
    key = agent * m + pool
    if n_edges > 1 and not bool(np.all(key[1:] > key[:-1])) and has_repeats(key):
        return None
    raw = list(map(itemgetter("utility"), edges))
    kinds = set(map(type, raw))
    if kinds <= {int, float}:
        scalar = _reals(raw, minimum=0)
        if scalar is None:
            return None
        utilities = scalar.tolist()
        # Across many rounds the (E, R) view is left to be built on first use: the run's memory estimate comes first.
        table = scalar[:, None].copy() if rounds == 1 else None
    elif kinds <= {int, float, list}:
        listed = [k for k, u in enumerate(raw) if type(u) is list]
        lists = [raw[k] for k in listed]
        if set(map(len, lists)) != {rounds}:
            return None
        flat = _reals(list(chain.from_iterable(lists)), minimum=0)
        scalar_at = [k for k, u in enumerate(raw) if type(u) is not list]
        scalar = _reals([raw[k] for k in scalar_at], minimum=0)
        if flat is None or scalar is None:
            return None
        table = np.empty((n_edges, rounds), np.float64)
        rows = flat.reshape(len(lists), rounds)
        table[listed] = rows
        table[scalar_at] = scalar[:, None]
        utilities = raw.copy()
        for k, row in zip(listed, map(tuple, rows.tolist())):
            utilities[k] = row
        for k, value in zip(scalar_at, scalar.tolist()):
            utilities[k] = value
    else:
        return None
    extra = []
    for name in ("bid", "cost"):
        if name not in some:
            extra.append([None] * n_edges)
            continue
        column = _reals(_values(edges, name, None, name in every), minimum=0, nullable=True)
        if column is None:
            return None
        extra.append(_optional(*column))
    views.update(edge_agent=agent, edge_pool=pool, pool_index=pool_index)
    if table is not None:
        views["edge_utility"] = table
    return [agent_names, pool_names, utilities, *extra]


def _in_range(values: np.ndarray, *, minimum: float, strict: bool = False) -> bool:
    """Whether every number of ``values`` is finite, at least (above, when ``strict``) ``minimum`` and at most MAX_MAGNITUDE."""
    if values.size == 0:
        return True
    low, high = values.min(), values.max()  # NaN propagates and fails both tests
    return bool(((low > minimum) if strict else (low >= minimum)) and high <= MAX_MAGNITUDE)


def instance_from_columns(
    pools: Sequence[Pool],
    agent_ids: Sequence[str],
    edge_agent: np.ndarray,
    edge_pool: np.ndarray,
    utility: np.ndarray,
    *,
    weight: np.ndarray | None = None,
    demand: np.ndarray | None = None,
    bid: np.ndarray | None = None,
    cost: np.ndarray | None = None,
    rounds: int = 1,
    round_hours: float = 1.0,
    name: str = "instance",
    description: str = "",
    source: str | None = None,
) -> Instance | None:
    """An :class:`Instance` built from whole columns, or None when a column fails a check.

    The columns: agent ``i`` has id ``agent_ids[i]``, weight ``weight[i]``
    (1 when ``weight`` is None) and demand ``demand[i]`` (an integer; -1 or a
    missing ``demand`` column means null, unbounded); edge ``e`` joins agent
    ``edge_agent[e]`` to pool ``edge_pool[e]`` (row and column numbers) with
    utility ``utility[e]`` (shape ``(E,)``, the same in every round) or
    ``utility[e, r]`` (shape ``(E, rounds)``, a per-round list), and
    optional ``bid[e]`` and ``cost[e]``.  Every rule of
    :func:`laissez_opt.instance.check_instance` is checked on the columns
    with numpy (ranges, finiteness, unique ids and (agent, pool) pairs,
    references); at any failure the answer is None and the caller builds
    the instance the precise way, whose message names the problem.  The
    records are made without the per-record checks, and the array views
    (``edge_agent``, ``edge_pool``, ``edge_utility``, ``weights``,
    ``demands``, ...) are stored as if built on first use.  Used by the
    instance generators (``laissez_opt.generate``).

    >>> import numpy as np
    >>> inst = instance_from_columns([Pool("P", count=2)], ["a", "b"], np.array([0, 1]), np.array([0, 0]),
    ...                              np.array([1.5, 2.0]), demand=np.array([1, -1]))
    >>> inst.agents[1].demand is None, inst.edges[0].utility, inst.utility[:, 0, 0].tolist()
    (True, 1.5, [1.5, 2.0])
    >>> instance_from_columns([Pool("P")], ["a"], np.array([0]), np.array([0]), np.array([-1.0])) is None
    True
    """
    n, m = len(agent_ids), len(pools)
    inst = Instance._prechecked(tuple(pools), (None,), (), rounds=rounds, round_hours=round_hours, name=name,
                                description=description, source=source)
    try:
        _check_head(inst)
    except Exception:
        return None
    ids = list(agent_ids)
    if not n or not ids_are_valid(ids):
        return None
    index = dict(zip(ids, range(n)))
    if len(index) != n:
        return None
    edge_agent = np.asarray(edge_agent, dtype=np.int64)
    edge_pool = np.asarray(edge_pool, dtype=np.int64)
    utility = np.asarray(utility, dtype=np.float64)
    n_edges = edge_agent.size
    per_round = utility.ndim == 2
    if (edge_pool.shape != (n_edges,) or utility.shape[0] != n_edges or utility.ndim not in (1, 2)
            or (per_round and utility.shape[1] != rounds)):
        return None
    if n_edges and (edge_agent.min() < 0 or edge_agent.max() >= n or edge_pool.min() < 0 or edge_pool.max() >= m):
        return None
    key = edge_agent * m + edge_pool
    if n_edges > 1 and not bool(np.all(key[1:] > key[:-1])) and has_repeats(key):
        return None
    weights = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    demands = np.full(n, -1, np.int64) if demand is None else np.asarray(demand, dtype=np.int64)
    if weights.shape != (n,) or demands.shape != (n,) or not _in_range(weights, minimum=0, strict=True):
        return None
    if demands.size and (demands.min() < -1 or demands.max() > MAX_INTEGER):
        return None
    if not _in_range(utility, minimum=0):
        return None
    extra = []
    for column in (bid, cost):
        if column is None:
            extra.append(None)
            continue
        column = np.asarray(column, dtype=np.float64)
        if column.shape != (n_edges,) or not _in_range(column, minimum=0):
            return None
        extra.append(column)
    unbounded = demands < 0
    # The records are built when first asked for (half of generating a million agents otherwise).
    inst._records_later("agents", n, _column_agents(ids, weights, demands))
    inst._records_later("edges", n_edges, ColumnEdges(ids, [pool.id for pool in inst.pools], edge_agent,
                                                       edge_pool, utility, *extra))
    views = {
        "agent_index": index,
        "pool_index": {pool.id: c for c, pool in enumerate(inst.pools)},
        "edge_agent": edge_agent,
        "edge_pool": edge_pool,
        "weights": weights,
        "demands": np.where(unbounded, np.inf, demands.astype(np.float64)),
    }
    if per_round:
        views["edge_utility"] = utility
    elif rounds == 1:
        views["edge_utility"] = utility[:, None].copy()
    # Bids as views too, so that no consumer (vcg, the verifier) builds every record to read them.
    views["edge_bid_given"] = np.full(n_edges, bid is not None)
    if bid is not None:
        views["edge_bid"] = np.asarray(bid, dtype=np.float64)
    else:
        views["edge_bid"] = np.array(utility[:, 0] if utility.ndim == 2 else utility, dtype=np.float64)
    if cost is not None:
        views["edge_cost"] = np.asarray(cost, dtype=np.float64)
    inst.__dict__.update(views)
    return inst
