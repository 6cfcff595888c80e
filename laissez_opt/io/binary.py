"""The binary instance form: the typed graph as NumPy arrays in one ``.npz`` archive.

The JSON file (``laissez-opt/instance``, version 1) stays the canonical and
documented format; this form holds exactly the same instance, column by column,
for large work: ``load(save(inst))`` writes the same canonical JSON text as
``inst``, and a million edges are read and checked in a fraction of a second.

Layout (``format: "laissez-opt/instance-columns"``, ``version: 1``), one array
per archive member, ``n`` agents, ``E`` edges, ``R`` rounds:

* ``header``: uint8, the UTF-8 text of a JSON object holding ``format``,
  ``version``, ``name``, ``description``, ``rounds``, ``round_hours`` and
  ``pools`` (the pool records exactly as in the JSON form);
* ``agent_id``: uint8, each agent id's UTF-8 bytes followed by the byte 0xFF
  (which never occurs in UTF-8), in agent order;
* per agent (length ``n``): ``agent_weight``, ``agent_elapsed``,
  ``agent_migration_cost`` (float64), ``agent_arrival`` (integer),
  ``agent_required`` (bool), each optional (absent: the JSON default); the
  nullable ``agent_demand``, ``agent_deadline`` (integer) and ``agent_work``,
  ``agent_budget`` (float64), each with a presence mask ``<name>_given`` (bool),
  the pair optional (absent: null everywhere);
* per-round arrivals: ``agent_arrivals_rows`` (integer, strictly increasing
  agent rows) and ``agent_arrivals`` (float64, ``k x R``);
* task vectors (``drf``): ``agent_task_rows`` (strictly increasing agent rows),
  ``agent_task_offsets`` (``t + 1`` integers, CSR), ``agent_task_kind`` (kind
  names, encoded like ``agent_id``) and ``agent_task_amount`` (float64);
* per edge (length ``E``): ``edge_agent``, ``edge_pool`` (integer codes: agent
  rows and positions in ``header.pools``), ``edge_utility`` (float64, the
  utility ``u_{i,c}``; for an edge with per-round utilities, its round-0 value);
  ``edge_utility_rows`` (strictly increasing edge rows) with
  ``edge_utility_rounds`` (float64, ``k x R``): the edges whose utility is a
  per-round list; the optional pairs ``edge_bid``/``edge_bid_given`` and
  ``edge_cost``/``edge_cost_given``.

Reading never unpickles (``allow_pickle=False``), refuses unknown, missing or
repeated members, wrong dtypes and shapes, and checks every rule of the JSON
form (ranges, finiteness, unique ids, known references, one edge per pair,
horizons) with numpy over whole columns.  A problem is reported in one line,
``file: array[index]: problem``, as an :class:`~laissez_opt.errors.InputError`.

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.io.binary import instance_to_npz, instance_from_npz
>>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B", demand=1)],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5, bid=0.4)])
>>> again = instance_from_npz(instance_to_npz(inst), "x.npz")
>>> lo.io.dumps_instance(again) == lo.io.dumps_instance(inst)
True
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from ..arrays import has_repeats
from ..errors import InputError
from ..instance import (
    MAX_INTEGER, MAX_MAGNITUDE, Edge, Instance, _check_head, _finite, _text,
)
from .columns import DeferredAgents, _build, _optional, ids_are_valid
from .jsonfile import MAX_INPUT_BYTES, parse_json

__all__ = ["BINARY_FORMAT", "BINARY_VERSION", "instance_to_npz", "instance_from_npz", "is_binary"]

BINARY_FORMAT = "laissez-opt/instance-columns"
BINARY_VERSION = 1

#: Zip local-file and empty-archive signatures: an ``.npz`` archive starts with one of them.
_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_SEPARATOR = "\udcff"  # byte 0xFF under the surrogateescape error handler

_OPTIONAL_REAL = {"agent_weight": 1.0, "agent_elapsed": 0.0, "agent_migration_cost": 0.0}
_NULLABLE_REAL = ("agent_work", "agent_budget")
_NULLABLE_INT = ("agent_demand", "agent_deadline")
_PAIRS = (("agent_arrivals_rows", "agent_arrivals"), ("edge_utility_rows", "edge_utility_rounds"))
_TASK = ("agent_task_rows", "agent_task_offsets", "agent_task_kind", "agent_task_amount")
_KNOWN = frozenset((
    "header", "agent_id", *_OPTIONAL_REAL, "agent_arrival", "agent_required",
    *_NULLABLE_REAL, *(f"{n}_given" for n in _NULLABLE_REAL), *_NULLABLE_INT, *(f"{n}_given" for n in _NULLABLE_INT),
    *(name for pair in _PAIRS for name in pair), *_TASK,
    "edge_agent", "edge_pool", "edge_utility", "edge_bid", "edge_bid_given", "edge_cost", "edge_cost_given",
))
_REQUIRED = ("header", "agent_id", "edge_agent", "edge_pool", "edge_utility")


def is_binary(path: Any, head: bytes = b"") -> bool:
    """Whether the instance at ``path`` (first bytes ``head``) is in the binary form: a ``.npz`` name or zip bytes.

    >>> is_binary("big.npz"), is_binary("-", b"PK\\x03\\x04..."), is_binary("a.json", b"{")
    (True, True, False)
    """
    return str(path).lower().endswith(".npz") or head[:4] in _MAGIC


# ------------------------------------------------------------------------------------------------ writing

def _encode_ids(ids) -> np.ndarray:
    """Strings as UTF-8, each followed by the byte 0xFF, as a uint8 array."""
    if not ids:
        return np.zeros(0, np.uint8)
    text = _SEPARATOR.join(ids) + _SEPARATOR
    return np.frombuffer(text.encode("utf-8", "surrogateescape"), np.uint8)


def instance_to_npz(instance: Instance, *, compressed: bool = False) -> bytes:
    """The bytes of the binary (``.npz``) form of ``instance``; ``compressed`` deflates the members.

    Columns equal to the JSON defaults everywhere are left out (the reader
    restores them); integers are stored as int32 (every integer of the format
    is at most ``MAX_INTEGER = 2**31 - 1``), reals as float64, exactly.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])
    >>> instance_to_npz(inst)[:4]
    b'PK\\x03\\x04'
    """
    from .instance_file import pool_record

    if not isinstance(compressed, bool):
        raise InputError(f"compressed must be true or false, got {compressed!r}", path="compressed")
    if not isinstance(instance, Instance):
        raise InputError(f"expected an Instance, got {type(instance).__name__}", path="instance")
    header: dict[str, Any] = {"format": BINARY_FORMAT, "version": BINARY_VERSION}
    if instance.name:
        header["name"] = instance.name
    if instance.description:
        header["description"] = instance.description
    header.update(rounds=instance.rounds, round_hours=float(instance.round_hours),
                  pools=[pool_record(p) for p in instance.pools])
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    arrays: dict[str, np.ndarray] = {"header": np.frombuffer(text.encode("utf-8"), np.uint8)}
    agents, edges, n = instance.agents, instance.edges, len(instance.agents)
    arrays["agent_id"] = _encode_ids([a.id for a in agents])

    def column(name, dtype):
        return np.fromiter((getattr(a, name) for a in agents), dtype, n)

    for key, default in _OPTIONAL_REAL.items():
        values = column(key[len("agent_"):], np.float64)
        if np.any(values != default):
            arrays[key] = values
    arrival = column("arrival", np.int64)
    if arrival.any():
        arrays["agent_arrival"] = arrival.astype(np.int32)
    required = column("required", np.bool_)
    if required.any():
        arrays["agent_required"] = required
    for key, dtype in [(k, np.float64) for k in _NULLABLE_REAL] + [(k, np.int32) for k in _NULLABLE_INT]:
        raw = [getattr(a, key[len("agent_"):]) for a in agents]
        given = np.fromiter((v is not None for v in raw), np.bool_, n)
        if given.any():
            arrays[key] = np.array([0 if v is None else v for v in raw], dtype=np.float64 if dtype is np.float64
                                   else np.int64).astype(dtype)
            arrays[f"{key}_given"] = given
    rows = [i for i, a in enumerate(agents) if a.arrivals is not None]
    if rows:
        arrays["agent_arrivals_rows"] = np.array(rows, np.int32)
        arrays["agent_arrivals"] = np.array([agents[i].arrivals for i in rows], np.float64).reshape(
            len(rows), instance.rounds)
    rows = [i for i, a in enumerate(agents) if a.task is not None]
    if rows:
        pairs = [sorted(agents[i].task) for i in rows]  # kinds in order, as the JSON form writes them
        arrays["agent_task_rows"] = np.array(rows, np.int32)
        arrays["agent_task_offsets"] = np.cumsum([0] + [len(p) for p in pairs], dtype=np.int64)
        arrays["agent_task_kind"] = _encode_ids([k for p in pairs for k, _ in p])
        arrays["agent_task_amount"] = np.array([v for p in pairs for _, v in p], np.float64)
    e_count = len(edges)
    code = np.int32 if max(n, len(instance.pools)) <= MAX_INTEGER else np.int64
    arrays["edge_agent"] = np.asarray(instance.edge_agent, np.int64).astype(code)
    arrays["edge_pool"] = np.asarray(instance.edge_pool, np.int64).astype(code)
    arrays["edge_utility"] = np.fromiter(
        (e.utility[0] if isinstance(e.utility, tuple) else e.utility for e in edges), np.float64, e_count)
    rows = [k for k, e in enumerate(edges) if isinstance(e.utility, tuple)]
    if rows:
        arrays["edge_utility_rows"] = np.array(rows, np.int64)
        arrays["edge_utility_rounds"] = np.array([edges[k].utility for k in rows], np.float64).reshape(
            len(rows), instance.rounds)
    for name in ("bid", "cost"):
        raw = [getattr(e, name) for e in edges]
        given = np.fromiter((v is not None for v in raw), np.bool_, e_count)
        if given.any():
            arrays[f"edge_{name}"] = np.fromiter((0.0 if v is None else v for v in raw), np.float64, e_count)
            arrays[f"edge_{name}_given"] = given
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------ reading

class _Archive:
    """The members of an ``.npz`` archive, read on demand without unpickling, with checked dtypes and shapes."""

    def __init__(self, data: bytes, source: str):
        self.source = source
        if data[:4] not in _MAGIC:
            raise self.error("$", "not an .npz archive (a zip file of NumPy arrays); JSON instances end in .json")
        try:
            self.npz = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as exc:  # zipfile.BadZipFile, EOFError, ValueError, ...: a damaged archive, whatever the damage
            raise self.error("$", f"not a readable .npz archive: {_reason(exc)}") from None
        if not hasattr(self.npz, "files"):  # a bare .npy file
            raise self.error("$", "not an .npz archive (a single .npy array)")
        infos = self.npz.zip.infolist()
        names = [info.filename for info in infos]
        if len(set(names)) != len(names):
            raise self.error("$", "an archive member is repeated")
        total = sum(info.file_size for info in infos)
        if total > MAX_INPUT_BYTES:
            raise self.error("$", f"the arrays hold {total} bytes, more than the {MAX_INPUT_BYTES} accepted")
        self.names = set(self.npz.files)
        for name in sorted(self.names):
            if name not in _KNOWN:
                raise self.error(name, f"unknown array {name!r} (not part of version {BINARY_VERSION} of the format)")
        for name in _REQUIRED:
            if name not in self.names:
                raise self.error(name, "missing array")

    def error(self, path: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, path=path)

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def get(self, name: str, kind: str, shape: tuple) -> np.ndarray:
        """Member ``name``: dtype kind in ``kind`` ('f' float64, 'i' integer, 'b' bool, 'u' uint8), ``shape``."""
        try:
            value = self.npz[name]
        except MemoryError:
            raise self.error(name, "declares an array too large to hold in memory") from None
        except Exception as exc:  # a bad CRC, a truncated member, a damaged .npy header, pickled objects, ...
            raise self.error(name, f"unreadable array: {_reason(exc)}") from None
        if not isinstance(value, np.ndarray):
            raise self.error(name, "not a NumPy array (.npy) member")
        dtype = value.dtype
        ok = {"f": dtype == np.float64, "i": dtype.kind in "iu" and dtype.itemsize <= 8,
              "b": dtype == np.bool_, "u": dtype == np.uint8}[kind]
        if not ok:
            wanted = {"f": "float64", "i": "an integer type", "b": "bool", "u": "uint8"}[kind]
            raise self.error(name, f"dtype must be {wanted}, got {dtype}")
        if value.ndim != len(shape) or any(s is not None and s != v for s, v in zip(shape, value.shape)):
            wanted = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise self.error(name, f"shape must be {wanted}, got {value.shape}")
        return value


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "allow_pickle" in text or "Object arrays" in text:
        return "holds Python objects (pickled data is never loaded)"
    return text[:200]


def _first(bad: np.ndarray) -> int:
    return int(np.argmax(bad))


def _reals(archive: _Archive, name: str, values: np.ndarray, *, minimum: float = 0.0, strict: bool = False,
           given: np.ndarray | None = None) -> None:
    """Every (given) value finite, ``>= minimum`` (``>`` when strict) and at most MAX_MAGNITUDE in magnitude."""
    if not values.size:
        return
    with np.errstate(invalid="ignore"):
        bad = ~(values > minimum if strict else values >= minimum) | ~(np.abs(values) <= MAX_MAGNITUDE)
    if given is not None:
        bad &= given.reshape(given.shape + (1,) * (values.ndim - given.ndim))
    if bad.any():
        where = np.unravel_index(_first(bad.ravel()), values.shape)
        path = f"{name}[{', '.join(map(str, where))}]"
        try:
            _finite(float(values[where]), path, minimum=minimum, strict=strict)
        except InputError as err:
            raise err.located(archive.source) from None
        raise archive.error(path, "out of range")  # pragma: no cover - _finite names every case above


def _integers(archive: _Archive, name: str, values: np.ndarray, *, what: str, minimum: int = 0,
              given: np.ndarray | None = None) -> np.ndarray:
    """``values`` as int64 when every (given) one is from ``minimum`` to MAX_INTEGER."""
    if values.size:
        bad = (values < minimum) | (values > MAX_INTEGER)
        if given is not None:
            bad &= given
        if bad.any():
            k = _first(bad)
            raise archive.error(f"{name}[{k}]", f"{what} must be an integer from {minimum} to {MAX_INTEGER}, "
                                                f"got {int(values[k])}")
    out = values.astype(np.int64)
    if given is not None:
        out[~given] = 0
    return out


def _rows(archive: _Archive, name: str, limit: int, what: str) -> np.ndarray:
    """A strictly increasing 1-D integer array of rows, each in ``0..limit-1``."""
    rows = archive.get(name, "i", (None,))
    if rows.size:
        if rows.min() < 0 or rows.max() >= limit:
            k = _first((rows < 0) | (rows >= limit))
            raise archive.error(f"{name}[{k}]", f"{int(rows[k])} is not a {what} row (0..{limit - 1})")
        if rows.size > 1 and not np.all(rows[1:] > rows[:-1]):
            k = _first(rows[1:] <= rows[:-1]) + 1
            raise archive.error(f"{name}[{k}]", "rows must be strictly increasing (each row once, in order)")
    return rows.astype(np.int64)


def _decode_ids(archive: _Archive, name: str, what: str) -> list[str]:
    """The strings of a 0xFF-terminated UTF-8 member, each a valid id (1..200 characters, trimmed, one line)."""
    raw = archive.get(name, "u", (None,))
    if raw.size and raw[-1] != 0xFF:
        raise archive.error(name, "must end with the byte 0xFF (each id is followed by one)")
    text = raw.tobytes().decode("utf-8", "surrogateescape")
    ids = text.split(_SEPARATOR)[:-1] if text else []
    if not ids_are_valid(ids):
        for k, value in enumerate(ids):
            path = f"{name}[{k}]"
            if any("\udc80" <= ch <= "\udcff" for ch in value):
                raise archive.error(path, "not valid UTF-8")
            if "\n" in value or "\r" in value:
                raise archive.error(path, f"{what} must be one line, got {value[:60]!r}")
            try:
                _text(value, path, identifier=True)
            except InputError as err:
                raise err.located(archive.source) from None
        raise archive.error(name, f"{what}s are 1 to 200 characters with no leading or trailing whitespace")
    return ids


def _optional_pair(archive: _Archive, name: str) -> bool:
    mask = f"{name}_given"
    if (name in archive) != (mask in archive):
        missing = mask if name in archive else name
        raise archive.error(missing, f"missing array (given together with {mask if missing == name else name})")
    return name in archive


def _header(archive: _Archive):
    from .instance_file import FORMAT, _pools
    from .schema import validate

    raw = archive.get("header", "u", (None,))
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise archive.error("header", f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = parse_json(text, archive.source)
    except InputError as err:
        err.path = "header" + (err.path[1:] if err.path and err.path.startswith("$") else "")
        raise
    if not isinstance(data, dict):
        raise archive.error("header", f"must be a JSON object, got {type(data).__name__}")
    if data.get("format") != BINARY_FORMAT:
        raise archive.error("header.format", f"must be {BINARY_FORMAT!r}, got {data.get('format')!r}")
    if data.get("version") != BINARY_VERSION or isinstance(data.get("version"), bool):
        raise archive.error("header.version", f"unsupported version {data.get('version')!r} "
                                              f"(this reader knows version {BINARY_VERSION})")
    for key in ("agents", "edges"):
        if key in data:
            raise archive.error(f"header.{key}", "the binary form holds agents and edges as arrays, not in the header")
    document = {**data, "format": FORMAT, "version": 1, "agents": [{"id": "-"}], "edges": []}
    try:
        validate(document, "instance", archive.source)
    except InputError as err:
        err.path = "header" + (err.path[1:] if err.path and err.path.startswith("$") else "")
        raise
    return data, _pools(data)


def instance_from_npz(data: bytes, source: str = "<bytes>") -> Instance:
    """The :class:`Instance` held by the ``.npz`` bytes ``data``, checked as the JSON form is.

    Every rule of the JSON form holds after reading: ids 1..200 characters,
    trimmed and unique; ``w_i > 0``; every real finite, ``>= 0`` and at most
    ``1e9``; every integer in ``0..2**31 - 1``; ``a_i < R`` and ``D_i >= a_i``;
    per-round vectors of length ``R``; edge codes naming existing agents and
    pools, one edge per pair.  A problem raises :class:`InputError`
    ``source: array[index]: problem``.

    >>> instance_from_npz(b"{}", "x.npz")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: x.npz: $: not an .npz archive (a zip file of NumPy arrays); JSON instances end in .json
    """
    from .instance_file import _name

    archive = _Archive(data, source)
    try:
        return _read(archive, _name)
    finally:
        archive.npz.close()


def _read(archive: _Archive, name_rule) -> Instance:
    header, pools = _header(archive)
    rounds = header.get("rounds", 1)
    inst = Instance._prechecked(
        tuple(pools), (None,), (), rounds=rounds, round_hours=float(header.get("round_hours", 1.0)),
        name=name_rule(header, archive.source), description=header.get("description", ""), source=archive.source)
    try:
        _check_head(inst)
    except InputError as err:
        err.source = archive.source
        err.path = "header" + (err.path[1:] if err.path and err.path.startswith("$") else "")
        raise
    ids = _decode_ids(archive, "agent_id", "agent id")
    n = len(ids)
    if n == 0:
        raise archive.error("agent_id", "an instance needs at least one agent")
    index = dict(zip(ids, range(n)))
    if len(index) != n:
        seen: dict[str, int] = {}
        for k, value in enumerate(ids):
            if value in seen:
                raise archive.error(f"agent_id[{k}]", f"duplicate agent id {value!r} (first at agent_id[{seen[value]}])")
            seen[value] = k
    agent_cols, views = _agents(archive, n, rounds, ids, index)
    deferred = _edges(archive, n, rounds, ids, inst.pools, views)
    # Records are built on first use (Instance.agents, Instance.edges) from the checked columns.
    inst._records_later("agents", n, DeferredAgents(n, agent_cols))
    inst._records_later("edges", int(deferred.utility.size), deferred)
    inst.__dict__.update(views)
    return inst


def _agents(archive: _Archive, n: int, rounds: int, ids: list, index: dict):
    nothing = [None] * n
    reals = {}
    for name, default in _OPTIONAL_REAL.items():
        if name in archive:
            values = archive.get(name, "f", (n,))
            _reals(archive, name, values, strict=name == "agent_weight")
            reals[name] = values
        else:
            reals[name] = np.full(n, default)
    optional = {}
    for name in _NULLABLE_REAL:
        if _optional_pair(archive, name):
            values, given = archive.get(name, "f", (n,)), archive.get(f"{name}_given", "b", (n,))
            _reals(archive, name, values, given=given)
            optional[name] = _optional(values, ~given)
        else:
            optional[name] = nothing
    ints, masks = {}, {}
    for name, what in (("agent_demand", "demand"), ("agent_deadline", "deadline")):
        if _optional_pair(archive, name):
            given = archive.get(f"{name}_given", "b", (n,))
            ints[name] = _integers(archive, name, archive.get(name, "i", (n,)), what=what, given=given)
            masks[name] = given
        else:
            ints[name], masks[name] = np.zeros(n, np.int64), np.zeros(n, np.bool_)
    arrival = (_integers(archive, "agent_arrival", archive.get("agent_arrival", "i", (n,)), what="arrival")
               if "agent_arrival" in archive else np.zeros(n, np.int64))
    late = arrival >= rounds
    if late.any():
        k = _first(late)
        raise archive.error(f"agent_arrival[{k}]", f"arrival round {int(arrival[k])} is outside the horizon "
                                                   f"0..{rounds - 1}")
    deadline, dated = ints["agent_deadline"], masks["agent_deadline"]
    early = dated & (deadline < arrival)
    if early.any():
        k = _first(early)
        raise archive.error(f"agent_deadline[{k}]", f"deadline {int(deadline[k])} is before the arrival round "
                                                    f"{int(arrival[k])}")
    required = (archive.get("agent_required", "b", (n,)).tolist() if "agent_required" in archive
                else [False] * n)
    arrivals_column = nothing
    if _pair(archive, *_PAIRS[0]):
        rows = _rows(archive, "agent_arrivals_rows", n, "agent")
        table = archive.get("agent_arrivals", "f", (rows.size, rounds))
        _reals(archive, "agent_arrivals", table)
        arrivals_column = list(nothing)
        for i, row in zip(rows.tolist(), map(tuple, table.tolist())):
            arrivals_column[i] = row
    task_column = _tasks(archive, n) if any(name in archive for name in _TASK) else nothing
    demand = ints["agent_demand"]
    cols = [
        ids, reals["agent_weight"].tolist(), _optional(demand, ~masks["agent_demand"]), optional["agent_work"],
        arrival.tolist(), _optional(deadline, ~dated), reals["agent_elapsed"].tolist(),
        reals["agent_migration_cost"].tolist(), optional["agent_budget"], arrivals_column, required, task_column,
    ]
    views = {
        "agent_index": index,
        "weights": np.array(reals["agent_weight"], np.float64),
        "demands": np.where(masks["agent_demand"], demand.astype(np.float64), np.inf),
    }
    return cols, views


def _pair(archive: _Archive, rows: str, values: str) -> bool:
    if (rows in archive) != (values in archive):
        missing = values if rows in archive else rows
        raise archive.error(missing, f"missing array (given together with {rows if missing == values else values})")
    return rows in archive


def _tasks(archive: _Archive, n: int) -> list:
    for name in _TASK:
        if name not in archive:
            raise archive.error(name, f"missing array (the task vectors need {', '.join(_TASK)})")
    rows = _rows(archive, "agent_task_rows", n, "agent")
    t = rows.size
    offsets = archive.get("agent_task_offsets", "i", (t + 1,)).astype(np.int64)
    kinds = _decode_ids(archive, "agent_task_kind", "resource kind")
    amount = archive.get("agent_task_amount", "f", (len(kinds),))
    if offsets[0] != 0 or offsets[-1] != len(kinds) or (t and not np.all(offsets[1:] > offsets[:-1])):
        raise archive.error("agent_task_offsets", f"must rise strictly from 0 to {len(kinds)} (the number of kinds; "
                                                  "every task names at least one kind)")
    _reals(archive, "agent_task_amount", amount)
    owner = np.repeat(np.arange(t), np.diff(offsets))
    if kinds:
        codes = {}
        code = np.fromiter((codes.setdefault(k, len(codes)) for k in kinds), np.int64, len(kinds))
        key = owner * len(codes) + code
        if has_repeats(key):
            order = np.argsort(key, kind="stable")
            repeat = order[1:][key[order][1:] == key[order][:-1]][0]
            raise archive.error(f"agent_task_kind[{int(repeat)}]", f"resource kind {kinds[repeat]!r} given twice "
                                                                  f"in one task")
        positive = np.maximum.reduceat(amount, offsets[:-1]) > 0 if t else np.zeros(0, bool)
        if not positive.all():
            j = _first(~positive)
            raise archive.error(f"agent_task_rows[{j}]", "a task needs a positive amount of at least one resource kind")
    column: list = [None] * n
    pairs = list(zip(kinds, amount.tolist()))
    for j, (i, start, stop) in enumerate(zip(rows.tolist(), offsets[:-1].tolist(), offsets[1:].tolist())):
        column[i] = tuple(pairs[start:stop])
    return column


def _edges(archive: _Archive, n: int, rounds: int, ids: list, pools: tuple, views: dict):
    m = len(pools)
    agent = archive.get("edge_agent", "i", (None,))
    e_count = agent.size
    pool = archive.get("edge_pool", "i", (e_count,))
    for name, codes, limit, what in (("edge_agent", agent, n, "agent"), ("edge_pool", pool, m, "pool")):
        if e_count and (codes.min() < 0 or codes.max() >= limit):
            k = _first((codes < 0) | (codes >= limit))
            raise archive.error(f"{name}[{k}]", f"{int(codes[k])} is not a {what} (codes run from 0 to {limit - 1})")
    agent, pool = agent.astype(np.int64), pool.astype(np.int64)
    key = agent * m + pool
    if e_count > 1 and not bool(np.all(key[1:] > key[:-1])) and has_repeats(key):
        order = np.argsort(key, kind="stable")
        same = key[order][1:] == key[order][:-1]
        j = int(np.argmax(same))
        first, second = int(order[j]), int(order[j + 1])
        raise archive.error(f"edges[{second}]", f"second edge for agent {ids[agent[second]]!r} and pool "
                                                f"{pools[pool[second]].id!r} (first at edges[{first}])")
    utility = archive.get("edge_utility", "f", (e_count,))
    _reals(archive, "edge_utility", utility)
    table = utility[:, None].copy() if rounds == 1 else None
    rows = per_round = None
    if _pair(archive, *_PAIRS[1]):
        rows = _rows(archive, "edge_utility_rows", e_count, "edge")
        per_round = archive.get("edge_utility_rounds", "f", (rows.size, rounds))
        _reals(archive, "edge_utility_rounds", per_round)
        if rows.size:
            differ = utility[rows] != per_round[:, 0]
            if differ.any():
                j = _first(differ)
                raise archive.error(f"edge_utility[{int(rows[j])}]",
                                    f"must equal edge_utility_rounds[{j}, 0] (the edge's round-0 utility), "
                                    f"got {utility[rows[j]]!r} and {per_round[j, 0]!r}")
            table = np.repeat(utility[:, None], rounds, axis=1) if table is None else table
            table[rows] = per_round
    extra = []
    for name in ("edge_bid", "edge_cost"):
        if _optional_pair(archive, name):
            values, given = archive.get(name, "f", (e_count,)), archive.get(f"{name}_given", "b", (e_count,))
            _reals(archive, name, values, given=given)
            extra.append((values, given))
        else:
            extra.append(None)
    pool_ids = [p.id for p in pools]
    views.update(edge_agent=agent, edge_pool=pool, pool_index={p: c for c, p in enumerate(pool_ids)})
    # Bids as views (the round-0 utility where none is given), as Instance.edge_bid and edge_bid_given read them.
    if extra[0] is None:
        views.update(edge_bid=np.array(utility, dtype=np.float64), edge_bid_given=np.zeros(e_count, dtype=bool))
    else:
        values, given = extra[0]
        given = np.asarray(given, dtype=bool)
        views.update(edge_bid=np.where(given, values, utility).astype(np.float64), edge_bid_given=given)
    if table is not None:
        views["edge_utility"] = table
    return _EdgeRecords(ids, pool_ids, agent, pool, utility, rows, per_round, *extra)


class _EdgeRecords:
    """The edge records of checked columns, built when first asked for (:attr:`Instance.edges`).

    Everything was checked when the file was read; building a million
    records takes longer than reading and checking them, and a solve that
    works on the array views never needs them.
    """

    __slots__ = ("ids", "pool_ids", "agent", "pool", "utility", "rows", "per_round", "bid", "cost")

    def __init__(self, ids, pool_ids, agent, pool, utility, rows, per_round, bid, cost):
        self.ids, self.pool_ids, self.agent, self.pool = ids, pool_ids, agent, pool
        self.utility, self.rows, self.per_round, self.bid, self.cost = utility, rows, per_round, bid, cost

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)

    def __call__(self) -> tuple:
        count = self.utility.size
        utilities = self.utility.tolist()
        if self.rows is not None:
            for k, row in zip(self.rows.tolist(), map(tuple, self.per_round.tolist())):
                utilities[k] = row
        extra = [[None] * count if pair is None else _optional(pair[0], ~pair[1]) for pair in (self.bid, self.cost)]
        agent_names = list(map(self.ids.__getitem__, self.agent.tolist()))
        pool_names = list(map(self.pool_ids.__getitem__, self.pool.tolist()))
        return _build(Edge, ("agent", "pool", "utility", "bid", "cost"),
                      [agent_names, pool_names, utilities, *extra])
