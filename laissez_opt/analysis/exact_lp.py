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
trusted.  :func:`solve_exact` does both: HiGHS finds a basis, the basis is
solved exactly and the three checks run; when they fail, HiGHS solves again
with presolve off and tighter tolerances.

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

import heapq
import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "ExactLP",
    "Verdict",
    "ExactSolution",
    "SingularBasisError",
    "solve_sparse",
    "basis_solution",
    "solve_exact",
    "as_fraction",
    "rational_text",
    "parse_rational",
    "label",
]

Number = int | Fraction


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


def rational_text(value: Number) -> str:
    """``"p/q"`` (or ``"p"`` for an integer): how certificates write exact numbers.

    >>> rational_text(Fraction(3, 4)), rational_text(Fraction(4, 2)), rational_text(-5)
    ('3/4', '2', '-5')
    """
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def parse_rational(text) -> Number:
    """The exact number written as ``"p/q"``, ``"p"`` or a decimal string (``"0.125"``, ``"1e-3"``).

    >>> parse_rational("3/4"), parse_rational("7"), parse_rational("0.125")
    (Fraction(3, 4), 7, Fraction(1, 8))
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"expected an exact number as text (p/q), got {text!r}")
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
                return f"column {self.column_name(j)}: value {rational_text(v)} is below its lower bound {rational_text(lo)}"
            if up is not None and v > up:
                return f"column {self.column_name(j)}: value {rational_text(v)} is above its upper bound {rational_text(up)}"
        for r, a in enumerate(self.activities(x)):
            lo, up = self.row_lower[r], self.row_upper[r]
            if lo is not None and a < lo:
                return f"row {self.row_name(r)}: activity {rational_text(a)} is below {rational_text(lo)}"
            if up is not None and a > up:
                return f"row {self.row_name(r)}: activity {rational_text(a)} is above {rational_text(up)}"
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
                return None, (f"row {self.row_name(r)}: multiplier {rational_text(w)} is {side} but the row has no "
                              f"{'upper' if (w > 0) == maximise else 'lower'} bound (dual infeasible)")
            total += w * bound
        for j, z in enumerate(self.reduced_costs(y)):
            if not z:
                continue
            bound = self.col_upper[j] if (z > 0) == maximise else self.col_lower[j]
            if bound is None:
                return None, (f"column {self.column_name(j)}: reduced cost {rational_text(z)} needs a finite "
                              f"{'upper' if (z > 0) == maximise else 'lower'} bound (dual infeasible)")
            if bound:
                total += z * bound
        return total, ""

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
            return Verdict(False, objective, bound, f"objective: the allocation reaches {rational_text(objective)} "
                                                    f"but the dual bound is {rational_text(bound)}")
        return Verdict(True, objective, bound)

    # ------------------------------------------------------ floating point
    def to_linear_model(self):
        """The same LP in floating point, as a declared :class:`~laissez_opt.modeling.LinearModel`.

        Blocks keep their names and order, so a basis found for the model is a
        basis of this LP.
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
    """
    n, m = lp.n_cols, lp.n_rows
    column_basis = np.asarray(column_basis)
    row_basis = np.asarray(row_basis)
    if column_basis.size != n or row_basis.size != m:
        raise ValueError("the basis does not match the LP's columns and rows")
    x: list[Number] = [0] * n
    for j in np.flatnonzero(column_basis != _BASIC).tolist():
        status = column_basis[j]
        lo, up = lp.col_lower[j], lp.col_upper[j]
        if status == _UPPER and up is not None:
            x[j] = up
        elif status == _ZERO:
            x[j] = 0
        elif lo is not None:
            x[j] = lo
        elif up is not None:
            x[j] = up
    nonbasic_rows = np.flatnonzero(row_basis != _BASIC).tolist()
    target: dict[int, Number] = {}
    for r in nonbasic_rows:
        status = row_basis[r]
        lo, up = lp.row_lower[r], lp.row_upper[r]
        if status == _UPPER and up is not None:
            target[r] = up
        elif status == _ZERO:
            target[r] = 0
        elif lo is not None:
            target[r] = lo
        else:
            target[r] = up if up is not None else 0
    basic = np.flatnonzero(column_basis == _BASIC).tolist()
    is_basic = column_basis == _BASIC
    # Right-hand sides: the nonbasic columns' activity moves to the right.
    for j, v in enumerate(x):
        if v and not is_basic[j]:
            for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
                if r in target:
                    target[r] -= a * v
    equations: dict[int, dict] = {r: {} for r in nonbasic_rows}
    for j in basic:
        for r, a in zip(lp.col_rows[j], lp.col_coefs[j]):
            if r in equations:
                equations[r][j] = a
    # A basic column that meets no nonbasic row, or a nonbasic row with no basic column, makes B singular.
    values = solve_sparse([equations[r] for r in nonbasic_rows], [target[r] for r in nonbasic_rows]) if basic else {}
    for j, v in values.items():
        x[j] = v
    transposed = [{r: a for r, a in zip(lp.col_rows[j], lp.col_coefs[j]) if r in equations} for j in basic]
    duals = solve_sparse(transposed, [lp.objective[j] for j in basic]) if basic else {}
    y: list[Number] = [0] * m
    for r, v in duals.items():
        y[r] = v
    return x, y


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


def _highs_basis(lp: ExactLP, model, strict: bool):
    """Solve ``model`` with HiGHS (``strict``: no presolve, tight tolerances) and return its solution with duals."""
    from ..modeling.highs_route import solve_highs

    options = {"presolve": "off", "primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
               "simplex_strategy": 4} if strict else None
    return solve_highs(model, duals=True, highs_options=options)


def solve_exact(lp: ExactLP, *, model=None) -> ExactSolution:
    """Solve ``lp`` and prove the optimum exactly: HiGHS finds a basis, rationals do the rest.

    The basis of HiGHS's optimum is solved exactly (:func:`basis_solution`) and
    checked (:meth:`ExactLP.verify`).  If the exact basis is not both feasible
    and optimal (HiGHS's tolerances admitted a slightly wrong basis), HiGHS solves
    again without presolve and with feasibility tolerances of ``1e-10``, and that
    basis is tried.  Status ``optimal`` means proven in rationals; ``infeasible``
    that HiGHS found the LP infeasible (not proven here); ``unproven`` that no
    basis passed, with the verdict saying why.
    """
    import time

    if model is None:
        model = lp.to_linear_model()
    out = ExactSolution("unproven", None, None, None)
    last = None
    for strict in (False, True):
        t0 = time.perf_counter()
        sol = _highs_basis(lp, model, strict)
        out.solve_s += time.perf_counter() - t0
        if sol.status == "infeasible":
            out.status = "infeasible"
            out.attempts.append("HiGHS: infeasible")
            return out
        if sol.duals is None or sol.duals.column_basis is None:
            out.attempts.append(f"HiGHS returned {sol.status} without a basis")
            continue
        t1 = time.perf_counter()
        try:
            x, y = basis_solution(lp, sol.duals.column_basis, sol.duals.row_basis)
        except SingularBasisError as exc:
            out.exact_s += time.perf_counter() - t1
            out.attempts.append(f"{'strict' if strict else 'default'} basis: singular ({exc})")
            continue
        verdict = lp.verify(x, y)
        out.exact_s += time.perf_counter() - t1
        out.attempts.append(f"{'strict' if strict else 'default'} basis: " + ("proven" if verdict.ok else verdict.failure))
        last = (x, y, verdict)
        if verdict.ok:
            out.status, out.primal, out.dual, out.verdict = "optimal", x, y, verdict
            return out
    if last is not None:
        out.primal, out.dual, out.verdict = last
    return out
