"""JSON Schema validation of the package's file formats, with one-line errors.

The schemas ship inside the package (``laissez_opt/io/schemas/``); every file
the library reads is validated against its schema before anything else looks
at it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import InputError
from .jsonfile import json_path

__all__ = ["load_schema", "schema_errors", "validate"]


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


#: The keywords :func:`schema_errors` evaluates, and those it reads as annotations only
#: (``format`` is an annotation unless a format checker is asked for, as in jsonschema).
#: A schema using any other keyword is refused (tests/test_schema_errors.py checks ours).
CHECKED_KEYWORDS = frozenset({"type", "properties", "additionalProperties", "required", "const", "enum", "items",
                              "minItems", "minLength", "maxLength", "pattern", "propertyNames", "minProperties",
                              "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
ANNOTATION_KEYWORDS = frozenset({"$schema", "$id", "title", "description", "default", "format"})


@dataclass(frozen=True)
class SchemaError:
    """One failed keyword: where (``path``, keys and indices), which ``keyword``, the
    offending ``instance``, the keyword's ``value`` and the ``schema`` holding it."""

    path: tuple
    keyword: str
    instance: Any
    value: Any
    schema: dict


def _is_type(value: Any, name: str) -> bool:
    # JSON Schema 2020-12 types: a boolean is not a number, and 1.0 is an integer.
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return name == "number" or isinstance(value, int) or float(value).is_integer()


def _equal(one: Any, two: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, and lists and objects compare item by item."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(_equal(one[k], two[k]) for k in one)
    return one == two


def schema_errors(instance: Any, schema: dict, path: tuple = ()):
    """Every way ``instance`` fails ``schema``, as :class:`SchemaError`, in the order
    JSON Schema's reference validator (jsonschema, Draft 2020-12) reports them:
    keyword by keyword in the schema's order, descending where a keyword does.

    The package's schemas use a small set of keywords (:data:`CHECKED_KEYWORDS`);
    evaluating them here keeps the error path free of importing a general validator
    (jsonschema's optional format packages take over a second to load).

    >>> [(e.path, e.keyword) for e in schema_errors({"a": -1, "b": 2}, {"properties": {"a": {"minimum": 0}},
    ...                                                                  "additionalProperties": False})]
    [(('a',), 'minimum'), ((), 'additionalProperties')]
    """
    for keyword, value in schema.items():
        if keyword in ANNOTATION_KEYWORDS:
            continue
        if keyword not in CHECKED_KEYWORDS:
            raise ValueError(f"schema keyword {keyword!r} is not supported by schema_errors")
        here = SchemaError(path, keyword, instance, value, schema)
        if keyword == "type":
            if not any(_is_type(instance, name) for name in (value if isinstance(value, list) else [value])):
                yield here
        elif keyword == "const":
            if not _equal(instance, value):
                yield here
        elif keyword == "enum":
            if not any(_equal(instance, each) for each in value):
                yield here
        elif isinstance(instance, dict):
            yield from _object_errors(instance, keyword, value, schema, path, here)
        elif isinstance(instance, list):
            if keyword == "items":
                for index, item in enumerate(instance):
                    yield from schema_errors(item, value, path + (index,))
            elif keyword == "minItems" and len(instance) < value:
                yield here
        elif isinstance(instance, str):
            if ((keyword == "minLength" and len(instance) < value) or (keyword == "maxLength" and len(instance) > value)
                    or (keyword == "pattern" and not re.search(value, instance))):
                yield here
        elif _is_type(instance, "number"):
            if ((keyword == "minimum" and instance < value) or (keyword == "maximum" and instance > value)
                    or (keyword == "exclusiveMinimum" and instance <= value)
                    or (keyword == "exclusiveMaximum" and instance >= value)):
                yield here


def _object_errors(instance: dict, keyword: str, value: Any, schema: dict, path: tuple, here: SchemaError):
    if keyword == "properties":
        for name, sub in value.items():
            if name in instance:
                yield from schema_errors(instance[name], sub, path + (name,))
    elif keyword == "additionalProperties":
        extras = [name for name in instance if name not in schema.get("properties", {})]
        if isinstance(value, dict):
            for name in extras:
                yield from schema_errors(instance[name], value, path + (name,))
        elif value is False and extras:
            yield here
    elif keyword == "required":
        for name in value:
            if name not in instance:
                yield here
    elif keyword == "propertyNames":
        for name in instance:
            yield from schema_errors(name, value, path)
    elif keyword == "minProperties" and len(instance) < value:
        yield here


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


def _describe(error: SchemaError) -> tuple[str, str]:
    """Turn a :class:`SchemaError` into (json path, short problem)."""
    path = list(error.path)
    kind, value, arg = error.keyword, error.instance, error.value
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(known))
        return json_path(path + [extra[0]]), f"unknown field {extra[0]!r} (known fields: {', '.join(known)})"
    if kind == "required":
        missing = [k for k in arg if k not in value]
        return json_path(path), f"missing required field {missing[0]!r}"
    if kind == "type":
        wanted = arg if isinstance(arg, list) else [arg]
        return json_path(path), f"expected {' or '.join(wanted)}, got {_type_name(value)}"
    if kind == "const":
        return json_path(path), f"must be {json.dumps(arg)}, got {_type_name(value)}"
    if kind == "enum":
        return json_path(path), f"{value!r} is not one of {arg!r}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        relation = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return json_path(path), f"must be {relation} {arg}, got {value!r}"
    if kind == "minItems":
        return json_path(path), "must not be empty" if arg == 1 else f"needs at least {arg} items"
    if kind == "minProperties":
        return json_path(path), "must not be empty" if arg == 1 else f"needs at least {arg} entries"
    if kind == "minLength":
        return json_path(path), "must not be an empty string"
    if kind == "maxLength":
        return json_path(path), f"longer than {arg} characters"
    # pattern: the only pattern in the schemas is the id rule
    return json_path(path), "ids must not start or end with whitespace"


def validate(data: Any, kind: str, source: str) -> None:
    """Validate ``data`` against schema ``kind``; raise :class:`InputError` on the first problem.

    A compiled validator answers yes or no; only invalid data goes through
    :func:`schema_errors`, whose errors are ordered by their position in the file so
    that the message names the earliest offending JSON path.
    """
    import fastjsonschema

    try:
        _fast_check(kind)(data)
        return
    except fastjsonschema.JsonSchemaException:
        pass  # find and describe the first problem with the slower, more precise validator
    first = None
    for error in schema_errors(data, load_schema(kind)):
        key = [(0, p) if isinstance(p, int) else (1, str(p)) for p in error.path]
        if first is None or key < first[0]:
            first = (key, error)
    if first is not None:
        path, problem = _describe(first[1])
        raise InputError(problem, source=source, path=path)
