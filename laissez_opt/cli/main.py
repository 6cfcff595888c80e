"""``laissez-opt``: solve, methods, validate, generate, convert (compare, check and simulate are registered below).

Exit codes (contract): 0 a result was produced (including ``time_limit`` with an
incumbent); 2 bad input or usage; 3 the instance is infeasible for the method;
4 a time limit ended the search before any solution; 5 a certificate did not
prove its claim (``certify``); 1 an internal error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click

from ..errors import InfeasibleError, InputError, LaissezOptError, NotProvenError, SolverUnavailableError
from .params import cli_paths, command_flags, parse_params, reword

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


def _usage_error(err: click.UsageError) -> None:
    # The option parser's own errors get the one-line form of every other error, with a pointer to the help.
    where = err.ctx.command_path if err.ctx is not None else "laissez-opt"
    _fail(f"error: {where}: {' '.join(err.format_message().split())} (see '{where} --help')", 2)


class _Group(click.Group):
    """Maps the library's errors to exit codes and one-line messages (no traceback)."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.exceptions.NoArgsIsHelpError:  # a bare `laissez-opt` prints the help
            raise
        except click.UsageError as err:
            _usage_error(err)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as err:
            _usage_error(err)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except InfeasibleError as err:
            _fail(f"infeasible: {err}", 3)
        except NotProvenError as err:
            _fail(f"not proven: {err}", 5)
        except (InputError, SolverUnavailableError) as err:
            command = self.commands.get(ctx.invoked_subcommand or "")
            if command is not None:
                reword(err, command_flags(command))
            _fail(f"error: {err}", err.exit_code)
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
@click.option("--solver", "-s", default=None, help="highs (default) or ortools; with --via pyomo any Pyomo solver. Exact methods only.")
@click.option("--via", type=click.Choice(["direct", "pyomo"]), default=None, help="direct (default): matrix API / OR-Tools; pyomo: build a Pyomo model. Exact methods only.")
@click.option("--time-limit", type=float, default=None, help="Seconds for building and solving together; the best incumbent is returned with its bound and gap.")
@click.option("--max-memory", default=None, help="Refuse runs whose estimated size exceeds this (e.g. 8G, 512MiB; default: half the physical memory).")
@click.option("--fractional", is_flag=True, help="Solve the fractional (time-sharing) version.")
@click.option("--threads", type=int, default=None, help="Solver threads.")
@click.option("--backend", default=None, help="Force an OR-Tools backend: min_cost_flow, glop, cp_sat, scip (implies --solver ortools).")
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None, help="Also write the result JSON here (atomically).")
@click.option("--write-model", type=click.Path(dir_okay=False, path_type=str), default=None, help="Also write the method's optimisation model as an LP or MPS file (by suffix; every exact method), atomically.")
@click.option("--param", "-p", "method_params", multiple=True, help="Method option KEY=VALUE (repeatable; VALUE parsed as JSON when it can be), e.g. -p tokens=7 -p threshold=hedge.")
def solve(instance, method, solver, via, time_limit, max_memory, fractional, threads, backend, fmt, output,
          write_model, method_params):
    """Solve INSTANCE with an exact model or run a heuristic."""
    from ..api import check_time_limit, solve_options
    from ..partition import solve as run
    from ..io import check_destination, load_instance, write_atomic
    from ..limits import parse_memory

    # Every argument is checked before the instance is read or anything is solved.
    options = parse_params(method_params)
    given_as_flags = {}
    for flag, name, value in (("--threads", "threads", threads), ("--backend", "backend", backend)):
        if value is not None:
            if name in options:
                raise InputError(f"given both as {flag} and as -p {name}", path=flag)
            options[name] = value
            given_as_flags[name] = flag
    core = {"solver": solver, "via": via, "time_limit": check_time_limit(time_limit, "--time-limit"),
            "fractional": True if fractional else None}
    for name, value in core.items():
        if name in options:
            if value is not None:
                raise InputError(f"given both as --{name.replace('_', '-')} and as -p {name}", path="--param")
            core[name] = options.pop(name)
    with cli_paths(given_as_flags):
        _, checked, _ = solve_options(method, **core, **options)
    memory = None if max_memory is None else parse_memory(max_memory, path="--max-memory")
    for path in (output, write_model):
        if path:
            check_destination(path, inputs=(instance,))
    if write_model and not write_model.lower().endswith((".lp", ".mps")):
        raise InputError(f"the model file must end in .lp or .mps, not {write_model!r}", path="--write-model")
    if output and write_model and os.path.realpath(output) == os.path.realpath(write_model):
        raise InputError("-o and --write-model name the same file", path="--write-model")
    inst = load_instance(instance)
    if write_model:
        _write_model(inst, method, bool(core["fractional"]), write_model, checked)
    try:
        result = run(inst, method, max_memory=memory, **core, **options)
    except InputError as err:
        if err.source is None and err.path == "instance":
            # A problem of the instance as a whole (no one field to point at): name its file.
            err.path = "$"
            err.located(str(instance))
        raise
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


