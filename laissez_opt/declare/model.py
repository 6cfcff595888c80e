"""``lo.Model``: declare an allocation model over an instance, solve it on every route, verify it.

A model holds variable blocks (the allocation ``x`` over the instance graph's
edges and rounds, and any auxiliary variables), named constraint families
(``lower <= expression <= upper``, one row per entry of the expression) and
one objective, or several solved lexicographically.  :meth:`Model.lower`
turns the declaration into a :class:`~laissez_opt.modeling.linear.LinearModel`
(one variable block and one constraint block per declared one, names kept),
which every solver route of :mod:`laissez_opt.modeling` takes; when the
result is still a bipartite transportation structure (the allocation with
``capacity`` and ``demand`` only), the lowering detects it, and OR-Tools
solves it as a min-cost flow and HiGHS as an LP whose vertex is integral.

:meth:`Model.solve` returns the library's :class:`~laissez_opt.result.Result`:
status, objective, bound and gap from the solver; the allocation; a check of
every declared row, bound and objective by :mod:`laissez_opt.declare.verify`,
which re-evaluates the user's expressions and shares nothing with the
lowering; the binding rows by name, with their duals when the route solved an
LP; for an infeasible model, the conflicting named rows (deletion filtering).

The allocation ``x[i, c, r]`` has one variable per edge ``(i, c)`` and round
``r``, bounded by ``0 <= x <= min(d_i, k_c)`` inside the agent's rounds
``a_i .. D_i`` and fixed to 0 outside them (one device of a pool cannot be
given twice to one agent in a round; the bound is a property of the
instance, not a constraint family), integral unless ``integral=False``.

Example
-------
>>> import laissez_opt as lo
>>> from laissez_opt.declare import capacity, demand, welfare
>>> inst = lo.load("instances/hotos25-table1.json")
>>> m = lo.Model(inst, name="mine")
>>> x = m.x
>>> _ = m.add(capacity(x)), m.add(demand(x))
>>> _ = m.add(x.sum(pool="A10") <= 0, name="no_a10")
>>> m.maximize(welfare(x))
>>> result = m.solve()
>>> result.status, round(result.objective, 6), result.verified
('optimal', 6.458333, True)
>>> [b["constraint"] for b in result.details["binding"]]
['demand', 'demand', 'no_a10']
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..errors import InfeasibleError, InputError, NoSolutionError, SolverError, VerificationError
from ..instance import Instance
from ..limits import SizeEstimate, deadline
from ..method_spec import solver_options
from ..modeling import LinearModel, Solution, solve_model
from ..result import Result, allocation_records, edge_utilities, utility_map
from .expression import Constraint, Expression, _frozen
from .index import Index, Space, stays
from .verify import check_declaration

__all__ = ["Model", "Objective", "DeclaredVariable", "maximize", "minimize", "BINDING_LIMIT"]

#: A result lists at most this many binding rows (all are counted).
BINDING_LIMIT = 1000
#: Names become Pyomo components and LP/MPS labels: identifiers only.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = {"objective", "dual"}  # components the Pyomo lowering adds itself
_SOLVER_OPTIONS = {o.name: o for o in solver_options(fractional=False)}


@dataclass(frozen=True)
class Objective:
    """One objective: ``sense`` (``"max"`` or ``"min"``) of a scalar expression, with a name.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)])
    >>> Objective("max", lo.Model(inst).x.sum())
    <Objective maximize x.sum()>
    """

    sense: str
    expr: Expression
    name: str = "objective"

    def __repr__(self) -> str:
        return f"<Objective {'maximize' if self.sense == 'max' else 'minimize'} {self.expr.text}>"


def maximize(expr: Expression, *, name: str = "objective") -> Objective:
    """An objective that maximises the scalar ``expr``, for :meth:`Model.lexicographic`.

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import welfare
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)])
    >>> maximize(welfare(lo.Model(inst).x))
    <Objective maximize welfare(x)>
    """
    return Objective("max", expr, name)


def minimize(expr: Expression, *, name: str = "objective") -> Objective:
    """An objective that minimises the scalar ``expr``, for :meth:`Model.lexicographic`.

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import cost
    >>> inst = lo.Instance([lo.Pool("P", base_price=1.0)], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)])
    >>> minimize(cost(lo.Model(inst).x))
    <Objective minimize cost(x)>
    """
    return Objective("min", expr, name)


class DeclaredVariable:
    """A block of variables: columns ``start .. start + size - 1``, declared bounds, integrality, labels.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 2.0)])
    >>> m = lo.Model(inst)
    >>> _ = m.x
    >>> m.variables["x"], m.variables["x"].label(0)
    (<DeclaredVariable x: 1 integer entries indexed by agent, pool, round>, 'A, P, round 0')
    """

    __slots__ = ("name", "start", "size", "lower", "upper", "integer", "index", "description", "expr", "space")

    def __init__(self, name, start, size, lower, upper, integer, index, description, space):
        self.name, self.start, self.size = name, start, size
        self.lower, self.upper, self.integer = lower, upper, integer
        self.index, self.description, self.space = index, description, space
        self.expr: Expression | None = None

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)

    def label(self, k: int) -> str:
        text = self.index.label(self.space, k)
        return text if text else "(the only one)"

    def __repr__(self) -> str:
        kind = "integer" if self.integer else "continuous"
        return f"<DeclaredVariable {self.name}: {self.size} {kind} entries indexed by {', '.join(self.index.dims) or 'nothing'}>"


def _bounds(value, size: int, what: str, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise InputError(f"{what} needs a number or {size} values, got shape {array.shape}", path=f"variable {name!r}")
    if np.any(np.isnan(array)):
        raise InputError(f"{what} holds NaN", path=f"variable {name!r}")
    return array


def _constant(value, size: int, dtype=np.float64) -> np.ndarray:
    """``size`` copies of ``value`` as a read-only array that holds one number (a broadcast view)."""
    return np.broadcast_to(np.asarray(value, dtype=dtype), (size,))


def _uniform(values: np.ndarray):
    """``values`` as one number when all its entries are equal and 0 (the lowering then allocates no copy).

    A broadcast view of one number (:func:`_constant`) is recognised without reading it.
    """
    if values.size and values.strides == (0,):
        return float(values[0]) if values[0] == 0.0 else values
    if values.size and values[0] == 0.0 and not values.any():
        return 0.0
    return values


class Model:
    """A declared allocation model over one instance.

    ``integral`` makes the allocation ``x`` integer (devices); ``False`` makes
    it the time-sharing relaxation.  Declare with :attr:`x`,
    :meth:`variable`, :meth:`add` and one of :meth:`maximize`,
    :meth:`minimize`, :meth:`lexicographic`; solve with :meth:`solve`;
    export with :meth:`to_pyomo` and :meth:`write`.  Names of variables and
    constraint families are identifiers (letters, digits, ``_``), unique
    within the model, and become the names of the lowered blocks, Pyomo
    components and LP/MPS rows.

    >>> import laissez_opt as lo
    >>> from laissez_opt.declare import capacity, welfare
    >>> inst = lo.Instance([lo.Pool("P", count=2)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 2.0), lo.Edge("B", "P", 1.0)])
    >>> m = lo.Model(inst, name="two", integral=False)
    >>> _ = m.add(capacity(m.x))
    >>> m.maximize(welfare(m.x))
    >>> m
    <Model 'two' on 'instance': 2 variables in 1 blocks, 1 rows in 1 families, 1 objective(s)>
    >>> m.solve().objective
    4.0
    """

    def __init__(self, instance: Instance, *, name: str = "model", integral: bool = True):
        if not isinstance(instance, Instance):
            raise InputError(f"expected an Instance (lo.load(path) reads one), got {type(instance).__name__}",
                             path="instance")
        if not isinstance(integral, bool):
            raise InputError(f"expected true or false, got {integral!r}", path="integral")
        if not isinstance(name, str) or not _NAME.match(name):
            raise InputError(f"a model name is an identifier (letters, digits, _), got {name!r}", path="name")
        self.instance = instance
        self.name = name
        self.integral = integral
        self.space = Space(instance)
        self.variables: dict[str, DeclaredVariable] = {}
        self.constraints: dict[str, Constraint] = {}
        self.objectives: list[Objective] = []
        self.tolerance = 1e-7
        self.last_values: np.ndarray | None = None
        self.n_columns = 0
        self._x: Expression | None = None
        self._version = 0
        self._lowered: tuple[int, LinearModel] | None = None
        self._edge_keys: tuple[np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:
        rows = sum(c.size for c in self.constraints.values())
        return (f"<Model {self.name!r} on {self.instance.name!r}: {self.n_columns} variables in "
                f"{len(self.variables)} blocks, {rows} rows in {len(self.constraints)} families, "
                f"{len(self.objectives)} objective(s)>")

    # ------------------------------------------------------------- variables
    @property
    def x(self) -> Expression:
        """The allocation: devices of pool ``c`` given to agent ``i`` in round ``r``, one entry per edge and round.

        Indexed by ``agent``, ``pool`` and ``round`` (entries in edge order,
        rounds fastest); declared on first use as the block ``x``, with
        ``0 <= x <= min(d_i, k_c)`` inside the agent's rounds and ``x = 0`` outside.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("P", count=3)], [lo.Agent("A", demand=2)], [lo.Edge("A", "P", 1.0)])
        >>> m = lo.Model(inst)
        >>> m.x.labels(), m.variables["x"].upper.tolist()
        ([('A', 'P', 0)], [2.0])
        """
        if self._x is None:
            inst = self.instance
            rounds = inst.rounds
            if rounds == 1:
                agent, pool = inst.edge_agent, inst.edge_pool
                round_ = _constant(0, inst.n_edges, np.int64)
            else:
                edge = np.repeat(np.arange(inst.n_edges), rounds)
                agent, pool = inst.edge_agent[edge], inst.edge_pool[edge]
                round_ = np.tile(np.arange(rounds, dtype=np.int64), inst.n_edges)
            upper = np.minimum(inst.effective_demands[agent], inst.counts.astype(np.float64)[pool])
            window = stays(inst)
            if window is not None:
                arrival, final = window
                upper = np.where((round_ >= arrival[agent]) & (round_ <= final[agent]), upper, 0.0)
            index = Index(("agent", "pool", "round"), (_frozen(agent), _frozen(pool), _frozen(round_)), agent.size)
            self._x = self._declare(
                "x", index, _constant(0.0, agent.size), upper, self.integral,
                "devices of pool c given to agent i in round r, one column per edge and round",
            )
        return self._x

    @property
    def has_allocation(self) -> bool:
        """Whether :attr:`x` has been declared."""
        return self._x is not None

    def variable(self, name: str, index=None, *, where=None, lower=0.0, upper=np.inf, integer: bool = False,
                 description: str = "") -> Expression:
        """Declare an auxiliary block of variables and return it as an expression.

        ``index``: ``None`` (one variable), a dimension or a tuple of
        dimensions (one variable per combination of labels, e.g. ``"agent"``,
        ``("pool", "round")``), ``"edge"`` (one per edge, indexed by agent and
        pool) or ``("edge", "round")`` (one per edge and round, like ``x``).
        ``where``: a boolean array over those entries keeping some of them.
        ``lower``/``upper``: a number or one value per entry (before ``where``).
        ``integer``: integrality of this block.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
        ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
        >>> m = lo.Model(inst)
        >>> m.variable("t"), m.variable("on", "edge", upper=1, integer=True).dims
        (<Expression t: a single number, 1 coefficients>, ('agent', 'pool'))
        """
        self._check_name(name, "variable")
        if not isinstance(integer, bool):
            raise InputError(f"integer must be true or false, got {integer!r}", path=f"variable {name!r}")
        inst = self.instance
        if index is None:
            natural = Index.scalar()
        elif index == "edge":
            natural = Index(("agent", "pool"), (inst.edge_agent, inst.edge_pool), inst.n_edges)
        elif index == ("edge", "round"):
            natural = self.x.index
        else:
            dims = (index,) if isinstance(index, str) else tuple(index)
            unknown = [d for d in dims if d not in self.space.labels]
            if unknown or not dims or len(set(dims)) != len(dims):
                raise InputError(f"index must be None, 'edge', ('edge', 'round') or distinct dimensions among "
                                 f"{', '.join(self.space.labels)}; got {index!r}", path=f"variable {name!r}")
            natural = Index.product(self.space, dims)
        low = _bounds(lower, natural.size, "lower", name)
        high = _bounds(upper, natural.size, "upper", name)
        if where is not None:
            mask = np.asarray(where)
            if mask.dtype != bool or mask.shape != (natural.size,):
                raise InputError(f"where must be a boolean array with {natural.size} entries, got "
                                 f"{mask.dtype} of shape {mask.shape}", path=f"variable {name!r}")
            natural, low, high = natural.take(mask), low[mask], high[mask]
        bad = np.flatnonzero(low > high)
        if bad.size:
            k = int(bad[0])
            raise InputError(f"entry {natural.label(self.space, k) or 0}: lower bound {low[k]:g} exceeds upper bound "
                             f"{high[k]:g}", path=f"variable {name!r}")
        return self._declare(name, natural, low, high, integer, description)

    def bound(self, variables: Expression, *, lower=None, upper=None) -> Expression:
        """Tighten the bounds of some declared variables: ``max(l, lower) <= v <= min(u, upper)`` entry by entry.

        ``variables`` is a variable block or a selection of one, each entry a
        single variable (``m.x``, ``m.x.select(pool="A10")``, a block from
        :meth:`variable`); ``lower``/``upper`` are a number or one value per
        entry (``inf``/``-inf``: unchanged).  Bounds are not rows: the model
        keeps its structure (a transportation problem stays one), and the
        check of a solution tests them like the declared bounds.  Bounds only
        tighten; an entry whose bounds cross is an error naming it.  Returns
        ``variables``.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10", count=2), lo.Pool("L4", count=2)], [lo.Agent("A", demand=2)],
        ...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0)])
        >>> m = lo.Model(inst)
        >>> _ = m.bound(m.x.select(pool="A10"), upper=0)      # no A10 for anyone, without a row
        >>> m.variables["x"].upper.tolist()
        [0.0, 2.0]
        """
        where = f"bound({getattr(variables, 'text', variables)})"
        if not isinstance(variables, Expression):
            raise InputError(f"expected variables of the model such as m.x, got {type(variables).__name__}", path=where)
        if variables.error:
            raise InputError(variables.error, path=where)
        if variables.model is not self:
            raise InputError("the variables belong to another model", path=where)
        size = variables.size
        whole = next((b for b in self.variables.values() if variables.cols is b.expr.cols
                      and variables.coefs is b.expr.coefs and variables.rows is b.expr.rows), None)
        if whole is None or variables.const is not None:
            rows = variables.row_array()
            single = (variables.const is None or not np.any(variables.const)) and variables.cols.size == size
            if single and size:
                single = bool(np.all(variables.coefs == 1.0)) and int(np.bincount(rows, minlength=size).max()) == 1
            if not single:
                raise InputError(f"{variables.text} is not a selection of variables (each entry one variable with "
                                 f"coefficient 1); bound an expression with a constraint instead", path=where)
            cols = np.empty(size, dtype=np.int64)
            cols[rows] = variables.cols  # the column of each entry
        given = {}
        for side, value in (("lower", lower), ("upper", upper)):
            if value is None:
                continue
            array = np.asarray(value, dtype=np.float64)
            if array.ndim == 0:
                array = np.full(size, float(array))
            if array.shape != (size,):
                raise InputError(f"{side} needs a number or {size} values (one per entry of {variables.text}), "
                                 f"got shape {array.shape}", path=where)
            if np.any(np.isnan(array)):
                raise InputError(f"{side} holds NaN", path=where)
            given[side] = array
        for block in self.variables.values():
            if whole is not None:  # the whole block, entries in column order
                if block is not whole:
                    continue
                local, inside = slice(None), slice(None)
            else:
                inside = (cols >= block.start) & (cols < block.start + block.size)
                if not inside.any():
                    continue
                local = cols[inside] - block.start
            low, high = block.lower, block.upper
            if "lower" in given:
                low = np.array(low, dtype=np.float64)
                low[local] = np.maximum(low[local], given["lower"][inside])
            if "upper" in given:
                high = np.array(high, dtype=np.float64)
                high[local] = np.minimum(high[local], given["upper"][inside])
            bad = np.flatnonzero(low > high)
            if bad.size:
                k = int(bad[0])
                raise InputError(f"entry {block.label(k)} of {block.name!r}: lower bound {low[k]:g} would exceed "
                                 f"upper bound {high[k]:g}", path=where)
            block.lower, block.upper = _frozen(low), _frozen(high)
        self._changed()
        return variables

    def _declare(self, name, index, lower, upper, integer, description) -> Expression:
        start, size = self.n_columns, index.size
        block = DeclaredVariable(name, start, size, _frozen(lower), _frozen(upper), integer, index, description, self.space)
        columns = _frozen(np.arange(start, start + size, dtype=np.int64))
        rows = columns if start == 0 else _frozen(np.arange(size, dtype=np.int64))
        block.expr = Expression(self, index, rows if index.dims else None, columns, _constant(1.0, size), None, name)
        self.variables[name] = block
        self.n_columns += size
        self._changed()
        return block.expr

    # ------------------------------------------------------------ constraints
    def add(self, constraint: Constraint, *, name: str | None = None, description: str | None = None) -> Constraint:
        """Add a family of rows under ``name`` (default: the family's own name, else ``c1``, ``c2``, ...).

        ``constraint`` comes from a comparison (``x.sum(pool="A10") <= 2``) or
        a family of :mod:`laissez_opt.declare.families` (``capacity(x)``): one
        row ``lower_k <= e_k <= upper_k`` per entry ``k`` of its expression.  An
        expression that could not be formed is reported here, naming the
        constraint.  Returns the constraint as added.

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A")], [lo.Edge("A", "A10", 1.0)])
        >>> m = lo.Model(inst)
        >>> m.add(m.x.sum(pool="A10") <= 2, name="a10_cap")
        <Constraint a10_cap: x.sum(pool='A10') <= 2, 1 rows>
        >>> m.add(m.x.sum(pool="A11") <= 2, name="typo")
        Traceback (most recent call last):
        ...
        laissez_opt.errors.InputError: constraint 'typo': x.sum(pool='A11') <= 2: unknown pool 'A11' (did you mean 'A10'?); the instance's pools are A10
        """
        label = name or (constraint.name if isinstance(constraint, Constraint) else None) or f"c{len(self.constraints) + 1}"
        where = f"constraint {label!r}"
        if not isinstance(constraint, Constraint):
            hint = " (a comparison of plain numbers gives True or False; compare an expression)" if isinstance(constraint, (bool, np.bool_)) else ""
            raise InputError(f"expected a constraint such as x.sum(pool='A10') <= 2, got {type(constraint).__name__}{hint}",
                             path=where)
        self._check_name(label, "constraint")
        if constraint.error:
            raise InputError(f"{constraint.text}: {constraint.error}", path=where)
        if constraint.expr.model is not self:
            raise InputError("the constraint is built from another model's variables", path=where)
        added = Constraint(constraint.expr, _frozen(np.asarray(constraint.lower, dtype=np.float64)),
                           _frozen(np.asarray(constraint.upper, dtype=np.float64)), name=label, kind=constraint.kind,
                           description=constraint.description if description is None else description,
                           text=constraint.text)
        impossible = np.flatnonzero(added.lower > added.upper)
        if impossible.size:
            k = int(impossible[0])
            raise InputError(f"row {added.expr.index.label(self.space, k) or 0} has lower bound {added.lower[k]:g} above "
                             f"its upper bound {added.upper[k]:g}", path=where)
        self.constraints[label] = added
        self._changed()
        return added

    def remove(self, name: str) -> Constraint:
        """Remove the constraint family ``name`` and return it.

        >>> import laissez_opt as lo
        >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)]))
        >>> _ = m.add(m.x.sum() <= 0, name="closed")
        >>> m.remove("closed").name, list(m.constraints)
        ('closed', [])
        """
        if name not in self.constraints:
            raise InputError(f"no constraint named {name!r}; the model has {', '.join(self.constraints) or 'none'}",
                             path="constraint")
        self._changed()
        return self.constraints.pop(name)

    def _check_name(self, name, what: str) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InputError(f"a {what} name is an identifier (letters, digits and _, not starting with a digit), "
                             f"got {name!r}", path=f"{what} {name!r}")
        if name in _RESERVED:
            raise InputError(f"{name!r} is reserved; choose another name", path=f"{what} {name!r}")
        if name in self.variables or name in self.constraints:
            kind = "variable" if name in self.variables else "constraint"
            raise InputError(f"the model already has a {kind} named {name!r}", path=f"{what} {name!r}")

    def _changed(self) -> None:
        self._version += 1

    # ------------------------------------------------------------- objectives
    def maximize(self, expr: Expression) -> None:
        """Maximise the scalar ``expr`` (replaces any objective).

        >>> import laissez_opt as lo
        >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)]))
        >>> m.maximize(m.x.sum()); m.objectives
        [<Objective maximize x.sum()>]
        """
        self.lexicographic(Objective("max", expr))

    def minimize(self, expr: Expression) -> None:
        """Minimise the scalar ``expr`` (replaces any objective).

        >>> import laissez_opt as lo
        >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)]))
        >>> _ = m.add(m.x.sum() >= 1, name="serve")
        >>> m.minimize(2 * m.x.sum()); m.solve().objective
        2.0
        """
        self.lexicographic(Objective("min", expr))

    def lexicographic(self, *objectives: Objective, tolerance: float = 1e-7) -> None:
        """Optimise ``objectives`` in order: each holds the optimum of the ones before it.

        Level ``k`` is solved with the rows ``f_j >= f_j* - s_j`` (maximised
        levels; ``<=`` and ``+`` for minimised ones) for every earlier level
        ``j``, with slack ``s_j = tolerance * max(1, |f_j*|)`` so that the
        solver's own tolerances cannot make the next level infeasible.

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import capacity, welfare, cost
        >>> inst = lo.Instance([lo.Pool("cheap", base_price=1.0), lo.Pool("dear", base_price=5.0)],
        ...                    [lo.Agent("A", demand=1)],
        ...                    [lo.Edge("A", "cheap", 1.0), lo.Edge("A", "dear", 1.0)])
        >>> m = lo.Model(inst)
        >>> _ = m.add(capacity(m.x)), m.add(m.x.sum() <= 1, name="one_device")
        >>> m.lexicographic(maximize(welfare(m.x)), minimize(cost(m.x)))
        >>> result = m.solve()
        >>> result.objective, [level["value"] for level in result.details["levels"]]
        (1.0, [1.0, 1.0])
        >>> result.allocation[0]["pool"]
        'cheap'
        """
        if not objectives:
            raise InputError("give at least one objective", path="objective")
        if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not 0 <= tolerance < 1:
            raise InputError(f"tolerance must be a number in [0, 1), got {tolerance!r}", path="tolerance")
        checked = []
        for k, objective in enumerate(objectives):
            where = "objective" if len(objectives) == 1 else f"objective {k + 1}"
            if not isinstance(objective, Objective):
                raise InputError(f"expected maximize(expression) or minimize(expression), got {type(objective).__name__}",
                                 path=where)
            expr = objective.expr
            if not isinstance(expr, Expression):
                raise InputError(f"expected an expression to optimise, got {type(expr).__name__}", path=where)
            if expr.error:
                raise InputError(f"{expr.text}: {expr.error}", path=where)
            if expr.model is not self:
                raise InputError("the objective is built from another model's variables", path=where)
            if expr.dims:
                raise InputError(f"an objective is one number, but {expr.text} has {expr.index.describe(self.space)}; "
                                 f"sum it ({expr.text}.sum()) or weight it (welfare(x) is sum_i w_i U_i)", path=where)
            name = objective.name if len(objectives) == 1 else f"level_{k + 1}"
            checked.append(Objective(objective.sense, expr, name))
        self.objectives = checked
        self.tolerance = float(tolerance)
        self._changed()

    # --------------------------------------------------------------- lowering
    def lower(self) -> LinearModel:
        """The declaration as a :class:`LinearModel` (cached until the model changes; treat it as read-only).

        One variable block per declared block and one constraint block per
        family, with the same names; constants move into the row bounds; the
        first objective (a feasibility model has none: objective 0, maximised).
        A transportation structure is detected on the first query.

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import capacity, demand
        >>> m = lo.Model(lo.load("instances/hotos25-table1.json"))
        >>> _ = m.add(capacity(m.x)), m.add(demand(m.x))
        >>> m.lower().summary()
        {'name': 'model', 'sense': 'max', 'variables': {'x': 5}, 'constraints': {'capacity': 3, 'demand': 2}, 'integer': True, 'transportation': True}
        """
        if self._lowered is not None and self._lowered[0] == self._version:
            return self._lowered[1]
        model = self._lower(self.objectives[0] if self.objectives else None)
        self._lowered = (self._version, model)
        return model

    def _lower(self, objective: Objective | None, keep: dict[str, np.ndarray | None] | None = None) -> LinearModel:
        """Lower with ``objective``; ``keep`` maps family names to the rows kept (None: all), others dropped."""
        model = LinearModel(self.name, sense=objective.sense if objective else "max")
        for block in self.variables.values():
            model.add_variables(block.name, block.size, lower=_uniform(block.lower), upper=_uniform(block.upper),
                                integer=block.integer, description=block.description)
        for name, constraint in self.constraints.items():
            if keep is not None and name not in keep:
                continue
            expr = constraint.expr
            lower, upper = constraint.lower, constraint.upper
            if expr.const is not None:
                lower, upper = lower - expr.const, upper - expr.const
            if keep is not None and keep[name] is not None:
                dropped = ~keep[name]
                lower, upper = np.where(dropped, -np.inf, lower), np.where(dropped, np.inf, upper)
            block = model.add_constraints(name, rows=expr.row_array(), cols=expr.cols, coefs=expr.coefs, lower=lower,
                                          upper=upper, n_rows=expr.size, description=constraint.description)
            if keep is None:
                constraint.model_rows = slice(block.start, block.start + block.size)
        if objective is not None:
            self._set_objective(model, objective.expr)
        model.detect_transportation(lazy=True)
        return model

    def _set_objective(self, model: LinearModel, expr: Expression) -> None:
        """Write ``expr`` as the objective of a freshly lowered ``model`` (its coefficients are still 0)."""
        for block in self.variables.values():
            # An objective over one whole block (welfare(x)) has that block's columns, once each, in order.
            if expr.cols is block.expr.cols:
                model.set_objective(model.variables[block.name], expr.coefs,
                                    offset=0.0 if expr.const is None else float(expr.const[0]))
                return
        model.objective, model.objective_offset = self._objective_vector(expr)

    def _objective_vector(self, expr: Expression) -> tuple[np.ndarray, float]:
        offset = 0.0 if expr.const is None else float(expr.const[0])
        vector = np.zeros(self.n_columns)
        for block in self.variables.values():
            # An objective over one whole block (welfare(x)) has that block's columns, once each, in order.
            if expr.cols is block.expr.cols:
                vector[block.slice] = expr.coefs
                return vector, offset
        if expr.cols.size:
            vector = np.bincount(expr.cols, weights=expr.coefs, minlength=self.n_columns).astype(np.float64)
        return vector, offset

    def size(self) -> SizeEstimate:
        """The declared size: variables, rows and coefficients (the estimate of a run before it is lowered).

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import capacity
        >>> m = lo.Model(lo.load("instances/hotos25-table1.json"))
        >>> _ = m.add(capacity(m.x))
        >>> size = m.size(); (size.variables, size.constraints, size.nonzeros)
        (5.0, 3.0, 5.0)
        """
        nonzeros = sum(c.expr.nnz for c in self.constraints.values())
        rows = sum(c.size for c in self.constraints.values())
        edge_rounds = float(self.x.size) if self.has_allocation else 0.0
        return SizeEstimate(
            variables=float(self.n_columns), constraints=float(rows), nonzeros=float(nonzeros),
            dense_bytes=64.0 * edge_rounds + 24.0 * nonzeros,
            note=f"declared model {self.name!r}: {len(self.variables)} variable blocks, {len(self.constraints)} families",
        )

    def to_pyomo(self):
        """The lowered model as a :class:`pyomo.environ.ConcreteModel` (first objective), components named as declared.

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import capacity
        >>> m = lo.Model(lo.load("instances/hotos25-table1.json"))
        >>> _ = m.add(capacity(m.x))
        >>> sorted(c.name for c in m.to_pyomo().component_objects())
        ['capacity', 'objective', 'x']
        """
        from ..modeling.pyomo_route import to_pyomo

        return to_pyomo(self.lower())

    def write(self, path: str) -> None:
        """Write the lowered model (first objective) as an LP or MPS file (by suffix), atomically.

        >>> import os, tempfile, laissez_opt as lo
        >>> from laissez_opt.declare import capacity
        >>> m = lo.Model(lo.load("instances/hotos25-table1.json"))
        >>> _ = m.add(capacity(m.x))
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     m.write(os.path.join(folder, "m.lp"))
        ...     "capacity(" in open(os.path.join(folder, "m.lp")).read()
        True
        """
        from ..modeling.pyomo_route import write_model

        write_model(self.lower(), path)

    # ------------------------------------------------------------------ values
    def column_values(self, values: Any = None) -> np.ndarray:
        """A full column vector from ``values`` (None: the last solve; a Result: its ``x``, others NaN; an array).

        >>> import laissez_opt as lo
        >>> m = lo.Model(lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)]))
        >>> _ = m.x, m.variable("t")
        >>> m.column_values(lo.solve(m.instance, "welfare")).tolist()
        [1.0, nan]
        """
        if values is None:
            if self.last_values is None or self.last_values.size != self.n_columns:
                raise ValueError(f"model {self.name!r} has no solution yet (solve it, or pass a result)")
            return self.last_values
        if isinstance(values, Result):
            if not self.has_allocation or values.amounts is None:
                raise ValueError("this result carries no allocation array to evaluate x at")
            column = np.full(self.n_columns, np.nan)
            amounts = np.asarray(values.amounts, dtype=np.float64)
            if amounts.shape != (self.instance.n_edges, self.instance.rounds):
                raise ValueError(f"the result's allocation has shape {amounts.shape}, not that of this instance")
            column[self.variables["x"].slice] = amounts.reshape(-1)
            return column
        array = np.asarray(values, dtype=np.float64)
        if array.shape != (self.n_columns,):
            raise ValueError(f"expected {self.n_columns} values, one per variable, got shape {array.shape}")
        return array

    def edge_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys ``agent * m + pool`` of the edges and the edge number of each (for label lookups).

        >>> import laissez_opt as lo
        >>> inst = lo.Instance([lo.Pool("P"), lo.Pool("Q")], [lo.Agent("A")], [lo.Edge("A", "Q", 1.0), lo.Edge("A", "P", 1.0)])
        >>> [k.tolist() for k in lo.Model(inst).edge_lookup()]
        [[0, 1], [1, 0]]
        """
        if self._edge_keys is None:
            inst = self.instance
            keys = inst.edge_agent * inst.n_pools + inst.edge_pool
            order = np.argsort(keys, kind="stable")
            self._edge_keys = (keys[order], order)
        return self._edge_keys

    # ------------------------------------------------------------------- solve
    def solve(self, *, solver: str = "highs", via: str = "direct", time_limit: float | None = None,
              threads: int | None = None, mip_gap: float = 1e-7, verbose: bool = False, backend: str | None = None,
              check: bool = True, raise_infeasible: bool = False, explain: bool = True) -> Result:
        """Solve on a route of :func:`laissez_opt.modeling.solve_model` and return a verified :class:`Result`.

        ``solver``/``via``/``backend``: the route (``highs`` direct by default;
        ``ortools``; ``via="pyomo"``); ``time_limit`` in seconds covers every
        solve of the call.  ``check`` re-evaluates every declared row, bound and
        objective (:mod:`laissez_opt.declare.verify`) and raises
        :class:`VerificationError` if one fails.  An infeasible model returns
        status ``infeasible`` with the conflicting named rows in ``message``
        and ``details["conflict"]`` (``explain=False`` skips the search), or
        raises :class:`InfeasibleError` with ``raise_infeasible``.  An unbounded
        model raises :class:`InputError`.

        ``details`` holds ``verification``, ``binding`` (rows at a bound:
        constraint, entry, activity, bound, value and ``dual``, the rate of
        change of the optimum per unit of that bound, when the route solved an
        LP; at most :data:`BINDING_LIMIT` listed), ``binding_rows`` (their
        number), ``duals`` (where duals came from, or why there are none) and,
        for lexicographic models, ``levels``.

        >>> import laissez_opt as lo
        >>> from laissez_opt.declare import capacity, welfare
        >>> m = lo.Model(lo.load("instances/hotos25-table1.json"))
        >>> _ = m.add(capacity(m.x))
        >>> m.maximize(welfare(m.x))
        >>> [(r.status, round(r.objective, 6), r.route) for r in (m.solve(), m.solve(solver="ortools"))]
        [('optimal', 12.766943, 'highspy-mip'), ('optimal', 12.766943, 'ortools-cp-sat')]
        """
        given = {"solver": solver, "via": via, "time_limit": time_limit, "threads": threads, "mip_gap": mip_gap,
                 "verbose": verbose, "backend": backend}
        opts = {name: _SOLVER_OPTIONS[name].coerce(value, f"model {self.name!r}") for name, value in given.items()}
        for flag, value in (("check", check), ("raise_infeasible", raise_infeasible), ("explain", explain)):
            if not isinstance(value, bool):
                raise InputError(f"expected true or false, got {value!r}", path=flag)
        if opts["solver"] not in ("highs", "ortools") and opts["via"] == "direct":
            raise InputError(f"unknown solver {opts['solver']!r}; choose highs or ortools (with via='pyomo', any "
                             f"solver Pyomo knows)", path="solver")
        start = time.perf_counter()
        with deadline(opts["time_limit"]):
            if len(self.objectives) > 1:
                solution, levels = self._solve_levels(opts)
            else:
                solution, levels = self._solve_once(self.lower(), opts), None
            params = {"time_limit": opts["time_limit"], "via": opts["via"], "solver": opts["solver"]}
            result = self._result(solution, levels, params, check=check, explain=explain, opts=opts)
        result.timing["total_s"] = time.perf_counter() - start
        if result.status == "infeasible" and raise_infeasible:
            raise InfeasibleError(result.message, result=result)
        return result

    def _solve_once(self, model: LinearModel, opts: dict) -> Solution:
        try:
            return solve_model(model, duals=True, **opts)
        except (SolverError, NoSolutionError) as exc:
            if "unbounded" in str(exc).lower():
                names = [b.name for b in self.variables.values() if np.any(np.isinf(b.upper)) or np.any(np.isinf(b.lower))]
                hint = f" (unbounded variables: {', '.join(names)})" if names else ""
                raise InputError(f"model {self.name!r} is unbounded or infeasible with an unbounded objective: the "
                                 f"objective can grow without limit{hint}; add bounds or constraints",
                                 path="objective") from None
            raise

    def _solve_levels(self, opts: dict) -> tuple[Solution, list[dict]]:
        model = self._lower(self.objectives[0])
        levels: list[dict] = []
        solution = None
        worst = {"optimal": 0, "feasible": 1, "time_limit": 2}
        status = "optimal"
        build_s = solve_s = 0.0
        for k, objective in enumerate(self.objectives):
            if k:
                previous = self.objectives[k - 1]
                vector, offset = self._objective_vector(previous.expr)
                value = levels[-1]["value"]
                slack = self.tolerance * max(1.0, abs(value))
                nz = np.flatnonzero(vector)
                bound = value - offset - slack if previous.sense == "max" else value - offset + slack
                model.add_constraints(
                    f"lexicographic_{k}", rows=np.zeros(nz.size, np.int64), cols=nz, coefs=vector[nz],
                    lower=np.array([bound]) if previous.sense == "max" else None,
                    upper=np.array([bound]) if previous.sense == "min" else None, n_rows=1,
                    description=f"level {k} ({previous.expr.text}) holds its optimum within {slack:g}",
                )
                model.objective, model.objective_offset = self._objective_vector(objective.expr)
                model.sense = objective.sense
            solution = self._solve_once(model, opts)
            build_s += solution.build_s
            solve_s += solution.solve_s
            if solution.status == "infeasible":
                if k == 0:
                    return solution, levels
                raise SolverError(f"model {self.name!r}: level {k + 1} became infeasible after level {k}; "
                                  f"raise the lexicographic tolerance")
            status = max(status, solution.status, key=lambda s: worst.get(s, 3))
            levels.append({"name": objective.name, "sense": objective.sense, "expression": objective.expr.text,
                           "value": solution.objective, "bound": solution.bound, "status": solution.status})
        solution.status = status
        solution.build_s, solution.solve_s = build_s, solve_s
        return solution, levels

    # ---------------------------------------------------------------- results
    def _result(self, solution: Solution, levels, params: dict, *, check: bool, explain: bool, opts: dict) -> Result:
        inst = self.instance
        integral = self.variables["x"].integer if self.has_allocation else any(b.integer for b in self.variables.values())
        common = dict(
            instance=inst.name, method=self.name, solver=solution.solver, route=solution.route,
            solver_status=solution.solver_status, mode="integral" if integral else "fractional", params=params,
            timing={"build_s": solution.build_s, "solve_s": solution.solve_s}, message=solution.message,
        )
        if solution.status == "infeasible":
            return self._infeasible(common, explain, opts)
        values = np.array(solution.values, dtype=np.float64)
        for block in self.variables.values():
            if block.integer:
                values[block.slice] = np.round(values[block.slice])
        reported = [None] * len(self.objectives)
        if self.objectives:
            reported[-1] = solution.objective
        verdict = check_declaration(self, values, objective_values=reported)
        if levels:
            for level, objective, value in zip(levels[:-1], self.objectives, verdict.objectives):
                slack = 2 * self.tolerance * max(1.0, abs(level["value"]))
                short = level["value"] - value if objective.sense == "max" else value - level["value"]
                level["held"] = short <= slack + 1e-6 * max(1.0, abs(level["value"]))
                if not level["held"]:
                    verdict.ok = False
                    verdict.count += 1
                    verdict.violations.append(f"objective {level['name']!r}: {value:.12g} no longer holds its optimum "
                                              f"{level['value']:.12g}")
        if check and not verdict.ok:
            raise VerificationError(f"model {self.name!r} on {inst.name}: {verdict}")
        self.last_values = values
        binding, count = self._binding(verdict.activities, None if solution.duals is None else solution.duals.row)
        details: dict[str, Any] = {
            "verification": verdict.summary(),
            "binding": binding,
            "binding_rows": count,
            "duals": _duals_note(solution),
        }
        if levels:
            details["levels"] = levels
        objective = solution.objective if self.objectives else 0.0
        if self.has_allocation:
            amounts = values[self.variables["x"].slice].reshape(inst.n_edges, inst.rounds)
            amounts = np.where(np.abs(amounts) < 1e-12, 0.0, amounts)
            utilities = edge_utilities(inst, amounts)
            allocation = allocation_records(inst, amounts)
            per_agent = utility_map(inst, utilities)
        else:
            amounts, allocation, per_agent = None, [], {}
        return Result(
            status=solution.status, objective=objective, bound=solution.bound if self.objectives else 0.0,
            gap=solution.gap if self.objectives else 0.0, allocation=allocation, utilities=per_agent,
            amounts=amounts, details=details, verified=verdict.ok if check else None, **common,
        )

    def _binding(self, activities: dict[str, np.ndarray], duals: np.ndarray | None) -> tuple[list[dict], int]:
        """Rows at one of their bounds (every equality row), by family, with duals where known."""
        entries: list[dict] = []
        total = 0
        for name, constraint in self.constraints.items():
            activity = activities[name]
            lower, upper = constraint.lower, constraint.upper
            with np.errstate(invalid="ignore"):
                at_upper = np.isfinite(upper) & (np.abs(activity - upper) <= 1e-6 * np.maximum(1.0, np.abs(upper)))
                at_lower = np.isfinite(lower) & (np.abs(activity - lower) <= 1e-6 * np.maximum(1.0, np.abs(lower)))
            rows = np.flatnonzero(at_upper | at_lower)
            total += rows.size
            for k in rows[: max(0, BINDING_LIMIT - len(entries))].tolist():
                side = "equal" if lower[k] == upper[k] else ("upper" if at_upper[k] else "lower")
                dual = None
                if duals is not None and constraint.model_rows is not None:
                    dual = float(duals[constraint.model_rows.start + k])
                entries.append({
                    "constraint": name, "entry": constraint.expr.index.label(self.space, k),
                    "activity": float(activity[k]), "bound": side,
                    "value": float(upper[k] if side in ("upper", "equal") else lower[k]), "dual": dual,
                })
        return entries, total

    def _infeasible(self, common: dict, explain: bool, opts: dict) -> Result:
        details: dict[str, Any] = {}
        if explain:
            from .conflict import find_conflict

            conflict = find_conflict(self, opts)
            details["conflict"] = conflict.rows
            message = f"model {self.name!r} is infeasible: {conflict.describe()}"
        else:
            message = f"model {self.name!r} is infeasible"
        common["message"] = message
        return Result(status="infeasible", details=details, **common)


def _duals_note(solution: Solution) -> str:
    if solution.duals is not None:
        return f"from the LP solved by {solution.route}"
    if "mip" in solution.route or "cp-sat" in solution.route or "scip" in solution.route:
        return "none: the model was solved as an integer program (duals exist for LPs only)"
    return f"none: the route {solution.route} reports no duals (highspy LPs, GLOP and Pyomo's HiGHS do)"
