"""Linear programs in exact rational arithmetic: feasibility, weak duality and exact basis solutions.

An :class:`ExactLP` is ``max (or min) c x + c_0  s.t.  L <= A x <= U,  l <= x <= u``
with every number an :class:`int` or a :class:`fractions.Fraction` and ``None``
for an infinite bound.  Columns and rows are named (``x["A","A10",0]``,
``capacity["A10",0]``) so that a failed check names what failed.

Three checks make a certificate (the LP duality theorem; Chvatal, *Linear
Programming*, 1983, ch. 5):

* **primal feasibility** of ``x``: every bound and every row holds exactly
  (:meth:`ExactLP.primal_failure`);
* **dual feasibility** of row multipliers ``y``: with reduced costs
  ``z = c - A^T y``, every nonzero ``y_r`` and ``z_j`` selects a finite bound,
  the upper one for a positive value in a maximisation (the lower one in a
  minimisation), and the *dual bound*
  ``D = c_0 + sum_r y_r (U_r or L_r) + sum_j z_j (u_j or l_j)`` bounds the
  objective of every feasible ``x``, because ``c x = y A x + z x`` term by term
  (:meth:`ExactLP.dual_bound`);
* **equal objectives**: ``c x + c_0 = D``; then ``x`` is optimal and ``D`` is
  the optimum (:meth:`ExactLP.verify`).

:func:`basis_solution` turns a basis (which columns and rows are basic, as
HiGHS reports it) into the exact primal and dual solutions of that basis by
solving its two square systems in rationals (:func:`solve_sparse`), so that a
floating-point optimum whose numbers are slightly off is repaired instead of
trusted.  :func:`exact_simplex` pivots, in rationals, from a basis that is not
exactly optimal to one that is.  :func:`solve_exact` does it all: HiGHS finds a
basis, the basis is solved exactly and the three checks run; when they fail,
exact pivots repair the basis (and, failing that, HiGHS solves again with
presolve off and tighter tolerances).

Example
-------
>>> from fractions import Fraction as F
>>> lp = ExactLP("toy", "max")
>>> x = lp.add_columns("x", 2, lower=[0, 0], upper=[None, F(1, 2)], objective=[1, 3])
>>> _ = lp.add_rows("budget", [[(x + 0, 1), (x + 1, 1)]], lower=[None], upper=[1])
>>> solution = solve_exact(lp)
>>> solution.status, solution.primal, solution.dual, solution.verdict.objective
('optimal', [Fraction(1, 2), Fraction(1, 2)], [1], Fraction(2, 1))
>>> lp.verify(solution.primal, [F(11, 10)]).failure   # a wrong multiplier leaves a gap
'objective: the allocation reaches 2 but the dual bound is 41/20'
>>> lp.verify(solution.primal, [F(9, 10)]).failure    # ... or proves nothing
'column x[0]: reduced cost 1/10 needs a finite upper bound (dual infeasible)'
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from ..errors import SolverError

__all__ = [
    "ExactLP",
    "Verdict",
    "ExactSolution",
    "SingularBasisError",
    "solve_sparse",
    "basis_solution",
    "exact_simplex",
    "solve_exact",
    "as_fraction",
    "rational_text",
    "parse_rational",
    "label",
]

Number = int | Fraction


def _q(value) -> Number:
    """A rational as an int when it is whole."""
    value = Fraction(value)
    return int(value) if value.denominator == 1 else value


def as_fraction(value) -> Number:
    """``value`` as an exact number: ints stay ints, floats read as their shortest decimal (``repr``).

    >>> as_fraction(0.1), as_fraction(3), as_fraction(2.0)
    (Fraction(1, 10), 3, 2)
    """
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return value
    if isinstance(value, (float, np.floating)):
        q = Fraction(repr(float(value)))
        return int(q) if q.denominator == 1 else q
    if isinstance(value, np.integer):
        return int(value)
    raise TypeError(f"expected a number, got {value!r}")


@contextlib.contextmanager
def _long_integers():
    """Lift Python's guard on converting integers of over 4,300 digits to and from text, for the block.

    The guard protects parsers of untrusted input from quadratic time; the exact
    duals of a level LP of a few hundred agents have numerators of thousands of
    digits, and a certificate must write and read them whole.  The limit is put
    back afterwards (``sys.set_int_max_str_digits`` is process-wide).
    """
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        yield
        return
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def rational_text(value: Number) -> str:
    """``"p/q"`` (or ``"p"`` for an integer): how certificates write exact numbers.

    >>> rational_text(Fraction(3, 4)), rational_text(Fraction(4, 2)), rational_text(-5)
    ('3/4', '2', '-5')
    """
    value = Fraction(value)
    with _long_integers():
        return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


#: A fraction longer than this many characters is written in messages as its float and its size.
BRIEF_CHARS = 40


def rational_brief(value: Number) -> str:
    """:func:`rational_text` for messages: a fraction of more than :data:`BRIEF_CHARS` characters as its float.

    Exact pivots can build fractions of thousands of digits; a one-line message keeps their size only.

    >>> rational_brief(Fraction(3, 4)), rational_brief(Fraction(10**60 + 1, 3 * 10**59))
    ('3/4', '3.3333333333333335 (a fraction of 61/60 digits)')
    """
    text = rational_text(value)
    if len(text) <= BRIEF_CHARS:
        return text
    value = Fraction(value)
    with _long_integers():
        digits = f"{len(str(abs(value.numerator)))}/{len(str(value.denominator))}"
    return f"{float(value)!r} (a fraction of {digits} digits)"


def parse_rational(text) -> Number:
    """The exact number written as ``"p/q"``, ``"p"`` or a decimal string (``"0.125"``, ``"1e-3"``).

    >>> parse_rational("3/4"), parse_rational("7"), parse_rational("0.125")
    (Fraction(3, 4), 7, Fraction(1, 8))
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"expected an exact number as text (p/q), got {text!r}")
    with _long_integers():
        value = Fraction(text)
    return int(value) if value.denominator == 1 else value


