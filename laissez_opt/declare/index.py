"""What each entry of a vector expression stands for: its labels along named dimensions.

An expression of the modelling API is a vector of linear forms; its
:class:`Index` says, for every entry (row), which agent, pool, round, cluster
or other agent it belongs to.  Dimensions and their labels come from the
instance (:class:`Space`):

===========  =================================================================
dimension    labels
===========  =================================================================
``agent``    agent ids, in instance order
``pool``     pool ids, in instance order
``round``    ``0 .. R-1``
``cluster``  the pools' ``cluster`` labels, sorted; ``None`` for pools without one
``other``    agent ids again (the second agent of a pair, as in envy rows)
===========  =================================================================

Labels are stored as integer codes (numpy arrays, one per dimension), never
as Python objects per entry; the row key ``ravel_multi_index(codes)`` makes
entries of two expressions comparable.  Every index keeps its keys unique.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10", cluster="gemm"), lo.Pool("L4")], [lo.Agent("A")],
...                    [lo.Edge("A", "A10", 1.0), lo.Edge("A", "L4", 1.0)], rounds=2)
>>> space = Space(inst)
>>> space.labels["cluster"], space.size("round")
(['gemm', None], 2)
>>> index = Index.product(space, ("pool", "round"))
>>> index.size, [index.label(space, k) for k in (0, 3)]
(4, ['A10, round 0', 'L4, round 1'])
"""

from __future__ import annotations

import weakref
from typing import Iterable, Sequence

import numpy as np

from ..instance import Instance
from ..method_spec import suggest

__all__ = ["DIMS", "Space", "Index", "SelectionError", "stays"]

#: The dimensions an expression may be indexed by.
DIMS = ("agent", "pool", "round", "cluster", "other")
#: Which instance list the labels of a dimension name (for messages).
_KIND = {"agent": "agent", "pool": "pool", "round": "round", "cluster": "cluster", "other": "agent"}


_STAYS: "weakref.WeakKeyDictionary[Instance, tuple | None]" = weakref.WeakKeyDictionary()


def stays(instance: Instance) -> tuple[np.ndarray, np.ndarray] | None:
    """Each agent's first and last round ``(a_i, D_i)`` as arrays; None when every agent stays all rounds.

    ``D_i`` is the deadline clamped to the horizon (:attr:`Instance.last_rounds`).
    Read once per instance (instances are immutable), like the instance's own array views.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A", arrival=1), lo.Agent("B")], [], rounds=3)
    >>> [a.tolist() for a in stays(inst)], stays(lo.Instance([lo.Pool("P")], [lo.Agent("A")], []))
    ([[1, 0], [2, 2]], None)
    """
    if instance not in _STAYS:
        arrival = np.fromiter((a.arrival for a in instance.agents), dtype=np.int64, count=instance.n_agents)
        final = instance.last_rounds  # deadlines clamped to the horizon
        whole = not arrival.any() and bool(np.all(final == instance.rounds - 1))
        _STAYS[instance] = None if whole else (arrival, final)
    return _STAYS[instance]


class SelectionError(Exception):
    """A selection names a label the instance does not have (the message is in the user's terms)."""


