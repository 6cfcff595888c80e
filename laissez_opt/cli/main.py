"""``laissez-opt``: solve, methods, validate, generate (compare, check and simulate are registered below).

Exit codes (contract): 0 a result was produced (including ``time_limit`` with an
incumbent); 2 bad input or usage; 3 the instance is infeasible for the method;
4 a time limit ended the search before any solution; 1 an internal error.
"""

from __future__ import annotations

import json
import sys

import click

from ..errors import InfeasibleError, InputError, LaissezOptError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # In a pipe or a file there is no terminal width to respect: keep rows on one line.
    width = None if stream.isatty() else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def _fail(message: str, code: int) -> None:
    click.echo(f"laissez-opt: {message}", err=True)
    sys.exit(code)


class _Group(click.Group):
    """Maps the library's errors to exit codes and one-line messages (no traceback)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except InfeasibleError as err:
            _fail(f"infeasible: {err}", 3)
        except LaissezOptError as err:
            _fail(f"error: {err}", err.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as err:  # an internal error: one line unless --debug
            if ctx.obj and ctx.obj.get("debug"):
                raise
            _fail(f"internal error: {type(err).__name__}: {err} (rerun with --debug for a traceback)", 1)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(package_name="laissez-opt")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def cli(ctx, debug):
    """Exact allocation models for heterogeneous-accelerator clouds."""
    ctx.obj = {"debug": debug}


@cli.command()
@click.argument("instance", type=click.Path(path_type=str))  # the loader reports directories in one line
@click.option("--method", "-m", default="welfare", show_default=True, help="Method name (see `laissez-opt methods`).")
@click.option("--solver", "-s", default="highs", show_default=True, help="highs or ortools (with --via pyomo: any Pyomo solver).")
@click.option("--via", type=click.Choice(["direct", "pyomo"]), default="direct", show_default=True, help="direct: matrix API / OR-Tools; pyomo: build a Pyomo model.")
@click.option("--time-limit", type=float, default=None, help="Seconds; the best incumbent is returned with its bound and gap.")
@click.option("--fractional", is_flag=True, help="Solve the fractional (time-sharing) version.")
@click.option("--threads", type=int, default=None, help="Solver threads.")
@click.option("--backend", default=None, help="Force an OR-Tools backend: min_cost_flow, glop, cp_sat, scip.")
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None, help="Also write the result JSON here (atomically).")
@click.option("--write-model", type=click.Path(dir_okay=False, path_type=str), default=None, help="Write the declared model as an LP/MPS file (exact methods).")
@click.option("--param", "-p", "method_params", multiple=True, help="Method option KEY=VALUE (repeatable; VALUE parsed as JSON when it can be), e.g. -p tokens=7 -p threshold=hedge.")
def solve(instance, method, solver, via, time_limit, fractional, threads, backend, fmt, output, write_model, method_params):
    """Solve INSTANCE with an exact model or run a heuristic."""
    from ..api import solve as run
    from ..io import load_instance, write_atomic

    if time_limit is not None and not time_limit > 0:
        raise InputError(f"must be > 0 seconds, got {time_limit}", path="--time-limit")
    inst = load_instance(instance)
    options = _parse_params(method_params)
    if threads is not None:
        options["threads"] = threads
    if backend is not None:
        options["backend"] = backend
    if write_model:
        _write_model(inst, method, fractional, write_model)
    result = run(inst, method, solver=solver, via=via, time_limit=time_limit, fractional=fractional, **options)
    text = result.to_json()
    if output:
        write_atomic(output, text)
    if fmt == "table":
        from .render import result_table

        result_table(result, _console())
    else:
        click.echo(text, nl=False)
    if result.status == "infeasible":
        _fail(f"infeasible: {inst.name} has no feasible allocation for {method}" + (f" ({result.message})" if result.message else ""), 3)


def _write_model(inst, method, fractional, path):
    from ..exact.welfare import build_welfare
    from ..modeling.pyomo_route import write_model

    builders = {"welfare": build_welfare}
    if method not in builders:
        raise InputError(f"--write-model supports {', '.join(builders)}, not {method!r}", path="--write-model")
    model, _ = builders[method](inst, fractional=fractional)
    write_model(model, path)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def methods(as_json):
    """List every method: exact or heuristic, objective, solvers."""
    from ..methods import METHODS

    if as_json:
        click.echo(json.dumps([
            {"name": m.name, "kind": m.kind, "objective": m.objective, "solvers": list(m.solvers), "fractional": m.fractional, "summary": m.summary}
            for m in METHODS.values()
        ], indent=2))
        return
    from .render import methods_table

    methods_table(METHODS, _console())


@cli.command()
@click.argument("instance", type=click.Path(path_type=str))  # the loader reports directories in one line
def validate(instance):
    """Check INSTANCE against the schema and its references; nothing is solved."""
    from ..io import load_instance

    inst = load_instance(instance)
    click.echo(
        f"ok: {instance}: {inst.name}: {inst.n_agents} agents, {inst.n_pools} pools "
        f"({int(inst.counts.sum())} devices), {inst.n_edges} edges, {inst.rounds} rounds"
    )


def _parse_params(values) -> dict:
    params = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise InputError(f"expected KEY=VALUE, got {item!r}", path="--param")
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


@cli.command()
@click.option("--family", "-f", required=True, help="uniform, gavel, neocloud or gemmini.")
@click.option("--agents", "-n", type=int, required=True)
@click.option("--pools", "-m", type=int, required=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--param", "-p", multiple=True, help="Family parameter KEY=VALUE (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None, help="Output file (default: standard output).")
def generate(family, agents, pools, seed, param, output):
    """Write a seeded random instance of a named family."""
    from ..api import generate as make
    from ..io import dumps_instance, write_atomic

    inst = make(family, agents, pools, seed=seed, **_parse_params(param))
    text = dumps_instance(inst)
    if output:
        write_atomic(output, text)
        click.echo(f"wrote {output}: {inst.n_agents} agents, {inst.n_pools} pools, {inst.n_edges} edges", err=True)
    else:
        click.echo(text, nl=False)


def main(argv=None) -> None:
    """Console-script entry point."""
    cli.main(args=argv, prog_name="laissez-opt")


if __name__ == "__main__":  # pragma: no cover
    main()


from .compare_cmd import compare_command  # noqa: E402  (registered after the core commands)

cli.add_command(compare_command)

from .check_cmd import check_command  # noqa: E402

cli.add_command(check_command)

from .simulate_cmd import simulate_command  # noqa: E402

cli.add_command(simulate_command)
