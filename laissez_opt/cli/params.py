"""Options of every command: ``-p KEY=VALUE`` parsed once, and errors named as the command line spells them.

``VALUE`` is read as JSON when it parses (``7``, ``true``, ``[1, 2]``) and kept as
a string otherwise (``hedge``).  A key given twice is refused: the last value
silently winning would hide a typo in a long command line.

The library names the Python argument at fault in an error's path (``workers``,
``method_options.mtf.tokens``, ``option threads``); :func:`cli_paths` re-words it
as the running command's flag (``--workers``, ``--param mtf.tokens``, ``-p threads``).
"""

from __future__ import annotations

import contextlib
import json

import click

from ..errors import InputError, SolverUnavailableError

__all__ = ["parse_params", "parse_scoped_params", "cli_paths", "command_flags", "reword"]


#: API arguments a command takes under another parameter name (`-p` gathers them).
ALIASES = {"compare": {"method_options": "--param"}, "simulate": {"policy_options": "--param"}}


def command_flags(command: click.Command | None = None) -> dict[str, str]:
    """``command``'s parameters (default: the running command's): Python argument name -> its spelling."""
    if command is None:
        ctx = click.get_current_context(silent=True)
        if ctx is None:
            return {}
        command = ctx.command
    flags = {}
    for param in command.params:
        name = param.name.rstrip("_")  # `methods_`: a parameter renamed so as not to shadow a function
        if isinstance(param, click.Argument):
            flags[name] = param.human_readable_name
        else:
            longs = [opt for opt in param.opts if opt.startswith("--")]
            flags[name] = (longs or param.opts)[0]
    return {**flags, **ALIASES.get(command.name, {})}


def reword(err: InputError | SolverUnavailableError, names: dict[str, str], flags: dict[str, str] | None = None) -> None:
    """Re-word ``err.path``, an API argument name, as the command line spells it (see :func:`cli_paths`).

    >>> err = InputError("must be >= 1, got 0", path="method_options.mtf.tokens")
    >>> reword(err, {"method_options": "--param", "workers": "--workers"}); str(err)
    '--param mtf.tokens: must be >= 1, got 0'
    """
    path = err.path or ""
    head, dot, tail = path.partition(".")
    if path.startswith("option "):
        option = path[len("option "):]
        # Only the flags this command line used: `-p threads=0` is named as given, not as --threads.
        err.path = (flags or {}).get(option, "-p " + option)
    elif path in names:
        err.path = names[path]
    elif dot and head in names:
        err.path = f"{names[head]} {tail}"


@contextlib.contextmanager
def cli_paths(flags: dict[str, str] | None = None):
    """Re-word the API's argument names in errors as the running command spells them.

    ``workers`` becomes ``--workers``, ``instances`` the argument ``INSTANCES``, a
    dotted path keeps its tail (``method_options.mtf.tokens`` becomes ``--param
    mtf.tokens`` where the command maps ``method_options`` to ``--param``), and a
    method option (``option threads``) becomes ``-p threads``, or the flag ``flags``
    names for it (``{"threads": "--threads"}``).  Every command's errors pass through
    this once more in the command group, with the command's own parameter names.
    """
    try:
        yield
    except (InputError, SolverUnavailableError) as err:
        reword(err, {**command_flags(), **(flags or {})}, flags)
        raise


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


def _collect(pairs, where: str = "") -> dict:
    """``(key, raw)`` pairs as a dict of values; a repeated key is an :class:`InputError` (``where`` prefixes it)."""
    params: dict = {}
    raws: dict[str, str] = {}
    for key, raw in pairs:
        if key in params:
            raise InputError(f"{where}{key} given twice ({raws[key]} and {raw})", path="--param")
        params[key], raws[key] = _value(raw), raw
    return params


def parse_params(items) -> dict:
    """``KEY=VALUE`` items as a dict; a repeated key is an :class:`InputError`.

    >>> parse_params(["tokens=7", "threshold=hedge"])
    {'tokens': 7, 'threshold': 'hedge'}
    >>> parse_params(["tokens=3", "tokens=7"])
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: --param: tokens given twice (3 and 7)
    """
    return _collect(_split(item, "KEY=VALUE") for item in items)


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
    grouped: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        key, raw = _split(item, expected)
        owner, dot, name = key.partition(".")
        if not dot or not owner or not name:
            raise InputError(f"expected {expected}, got {item!r}", path="--param")
        grouped.setdefault(owner, []).append((name, raw))
    return {owner: _collect(pairs, f"{owner}.") for owner, pairs in grouped.items()}
