"""The ``-p KEY=VALUE`` options of every command, parsed once.

``VALUE`` is read as JSON when it parses (``7``, ``true``, ``[1, 2]``) and kept as
a string otherwise (``hedge``).  A key given twice is refused: the last value
silently winning would hide a typo in a long command line.
"""

from __future__ import annotations

import json

from ..errors import InputError

__all__ = ["parse_params", "parse_scoped_params"]


def _value(raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _split(item: str, expected: str) -> tuple[str, str]:
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise InputError(f"expected {expected}, got {item!r}", path="--param")
    return key, raw


def parse_params(items) -> dict:
    """``KEY=VALUE`` items as a dict; a repeated key is an :class:`InputError`.

    >>> parse_params(["tokens=7", "threshold=hedge"])
    {'tokens': 7, 'threshold': 'hedge'}
    >>> parse_params(["tokens=3", "tokens=7"])
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: --param: tokens given twice (3 and 7)
    """
    params: dict = {}
    raws: dict[str, str] = {}
    for item in items:
        key, raw = _split(item, "KEY=VALUE")
        if key in params:
            raise InputError(f"{key} given twice ({raws[key]} and {raw})", path="--param")
        params[key], raws[key] = _value(raw), raw
    return params


def parse_scoped_params(items, scope: str) -> dict[str, dict]:
    """``SCOPE.KEY=VALUE`` items (``scope`` is ``METHOD`` or ``POLICY``) grouped by scope.

    >>> parse_scoped_params(["mtf.tokens=7", "maxmin.normalizer=raw"], "METHOD")
    {'mtf': {'tokens': 7}, 'maxmin': {'normalizer': 'raw'}}
    >>> parse_scoped_params(["tokens=7"], "METHOD")
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: --param: expected METHOD.KEY=VALUE, got 'tokens=7'
    """
    expected = f"{scope}.KEY=VALUE"
    grouped: dict[str, list[str]] = {}
    for item in items:
        key, raw = _split(item, expected)
        owner, dot, name = key.partition(".")
        if not dot or not owner or not name:
            raise InputError(f"expected {expected}, got {item!r}", path="--param")
        grouped.setdefault(owner, []).append(f"{name}={raw}")
    parsed: dict[str, dict] = {}
    for owner, named in grouped.items():
        try:
            parsed[owner] = parse_params(named)
        except InputError as error:
            raise InputError(f"{owner}.{error.problem}", path="--param") from None
    return parsed
