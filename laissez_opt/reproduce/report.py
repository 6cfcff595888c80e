"""Rows, items and the reproduction report: verdicts, terminal table, JSON and Markdown.

A row holds one quoted number of a seed (``quoted``), the value the library computes
(``computed``) and the verdict :func:`judge` gives them:

* ``reproduces``: a number agrees to the digits the seed prints (``|c - q|`` at most half
  a unit of the quote's last digit); an interval (``{"mean", "low", "high"}``, from
  several seeds) contains the quote; a list, a flag or a name is equal; a set of
  acceptable values (``{"any_of": [...]}``, e.g. the orders that ties allow) holds it;
* ``differs``: it does not, and ``note`` gives the arithmetic;
* ``cannot be computed``: ``computed`` is ``None`` and ``note`` says why;
* ``computed``: nothing is quoted, the row shows a value the item adds (an optimum).

Verdicts are pure functions of ``quoted`` and ``computed``, so a changed quote changes the
verdict without recomputing (the tests perturb every quote this way).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = ["REPRODUCES", "DIFFERS", "CANNOT", "COMPUTED", "Row", "Item", "ReproduceReport", "judge", "fmt"]

REPRODUCES, DIFFERS, CANNOT, COMPUTED = "reproduces", "differs", "cannot be computed", "computed"
VERDICTS = (REPRODUCES, DIFFERS, CANNOT, COMPUTED)


def _decimals(value: float) -> int:
    """Digits after the point as the quote prints them (``3.35`` -> 2, ``150`` -> 0)."""
    exponent = Decimal(repr(value)).as_tuple().exponent
    return max(0, -int(exponent))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _close(quoted: float, computed: float) -> bool:
    half = 0.5 * 10.0 ** (-_decimals(quoted))
    return abs(float(computed) - float(quoted)) <= half * (1 + 1e-9) + 1e-12


def fmt(value, digits: int = 4) -> str:
    """A value for a table cell: numbers to ``digits`` significant places, intervals as mean [low, high]."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_number(value):
        if not math.isfinite(value):
            return str(value)
        if float(value).is_integer() and abs(value) < 1e12:
            return str(int(value))
        return f"{value:.{digits}g}"
    if isinstance(value, dict) and "mean" in value:
        return f"{fmt(value['mean'])} [{fmt(value['low'])}, {fmt(value['high'])}] (n={value.get('n', '?')})"
    if isinstance(value, dict) and "any_of" in value:
        return " or ".join(fmt(v) for v in value["any_of"])
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def judge(quoted, computed) -> str:
    """The verdict of one row (see the module docstring)."""
    if quoted is None:
        return CANNOT if computed is None else COMPUTED
    if computed is None:
        return CANNOT
    if isinstance(computed, dict) and "any_of" in computed:
        return REPRODUCES if any(judge(quoted, c) == REPRODUCES for c in computed["any_of"]) else DIFFERS
    if isinstance(computed, dict) and "mean" in computed:
        if not _is_number(quoted):
            return DIFFERS
        low, high = computed["low"], computed["high"]
        return REPRODUCES if math.isfinite(low) and low <= quoted <= high else DIFFERS
    if isinstance(quoted, bool) or isinstance(computed, bool) or isinstance(quoted, str):
        return REPRODUCES if quoted == computed else DIFFERS
    if _is_number(quoted) and _is_number(computed):
        return REPRODUCES if _close(quoted, computed) else DIFFERS
    if isinstance(quoted, dict) and isinstance(computed, dict):
        if set(quoted) != set(computed):
            return DIFFERS
        return REPRODUCES if all(judge(quoted[k], computed[k]) == REPRODUCES for k in quoted) else DIFFERS
    if isinstance(quoted, (list, tuple)) and isinstance(computed, (list, tuple)):
        if len(quoted) != len(computed):
            return DIFFERS
        return REPRODUCES if all(judge(q, c) == REPRODUCES for q, c in zip(quoted, computed)) else DIFFERS
    return REPRODUCES if quoted == computed else DIFFERS


@dataclass
class Row:
    """One quoted number: ``key`` (its name in the quoted data), a label, the values and the verdict."""

    key: str
    label: str
    computed: Any
    quoted: Any = None
    note: str = ""          # the arithmetic (always shown for ``differs``) or why it cannot be computed
    verdict: str = ""
    quote: str | None = None  # the quoted number's name when it is not ``key`` (one fact checked twice)

    def settle(self, quoted) -> "Row":
        self.quoted = quoted
        self.verdict = judge(quoted, self.computed)
        c = self.computed
        if self.verdict == DIFFERS and isinstance(c, dict) and "mean" in c and _is_number(quoted):
            gap = f"the quote {fmt(quoted)} lies outside the 95% interval [{fmt(c['low'])}, {fmt(c['high'])}] " \
                  f"(mean {fmt(c['mean'])}, {c.get('n', '?')} seeds)"
            if gap not in self.note:
                self.note = f"{self.note}; {gap}" if self.note else gap
        return self

    def to_dict(self) -> dict:
        return {"key": self.key, "label": self.label, "quoted": self.quoted, "computed": self.computed,
                "verdict": self.verdict, "note": self.note}


