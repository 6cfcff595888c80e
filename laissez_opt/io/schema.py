"""JSON Schema validation of the package's file formats, with one-line errors.

The schemas ship inside the package (``laissez_opt/io/schemas/``); every file
the library reads is validated against its schema before anything else looks
at it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import InputError
from .jsonfile import json_path

__all__ = ["load_schema", "validate"]


@lru_cache(maxsize=None)
def load_schema(kind: str) -> dict:
    """The JSON Schema of file kind ``kind`` (``"instance"`` or ``"result"``)."""
    text = resources.files(__package__).joinpath("schemas", f"{kind}.schema.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _fast_check(kind: str):
    """A compiled yes/no validator: fast on large valid files (no remote references resolved)."""
    import fastjsonschema

    return fastjsonschema.compile(load_schema(kind), handlers={}, use_default=False)


@lru_cache(maxsize=None)
def _validator(kind: str):
    from jsonschema import Draft202012Validator

    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    return "an object"


def _describe(error) -> tuple[str, str]:
    """Turn a jsonschema error into (json path, short problem)."""
    path = list(error.absolute_path)
    kind = error.validator
    value = error.instance
    arg = error.validator_value
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(known)) if isinstance(value, dict) else []
        name = extra[0] if extra else "?"
        return json_path(path + [name]), f"unknown field {name!r} (known fields: {', '.join(known)})"
    if kind == "required":
        missing = [k for k in arg if isinstance(value, dict) and k not in value]
        name = missing[0] if missing else "?"
        return json_path(path), f"missing required field {name!r}"
    if kind == "type":
        wanted = arg if isinstance(arg, list) else [arg]
        return json_path(path), f"expected {' or '.join(wanted)}, got {_type_name(value)}"
    if kind == "const":
        return json_path(path), f"must be {json.dumps(arg)}, got {_type_name(value)}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        relation = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return json_path(path), f"must be {relation} {arg}, got {value!r}"
    if kind == "minItems":
        return json_path(path), "must not be empty" if arg == 1 else f"needs at least {arg} items"
    if kind == "minLength":
        return json_path(path), "must not be an empty string"
    if kind == "maxLength":
        return json_path(path), f"longer than {arg} characters"
    if kind == "pattern":
        return json_path(path), "ids must not start or end with whitespace"
    if kind == "oneOf":
        # A value matching none of the alternatives: explain with the closest one.
        best = None
        for sub in error.context or []:
            if best is None or len(sub.absolute_path) > len(best.absolute_path):
                best = sub
        if best is not None and len(best.absolute_path) > len(error.absolute_path):
            return _describe(best)
        return json_path(path), f"expected a number >= 0 or a non-empty list of numbers >= 0, got {_type_name(value)}"
    return json_path(path), error.message if len(error.message) < 200 else error.message[:197] + "..."


def validate(data: Any, kind: str, source: str) -> None:
    """Validate ``data`` against schema ``kind``; raise :class:`InputError` on the first problem.

    A compiled validator answers yes or no; only invalid data goes through
    :mod:`jsonschema`, whose errors are ordered by their position in the file so
    that the message names the earliest offending JSON path.
    """
    import fastjsonschema

    try:
        _fast_check(kind)(data)
        return
    except fastjsonschema.JsonSchemaException:
        pass  # find and describe the first problem with the slower, more precise validator
    validator = _validator(kind)
    first = None
    for error in validator.iter_errors(data):
        key = [(0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path]
        if first is None or key < first[0]:
            first = (key, error)
    if first is not None:
        path, problem = _describe(first[1])
        raise InputError(problem, source=source, path=path)
