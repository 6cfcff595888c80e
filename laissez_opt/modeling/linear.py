"""Declared linear models: one declaration, several solver routes.

A model is declared once, as named blocks over the instance's numpy views:

* variable blocks (``x``: one variable per edge and round, with bounds and
  integrality);
* constraint blocks (``capacity``, ``demand``, ...): sparse rows given as
  coordinate triplets over a block's local indices, with lower and upper
  bounds;
* a linear objective and its sense.

The declaration is solver-neutral.  :mod:`laissez_opt.modeling.solve` lowers it
to highspy's matrix API (the fast default), to a readable Pyomo model (LP/MPS
export and any solver Pyomo supports) or to OR-Tools (a network-flow solver
when the declaration carries a :class:`Transportation` structure, GLOP for
LPs, CP-SAT or SCIP for integer programs).  Block names are the symbols of the
formulation documents in ``models/``; a test checks that they agree.

Example
-------
>>> import numpy as np
>>> from laissez_opt.modeling.linear import LinearModel
>>> m = LinearModel("toy", sense="max")
>>> x = m.add_variables("x", 2, upper=1.0)
>>> budget = m.add_constraints("budget", rows=np.array([0, 0]), cols=x.columns([0, 1]),
...                            coefs=np.array([1.0, 1.0]), upper=np.array([1.0]))
>>> m.set_objective(x, np.array([2.0, 3.0]))
>>> m.n_cols, m.n_rows
(2, 1)
>>> m.csc().toarray()
array([[1., 1.]])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..limits import check_deadline

__all__ = ["VariableBlock", "ConstraintBlock", "Transportation", "LinearModel"]

INF = float("inf")


@dataclass
class VariableBlock:
    """A named vector of variables occupying columns ``start .. start + size - 1``."""

    name: str
    start: int
    size: int
    lower: np.ndarray
    upper: np.ndarray
    integer: bool
    description: str = ""
    labels: Sequence[str] | None = None

    def columns(self, local) -> np.ndarray:
        """Global column indices of local indices ``local``."""
        return self.start + np.asarray(local, dtype=np.int64)

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)


@dataclass
class ConstraintBlock:
    """Rows ``lower <= A x <= upper`` named as one family of constraints."""

    name: str
    start: int
    size: int
    rows: np.ndarray  # local row of each coefficient
    cols: np.ndarray  # global column of each coefficient
    coefs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    description: str = ""


@dataclass
class Transportation:
    """Proof that a model is a bipartite transportation problem.

    Variable block ``arcs`` holds one variable per arc from a left node
    (``left[k]``) to a right node (``right[k]``); the only constraints are the
    two blocks named ``left_block`` (sum over arcs leaving each left node
    ``<= left_capacity``, and ``>= left_lower`` when given: a left node that must
    ship, such as an agent that must be placed) and ``right_block`` (sum over
    arcs entering each right node ``<= right_capacity``), all with coefficient 1.
    The constraint matrix is the incidence matrix of a bipartite graph, hence
    totally unimodular: with integer capacities, lower bounds and column bounds
    every vertex of the LP is integral, and the model is a min-cost flow.
    :meth:`LinearModel.transportation` returns the structure only while the
    model still has exactly this shape.
    """

    arcs: str
    left: np.ndarray
    right: np.ndarray
    left_capacity: np.ndarray
    right_capacity: np.ndarray
    left_block: str
    right_block: str
    left_lower: np.ndarray | None = None  # None: every left node may ship nothing


def _filled(value, size: int) -> np.ndarray:
    """A new float64 array of ``size`` entries holding ``value`` (broadcast)."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0 and value == 0.0:
        return np.zeros(size)  # zeroed pages come from the allocator untouched
    return np.broadcast_to(value, (size,)).copy()


def _integral_or_unbounded(values: np.ndarray) -> bool:
    """True when every entry that is finite is an integer (infinite and NaN entries pass)."""
    same = values == np.round(values)  # inf == round(inf); NaN compares unequal
    return bool(same.all() or np.all(same | ~np.isfinite(values)))


