"""``laissez-opt certify INSTANCE RESULT``: prove a result's claim in exact rational arithmetic.

Exit codes: 0 proven; 5 not proven (the failing row, column or value is named
on standard error after the report); 2 bad input (an unreadable file, a result
for another instance, a result no certificate covers); 1 an internal error.
"""

from __future__ import annotations

import json

import click

from ..errors import NotProvenError


def _short(value, limit: int = 8) -> str:
    if isinstance(value, dict):
        items = list(value.items())
        text = ", ".join(f"{k}: {_short(v)}" for k, v in items[:limit])
        return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")
    if isinstance(value, list):
        text = ", ".join(_short(v) for v in value[:limit])
        return "[" + text + (f", ... ({len(value) - limit} more)" if len(value) > limit else "") + "]"
    return str(value)


def render_report(report, console) -> None:
    """Print a certify report for a person: the verdict, the exact values, the LPs checked."""
    from rich.table import Table

    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    head.add_row("instance", report.instance)
    head.add_row("result", f"{report.method}, claim: {report.claim}")
    if report.proven:
        verdict = "[green]PROVEN[/green] in exact rational arithmetic"
        if report.repaired:
            verdict += (f" (the result's numbers are off by at most {report.deviation:.3g}; "
                        "the certificate holds the exact values)")
    else:
        verdict = f"[red]NOT PROVEN[/red]: {report.failure}"
    head.add_row("verdict", verdict)
    for key, value in report.exact.items():
        if key in ("parameters",):
            continue
        head.add_row(key, _short(value))
    head.add_row("LPs checked", str(len(report.lps)))
    timing = report.timing
    head.add_row("time", f"{timing['total_s']:.3f} s (building {timing['build_s']:.3f} s, exact check {timing['check_s']:.3f} s)")
    for note in report.notes:
        head.add_row("note", note)
    console.print(head)


@click.command("certify")
@click.argument("instance", type=str)
@click.argument("result", type=str)
@click.option("--claim", type=click.Choice(["auto", "optimal", "pareto"]), default="auto", show_default=True,
              help="What to prove: the method's optimality (auto/optimal), or the Pareto efficiency of any allocation.")
@click.option("--certificate", "certificate_path", type=str, default=None,
              help="Check this certificate file instead of building one (no solver runs).")
@click.option("--tolerance", type=float, default=1e-9, show_default=True,
              help="Relative distance at which the result's floating-point numbers count as the exact ones.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="Write the certificate here (atomically), for checking later with --certificate.")
def certify_command(instance, result, claim, certificate_path, tolerance, as_json, output):
    """Prove RESULT's claim on INSTANCE exactly: exit 0 proven, 5 not proven (with the failing row)."""
    from ..api import certify
    from ..errors import InputError
    from ..io import check_destination, write_atomic

    if not 0 <= tolerance < 1:
        raise InputError(f"must be a number in [0, 1), got {tolerance!r}", path="--tolerance")
    if output:
        check_destination(output, inputs=tuple(p for p in (instance, result, certificate_path) if p))
    report = certify(instance, result, claim=claim, certificate=certificate_path, tolerance=tolerance)
    if output and report.certificate is not None:
        write_atomic(output, json.dumps(report.certificate.to_dict(), indent=1) + "\n")
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        from rich.console import Console

        render_report(report, Console(highlight=False, soft_wrap=False))
    if not report.proven:
        raise NotProvenError(report.failure)
