"""Imports point downward only.

Layers, lowest first (a module may import from its own unit, meaning its own
subpackage or module, and from any lower layer):

* L0  ``errors``, ``jit`` (the numba switch of the numeric kernels), ``arrays`` (sorting-based array helpers)
* L1  ``limits``, ``method_spec``, ``display`` (run bounds, method declarations, how reports are shown)
* L2  ``instance`` (the typed instance graph)
* L3  ``result``, ``shares``, ``starts`` (records, reference shares and quick feasible allocations)
* L4  ``io`` (files of instances and results)
* L5  ``modeling``, ``generate`` (solver-neutral declarations and routes; instance families)
* L6  ``declare`` (the public modelling API: ``lo.Model``, lowered to ``modeling``)
* L7  ``exact``, ``heuristics`` (one model or algorithm per module)
* L8  ``analysis`` (verification, metrics, fairness, certificates)
* L9  ``methods`` (the registry)
* L10 ``api``
* L11 ``harness`` (comparisons over many instances)
* L12 ``partition`` (POP-style partitioned solving: its parts run on the harness's executors; ``lo.solve``)
* L13 ``simulate`` (multi-round simulation: its sweeps run through the harness's executors and run store)
* L14 ``reproduce`` (the seeds' worked examples, recomputed through the layers below)
* L15 ``cli``
* L16 ``__main__``, ``__init__``

Every import statement counts, including the deferred ones inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "laissez_opt"

LAYERS = {
    "errors": 0,
    "jit": 0,
    "arrays": 0,
    "limits": 1,
    "method_spec": 1,
    "display": 1,
    "instance": 2,
    "result": 3,
    "shares": 3,
    "starts": 3,
    "io": 4,
    "modeling": 5,
    "generate": 5,
    "declare": 6,
    "exact": 7,
    "heuristics": 7,
    "analysis": 8,
    "methods": 9,
    "api": 10,
    "harness": 11,
    "partition": 12,
    "simulate": 13,
    "reproduce": 14,
    "cli": 15,
    "__main__": 16,
    "__init__": 16,
}

# Imports that break the rule, each with its reason.  Empty: keep it so.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts)


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: the first component under the package."""
    parts = module.split(".")
    assert parts[0] == "laissez_opt", module
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _exists(module: str) -> bool:
    base = PACKAGE.parent / Path(*module.split("."))
    return base.is_dir() or base.with_suffix(".py").is_file()


def _imports(source: str, name: str) -> list[tuple[str, int]]:
    """Absolute ``laissez_opt`` modules imported by module ``name`` (dotted, ``pkg.__init__`` for packages)."""
    package = name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "laissez_opt"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "laissez_opt":
                continue
            if target == "laissez_opt" or node.module is None:
                # "from . import x": each name may be a submodule
                found += [(f"{target}.{a.name}" if _exists(f"{target}.{a.name}") else target, node.lineno) for a in node.names]
            else:
                found.append((target, node.lineno))
    return found


def _violations(source: str, name: str, known=KNOWN_VIOLATIONS) -> list[str]:
    own = _unit(name)
    out = []
    for target, line in _imports(source, name):
        unit = _unit(target)
        if unit == own or (name, unit) in known:
            continue  # inside the same subpackage, or a reported exception
        mine, theirs = LAYERS[own], LAYERS[unit]
        if theirs >= mine:
            out.append(f"{name}:{line} imports {target} ({unit}, L{theirs}) from {own} (L{mine})")
    return out


def test_every_unit_has_a_layer():
    units = {_unit(_name(path)) for path in _modules()}
    missing = units - set(LAYERS)
    assert not missing, f"assign a layer to {sorted(missing)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: _name(p))
def test_imports_point_downward(path):
    assert _violations(path.read_text(encoding="utf-8"), _name(path)) == []


def test_no_reported_violation_remains():
    found = []
    for path in _modules():
        found += _violations(path.read_text(encoding="utf-8"), _name(path), known={})
    assert found == []


def test_the_checker_catches_bad_imports():
    source = (
        "from ..cli.main import cli\n"          # upward
        "from ..heuristics import greedy\n"     # same layer, other unit
        "from ..modeling import solve_model\n"  # downward
        "from .common import add_allocation\n"  # same unit
        "import numpy\n"
        "def later():\n"
        "    import laissez_opt.analysis.verify\n"  # deferred, upward
    )
    found = _violations(source, "laissez_opt.exact.welfare")
    assert [v.split(" imports ")[1].split(" ")[0] for v in found] == [
        "laissez_opt.cli.main", "laissez_opt.heuristics", "laissez_opt.analysis.verify",
    ]
    assert _violations("from . import errors, api\n", "laissez_opt.__init__") == []
    assert len(_violations("from . import errors, cli\n", "laissez_opt.__main__")) == 0
    assert len(_violations("from . import api\n", "laissez_opt.methods", known={})) == 1
    assert _violations("from .instance_file import x\nfrom ..errors import E\n", "laissez_opt.io.__init__") == []
