"""Linear expressions over a model's variables, vectorised: sparse coefficients, never one object per variable.

An :class:`Expression` is a vector of ``size`` linear forms

.. math::

    e_k = \\sum_{(k, j, a)} a\\, v_j + c_k, \\qquad k = 0 .. size-1,

held as three numpy arrays of coefficient triplets (local row ``k``, global
column ``j``, value ``a``) and a constant vector ``c``; its :class:`~.index.Index`
names each entry by agent, pool, round, cluster or other agent.  Arithmetic
keeps that form: ``e + f`` aligns the entries of ``e`` and ``f`` by their
labels (a scalar broadcasts), ``e * 2`` and ``e * array`` scale, ``e.sum(by=...)``
groups, ``e.select(...)``/``e[...]`` filter, ``e <= rhs`` makes a
:class:`Constraint`.  Each costs a few passes over the arrays.

Mistakes are reported in the user's terms, and late: an expression that
cannot be formed (a product of two variables, an unknown pool id, entries
that do not match) carries the reason, and the model raises it as an
:class:`~laissez_opt.errors.InputError` naming the constraint or objective it
was meant for, when it is added.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10"), lo.Pool("L4", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 3.0), lo.Edge("A", "L4", 2.0), lo.Edge("B", "L4", 1.0)])
>>> m = lo.Model(inst)
>>> per_agent = m.x.sum(by="agent")
>>> per_agent
<Expression x.sum(by='agent'): 2 entries indexed by agent, 3 coefficients>
>>> c = m.add(per_agent <= {"A": 1}, name="cap_a")
>>> c.lower.tolist(), c.upper.tolist()
([-inf, -inf], [1.0, inf])
>>> bad = m.x * m.x
>>> bad.error
'x * x is not linear: both sides depend on variables (multiply variables by numbers only)'
"""

from __future__ import annotations

import math
from numbers import Real
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from .index import DIMS, Index, SelectionError, Space, stays

if TYPE_CHECKING:  # pragma: no cover
    from .model import Model

__all__ = ["Expression", "Constraint", "MAX_GROUP_ENTRIES"]

#: A grouped sum makes one entry per combination of labels; refuse more than this many.
MAX_GROUP_ENTRIES = 10**8
_TEXT_LIMIT = 72


