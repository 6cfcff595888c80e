"""``laissez-opt reproduce``: the seeds' worked examples, every quoted number beside the computed one."""

from __future__ import annotations

import sys

import click


class _Bar:
    """A one-line progress bar on standard error, shown only when it is a terminal."""

    def __init__(self, total: int):
        self.total, self.done, self.show = max(total, 1), 0, sys.stderr.isatty()

    def __call__(self, text: str) -> None:
        if not self.show:
            return
        filled = int(20 * self.done / self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (20 - filled)}] {text:<40}")
        sys.stderr.flush()
        self.done += 1

    def close(self) -> None:
        if self.show:
            sys.stderr.write("\r" + " " * 64 + "\r")
            sys.stderr.flush()


@click.command("reproduce")
@click.argument("items", nargs=-1)
@click.option("-o", "--output", "out", type=click.Path(path_type=str), default=None,
              help="Directory for REPORT.md and reproduce.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the table.")
@click.option("--r5-seeds", type=int, default=3, show_default=True, help="Seeds of R5's live simulation.")
@click.option("--r5-rounds", type=int, default=60, show_default=True, help="Rounds of R5's live simulation.")
@click.option("--root", type=click.Path(file_okay=False, path_type=str), default=None,
              help="The checkout whose instances/ are read (default: this package's).")
def reproduce_command(items, out, as_json, r5_seeds, r5_rounds, root):
    """Recompute the seeds' quoted numbers (R1..R5 or all, default all): quoted, computed, verdict.

    Exit 0 whatever the verdicts; 1 when the library failed on an item; 2 on bad input.
    """
    from ..reproduce import _select, reproduce

    chosen = _select(list(items) or "all")
    bar = _Bar(len(chosen) + (4 if "R5" in chosen else 0))
    try:
        report = reproduce(chosen, out=out, root=root, r5_seeds=r5_seeds, r5_rounds=r5_rounds, progress=bar)
    finally:
        bar.close()
    click.echo(report.to_json() if as_json else report.table(), nl=False)
    if out is not None:
        click.echo(f"wrote {out}/REPORT.md and {out}/reproduce.json", err=True)
    for item in report.items:
        if item.error:
            click.echo(f"error: {item.id}: the library failed: {item.error}", err=True)
    if not report.ok:
        sys.exit(1)
