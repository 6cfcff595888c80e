"""Human-readable rendering of results and method lists (rich tables)."""

from __future__ import annotations

import json

from ..result import Result

MAX_ROWS = 40


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def result_table(result: Result, console) -> None:
    """Print a summary, the per-agent utilities and the allocation of ``result``."""
    from rich.table import Table

    summary = Table(show_header=False, box=None, pad_edge=False)
    summary.add_column(style="bold")
    summary.add_column()
    rows = [
        ("instance", result.instance),
        ("method", f"{result.method} ({result.mode})"),
        ("solver", f"{_fmt(result.solver)} via {_fmt(result.route)}"),
        ("status", result.status + (f" ({result.solver_status})" if result.solver_status else "")),
        ("objective", _fmt(result.objective)),
        ("bound", _fmt(result.bound)),
        ("gap", _fmt(result.gap)),
        ("verified", {True: "yes (independent check)", False: "NO", None: "not checked"}[result.verified]),
        ("time", ", ".join(f"{k} {v:.4f}s" for k, v in result.timing.items())),
    ]
    if result.message:
        rows.append(("note", result.message))
    for key, value in rows:
        summary.add_row(key, value)
    console.print(summary)
    if result.status == "infeasible":
        return
    agents = Table(title="agents", title_justify="left")
    agents.add_column("agent")
    agents.add_column("utility", justify="right")
    if result.payments is not None:
        agents.add_column("payment", justify="right")
    for k, (agent, utility) in enumerate(result.utilities.items()):
        if k == MAX_ROWS:
            agents.add_row(f"... {len(result.utilities) - MAX_ROWS} more", "")
            break
        cells = [agent, _fmt(utility)]
        if result.payments is not None:
            cells.append(_fmt(result.payments.get(agent, 0.0)))
        agents.add_row(*cells)
    console.print(agents)
    alloc = Table(title="allocation", title_justify="left")
    for name in ("agent", "pool", "round", "amount"):
        alloc.add_column(name, justify="right" if name in ("round", "amount") else "left")
    for k, rec in enumerate(result.allocation):
        if k == MAX_ROWS:
            alloc.add_row(f"... {len(result.allocation) - MAX_ROWS} more", "", "", "")
            break
        alloc.add_row(rec["agent"], rec["pool"], str(rec["round"]), _fmt(rec["amount"]))
    console.print(alloc)
    if result.metrics:
        from ..result import METRICS

        metrics = Table(title="metrics", title_justify="left")
        metrics.add_column("metric")
        metrics.add_column("value", justify="right")
        metrics.add_column("meaning", overflow="fold")
        for key, value in result.metrics.items():
            if not isinstance(value, (dict, list)):
                metrics.add_row(key, _fmt(value), METRICS.get(key, ""))
        console.print(metrics)
    prices = result.price_records()
    if prices:
        table = Table(title="market-clearing prices (duals of the capacity rows)", title_justify="left")
        for name in ("pool", "round", "price"):
            table.add_column(name, justify="left" if name == "pool" else "right")
        for k, rec in enumerate(prices):
            if k == MAX_ROWS:
                table.add_row(f"... {len(prices) - MAX_ROWS} more", "", "")
                break
            table.add_row(rec["pool"], str(rec["round"]), _fmt(rec["price"]))
        console.print(table)


def methods_table(methods, console) -> None:
    from rich.table import Table

    table = Table()
    for name in ("method", "kind", "objective", "solvers", "fractional"):
        table.add_column(name, no_wrap=name != "objective")
    for m in methods.values():
        table.add_row(m.name, m.kind, m.objective, ", ".join(m.solvers) or "(built in)", "yes" if m.fractional else "no")
    console.print(table)


def method_options_table(method, console) -> None:
    """Print one method's description and its declared options (name, values, default, meaning)."""
    from rich.table import Table

    console.print(f"[bold]{method.name}[/bold] ({method.kind}): {method.summary}")
    console.print(f"objective: {method.objective}")
    if method.solvers:
        console.print(f"solvers: {', '.join(method.solvers)}")
    if not method.options:
        console.print("options: none")
        return
    table = Table(title="options (-p NAME=VALUE, or keyword arguments of lo.solve)", title_justify="left")
    for name in ("option", "values", "default", "meaning"):
        table.add_column(name, overflow="fold")
    for opt in method.options:
        default = json.dumps(opt.default) if isinstance(opt.default, (bool, type(None))) else str(opt.default)
        table.add_row(opt.name, opt.describe_type(), default, opt.help)
    console.print(table)


def comparison_table(table) -> None:
    """Print the comparison's Markdown table (readable on a terminal and in a pipe)."""
    import click

    from ..harness.report import markdown_table

    click.echo(markdown_table(table), nl=False)