def label(block: str, *keys) -> str:
    """The name of a column or row: ``block[key,...]`` with ids JSON-quoted, so names never collide.

    >>> label("capacity", "A10", 0), label("t")
    ('capacity["A10",0]', 't')
    """
    if not keys:
        return block
    return block + "[" + ",".join(json.dumps(k) for k in keys) + "]"


@dataclass
class _Block:
    name: str
    start: int
    size: int
    namer: Callable[[int], str] | None


@dataclass
class Verdict:
    """What :meth:`ExactLP.verify` found.

    ``ok`` when the primal is feasible, the dual feasible and both objectives
    equal; ``objective`` is ``c x + c_0`` (None if the primal was not given or
    is infeasible), ``bound`` the dual bound (None when the dual is infeasible),
    ``failure`` a one-line account of the first thing that failed, naming the
    row or column.
    """

    ok: bool
    objective: Number | None
    bound: Number | None
    failure: str = ""


class ExactLP:
    """A linear program over exact numbers, declared block by block (see the module docstring)."""

    def __init__(self, name: str, sense: str = "max"):
        if sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
        self.name = name
        self.sense = sense
        self.objective: list[Number] = []
        self.offset: Number = 0
        self.col_lower: list[Number | None] = []
        self.col_upper: list[Number | None] = []
        self.col_rows: list[list[int]] = []
        self.col_coefs: list[list[Number]] = []
        self.row_lower: list[Number | None] = []
        self.row_upper: list[Number | None] = []
        self.column_blocks: dict[str, _Block] = {}
        self.row_blocks: dict[str, _Block] = {}

    # ----------------------------------------------------------- declaring
    @property
    def n_cols(self) -> int:
        return len(self.objective)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    def add_columns(self, name: str, size: int, *, lower, upper, objective, namer=None) -> int:
        """Append ``size`` columns; returns the index of the first.  ``namer(k)`` names column ``k`` of the block."""
        start = self.n_cols
        lower, upper, objective = list(lower), list(upper), list(objective)
        if not len(lower) == len(upper) == len(objective) == size:
            raise ValueError(f"block {name}: {size} columns need {size} bounds and costs")
        self.objective += objective
        self.col_lower += lower
        self.col_upper += upper
        self.col_rows += [[] for _ in range(size)]
        self.col_coefs += [[] for _ in range(size)]
        self.column_blocks[name] = _Block(name, start, size, namer)
        return start

    def add_rows(self, name: str, rows: Sequence[Sequence[tuple[int, Number]]], *, lower, upper, namer=None) -> int:
        """Append one row per entry of ``rows`` (a list of ``(column, coefficient)`` pairs); returns the first row."""
        start = self.n_rows
        lower, upper = list(lower), list(upper)
        if not len(lower) == len(upper) == len(rows):
            raise ValueError(f"block {name}: {len(rows)} rows need as many bounds")
        col_rows, col_coefs = self.col_rows, self.col_coefs
        for k, entries in enumerate(rows):
            r = start + k
            for j, a in entries:
                if a:
                    col_rows[j].append(r)
                    col_coefs[j].append(a)
        self.row_lower += lower
        self.row_upper += upper
        self.row_blocks[name] = _Block(name, start, len(rows), namer)
        return start

    # -------------------------------------------------------------- naming
    @staticmethod
    def _name(blocks: dict[str, _Block], index: int, kind: str) -> str:
        for block in blocks.values():
            if block.start <= index < block.start + block.size:
                k = index - block.start
                return block.namer(k) if block.namer else (block.name if block.size == 1 else f"{block.name}[{k}]")
        raise IndexError(f"no {kind} {index}")

    def column_name(self, j: int) -> str:
        return self._name(self.column_blocks, j, "column")

    def row_name(self, r: int) -> str:
        return self._name(self.row_blocks, r, "row")

    def column_index(self) -> dict[str, int]:
        """Name -> column, for reading certificates."""
        return {self.column_name(j): j for j in range(self.n_cols)}

    def row_index(self) -> dict[str, int]:
        """Name -> row, for reading certificates."""
        return {self.row_name(r): r for r in range(self.n_rows)}

    # ------------------------------------------------------------- algebra
    def value(self, x: Sequence[Number]) -> Number:
        """``c x + c_0``."""
        total = self.offset
        for c, v in zip(self.objective, x):
            if v and c:
                total += c * v
        return total

    def activities(self, x: Sequence[Number]) -> list[Number]:
        """``A x`` row by row."""
        act: list[Number] = [0] * self.n_rows
        for j, v in enumerate(x):
            if v:
                for r, a in zip(self.col_rows[j], self.col_coefs[j]):
                    act[r] += a * v
        return act

    def primal_failure(self, x: Sequence[Number]) -> str:
        """``""`` when ``x`` satisfies every bound and row exactly, else the first violation, named."""
        if len(x) != self.n_cols:
            return f"the primal has {len(x)} entries, the LP {self.n_cols} columns"
        for j, v in enumerate(x):
            lo, up = self.col_lower[j], self.col_upper[j]
            if lo is not None and v < lo:
                return f"column {self.column_name(j)}: value {rational_brief(v)} is below its lower bound {rational_brief(lo)}"
            if up is not None and v > up:
                return f"column {self.column_name(j)}: value {rational_brief(v)} is above its upper bound {rational_brief(up)}"
        for r, a in enumerate(self.activities(x)):
            lo, up = self.row_lower[r], self.row_upper[r]
            if lo is not None and a < lo:
                return f"row {self.row_name(r)}: activity {rational_brief(a)} is below {rational_brief(lo)}"
            if up is not None and a > up:
                return f"row {self.row_name(r)}: activity {rational_brief(a)} is above {rational_brief(up)}"
        return ""

    def max_violation(self, x: Sequence[Number]) -> tuple[Number, str]:
        """The largest amount by which ``x`` breaks a bound or a row, and where (``(0, "")`` when feasible)."""
        worst: Number = 0
        where = ""
        for j, v in enumerate(x):
            lo, up = self.col_lower[j], self.col_upper[j]
            gap = max(lo - v if lo is not None else 0, v - up if up is not None else 0)
            if gap > worst:
                worst, where = gap, f"column {self.column_name(j)}"
        for r, a in enumerate(self.activities(x)):
            lo, up = self.row_lower[r], self.row_upper[r]
            gap = max(lo - a if lo is not None else 0, a - up if up is not None else 0)
            if gap > worst:
                worst, where = gap, f"row {self.row_name(r)}"
        return worst, where

    def reduced_costs(self, y: Sequence[Number]) -> list[Number]:
        """``z = c - A^T y``."""
        z = list(self.objective)
        for j in range(self.n_cols):
            total = z[j]
            for r, a in zip(self.col_rows[j], self.col_coefs[j]):
                w = y[r]
                if w:
                    total -= w if a == 1 else a * w
            z[j] = total
        return z

    def dual_bound(self, y: Sequence[Number]) -> tuple[Number | None, str]:
        """The bound ``D`` that multipliers ``y`` prove on the objective, or ``(None, failure)``.

        A maximisation gets an upper bound: a positive ``y_r`` (or ``z_j``) takes the
        upper bound of its row (column), a negative one the lower bound, and an
        infinite bound makes ``y`` infeasible for the dual.  A minimisation gets a
        lower bound, with the roles of the two bounds swapped.
        """
        if len(y) != self.n_rows:
            return None, f"the dual has {len(y)} entries, the LP {self.n_rows} rows"
        maximise = self.sense == "max"
        total = self.offset
        for r, w in enumerate(y):
            if not w:
                continue
            bound = self.row_upper[r] if (w > 0) == maximise else self.row_lower[r]
            if bound is None:
                side = "positive" if w > 0 else "negative"
                return None, (f"row {self.row_name(r)}: multiplier {rational_brief(w)} is {side} but the row has no "
                              f"{'upper' if (w > 0) == maximise else 'lower'} bound (dual infeasible)")
            total += w * bound
        # Reduced costs in integers: z_j = Z_j / (L * Y_den), no gcd per operation (the multipliers of
        # a leximin LP can have denominators of a thousand digits).
        scale_data, c_int, a_int = self._integer_data()
        y_den = math.lcm(*(Fraction(w).denominator for w in y if w)) if any(y) else 1
        y_int = [0 if not w else (w * y_den if isinstance(w, int) else w.numerator * (y_den // w.denominator))
                 for w in y]
        whole = 0  # sum of Z_j * integer bounds
        part: Number = 0  # sum of Z_j * fractional bounds
        col_rows = self.col_rows
        for j in range(self.n_cols):
            z = c_int[j] * y_den
            for r, a in zip(col_rows[j], a_int[j]):
                w = y_int[r]
                if w:
                    z -= a * w
            if not z:
                continue
            bound = self.col_upper[j] if (z > 0) == maximise else self.col_lower[j]
            if bound is None:
                value = Fraction(z, scale_data * y_den)
                return None, (f"column {self.column_name(j)}: reduced cost {rational_brief(value)} needs a finite "
                              f"{'upper' if (z > 0) == maximise else 'lower'} bound (dual infeasible)")
            if bound:
                if isinstance(bound, int):
                    whole += z * bound
                else:
                    part += z * bound
        return _q(total + Fraction(whole, scale_data * y_den) + Fraction(part) / (scale_data * y_den)), ""

    def _integer_data(self):
        """``(L, L c, L A)``: the objective and matrix scaled by the lcm ``L`` of their denominators (cached)."""
        cached = self.__dict__.get("_integers")
        if cached is not None and cached[0] == (self.n_cols, self.n_rows):
            return cached[1]
        denominators = {c.denominator for c in self.objective if isinstance(c, Fraction)}
        for coefs in self.col_coefs:
            denominators.update(a.denominator for a in coefs if isinstance(a, Fraction))
        scale = math.lcm(*denominators) if denominators else 1

        def scaled(v):
            return v * scale if isinstance(v, int) else v.numerator * (scale // v.denominator)

        c_int = [scaled(c) if c else 0 for c in self.objective]
        a_int = [[scaled(a) for a in coefs] for coefs in self.col_coefs]
        data = (scale, c_int, a_int)
        self._integers = ((self.n_cols, self.n_rows), data)
        return data

    def verify(self, x: Sequence[Number] | None, y: Sequence[Number]) -> Verdict:
        """Primal feasibility of ``x``, dual feasibility of ``y`` and equal objectives, exactly."""
        bound, failure = self.dual_bound(y)
        if bound is None:
            return Verdict(False, None, None, failure)
        if x is None:
            return Verdict(False, None, bound, "no primal solution given")
        failure = self.primal_failure(x)
        if failure:
            return Verdict(False, None, bound, failure)
        objective = self.value(x)
        if objective != bound:
            return Verdict(False, objective, bound, f"objective: the allocation reaches {rational_brief(objective)} "
                                                    f"but the dual bound is {rational_brief(bound)}")
        return Verdict(True, objective, bound)

    # ------------------------------------------------------ floating point
    def to_linear_model(self, ease: float = 0.0):
        """The same LP in floating point, as a declared :class:`~laissez_opt.modeling.LinearModel`.

        Blocks keep their names and order, so a basis found for the model is a
        basis of this LP.  ``ease > 0`` widens every finite row bound by
        ``ease max(1, |bound|)`` (a basis of the eased LP is still a basis of this one).
        """
        from ..modeling import LinearModel

        model = LinearModel(self.name, sense=self.sense)
        inf = float("inf")
        for block in self.column_blocks.values():
            sl = slice(block.start, block.start + block.size)
            lower = np.array([-inf if v is None else float(v) for v in self.col_lower[sl]], dtype=np.float64)
            upper = np.array([inf if v is None else float(v) for v in self.col_upper[sl]], dtype=np.float64)
            var = model.add_variables(block.name, block.size, lower=lower, upper=upper)
            model.objective[var.slice] = [float(c) for c in self.objective[sl]]
        model.objective_offset = float(self.offset)
        rows_of = [[] for _ in self.row_blocks]
        block_of_row = np.empty(self.n_rows, dtype=np.int64)
        blocks = list(self.row_blocks.values())
        for b, block in enumerate(blocks):
            block_of_row[block.start:block.start + block.size] = b
        for j in range(self.n_cols):
            for r, a in zip(self.col_rows[j], self.col_coefs[j]):
                rows_of[block_of_row[r]].append((r, j, a))
        for b, block in enumerate(blocks):
            entries = rows_of[b]
            rows = np.array([r - block.start for r, _, _ in entries], dtype=np.int64)
            cols = np.array([j for _, j, _ in entries], dtype=np.int64)
            coefs = np.array([float(a) for _, _, a in entries], dtype=np.float64)
            sl = slice(block.start, block.start + block.size)
            lower = np.array([-inf if v is None else float(v) for v in self.row_lower[sl]], dtype=np.float64)
            upper = np.array([inf if v is None else float(v) for v in self.row_upper[sl]], dtype=np.float64)
            if ease > 0:
                lower = lower - ease * np.maximum(1.0, np.abs(lower))
                upper = upper + ease * np.maximum(1.0, np.abs(upper))
            model.add_constraints(block.name, rows=rows, cols=cols, coefs=coefs, lower=lower, upper=upper,
                                  n_rows=block.size)
        return model


# --------------------------------------------------------------------------- exact linear algebra
class SingularBasisError(ArithmeticError):
    """The basis matrix handed to :func:`solve_sparse` is singular."""


def solve_sparse(equations: list[dict], rhs: list[Number]) -> dict:
    """Solve the square sparse system ``sum_v equations[k][v] * x_v = rhs[k]`` exactly.

    Gaussian elimination over :class:`~fractions.Fraction` with Markowitz-style
    pivoting: a column that appears in one remaining row, or a row with one
    remaining variable, is taken first (no fill-in), which solves the bases of
    network and transportation matrices (spanning forests) in linear time.
    Returns ``{variable: value}``; raises :class:`SingularBasisError` when the
    system has no unique solution.

    >>> sorted(solve_sparse([{"a": 1, "b": 1}, {"a": 1, "b": -1}], [3, 1]).items())
    [('a', 2), ('b', 1)]
    """
    rows = [dict(eq) for eq in equations]
    rhs = list(rhs)
    variables = {v for eq in rows for v in eq}
    if len(variables) != len(rows):
        raise SingularBasisError(f"{len(rows)} equations in {len(variables)} unknowns")
    where: dict = {v: set() for v in variables}
    for k, eq in enumerate(rows):
        for v in list(eq):
            if eq[v] == 0:
                del eq[v]
            else:
                where[v].add(k)
    active = set(range(len(rows)))
    var_heap = [(len(ks), n, v) for n, (v, ks) in enumerate(where.items())]
    heapq.heapify(var_heap)
    order = {v: n for n, (v, _) in enumerate(where.items())}
    row_heap = [(len(eq), k) for k, eq in enumerate(rows)]
    heapq.heapify(row_heap)
    done: set = set()
    pivots: list[tuple[int, object]] = []
    while active:
        # Freshest smallest column count and row length (stale heap entries are skipped).
        while var_heap and (var_heap[0][2] in done or var_heap[0][0] != len(where[var_heap[0][2]])):
            heapq.heappop(var_heap)
        while row_heap and (row_heap[0][1] not in active or row_heap[0][0] != len(rows[row_heap[0][1]])):
            heapq.heappop(row_heap)
        if row_heap and row_heap[0][0] == 0:
            raise SingularBasisError("a row lost all its unknowns")
        if not var_heap:
            raise SingularBasisError("unknowns ran out before equations")
        count, _, v = var_heap[0]
        if count == 0:
            raise SingularBasisError(f"unknown {v!r} appears in no remaining equation")
        if count == 1:
            (k,) = where[v]
        elif row_heap and row_heap[0][0] == 1:
            k = row_heap[0][1]
            (v,) = rows[k]
        else:
            k = min(where[v], key=lambda q: (len(rows[q]), q))
        pivot_row = rows[k]
        a = pivot_row[v]
        active.discard(k)
        done.add(v)
        for u in pivot_row:
            where[u].discard(k)
        for q in list(where[v]):  # eliminate v from the other rows that hold it
            target = rows[q]
            factor = Fraction(target.pop(v)) / a
            where[v].discard(q)
            for u, coef in pivot_row.items():
                if u == v:
                    continue
                new = target.get(u, 0) - factor * coef
                if new:
                    if u not in target:
                        where[u].add(q)
                    target[u] = new
                elif u in target:
                    del target[u]
                    where[u].discard(q)
                heapq.heappush(var_heap, (len(where[u]), order[u], u))
            if rhs[k]:
                rhs[q] -= factor * rhs[k]
            heapq.heappush(row_heap, (len(target), q))
        for u in pivot_row:
            if u != v:
                heapq.heappush(var_heap, (len(where[u]), order[u], u))
        pivots.append((k, v))
    values: dict = {}
    for k, v in reversed(pivots):
        row = rows[k]
        total = rhs[k]
        for u, coef in row.items():
            if u != v:
                total -= coef * values[u]
        value = Fraction(total) / row[v]
        values[v] = int(value) if value.denominator == 1 else value
    return values


_LOWER, _BASIC, _UPPER, _ZERO = 0, 1, 2, 3


def _resting(status: int, lo: Number | None, up: Number | None) -> Number:
    """Where a nonbasic variable (or row activity) rests for its basis status."""
    if status == _UPPER and up is not None:
        return up
    if status == _ZERO:
        return 0
    if lo is not None:
        return lo
    return up if up is not None else 0


class _Basis:
    """A basis of an :class:`ExactLP` and its exact linear algebra.

    The LP is read as ``A x - s = 0`` with ``l <= x <= u`` and ``L <= s <= U``:
    each row has a slack ``s_r`` (its activity).  ``m`` of the ``n + m``
    variables are basic.  The basic columns solve the equations of the
    nonbasic rows (whose activity rests at a bound); basic rows' activities
    follow.  Every system is solved afresh by :func:`solve_sparse`.
    """

    def __init__(self, lp: ExactLP, column_status, row_status):
        self.lp = lp
        self.cs = [int(v) for v in column_status]
        self.rs = [int(v) for v in row_status]
        if len(self.cs) != lp.n_cols or len(self.rs) != lp.n_rows:
            raise ValueError("the basis does not match the LP's columns and rows")

    def _system(self):
        lp = self.lp
        nonbasic_rows = [r for r, v in enumerate(self.rs) if v != _BASIC]
        equations = {r: {} for r in nonbasic_rows}
        basic = [j for j, v in enumerate(self.cs) if v == _BASIC]
        for j in basic:
            for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
                if r in equations:
                    equations[r][j] = a
        return nonbasic_rows, equations, basic

    def primal(self) -> list[Number]:
        """``x`` of the basis: nonbasic columns at their bounds, basic ones from ``B x_B = b - N x_N``."""
        lp = self.lp
        x: list[Number] = [0] * lp.n_cols
        for j, status in enumerate(self.cs):
            if status != _BASIC:
                x[j] = _resting(status, lp.col_lower[j], lp.col_upper[j])
        nonbasic_rows, equations, basic = self._system()
        target = {r: _resting(self.rs[r], lp.row_lower[r], lp.row_upper[r]) for r in nonbasic_rows}
        for j, v in enumerate(x):
            if v and self.cs[j] != _BASIC:
                for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
                    if r in target:
                        target[r] -= a * v
        if nonbasic_rows or basic:
            values = solve_sparse([equations[r] for r in nonbasic_rows], [target[r] for r in nonbasic_rows])
            for j, v in values.items():
                x[j] = v
        return x

    def duals(self, cost: Sequence[Number]) -> list[Number]:
        """``y`` with ``y_r = 0`` on basic rows and ``(A^T y)_j = cost_j`` on basic columns."""
        lp = self.lp
        nonbasic_rows, equations, basic = self._system()
        y: list[Number] = [0] * lp.n_rows
        if basic:
            transposed = [{r: a for r, a in zip(lp.col_rows[j], lp.col_coefs[j]) if r in equations} for j in basic]
            for r, v in solve_sparse(transposed, [cost[j] for j in basic]).items():
                y[r] = v
        return y

    def direction(self, entering: int, sign: int) -> tuple[dict[int, Number], dict[int, Number]]:
        """How basic columns and row activities move per unit step of variable ``entering`` in direction ``sign``.

        ``entering < n``: column ``entering``; otherwise the slack of row ``entering - n``.
        Returns ``({basic column: dx}, {row: d activity})`` (zeros left out).
        """
        lp = self.lp
        n = lp.n_cols
        nonbasic_rows, equations, basic = self._system()
        rhs = {r: 0 for r in nonbasic_rows}
        moved: dict[int, Number] = {}
        if entering < n:
            moved[entering] = sign
            for r, a in zip(lp.col_rows[entering], lp.col_coefs[entering]):
                if r in rhs:
                    rhs[r] -= sign * a
        else:
            rhs[entering - n] = sign
        dx = {}
        if nonbasic_rows or basic:
            dx = {j: v for j, v in solve_sparse([equations[r] for r in nonbasic_rows],
                                                [rhs[r] for r in nonbasic_rows]).items() if v}
        moved.update(dx)
        activity: dict[int, Number] = {}
        for j, v in moved.items():
            for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
                activity[r] = activity.get(r, 0) + a * v
        if entering >= n:
            activity[entering - n] = sign
        return dx, {r: v for r, v in activity.items() if v}


def basis_solution(lp: ExactLP, column_basis, row_basis) -> tuple[list[Number], list[Number]]:
    """The exact primal ``x`` and row duals ``y`` of a basis of ``lp``.

    ``column_basis[j]`` / ``row_basis[r]``: 0 nonbasic at the lower bound, 1
    basic, 2 nonbasic at the upper bound, 3 nonbasic at zero (HiGHS's codes,
    :class:`~laissez_opt.modeling.solution.Duals`).  Nonbasic columns sit at
    their bound, nonbasic rows hold their activity at their bound; the basic
    columns then solve ``B x_B = b - N x_N`` over the nonbasic rows, and the
    duals of the nonbasic rows solve ``B^T y = c_B`` (basic rows have ``y = 0``).
    Both systems are solved in rationals (:func:`solve_sparse`).  Whether the
    result is feasible and optimal is for :meth:`ExactLP.verify` to say.

    >>> lp = ExactLP("toy", "max")
    >>> x = lp.add_columns("x", 2, lower=[0, 0], upper=[None, Fraction(1, 2)], objective=[1, 3])
    >>> _ = lp.add_rows("budget", [[(x, 1), (x + 1, 1)]], lower=[None], upper=[1])
    >>> basis_solution(lp, [1, 2], [2])     # x0 basic, x1 at its upper bound, the row at its upper bound
    ([Fraction(1, 2), Fraction(1, 2)], [1])
    """
    basis = _Basis(lp, np.asarray(column_basis).tolist(), np.asarray(row_basis).tolist())
    return basis.primal(), basis.duals(lp.objective)


def _out_of_bounds(value: Number, lo: Number | None, up: Number | None) -> int:
    """+1 when below ``lo`` (must rise), -1 when above ``up`` (must fall), 0 inside."""
    if lo is not None and value < lo:
        return 1
    if up is not None and value > up:
        return -1
    return 0


def exact_simplex(lp: ExactLP, column_basis, row_basis, *, max_pivots: int = 500):
    """Repair a basis by exact bounded simplex pivots; returns ``(x, y, message)`` (``x`` None on failure).

    Phase 1 (the basis's exact solution breaks a bound): maximise the sum of
    the violated basic variables' moves toward their bounds, a violated
    variable leaving the basis at the bound it reaches.  Phase 2: the primal
    simplex on the LP's own objective.  Bland's rule (smallest index enters;
    ties in the ratio test leave by smallest index) prevents cycling
    (Chvatal, *Linear Programming*, 1983, ch. 3 and 8).  Every number is a
    rational; each pivot solves the basis systems afresh.  Meant for the few
    pivots by which a floating-point basis can miss the exact optimum.

    >>> lp = ExactLP("toy", "max")
    >>> x = lp.add_columns("x", 2, lower=[0, 0], upper=[None, Fraction(1, 2)], objective=[1, 3])
    >>> _ = lp.add_rows("budget", [[(x, 1), (x + 1, 1)]], lower=[None], upper=[1])
    >>> exact_simplex(lp, [0, 0], [1])      # from the slack basis: everything at 0
    ([Fraction(1, 2), Fraction(1, 2)], [1], 'optimal after 2 exact pivots')
    """
    n, m = lp.n_cols, lp.n_rows
    basis = _Basis(lp, np.asarray(column_basis).tolist(), np.asarray(row_basis).tolist())
    sense = 1 if lp.sense == "max" else -1
    objective = [sense * c for c in lp.objective]
    row_entries: list[list[tuple[int, Number]]] = [[] for _ in range(m)]
    for j in range(n):
        for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
            row_entries[r].append((j, a))
    cs, rs = basis.cs, basis.rs
    for pivot in range(max_pivots + 1):
        try:
            x = basis.primal()
        except SingularBasisError as exc:
            return None, None, f"singular basis after {pivot} pivots ({exc})"
        activity = lp.activities(x)
        # Phase 1 costs: +1 on a basic variable below its lower bound, -1 above its upper bound.
        cost: list[Number] = [0] * n
        infeasible = False
        for j, status in enumerate(cs):
            if status == _BASIC:
                move = _out_of_bounds(x[j], lp.col_lower[j], lp.col_upper[j])
                if move:
                    cost[j] += move
                    infeasible = True
        for r, status in enumerate(rs):
            if status == _BASIC:
                move = _out_of_bounds(activity[r], lp.row_lower[r], lp.row_upper[r])
                if move:
                    infeasible = True
                    for j, a in row_entries[r]:
                        cost[j] += move * a
        if not infeasible:
            cost = objective
        y = basis.duals(cost)
        entering, sign = None, 0
        for q in range(n + m):
            if q < n:
                status = cs[q]
                if status == _BASIC:
                    continue
                d = cost[q]
                for r, a in zip(lp.col_rows[q], lp.col_coefs[q]):
                    if y[r]:
                        d -= a * y[r]
                lo, up = lp.col_lower[q], lp.col_upper[q]
            else:
                status = rs[q - n]
                if status == _BASIC:
                    continue
                d = y[q - n]
                lo, up = lp.row_lower[q - n], lp.row_upper[q - n]
            if not d or (lo is not None and lo == up):
                continue
            here = x[q] if q < n else activity[q - n]
            if d > 0 and (up is None or here < up):
                entering, sign = q, 1
                break
            if d < 0 and (lo is None or here > lo):
                entering, sign = q, -1
                break
        if entering is None:
            if infeasible:
                return None, None, f"phase 1 ended with a bound still broken after {pivot} pivots: the LP is infeasible"
            return x, [sense * v for v in y], f"optimal after {pivot} exact pivots"
        dx, dact = basis.direction(entering, sign)
        here = x[entering] if entering < n else activity[entering - n]
        lo, up = (lp.col_lower[entering], lp.col_upper[entering]) if entering < n else (
            lp.row_lower[entering - n], lp.row_upper[entering - n])
        best = (up - here) if sign > 0 and up is not None else (here - lo) if sign < 0 and lo is not None else None
        leaving, leave_at = (entering, _UPPER if sign > 0 else _LOWER) if best is not None else (None, None)
        candidates = [(j, x[j], lp.col_lower[j], lp.col_upper[j], delta) for j, delta in dx.items()]
        candidates += [(n + r, activity[r], lp.row_lower[r], lp.row_upper[r], delta)
                       for r, delta in dact.items() if rs[r] == _BASIC]
        for index, value, lo_k, up_k, delta in sorted(candidates, key=lambda c: c[0]):
            side = _out_of_bounds(value, lo_k, up_k)
            if delta > 0:
                limit, at = ((up_k, _UPPER) if side == 0 else (lo_k, _LOWER) if side == 1 else (None, None))
            else:
                limit, at = ((lo_k, _LOWER) if side == 0 else (up_k, _UPPER) if side == -1 else (None, None))
            if limit is None:
                continue
            step = Fraction(limit - value) / delta
            if best is None or step < best or (step == best and index < leaving):
                best, leaving, leave_at = step, index, at
        if best is None:
            return None, None, f"unbounded direction at pivot {pivot}"
        if leaving == entering:
            if entering < n:
                cs[entering] = leave_at
            else:
                rs[entering - n] = leave_at
            continue
        if entering < n:
            cs[entering] = _BASIC
        else:
            rs[entering - n] = _BASIC
        if leaving < n:
            cs[leaving] = leave_at
        else:
            rs[leaving - n] = leave_at
    return None, None, f"no optimum within {max_pivots} exact pivots"


@dataclass
class ExactSolution:
    """The outcome of :func:`solve_exact`: status, exact primal and duals, and their :class:`Verdict`."""

    status: str  # optimal, infeasible, unproven
    primal: list[Number] | None
    dual: list[Number] | None
    verdict: Verdict | None
    attempts: list[str] = field(default_factory=list)
    solve_s: float = 0.0
    exact_s: float = 0.0


#: HiGHS's routes to a basis, in order: default options; no presolve and tolerances of 1e-10
#: ("strict"); strict on the LP with every row bound widened by :data:`EASED_ROWS` ("eased": floors
#: of waterfilling held at exact levels can leave a sliver that HiGHS's floating point calls
#: "unknown" or infeasible, while the basis of a nearby LP is exactly optimal for this one).
ROUTES = ("default", "strict", "eased")
EASED_ROWS = 1e-9


def _highs_basis(lp: ExactLP, model, strict: bool):
    """Solve ``model`` with HiGHS (``strict``: no presolve, tight tolerances) and return its solution with duals."""
    from ..modeling.highs_route import solve_highs

    options = {"presolve": "off", "primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
               "simplex_strategy": 4} if strict else None
    return solve_highs(model, duals="basis", highs_options=options)


def solve_exact(lp: ExactLP, *, model=None, max_pivots: int = 500) -> ExactSolution:
    """Solve ``lp`` and prove the optimum exactly: HiGHS finds a basis, rationals do the rest.

    The basis of HiGHS's optimum is solved exactly (:func:`basis_solution`) and
    checked (:meth:`ExactLP.verify`).  If the exact basis is not both feasible
    and optimal (HiGHS's tolerances admitted a slightly wrong basis, or it
    ignored a coefficient too small for floating point), exact simplex pivots
    (:func:`exact_simplex`, at most ``max_pivots``) move from it to the exact
    optimum; failing that, HiGHS solves again without presolve and with
    feasibility tolerances of ``1e-10``, and then on the LP with its row bounds
    widened by :data:`EASED_ROWS` (:data:`ROUTES`); each basis is tried the same
    way against the LP itself.  Status ``optimal`` means proven in rationals;
    ``infeasible`` that HiGHS found the LP infeasible on a route and no route gave a
    basis (not proven here); ``unproven`` that no basis passed, with the verdict
    saying why.
    """
    import time

    out = ExactSolution("unproven", None, None, None)
    if lp.n_cols == 0:
        # Nothing to decide: the empty point, with every multiplier 0, is optimal if every row admits activity 0.
        verdict = lp.verify([], [0] * lp.n_rows)
        out.status = "optimal" if verdict.ok else "infeasible"
        out.primal, out.dual, out.verdict = [], [0] * lp.n_rows, verdict
        out.attempts.append("no columns: the empty point")
        return out
    if model is None:
        model = lp.to_linear_model()
    last = None
    infeasible = False
    for name in ROUTES:
        t0 = time.perf_counter()
        if name == "eased":
            model = lp.to_linear_model(ease=EASED_ROWS)
        try:
            sol = _highs_basis(lp, model, name != "default")
        except SolverError as exc:  # numerical trouble on this route: the next one may find a basis
            out.solve_s += time.perf_counter() - t0
            out.attempts.append(f"{name} HiGHS: {exc}")
            continue
        out.solve_s += time.perf_counter() - t0
        if sol.status == "infeasible":
            # Not proven here either way; the eased route may still find an exactly feasible basis.
            out.attempts.append(f"{name} HiGHS: infeasible")
            infeasible = True
            continue
        if sol.duals is None or sol.duals.column_basis is None:
            out.attempts.append(f"{name} HiGHS returned {sol.status} without a basis")
            continue
        t1 = time.perf_counter()
        try:
            x, y = basis_solution(lp, sol.duals.column_basis, sol.duals.row_basis)
        except SingularBasisError as exc:
            out.exact_s += time.perf_counter() - t1
            out.attempts.append(f"{name} basis: singular ({exc})")
            continue
        verdict = lp.verify(x, y)
        out.attempts.append(f"{name} basis: " + ("proven" if verdict.ok else verdict.failure))
        if not verdict.ok:
            # Pivot exactly from HiGHS's basis to the exact optimum.
            x2, y2, message = exact_simplex(lp, sol.duals.column_basis, sol.duals.row_basis, max_pivots=max_pivots)
            out.attempts.append(f"exact simplex from the {name} basis: {message}")
            if x2 is not None:
                x, y, verdict = x2, y2, lp.verify(x2, y2)
        out.exact_s += time.perf_counter() - t1
        last = (x, y, verdict)
        if verdict.ok:
            out.status, out.primal, out.dual, out.verdict = "optimal", x, y, verdict
            return out
    if last is not None:
        out.primal, out.dual, out.verdict = last
    elif infeasible:
        out.status = "infeasible"
    return out
