"""The package's own schema error finder agrees with the reference validator.

``laissez_opt.io.schema.schema_errors`` evaluates the keywords our schemas use so
that a bad file's message does not wait for jsonschema to import (over a second
where its optional format packages are installed).  Here jsonschema (a test
dependency) is the oracle: on valid files and on random corruptions of them,
both report the same failures, keyword by keyword, in the same order.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from laissez_opt.io.schema import ANNOTATION_KEYWORDS, CHECKED_KEYWORDS, load_schema, schema_errors, validate
from laissez_opt.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("instance", "result", "simulation")


def _keywords(schema, out):
    if isinstance(schema, dict):
        for key, value in schema.items():
            out.add(key)
            if key == "properties":
                for sub in value.values():
                    _keywords(sub, out)
            elif key in ("items", "additionalProperties", "propertyNames"):
                _keywords(value, out)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_keyword_of_our_schemas_is_evaluated_or_an_annotation(kind):
    used = _keywords(load_schema(kind), set())
    assert used <= CHECKED_KEYWORDS | ANNOTATION_KEYWORDS | {"properties"}, used - CHECKED_KEYWORDS - ANNOTATION_KEYWORDS


def test_an_unknown_keyword_is_refused_not_ignored():
    with pytest.raises(ValueError, match="oneOf"):
        list(schema_errors(1, {"oneOf": [{"type": "string"}]}))


def _reference(data, kind):
    return [(tuple(e.absolute_path), e.validator) for e in Draft202012Validator(load_schema(kind)).iter_errors(data)]


def _ours(data, kind):
    return [(e.path, e.keyword) for e in schema_errors(data, load_schema(kind))]


def _examples():
    inst = json.loads((ROOT / "instances" / "hotos25-table1.json").read_text(encoding="utf-8"))
    import laissez_opt as lo

    result = lo.solve(lo.load(ROOT / "instances" / "hotos25-table1.json"), "welfare").to_dict()
    simulation = {"format": "laissez-opt/simulation", "version": 1, "name": "neo-market",
                  "generate": {"family": "neocloud", "agents": 12, "pools": 3, "seed": 1},
                  "rounds": 80, "round_hours": 0.25, "seeds": 1,
                  "workload": {"arrivals": "poisson", "base_rate": 0.05, "job_size": 1.0},
                  "policies": [{"name": "market", "method": "market", "options": {"checkpoint_ticks": 2}},
                               {"name": "vcg", "method": "market", "options": {"price_rule": "vcg"}}]}
    return {"instance": inst, "result": json.loads(json.dumps(result, default=str)), "simulation": simulation}


EXAMPLES = _examples()


@pytest.mark.parametrize("kind", KINDS)
def test_valid_examples_have_no_errors(kind):
    assert _reference(EXAMPLES[kind], kind) == []
    assert _ours(EXAMPLES[kind], kind) == []


def _spots(value, path=()):
    """Every (path, value) inside a JSON document."""
    yield path, value
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _spots(sub, path + (key,))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield from _spots(sub, path + (index,))


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([-1.5, 0.0, 1.0, 2.5, 1e300, -0.0]),
                 st.sampled_from(["", " x", "x ", "a", "nope", "laissez-opt/instance", "x" * 201]),
                 st.just([]), st.just({}), st.just({"": 1}), st.just({" k": 1}), st.just([1, "a"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(EXAMPLES)), picks=st.lists(st.tuples(st.integers(0, 10**6), JUNK,
                                                                          st.sampled_from(["set", "drop", "add"])),
                                                                min_size=1, max_size=3))
def test_same_failures_as_the_reference_on_corrupted_files(kind, picks):
    data = copy.deepcopy(EXAMPLES[kind])
    for where, junk, how in picks:
        spots = [p for p, _ in _spots(data) if p]
        if not spots:
            break
        path = spots[where % len(spots)]
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if how == "drop":
            del parent[last]
        elif how == "add" and isinstance(parent, dict):
            parent[f"extra_{where % 7}"] = copy.deepcopy(junk)
        else:
            parent[last] = copy.deepcopy(junk)
    ours, reference = _ours(data, kind), _reference(data, kind)
    # jsonschema walks an object's extra members as a set (order varies from run to run);
    # the message names the earliest path, so the order only matters among errors at one path.
    assert sorted(ours, key=repr) == sorted(reference, key=repr)
    assert _first(ours) == _first(reference)


def _first(errors):
    """The error ``validate`` reports: the smallest path (indices before names), the first at that path."""
    best = None
    for path, keyword in errors:
        key = [(0, p) if isinstance(p, int) else (1, str(p)) for p in path]
        if best is None or key < best[0]:
            best = (key, (path, keyword))
    return None if best is None else best[1]


def test_a_bad_file_is_described_without_importing_jsonschema(tmp_path):
    code = ("import sys\n"
            "from laissez_opt.io.schema import validate\n"
            "from laissez_opt.errors import InputError\n"
            "try:\n"
            "    validate({'format': 'laissez-opt/instance', 'version': 1, 'pools': [], 'agents': [], 'edges': [],"
            " 'extra': 1}, 'instance', 'x.json')\n"
            "except InputError as e:\n"
            "    print(e)\n"
            "print('jsonschema' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    message, imported = proc.stdout.strip().splitlines()
    assert "unknown field 'extra'" in message and "$.extra" in message
    assert imported == "False"


def test_messages_name_the_earliest_path():
    data = copy.deepcopy(EXAMPLES["instance"])
    data["agents"][1]["weight"] = -1
    data["agents"][0]["weight"] = "heavy"
    with pytest.raises(InputError, match=r"\$\.agents\[0\]\.weight: expected number, got the string 'heavy'"):
        validate(data, "instance", "x.json")