def _short(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."


def _frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view: a declaration cannot be changed behind the model's back by its lowering."""
    view = array.view()
    view.flags.writeable = False
    return view


def _is_number(value) -> bool:
    return isinstance(value, (Real, np.number)) and not isinstance(value, (bool, np.bool_))


class Expression:
    """A vector of linear forms over one model's variables, with labelled entries.

    Build expressions from a model's variables (``m.x``, :meth:`Model.variable
    <laissez_opt.declare.model.Model.variable>`) and the functions of
    :mod:`laissez_opt.declare.families` (``utility(x)``, ``welfare(x)``, ...);
    do not call the constructor.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A")], [lo.Edge("A", "P", 3.0)])
    >>> e = 2 * lo.Model(inst).x.sum() + 1
    >>> e.dims, e.value([1.5])
    ((), 4.0)
    """

    __array_ufunc__ = None  # numpy defers to our reflected operators: array <= e makes a Constraint
    __slots__ = ("model", "index", "rows", "cols", "coefs", "const", "text", "error")

    def __init__(self, model: "Model", index: Index, rows: np.ndarray | None, cols: np.ndarray, coefs: np.ndarray,
                 const: np.ndarray | None = None, text: str = "", error: str | None = None):
        self.model = model
        self.index = index
        self.rows = rows  # None: every coefficient is in row 0 (a scalar)
        self.cols = cols
        self.coefs = coefs
        self.const = const  # None: all zero
        self.text = _short(text)
        self.error = error

    # ------------------------------------------------------------------ basics
    @classmethod
    def failed(cls, model: "Model", text: str, error: str) -> "Expression":
        """An expression that could not be formed; the model raises ``error`` when it is used.

        >>> Expression.failed(None, "x * x", "not linear")
        <Expression x * x: cannot be formed: not linear>
        """
        empty = np.zeros(0, dtype=np.int64)
        return cls(model, Index.scalar(), None, empty, np.zeros(0), None, text, error)

    @classmethod
    def constant(cls, model: "Model", value: float) -> "Expression":
        """The number ``value`` as an expression without variables.

        >>> Expression.constant(None, 2.5).const.tolist()
        [2.5]
        """
        empty = np.zeros(0, dtype=np.int64)
        return cls(model, Index.scalar(), None, empty, np.zeros(0), np.array([float(value)]), repr(value))

    @property
    def space(self) -> Space:
        return self.model.space

    @property
    def size(self) -> int:
        """Number of entries."""
        return self.index.size

    @property
    def dims(self) -> tuple[str, ...]:
        """The dimensions indexing the entries (``()`` for a single number)."""
        return self.index.dims

    @property
    def nnz(self) -> int:
        """Number of coefficient triplets."""
        return int(self.cols.size)

    @property
    def has_variables(self) -> bool:
        """Whether some coefficient is not zero (``e * 0 + 2`` is a constant).

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])).x
        >>> x.has_variables, (x * 0 + 2).has_variables
        (True, False)
        """
        return bool(self.cols.size) and bool(np.any(self.coefs != 0))

    def row_array(self) -> np.ndarray:
        """Local row of every coefficient (materialised for a scalar).

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
        ...                          [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])).x
        >>> x.sum().row_array().tolist(), x.sum(by="agent").row_array().tolist()
        ([0, 0], [0, 1])
        """
        return np.zeros(self.cols.size, dtype=np.int64) if self.rows is None else self.rows

    def const_array(self) -> np.ndarray:
        """The constant of every entry (zeros when there is none).

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])).x
        >>> (x + 2).const_array().tolist(), x.const_array().tolist()
        ([2.0], [0.0])
        """
        return np.zeros(self.size) if self.const is None else self.const

    def __repr__(self) -> str:
        if self.error:
            return f"<Expression {self.text}: cannot be formed: {self.error}>"
        where = "a single number" if not self.dims else f"{self.size} entries indexed by {', '.join(self.dims)}"
        return f"<Expression {self.text}: {where}, {self.nnz} coefficients>"

    def _derive(self, text: str, *, index=None, rows=..., cols=None, coefs=None, const=...) -> "Expression":
        return Expression(
            self.model,
            self.index if index is None else index,
            self.rows if rows is ... else rows,
            self.cols if cols is None else cols,
            self.coefs if coefs is None else coefs,
            self.const if const is ... else const,
            text,
        )

    def _fail(self, text: str, error: str) -> "Expression":
        return Expression.failed(self.model, text, error)

    def __bool__(self):
        raise TypeError(f"an expression has no truth value ({self.text}); compare it to make a constraint")

    # --------------------------------------------------------------- selection
    def select(self, **selection) -> "Expression":
        """The entries whose labels match ``selection`` (dimensions kept).

        Each keyword is a dimension the expression has (``cluster`` also works
        on expressions indexed by ``pool``), each value a label, a list of
        labels, or for ``round`` an int, a range or a slice.  The selection
        also restricts the labels a later :meth:`sum` groups over.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10"), lo.Pool("L4")], [lo.Agent("A")],
        ...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0)])
        >>> lo.Model(inst).x.select(pool=["L4"]).size
        1
        """
        text = f"{self.text}.select({', '.join(f'{k}={v!r}' for k, v in selection.items())})"
        if self.error:
            return self
        keep, domains, problem = self._match(selection)
        if problem:
            return self._fail(text, problem)
        out = self._keep_rows(keep, text)
        out.index.domains = {**self.index.domains, **domains}
        return out

    def _restrict(self, dim: str, codes: np.ndarray, text: str) -> "Expression":
        """The entries whose ``dim`` code is among the sorted ``codes`` (a selection made by code, not label)."""
        keep = np.isin(self._codes_along(dim), codes)
        out = self._keep_rows(keep, text)
        out.index.domains = {**self.index.domains, dim: np.asarray(codes, dtype=np.int64)}
        return out

    def _match(self, selection: dict) -> tuple[np.ndarray | None, dict, str | None]:
        """Boolean mask of matching entries (None: all), the restricted domains, or a problem."""
        keep = None
        domains = {}
        for dim, selector in selection.items():
            source = self._codes_along(dim)
            if source is None:
                return None, {}, self._no_dimension(dim)
            try:
                chosen = self.space.codes(dim, selector)
            except SelectionError as exc:
                return None, {}, str(exc)
            match = np.isin(source, chosen)
            keep = match if keep is None else keep & match
            domains[dim] = chosen
            if dim == "cluster" and "pool" in self.dims and "cluster" not in self.dims:
                pools = np.flatnonzero(np.isin(self.space.pool_cluster, chosen))
                previous = self.index.domains.get("pool")
                domains["pool"] = pools if previous is None else np.intersect1d(previous, pools)
        return keep, domains, None

    def _codes_along(self, dim: str) -> np.ndarray | None:
        """The code of every entry along ``dim`` (``cluster`` derived from ``pool``), or None."""
        if dim in self.dims:
            return self.index.codes[self.dims.index(dim)]
        if dim == "cluster" and "pool" in self.dims:
            return self.space.pool_cluster[self.index.codes[self.dims.index("pool")]]
        return None

    def _no_dimension(self, dim: str) -> str:
        if dim not in DIMS:
            return f"unknown dimension {dim!r}; dimensions are {', '.join(DIMS)}"
        have = ", ".join(self.dims) if self.dims else "nothing (it is a single number)"
        return f"{self.text} has no {dim} dimension; it is indexed by {have}"

    def _keep_rows(self, keep: np.ndarray | None, text: str) -> "Expression":
        if keep is None:
            return self._derive(text, index=Index(self.dims, self.index.codes, self.size, dict(self.index.domains)))
        renumber = np.cumsum(keep) - 1
        rows = self.row_array()
        term = keep[rows]
        const = None if self.const is None else self.const[keep]
        return self._derive(text, index=self.index.take(keep), rows=renumber[rows[term]], cols=self.cols[term],
                            coefs=self.coefs[term], const=const)

    def __getitem__(self, key) -> "Expression":
        """Positional selection over the dimensions: ``x["A", :, :]``, ``x[:, "A10", 0]``, ``x[:, ["A10", "L4"], :]``.

        ``:`` keeps a dimension whole; a list keeps it, restricted; a single
        label selects it and drops the dimension (as numpy does).

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10"), lo.Pool("L4")], [lo.Agent("A"), lo.Agent("B")],
        ...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0), lo.Edge("B", "A10", 1.0)])
        >>> x = lo.Model(inst).x
        >>> x[:, "A10", :].dims, x[:, "A10", :].labels(), x["A", ["L4"], 0].labels()
        (('agent', 'round'), [('A', 0), ('B', 0)], [('L4',)])
        """
        keys = key if isinstance(key, tuple) else (key,)
        text = f"{self.text}[{', '.join(':' if isinstance(k, slice) and k == slice(None) else repr(k) for k in keys)}]"
        if self.error:
            return self
        if len(keys) != len(self.dims):
            return self._fail(text, f"{self.text} is indexed by {len(self.dims)} dimension(s) "
                                    f"({', '.join(self.dims) or 'none'}), not {len(keys)}")
        selection, dropped = {}, []
        for dim, k in zip(self.dims, keys):
            if isinstance(k, slice) and k == slice(None):
                continue
            selection[dim] = k
            if isinstance(k, (str, int, np.integer)) and not isinstance(k, bool):
                dropped.append(dim)
        out = self.select(**selection)
        if out.error:
            return self._fail(text, out.error)
        out.text = _short(text)
        if dropped:
            kept = [k for k, d in enumerate(out.dims) if d not in dropped]
            out.index = Index(tuple(out.dims[k] for k in kept), tuple(out.index.codes[k] for k in kept), out.size,
                              {d: v for d, v in out.index.domains.items() if d not in dropped})
        return out

    # ------------------------------------------------------------------ sums
    def sum(self, by: str | Iterable[str] | None = None, **selection) -> "Expression":
        """The sum of the (selected) entries, or one sum per label of ``by``.

        ``e.sum()`` is one number; ``e.sum(by="agent")`` has one entry per
        agent (every agent of the domain, also those with no term: a sum over
        nothing is 0); ``by`` may name several dimensions
        (``by=("pool", "round")``) and ``cluster`` when ``e`` is indexed by
        pool.  Keywords select entries first, as :meth:`select`.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10"), lo.Pool("L4")], [lo.Agent("A"), lo.Agent("B")],
        ...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0)])
        >>> x = lo.Model(inst).x
        >>> x.sum(by="agent").size, x.sum(pool="A10").dims
        (2, ())
        """
        by_dims = () if by is None else ((by,) if isinstance(by, str) else tuple(by))
        parts = [f"by={by!r}"] if by is not None else []
        parts += [f"{k}={v!r}" for k, v in selection.items()]
        text = f"{self.text}.sum({', '.join(parts)})"
        source = self.select(**selection) if selection else self
        if source.error:
            return self._fail(text, source.error)
        if len(set(by_dims)) != len(by_dims):
            return self._fail(text, f"by names a dimension twice: {by_dims}")
        if not by_dims:
            const = None if source.const is None else np.array([float(source.const.sum())])
            return source._derive(text, index=Index.scalar(), rows=None, const=const)
        codes, axes = [], []
        for dim in by_dims:
            along = source._codes_along(dim)
            if along is None:
                return self._fail(text, source._no_dimension(dim))
            domain = source.index.domains.get(dim)
            if domain is None and dim == "cluster" and "pool" in source.index.domains:
                domain = np.unique(self.space.pool_cluster[source.index.domains["pool"]])
            codes.append(along)
            axes.append(domain)
        shape = tuple(self.space.size(d) if a is None else len(a) for d, a in zip(by_dims, axes))
        total = math.prod(shape)
        if total > MAX_GROUP_ENTRIES:
            return self._fail(text, f"grouping by {', '.join(by_dims)} would make {total:,} entries "
                                    f"(more than {MAX_GROUP_ENTRIES:,}); select fewer labels first")
        positions = []
        for along, axis, dim in zip(codes, axes, by_dims):
            if axis is None:
                positions.append(along)
            else:
                lut = np.full(self.space.size(dim), -1, dtype=np.int64)
                lut[axis] = np.arange(axis.size)
                positions.append(lut[along])
        target = positions[0] if len(positions) == 1 else np.ravel_multi_index(tuple(positions), shape)
        index = Index.product(self.space, by_dims, {d: a for d, a in zip(by_dims, axes) if a is not None})
        rows = target[source.row_array()]
        const = None if source.const is None else np.bincount(target, weights=source.const, minlength=total)
        return source._derive(text, index=index, rows=rows, const=const)

    def over_rounds(self) -> "Expression":
        """Each entry repeated in every round of its agent's stay ``a_i .. D_i`` (every round without an agent).

        Adds the ``round`` dimension to an expression that has none: a
        placement ``y[i, c]`` held for a whole stay becomes ``y[i, c, r]``
        for the rounds ``r`` the agent is present, so that it can be summed
        per pool and round.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A", arrival=1)], [lo.Edge("A", "P", 1.0)], rounds=3)
        >>> m = lo.Model(inst)
        >>> y = m.variable("y", "edge")
        >>> y.over_rounds().dims, [label[2] for label in y.over_rounds().labels()]
        (('agent', 'pool', 'round'), [1, 2])
        """
        text = f"{self.text}.over_rounds()"
        if self.error:
            return self
        if "round" in self.dims:
            return self._fail(text, f"{self.text} already has a round dimension")
        inst = self.model.instance
        last = inst.rounds - 1
        window = stays(inst)
        if "agent" in self.dims and window is not None:
            agent = self.index.codes[self.dims.index("agent")]
            first, stop = window[0][agent], window[1][agent]
        else:
            first = np.zeros(self.size, dtype=np.int64)
            stop = np.full(self.size, last, dtype=np.int64)
        count = stop - first + 1
        start = np.cumsum(count) - count  # first new row of each entry
        entry = np.repeat(np.arange(self.size), count)
        round_ = first[entry] + np.arange(entry.size) - start[entry]
        index = Index(self.dims + ("round",), tuple(c[entry] for c in self.index.codes) + (round_,), entry.size,
                      dict(self.index.domains))
        rows = self.row_array()
        copies = count[rows]
        term = np.repeat(np.arange(rows.size), copies)
        new_rows = start[rows][term] + np.arange(term.size) - np.repeat(np.cumsum(copies) - copies, copies)
        const = None if self.const is None else self.const[entry]
        return self._derive(text, index=index, rows=new_rows, cols=self.cols[term], coefs=self.coefs[term], const=const)

    # --------------------------------------------------------------- scaling
    def scale(self, **values) -> "Expression":
        """Multiply each entry by a number given per label of one or more dimensions.

        ``e.scale(pool=prices)`` multiplies the entries of pool ``c`` by
        ``prices[c]``; values are an array with one number per label of the
        dimension, or a dict keyed by ids (missing labels: 0).

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10"), lo.Pool("L4")], [lo.Agent("A")],
        ...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0)])
        >>> lo.Model(inst).x.scale(pool={"A10": 2.0}).coefs.tolist()
        [2.0, 0.0]
        """
        text = f"{self.text}.scale({', '.join(f'{k}=...' for k in values)})"
        if self.error:
            return self
        factor = np.ones(self.size)
        for dim, given in values.items():
            along = self._codes_along(dim)
            if along is None:
                return self._fail(text, self._no_dimension(dim))
            table, problem = _per_label(self.space, dim, given, missing=0.0)
            if problem:
                return self._fail(text, problem)
            factor = factor * table[along]
        return self._scaled(factor, text)

    def _scaled(self, factor: np.ndarray, text: str) -> "Expression":
        """Entry ``k`` multiplied by ``factor[k]``."""
        coefs = self.coefs * (factor[0] if self.rows is None else factor[self.rows])
        const = None if self.const is None else self.const * factor
        return self._derive(text, coefs=coefs, const=const)

    # ------------------------------------------------------------ arithmetic
    def _coerce(self, other) -> "Expression | None":
        """``other`` as an expression of this model: numbers become constants; None if not supported."""
        if isinstance(other, Expression):
            return other
        if _is_number(other):
            if not math.isfinite(float(other)):
                return self._fail(repr(other), f"{other!r} is not a finite number")
            return Expression.constant(self.model, float(other))
        return None

    def _align(self, other: "Expression", text: str):
        """(index, row map of self, row map of other) for entry-wise operations, or a failed expression.

        Row maps send each operand's local rows to the rows of the common
        index (None: unchanged); ``"broadcast"`` marks a scalar spread over
        every entry.
        """
        if other.model is not self.model:
            return self._fail(text, "the two sides belong to different models")
        if not other.dims and self.dims:
            return self.index, None, "broadcast"
        if not self.dims and other.dims:
            return other.index, "broadcast", None
        if self.dims == other.dims and (
            self.index is other.index
            or all(a is b for a, b in zip(self.index.codes, other.index.codes))
        ):
            return self.index, None, None
        if set(self.dims) != set(other.dims):
            return self._fail(text, f"dimension mismatch: {self.text} is indexed by {self.index.describe(self.space)} "
                                    f"but {other.text} by {other.index.describe(self.space)}; sum or select "
                                    f"one side so that both have the same dimensions")
        theirs = other.index.reordered(self.dims)
        mine_keys, their_keys = self.index.keys(self.space), theirs.keys(self.space)
        if mine_keys.size == their_keys.size and np.array_equal(mine_keys, their_keys):
            return self.index, None, None
        union = np.union1d(mine_keys, their_keys)
        shape = tuple(self.space.size(d) for d in self.dims)
        codes = tuple(np.asarray(c, dtype=np.int64) for c in np.unravel_index(union, shape)) if len(shape) > 1 else (union,)
        domains = {}
        for dim in self.dims:
            a, b = self.index.domains.get(dim), theirs.domains.get(dim)
            if a is not None and b is not None:
                domains[dim] = np.union1d(a, b)
        index = Index(self.dims, codes, union.size, domains)
        return index, np.searchsorted(union, mine_keys), np.searchsorted(union, their_keys)

    def _placed(self, row_map, index: Index) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
        """This expression's triplets and constant on the rows of ``index`` (see :meth:`_align`)."""
        if isinstance(row_map, str):  # a scalar spread over every entry
            k = index.size
            rows = np.repeat(np.arange(k, dtype=np.int64), self.nnz)
            const = np.full(k, 0.0 if self.const is None else float(self.const[0]))
            return rows, np.tile(self.cols, k), np.tile(self.coefs, k), const
        if row_map is None:
            return self.rows, self.cols, self.coefs, self.const_array()
        const = np.zeros(index.size)
        if self.const is not None:
            const[row_map] = self.const
        return row_map[self.row_array()], self.cols, self.coefs, const

    def _combine(self, other, sign: float, text: str) -> "Expression":
        if self.error:
            return self
        other = self._coerce(other)
        if other is None:
            return NotImplemented
        if other.error:
            return other
        if not other.dims and not other.cols.size and other.model in (None, self.model):
            # A number: only the constant changes; the coefficient arrays are shared, not copied.
            const = self.const_array() + sign * (0.0 if other.const is None else float(other.const[0]))
            return self._derive(text, const=const if np.any(const) else None)
        aligned = self._align(other, text)
        if isinstance(aligned, Expression):
            return aligned
        index, mine, theirs = aligned
        r1, c1, a1, k1 = self._placed(mine, index)
        r2, c2, a2, k2 = other._placed(theirs, index)
        if index.is_scalar:
            rows = None
        else:
            rows = np.concatenate([r1 if r1 is not None else np.zeros(c1.size, np.int64),
                                   r2 if r2 is not None else np.zeros(c2.size, np.int64)])
        const = k1 + sign * k2
        return Expression(self.model, index, rows, np.concatenate([c1, c2]), np.concatenate([a1, sign * a2]),
                          None if not np.any(const) else const, text)

    def __add__(self, other):
        return self._combine(other, 1.0, f"{self.text} + {_text_of(other)}")

    def __radd__(self, other):
        return self._combine(other, 1.0, f"{_text_of(other)} + {self.text}")

    def __sub__(self, other):
        return self._combine(other, -1.0, f"{self.text} - {_text_of(other)}")

    def __rsub__(self, other):
        return (-self)._combine(other, 1.0, f"{_text_of(other)} - {self.text}")

    def __neg__(self):
        if self.error:
            return self
        return self._derive(f"-{self.text}", coefs=-self.coefs, const=None if self.const is None else -self.const)

    def __pos__(self):
        return self

    def __mul__(self, other):
        return self._times(other, f"{self.text} * {_text_of(other)}")

    def __rmul__(self, other):
        return self._times(other, f"{_text_of(other)} * {self.text}")

    def _times(self, other, text: str) -> "Expression":
        if self.error:
            return self
        if isinstance(other, Expression):
            if other.error:
                return other
            if self.has_variables and other.has_variables:
                return self._fail(text, f"{text} is not linear: both sides depend on variables "
                                        f"(multiply variables by numbers only)")
            data, terms = (other, self) if not other.has_variables else (self, other)
            aligned = terms._align(data, text)
            if isinstance(aligned, Expression):
                return aligned
            index, mine, theirs = aligned
            if mine is not None or theirs not in (None, "broadcast"):
                # Entries only one side has are zero on the other: align both onto the union first.
                r, c, a, k = terms._placed(mine, index)
                terms = Expression(self.model, index, r, c, a, k, terms.text)
            factor = data.const_array()
            if theirs == "broadcast" or data.size != index.size:
                factor = np.full(index.size, float(factor[0]))
            elif theirs is not None:
                placed = np.zeros(index.size)
                placed[theirs] = factor
                factor = placed
            return terms._scaled(factor, text)
        if _is_number(other):
            value = float(other)
            if not math.isfinite(value):
                return self._fail(text, f"cannot multiply by {other!r}: not a finite number")
            return self._derive(text, coefs=self.coefs * value, const=None if self.const is None else self.const * value)
        if isinstance(other, (np.ndarray, list, tuple)):
            array = np.asarray(other, dtype=np.float64)
            if array.ndim == 0:
                return self._times(float(array), text)
            if array.shape != (self.size,):
                return self._fail(text, f"dimension mismatch: {self.text} has {self.size} entries "
                                        f"({self.index.describe(self.space)}) but the array has shape {array.shape}; "
                                        f"multiply by a number, by an array of {self.size} values in the "
                                        f"expression's order, or use .scale(dimension=values)")
            if not np.all(np.isfinite(array)):
                return self._fail(text, "cannot multiply by an array holding NaN or infinity")
            return self._scaled(array, text)
        if hasattr(other, "items"):
            return self._fail(text, "a mapping has no order to multiply by; use .scale(dimension={id: value})")
        return NotImplemented

    def __truediv__(self, other):
        text = f"{self.text} / {_text_of(other)}"
        if isinstance(other, Expression):
            if other.error:
                return other
            if other.has_variables:
                return self._fail(text, f"{text} is not linear: it divides by an expression of variables")
            const = other.const_array()
            if np.any(const == 0):
                return self._fail(text, f"{text} divides by zero")
            return self._times(Expression(other.model, other.index, other.rows, other.cols, other.coefs, 1.0 / const,
                                          other.text), text)
        if _is_number(other):
            if float(other) == 0.0:
                return self._fail(text, f"{text} divides by zero")
            return self._times(1.0 / float(other), text)
        if isinstance(other, (np.ndarray, list, tuple)):
            array = np.asarray(other, dtype=np.float64)
            if np.any(array == 0):
                return self._fail(text, f"{text} divides by zero")
            return self._times(1.0 / array, text)
        return NotImplemented

    def __rtruediv__(self, other):
        text = f"{_text_of(other)} / {self.text}"
        if self.has_variables:
            return self._fail(text, f"{text} is not linear: it divides by an expression of variables")
        return Expression.constant(self.model, 1.0)._times(other, text) / self

    def __pow__(self, power):
        text = f"{self.text} ** {power!r}"
        if _is_number(power) and float(power) == 1.0:
            return self
        return self._fail(text, f"{text} is not linear: powers of variables are not allowed")

    def __rpow__(self, base):
        return self._fail(f"{base!r} ** {self.text}", "an exponent of variables is not linear")

    def __matmul__(self, other):
        return self._fail(f"{self.text} @ {_text_of(other)}", "use * with an array, or .scale(), and .sum()")

    # ------------------------------------------------------------ constraints
    def __le__(self, rhs):
        return Constraint.compare(self, rhs, "<=")

    def __ge__(self, rhs):
        return Constraint.compare(self, rhs, ">=")

    def __eq__(self, rhs):  # type: ignore[override]
        return Constraint.compare(self, rhs, "==")

    def __ne__(self, rhs):  # type: ignore[override]
        raise TypeError("!= is not a linear constraint; use <=, >= or ==")

    def __lt__(self, rhs):
        raise TypeError("strict inequalities are not supported; use <=")

    def __gt__(self, rhs):
        raise TypeError("strict inequalities are not supported; use >=")

    __hash__ = None  # type: ignore[assignment]

    # ----------------------------------------------------------------- values
    def value(self, values: Any = None) -> float | np.ndarray:
        """The expression's value: one number, or an array with one value per entry.

        ``values``: a :class:`~laissez_opt.result.Result` of this model's
        instance (the allocation ``x``; other variables need the model's last
        solve), a full column vector, or None for the model's last solve.

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import utility
        >>> inst = lo.load("instances/hotos25-table1.json")
        >>> utility(lo.Model(inst).x).value(lo.solve(inst, "welfare")).round(6).tolist()
        [3.333333, 4.347826]
        """
        if self.error:
            raise ValueError(f"{self.text} cannot be formed: {self.error}")
        columns = self.model.column_values(values)
        terms = self.coefs * columns[self.cols]
        if self.rows is None:
            total = np.array([terms.sum()])
        else:
            total = np.bincount(self.rows, weights=terms, minlength=self.size)
        total = total + self.const_array()
        return float(total[0]) if not self.dims else total

    def labels(self) -> list[tuple]:
        """The labels of every entry, as tuples of ids and round numbers (slow for large expressions).

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)], rounds=2)).x
        >>> x.labels(), x.sum(by="round").labels()
        ([('A', 'P', 0), ('A', 'P', 1)], [(0,), (1,)])
        """
        return [self.index.label_tuple(self.space, k) for k in range(self.size)]


def _text_of(value) -> str:
    if isinstance(value, Expression):
        return value.text
    if isinstance(value, np.ndarray):
        return f"array{value.shape}"
    return _short(repr(value))


def _per_label(space: Space, dim: str, given, *, missing: float) -> tuple[np.ndarray | None, str | None]:
    """A table of one float per label of ``dim`` from an array or a mapping of ids (missing: ``missing``)."""
    size = space.size(dim)
    if hasattr(given, "items"):
        table = np.full(size, missing, dtype=np.float64)
        for label, value in given.items():
            try:
                (code,) = space.codes(dim, [label])
            except SelectionError as exc:
                return None, str(exc)
            if not _is_number(value) or math.isnan(float(value)):
                return None, f"the value for {label!r} is {value!r}, not a number"
            table[code] = float(value)
        return table, None
    if _is_number(given):
        return np.full(size, float(given)), None
    array = np.asarray(given, dtype=np.float64)
    if array.shape != (size,):
        return None, (f"dimension mismatch: expected one value per {dim} ({size} values, in instance order) "
                      f"or a dict keyed by id, got shape {array.shape}")
    if np.any(np.isnan(array)):
        return None, "values hold NaN"
    return array, None


class Constraint:
    """Rows ``lower <= expr <= upper``, one per entry of ``expr``, added to a model as one named family.

    Made by comparing expressions (``e <= 2``, ``e >= f``, ``e == {"A": 1}``)
    or by the families of :mod:`laissez_opt.declare.families`.  The right-hand
    side is a number, an array with one value per label of each dimension
    (shape ``(n_agents,)``, ``(n_pools, rounds)``, ...), a mapping keyed by ids
    (tuples of ids for several dimensions; entries it leaves out are not
    bounded) or another expression.  ``lower`` and ``upper`` are per entry,
    ``-inf``/``inf`` where unbounded.  Comparisons have no truth value: write
    ``0 <= e <= 1`` as two constraints.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> rows = lo.Model(inst).x.sum(by="agent") >= {"B": 1}
    >>> rows, rows.lower.tolist()
    (<Constraint (unnamed): x.sum(by='agent') >= {'B': 1}, 2 rows>, [-inf, 1.0])
    """

    __slots__ = ("expr", "lower", "upper", "name", "kind", "description", "error", "text", "model_rows")

    def __init__(self, expr: Expression, lower: np.ndarray, upper: np.ndarray, *, name: str | None = None,
                 kind: str = "user", description: str = "", error: str | None = None, text: str = ""):
        self.expr = expr
        self.lower = lower
        self.upper = upper
        self.name = name
        self.kind = kind
        self.description = description
        self.error = error
        self.text = _short(text or expr.text)
        self.model_rows: slice | None = None  # rows of the lowered model, set when lowered

    @property
    def size(self) -> int:
        """Number of rows."""
        return self.expr.size

    def __bool__(self):
        raise TypeError(
            "a constraint has no truth value; a chained comparison such as 0 <= e <= 1 is not supported: "
            "add e >= 0 and e <= 1 as two constraints"
        )

    def __repr__(self) -> str:
        name = self.name or "(unnamed)"
        if self.error:
            return f"<Constraint {name}: {self.text}: cannot be formed: {self.error}>"
        return f"<Constraint {name}: {self.text}, {self.size} rows>"

    @classmethod
    def compare(cls, expr: Expression, rhs, sense: str) -> "Constraint":
        """The rows ``expr <= rhs`` (``sense`` ``"<="``), ``>=`` or ``==``; what the comparison operators call.

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])).x
        >>> Constraint.compare(x.sum(), 2, "==").upper.tolist()
        [2.0]
        """
        text = f"{expr.text} {sense} {_text_of(rhs)}"
        empty = np.zeros(0)
        if expr.error:
            return cls(expr, empty, empty, error=expr.error, text=text)
        if isinstance(rhs, Expression):
            if rhs.error:
                return cls(expr, empty, empty, error=rhs.error, text=text)
            moved = expr - rhs
            if moved.error:
                return cls(expr, empty, empty, error=moved.error, text=text)
            moved.text = _short(text)
            values = np.zeros(moved.size)
            expr = moved
        else:
            values, problem = _bound_values(expr, rhs)
            if problem:
                return cls(expr, empty, empty, error=problem, text=text)
        unbounded = np.full(expr.size, np.inf)
        if sense == "<=":
            lower, upper = -unbounded, values
        elif sense == ">=":
            lower, upper = values, unbounded
        else:
            lower, upper = values.copy(), values
        upper = np.where(np.isnan(upper), np.inf, upper)
        lower = np.where(np.isnan(lower), -np.inf, lower)
        if sense == "==" and np.any(np.isinf(values)):
            return cls(expr, empty, empty, error="an equality with an infinite right-hand side cannot hold", text=text)
        return cls(expr, lower, upper, text=text)

    def activity(self, values: Any = None) -> np.ndarray:
        """The value of every row's expression (see :meth:`Expression.value`).

        >>> import laissez_opt as lo
        >>> x = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)])).x
        >>> (x.sum() <= 1).activity([0.5]).tolist()
        [0.5]
        """
        value = self.expr.value(values)
        return np.atleast_1d(np.asarray(value, dtype=np.float64))


def _bound_values(expr: Expression, rhs) -> tuple[np.ndarray | None, str | None]:
    """One bound per entry of ``expr`` from a number, a per-label array or a mapping (NaN: not given)."""
    space, index = expr.space, expr.index
    if _is_number(rhs):
        value = float(rhs)
        if math.isnan(value):
            return None, "the right-hand side is NaN"
        return np.full(expr.size, value), None
    if hasattr(rhs, "items"):
        out = np.full(expr.size, np.nan)
        if not index.dims:
            return None, "the left-hand side is a single number; give a number, not a mapping"
        labels, values = [], []
        for label, value in rhs.items():
            parts = label if isinstance(label, tuple) else (label,)
            if len(parts) != len(index.dims):
                return None, (f"the key {label!r} does not name one label per dimension "
                              f"({', '.join(index.dims)})")
            labels.append(parts)
            if not _is_number(value) or math.isnan(float(value)):
                return None, f"the value for {label!r} is {value!r}, not a number"
            values.append(float(value))
        if not labels:
            return out, None
        codes = []
        for k, dim in enumerate(index.dims):
            column = []
            for parts in labels:
                try:
                    (code,) = space.codes(dim, [parts[k]])
                except SelectionError as exc:
                    return None, str(exc)
                column.append(code)
            codes.append(np.asarray(column, dtype=np.int64))
        shape = tuple(space.size(d) for d in index.dims)
        keys = codes[0] if len(codes) == 1 else np.ravel_multi_index(tuple(codes), shape)
        rows = index.lookup_rows(space, keys)
        present = rows >= 0
        out[rows[present]] = np.asarray(values)[present]
        return out, None
    if isinstance(rhs, (np.ndarray, list, tuple)):
        array = np.asarray(rhs, dtype=np.float64)
        shape = tuple(space.size(d) for d in index.dims)
        if array.ndim == 0:
            return _bound_values(expr, float(array))
        if not index.dims:
            if array.shape == (1,):
                return array.copy(), None
            return None, f"dimension mismatch: the left-hand side is a single number but the right-hand side has shape {array.shape}"
        if array.shape != shape:
            names = " x ".join(f"{space.size(d)} {d}{'s' if space.size(d) != 1 else ''}" for d in index.dims)
            return None, (f"dimension mismatch: the left-hand side is indexed by {index.describe(space)}, so an "
                          f"array right-hand side needs shape {shape} ({names}, in instance order), "
                          f"got shape {array.shape}; or give a number or a dict keyed by id")
        return array[index.codes].astype(np.float64), None
    return None, f"cannot compare with {type(rhs).__name__} {_text_of(rhs)}; use a number, an array, a dict or an expression"
