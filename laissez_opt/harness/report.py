"""Comparison outputs: CSV, a Markdown table and PNG plots (gap and runtime against size); notebook views.

The table shows each objective of the comparison in its own column (its
value on every method's allocation, then the gap to its exact optimum), so
numbers of different units never share a column; the legend under the table
says what each objective is.  Files are drawn on figures made without pyplot
(no backend is chosen, none is switched); :func:`plot_comparison` draws on the
caller's axes or on new pyplot axes, with the user's backend.

>>> import laissez_opt as lo
>>> table = lo.compare(["instances/hotos25-table1.json"], ["welfare", "greedy"], progress=False)
>>> table                                     # doctest: +ELLIPSIS
<Comparison of 2 methods on 1 instance: 2 runs (0 failed), objectives weighted_welfare>
>>> print(markdown_table(table).splitlines()[0])
| instance | agents | pools | method | kind | status | weighted_welfare | gap_weighted_welfare | runtime_s | min_phi | sharing_incentive | max_envy | pareto_efficient | jain | verified |
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

from ..display import axes as new_axes, figure, html_block, html_table, readable
from ..io.jsonfile import make_output_dir, write_atomic
from .compare import OBJECTIVES, Comparison

__all__ = ["write_reports", "markdown_table", "plot_comparison", "comparison_repr", "comparison_html"]

FAIRNESS_COLUMNS = ["runtime_s", "min_phi", "sharing_incentive", "max_envy", "pareto_efficient", "jain", "verified"]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.4g}"
    return str(value)


def _table_columns(table: Comparison) -> tuple[list[str], list[str]]:
    """(row keys, headers): each objective's value in a column named after it, then its gap."""
    keys = ["instance", "agents", "pools", "method", "kind", "status"]
    headers = list(keys)
    for name in table.objectives:
        keys += [f"value_{name}", f"gap_{name}"]
        headers += [name, f"gap_{name}"]
    rest = [c for c in FAIRNESS_COLUMNS if c not in table.objectives]  # an objective already has its column
    return keys + rest, headers + rest


def _legend(table: Comparison) -> str:
    return "".join(f"- `{name}`: {OBJECTIVES[name].description}\n" for name in table.objectives if name in OBJECTIVES)


def markdown_table(table: Comparison) -> str:
    """One row per instance and method: status, each objective's value and gap, runtime, fairness."""
    keys, headers = _table_columns(table)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in table.rows:
        if row.get("reference_only"):
            continue
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in keys) + " |")
    note = (
        f"\n{len(table.rows)} runs ({table.computed} computed, {table.reused} reused from the store). "
        "Each objective is evaluated on every method's allocation; gaps are relative to the exact optimum of "
        "that objective (to its proven bound when the exact solve hit its time limit); blank where no "
        "reference is proven.\n\n" + _legend(table)
    )
    errors = [row for row in table.rows if row.get("status") == "error"]
    if errors:
        note += "\nRuns that failed (not stored; the next comparison on this store retries them):\n\n"
        note += "".join(f"- {_cell(row.get('instance'))}, {_cell(row.get('method'))}: {_one_line(row.get('message'))}\n"
                        for row in errors)
    return "\n".join(lines) + "\n" + note


def comparison_repr(table: Comparison) -> str:
    """``<Comparison of M methods on N instances: R runs (F failed), objectives ...>``."""
    instances = len({row.get("instance_hash", row.get("instance")) for row in table.rows})
    failed = sum(1 for row in table.rows if row.get("status") == "error")
    return (f"<Comparison of {len(table.methods)} method{'s' * (len(table.methods) != 1)} on {instances} "
            f"instance{'s' * (instances != 1)}: {len(table.rows)} runs ({failed} failed), "
            f"objectives {', '.join(table.objectives)}>")


def comparison_html(table: Comparison, max_rows: int = 30) -> str:
    """The notebook view: the comparison's table (first ``max_rows`` rows) and the objectives' legend."""
    keys, headers = _table_columns(table)
    rows = [[row.get(c) for c in keys] for row in table.rows if not row.get("reference_only")]
    shown = rows[:max_rows]
    caption = f"first {len(shown)} of {len(rows)} rows" if len(rows) > max_rows else None
    legend = [(name, OBJECTIVES[name].description) for name in table.objectives if name in OBJECTIVES]
    return html_block(comparison_repr(table).strip("<>"), legend, [html_table(headers, shown, caption=caption)])


def plot_comparison(table: Comparison, what: str = "gap", *, objective: str | None = None, ax=None):
    """Draw each method's gap in ``objective`` (``what="gap"``) or its runtime (``"runtime"``) against size.

    Size is ``agents x pools``; one line per method, log scale on the size
    axis (and on runtime).  Returns the axes.

    >>> import laissez_opt as lo, matplotlib.pyplot as plt
    >>> table = lo.compare(["instances/hotos25-table1.json"], ["welfare", "greedy"], progress=False)
    >>> ax = table.plot("runtime"); ax.get_ylabel()
    'runtime (s)'
    >>> plt.close(ax.figure)
    """
    if what == "runtime":
        column, label, log = "runtime_s", "runtime (s)", True
    elif what == "gap":
        name = objective or table.objectives[0]
        if name not in table.objectives:
            raise ValueError(f"objective {name!r} is not in this comparison ({', '.join(table.objectives)})")
        column, label, log = f"gap_{name}", f"gap in {name}", False
    else:
        raise ValueError(f"unknown plot {what!r}: gap or runtime")
    return _draw(table, column, label, log, new_axes(ax))


def _one_line(text) -> str:
    return " ".join(str(text or "no reason given").split())


def _plot(table: Comparison, column: str, ylabel: str, path: Path, log: bool) -> None:
    # A figure of its own, without pyplot: writing a report never touches the user's backend.
    fig = figure()
    _draw(table, column, ylabel, log, fig.add_subplot())
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    write_atomic(path, buffer.getvalue())


def _draw(table: Comparison, column: str, ylabel: str, log: bool, ax):
    for method in table.methods:
        points = sorted(
            (r["agents"] * r["pools"], r[column])
            for r in table.rows
            if r["method"] == method and isinstance(r.get(column), (int, float)) and math.isfinite(r[column])
        )
        if points:
            xs, ys = zip(*points)
            if log:
                ys = [max(y, 1e-6) for y in ys]
            ax.plot(xs, ys, marker="o", label=method)
    ax.set_xscale("log")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("instance size (agents x pools)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if ax.lines:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    return ax


def write_reports(table: Comparison, directory: str | os.PathLike, *, plots: bool = True) -> list[Path]:
    """Write ``results.csv``, ``results.md`` and (with matplotlib) ``gap_*.png`` and ``runtime.png``."""
    out = Path(directory)
    make_output_dir(out)
    columns = table.columns()
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in table.rows:
        writer.writerow({c: ("" if row.get(c) is None else readable(row.get(c))) for c in columns})
    written = [out / "results.csv", out / "results.md"]
    write_atomic(written[0], buffer.getvalue())
    write_atomic(written[1], markdown_table(table))
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return written
        _plot(table, "runtime_s", "runtime (s)", out / "runtime.png", log=True)
        written.append(out / "runtime.png")
        for name in table.objectives:
            _plot(table, f"gap_{name}", f"gap in {name}", out / f"gap_{name}.png", log=False)
            written.append(out / f"gap_{name}.png")
    return written
