"""Imports point downward only.

Layers, lowest first (a module may import from its own layer only inside its
own subpackage, and from any lower layer):

* L0 ``errors``, ``method_spec``
* L1 ``instance``, ``io``, ``result``
* L2 ``modeling``, ``generate``
* L3 ``exact``, ``heuristics``
* L4 ``analysis``
* L5 ``methods``, ``api``
* L6 ``cli``, ``__init__``, ``__main__``

Every import statement counts, including the deferred ones inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "laissez_opt"

LAYERS = {
    "errors": 0,
    "method_spec": 0,
    "instance": 1,
    "io": 1,
    "result": 1,
    "modeling": 2,
    "generate": 2,
    # Not in the documented list.  ``shares`` (reference shares of an instance) imports
    # only ``instance`` and says it sits below exact/ and analysis/.
    "shares": 2,
    "exact": 3,
    "heuristics": 3,
    "analysis": 4,
    "methods": 5,
    "api": 5,
    # Not in the documented list.  ``harness`` (compare: executors, run store) looks
    # methods up in the registry and serves the command line: with methods and api.
    "harness": 5,
    "cli": 6,
    "__init__": 6,
    "__main__": 6,
}

# Imports that break the rule as written, found in the code and reported rather than
# fixed: (importing module, imported unit) -> why it is there.
KNOWN_VIOLATIONS = {
    ("laissez_opt.io.instance_file", "instance"): "same layer L1: io builds Instance records",
    ("laissez_opt.io.result_file", "result"): "same layer L1: io builds Result records",
    ("laissez_opt.result", "instance"): "same layer L1: Result helpers read the instance's edges",
    ("laissez_opt.api", "methods"): "same layer L5: api.solve looks methods up in the registry",
    ("laissez_opt.harness.compare", "methods"): "same layer L5: compare looks methods up",
    ("laissez_opt.harness.compare", "api"): "same layer L5: compare's worker calls api.solve",
    ("laissez_opt.__main__", "cli"): "same layer L6: python -m laissez_opt runs the command line",
    ("laissez_opt.exact.pareto", "analysis"): "upward L3 -> L4: the certificate check calls analysis.verify",
    ("laissez_opt.analysis.fairness", "api"): "upward L4 -> L5: price_of_fairness calls api.solve",
}


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


@pytest.mark.xfail(
    reason="reported layering violations: " + "; ".join(f"{m} -> {u} ({why})" for (m, u), why in KNOWN_VIOLATIONS.items()),
    raises=AssertionError,
    strict=False,
)
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
    assert len(_violations("from . import errors, cli\n", "laissez_opt.__init__")) == 1  # same layer
    assert len(_violations("from . import api\n", "laissez_opt.methods", known={})) == 1
    assert _violations("from .instance_file import x\nfrom ..errors import E\n", "laissez_opt.io.__init__") == []
