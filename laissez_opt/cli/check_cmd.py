"""``laissez-opt check INSTANCE RESULT``: fairness and efficiency report of an allocation.

Exit codes: 0 the report was produced (whatever its verdicts); 2 bad input (an
unreadable or invalid file, a result naming another instance or unknown
agents, pools or edges); 1 an internal error.
"""

from __future__ import annotations

import click

from ..errors import InputError

MAX_ROWS = 40


def _fmt(value, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _verdict(value) -> str:
    return {True: "[green]holds[/green]", False: "[red]fails[/red]", None: "[yellow]undecided[/yellow]"}[value]


def render_report(report, console) -> None:
    """Print a check report as rich tables."""
    from rich.table import Table

    data = report.to_dict()
    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    pareto = report.pareto
    head.add_row("instance", data["instance"])
    head.add_row("result", f"{data['method']} ({data['result_status']}), Pareto check in {data['mode']} mode")
    head.add_row(
        "verified",
        "[green]yes[/green] (independent check)" if report.verification_ok
        else "[red]NO[/red]: " + "; ".join(report.violations[:3]),
    )
    head.add_row("sharing incentive", f"{_verdict(report.sharing.holds)} (min phi {_fmt(report.sharing.min_phi, 4)})")
    envy = data["envy_freeness"]
    pair = envy["pair"]
    envy_text = f"{_verdict(report.envy.envy_free)}"
    if pair is not None:
        envy_text += f" (largest envy {_fmt(envy['largest_envy'], 4)}: {pair[0]} toward {pair[1]})"
    head.add_row("envy-free", envy_text)
    if pareto is None:
        reason = report.pareto_note.removeprefix("not checked: ")  # the JSON report's note says it itself
        head.add_row("Pareto-efficient", f"[yellow]not checked[/yellow]: {reason}")
    else:
        text = _verdict(pareto.efficient)
        if pareto.efficient is False:
            text += f" (improvement with total gain {_fmt(pareto.total_gain, 6)}, certificate verified)"
        text += f" [dim]{pareto.solver} {pareto.route}, {pareto.timing.get('total_s', 0.0):.3f}s[/dim]"
        head.add_row("Pareto-efficient", text)
    if report.price is not None:
        head.add_row(
            "price of fairness",
            f"{_fmt(report.price['price_of_fairness'], 4)} (welfare {_fmt(report.price['welfare'])} "
            f"of optimum {_fmt(report.price['welfare_optimum'])})",
        )
    console.print(head)

    from ..result import METRICS

    welfare = Table(title="welfare", title_justify="left")
    welfare.add_column("figure")
    welfare.add_column("value", justify="right")
    welfare.add_column("meaning", overflow="fold")
    for key, value in data["welfare"].items():
        welfare.add_row(key, _fmt(value), METRICS.get(key, ""))
    console.print(welfare)

    agents = Table(title="agents", title_justify="left")
    for name, just in (("agent", "left"), ("utility", "right"), ("equal share", "right"), ("phi", "right"),
                       ("largest envy", "right"), ("toward", "left")):
        agents.add_column(name, justify=just)
    if pareto is not None and pareto.efficient is False:
        agents.add_column("gain in certificate", justify="right")
    market = data.get("market") or {}
    if market:
        agents.add_column("charge at prices", justify="right")
    if market.get("payments") is not None:
        agents.add_column("payment", justify="right")
    sharing = data["sharing_incentive"]
    for k, agent in enumerate(report.agents):
        if k == MAX_ROWS:
            agents.add_row(f"... {len(report.agents) - MAX_ROWS} more", *[""] * (len(agents.columns) - 1))
            break
        worst = envy["worst_by_agent"].get(agent, {})
        cells = [
            agent,
            _fmt(data["utilities"][agent]),
            _fmt(sharing["equal_share_utility"][agent]),
            "inf" if sharing["phi"][agent] is None else _fmt(sharing["phi"][agent], 4),
            _fmt(worst.get("envy")),
            _fmt(worst.get("toward")),
        ]
        if pareto is not None and pareto.efficient is False:
            cells.append(_fmt(pareto.gains[agent]))
        if market:
            cells.append(_fmt(market["charges"].get(agent)))
        if market.get("payments") is not None:
            cells.append(_fmt(market["payments"].get(agent, 0.0)))
        agents.add_row(*cells)
    console.print(agents)

    if market:
        prices = Table(title="market-clearing prices", title_justify="left", caption=market["unit"],
                       caption_justify="left")
        prices.add_column("pool")
        prices.add_column("price", justify="right")
        for k, (pool, value) in enumerate(market["prices"].items()):
            if k == MAX_ROWS:
                prices.add_row(f"... {len(market['prices']) - MAX_ROWS} more", "")
                break
            prices.add_row(pool, ", ".join(_fmt(v) for v in value) if isinstance(value, list) else _fmt(value))
        console.print(prices)

    matrix = envy.get("matrix")
    if matrix is not None and len(matrix) <= 12:
        table = Table(title="envy matrix U_i(X_j) (row i values column j's bundle)", title_justify="left")
        table.add_column("i \\ j")
        for agent in report.agents:
            table.add_column(agent, justify="right")
        for agent, row in zip(report.agents, matrix):
            table.add_row(agent, *(_fmt(v, 4) for v in row))
        console.print(table)

    if pareto is not None and pareto.certificate:
        cert = Table(title="certificate (Pareto improvement)", title_justify="left")
        for name in ("agent", "pool", "round", "amount"):
            cert.add_column(name, justify="right" if name in ("round", "amount") else "left")
        for k, rec in enumerate(pareto.certificate):
            if k == MAX_ROWS:
                cert.add_row(f"... {len(pareto.certificate) - MAX_ROWS} more", "", "", "")
                break
            cert.add_row(rec["agent"], rec["pool"], str(rec["round"]), _fmt(rec["amount"]))
        console.print(cert)


def render_truthfulness(probe, console) -> None:
    """Print a truthfulness probe: what was tried and the largest profitable lie per agent and family."""
    from rich.table import Table

    tried = Table(title=f"truthfulness probe of {probe.method} ({probe.runs} runs)", title_justify="left")
    for name, just in (("lie family", "left"), ("lies tried", "right"), ("exhaustive", "left"),
                       ("agents with a profitable lie", "right")):
        tried.add_column(name, justify=just)
    for family, stats in probe.tried.items():
        tried.add_row(family, str(stats["lies"]), _fmt(stats["exhaustive"]), str(stats["profitable"]))
    console.print(tried)
    if not probe.findings:
        console.print("[green]no profitable misreport found[/green] among the lies tried")
    else:
        found = Table(title="profitable misreports (largest per agent and family)", title_justify="left")
        for name, just in (("agent", "left"), ("family", "left"), ("truthful", "right"), ("lying", "right"),
                           ("gain", "right"), ("the lie", "left")):
            found.add_column(name, justify=just)
        for f in probe.findings[:MAX_ROWS]:
            found.add_row(f["agent"], f["family"], _fmt(f["truthful_payoff"]), _fmt(f["payoff"]), _fmt(f["gain"]),
                          f["lie"])
        console.print(found)
    for note in probe.notes:
        console.print(f"[dim]note: {note}[/dim]")


@click.command("check")
@click.argument("instance", type=str)
@click.argument("result", type=str)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--solver", "-s", type=click.Choice(["highs", "ortools"]), default="highs", show_default=True,
              help="Solver of the Pareto check and the welfare optimum.")
