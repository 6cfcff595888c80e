"""The price of fairness as a curve: the exact trade-off between weighted welfare and the max-min level.

For a level ``t >= 0`` let

.. math::

    f(t) = \\max_x \\Big\\{ \\sum_i w_i U_i(x) \\;:\\; U_i(x) \\ge t\\, w_i E_i \\text{ for every agent taking part},
           \\ x \\text{ feasible (time sharing)} \\Big\\},

the best weighted welfare among allocations whose max-min level
``min_i U_i / (w_i E_i)`` is at least ``t`` (``E_i = U_i^ex / w_i`` makes the level
``min_i phi_i``; ``E_i = 1`` is the raw level; agents that can get nothing take no
part, as in ``maxmin``).  ``f(0)`` is the welfare optimum, ``t* = max {t : f(t) > -inf}``
the first leximin level, and ``f`` is concave and piecewise linear on ``[0, t*]``
(the optimum of an LP whose right-hand side moves linearly in ``t``).  Every
point of the curve's graph is attainable by time sharing and nothing above it is:
it is the Pareto frontier between welfare and the max-min level.

**Exact breakpoints** (Eisner & Severance, 1976, for parametric LPs): each
evaluation solves the LP at a rational ``t`` exactly
(:func:`~laissez_opt.analysis.exact_lp.solve_exact`), which gives ``f(t)`` and,
from the row multipliers ``y``, the slope ``s = sum_i y_i w_i E_i`` of a line
``f(t) + s (t' - t)`` that bounds ``f`` everywhere (the multipliers stay dual
feasible for every ``t'``: weak duality).  Between two evaluated points the two
lines meet at ``t_x``; if ``f(t_x)`` lies on them, ``f`` is exactly those two
lines on the interval (concavity) and ``t_x`` is a breakpoint, otherwise ``t_x``
splits the interval.  Every number is rational and the recursion ends with all
breakpoints, in about two LPs per breakpoint: no grid.

The fair optima (:func:`fair_optima`): the largest welfare under sharing
incentive (``phi_i >= 1``), weighted envy-freeness and the max-min level ``t*``,
in time sharing (exact, via the LPs of :func:`~laissez_opt.analysis.exact_models.fair_welfare_lp`)
and with whole devices (the ``fair_welfare`` MILP), each with its price of fairness
``(f(0) - W) / f(0)`` (Bertsimas, Farias & Trichakis, 2011).  :func:`place`
puts any allocation on the plane: its level, its welfare, the frontier's
welfare at its level and the gap between them.

References: J. Eisner and D. G. Severance, "Mathematical techniques for
efficient record segmentation in large shared databases", JACM 23(4), 1976
(the tangent-intersection method for parametric breakpoints); D. Bertsimas,
V. F. Farias and N. Trichakis, "The price of fairness", Oper. Res. 59(1), 2011;
thesis 002, ch. 3 (``phi_i``, sharing incentive, envy-freeness).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="two")
>>> curve = trace_frontier(inst)
>>> [(str(t), str(w)) for t, w in curve.breakpoints]     # f(t) = 9/5 - 2t/5 up to t* = 1
[('0', '9/5'), ('1', '7/5')]
>>> str(curve.welfare_at(Fraction(1, 2)))
'8/5'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..instance import Instance
from ..result import Result
from .exact_lp import Number, rational_text, solve_exact
from .exact_models import fair_welfare_lp, scales, taking_part
from .rational import ExactInstance, exact_amounts, exact_instance

__all__ = ["Frontier", "FrontierReport", "Placement", "trace_frontier", "fair_optima", "place", "frontier_figure",
           "NOTIONS"]

#: The fairness notions of :func:`fair_optima`: name -> (fair_welfare option, value, what it means).
NOTIONS = {
    "sharing_incentive": ("sharing", 1, "phi_i >= 1 for every agent (thesis eq. 3.4)"),
    "envy_free": ("envy", 0, "weighted envy-freeness (thesis eq. 3.5)"),
    "max_min": ("floor", None, "the max-min level at its largest value: t* in time sharing, the integral "
                               "leximin's first level with whole devices"),
}


def _q(value) -> Number:
    value = Fraction(value)
    return int(value) if value.denominator == 1 else value


@dataclass
class Frontier:
    """The exact curve ``f``: breakpoints ``(t, f(t))`` from ``t = 0`` to ``t*``, rational."""

    instance: str
    normalizer: str
    breakpoints: list[tuple[Number, Number]]
    complete: bool
    lps: int
    seconds: float
    ex: ExactInstance | None = field(default=None, repr=False)

    @property
    def welfare_optimum(self) -> Number:
        return self.breakpoints[0][1]

    @property
    def max_level(self) -> Number:
        return self.breakpoints[-1][0]

    def welfare_at(self, level) -> Number | None:
        """``f(level)`` by exact interpolation between breakpoints (None beyond ``t*``)."""
        t = Fraction(level)
        points = self.breakpoints
        if t < 0:
            return self.welfare_optimum
        for (t0, w0), (t1, w1) in zip(points, points[1:]):
            if t0 <= t <= t1:
                return _q(w0 + (Fraction(w1) - w0) * (t - t0) / (Fraction(t1) - t0)) if t1 != t0 else w0
        return points[-1][1] if t == points[-1][0] else None

    def to_dict(self) -> dict:
        return {
            "instance": self.instance,
            "normalizer": self.normalizer,
            "complete": self.complete,
            "lps": self.lps,
            "seconds": self.seconds,
            "breakpoints": [{"level": rational_text(t), "welfare": rational_text(w), "level_float": float(t),
                             "welfare_float": float(w)} for t, w in self.breakpoints],
        }


class _Curve:
    """Evaluations of ``f`` at rational levels: value and supergradient, each from an exactly solved LP."""

    def __init__(self, ex: ExactInstance, normalizer: str):
        self.ex = ex
        self.normalizer = normalizer
        self.scale = scales(ex, normalizer)
        part = set(taking_part(ex))
        self.members = [i for i in range(len(self.scale)) if i in part and self.scale[i] > 0]
        self.lps = 0

    def at(self, t: Number) -> tuple[Number, Number] | None:
        """``(f(t), slope)``, or None when no allocation reaches level ``t``."""
        lp = fair_welfare_lp(self.ex, floor=t, normalizer=self.normalizer)
        solution = solve_exact(lp)
        self.lps += 1
        if solution.status == "infeasible":
            return None
        if solution.status != "optimal":
            raise ArithmeticError(f"the LP at level {rational_text(t)} could not be proven: {solution.attempts}")
        rows = lp.row_blocks.get("floor")
        slope: Number = 0
        if rows is not None:
            for k, i in enumerate(self.members):
                y = solution.dual[rows.start + k]
                if y:
                    slope += y * self.scale[i]
        return solution.verdict.objective, _q(slope)


def _max_level(ex: ExactInstance, normalizer: str) -> Number:
    """``t*``: the first leximin level (0 when nobody takes part), from one exact LP."""
    from .exact_models import level_lp

    scale = scales(ex, normalizer)
    free = [i for i in taking_part(ex) if scale[i] > 0]
    if not free:
        return 0
    solution = solve_exact(level_lp(ex, scale, {}, free))
    if solution.status != "optimal":
        raise ArithmeticError(f"the max-min level could not be proven: {solution.attempts}")
    return solution.verdict.objective


def trace_frontier(instance: Instance, *, normalizer: str = "equal_share", max_lps: int = 400,
                   ex: ExactInstance | None = None) -> Frontier:
    """The exact frontier ``f`` on ``[0, t*]`` (module docstring); at most ``max_lps`` LP evaluations.

    When ``max_lps`` runs out before every interval is resolved, ``complete`` is
    False: the breakpoints found are exact points of ``f``, and between them the
    polyline is a lower bound of ``f`` (concavity).
    """
    if normalizer not in ("equal_share", "raw"):
        raise InputError(f"unknown normalizer {normalizer!r}; choose equal_share or raw", path="normalizer")
    if isinstance(max_lps, bool) or not isinstance(max_lps, int) or max_lps < 2:
        raise InputError(f"max_lps must be an integer >= 2, got {max_lps!r}", path="max_lps")
    start = time.perf_counter()
    ex = ex or exact_instance(instance)
    curve = _Curve(ex, normalizer)
    top = _max_level(ex, normalizer)
    lo_point = (0, *curve.at(0))
    if top == 0:
        return Frontier(instance.name, normalizer, [(0, lo_point[1])], True, curve.lps + 1,
                        time.perf_counter() - start, ex)
    hi_value = curve.at(top)
    if hi_value is None:
        raise ArithmeticError("the max-min level t* is not reachable: the exact LPs disagree")
    hi_point = (top, *hi_value)
    kinks: list[tuple[Number, Number]] = []
    complete = True
    stack = [(lo_point, hi_point)]
    while stack:
        (t0, f0, s0), (t1, f1, s1) = stack.pop()
        if s0 == s1:
            continue  # one line from t0 to t1
        tx = _q((Fraction(f1) - f0 + Fraction(s0) * t0 - Fraction(s1) * t1) / (Fraction(s0) - s1))
        if not t0 < tx < t1:
            continue  # the tangents meet at an end: f is linear on the interval
        line = _q(f0 + Fraction(s0) * (tx - Fraction(t0)))
        if curve.lps >= max_lps:
            complete = False
            continue
        value = curve.at(tx)
        if value is None:
            raise ArithmeticError(f"level {rational_text(tx)} below t* is unreachable: the exact LPs disagree")
        fx, sx = value
        if fx == line:
            kinks.append((tx, fx))
            continue
        stack.append(((t0, f0, s0), (tx, fx, sx)))
        stack.append(((tx, fx, sx), (t1, f1, s1)))
    points = sorted({(lo_point[0], lo_point[1]), (hi_point[0], hi_point[1]), *kinks})
    # Drop points where the slope does not change (collinear neighbours): only true breakpoints remain.
    pruned = [points[0]]
    for k in range(1, len(points) - 1):
        (ta, wa), (tb, wb), (tc, wc) = pruned[-1], points[k], points[k + 1]
        if (Fraction(wb) - wa) * (Fraction(tc) - tb) != (Fraction(wc) - wb) * (Fraction(tb) - ta):
            pruned.append(points[k])
    if len(points) > 1:
        pruned.append(points[-1])
    return Frontier(instance.name, normalizer, pruned, complete, curve.lps + 1, time.perf_counter() - start, ex)


#: Relative gap below which a placed allocation counts as on the frontier (:attr:`Placement.on_frontier`).
ON_FRONTIER = Fraction(1, 10**12)


@dataclass
class Placement:
    """Where an allocation sits: its max-min level, welfare, the frontier's welfare there and the gap."""

    name: str
    level: Number
    welfare: Number
    frontier_welfare: Number | None
    status: str = ""
    note: str = ""

    @property
    def gap(self) -> Number | None:
        return None if self.frontier_welfare is None else _q(Fraction(self.frontier_welfare) - self.welfare)

    @property
    def on_frontier(self) -> bool | None:
        """``gap <= ON_FRONTIER * max(1, |frontier welfare|)``: the allocation's decimals are a solver's
        floating-point output, so a gap of a few units in the last place is its rounding, not a
        distance from the curve (the exact gap is reported all the same)."""
        gap = self.gap
        if gap is None:
            return None
        return abs(gap) <= ON_FRONTIER * max(1, abs(Fraction(self.frontier_welfare)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "level": float(self.level),
            "welfare": float(self.welfare),
            "frontier_welfare": None if self.frontier_welfare is None else float(self.frontier_welfare),
            "gap": None if self.gap is None else float(self.gap),
            "on_frontier": self.on_frontier,
            "exact": {"level": rational_text(self.level), "welfare": rational_text(self.welfare),
                      "gap": None if self.gap is None else rational_text(self.gap)},
            "note": self.note,
        }


def _level_and_welfare(ex: ExactInstance, frontier: Frontier, amounts) -> tuple[Number, Number]:
    R = ex.rounds
    n = len(ex.weights)
    utility: list[Number] = [0] * n
    for e, i in enumerate(ex.edge_agent):
        for r in range(R):
            v = amounts[e][r]
            if v:
                utility[i] += ex.utility[e][r] * v
    welfare = sum(w * u for w, u in zip(ex.weights, utility))
    scale = scales(ex, frontier.normalizer)
    part = [i for i in taking_part(ex) if scale[i] > 0]
    level = min((Fraction(utility[i]) / scale[i] for i in part), default=Fraction(0))
    return _q(level), _q(welfare)


def place(frontier: Frontier, name: str, result: Result, *, instance: Instance | None = None) -> Placement:
    """Put ``result``'s allocation on the plane of ``frontier`` (exact: the allocation's decimals).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="two")
    >>> p = place(trace_frontier(inst), "equal", lo.solve(inst, "time_equal"))
    >>> str(p.level), str(p.welfare), str(p.frontier_welfare), str(p.gap)   # on the curve's end
    ('1', '7/5', '7/5', '0')
    """
    ex = frontier.ex or exact_instance(instance)
    amounts = exact_amounts(ex, result.allocation)
    level, welfare = _level_and_welfare(ex, frontier, amounts)
    return Placement(name, level, welfare, frontier.welfare_at(level), result.status)


def fair_optima(instance: Instance, frontier: Frontier, *, integral: bool = True, time_limit: float | None = 60.0):
    """The best welfare under each notion of :data:`NOTIONS`, time sharing (exact) and whole devices.

    Returns a list of dicts: ``notion``, ``meaning``, ``mode``, ``welfare`` (float), ``exact``
    (``p/q``, time sharing), ``level`` (the optimum's max-min level), ``price_of_fairness``
    (``(f(0) - W) / f(0)``) and ``status`` (``infeasible`` when no allocation meets the notion).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="two")
    >>> rows = fair_optima(inst, trace_frontier(inst), integral=False)
    >>> [(r["notion"], r["exact"], round(r["price_of_fairness"], 6)) for r in rows]
    [('sharing_incentive', '7/5', 0.222222), ('envy_free', '7/5', 0.222222), ('max_min', '7/5', 0.222222)]
    """
    from ..exact.fair_welfare import solve_fair_welfare

    ex = frontier.ex or exact_instance(instance)
    best = Fraction(frontier.welfare_optimum)
    rows = []
    for notion, (option, value, meaning) in NOTIONS.items():
        value = frontier.max_level if value is None else value
        kwargs = {option: value}
        lp = fair_welfare_lp(ex, **kwargs, normalizer=frontier.normalizer)
        solution = solve_exact(lp)
        row = {"notion": notion, "meaning": meaning, "mode": "fractional", "option": f"{option}={float(value):.12g}"}
        if solution.status == "optimal":
            w = solution.verdict.objective
            x = solution.primal[: lp.column_blocks["x"].size]
            R = ex.rounds
            amounts = [x[e * R:(e + 1) * R] for e in range(len(ex.edge_agent))]
            level, _ = _level_and_welfare(ex, frontier, amounts)
            row.update(status="optimal", welfare=float(w), exact=rational_text(w), level=float(level),
                       price_of_fairness=float((best - w) / best) if best else 0.0)
        else:
            row.update(status=solution.status, welfare=None, exact=None, level=None, price_of_fairness=None)
        rows.append(row)
        if integral:
            whole = float(value)
            if notion == "max_min":
                # Whole devices reach a lower max-min level than time sharing: hold the integral leximin's first.
                from ..exact.maxmin import solve_maxmin

                level = solve_maxmin(instance, fractional=False, normalizer=frontier.normalizer, time_limit=time_limit)
                whole = float(level.objective or 0.0) * (1 - 1e-9)
            result = solve_fair_welfare(instance, **{option: whole}, normalizer=frontier.normalizer,
                                        time_limit=time_limit, explain=False)
            irow = {"notion": notion, "meaning": meaning, "mode": "integral", "option": f"{option}={whole:.12g}",
                    "status": result.status, "exact": None}
            if result.status != "infeasible" and result.objective is not None:
                amounts = exact_amounts(ex, result.allocation)
                level, w = _level_and_welfare(ex, frontier, amounts)
                irow.update(welfare=float(w), level=float(level),
                            price_of_fairness=float((best - Fraction(w)) / best) if best else 0.0)
            else:
                irow.update(welfare=None, level=None, price_of_fairness=None)
            rows.append(irow)
    return rows


def frontier_figure(frontier: Frontier, placements: list[Placement], fair: list[dict] | None = None,
                    *, title: str | None = None):
    """A :class:`matplotlib.figure.Figure` of the frontier with the placements and fair optima.

    Built on :class:`matplotlib.figure.Figure` directly (no ``pyplot``), so the
    user's backend and open figures are left alone.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("A10", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="two")
    >>> curve = trace_frontier(inst)
    >>> figure = frontier_figure(curve, [place(curve, "greedy", lo.solve(inst, "greedy"))])
    >>> figure.axes[0].get_xlabel()
    'min phi_i (max-min level, equal-share normaliser)'
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 5.2), layout="constrained")
    ax = fig.subplots()
    ts = [float(t) for t, _ in frontier.breakpoints]
    ws = [float(w) for _, w in frontier.breakpoints]
    ys = ws + [float(p.welfare) for p in placements] + [r["welfare"] for r in fair or () if r.get("welfare") is not None]
    low, high = min(ys), max(ys)
    margin = 0.06 * (high - low) if high > low else max(1.0, abs(high)) * 0.1
    floor = low - margin
    if len(ts) == 1:  # nobody takes part: the curve is one point
        ax.scatter(ts, ws, color="#1f4e79", zorder=2, label="exact frontier f(t)")
    else:
        ax.fill_between(ts, ws, floor, color="#dbe8f5", label="attainable by time sharing")
        ax.plot(ts, ws, "-o", color="#1f4e79", lw=2, ms=4, label="exact frontier f(t)")
    colors = colormaps["tab20"]
    markers = "sD^v<>phX*P8d"
    for k, p in enumerate(placements):
        ax.scatter([float(p.level)], [float(p.welfare)], marker=markers[k % len(markers)], s=50, zorder=3,
                   color=colors(k % 20), edgecolors="black", linewidths=0.4, label=p.name)
    fair_markers = {"sharing_incentive": "o", "envy_free": "s", "max_min": "D"}
    for row in fair or ():
        if row.get("welfare") is None:
            continue
        filled = row["mode"] == "integral"
        ax.scatter([row["level"]], [row["welfare"]], marker=fair_markers.get(row["notion"], "o"), s=130,
                   facecolors="#b03a2e" if filled else "none", edgecolors="#b03a2e", linewidths=1.4,
                   alpha=0.5 if filled else 1.0, zorder=4,
                   label=f"best under {row['notion'].replace('_', ' ')} ({row['mode']})")
    label = "min phi_i (max-min level, equal-share normaliser)" if frontier.normalizer == "equal_share" \
        else "min U_i / w_i (max-min level, raw)"
    ax.set_xlabel(label)
    ax.set_ylabel("weighted welfare  sum_i w_i U_i")
    ax.set_ylim(floor, high + margin)
    ax.set_title(title or f"Price of fairness: {frontier.instance}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


@dataclass
class FrontierReport:
    """The frontier, the fair optima and every method placed on it (``lo.frontier``, ``laissez-opt frontier``)."""

    frontier: Frontier
    fair: list[dict]
    placements: list[Placement]
    skipped: dict[str, str] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "format": "laissez-opt/frontier",
            "version": 1,
            "frontier": self.frontier.to_dict(),
            "welfare_optimum": rational_text(self.frontier.welfare_optimum),
            "max_level": rational_text(self.frontier.max_level),
            "fair_optima": self.fair,
            "methods": [p.to_dict() for p in self.placements],
            "skipped": self.skipped,
            "timing": self.timing,
        }

    def figure(self):
        """The plot (:func:`frontier_figure`)."""
        return frontier_figure(self.frontier, self.placements, self.fair)

    def to_dataframe(self, which: str = "frontier"):
        """``"frontier"`` (breakpoints), ``"fair"`` (fair optima) or ``"methods"`` (placements) as a DataFrame."""
        import pandas as pd

        if which == "frontier":
            return pd.DataFrame(self.frontier.to_dict()["breakpoints"])
        if which == "fair":
            return pd.DataFrame(self.fair)
        if which == "methods":
            return pd.DataFrame([p.to_dict() for p in self.placements])
        raise ValueError(f"unknown table {which!r}: frontier, fair or methods")

    def markdown(self) -> str:
        """The three tables as Markdown."""
        f = self.frontier
        name = "min phi_i" if f.normalizer == "equal_share" else "min U_i / w_i"
        lines = [
            f"# Price of fairness: {f.instance}",
            "",
            f"Exact frontier between weighted welfare and the max-min level ({name}), time sharing: "
            f"{len(f.breakpoints)} breakpoints from {f.lps} exactly solved LPs"
            + ("" if f.complete else " (stopped at the LP budget: the polyline is a lower bound between points)")
            + ".",
            "",
            f"| level t ({name}) | welfare f(t) | level (exact) | welfare (exact) |",
            "| ---: | ---: | --- | --- |",
        ]
        for t, w in f.breakpoints:
            lines.append(f"| {float(t):.6g} | {float(w):.6g} | {_cell(t)} | {_cell(w)} |")
        lines += ["", "## Fair optima", "",
                  "| notion | mode | welfare | price of fairness | level | welfare (exact) |",
                  "| --- | --- | ---: | ---: | ---: | --- |"]
        for row in self.fair:
            lines.append(
                f"| {row['notion']} ({row['option']}) | {row['mode']} | {_num(row.get('welfare'))} | "
                f"{_num(row.get('price_of_fairness'))} | {_num(row.get('level'))} | "
                f"{row.get('exact') or row['status']} |")
        lines += ["", "## Methods placed against the frontier", "",
                  f"| method | status | level ({name}) | welfare | frontier at that level | gap below the frontier |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for p in self.placements:
            d = p.to_dict()
            lines.append(f"| {p.name} | {p.status} | {d['level']:.6g} | {d['welfare']:.6g} | "
                         f"{_num(d['frontier_welfare'])} | {_num(d['gap'])} |")
        for method, reason in self.skipped.items():
            lines.append(f"| {method} | skipped: {reason} | | | | |")
        return "\n".join(lines) + "\n"


def _num(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def _cell(value) -> str:
    text = rational_text(value)
    return text if len(text) <= 40 else f"{text[:18]}...{text[-18:]} ({len(text)} chars)"