class Space:
    """The label spaces of one instance: agent and pool ids, rounds, clusters.

    ``pool_cluster[c]`` is the cluster code of pool ``c``.

    >>> import laissez_opt as lo
    >>> space = Space(lo.load("instances/hotos25-table1.json"))
    >>> space.codes("pool", ["Trainium", "A10"]).tolist(), space.size("agent"), space.pool_cluster.tolist()
    ([0, 2], 2, [0, 0, 0])
    """

    def __init__(self, instance: Instance):
        self.instance = instance
        named = sorted({p.cluster for p in instance.pools if p.cluster is not None})
        clusters = named + ([None] if any(p.cluster is None for p in instance.pools) else [])
        code = {label: k for k, label in enumerate(clusters)}
        self.pool_cluster = np.array([code[p.cluster] for p in instance.pools], dtype=np.int64)
        self._sizes = {"agent": instance.n_agents, "pool": instance.n_pools, "round": instance.rounds,
                       "cluster": len(clusters), "other": instance.n_agents}
        self._clusters = clusters
        self._labels: dict[str, list] = {}
        self._lookup: dict[str, dict] = {}

    @property
    def labels(self) -> "_Labels":
        """Labels per dimension (``space.labels["agent"]``), built on first use: declaring needs only codes."""
        return _Labels(self)

    def _labels_of(self, dim: str) -> list:
        if dim not in self._labels:
            inst = self.instance
            if dim in ("agent", "other"):
                values = [a.id for a in inst.agents]
            elif dim == "pool":
                values = [p.id for p in inst.pools]
            elif dim == "round":
                values = list(range(inst.rounds))
            elif dim == "cluster":
                values = self._clusters
            else:
                raise KeyError(dim)
            self._labels[dim] = values
        return self._labels[dim]

    def lookup(self, dim: str) -> dict:
        """Label -> code along ``dim``."""
        if dim not in self._lookup:
            self._lookup[dim] = {label: k for k, label in enumerate(self._labels_of(dim))}
        return self._lookup[dim]

    def size(self, dim: str) -> int:
        return self._sizes[dim]

    def codes(self, dim: str, selector) -> np.ndarray:
        """Sorted distinct codes named by ``selector``: a label, a list of labels, or (rounds) an int, range or slice.

        Raises :class:`SelectionError` naming an unknown label (with a near miss).
        """
        if dim == "round":
            return self._round_codes(selector)
        if isinstance(selector, (str, type(None))) or not isinstance(selector, Iterable):
            selector = [selector]
        lookup = self.lookup(dim)
        out = []
        for label in selector:
            if label not in lookup:
                known = [str(v) for v in self.labels[dim] if v is not None]
                shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
                same = [k for k in known if k.lower() == str(label).lower()]
                hint = f" (did you mean {same[0]!r}?)" if same else suggest(str(label), known)
                raise SelectionError(f"unknown {_KIND[dim]} {label!r}{hint}; the instance's {_KIND[dim]}s are {shown}")
            out.append(lookup[label])
        return np.unique(np.asarray(out, dtype=np.int64))

    def _round_codes(self, selector) -> np.ndarray:
        rounds = self.size("round")
        if isinstance(selector, slice):
            return np.arange(rounds, dtype=np.int64)[selector]
        if isinstance(selector, (int, np.integer)) and not isinstance(selector, bool):
            selector = [selector]
        if isinstance(selector, str) or not isinstance(selector, Iterable):
            raise SelectionError(f"rounds are numbered 0 .. {rounds - 1}; got {selector!r}")
        out = []
        for value in selector:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < rounds:
                raise SelectionError(f"round {value!r} is outside the horizon 0 .. {rounds - 1}")
            out.append(int(value))
        return np.unique(np.asarray(out, dtype=np.int64))

    def describe(self, dim: str, code: int) -> str:
        label = self.labels[dim][int(code)]
        if dim == "round":
            return f"round {label}"
        if label is None:
            return "(no cluster)"
        return str(label)


