"""The result file's text for large results: the same characters as the plain encoder, several times faster.

:meth:`laissez_opt.result.Result.to_json` writes ``json.dumps(readable_copy(result.to_dict()),
indent=2)``.  With the indentation, Python's ``json`` module runs its pure-Python
encoder, and ``readable_copy`` walks every record first: for a million agents the
text of the allocation, the utilities and the per-agent details took several
times as long as the partitioned solve itself.  :func:`result_text` writes the
same text with the large parts made straight from their columns:

* the allocation (:class:`~laissez_opt.result.AllocationColumns`, or records) and
  the utilities (:class:`~laissez_opt.result.AgentValues`) without building a
  record or a dict per agent;
* any other mapping of ``LARGE`` or more entries whose values are all floats
  (``details["leximin"]``, payments) as one pass of string joins.

Each float is rounded to twelve significant digits exactly as
:func:`laissez_opt.display.readable` does, written as ``float.__repr__`` (what
``json`` writes), and a non-finite float becomes ``null``; keys are encoded by
``json``'s own string encoder.  The rest of the file (a few hundred small values)
goes through ``json.dumps`` with placeholders that are then replaced, so the
layout is the plain encoder's by construction.  ``tests/test_result_json.py``
checks the identity on generated results.

>>> import laissez_opt as lo
>>> r = lo.solve("instances/hotos25-table1.json", "welfare")
>>> result_text(r, large=1) == json.dumps(readable_copy(r.to_dict()), indent=2, allow_nan=False) + "\\n"
True
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from itertools import chain, repeat
from json.encoder import encode_basestring_ascii as _key

import numpy as np

from ..display import readable
from . import AgentValues, AllocationColumns, _clean, readable_copy

__all__ = ["LARGE", "result_text"]

#: A mapping or allocation with at least this many entries is written from columns.
LARGE = 2_000
DIGITS = 12


def result_text(result, *, large: int = LARGE) -> str:
    """The result file's JSON text of ``result`` (indent 2, twelve significant digits), ending in a newline."""
    parts: dict[str, object] = {}
    marker = f"\x00{uuid.uuid4().hex}-"

    def hold(value) -> str:
        token = f"{marker}{len(parts)}"
        parts[token] = value
        return token

    out = result.to_dict(lazy=True)
    columns = result.allocation_columns
    if columns is not None:
        out["allocation"] = hold(columns) if len(columns) >= large else result.allocation
    elif _is_records(out["allocation"], large):
        out["allocation"] = hold(out["allocation"])
    values = result.utility_values
    if values is not None:
        out["utilities"] = hold(values) if len(values) >= large else result.utilities
    skeleton = _skeleton(out, hold, large)
    text = json.dumps(skeleton, indent=2, allow_nan=False) + "\n"
    if not parts:
        return text
    quoted = {json.dumps(token): value for token, value in parts.items()}
    found = sorted((text.index(q), len(q), value) for q, value in quoted.items())
    pieces, at = [], 0
    for where, length, value in found:
        before = text[text.rfind("\n", 0, where) + 1:where]  # the line up to the placeholder
        pad = before[:len(before) - len(before.lstrip(" "))]
        pieces.append(text[at:where])
        pieces.append(_large_text(value, pad))
        at = where + length
    pieces.append(text[at:])
    return "".join(pieces)


def _skeleton(value, hold, large: int):
    """``readable_copy(value)`` with every large float mapping replaced by a placeholder."""
    if isinstance(value, Mapping) and not isinstance(value, AgentValues):
        if len(value) >= large and _all_floats(value):
            return hold(value)
        return {str(k): _skeleton(v, hold, large) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_skeleton(v, hold, large) for v in value]
    return readable_copy(value)


def _all_floats(mapping: Mapping) -> bool:
    kinds = set(map(type, mapping.values()))
    return bool(kinds) and kinds <= {float, np.float64}


