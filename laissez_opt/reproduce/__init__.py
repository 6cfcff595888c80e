"""``lo.reproduce``: the seeds' worked examples (R1 to R5), every quoted number beside the computed one.

>>> import laissez_opt as lo
>>> report = lo.reproduce("R3")
>>> report.item("R3").counts()["differs"], report.ok
(1, True)

``items``: ``"all"`` or one or more of ``R1 .. R5``; ``out``: a directory for
``REPORT.md`` and ``reproduce.json`` (written atomically); ``root``: the checkout whose
``instances/`` are read (default: the one this package lives in); ``r5_seeds`` and
``r5_rounds``: the size of R5's live simulation (the full run is read from its results
file); ``progress``: a callable receiving a short text as each step starts.

A seed's number that does not reproduce is a verdict, never an error: the report's
``ok`` is false only when the library itself failed on an item (the item's ``error``).
"""

from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable

from ..errors import InputError
from .items import ITEMS, ROOT, Context
from .report import CANNOT, COMPUTED, DIFFERS, REPRODUCES, Item, ReproduceReport, Row, judge

__all__ = ["reproduce", "quoted_data", "settle", "ITEMS", "ReproduceReport", "Item", "Row", "judge",
           "REPRODUCES", "DIFFERS", "CANNOT", "COMPUTED"]


def quoted_data() -> dict:
    """The quoted numbers and seed inputs (``laissez_opt/reproduce/data/quoted.json``)."""
    text = resources.files(__package__).joinpath("data", "quoted.json").read_text(encoding="utf-8")
    return json.loads(text)


def _lookup(quoted: dict, key: str):
    """``key``, or ``full.key`` (a full-run row of a live claim), or ``key[k]`` (entry ``k`` of a quoted list)."""
    if key.endswith("]") and "[" in key:
        base, index = key[:-1].split("[", 1)
        value = _lookup(quoted, base)
        return value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
    if key in quoted:
        return quoted[key]
    if key.startswith("full.") and key[5:] in quoted:
        return quoted[key[5:]]
    return None


def settle(item: Item, quoted: dict) -> Item:
    """Fill every row's quoted value (from ``quoted[item.id]["quoted"]``) and verdict."""
    table = quoted.get(item.id, {}).get("quoted", {})
    for row in item.rows:
        row.settle(_lookup(table, row.quote or row.key))
    return item


def _select(items) -> list[str]:
    if items is None or items == "all":
        return list(ITEMS)
    if isinstance(items, str):
        items = [items]
    chosen = []
    for name in items:
        key = str(name).upper()
        if key == "ALL":
            return list(ITEMS)
        if key not in ITEMS:
            raise InputError(f"unknown item {name!r}; choose from {', '.join(ITEMS)} or all", path="items")
        if key not in chosen:
            chosen.append(key)
    return chosen


def reproduce(items: str | Iterable[str] = "all", *, out=None, root=None, r5_seeds: int = 3, r5_rounds: int = 60,
              progress: Callable[[str], None] | None = None) -> ReproduceReport:
    """Run the chosen reproductions; see the module docstring."""
    chosen = _select(items)
    for value, name, least in ((r5_seeds, "--r5-seeds", 2), (r5_rounds, "--r5-rounds", 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InputError(f"must be an integer >= {least}, got {value!r}", path=name)
    if out is not None:
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise InputError("is not a directory", source=str(out), path="-o")
    ctx = Context(root=Path(root) if root is not None else ROOT, quoted=quoted_data(), r5_seeds=r5_seeds,
                  r5_rounds=r5_rounds, tick=progress or (lambda text: None))
    done = []
    for name in chosen:
        ctx.tick(name)
        start = time.perf_counter()
        try:
            item = ITEMS[name](ctx)
        except InputError:
            raise
        except Exception as err:  # the library failed on this item: reported, and the exit code says so
            item = Item(name, "failed", ctx.quoted.get(name, {}).get("source", ""),
                        error=f"{type(err).__name__}: {err}")
        item.seconds = time.perf_counter() - start
        done.append(settle(item, ctx.quoted))
    report = ReproduceReport(done)
    if out is not None:
        report.write(out)
    return report
