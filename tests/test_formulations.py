"""The formulation documents in ``models/`` name the blocks of the models the code declares.

Each ``models/NAME.md`` (other than ``README.md``) has a section ``## Symbols``
with a table ``| symbol | kind | code name | meaning |``.  The document's model
is built by the builder registered for it in :data:`BUILDERS` on a small
instance, and:

* every ``variable`` code name is a key of ``model.variables`` and every
  ``constraint`` code name a key of ``model.constraints``;
* every block of the built model appears in the table;
* every ``parameter`` code name resolves to an attribute of the ``Instance``
  (``instance.NAME`` or ``NAME``) or a field of a record of
  :mod:`laissez_opt.instance` (``Class.field`` or ``field``).

A document without a builder, or a builder without a document, fails the tests.
To add a model, write its document and add one line to :data:`BUILDERS`.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable

import pytest

import laissez_opt.instance as instance_module
from laissez_opt.exact.min_cost import build_min_cost
from laissez_opt.exact.welfare import build_welfare
from laissez_opt.instance import Instance
from laissez_opt.io import load_instance
from laissez_opt.modeling.linear import LinearModel

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
INSTANCE = ROOT / "instances" / "hotos25-table1.json"

#: Document name -> builder: a function of the test instance returning ``(model, ...)``.
BUILDERS: dict[str, Callable[[Instance], tuple]] = {
    "welfare.md": lambda inst: build_welfare(inst),
    "themis.md": lambda inst: __import__("laissez_opt.exact.themis", fromlist=["build_themis"]).build_themis(inst),
    "min_cost.md": lambda inst: build_min_cost(inst),
    "vcg.md": lambda inst: __import__("laissez_opt.exact.vcg", fromlist=["build_vcg"]).build_vcg(inst),
    "pareto.md": lambda inst: __import__("laissez_opt.exact.pareto", fromlist=["build_pareto_check"]).build_pareto_check(inst, [[0.0] * inst.rounds] * inst.n_edges),
    "maxmin.md": lambda inst: __import__("laissez_opt.exact.maxmin", fromlist=["build_maxmin"]).build_maxmin(inst, fractional=True),
    "drf.md": lambda inst: __import__("laissez_opt.exact.drf", fromlist=["build_drf"]).build_drf(inst, fractional=True),
    "migration.md": lambda inst: __import__("laissez_opt.exact.migration", fromlist=["build_migration"]).build_migration(inst),
    # The queue model needs arrivals, which the test instance lacks: it is built on the thesis's queue example.
    "backlog.md": lambda inst: __import__("laissez_opt.exact.backlog", fromlist=["build_backlog"]).build_backlog(
        load_instance(ROOT / "instances" / "thesis-r1-fair-vs-efficient.json"), objective="leximin"),
    "compression.md": lambda inst: build_welfare(
        __import__("laissez_opt.exact.classes", fromlist=["agent_classes"]).agent_classes(inst)
        .class_instance(inst, weight="member")),
    "fair_welfare.md": lambda inst: __import__("laissez_opt.exact.fair_welfare", fromlist=["build_fair_welfare"])
    .build_fair_welfare(inst, sharing=1.0, envy=0.0, floor=0.5),
    "partition.md": lambda inst: __import__("laissez_opt.partition.core", fromlist=["build_part"]).build_part(
        __import__("laissez_opt.partition.core", fromlist=["part_tasks"]).part_tasks(
            __import__("laissez_opt.partition.run", fromlist=["problem_of"]).problem_of(inst).for_method("maxmin"),
            1, 0, "maxmin", integral=False)[0][0]),
    "min_backlog.md": lambda inst: __import__("laissez_opt.simulate.min_backlog", fromlist=["build_min_backlog"]).build_min_backlog(inst),
}

KINDS = ("variable", "constraint", "parameter")
RECORDS = ("Pool", "Agent", "Edge")
NO_CODE = ("", "—", "-")


@functools.lru_cache(maxsize=None)
def test_instance() -> Instance:
    return load_instance(INSTANCE)


test_instance.__test__ = False  # a helper, not a test


def documents() -> list[str]:
    return sorted(p.name for p in MODELS.glob("*.md") if p.name != "README.md")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def symbols_section(text: str) -> str | None:
    match = re.search(r"^## Symbols[ \t]*\n(.*?)(?=^#{1,2} |\Z)", text, flags=re.M | re.S)
    return match.group(1) if match else None


def parse_symbols(text: str) -> list[dict[str, str]]:
    """Rows of the ``## Symbols`` table as dicts with keys symbol, kind, code, meaning."""
    section = symbols_section(text)
    if section is None:
        raise AssertionError("no '## Symbols' section")
    lines = section.splitlines()
    for k, line in enumerate(lines[:-1]):
        if line.startswith("|") and [c.lower() for c in _cells(line)] == ["symbol", "kind", "code name", "meaning"]:
            assert re.match(r"^\|(\s*:?-{3,}:?\s*\|){4}\s*$", lines[k + 1]), "the table's separator row is malformed"
            rows = []
            for row_line in lines[k + 2 :]:
                if not row_line.startswith("|"):
                    break
                cells = _cells(row_line)
                assert len(cells) == 4, f"row with {len(cells)} cells instead of 4: {row_line}"
                rows.append(
                    {"symbol": cells[0], "kind": cells[1].strip("`").lower(), "code": cells[2].strip("`"), "meaning": cells[3]}
                )
            return rows
    raise AssertionError("the Symbols section has no '| symbol | kind | code name | meaning |' table")


