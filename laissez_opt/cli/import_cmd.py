"""``laissez-opt import``: Gavel, Philly and Alibaba PAI files into an instance and a simulation configuration."""

from __future__ import annotations

import click

from ..errors import InputError

FORMAT_NAMES = ("gavel-throughputs", "gavel-trace", "philly", "alibaba-pai")


def _table(text: str | None, option: str, integer: bool) -> dict | None:
    """``"v100=4,k80=2"`` -> ``{"v100": 4, "k80": 2}``."""
    if text is None:
        return None
    table = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected TYPE=VALUE[,TYPE=VALUE...], got {item!r}", path=option)
        try:
            table[key.strip()] = int(value) if integer else float(value)
        except ValueError:
            raise InputError(f"{key.strip()}: expected {'an integer' if integer else 'a number'}, got {value!r}",
                             path=option) from None
    return table


@click.command("import")
@click.argument("format_", metavar="FORMAT", type=click.Choice(FORMAT_NAMES))
@click.argument("file", type=click.Path(path_type=str))
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Output directory: instance.json, and simulation.json for a trace.")
@click.option("--throughputs", type=click.Path(path_type=str), default=None,
              help="gavel-trace: the Gavel throughput file giving each job type's speed on each worker type.")
@click.option("--jobs-table", type=click.Path(path_type=str), default=None,
              help="alibaba-pai: pai_job_table.csv, so that agents are users (default: the GPU types asked for).")
@click.option("--gpus", default=None, help="Pool sizes TYPE=N[,TYPE=N...] (default: traces: the most in use at once; Gavel throughputs: 1).")
@click.option("--speed", default=None, help="alibaba-pai: relative speed TYPE=X[,...] of each GPU type (default 1).")
@click.option("--gpu-type", default=None, help="philly: the pool's name (the trace records no GPU model; default gpu).")
@click.option("--round-hours", type=float, default=None, help="Length of a round in hours (default 1).")
@click.option("--limit", type=int, default=None, help="Traces: import only the first N jobs by submission time.")
def import_command(format_, file, out, throughputs, jobs_table, gpus, speed, gpu_type, round_hours, limit):
    """Read FILE in FORMAT (Gavel throughputs or trace, Philly job log, Alibaba PAI task table) into OUTPUT."""
    from ..io.importers import import_data

    if round_hours is not None and not round_hours > 0:
        raise InputError(f"must be > 0, got {round_hours}", path="--round-hours")
    if limit is not None and limit < 1:
        raise InputError(f"must be >= 1, got {limit}", path="--limit")
    given = {"throughputs": throughputs, "jobs_table": jobs_table, "gpus": _table(gpus, "--gpus", True),
             "speed": _table(speed, "--speed", False), "gpu_type": gpu_type, "round_hours": round_hours,
             "limit": limit}
    options = {k: v for k, v in given.items() if v is not None}
    if format_ == "gavel-trace" and "throughputs" not in options:
        raise InputError("gavel-trace needs the throughput file (--throughputs FILE)", path="--throughputs")
    try:
        imported = import_data(format_, file, **options)
    except InputError as err:
        if err.path in given:  # name the command-line option
            err.path = "--" + err.path.replace("_", "-")
        raise
    written = imported.write(out)
    for note in imported.notes:
        click.echo(f"laissez-opt: note: {note}", err=True)
    inst = imported.instance
    click.echo(f"{inst.name}: {inst.n_agents} agents, {inst.n_pools} pools, {inst.n_edges} edges, "
               f"{inst.rounds} rounds, {imported.jobs} jobs imported ({imported.skipped} skipped); "
               f"wrote {', '.join(str(p) for p in written)}")
