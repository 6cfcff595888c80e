"""How numbers, tables and plots of the library's reports are shown to people.

Numbers
-------
A solver returns doubles that carry the noise of floating-point arithmetic
(``7.681159000000001`` where the data say ``7.681159``).  HiGHS and OR-Tools
work to tolerances of about ``1e-9`` relative, so the digits past the twelfth
significant one carry no information about the problem.  :func:`readable`
rounds a value to :data:`SIGNIFICANT_DIGITS` significant digits,

.. math::

    \\operatorname{readable}(v) = \\operatorname{round}\\big(v,\\ 11 - \\lfloor \\log_{10} |v| \\rfloor\\big),

and Python then prints the result as the shortest decimal that reads back as
the same double.  The change is at most ``5e-13`` relative, far inside the
solvers' tolerance, so every check made on a written file (verification,
certificates, ``check``) reaches the same verdict.  Measured times keep
:data:`TIME_DIGITS` significant digits (a clock's resolution is about a
microsecond).  Values whose exactness is the point (certificates, exact
rationals) are never passed through here.

Tables and plots
----------------
:func:`html_table` writes the small HTML tables of the notebook displays
(``_repr_html_``); :func:`axes` gives the axes a plotting method draws on:
the caller's, or new ones from :mod:`matplotlib.pyplot`, which uses whatever
backend the user has (never switched here).  Files are drawn on a
:class:`matplotlib.figure.Figure` made directly (:func:`figure`), which
touches no global state.

>>> readable(7.681159000000001), readable(4.6000000000000005), readable(1e-300)
(7.681159, 4.6, 1e-300)
>>> readable(float("inf")), readable(None), readable(3)
(inf, None, 3)
>>> text(0.1 + 0.2), text(None), text(2.5e-7), text(True)
('0.3', '-', '2.5e-07', 'yes')
"""

from __future__ import annotations

import html
import math
from typing import Any, Iterable, Sequence

__all__ = [
    "SIGNIFICANT_DIGITS", "TIME_DIGITS", "readable", "readable_time", "text", "html_table", "html_block",
    "axes", "figure", "heatmap",
]

#: Significant digits kept of a value computed by a solver working to about 1e-9 relative.
SIGNIFICANT_DIGITS = 12
#: Significant digits kept of a measured time.
TIME_DIGITS = 6


def readable(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """``value`` rounded to ``digits`` significant digits when it is a finite float; anything else unchanged.

    >>> readable(0.30000000000000004), readable(123456789.123456789, 6), readable(-0.0)
    (0.3, 123457000.0, 0.0)
    """
    if isinstance(value, bool) or not isinstance(value, float):
        return value
    if not math.isfinite(value) or value == 0.0:
        return value + 0.0  # -0.0 reads as 0.0
    return float(f"{value:.{digits}g}")


def readable_time(value: Any) -> Any:
    """A measured time in seconds, rounded to :data:`TIME_DIGITS` significant digits.

    >>> readable_time(0.0123456789)
    0.0123457
    """
    return readable(value, TIME_DIGITS)


def text(value: Any, digits: int = 6) -> str:
    """A value as a short string for tables: ``digits`` significant digits, ``-`` for none, yes/no for flags.

    >>> text(7.681159000000001), text(float("-inf")), text(False), text("optimal")
    ('7.68116', '-inf', 'no', 'optimal')
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}g}"
    return str(value)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, caption: str | None = None,
               titles: Sequence[str | None] | None = None) -> str:
    """A small HTML table; every cell is shown with :func:`text` and escaped.

    ``titles`` (one per header, or None) become tooltips on the header cells.

    >>> html_table(["agent", "utility"], [["A", 0.1 + 0.2]])
    '<table><thead><tr><th>agent</th><th>utility</th></tr></thead><tbody><tr><td>A</td><td>0.3</td></tr></tbody></table>'
    """
    head = []
    for k, name in enumerate(headers):
        tip = titles[k] if titles is not None and k < len(titles) else None
        attr = f' title="{html.escape(tip, quote=True)}"' if tip else ""
        head.append(f"<th{attr}>{html.escape(str(name))}</th>")
    body = "".join("<tr>" + "".join(f"<td>{html.escape(text(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{''.join(head)}</tr></thead><tbody>{body}</tbody></table>"


def html_block(title: str, facts: Sequence[tuple[str, Any]], tables: Sequence[str] = (), note: str = "") -> str:
    """A titled block: a two-column table of facts, then further tables and a note (all escaped but the tables).

    >>> html_block("r", [("status", "optimal")]).startswith("<div")
    True
    """
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(text(v))}</td></tr>"
                   for k, v in facts)
    parts = [f"<div><strong>{html.escape(title)}</strong>", f"<table>{rows}</table>", *tables]
    if note:
        parts.append(f"<p><em>{html.escape(note)}</em></p>")
    parts.append("</div>")
    return "".join(parts)


def axes(ax=None, *, ncols: int = 1, figsize: tuple[float, float] = (6.4, 4.2)):
    """The axes to draw on: ``ax`` when given, else new ones from :func:`matplotlib.pyplot.subplots`.

    pyplot draws with the backend the user chose (inline in a notebook, a
    window on a desktop, Agg in a script without a display); nothing here
    selects one.  With ``ncols > 1`` an array of axes is returned.

    >>> import matplotlib.pyplot as plt
    >>> ax = axes(); type(ax).__name__
    'Axes'
    >>> plt.close(ax.figure)
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, made = plt.subplots(ncols=ncols, figsize=figsize)
    return made


def figure(figsize: tuple[float, float] = (6.4, 4.2)):
    """A :class:`matplotlib.figure.Figure` made without pyplot, for drawing a file (no global state, no backend).

    >>> fig = figure(); len(fig.axes)
    0
    """
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def heatmap(ax, matrix, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
            colorbar: str = "", cmap: str = "viridis", annotate: bool = True):
    """Draw ``matrix`` (rows x columns) as a heat map with labelled ticks and a colour bar; returns ``ax``.

    Cells are annotated with their values when the matrix is small (at most 20 x 20).

    >>> import numpy as np, matplotlib.pyplot as plt
    >>> ax = heatmap(axes(), np.eye(2), ["A", "B"], ["P", "Q"], title="x")
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['A', 'B']
    >>> plt.close(ax.figure)
    """
    import numpy as np

    data = np.asarray(matrix, dtype=float)
    image = ax.imshow(data, aspect="auto", cmap=cmap, interpolation="nearest")
    ax.set_xticks(range(len(col_labels)), labels=[str(c) for c in col_labels], rotation=45, ha="right")
    ax.set_yticks(range(len(row_labels)), labels=[str(r) for r in row_labels])
    if title:
        ax.set_title(title)
    bar = ax.figure.colorbar(image, ax=ax)
    if colorbar:
        bar.set_label(colorbar)
    if annotate and data.shape[0] <= 20 and data.shape[1] <= 20 and data.size:
        finite = data[np.isfinite(data)]
        middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
        for (i, j), value in np.ndenumerate(data):
            if np.isfinite(value) and value != 0:
                ax.text(j, i, text(float(value), 3), ha="center", va="center", fontsize="small",
                        color="white" if value < middle else "black")
    return ax
