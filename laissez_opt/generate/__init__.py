"""Seeded random instance generators.

>>> from laissez_opt.generate import FAMILIES, generate
>>> sorted(FAMILIES)
['gavel', 'gemmini', 'neocloud', 'uniform']
>>> d = generate("gavel", agents=100, pools=3, seed=0)
>>> d["name"], len(d["agents"]), [p["id"] for p in d["pools"]]
('gavel-n100-m3-s0', 100, ['V100-0', 'P100-1', 'K80-2'])

``generate(family, agents, pools, seed=0, **params)`` returns a plain dict in
the ``laissez-opt/instance`` version 1 format, ready for
``laissez_opt.io.instance_from_dict`` or ``json.dumps``.  The same arguments
always give an identical dict (all randomness comes from
``numpy.random.default_rng(seed)``).  An unknown family, an unknown parameter,
sizes below a family's minimum (at least one agent and one pool) or a bad
parameter value raise ``ValueError`` with a one-line message.

Families (each module's docstring documents its sources and parameters):

* ``uniform``: synthetic uniform (0, 1] utilities on a sparse random graph;
* ``gavel``: DL training jobs on V100/P100/K80 with the Gavel simulator's
  per-job-type throughputs (OSDI 2020);
* ``neocloud``: tenant jobs bidding for A10/L4/H100/Trainium pools, in the
  setting and with the prices of LaissezCloud (HotOS'25);
* ``gemmini``: inference agents on Gemmini at 2/3 GHz with the Most-Token-First
  thesis's Table 5.1 throughputs and its weight setups.
"""

from __future__ import annotations

from typing import Any

from ._common import Family
from .gavel import FAMILY as _GAVEL
from .gemmini import FAMILY as _GEMMINI
from .neocloud import FAMILY as _NEOCLOUD
from .uniform import FAMILY as _UNIFORM

__all__ = ["FAMILIES", "Family", "generate", "generate_instance"]

#: Family name -> :class:`Family` (``.name``, ``.description``, ``.params``, callable).
FAMILIES: dict[str, Family] = {f.name: f for f in (_UNIFORM, _GAVEL, _NEOCLOUD, _GEMMINI)}


def _family(family: str) -> Family:
    fam = FAMILIES.get(family) if isinstance(family, str) else None
    if fam is None:
        from ..method_spec import suggest

        raise ValueError(f"unknown instance family {family!r}{suggest(family, FAMILIES)} "
                         f"(known: {', '.join(sorted(FAMILIES))})")
    return fam


def generate(family: str, agents: int, pools: int, seed: int = 0, **params: Any) -> dict:
    """A seeded random instance of ``family`` with ``agents`` agents and ``pools`` pools.

    ``params`` are the family's optional parameters (see ``FAMILIES[family].params``
    for the names and defaults).  Returns a plain dict in the instance format.
    """
    return _family(family)(agents, pools, seed, **params)


def generate_instance(family: str, agents: int, pools: int, seed: int = 0, **params: Any):
    """The instance of :func:`generate` as an :class:`~laissez_opt.instance.Instance`, built from numpy columns.

    The same instance as ``instance_from_dict(generate(...))`` (equal records,
    the same canonical text), without the dictionary on the way: each family
    draws whole columns from ``numpy.random.default_rng(seed)`` and the
    records are made from them in a few C-level passes, so a million agents
    take seconds (``benchmarks/generate_scaling.py``).

    >>> inst = generate_instance("gemmini", agents=4, pools=2, seed=1)
    >>> inst.n_agents, inst.n_edges, inst.name
    (4, 8, 'gemmini-n4-m2-s1')
    """
    return _family(family).instance(agents, pools, seed, **params)