@dataclass
class Item:
    """One reproduction (R1..R5): its rows, the files and commands it ran, and findings in prose."""

    id: str
    title: str
    source: str = ""
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None   # the library failed on this item (an internal error, never a seed's mismatch)
    #: Files the item's commands read that no checkout holds (e.g. result files of a paper's table): name -> text.
    artifacts: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for row in self.rows:
            out[row.verdict] += 1
        return out

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "source": self.source, "files": self.files,
                "commands": self.commands, "counts": self.counts(), "rows": [r.to_dict() for r in self.rows],
                "notes": self.notes, "seconds": round(self.seconds, 3), "error": self.error}


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


@dataclass
class ReproduceReport:
    """What ``lo.reproduce`` returns: the items in order; ``ok`` is false only if the library failed."""

    items: list[Item]

    @property
    def ok(self) -> bool:
        return all(item.error is None for item in self.items)

    def counts(self) -> dict[str, dict[str, int]]:
        return {item.id: item.counts() for item in self.items}

    def item(self, item_id: str) -> Item:
        return next(i for i in self.items if i.id == item_id)

    def to_dict(self) -> dict:
        return {"format": "laissez-opt/reproduce", "version": 1, "ok": self.ok,
                "counts": self.counts(), "items": [i.to_dict() for i in self.items]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=float, allow_nan=False) + "\n"

    def to_frame(self):
        """One row per quoted number (pandas)."""
        import pandas as pd

        return pd.DataFrame([{"item": i.id, **r.to_dict()} for i in self.items for r in i.rows])

    def markdown(self) -> str:
        lines = ["# Reproduction of the seeds' worked examples", "",
                 "Every quoted number beside the value `laissez-opt` computes from the instance files; "
                 "regenerate with `laissez-opt reproduce all -o DIR`.", "",
                 "| item | reproduces | differs | cannot be computed | computed (not quoted) |",
                 "| --- | --- | --- | --- | --- |"]
        for item in self.items:
            c = item.counts()
            lines.append(f"| {item.id} | {c[REPRODUCES]} | {c[DIFFERS]} | {c[CANNOT]} | {c[COMPUTED]} |")
        for item in self.items:
            lines += ["", f"## {item.id}: {item.title}", "", f"Source: {item.source}.", ""]
            if item.error:
                lines += [f"**The library failed on this item**: {item.error}", ""]
            if item.files:
                lines.append("Files: " + ", ".join(f"`{f}`" for f in item.files) + ".")
            if item.commands:
                lines += ["", "Commands:", "", "```sh", *item.commands, "```"]
            lines += ["", "| quantity | quoted | computed | verdict | arithmetic / why |", "| --- | --- | --- | --- | --- |"]
            for r in item.rows:
                lines.append(f"| {_md_cell(r.label)} | {_md_cell(fmt(r.quoted))} | {_md_cell(fmt(r.computed))} | "
                             f"{r.verdict} | {_md_cell(r.note)} |")
            if item.notes:
                lines += ["", *[f"- {n}" for n in item.notes]]
            lines += ["", f"({item.seconds:.1f} s)"]
        return "\n".join(lines) + "\n"

    def table(self, width: int | None = None) -> str:
        """The terminal table: one line per quoted number, the arithmetic under each difference (wrapped)."""
        import shutil
        import textwrap

        width = width or shutil.get_terminal_size((100, 24)).columns
        out = []
        for item in self.items:
            c = item.counts()
            out.append(f"{item.id}  {item.title}  ({c[REPRODUCES]} reproduce, {c[DIFFERS]} differ, "
                       f"{c[CANNOT]} cannot be computed; {item.seconds:.1f} s)")
            if item.error:
                out.append(f"  LIBRARY ERROR: {item.error}")
            label_w = min(60, max([len(r.label) for r in item.rows] + [8]))
            for r in item.rows:
                out.append(f"  {r.label[:label_w]:<{label_w}}  {fmt(r.quoted)[:22]:>22}  "
                           f"{fmt(r.computed)[:30]:>30}  {r.verdict}")
                if r.verdict in (DIFFERS, CANNOT) and r.note:
                    out += textwrap.wrap(r.note, width=max(40, width - 6), initial_indent="      ",
                                         subsequent_indent="      ")
            out.append("")
        return "\n".join(out)

    def write(self, directory) -> list:
        """``DIR/REPORT.md``, ``DIR/reproduce.json`` and each item's files (``DIR/R2/...``), written atomically."""
        from pathlib import Path

        from ..io.jsonfile import make_output_dir, write_atomic

        directory = Path(directory)
        make_output_dir(directory)
        paths = []
        for item in self.items:
            for name, text in item.artifacts.items():
                make_output_dir(directory / item.id)
                paths.append(directory / item.id / name)
                write_atomic(paths[-1], text)
        paths += [directory / "REPORT.md", directory / "reproduce.json"]
        write_atomic(paths[-2], self.markdown())
        write_atomic(paths[-1], self.to_json())
        return paths

    def _repr_markdown_(self) -> str:
        return self.markdown()
