"""Files of a simulation: CSV tables, a Markdown and a JSON summary, PNG plots.

Written atomically (:func:`laissez_opt.io.write_atomic`), each a deterministic function
of the runs: the same configuration gives the same bytes, except ``timing.csv``
(measured seconds).  Numbers are written in their shortest round-trip form (whole
numbers without a decimal point); a missing value is an empty cell.

* ``rounds.csv``: one row per policy, seed and round (:data:`~laissez_opt.simulate.metrics.ROUND_FIELDS`);
* ``agents.csv``: one row per policy, seed and agent (:data:`~laissez_opt.simulate.metrics.AGENT_FIELDS`);
* ``runs.csv``: the scalars of every run (:mod:`laissez_opt.simulate.summary`);
* ``summary.csv``, ``summary.json``, ``summary.md``: means and 95% intervals over seeds,
  ratios paired by seed, the hindsight bound;
* ``agent_rounds.csv``, ``events.csv``: when the configuration records them;
* ``timing.csv``: seconds in the policy and in the engine, rounds per second;
* plots (with matplotlib): ``backlog.png``, ``utility.png`` (over time, mean and 95%
  band over seeds, one line per policy), ``phi.png`` (distribution of the agents' final
  ``phi``), ``agents.png`` (throughput per agent).  Figures are drawn on
  :class:`matplotlib.figure.Figure` objects: the user's pyplot backend is never switched.

Example
-------
>>> csv_number(3.0), csv_number(0.1), csv_number(float("nan")), csv_number(None)
('3', '0.1', '', '')
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np

from ..io.jsonfile import make_output_dir, write_atomic
from .summary import SCALARS, interval

__all__ = ["write_outputs", "write_plots", "summary_markdown", "summary_data", "csv_text", "csv_number", "PLOTS"]

PLOTS = ("backlog.png", "utility.png", "phi.png", "agents.png")


def csv_number(value) -> str:
    """A cell: shortest round-trip float, whole numbers without ``.0``, empty for missing values."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return "" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def csv_text(rows: list[dict], columns: list[str] | None = None) -> str:
    """Rows as CSV text (columns: the first row's keys unless given).

    >>> print(csv_text([{"a": 1.0, "b": float("nan")}, {"a": 0.25, "b": "x"}]), end="")
    a,b
    1,
    0.25,x
    """
    columns = columns or (list(rows[0]) if rows else [])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_number(row.get(c)) for c in columns])
    return buffer.getvalue()


def _fmt(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}g}"


def _with_ci(stats: dict) -> str:
    if stats["n"] == 0:
        return "-"
    if not math.isfinite(stats["ci"]):
        return _fmt(stats["mean"])
    return f"{_fmt(stats['mean'])} ± {_fmt(stats['ci'], 2)}"