@click.option("--mode", type=click.Choice(["auto", "integral", "fractional"]), default="auto", show_default=True,
              help="Pareto check over whole devices or time shares (auto: the result's mode).")
@click.option("--time-limit", type=float, default=None, help="Seconds for the Pareto check.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="Also write the JSON report here (atomically).")
@click.option("--truthfulness", is_flag=True,
              help="Also probe the result's method for profitable misreports (scaled values, per-pool values, "
                   "preference orders, MTF thresholds), rerunning it with the result's options.")
@click.option("--budget", type=int, default=2000, show_default=True,
              help="Most misreports tried per agent and lie family (--truthfulness); larger families are sampled.")
def check_command(instance, result, as_json, solver, mode, time_limit, output, truthfulness, budget):
    """Fairness and efficiency of RESULT's allocation on INSTANCE: SI, EF, PE (with certificate), welfare."""
    import json

    from ..analysis.check import check
    from ..api import check_time_limit
    from ..io import check_destination, load_instance, load_result, write_atomic

    check_time_limit(time_limit, "--time-limit")
    if budget < 1:
        raise InputError(f"must be an integer >= 1, got {budget}", path="--budget")
    if output:
        check_destination(output, inputs=(instance, result))
    inst = load_instance(instance)
    res = load_result(result)
    fractional = None if mode == "auto" else mode == "fractional"
    report = check(inst, res, solver=solver, fractional=fractional, time_limit=time_limit, source=result)
    if truthfulness:
        from ..api import options_of, probe_truthfulness

        report.truthfulness = probe_truthfulness(inst, res.method, options=options_of(res), budget=budget)
    text = json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
    if output:
        write_atomic(output, text)
    if as_json:
        click.echo(text, nl=False)
    else:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=False)
        render_report(report, console)
        if report.truthfulness is not None:
            render_truthfulness(report.truthfulness, console)
