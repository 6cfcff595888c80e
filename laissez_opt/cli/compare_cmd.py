"""``laissez-opt compare``: every method on every instance, with gaps and runtimes."""

from __future__ import annotations

import json

import click

from ..errors import InputError


@click.command("compare")
@click.argument("instances", nargs=-1, required=True, type=str)
@click.option("--methods", "methods_", required=True, help="Comma-separated method names.")
@click.option("--solver", default="highs", show_default=True, help="Solver for the exact methods.")
@click.option("--time-limit", type=float, default=120.0, show_default=True, help="Seconds per exact solve; a solve that hits it reports its bound, and gaps are taken against that bound.")
@click.option("--fractional", is_flag=True, help="Fractional mode where a method supports it.")
@click.option("--workers", type=int, default=None, help="Parallel workers (default: CPU count).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", default=None, help="Dask scheduler address (default: start a local cluster).")
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=str), default="compare-results", show_default=True, help="Output directory (CSV, Markdown, plots, run store).")
@click.option("--store", type=click.Path(file_okay=False, path_type=str), default=None, help="Run store directory (default: OUTPUT/runs); finished runs are reused.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--objectives", default=None, help="Comma-separated objectives (default: weighted_welfare plus those whose exact reference method is listed).")
@click.option("--param", "-p", "method_params", multiple=True, help="Method option METHOD.KEY=VALUE (repeatable), e.g. -p mtf.tokens=7.")
@click.option("--pareto", is_flag=True, help="Also run the exact Pareto check on every allocation (slower).")
def compare_command(instances, methods_, solver, time_limit, fractional, workers, executor, scheduler, out, store, no_plots, objectives, method_params, pareto):
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
    options: dict[str, dict] = {}
    for item in method_params:
        key, sep, raw = item.partition("=")
        method, dot, name = key.partition(".")
        if not sep or not dot or not method or not name:
            raise InputError(f"expected METHOD.KEY=VALUE, got {item!r}", path="--param")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        options.setdefault(method, {})[name] = value
    table = compare(
        instances, names, solver=solver, time_limit=time_limit, fractional=fractional,
        workers=workers or os.cpu_count() or 1, executor=executor, scheduler=scheduler,
        store=store or Path(out) / "runs", method_options=options, pareto=pareto,
        objectives=[o.strip() for o in objectives.split(",") if o.strip()] if objectives else None,
    )
    written = write_reports(table, out, plots=not no_plots)
    from .render import comparison_table

    comparison_table(table)
    click.echo(f"{table.computed} runs computed, {table.reused} reused; wrote {', '.join(str(p) for p in written)}", err=True)