def _resolves(code: str, inst: Instance) -> bool:
    """True when a parameter code name names instance data."""
    parts = code.split(".")
    if parts[0] == "instance":
        parts = parts[1:]
    if len(parts) == 1 and hasattr(inst, parts[0]):
        return True
    if len(parts) == 2 and parts[0] in RECORDS:
        return parts[1] in getattr(instance_module, parts[0]).__dataclass_fields__
    if len(parts) == 1:
        return any(parts[0] in getattr(instance_module, cls).__dataclass_fields__ for cls in RECORDS)
    return False


def build(document: str) -> LinearModel:
    if document not in BUILDERS:
        pytest.fail(f"models/{document} has no builder in BUILDERS of tests/test_formulations.py")
    built = BUILDERS[document](test_instance())
    model = built[0] if isinstance(built, tuple) else built
    assert isinstance(model, LinearModel), f"the builder of {document} returned {type(model).__name__}"
    return model


def test_there_are_formulation_documents():
    assert documents(), "models/ holds no formulation document"


@pytest.mark.parametrize("document", documents())
def test_every_document_has_a_builder(document):
    assert document in BUILDERS, (
        f"models/{document} has no builder: add one line to BUILDERS in tests/test_formulations.py"
    )


@pytest.mark.parametrize("document", sorted(BUILDERS))
def test_every_builder_has_a_document(document):
    assert (MODELS / document).is_file(), f"BUILDERS names models/{document}, which does not exist"


@pytest.mark.parametrize("document", documents())
def test_symbol_table_is_well_formed(document):
    rows = parse_symbols((MODELS / document).read_text(encoding="utf-8"))
    assert rows, "the Symbols table is empty"
    for row in rows:
        assert row["kind"] in KINDS, f"{row['symbol']}: kind {row['kind']!r} is not one of {KINDS}"
        if row["kind"] != "parameter":
            assert row["code"] not in NO_CODE, f"{row['symbol']}: a {row['kind']} needs its block name"
    assert any(row["kind"] == "variable" for row in rows), "no variable documented"


@pytest.mark.parametrize("document", documents())
def test_symbols_match_the_declared_model(document):
    rows = parse_symbols((MODELS / document).read_text(encoding="utf-8"))
    model = build(document)
    for kind, declared in (("variable", model.variables), ("constraint", model.constraints)):
        documented = {row["code"] for row in rows if row["kind"] == kind}
        unknown = sorted(documented - set(declared))
        missing = sorted(set(declared) - documented)
        assert not unknown, f"models/{document}: {kind} code names not in model {model.name!r}: {unknown}"
        assert not missing, f"models/{document}: {kind} blocks of model {model.name!r} not documented: {missing}"


@pytest.mark.parametrize("document", documents())
def test_parameter_code_names_resolve(document):
    rows = parse_symbols((MODELS / document).read_text(encoding="utf-8"))
    inst = test_instance()
    for row in rows:
        if row["kind"] == "parameter" and row["code"] not in NO_CODE:
            assert _resolves(row["code"], inst), (
                f"models/{document}: parameter {row['symbol']} names {row['code']!r}, which is neither an "
                f"Instance attribute nor a field of {', '.join(RECORDS)}"
            )


def test_the_check_notices_drift():
    """A table naming a block the model lacks, or missing one it has, is caught."""
    text = (MODELS / "welfare.md").read_text(encoding="utf-8")
    rows = parse_symbols(text.replace("| `capacity` |", "| `capacities` |"))
    model = build("welfare.md")
    documented = {row["code"] for row in rows if row["kind"] == "constraint"}
    assert documented != set(model.constraints)
    assert not _resolves("instance.no_such_view", test_instance())
    assert _resolves("Agent.arrival", test_instance()) and _resolves("count", test_instance())