def _json_clean(value):
    if isinstance(value, dict):
        return {str(k): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def summary_data(result) -> dict:
    """The summary as a JSON-ready dict: configuration, per-policy intervals, paired ratios, bounds.

    >>> import laissez_opt as lo
    >>> data = summary_data(lo.simulate(preset="thesis-r1", progress=False))
    >>> data["policies"], data["summary"]["min_backlog"]["backlog"]["mean"]
    (['time_equal', 'min_backlog'], 20.0)
    """
    summary = result.summary()
    ratios = {p: {q: result.compare(p, q) for q in result.policies if q != p} for p in result.policies} \
        if result.config.utility != "negative_backlog" else {}
    for table in ratios.values():
        for stats in table.values():
            stats.pop("ratios", None)
            stats.pop("seeds", None)
    bounds = [b["weighted_welfare"] for b in result.hindsight.values() if b.get("weighted_welfare") is not None]
    return _json_clean({
        "name": result.config.name,
        "config": result.config.to_dict() | {"instance": _instance_label(result.config)},
        "seeds": result.seeds,
        "policies": result.policies,
        "summary": summary,
        "ratios_weighted_welfare": ratios,
        "hindsight": {"runs": [result.hindsight[s] | {"solve_s": None} for s in sorted(result.hindsight)],
                      "weighted_welfare": interval(bounds) if bounds else None},
    })


def _instance_label(config) -> str | dict:
    if config.generate is not None:
        return "generated"
    if isinstance(config.instance, dict):
        return config.instance.get("name", "inline")
    return Path(config.instance).name


def summary_markdown(result) -> str:
    """The Markdown report: setup, per-policy means with intervals, paired ratios, hindsight bound.

    >>> import laissez_opt as lo
    >>> text = summary_markdown(lo.simulate(preset="thesis-r1", progress=False))
    >>> text.splitlines()[0], "| min_backlog | -5 |" in text
    ('# Simulation: thesis-r1', True)
    """
    cfg = result.config
    summary = result.summary()
    first = result.runs[0].meta if result.runs else {}
    lines = [f"# Simulation: {cfg.name}", ""]
    if cfg.description:
        lines += [cfg.description, ""]
    w = cfg.workload
    per_seed = cfg.generate is not None and cfg.generate.get("seed") is None
    instance = (f"family {cfg.generate['family']}, drawn anew for every seed" if per_seed
                else first.get("instance", "?"))
    lines += [
        f"- instance: {instance} ({first.get('agents', '?')} agents, {first.get('pools', '?')} pools, "
        f"{first.get('devices', '?')} devices); {first.get('rounds', '?')} rounds of {first.get('round_hours', '?')} h",
        f"- seeds: {', '.join(str(s) for s in result.seeds)}",
        f"- workload: {w.arrivals} arrivals"
        + (f", base rate {w.base_rate:g} x {'weight' if w.rate_scaling == 'weight' else '1'}" if w.arrivals == "poisson" else "")
        + (f", load {json.dumps(w.to_dict()['load'])} of {w.load_reference}" if w.load is not None else "")
        + (f", job size {w.job_size:g}" if w.job_size is not None else "")
        + f", {w.size_distribution} sizes, deadline {w.deadline if w.deadline else 'none'}",
        f"- balancer {cfg.balancer}; demand rule {cfg.demand}; utility {cfg.utility}",
        "",
        "## Policies",
        "",
        "Mean ± half-width of the 95% Student-t interval over the seeds.",
        "",
    ]
    shown = [s for s in SCALARS if any(summary[p].get(s, {}).get("n", 0) for p in result.policies)]
    lines.append("| policy | " + " | ".join(shown) + " |")
    lines.append("|---|" + "---|" * len(shown))
    for policy in result.policies:
        lines.append(f"| {policy} | " + " | ".join(_with_ci(summary[policy][s]) if s in summary[policy] else "-"
                                                   for s in shown) + " |")
    weights = sorted({k for p in result.policies for k in summary[p] if k.startswith("throughput_w")},
                     key=lambda k: float(k[len("throughput_w"):]))
    if len(weights) > 1:
        lines += ["", "## Throughput per agent of each weight", "",
                  "| policy | " + " | ".join(f"w = {k[len('throughput_w'):]}" for k in weights) + " |",
                  "|---|" + "---|" * len(weights)]
        for policy in result.policies:
            lines.append(f"| {policy} | " + " | ".join(_with_ci(summary[policy][k]) for k in weights) + " |")
    ratios_apply = cfg.utility != "negative_backlog"  # ratios of negative welfare mean nothing
    if len(result.policies) > 1 and len(result.seeds) > 0 and ratios_apply:
        lines += ["", "## Weighted welfare ratios, paired by seed", "",
                  "Row policy over column policy: mean of the per-seed ratios `F(row) / F(column)` of the weighted "
                  "welfare, with its 95% interval.", "",
                  "| over | " + " | ".join(result.policies) + " |", "|---|" + "---|" * len(result.policies)]
        for p in result.policies:
            cells = []
            for q in result.policies:
                if p == q:
                    cells.append("1")
                else:
                    stats = result.compare(p, q)
                    cells.append(_with_ci(stats))
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
    if result.hindsight:
        bounds = [result.hindsight[s] for s in sorted(result.hindsight)]
        values = [b["weighted_welfare"] for b in bounds if b.get("weighted_welfare") is not None]
        stats = interval(values)
        lines += ["", "## Hindsight bound", "",
                  "The offline bound on the weighted welfare of the throughput utility (all arrivals known, time "
                  f"shares, pooled service; `laissez_opt.simulate.hindsight`): {_with_ci(stats)} per round."]
        per_seed = {b["seed"]: b["weighted_welfare"] for b in bounds if b.get("weighted_welfare")}
        if cfg.utility == "throughput":
            lines += ["", "| policy | share of the bound |", "|---|---|"]
            for policy in result.policies:
                shares = [np.mean(r.rounds["weighted_welfare"]) / per_seed[r.seed]
                          for r in result.runs if r.policy == policy and r.seed in per_seed]
                lines.append(f"| {policy} | {_with_ci(interval(shares))} |")
    # How many runs came from the store is left out: the report must not depend on it.
    lines += ["", f"{len(result.runs)} runs: {len(result.policies)} policies x {len(result.seeds)} seeds.", ""]
    return "\n".join(lines)


def _figure(width=6.4, height=4.2):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> None:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    write_atomic(path, buffer.getvalue())


def _over_time(result, field: str, ax, *, cumulative: bool = False) -> None:
    for policy in result.policies:
        series = np.array([r.rounds[field] for r in result.runs if r.policy == policy], dtype=float)
        if series.size == 0:
            continue
        if cumulative:
            series = np.cumsum(series, axis=1)
        x = np.arange(series.shape[1])
        mean = series.mean(axis=0)
        line, = ax.plot(x, mean, label=policy, linewidth=1.2)
        if series.shape[0] > 1:
            from scipy.stats import t

            half = t.ppf(0.975, series.shape[0] - 1) * series.std(axis=0, ddof=1) / np.sqrt(series.shape[0])
            ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("round")
    ax.grid(True, alpha=0.3)
    if ax.lines:
        ax.legend(fontsize="small")


def write_plots(result, out: Path) -> list[Path]:
    """Draw ``backlog.png``, ``utility.png``, ``phi.png`` and ``agents.png`` into ``out``; the paths written."""
    written = []
    fig = _figure()
    ax = fig.add_subplot()
    _over_time(result, "backlog_work", ax)
    ax.set_ylabel("backlog (work queued at the end of the round)")
    ax.set_title(result.config.name, fontsize="medium")
    _save(fig, out / "backlog.png")
    written.append(out / "backlog.png")

    fig = _figure(6.4, 6.4)
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    _over_time(result, "weighted_welfare", top)
    top.set_ylabel(f"weighted welfare per round ({result.config.utility})")
    _over_time(result, "weighted_welfare", bottom, cumulative=True)
    bottom.set_ylabel("cumulative weighted welfare")
    _save(fig, out / "utility.png")
    written.append(out / "utility.png")

    fig = _figure()
    ax = fig.add_subplot()
    data = []
    for policy in result.policies:
        phi = np.array([v for r in result.runs if r.policy == policy for v in r.agents["phi"]], dtype=float)
        data.append(phi[np.isfinite(phi)])
    if any(d.size for d in data):
        ax.boxplot([d if d.size else np.array([np.nan]) for d in data], tick_labels=result.policies)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax.set_ylabel("phi per agent (processed / equal share's)")
    ax.tick_params(axis="x", labelrotation=30)
    ax.grid(True, axis="y", alpha=0.3)
    _save(fig, out / "phi.png")
    written.append(out / "phi.png")

    fig = _figure(8.0, 4.2)
    ax = fig.add_subplot()
    ids = result.runs[0].agents["agent"] if result.runs else []
    n = len(ids)
    width = 0.8 / max(len(result.policies), 1)
    for k, policy in enumerate(result.policies):
        values = np.array([r.agents["throughput"] for r in result.runs if r.policy == policy], dtype=float)
        if values.size == 0:
            continue
        mean = values.mean(axis=0)
        if n <= 60:
            ax.bar(np.arange(n) + (k - (len(result.policies) - 1) / 2) * width, mean, width, label=policy)
        else:
            ax.plot(np.arange(n), np.sort(mean)[::-1], label=policy)
    if n <= 60:
        ax.set_xticks(np.arange(n), ids, rotation=90, fontsize="x-small")
    else:
        ax.set_xlabel("agents, by throughput")
    ax.set_ylabel("throughput (work per round)")
    ax.grid(True, axis="y", alpha=0.3)
    if ax.containers or ax.lines:
        ax.legend(fontsize="small")
    _save(fig, out / "agents.png")
    written.append(out / "agents.png")
    return written


def write_outputs(result, directory, *, plots: bool = True) -> list[Path]:
    """Write every file of the module docstring into ``directory`` (created if needed); the paths written.

    >>> import tempfile, laissez_opt as lo
    >>> with tempfile.TemporaryDirectory() as out:
    ...     names = [p.name for p in write_outputs(lo.simulate(preset="thesis-r1", progress=False), out, plots=False)]
    >>> names[:3]
    ['rounds.csv', 'agents.csv', 'runs.csv']
    """
    from .metrics import AGENT_FIELDS, AGENT_ROUND_FIELDS, ROUND_FIELDS

    out = Path(directory)
    make_output_dir(out)
    files = {
        "rounds.csv": csv_text(result.table("rounds"), ["policy", "seed", *ROUND_FIELDS]),
        "agents.csv": csv_text(result.table("agents"), ["policy", "seed", *AGENT_FIELDS]),
        "runs.csv": csv_text(result.table("runs")),
        "summary.csv": csv_text(result.table("summary"), ["policy", "metric", "mean", "std", "n", "ci", "low", "high"]),
        "summary.json": json.dumps(summary_data(result), indent=2, sort_keys=False, allow_nan=False) + "\n",
        "summary.md": summary_markdown(result),
        "timing.csv": csv_text(result.table("timing")),
    }
    if result.hindsight:
        files["hindsight.csv"] = csv_text(result.table("hindsight"))
    if any(r.agent_rounds for r in result.runs):
        files["agent_rounds.csv"] = csv_text(result.table("agent_rounds"),
                                             ["policy", "seed", "round", "agent", *AGENT_ROUND_FIELDS])
    if any(r.events for r in result.runs):
        files["events.csv"] = csv_text(result.table("events"), ["policy", "seed", "round", "time", "kind", "agent",
                                                                "pool", "device", "job", "amount", "price"])
    written = []
    for name, text in files.items():
        write_atomic(out / name, text)
        written.append(out / name)
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return written + _market_outputs(result, out, False)
        written += write_plots(result, out)
    return written + _market_outputs(result, out, plots)


def _market_outputs(result, out: Path, plots: bool) -> list[Path]:
    """The market's extra files (events with every field, price path, device Gantt chart), if a market ran."""
    if not any(e.get("source") == "exchange" for r in result.runs for e in (r.events or ())):
        return []
    from .market.report import write_market_outputs

    return write_market_outputs(result, out, plots=plots)
