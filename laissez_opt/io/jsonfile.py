"""Strict JSON reading and atomic writing.

Python's ``json`` module accepts ``NaN``, ``Infinity``, duplicate keys and
numbers that overflow a float.  An instance file with any of those is almost
certainly a bug in whatever exported it, so the reader rejects them and names
the JSON path where they occur.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["read_json", "parse_json", "write_atomic", "json_path"]


class _NonFinite:
    """Placeholder for NaN/Infinity literals, located after parsing."""

    __slots__ = ("literal",)

    def __init__(self, literal: str):
        self.literal = literal


class _DuplicateKeys(dict):
    """An object whose source text repeated a key; remembered to report its path."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict = {}
    duplicates = []
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    if duplicates:
        marked = _DuplicateKeys(obj)
        marked.duplicates = duplicates
        return marked
    return obj


def _parse_float(text: str) -> Any:
    value = float(text)
    if not math.isfinite(value):
        return _NonFinite(text)
    return value


def _parse_int(text: str) -> Any:
    value = int(text)
    if abs(value) > 2**63:
        # Python ints do not overflow, but every consumer converts to float64/int64.
        return _NonFinite(text)
    return value


def json_path(parts) -> str:
    """Render a sequence of keys and indices as ``$.a[0].b``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + json.dumps(part) + "]"
    return out


def _find_problem(node: Any, parts: list) -> tuple[str, str] | None:
    if isinstance(node, _NonFinite):
        return json_path(parts), (
            f"number {node.literal} is not finite or overflows; numbers must be finite"
        )
    if isinstance(node, dict):
        if isinstance(node, _DuplicateKeys):
            return json_path(parts), f"duplicate key {node.duplicates[0]!r}"
        for key, value in node.items():
            found = _find_problem(value, parts + [key])
            if found:
                return found
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found = _find_problem(value, parts + [index])
            if found:
                return found
    return None


def parse_json(text: str, source: str = "<string>") -> Any:
    """Parse ``text`` strictly; raise :class:`InputError` naming ``source`` and the JSON path."""
    try:
        data = json.loads(
            text,
            parse_float=_parse_float,
            parse_int=_parse_int,
            parse_constant=_NonFinite,
            object_pairs_hook=_object_pairs,
        )
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            source=source,
            path="$",
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", source=source, path="$") from None
    problem = _find_problem(data, [])
    if problem:
        raise InputError(problem[1], source=source, path=problem[0])
    return data


def read_json(path: str | os.PathLike) -> Any:
    """Read and strictly parse the JSON file at ``path``."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=source, path="$") from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=source, path="$") from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source, path="$") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source, path="$") from None
    if not text.strip():
        raise InputError("file is empty", source=source, path="$")
    return parse_json(text, source)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one.

    The bytes go to a temporary file in the same directory, are flushed to disk,
    and replace the target with an atomic rename.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("output directory does not exist", source=str(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