def _write_model(inst, method, fractional, path, options=None):
    """Write the model of exact ``method`` (built-in, registered or plugin) with the run's options."""
    from ..api import write_model

    given = {k: v for k, v in (options or {}).items() if k != "fractional"}
    write_model(inst, method, path, fractional=True if fractional else None, **given)


def _method_record(m) -> dict:
    return {
        "name": m.name, "kind": m.kind, "objective": m.objective, "solvers": list(m.solvers),
        "fractional": m.fractional, "summary": m.summary,
        "options": [
            {"name": o.name, "type": o.type, "accepts": o.describe_type(), "default": o.default, "help": o.help}
            for o in m.options
        ],
    }


@cli.command()
@click.argument("method", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def methods(method, as_json):
    """List every method (exact or heuristic, objective, solvers); with METHOD, its options."""
    from ..methods import all_methods, get_method, load_plugins

    METHODS = all_methods()
    for name, reason in load_plugins().items():
        click.echo(f"laissez-opt: warning: plugin method {name!r} not loaded: {reason}", err=True)
    chosen = [get_method(method)] if method is not None else list(METHODS.values())
    if as_json:
        records = [_method_record(m) for m in chosen]
        click.echo(json.dumps(records[0] if method is not None else records, indent=2, default=str))
        return
    from .render import method_options_table, methods_table

    if method is None:
        methods_table(METHODS, _console())
        from ..simulate.policies import simulator_policies

        names = ", ".join(row["name"] for row in simulator_policies())
        click.echo(f"The simulator also runs {names}: laissez-opt simulate --list-policies")
    else:
        method_options_table(chosen[0], _console())


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
    from ..io import check_destination, dumps_instance, save_instance

    if output:
        check_destination(output)
    inst = make(family, agents, pools, seed=seed, **parse_params(param))
    if output:
        save_instance(inst, output)  # the binary form when the name ends in .npz
        click.echo(f"wrote {output}: {inst.n_agents} agents, {inst.n_pools} pools, {inst.n_edges} edges", err=True)
    else:
        click.echo(dumps_instance(inst), nl=False)


@cli.command()
@click.argument("source", type=click.Path(path_type=str))  # the loader reports directories in one line
@click.argument("target", type=click.Path(dir_okay=False, path_type=str))
@click.option("--compressed", is_flag=True, help="Deflate the arrays of a binary (.npz) target: smaller, slower to read.")
def convert(source, target, compressed):
    """Convert an instance between JSON and the binary form (.npz), by TARGET's suffix; written atomically.

    SOURCE is read in either form with every check; TARGET ending in .npz gets
    the binary form, any other name canonical JSON.  Both forms read back to the
    same instance.
    """
    from ..io import check_destination, load_instance, save_instance

    check_destination(target, inputs=(source,))
    if compressed and not target.lower().endswith(".npz"):
        raise InputError("--compressed applies to a binary target (a name ending in .npz)", path="--compressed")
    inst = load_instance(source)
    save_instance(inst, target, compressed=compressed)
    click.echo(f"wrote {target}: {inst.n_agents} agents, {inst.n_pools} pools, {inst.n_edges} edges", err=True)


def _terminate(signum, frame):
    # SIGTERM and SIGHUP unwind like Ctrl-C, so temporary files are removed and exit codes are honest.
    raise KeyboardInterrupt


def main(argv=None) -> None:
    """Console-script entry point."""
    import signal

    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    for name in names:
        signal.signal(getattr(signal, name), _terminate)
    if hasattr(signal, "SIGUSR1"):
        import faulthandler
        from contextlib import suppress

        # `kill -USR1 PID` writes every thread's stack to stderr and the run goes on: what a
        # command that seems stuck is doing, without a debugger.  Not where stderr is no file
        # (the CLI run inside a test's process).
        with suppress(AttributeError, ValueError, OSError):
            faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        cli.main(args=argv, prog_name="laissez-opt")
    except KeyboardInterrupt:  # outside a command (parsing, start-up)
        click.echo("laissez-opt: interrupted", err=True)
        sys.exit(130)
    finally:
        # Past this point nothing is left to unwind: a late signal ends the process as usual.
        for name in names:
            signal.signal(getattr(signal, name), signal.SIG_DFL)


if __name__ == "__main__":  # pragma: no cover
    main()


from .compare_cmd import compare_command  # noqa: E402  (registered after the core commands)

cli.add_command(compare_command)

from .check_cmd import check_command  # noqa: E402

cli.add_command(check_command)

from .certify_cmd import certify_command  # noqa: E402

cli.add_command(certify_command)

from .frontier_cmd import frontier_command  # noqa: E402

cli.add_command(frontier_command)

from .simulate_cmd import simulate_command  # noqa: E402

cli.add_command(simulate_command)

from .reproduce_cmd import reproduce_command  # noqa: E402

cli.add_command(reproduce_command)

from .import_cmd import import_command  # noqa: E402

cli.add_command(import_command)