class LinearModel:
    """A linear (or mixed-integer linear) model declared as named blocks."""

    def __init__(self, name: str, *, sense: str = "max"):
        if sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
        self.name = name
        self.sense = sense
        self.variables: dict[str, VariableBlock] = {}
        self.constraints: dict[str, ConstraintBlock] = {}
        self.n_cols = 0
        self.n_rows = 0
        self.objective = np.zeros(0)
        self.objective_offset = 0.0
        self._transportation: Transportation | None = None
        self._detect_on_demand = False

    # ------------------------------------------------------------ declaring
    def add_variables(
        self,
        name: str,
        size: int,
        *,
        lower=0.0,
        upper=INF,
        integer: bool = False,
        description: str = "",
        labels: Sequence[str] | None = None,
    ) -> VariableBlock:
        """Declare ``size`` variables named ``name`` with bounds ``lower <= v <= upper``."""
        check_deadline(f"while building {self.name!r} (variables {name!r})")
        if name in self.variables:
            raise ValueError(f"variable block {name!r} declared twice")
        block = VariableBlock(
            name,
            self.n_cols,
            int(size),
            _filled(lower, size),
            _filled(upper, size),
            bool(integer),
            description,
            labels,
        )
        self.variables[name] = block
        self.n_cols += block.size
        self.objective = np.concatenate([self.objective, np.zeros(block.size)])
        return block

    def add_constraints(
        self,
        name: str,
        *,
        rows: np.ndarray,
        cols: np.ndarray,
        coefs: np.ndarray,
        lower=None,
        upper=None,
        n_rows: int | None = None,
        description: str = "",
    ) -> ConstraintBlock:
        """Declare rows ``lower <= sum coefs * x[cols] <= upper`` (``None`` bound: unbounded).

        ``rows`` are local row indices (0-based within this block), ``cols`` global
        column indices (use :meth:`VariableBlock.columns`).
        """
        check_deadline(f"while building {self.name!r} (constraints {name!r})")
        if name in self.constraints:
            raise ValueError(f"constraint block {name!r} declared twice")
        rows = np.asarray(rows, dtype=np.int64)
        size = int(n_rows if n_rows is not None else (rows.max() + 1 if rows.size else 0))
        lo = np.full(size, -INF) if lower is None else np.broadcast_to(np.asarray(lower, float), (size,)).copy()
        up = np.full(size, INF) if upper is None else np.broadcast_to(np.asarray(upper, float), (size,)).copy()
        block = ConstraintBlock(
            name,
            self.n_rows,
            size,
            rows,
            np.asarray(cols, dtype=np.int64),
            np.asarray(coefs, dtype=np.float64),
            lo,
            up,
            description,
        )
        self.constraints[name] = block
        self.n_rows += size
        return block

    def set_objective(self, block: VariableBlock, coefs, *, offset: float = 0.0) -> None:
        """Objective coefficients of one block (other blocks keep theirs)."""
        self.objective[block.slice] = np.asarray(coefs, dtype=np.float64)
        self.objective_offset = float(offset)

    def add_transportation(
        self,
        arcs: VariableBlock,
        *,
        left: np.ndarray,
        right: np.ndarray,
        left_capacity: np.ndarray,
        right_capacity: np.ndarray,
        left_block: str,
        right_block: str,
        left_description: str = "",
        right_description: str = "",
    ) -> None:
        """Declare both capacity families of a bipartite transportation problem at once.

        Adds ``left_block``: for each left node ``l``, ``sum_{k: left[k]=l} arcs[k] <= left_capacity[l]``
        and ``right_block`` likewise, and records the :class:`Transportation` structure.
        Infinite capacities produce no row.
        """
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        columns = arcs.start + np.arange(arcs.size)
        for block_name, nodes, capacity, text in (
            (left_block, left, np.asarray(left_capacity, float), left_description),
            (right_block, right, np.asarray(right_capacity, float), right_description),
        ):
            finite = np.isfinite(capacity)
            if finite.all():
                # Every node gets a row, numbered as the node itself.
                rows, cols = nodes, columns
            else:
                # Renumber the finite-capacity nodes densely: rows only where a bound binds.
                row_of = np.full(capacity.size, -1, dtype=np.int64)
                row_of[finite] = np.arange(int(finite.sum()))
                keep = finite[nodes]
                rows, cols = row_of[nodes[keep]], columns[keep]
            self.add_constraints(
                block_name,
                rows=rows,
                cols=cols,
                coefs=np.ones(cols.size),
                upper=capacity[finite],
                n_rows=int(finite.sum()),
                description=text,
            )
        self._transportation = Transportation(
            arcs.name,
            left,
            right,
            np.asarray(left_capacity, float),
            np.asarray(right_capacity, float),
            left_block,
            right_block,
        )

    def detect_transportation(self, *, lazy: bool = False) -> Transportation | None:
        """Find and record a transportation structure in blocks declared one by one; None if there is none.

        ``lazy=True`` defers the search to the first :meth:`transportation`
        query (a route asking), so a declaration costs no more than its blocks.

        The model qualifies when it has exactly one variable block, every lower
        bound 0, and exactly two constraint blocks, each with coefficients 1,
        each column at most once, and rows of the form ``sum <= capacity``
        (capacities ``>= 0``; lower bounds ``<= 0``, vacuous for non-negative
        columns, except that the first block's rows may also demand
        ``sum >= lower`` with ``0 <= lower <= capacity``: ``Transportation.left_lower``).
        The first block becomes the left nodes, the second the right nodes;
        columns a block leaves out go to one extra node of infinite capacity
        (and lower bound 0) on that side.  A model declared with
        :meth:`add_transportation` keeps its structure.

        >>> m = LinearModel("t")
        >>> x = m.add_variables("x", 3, upper=1.0)
        >>> _ = m.add_constraints("agents", rows=np.array([0, 0, 1]), cols=x.columns([0, 1, 2]),
        ...                       coefs=np.ones(3), upper=np.array([1.0, 1.0]))
        >>> _ = m.add_constraints("pools", rows=np.array([0, 0]), cols=x.columns([0, 2]),
        ...                       coefs=np.ones(2), upper=np.array([1.0]))
        >>> t = m.detect_transportation()
        >>> t.left.tolist(), t.right.tolist(), t.right_capacity.tolist()
        ([0, 0, 1], [0, 1, 0], [1.0, inf])
        """
        if lazy:
            self._detect_on_demand = self._transportation is None
            return None
        self._detect_on_demand = False
        if self._transportation is not None:
            return self.transportation()
        if len(self.variables) != 1 or len(self.constraints) != 2:
            return None
        (arcs,) = self.variables.values()
        if np.any(arcs.lower != 0):
            return None
        sides = []
        for side, block in enumerate(self.constraints.values()):
            coefs = block.coefs
            one_value = coefs.size and coefs.strides == (0,)  # a broadcast view holds one number
            if coefs.size and not (coefs[0] == 1.0 if one_value else np.all(coefs == 1.0)):
                return None
            if np.any(block.upper < 0) or np.any(block.lower > block.upper):
                return None
            if side == 1 and np.any(block.lower > 0):
                return None
            local = block.cols - arcs.start
            ascending = local.size < 2 or bool(np.all(local[1:] > local[:-1]))
            if not ascending and np.bincount(local, minlength=arcs.size).max(initial=0) > 1:
                return None  # a column twice in one block: not an incidence matrix
            lower = np.maximum(np.broadcast_to(np.asarray(block.lower, float), (block.size,)), 0.0)
            if local.size == arcs.size and ascending:
                node, capacity = block.rows, block.upper  # every column once, in order
            else:
                node = np.full(arcs.size, block.size, dtype=np.int64)
                node[local] = block.rows
                capacity, lower = np.append(block.upper, np.inf), np.append(lower, 0.0)
            sides.append((block.name, node, capacity, lower))
        (left_name, left, left_capacity, left_lower), (right_name, right, right_capacity, _) = sides
        self._transportation = Transportation(
            arcs.name, left, right, np.asarray(left_capacity, float), np.asarray(right_capacity, float),
            left_name, right_name, np.asarray(left_lower, float) if np.any(left_lower > 0) else None,
        )
        return self.transportation()

    # --------------------------------------------------------------- queries
    def transportation(self) -> Transportation | None:
        """The transportation structure if the model still has exactly that shape, else None."""
        if self._detect_on_demand:
            self.detect_transportation()
        t = self._transportation
        if t is None:
            return None
        if set(self.variables) != {t.arcs} or set(self.constraints) != {t.left_block, t.right_block}:
            return None
        block = self.variables[t.arcs]
        if np.any(block.lower != 0):
            return None
        return t

    @property
    def is_integer(self) -> bool:
        return any(b.integer for b in self.variables.values())

    def integrality_is_free(self) -> bool:
        """True when the LP relaxation provably has an integral optimal vertex.

        That holds for a transportation structure (totally unimodular matrix)
        whose capacities and variable bounds are integers.
        """
        t = self.transportation()
        if t is None:
            return False
        block = self.variables[t.arcs]
        lower = t.left_lower if t.left_lower is not None else np.zeros(0)
        return all(_integral_or_unbounded(caps) for caps in (t.left_capacity, t.right_capacity, block.upper, lower))

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Column lower bounds, upper bounds and integrality flags."""
        lower = np.empty(self.n_cols)
        upper = np.empty(self.n_cols)
        integer = np.zeros(self.n_cols, dtype=bool)
        for b in self.variables.values():
            lower[b.slice] = b.lower
            upper[b.slice] = b.upper
            integer[b.slice] = b.integer
        return lower, upper, integer

    def row_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lower = np.empty(self.n_rows)
        upper = np.empty(self.n_rows)
        for b in self.constraints.values():
            lower[b.start : b.start + b.size] = b.lower
            upper[b.start : b.start + b.size] = b.upper
        return lower, upper

    def triplets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All coefficients as global (row, column, value) triplets."""
        if not self.constraints:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        rows = np.concatenate([b.start + b.rows for b in self.constraints.values()])
        cols = np.concatenate([b.cols for b in self.constraints.values()])
        vals = np.concatenate([b.coefs for b in self.constraints.values()])
        return rows, cols, vals

    def csc_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The constraint matrix in compressed sparse column form: ``(indptr, indices, data)``.

        Canonical: row indices ascend within each column and repeated
        ``(row, column)`` coefficients are summed.  When every constraint block
        touches each column at most once with its columns in ascending order
        (true of transportation blocks, and of most blocks declared from edge
        arrays), the arrays are filled directly in linear time; otherwise the
        triplets go through :mod:`scipy.sparse`.
        """
        blocks = [b for b in self.constraints.values() if b.cols.size]
        if not all(b.cols.size < 2 or bool(np.all(b.cols[1:] > b.cols[:-1])) for b in blocks):
            matrix = self._scipy_csc()
            return matrix.indptr, matrix.indices, matrix.data
        n = self.n_cols
        nnz = sum(b.cols.size for b in blocks)
        index_type = np.int32 if max(self.n_rows, nnz) < 2**31 else np.int64
        # A block whose ascending columns number n_cols and start at 0 holds every column once.
        full = [b.cols.size == n and b.cols[0] == 0 and b.cols[-1] == n - 1 for b in blocks]
        if blocks and all(full):
            k = len(blocks)
            indptr = np.arange(0, k * n + 1, k, dtype=index_type)
            indices = np.empty((n, k), dtype=index_type)
            data = np.empty((n, k), dtype=np.float64)
            for j, b in enumerate(blocks):
                indices[:, j] = b.start + b.rows
                data[:, j] = b.coefs
            return indptr, indices.reshape(-1), data.reshape(-1)
        count = np.full(n, sum(full), dtype=index_type)
        for b, is_full in zip(blocks, full):
            if not is_full:
                count[b.cols] += 1  # columns are distinct within a block
        indptr = np.zeros(n + 1, dtype=index_type)
        np.cumsum(count, out=indptr[1:])
        indices = np.empty(nnz, dtype=index_type)
        data = np.empty(nnz, dtype=np.float64)
        # Blocks occupy ascending row ranges, so filling block by block keeps rows ascending;
        # ``fill`` is the next free slot of each column.
        fill = indptr[:-1].copy()
        last = len(blocks) - 1
        for k, (b, is_full) in enumerate(zip(blocks, full)):
            at = fill if is_full else fill[b.cols]
            indices[at] = b.start + b.rows
            data[at] = b.coefs
            if k == last:
                break
            if is_full:
                fill += 1
            else:
                fill[b.cols] = at + 1
        return indptr, indices, data

    def _scipy_csc(self):
        from scipy.sparse import coo_matrix

        rows, cols, vals = self.triplets()
        return coo_matrix((vals, (rows, cols)), shape=(self.n_rows, self.n_cols)).tocsc()

    def csc(self):
        """The constraint matrix in compressed sparse column form (``scipy.sparse``)."""
        from scipy.sparse import csc_matrix

        indptr, indices, data = self.csc_arrays()
        return csc_matrix((data, indices, indptr), shape=(self.n_rows, self.n_cols))

    def trivial_bound(self) -> float:
        """A bound on the objective from the column bounds alone (``inf`` if a column is unbounded).

        ``sum_j max(c_j l_j, c_j u_j)`` for a maximisation (min for a minimisation):
        weak, but proven, so a time-limited LP whose solver proved nothing still
        reports an honest gap.
        """
        lower, upper, _ = self.bounds()
        c = self.objective
        with np.errstate(invalid="ignore"):
            at_lower = np.where(c == 0, 0.0, c * lower)
            at_upper = np.where(c == 0, 0.0, c * upper)
        best = np.maximum(at_lower, at_upper) if self.sense == "max" else np.minimum(at_lower, at_upper)
        total = float(np.sum(best)) + self.objective_offset
        return total if np.isfinite(total) else (np.inf if self.sense == "max" else -np.inf)

    def objective_value(self, values: np.ndarray) -> float:
        """``c . x + offset`` for the column vector ``values``."""
        # einsum runs in the calling thread; ``@`` on 1-D arrays goes to a threaded BLAS
        # dot, which costs milliseconds whenever the machine has no idle core.
        return float(np.einsum("i,i->", self.objective, np.asarray(values, dtype=np.float64))) + self.objective_offset

    def max_violation(self, values: np.ndarray) -> float:
        """Largest bound or row violation of ``values`` (0 when feasible)."""
        lower, upper, integer = self.bounds()
        worst = float(np.max(np.maximum(lower - values, values - upper), initial=0.0))
        if self.n_rows:
            activity = self.csc() @ values
            rl, ru = self.row_bounds()
            worst = max(worst, float(np.max(np.maximum(rl - activity, activity - ru), initial=0.0)))
        if integer.any():
            worst = max(worst, float(np.max(np.abs(values[integer] - np.round(values[integer])), initial=0.0)))
        return worst

    def summary(self) -> dict:
        """Sizes and structure, for reports and for the formulation-document test."""
        return {
            "name": self.name,
            "sense": self.sense,
            "variables": {b.name: b.size for b in self.variables.values()},
            "constraints": {b.name: b.size for b in self.constraints.values()},
            "integer": self.is_integer,
            "transportation": self.transportation() is not None,
        }
