"""``laissez-opt frontier INSTANCE``: the exact welfare / max-min frontier, the fair optima and the methods on it.

Writes ``frontier.json``, ``frontier.md``, ``frontier.csv`` (the breakpoints)
and ``frontier.png`` to the output directory, each atomically, and prints the
tables.  Exit codes: 0 done; 2 bad input; 1 an internal error.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import click

from ..errors import InputError
from ..io.jsonfile import make_output_dir


def _csv(report) -> str:
    lines = ["level,welfare,level_exact,welfare_exact"]
    for row in report.frontier.to_dict()["breakpoints"]:
        lines.append(f"{row['level_float']!r},{row['welfare_float']!r},{row['level']},{row['welfare']}")
    return "\n".join(lines) + "\n"


def _png(report) -> bytes:
    buffer = io.BytesIO()
    report.figure().savefig(buffer, format="png", dpi=130)
    return buffer.getvalue()


@click.command("frontier")
@click.argument("instance", type=str)
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=str), default="frontier-results",
              show_default=True, help="Output directory (JSON, Markdown, CSV of the breakpoints, PNG plot).")
@click.option("--methods", "methods_", default=None,
              help="Comma-separated methods to place (NAME or NAME:fractional; default: every heuristic and the "
                   "exact allocation models).")
@click.option("--normalizer", type=click.Choice(["equal_share", "raw"]), default="equal_share", show_default=True,
              help="Max-min level: min phi_i (equal_share) or min U_i / w_i (raw).")
@click.option("--max-lps", type=int, default=400, show_default=True,
              help="Most exact LPs spent on breakpoints; fewer leaves the curve marked incomplete.")
@click.option("--no-integral", is_flag=True, help="Skip the whole-device (MILP) fair optima.")
@click.option("--no-plot", is_flag=True, help="Do not write frontier.png.")
@click.option("--time-limit", type=float, default=60.0, show_default=True,
              help="Seconds per method run and per fair-optimum MILP.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of tables.")
def frontier_command(instance, out, methods_, normalizer, max_lps, no_integral, no_plot, time_limit, as_json):
    """The exact trade-off between weighted welfare and the max-min level on INSTANCE, methods placed on it."""
    from ..api import check_time_limit, frontier
    from ..io import check_destination, write_atomic

    check_time_limit(time_limit, "--time-limit")
    if max_lps < 2:
        raise InputError(f"must be an integer >= 2, got {max_lps}", path="--max-lps")
    names = None if methods_ is None else [m.strip() for m in methods_.split(",") if m.strip()]
    if names is not None and not names:
        raise InputError("name at least one method", path="--methods")
    directory = Path(out)
    targets = {name: directory / name for name in ("frontier.json", "frontier.md", "frontier.csv", "frontier.png")}
    if no_plot:
        targets.pop("frontier.png")
    if directory.exists() and not directory.is_dir():
        raise InputError("exists and is not a directory", path=str(directory))
    make_output_dir(directory)
    for target in targets.values():
        check_destination(target, inputs=(instance,))
    try:
        report = frontier(instance, methods=names, normalizer=normalizer, max_lps=max_lps, integral=not no_integral,
                          time_limit=time_limit)
    except InputError as err:
        if err.path in ("methods", "method"):
            err.path = "--methods"
        raise
    write_atomic(targets["frontier.json"], json.dumps(report.to_dict(), indent=2) + "\n")
    text = report.markdown()
    write_atomic(targets["frontier.md"], text)
    write_atomic(targets["frontier.csv"], _csv(report))
    if "frontier.png" in targets:
        write_atomic(targets["frontier.png"], _png(report))
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(text, nl=False)
    click.echo(f"wrote {', '.join(str(p) for p in targets.values())}", err=True)
