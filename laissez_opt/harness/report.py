"""Comparison outputs: CSV, a Markdown table and PNG plots (gap and runtime against size)."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

from ..io.jsonfile import write_atomic
from .compare import Comparison

__all__ = ["write_reports", "markdown_table"]


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


def markdown_table(table: Comparison) -> str:
    """One row per instance and method: status, objective, gaps, runtime, fairness."""
    gaps = [f"gap_{o}" for o in table.objectives]
    columns = ["instance", "agents", "pools", "method", "kind", "status", "objective", *gaps,
               "runtime_s", "min_phi", "sharing_incentive", "max_envy", "pareto_efficient", "jain", "verified"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in table.rows:
        if row.get("reference_only"):
            continue
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    note = (
        f"\n{len(table.rows)} runs ({table.computed} computed, {table.reused} reused from the store). "
        "Gaps are relative to the exact optimum of each objective (to its proven bound when the "
        "exact solve hit its time limit); blank where no reference is proven.\n"
    )
    errors = [row for row in table.rows if row.get("status") == "error"]
    if errors:
        note += "\nRuns that failed (not stored; the next comparison on this store retries them):\n\n"
        note += "".join(f"- {_cell(row.get('instance'))}, {_cell(row.get('method'))}: {_one_line(row.get('message'))}\n"
                        for row in errors)
    return "\n".join(lines) + "\n" + note


def _one_line(text) -> str:
    return " ".join(str(text or "no reason given").split())


def _plot(table: Comparison, column: str, ylabel: str, path: Path, log: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
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
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_atomic(path, buffer.getvalue())


def write_reports(table: Comparison, directory: str | os.PathLike, *, plots: bool = True) -> list[Path]:
    """Write ``results.csv``, ``results.md`` and (with matplotlib) ``gap_*.png`` and ``runtime.png``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    columns = table.columns()
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in table.rows:
        writer.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in columns})
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
