"""``laissez-opt simulate``: a multi-round simulation of every policy on every seed."""

from __future__ import annotations

import json

import click

from ..errors import InputError
from ..io.jsonfile import make_output_dir
from .params import parse_scoped_params


def _positive(value, option: str):
    if value is not None and value < 1:
        raise InputError(f"must be >= 1, got {value}", path=option)


@click.command("simulate")
@click.argument("config", required=False, type=str)
@click.option("--preset", default=None, help="A named configuration (see --list-presets) instead of CONFIG.")
@click.option("--list-presets", is_flag=True, help="List the named configurations and exit.")
@click.option("--list-policies", is_flag=True, help="List the policies beside the methods (market, min_backlog, ...) with their options, and exit.")
@click.option("--policies", "policies_", default=None, help="Comma-separated policy labels or names (default: the configuration's).")
@click.option("--rounds", type=int, default=None, help="Rounds to simulate (default: the configuration's).")
@click.option("--seeds", type=int, default=None, help="Run seeds 0..K-1 (default: the configuration's).")
@click.option("--workers", type=int, default=None, help="Parallel worker processes (default: CPU count).")
@click.option("--executor", type=click.Choice(["local", "inline", "dask"]), default=None,
              help="local: supervised worker processes; inline: this process; dask: a cluster "
                   "(default: inline with one worker, local with more).")
@click.option("--scheduler", default=None, help="Dask scheduler address (default: start a local cluster).")
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=str), default="simulate-results", show_default=True, help="Output directory (CSV, Markdown, JSON, plots, run store).")
@click.option("--store", type=click.Path(file_okay=False, path_type=str), default=None, help="Run store directory (default: OUTPUT/runs); finished runs are reused.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--param", "-p", "policy_params", multiple=True, help="A policy option POLICY.KEY=VALUE (repeatable), e.g. -p mtf.tokens=400.")
def simulate_command(config, preset, list_presets, list_policies, policies_, rounds, seeds, workers, executor, scheduler, out, store, no_plots, policy_params):
    """Simulate the policies of CONFIG (or --preset) over rounds with queues, arrivals and deadlines."""
    import os
    from pathlib import Path

    from ..simulate import PRESETS, simulate

    if list_policies:
        if config or preset:
            raise InputError("--list-policies takes no configuration", path="--list-policies")
        _list_policies()
        return
    if list_presets:
        if config or preset:
            raise InputError("--list-presets takes no configuration", path="--list-presets")
        width = max(len(name) for name in PRESETS)
        for name, text in sorted(PRESETS.items()):
            click.echo(f"{name:<{width}}  {text}")
        return
    if (config is None) == (preset is None):
        raise InputError("give a CONFIG file or --preset NAME (one of them)", path="CONFIG")
    for value, option in ((rounds, "--rounds"), (seeds, "--seeds"), (workers, "--workers")):
        _positive(value, option)
    names = [p.strip() for p in policies_.split(",") if p.strip()] if policies_ is not None else None
    if names is not None and not names:
        raise InputError("no policies given", path="--policies")
    options = parse_scoped_params(policy_params, "POLICY")
    make_output_dir(out)
    result = simulate(
        config, preset=preset, policies=names, rounds=rounds, seeds=seeds, workers=workers or os.cpu_count() or 1,
        executor=executor, scheduler=scheduler, store=store or Path(out) / "runs", policy_options=options,
    )
    written = result.write(out, plots=not no_plots)
    click.echo(result.markdown(), nl=False)  # Markdown reads well on a terminal and in a pipe
    from ..simulate.market.report import market_text

    click.echo(market_text(result), nl=False)  # empty unless a market ran: its price path and events
    click.echo(f"{result.computed} tasks computed, {result.reused} reused; wrote {len(written)} files to {out}", err=True)


def _list_policies() -> None:
    from ..simulate.policies import registered_policies, simulator_policies

    rows = simulator_policies()
    width = max(len(row["name"]) for row in rows)
    click.echo("Every method of `laissez-opt methods` is a policy too; besides them the simulator runs:")
    for row in rows:
        options = ", ".join(f"{name}={json.dumps(value)}" for name, value in row["options"].items())
        click.echo(f"  {row['name']:<{width}}  {row['summary']}")
        click.echo(f"  {'':<{width}}  options: {options or 'none'}")
    for name, kind in registered_policies().items():
        click.echo(f"  {name:<{width}}  registered in this process ({kind})")
