"""``laissez-opt compare``: every method on every instance, with gaps and runtimes."""

from __future__ import annotations

import click

from ..errors import InputError, RunsFailedError
from .params import parse_scoped_params


@click.command("compare")
@click.argument("instances", nargs=-1, required=True, type=str)
@click.option("--methods", "methods_", required=True, help="Comma-separated method names.")
@click.option("--solver", default=None, help="Solver for the exact methods (default: each method's own default route, as `solve` takes it).")
@click.option("--time-limit", type=float, default=120.0, show_default=True, help="Seconds per exact solve; a solve that hits it reports its bound, and gaps are taken against that bound.")
@click.option("--fractional", is_flag=True, help="Fractional mode where a method supports it.")
@click.option("--workers", type=int, default=None, help="Parallel workers (default: CPU count).")
@click.option("--executor", type=click.Choice(["local", "inline", "dask"]), default="local", show_default=True, help="local: supervised worker processes; inline: this process (no caps); dask: a Dask cluster.")
@click.option("--scheduler", default=None, help="Dask scheduler address (default: start a local cluster).")
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=str), default="compare-results", show_default=True, help="Output directory (CSV, Markdown, plots, run store).")
@click.option("--store", type=click.Path(file_okay=False, path_type=str), default=None, help="Run store directory (default: OUTPUT/runs); finished runs are reused.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--objectives", default=None, help="Comma-separated objectives (default: weighted_welfare plus those whose exact reference method is listed).")
@click.option("--param", "-p", "method_params", multiple=True, help="Method option METHOD.KEY=VALUE (repeatable), e.g. -p mtf.tokens=7.")
@click.option("--pareto", is_flag=True, help="Also run the exact Pareto check on every allocation (slower).")
@click.option("--run-memory", default="auto", show_default=True, help="Memory cap per run, e.g. 2G or 512MiB; auto: 80% of physical memory / workers; none: no cap.")
@click.option("--run-time", default="auto", show_default=True, help="Wall-clock cap per run in seconds; auto: 2 x --time-limit + 60; none: no cap.")
def compare_command(instances, methods_, solver, time_limit, fractional, workers, executor, scheduler, out, store, no_plots, objectives, method_params, pareto, run_memory, run_time):
    """Run every method on every INSTANCE: objectives, gaps to the exact optimum, runtimes."""
    import os
    import warnings
    from pathlib import Path

    from ..harness import RunStoreWarning, compare, write_reports

    names = [m.strip() for m in methods_.split(",") if m.strip()]
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"must be > 0 seconds, got {time_limit}", path="--time-limit")
    if workers is not None and workers < 1:
        raise InputError(f"must be >= 1, got {workers}", path="--workers")
    _check_output_dir(Path(out), "--output")
    if store:
        _check_output_dir(Path(store), "--store")
    options = parse_scoped_params(method_params, "METHOD")
    warnings.showwarning = _one_line_warning
    warnings.simplefilter("always", RunStoreWarning)
    table = compare(
        instances, names, solver=solver, time_limit=time_limit, fractional=fractional,
        workers=workers or os.cpu_count() or 1, executor=executor, scheduler=scheduler,
        store=store or Path(out) / "runs", method_options=options, pareto=pareto,
        run_memory=run_memory, run_time=run_time,
        objectives=[o.strip() for o in objectives.split(",") if o.strip()] if objectives else None,
    )
    written = write_reports(table, out, plots=not no_plots)
    from .render import comparison_table

    comparison_table(table)
    failed = sum(1 for row in table.rows if row.get("status") == "error")
    failures = f", {failed} failed (error rows, retried next time)" if failed else ""
    click.echo(f"{table.computed} runs computed, {table.reused} reused{failures}; wrote {', '.join(str(p) for p in written)}", err=True)
    if failed:
        raise RunsFailedError(f"{failed} of {len(table.rows)} runs failed; their reasons are listed under the table")


def _check_output_dir(path, option: str) -> None:
    """Refuse, before any run, a directory that cannot be created or written (nothing is created here)."""
    import os

    if path.exists():
        if not path.is_dir():
            raise InputError("exists and is not a directory", source=str(path), path=option)
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError("directory is not writable", source=str(path), path=option)
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot be created: {parent} is not a writable directory", source=str(path), path=option)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    click.echo(f"laissez-opt: warning: {message}", err=True)
