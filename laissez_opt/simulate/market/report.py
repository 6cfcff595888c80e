"""What a market run prints and writes: the price path, the event list, a price plot and a device Gantt chart.

The records come from the exchange's own events in a run's event log (those with
``source == "exchange"``), so a stored run can be re-rendered without re-running it.

* :func:`price_paths`: ``{pool: [(minute, price), ...]}`` at every change;
* :func:`market_text`: the lines ``simulate`` prints (price path, every event with
  its minute, and for the ``hotos25-section5`` preset the derived bids next to the
  paper's quoted ones);
* :func:`write_market_outputs`: ``market_events.csv`` (every field),
  ``price_path.png`` (one step line per pool) and ``gantt.png`` (one row per device:
  running, reserved stretches), drawn on :class:`matplotlib.figure.Figure` objects
  without touching pyplot's backend.

>>> import laissez_opt as lo
>>> res = lo.simulate(preset="hotos25-section5", policies=["market"], progress=False)
>>> [(m, round(p, 3)) for m, p in price_paths(res.run("market", 0))["A10"]]
[(0.0, 0.606), (5.0, 0.686), (7.0, 0.652), (17.0, 0.606)]
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["price_paths", "market_events", "market_text", "write_market_outputs", "section5_bids"]


def market_events(run) -> list:
    """The exchange's events of a run, each with its ``minute``."""
    minutes = float(run.meta.get("round_hours", 1.0)) * 60.0
    out = []
    for e in run.events or ():
        if e.get("source") == "exchange":
            out.append({"minute": e["round"] * minutes, **{k: v for k, v in e.items() if k not in ("source", "time")}})
    return out


def price_paths(run) -> dict:
    """``{pool: [(minute, price), ...]}``: the opening base prices, then every change."""
    minutes = float(run.meta.get("round_hours", 1.0)) * 60.0
    paths: dict = {}
    for e in run.events or ():
        if e.get("kind") == "price" and e.get("source") != "exchange" and e.get("pool") is not None:
            path = paths.setdefault(e["pool"], [])
            if not path or abs(path[-1][1] - e["price"]) > 1e-12:
                path.append((e["round"] * minutes, float(e["price"])))
    return paths


def section5_bids(restart_minutes: float = 2.5) -> list:
    """The section-5 bids derived from Table 1 next to the paper's, with the reason for any difference.

    >>> [(name, round(derived, 3), quoted) for name, derived, quoted, _ in section5_bids()]
    [('A for the A10', 0.686, 0.687), ('B for the A10 (launch)', 0.762, 0.762), ('B for the A10 (re-bid)', 0.652, 0.652)]
    """
    a = 0.24 / 0.35
    b = (0.15 + restart_minutes / 60.0 * 0.606) / 0.23
    rebid = 0.15 / 0.23
    return [
        ("A for the A10", a, 0.687,
         "cost on Trainium 0.24 / runtime on the A10 0.35 h = 0.6857; Table 1 rounds times and costs to two "
         "digits, so the ratio is only known within [0.662, 0.710]; 0.687 lies in it (0.804 x 0.30 / 0.35 = 0.689 "
         "with the posted Trainium price) but no exact Table 1 figure gives it"),
        ("B for the A10 (launch)", b, 0.762,
         f"(cost on L4 0.15 + restart {restart_minutes:g} min at the A10 base 0.606) / 0.23 h; the paper does not "
         "give the restart cost: 2.49 to 2.51 minutes all give 0.762"),
        ("B for the A10 (re-bid)", rebid, 0.652, "cost on L4 0.15 / runtime on the A10 0.23 h (at a checkpoint no "
         "restart is counted); the same ratio for the remaining work"),
    ]


def _fmt_event(e: dict) -> str:
    kind = e["kind"]
    who = e.get("agent", "")
    if kind == "price":
        return f"price of {e['pool']} -> {e['price']:.3f}/h ({e.get('bids', 0)} bids, {e.get('free', 0)} free)"
    if kind == "bid":
        return f"{who} submits launch table {e.get('table', '')}"
    if kind in ("start", "migrate"):
        verb = "starts on" if kind == "start" else "migrates to"
        extra = f", reload {e['reload_min'] * 60:.0f} s" if e.get("reload_min") else ""
        return f"{who} {verb} {e['device']} at {e['price']:.3f}/h{extra}"
    if kind == "reserve":
        return f"{who} wins {e['device']} (reserved until its next checkpoint) at {e['price']:.3f}/h"
    if kind == "checkpoint":
        return f"{who} checkpoint on {e['pool']} (progress {e['progress']:.3f})"
    if kind == "evict":
        return f"{who} leaves {e['pool']} (outbid; lost work {e.get('lost_work', 0):.3f})"
    if kind == "outbid":
        return f"{who} is outbid on {e['pool']}, leaves at its next checkpoint"
    if kind == "request":
        return f"{who} requests a device"
    return f"{who} {kind}"