class Index:
    """The labels of the ``size`` entries of an expression along ``dims`` (codes: one int64 array per dim).

    ``domains`` maps a dimension to the sorted codes a selection restricted it
    to; a grouped sum (:meth:`product`) makes one entry per label of the
    (restricted) domains, so a sum over an empty set is an entry with value 0.
    A scalar has no dimensions and one entry.

    >>> import numpy as np, laissez_opt as lo
    >>> space = Space(lo.load("instances/hotos25-table1.json"))
    >>> index = Index(("agent",), (np.array([1, 0]),), 2)
    >>> index.keys(space).tolist(), index.label(space, 0), index.lookup_rows(space, np.array([0, 5])).tolist()
    ([1, 0], 'B', [1, -1])
    """

    __slots__ = ("dims", "codes", "size", "domains", "_keys")

    def __init__(self, dims: tuple[str, ...], codes: tuple[np.ndarray, ...], size: int, domains: dict | None = None):
        self.dims = dims
        self.codes = codes
        self.size = int(size)
        self.domains = domains or {}
        self._keys = None

    @classmethod
    def scalar(cls) -> "Index":
        return cls((), (), 1)

    @classmethod
    def product(cls, space: Space, dims: Sequence[str], domains: dict | None = None) -> "Index":
        """One entry per combination of labels of ``dims`` (row-major, first dimension slowest)."""
        domains = {d: v for d, v in (domains or {}).items() if d in dims}
        axes = [domains.get(d, np.arange(space.size(d), dtype=np.int64)) for d in dims]
        shape = tuple(len(a) for a in axes)
        if len(dims) == 1:
            codes = (axes[0],)
        else:
            grid = np.indices(shape, dtype=np.int64).reshape(len(dims), -1)
            codes = tuple(axis[g] for axis, g in zip(axes, grid))
        return cls(tuple(dims), codes, int(np.prod(shape, dtype=np.int64)) if dims else 1, domains)

    @property
    def is_scalar(self) -> bool:
        return not self.dims

    def keys(self, space: Space) -> np.ndarray:
        """Unique int64 key of each entry (row-major over the full label spaces)."""
        if self._keys is None:
            if not self.dims:
                self._keys = np.zeros(1, dtype=np.int64)
            elif len(self.dims) == 1:
                self._keys = self.codes[0]
            else:
                self._keys = np.ravel_multi_index(self.codes, tuple(space.size(d) for d in self.dims))
        return self._keys

    def reordered(self, dims: tuple[str, ...]) -> "Index":
        """The same entries with the dimensions in the order ``dims``."""
        if dims == self.dims:
            return self
        position = {d: k for k, d in enumerate(self.dims)}
        return Index(dims, tuple(self.codes[position[d]] for d in dims), self.size, self.domains)

    def take(self, keep: np.ndarray) -> "Index":
        """The entries where ``keep`` (boolean) holds."""
        return Index(self.dims, tuple(c[keep] for c in self.codes), int(np.count_nonzero(keep)), self.domains)

    def label(self, space: Space, row: int) -> str:
        """``"A10, round 0"``: the labels of entry ``row`` (``""`` for a scalar)."""
        return ", ".join(space.describe(d, c[row]) for d, c in zip(self.dims, self.codes))

    def label_tuple(self, space: Space, row: int) -> tuple:
        """The labels of entry ``row`` as a tuple of ids and round numbers."""
        return tuple(space.labels[d][int(c[row])] for d, c in zip(self.dims, self.codes))

    def describe(self, space: Space) -> str:
        """``"agent (3 agents)"``, ``"pool and round (6 entries)"`` or ``"nothing (a single number)"``."""
        if not self.dims:
            return "nothing (a single number)"
        if len(self.dims) == 1:
            plural = "rounds" if self.dims[0] == "round" else f"{_KIND[self.dims[0]]}s"
            return f"{self.dims[0]} ({self.size} {plural})"
        return f"{' and '.join(self.dims)} ({self.size} entries)"

    def lookup_rows(self, space: Space, other_keys: np.ndarray) -> np.ndarray:
        """Position of each of ``other_keys`` among this index's keys (-1 where absent)."""
        keys = self.keys(space)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        where = np.searchsorted(sorted_keys, other_keys)
        where = np.minimum(where, max(sorted_keys.size - 1, 0))
        found = sorted_keys.size > 0
        hit = (sorted_keys[where] == other_keys) if found else np.zeros(other_keys.shape, dtype=bool)
        return np.where(hit, order[where] if found else -1, -1)


class _Labels:
    """Read-only mapping view ``dimension -> labels`` of a :class:`Space` (labels built on first access)."""

    __slots__ = ("space",)

    def __init__(self, space: Space):
        self.space = space

    def __getitem__(self, dim: str) -> list:
        return self.space._labels_of(dim)

    def __contains__(self, dim) -> bool:
        return dim in self.space._sizes

    def __iter__(self):
        return iter(self.space._sizes)
