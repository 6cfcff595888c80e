"""Griffe extension for the API reference: the docstrings' doctest examples become code blocks.

The package's docstrings carry their runnable examples as plain doctest lines
(``>>> ...`` followed by the expected output). Markdown would read an output such
as ``[0, 1]`` as a link; this extension fences every doctest block (from its first
``>>>`` line to the next blank line) as ``pycon`` before the docstring is rendered.
"""

from __future__ import annotations

import re

import griffe

_FENCE = re.compile(r"^\s*(```|~~~)")
_ROLE = re.compile(r":(?:class|func|attr|meth|mod|data|exc|obj):`~?([^`]+)`")


def fence_doctests(text: str) -> str:
    """``text`` with each doctest block wrapped in a fenced ``pycon`` code block (fenced blocks are left alone).

    Sphinx roles (``:class:`X```) become code, and a ``.. math::`` directive a ``$$`` block.
    """
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    text = _math(text)
    out, block, fenced = [], [], False

    def flush():
        if block:
            indent = len(block[0]) - len(block[0].lstrip())
            out.extend([" " * indent + "```pycon", *block, " " * indent + "```"])
            block.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        elif block:
            if line.strip():
                block.append(line)
            else:
                flush()
                out.append(line)
        elif line.lstrip().startswith(">>>"):
            block.append(line)
        else:
            out.append(line)
    flush()
    return "\n".join(out)


def _math(text: str) -> str:
    lines, out, k = text.splitlines(), [], 0
    while k < len(lines):
        line = lines[k]
        if line.strip() == ".. math::":
            indent = len(line) - len(line.lstrip())
            k += 1
            body = []
            while k < len(lines) and (not lines[k].strip() or len(lines[k]) - len(lines[k].lstrip()) > indent):
                body.append(lines[k].strip())
                k += 1
            out += [" " * indent + "$$", *[b for b in body if b], " " * indent + "$$", ""]
            continue
        out.append(line)
        k += 1
    return "\n".join(out)


def _fix(obj) -> None:
    if obj is not None and getattr(obj, "docstring", None) is not None:
        obj.docstring.value = fence_doctests(obj.docstring.value)


class DoctestFences(griffe.Extension):
    """Fence the doctest blocks of every loaded object's docstring (modules and packages included)."""

    def on_object(self, *, obj, **kwargs) -> None:
        _fix(obj)

    def on_package(self, *, pkg, **kwargs) -> None:
        _fix(pkg)