def market_text(result) -> str:
    """Price path per pool and every exchange event of each market run of ``result`` (a SimulationResult)."""
    lines = []
    for run in result.runs:
        events = market_events(run)
        if not events:
            continue
        lines.append(f"## Market run: policy {run.policy}, seed {run.seed}")
        lines.append("")
        lines.append("Price path ($ per device-hour, from the minute shown):")
        for pool, path in sorted(price_paths(run).items()):
            if len(path) > 1 or True:
                lines.append(f"  {pool}: " + " -> ".join(f"{p:.3f} (min {m:g})" for m, p in path))
        lines.append("")
        lines.append("Events:")
        for e in events:
            lines.append(f"  min {e['minute']:>6g}  {_fmt_event(e)}")
        lines.append("")
        if getattr(result.config, "name", "") == "hotos25-section5":
            lines.append("Bids derived from Table 1 (derived / quoted by the paper):")
            for name, derived, quoted, why in section5_bids():
                same = f"{derived:.3f}" == f"{quoted:.3f}"
                lines.append(f"  {name}: {derived:.4f} -> {derived:.3f} / {quoted:.3f}" + ("" if same else
                                                                                           f"  (differs: {why})"))
            lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


def _devices_gantt(run) -> dict:
    """``{device: [(t0, t1, agent, kind), ...]}`` in minutes, rebuilt from the events."""
    events = market_events(run)
    end = max((e["minute"] for e in events), default=0.0)
    open_: dict = {}
    bars: dict = {}

    def close(agent, minute):
        for key in [k for k in open_ if k[0] == agent]:
            device, t0, kind = open_.pop(key)
            bars.setdefault(device, []).append((t0, minute, agent, kind))

    for e in events:
        agent, kind, m = e.get("agent"), e["kind"], e["minute"]
        if kind in ("start", "migrate"):
            close(agent, m)
            open_[(agent, e["device"])] = (e["device"], m, "run")
        elif kind == "reserve":
            open_[(agent, e["device"])] = (e["device"], m, "reserved")
        elif kind in ("evict", "complete", "stopped", "timeout"):
            close(agent, m)
    for key in list(open_):
        device, t0, kind = open_.pop(key)
        bars.setdefault(device, []).append((t0, end, key[0], kind))
    return bars


def write_market_outputs(result, directory, *, plots: bool = True) -> list:
    """``market_events.csv``, ``price_path.png``, ``gantt.png`` for the market runs of ``result``; the paths written."""
    from ..report import _figure, _save, csv_text
    from ...io.jsonfile import write_atomic

    out = Path(directory)
    rows = []
    for run in result.runs:
        for e in market_events(run):
            rows.append({"policy": run.policy, "seed": run.seed, **e})
    if not rows:
        return []
    columns = ["policy", "seed", "round", "minute", "kind", "agent", "pool", "device", "price", "bids", "free",
               "table", "progress", "reload_min", "lost_work"]
    write_atomic(out / "market_events.csv", csv_text(rows, columns))
    written = [out / "market_events.csv"]
    if not plots:
        return written
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return written
    run = next(r for r in result.runs if market_events(r))
    fig = _figure()
    ax = fig.add_subplot()
    end = max(e["minute"] for e in market_events(run)) + 1
    for pool, path in sorted(price_paths(run).items()):
        xs = [m for m, _ in path] + [end]
        ys = [p for _, p in path] + [path[-1][1]]
        ax.step(xs, ys, where="post", label=pool)
    ax.set_xlabel("minute")
    ax.set_ylabel("price ($ per device-hour)")
    ax.set_title(f"exchange prices ({run.policy}, seed {run.seed})", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    _save(fig, out / "price_path.png")
    written.append(out / "price_path.png")

    bars = _devices_gantt(run)
    devices = sorted(bars)[:60]
    fig = _figure(8.0, max(2.5, 0.35 * len(devices) + 1.2))
    ax = fig.add_subplot()
    agents = sorted({b[2] for d in devices for b in bars[d]})
    colours = {a: f"C{k % 10}" for k, a in enumerate(agents)}
    for y, device in enumerate(devices):
        for t0, t1, agent, kind in bars[device]:
            ax.barh(y, t1 - t0, left=t0, color=colours[agent], alpha=0.45 if kind == "reserved" else 0.9,
                    hatch="//" if kind == "reserved" else None, edgecolor="black", linewidth=0.4)
            if len(agents) <= 20:
                ax.text(t0 + (t1 - t0) / 2, y, agent, ha="center", va="center", fontsize="x-small")
    ax.set_yticks(range(len(devices)), devices, fontsize="x-small")
    ax.set_xlabel("minute (hatched: reserved, paid, waiting for the tenant's checkpoint)")
    ax.set_title("devices", fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    _save(fig, out / "gantt.png")
    written.append(out / "gantt.png")
    return written
