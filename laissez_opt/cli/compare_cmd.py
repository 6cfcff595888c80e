"""``laissez-opt compare``: every method on every instance, with gaps and runtimes."""

from __future__ import annotations

import click

from ..errors import InputError


@click.command("compare")
@click.argument("instances", nargs=-1, required=True, type=str)
@click.option("--methods", "methods_", required=True, help="Comma-separated method names.")
@click.option("--solver", default="highs", show_default=True, help="Solver for the exact methods.")
@click.option("--time-limit", type=float, default=None, help="Seconds per exact solve.")
@click.option("--fractional", is_flag=True, help="Fractional mode where a method supports it.")
@click.option("--workers", type=int, default=None, help="Parallel workers (default: CPU count).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", default=None, help="Dask scheduler address (default: start a local cluster).")
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=str), default="compare-results", show_default=True, help="Output directory (CSV, Markdown, plots, run store).")
@click.option("--store", type=click.Path(file_okay=False, path_type=str), default=None, help="Run store directory (default: OUTPUT/runs); finished runs are reused.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
def compare_command(instances, methods_, solver, time_limit, fractional, workers, executor, scheduler, out, store, no_plots):
    """Run every method on every INSTANCE: objectives, gaps to the exact optimum, runtimes."""
    import os
    from pathlib import Path

    from ..harness import compare, write_reports

    names = [m.strip() for m in methods_.split(",") if m.strip()]
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"must be > 0 seconds, got {time_limit}", path="--time-limit")
    if workers is not None and workers < 1:
        raise InputError(f"must be >= 1, got {workers}", path="--workers")
    Path(out).mkdir(parents=True, exist_ok=True)
    table = compare(
        instances, names, solver=solver, time_limit=time_limit, fractional=fractional,
        workers=workers or os.cpu_count() or 1, executor=executor, scheduler=scheduler,
        store=store or Path(out) / "runs",
    )
    written = write_reports(table, out, plots=not no_plots)
    from .render import comparison_table

    comparison_table(table)
    click.echo(f"{table.computed} runs computed, {table.reused} reused; wrote {', '.join(str(p) for p in written)}", err=True)