def _is_records(records, large: int) -> bool:
    """A list of plain ``{"agent", "pool", "round", "amount"}`` records (the allocation's contract form)."""
    if not isinstance(records, list) or len(records) < large:
        return False
    keys = ("agent", "pool", "round", "amount")
    return all(type(r) is dict and tuple(r) == keys and type(r["agent"]) is str and type(r["pool"]) is str
               and type(r["round"]) is int and type(r["amount"]) in (float, int) for r in records)


def _floats(values) -> list[str]:
    """Each value as the file writes it: twelve significant digits, ``float.__repr__``, ``null`` if not finite.

    ``repr(float(f"{v:.12g}"))`` per value is the definition.  Between ``1e-290`` and
    ``1e11`` in magnitude ``"%.12g" % v`` is the same text (shortest round-trip digits
    of a double are unique at twelve digits, and both switch to exponents below
    ``1e-4``) save the ``.0`` that ``repr`` gives a whole number, at a third of the
    cost; zeros, non-finite values, subnormals and values whose ``%g`` and ``repr``
    switch to exponents differently take the definition.

    >>> _floats([0.30000000000000004, 3.0, -0.0, float("nan"), 2.5e15, 1e-05])
    ['0.3', '3.0', '0.0', 'null', '2500000000000000.0', '1e-05']
    """
    numbers = np.asarray(values, dtype=np.float64)
    text = ["%.12g" % v for v in numbers.tolist()]
    text = [s if "." in s or "e" in s else s + ".0" for s in text]
    size = np.abs(numbers)
    for i in np.flatnonzero(~((size < 1e11) & (size >= 1e-290))).tolist():
        text[i] = _float(float(numbers[i]))
    return text


def _float(v: float) -> str:
    return repr(readable(v, DIGITS)) if math.isfinite(v) else "null"


def _large_text(value, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, AllocationColumns):
        inst = value.instance
        agent_keys = [_key(a) for a in inst.agent_index]
        pool_keys = [_key(p.id) for p in inst.pools]
        agents, pools = inst.edge_agent[value.edge].tolist(), inst.edge_pool[value.edge].tolist()
        rounds = value.round.tolist()
        amounts = _floats(value.amount)
    elif isinstance(value, list):
        keys = {}
        agents = [keys.setdefault(r["agent"], len(keys)) for r in value]
        agent_keys = [_key(a) for a in keys]
        keys = {}
        pools = [keys.setdefault(r["pool"], len(keys)) for r in value]
        pool_keys = [_key(p) for p in keys]
        rounds = [r["round"] for r in value]
        amounts = [json.dumps(_clean(r["amount"], DIGITS)) for r in value]
    else:
        if isinstance(value, AgentValues):
            keys = [_key(a) for a in value.instance.agent_index]
            numbers = _floats(value.values)
        else:
            keys = [_key(str(k)) for k in value]
            numbers = _floats([float(v) for v in value.values()])
        if not keys:
            return "{}"
        heads = [f",\n{inner}{k}: " for k in keys]
        heads[0] = heads[0][2:]
        return "{\n" + "".join(chain.from_iterable(zip(heads, numbers))) + f"\n{pad}}}"
    if not agents:
        return "[]"
    # A record is five pieces: its agent's opening (with the separator), its pool, its round, its
    # amount and the closing brace; the constant text is joined to the keys once per key, not per record.
    field = inner + "  "
    opening = f"{inner}{{\n{field}\"agent\": "
    agent_heads = [f",\n{opening}{k},\n{field}\"pool\": " for k in agent_keys]
    pool_heads = [f"{k},\n{field}\"round\": " for k in pool_keys]
    round_heads = {r: f"{r},\n{field}\"amount\": " for r in set(rounds)}
    heads = [agent_heads[a] for a in agents]
    heads[0] = "[\n" + heads[0][2:]
    return "".join(chain.from_iterable(zip(heads, [pool_heads[c] for c in pools], [round_heads[r] for r in rounds],
                                           amounts, repeat(f"\n{inner}}}")))) + f"\n{pad}]"
